//! MySQL 8's binary-string evaluation of the bitwise operators (bit_ops.rs has the numeric
//! one).
//!
//! Rules:
//! 1. `&`, `|` and `^` work bytewise when both operands are binary strings and at least one
//!    is not a hex literal (`X'..'`, `0x..`) or NULL literal; `~`, `<<` and `>>` when their
//!    first operand is a binary string that is not such a literal. Anything else is numeric
//!    (so `X'0F' & X'FF'` is 15, as in MySQL: a hex literal there is the number its bytes
//!    spell). The binder decides ([`bind`]).
//! 2. The result is a binary string as long as the operands; operands of unequal length
//!    fail with 3513, as MySQL.
//! 3. A shift moves the bits across the whole string, most significant first, keeping its
//!    length: bits shifted out are lost and zeros come in; the count is read as bit_ops
//!    reads a number (a negative one is a huge count, so all zeros).
//! 4. NULL in gives NULL.

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bit_ops::BitOp;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::types::SqlType;

/// Whether a select-list operand is a hex or NULL literal (rule 1).
pub(crate) fn is_plain_literal(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Value(v)
        if matches!(v.value, ast::Value::HexStringLiteral(_) | ast::Value::Null))
}

fn is_binary(t: &SqlType) -> bool {
    matches!(
        t,
        SqlType::Str {
            collation: Collation::Binary,
            ..
        }
    )
}

/// `op` over its operands, each with its type and whether it is a plain literal: bytewise
/// when rule 1 says so, else bit_ops' numeric evaluation.
pub(crate) fn bind(op: BitOp, operands: Vec<(Expr, SqlType, bool)>) -> (Expr, SqlType) {
    let bytewise = match op {
        BitOp::And | BitOp::Or | BitOp::Xor => {
            operands.iter().all(|(_, t, _)| is_binary(t))
                && operands.iter().any(|(_, _, literal)| !literal)
        }
        BitOp::Not | BitOp::ShiftLeft | BitOp::ShiftRight => operands
            .first()
            .is_some_and(|(_, t, literal)| is_binary(t) && !literal),
    };
    let len = match operands.first() {
        Some((_, SqlType::Str { len, .. }, _)) => *len,
        _ => 0,
    };
    if !bytewise {
        // A hex literal in numeric context is the number its bytes spell (MySQL's
        // `X'0F' & X'FF'` is 15), not the numeric value of its text.
        let numeric = operands
            .into_iter()
            .map(|(e, _, literal)| match e {
                Expr::Literal(Value::Bytes(b)) if literal && b.len() <= 8 => Expr::Literal(
                    Value::UInt(b.iter().fold(0u64, |n, byte| n << 8 | u64::from(*byte))),
                ),
                other => other,
            })
            .collect();
        return crate::bit_ops::bind(op, numeric);
    }
    let exprs = operands.into_iter().map(|(e, _, _)| e).collect();
    (
        Expr::Func(Func::Builtin(Builtin::BitBytes(op)), exprs),
        SqlType::Str {
            collation: Collation::Binary,
            len,
        },
    )
}

fn unequal_lengths() -> SqlError {
    SqlError::new(
        3513,
        "HY000",
        "Binary operands of bitwise operators must be of equal length",
    )
}

/// Evaluates `op` bytewise over its operand values (rules 2 to 4).
pub(crate) fn eval(op: BitOp, args: &[Value]) -> Result<Value, SqlError> {
    // Only the first operand is changed in place; the second is read where it is.
    let bytes = |i: usize| match args.get(i) {
        None | Some(Value::Null) => None,
        Some(Value::Bytes(b)) => Some(std::borrow::Cow::Borrowed(b.as_slice())),
        Some(other) => Some(std::borrow::Cow::Owned(
            crate::value::display(other).into_bytes(),
        )),
    };
    let Some(mut a) = bytes(0).map(std::borrow::Cow::into_owned) else {
        return Ok(Value::Null);
    };
    match op {
        BitOp::Not => a.iter_mut().for_each(|b| *b = !*b),
        BitOp::ShiftLeft | BitOp::ShiftRight => {
            let Some(n) = args.get(1).and_then(crate::bit_ops::bits) else {
                return Ok(Value::Null);
            };
            a = shift(&a, n, op == BitOp::ShiftLeft);
        }
        BitOp::And | BitOp::Or | BitOp::Xor => {
            let Some(b) = bytes(1) else {
                return Ok(Value::Null);
            };
            if a.len() != b.len() {
                return Err(unequal_lengths());
            }
            for (x, y) in a.iter_mut().zip(b.iter()) {
                *x = match op {
                    BitOp::And => *x & y,
                    BitOp::Or => *x | y,
                    _ => *x ^ y,
                };
            }
        }
    }
    Ok(Value::Bytes(a))
}

/// `a` shifted by `n` bits, most significant bit first, at the same length (rule 3).
fn shift(a: &[u8], n: u64, left: bool) -> Vec<u8> {
    let len = a.len();
    let Ok(n) = usize::try_from(n) else {
        return vec![0; len];
    };
    if n >= len.saturating_mul(8) {
        return vec![0; len];
    }
    let (whole, bits) = (n / 8, n % 8);
    let at = |i: Option<usize>| i.and_then(|i| a.get(i)).copied().unwrap_or(0);
    (0..len)
        .map(|i| {
            if left {
                let (hi, lo) = (at(Some(i + whole)), at(Some(i + whole + 1)));
                if bits == 0 {
                    hi
                } else {
                    (hi << bits) | (lo >> (8 - bits))
                }
            } else {
                let src = i.checked_sub(whole);
                let (lo, hi) = (at(src), at(src.and_then(|s| s.checked_sub(1))));
                if bits == 0 {
                    lo
                } else {
                    (lo >> bits) | (hi << (8 - bits))
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_move_bits_across_bytes() {
        assert_eq!(shift(&[0x00, 0xFF, 0x01], 8, true), [0xFF, 0x01, 0x00]);
        assert_eq!(shift(&[0x00, 0xFF, 0x01], 4, true), [0x0F, 0xF0, 0x10]);
        assert_eq!(shift(&[0x80, 0x01], 1, false), [0x40, 0x00]);
        assert_eq!(shift(&[0x80, 0x01], 9, false), [0x00, 0x40]);
        assert_eq!(shift(&[0xFF], 8, true), [0x00]);
        assert_eq!(shift(&[0xFF], u64::MAX, false), [0x00]);
    }

    #[test]
    fn unequal_lengths_are_3513() {
        let b = |v: &[u8]| Value::Bytes(v.to_vec());
        assert_eq!(
            eval(BitOp::And, &[b(&[0x0F, 0xF0]), b(&[0xFF, 0x0F])]).unwrap(),
            b(&[0x0F, 0x00])
        );
        assert_eq!(
            eval(BitOp::Or, &[b(&[1]), b(&[1, 2])]).unwrap_err().code,
            3513
        );
        assert_eq!(eval(BitOp::Not, &[b(&[0x0F])]).unwrap(), b(&[0xF0]));
        assert_eq!(
            eval(BitOp::Xor, &[Value::Null, b(&[1])]).unwrap(),
            Value::Null
        );
    }
}
