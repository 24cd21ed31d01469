//! `sql_mode`: MySQL 8's mode names, their bits, and the normalised text `@@sql_mode` shows.
//!
//! 1. A session keeps its mode as a [`SqlMode`] bit set, parsed once when `SET sql_mode`
//!    runs (or when the session starts, from the global value): the executor asks
//!    `mode.strict()` per statement, never parses text per row.
//! 2. The bits are MySQL 8's (`SELECT @@sql_mode + 0` agrees), so a numeric
//!    `SET sql_mode = 1168113696` means what it means in MySQL. Bits MySQL 8 no longer uses
//!    (the old POSTGRESQL, ORACLE, ... and NO_AUTO_CREATE_USER) are refused, as MySQL 8 does.
//! 3. Names match case-insensitively; empty items (`',STRICT_TRANS_TABLES'`, what
//!    `REPLACE(@@sql_mode, 'X', '')` leaves) are skipped; anything else unknown is error 1231.
//! 4. The combination modes ANSI and TRADITIONAL add the modes they stand for, and keep their
//!    own bit (MySQL 8 shows `...,ANSI` and `...,TRADITIONAL,...`).
//! 5. The text is the set members in bit order, joined by commas (MySQL's canonical order).

use shale_table::Value;

use crate::error::SqlError;

/// MySQL 8's mode names in bit order: name `i` is bit `1 << i`. `None` marks a bit MySQL 8
/// no longer uses.
const NAMES: [Option<&str>; 33] = [
    Some("REAL_AS_FLOAT"),
    Some("PIPES_AS_CONCAT"),
    Some("ANSI_QUOTES"),
    Some("IGNORE_SPACE"),
    Some("NOT_USED"),
    Some("ONLY_FULL_GROUP_BY"),
    Some("NO_UNSIGNED_SUBTRACTION"),
    Some("NO_DIR_IN_CREATE"),
    None, // POSTGRESQL (removed in MySQL 8), and the other old combination modes below
    None,
    None,
    None,
    None,
    None,
    None,
    None,
    None,
    None,
    Some("ANSI"),
    Some("NO_AUTO_VALUE_ON_ZERO"),
    Some("NO_BACKSLASH_ESCAPES"),
    Some("STRICT_TRANS_TABLES"),
    Some("STRICT_ALL_TABLES"),
    Some("NO_ZERO_IN_DATE"),
    Some("NO_ZERO_DATE"),
    Some("ALLOW_INVALID_DATES"),
    Some("ERROR_FOR_DIVISION_BY_ZERO"),
    Some("TRADITIONAL"),
    None, // NO_AUTO_CREATE_USER (removed in MySQL 8)
    Some("HIGH_NOT_PRECEDENCE"),
    Some("NO_ENGINE_SUBSTITUTION"),
    Some("PAD_CHAR_TO_FULL_LENGTH"),
    Some("TIME_TRUNCATE_FRACTIONAL"),
];

/// A session's `sql_mode` (rule 1): MySQL 8's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlMode(u64);

impl SqlMode {
    pub const REAL_AS_FLOAT: u64 = 1;
    pub const PIPES_AS_CONCAT: u64 = 1 << 1;
    pub const ANSI_QUOTES: u64 = 1 << 2;
    pub const IGNORE_SPACE: u64 = 1 << 3;
    pub const ONLY_FULL_GROUP_BY: u64 = 1 << 5;
    pub const ANSI: u64 = 1 << 18;
    pub const NO_AUTO_VALUE_ON_ZERO: u64 = 1 << 19;
    pub const NO_BACKSLASH_ESCAPES: u64 = 1 << 20;
    pub const STRICT_TRANS_TABLES: u64 = 1 << 21;
    pub const STRICT_ALL_TABLES: u64 = 1 << 22;
    pub const NO_ZERO_IN_DATE: u64 = 1 << 23;
    pub const NO_ZERO_DATE: u64 = 1 << 24;
    pub const ERROR_FOR_DIVISION_BY_ZERO: u64 = 1 << 26;
    pub const TRADITIONAL: u64 = 1 << 27;
    pub const HIGH_NOT_PRECEDENCE: u64 = 1 << 29;
    pub const NO_ENGINE_SUBSTITUTION: u64 = 1 << 30;

    /// What ANSI stands for (rule 4).
    const ANSI_MEANS: u64 = Self::REAL_AS_FLOAT
        | Self::PIPES_AS_CONCAT
        | Self::ANSI_QUOTES
        | Self::IGNORE_SPACE
        | Self::ONLY_FULL_GROUP_BY;
    /// What TRADITIONAL stands for (rule 4).
    const TRADITIONAL_MEANS: u64 = Self::STRICT_TRANS_TABLES
        | Self::STRICT_ALL_TABLES
        | Self::NO_ZERO_IN_DATE
        | Self::NO_ZERO_DATE
        | Self::ERROR_FOR_DIVISION_BY_ZERO
        | Self::NO_ENGINE_SUBSTITUTION;

    /// Shale's default: MySQL 8's (docs/sql.md, "SQL modes").
    pub const DEFAULT: SqlMode = SqlMode(
        Self::ONLY_FULL_GROUP_BY
            | Self::STRICT_TRANS_TABLES
            | Self::NO_ZERO_IN_DATE
            | Self::NO_ZERO_DATE
            | Self::ERROR_FOR_DIVISION_BY_ZERO
            | Self::NO_ENGINE_SUBSTITUTION,
    );

