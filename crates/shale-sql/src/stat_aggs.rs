//! The bit and statistical aggregates: BIT_AND, BIT_OR, BIT_XOR, STD/STDDEV/STDDEV_POP,
//! STDDEV_SAMP, VAR_POP/VARIANCE and VAR_SAMP (exec.rs runs them through [`StatState`]).
//!
//! Rules (MySQL 8's):
//! 1. NULL values are skipped. The bit aggregates work on unsigned 64-bit integers
//!    (negative values in two's complement, doubles rounded, strings by their numeric
//!    prefix) and return BIGINT UNSIGNED; over no values BIT_AND is 18446744073709551615
//!    and BIT_OR and BIT_XOR are 0. (MySQL 8 also aggregates binary strings bytewise;
//!    Shale converts them to integers.)
//! 2. The statistical aggregates return DOUBLE, computed with Welford's running mean (no
//!    cancellation on large values); over no values they are NULL, and the _SAMP forms are
//!    NULL over a single value.

// Every narrowing cast here follows a range check or clamp on the line before it.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use shale_table::Value;

use crate::bind::AggFunc;
use crate::types::SqlType;

/// The aggregate a name calls, when it is one of this module's.
pub(crate) fn agg_of(name: &str) -> Option<AggFunc> {
    Some(match name {
        "BIT_AND" => AggFunc::BitAnd,
        "BIT_OR" => AggFunc::BitOr,
        "BIT_XOR" => AggFunc::BitXor,
        "STD" | "STDDEV" | "STDDEV_POP" => AggFunc::StdPop,
        "STDDEV_SAMP" => AggFunc::StdSamp,
        "VAR_POP" | "VARIANCE" => AggFunc::VarPop,
        "VAR_SAMP" => AggFunc::VarSamp,
        _ => return None,
    })
}

/// Rules 1 and 2.
pub(crate) fn result_type(func: AggFunc) -> SqlType {
    match func {
        AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor => SqlType::Int {
            unsigned: true,
            len: 21,
        },
        _ => SqlType::Double,
    }
}

/// A running bit or statistical aggregate.
#[derive(Debug, Clone)]
pub(crate) enum StatState {
    Bits(u64),
    /// Welford's count, mean and sum of squared deviations.
    Moments {
        count: u64,
        mean: f64,
        m2: f64,
    },
}

impl StatState {
    pub(crate) fn new(func: AggFunc) -> StatState {
        match func {
            AggFunc::BitAnd => StatState::Bits(u64::MAX),
            AggFunc::BitOr | AggFunc::BitXor => StatState::Bits(0),
            _ => StatState::Moments {
                count: 0,
                mean: 0.0,
                m2: 0.0,
            },
        }
    }

    /// Adds one non-NULL value.
    pub(crate) fn add(&mut self, func: AggFunc, v: &Value) {
        match self {
            StatState::Bits(acc) => {
                let n = crate::value::to_i128(v)
                    .unwrap_or(0)
                    .clamp(i128::from(i64::MIN), i128::from(u64::MAX))
                    as u64;
                match func {
                    AggFunc::BitAnd => *acc &= n,
                    AggFunc::BitOr => *acc |= n,
                    _ => *acc ^= n,
                }
            }
            StatState::Moments { count, mean, m2 } => {
                let x = crate::value::to_f64(v).unwrap_or(0.0);
                *count += 1;
                let delta = x - *mean;
                *mean += delta / *count as f64;
                *m2 += delta * (x - *mean);
            }
        }
    }

    pub(crate) fn finish(&self, func: AggFunc) -> Value {
        match *self {
            StatState::Bits(acc) => Value::UInt(acc),
            StatState::Moments { count, m2, .. } => {
                let sample = matches!(func, AggFunc::StdSamp | AggFunc::VarSamp);
                let divisor = if sample {
                    count.saturating_sub(1)
                } else {
                    count
                };
                if divisor == 0 {
                    return Value::Null;
                }
                let variance = (m2 / divisor as f64).max(0.0);
                if matches!(func, AggFunc::StdPop | AggFunc::StdSamp) {
                    Value::Double(variance.sqrt())
                } else {
                    Value::Double(variance)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(func: AggFunc, values: &[Value]) -> Value {
        let mut s = StatState::new(func);
        for v in values {
            s.add(func, v);
        }
        s.finish(func)
    }

    #[test]
    fn variance_and_bits() {
        let v: Vec<Value> = [2, 4, 4, 4, 5, 5, 7, 9]
            .iter()
            .map(|&n| Value::Int(n))
            .collect();
        assert_eq!(run(AggFunc::StdPop, &v), Value::Double(2.0));
        assert_eq!(run(AggFunc::VarPop, &v), Value::Double(4.0));
        assert_eq!(run(AggFunc::VarSamp, &v[..1]), Value::Null);
        assert_eq!(run(AggFunc::VarPop, &[]), Value::Null);
        assert_eq!(run(AggFunc::BitAnd, &[]), Value::UInt(u64::MAX));
        assert_eq!(
            run(AggFunc::BitXor, &[Value::Int(-1), Value::Int(1)]),
            Value::UInt(u64::MAX - 1)
        );
    }
}
