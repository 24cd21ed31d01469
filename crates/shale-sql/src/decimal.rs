//! DECIMAL's SQL rules (MySQL's manual, "Precision Math"): which values read as decimals,
//! the scale of each arithmetic result, storing into a DECIMAL(p,s) column in strict mode.
//!
//! 1. Integers and decimals combine exactly; a double or a string operand makes arithmetic
//!    a double (the caller's rule 3 in value.rs).
//! 2. Result scales: `+ - %` the larger scale; `*` the sum of the scales; `/` the dividend's
//!    scale plus `div_precision_increment` (4); all at most 30. A result of more than 65
//!    digits fails with 1690.
//! 3. Storing rounds half away from zero to the column's scale (MySQL notes 1265 and stores);
//!    more integer digits than `p - s` fail with 1264; a string that is not a number fails
//!    with 1366.

use shale_table::{Decimal, Value, DECIMAL_MAX_PRECISION, DECIMAL_MAX_SCALE};

use crate::error::SqlError;
use crate::types::SqlType;
use crate::value::{display, ArithOp};

/// MySQL's `div_precision_increment` default.
pub(crate) const DIV_PRECISION_INCREMENT: u8 = 4;

/// The longest prefix of `s` that reads as a decimal number (`'1.5abc'` is 1.5, `'abc'` 0),
/// and whether the whole string was that number (spaces aside).
pub(crate) fn str_to_decimal(s: &[u8]) -> (Decimal, bool) {
    let text = String::from_utf8_lossy(s);
    let t = text.trim();
    if let Some(d) = Decimal::parse(t) {
        return (d, true);
    }
    let b = t.as_bytes();
    let mut end = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    while b.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    if b.get(end) == Some(&b'.') {
        end += 1;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    (
        Decimal::parse(&t[..end]).unwrap_or_else(Decimal::zero),
        false,
    )
}

/// The value as a decimal, for an exact computation: integers, decimals and strings that
/// are exactly a number. None for doubles, NULL and other strings.
pub(crate) fn exact_decimal(v: &Value) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal::from_i128(i128::from(*i))),
        Value::UInt(u) => Some(Decimal::from_i128(i128::from(*u))),
        Value::Decimal(d) => Some(d.clone()),
        Value::Bytes(b) => match str_to_decimal(b) {
            (d, true) => Some(d),
            (_, false) => None,
        },
        Value::Time(t) => exact_decimal(&crate::time_type::to_number(t)),
        Value::Enum(i, _) => Some(Decimal::from_i128(i128::from(*i))),
        Value::Set(m, _) => Some(Decimal::from_i128(i128::from(*m))),
        Value::Double(_) | Value::DateTime(_) | Value::Null => None,
    }
}

/// The value converted to a decimal as CAST does (doubles by their shortest text, strings
/// by their numeric prefix); None for NULL and non-finite doubles.
pub(crate) fn to_decimal(v: &Value) -> Option<Decimal> {
    match v {
        Value::Double(d) => Decimal::from_f64(*d),
        Value::DateTime(d) => Decimal::from_f64(d.to_f64()),
        Value::Bytes(b) => Some(str_to_decimal(b).0),
        other => exact_decimal(other),
    }
}

fn out_of_range(expr: &str) -> SqlError {
    SqlError::new(
        1690,
        "22003",
        format!("DECIMAL value is out of range in '{expr}'"),
    )
}

fn checked(d: Decimal, expr: impl FnOnce() -> String) -> Result<Value, SqlError> {
    if d.digits() > u32::from(DECIMAL_MAX_PRECISION) {
        return Err(out_of_range(&expr()));
    }
    Ok(Value::Decimal(d))
}

/// `a op b` for two exact operands of which at least one is a decimal (rule 2); NULL for a
/// division by zero.
pub(crate) fn arith(op: ArithOp, a: &Decimal, b: &Decimal) -> Result<Value, SqlError> {
    let expr = || format!("{a} {} {b}", op.symbol());
    let result = match op {
        ArithOp::Add => a.add(b),
        ArithOp::Sub => a.sub(b),
        ArithOp::Mul => a.mul(b),
        ArithOp::Div => {
            let scale = a
                .scale()
                .saturating_add(DIV_PRECISION_INCREMENT)
                .min(DECIMAL_MAX_SCALE);
            match a.div(b, scale) {
                Some(q) => q,
                None => return Ok(Value::Null),
            }
        }
        ArithOp::Mod => match a.rem(b) {
            Some(r) => r,
            None => return Ok(Value::Null),
        },
        ArithOp::IntDiv => match a.div(b, 1) {
            Some(q) => {
                let q = q.truncate_to(0);
                return match q.to_i128().and_then(|i| i64::try_from(i).ok()) {
                    Some(i) => Ok(Value::Int(i)),
                    None => Err(SqlError::new(
                        1690,
                        "22003",
                        format!("BIGINT value is out of range in '{}'", expr()),
                    )),
                };
            }
            None => return Ok(Value::Null),
        },
    };
    checked(result, expr)
}

/// The scale of `a op b` from the operands' scales, for result metadata (rule 2).
pub(crate) fn result_scale(op: ArithOp, a: u8, b: u8) -> u8 {
    let scale = match op {
        ArithOp::Add | ArithOp::Sub | ArithOp::Mod => a.max(b),
        ArithOp::Mul => a.saturating_add(b),
        ArithOp::Div => a.saturating_add(DIV_PRECISION_INCREMENT),
        ArithOp::IntDiv => 0,
    };
    scale.min(DECIMAL_MAX_SCALE)
}

