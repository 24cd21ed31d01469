//! SQL types of expressions and columns: what a bound expression yields, how a value is
//! stored into a column (MySQL's strict mode), and the result metadata each type reports.
//!
//! Storing follows strict mode (`STRICT_TRANS_TABLES`): an integer outside the column's range
//! fails with 1264, a string longer than the column with 1406, a non-numeric string for an
//! integer column with 1366, NULL into NOT NULL with 1048. Doubles stored into integer columns
//! round half away from zero. Outside strict mode (`sql_mode`), lenient_store.rs turns what
//! this refuses into a converted value and a warning.

use shale_table::{Collation, ColumnDef, ColumnType, Value};

use crate::error::SqlError;
use crate::result::{ColumnMeta, ColumnTypeCode};
use crate::value::{display, str_to_f64, str_to_i128_exact, to_i128};

/// The type a bound expression yields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlType {
    /// An integer; `len` is the display width in digits.
    Int {
        unsigned: bool,
        len: u32,
    },
    Double,
    /// A single-precision FLOAT (`CAST(x AS FLOAT)`): an f64 that holds an f32, sent as
    /// MYSQL_TYPE_FLOAT so clients print it at its own precision.
    Float,
    /// An exact decimal of at most `precision` digits, `scale` of them after the point.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// A DATE (`fsp` None) or DATETIME(fsp).
    DateTime {
        fsp: Option<u8>,
    },
    /// A string of at most `len` characters.
    Str {
        collation: Collation,
        len: u32,
    },
    Null,
    /// A JSON document (its normalized text: json.rs).
    Json,
    /// A TIME(fsp) (time_type.rs).
    Time {
        fsp: u8,
    },
}

/// Column flag bits of the protocol's column definition.
pub(crate) mod flags {
    pub const NOT_NULL: u16 = 1;
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const ENUM: u16 = 256;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const SET: u16 = 2048;
    pub const NUM: u16 = 32768;
}

/// MySQL's collation ids.
pub(crate) fn collation_id(c: Collation) -> u16 {
    match c {
        Collation::Binary => 63,
        Collation::Utf8mb4Bin => 46,
        Collation::Utf8mb4GeneralCi => 45,
        Collation::Utf8mb4Uca900AiCi => 255,
        Collation::Utf8mb4Uca900AsCs => 278,
        Collation::Utf8mb4UnicodeCi => 224,
        Collation::Latin1SwedishCi => 8,
        Collation::Utf8mb3GeneralCi => 33,
    }
}

/// The collation of a MySQL collation id (result metadata read back, CREATE TABLE ...
/// SELECT): the inverse of [`collation_id`], another id compared as utf8mb4_general_ci.
pub(crate) fn collation_of_id(id: u16) -> Collation {
    match id {
        63 => Collation::Binary,
        46 => Collation::Utf8mb4Bin,
        255 => Collation::Utf8mb4Uca900AiCi,
        278 => Collation::Utf8mb4Uca900AsCs,
        224 => Collation::Utf8mb4UnicodeCi,
        8 => Collation::Latin1SwedishCi,
        33 => Collation::Utf8mb3GeneralCi,
        _ => Collation::Utf8mb4GeneralCi,
    }
}

