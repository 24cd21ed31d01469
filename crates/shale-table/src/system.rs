//! The system keys: where the catalog, the index id counter and the `AUTO_INCREMENT` and hidden
//! row id reservations live (docs/format/catalog.md), and the encoding of table definitions.
//!
//! They live in the default keyspace under the reserved index id 1, not in a keyspace of
//! their own: the engine keeps every WAL that a keyspace's unflushed memtable needs, and a
//! catalog keyspace written once (CREATE TABLE) and then idle would pin every WAL after that
//! write until restart (measured: one WAL kept per memtable switch). In the default keyspace
//! they are flushed with the data, and DDL's range tombstones and catalog change share one
//! keyspace.
//!
//! Invariants:
//! 1. Every system key is `00 00 00 01 ++ tag: u8 ++ ...`; the ASCII tags never change.
//! 2. `N` holds the smallest index id never handed out; ids are never reused.
//! 3. A table definition is stored under its primary key's index id (the table id).

use crate::codec::{put_bytes, put_varint, unzigzag, zigzag, Reader};
use crate::decimal::{
    Decimal, MAX_PRECISION as DECIMAL_MAX_PRECISION, MAX_SCALE as DECIMAL_MAX_SCALE,
};
use crate::error::{Error, Result};
use crate::schema::{ColumnDef, ColumnSource, IndexDef, PastVersion, TableDef};
use crate::temporal::DateTime;
use crate::types::{Collation, ColumnType};
use crate::value::Value;
use num_bigint::BigInt;

/// The reserved index id the system keys live under (ids below 256 are never handed out).
pub(crate) const SYSTEM_INDEX_ID: u32 = 1;
const PREFIX: [u8; 4] = SYSTEM_INDEX_ID.to_be_bytes();
/// `V` -> catalog format version (u32 little-endian).
pub(crate) const KEY_VERSION: &[u8] = &[0, 0, 0, 1, b'V'];
/// `N` -> next index id (u32 little-endian).
pub(crate) const KEY_NEXT_INDEX_ID: &[u8] = &[0, 0, 0, 1, b'N'];
/// `D ++ name` -> empty: a database.
pub(crate) const TAG_DATABASE: u8 = b'D';
/// `T ++ table id (u32 big-endian)` -> a table definition.
pub(crate) const TAG_TABLE: u8 = b'T';
/// `A ++ table id` -> `AUTO_INCREMENT` reservation (u64 little-endian): no value at or above it
/// was handed out.
pub(crate) const TAG_AUTO_INCREMENT: u8 = b'A';
/// `R ++ table id` -> hidden row id reservation (u64 little-endian).
pub(crate) const TAG_ROW_ID: u8 = b'R';
/// `S ++ index id` -> the index's last cardinality estimate (cardinality.rs).
pub(crate) const TAG_INDEX_STATS: u8 = b'S';

/// The catalog format this code writes and reads.
pub(crate) const CATALOG_VERSION: u32 = 1;
/// The first index id handed out (ids below are reserved).
pub(crate) const FIRST_INDEX_ID: u32 = 256;
/// The version byte that starts a table definition without past schema versions.
const TABLE_DEF_VERSION: u8 = 1;
/// The version byte of a definition followed by its past schema versions (instant ALTER).
const TABLE_DEF_VERSION_WITH_PAST: u8 = 2;

/// `[start, end)` of every system key.
pub(crate) fn system_range() -> (Vec<u8>, Vec<u8>) {
    (
        PREFIX.to_vec(),
        (SYSTEM_INDEX_ID + 1).to_be_bytes().to_vec(),
    )
}

pub(crate) fn database_key(name: &str) -> Vec<u8> {
    let mut key = PREFIX.to_vec();
    key.push(TAG_DATABASE);
    key.extend_from_slice(name.as_bytes());
    key
}

pub(crate) fn table_key(tag: u8, table_id: u32) -> [u8; 9] {
    let id = table_id.to_be_bytes();
    [
        PREFIX[0], PREFIX[1], PREFIX[2], PREFIX[3], tag, id[0], id[1], id[2], id[3],
    ]
}

