//! The binary protocol's values (MySQL "Binary Protocol Resultset" and "Binary Protocol Value"):
//! binary result rows, and the parameter values of COM_STMT_EXECUTE.
//!
//! A binary row is `0x00`, a NULL bitmap of `(columns + 7 + 2) / 8` bytes whose first two bits
//! are unused, then each non-NULL value in its column type's encoding: fixed-width little-endian
//! integers and floats, a length-prefixed date/time structure, or `string<lenenc>`.
//!
//! Invariants:
//! 1. A row value is encoded by the type its column definition announced, whatever [`Value`]
//!    variant carries it (the client decodes by the announced type, so anything else would
//!    desynchronise the row); a value that does not convert becomes 0 or the zero date, as
//!    MySQL's own conversions do.
//! 2. Parameter decoding never panics and never reads past the packet ([`Reader`]).

use std::fmt::Write as _;

use shale_sql::{ColumnTypeCode, Value};

use crate::text::put_text_value;
use crate::wire::{put_u16, put_u32, Malformed, Reader};
use shale_sql::write_text;

/// MySQL type codes beyond [`ColumnTypeCode`] that clients may send as parameter types.
mod param_type {
    pub const DECIMAL: u8 = 0;
    pub const TINY: u8 = 1;
    pub const SHORT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const NULL: u8 = 6;
    pub const TIMESTAMP: u8 = 7;
    pub const LONGLONG: u8 = 8;
    pub const INT24: u8 = 9;
    pub const DATE: u8 = 10;
    pub const TIME: u8 = 11;
    pub const DATETIME: u8 = 12;
    pub const YEAR: u8 = 13;
    pub const VARCHAR: u8 = 15;
    pub const BIT: u8 = 16;
    pub const JSON: u8 = 245;
    pub const NEWDECIMAL: u8 = 246;
    pub const GEOMETRY: u8 = 255;
}

/// The unsigned flag in a parameter type's second byte.
pub const UNSIGNED_PARAM: u8 = 0x80;

/// One binary result row.
pub fn put_binary_row(out: &mut Vec<u8>, types: &[ColumnTypeCode], row: &[Value]) {
    out.push(0x00);
    let bitmap_start = out.len();
    out.resize(bitmap_start + (row.len() + 7 + 2) / 8, 0);
    for (i, value) in row.iter().enumerate() {
        if matches!(value, Value::Null) {
            let bit = i + 2;
            out[bitmap_start + bit / 8] |= 1 << (bit % 8);
            continue;
        }
        let type_code = types.get(i).copied().unwrap_or(ColumnTypeCode::VarString);
        put_binary_value(out, type_code, value);
    }
}

fn put_binary_value(out: &mut Vec<u8>, type_code: ColumnTypeCode, value: &Value) {
    match type_code {
        ColumnTypeCode::Tiny => out.push(as_i64(value).cast_unsigned() as u8),
        ColumnTypeCode::Short | ColumnTypeCode::Year => {
            put_u16(out, as_i64(value).cast_unsigned() as u16);
        }
        ColumnTypeCode::Long | ColumnTypeCode::Int24 => {
            put_u32(out, as_i64(value).cast_unsigned() as u32);
        }
        ColumnTypeCode::LongLong => out.extend_from_slice(&as_i64(value).to_le_bytes()),
        ColumnTypeCode::Float => out.extend_from_slice(&(as_f64(value) as f32).to_le_bytes()),
        ColumnTypeCode::Double => out.extend_from_slice(&as_f64(value).to_le_bytes()),
        ColumnTypeCode::Date | ColumnTypeCode::DateTime | ColumnTypeCode::Timestamp => {
            put_binary_datetime(out, &text_of(value));
        }
        ColumnTypeCode::Time => put_binary_time(out, &text_of(value)),
        _ => put_text_value(out, value, false),
    }
}

fn text_of(value: &Value) -> String {
    let mut s = String::new();
    write_text(&mut s, value, false);
    s
}

/// The value as a two's-complement integer (unsigned values keep their bits).
fn as_i64(value: &Value) -> i64 {
    match value {
        Value::Null => 0,
        Value::Int(v) => *v,
        Value::UInt(v) => v.cast_signed(),
        Value::Double(v) => v.round() as i64,
        Value::DateTime(d) => d.to_f64() as i64,
        Value::Time(t) => t.to_f64() as i64,
        Value::Enum(i, _) => i64::from(*i),
        Value::Set(m, _) => m.cast_signed(),
        // Unsigned values above i64::MAX keep their bits, as for `UInt`.
        Value::Decimal(d) => d.to_i128().map_or(0, |i| {
            i64::try_from(i).unwrap_or_else(|_| u64::try_from(i).unwrap_or(0).cast_signed())
        }),
        Value::Bytes(b) => {
            let s = std::str::from_utf8(b).unwrap_or("").trim();
            s.parse::<i64>()
                .or_else(|_| s.parse::<u64>().map(u64::cast_signed))
                .unwrap_or_else(|_| s.parse::<f64>().map_or(0, |f| f.round() as i64))
        }
    }
}

