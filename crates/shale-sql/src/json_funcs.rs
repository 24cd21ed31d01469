//! The JSON functions and operators: what binding (json_bind.rs) fixes about each, and
//! their evaluation over json.rs's values.
//!
//! Rules:
//! 1. A JSON-typed expression yields its normalized text (`Value::Bytes`); its static type
//!    `SqlType::Json` is what makes it a document. Where a function takes a *value*
//!    (JSON_ARRAY's elements, JSON_OBJECT's values, JSON_SET's new values, a comparison with a
//!    JSON operand), binding wraps each argument that is not JSON-typed in
//!    [`JsonFunc::FromSql`], so a string becomes a JSON string (`JSON_ARRAY('[1]')` is
//!    `["[1]"]`) while a document stays a document (`JSON_ARRAY(CAST('[1]' AS JSON))` is
//!    `[[1]]`). SQL NULL as a value is JSON `null`.
//! 2. Where a function takes a *document* (JSON_EXTRACT's first argument, JSON_CONTAINS's
//!    two, ...), a string is parsed as JSON text: 3141 naming the function and the 1-based
//!    argument when it is not JSON; a number or date there is 3146. SQL NULL gives NULL.
//! 3. Paths are parsed per row (json_path.rs); a bad path is 3143, a wildcard where one value
//!    must be named 3149, a NULL path makes the result NULL.
//! 4. JSON_EXTRACT gives the one match of a single wildcard-free path, else an array of all
//!    matches; no match is NULL. `a->p` is JSON_EXTRACT(a, p), `a->>p` is
//!    JSON_UNQUOTE(JSON_EXTRACT(a, p)).
//! 5. Comparisons with a JSON operand compare as JSON (json.rs `compare`).

use std::cmp::Ordering;

use shale_table::Value;

use crate::cast::CastTarget;
use crate::error::SqlError;
use crate::expr::CmpOp;
use crate::json::{self, Json};
use crate::json_path::{self, JsonPath, Write};

/// What JSON_VALUE's RETURNING clause asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Returning {
    /// No clause: the unquoted text (VARCHAR(512)).
    Text,
    Double,
    Json,
    Cast(CastTarget),
}

/// A JSON function, with what binding fixed about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonFunc {
    /// An SQL value as a JSON scalar (rule 1).
    FromSql,
    /// A truth value (TRUE, FALSE, a comparison: binding's one-digit signed type) as JSON
    /// `true`/`false`, as MySQL puts booleans into documents.
    FromBool,
    /// CAST(x AS JSON): text parsed as a document, other values as scalars.
    Cast,
    Extract,
    /// JSON_UNQUOTE, and `->>` over an extraction.
    Unquote,
    Object,
    Array,
    Contains,
    Overlaps,
    /// `value MEMBER OF(array)`: arguments (value, array document).
    MemberOf,
    /// JSON_CONTAINS_PATH; `true` when every path must exist (`'all'`), bound from a constant
    /// or checked per row.
    ContainsPath,
    Value(Returning),
    Valid,
    Type,
    Length,
    Depth,
    Keys,
    Write(Write),
    Remove,
    /// JSON_MERGE_PRESERVE (and its old name JSON_MERGE).
    MergePreserve,
    /// JSON_MERGE_PATCH (RFC 7396).
    MergePatch,
    Quote,
    /// A comparison with a JSON operand (rule 5); both arguments are documents.
    Compare(CmpOp),
    /// A JSON operand of arithmetic as an SQL number (integers stay integers).
    ToNumber,
    /// ORDER BY's key of a JSON expression: bytes in JSON order (json.rs `sort_key`).
    SortKey,
}

