//! Reading key columns back from their memcomparable encoding (docs/format/table-keys.md),
//! for tools that show a table file's entries without the rows (`shale tool sst`).
//!
//! Most encodings are exact and decode to the value. Strings in a character collation store
//! collation weights: case (`general_ci`) and trailing spaces are gone, so they come back as
//! the text of their weights (`APPLE` for `apple`). DECIMAL's base-100 form, and strings of a
//! collation this module does not know, come back as their encoded bytes. Bytes are
//! untrusted (codec invariant 1).

use super::collation::SPACE;
use super::key::{
    decode_int_column, enum_value, set_value, skip_column, CHUNK, CHUNK_END, CHUNK_GREATER,
    CHUNK_LESS, NULL_MARKER, VALUE_MARKER,
};
use super::Reader;
use crate::error::Result;
use crate::schema::ColumnDef;
use crate::temporal::DateTime;
use crate::time::Time;
use crate::types::{Collation, Kind};
use crate::value::Value;

/// One key column read back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KeyColumn {
    /// The value, exactly.
    Value(Value),
    /// A string's collation weights as text (uppercase for `general_ci`), trailing spaces
    /// dropped.
    Weights(String),
    /// The encoding, where it loses information (the module docs), without the NULL marker.
    Encoded(Vec<u8>),
}

/// Reads one column's encoding from `reader`.
pub(crate) fn decode_key_column(reader: &mut Reader<'_>, column: &ColumnDef) -> Result<KeyColumn> {
    let kind = column.ty.kind();
    match kind {
        Kind::Int { .. } => {
            let value = decode_int_column(reader, column)?;
            return Ok(KeyColumn::Value(value.unwrap_or(Value::Null)));
        }
        Kind::String(Collation::Utf8mb4Bin | Collation::Utf8mb4GeneralCi) => {}
        // Only binary strings keep their bytes; any other collation's key is its weights.
        Kind::Decimal { .. } | Kind::String(_) if kind != Kind::String(Collation::Binary) => {
            let before = reader.rest();
            skip_column(reader, column)?;
            let encoded = before
                .get(..before.len() - reader.rest().len())
                .unwrap_or_default();
            let encoded = if column.nullable {
                match encoded.split_first() {
                    Some((&NULL_MARKER, [])) => return Ok(KeyColumn::Value(Value::Null)),
                    Some((_, rest)) => rest,
                    None => encoded,
                }
            } else {
                encoded
            };
            return Ok(KeyColumn::Encoded(encoded.to_vec()));
        }
        _ => {}
    }
    if column.nullable {
        match reader.u8()? {
            NULL_MARKER => return Ok(KeyColumn::Value(Value::Null)),
            VALUE_MARKER => {}
            _ => return Err(reader.corruption("bad NULL marker")),
        }
    }
    let value = match kind {
        Kind::Double => {
            let bits = u64::from_be_bytes(reader.array()?);
            let raw = if bits >> 63 == 1 {
                bits & !(1 << 63)
            } else {
                !bits
            };
            Some(Value::Double(f64::from_bits(raw)))
        }
        Kind::DateTime { fsp } => {
            DateTime::from_packed(u64::from_be_bytes(reader.array()?), fsp).map(Value::DateTime)
        }
        Kind::Time { fsp } => {
            let mut bits = [0u8; 8];
            bits[2..].copy_from_slice(reader.take(6)?);
            Time::from_key_bits(u64::from_be_bytes(bits), fsp).map(Value::Time)
        }
        Kind::Enum { width } => {
            let index = read_width(reader, width)?;
            enum_value(column, index)
        }
        Kind::Set { width } => {
            let mask = read_width(reader, width)?;
            set_value(column, mask)
        }
        Kind::String(collation @ (Collation::Utf8mb4Bin | Collation::Utf8mb4GeneralCi)) => {
            return weights(reader, collation == Collation::Utf8mb4GeneralCi);
        }
        Kind::String(_) => {
            // NO PAD (binary strings): 0x00 escaped as 0x00 0xFF, ended by 0x00 0x01.
            let mut bytes = Vec::new();
            loop {
                match reader.u8()? {
                    0 => match reader.u8()? {
                        0xFF => bytes.push(0),
                        0x01 => break,
                        _ => return Err(reader.corruption("bad escape in a binary string")),
                    },
                    b => bytes.push(b),
                }
            }
            Some(Value::Bytes(bytes))
        }
        Kind::Int { .. } | Kind::Decimal { .. } => None,
    };
    value
        .map(KeyColumn::Value)
        .ok_or_else(|| reader.corruption(&format!("bad key value of column '{}'", column.name)))
}

