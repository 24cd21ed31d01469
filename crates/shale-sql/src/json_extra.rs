//! JSON_PRETTY, JSON_SEARCH and JSON_STORAGE_SIZE (json_funcs.rs's rules 1 to 3 apply:
//! text arguments are parsed as documents, 3141 when they are not JSON, 3146 for a number).
//!
//! Rules (MySQL 8's):
//! 1. JSON_PRETTY prints each array element and object member on its own line, indented by
//!    two spaces per level, `"key": value`; empty arrays and objects stay `[]` and `{}`.
//! 2. JSON_SEARCH(doc, 'one' | 'all', pattern[, escape[, path ...]]) finds the string
//!    scalars matching the LIKE pattern (`%`, `_`, the escape character, `\` when it is NULL
//!    or absent), compared in utf8mb4_general_ci as MariaDB does (MySQL compares with a LIKE
//!    whose collation comes from its arguments), in document order (object members
//!    in their stored key order); within the given paths only, when some are given. 'one':
//!    the first match's path; 'all': that path alone when there is one match, else an array
//!    of them; no match: NULL. Another mode is 3154; an escape of more than one character
//!    1210. A NULL document, mode, pattern or path gives NULL.
//! 3. JSON_STORAGE_SIZE is the size of MySQL's binary JSON form of the document: what MySQL
//!    reports for a value that was never partially updated (Shale stores documents as text,
//!    docs/format/rows.md, so this is MySQL's figure, not Shale's storage).

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::error::SqlError;
use crate::expr::{Expr, Func};
use crate::json::{self, Json};
use crate::json_path::JsonPath;
use crate::types::SqlType;

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonExtra {
    Pretty,
    Search,
    StorageSize,
}

/// Names, argument counts and result types; None for a name not of this module.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let (f, min, max, t) = match name {
        "JSON_PRETTY" => (
            JsonExtra::Pretty,
            1,
            1,
            SqlType::Str {
                collation: Collation::Utf8mb4Bin,
                len: 65_535,
            },
        ),
        "JSON_SEARCH" => (JsonExtra::Search, 3, usize::MAX, SqlType::Json),
        "JSON_STORAGE_SIZE" => (
            JsonExtra::StorageSize,
            1,
            1,
            SqlType::Int {
                unsigned: false,
                len: 21,
            },
        ),
        _ => return None,
    };
    if args.len() < min || args.len() > max {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    let mut bound = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let (e, t) = match binder.expr(a) {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        if i == 0 {
            if let Err(e) = crate::json_bind::check_document(&t, 1, name) {
                return Some(Err(e));
            }
        }
        bound.push(e);
    }
    Some(Ok((
        Expr::Func(Func::Builtin(Builtin::JsonExtra(f)), bound),
        t,
    )))
}

/// Evaluates `f` over its argument values.
pub(crate) fn eval(f: JsonExtra, args: &[Value]) -> Result<Value, SqlError> {
    let name = match f {
        JsonExtra::Pretty => "json_pretty",
        JsonExtra::Search => "json_search",
        JsonExtra::StorageSize => "json_storage_size",
    };
    let Some(first) = args.first().filter(|v| !matches!(v, Value::Null)) else {
        return Ok(Value::Null);
    };
    let doc = json::from_json_value(first, 1, name)?;
    Ok(match f {
        JsonExtra::Pretty => {
            let mut out = String::new();
            pretty(&doc, 0, &mut out);
            Value::Bytes(out.into_bytes())
        }
        JsonExtra::StorageSize => {
            Value::Int(i64::try_from(1 + stored_size(&doc)).unwrap_or(i64::MAX))
        }
        JsonExtra::Search => search(&doc, &args[1..])?,
    })
}

/// Rule 1.
fn pretty(j: &Json, level: usize, out: &mut String) {
    let indent = |out: &mut String, level: usize| {
        for _ in 0..level {
            out.push_str("  ");
        }
    };
    match j {
        Json::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                pretty(v, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
        Json::Object(members) if !members.is_empty() => {
            out.push_str("{\n");
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                out.push_str(&Json::String(k.clone()).to_text());
                out.push_str(": ");
                pretty(v, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        other => out.push_str(&other.to_text()),
    }
}

/// Rule 2.
fn search(doc: &Json, rest: &[Value]) -> Result<Value, SqlError> {
    let (Some(mode), Some(pattern)) = (
        rest.first().and_then(crate::value::as_text),
        rest.get(1).and_then(crate::value::as_text),
    ) else {
        return Ok(Value::Null);
    };
    let all = match mode.to_ascii_lowercase().as_str() {
        "one" => false,
        "all" => true,
        _ => {
            return Err(SqlError::new(
                3154,
                "42000",
                "The oneOrAll argument to json_search may take these values: 'one' or 'all'.",
            ))
        }
    };
    let escape = match rest.get(2).map(crate::value::as_text) {
        None | Some(None) => '\\',
        Some(Some(e)) => {
            let mut chars = e.chars();
            match (chars.next(), chars.next()) {
                (None, _) => '\\',
                (Some(c), None) => c,
                _ => {
                    return Err(SqlError::new(
                        1210,
                        "HY000",
                        "Incorrect arguments to ESCAPE",
                    ))
                }
            }
        }
    };
    let mut scopes: Vec<*const Json> = Vec::new();
    for p in rest.iter().skip(3) {
        let Some(text) = crate::value::as_text(p) else {
            return Ok(Value::Null);
        };
        let path = JsonPath::parse(&text)?;
        scopes.extend(path.find(doc).into_iter().map(std::ptr::from_ref));
    }
    let pattern = Value::Bytes(pattern.into_bytes());
    let mut found = Vec::new();
    let mut walk = Walk {
        pattern: &pattern,
        escape,
        scopes: &scopes,
        found: &mut found,
        stop_at_first: !all,
    };
    walk.visit(doc, "$".to_string(), scopes.is_empty());
    Ok(match found.len() {
        0 => Value::Null,
        1 => Value::Bytes(Json::String(found.remove(0)).to_text().into_bytes()),
        _ => Value::Bytes(
            Json::Array(found.into_iter().map(Json::String).collect())
                .to_text()
                .into_bytes(),
        ),
    })
}

struct Walk<'a> {
    pattern: &'a Value,
    escape: char,
    scopes: &'a [*const Json],
    found: &'a mut Vec<String>,
    stop_at_first: bool,
}

impl Walk<'_> {
    fn visit(&mut self, j: &Json, path: String, in_scope: bool) {
        if self.stop_at_first && !self.found.is_empty() {
            return;
        }
        let in_scope = in_scope || self.scopes.contains(&std::ptr::from_ref(j));
        match j {
            Json::String(s) if in_scope => {
                let v = Value::Bytes(s.as_bytes().to_vec());
                let hit =
                    crate::value::like(&v, self.pattern, self.escape, Collation::Utf8mb4GeneralCi);
                if crate::value::truth(&hit) == Some(true) && !self.found.contains(&path) {
                    self.found.push(path);
                }
            }
            Json::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.visit(v, format!("{path}[{i}]"), in_scope);
                }
            }
            Json::Object(members) => {
                for (k, v) in members {
                    self.visit(v, format!("{path}.{}", key_in_path(k)), in_scope);
                }
            }
            _ => {}
        }
    }
}