fn as_f64(value: &Value) -> f64 {
    match value {
        Value::Null => 0.0,
        Value::Int(v) => *v as f64,
        Value::UInt(v) => *v as f64,
        Value::Double(v) => *v,
        Value::Decimal(d) => d.to_f64(),
        Value::DateTime(d) => d.to_f64(),
        Value::Time(t) => t.to_f64(),
        Value::Enum(i, _) => f64::from(*i),
        Value::Set(m, _) => *m as f64,
        Value::Bytes(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0.0),
    }
}

/// Digits of `s` split at non-digits, as numbers (`2024-01-02 03:04:05.5` -> 2024,1,2,3,4,5,5).
fn numbers(s: &str) -> Vec<(u64, usize)> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| (p.parse().unwrap_or(0), p.len()))
        .collect()
}

/// Microseconds from a fraction's digits (`5` -> 500000).
fn micros(digits: (u64, usize)) -> u32 {
    let (mut v, mut len) = digits;
    while len > 6 {
        v /= 10;
        len -= 1;
    }
    while len < 6 {
        v *= 10;
        len += 1;
    }
    v as u32
}

/// DATE, DATETIME, TIMESTAMP: length 0, 4, 7 or 11, then year, month, day, hour, minute,
/// second, microseconds.
fn put_binary_datetime(out: &mut Vec<u8>, text: &str) {
    let n = numbers(text);
    let get = |i: usize| n.get(i).map_or(0, |&(v, _)| v);
    let (year, month, day) = (get(0) as u16, get(1) as u8, get(2) as u8);
    let (hour, minute, second) = (get(3) as u8, get(4) as u8, get(5) as u8);
    let micro = n.get(6).map_or(0, |&d| micros(d));
    if micro != 0 {
        out.push(11);
    } else if hour != 0 || minute != 0 || second != 0 {
        out.push(7);
    } else if year != 0 || month != 0 || day != 0 {
        out.push(4);
    } else {
        out.push(0);
        return;
    }
    put_u16(out, year);
    out.extend_from_slice(&[month, day]);
    if out[out.len() - 5] >= 7 {
        out.extend_from_slice(&[hour, minute, second]);
        if micro != 0 {
            put_u32(out, micro);
        }
    }
}

/// TIME: length 0, 8 or 12, then is_negative, days, hours, minutes, seconds, microseconds.
fn put_binary_time(out: &mut Vec<u8>, text: &str) {
    let negative = text.trim_start().starts_with('-');
    let n = numbers(text);
    let get = |i: usize| n.get(i).map_or(0, |&(v, _)| v);
    let hours = get(0);
    let (minute, second) = (get(1) as u8, get(2) as u8);
    let micro = n.get(3).map_or(0, |&d| micros(d));
    if hours == 0 && minute == 0 && second == 0 && micro == 0 {
        out.push(0);
        return;
    }
    out.push(if micro == 0 { 8 } else { 12 });
    out.push(u8::from(negative));
    put_u32(out, (hours / 24) as u32);
    out.extend_from_slice(&[(hours % 24) as u8, minute, second]);
    if micro != 0 {
        put_u32(out, micro);
    }
}

/// Decodes one non-NULL parameter value of type `(type_code, flags)`.
pub fn read_param(r: &mut Reader<'_>, type_code: u8, flags: u8) -> Result<Value, Malformed> {
    use param_type as t;
    let unsigned = flags & UNSIGNED_PARAM != 0;
    let what = "parameter value";
    Ok(match type_code {
        t::NULL => Value::Null,
        t::TINY => {
            let b = r.u8(what)?;
            if unsigned {
                Value::UInt(u64::from(b))
            } else {
                Value::Int(i64::from(b.cast_signed()))
            }
        }
        t::SHORT | t::YEAR => {
            let v = r.u16(what)?;
            if unsigned || type_code == t::YEAR {
                Value::UInt(u64::from(v))
            } else {
                Value::Int(i64::from(v.cast_signed()))
            }
        }
        t::LONG | t::INT24 => {
            let v = r.u32(what)?;
            if unsigned {
                Value::UInt(u64::from(v))
            } else {
                Value::Int(i64::from(v.cast_signed()))
            }
        }
        t::LONGLONG => {
            let v = r.u64(what)?;
            if unsigned {
                Value::UInt(v)
            } else {
                Value::Int(v.cast_signed())
            }
        }
        t::FLOAT => {
            let bits = r.u32(what)?;
            Value::Double(f64::from(f32::from_bits(bits)))
        }
        t::DOUBLE => Value::Double(f64::from_bits(r.u64(what)?)),
        t::DATE | t::DATETIME | t::TIMESTAMP => Value::Bytes(read_datetime(r, type_code)?),
        t::TIME => Value::Bytes(read_time(r)?),
        t::DECIMAL | t::NEWDECIMAL | t::VARCHAR | t::BIT | t::JSON | 247..=254 | t::GEOMETRY => {
            Value::Bytes(r.lenenc_bytes(what)?.to_vec())
        }
        _ => return Err(Malformed("unknown parameter type")),
    })
}

