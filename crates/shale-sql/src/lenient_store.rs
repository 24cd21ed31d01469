//! Storing a value strict mode refuses, as MySQL does without STRICT_TRANS_TABLES /
//! STRICT_ALL_TABLES, and under INSERT IGNORE or UPDATE IGNORE in any mode: the nearest value
//! the column holds, with a warning.
//!
//! 1. Strict checks run first and unchanged (`types::store_value`); only a refused value
//!    comes here, so the strict path pays nothing for this module.
//! 2. What a refused value becomes:
//!    - integer, DECIMAL: out of range clips to the type's bound (1264); text with a numeric
//!      prefix stores the prefix (1265, or 1264 when the prefix itself is out of range);
//!      text with none stores 0 (1366, MySQL's "Incorrect integer/decimal value").
//!    - FLOAT/DOUBLE: text stores its numeric prefix, or 0 (1265).
//!    - YEAR: out of range or not a number stores the zero year (1264 / 1366).
//!    - CHAR/VARCHAR/BINARY/VARBINARY: too long is cut to the column's length (1265); bytes
//!      that are not UTF-8 keep the text before them (1366).
//!    - ENUM: an unknown value stores the error member '' (1265); SET drops unknown
//!      members (1265).
//!    - TIME: out of range clips to -838:59:59..838:59:59 (1264); text that is no time
//!      stores 00:00:00 (1292).
//!    - DATE, DATETIME, TIMESTAMP and JSON stay errors: Shale has no zero date
//!      ('0000-00-00', what MySQL stores), and an invalid JSON document is an error in
//!      MySQL in every mode.
//! 3. NULL into a NOT NULL column stores the column's implicit default (0, '', the first
//!    ENUM member, 00:00:00) with warning 1048 only where MySQL allows it: a multi-row
//!    INSERT, INSERT ... SELECT, UPDATE, LOAD DATA, or IGNORE; a single-row INSERT keeps
//!    error 1048 in every mode ([`StoreRules::null_to_default`]).
//! 4. ERROR_FOR_DIVISION_BY_ZERO: `/`, DIV and MOD by zero give NULL; with the mode, a
//!    write (INSERT, UPDATE, DELETE, their SELECTs and WHEREs) in strict mode without IGNORE
//!    fails with 1365 "Division by 0" instead, and anything else warns 1365. Without the
//!    mode: NULL and no warning.

use shale_table::{Collation, ColumnDef, ColumnType, Decimal, Value};

use crate::error::SqlError;
use crate::types::{int_range, int_value, store_value};
use crate::value::{display, str_to_f64, str_to_i128_exact, to_i128};

/// How a statement stores values it cannot store exactly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StoreRules {
    /// Convert with a warning instead of failing (rule 2): not strict, or IGNORE.
    pub lenient: bool,
    /// NULL into NOT NULL stores the implicit default with a warning (rule 3).
    pub null_to_default: bool,
    /// NO_AUTO_VALUE_ON_ZERO: 0 into an AUTO_INCREMENT column is stored as 0 (only NULL
    /// generates a value).
    pub zero_is_value: bool,
    /// What a division (`/`, DIV, MOD) by zero does besides giving NULL (rule 4).
    pub division_by_zero: DivisionByZero,
}

/// Rule 4: ERROR_FOR_DIVISION_BY_ZERO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum DivisionByZero {
    /// The mode is off: NULL, nothing else.
    #[default]
    Silent,
    /// NULL with warning 1365 (a query, or a write outside strict mode or under IGNORE).
    Warn,
    /// Error 1365 (a write in strict mode without IGNORE).
    Fail,
}