/// A member name as a path shows it: bare when it is an identifier, else quoted.
fn key_in_path(k: &str) -> String {
    let bare = k
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && k.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if bare {
        k.to_string()
    } else {
        Json::String(k.to_string()).to_text()
    }
}

/// Rule 3: bytes of `j` in MySQL's binary form, without the leading type byte of the
/// document (the caller adds it); what its container inlines is not counted here.
fn stored_size(j: &Json) -> usize {
    match j {
        Json::Null | Json::Bool(_) => 1,
        Json::Int(i) => {
            if i16::try_from(*i).is_ok() {
                2
            } else if i32::try_from(*i).is_ok() {
                4
            } else {
                8
            }
        }
        Json::UInt(u) => {
            if u16::try_from(*u).is_ok() {
                2
            } else if u32::try_from(*u).is_ok() {
                4
            } else {
                8
            }
        }
        Json::Double(_) => 8,
        Json::String(s) => varint_len(s.len()) + s.len(),
        Json::Decimal(text) => {
            let len = 2 + decimal_bin_size(text);
            1 + varint_len(len) + len
        }
        Json::Array(items) => {
            let entries: Vec<(Option<&str>, &Json)> = items.iter().map(|v| (None, v)).collect();
            container_size(&entries)
        }
        Json::Object(members) => {
            let entries: Vec<(Option<&str>, &Json)> =
                members.iter().map(|(k, v)| (Some(k.as_str()), v)).collect();
            container_size(&entries)
        }
    }
}

/// A string length's prefix: 7 bits a byte.
fn varint_len(mut n: usize) -> usize {
    let mut bytes = 1;
    while n >= 0x80 {
        n >>= 7;
        bytes += 1;
    }
    bytes
}

/// MySQL's packed DECIMAL size for the digits of `text`.
fn decimal_bin_size(text: &str) -> usize {
    const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];
    let digits = text.trim_start_matches('-');
    let (int_part, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let part = |n: usize| n / 9 * 4 + DIG2BYTES[n % 9];
    part(int_part.len()) + part(frac.len())
}

/// An array's or object's size: the small form (2-byte offsets) when everything fits in
/// 64 KiB, else the large one (4-byte), as MySQL picks per container.
fn container_size(entries: &[(Option<&str>, &Json)]) -> usize {
    let size_with = |large: bool| {
        let offset = if large { 4 } else { 2 };
        let mut total = 2 * offset;
        for &(key, value) in entries {
            if let Some(k) = key {
                total += offset + 2 + k.len();
            }
            total += 1 + offset;
            if !inlined(value, large) {
                total += stored_size(value);
            }
        }
        total
    };
    let small = size_with(false);
    if u16::try_from(small).is_ok() {
        small
    } else {
        size_with(true)
    }
}

/// Literals and small integers live in the value entry itself.
fn inlined(j: &Json, large: bool) -> bool {
    match j {
        Json::Null | Json::Bool(_) => true,
        Json::Int(i) => i16::try_from(*i).is_ok() || large && i32::try_from(*i).is_ok(),
        Json::UInt(u) => u16::try_from(*u).is_ok() || large && u32::try_from(*u).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(text: &str) -> usize {
        1 + stored_size(&json::parse(text).unwrap())
    }

    #[test]
    fn storage_sizes_match_mysqls_manual() {
        assert_eq!(size(r#"[100, "sakila", [1, 3, 5], 425.05]"#), 45);
        assert_eq!(size(r#"{"a": 1000, "b": "a", "c": "[1, 3, 5, 7]"}"#), 44);
        assert_eq!(size(r#"{"a": 1000, "b": "wxyz", "c": "[1, 3, 5, 7]"}"#), 47);
        assert_eq!(size(r#"[100, "json", [[10, 20, 30], 3, 5], 425.05]"#), 56);
    }
}
