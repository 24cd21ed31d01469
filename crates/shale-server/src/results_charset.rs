//! What `character_set_results` does to a result set (MySQL "Connection Character Sets and
//! Collations"): the values of text columns go out converted from UTF-8 into it, and the
//! column definitions say so (its collation id, lengths in its bytes, names in it). Error
//! messages are converted too ([`crate::results::Output::err`]).
//!
//! Invariants:
//! 1. Binary columns (BLOB, VARBINARY, BINARY, anything of collation 63) and non-text values
//!    are never converted.
//! 2. `character_set_results = NULL` converts nothing, and so does utf8mb4, which is what
//!    Shale stores: column definitions then keep the column's own collation id (MySQL would
//!    send 255, utf8mb4's default, for a utf8mb4 target), except a latin1 column's, whose
//!    UTF-8 values go out labelled utf8mb4 (255) so that clients decode them right
//!    ([`unconverted_column`]).
//! 3. Conversion never fails: a character the target lacks is sent as `?`.

use std::borrow::Cow;

use shale_sql::{ColumnMeta, ColumnTypeCode, Value};

use shale_sql::Charset;

/// The collation id of binary strings and of every non-text column.
const BINARY_COLLATION: u16 = 63;

/// The character set results must be converted into: None for NULL, an unknown name, and
/// utf8mb4 (invariant 2).
pub fn conversion_target(character_set_results: Option<Charset>) -> Option<Charset> {
    character_set_results.filter(|c| !c.is_utf8mb4())
}

/// Whether a column's values are text, which `character_set_results` converts.
pub fn is_text(column: &ColumnMeta) -> bool {
    column.charset != BINARY_COLLATION
        && matches!(
            column.type_code,
            ColumnTypeCode::VarChar
                | ColumnTypeCode::VarString
                | ColumnTypeCode::String
                | ColumnTypeCode::Blob
                | ColumnTypeCode::Json
        )
}

/// The column definition as it goes out when results are not converted: the column's own,
/// but a text column of a character set whose bytes are not UTF-8 (latin1, id 8) says
/// utf8mb4, the bytes Shale sends (None when the column goes out as it is).
pub fn unconverted_column(column: &ColumnMeta) -> Option<ColumnMeta> {
    if !is_text(column) || column.charset != Charset::Latin1.collation_id() {
        return None;
    }
    let mut out = column.clone();
    out.charset = Charset::Utf8mb4.collation_id();
    Some(out)
}

/// The column definition as it goes out to a client reading results in `target`: the
/// target's collation and, as MySQL computes it, the length in the target's bytes (the
/// column's characters times the target's bytes per character; a BLOB-typed text column's
/// length counts bytes). Metadata names are converted by the caller (text.rs).
pub fn converted_column(column: &ColumnMeta, target: Charset) -> ColumnMeta {
    let mut out = column.clone();
    if !is_text(column) {
        return out;
    }
    // Shale's text columns are utf8mb4: 4 bytes a character at most, 1 at least.
    let characters = if column.type_code == ColumnTypeCode::Blob {
        column.length
    } else {
        column.length / 4
    };
    out.length = characters.saturating_mul(target.max_bytes());
    out.charset = target.collation_id();
    out
}

/// The row with each text column's value converted into `target` (borrowed when none
/// changes). `text_columns[i]` says whether column `i` is text.
pub fn converted_row<'a>(
    row: &'a [Value],
    text_columns: &[bool],
    target: Charset,
) -> Cow<'a, [Value]> {
    let changes = |i: usize, value: &Value| {
        text_columns.get(i) == Some(&true)
            && match value {
                Value::Bytes(bytes) => matches!(target.encode(bytes), Cow::Owned(_)),
                Value::Enum(_, text) | Value::Set(_, text) => !text.is_ascii(),
                _ => false,
            }
    };
    if !row.iter().enumerate().any(|(i, v)| changes(i, v)) {
        return Cow::Borrowed(row);
    }
    let converted = row
        .iter()
        .enumerate()
        .map(|(i, value)| {
            if text_columns.get(i) != Some(&true) {
                return value.clone();
            }
            match value {
                Value::Bytes(bytes) => Value::Bytes(target.encode(bytes).into_owned()),
                // ENUM and SET values go out as their text.
                Value::Enum(_, text) | Value::Set(_, text) => {
                    Value::Bytes(target.encode(text.as_bytes()).into_owned())
                }
                other => other.clone(),
            }
        })
        .collect();
    Cow::Owned(converted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(type_code: ColumnTypeCode, charset: u16, length: u32) -> ColumnMeta {
        ColumnMeta {
            name: "c".into(),
            org_name: "c".into(),
            table: "t".into(),
            org_table: "t".into(),
            database: "d".into(),
            type_code,
            length,
            flags: 0,
            decimals: 0,
            charset,
        }
    }

    #[test]
    fn latin1_columns_say_utf8mb4_when_not_converted() {
        let latin1 = column(ColumnTypeCode::VarString, 8, 40);
        assert_eq!(unconverted_column(&latin1).map(|c| c.charset), Some(255));
        assert_eq!(
            unconverted_column(&column(ColumnTypeCode::VarString, 45, 40)),
            None
        );
        assert_eq!(
            unconverted_column(&column(ColumnTypeCode::Long, 8, 11)),
            None
        );
    }

    #[test]
    fn text_columns_take_the_targets_collation_and_length() {
        let varchar = column(ColumnTypeCode::VarString, 45, 40);
        let latin1 = converted_column(&varchar, Charset::Latin1);
        assert_eq!((latin1.charset, latin1.length), (8, 10));
        let utf8mb3 = converted_column(&varchar, Charset::Utf8mb3);
        assert_eq!((utf8mb3.charset, utf8mb3.length), (33, 30));
        let text = converted_column(&column(ColumnTypeCode::Blob, 46, 65_535), Charset::Utf8mb3);
        assert_eq!((text.charset, text.length), (33, 196_605));
        // Binary and numeric columns are left alone.
        for col in [
            column(ColumnTypeCode::Blob, 63, 65_535),
            column(ColumnTypeCode::VarString, 63, 10),
            column(ColumnTypeCode::LongLong, 63, 20),
        ] {
            assert_eq!(converted_column(&col, Charset::Latin1), col);
        }
        assert_eq!(conversion_target(Some(Charset::Utf8mb4)), None);
        assert_eq!(conversion_target(None), None);
        assert_eq!(
            conversion_target(Some(Charset::Latin1)),
            Some(Charset::Latin1)
        );
    }

    #[test]
    fn only_text_values_are_converted() {
        let row = [
            Value::Bytes("café".into()),
            Value::Bytes("café".into()),
            Value::Int(7),
            Value::Bytes(b"plain".to_vec()),
        ];
        let out = converted_row(&row, &[true, false, false, true], Charset::Latin1);
        assert_eq!(
            out.as_ref(),
            [
                Value::Bytes(b"caf\xE9".to_vec()),
                Value::Bytes("café".into()),
                Value::Int(7),
                Value::Bytes(b"plain".to_vec()),
            ]
        );
        let ascii = [Value::Bytes(b"abc".to_vec())];
        assert!(matches!(
            converted_row(&ascii, &[true], Charset::Latin1),
            Cow::Borrowed(_)
        ));
    }
}
