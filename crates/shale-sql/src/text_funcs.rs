//! The less common string functions: FORMAT, INSERT, CHAR, ORD, BIT_LENGTH, QUOTE, BIN, OCT,
//! CONV, SOUNDEX, ISNULL, and the binding-time CHARSET, COLLATION and COERCIBILITY.
//!
//! Rules (MySQL 8's):
//! 1. A NULL argument gives NULL, except QUOTE(NULL) (the word `NULL`), ISNULL, CHAR
//!    (NULL arguments are skipped) and the three binding-time functions.
//! 2. FORMAT(x, d[, locale]) rounds `x` half away from zero to `d` decimals (0..=30) and
//!    groups the integer digits by three. The locales en_US (and NULL or no locale) and
//!    de_DE are known; another locale is formatted as en_US (MySQL knows more locales and
//!    warns 1649 for an unknown one; Shale does not warn).
//! 3. Positions and lengths count characters; INSERT(s, pos, len, new) returns `s` when
//!    `pos` is outside 1..=CHAR_LENGTH(s), and replaces the rest of `s` when `len` is
//!    negative or runs past its end.
//! 4. CHAR(n, ...) gives a binary string: each integer as its big-endian bytes, without
//!    leading zero bytes (0 gives one zero byte); `CHAR(... USING cs)` is not parsed.
//! 5. CONV(n, from, to): bases 2..=36 by magnitude, else NULL. `n` is read as the longest
//!    prefix of digits valid in `from` (after an optional sign), unsigned (saturating at
//!    2^64 - 1; a leading minus negates modulo 2^64) unless `from` is negative; the result
//!    is shown unsigned unless `to` is negative. An integer or decimal `n` is its decimal
//!    text. BIN(n) and OCT(n) are CONV(n, 10, 2) and CONV(n, 10, 8).
//! 6. SOUNDEX: the first ASCII letter, uppercased, then the codes of the following ASCII
//!    letters, skipping vowels (and H, W, Y) and a code equal to the last one written,
//!    padded with '0' to 4 characters and never truncated (MySQL's variant); other
//!    characters are skipped.
//! 7. CHARSET, COLLATION and COERCIBILITY are fixed while binding, from the argument's
//!    derivation (coercibility.rs).

// Every narrowing cast here follows a range check or clamp on the line before it.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::string_funcs::as_bytes;
use crate::types::SqlType;

/// One function of this module evaluated per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextFunc {
    Format,
    Insert,
    Char,
    Ord,
    BitLength,
    Quote,
    Conv,
    Soundex,
    IsNull,
    /// ANY_VALUE(x): x, exempt from ONLY_FULL_GROUP_BY (group_check.rs rule 1).
    AnyValue,
}

fn str_type(len: u32) -> SqlType {
    SqlType::Str {
        collation: Collation::Utf8mb4GeneralCi,
        len,
    }
}

