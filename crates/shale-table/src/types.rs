//! Column types and collations (MySQL's names and semantics).

/// How strings of a column compare and sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collation {
    /// Byte order (BINARY, VARBINARY, BLOB).
    Binary,
    /// utf8mb4 by code point.
    Utf8mb4Bin,
    /// utf8mb4, case-insensitive (`MariaDB`'s default for utf8mb4).
    Utf8mb4GeneralCi,
}

/// A column's declared type.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnType {
    TinyInt {
        unsigned: bool,
    },
    SmallInt {
        unsigned: bool,
    },
    MediumInt {
        unsigned: bool,
    },
    Int {
        unsigned: bool,
    },
    BigInt {
        unsigned: bool,
    },
    Float,
    Double,
    /// CHAR(len) / BINARY(len) when `collation` is `Binary`.
    Char {
        len: u32,
        collation: Collation,
    },
    /// VARCHAR(len) / VARBINARY(len) when `collation` is `Binary`.
    VarChar {
        len: u32,
        collation: Collation,
    },
    /// TEXT / BLOB when `collation` is `Binary`.
    Text {
        collation: Collation,
    },
}