impl StoreRules {
    /// The rules of a statement under `mode`; `ignore` is the IGNORE of INSERT, UPDATE or
    /// DELETE (or LOAD DATA's IGNORE/LOCAL), `many_rows` says whether the statement can store more than one row's
    /// values (multi-row INSERT, INSERT ... SELECT, UPDATE, LOAD DATA), `writes` whether it
    /// changes rows (INSERT, UPDATE, DELETE) rather than only reading them.
    pub(crate) fn of(
        mode: crate::sql_mode::SqlMode,
        ignore: bool,
        many_rows: bool,
        writes: bool,
    ) -> StoreRules {
        use crate::sql_mode::SqlMode;
        let lenient = ignore || !mode.strict();
        let division_by_zero = if !mode.has(SqlMode::ERROR_FOR_DIVISION_BY_ZERO) {
            DivisionByZero::Silent
        } else if writes && !lenient {
            DivisionByZero::Fail
        } else {
            DivisionByZero::Warn
        };
        StoreRules {
            lenient,
            null_to_default: ignore || (lenient && many_rows),
            zero_is_value: mode.has(SqlMode::NO_AUTO_VALUE_ON_ZERO),
            division_by_zero,
        }
    }
}

/// A warning as SHOW WARNINGS lists it: level, code, message.
type Warning = (&'static str, u16, String);

/// A running statement's [`StoreRules`] and the warnings its conversions gave (kept in the
/// statement's environment, which is shared read-only by its operators).
#[derive(Debug, Default)]
pub(crate) struct Conversions {
    pub rules: StoreRules,
    warnings: std::cell::RefCell<Vec<Warning>>,
}

impl Conversions {
    pub(crate) fn new(rules: StoreRules) -> Conversions {
        Conversions {
            rules,
            warnings: std::cell::RefCell::default(),
        }
    }

    /// The rules of a planned statement under `mode`.
    pub(crate) fn of_statement(
        mode: crate::sql_mode::SqlMode,
        planned: &crate::session::Planned,
    ) -> Conversions {
        use crate::session::Planned;
        let (ignore, many_rows) = match planned {
            Planned::Insert(i, _) => (
                matches!(i.on_duplicate, crate::bind::OnDuplicate::Ignore),
                i.rows.len() > 1 || i.select.is_some() || i.query.is_some(),
            ),
            Planned::Update(u, _) => (u.ignore, true),
            Planned::MultiTable(m) => (m.ignore, true),
            Planned::Delete(d, _) => (d.ignore, true),
            Planned::Select(..) | Planned::Query(..) | Planned::Command(..) => {
                return Conversions::new(StoreRules::of(mode, false, false, false))
            }
        };
        Conversions::new(StoreRules::of(mode, ignore, many_rows, true))
    }

    /// A division by zero gave NULL (rule 4).
    pub(crate) fn division_by_zero(&self) -> Result<(), SqlError> {
        match self.rules.division_by_zero {
            DivisionByZero::Silent => Ok(()),
            DivisionByZero::Warn => {
                self.warn(1365, "Division by 0".to_owned());
                Ok(())
            }
            DivisionByZero::Fail => Err(SqlError::new(1365, "22012", "Division by 0")),
        }
    }

    pub(crate) fn warn(&self, code: u16, message: String) {
        self.warnings.borrow_mut().push(("Warning", code, message));
    }

    /// The warnings so far, for a result set's end to count (row_counts.rs).
    pub(crate) fn raised(&self) -> &std::cell::RefCell<Vec<Warning>> {
        &self.warnings
    }

    /// How many warnings the statement's conversions gave so far.
    pub(crate) fn count(&self) -> usize {
        self.warnings.borrow().len()
    }

    /// The warnings, leaving none.
    pub(crate) fn take(&self) -> Vec<Warning> {
        self.warnings.take()
    }
}

/// `value` stored into `col` leniently: `store` is the strict conversion (rule 1), `warn`
/// receives the warning of a converted value.
pub(crate) fn store(
    col: &ColumnDef,
    value: &Value,
    row: usize,
    rules: StoreRules,
    strict: impl Fn(Value) -> Result<Value, SqlError>,
    warn: &mut dyn FnMut(u16, String),
) -> Result<Value, SqlError> {
    let err = match strict(value.clone()) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if err.code == 1048 {
        if !rules.null_to_default {
            return Err(err);
        }
        let Some(v) = implicit_default(col) else {
            return Err(err);
        };
        warn(1048, err.message);
        return Ok(v);
    }
    match adjust(col, value, &err, row) {
        Some((v, code, message)) => {
            // What rule 2 produced must itself store (a clipped value always does).
            let stored = strict(v).map_err(|_| err)?;
            warn(code, message);
            Ok(stored)
        }
        None => Err(err),
    }
}

/// The value a NOT NULL column gets for a NULL or a missing value outside strict mode
/// (rule 3); None for types Shale cannot give one (dates: no zero date).
pub(crate) fn implicit_default(col: &ColumnDef) -> Option<Value> {
    let candidate = match &col.ty {
        ColumnType::TinyInt { .. }
        | ColumnType::SmallInt { .. }
        | ColumnType::MediumInt { .. }
        | ColumnType::Int { .. }
        | ColumnType::BigInt { .. }
        | ColumnType::Year
        | ColumnType::Decimal { .. }
        | ColumnType::Time { .. } => Value::Int(0),
        ColumnType::Float | ColumnType::Double => Value::Double(0.0),
        ColumnType::Char { .. }
        | ColumnType::VarChar { .. }
        | ColumnType::Text { .. }
        | ColumnType::Set { .. } => Value::Bytes(Vec::new()),
        ColumnType::Enum { .. } => Value::Int(1),
        ColumnType::Date
        | ColumnType::DateTime { .. }
        | ColumnType::Timestamp { .. }
        | ColumnType::Json => return None,
    };
    let mut nullable = col.clone();
    nullable.nullable = true;
    store_value(&nullable, candidate, 1).ok()
}

/// The length of the numeric prefix of `b` (spaces, sign, digits, a fraction); 0 when no
/// digit starts it.
fn numeric_prefix_len(b: &[u8]) -> usize {
    let start = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let mut end = start + usize::from(matches!(b.get(start), Some(b'+' | b'-')));
    let digits = end;
    while b.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    let whole = end > digits;
    if b.get(end) == Some(&b'.') {
        let frac = end + 1;
        let mut e = frac;
        while b.get(e).is_some_and(u8::is_ascii_digit) {
            e += 1;
        }
        if whole || e > frac {
            end = e;
        }
    }
    if end == digits || (end == digits + 1 && b.get(digits) == Some(&b'.')) {
        0
    } else {
        end
    }
}

/// An integer clipped into `lo..=hi`, and whether it had to be.
fn clip(n: i128, lo: i128, hi: i128) -> (i128, bool) {
    (n.clamp(lo, hi), n < lo || n > hi)
}

/// A double clipped into `lo..=hi` and rounded.
fn clip_f64(d: f64, lo: i128, hi: i128) -> (i128, bool) {
    if d.is_nan() {
        (0.clamp(lo, hi), true)
    } else if d >= hi as f64 {
        (hi, d > hi as f64)
    } else if d <= lo as f64 {
        (lo, d < lo as f64)
    } else {
        clip(d.round() as i128, lo, hi)
    }
}

/// Rule 2: the value to store instead, with the warning's code and message; None when the
/// refusal stands.
fn adjust(
    col: &ColumnDef,
    value: &Value,
    err: &SqlError,
    row: usize,
) -> Option<(Value, u16, String)> {
    let name = &col.name;
    let out_of_range = || SqlError::out_of_range(name, row).message;
    let truncated = || SqlError::data_truncated(name, row).message;
    match &col.ty {
        ColumnType::Year => Some((Value::UInt(0), err.code, err.message.clone())),
        ty @ (ColumnType::TinyInt { .. }
        | ColumnType::SmallInt { .. }
        | ColumnType::MediumInt { .. }
        | ColumnType::Int { .. }
        | ColumnType::BigInt { .. }) => {
            let (lo, hi) = int_range(ty)?;
            let (n, clipped, prefix_only) = match value {
                Value::Bytes(b) => match str_to_i128_exact(b) {
                    Some(n) => {
                        let (n, c) = clip(n, lo, hi);
                        (n, c, false)
                    }
                    None => {
                        let len = numeric_prefix_len(b);
                        if len == 0 {
                            return Some((
                                int_value(ty, 0.clamp(lo, hi)),
                                1366,
                                err.message.clone(),
                            ));
                        }
                        let (n, c) = clip_f64(str_to_f64(&b[..len]), lo, hi);
                        (n, c, len < b.len() || b[..len].contains(&b'.'))
                    }
                },
                Value::Double(d) => {
                    let (n, c) = clip_f64(*d, lo, hi);
                    (n, c, false)
                }
                other => {
                    let (n, c) = clip(to_i128(other)?, lo, hi);
                    (n, c, false)
                }
            };
            let message = if clipped || !prefix_only {
                (1264, out_of_range())
            } else {
                (1265, truncated())
            };
            Some((int_value(ty, n), message.0, message.1))
        }
        ColumnType::Float | ColumnType::Double => match value {
            Value::Bytes(b) => {
                let len = numeric_prefix_len(b);
                Some((Value::Double(str_to_f64(&b[..len])), 1265, truncated()))
            }
            _ => None,
        },
        ColumnType::Decimal { precision, scale } => {
            let max = decimal_max(*precision, *scale)?;
            let (d, code, message) = match value {
                Value::Bytes(b) => {
                    let len = numeric_prefix_len(b);
                    if len == 0 {
                        (Decimal::zero(), 1366, err.message.clone())
                    } else {
                        let (d, _) = crate::decimal::str_to_decimal(&b[..len]);
                        (d, 1265, truncated())
                    }
                }
                Value::Double(d) if d.is_nan() => (Decimal::zero(), 1264, out_of_range()),
                Value::Double(d) => (
                    if *d > 0.0 { max.clone() } else { max.neg() },
                    1264,
                    out_of_range(),
                ),
                other => (crate::decimal::to_decimal(other)?, 1264, out_of_range()),
            };
            let rounded = d.round_to(*scale);
            if rounded.fits(*precision, *scale) {
                Some((Value::Decimal(rounded), code, message))
            } else {
                let bound = if rounded.is_negative() {
                    max.neg()
                } else {
                    max
                };
                Some((Value::Decimal(bound), 1264, out_of_range()))
            }
        }
        ColumnType::Char { len, collation } | ColumnType::VarChar { len, collation } => {
            let bytes = match value {
                Value::Bytes(b) => b.clone(),
                other => display(other).into_bytes(),
            };
            let len = *len as usize;
            if *collation == Collation::Binary {
                let mut cut = bytes;
                cut.truncate(len);
                return Some((Value::Bytes(cut), 1265, truncated()));
            }
            let (text, code, message) = match String::from_utf8(bytes) {
                Ok(t) => match crate::Charset::of_collation(*collation).replace_lacking(t) {
                    (t, true) => (t, 1366, err.message.clone()),
                    (t, false) => (t, 1265, truncated()),
                },
                Err(e) => {
                    let valid = e.utf8_error().valid_up_to();
                    let mut b = e.into_bytes();
                    b.truncate(valid);
                    (String::from_utf8(b).ok()?, 1366, err.message.clone())
                }
            };
            let cut = text.char_indices().nth(len).map_or(text.len(), |(i, _)| i);
            Some((Value::Bytes(text.as_bytes()[..cut].to_vec()), code, message))
        }
        ColumnType::Text { collation } => match value {
            Value::Bytes(b) => match std::str::from_utf8(b) {
                Err(e) => {
                    let valid = e.valid_up_to();
                    Some((Value::Bytes(b[..valid].to_vec()), 1366, err.message.clone()))
                }
                Ok(text) => {
                    let charset = crate::Charset::of_collation(*collation);
                    let (kept, replaced) = charset.replace_lacking(text.to_owned());
                    replaced.then(|| (Value::Bytes(kept.into_bytes()), 1366, err.message.clone()))
                }
            },
            _ => None,
        },
        ColumnType::Enum { .. } => Some((Value::Enum(0, String::new()), 1265, truncated())),
        ColumnType::Set { members, collation } => {
            let known = match value {
                Value::Bytes(b) => {
                    let text = String::from_utf8_lossy(b);
                    let kept: Vec<&str> = text
                        .split(',')
                        .filter(|m| {
                            members
                                .iter()
                                .any(|k| collation.compare(k.as_bytes(), m.as_bytes()).is_eq())
                        })
                        .collect();
                    Value::Bytes(kept.join(",").into_bytes())
                }
                other => {
                    let all = if members.len() >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << members.len()) - 1
                    };
                    Value::UInt(u64::try_from(to_i128(other)?).unwrap_or(0) & all)
                }
            };
            Some((known, 1265, truncated()))
        }
        ColumnType::Time { fsp } => match crate::time_type::to_time(value, *fsp) {
            Some(t) => Some((Value::Time(t), 1264, out_of_range())),
            None => Some((Value::Int(0), err.code, err.message.clone())),
        },
        ColumnType::Date
        | ColumnType::DateTime { .. }
        | ColumnType::Timestamp { .. }
        | ColumnType::Json => None,
    }
}

