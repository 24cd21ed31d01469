//! The text protocol's result pieces (MySQL "Text Resultset"): the column count, each
//! ColumnDefinition41 packet, and text rows, where every value is a `string<lenenc>` and NULL
//! is the single byte 0xFB. Also the text form of a [`Value`], which the binary protocol
//! reuses for the types it sends as strings (DECIMAL, character and date strings).

use std::borrow::Cow;
use std::io::Write as _;

use shale_sql::{ColumnMeta, ColumnTypeCode, Value};

use crate::results_charset::{converted_column, unconverted_column};
use crate::wire::{put_lenenc_bytes, put_lenenc_int, put_u16, put_u32};
use shale_sql::Charset;

/// ColumnDefinition41. `default` is only sent in answer to COM_FIELD_LIST. With a `target`
/// (`character_set_results` when it converts, results_charset.rs) the names go out in it,
/// and a text column says it is in it.
pub fn put_column_definition(
    out: &mut Vec<u8>,
    column: &ColumnMeta,
    field_list: bool,
    target: Option<Charset>,
) {
    let converted;
    let column = match target {
        Some(target) => {
            converted = converted_column(column, target);
            &converted
        }
        None => match unconverted_column(column) {
            Some(relabelled) => {
                converted = relabelled;
                &converted
            }
            None => column,
        },
    };
    let name = |text| in_target(text, target);
    put_lenenc_bytes(out, b"def");
    put_lenenc_bytes(out, &name(&column.database));
    put_lenenc_bytes(out, &name(&column.table));
    put_lenenc_bytes(out, &name(&column.org_table));
    put_lenenc_bytes(out, &name(&column.name));
    put_lenenc_bytes(out, &name(&column.org_name));
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

/// Metadata text (a column's name) in `target`.
fn in_target(text: &str, target: Option<Charset>) -> Cow<'_, [u8]> {
    match target {
        Some(target) => target.encode(text.as_bytes()),
        None => Cow::Borrowed(text.as_bytes()),
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
        Value::Enum(_, text) | Value::Set(_, text) => put_lenenc_bytes(out, text.as_bytes()),
        Value::Int(v) => put_short_number(out, |o| write!(o, "{v}")),
        Value::UInt(v) => put_short_number(out, |o| write!(o, "{v}")),
        other @ (Value::Double(_) | Value::Decimal(_) | Value::DateTime(_) | Value::Time(_)) => {
            let mut text = String::new();
            shale_sql::write_text(&mut text, other, float);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_is_0xfb_and_strings_are_lenenc() {
        let mut out = Vec::new();
        put_text_value(&mut out, &Value::Null, false);
        put_text_value(&mut out, &Value::Bytes(b"ab".to_vec()), false);
        put_text_value(&mut out, &Value::Int(7), false);
        assert_eq!(out, b"\xFB\x02ab\x017");
    }
}
