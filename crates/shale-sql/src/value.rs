//! Value semantics: how MySQL compares, converts, adds and matches values.
//!
//! The executor calls these and never re-implements a rule. The rules, as MySQL's manual
//! ("Type Conversion in Expression Evaluation") gives them:
//!
//! 1. Any comparison or arithmetic with NULL is NULL (unknown); AND/OR/NOT use three-valued
//!    logic (`FALSE AND NULL` is FALSE, `TRUE OR NULL` is TRUE).
//! 2. Two integers compare as integers (signed against unsigned exactly), a decimal against an
//!    integer or decimal exactly; two strings compare
//!    in the collation of the comparison; anything else compares as doubles, a string read as
//!    the longest numeric prefix (`'12abc'` is 12, `'abc'` is 0).
//! 3. Integer `+ - *` stay 64-bit integers and fail with 1690 on overflow; a double operand
//!    makes the result a double; integers and decimals combine exactly as decimals, `/` of
//!    two integers included (decimal.rs has the scale rules).
//! 4. Collations: `binary` compares bytes; `utf8mb4_bin` compares code points ignoring
//!    trailing spaces (PAD SPACE); `utf8mb4_general_ci` also folds case.

use std::cmp::Ordering;

use shale_table::{Collation, Value};

use crate::decimal::exact_decimal;
use crate::error::SqlError;

/// Parses the longest numeric prefix of `s` as MySQL does when it reads a string as a
/// number (leading spaces skipped; nothing numeric reads as 0).
pub(crate) fn str_to_f64(s: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(s);
    let t = text.trim_start();
    let b = t.as_bytes();
    let mut end = 0;
    if end < b.len() && (b[end] == b'+' || b[end] == b'-') {
        end += 1;
    }
    let digits_start = end;
    while end < b.len() && b[end].is_ascii_digit() {
        end += 1;
    }
    if end < b.len() && b[end] == b'.' {
        end += 1;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end == digits_start {
        return 0.0;
    }
    if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
        let mut e = end + 1;
        if e < b.len() && (b[e] == b'+' || b[e] == b'-') {
            e += 1;
        }
        if e < b.len() && b[e].is_ascii_digit() {
            while e < b.len() && b[e].is_ascii_digit() {
                e += 1;
            }
            end = e;
        }
    }
    t[..end].parse().unwrap_or(0.0)
}

/// The string as an exact integer, when all of it (spaces aside) is one.
pub(crate) fn str_to_i128_exact(s: &[u8]) -> Option<i128> {
    let t = std::str::from_utf8(s).ok()?.trim();
    t.parse::<i128>().ok()
}

/// The value as a double (NULL: None).
pub(crate) fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Null => None,
        Value::Int(i) => Some(*i as f64),
        Value::UInt(u) => Some(*u as f64),
        Value::Double(d) => Some(*d),
        Value::Decimal(d) => Some(d.to_f64()),
        Value::DateTime(d) => Some(d.to_f64()),
        Value::Time(t) => Some(t.to_f64()),
        Value::Enum(i, _) => Some(f64::from(*i)),
        Value::Set(m, _) => Some(*m as f64),
        Value::Bytes(b) => Some(str_to_f64(b)),
    }
}

/// The value as an integer, doubles rounded half away from zero, strings by their numeric
/// prefix (NULL: None).
pub(crate) fn to_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Null => None,
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        Value::Double(d) => Some(d.round() as i128),
        Value::Decimal(d) => d.to_i128(),
        Value::DateTime(d) => Some(d.to_f64().round() as i128),
        Value::Time(t) => Some(t.to_f64().round() as i128),
        Value::Enum(i, _) => Some(i128::from(*i)),
        Value::Set(m, _) => Some(i128::from(*m)),
        Value::Bytes(b) => {
            Some(str_to_i128_exact(b).unwrap_or_else(|| str_to_f64(b).round() as i128))
        }
    }
}

