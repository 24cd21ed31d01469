//! Memcomparable keys (docs/format/table-keys.md): `index_id (4 bytes big-endian) ++` the key
//! columns, each encoded so that comparing the bytes compares the values as SQL does.
//!
//! Invariants:
//! 1. For two values `a`, `b` of one column, `encode(a) < encode(b)` iff `a < b` in SQL order
//!    (NULL first; collation order for strings, PAD SPACE where the collation pads), and
//!    `encode(a) == encode(b)` iff they are equal in SQL.
//! 2. Every column encoding is self-delimiting and no encoding is a proper prefix of another
//!    value's encoding, so a concatenation of columns orders like the tuple and
//!    [`skip_column`] finds where a column ends.
//! 3. Tags and marker bytes below never change.

use std::ops::Bound;

use super::collation::{self, Shape};
use super::Reader;
use crate::decimal::Decimal;
use crate::error::{Error, Result};
use crate::schema::ColumnDef;
use crate::types::{Collation, Kind};
use crate::value::Value;

/// The marker of a NULL in a nullable column (sorts before every value).
pub(crate) const NULL_MARKER: u8 = 0x00;
/// The marker before a value in a nullable column.
pub(crate) const VALUE_MARKER: u8 = 0x01;

/// Weights per PAD SPACE chunk.
pub(crate) const CHUNK: usize = 8;
/// After a chunk: the rest of the string sorts below an endless run of spaces.
pub(crate) const CHUNK_LESS: u8 = 0x01;
/// After a chunk: the string ends here (only spaces would follow).
pub(crate) const CHUNK_END: u8 = 0x02;
/// After a chunk: the rest of the string sorts above an endless run of spaces.
pub(crate) const CHUNK_GREATER: u8 = 0x03;

/// The 4-byte prefix of every key of `index_id`.
pub(crate) fn index_prefix(index_id: u32) -> [u8; 4] {
    index_id.to_be_bytes()
}

/// The value as a signed integer, if it is one (or an unsigned one that fits).
pub(crate) fn as_i64(value: &Value) -> Option<i64> {
    match *value {
        Value::Int(v) => Some(v),
        Value::UInt(v) => i64::try_from(v).ok(),
        _ => None,
    }
}

pub(crate) fn as_u64(value: &Value) -> Option<u64> {
    match *value {
        Value::UInt(v) => Some(v),
        Value::Int(v) => u64::try_from(v).ok(),
        _ => None,
    }
}

fn out_of_range(column: &ColumnDef, value: &Value) -> Error {
    Error::InvalidArgument(format!(
        "value {value:?} does not fit column '{}' ({:?})",
        column.name, column.ty
    ))
}

/// The integer as the `width` low bytes of its biased representation (sign bit flipped for
/// signed columns), checked against the column's range.
pub(crate) fn int_bits(
    column: &ColumnDef,
    value: &Value,
    width: u8,
    unsigned: bool,
) -> Result<u64> {
    let bits = u32::from(width) * 8;
    if unsigned {
        let v = as_u64(value).ok_or_else(|| out_of_range(column, value))?;
        if bits < 64 && v >> bits != 0 {
            return Err(out_of_range(column, value));
        }
        Ok(v)
    } else {
        let v = as_i64(value).ok_or_else(|| out_of_range(column, value))?;
        if bits < 64 {
            let min = -(1i64 << (bits - 1));
            let max = (1i64 << (bits - 1)) - 1;
            if v < min || v > max {
                return Err(out_of_range(column, value));
            }
        }
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Ok((v.cast_unsigned() & mask) ^ (1u64 << (bits - 1)))
    }
}

/// The value as an f64 that is not NaN, with -0.0 made 0.0 (SQL has one zero).
pub(crate) fn as_f64(column: &ColumnDef, value: &Value) -> Result<f64> {
    let v = match *value {
        Value::Double(v) => v,
        Value::Int(v) => v as f64,
        Value::UInt(v) => v as f64,
        Value::Decimal(ref d) => d.to_f64(),
        _ => return Err(out_of_range(column, value)),
    };
    if v.is_nan() {
        return Err(Error::InvalidArgument(format!(
            "NaN cannot be stored in column '{}'",
            column.name
        )));
    }
    Ok(if v == 0.0 { 0.0 } else { v })
}

