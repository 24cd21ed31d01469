//! String functions (MySQL 8's semantics over utf8mb4 text; positions and lengths count
//! characters, 1-based) and the REGEXP family.
//!
//! Rules:
//! 1. A NULL argument gives NULL, except CONCAT_WS, which skips NULL values after the
//!    separator.
//! 2. Searches (LOCATE, INSTR, POSITION, STRCMP, REGEXP) follow the arguments' collation:
//!    case-insensitive under `utf8mb4_general_ci`. REPLACE is always case-sensitive, as
//!    MySQL's is.
//! 3. A result longer than `max_allowed_packet` (64 MiB) is NULL (MySQL adds warning 1301).
//! 4. Regular expressions use the `regex` crate, not ICU: no backreferences or look-around
//!    (3685 for such a pattern), and `$1` in a replacement names a group as ICU's does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;

use shale_table::{Collation, Value};

use crate::error::SqlError;
use crate::value::{as_text, to_i128};

/// Rule 3's limit.
const MAX_RESULT: usize = 64 << 20;

fn text(s: String) -> Value {
    Value::Bytes(s.into_bytes())
}

fn int_arg(v: &Value) -> Option<i64> {
    to_i128(v).map(|n| n.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// CONCAT_WS(separator, ...).
pub(crate) fn concat_ws(args: &[Value]) -> Value {
    let Some(sep) = args.first().and_then(as_bytes) else {
        return Value::Null;
    };
    let mut out = Vec::new();
    let mut first = true;
    for v in &args[1..] {
        let Some(b) = as_bytes(v) else {
            continue;
        };
        if !first {
            out.extend_from_slice(&sep);
        }
        first = false;
        out.extend_from_slice(&b);
    }
    Value::Bytes(out)
}

/// The value's bytes as text (numbers as MySQL prints them); None for NULL.
pub(crate) fn as_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => None,
        Value::Bytes(b) => Some(b.clone()),
        other => Some(crate::value::display(other).into_bytes()),
    }
}

/// SUBSTRING(s, pos[, len]): a negative `pos` counts from the end; 0 gives ''.
pub(crate) fn substring(s: &Value, pos: &Value, len: Option<&Value>) -> Value {
    let (Some(s), Some(pos)) = (as_text(s), int_arg(pos)) else {
        return Value::Null;
    };
    let len = match len {
        Some(l) => match int_arg(l) {
            Some(l) => l,
            None => return Value::Null,
        },
        None => i64::MAX,
    };
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i64;
    let start = match pos {
        0 => return text(String::new()),
        p if p > 0 => p - 1,
        p => n + p,
    };
    if start < 0 || start >= n || len <= 0 {
        return text(String::new());
    }
    let end = start.saturating_add(len).min(n);
    text(chars[start as usize..end as usize].iter().collect())
}

/// LEFT(s, n) and RIGHT(s, n).
pub(crate) fn left_right(s: &Value, n: &Value, right: bool) -> Value {
    let (Some(s), Some(n)) = (as_text(s), int_arg(n)) else {
        return Value::Null;
    };
    let count = s.chars().count() as i64;
    let keep = n.clamp(0, count) as usize;
    if right {
        text(s.chars().skip(count as usize - keep).collect())
    } else {
        text(s.chars().take(keep).collect())
    }
}

/// Which ends TRIM removes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrimSide {
    Both,
    Leading,
    Trailing,
}

/// TRIM([side] [remstr FROM] s), LTRIM, RTRIM: every whole repetition of `remstr`.
pub(crate) fn trim(s: &Value, remstr: Option<&Value>, side: TrimSide) -> Value {
    let Some(mut s) = as_bytes(s) else {
        return Value::Null;
    };
    let rem = match remstr {
        Some(r) => match as_bytes(r) {
            Some(r) => r,
            None => return Value::Null,
        },
        None => b" ".to_vec(),
    };
    if rem.is_empty() {
        return Value::Bytes(s);
    }
    if side != TrimSide::Trailing {
        let mut start = 0;
        while s[start..].starts_with(&rem) {
            start += rem.len();
        }
        s.drain(..start);
    }
    if side != TrimSide::Leading {
        while s.ends_with(&rem) {
            s.truncate(s.len() - rem.len());
        }
    }
    Value::Bytes(s)
}