fn int_type() -> SqlType {
    SqlType::Int {
        unsigned: false,
        len: 21,
    }
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let (min, max) = match name {
        // ANY_VALUE(x) reads x of the group's first row, as a column outside GROUP BY does;
        // the call stays in the bound expression so ONLY_FULL_GROUP_BY can exempt it.
        "ANY_VALUE" if args.len() == 1 => {
            return Some(binder.expr(args[0]).map(|(e, t)| {
                (
                    Expr::Func(Func::Builtin(Builtin::Text(TextFunc::AnyValue)), vec![e]),
                    t,
                )
            }))
        }
        "FORMAT" => (2, 3),
        "INSERT" => (4, 4),
        "CHAR" => (1, usize::MAX),
        "ORD" | "BIT_LENGTH" | "QUOTE" | "BIN" | "OCT" | "SOUNDEX" | "ISNULL" | "CHARSET"
        | "COLLATION" | "COERCIBILITY" | "ANY_VALUE" => (1, 1),
        "CONV" => (3, 3),
        _ => return None,
    };
    if args.len() < min || args.len() > max {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    Some(bind_known(binder, name, args))
}

fn bind_known(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Result<(Expr, SqlType), SqlError> {
    let mut bound = Vec::with_capacity(args.len() + 2);
    let mut types = Vec::with_capacity(args.len());
    for a in args {
        let (e, t) = binder.expr(a)?;
        bound.push(e);
        types.push(t);
    }
    let first = types.first().cloned().unwrap_or(SqlType::Null);
    let first_len = match &first {
        SqlType::Str { len, .. } => *len,
        _ => 21,
    };
    let (f, t) = match name {
        "FORMAT" => (TextFunc::Format, str_type(first_len.saturating_add(40))),
        "INSERT" => (TextFunc::Insert, str_type(first_len.saturating_add(255))),
        "CHAR" => (
            TextFunc::Char,
            SqlType::Str {
                collation: Collation::Binary,
                len: u32::try_from(args.len() * 4).unwrap_or(u32::MAX),
            },
        ),
        "ORD" => (TextFunc::Ord, int_type()),
        "BIT_LENGTH" => (TextFunc::BitLength, int_type()),
        "QUOTE" => (TextFunc::Quote, str_type(first_len.saturating_mul(2) + 2)),
        "BIN" | "OCT" => {
            let base = if name == "BIN" { 2 } else { 8 };
            bound.push(Expr::Literal(Value::Int(10)));
            bound.push(Expr::Literal(Value::Int(base)));
            (TextFunc::Conv, str_type(64))
        }
        "CONV" => (TextFunc::Conv, str_type(64)),
        "SOUNDEX" => (TextFunc::Soundex, str_type(first_len.max(4))),
        "ISNULL" => (
            TextFunc::IsNull,
            SqlType::Int {
                unsigned: false,
                len: 1,
            },
        ),
        "CHARSET" | "COLLATION" => {
            let v = crate::coercibility::describe(binder, name, args[0], &first);
            return Ok((Expr::Literal(v), str_type(64)));
        }
        "COERCIBILITY" => {
            let v = crate::coercibility::describe(binder, name, args[0], &first);
            return Ok((Expr::Literal(v), int_type()));
        }
        _ => unreachable!("bind lists the names"),
    };
    Ok((Expr::Func(Func::Builtin(Builtin::Text(f)), bound), t))
}

fn text(s: String) -> Value {
    Value::Bytes(s.into_bytes())
}

/// Evaluates `f` over its argument values.
pub(crate) fn eval(f: TextFunc, args: &[Value]) -> Value {
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    match f {
        TextFunc::Format => format(arg(0), arg(1), args.get(2)),
        TextFunc::Insert => insert(arg(0), arg(1), arg(2), arg(3)),
        TextFunc::Char => char_fn(args),
        TextFunc::Ord => as_bytes(arg(0)).map_or(Value::Null, |b| Value::Int(ord(&b))),
        TextFunc::BitLength => {
            as_bytes(arg(0)).map_or(Value::Null, |b| Value::Int(b.len() as i64 * 8))
        }
        TextFunc::Quote => Value::Bytes(as_bytes(arg(0)).map_or_else(|| b"NULL".to_vec(), quote)),
        TextFunc::Conv => conv(arg(0), arg(1), arg(2)),
        TextFunc::Soundex => as_bytes(arg(0)).map_or(Value::Null, |b| text(soundex(&b))),
        TextFunc::IsNull => Value::Int(i64::from(matches!(arg(0), Value::Null))),
        TextFunc::AnyValue => arg(0).clone(),
    }
}

/// Rule 2.
fn format(x: &Value, d: &Value, locale: Option<&Value>) -> Value {
    let Some(d) = crate::value::to_i128(d) else {
        return Value::Null;
    };
    if matches!(x, Value::Null) {
        return Value::Null;
    }
    let d = d.clamp(0, 30) as usize;
    let digits = match x {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
            let rounded = crate::numeric_funcs::round(x, Some(&Value::Int(d as i64)), false);
            let s = crate::value::display(&rounded);
            pad_fraction(&s, d)
        }
        other => {
            let Some(f) = crate::value::to_f64(other) else {
                return Value::Null;
            };
            if !f.is_finite() {
                return Value::Null;
            }
            let scale = 10f64.powi(d as i32);
            let r = (f * scale).round() / scale;
            let r = if r.is_finite() { r } else { f };
            format!("{r:.d$}")
        }
    };
    let (point, sep) = match locale.and_then(crate::value::as_text).as_deref() {
        Some("de_DE") => (',', '.'),
        _ => ('.', ','),
    };
    text(group(&digits, point, sep))
}

/// `s` (a plain decimal number) with exactly `d` fraction digits.
fn pad_fraction(s: &str, d: usize) -> String {
    let (int_part, frac) = s.split_once('.').unwrap_or((s, ""));
    if d == 0 {
        return int_part.to_string();
    }
    let mut frac = frac.to_string();
    frac.truncate(d);
    while frac.len() < d {
        frac.push('0');
    }
    format!("{int_part}.{frac}")
}

fn group(digits: &str, point: char, sep: char) -> String {
    let (sign, rest) = match digits.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", digits),
    };
    let (int_part, frac) = rest.split_once('.').unwrap_or((rest, ""));
    let mut out = String::from(sign);
    for (i, c) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i) % 3 == 0 {
            out.push(sep);
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push(point);
        out.push_str(frac);
    }
    out
}

