//! Network address functions: INET_ATON, INET_NTOA, INET6_ATON, INET6_NTOA, IS_IPV4,
//! IS_IPV6, IS_IPV4_COMPAT and IS_IPV4_MAPPED.
//!
//! Rules (MySQL 8's, checked against MariaDB 10.11, whose functions share MySQL's design):
//! 1. INET_ATON reads digits and dots only: each dot shifts the number by 8 bits, a part
//!    past 255, any other character, an empty text or a trailing dot gives NULL. Short forms
//!    fill zeros before the last part (`127.1` is 127.0.0.1), and more than four parts keep
//!    shifting (a number past 32 bits), as MySQL.
//! 2. INET_NTOA(n) is NULL unless 0 <= n <= 2^32 - 1 (n rounded to an integer).
//! 3. An IPv4 text (INET6_ATON, IS_IPV4, and the tail of an IPv6 text) is exactly four
//!    decimal parts of 1 to 3 digits, each at most 255 (leading zeros allowed). An IPv6 text
//!    is 8 groups of 1 to 4 hex digits, at most one `::` standing for one or more zero
//!    groups, optionally ending in an IPv4 text for the last two groups; no zone (`%eth0`),
//!    no spaces. INET6_ATON gives 4 bytes for IPv4 and 16 for IPv6, NULL for anything else.
//! 4. INET6_NTOA takes exactly 4 or 16 bytes (else NULL). IPv6 is lowercase hex, with the
//!    first longest run of zero groups (even a single one) written `::`; when that run is
//!    the first 6 groups, or the first 5 followed by `ffff`, the last 4 bytes are written as
//!    IPv4 (`::1.2.3.4`, `::ffff:1.2.3.4`).
//! 5. IS_IPV4_COMPAT(b) is 1 for 16 bytes whose first 12 are zero and whose last 4 are
//!    neither 0.0.0.0 nor 0.0.0.1 (`::` and `::1`); IS_IPV4_MAPPED(b) for 16 bytes starting
//!    with 10 zeros and `ff ff`. The IS_ functions give 0, never NULL, for a NULL argument.
//! 6. INET6_NTOA, IS_IPV4_COMPAT and IS_IPV4_MAPPED read binary strings only: an argument
//!    bound as text (a quoted literal, a text column) gives NULL and 0, as MySQL.

use std::fmt::Write as _;

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
pub(crate) enum InetFunc {
    InetAton,
    InetNtoa,
    Inet6Aton,
    /// `binary`: whether the argument may be a binary string (rule 6).
    Inet6Ntoa {
        binary: bool,
    },
    IsIpv4,
    IsIpv6,
    IsIpv4Compat {
        binary: bool,
    },
    IsIpv4Mapped {
        binary: bool,
    },
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let flag = SqlType::Int {
        unsigned: false,
        len: 1,
    };
    let (f, t) = match name {
        "INET_ATON" => (
            InetFunc::InetAton,
            SqlType::Int {
                unsigned: true,
                len: 21,
            },
        ),
        "INET_NTOA" => (
            InetFunc::InetNtoa,
            SqlType::Str {
                collation: Collation::Utf8mb4GeneralCi,
                len: 15,
            },
        ),
        "INET6_ATON" => (
            InetFunc::Inet6Aton,
            SqlType::Str {
                collation: Collation::Binary,
                len: 16,
            },
        ),
        "INET6_NTOA" => (
            InetFunc::Inet6Ntoa { binary: true },
            SqlType::Str {
                collation: Collation::Utf8mb4GeneralCi,
                len: 39,
            },
        ),
        "IS_IPV4" => (InetFunc::IsIpv4, flag),
        "IS_IPV6" => (InetFunc::IsIpv6, flag),
        "IS_IPV4_COMPAT" => (InetFunc::IsIpv4Compat { binary: true }, flag),
        "IS_IPV4_MAPPED" => (InetFunc::IsIpv4Mapped { binary: true }, flag),
        _ => return None,
    };
    let [arg] = args else {
        return Some(Err(crate::builtin::wrong_count(name)));
    };
    Some(binder.expr(arg).map(|(e, ty)| {
        let f = with_argument_kind(f, &e, &ty);
        (Expr::Func(Func::Builtin(Builtin::Inet(f)), vec![e]), t)
    }))
}

/// Rule 6: whether the argument can hold a binary string. Parameters and variables carry
/// no fixed character set, so they count as binary.
fn with_argument_kind(f: InetFunc, e: &Expr, ty: &SqlType) -> InetFunc {
    let text = matches!(ty, SqlType::Str { collation, .. } if *collation != Collation::Binary)
        && !matches!(
            e,
            Expr::Param(_) | Expr::UserVar(_) | Expr::UserVarPerRow(_) | Expr::SysVar(_)
        );
    let binary = !text;
    match f {
        InetFunc::Inet6Ntoa { .. } => InetFunc::Inet6Ntoa { binary },
        InetFunc::IsIpv4Compat { .. } => InetFunc::IsIpv4Compat { binary },
        InetFunc::IsIpv4Mapped { .. } => InetFunc::IsIpv4Mapped { binary },
        other => other,
    }
}