/// The lowercase name MySQL's messages use.
fn message_name(f: JsonFunc) -> &'static str {
    match f {
        JsonFunc::FromSql
        | JsonFunc::FromBool
        | JsonFunc::Compare(_)
        | JsonFunc::Value(_)
        | JsonFunc::SortKey
        | JsonFunc::ToNumber => "json_value",
        JsonFunc::Cast => "cast_as_json",
        JsonFunc::Extract => "json_extract",
        JsonFunc::Unquote => "json_unquote",
        JsonFunc::Object => "json_object",
        JsonFunc::Array => "json_array",
        JsonFunc::Contains => "json_contains",
        JsonFunc::Overlaps => "json_overlaps",
        JsonFunc::MemberOf => "member of",
        JsonFunc::ContainsPath => "json_contains_path",
        JsonFunc::Valid => "json_valid",
        JsonFunc::Type => "json_type",
        JsonFunc::Length => "json_length",
        JsonFunc::Depth => "json_depth",
        JsonFunc::Keys => "json_keys",
        JsonFunc::Write(Write::Set) => "json_set",
        JsonFunc::Write(Write::Insert) => "json_insert",
        JsonFunc::Write(Write::Replace) => "json_replace",
        JsonFunc::Write(Write::Append) => "json_array_append",
        JsonFunc::MergePreserve => "json_merge_preserve",
        JsonFunc::MergePatch => "json_merge_patch",
        JsonFunc::Remove => "json_remove",
        JsonFunc::Quote => "json_quote",
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => crate::value::display(other),
    }
}

fn path_of(v: &Value) -> Result<JsonPath, SqlError> {
    JsonPath::parse(&text_of(v))
}

/// 3149.
fn no_wildcards(path: &JsonPath) -> Result<(), SqlError> {
    if path.has_wildcard() {
        return Err(SqlError::new(
            3149,
            "42000",
            "In this situation, path expressions may not contain the * and ** tokens or an \
             array range.",
        ));
    }
    Ok(())
}

/// MySQL's containment (JSON_CONTAINS).
fn contains(target: &Json, candidate: &Json) -> bool {
    match (target, candidate) {
        // A candidate array: each element in some element of the target; a candidate
        // non-array: in some element.
        (Json::Array(t), Json::Array(c)) => c.iter().all(|x| t.iter().any(|y| contains(y, x))),
        (Json::Array(t), c) => t.iter().any(|y| contains(y, c)),
        (Json::Object(t), Json::Object(c)) => c.iter().all(|(k, v)| {
            t.binary_search_by(|(x, _)| json::key_order(x, k))
                .is_ok_and(|i| contains(&t[i].1, v))
        }),
        (t, c) => json::compare(t, c) == Ordering::Equal && same_kind(t, c),
    }
}

/// JSON_OVERLAPS: two arrays share an element, two objects a member (key and value), an
/// array holds the other (non-array) value, or two scalars are equal.
fn overlaps(a: &Json, b: &Json) -> bool {
    let eq = |x: &Json, y: &Json| json::compare(x, y).is_eq();
    match (a, b) {
        (Json::Array(x), Json::Array(y)) => x.iter().any(|p| y.iter().any(|q| eq(p, q))),
        (Json::Array(x), other) | (other, Json::Array(x)) => x.iter().any(|p| eq(p, other)),
        (Json::Object(x), Json::Object(_)) => {
            x.iter().any(|(k, v)| b.get(k).is_some_and(|w| eq(v, w)))
        }
        (x, y) => eq(x, y),
    }
}

/// Scalars of different kinds (a number and a string) never contain each other.
fn same_kind(a: &Json, b: &Json) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) || (is_number(a) && is_number(b))
}

fn is_number(j: &Json) -> bool {
    matches!(
        j,
        Json::Int(_) | Json::UInt(_) | Json::Double(_) | Json::Decimal(_)
    )
}

