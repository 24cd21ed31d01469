//! Column types and collations (`MySQL`'s names and semantics).

/// How strings of a column compare and sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collation {
    /// Byte order (BINARY, VARBINARY, BLOB).
    Binary,
    /// utf8mb4 by code point.
    Utf8mb4Bin,
    /// utf8mb4, case-insensitive (`MariaDB`'s default for utf8mb4).
    Utf8mb4GeneralCi,
    /// `utf8mb4_0900_ai_ci` (`MySQL` 8's default): UCA 9.0.0 primary weights, accent- and
    /// case-insensitive, NO PAD.
    Utf8mb4Uca900AiCi,
    /// `utf8mb4_0900_as_cs`: UCA 9.0.0, three levels (accent- and case-sensitive), NO PAD.
    Utf8mb4Uca900AsCs,
    /// `utf8mb4_unicode_ci`: UCA 4.0.0 primary weights of the BMP, PAD SPACE.
    Utf8mb4UnicodeCi,
    /// `latin1_swedish_ci`: `MySQL`'s latin1 sort order, PAD SPACE.
    Latin1SwedishCi,
    /// `utf8mb3_general_ci`: `MySQL`'s `general_ci` table of the BMP (accents of every
    /// script folded), PAD SPACE.
    Utf8mb3GeneralCi,
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
    /// DECIMAL(precision, scale): `1 <= precision <= 65`, `scale <= min(precision, 30)`.
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// DATE.
    Date,
    /// DATETIME(fsp), `fsp <= 6` fraction digits.
    DateTime {
        fsp: u8,
    },
    /// YEAR: 0 or 1901..=2155, held as an unsigned integer and keyed as a 2-byte one.
    Year,
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
    /// TIMESTAMP(fsp), `fsp <= 6`: an instant between 1970-01-01 00:00:01 and 2038-01-19
    /// 03:14:07.999999 UTC, stored as its UTC date and time (the DATETIME encodings of the UTC
    /// value, docs/format/rows.md). Values cross a [`TableTxn`](crate::TableTxn) in its time
    /// zone ([`TableTxn::set_time_zone_offset`](crate::TableTxn::set_time_zone_offset)).
    Timestamp {
        fsp: u8,
    },
    /// JSON: a document stored as its normalized text (docs/format/rows.md, "JSON");
    /// shale-sql validates and normalizes it before it reaches the table layer.
    Json,
    /// TIME(fsp), `fsp <= 6`: a signed duration within -838:59:59..=838:59:59
    /// (docs/format/table-keys.md, TIME).
    Time {
        fsp: u8,
    },
    /// ENUM('a', 'b', ...): one of at most 65535 members, held as its 1-based index (0 is
    /// the error value ''); members compare under `collation` when text is matched to them
    /// (docs/format/table-keys.md, ENUM).
    Enum {
        members: Vec<String>,
        collation: Collation,
    },
    /// SET('a', 'b', ...): any subset of at most 64 members, held as a bitmask (bit `i` for
    /// member `i + 1`; docs/format/table-keys.md, SET).
    Set {
        members: Vec<String>,
        collation: Collation,
    },
}

/// The most members an ENUM may have.
pub const ENUM_MAX_MEMBERS: usize = 65_535;

/// What kind of value a column holds, as the encoders see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An integer `width` bytes wide (1, 2, 3, 4 or 8).
    Int { width: u8, unsigned: bool },
    /// FLOAT or DOUBLE (both held as f64).
    Double,
    /// An exact decimal of a DECIMAL(precision, scale) column.
    Decimal { precision: u8, scale: u8 },
    /// A DATE (`fsp` None) or DATETIME(fsp).
    DateTime { fsp: Option<u8> },
    /// A string in a collation.
    String(Collation),
    /// A TIME(fsp).
    Time { fsp: u8 },
    /// An ENUM's index, keyed in `width` bytes (1 up to 255 members, else 2).
    Enum { width: u8 },
    /// A SET's bitmask, keyed in `width` bytes (1, 2, 3, 4 or 8).
    Set { width: u8 },
}

impl ColumnType {
    pub(crate) fn kind(&self) -> Kind {
        match *self {
            ColumnType::TinyInt { unsigned } => Kind::Int { width: 1, unsigned },
            ColumnType::SmallInt { unsigned } => Kind::Int { width: 2, unsigned },
            ColumnType::MediumInt { unsigned } => Kind::Int { width: 3, unsigned },
            ColumnType::Int { unsigned } => Kind::Int { width: 4, unsigned },
            ColumnType::BigInt { unsigned } => Kind::Int { width: 8, unsigned },
            ColumnType::Float | ColumnType::Double => Kind::Double,
            ColumnType::Decimal { precision, scale } => Kind::Decimal { precision, scale },
            ColumnType::Date => Kind::DateTime { fsp: None },
            // A TIMESTAMP holds its UTC value: byte order is UTC order.
            ColumnType::DateTime { fsp } | ColumnType::Timestamp { fsp } => {
                Kind::DateTime { fsp: Some(fsp) }
            }
            ColumnType::Year => Kind::Int {
                width: 2,
                unsigned: true,
            },
            ColumnType::Char { collation, .. }
            | ColumnType::VarChar { collation, .. }
            | ColumnType::Text { collation } => Kind::String(collation),
            ColumnType::Json => Kind::String(Collation::Binary),
            ColumnType::Time { fsp } => Kind::Time { fsp },
            ColumnType::Enum { ref members, .. } => Kind::Enum {
                width: if members.len() <= 255 { 1 } else { 2 },
            },
            ColumnType::Set { ref members, .. } => Kind::Set {
                width: match members.len().div_ceil(8) {
                    w @ 0..=4 => w as u8,
                    _ => 8,
                },
            },
        }
    }
}