impl SqlType {
    /// The type of values of a column.
    pub(crate) fn of_column(ty: &ColumnType) -> SqlType {
        match *ty {
            ColumnType::TinyInt { unsigned } => SqlType::Int { unsigned, len: 4 },
            ColumnType::SmallInt { unsigned } => SqlType::Int { unsigned, len: 6 },
            ColumnType::MediumInt { unsigned } => SqlType::Int { unsigned, len: 9 },
            ColumnType::Int { unsigned } => SqlType::Int { unsigned, len: 11 },
            ColumnType::BigInt { unsigned } => SqlType::Int { unsigned, len: 20 },
            ColumnType::Float | ColumnType::Double => SqlType::Double,
            ColumnType::Decimal { precision, scale } => SqlType::Decimal { precision, scale },
            ColumnType::Date => SqlType::DateTime { fsp: None },
            ColumnType::DateTime { fsp } | ColumnType::Timestamp { fsp } => {
                SqlType::DateTime { fsp: Some(fsp) }
            }
            ColumnType::Year => SqlType::Int {
                unsigned: true,
                len: 4,
            },
            ColumnType::Char { len, collation } | ColumnType::VarChar { len, collation } => {
                SqlType::Str { collation, len }
            }
            ColumnType::Text { collation } => SqlType::Str {
                collation,
                len: 65535,
            },
            ColumnType::Json => SqlType::Json,
            ColumnType::Time { fsp } => SqlType::Time { fsp },
            ColumnType::Enum {
                ref members,
                collation,
            } => SqlType::Str {
                collation,
                len: crate::enum_type::max_chars(members),
            },
            ColumnType::Set {
                ref members,
                collation,
            } => SqlType::Str {
                collation,
                len: crate::set_type::max_chars(members),
            },
        }
    }

    /// The collation strings of this type compare in (binary for non-strings).
    pub(crate) fn collation(&self) -> Collation {
        match self {
            SqlType::Str { collation, .. } => *collation,
            _ => Collation::Utf8mb4GeneralCi,
        }
    }

    /// Result metadata for an expression of this type named `name`.
    pub(crate) fn meta(&self, name: &str, nullable: bool) -> ColumnMeta {
        let mut m = ColumnMeta {
            name: name.to_string(),
            org_name: String::new(),
            table: String::new(),
            org_table: String::new(),
            database: String::new(),
            type_code: ColumnTypeCode::LongLong,
            length: 0,
            flags: if nullable { 0 } else { flags::NOT_NULL },
            decimals: 0,
            charset: 63,
        };
        match self {
            SqlType::Int { unsigned, len } => {
                m.type_code = ColumnTypeCode::LongLong;
                m.length = *len;
                m.flags |= flags::NUM | flags::BINARY;
                if *unsigned {
                    m.flags |= flags::UNSIGNED;
                }
            }
            SqlType::Double => {
                m.type_code = ColumnTypeCode::Double;
                m.length = 23;
                m.decimals = 31;
                m.flags |= flags::NUM | flags::BINARY;
            }
            SqlType::Float => {
                m.type_code = ColumnTypeCode::Float;
                m.length = 12;
                m.decimals = 31;
                m.flags |= flags::NUM | flags::BINARY;
            }
            SqlType::Decimal { precision, scale } => {
                m.type_code = ColumnTypeCode::NewDecimal;
                m.length = crate::decimal::display_length(*precision, *scale);
                m.decimals = *scale;
                m.flags |= flags::NUM | flags::BINARY;
            }
            SqlType::DateTime { fsp } => {
                m.type_code = if fsp.is_some() {
                    ColumnTypeCode::DateTime
                } else {
                    ColumnTypeCode::Date
                };
                m.length = crate::temporal::display_length(*fsp);
                m.decimals = fsp.unwrap_or(0);
                m.flags |= flags::BINARY;
            }
            SqlType::Time { fsp } => {
                m.type_code = ColumnTypeCode::Time;
                m.length = crate::time_type::display_length(*fsp);
                m.decimals = *fsp;
                m.flags |= flags::BINARY;
            }
            SqlType::Str { collation, len } => {
                m.type_code = ColumnTypeCode::VarString;
                m.charset = collation_id(*collation);
                m.length = len.saturating_mul(if *collation == Collation::Binary {
                    1
                } else {
                    4
                });
                if *collation == Collation::Binary {
                    m.flags |= flags::BINARY;
                }
            }
            SqlType::Null => {
                m.type_code = ColumnTypeCode::Null;
                m.flags |= flags::BINARY;
            }
            SqlType::Json => {
                // MYSQL_TYPE_JSON, binary charset, as MySQL 8 sends it.
                m.type_code = ColumnTypeCode::Json;
                m.length = u32::MAX;
                m.flags |= flags::BLOB | flags::BINARY;
            }
        }
        m
    }
}