fn collation_tag(collation: Collation) -> u8 {
    match collation {
        Collation::Binary => 1,
        Collation::Utf8mb4Bin => 2,
        Collation::Utf8mb4GeneralCi => 3,
        Collation::Utf8mb4Uca900AiCi => 4,
        Collation::Utf8mb4Uca900AsCs => 5,
        Collation::Utf8mb4UnicodeCi => 6,
        Collation::Latin1SwedishCi => 7,
        Collation::Utf8mb3GeneralCi => 8,
    }
}

fn collation_from_tag(reader: &Reader<'_>, tag: u8) -> Result<Collation> {
    Ok(match tag {
        1 => Collation::Binary,
        2 => Collation::Utf8mb4Bin,
        3 => Collation::Utf8mb4GeneralCi,
        4 => Collation::Utf8mb4Uca900AiCi,
        5 => Collation::Utf8mb4Uca900AsCs,
        6 => Collation::Utf8mb4UnicodeCi,
        7 => Collation::Latin1SwedishCi,
        8 => Collation::Utf8mb3GeneralCi,
        _ => return Err(reader.corruption(&format!("unknown collation tag {tag}"))),
    })
}

fn put_type(out: &mut Vec<u8>, ty: &ColumnType) {
    let int = |out: &mut Vec<u8>, tag: u8, unsigned: bool| {
        out.extend_from_slice(&[tag, u8::from(unsigned)]);
    };
    match *ty {
        ColumnType::TinyInt { unsigned } => int(out, 1, unsigned),
        ColumnType::SmallInt { unsigned } => int(out, 2, unsigned),
        ColumnType::MediumInt { unsigned } => int(out, 3, unsigned),
        ColumnType::Int { unsigned } => int(out, 4, unsigned),
        ColumnType::BigInt { unsigned } => int(out, 5, unsigned),
        ColumnType::Float => out.push(6),
        ColumnType::Double => out.push(7),
        ColumnType::Char { len, collation } => {
            out.push(8);
            put_varint(out, u64::from(len));
            out.push(collation_tag(collation));
        }
        ColumnType::VarChar { len, collation } => {
            out.push(9);
            put_varint(out, u64::from(len));
            out.push(collation_tag(collation));
        }
        ColumnType::Text { collation } => out.extend_from_slice(&[10, collation_tag(collation)]),
        ColumnType::Decimal { precision, scale } => out.extend_from_slice(&[11, precision, scale]),
        ColumnType::Date => out.push(12),
        ColumnType::DateTime { fsp } => out.extend_from_slice(&[13, fsp]),
        ColumnType::Year => out.push(14),
        ColumnType::Timestamp { fsp } => out.extend_from_slice(&[20, fsp]),
        // 32, not 15: leaves 15.. to the scalar types other branches add.
        ColumnType::Json => out.push(32),
        ColumnType::Time { fsp } => out.extend_from_slice(&[33, fsp]),
        ColumnType::Enum {
            ref members,
            collation,
        }
        | ColumnType::Set {
            ref members,
            collation,
        } => {
            let tag = if matches!(ty, ColumnType::Enum { .. }) {
                34
            } else {
                35
            };
            out.extend_from_slice(&[tag, collation_tag(collation)]);
            put_varint(out, members.len() as u64);
            for m in members {
                put_bytes(out, m.as_bytes());
            }
        }
    }
}