/// REPLACE(s, from, to), case-sensitive (rule 2).
pub(crate) fn replace(s: &Value, from: &Value, to: &Value) -> Value {
    let (Some(s), Some(from), Some(to)) = (as_text(s), as_text(from), as_text(to)) else {
        return Value::Null;
    };
    if from.is_empty() {
        return text(s);
    }
    let out = s.replace(&from, &to);
    if out.len() > MAX_RESULT {
        return Value::Null;
    }
    text(out)
}

fn fold(s: &str, collation: Collation) -> Vec<char> {
    if collation == Collation::Utf8mb4GeneralCi {
        s.chars().flat_map(char::to_lowercase).collect()
    } else {
        s.chars().collect()
    }
}

/// LOCATE(needle, haystack[, pos]) (INSTR and POSITION swap or drop arguments): the 1-based
/// character position of the first match at or after `pos`, 0 for none.
pub(crate) fn locate(needle: &Value, hay: &Value, pos: Option<&Value>, c: Collation) -> Value {
    let (Some(needle), Some(hay)) = (as_text(needle), as_text(hay)) else {
        return Value::Null;
    };
    let from = match pos {
        Some(p) => match int_arg(p) {
            Some(p) if p >= 1 => p as usize - 1,
            Some(_) => return Value::Int(0),
            None => return Value::Null,
        },
        None => 0,
    };
    // Case folding keeps one char per char for the Latin letters general_ci folds here;
    // where it would not, the folded text is searched as a whole.
    let (n, h) = (fold(&needle, c), fold(&hay, c));
    if from > h.len() {
        return Value::Int(0);
    }
    if n.is_empty() {
        return Value::Int(from as i64 + 1);
    }
    let found = h[from..]
        .windows(n.len())
        .position(|w| w == n.as_slice())
        .map_or(0, |i| i + from + 1);
    Value::Int(found as i64)
}

/// LPAD(s, len, pad) and RPAD: `s` cut or padded to `len` characters.
pub(crate) fn pad(s: &Value, len: &Value, padding: &Value, left: bool) -> Value {
    let (Some(s), Some(len), Some(padding)) = (as_text(s), int_arg(len), as_text(padding)) else {
        return Value::Null;
    };
    if len < 0 || len as usize > MAX_RESULT {
        return Value::Null;
    }
    let len = len as usize;
    let chars: Vec<char> = s.chars().collect();
    if chars.len() >= len {
        return text(chars[..len].iter().collect());
    }
    if padding.is_empty() {
        return Value::Null;
    }
    let fill: String = padding.chars().cycle().take(len - chars.len()).collect();
    text(if left { fill + &s } else { s + &fill })
}

/// REPEAT(s, n).
pub(crate) fn repeat(s: &Value, n: &Value) -> Value {
    let (Some(s), Some(n)) = (as_bytes(s), int_arg(n)) else {
        return Value::Null;
    };
    let n = n.max(0) as usize;
    if s.len().saturating_mul(n) > MAX_RESULT {
        return Value::Null;
    }
    Value::Bytes(s.repeat(n))
}

/// SUBSTRING_INDEX(s, delim, count): the text before the count-th `delim` (from the right
/// for a negative count), case-sensitive; all of `s` when there are fewer.
pub(crate) fn substring_index(s: &Value, delim: &Value, count: &Value) -> Value {
    let (Some(s), Some(delim), Some(count)) = (as_text(s), as_text(delim), int_arg(count)) else {
        return Value::Null;
    };
    if delim.is_empty() || count == 0 {
        return text(String::new());
    }
    let n = count.unsigned_abs() as usize;
    let cut = if count > 0 {
        s.match_indices(&delim)
            .nth(n - 1)
            .map(|(i, _)| s[..i].to_string())
    } else {
        s.rmatch_indices(&delim)
            .nth(n - 1)
            .map(|(i, _)| s[i + delim.len()..].to_string())
    };
    text(cut.unwrap_or(s))
}

/// FIELD(x, a, b, ...): the 1-based position of the first argument equal to `x` in the
/// collation, 0 when none (or `x` is NULL).
pub(crate) fn field(args: &[Value], c: Collation) -> Value {
    let Some((x, rest)) = args.split_first() else {
        return Value::Int(0);
    };
    if matches!(x, Value::Null) {
        return Value::Int(0);
    }
    let at = rest
        .iter()
        .position(|v| crate::value::compare(x, v, c) == Some(std::cmp::Ordering::Equal));
    Value::Int(at.map_or(0, |i| i as i64 + 1))
}