    /// Every bit a MySQL 8 name stands for (rule 2).
    fn valid_bits() -> u64 {
        NAMES
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_some())
            .fold(0, |acc, (i, _)| acc | 1 << i)
    }

    /// A mode from bits, with the combination modes expanded (rule 4); None when a bit is
    /// not one of MySQL 8's.
    fn from_bits(bits: u64) -> Option<SqlMode> {
        if bits & !Self::valid_bits() != 0 {
            return None;
        }
        let mut bits = bits;
        if bits & Self::ANSI != 0 {
            bits |= Self::ANSI_MEANS;
        }
        if bits & Self::TRADITIONAL != 0 {
            bits |= Self::TRADITIONAL_MEANS;
        }
        Some(SqlMode(bits))
    }

    /// The mode `SET sql_mode = v` asks for: a comma-separated list of names or a number.
    pub fn parse(v: &Value) -> Result<SqlMode, SqlError> {
        let refuse = |shown: &str| {
            SqlError::new(
                1231,
                "42000",
                format!("Variable 'sql_mode' can't be set to the value of '{shown}'"),
            )
        };
        match v {
            Value::Int(i) => u64::try_from(*i)
                .ok()
                .and_then(SqlMode::from_bits)
                .ok_or_else(|| refuse(&i.to_string())),
            Value::UInt(u) | Value::Set(u, _) => {
                SqlMode::from_bits(*u).ok_or_else(|| refuse(&u.to_string()))
            }
            Value::Bytes(b) => {
                let text = String::from_utf8_lossy(b);
                let mut bits = 0u64;
                for item in text.split(',').filter(|s| !s.is_empty()) {
                    let Some(i) = NAMES
                        .iter()
                        .position(|n| n.is_some_and(|n| n.eq_ignore_ascii_case(item)))
                    else {
                        return Err(refuse(item));
                    };
                    bits |= 1 << i;
                }
                SqlMode::from_bits(bits).ok_or_else(|| refuse(&text))
            }
            Value::Null => Err(refuse("NULL")),
            other => Err(refuse(&crate::value::display(other))),
        }
    }

    /// The mode a stored variable value holds (a global set earlier was checked then);
    /// the default when it holds none.
    pub(crate) fn of_stored(v: Option<&Value>) -> SqlMode {
        v.and_then(|v| SqlMode::parse(v).ok())
            .unwrap_or(SqlMode::DEFAULT)
    }

    /// Whether any of `bits` is set.
    pub fn has(self, bits: u64) -> bool {
        self.0 & bits != 0
    }

    /// Strict mode: STRICT_TRANS_TABLES or STRICT_ALL_TABLES (every Shale table is
    /// transactional, so the two mean the same).
    pub fn strict(self) -> bool {
        self.has(Self::STRICT_TRANS_TABLES | Self::STRICT_ALL_TABLES)
    }

    /// The bits, as `@@sql_mode + 0` shows them.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// The canonical text `@@sql_mode` shows (rule 5).
    pub fn text(self) -> String {
        NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .filter_map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The mode as a variable value: a SET value, so `@@sql_mode` reads as its text and
    /// `@@sql_mode + 0` as its bits, as in MySQL.
    pub(crate) fn value(self) -> Value {
        Value::Set(self.0, self.text())
    }
}

impl Default for SqlMode {
    fn default() -> SqlMode {
        SqlMode::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn names_normalise_to_canonical_order() {
        let cases = [
            ("", ""),
            ("strict_trans_tables", "STRICT_TRANS_TABLES"),
            (
                "NO_ENGINE_SUBSTITUTION,Ansi_Quotes,,",
                "ANSI_QUOTES,NO_ENGINE_SUBSTITUTION",
            ),
            (
                "ANSI",
                "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI",
            ),
            (
                "TRADITIONAL",
                "STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,\
                 ERROR_FOR_DIVISION_BY_ZERO,TRADITIONAL,NO_ENGINE_SUBSTITUTION",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(
                SqlMode::parse(&text(given)).unwrap().text(),
                want,
                "{given}"
            );
        }
    }

    #[test]
    fn mysql8_default_bits() {
        // MySQL 8's default mode is 1168113696 as a number, and Shale's is the same.
        let mysql = SqlMode::parse(&text(
            "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,\
             ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION",
        ))
        .unwrap();
        assert_eq!(mysql.bits(), 1_168_113_696);
        assert_eq!(SqlMode::DEFAULT, mysql);
        assert_eq!(SqlMode::parse(&Value::Int(1_168_113_696)).unwrap(), mysql);
        assert!(SqlMode::DEFAULT.strict());
        assert!(!SqlMode::parse(&text("")).unwrap().strict());
    }

    #[test]
    fn unknown_names_and_bits_are_refused() {
        for (v, shown) in [
            (text("STRICT_TRANS_TABLES,BOGUS"), "BOGUS"),
            (text("POSTGRESQL"), "POSTGRESQL"),
            (text("NO_AUTO_CREATE_USER"), "NO_AUTO_CREATE_USER"),
            (text(" ANSI_QUOTES"), " ANSI_QUOTES"),
            (Value::Int(256), "256"),
            (Value::Int(-1), "-1"),
            (Value::Null, "NULL"),
        ] {
            let e = SqlMode::parse(&v).unwrap_err();
            assert_eq!(e.code, 1231);
            assert_eq!(
                e.message,
                format!("Variable 'sql_mode' can't be set to the value of '{shown}'")
            );
        }
    }
}