fn read_type(reader: &mut Reader<'_>) -> Result<ColumnType> {
    let tag = reader.u8()?;
    let unsigned = |reader: &mut Reader<'_>| -> Result<bool> {
        match reader.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(reader.corruption("bad unsigned flag")),
        }
    };
    Ok(match tag {
        1 => ColumnType::TinyInt {
            unsigned: unsigned(reader)?,
        },
        2 => ColumnType::SmallInt {
            unsigned: unsigned(reader)?,
        },
        3 => ColumnType::MediumInt {
            unsigned: unsigned(reader)?,
        },
        4 => ColumnType::Int {
            unsigned: unsigned(reader)?,
        },
        5 => ColumnType::BigInt {
            unsigned: unsigned(reader)?,
        },
        6 => ColumnType::Float,
        7 => ColumnType::Double,
        8 | 9 => {
            let len = reader.varint_u32()?;
            let tag_byte = reader.u8()?;
            let collation = collation_from_tag(reader, tag_byte)?;
            if tag == 8 {
                ColumnType::Char { len, collation }
            } else {
                ColumnType::VarChar { len, collation }
            }
        }
        10 => {
            let tag_byte = reader.u8()?;
            ColumnType::Text {
                collation: collation_from_tag(reader, tag_byte)?,
            }
        }
        11 => {
            let precision = reader.u8()?;
            let scale = reader.u8()?;
            if precision == 0
                || precision > DECIMAL_MAX_PRECISION
                || scale > precision
                || scale > DECIMAL_MAX_SCALE
            {
                return Err(reader.corruption(&format!("bad DECIMAL({precision},{scale})")));
            }
            ColumnType::Decimal { precision, scale }
        }
        12 => ColumnType::Date,
        13 => {
            let fsp = reader.u8()?;
            if fsp > 6 {
                return Err(reader.corruption(&format!("bad DATETIME({fsp})")));
            }
            ColumnType::DateTime { fsp }
        }
        14 => ColumnType::Year,
        20 => {
            let fsp = reader.u8()?;
            if fsp > 6 {
                return Err(reader.corruption(&format!("bad TIMESTAMP({fsp})")));
            }
            ColumnType::Timestamp { fsp }
        }
        32 => ColumnType::Json,
        33 => {
            let fsp = reader.u8()?;
            if fsp > 6 {
                return Err(reader.corruption(&format!("bad TIME({fsp})")));
            }
            ColumnType::Time { fsp }
        }
        34 | 35 => read_members_type(reader, tag)?,
        _ => return Err(reader.corruption(&format!("unknown column type tag {tag}"))),
    })
}

/// The ENUM (tag 34) or SET (tag 35) after its tag: collation, member count, members.
fn read_members_type(reader: &mut Reader<'_>, tag: u8) -> Result<ColumnType> {
    let tag_byte = reader.u8()?;
    let collation = collation_from_tag(reader, tag_byte)?;
    let count = reader.varint()?;
    if count == 0 || count > crate::types::ENUM_MAX_MEMBERS as u64 {
        return Err(reader.corruption(&format!("ENUM or SET of {count} members")));
    }
    let mut members = Vec::new();
    for _ in 0..count {
        let text = std::str::from_utf8(reader.len_prefixed()?)
            .map_err(|_| reader.corruption("ENUM or SET member is not UTF-8"))?;
        members.push(text.to_owned());
    }
    if tag == 34 {
        Ok(ColumnType::Enum { members, collation })
    } else if members.len() <= 64 {
        Ok(ColumnType::Set { members, collation })
    } else {
        Err(reader.corruption("SET of more than 64 members"))
    }
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(0),
        Value::Int(v) => {
            out.push(1);
            put_varint(out, zigzag(*v));
        }
        Value::UInt(v) => {
            out.push(2);
            put_varint(out, *v);
        }
        Value::Double(v) => {
            out.push(3);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Value::Bytes(b) => {
            out.push(4);
            put_bytes(out, b);
        }
        Value::DateTime(d) => {
            out.push(6);
            out.push(d.fsp().map_or(0xFF, |f| f));
            put_varint(out, d.packed());
        }
        Value::Decimal(d) => {
            out.push(5);
            out.push(d.scale());
            put_bytes(out, &d.coefficient().to_signed_bytes_le());
        }
        Value::Set(mask, text) => {
            out.push(9);
            put_varint(out, *mask);
            put_bytes(out, text.as_bytes());
        }
        Value::Enum(index, text) => {
            out.push(8);
            put_varint(out, u64::from(*index));
            put_bytes(out, text.as_bytes());
        }
        Value::Time(t) => {
            out.push(7);
            out.push(t.fsp());
            put_varint(out, zigzag(t.micros()));
        }
    }
}