/// The value as an exact decimal (integers and decimals; doubles by their shortest text).
pub(crate) fn as_decimal(value: &Value) -> Option<Decimal> {
    match *value {
        Value::Decimal(ref d) => Some(d.clone()),
        Value::Int(v) => Some(Decimal::from_i128(i128::from(v))),
        Value::UInt(v) => Some(Decimal::from_i128(i128::from(v))),
        Value::Double(v) => Decimal::from_f64(v),
        _ => None,
    }
}

/// The index of an ENUM value, checked against the column's members (0, the error value,
/// included).
pub(crate) fn enum_index(column: &ColumnDef, value: &Value) -> Result<u16> {
    let count = match &column.ty {
        crate::types::ColumnType::Enum { members, .. } => members.len(),
        _ => 0,
    };
    match value {
        Value::Enum(index, _) if usize::from(*index) <= count => Ok(*index),
        _ => Err(out_of_range(column, value)),
    }
}

/// The mask of a SET value, checked against the column's members.
pub(crate) fn set_mask(column: &ColumnDef, value: &Value) -> Result<u64> {
    let count = match &column.ty {
        crate::types::ColumnType::Set { members, .. } => members.len(),
        _ => 0,
    };
    match value {
        Value::Set(mask, _) if count >= 64 || mask >> count == 0 => Ok(*mask),
        _ => Err(out_of_range(column, value)),
    }
}

/// The SET value of `mask` in `column` (None with bits past its members).
pub(crate) fn set_value(column: &ColumnDef, mask: u64) -> Option<Value> {
    let crate::types::ColumnType::Set { members, .. } = &column.ty else {
        return None;
    };
    if members.len() < 64 && mask >> members.len() != 0 {
        return None;
    }
    let text: Vec<&str> = members
        .iter()
        .enumerate()
        .filter(|(i, _)| mask >> i & 1 == 1)
        .map(|(_, m)| m.as_str())
        .collect();
    Some(Value::Set(mask, text.join(",")))
}

/// The ENUM value of `index` in `column` (None past its members).
pub(crate) fn enum_value(column: &ColumnDef, index: u64) -> Option<Value> {
    let crate::types::ColumnType::Enum { members, .. } = &column.ty else {
        return None;
    };
    let index = u16::try_from(index).ok()?;
    match index {
        0 => Some(Value::Enum(0, String::new())),
        i => members
            .get(usize::from(i) - 1)
            .map(|text| Value::Enum(i, text.clone())),
    }
}

