//! The text protocol's result pieces (MySQL "Text Resultset"): the column count, each
//! ColumnDefinition41 packet, and text rows, where every value is a `string<lenenc>` and NULL
//! is the single byte 0xFB. Also the text form of a [`Value`], which the binary protocol
//! reuses for the types it sends as strings (DECIMAL, character and date strings).

use std::io::Write as _;

use shale_sql::{ColumnMeta, ColumnTypeCode, Value};

use crate::wire::{put_lenenc_bytes, put_lenenc_int, put_u16, put_u32};

/// ColumnDefinition41. `default` is only sent in answer to COM_FIELD_LIST.
pub fn put_column_definition(out: &mut Vec<u8>, column: &ColumnMeta, field_list: bool) {
    put_lenenc_bytes(out, b"def");
    put_lenenc_bytes(out, column.database.as_bytes());
    put_lenenc_bytes(out, column.table.as_bytes());
    put_lenenc_bytes(out, column.org_table.as_bytes());
    put_lenenc_bytes(out, column.name.as_bytes());
    put_lenenc_bytes(out, column.org_name.as_bytes());
    put_lenenc_int(out, 0x0C);
    put_u16(out, column.charset);
    put_u32(out, column.length);
    out.push(column.type_code as u8);
    put_u16(out, column.flags);
    out.push(column.decimals);
    put_u16(out, 0);
    if field_list {
        // No default value known: an empty lenenc string.
        put_lenenc_int(out, 0);
    }
}

/// One text row; `types` are the columns' type codes.
pub fn put_text_row(out: &mut Vec<u8>, types: &[ColumnTypeCode], row: &[Value]) {
    for (i, value) in row.iter().enumerate() {
        let float = types.get(i) == Some(&ColumnTypeCode::Float);
        put_text_value(out, value, float);
    }
}

/// One value of a text row (or a binary row's string-typed value, without the NULL case).
pub fn put_text_value(out: &mut Vec<u8>, value: &Value, float: bool) {
    match value {
        Value::Null => out.push(0xFB),
        Value::Bytes(bytes) => put_lenenc_bytes(out, bytes),
        Value::Int(v) => put_short_number(out, |o| write!(o, "{v}")),
        Value::UInt(v) => put_short_number(out, |o| write!(o, "{v}")),
        other @ Value::Double(_) => {
            let mut text = String::new();
            write_text(&mut text, other, float);
            put_lenenc_bytes(out, text.as_bytes());
        }
    }
}

/// An integer's digits (at most 20 bytes, so a one-byte length) written in place, without a
/// temporary string.
fn put_short_number(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) {
    let start = out.len();
    out.push(0);
    let _ = write(out);
    out[start] = (out.len() - start - 1) as u8;
}

/// The text MySQL shows for a number.
pub fn write_text(text: &mut String, value: &Value, float: bool) {
    use std::fmt::Write as _;
    let _ = match value {
        Value::Null => Ok(()),
        Value::Int(v) => write!(text, "{v}"),
        Value::UInt(v) => write!(text, "{v}"),
        Value::Double(v) if float => write_double(text, f64::from(*v as f32), true),
        Value::Double(v) => write_double(text, *v, false),
        Value::Bytes(b) => {
            text.push_str(&String::from_utf8_lossy(b));
            Ok(())
        }
    };
}

/// Shortest round-trip digits; exponent form outside [1e-5, 1e15) the way MySQL prints
/// `1e20` and `1.5e-7`.
fn write_double(text: &mut String, v: f64, float: bool) -> std::fmt::Result {
    use std::fmt::Write as _;
    let magnitude = v.abs();
    if v == 0.0 {
        text.push('0');
        Ok(())
    } else if !v.is_finite() || (1e-5..1e15).contains(&magnitude) {
        if float {
            write!(text, "{}", v as f32)
        } else {
            write!(text, "{v}")
        }
    } else if float {
        write!(text, "{:e}", v as f32)
    } else {
        write!(text, "{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &Value, float: bool) -> String {
        let mut s = String::new();
        write_text(&mut s, v, float);
        s
    }

    #[test]
    fn numbers_print_as_mysql_does() {
        assert_eq!(text(&Value::Int(-42), false), "-42");
        assert_eq!(text(&Value::UInt(u64::MAX), false), "18446744073709551615");
        assert_eq!(text(&Value::Double(1.5), false), "1.5");
        assert_eq!(text(&Value::Double(0.0), false), "0");
        assert_eq!(text(&Value::Double(1e20), false), "1e20");
        assert_eq!(text(&Value::Double(1.5e-7), false), "1.5e-7");
        assert_eq!(
            text(&Value::Double(0.1 + 0.2), false),
            "0.30000000000000004"
        );
        assert_eq!(text(&Value::Double(f64::from(0.1f32)), true), "0.1");
    }

    #[test]
    fn null_is_0xfb_and_strings_are_lenenc() {
        let mut out = Vec::new();
        put_text_value(&mut out, &Value::Null, false);
        put_text_value(&mut out, &Value::Bytes(b"ab".to_vec()), false);
        put_text_value(&mut out, &Value::Int(7), false);
        assert_eq!(out, b"\xFB\x02ab\x017");
    }
}