fn read_value(reader: &mut Reader<'_>) -> Result<Value> {
    Ok(match reader.u8()? {
        0 => Value::Null,
        1 => Value::Int(unzigzag(reader.varint()?)),
        2 => Value::UInt(reader.varint()?),
        3 => Value::Double(f64::from_le_bytes(reader.array()?)),
        4 => Value::Bytes(reader.len_prefixed()?.to_vec()),
        5 => {
            let scale = reader.u8()?;
            let bytes = reader.len_prefixed()?;
            if scale > DECIMAL_MAX_SCALE || bytes.len() > 32 {
                return Err(reader.corruption("bad DECIMAL default"));
            }
            Value::Decimal(Decimal::new(BigInt::from_signed_bytes_le(bytes), scale))
        }
        6 => {
            let fsp = match reader.u8()? {
                0xFF => None,
                f => Some(f),
            };
            let packed = reader.varint()?;
            Value::DateTime(
                DateTime::from_packed(packed, fsp)
                    .ok_or_else(|| reader.corruption("bad DATE/DATETIME default"))?,
            )
        }
        7 => {
            let fsp = reader.u8()?;
            let micros = unzigzag(reader.varint()?);
            Value::Time(
                crate::time::Time::from_micros(micros, fsp)
                    .ok_or_else(|| reader.corruption("bad TIME default"))?,
            )
        }
        8 => {
            let index = u16::try_from(reader.varint()?)
                .map_err(|_| reader.corruption("bad ENUM default"))?;
            let text = std::str::from_utf8(reader.len_prefixed()?)
                .map_err(|_| reader.corruption("bad ENUM default"))?;
            Value::Enum(index, text.to_owned())
        }
        9 => {
            let mask = reader.varint()?;
            let text = std::str::from_utf8(reader.len_prefixed()?)
                .map_err(|_| reader.corruption("bad SET default"))?;
            Value::Set(mask, text.to_owned())
        }
        tag => return Err(reader.corruption(&format!("unknown value tag {tag}"))),
    })
}

fn put_index(out: &mut Vec<u8>, index: &IndexDef) {
    put_bytes(out, index.name.as_bytes());
    put_varint(out, index.columns.len() as u64);
    for &c in &index.columns {
        put_varint(out, c as u64);
    }
    out.push(u8::from(index.unique));
    out.extend_from_slice(&index.index_id.to_le_bytes());
}

fn read_index(reader: &mut Reader<'_>, columns: usize) -> Result<IndexDef> {
    let name = reader.string()?;
    let count = reader.varint()?;
    let mut positions = Vec::new();
    for _ in 0..count {
        let position = reader.varint()?;
        let position = usize::try_from(position)
            .ok()
            .filter(|&p| p < columns)
            .ok_or_else(|| {
                reader.corruption(&format!(
                    "index '{name}' names column {position} of {columns}"
                ))
            })?;
        positions.push(position);
    }
    let unique = match reader.u8()? {
        0 => false,
        1 => true,
        _ => return Err(reader.corruption("bad unique flag")),
    };
    let index_id = u32::from_le_bytes(reader.array()?);
    Ok(IndexDef {
        name,
        columns: positions,
        unique,
        index_id,
    })
}

fn put_column(out: &mut Vec<u8>, column: &ColumnDef) {
    put_bytes(out, column.name.as_bytes());
    put_type(out, &column.ty);
    let flags = u8::from(column.nullable)
        | u8::from(column.auto_increment) << 1
        | u8::from(column.default.is_some()) << 2
        | u8::from(column.auto_timestamp.on_insert) << 3
        | u8::from(column.auto_timestamp.on_update) << 4
        | u8::from(column.generated.is_some()) << 5;
    out.push(flags);
    if let Some(default) = &column.default {
        put_value(out, default);
    }
    if let Some(generated) = &column.generated {
        out.push(u8::from(generated.stored));
        put_bytes(out, generated.expression.as_bytes());
    }
}

fn read_column(reader: &mut Reader<'_>) -> Result<ColumnDef> {
    let name = reader.string()?;
    let ty = read_type(reader)?;
    let flags = reader.u8()?;
    if flags > 0b11_1111 {
        return Err(reader.corruption("unknown column flags"));
    }
    let default = if flags & 4 != 0 {
        Some(read_value(reader)?)
    } else {
        None
    };
    let generated = if flags & 32 != 0 {
        let stored = match reader.u8()? {
            0 => false,
            1 => true,
            _ => return Err(reader.corruption("unknown generated column kind")),
        };
        Some(crate::schema::Generated {
            expression: reader.string()?,
            stored,
        })
    } else {
        None
    };
    Ok(ColumnDef {
        name,
        ty,
        nullable: flags & 1 != 0,
        default,
        auto_increment: flags & 2 != 0,
        auto_timestamp: crate::schema::AutoTimestamp {
            on_insert: flags & 8 != 0,
            on_update: flags & 16 != 0,
        },
        generated,
    })
}