/// JSON_MERGE_PRESERVE's rule: arrays concatenate, objects merge (a key in both merges its
/// two values), and anything else is wrapped as a one-element array first.
fn merge_preserve(a: Json, b: Json) -> Json {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let mut out = Json::Object(x);
            for (k, v) in y {
                let merged = match out.get(&k) {
                    Some(old) => merge_preserve(old.clone(), v),
                    None => v,
                };
                out.set_member(&k, merged);
            }
            out
        }
        (Json::Array(mut x), Json::Array(y)) => {
            x.extend(y);
            Json::Array(x)
        }
        (Json::Array(mut x), y) => {
            x.push(y);
            Json::Array(x)
        }
        (x, Json::Array(y)) => {
            let mut out = vec![x];
            out.extend(y);
            Json::Array(out)
        }
        (x, y) => Json::Array(vec![x, y]),
    }
}

/// JSON_MERGE_PATCH's rule (RFC 7396): an object patch sets or (with null) removes members,
/// recursively; any other patch replaces the target.
fn merge_patch(target: Json, patch: Json) -> Json {
    let Json::Object(members) = patch else {
        return patch;
    };
    let mut out = match target {
        t @ Json::Object(_) => t,
        _ => Json::Object(Vec::new()),
    };
    for (k, v) in members {
        if v == Json::Null {
            if let Json::Object(m) = &mut out {
                m.retain(|(x, _)| *x != k);
            }
        } else {
            let merged = match out.get(&k) {
                Some(old) => merge_patch(old.clone(), v),
                None => merge_patch(Json::Null, v),
            };
            out.set_member(&k, merged);
        }
    }
    out
}

