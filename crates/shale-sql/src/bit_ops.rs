//! The bitwise operators `&`, `|`, `^`, `~`, `<<` and `>>`.
//!
//! Rules (MySQL 8's numeric evaluation):
//! 1. Each operand is taken as a 64-bit integer: integers in two's complement (so `-1` is
//!    all ones), doubles and decimals rounded half away from zero, strings by their numeric
//!    value; past 64 bits the value saturates as MySQL's integer conversion does. The result
//!    is BIGINT UNSIGNED; a NULL operand gives NULL.
//! 2. A shift by 64 or more (or by a negative count, which is a huge unsigned one) is 0.
//! 3. Binary-string operands are evaluated bytewise instead where MySQL 8 does so
//!    (bit_bytes.rs decides and evaluates).

// The clamp on the line before each cast keeps it in range.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use shale_table::Value;

use crate::builtin::Builtin;
use crate::expr::{Expr, Func};
use crate::types::SqlType;

/// One operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    And,
    Or,
    Xor,
    Not,
    ShiftLeft,
    ShiftRight,
}

/// The operator applied to its operands, and BIGINT UNSIGNED (rule 1).
pub(crate) fn bind(op: BitOp, operands: Vec<Expr>) -> (Expr, SqlType) {
    (
        Expr::Func(Func::Builtin(Builtin::Bit(op)), operands),
        SqlType::Int {
            unsigned: true,
            len: 20,
        },
    )
}

/// An operand as 64 bits (rule 1; BIT_COUNT counts the same bits); None for NULL.
pub(crate) fn bits(v: &Value) -> Option<u64> {
    let n = crate::value::to_i128(v)?;
    Some(n.clamp(i128::from(i64::MIN), i128::from(u64::MAX)) as u64)
}

/// Evaluates `op` over its operand values.
pub(crate) fn eval(op: BitOp, args: &[Value]) -> Value {
    let operand = |i: usize| args.get(i).and_then(bits);
    let Some(a) = operand(0) else {
        return Value::Null;
    };
    if op == BitOp::Not {
        return Value::UInt(!a);
    }
    let Some(b) = operand(1) else {
        return Value::Null;
    };
    Value::UInt(match op {
        BitOp::And => a & b,
        BitOp::Or => a | b,
        BitOp::Xor => a ^ b,
        BitOp::ShiftLeft => u32::try_from(b)
            .ok()
            .and_then(|n| a.checked_shl(n))
            .unwrap_or(0),
        BitOp::ShiftRight => u32::try_from(b)
            .ok()
            .and_then(|n| a.checked_shr(n))
            .unwrap_or(0),
        BitOp::Not => unreachable!("returned above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_are_64_bit_and_shifts_past_63_are_zero() {
        let e = |op, a: Value, b: Value| eval(op, &[a, b]);
        assert_eq!(e(BitOp::Or, Value::Int(1), Value::Int(4)), Value::UInt(5));
        assert_eq!(e(BitOp::And, Value::Int(6), Value::Int(3)), Value::UInt(2));
        assert_eq!(e(BitOp::Xor, Value::Int(1), Value::Int(3)), Value::UInt(2));
        assert_eq!(
            e(BitOp::Or, Value::Int(-1), Value::Int(0)),
            Value::UInt(u64::MAX)
        );
        assert_eq!(eval(BitOp::Not, &[Value::Int(0)]), Value::UInt(u64::MAX));
        assert_eq!(
            e(BitOp::ShiftLeft, Value::Int(1), Value::Int(3)),
            Value::UInt(8)
        );
        assert_eq!(
            e(BitOp::ShiftLeft, Value::Int(1), Value::Int(64)),
            Value::UInt(0)
        );
        assert_eq!(
            e(BitOp::ShiftRight, Value::Int(16), Value::Int(-1)),
            Value::UInt(0)
        );
        assert_eq!(
            e(BitOp::Or, Value::Double(1.6), Value::Int(0)),
            Value::UInt(2)
        );
        assert_eq!(e(BitOp::Or, Value::Null, Value::Int(0)), Value::Null);
    }
}