/// Evaluates `f` over its argument.
pub(crate) fn eval(f: InetFunc, arg: &Value) -> Value {
    let flag = |b: bool| Value::Int(i64::from(b));
    let bytes = as_bytes(arg);
    match f {
        InetFunc::InetAton => bytes
            .and_then(|b| inet_aton(&b))
            .map_or(Value::Null, Value::UInt),
        InetFunc::InetNtoa => inet_ntoa(arg),
        InetFunc::Inet6Aton => bytes
            .and_then(|b| {
                parse_ipv4(&b)
                    .map(|a| a.to_vec())
                    .or_else(|| parse_ipv6(&b).map(|a| a.to_vec()))
            })
            .map_or(Value::Null, Value::Bytes),
        InetFunc::Inet6Ntoa { binary } => bytes
            .filter(|_| binary)
            .and_then(|b| format_address(&b))
            .map_or(Value::Null, |s| Value::Bytes(s.into_bytes())),
        InetFunc::IsIpv4 => flag(bytes.is_some_and(|b| parse_ipv4(&b).is_some())),
        InetFunc::IsIpv6 => flag(bytes.is_some_and(|b| parse_ipv6(&b).is_some())),
        InetFunc::IsIpv4Compat { binary } => flag(
            binary
                && bytes.is_some_and(|b| {
                    b.len() == 16 && b[..12].iter().all(|&x| x == 0) && b[12..] > [0, 0, 0, 1][..]
                }),
        ),
        InetFunc::IsIpv4Mapped { binary } => flag(
            binary
                && bytes.is_some_and(|b| {
                    b.len() == 16 && b[..10].iter().all(|&x| x == 0) && b[10..12] == [0xff, 0xff]
                }),
        ),
    }
}

/// Rule 1.
fn inet_aton(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.ends_with(b".") {
        return None;
    }
    let (mut result, mut part, mut dots) = (0u64, 0u64, 0u32);
    for &c in text {
        match c {
            b'0'..=b'9' => {
                part = part * 10 + u64::from(c - b'0');
                if part > 255 {
                    return None;
                }
            }
            b'.' => {
                dots += 1;
                result = result.checked_shl(8)?.checked_add(part)?;
                part = 0;
            }
            _ => return None,
        }
    }
    // Short forms: the missing parts are zeros before the last one.
    if dots < 3 {
        result <<= 8 * (3 - dots);
    }
    result.checked_shl(8)?.checked_add(part)
}

/// Rule 2.
fn inet_ntoa(v: &Value) -> Value {
    let n = match v {
        Value::Null => return Value::Null,
        Value::Double(d) => {
            let r = d.round();
            if !(0.0..=4_294_967_295.0).contains(&r) {
                return Value::Null;
            }
            crate::value::to_i128(&Value::Double(r))
        }
        other => crate::value::to_i128(other),
    };
    match n.and_then(|n| u32::try_from(n).ok()) {
        Some(n) => Value::Bytes(std::net::Ipv4Addr::from(n).to_string().into_bytes()),
        None => Value::Null,
    }
}