/// Rule 3.
fn insert(s: &Value, pos: &Value, len: &Value, new: &Value) -> Value {
    let (Some(s), Some(pos), Some(len), Some(new)) = (
        crate::value::as_text(s),
        crate::value::to_i128(pos),
        crate::value::to_i128(len),
        crate::value::as_text(new),
    ) else {
        return Value::Null;
    };
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i128;
    if pos < 1 || pos > n {
        return text(s);
    }
    let start = (pos - 1) as usize;
    let end = if len < 0 || (pos - 1).saturating_add(len) > n {
        chars.len()
    } else {
        (pos - 1 + len) as usize
    };
    let mut out: String = chars[..start].iter().collect();
    out.push_str(&new);
    out.extend(&chars[end..]);
    text(out)
}

/// Rule 4.
fn char_fn(args: &[Value]) -> Value {
    let mut out = Vec::with_capacity(args.len());
    for v in args {
        let Some(n) = crate::value::to_i128(v) else {
            continue;
        };
        // MySQL takes the value modulo 2^32.
        let n = (n & 0xFFFF_FFFF) as u32;
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take(3).take_while(|b| **b == 0).count();
        out.extend_from_slice(&bytes[skip..]);
    }
    Value::Bytes(out)
}

/// ORD(s): the first character's bytes as a big-endian number (its code for ASCII).
fn ord(b: &[u8]) -> i64 {
    let Some(&lead) = b.first() else {
        return 0;
    };
    let width = match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
    .min(b.len());
    b[..width]
        .iter()
        .fold(0i64, |acc, &x| acc * 256 + i64::from(x))
}

/// QUOTE(s): in single quotes, with `\`, `'`, NUL and Ctrl-Z escaped.
fn quote(b: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len() + 2);
    out.push(b'\'');
    for c in b {
        match c {
            b'\\' | b'\'' => out.extend_from_slice(&[b'\\', c]),
            0 => out.extend_from_slice(b"\\0"),
            0x1A => out.extend_from_slice(b"\\Z"),
            _ => out.push(c),
        }
    }
    out.push(b'\'');
    out
}

