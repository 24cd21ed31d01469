//! Row values (docs/format/rows.md): the value stored under a row's primary key.
//!
//! ```text
//! schema_version: varint | null bitmap: ceil(n/8) bytes | column 0 | column 1 | ... (non-NULL only)
//! ```
//! Every column is stored, key columns included, so a row decodes from its value alone (the
//! key's `general_ci` and PAD SPACE encodings lose case and trailing spaces).
//!
//! Invariants:
//! 1. `decode(encode(row)) == row` for every row that `encode` accepts (integers come back as
//!    `Int` in signed and `UInt` in unsigned columns, doubles bit for bit, -0.0 as 0.0).
//! 2. A value decodes only against the schema version it was written with: the table's
//!    current one, or one of its `past_versions` (kept by instant ALTER TABLE), whose
//!    columns map onto the current ones.
//! 3. Whatever decodes would be accepted by `encode_row` (integers within their column's
//!    range, no NaN, no NULL in a NOT NULL column), so corrupt bytes never reach the caller as impossible values.

use super::key::{
    as_decimal, as_f64, as_i64, as_u64, enum_index, enum_value, int_bits, set_mask, set_value,
};
use super::{put_bytes, put_varint, unzigzag, zigzag, Reader};
use crate::decimal::Decimal;
use crate::error::{Error, Result};
use crate::schema::{ColumnDef, ColumnSource, TableDef};
use crate::temporal::DateTime;
use crate::time::Time;
use crate::types::Kind;
use crate::value::Value;

/// Checks `row` against `table`'s columns and appends its encoding.
pub(crate) fn encode_row(out: &mut Vec<u8>, table: &TableDef, row: &[Value]) -> Result<()> {
    if row.len() != table.columns.len() {
        return Err(Error::InvalidArgument(format!(
            "row of {} values for table '{}' of {} columns",
            row.len(),
            table.name,
            table.columns.len()
        )));
    }
    put_varint(out, u64::from(table.schema_version));
    let bitmap_at = out.len();
    out.resize(bitmap_at + row.len().div_ceil(8), 0);
    for (i, (column, value)) in table.columns.iter().zip(row).enumerate() {
        // A VIRTUAL column is not stored: a set NULL bit and no bytes (rows.md).
        if column.is_virtual() {
            out[bitmap_at + i / 8] |= 1 << (i % 8);
            continue;
        }
        if matches!(value, Value::Null) {
            if !column.nullable {
                return Err(Error::InvalidArgument(format!(
                    "column '{}' cannot be NULL",
                    column.name
                )));
            }
            out[bitmap_at + i / 8] |= 1 << (i % 8);
            continue;
        }
        match column.ty.kind() {
            Kind::Int { width, unsigned } => {
                int_bits(column, value, width, unsigned)?; // range check
                if unsigned {
                    put_varint(out, as_u64(value).unwrap_or_default());
                } else {
                    put_varint(out, zigzag(as_i64(value).unwrap_or_default()));
                }
            }
            Kind::Double => out.extend_from_slice(&as_f64(column, value)?.to_le_bytes()),
            Kind::Decimal { precision, scale } => {
                let d = decimal_at_scale(column, value, precision, scale)?;
                super::decimal::encode_row(out, &d);
            }
            Kind::DateTime { fsp } => match value {
                // Stored as given when it is already at the column's precision.
                Value::DateTime(d) if d.round_to(fsp) == *d => put_varint(out, d.packed()),
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "value {value:?} does not fit column '{}' ({:?})",
                        column.name, column.ty
                    )))
                }
            },
            Kind::String(_) => {
                let Value::Bytes(bytes) = value else {
                    return Err(Error::InvalidArgument(format!(
                        "value {value:?} does not fit column '{}' ({:?})",
                        column.name, column.ty
                    )));
                };
                put_bytes(out, bytes);
            }
            Kind::Enum { .. } => put_varint(out, u64::from(enum_index(column, value)?)),
            Kind::Set { .. } => put_varint(out, set_mask(column, value)?),
            Kind::Time { fsp } => match value {
                // Stored as given when it is already at the column's precision.
                Value::Time(t) if t.round_to(fsp) == *t => put_varint(out, zigzag(t.micros())),
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "value {value:?} does not fit column '{}' ({:?})",
                        column.name, column.ty
                    )))
                }
            },
        }
    }
    Ok(())
}

