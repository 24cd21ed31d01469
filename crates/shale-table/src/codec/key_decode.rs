//! Reading key columns back from their memcomparable encoding (docs/format/table-keys.md),
//! for tools that show a table file's entries without the rows (`shale tool sst`).
//!
//! Most encodings are exact and decode to the value. Two are not decoded: strings in a
//! character collation store collation weights (case and trailing spaces are gone), and
//! DECIMAL's base-100 form is read by no one else; those come back as their encoded bytes.
//! Bytes are untrusted (codec invariant 1).

use super::key::{
    decode_int_column, enum_value, set_value, skip_column, NULL_MARKER, VALUE_MARKER,
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
        // Only binary strings keep their bytes; every collation's key is weights.
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

/// A big-endian unsigned integer `width` bytes wide (1 to 8).
fn read_width(reader: &mut Reader<'_>, width: u8) -> Result<u64> {
    let width = usize::from(width).min(8);
    let mut bytes = [0u8; 8];
    bytes[8 - width..].copy_from_slice(reader.take(width)?);
    Ok(u64::from_be_bytes(bytes))
}
