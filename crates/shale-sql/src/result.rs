//! What a statement returns, described the way the MySQL protocol needs it.

use crate::error::SqlError;
use shale_table::Value;

/// MySQL's column type codes (`MYSQL_TYPE_*`), as sent in column definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ColumnTypeCode {
    Decimal = 0,
    Tiny = 1,
    Short = 2,
    Long = 3,
    Float = 4,
    Double = 5,
    Null = 6,
    Timestamp = 7,
    LongLong = 8,
    Int24 = 9,
    Date = 10,
    Time = 11,
    DateTime = 12,
    Year = 13,
    VarChar = 15,
    Json = 245,
    NewDecimal = 246,
    Blob = 252,
    VarString = 253,
    String = 254,
}

/// One result column, with everything a column definition packet carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMeta {
    /// The name the client shows (alias or expression text).
    pub name: String,
    pub org_name: String,
    pub table: String,
    pub org_table: String,
    pub database: String,
    pub type_code: ColumnTypeCode,
    /// Display length in characters times the charset's maximum bytes, as MySQL reports it.
    pub length: u32,
    /// `NOT_NULL_FLAG` (1), `PRI_KEY_FLAG` (2), `UNIQUE_KEY_FLAG` (4), `MULTIPLE_KEY_FLAG` (8),
    /// `BLOB_FLAG` (16), `UNSIGNED_FLAG` (32), `BINARY_FLAG` (128), `AUTO_INCREMENT_FLAG` (512), ...
    pub flags: u16,
    pub decimals: u8,
    /// Collation id: 63 binary, 45 `utf8mb4_general_ci`, 46 `utf8mb4_bin`.
    pub charset: u16,
}

/// How a statement ended: an OK packet's fields, or the end of a result set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatementStatus {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub warnings: u16,
    /// An OK packet's human text (`Records: 3  Duplicates: 0  Warnings: 0`).
    pub info: String,
    pub in_transaction: bool,
    pub autocommit: bool,
    /// Another statement of the same text follows (`SERVER_MORE_RESULTS_EXISTS`).
    pub more_results: bool,
}

/// Where a statement's results go. For each statement the session calls either `ok`, or
/// `columns`, then `row` per row, then `end`.
pub trait ResultSink {
    /// A statement that returns no rows finished.
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError>;
    /// A result set begins.
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError>;
    /// One row, one value per column.
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError>;
    /// The result set ended.
    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError>;
    /// LOAD DATA LOCAL INFILE: the contents of the client's file `name`, or `None` when this
    /// sink has no client to ask (the statement then fails with 3948).
    fn local_infile(&mut self, name: &str) -> Result<Option<Vec<u8>>, SqlError> {
        let _ = name;
        Ok(None)
    }
}

/// A sink for one statement of a multi-statement text: sets `more_results` on the statuses
/// it passes on when another statement follows, and passes everything else through
/// (LOAD DATA LOCAL's file request included).
pub struct MoreResults<'a> {
    pub inner: &'a mut dyn ResultSink,
    pub more: bool,
}

impl std::fmt::Debug for MoreResults<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MoreResults")
            .field("more", &self.more)
            .finish_non_exhaustive()
    }
}

impl MoreResults<'_> {
    fn mark(&self, status: &StatementStatus) -> StatementStatus {
        let mut status = status.clone();
        status.more_results |= self.more;
        status
    }
}

impl ResultSink for MoreResults<'_> {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        let status = self.mark(status);
        self.inner.ok(&status)
    }
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.inner.columns(columns)
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.inner.row(row)
    }
    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        let status = self.mark(status);
        self.inner.end(&status)
    }
    fn local_infile(&mut self, name: &str) -> Result<Option<Vec<u8>>, SqlError> {
        self.inner.local_infile(name)
    }
}

/// The text MySQL shows for a value (the text protocol, the mysql client's output): integers
/// in decimal, doubles in their shortest round-trip form, FLOAT (`float`) at its own
/// precision, strings as they are. NULL writes nothing; callers show it their own way.
pub fn write_text(text: &mut String, value: &Value, float: bool) {
    use std::fmt::Write as _;
    let _ = match value {
        Value::Null => Ok(()),
        Value::Int(v) => write!(text, "{v}"),
        Value::UInt(v) => write!(text, "{v}"),
        Value::Double(v) if float => write_double(text, f64::from(*v as f32), true),
        Value::Double(v) => write_double(text, *v, false),
        Value::Decimal(d) => write!(text, "{d}"),
        Value::DateTime(d) => write!(text, "{d}"),
        Value::Time(t) => write!(text, "{t}"),
        Value::Enum(_, member) | Value::Set(_, member) => {
            text.push_str(member);
            Ok(())
        }
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
}
