//! Numeric functions: ROUND, TRUNCATE, FLOOR, CEIL, SIGN, SQRT, POW, EXP, LN/LOG, PI, RAND.
//!
//! Rules (MySQL 8):
//! 1. Integers and decimals stay exact: ROUND rounds half away from zero, TRUNCATE toward
//!    zero, to `d` digits after the point (a negative `d` clears digits before it); FLOOR
//!    and CEIL of a decimal give an integer.
//! 2. Doubles give doubles; ROUND of a double rounds half to even, as MySQL's `rint`.
//! 3. Out-of-domain arguments (SQRT(-1), LN(0)) give NULL; a double result past the range
//!    (POW(10, 400)) is 1690.

use std::cell::Cell;

use shale_table::{Decimal, Value};

use crate::error::SqlError;
use crate::value::to_f64;

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// ROUND(x[, d]) (`truncate` false) and TRUNCATE(x, d).
pub(crate) fn round(x: &Value, d: Option<&Value>, truncate: bool) -> Value {
    let d = match d {
        None => 0,
        Some(v) => match crate::value::to_i128(v) {
            Some(n) => n.clamp(-100, 100) as i32,
            None => return Value::Null,
        },
    };
    match x {
        Value::Null => Value::Null,
        Value::Int(_) | Value::UInt(_) if d >= 0 => x.clone(),
        Value::Int(i) => round_integer(i128::from(*i), -d, truncate)
            .and_then(|n| i64::try_from(n).ok())
            .map_or(Value::Int(0), Value::Int),
        Value::UInt(u) => round_integer(i128::from(*u), -d, truncate)
            .and_then(|n| u64::try_from(n).ok())
            .map_or(Value::UInt(0), Value::UInt),
        Value::Decimal(dec) => Value::Decimal(round_decimal(dec, d, truncate)),
        other => {
            let Some(f) = to_f64(other) else {
                return Value::Null;
            };
            let scale = 10f64.powi(d);
            let scaled = f * scale;
            let r = if truncate {
                scaled.trunc()
            } else {
                scaled.round_ties_even()
            };
            let out = r / scale;
            Value::Double(if out.is_finite() { out } else { f })
        }
    }
}

/// `n` with its last `digits` decimal digits rounded (or truncated) away.
fn round_integer(n: i128, digits: i32, truncate: bool) -> Option<i128> {
    let unit = pow10(u32::try_from(digits).ok()?).unwrap_or(i128::MAX);
    if unit == i128::MAX {
        return Some(0);
    }
    let rest = n % unit;
    let base = n - rest;
    if truncate || rest.abs() * 2 < unit {
        Some(base)
    } else {
        base.checked_add(if n < 0 { -unit } else { unit })
    }
}

fn round_decimal(dec: &Decimal, d: i32, truncate: bool) -> Decimal {
    if d >= 0 {
        let scale = d.min(30) as u8;
        if truncate {
            return dec.truncate_to(scale);
        }
        return dec.round_to(scale);
    }
    let whole = if truncate {
        dec.truncate_to(0)
    } else {
        dec.round_to(0)
    };
    // Fewer integer digits than `-d`: rounding clears them all (or carries one unit).
    match whole.to_i128() {
        Some(n) => {
            let r = if truncate {
                round_integer(dec.truncate_to(0).to_i128().unwrap_or(n), -d, true)
            } else {
                // Round the exact value, not the already rounded integer (0.5 steps).
                let unit = pow10((-d) as u32).unwrap_or(i128::MAX);
                let shifted = dec.div(&Decimal::from_i128(unit), 30);
                shifted
                    .and_then(|s| s.round_to(0).to_i128())
                    .and_then(|s| s.checked_mul(unit))
            };
            r.map_or_else(Decimal::zero, Decimal::from_i128)
        }
        None => whole,
    }
}

/// FLOOR(x) (`ceil` false) and CEIL(x).
pub(crate) fn floor_ceil(x: &Value, ceil: bool) -> Value {
    match x {
        Value::Null => Value::Null,
        Value::Int(_) | Value::UInt(_) => x.clone(),
        Value::Decimal(d) => {
            let r = if ceil { d.ceil() } else { d.floor() };
            match r.to_i128().and_then(|n| i64::try_from(n).ok()) {
                Some(n) => Value::Int(n),
                None => Value::Decimal(r.round_to(0)),
            }
        }
        other => to_f64(other).map_or(Value::Null, |f| {
            Value::Double(if ceil { f.ceil() } else { f.floor() })
        }),
    }
}

/// SIGN(x).
pub(crate) fn sign(x: &Value) -> Value {
    match x {
        Value::Null => Value::Null,
        Value::Decimal(d) => Value::Int(if d.is_zero() {
            0
        } else if d.is_negative() {
            -1
        } else {
            1
        }),
        other => to_f64(other).map_or(Value::Null, |f| {
            Value::Int(if f > 0.0 {
                1
            } else if f < 0.0 {
                -1
            } else {
                0
            })
        }),
    }
}