/// Truth value of a condition: NULL is unknown, numbers are true when non-zero.
pub(crate) fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Null => None,
        Value::Int(i) => Some(*i != 0),
        Value::UInt(u) => Some(*u != 0),
        Value::Double(d) => Some(*d != 0.0),
        Value::Decimal(d) => Some(!d.is_zero()),
        Value::DateTime(_) => Some(true),
        Value::Time(t) => Some(t.micros() != 0),
        Value::Enum(i, _) => Some(*i != 0),
        Value::Set(m, _) => Some(*m != 0),
        Value::Bytes(b) => Some(str_to_f64(b) != 0.0),
    }
}

/// A boolean as MySQL returns it (1 or 0).
pub(crate) fn from_bool(b: Option<bool>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => Value::Int(i64::from(b)),
    }
}

/// Compares two strings in `collation`: shale-table's rule, the one its keys are built from
/// (PAD SPACE for the utf8mb4 collations), so a comparison and an index range always agree.
pub(crate) fn compare_str(a: &[u8], b: &[u8], collation: Collation) -> Ordering {
    collation.compare(a, b)
}

/// A character replaced by its `general_ci` weight (for LIKE).
fn fold_ci(c: char) -> char {
    char::from_u32(u32::from(Collation::general_ci_weight(c))).unwrap_or(c)
}

/// A text under which strings equal in `collation` (and only those) are equal: GROUP BY and
/// DISTINCT keys.
pub(crate) fn sort_key(s: &[u8], collation: Collation) -> String {
    match collation {
        // Bytes as they are: every byte maps to one char, so distinct strings stay distinct.
        Collation::Binary => s.iter().map(|&b| char::from(b)).collect(),
        _ => {
            let mut w = Vec::with_capacity(s.len());
            collation.equality_weights(s, &mut w);
            // Each 16-bit weight maps to one distinct char: those in the surrogate range
            // and above move up by 0x800, past the surrogates.
            w.into_iter()
                .map(|x| {
                    let x = u32::from(x);
                    let code = if x >= 0xD800 { x + 0x800 } else { x };
                    char::from_u32(code).unwrap_or('\u{fffd}')
                })
                .collect()
        }
    }
}

/// Compares two values by rule 2 (None when either is NULL).
pub(crate) fn compare(a: &Value, b: &Value, collation: Collation) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        // SETs compare by mask with each other (set_type.rs rule 3).
        (Value::UInt(x), Value::UInt(y)) | (Value::Set(x, _), Value::Set(y, _)) => Some(x.cmp(y)),
        (Value::Int(x), Value::UInt(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::UInt(x), Value::Int(y)) => Some(i128::from(*x).cmp(&i128::from(*y))),
        (Value::Bytes(x), Value::Bytes(y)) => Some(compare_str(x, y, collation)),
        (Value::DateTime(x), other) => crate::temporal::compare_mixed(x, other, collation),
        (other, Value::DateTime(y)) => {
            crate::temporal::compare_mixed(y, other, collation).map(Ordering::reverse)
        }
        // ENUMs and SETs (enum_type.rs and set_type.rs, rule 3): by index or mask with each
        // other and with numbers, as text with text.
        (Value::Enum(x, _), Value::Enum(y, _)) => Some(x.cmp(y)),
        (Value::Enum(_, x) | Value::Set(_, x), Value::Bytes(y)) => {
            Some(compare_str(x.as_bytes(), y, collation))
        }
        (Value::Bytes(x), Value::Enum(_, y) | Value::Set(_, y)) => {
            Some(compare_str(x, y.as_bytes(), collation))
        }
        (Value::Enum(i, _), other) => compare(&Value::UInt(u64::from(*i)), other, collation),
        (other, Value::Enum(i, _)) => compare(other, &Value::UInt(u64::from(*i)), collation),
        (Value::Set(m, _), other) => compare(&Value::UInt(*m), other, collation),
        (other, Value::Set(m, _)) => compare(other, &Value::UInt(*m), collation),
        (Value::Time(x), other) => crate::time_type::compare_mixed(x, other, collation),
        (other, Value::Time(y)) => {
            crate::time_type::compare_mixed(y, other, collation).map(Ordering::reverse)
        }
        // A decimal against an integer, a decimal or a number written as text compares
        // exactly; against a double, or text that is not a number, as doubles.
        (Value::Decimal(_), _) | (_, Value::Decimal(_)) => {
            match (exact_decimal(a), exact_decimal(b)) {
                (Some(x), Some(y)) => Some(x.cmp(&y)),
                _ => to_f64(a)?.partial_cmp(&to_f64(b)?),
            }
        }
        // An integer against an integer-looking string compares exactly (ids bound as text).
        (Value::Int(_) | Value::UInt(_), Value::Bytes(s)) => match str_to_i128_exact(s) {
            Some(y) => Some(to_i128(a)?.cmp(&y)),
            None => to_f64(a)?.partial_cmp(&str_to_f64(s)),
        },
        (Value::Bytes(s), Value::Int(_) | Value::UInt(_)) => match str_to_i128_exact(s) {
            Some(x) => Some(x.cmp(&to_i128(b)?)),
            None => str_to_f64(s).partial_cmp(&to_f64(b)?),
        },
        _ => to_f64(a)?.partial_cmp(&to_f64(b)?),
    }
}

