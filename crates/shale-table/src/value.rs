//! A SQL value as the table layer stores and returns it.

use crate::decimal::Decimal;
use crate::temporal::DateTime;
use crate::time::Time;

/// One column's value. Strings (CHAR, VARCHAR, TEXT) and binary strings are `Bytes`; the
/// column's [`ColumnType`](crate::ColumnType) says which and in what collation.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    /// Signed integers of every width.
    Int(i64),
    /// UNSIGNED integers of every width.
    UInt(u64),
    /// FLOAT and DOUBLE.
    Double(f64),
    /// DECIMAL (a column's values come back at its scale).
    Decimal(Decimal),
    /// DATE and DATETIME (a column's values come back with its precision).
    DateTime(DateTime),
    /// Character and binary strings.
    Bytes(Vec<u8>),
    /// TIME (a column's values come back with its precision).
    Time(Time),
    /// An ENUM member: its 1-based index in the column's list (0 for the error value '')
    /// and its text. Equal values have equal indexes.
    Enum(u16, String),
    /// A SET value: its bitmask (bit `i` for the column's member `i + 1`) and its text, the
    /// members in definition order joined by commas. Equal values have equal masks.
    Set(u64, String),
}