/// The largest DECIMAL(precision, scale): all nines.
fn decimal_max(precision: u8, scale: u8) -> Option<Decimal> {
    let whole = "9".repeat(usize::from(precision.saturating_sub(scale)).max(1));
    let text = if scale == 0 {
        whole
    } else {
        format!("{whole}.{}", "9".repeat(usize::from(scale)))
    };
    let max = Decimal::parse(&text)?;
    if max.fits(precision, scale) {
        Some(max)
    } else {
        Decimal::parse(&format!("0.{}", "9".repeat(usize::from(scale))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(ty: ColumnType, nullable: bool) -> ColumnDef {
        ColumnDef {
            name: "c".into(),
            ty,
            nullable,
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        }
    }

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    /// Stores leniently, returning the value and the warning codes.
    fn lenient(c: &ColumnDef, v: &Value, rules: StoreRules) -> Result<(Value, Vec<u16>), u16> {
        let mut codes = Vec::new();
        let stored = store(c, v, 1, rules, |v| store_value(c, v, 1), &mut |code, _| {
            codes.push(code);
        })
        .map_err(|e| e.code)?;
        Ok((stored, codes))
    }

    #[test]
    fn refused_values_become_the_nearest_with_a_warning() {
        let rules = StoreRules {
            lenient: true,
            ..StoreRules::default()
        };
        let tiny = col(ColumnType::TinyInt { unsigned: false }, false);
        let utiny = col(ColumnType::TinyInt { unsigned: true }, false);
        let int = col(ColumnType::Int { unsigned: false }, false);
        let dbl = col(ColumnType::Double, false);
        let dec = col(
            ColumnType::Decimal {
                precision: 5,
                scale: 2,
            },
            false,
        );
        let vc = col(
            ColumnType::VarChar {
                len: 3,
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let vb = col(
            ColumnType::VarChar {
                len: 2,
                collation: Collation::Binary,
            },
            false,
        );
        let year = col(ColumnType::Year, false);
        let en = col(
            ColumnType::Enum {
                members: vec!["a".into(), "b".into()],
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let set = col(
            ColumnType::Set {
                members: vec!["a".into(), "b".into()],
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let dec_of = |s: &str| Value::Decimal(Decimal::parse(s).unwrap());
        let cases: Vec<(&ColumnDef, Value, Value, u16)> = vec![
            (&tiny, Value::Int(300), Value::Int(127), 1264),
            (&tiny, Value::Int(-300), Value::Int(-128), 1264),
            (&utiny, Value::Int(-1), Value::UInt(0), 1264),
            (&tiny, b("12abc"), Value::Int(12), 1265),
            (&tiny, b("999abc"), Value::Int(127), 1264),
            (&tiny, b("abc"), Value::Int(0), 1366),
            (&tiny, b(""), Value::Int(0), 1366),
            (&int, Value::Double(1e300), Value::Int(2_147_483_647), 1264),
            (&int, b("99999999999"), Value::Int(2_147_483_647), 1264),
            (&dbl, b("1.5x"), Value::Double(1.5), 1265),
            (&dbl, b("x"), Value::Double(0.0), 1265),
            (&dec, Value::Int(100_000), dec_of("999.99"), 1264),
            (&dec, Value::Int(-100_000), dec_of("-999.99"), 1264),
            (&dec, b("1.5x"), dec_of("1.50"), 1265),
            (&dec, b("x"), dec_of("0.00"), 1366),
            (&vc, b("abcdef"), b("abc"), 1265),
            (&vc, Value::Int(12345), b("123"), 1265),
            (&vc, Value::Bytes(vec![b'a', 0xff, b'b']), b("a"), 1366),
            (&vb, b("abc"), b("ab"), 1265),
            (&year, Value::Int(3000), Value::UInt(0), 1264),
            (&en, b("zz"), Value::Enum(0, String::new()), 1265),
            (&set, b("a,zz,b"), Value::Set(3, "a,b".into()), 1265),
        ];
        for (c, given, want, code) in cases {
            let got = lenient(c, &given, rules);
            assert_eq!(got, Ok((want, vec![code])), "{:?} {given:?}", c.ty);
        }
        // Dates stay errors: there is no zero date to store.
        let date = col(ColumnType::Date, false);
        assert_eq!(lenient(&date, &b("2020-13-45"), rules), Err(1292));
    }

    #[test]
    fn null_into_not_null_needs_null_to_default() {
        let int = col(ColumnType::Int { unsigned: false }, false);
        let text = col(
            ColumnType::VarChar {
                len: 3,
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let en = col(
            ColumnType::Enum {
                members: vec!["x".into(), "y".into()],
                collation: Collation::Utf8mb4GeneralCi,
            },
            false,
        );
        let single = StoreRules::of(
            crate::sql_mode::SqlMode::parse(&b("")).unwrap(),
            false,
            false,
            true,
        );
        assert_eq!(lenient(&int, &Value::Null, single), Err(1048));
        let many = StoreRules::of(
            crate::sql_mode::SqlMode::parse(&b("")).unwrap(),
            false,
            true,
            true,
        );
        assert_eq!(
            lenient(&int, &Value::Null, many),
            Ok((Value::Int(0), vec![1048]))
        );
        assert_eq!(lenient(&text, &Value::Null, many), Ok((b(""), vec![1048])));
        assert_eq!(
            lenient(&en, &Value::Null, many),
            Ok((Value::Enum(1, "x".into()), vec![1048]))
        );
        // Strict: INSERT IGNORE converts too, even one row.
        let ignore = StoreRules::of(crate::sql_mode::SqlMode::DEFAULT, true, false, true);
        assert_eq!(
            lenient(&int, &Value::Null, ignore),
            Ok((Value::Int(0), vec![1048]))
        );
        let strict = StoreRules::of(crate::sql_mode::SqlMode::DEFAULT, false, true, true);
        assert!(!strict.lenient && !strict.null_to_default);
        assert_eq!(strict.division_by_zero, DivisionByZero::Fail);
        let query = StoreRules::of(crate::sql_mode::SqlMode::DEFAULT, false, false, false);
        assert_eq!(query.division_by_zero, DivisionByZero::Warn);
    }
}