/// A PAD SPACE string's chunks of weights (docs/format/table-keys.md, "Strings"): 2-byte
/// characters (`wide`, `general_ci`) or bytes of UTF-8 (`utf8mb4_bin`).
fn weights(reader: &mut Reader<'_>, wide: bool) -> Result<KeyColumn> {
    let mut units: Vec<u16> = Vec::new();
    loop {
        if wide {
            let chunk = reader.take(2 * CHUNK)?;
            units.extend(
                chunk
                    .chunks_exact(2)
                    .map(|pair| u16::from_be_bytes([pair[0], pair[1]])),
            );
        } else {
            units.extend(reader.take(CHUNK)?.iter().map(|&b| u16::from(b)));
        }
        match reader.u8()? {
            CHUNK_END => break,
            CHUNK_LESS | CHUNK_GREATER => {}
            _ => return Err(reader.corruption("bad chunk marker in a string")),
        }
    }
    while units.last() == Some(&SPACE) {
        units.pop();
    }
    let text = if wide {
        units
            .iter()
            .map(|&u| char::from_u32(u32::from(u)).unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    } else {
        let bytes: Vec<u8> = units.iter().map(|&u| u.to_be_bytes()[1]).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(KeyColumn::Weights(text))
}

/// A big-endian unsigned integer `width` bytes wide (1 to 8).
fn read_width(reader: &mut Reader<'_>, width: u8) -> Result<u64> {
    let width = usize::from(width).min(8);
    let mut bytes = [0u8; 8];
    bytes[8 - width..].copy_from_slice(reader.take(width)?);
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::super::key::encode_column;
    use super::*;
    use crate::types::ColumnType;

    fn column(ty: ColumnType, nullable: bool) -> ColumnDef {
        ColumnDef {
            name: "c".into(),
            ty,
            nullable,
            default: None,
            auto_increment: false,
            auto_timestamp: crate::schema::AutoTimestamp::default(),
            generated: None,
        }
    }

    /// Encodes `value` twice in a row and decodes both, so each decode must stop exactly
    /// where its encoding ends.
    fn round_trip(ty: ColumnType, nullable: bool, value: &Value) -> KeyColumn {
        let column = column(ty, nullable);
        let mut key = Vec::new();
        encode_column(&mut key, &column, value, &mut Vec::new()).unwrap();
        encode_column(&mut key, &column, value, &mut Vec::new()).unwrap();
        let mut reader = Reader::new(&key, "key");
        let first = decode_key_column(&mut reader, &column).unwrap();
        assert_eq!(decode_key_column(&mut reader, &column).unwrap(), first);
        assert!(reader.is_empty(), "{value:?}");
        first
    }

    #[test]
    fn exact_encodings_decode_to_their_values() {
        let cases = [
            (ColumnType::TinyInt { unsigned: false }, Value::Int(-128)),
            (ColumnType::MediumInt { unsigned: false }, Value::Int(-5)),
            (ColumnType::Int { unsigned: false }, Value::Int(123_456)),
            (ColumnType::BigInt { unsigned: true }, Value::UInt(u64::MAX)),
            (ColumnType::Double, Value::Double(-2.5)),
            (ColumnType::Double, Value::Double(1e300)),
            (
                ColumnType::DateTime { fsp: 3 },
                Value::DateTime(DateTime::parse("2024-01-02 03:04:05.123", Some(3)).unwrap()),
            ),
            (
                ColumnType::Date,
                Value::DateTime(DateTime::parse("1999-12-31", None).unwrap()),
            ),
            (
                ColumnType::Time { fsp: 0 },
                Value::Time(Time::from_micros(-3_600_000_000, 0).unwrap()),
            ),
            (
                ColumnType::Enum {
                    members: vec!["a".into(), "b".into()],
                    collation: Collation::Utf8mb4GeneralCi,
                },
                Value::Enum(2, "b".into()),
            ),
            (
                ColumnType::Set {
                    members: vec!["x".into(), "y".into()],
                    collation: Collation::Utf8mb4GeneralCi,
                },
                Value::Set(3, "x,y".into()),
            ),
            (
                ColumnType::VarChar {
                    len: 8,
                    collation: Collation::Binary,
                },
                Value::Bytes(vec![0, 0xFF, b'a', 0]),
            ),
        ];
        for (ty, value) in cases {
            for nullable in [false, true] {
                let decoded = round_trip(ty.clone(), nullable, &value);
                assert_eq!(decoded, KeyColumn::Value(value.clone()), "{ty:?}");
            }
            assert_eq!(
                round_trip(ty.clone(), true, &Value::Null),
                KeyColumn::Value(Value::Null)
            );
        }
    }

    #[test]
    fn collation_keys_decode_to_their_weights_and_decimals_to_bytes() {
        let text = |collation| ColumnType::VarChar { len: 40, collation };
        let long = "a longer value, past one chunk  ";
        for (collation, value, weights) in [
            (Collation::Utf8mb4GeneralCi, "Pear", "PEAR"),
            (Collation::Utf8mb4GeneralCi, "crème ", "CREME"),
            (
                Collation::Utf8mb4GeneralCi,
                long,
                "A LONGER VALUE, PAST ONE CHUNK",
            ),
            (Collation::Utf8mb4Bin, "crème brûlée", "crème brûlée"),
            (Collation::Utf8mb4Bin, "", ""),
        ] {
            let decoded = round_trip(
                text(collation),
                true,
                &Value::Bytes(value.as_bytes().to_vec()),
            );
            assert_eq!(decoded, KeyColumn::Weights(weights.into()), "{value:?}");
        }
        let decimal = ColumnType::Decimal {
            precision: 6,
            scale: 2,
        };
        let two_fifty = Value::Decimal(crate::decimal::Decimal::parse("2.50").unwrap());
        assert!(matches!(
            round_trip(decimal.clone(), true, &two_fifty),
            KeyColumn::Encoded(bytes) if !bytes.is_empty()
        ));
        assert_eq!(
            round_trip(decimal, true, &Value::Null),
            KeyColumn::Value(Value::Null)
        );
    }

    #[test]
    fn damaged_keys_are_errors() {
        let int = column(ColumnType::Int { unsigned: false }, true);
        let string = column(
            ColumnType::VarChar {
                len: 4,
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let binary = column(
            ColumnType::VarChar {
                len: 4,
                collation: Collation::Binary,
            },
            false,
        );
        for (column, bytes) in [
            (&int, &[7u8][..]),
            (&int, &[1, 0, 0][..]),
            (&string, &[0; 16][..]),
            (&string, &[[0u8; 16].as_slice(), &[9]].concat()[..]),
            (&binary, &[b'a', 0, 7][..]),
            (&binary, &[b'a'][..]),
        ] {
            let mut reader = Reader::new(bytes, "key");
            assert!(
                decode_key_column(&mut reader, column).is_err(),
                "{bytes:?} decoded"
            );
        }
    }
}