/// ELT(n, a, b, ...): the n-th of the rest, NULL out of range.
pub(crate) fn elt(args: &[Value]) -> Value {
    match args.first().and_then(int_arg) {
        Some(n) if n >= 1 => args.get(n as usize).cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// SPACE(n).
pub(crate) fn space(n: &Value) -> Value {
    repeat(&Value::Bytes(b" ".to_vec()), n)
}

/// REVERSE(s), by characters.
pub(crate) fn reverse(s: &Value) -> Value {
    as_text(s).map_or(Value::Null, |s| text(s.chars().rev().collect()))
}

/// HEX(x): an integer's digits (negative ones as 64-bit two's complement), else the bytes.
pub(crate) fn hex(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Int(i) => text(format!("{:X}", *i as u64)),
        Value::UInt(u) => text(format!("{u:X}")),
        Value::Double(_) | Value::Decimal(_) => match to_i128(v) {
            Some(n) => text(format!(
                "{:X}",
                n.clamp(i128::from(i64::MIN), i128::from(u64::MAX)) as u64
            )),
            None => Value::Null,
        },
        other => {
            let bytes = as_bytes(other).unwrap_or_default();
            let mut out = String::with_capacity(bytes.len() * 2);
            for b in bytes {
                let _ = write!(out, "{b:02X}");
            }
            text(out)
        }
    }
}

/// UNHEX(s): NULL when `s` holds a non-hex digit.
pub(crate) fn unhex(v: &Value) -> Value {
    let Some(s) = as_bytes(v) else {
        return Value::Null;
    };
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(s.len() / 2 + 1);
    let mut iter = s.iter().copied();
    if s.len() % 2 == 1 {
        match iter.next().and_then(digit) {
            Some(d) => out.push(d),
            None => return Value::Null,
        }
    }
    while let (Some(a), Some(b)) = (iter.next(), iter.next()) {
        match (digit(a), digit(b)) {
            (Some(a), Some(b)) => out.push(a << 4 | b),
            _ => return Value::Null,
        }
    }
    Value::Bytes(out)
}

/// ASCII(s): the first byte, 0 for ''.
pub(crate) fn ascii(v: &Value) -> Value {
    as_bytes(v).map_or(Value::Null, |b| {
        Value::Int(i64::from(b.first().copied().unwrap_or(0)))
    })
}

/// STRCMP(a, b) in the collation: -1, 0 or 1.
pub(crate) fn strcmp(a: &Value, b: &Value, c: Collation) -> Value {
    let (Some(a), Some(b)) = (as_bytes(a), as_bytes(b)) else {
        return Value::Null;
    };
    Value::Int(match crate::value::compare_str(&a, &b, c) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })
}

thread_local! {
    static REGEX_CACHE: RefCell<HashMap<(String, u8), regex::Regex>> = RefCell::new(HashMap::new());
}

fn regex_error(detail: &str) -> SqlError {
    let _ = detail;
    SqlError::new(3685, "HY000", "Illegal argument to a regular expression.")
}

/// Compiles (and caches per thread) `pattern` with MySQL's match type letters applied to
/// the collation's default: `c` case-sensitive, `i` insensitive, `m` multi-line, `n` `.`
/// matches line ends, `u` accepted (Unix line endings are the only kind here).
fn compile(
    pattern: &str,
    collation: Collation,
    match_type: &str,
) -> Result<regex::Regex, SqlError> {
    let mut ci = collation == Collation::Utf8mb4GeneralCi;
    let (mut multi, mut dot_all) = (false, false);
    for c in match_type.chars() {
        match c {
            'c' => ci = false,
            'i' => ci = true,
            'm' => multi = true,
            'n' => dot_all = true,
            'u' => {}
            _ => {
                return Err(SqlError::new(
                    1210,
                    "HY000",
                    "Incorrect arguments to regexp",
                ))
            }
        }
    }
    let flags = u8::from(ci) | u8::from(multi) << 1 | u8::from(dot_all) << 2;
    let key = (pattern.to_string(), flags);
    if let Some(r) = REGEX_CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(r);
    }
    let re = regex::RegexBuilder::new(pattern)
        .case_insensitive(ci)
        .multi_line(multi)
        .dot_matches_new_line(dot_all)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| regex_error(&e.to_string()))?;
    REGEX_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 64 {
            c.clear();
        }
        c.insert(key, re.clone());
    });
    Ok(re)
}

/// An optional argument's text: `Some(None)` when absent, None when NULL.
#[allow(clippy::option_option)]
fn opt_text(v: Option<&Value>) -> Option<Option<String>> {
    match v {
        None => Some(None),
        Some(v) => as_text(v).map(Some),
    }
}