fn put_past_version(out: &mut Vec<u8>, past: &PastVersion) {
    put_varint(out, u64::from(past.schema_version));
    put_varint(out, past.columns.len() as u64);
    for column in &past.columns {
        put_column(out, column);
    }
    put_varint(out, past.current.len() as u64);
    for source in &past.current {
        match source {
            ColumnSource::Stored(position) => {
                out.push(0);
                put_varint(out, *position as u64);
            }
            ColumnSource::Fill(value) => {
                out.push(1);
                put_value(out, value);
            }
        }
    }
}

/// A past version of a table whose current definition has `current_columns` columns and
/// version `current_version` (untrusted bytes: every position is checked).
fn read_past_version(
    reader: &mut Reader<'_>,
    current_columns: usize,
    current_version: u32,
) -> Result<PastVersion> {
    let schema_version = reader.varint_u32()?;
    if schema_version >= current_version {
        return Err(reader.corruption(&format!(
            "past schema version {schema_version} is not before {current_version}"
        )));
    }
    let count = reader.varint()?;
    let mut columns = Vec::new();
    for _ in 0..count {
        columns.push(read_column(reader)?);
    }
    if reader.varint()? != current_columns as u64 {
        return Err(reader.corruption(&format!(
            "past schema version {schema_version} does not map {current_columns} columns"
        )));
    }
    let mut current = Vec::with_capacity(current_columns);
    for _ in 0..current_columns {
        current.push(match reader.u8()? {
            0 => {
                let position = reader.varint()?;
                match usize::try_from(position) {
                    Ok(p) if p < columns.len() => ColumnSource::Stored(p),
                    _ => {
                        return Err(reader.corruption(&format!(
                            "past schema version {schema_version} names column {position}"
                        )))
                    }
                }
            }
            1 => ColumnSource::Fill(read_value(reader)?),
            tag => return Err(reader.corruption(&format!("unknown column source tag {tag}"))),
        });
    }
    Ok(PastVersion {
        schema_version,
        columns,
        current,
    })
}

/// The stored form of a table definition: version 1 without past schema versions (what
/// every store before instant ALTER TABLE wrote), version 2 with them.
pub(crate) fn encode_table(def: &TableDef) -> Vec<u8> {
    let mut out = vec![if def.past_versions.is_empty() {
        TABLE_DEF_VERSION
    } else {
        TABLE_DEF_VERSION_WITH_PAST
    }];
    put_bytes(&mut out, def.database.as_bytes());
    put_bytes(&mut out, def.name.as_bytes());
    put_varint(&mut out, u64::from(def.schema_version));
    put_varint(&mut out, def.columns.len() as u64);
    for column in &def.columns {
        put_column(&mut out, column);
    }
    put_index(&mut out, &def.primary_key);
    put_varint(&mut out, def.indexes.len() as u64);
    for index in &def.indexes {
        put_index(&mut out, index);
    }
    if !def.past_versions.is_empty() {
        put_varint(&mut out, def.past_versions.len() as u64);
        for past in &def.past_versions {
            put_past_version(&mut out, past);
        }
    }
    out
}