/// Total order for ORDER BY, DISTINCT and GROUP BY: NULL first, then by [`compare`].
pub(crate) fn sort_compare(a: &Value, b: &Value, collation: Collation) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => compare(a, b, collation).unwrap_or(Ordering::Equal),
    }
}

/// Arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
}

impl ArithOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::IntDiv => "DIV",
            ArithOp::Mod => "%",
        }
    }
}

fn is_integer(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::UInt(_))
        || matches!(v, Value::Bytes(b) if str_to_i128_exact(b).is_some())
}

fn int_result(r: i128, unsigned: bool, expr: &str) -> Result<Value, SqlError> {
    if unsigned {
        if let Ok(u) = u64::try_from(r) {
            return Ok(Value::UInt(u));
        }
    } else if let Ok(i) = i64::try_from(r) {
        return Ok(Value::Int(i));
    }
    let kind = if unsigned {
        "BIGINT UNSIGNED"
    } else {
        "BIGINT"
    };
    Err(SqlError::new(
        1690,
        "22003",
        format!("{kind} value is out of range in '{expr}'"),
    ))
}

/// `a op b` by rule 3.
pub(crate) fn arith(op: ArithOp, a: &Value, b: &Value) -> Result<Value, SqlError> {
    if matches!(a, Value::Null) || matches!(b, Value::Null) {
        return Ok(Value::Null);
    }
    // A TIME operand is its number `hhmmss[.f]` (time_type.rs rule 4).
    if let Value::Time(t) = a {
        return arith(op, &crate::time_type::to_number(t), b);
    }
    if let Value::Time(t) = b {
        return arith(op, a, &crate::time_type::to_number(t));
    }
    // An ENUM operand is its index (enum_type.rs rule 3).
    if let Value::Enum(i, _) = a {
        return arith(op, &Value::UInt(u64::from(*i)), b);
    }
    if let Value::Enum(i, _) = b {
        return arith(op, a, &Value::UInt(u64::from(*i)));
    }
    // A SET operand is its mask (set_type.rs rule 3).
    if let Value::Set(m, _) = a {
        return arith(op, &Value::UInt(*m), b);
    }
    if let Value::Set(m, _) = b {
        return arith(op, a, &Value::UInt(*m));
    }
    let both_int = is_integer(a) && is_integer(b);
    let decimal = matches!(a, Value::Decimal(_)) || matches!(b, Value::Decimal(_));
    // Integer division gives a decimal, as MySQL's `/` does.
    if decimal || (both_int && op == ArithOp::Div) {
        if let (Some(x), Some(y)) = (exact_decimal(a), exact_decimal(b)) {
            return crate::decimal::arith(op, &x, &y);
        }
    }
    let unsigned = matches!(a, Value::UInt(_)) || matches!(b, Value::UInt(_));
    match op {
        ArithOp::Add | ArithOp::Sub | ArithOp::Mul if both_int => {
            let (x, y) = (to_i128(a).unwrap_or(0), to_i128(b).unwrap_or(0));
            let r = match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                _ => x.checked_mul(y).unwrap_or(i128::MAX),
            };
            let text = format!("{} {} {}", display(a), op.symbol(), display(b));
            int_result(r, unsigned, &text)
        }
        ArithOp::IntDiv | ArithOp::Mod if both_int => {
            let (x, y) = (to_i128(a).unwrap_or(0), to_i128(b).unwrap_or(0));
            if y == 0 {
                return Ok(Value::Null);
            }
            let r = if op == ArithOp::IntDiv { x / y } else { x % y };
            int_result(r, unsigned && op == ArithOp::IntDiv, "DIV")
        }
        _ => {
            let (x, y) = (to_f64(a).unwrap_or(0.0), to_f64(b).unwrap_or(0.0));
            let r = match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div | ArithOp::IntDiv | ArithOp::Mod if y == 0.0 => {
                    return Ok(Value::Null)
                }
                ArithOp::Div => x / y,
                ArithOp::IntDiv => return int_result((x / y).trunc() as i128, false, "DIV"),
                ArithOp::Mod => x % y,
            };
            Ok(Value::Double(r))
        }
    }
}

