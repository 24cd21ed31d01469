//! DATE and DATETIME's SQL rules: storing into a column (strict mode), how a date compares
//! with a string, metadata.
//!
//! 1. A string stored into a DATE/DATETIME column must be a valid date in MySQL's
//!    `YYYY-MM-DD[ hh:mm:ss[.ffffff]]` form, years 1000..=9999; otherwise 1292 (strict mode,
//!    NO_ZERO_DATE and NO_ZERO_IN_DATE: `'0000-00-00'` and `'2024-02-30'` fail). Fractions
//!    round to the column's precision; a DATE drops the time.
//!    An integer `YYYYMMDD[hhmmss]` (or `YYMMDD[hhmmss]`) is stored as that date.
//! 2. A date compared with a string that reads as a date compares as dates; otherwise both
//!    compare as strings (the date's text), as MySQL falls back.
//! 3. A YEAR column takes 1901..=2155 and 0; one- and two-digit numbers are 2000..=2069
//!    (1..=69) and 1970..=1999 (70..=99), the text `'0'`/`'00'` is 2000 and `'0000'` the
//!    zero year; anything else is 1264 (out of range) or 1366 (not a number). A date stores
//!    its year.

use std::cmp::Ordering;

use shale_table::{Collation, DateTime, Value};

use crate::error::SqlError;

/// `value` stored into a DATE (`fsp` None) or DATETIME(`fsp`) column (rule 1).
pub(crate) fn store(
    value: &Value,
    fsp: Option<u8>,
    column: &str,
    row: usize,
) -> Result<Value, SqlError> {
    let parsed = match value {
        Value::DateTime(d) => Some(d.round_to(fsp)),
        Value::Bytes(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| DateTime::parse(s, fsp)),
        // Integer forms: 20240102, 240102, 20240102030405.
        Value::Int(_) | Value::UInt(_) => {
            crate::datetime_funcs::date_arg(value).map(|d| d.value.round_to(fsp))
        }
        _ => None,
    };
    parsed.map(Value::DateTime).ok_or_else(|| {
        let kind = if fsp.is_none() { "date" } else { "datetime" };
        SqlError::new(
            1292,
            "22007",
            format!(
                "Incorrect {kind} value: '{}' for column '{column}' at row {row}",
                crate::value::display(value)
            ),
        )
    })
}

/// `value` stored into a YEAR column (rule 3).
pub(crate) fn store_year(value: &Value, column: &str, row: usize) -> Result<Value, SqlError> {
    let out_of_range = || SqlError::out_of_range(column, row);
    let n = match value {
        Value::DateTime(d) => return Ok(Value::UInt(u64::from(d.parts().0))),
        Value::Bytes(b) => {
            let text = String::from_utf8_lossy(b);
            let t = text.trim();
            if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
                return Err(SqlError::incorrect_integer(&text, column, row));
            }
            // As text, '0' and '00' are 2000; only '0000' is the zero year.
            match t.parse::<i128>() {
                Ok(0) if t.len() < 4 => 2000,
                Ok(n) => n,
                Err(_) => return Err(out_of_range()),
            }
        }
        other => match crate::value::to_i128(other) {
            Some(n) => n,
            None => return Err(out_of_range()),
        },
    };
    let year = match n {
        0 => 0,
        1..=69 => 2000 + n,
        70..=99 => 1900 + n,
        1901..=2155 => n,
        _ => return Err(out_of_range()),
    };
    Ok(Value::UInt(year as u64))
}

/// The string read as a date/time, if it is one.
pub(crate) fn parse_text(s: &[u8]) -> Option<DateTime> {
    DateTime::parse(std::str::from_utf8(s).ok()?, Some(6))
}

/// Compares a date with a value of another kind (rule 2); None for NULL.
pub(crate) fn compare_mixed(
    date: &DateTime,
    other: &Value,
    collation: Collation,
) -> Option<Ordering> {
    match other {
        Value::Null => None,
        Value::DateTime(d) => Some(date.cmp(d)),
        Value::Bytes(b) => Some(match parse_text(b) {
            Some(d) => date.cmp(&d),
            None => collation.compare(date.to_string().as_bytes(), b),
        }),
        other => date.to_f64().partial_cmp(&crate::value::to_f64(other)?),
    }
}

/// Display length MySQL reports: 10 for DATE, 19 for DATETIME plus the fraction.
pub(crate) fn display_length(fsp: Option<u8>) -> u32 {
    match fsp {
        None => 10,
        Some(0) => 19,
        Some(f) => 20 + u32::from(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn storing_checks_dates() {
        let ok = [
            (b("2024-01-02"), None, "2024-01-02"),
            (b("2024-01-02 10:11:12.5"), Some(0), "2024-01-02 10:11:13"),
            (
                b("2024-01-02 10:11:12.5"),
                Some(2),
                "2024-01-02 10:11:12.50",
            ),
            (b("2024-01-02 10:11:12"), None, "2024-01-02"),
        ];
        for (v, fsp, want) in ok {
            assert_eq!(
                crate::value::display(&store(&v, fsp, "c", 1).unwrap()),
                want
            );
        }
        for bad in ["0000-00-00", "2024-02-30", "x", "2024-01-02 25:00:00"] {
            let e = store(&b(bad), Some(0), "c", 3).unwrap_err();
            assert_eq!(e.code, 1292, "{bad}");
            assert!(e.message.contains("at row 3"), "{}", e.message);
        }
        assert_eq!(store(&Value::Int(5), None, "c", 1).unwrap_err().code, 1292);
        assert_eq!(
            crate::value::display(&store(&Value::Int(20_240_102), None, "c", 1).unwrap()),
            "2024-01-02"
        );
        let year = |v: Value| store_year(&v, "y", 1).map(|v| crate::value::display(&v));
        assert_eq!(year(Value::Int(24)).unwrap(), "2024");
        assert_eq!(year(Value::Int(70)).unwrap(), "1970");
        assert_eq!(year(Value::Int(0)).unwrap(), "0");
        assert_eq!(year(b("0")).unwrap(), "2000");
        assert_eq!(year(b("0000")).unwrap(), "0");
        assert_eq!(year(b("2155")).unwrap(), "2155");
        assert_eq!(year(Value::Int(1900)).unwrap_err().code, 1264);
        assert_eq!(year(Value::Int(2156)).unwrap_err().code, 1264);
        assert_eq!(year(b("abc")).unwrap_err().code, 1366);
    }

    #[test]
    fn comparisons_with_strings() {
        let d = DateTime::parse("2024-01-02", None).unwrap();
        let ci = Collation::Utf8mb4GeneralCi;
        assert_eq!(
            compare_mixed(&d, &b("2024-01-02 00:00:00"), ci),
            Some(Ordering::Equal)
        );
        assert_eq!(compare_mixed(&d, &b("2024-1-3"), ci), Some(Ordering::Less));
        assert_eq!(
            compare_mixed(&d, &b("2023-12-31 23:59:59"), ci),
            Some(Ordering::Greater)
        );
        assert_eq!(compare_mixed(&d, &b("zzz"), ci), Some(Ordering::Less));
        assert_eq!(compare_mixed(&d, &Value::Null, ci), None);
        assert_eq!(
            compare_mixed(&d, &Value::Int(20_240_102), ci),
            Some(Ordering::Equal)
        );
        assert_eq!(display_length(Some(3)), 23);
    }
}