/// Decodes a stored table definition (untrusted bytes).
pub(crate) fn decode_table(bytes: &[u8]) -> Result<TableDef> {
    let mut reader = Reader::new(bytes, "table definition");
    let version = reader.u8()?;
    if version != TABLE_DEF_VERSION && version != TABLE_DEF_VERSION_WITH_PAST {
        return Err(Error::Corruption(format!(
            "table definition version {version}; this build reads {TABLE_DEF_VERSION} and \
             {TABLE_DEF_VERSION_WITH_PAST}"
        )));
    }
    let database = reader.string()?;
    let name = reader.string()?;
    let schema_version = reader.varint_u32()?;
    let count = reader.varint()?;
    let mut columns = Vec::new();
    for _ in 0..count {
        columns.push(read_column(&mut reader)?);
    }
    let primary_key = read_index(&mut reader, columns.len())?;
    let count = reader.varint()?;
    let mut indexes = Vec::new();
    for _ in 0..count {
        indexes.push(read_index(&mut reader, columns.len())?);
    }
    let mut past_versions: Vec<PastVersion> = Vec::new();
    if version == TABLE_DEF_VERSION_WITH_PAST {
        let count = reader.varint()?;
        if count == 0 {
            return Err(reader.corruption("a version 2 definition without past versions"));
        }
        for _ in 0..count {
            let past = read_past_version(&mut reader, columns.len(), schema_version)?;
            if past_versions
                .last()
                .is_some_and(|p| p.schema_version >= past.schema_version)
            {
                return Err(reader.corruption("past schema versions out of order"));
            }
            past_versions.push(past);
        }
    }
    if !reader.is_empty() {
        return Err(reader.corruption("bytes after the last index"));
    }
    Ok(TableDef {
        database,
        name,
        columns,
        primary_key,
        indexes,
        schema_version,
        past_versions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn sample() -> TableDef {
        TableDef {
            database: "sbtest".into(),
            name: "sbtest1".into(),
            columns: vec![
                ColumnDef {
                    name: "id".into(),
                    ty: ColumnType::Int { unsigned: false },
                    nullable: false,
                    default: None,
                    auto_increment: true,
                    auto_timestamp: crate::schema::AutoTimestamp::default(),
                    generated: None,
                },
                ColumnDef {
                    name: "k".into(),
                    ty: ColumnType::Int { unsigned: true },
                    nullable: false,
                    default: Some(Value::UInt(0)),
                    auto_increment: false,
                    auto_timestamp: crate::schema::AutoTimestamp::default(),
                    generated: None,
                },
                ColumnDef {
                    name: "c".into(),
                    ty: ColumnType::Char {
                        len: 120,
                        collation: Collation::Utf8mb4GeneralCi,
                    },
                    nullable: true,
                    default: Some(Value::Bytes(b"x".to_vec())),
                    auto_increment: false,
                    auto_timestamp: crate::schema::AutoTimestamp::default(),
                    generated: None,
                },
                ColumnDef {
                    name: "d".into(),
                    ty: ColumnType::Double,
                    nullable: true,
                    default: Some(Value::Double(-1.5)),
                    auto_increment: false,
                    auto_timestamp: crate::schema::AutoTimestamp::default(),
                    generated: None,
                },
                ColumnDef {
                    name: "t".into(),
                    ty: ColumnType::Text {
                        collation: Collation::Binary,
                    },
                    nullable: true,
                    default: Some(Value::Null),
                    auto_increment: false,
                    auto_timestamp: crate::schema::AutoTimestamp::default(),
                    generated: None,
                },
            ],
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: vec![0],
                unique: true,
                index_id: 256,
            },
            indexes: vec![IndexDef {
                name: "k_1".into(),
                columns: vec![1, 2],
                unique: false,
                index_id: 257,
            }],
            schema_version: 1,
            past_versions: Vec::new(),
        }
    }

    #[test]
    fn json_columns_round_trip_with_tag_32() {
        let mut def = sample();
        def.columns.push(ColumnDef {
            name: "doc".into(),
            ty: ColumnType::Json,
            nullable: true,
            default: None,
            auto_increment: false,
            auto_timestamp: crate::schema::AutoTimestamp::default(),
            generated: None,
        });
        let bytes = encode_table(&def);
        assert_eq!(decode_table(&bytes).unwrap(), def);
        let mut out = Vec::new();
        put_type(&mut out, &ColumnType::Json);
        assert_eq!(out, [32], "docs/format/catalog.md: tag 32 is JSON");
    }

    #[test]
    fn generated_columns_round_trip_with_flags_bit_5() {
        let mut def = sample();
        def.columns.truncate(1);
        def.indexes.clear();
        def.columns[0].auto_increment = false;
        def.columns[0].generated = Some(crate::schema::Generated {
            expression: "a + 1".into(),
            stored: true,
        });
        let mut out = Vec::new();
        put_column(&mut out, &def.columns[0]);
        // docs/format/catalog.md: flags bit 5, then kind (1 STORED) and the expression.
        let tail = [0b10_0000, 1, 5, b'a', b' ', b'+', b' ', b'1'];
        assert!(out.ends_with(&tail), "{out:?}");
        let bytes = encode_table(&def);
        assert_eq!(decode_table(&bytes).unwrap(), def);
        for len in 0..bytes.len() {
            assert!(decode_table(&bytes[..len]).is_err());
        }
        let kind_at = bytes
            .windows(3)
            .position(|w| w == [1, 5, b'a'])
            .expect("kind byte");
        let mut virtual_def = bytes.clone();
        virtual_def[kind_at] = 0;
        let decoded = decode_table(&virtual_def).unwrap();
        assert!(decoded.columns[0].is_virtual());
        let mut unknown = bytes.clone();
        unknown[kind_at] = 2;
        assert!(decode_table(&unknown).is_err());
    }

    #[test]
    fn time_enum_and_set_columns_and_defaults_round_trip_with_tags_33_to_35() {
        let mut def = sample();
        let column = |name: &str, ty, default| ColumnDef {
            name: name.into(),
            ty,
            nullable: true,
            default,
            auto_increment: false,
            auto_timestamp: crate::schema::AutoTimestamp::default(),
            generated: None,
        };
        let members = vec!["a".to_string(), "b'c".to_string()];
        let minus = crate::time::Time::from_micros(-3_723_400_000, 1).unwrap();
        def.columns.extend([
            column("t", ColumnType::Time { fsp: 1 }, Some(Value::Time(minus))),
            column(
                "e",
                ColumnType::Enum {
                    members: members.clone(),
                    collation: Collation::Utf8mb4Bin,
                },
                Some(Value::Enum(2, "b'c".into())),
            ),
            column(
                "s",
                ColumnType::Set {
                    members,
                    collation: Collation::Utf8mb4GeneralCi,
                },
                Some(Value::Set(3, "a,b'c".into())),
            ),
        ]);
        let bytes = encode_table(&def);
        let back = decode_table(&bytes).unwrap();
        assert_eq!(back, def);
        assert_eq!(
            back.columns[back.columns.len() - 3]
                .default
                .as_ref()
                .map(|d| format!("{d:?}")),
            Some("Time(Time(-01:02:03.4))".into())
        );
        for (ty, tag) in [
            (ColumnType::Time { fsp: 3 }, 33),
            (
                ColumnType::Enum {
                    members: vec!["x".into()],
                    collation: Collation::Binary,
                },
                34,
            ),
            (
                ColumnType::Set {
                    members: vec!["x".into()],
                    collation: Collation::Binary,
                },
                35,
            ),
        ] {
            let mut out = Vec::new();
            put_type(&mut out, &ty);
            assert_eq!(out[0], tag, "docs/format/catalog.md");
        }
        // A SET of 65 members is corrupt.
        let mut out = vec![35, 1];
        put_varint(&mut out, 65);
        for i in 0..65 {
            put_bytes(&mut out, format!("m{i}").as_bytes());
        }
        assert!(read_type(&mut Reader::new(&out, "test")).is_err());
    }

    #[test]
    fn table_definitions_round_trip_and_truncations_fail() {
        let def = sample();
        let bytes = encode_table(&def);
        assert_eq!(decode_table(&bytes).unwrap(), def);
        for len in 0..bytes.len() {
            assert!(decode_table(&bytes[..len]).is_err());
        }
        // Mutated definitions decode or fail, never panic (a smoke test of the fuzz target
        // to come).
        let mut rng = SmallRng::seed_from_u64(5);
        for _ in 0..20_000 {
            let mut mutated = bytes.clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..mutated.len());
                mutated[at] = rng.gen();
            }
            let _ = decode_table(&mutated);
        }
    }

    #[test]
    fn definitions_with_past_versions_round_trip() {
        let def = sample();
        // With past schema versions (after instant ALTER TABLEs).
        let mut altered = def.clone();
        altered.schema_version = 4;
        altered.past_versions = vec![
            PastVersion {
                schema_version: 1,
                columns: def.columns[..2].to_vec(),
                current: vec![
                    ColumnSource::Stored(0),
                    ColumnSource::Stored(1),
                    ColumnSource::Fill(Value::Bytes(b"old".to_vec())),
                    ColumnSource::Fill(Value::Null),
                    ColumnSource::Fill(Value::Double(2.5)),
                ],
            },
            PastVersion {
                schema_version: 3,
                columns: def.columns.clone(),
                current: (0..5).map(ColumnSource::Stored).collect(),
            },
        ];
        let altered_bytes = encode_table(&altered);
        assert_eq!(altered_bytes[0], TABLE_DEF_VERSION_WITH_PAST);
        assert_eq!(decode_table(&altered_bytes).unwrap(), altered);
        for len in 0..altered_bytes.len() {
            assert!(decode_table(&altered_bytes[..len]).is_err());
        }
        // A past version at or after the current one is corruption.
        let mut bad = altered.clone();
        bad.past_versions[1].schema_version = 4;
        assert!(decode_table(&encode_table(&bad)).is_err());
    }
}
