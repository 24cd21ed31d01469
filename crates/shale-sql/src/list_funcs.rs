//! Functions that pick from their argument list by a number: MAKE_SET, EXPORT_SET and
//! INTERVAL(n, n1, n2, ...) (the comparison function; parse.rs rule 7 makes it parsable).
//!
//! Rules (MySQL 8's, checked against MariaDB 10.11):
//! 1. MAKE_SET(bits, s1, s2, ...) joins with `,` the strings whose bit is set in `bits`
//!    (s1 is bit 0), skipping NULL strings; a NULL `bits` gives NULL. `bits` is taken as a
//!    64-bit pattern, so -1 sets every bit.
//! 2. EXPORT_SET(bits, on, off[, separator[, count]]) writes `on` or `off` for each of the
//!    first `count` bits (lowest first; default and maximum 64, a negative or larger count
//!    is 64), joined by `separator` (default `,`). Any NULL argument gives NULL.
//! 3. INTERVAL(n, n1, n2, ...) is the number of leading list values not greater than `n`,
//!    comparing numbers (strings are converted): 0 when n < n1. A NULL list value counts as
//!    not greater; a NULL `n` gives -1. The list should be sorted ascending, as MySQL
//!    requires; the scan stops at the first value greater than `n`.

// Bit counts are clamped to 0..=64 before the casts.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use std::cmp::Ordering;

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::string_funcs::as_bytes;
use crate::types::SqlType;

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListFunc {
    MakeSet,
    ExportSet,
    Interval,
}

fn str_type(len: u32) -> SqlType {
    SqlType::Str {
        collation: Collation::Utf8mb4GeneralCi,
        len,
    }
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let (f, min, max, t) = match name {
        "MAKE_SET" => (ListFunc::MakeSet, 2, usize::MAX, str_type(65_535)),
        "EXPORT_SET" => (ListFunc::ExportSet, 3, 5, str_type(65_535)),
        "INTERVAL" => (
            ListFunc::Interval,
            2,
            usize::MAX,
            SqlType::Int {
                unsigned: false,
                len: 2,
            },
        ),
        _ => return None,
    };
    if args.len() < min || args.len() > max {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    let bound: Result<Vec<Expr>, SqlError> =
        args.iter().map(|a| binder.expr(a).map(|b| b.0)).collect();
    Some(bound.map(|b| (Expr::Func(Func::Builtin(Builtin::List(f)), b), t)))
}

/// A bit pattern argument: an integer's 64 bits (rule 1).
fn bits(v: &Value) -> Option<u64> {
    let n = crate::value::to_i128(v)?;
    Some(if n < 0 {
        i64::try_from(n).unwrap_or(i64::MIN) as u64
    } else {
        u64::try_from(n).unwrap_or(u64::MAX)
    })
}

/// Evaluates `f` over its argument values.
pub(crate) fn eval(f: ListFunc, args: &[Value]) -> Value {
    match f {
        ListFunc::MakeSet => make_set(args),
        ListFunc::ExportSet => export_set(args),
        ListFunc::Interval => interval(args),
    }
}

/// Rule 1.
fn make_set(args: &[Value]) -> Value {
    let Some(mask) = args.first().and_then(bits) else {
        return Value::Null;
    };
    let mut out = Vec::new();
    for (i, s) in args[1..].iter().enumerate().take(64) {
        if mask & (1 << i) == 0 {
            continue;
        }
        if let Some(b) = as_bytes(s) {
            if !out.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(&b);
        }
    }
    Value::Bytes(out)
}

/// Rule 2.
fn export_set(args: &[Value]) -> Value {
    let arg = |i: usize| args.get(i);
    let (Some(mask), Some(on), Some(off)) = (
        arg(0).and_then(bits),
        arg(1).and_then(as_bytes),
        arg(2).and_then(as_bytes),
    ) else {
        return Value::Null;
    };
    let separator = match arg(3) {
        None => b",".to_vec(),
        Some(v) => match as_bytes(v) {
            Some(s) => s,
            None => return Value::Null,
        },
    };
    let count = match arg(4) {
        None => 64,
        Some(v) => match crate::value::to_i128(v) {
            Some(n @ 0..=64) => n as u32,
            Some(_) => 64,
            None => return Value::Null,
        },
    };
    let mut out = Vec::new();
    for i in 0..count {
        if i > 0 {
            out.extend_from_slice(&separator);
        }
        out.extend_from_slice(if mask & (1 << i) == 0 { &off } else { &on });
    }
    Value::Bytes(out)
}

/// Compares two numbers exactly when both are integers, else as doubles.
fn compare_numbers(a: &Value, b: &Value) -> Option<Ordering> {
    let exact = |v: &Value| match v {
        Value::Int(_) | Value::UInt(_) => crate::value::to_i128(v),
        _ => None,
    };
    if let (Some(x), Some(y)) = (exact(a), exact(b)) {
        return Some(x.cmp(&y));
    }
    crate::value::to_f64(a)?.partial_cmp(&crate::value::to_f64(b)?)
}

/// Rule 3.
fn interval(args: &[Value]) -> Value {
    let n = match args.first() {
        None | Some(Value::Null) => return Value::Int(-1),
        Some(Value::Bytes(b)) => Value::Double(crate::value::str_to_f64(b)),
        Some(v) => v.clone(),
    };
    let mut passed = 0i64;
    for v in &args[1..] {
        let v = match v {
            Value::Bytes(b) => Value::Double(crate::value::str_to_f64(b)),
            other => other.clone(),
        };
        if compare_numbers(&n, &v) == Some(Ordering::Less) {
            break;
        }
        passed += 1;
    }
    Value::Int(passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn interval_counts_list_values_not_greater() {
        let ints = |v: &[i64]| v.iter().map(|&n| Value::Int(n)).collect::<Vec<_>>();
        assert_eq!(
            interval(&ints(&[23, 1, 15, 17, 30, 44, 200])),
            Value::Int(3)
        );
        assert_eq!(interval(&ints(&[10, 1, 10, 100, 1000])), Value::Int(2));
        assert_eq!(interval(&ints(&[22, 23, 30])), Value::Int(0));
        assert_eq!(
            interval(&[Value::Int(-5), Value::Int(-10), Value::Null, Value::Int(3)]),
            Value::Int(2)
        );
        assert_eq!(interval(&[Value::Null, Value::Int(1)]), Value::Int(-1));
        assert_eq!(interval(&[t("3"), t("10"), t("2")]), Value::Int(0));
    }

    #[test]
    fn export_set_clamps_the_bit_count() {
        let v = export_set(&[Value::Int(5), t("Y"), t("N"), t(""), Value::Int(-1)]);
        let Value::Bytes(b) = v else { panic!() };
        assert_eq!(b.len(), 64);
        assert!(b.starts_with(b"YNYN"));
        assert_eq!(
            export_set(&[Value::Int(6), t("1"), t("0"), t(","), Value::Int(4)]),
            t("0,1,1,0")
        );
    }

    #[test]
    fn make_set_skips_nulls_and_unset_bits() {
        assert_eq!(
            make_set(&[
                Value::Int(5),
                t("hello"),
                t("nice"),
                Value::Null,
                t("world")
            ]),
            t("hello")
        );
        assert_eq!(make_set(&[Value::Int(-1), t("a"), t("b")]), t("a,b"));
        assert_eq!(make_set(&[Value::Null, t("a")]), Value::Null);
    }
}