/// Result metadata of a table column as it appears in a result set.
pub(crate) fn column_meta(
    database: &str,
    table: &str,
    def: &shale_table::TableDef,
    pos: usize,
    name: &str,
) -> ColumnMeta {
    let col = &def.columns[pos];
    let mut m = SqlType::of_column(&col.ty).meta(name, col.nullable);
    m.org_name.clone_from(&col.name);
    m.table = table.to_string();
    m.org_table.clone_from(&def.name);
    m.database = database.to_string();
    m.type_code = match col.ty {
        ColumnType::TinyInt { .. } => ColumnTypeCode::Tiny,
        ColumnType::SmallInt { .. } => ColumnTypeCode::Short,
        ColumnType::MediumInt { .. } => ColumnTypeCode::Int24,
        ColumnType::Int { .. } => ColumnTypeCode::Long,
        ColumnType::BigInt { .. } => ColumnTypeCode::LongLong,
        ColumnType::Float => ColumnTypeCode::Float,
        ColumnType::Double => ColumnTypeCode::Double,
        ColumnType::Decimal { .. } => ColumnTypeCode::NewDecimal,
        ColumnType::Date => ColumnTypeCode::Date,
        ColumnType::DateTime { .. } => ColumnTypeCode::DateTime,
        ColumnType::Year => ColumnTypeCode::Year,
        // An ENUM is a STRING (254) with the ENUM flag, as MySQL sends it.
        ColumnType::Char { .. } | ColumnType::Enum { .. } | ColumnType::Set { .. } => {
            ColumnTypeCode::String
        }
        ColumnType::VarChar { .. } => ColumnTypeCode::VarString,
        ColumnType::Text { .. } => ColumnTypeCode::Blob,
        ColumnType::Timestamp { .. } => ColumnTypeCode::Timestamp,
        ColumnType::Json => ColumnTypeCode::Json,
        ColumnType::Time { .. } => ColumnTypeCode::Time,
    };
    if matches!(col.ty, ColumnType::Enum { .. }) {
        m.flags |= flags::ENUM;
    }
    if matches!(col.ty, ColumnType::Set { .. }) {
        m.flags |= flags::SET;
    }
    if matches!(col.ty, ColumnType::Float) {
        m.length = 12;
    }
    if matches!(col.ty, ColumnType::Text { .. } | ColumnType::Json) {
        m.flags |= flags::BLOB;
    }
    if def.primary_key.columns.contains(&pos) {
        m.flags |= flags::PRI_KEY;
    }
    if def.indexes.iter().any(|i| i.columns.first() == Some(&pos)) {
        m.flags |= flags::MULTIPLE_KEY;
    }
    if def
        .indexes
        .iter()
        .any(|i| i.unique && i.columns.len() == 1 && i.columns[0] == pos)
    {
        m.flags |= flags::UNIQUE_KEY;
    }
    if col.auto_increment {
        m.flags |= flags::AUTO_INCREMENT;
    }
    m
}

/// The range of an integer column type.
pub(crate) fn int_range(ty: &ColumnType) -> Option<(i128, i128)> {
    let (bits, unsigned) = match *ty {
        ColumnType::TinyInt { unsigned } => (8, unsigned),
        ColumnType::SmallInt { unsigned } => (16, unsigned),
        ColumnType::MediumInt { unsigned } => (24, unsigned),
        ColumnType::Int { unsigned } => (32, unsigned),
        ColumnType::BigInt { unsigned } => (64, unsigned),
        ColumnType::Year => return Some((0, 2155)),
        _ => return None,
    };
    Some(if unsigned {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    })
}

fn is_unsigned(ty: &ColumnType) -> bool {
    matches!(
        *ty,
        ColumnType::TinyInt { unsigned: true }
            | ColumnType::SmallInt { unsigned: true }
            | ColumnType::MediumInt { unsigned: true }
            | ColumnType::Int { unsigned: true }
            | ColumnType::BigInt { unsigned: true }
            | ColumnType::Year
    )
}