/// Unary minus.
pub(crate) fn negate(v: &Value) -> Result<Value, SqlError> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Double(d) => Ok(Value::Double(-d)),
        Value::Decimal(d) => Ok(Value::Decimal(d.neg())),
        Value::DateTime(d) => Ok(Value::Double(-d.to_f64())),
        Value::Time(t) => negate(&crate::time_type::to_number(t)),
        Value::Enum(i, _) => Ok(Value::Int(-i64::from(*i))),
        Value::Set(m, _) => int_result(-i128::from(*m), false, &format!("-{}", display(v))),
        Value::Bytes(b) => match str_to_i128_exact(b) {
            Some(i) => int_result(-i, false, "-"),
            None => Ok(Value::Double(-str_to_f64(b))),
        },
        _ => int_result(-to_i128(v).unwrap_or(0), false, &format!("-{}", display(v))),
    }
}

/// `value LIKE pattern` with `%`, `_` and `escape` (NULL when either is NULL).
pub(crate) fn like(value: &Value, pattern: &Value, escape: char, collation: Collation) -> Value {
    let (Some(v), Some(p)) = (as_text(value), as_text(pattern)) else {
        return Value::Null;
    };
    let matched = match collation {
        Collation::Binary | Collation::Utf8mb4Bin => {
            let keyed = |s: &str| s.chars().map(|c| (c, c)).collect::<Vec<_>>();
            like_match(&keyed(&v), &keyed(&p), escape)
        }
        Collation::Utf8mb4GeneralCi => {
            let keyed = |s: &str| s.chars().map(|c| (c, fold_ci(c))).collect::<Vec<_>>();
            like_match(&keyed(&v), &keyed(&p), escape)
        }
        // Character by character, each character by its own weights (as MySQL's LIKE for
        // these collations): 'é' matches 'E' under utf8mb4_0900_ai_ci.
        _ => {
            let keyed = |s: &str| {
                s.chars()
                    .map(|c| {
                        let mut w = Vec::new();
                        collation.char_weights(c, &mut w);
                        (c, w)
                    })
                    .collect::<Vec<_>>()
            };
            like_match(&keyed(&v), &keyed(&p), escape)
        }
    };
    from_bool(Some(matched))
}