/// Rule 5.
fn conv(n: &Value, from: &Value, to: &Value) -> Value {
    let (Some(from), Some(to)) = (crate::value::to_i128(from), crate::value::to_i128(to)) else {
        return Value::Null;
    };
    if !(2..=36).contains(&from.unsigned_abs()) || !(2..=36).contains(&to.unsigned_abs()) {
        return Value::Null;
    }
    let digits = match n {
        Value::Null => return Value::Null,
        Value::Double(_) => match crate::value::to_f64(n) {
            // A double is truncated toward zero, as MySQL's integer conversion of it.
            Some(f) => format!("{}", f.trunc() as i128),
            None => return Value::Null,
        },
        other => match crate::value::as_text(other) {
            Some(s) => s,
            None => return Value::Null,
        },
    };
    let value = parse_in_base(digits.trim_start(), from.unsigned_abs() as u32, from < 0);
    text(show_in_base(value, to.unsigned_abs() as u32, to < 0))
}

/// The longest prefix of digits in `base` as 64 bits (two's complement for negatives).
fn parse_in_base(s: &str, base: u32, signed: bool) -> u64 {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut acc: u128 = 0;
    let mut overflow = false;
    for c in body.chars() {
        let Some(d) = c.to_digit(base) else {
            break;
        };
        acc = acc * u128::from(base) + u128::from(d);
        if acc > u128::from(u64::MAX) {
            overflow = true;
            acc = u128::from(u64::MAX);
        }
    }
    if signed {
        let limit = if negative {
            i64::MIN.unsigned_abs()
        } else {
            i64::MAX as u64
        };
        let magnitude = if overflow {
            limit
        } else {
            (acc as u64).min(limit)
        };
        if negative {
            magnitude.wrapping_neg()
        } else {
            magnitude
        }
    } else if overflow {
        u64::MAX
    } else if negative {
        (acc as u64).wrapping_neg()
    } else {
        acc as u64
    }
}

fn show_in_base(value: u64, base: u32, signed: bool) -> String {
    let (negative, mut magnitude) = if signed && (value as i64) < 0 {
        (true, (value as i64).unsigned_abs())
    } else {
        (false, value)
    };
    if magnitude == 0 {
        return "0".to_string();
    }
    let mut out = Vec::new();
    while magnitude > 0 {
        let d = (magnitude % u64::from(base)) as u32;
        out.push(
            char::from_digit(d, base)
                .unwrap_or('0')
                .to_ascii_uppercase(),
        );
        magnitude /= u64::from(base);
    }
    if negative {
        out.push('-');
    }
    out.iter().rev().collect()
}

/// Rule 6.
fn soundex(b: &[u8]) -> String {
    fn code(c: u8) -> u8 {
        match c {
            b'B' | b'F' | b'P' | b'V' => b'1',
            b'C' | b'G' | b'J' | b'K' | b'Q' | b'S' | b'X' | b'Z' => b'2',
            b'D' | b'T' => b'3',
            b'L' => b'4',
            b'M' | b'N' => b'5',
            b'R' => b'6',
            _ => b'0',
        }
    }
    let mut letters = b
        .iter()
        .filter(|c| c.is_ascii_alphabetic())
        .map(u8::to_ascii_uppercase);
    let Some(first) = letters.next() else {
        return String::new();
    };
    let mut out = vec![first];
    let mut last = code(first);
    for c in letters {
        let k = code(c);
        if k != b'0' && k != last {
            out.push(k);
            last = k;
        }
    }
    while out.len() < 4 {
        out.push(b'0');
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conv_signs() {
        assert_eq!(
            show_in_base(parse_in_base("-17", 10, false), 18, true),
            "-H"
        );
        assert_eq!(
            show_in_base(parse_in_base("a", 16, false), 2, false),
            "1010"
        );
        assert_eq!(
            show_in_base(parse_in_base("6E", 18, false), 8, false),
            "172"
        );
        assert_eq!(
            show_in_base(parse_in_base("-1", 10, false), 10, false),
            "18446744073709551615"
        );
        assert_eq!(
            show_in_base(parse_in_base("zz9", 10, false), 10, false),
            "0"
        );
    }

    #[test]
    fn grouping() {
        assert_eq!(group("-1234567.50", '.', ','), "-1,234,567.50");
        assert_eq!(group("123", '.', ','), "123");
        assert_eq!(group("12332.20", ',', '.'), "12.332,20");
    }
}
