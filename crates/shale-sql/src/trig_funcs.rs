//! Trigonometry and bit counting: PI, DEGREES, RADIANS, SIN, COS, TAN, COT, ASIN, ACOS,
//! ATAN (one or two arguments), ATAN2 and BIT_COUNT.
//!
//! Rules (MySQL 8's):
//! 1. Every function but BIT_COUNT returns DOUBLE; a NULL argument gives NULL.
//! 2. ASIN and ACOS outside [-1, 1] are NULL; COT(0) (any infinite or NaN result) is 1690
//!    `DOUBLE value is out of range in 'cot(x)'`.
//! 3. BIT_COUNT counts the one bits of the argument as a 64-bit integer (negative values
//!    in two's complement, strings by their numeric prefix).
//! 4. PI() is the double nearest pi, shown with all its digits (MySQL shows 6 decimals,
//!    its result type carrying a display scale Shale's DOUBLE has not).

// Every narrowing cast here follows a range check or clamp on the line before it.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use shale_table::Value;
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::types::SqlType;
use crate::value::to_f64;

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrigFunc {
    Pi,
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    BitCount,
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let (f, min, max) = match name {
        "PI" => (TrigFunc::Pi, 0, 0),
        "DEGREES" => (TrigFunc::Degrees, 1, 1),
        "RADIANS" => (TrigFunc::Radians, 1, 1),
        "SIN" => (TrigFunc::Sin, 1, 1),
        "COS" => (TrigFunc::Cos, 1, 1),
        "TAN" => (TrigFunc::Tan, 1, 1),
        "COT" => (TrigFunc::Cot, 1, 1),
        "ASIN" => (TrigFunc::Asin, 1, 1),
        "ACOS" => (TrigFunc::Acos, 1, 1),
        "ATAN" if args.len() == 2 => (TrigFunc::Atan2, 2, 2),
        "ATAN" => (TrigFunc::Atan, 1, 1),
        "ATAN2" => (TrigFunc::Atan2, 2, 2),
        "BIT_COUNT" => (TrigFunc::BitCount, 1, 1),
        _ => return None,
    };
    if args.len() < min || args.len() > max {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    let t = if f == TrigFunc::BitCount {
        SqlType::Int {
            unsigned: false,
            len: 2,
        }
    } else {
        SqlType::Double
    };
    let bound: Result<Vec<Expr>, SqlError> =
        args.iter().map(|a| binder.expr(a).map(|b| b.0)).collect();
    Some(bound.map(|b| (Expr::Func(Func::Builtin(Builtin::Trig(f)), b), t)))
}

/// Evaluates `f` over its argument values.
pub(crate) fn eval(f: TrigFunc, args: &[Value]) -> Result<Value, SqlError> {
    if f == TrigFunc::Pi {
        return Ok(Value::Double(std::f64::consts::PI));
    }
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    if f == TrigFunc::BitCount {
        return Ok(crate::bit_ops::bits(arg(0))
            .map_or(Value::Null, |n| Value::Int(i64::from(n.count_ones()))));
    }
    let Some(x) = to_f64(arg(0)) else {
        return Ok(Value::Null);
    };
    let r = match f {
        TrigFunc::Degrees => x.to_degrees(),
        TrigFunc::Radians => x.to_radians(),
        TrigFunc::Sin => x.sin(),
        TrigFunc::Cos => x.cos(),
        TrigFunc::Tan => x.tan(),
        TrigFunc::Cot => 1.0 / x.tan(),
        TrigFunc::Asin | TrigFunc::Acos if !(-1.0..=1.0).contains(&x) => return Ok(Value::Null),
        TrigFunc::Asin => x.asin(),
        TrigFunc::Acos => x.acos(),
        TrigFunc::Atan => x.atan(),
        TrigFunc::Atan2 => match to_f64(arg(1)) {
            Some(other) => x.atan2(other),
            None => return Ok(Value::Null),
        },
        TrigFunc::Pi | TrigFunc::BitCount => unreachable!("returned above"),
    };
    if r.is_finite() {
        Ok(Value::Double(r))
    } else {
        Err(SqlError::new(
            1690,
            "22003",
            format!(
                "DOUBLE value is out of range in '{}({})'",
                format!("{f:?}").to_ascii_lowercase(),
                crate::value::display(arg(0))
            ),
        ))
    }
}