/// `value` as a decimal of exactly `scale` digits that fits `precision`; a value with more
/// fraction digits than the column is refused (the SQL layer rounds before storing).
fn decimal_at_scale(
    column: &ColumnDef,
    value: &Value,
    precision: u8,
    scale: u8,
) -> Result<Decimal> {
    let refuse = || {
        Error::InvalidArgument(format!(
            "value {value:?} does not fit column '{}' ({:?})",
            column.name, column.ty
        ))
    };
    let d = as_decimal(value).ok_or_else(refuse)?;
    let at_scale = d.round_to(scale);
    if at_scale != d || at_scale.digits() > u32::from(precision) {
        return Err(refuse());
    }
    Ok(at_scale)
}

/// Decodes a row value of `table` (bytes are untrusted), its VIRTUAL columns computed
/// (generated.rs).
pub(crate) fn decode_row(table: &TableDef, bytes: &[u8]) -> Result<Vec<Value>> {
    let mut row = Vec::with_capacity(table.columns.len());
    decode_columns(table, bytes, |_| true, |_, value| row.push(value))?;
    crate::generated::complete(table, &mut row)?;
    Ok(row)
}

/// Decodes only the columns at `positions`, in that order (a position may repeat); the
/// others are skipped without copying. The whole value is still checked.
pub(crate) fn decode_projected(
    table: &TableDef,
    bytes: &[u8],
    positions: &[usize],
) -> Result<Vec<Value>> {
    if let Some(&bad) = positions.iter().find(|&&p| p >= table.columns.len()) {
        return Err(Error::InvalidArgument(format!(
            "table '{}' has no column #{bad}",
            table.name
        )));
    }
    if table.has_virtual_columns() {
        // A virtual column may read any other column.
        let row = decode_row(table, bytes)?;
        return Ok(positions
            .iter()
            .map(|&p| row.get(p).cloned().unwrap_or(Value::Null))
            .collect());
    }
    if positions.windows(2).all(|w| w[0] < w[1]) {
        // Ascending (the common case, `SELECT c` or `SELECT k, c`): decode straight into the
        // output.
        let mut out = Vec::with_capacity(positions.len());
        decode_columns(
            table,
            bytes,
            |i| positions.binary_search(&i).is_ok(),
            |_, value| out.push(value),
        )?;
        return Ok(out);
    }
    let mut slots: Vec<Value> = vec![Value::Null; table.columns.len()];
    decode_columns(
        table,
        bytes,
        |i| positions.contains(&i),
        |i, value| {
            if let Some(slot) = slots.get_mut(i) {
                *slot = value;
            }
        },
    )?;
    let mut out = Vec::with_capacity(positions.len());
    for &p in positions {
        out.push(slots.get(p).cloned().unwrap_or(Value::Null));
    }
    Ok(out)
}