/// An integer in the representation the table layer stores for `ty`.
pub(crate) fn int_value(ty: &ColumnType, v: i128) -> Value {
    if is_unsigned(ty) {
        Value::UInt(v as u64)
    } else {
        Value::Int(v as i64)
    }
}

/// `value` converted for storing into `col` (strict mode; `row` is 1-based, for messages).
pub(crate) fn store_value(col: &ColumnDef, value: Value, row: usize) -> Result<Value, SqlError> {
    if matches!(value, Value::Null) {
        return if col.nullable {
            Ok(Value::Null)
        } else {
            Err(SqlError::not_null(&col.name))
        };
    }
    match &col.ty {
        ty @ (ColumnType::TinyInt { .. }
        | ColumnType::SmallInt { .. }
        | ColumnType::MediumInt { .. }
        | ColumnType::Int { .. }
        | ColumnType::BigInt { .. }) => {
            let i = match &value {
                Value::Bytes(b) => match str_to_i128_exact(b) {
                    Some(i) => i,
                    None => {
                        let t = String::from_utf8_lossy(b);
                        let trimmed = t.trim();
                        let numeric = !trimmed.is_empty()
                            && trimmed.parse::<f64>().is_ok()
                            && trimmed.chars().all(|c| {
                                c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')
                            });
                        if !numeric {
                            return Err(SqlError::incorrect_integer(&t, &col.name, row));
                        }
                        str_to_f64(b).round() as i128
                    }
                },
                Value::Double(d) if !d.is_finite() => {
                    return Err(SqlError::out_of_range(&col.name, row))
                }
                other => to_i128(other).unwrap_or(0),
            };
            let (lo, hi) = int_range(ty).unwrap_or((i128::MIN, i128::MAX));
            if i < lo || i > hi {
                return Err(SqlError::out_of_range(&col.name, row));
            }
            Ok(int_value(ty, i))
        }
        ColumnType::Float | ColumnType::Double => Ok(Value::Double(match &value {
            Value::Bytes(b) => {
                let t = String::from_utf8_lossy(b);
                match t.trim().parse::<f64>() {
                    Ok(d) => d,
                    Err(_) => return Err(SqlError::data_truncated(&col.name, row)),
                }
            }
            other => crate::value::to_f64(other).unwrap_or(0.0),
        })),
        ColumnType::Decimal { precision, scale } => {
            crate::decimal::store(&value, *precision, *scale, &col.name, row)
        }
        ColumnType::Date => crate::temporal::store(&value, None, &col.name, row),
        ColumnType::DateTime { fsp } | ColumnType::Timestamp { fsp } => {
            crate::temporal::store(&value, Some(*fsp), &col.name, row)
        }
        ColumnType::Year => crate::temporal::store_year(&value, &col.name, row),
        ColumnType::Time { fsp } => crate::time_type::store(&value, *fsp, &col.name, row),
        ColumnType::Enum { members, collation } => {
            crate::enum_type::store(members, *collation, &value, &col.name, row)
        }
        ColumnType::Set { members, collation } => {
            crate::set_type::store(members, *collation, &value, &col.name, row)
        }
        ColumnType::Char { len, collation } | ColumnType::VarChar { len, collation } => {
            let mut bytes = match value {
                Value::Bytes(b) => b,
                other => display(&other).into_bytes(),
            };
            let len = *len as usize;
            if *collation == Collation::Binary {
                if bytes.len() > len {
                    return Err(SqlError::data_too_long(&col.name, row));
                }
                if matches!(col.ty, ColumnType::Char { .. }) {
                    // BINARY(n) is padded with zero bytes to its length.
                    bytes.resize(len, 0);
                }
                return Ok(Value::Bytes(bytes));
            }
            let text = valid_text(bytes, *collation, &col.name, row)?;
            let chars = text.chars().count();
            let mut text = if chars > len {
                // Trailing spaces past the length are cut (MySQL: note 1265); anything else
                // is too long.
                let cut = text.char_indices().nth(len).map_or(text.len(), |(i, _)| i);
                if text[cut..].bytes().any(|b| b != b' ') {
                    return Err(SqlError::data_too_long(&col.name, row));
                }
                text[..cut].to_string()
            } else {
                text
            };
            if matches!(col.ty, ColumnType::Char { .. }) {
                // CHAR drops trailing spaces (they come back as padding, which MySQL strips).
                text.truncate(text.trim_end_matches(' ').len());
            }
            Ok(Value::Bytes(text.into_bytes()))
        }
        ColumnType::Json => crate::json::store(&value, &col.name),
        ColumnType::Text { collation } => {
            let bytes = match value {
                Value::Bytes(b) => b,
                other => display(&other).into_bytes(),
            };
            if *collation == Collation::Binary {
                Ok(Value::Bytes(bytes))
            } else {
                Ok(Value::Bytes(
                    valid_text(bytes, *collation, &col.name, row)?.into_bytes(),
                ))
            }
        }
    }
}