/// `s REGEXP pattern` and REGEXP_LIKE(s, pattern[, match_type]).
pub(crate) fn regexp_like(
    s: &Value,
    pattern: &Value,
    match_type: Option<&Value>,
    c: Collation,
) -> Result<Value, SqlError> {
    let (Some(s), Some(p), Some(mt)) = (as_text(s), as_text(pattern), opt_text(match_type)) else {
        return Ok(Value::Null);
    };
    let re = compile(&p, c, mt.as_deref().unwrap_or(""))?;
    Ok(Value::Int(i64::from(re.is_match(&s))))
}

/// The byte offset of character `pos` (1-based) of `s`; None past its end + 1.
fn char_offset(s: &str, pos: i64) -> Option<usize> {
    if pos < 1 {
        return None;
    }
    let n = (pos - 1) as usize;
    if n == s.chars().count() {
        return Some(s.len());
    }
    s.char_indices().nth(n).map(|(i, _)| i)
}

fn out_of_range() -> SqlError {
    SqlError::new(
        3686,
        "HY000",
        "Index out of bounds in regular expression search.",
    )
}

/// REGEXP_REPLACE(s, pattern, replacement[, pos[, occurrence[, match_type]]]):
/// occurrence 0 replaces every match from `pos` on.
pub(crate) fn regexp_replace(args: &[Value], c: Collation) -> Result<Value, SqlError> {
    let (Some(s), Some(p), Some(repl)) = (
        args.first().and_then(as_text),
        args.get(1).and_then(as_text),
        args.get(2).and_then(as_text),
    ) else {
        return Ok(Value::Null);
    };
    let (pos, occurrence) = match (args.get(3).map(int_arg), args.get(4).map(int_arg)) {
        (Some(None), _) | (_, Some(None)) => return Ok(Value::Null),
        (p, o) => (p.flatten().unwrap_or(1), o.flatten().unwrap_or(0)),
    };
    let Some(mt) = opt_text(args.get(5)) else {
        return Ok(Value::Null);
    };
    let re = compile(&p, c, mt.as_deref().unwrap_or(""))?;
    let start = char_offset(&s, pos).ok_or_else(out_of_range)?;
    let (head, tail) = s.split_at(start);
    let replaced = if occurrence <= 0 {
        re.replace_all(tail, repl.as_str()).into_owned()
    } else {
        match re.find_iter(tail).nth(occurrence as usize - 1) {
            None => tail.to_string(),
            Some(m) => {
                let mut out = tail[..m.start()].to_string();
                let caps = re.captures_at(tail, m.start());
                match caps {
                    Some(caps) => caps.expand(&repl, &mut out),
                    None => out.push_str(&repl),
                }
                out.push_str(&tail[m.end()..]);
                out
            }
        }
    };
    Ok(text(format!("{head}{replaced}")))
}