/// Rule 3: four decimal parts.
fn parse_ipv4(text: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = text.split(|&c| c == b'.');
    for slot in &mut out {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = part.iter().fold(0u32, |n, &c| n * 10 + u32::from(c - b'0'));
        *slot = u8::try_from(n).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// Rule 3: up to 8 hex groups around at most one `::`, maybe ending in IPv4.
fn parse_ipv6(text: &[u8]) -> Option<[u8; 16]> {
    fn groups(side: &[u8], allow_ipv4_tail: bool) -> Option<Vec<u16>> {
        if side.is_empty() {
            return Some(Vec::new());
        }
        let pieces: Vec<&[u8]> = side.split(|&c| c == b':').collect();
        let mut out = Vec::with_capacity(8);
        for (i, piece) in pieces.iter().enumerate() {
            if allow_ipv4_tail && i + 1 == pieces.len() && piece.contains(&b'.') {
                let v4 = parse_ipv4(piece)?;
                out.push(u16::from_be_bytes([v4[0], v4[1]]));
                out.push(u16::from_be_bytes([v4[2], v4[3]]));
                continue;
            }
            if piece.is_empty() || piece.len() > 4 || !piece.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(piece).ok()?;
            out.push(u16::from_str_radix(hex, 16).ok()?);
        }
        Some(out)
    }
    let gap = text.windows(2).position(|w| w == b"::");
    let words = match gap {
        Some(at) => {
            let (head, tail) = (&text[..at], &text[at + 2..]);
            if tail.windows(2).any(|w| w == b"::") {
                return None;
            }
            let head = groups(head, false)?;
            let tail = groups(tail, true)?;
            if head.len() + tail.len() > 7 {
                return None;
            }
            let mut all = head;
            all.resize(8 - tail.len(), 0);
            all.extend(tail);
            all
        }
        None => {
            let all = groups(text, true)?;
            if all.len() != 8 {
                return None;
            }
            all
        }
    };
    let mut out = [0u8; 16];
    for (i, w) in words.iter().enumerate() {
        out[2 * i..2 * i + 2].copy_from_slice(&w.to_be_bytes());
    }
    Some(out)
}

/// Rule 4.
fn format_address(b: &[u8]) -> Option<String> {
    if let Ok(v4) = <[u8; 4]>::try_from(b) {
        return Some(std::net::Ipv4Addr::from(v4).to_string());
    }
    let b: [u8; 16] = b.try_into().ok()?;
    let words: Vec<u16> = b
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    // The first longest run of zero words.
    let (mut best_at, mut best_len) = (0, 0);
    let mut i = 0;
    while i < 8 {
        if words[i] == 0 {
            let start = i;
            while i < 8 && words[i] == 0 {
                i += 1;
            }
            if i - start > best_len {
                (best_at, best_len) = (start, i - start);
            }
        } else {
            i += 1;
        }
    }
    let ipv4_tail = best_at == 0 && (best_len == 6 || (best_len == 5 && words[5] == 0xffff));
    let mut out = String::with_capacity(39);
    let mut i = 0;
    while i < 8 {
        if best_len > 0 && i == best_at {
            out.push_str("::");
            i += best_len;
            continue;
        }
        if ipv4_tail && i == 6 {
            if !out.ends_with(':') {
                out.push(':');
            }
            let _ = write!(out, "{}.{}.{}.{}", b[12], b[13], b[14], b[15]);
            break;
        }
        if !out.is_empty() && !out.ends_with(':') {
            out.push(':');
        }
        let _ = write!(out, "{:x}", words[i]);
        i += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ntoa6(text: &str) -> String {
        let b = parse_ipv6(text.as_bytes()).expect("valid");
        format_address(&b).expect("16 bytes")
    }

    #[test]
    fn ipv6_text_round_trips_in_mysql_form() {
        assert_eq!(
            ntoa6("fdfe::5a55:caff:fefa:9089"),
            "fdfe::5a55:caff:fefa:9089"
        );
        assert_eq!(ntoa6("::1.2.3.4"), "::1.2.3.4");
        assert_eq!(ntoa6("::ffff:1.2.3.4"), "::ffff:1.2.3.4");
        assert_eq!(ntoa6("::ffff:0:0"), "::ffff:0.0.0.0");
        assert_eq!(ntoa6("::1"), "::1");
        assert_eq!(ntoa6("::"), "::");
        assert_eq!(ntoa6("1:0:0:2:0:0:0:3"), "1:0:0:2::3");
        assert_eq!(ntoa6("1:0:2:3:4:5:6:7"), "1::2:3:4:5:6:7");
        assert_eq!(ntoa6("1:0:0:2:0:0:3:4"), "1::2:0:0:3:4");
        assert_eq!(ntoa6("::0.0.1.2"), "::102");
        assert_eq!(ntoa6("ABCD::"), "abcd::");
        assert_eq!(ntoa6("1:2:3:4:5:6:7:8"), "1:2:3:4:5:6:7:8");
    }

    #[test]
    fn ipv6_parser_refuses_what_mysql_refuses() {
        for bad in [
            "1.2.3.4",
            "fe80::1%eth0",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            ":1",
            "00001::",
            "1:2:3:4:5:6:7:8::",
            "1:2:3:4:5:6:7::8",
            "1.2.3.4::",
            "::1.2.3.4:1",
            ":::",
            " ::1",
            "",
        ] {
            assert!(parse_ipv6(bad.as_bytes()).is_none(), "{bad}");
        }
        for good in [
            "1:2:3:4:5:6:1.2.3.4",
            "::01.2.3.4",
            "0001::",
            "1:2:3:4:5:6:7::",
            "::1:2:3:4:5:6:7",
        ] {
            assert!(parse_ipv6(good.as_bytes()).is_some(), "{good}");
        }
    }

    #[test]
    fn inet_aton_follows_mysql_short_forms() {
        let aton = |s: &str| inet_aton(s.as_bytes());
        assert_eq!(aton("10.0.5.9"), Some(167_773_449));
        assert_eq!(aton("127.1"), Some(2_130_706_433));
        assert_eq!(aton("127.2.1"), Some(2_130_837_505));
        assert_eq!(aton("1.2.3.4.5"), Some(4_328_719_365));
        assert_eq!(aton("1..2"), Some(16_777_218));
        assert_eq!(aton("17"), Some(17));
        for bad in ["1.2.3.256", "", "1.2.3.", " 1.2.3.4"] {
            assert_eq!(aton(bad), None, "{bad}");
        }
    }
}