/// Text for a column in `collation`: 1366 for bytes that are not UTF-8, or for a character
/// the column's character set lacks (an emoji into a latin1 or utf8mb3 column), as MySQL's
/// strict mode; the message shows the bytes from the first bad one.
fn valid_text(
    bytes: Vec<u8>,
    collation: Collation,
    column: &str,
    row: usize,
) -> Result<String, SqlError> {
    let incorrect = |bad: &[u8]| {
        let shown = bad.iter().take(4).fold(String::new(), |mut acc, b| {
            use std::fmt::Write as _;
            let _ = write!(acc, "\\x{b:02X}");
            acc
        });
        SqlError::new(
            1366,
            "22007",
            format!("Incorrect string value: '{shown}' for column '{column}' at row {row}"),
        )
    };
    let text = String::from_utf8(bytes)
        .map_err(|e| incorrect(&e.as_bytes()[e.utf8_error().valid_up_to()..]))?;
    let charset = crate::Charset::of_collation(collation);
    match text.char_indices().find(|(_, c)| !charset.holds(*c)) {
        Some((at, _)) => Err(incorrect(&text.as_bytes()[at..])),
        None => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(ty: ColumnType, nullable: bool) -> ColumnDef {
        ColumnDef {
            name: "x".into(),
            ty,
            nullable,
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        }
    }

    #[test]
    fn store_table() {
        let int = col(ColumnType::Int { unsigned: false }, false);
        let uint = col(ColumnType::TinyInt { unsigned: true }, true);
        let ch = col(
            ColumnType::Char {
                len: 3,
                collation: Collation::Utf8mb4GeneralCi,
            },
            true,
        );
        let b = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        let ok: Vec<(&ColumnDef, Value, Value)> = vec![
            (&int, Value::Int(5), Value::Int(5)),
            (&int, b("42"), Value::Int(42)),
            (&int, Value::Double(2.5), Value::Int(3)),
            (&int, b("1e2"), Value::Int(100)),
            (&uint, Value::Int(255), Value::UInt(255)),
            (&uint, Value::Null, Value::Null),
            (&ch, b("abc"), b("abc")),
            (&ch, b("äöü"), b("äöü")),
            (&ch, Value::Int(12), b("12")),
            (&ch, b("ab "), b("ab")),
            (&ch, b("abc   "), b("abc")),
        ];
        for (c, v, want) in ok {
            assert_eq!(store_value(c, v.clone(), 1).unwrap(), want, "{v:?}");
        }
        let bad: Vec<(&ColumnDef, Value, u16)> = vec![
            (&int, Value::Null, 1048),
            (&int, Value::Int(1 << 40), 1264),
            (&int, b("abc"), 1366),
            (&uint, Value::Int(-1), 1264),
            (&uint, Value::Int(256), 1264),
            (&ch, b("abcd"), 1406),
            (&ch, Value::Bytes(vec![0xff, 0x41]), 1366),
        ];
        for (c, v, code) in bad {
            assert_eq!(
                store_value(c, v.clone(), 1).unwrap_err().code,
                code,
                "{v:?}"
            );
        }
    }
}