/// Walks the columns of a row value, handing `emit` the value of every column `wanted`
/// accepts; unwanted strings are skipped, not copied.
fn decode_columns(
    table: &TableDef,
    bytes: &[u8],
    wanted: impl Fn(usize) -> bool,
    mut emit: impl FnMut(usize, Value),
) -> Result<()> {
    let mut reader = Reader::new(bytes, "row value");
    let version = reader.varint()?;
    if version == u64::from(table.schema_version) {
        return decode_stored(&mut reader, &table.columns, wanted, emit);
    }
    let Some(past) = table
        .past_versions
        .iter()
        .find(|p| u64::from(p.schema_version) == version)
    else {
        return Err(Error::Corruption(format!(
            "row of table '{}.{}' has schema version {version}, the table is at {}",
            table.database, table.name, table.schema_version
        )));
    };
    // A row written before an instant ALTER TABLE: decode it as it was written, then read
    // each current column from its source (invariant 2).
    let mut stored = vec![Value::Null; past.columns.len()];
    decode_stored(
        &mut reader,
        &past.columns,
        |_| true,
        |i, value| {
            if let Some(slot) = stored.get_mut(i) {
                *slot = value;
            }
        },
    )?;
    for (i, (source, column)) in past.current.iter().zip(&table.columns).enumerate() {
        if !wanted(i) {
            continue;
        }
        let value = match source {
            ColumnSource::Stored(p) => stored.get(*p).cloned().unwrap_or(Value::Null),
            ColumnSource::Fill(value) => value.clone(),
        };
        // The store allows only lossless type changes without a rewrite, so a stored value
        // fits its current column; NULL into NOT NULL is the one mismatch a bad catalog
        // could still produce (invariant 3).
        if matches!(value, Value::Null) && !column.nullable && !column.is_virtual() {
            return Err(reader.corruption(&format!(
                "NULL in NOT NULL column '{}' of schema version {version}",
                column.name
            )));
        }
        emit(i, value);
    }
    Ok(())
}