/// LIKE over characters, each with the key it matches by (itself, its fold, its weights):
/// `%`, `_` and the escape are read from the character, literals compare their keys.
fn like_match<K: PartialEq>(v: &[(char, K)], p: &[(char, K)], escape: char) -> bool {
    // Iterative matcher with backtracking to the last `%` (linear-ish, no recursion).
    let (mut vi, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while vi < v.len() {
        if pi < p.len() {
            let c = p[pi].0;
            if c == '%' {
                star = Some((pi, vi));
                pi += 1;
                continue;
            }
            if c == '_' {
                pi += 1;
                vi += 1;
                continue;
            }
            let (lit, step) = if c == escape && pi + 1 < p.len() {
                (&p[pi + 1].1, 2)
            } else {
                (&p[pi].1, 1)
            };
            if *lit == v[vi].1 {
                pi += step;
                vi += 1;
                continue;
            }
        }
        match star {
            Some((sp, sv)) => {
                pi = sp + 1;
                vi = sv + 1;
                star = Some((sp, sv + 1));
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi].0 == '%' {
        pi += 1;
    }
    pi == p.len()
}

/// The value as text (numbers as MySQL prints them), None for NULL.
pub(crate) fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => Some(display(v)),
    }
}

/// How MySQL prints a value in text results and messages (`NULL` for NULL).
pub(crate) fn display(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Double(d) => format_double(*d),
        Value::Decimal(d) => d.to_string(),
        Value::DateTime(d) => d.to_string(),
        Value::Time(t) => t.to_string(),
        Value::Enum(_, text) | Value::Set(_, text) => text.clone(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// A double as MySQL prints it: integral values without a fraction, otherwise the shortest
/// text that reads back the same.
pub(crate) fn format_double(d: f64) -> String {
    if d.is_finite() && d == d.trunc() && d.abs() < 1e15 {
        format!("{}", d as i64)
    } else {
        format!("{d}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn compare_table() {
        use Ordering::{Equal as E, Greater as G, Less as L};
        let ci = Collation::Utf8mb4GeneralCi;
        let bin = Collation::Binary;
        let cases: Vec<(Value, Value, Collation, Option<Ordering>)> = vec![
            (Value::Int(1), Value::Int(2), ci, Some(L)),
            (Value::Int(-1), Value::UInt(0), ci, Some(L)),
            (Value::UInt(u64::MAX), Value::Int(i64::MAX), ci, Some(G)),
            (Value::Int(5), b("5"), ci, Some(E)),
            (b("5"), Value::Int(5), ci, Some(E)),
            (Value::Int(12), b("12abc"), ci, Some(E)),
            (Value::Int(0), b("abc"), ci, Some(E)),
            (Value::Double(1.5), Value::Int(1), ci, Some(G)),
            (b("abc"), b("ABC"), ci, Some(E)),
            (b("abc"), b("ABC"), bin, Some(G)),
            (b("abc  "), b("abc"), ci, Some(E)),
            (b("abc  "), b("abc"), Collation::Utf8mb4Bin, Some(E)),
            (b("a"), b("b"), ci, Some(L)),
            (b("á"), b("A"), ci, Some(E)),
            (b("ß"), b("s"), ci, Some(E)),
            (b("á"), b("b"), ci, Some(L)),
            (b("a\t"), b("a"), ci, Some(L)),
            (b("á"), b("A"), Collation::Utf8mb4Bin, Some(G)),
            (Value::Null, Value::Int(1), ci, None),
            (Value::Int(1), Value::Null, ci, None),
            (Value::Null, Value::Null, ci, None),
        ];
        for (a, c, coll, want) in cases {
            assert_eq!(compare(&a, &c, coll), want, "{a:?} vs {c:?} in {coll:?}");
        }
    }

    #[test]
    fn arithmetic_table() {
        let cases: Vec<(ArithOp, Value, Value, Value)> = vec![
            (ArithOp::Add, Value::Int(1), Value::Int(2), Value::Int(3)),
            (ArithOp::Add, Value::Int(1), b("2"), Value::Int(3)),
            (
                ArithOp::Add,
                Value::Int(1),
                Value::Double(0.5),
                Value::Double(1.5),
            ),
            (ArithOp::Sub, Value::UInt(5), Value::Int(2), Value::UInt(3)),
            (ArithOp::Mul, Value::Int(3), Value::Int(-2), Value::Int(-6)),
            (
                ArithOp::Div,
                Value::Int(1),
                Value::Int(4),
                Value::Decimal(shale_table::Decimal::parse("0.25").unwrap()),
            ),
            (ArithOp::Div, Value::Int(1), Value::Int(0), Value::Null),
            (ArithOp::IntDiv, Value::Int(7), Value::Int(2), Value::Int(3)),
            (ArithOp::Mod, Value::Int(7), Value::Int(3), Value::Int(1)),
            (ArithOp::Add, Value::Null, Value::Int(3), Value::Null),
        ];
        for (op, x, y, want) in cases {
            assert_eq!(arith(op, &x, &y).unwrap(), want, "{x:?} {op:?} {y:?}");
        }
        assert_eq!(
            arith(ArithOp::Add, &Value::Int(i64::MAX), &Value::Int(1))
                .unwrap_err()
                .code,
            1690
        );
        assert_eq!(
            arith(ArithOp::Sub, &Value::UInt(0), &Value::UInt(1))
                .unwrap_err()
                .code,
            1690
        );
    }

    #[test]
    fn truth_and_numbers() {
        assert_eq!(truth(&Value::Null), None);
        assert_eq!(truth(&Value::Int(0)), Some(false));
        assert_eq!(truth(&b("1x")), Some(true));
        assert_eq!(truth(&b("x")), Some(false));
        assert!((str_to_f64(b" 1.5e2xyz") - 150.0).abs() < f64::EPSILON);
        assert!((str_to_f64(b"-.5") + 0.5).abs() < f64::EPSILON);
        assert_eq!(to_i128(&Value::Double(2.5)), Some(3));
    }

    #[test]
    fn like_table() {
        let ci = Collation::Utf8mb4GeneralCi;
        let cases = [
            ("abc", "a%", true),
            ("abc", "A_C", true),
            ("abc", "%c", true),
            ("abc", "%b%", true),
            ("abc", "ab", false),
            ("a%c", "a\\%c", true),
            ("abc", "a\\%c", false),
            ("", "%", true),
            ("aaa", "%a%a%a%", true),
            ("aa", "%a%a%a%", false),
        ];
        for (v, p, want) in cases {
            assert_eq!(
                like(&b(v), &b(p), '\\', ci),
                Value::Int(i64::from(want)),
                "{v} LIKE {p}"
            );
        }
        assert_eq!(like(&Value::Null, &b("%"), '\\', ci), Value::Null);
    }

    #[test]
    fn sort_keys_match_comparison() {
        let ci = Collation::Utf8mb4GeneralCi;
        let bin = Collation::Utf8mb4Bin;
        let cases: [(&[u8], &[u8], Collation); 7] = [
            (b"abc", b"ABC ", ci),
            (b"abc", b"abc  ", bin),
            (b"abc", b"ABC", bin),
            (b"abc", b"abc ", Collation::Binary),
            (b"\xff", b"\xfe", Collation::Binary),
            (b"stra\xc3\x9fe", b"STRASE", ci),
            (b"a\t", b"a", ci),
        ];
        for (a, b, coll) in cases {
            let same = compare_str(a, b, coll) == Ordering::Equal;
            assert_eq!(
                sort_key(a, coll) == sort_key(b, coll),
                same,
                "{a:?} {b:?} {coll:?}"
            );
        }
    }

    #[test]
    fn display_numbers() {
        assert_eq!(display(&Value::Double(3.0)), "3");
        assert_eq!(display(&Value::Double(0.25)), "0.25");
        assert_eq!(display(&Value::UInt(7)), "7");
    }
}