/// Evaluates a JSON function over its evaluated arguments.
#[allow(clippy::too_many_lines)] // one arm per function
pub(crate) fn eval(f: JsonFunc, vals: &[Value]) -> Result<Value, SqlError> {
    let name = message_name(f);
    let null = Value::Null;
    let arg = |i: usize| vals.get(i).unwrap_or(&null);
    // Rule 2: a document argument (None for SQL NULL).
    let document = |i: usize| -> Result<Option<Json>, SqlError> {
        match arg(i) {
            Value::Null => Ok(None),
            v => json::from_json_value(v, i + 1, name).map(Some),
        }
    };
    // Rule 1: a value argument (already JSON text; SQL NULL is JSON null).
    let value = |i: usize| -> Result<Json, SqlError> {
        match arg(i) {
            Value::Null => Ok(Json::Null),
            v => json::from_json_value(v, i + 1, name),
        }
    };
    let any_null = |from: usize| vals.iter().skip(from).any(|v| matches!(v, Value::Null));
    Ok(match f {
        JsonFunc::FromSql => match arg(0) {
            Value::Null => Value::Null,
            v => json::to_value(&json::from_sql(v)),
        },
        JsonFunc::FromBool => match crate::value::truth(arg(0)) {
            None => Value::Null,
            Some(b) => json::to_value(&Json::Bool(b)),
        },
        JsonFunc::Cast => match document(0)? {
            None => Value::Null,
            Some(j) => json::to_value(&j),
        },
        JsonFunc::Extract => {
            let Some(doc) = document(0)? else {
                return Ok(Value::Null);
            };
            if any_null(1) {
                return Ok(Value::Null);
            }
            let paths = vals[1..]
                .iter()
                .map(path_of)
                .collect::<Result<Vec<_>, _>>()?;
            let mut found: Vec<Json> = Vec::new();
            for p in &paths {
                found.extend(p.find(&doc).into_iter().cloned());
            }
            if paths.len() == 1 && !paths[0].has_wildcard() {
                found.pop().map_or(Value::Null, |j| json::to_value(&j))
            } else if found.is_empty() {
                Value::Null
            } else {
                json::to_value(&Json::Array(found))
            }
        }
        JsonFunc::Unquote => match arg(0) {
            Value::Null => Value::Null,
            v => {
                let text = text_of(v);
                if text.len() >= 2 && text.starts_with('"') && text.ends_with('"') {
                    match json::parse(&text) {
                        Ok(j) => Value::Bytes(j.unquoted().into_bytes()),
                        Err(e) => return Err(json::bad_argument(&e, 1, name)),
                    }
                } else {
                    Value::Bytes(text.into_bytes())
                }
            }
        },
        JsonFunc::Object => {
            let mut members = Vec::with_capacity(vals.len() / 2);
            for i in (0..vals.len()).step_by(2) {
                let key = match arg(i) {
                    Value::Null => {
                        return Err(SqlError::new(
                            3158,
                            "22032",
                            "JSON documents may not contain NULL member names.",
                        ))
                    }
                    k => text_of(k),
                };
                members.push((key, value(i + 1)?));
            }
            json::to_value(&Json::object(members))
        }
        JsonFunc::Array => {
            let items = (0..vals.len()).map(value).collect::<Result<Vec<_>, _>>()?;
            let a = Json::Array(items);
            if a.depth() > json::MAX_DEPTH {
                return Err(json::too_deep());
            }
            json::to_value(&a)
        }
        JsonFunc::Contains => {
            let (Some(target), Some(candidate)) = (document(0)?, document(1)?) else {
                return Ok(Value::Null);
            };
            let target = match vals.get(2) {
                None => target,
                Some(Value::Null) => return Ok(Value::Null),
                Some(p) => {
                    let p = path_of(p)?;
                    no_wildcards(&p)?;
                    match p.find(&target).first() {
                        Some(t) => (*t).clone(),
                        None => return Ok(Value::Null),
                    }
                }
            };
            Value::Int(i64::from(contains(&target, &candidate)))
        }
        JsonFunc::Overlaps => {
            let (Some(a), Some(b)) = (document(0)?, document(1)?) else {
                return Ok(Value::Null);
            };
            Value::Int(i64::from(overlaps(&a, &b)))
        }
        JsonFunc::MemberOf => {
            if matches!(arg(0), Value::Null) {
                return Ok(Value::Null);
            }
            let Some(array) = document(1)? else {
                return Ok(Value::Null);
            };
            let v = value(0)?;
            let found = match &array {
                Json::Array(items) => items.iter().any(|x| json::compare(x, &v).is_eq()),
                single => json::compare(single, &v).is_eq(),
            };
            Value::Int(i64::from(found))
        }
        JsonFunc::ContainsPath => {
            let Some(doc) = document(0)? else {
                return Ok(Value::Null);
            };
            if any_null(1) {
                return Ok(Value::Null);
            }
            let all = match text_of(arg(1)).to_ascii_lowercase().as_str() {
                "all" => true,
                "one" => false,
                _ => {
                    return Err(SqlError::new(
                        3154,
                        "42000",
                        "The oneOrAll argument to json_contains_path may take these values: \
                         'one' or 'all'.",
                    ))
                }
            };
            let paths = vals[2..]
                .iter()
                .map(path_of)
                .collect::<Result<Vec<_>, _>>()?;
            let mut hits = paths.iter().map(|p| !p.find(&doc).is_empty());
            let r = if all {
                hits.all(|h| h)
            } else {
                hits.any(|h| h)
            };
            Value::Int(i64::from(r))
        }
        JsonFunc::Value(returning) => {
            let Some(doc) = document(0)? else {
                return Ok(Value::Null);
            };
            if any_null(1) {
                return Ok(Value::Null);
            }
            let p = path_of(arg(1))?;
            no_wildcards(&p)?;
            let found = p.find(&doc);
            let Some(j) = found.first() else {
                return Ok(Value::Null);
            };
            // NULL ON ERROR, MySQL's default: a non-scalar is NULL unless JSON is asked for.
            match (returning, j) {
                (Returning::Json, j) => json::to_value(j),
                (_, Json::Array(_) | Json::Object(_) | Json::Null) => Value::Null,
                (Returning::Text, j) => Value::Bytes(j.unquoted().into_bytes()),
                (Returning::Double, j) => match j {
                    Json::Bool(b) => Value::Double(f64::from(u8::from(*b))),
                    other => Value::Double(crate::value::str_to_f64(other.unquoted().as_bytes())),
                },
                (Returning::Cast(c), j) => {
                    let v = match j {
                        Json::Int(i) => Value::Int(*i),
                        Json::UInt(u) => Value::UInt(*u),
                        Json::Double(d) => Value::Double(*d),
                        Json::Bool(b) => Value::Int(i64::from(*b)),
                        other => Value::Bytes(other.unquoted().into_bytes()),
                    };
                    crate::cast::cast(&v, c)?
                }
            }
        }
        JsonFunc::Valid => match arg(0) {
            Value::Null => Value::Null,
            Value::Bytes(b) => Value::Int(i64::from(
                std::str::from_utf8(b).is_ok_and(|s| json::parse(s).is_ok()),
            )),
            _ => Value::Int(0),
        },
        JsonFunc::Type => match document(0)? {
            None => Value::Null,
            Some(j) => Value::Bytes(j.type_name().as_bytes().to_vec()),
        },
        JsonFunc::Length | JsonFunc::Keys => {
            let Some(doc) = document(0)? else {
                return Ok(Value::Null);
            };
            let target = match vals.get(1) {
                None => doc,
                Some(Value::Null) => return Ok(Value::Null),
                Some(p) => {
                    let p = path_of(p)?;
                    no_wildcards(&p)?;
                    match p.find(&doc).first() {
                        Some(t) => (*t).clone(),
                        None => return Ok(Value::Null),
                    }
                }
            };
            match (f, &target) {
                (JsonFunc::Keys, Json::Object(m)) => json::to_value(&Json::Array(
                    m.iter().map(|(k, _)| Json::String(k.clone())).collect(),
                )),
                (JsonFunc::Keys, _) => Value::Null,
                (_, Json::Array(a)) => Value::Int(a.len() as i64),
                (_, Json::Object(m)) => Value::Int(m.len() as i64),
                _ => Value::Int(1),
            }
        }
        JsonFunc::Depth => match document(0)? {
            None => Value::Null,
            Some(j) => Value::Int(j.depth() as i64),
        },
        JsonFunc::Write(mode) => {
            let Some(mut doc) = document(0)? else {
                return Ok(Value::Null);
            };
            for i in (1..vals.len()).step_by(2) {
                if matches!(arg(i), Value::Null) {
                    return Ok(Value::Null);
                }
                let p = path_of(arg(i))?;
                no_wildcards(&p)?;
                json_path::write(&mut doc, &p, value(i + 1)?, mode);
            }
            if doc.depth() > json::MAX_DEPTH {
                return Err(json::too_deep());
            }
            json::to_value(&doc)
        }
        JsonFunc::Remove => {
            let Some(mut doc) = document(0)? else {
                return Ok(Value::Null);
            };
            if any_null(1) {
                return Ok(Value::Null);
            }
            for p in &vals[1..] {
                let p = path_of(p)?;
                no_wildcards(&p)?;
                if p.legs.is_empty() {
                    return Err(SqlError::new(
                        3153,
                        "42000",
                        "The path expression '$' is not allowed in this context.",
                    ));
                }
                json_path::remove(&mut doc, &p);
            }
            json::to_value(&doc)
        }
        JsonFunc::MergePreserve | JsonFunc::MergePatch => {
            let mut merged: Option<Json> = None;
            for i in 0..vals.len() {
                let Some(next) = document(i)? else {
                    return Ok(Value::Null);
                };
                merged = Some(match merged {
                    None => next,
                    Some(m) if f == JsonFunc::MergePatch => merge_patch(m, next),
                    Some(m) => merge_preserve(m, next),
                });
            }
            let merged = merged.unwrap_or(Json::Null);
            if merged.depth() > json::MAX_DEPTH {
                return Err(json::too_deep());
            }
            json::to_value(&merged)
        }
        JsonFunc::Quote => match arg(0) {
            Value::Null => Value::Null,
            v => json::to_value(&Json::String(text_of(v))),
        },
        JsonFunc::ToNumber => match document(0)? {
            None => Value::Null,
            Some(Json::Int(i)) => Value::Int(i),
            Some(Json::UInt(u)) => Value::UInt(u),
            Some(Json::Double(d)) => Value::Double(d),
            Some(Json::Decimal(s)) => Value::Double(s.parse().unwrap_or(0.0)),
            Some(Json::Bool(b)) => Value::Int(i64::from(b)),
            Some(Json::String(s)) => Value::Bytes(s.into_bytes()),
            // MySQL reads null, arrays and objects as 0 (with a warning Shale does not give).
            Some(Json::Null | Json::Array(_) | Json::Object(_)) => Value::Int(0),
        },
        JsonFunc::SortKey => match arg(0) {
            Value::Null => Value::Null,
            v => {
                let mut key = Vec::new();
                json::sort_key(&json::from_json_value(v, 1, name)?, &mut key);
                Value::Bytes(key)
            }
        },
        JsonFunc::Compare(op) => {
            let (a, b) = (arg(0), arg(1));
            let r = match (a, b) {
                (Value::Null, Value::Null) if op == CmpOp::NullSafeEq => Some(true),
                (Value::Null, _) | (_, Value::Null) if op == CmpOp::NullSafeEq => Some(false),
                (Value::Null, _) | (_, Value::Null) => None,
                _ => {
                    let o = json::compare(&value(0)?, &value(1)?);
                    Some(match op {
                        CmpOp::Eq | CmpOp::NullSafeEq => o == Ordering::Equal,
                        CmpOp::Ne => o != Ordering::Equal,
                        CmpOp::Lt => o == Ordering::Less,
                        CmpOp::Le => o != Ordering::Greater,
                        CmpOp::Gt => o == Ordering::Greater,
                        CmpOp::Ge => o != Ordering::Less,
                    })
                }
            };
            crate::value::from_bool(r)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn containment_follows_mysql_docs() {
        let doc = r#"{"a": 1, "b": 2, "c": {"d": 4}}"#;
        let cases = [
            (doc, "1", Some("$.a"), 1),
            (doc, "1", Some("$.b"), 0),
            (doc, r#"{"d": 4}"#, Some("$.a"), 0),
            (doc, r#"{"d": 4}"#, Some("$.c"), 1),
            ("[1, 2, [3, 4]]", "[1, 3]", None, 1),
            ("[1, 2, [3, 4]]", "[1, 5]", None, 0),
            ("[1, 2]", "\"1\"", None, 0),
        ];
        for (target, candidate, path, want) in cases {
            let mut vals = vec![b(target), b(candidate)];
            if let Some(p) = path {
                vals.push(b(p));
            }
            assert_eq!(
                eval(JsonFunc::Contains, &vals).unwrap(),
                Value::Int(want),
                "{target} {candidate} {path:?}"
            );
        }
    }

    #[test]
    fn errors_name_function_and_argument() {
        let e = eval(JsonFunc::Extract, &[b("{\"a\":"), b("$.a")]).unwrap_err();
        assert_eq!(e.code, 3141);
        assert_eq!(
            e.message,
            "Invalid JSON text in argument 1 to function json_extract: \"Invalid value.\" at \
             position 5."
        );
        let e = eval(JsonFunc::Extract, &[b("{}"), b("$.")]).unwrap_err();
        assert_eq!(e.code, 3143);
        let e = eval(JsonFunc::Write(Write::Set), &[b("{}"), b("$.*"), b("1")]).unwrap_err();
        assert_eq!(e.code, 3149);
        let e = eval(JsonFunc::Remove, &[b("{}"), b("$")]).unwrap_err();
        assert_eq!(e.code, 3153);
    }
}