/// Walks the stored columns of a row value laid out as `columns` (after its version).
fn decode_stored(
    reader: &mut Reader<'_>,
    columns: &[ColumnDef],
    wanted: impl Fn(usize) -> bool,
    mut emit: impl FnMut(usize, Value),
) -> Result<()> {
    let bitmap = reader.take(columns.len().div_ceil(8))?;
    for (i, column) in columns.iter().enumerate() {
        let value = if bitmap.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0) {
            if !column.nullable && !column.is_virtual() {
                return Err(
                    reader.corruption(&format!("NULL in NOT NULL column '{}'", column.name))
                );
            }
            Value::Null
        } else {
            match column.ty.kind() {
                Kind::Int { width, unsigned } => {
                    let raw = reader.varint()?;
                    let value = if unsigned {
                        Value::UInt(raw)
                    } else {
                        Value::Int(unzigzag(raw))
                    };
                    if int_bits(column, &value, width, unsigned).is_err() {
                        return Err(reader.corruption(&format!(
                            "{value:?} is out of range for column '{}'",
                            column.name
                        )));
                    }
                    value
                }
                Kind::Double => {
                    let value = f64::from_le_bytes(reader.array()?);
                    if value.is_nan() {
                        return Err(reader.corruption(&format!("NaN in column '{}'", column.name)));
                    }
                    Value::Double(value)
                }
                Kind::Decimal { precision, scale } => {
                    Value::Decimal(super::decimal::decode_row(reader, precision, scale)?)
                }
                Kind::DateTime { fsp } => {
                    let packed = reader.varint()?;
                    Value::DateTime(DateTime::from_packed(packed, fsp).ok_or_else(|| {
                        reader.corruption(&format!("bad date/time in column '{}'", column.name))
                    })?)
                }
                Kind::Enum { .. } => {
                    let index = reader.varint()?;
                    enum_value(column, index).ok_or_else(|| {
                        reader.corruption(&format!(
                            "ENUM index {index} past the members of column '{}'",
                            column.name
                        ))
                    })?
                }
                Kind::Set { .. } => {
                    let mask = reader.varint()?;
                    set_value(column, mask).ok_or_else(|| {
                        reader.corruption(&format!(
                            "SET mask {mask:#x} past the members of column '{}'",
                            column.name
                        ))
                    })?
                }
                Kind::Time { fsp } => {
                    let micros = unzigzag(reader.varint()?);
                    Value::Time(Time::from_micros(micros, fsp).ok_or_else(|| {
                        reader.corruption(&format!("bad time in column '{}'", column.name))
                    })?)
                }
                Kind::String(_) => {
                    let bytes = reader.len_prefixed()?;
                    if !wanted(i) {
                        continue;
                    }
                    Value::Bytes(bytes.to_vec())
                }
            }
        };
        if wanted(i) {
            emit(i, value);
        }
    }
    if !reader.is_empty() {
        return Err(reader.corruption("bytes after the last column"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::IndexDef;
    use crate::types::{Collation, ColumnType};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn table() -> TableDef {
        let col = |name: &str, ty, nullable| ColumnDef {
            name: name.into(),
            ty,
            nullable,
            default: None,
            auto_increment: false,
            auto_timestamp: crate::schema::AutoTimestamp::default(),
            generated: None,
        };
        TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![
                col("a", ColumnType::Int { unsigned: false }, false),
                col("b", ColumnType::BigInt { unsigned: true }, true),
                col("c", ColumnType::Double, true),
                col(
                    "d",
                    ColumnType::VarChar {
                        len: 10,
                        collation: Collation::Utf8mb4GeneralCi,
                    },
                    true,
                ),
                col("e", ColumnType::TinyInt { unsigned: false }, true),
                col(
                    "f",
                    ColumnType::Text {
                        collation: Collation::Binary,
                    },
                    true,
                ),
                col("g", ColumnType::MediumInt { unsigned: true }, true),
                col("h", ColumnType::SmallInt { unsigned: false }, true),
                col("i", ColumnType::Float, true),
            ],
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: vec![0],
                unique: true,
                index_id: 300,
            },
            indexes: vec![],
            schema_version: 3,
            past_versions: Vec::new(),
        }
    }

    #[test]
    fn rows_round_trip() {
        let table = table();
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..2000 {
            let mut row = vec![Value::Int(
                rng.gen_range(i64::from(i32::MIN)..=i64::from(i32::MAX)),
            )];
            let null = |rng: &mut SmallRng| rng.gen_ratio(1, 4);
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::UInt(rng.gen())
            });
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::Double(rng.gen_range(-1e300..1e300))
            });
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::Bytes("Ab é ".into())
            });
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::Int(rng.gen_range(-128..=127))
            });
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::Bytes(vec![0, 255, 7])
            });
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::UInt(rng.gen_range(0..1 << 24))
            });
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::Int(rng.gen_range(-32768..=32767))
            });
            row.push(if null(&mut rng) {
                Value::Null
            } else {
                Value::Double(f64::from(rng.gen::<f32>()))
            });
            let mut out = Vec::new();
            encode_row(&mut out, &table, &row).unwrap();
            assert_eq!(decode_row(&table, &out).unwrap(), row);
            let positions = [5, 0, 3, 3];
            let projected: Vec<Value> = positions.iter().map(|&p| row[p].clone()).collect();
            assert_eq!(
                decode_projected(&table, &out, &positions).unwrap(),
                projected
            );
            // Every truncation fails cleanly; mutations decode or fail, never panic.
            for len in 0..out.len() {
                assert!(decode_row(&table, &out[..len]).is_err());
            }
            let mut mutated = out.clone();
            let at = rng.gen_range(0..mutated.len());
            mutated[at] = rng.gen();
            let _ = decode_row(&table, &mutated);
        }
    }

    #[test]
    fn bad_rows_are_refused() {
        let table = table();
        let mut out = Vec::new();
        assert!(
            encode_row(&mut out, &table, &[Value::Int(1)]).is_err(),
            "too few values"
        );
        let mut row = vec![Value::Null; 9];
        assert!(
            encode_row(&mut out, &table, &row).is_err(),
            "NULL in NOT NULL column"
        );
        row[0] = Value::Int(1 << 40);
        assert!(
            encode_row(&mut out, &table, &row).is_err(),
            "INT out of range"
        );
        row[0] = Value::UInt(5);
        out.clear();
        encode_row(&mut out, &table, &row).unwrap();
        assert_eq!(
            decode_row(&table, &out).unwrap()[0],
            Value::Int(5),
            "stored as the column's kind"
        );
        let mut other = table.clone();
        other.schema_version = 4;
        assert!(matches!(
            decode_row(&other, &out),
            Err(Error::Corruption(_))
        ));
        out.push(0);
        assert!(decode_row(&table, &out).is_err(), "trailing bytes");
    }
}