fn read_datetime(r: &mut Reader<'_>, type_code: u8) -> Result<Vec<u8>, Malformed> {
    let what = "date parameter";
    let len = r.u8(what)?;
    let body = r.take(len as usize, what)?;
    let mut b = Reader::new(body);
    let (mut year, mut month, mut day) = (0, 0, 0);
    let (mut hour, mut minute, mut second, mut micro) = (0, 0, 0, 0);
    if len >= 4 {
        year = b.u16(what)?;
        month = b.u8(what)?;
        day = b.u8(what)?;
    }
    if len >= 7 {
        hour = b.u8(what)?;
        minute = b.u8(what)?;
        second = b.u8(what)?;
    }
    if len >= 11 {
        micro = b.u32(what)?;
    }
    let mut s = format!("{year:04}-{month:02}-{day:02}");
    if type_code != param_type::DATE || len >= 7 {
        let _ = write!(s, " {hour:02}:{minute:02}:{second:02}");
        if micro != 0 {
            let _ = write!(s, ".{micro:06}");
        }
    }
    Ok(s.into_bytes())
}

fn read_time(r: &mut Reader<'_>) -> Result<Vec<u8>, Malformed> {
    let what = "time parameter";
    let len = r.u8(what)?;
    let body = r.take(len as usize, what)?;
    let mut b = Reader::new(body);
    if len < 8 {
        return Ok(b"00:00:00".to_vec());
    }
    let negative = b.u8(what)? != 0;
    let days = b.u32(what)?;
    let (hour, minute, second) = (b.u8(what)?, b.u8(what)?, b.u8(what)?);
    let micro = if len >= 12 { b.u32(what)? } else { 0 };
    let hours = u64::from(days) * 24 + u64::from(hour);
    let sign = if negative { "-" } else { "" };
    let mut s = format!("{sign}{hours:02}:{minute:02}:{second:02}");
    if micro != 0 {
        let _ = write!(s, ".{micro:06}");
    }
    Ok(s.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_row_encodes_by_column_type_with_null_bitmap() {
        let columns = [
            ColumnTypeCode::LongLong,
            ColumnTypeCode::VarString,
            ColumnTypeCode::Long,
            ColumnTypeCode::NewDecimal,
            ColumnTypeCode::DateTime,
        ];
        let row = [
            Value::Int(-2),
            Value::Null,
            Value::Bytes(b"7".to_vec()),
            Value::Int(15),
            Value::Bytes(b"2024-01-02 03:04:05".to_vec()),
        ];
        let mut out = Vec::new();
        put_binary_row(&mut out, &columns, &row);
        let mut expected = vec![0x00, 0b0000_1000];
        expected.extend_from_slice(&(-2i64).to_le_bytes());
        expected.extend_from_slice(&7u32.to_le_bytes());
        expected.extend_from_slice(b"\x0215");
        expected.extend_from_slice(&[7, 0xE8, 0x07, 1, 2, 3, 4, 5]);
        assert_eq!(out, expected);
    }

    #[test]
    fn params_decode_signed_unsigned_and_dates() {
        let mut r = Reader::new(&[0xFF]);
        assert_eq!(read_param(&mut r, 1, 0), Ok(Value::Int(-1)));
        let mut r = Reader::new(&[0xFF]);
        assert_eq!(read_param(&mut r, 1, UNSIGNED_PARAM), Ok(Value::UInt(255)));
        let bytes = u64::MAX.to_le_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(
            read_param(&mut r, 8, UNSIGNED_PARAM),
            Ok(Value::UInt(u64::MAX))
        );
        let bytes = 2.5f64.to_le_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(read_param(&mut r, 5, 0), Ok(Value::Double(2.5)));
        let mut r = Reader::new(&[3, b'a', b'b', b'c']);
        assert_eq!(
            read_param(&mut r, 253, 0),
            Ok(Value::Bytes(b"abc".to_vec()))
        );
        let mut r = Reader::new(&[11, 0xE8, 0x07, 1, 2, 3, 4, 5, 0x40, 0xE2, 1, 0]);
        assert_eq!(
            read_param(&mut r, 12, 0),
            Ok(Value::Bytes(b"2024-01-02 03:04:05.123456".to_vec()))
        );
        let mut r = Reader::new(&[4, 0xE8, 0x07, 1, 2]);
        assert_eq!(
            read_param(&mut r, 10, 0),
            Ok(Value::Bytes(b"2024-01-02".to_vec()))
        );
        let mut r = Reader::new(&[8, 1, 1, 0, 0, 0, 2, 3, 4]);
        assert_eq!(
            read_param(&mut r, 11, 0),
            Ok(Value::Bytes(b"-26:03:04".to_vec()))
        );
        let mut r = Reader::new(&[1, 2]);
        assert!(read_param(&mut r, 8, 0).is_err());
        assert!(read_param(&mut Reader::new(&[0]), 99, 0).is_err());
    }

    #[test]
    fn time_round_trips_through_binary() {
        let mut out = Vec::new();
        put_binary_time(&mut out, "-26:03:04");
        assert_eq!(out, [8, 1, 1, 0, 0, 0, 2, 3, 4]);
    }
}