/// Which one-argument double function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Math {
    Sqrt,
    Exp,
    Ln,
    Log2,
    Log10,
}

fn out_of_range(name: &str) -> SqlError {
    SqlError::new(
        1690,
        "22003",
        format!("DOUBLE value is out of range in '{name}'"),
    )
}

/// SQRT, EXP, LN (LOG of one argument), LOG2, LOG10 (rule 3).
pub(crate) fn math(f: Math, x: &Value) -> Result<Value, SqlError> {
    let Some(x) = to_f64(x) else {
        return Ok(Value::Null);
    };
    let r = match f {
        Math::Sqrt if x < 0.0 => return Ok(Value::Null),
        Math::Sqrt => x.sqrt(),
        Math::Exp => x.exp(),
        _ if x <= 0.0 => return Ok(Value::Null),
        Math::Ln => x.ln(),
        Math::Log2 => x.log2(),
        Math::Log10 => x.log10(),
    };
    if r.is_finite() {
        Ok(Value::Double(r))
    } else {
        Err(out_of_range(&format!("{f:?}").to_lowercase()))
    }
}

/// LOG(base, x).
pub(crate) fn log_base(base: &Value, x: &Value) -> Value {
    match (to_f64(base), to_f64(x)) {
        (Some(b), Some(x)) if b > 0.0 && b != 1.0 && x > 0.0 => Value::Double(x.ln() / b.ln()),
        _ => Value::Null,
    }
}

/// POW(x, y).
pub(crate) fn pow(x: &Value, y: &Value) -> Result<Value, SqlError> {
    let (Some(x), Some(y)) = (to_f64(x), to_f64(y)) else {
        return Ok(Value::Null);
    };
    let r = x.powf(y);
    if r.is_nan() {
        return Ok(Value::Null);
    }
    if r.is_finite() {
        Ok(Value::Double(r))
    } else {
        Err(out_of_range("pow"))
    }
}

thread_local! {
    static RAND_STATE: Cell<u64> = const { Cell::new(0) };
}

/// RAND(): a double in [0, 1) from a per-thread xorshift generator seeded by the clock.
pub(crate) fn rand() -> Value {
    let next = RAND_STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            x = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64)
                | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    });
    Value::Double((next >> 11) as f64 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(v: &Value) -> String {
        crate::value::display(v)
    }
    fn dec(s: &str) -> Value {
        Value::Decimal(Decimal::parse(s).unwrap())
    }

    #[test]
    fn rounding() {
        let i = Value::Int;
        // MySQL's manual: ROUND(-1.23) = -1, ROUND(-1.58) = -2, ROUND(1.298, 1) = 1.3,
        // ROUND(1.298, 0) = 1, ROUND(23.298, -1) = 20, ROUND(2.5) = 3, ROUND(25E-1) = 2,
        // TRUNCATE(1.223,1) = 1.2, TRUNCATE(1.999,0) = 1, TRUNCATE(-1.999,1) = -1.9,
        // TRUNCATE(122,-2) = 100.
        assert_eq!(show(&round(&dec("-1.23"), None, false)), "-1");
        assert_eq!(show(&round(&dec("-1.58"), None, false)), "-2");
        assert_eq!(show(&round(&dec("1.298"), Some(&i(1)), false)), "1.3");
        assert_eq!(show(&round(&dec("1.298"), Some(&i(0)), false)), "1");
        assert_eq!(show(&round(&dec("23.298"), Some(&i(-1)), false)), "20");
        assert_eq!(show(&round(&dec("2.5"), None, false)), "3");
        assert_eq!(show(&round(&Value::Double(2.5), None, false)), "2");
        assert_eq!(show(&round(&dec("1.223"), Some(&i(1)), true)), "1.2");
        assert_eq!(show(&round(&dec("1.999"), Some(&i(0)), true)), "1");
        assert_eq!(show(&round(&dec("-1.999"), Some(&i(1)), true)), "-1.9");
        assert_eq!(show(&round(&i(122), Some(&i(-2)), true)), "100");
        assert_eq!(show(&round(&i(-155), Some(&i(-1)), false)), "-160");
        assert_eq!(show(&floor_ceil(&dec("-1.23"), false)), "-2");
        assert_eq!(show(&floor_ceil(&dec("1.23"), true)), "2");
        assert_eq!(show(&floor_ceil(&Value::Double(-1.5), true)), "-1");
        assert_eq!(show(&sign(&dec("-0.5"))), "-1");
        assert_eq!(show(&math(Math::Sqrt, &i(-1)).unwrap()), "NULL");
        assert_eq!(show(&math(Math::Sqrt, &i(16)).unwrap()), "4");
        assert_eq!(pow(&i(10), &i(400)).unwrap_err().code, 1690);
        assert_eq!(show(&log_base(&i(2), &i(65536))), "16");
        let r = crate::value::to_f64(&rand()).unwrap();
        assert!((0.0..1.0).contains(&r));
    }
}