/// `value` stored into a DECIMAL(`precision`, `scale`) column named `column` (rule 3; `row`
/// is 1-based, for messages).
pub(crate) fn store(
    value: &Value,
    precision: u8,
    scale: u8,
    column: &str,
    row: usize,
) -> Result<Value, SqlError> {
    let d = match value {
        Value::Bytes(b) => match str_to_decimal(b) {
            (d, true) => d,
            (_, false) => {
                return Err(SqlError::new(
                    1366,
                    "22007",
                    format!(
                        "Incorrect decimal value: '{}' for column '{column}' at row {row}",
                        display(value)
                    ),
                ))
            }
        },
        Value::Double(d) if !d.is_finite() => return Err(SqlError::out_of_range(column, row)),
        other => to_decimal(other).unwrap_or_else(Decimal::zero),
    };
    let rounded = d.round_to(scale);
    if !rounded.fits(precision, scale) {
        return Err(SqlError::out_of_range(column, row));
    }
    Ok(Value::Decimal(rounded))
}

/// Whether `a op b` over these types computes exactly as a decimal (rule 1, and `/` of two
/// integers).
pub(crate) fn is_exact_arith(a: &SqlType, b: &SqlType, op: ArithOp) -> bool {
    match (a, b) {
        (SqlType::Decimal { .. }, SqlType::Decimal { .. } | SqlType::Int { .. })
        | (SqlType::Int { .. }, SqlType::Decimal { .. }) => true,
        (SqlType::Int { .. }, SqlType::Int { .. }) => op == ArithOp::Div,
        _ => false,
    }
}

/// (precision, scale) of an exact operand's type.
fn precision_scale(t: &SqlType) -> (u8, u8) {
    match *t {
        SqlType::Decimal { precision, scale } => (precision, scale),
        SqlType::Int { len, .. } => (len.min(20) as u8, 0),
        _ => (DECIMAL_MAX_PRECISION, 0),
    }
}

/// The result type of an exact `a op b` (rule 2; precision as MySQL widens it, at most 65).
pub(crate) fn arith_type(op: ArithOp, a: &SqlType, b: &SqlType) -> SqlType {
    let ((pa, sa), (pb, sb)) = (precision_scale(a), precision_scale(b));
    let scale = result_scale(op, sa, sb);
    let int_digits = |p: u8, s: u8| u16::from(p.saturating_sub(s));
    let integer = match op {
        ArithOp::Add | ArithOp::Sub => int_digits(pa, sa).max(int_digits(pb, sb)) + 1,
        ArithOp::Mul => int_digits(pa, sa) + int_digits(pb, sb),
        ArithOp::Div => int_digits(pa, sa) + u16::from(sb),
        ArithOp::Mod => int_digits(pa, sa).max(int_digits(pb, sb)),
        ArithOp::IntDiv => {
            return SqlType::Int {
                unsigned: false,
                len: 21,
            }
        }
    };
    let precision = (integer + u16::from(scale)).clamp(1, u16::from(DECIMAL_MAX_PRECISION));
    SqlType::Decimal {
        precision: precision as u8,
        scale,
    }
}

/// The display length MySQL reports for DECIMAL(p,s): digits, a sign and a point.
pub(crate) fn display_length(precision: u8, scale: u8) -> u32 {
    u32::from(precision) + 1 + u32::from(scale > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    fn text(v: &Value) -> String {
        display(v)
    }

    #[test]
    fn arithmetic_scales() {
        let cases = [
            (ArithOp::Add, "1.5", "2.25", "3.75"),
            (ArithOp::Sub, "0.1", "0.3", "-0.2"),
            (ArithOp::Mul, "1.5", "1.5", "2.25"),
            (ArithOp::Mul, "1.10", "2", "2.20"),
            (ArithOp::Div, "1", "3", "0.3333"),
            (ArithOp::Div, "1.00", "3", "0.333333"),
            (ArithOp::Div, "10", "4", "2.5000"),
            (ArithOp::Mod, "7.5", "2", "1.5"),
            (ArithOp::IntDiv, "7.5", "2", "3"),
        ];
        for (op, a, b, want) in cases {
            assert_eq!(
                text(&arith(op, &d(a), &d(b)).unwrap()),
                want,
                "{a} {op:?} {b}"
            );
        }
        assert_eq!(arith(ArithOp::Div, &d("1"), &d("0")).unwrap(), Value::Null);
        let big = d(&"9".repeat(65));
        assert_eq!(arith(ArithOp::Add, &big, &d("1")).unwrap_err().code, 1690);
        assert_eq!(result_scale(ArithOp::Div, 28, 0), 30);
        assert_eq!(result_scale(ArithOp::Mul, 2, 3), 5);
    }

    #[test]
    fn storing_rounds_and_checks_range() {
        let b = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        let ok = [
            (Value::Int(5), "5.00"),
            (b("1.005"), "1.01"),
            (b("-1.005"), "-1.01"),
            (b(" 12.3 "), "12.30"),
            (Value::Double(0.1), "0.10"),
            (Value::Decimal(d("999.994")), "999.99"),
            (b("1e2"), "100.00"),
        ];
        for (v, want) in ok {
            assert_eq!(text(&store(&v, 5, 2, "c", 1).unwrap()), want, "{v:?}");
        }
        let bad = [
            (Value::Int(1000), 1264),
            (Value::Decimal(d("999.995")), 1264),
            (b("abc"), 1366),
            (b("1.5x"), 1366),
            (Value::Double(f64::INFINITY), 1264),
        ];
        for (v, code) in bad {
            assert_eq!(store(&v, 5, 2, "c", 1).unwrap_err().code, code, "{v:?}");
        }
        assert_eq!(display_length(10, 2), 12);
        assert_eq!(display_length(10, 0), 11);
        assert_eq!(str_to_decimal(b"1.5abc").0, d("1.5"));
        assert_eq!(str_to_decimal(b"abc").0, d("0"));
    }
}