/// REGEXP_SUBSTR(s, pattern[, pos[, occurrence[, match_type]]]) and, with `instr`,
/// REGEXP_INSTR(s, pattern[, pos[, occurrence[, return_option[, match_type]]]]).
pub(crate) fn regexp_find(args: &[Value], c: Collation, instr: bool) -> Result<Value, SqlError> {
    let (Some(s), Some(p)) = (
        args.first().and_then(as_text),
        args.get(1).and_then(as_text),
    ) else {
        return Ok(Value::Null);
    };
    let pos = match args.get(2).map(int_arg) {
        Some(None) => return Ok(Value::Null),
        p => p.flatten().unwrap_or(1),
    };
    let occurrence = match args.get(3).map(int_arg) {
        Some(None) => return Ok(Value::Null),
        o => o.flatten().unwrap_or(1).max(1),
    };
    let (return_end, mt_at) = if instr {
        match args.get(4).map(int_arg) {
            Some(None) => return Ok(Value::Null),
            Some(Some(r)) if r != 0 && r != 1 => {
                return Err(SqlError::new(
                    3685,
                    "HY000",
                    "Incorrect arguments to regexp_instr: return_option must be 1 or 0.",
                ))
            }
            r => (r.flatten() == Some(1), 5),
        }
    } else {
        (false, 4)
    };
    let Some(mt) = opt_text(args.get(mt_at)) else {
        return Ok(Value::Null);
    };
    let re = compile(&p, c, mt.as_deref().unwrap_or(""))?;
    let start = char_offset(&s, pos).ok_or_else(out_of_range)?;
    let found = re.find_iter(&s[start..]).nth(occurrence as usize - 1);
    Ok(match (found, instr) {
        (None, false) => Value::Null,
        (None, true) => Value::Int(0),
        (Some(m), false) => text(m.as_str().to_string()),
        (Some(m), true) => {
            let at = start + if return_end { m.end() } else { m.start() };
            Value::Int(s[..at].chars().count() as i64 + 1)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }
    #[allow(clippy::needless_pass_by_value)] // takes the calls' results directly
    fn show(v: Value) -> String {
        crate::value::display(&v)
    }
    const CI: Collation = Collation::Utf8mb4GeneralCi;

    #[test]
    fn substrings() {
        let i = Value::Int;
        // MySQL's manual examples.
        assert_eq!(
            show(substring(&b("Quadratically"), &i(5), None)),
            "ratically"
        );
        assert_eq!(
            show(substring(&b("Quadratically"), &i(5), Some(&i(6)))),
            "ratica"
        );
        assert_eq!(show(substring(&b("Sakila"), &i(-3), None)), "ila");
        assert_eq!(show(substring(&b("Sakila"), &i(-5), Some(&i(3)))), "aki");
        assert_eq!(show(substring(&b("Sakila"), &i(0), None)), "");
        assert_eq!(show(substring(&b("héllo"), &i(2), Some(&i(2)))), "él");
        assert_eq!(show(left_right(&b("foobarbar"), &i(5), false)), "fooba");
        assert_eq!(show(left_right(&b("foobarbar"), &i(4), true)), "rbar");
        assert_eq!(
            show(trim(&b("xxxbarxxx"), Some(&b("x")), TrimSide::Leading)),
            "barxxx"
        );
        assert_eq!(
            show(trim(&b("barxxyz"), Some(&b("xyz")), TrimSide::Trailing)),
            "barx"
        );
        assert_eq!(show(trim(&b("  bar   "), None, TrimSide::Both)), "bar");
        assert_eq!(
            show(replace(&b("www.mysql.com"), &b("w"), &b("Ww"))),
            "WwWwWw.mysql.com"
        );
        assert_eq!(
            show(locate(&b("BAR"), &b("foobarbar"), Some(&i(5)), CI)),
            "7"
        );
        assert_eq!(show(locate(&b("xbar"), &b("foobar"), None, CI)), "0");
        assert_eq!(show(pad(&b("hi"), &i(4), &b("??"), true)), "??hi");
        assert_eq!(show(pad(&b("hi"), &i(1), &b("??"), false)), "h");
        assert_eq!(show(pad(&b("hi"), &i(5), &b(""), false)), "NULL");
        assert_eq!(show(repeat(&b("ab"), &i(3))), "ababab");
        assert_eq!(show(reverse(&b("abc"))), "cba");
        assert_eq!(show(hex(&i(255))), "FF");
        assert_eq!(show(hex(&i(-1))), "FFFFFFFFFFFFFFFF");
        assert_eq!(show(hex(&b("abc"))), "616263");
        assert_eq!(show(unhex(&b("4D7953514C"))), "MySQL");
        assert_eq!(show(unhex(&b("GG"))), "NULL");
        assert_eq!(show(concat_ws(&[b(","), b("a"), Value::Null, i(3)])), "a,3");
    }

    #[test]
    fn regexps() {
        let i = Value::Int;
        assert_eq!(
            show(regexp_like(&b("CamelCase"), &b("^camel"), None, CI).unwrap()),
            "1"
        );
        assert_eq!(
            show(regexp_like(&b("CamelCase"), &b("^camel"), Some(&b("c")), CI).unwrap()),
            "0"
        );
        assert_eq!(
            show(regexp_replace(&[b("a b c"), b("b"), b("X")], CI).unwrap()),
            "a X c"
        );
        assert_eq!(
            show(regexp_replace(&[b("abc def ghi"), b("[a-z]+"), b("X"), i(1), i(3)], CI).unwrap()),
            "abc def X"
        );
        assert_eq!(
            show(regexp_find(&[b("abc def ghi"), b("[a-z]+"), i(1), i(3)], CI, false).unwrap()),
            "ghi"
        );
        assert_eq!(
            show(regexp_find(&[b("dog cat dog"), b("dog"), i(2)], CI, true).unwrap()),
            "9"
        );
        assert_eq!(
            regexp_like(&b("x"), &b("("), None, CI).unwrap_err().code,
            3685
        );
        assert_eq!(
            regexp_find(&[b("abc"), b("a"), i(9)], CI, false)
                .unwrap_err()
                .code,
            3686
        );
    }
}