/// Order-preserving bits of a non-NaN double: positives get the sign bit set, negatives are
/// inverted.
pub(crate) fn double_bits(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// Appends one column's memcomparable encoding.
pub(crate) fn encode_column(
    out: &mut Vec<u8>,
    column: &ColumnDef,
    value: &Value,
    scratch: &mut Vec<u16>,
) -> Result<()> {
    if column.nullable {
        if matches!(value, Value::Null) {
            out.push(NULL_MARKER);
            return Ok(());
        }
        out.push(VALUE_MARKER);
    } else if matches!(value, Value::Null) {
        return Err(Error::InvalidArgument(format!(
            "column '{}' cannot be NULL",
            column.name
        )));
    }
    match column.ty.kind() {
        Kind::Int { width, unsigned } => {
            let bits = int_bits(column, value, width, unsigned)?;
            out.extend_from_slice(&bits.to_be_bytes()[8 - width as usize..]);
        }
        Kind::Double => {
            out.extend_from_slice(&double_bits(as_f64(column, value)?).to_be_bytes());
        }
        Kind::Decimal { .. } => {
            let d = as_decimal(value).ok_or_else(|| out_of_range(column, value))?;
            super::decimal::encode_key(out, &d);
        }
        Kind::DateTime { .. } => {
            let Value::DateTime(d) = value else {
                return Err(out_of_range(column, value));
            };
            out.extend_from_slice(&d.packed().to_be_bytes());
        }
        Kind::String(collation) => {
            let Value::Bytes(bytes) = value else {
                return Err(out_of_range(column, value));
            };
            encode_string(out, collation, bytes, scratch);
        }
        Kind::Time { .. } => {
            let Value::Time(t) = value else {
                return Err(out_of_range(column, value));
            };
            out.extend_from_slice(&t.key_bits().to_be_bytes()[2..]);
        }
        Kind::Enum { width } => {
            let index = enum_index(column, value)?;
            out.extend_from_slice(&index.to_be_bytes()[2 - usize::from(width)..]);
        }
        Kind::Set { width } => {
            let mask = set_mask(column, value)?;
            out.extend_from_slice(&mask.to_be_bytes()[8 - usize::from(width)..]);
        }
    }
    Ok(())
}

fn encode_string(out: &mut Vec<u8>, collation: Collation, bytes: &[u8], scratch: &mut Vec<u16>) {
    let (pad, wide) = match collation::shape(collation) {
        Shape::Bytes => {
            // NO PAD: 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x01.
            for &b in bytes {
                out.push(b);
                if b == 0 {
                    out.push(0xFF);
                }
            }
            out.extend_from_slice(&[0x00, 0x01]);
            return;
        }
        Shape::NoPad { .. } => {
            // Weights are never 0 inside a level (collation invariant 3): the level
            // separators the weights hold and the final 0 sort below every weight.
            collation::weights(collation, bytes, scratch);
            for &w in scratch.iter() {
                out.extend_from_slice(&w.to_be_bytes());
            }
            out.extend_from_slice(&[0x00, 0x00]);
            return;
        }
        Shape::PadSpace { pad, wide } => (pad, wide),
    };
    collation::weights(collation, bytes, scratch);
    let mut len = scratch.len();
    while len > 0 && scratch[len - 1] == pad {
        len -= 1;
    }
    let units = &scratch[..len];
    let mut start = 0;
    loop {
        let end = (start + CHUNK).min(len);
        for i in start..start + CHUNK {
            // `end` is min(start + CHUNK, len): past it the chunk is padded.
            let unit = units.get(i).copied().unwrap_or(pad);
            if wide {
                out.extend_from_slice(&unit.to_be_bytes());
            } else {
                // Narrow weights are bytes (bin's UTF-8 bytes, latin1's table).
                out.push(unit as u8);
            }
        }
        if end == len {
            out.push(CHUNK_END);
            return;
        }
        // Trailing pads are gone, so the rest holds a weight other than the pad.
        let marker = match units[end..].iter().find(|&&u| u != pad) {
            Some(&u) if u < pad => CHUNK_LESS,
            Some(_) => CHUNK_GREATER,
            None => CHUNK_END,
        };
        out.push(marker);
        if marker == CHUNK_END {
            return;
        }
        start = end;
    }
}

/// Advances `reader` past one encoded column.
pub(crate) fn skip_column(reader: &mut Reader<'_>, column: &ColumnDef) -> Result<()> {
    if column.nullable {
        match reader.u8()? {
            NULL_MARKER => return Ok(()),
            VALUE_MARKER => {}
            _ => return Err(reader.corruption("bad NULL marker")),
        }
    }
    match column.ty.kind() {
        Kind::Int { width, .. } => {
            reader.take(width as usize)?;
        }
        Kind::Double | Kind::DateTime { .. } => {
            reader.take(8)?;
        }
        Kind::Time { .. } => {
            reader.take(6)?;
        }
        Kind::Enum { width } | Kind::Set { width } => {
            reader.take(usize::from(width))?;
        }
        Kind::Decimal { .. } => super::decimal::skip_key(reader)?,
        Kind::String(collation) => match collation::shape(collation) {
            Shape::Bytes => loop {
                if reader.u8()? == 0 {
                    match reader.u8()? {
                        0xFF => {}
                        0x01 => break,
                        _ => return Err(reader.corruption("bad escape in a binary string")),
                    }
                }
            },
            Shape::NoPad { levels } => {
                for _ in 0..levels {
                    while reader.take(2)? != [0, 0] {}
                }
            }
            Shape::PadSpace { wide, .. } => {
                let chunk_bytes = if wide { 2 * CHUNK } else { CHUNK };
                loop {
                    reader.take(chunk_bytes)?;
                    match reader.u8()? {
                        CHUNK_END => break,
                        CHUNK_LESS | CHUNK_GREATER => {}
                        _ => return Err(reader.corruption("bad chunk marker in a string")),
                    }
                }
            }
        },
    }
    Ok(())
}

/// Reads an integer column's value back (the auto-increment recovery needs only these).
pub(crate) fn decode_int_column(
    reader: &mut Reader<'_>,
    column: &ColumnDef,
) -> Result<Option<Value>> {
    if column.nullable {
        match reader.u8()? {
            NULL_MARKER => return Ok(Some(Value::Null)),
            VALUE_MARKER => {}
            _ => return Err(reader.corruption("bad NULL marker")),
        }
    }
    let Kind::Int { width, unsigned } = column.ty.kind() else {
        return Ok(None);
    };
    let mut buf = [0u8; 8];
    buf[8 - width as usize..].copy_from_slice(reader.take(width as usize)?);
    let raw = u64::from_be_bytes(buf);
    if unsigned {
        return Ok(Some(Value::UInt(raw)));
    }
    let bits = u32::from(width) * 8;
    let flipped = raw ^ (1u64 << (bits - 1));
    // Sign-extend from `bits`.
    let shift = 64 - bits;
    Ok(Some(Value::Int((flipped << shift).cast_signed() >> shift)))
}

/// Where a numeric bound falls against an integer column.
enum IntBound {
    /// The integer itself; `exact` is false when a fraction was rounded toward the range.
    In {
        value: Value,
        exact: bool,
    },
    Below,
    Above,
}

fn int_bound(
    column: &ColumnDef,
    value: &Value,
    width: u8,
    unsigned: bool,
    lower: bool,
) -> Result<Option<IntBound>> {
    let (v, exact): (i128, bool) = match *value {
        Value::Int(v) => (i128::from(v), true),
        Value::UInt(v) => (i128::from(v), true),
        Value::Double(d) if d.is_nan() => {
            return Err(Error::InvalidArgument(format!(
                "NaN bound on column '{}'",
                column.name
            )))
        }
        Value::Double(d) if d == f64::INFINITY => return Ok(Some(IntBound::Above)),
        Value::Double(d) if d == f64::NEG_INFINITY => return Ok(Some(IntBound::Below)),
        Value::Decimal(ref d) => {
            let rounded = if lower { d.ceil() } else { d.floor() };
            match rounded.to_i128() {
                Some(v) => (v, rounded == *d),
                None if d.is_negative() => return Ok(Some(IntBound::Below)),
                None => return Ok(Some(IntBound::Above)),
            }
        }
        // `as` saturates, and any |d| above 2^64 is out of every column's range anyway.
        #[allow(clippy::cast_possible_truncation)]
        Value::Double(d) => {
            let rounded = if lower { d.ceil() } else { d.floor() };
            (rounded as i128, rounded.to_bits() == d.to_bits())
        }
        _ => return Ok(None),
    };
    let bits = u32::from(width) * 8;
    let (min, max) = if unsigned {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    if v < min {
        return Ok(Some(IntBound::Below));
    }
    if v > max {
        return Ok(Some(IntBound::Above));
    }
    let value = if unsigned {
        Value::UInt(
            u64::try_from(v).map_err(|_| Error::InvalidArgument("bound out of range".into()))?,
        )
    } else {
        Value::Int(
            i64::try_from(v).map_err(|_| Error::InvalidArgument("bound out of range".into()))?,
        )
    };
    Ok(Some(IntBound::In { value, exact }))
}

/// Encodes a scan bound: `index_id ++` a prefix of the index's columns, as an `Included`
/// or `Excluded` key prefix for [`range_bounds`]. Numbers outside an integer column's range,
/// and fractions on an integer column, are folded into the bound (`tinyint < 1000` keeps
/// every value; `int >= 2.5` starts at 3), so the caller need not clamp.
pub(crate) fn encode_bound(
    index_id: u32,
    columns: &[&ColumnDef],
    values: &[Value],
    lower: bool,
    included: bool,
    scratch: &mut Vec<u16>,
) -> Result<Bound<Vec<u8>>> {
    let mut key = index_prefix(index_id).to_vec();
    for (column, value) in columns.iter().zip(values) {
        if let (Kind::Int { width, unsigned }, false) =
            (column.ty.kind(), matches!(value, Value::Null))
        {
            match int_bound(column, value, width, unsigned, lower)? {
                // Every value of the column is above the bound: a lower bound keeps all of
                // this prefix, an upper one none of it.
                Some(IntBound::Below) => {
                    return Ok(if lower {
                        Bound::Included(key)
                    } else {
                        Bound::Excluded(key)
                    });
                }
                Some(IntBound::Above) => {
                    return Ok(if lower {
                        Bound::Excluded(key)
                    } else {
                        Bound::Included(key)
                    });
                }
                Some(IntBound::In { value, exact }) => {
                    encode_column(&mut key, column, &value, scratch)?;
                    if !exact {
                        return Ok(Bound::Included(key));
                    }
                    continue;
                }
                None => {}
            }
        }
        encode_column(&mut key, column, value, scratch)?;
    }
    Ok(if included {
        Bound::Included(key)
    } else {
        Bound::Excluded(key)
    })
}

/// `index_id ++` the encoding of `values` over `columns` (a prefix of them, for bounds).
#[cfg(test)]
pub(crate) fn encode_key<'c>(
    out: &mut Vec<u8>,
    index_id: u32,
    columns: impl Iterator<Item = &'c ColumnDef>,
    values: &[Value],
    scratch: &mut Vec<u16>,
) -> Result<()> {
    out.extend_from_slice(&index_prefix(index_id));
    for (column, value) in columns.zip(values) {
        encode_column(out, column, value, scratch)?;
    }
    Ok(())
}

/// The smallest key above every key that starts with `prefix` (None: no such key).
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// Engine iterator bounds `[lower, upper)` for a range whose ends are encoded prefixes of an
/// index's key (each already starting with the index id), within `index_id`'s keys.
pub(crate) fn range_bounds(
    index_id: u32,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
) -> (Vec<u8>, Option<Vec<u8>>) {
    let index_start = index_prefix(index_id).to_vec();
    let index_end = prefix_successor(&index_start);
    let lower = match lower {
        Bound::Unbounded => index_start,
        Bound::Included(prefix) => prefix,
        Bound::Excluded(prefix) => {
            prefix_successor(&prefix).unwrap_or_else(|| index_end.clone().unwrap_or_default())
        }
    };
    let upper = match upper {
        Bound::Unbounded => index_end,
        Bound::Included(prefix) => prefix_successor(&prefix).or(index_end),
        Bound::Excluded(prefix) => Some(prefix),
    };
    (lower, upper)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::collation;
    use crate::types::ColumnType;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::cmp::Ordering;

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

    fn encode(column: &ColumnDef, value: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode_column(&mut out, column, value, &mut Vec::new()).unwrap();
        out
    }

    /// SQL order of two values of one column (NULL first).
    fn sql_cmp(column: &ColumnDef, a: &Value, b: &Value) -> Ordering {
        match (a, b) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::UInt(a), Value::UInt(b)) | (Value::Set(a, _), Value::Set(b, _)) => a.cmp(b),
            (Value::Double(a), Value::Double(b)) => a.partial_cmp(b).unwrap(),
            (Value::Decimal(a), Value::Decimal(b)) => a.cmp(b),
            (Value::DateTime(a), Value::DateTime(b)) => a.cmp(b),
            (Value::Time(a), Value::Time(b)) => a.cmp(b),
            (Value::Enum(a, _), Value::Enum(b, _)) => a.cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => {
                let Kind::String(c) = column.ty.kind() else {
                    unreachable!()
                };
                collation::compare(c, a, b)
            }
            _ => unreachable!(),
        }
    }

    fn random_value(rng: &mut SmallRng, column: &ColumnDef) -> Value {
        if column.nullable && rng.gen_ratio(1, 8) {
            return Value::Null;
        }
        match column.ty.kind() {
            Kind::Int { width, unsigned } => {
                let bits = u32::from(width) * 8;
                let raw: u64 = if rng.gen_bool(0.5) {
                    rng.gen_range(0..4)
                } else {
                    rng.gen()
                };
                if unsigned {
                    Value::UInt(if bits == 64 {
                        raw
                    } else {
                        raw & ((1 << bits) - 1)
                    })
                } else {
                    let shift = 64 - bits;
                    let v = (raw << shift).cast_signed() >> shift;
                    Value::Int(if rng.gen_bool(0.3) { -v.signum() } else { v })
                }
            }
            Kind::Double => Value::Double(match rng.gen_range(0..6) {
                0 => 0.0,
                1 => -0.0,
                2 => f64::INFINITY,
                3 => f64::NEG_INFINITY,
                4 => f64::from(rng.gen_range(-3i32..3)),
                _ => rng.gen_range(-1e6..1e6),
            }),
            Kind::Decimal { precision, scale } => {
                let digits = rng.gen_range(1..=usize::from(precision));
                let mut text: String = (0..digits)
                    .map(|_| char::from(b'0' + rng.gen_range(0..10u8)))
                    .collect();
                if rng.gen_bool(0.5) {
                    text.insert(0, '-');
                }
                let coefficient: num_bigint::BigInt = text.parse().unwrap();
                Value::Decimal(Decimal::new(coefficient, scale))
            }
            Kind::DateTime { fsp } => {
                let start = crate::temporal::DateTime::parse("1000-01-01", fsp).unwrap();
                let span: i64 = 9000 * 366 * 86_400_000_000;
                let delta = if rng.gen_bool(0.3) {
                    rng.gen_range(0..3) * 86_400_000_000
                } else {
                    rng.gen_range(0..span)
                };
                let d = start.add_micros(delta).unwrap_or(start);
                Value::DateTime(d.round_to(fsp))
            }
            Kind::String(_) => {
                let alphabet: &[&str] = &[
                    "a", "A", "b", " ", "\t", "\0", "é", "E", "ß", "s", "z", "😀", "\u{ff}",
                ];
                let len = rng.gen_range(0..12);
                let s: String = (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect();
                Value::Bytes(s.into_bytes())
            }
            Kind::Time { fsp } => {
                let max = crate::time::TIME_MAX_MICROS;
                let micros = match rng.gen_range(0..4) {
                    0 => rng.gen_range(-2..=2) * 1_000_000,
                    1 => [-max, max][rng.gen_range(0..2)],
                    _ => rng.gen_range(-max..=max),
                };
                match crate::time::Time::clipped(i128::from(micros), fsp) {
                    crate::time::TimeParse::Ok(t) | crate::time::TimeParse::Clipped(t) => {
                        Value::Time(t)
                    }
                    crate::time::TimeParse::Invalid => unreachable!(),
                }
            }
            Kind::Enum { .. } => {
                let crate::types::ColumnType::Enum { members, .. } = &column.ty else {
                    unreachable!()
                };
                let index = rng.gen_range(0..=members.len() as u64);
                enum_value(column, index).unwrap()
            }
            Kind::Set { .. } => {
                let crate::types::ColumnType::Set { members, .. } = &column.ty else {
                    unreachable!()
                };
                let mask = if members.len() >= 64 {
                    rng.gen()
                } else {
                    rng.gen_range(0..1u64 << members.len())
                };
                set_value(column, mask).unwrap()
            }
        }
    }

    fn all_columns() -> Vec<ColumnDef> {
        let mut columns = Vec::new();
        for nullable in [false, true] {
            for unsigned in [false, true] {
                columns.push(column(ColumnType::TinyInt { unsigned }, nullable));
                columns.push(column(ColumnType::SmallInt { unsigned }, nullable));
                columns.push(column(ColumnType::MediumInt { unsigned }, nullable));
                columns.push(column(ColumnType::Int { unsigned }, nullable));
                columns.push(column(ColumnType::BigInt { unsigned }, nullable));
            }
            columns.push(column(ColumnType::Double, nullable));
            columns.push(column(ColumnType::Date, nullable));
            columns.push(column(ColumnType::DateTime { fsp: 0 }, nullable));
            columns.push(column(ColumnType::DateTime { fsp: 6 }, nullable));
            columns.push(column(ColumnType::Timestamp { fsp: 3 }, nullable));
            columns.push(column(ColumnType::Year, nullable));
            columns.push(column(ColumnType::Time { fsp: 0 }, nullable));
            columns.push(column(ColumnType::Time { fsp: 6 }, nullable));
            for count in [3, 9, 20, 30, 64] {
                let members = (0..count).map(|i| format!("s{i}")).collect();
                columns.push(column(
                    ColumnType::Set {
                        members,
                        collation: Collation::Utf8mb4GeneralCi,
                    },
                    nullable,
                ));
            }
            for count in [3, 300] {
                let members = (0..count).map(|i| format!("m{i}")).collect();
                columns.push(column(
                    ColumnType::Enum {
                        members,
                        collation: Collation::Utf8mb4GeneralCi,
                    },
                    nullable,
                ));
            }
            for (precision, scale) in [(1, 0), (10, 2), (65, 30), (65, 0), (30, 30)] {
                columns.push(column(ColumnType::Decimal { precision, scale }, nullable));
            }
            for collation in [
                Collation::Binary,
                Collation::Utf8mb4Bin,
                Collation::Utf8mb4GeneralCi,
                Collation::Utf8mb4Uca900AiCi,
                Collation::Utf8mb4Uca900AsCs,
                Collation::Utf8mb4UnicodeCi,
                Collation::Latin1SwedishCi,
                Collation::Utf8mb3GeneralCi,
            ] {
                columns.push(column(ColumnType::VarChar { len: 20, collation }, nullable));
            }
        }
        columns
    }

    #[test]
    fn byte_order_is_sql_order_for_every_type() {
        let mut rng = SmallRng::seed_from_u64(7);
        for column in all_columns() {
            for _ in 0..3000 {
                let (a, b) = (
                    random_value(&mut rng, &column),
                    random_value(&mut rng, &column),
                );
                let (ea, eb) = (encode(&column, &a), encode(&column, &b));
                assert_eq!(
                    ea.cmp(&eb),
                    sql_cmp(&column, &a, &b),
                    "{column:?}: {a:?} vs {b:?}: {ea:x?} vs {eb:x?}"
                );
                // Self-delimiting: skip finds the end, even with bytes after it.
                let mut joined = ea.clone();
                joined.extend_from_slice(&eb);
                let mut reader = Reader::new(&joined, "test");
                skip_column(&mut reader, &column).unwrap();
                assert_eq!(reader.rest(), &eb[..]);
            }
        }
    }

    #[test]
    fn tuples_order_like_their_first_differing_column() {
        let ci = column(
            ColumnType::VarChar {
                len: 9,
                collation: Collation::Utf8mb4GeneralCi,
            },
            true,
        );
        let int = column(ColumnType::Int { unsigned: false }, false);
        let key = |s: &str, i: i64| {
            let mut out = Vec::new();
            encode_key(
                &mut out,
                9,
                [&ci, &int].into_iter(),
                &[Value::Bytes(s.into()), Value::Int(i)],
                &mut Vec::new(),
            )
            .unwrap();
            out
        };
        assert!(
            key("a", 5) < key("a ", 6),
            "PAD SPACE: equal strings, then the int decides"
        );
        assert!(key("a", 5) > key("A", -1));
        assert!(key("a", 5) < key("a\u{1}", -100) || key("a", 5) > key("a\u{1}", -100));
        assert!(
            key("ab", 0) > key("a", 99),
            "a string sorts after its prefix"
        );
        assert!(
            key("a\t", 99) < key("a", 0),
            "tab sorts below the implicit pad"
        );
    }

    #[test]
    fn fixed_examples() {
        let int = column(ColumnType::Int { unsigned: false }, false);
        assert_eq!(encode(&int, &Value::Int(1)), [0x80, 0, 0, 1]);
        assert_eq!(encode(&int, &Value::Int(-1)), [0x7f, 0xff, 0xff, 0xff]);
        let nullable = column(ColumnType::TinyInt { unsigned: true }, true);
        assert_eq!(encode(&nullable, &Value::Null), [0x00]);
        assert_eq!(encode(&nullable, &Value::UInt(200)), [0x01, 200]);
        let double = column(ColumnType::Double, false);
        assert_eq!(
            encode(&double, &Value::Double(-0.0)),
            encode(&double, &Value::Double(0.0))
        );
        let bin = column(
            ColumnType::VarChar {
                len: 9,
                collation: Collation::Binary,
            },
            false,
        );
        assert_eq!(
            encode(&bin, &Value::Bytes(b"a\0".to_vec())),
            [0x61, 0, 0xff, 0, 1]
        );
        let ci = column(
            ColumnType::VarChar {
                len: 9,
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let mut chunk = vec![0, 0x41];
        chunk.extend_from_slice(&[0, 0x20].repeat(7));
        chunk.push(CHUNK_END);
        assert_eq!(encode(&ci, &Value::Bytes(b"a  ".to_vec())), chunk);
    }

    #[test]
    fn date_key_matches_docs_format_table_keys() {
        let date = column(ColumnType::Date, false);
        let day = crate::temporal::DateTime::parse("2024-01-02", None).unwrap();
        assert_eq!(
            encode(&date, &Value::DateTime(day)),
            [0x00, 0xe2, 0xe5, 0xf5, 0xd8, 0x95, 0x00, 0x00]
        );
    }

    #[test]
    fn out_of_range_and_wrong_types_are_refused() {
        let tiny = column(ColumnType::TinyInt { unsigned: false }, false);
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        assert!(encode_column(&mut out, &tiny, &Value::Int(128), &mut scratch).is_err());
        assert!(encode_column(&mut out, &tiny, &Value::Int(-129), &mut scratch).is_err());
        assert!(encode_column(&mut out, &tiny, &Value::Null, &mut scratch).is_err());
        assert!(encode_column(&mut out, &tiny, &Value::Bytes(vec![]), &mut scratch).is_err());
        let double = column(ColumnType::Double, false);
        assert!(encode_column(&mut out, &double, &Value::Double(f64::NAN), &mut scratch).is_err());
    }

    #[test]
    fn integers_decode_back() {
        let mut rng = SmallRng::seed_from_u64(3);
        for column in all_columns()
            .into_iter()
            .filter(|c| matches!(c.ty.kind(), Kind::Int { .. }))
        {
            for _ in 0..500 {
                let v = random_value(&mut rng, &column);
                let e = encode(&column, &v);
                let mut reader = Reader::new(&e, "test");
                assert_eq!(decode_int_column(&mut reader, &column).unwrap(), Some(v));
                assert!(reader.is_empty());
            }
        }
    }

    #[test]
    fn skip_rejects_truncated_and_bad_bytes() {
        for column in all_columns() {
            for bytes in [&[][..], &[0x07][..], &[0x01, 0x61][..]] {
                let mut reader = Reader::new(bytes, "test");
                let _ = skip_column(&mut reader, &column);
            }
        }
        let mut rng = SmallRng::seed_from_u64(9);
        for column in all_columns() {
            for _ in 0..2000 {
                let len = rng.gen_range(0..40);
                let bytes: Vec<u8> = (0..len).map(|_| rng.gen_range(0..4)).collect();
                let _ = skip_column(&mut Reader::new(&bytes, "test"), &column);
                let _ = decode_int_column(&mut Reader::new(&bytes, "test"), &column);
            }
        }
        let ci = column(
            ColumnType::Text {
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let mut bad = vec![0u8; 16];
        bad.push(0x09);
        assert!(skip_column(&mut Reader::new(&bad, "t"), &ci).is_err());
    }
}
