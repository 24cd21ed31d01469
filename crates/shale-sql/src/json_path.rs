//! JSON path expressions (`$.a`, `$."b c"[0]`, `$[*]`, `$.*`, `$**.a`, `$[last-1]`,
//! `$[1 to 3]`): MySQL's grammar, parsed into legs, and their evaluation over [`Json`].
//!
//! Rules:
//! 1. A path starts with `$`; a member name is an ECMAScript identifier or a double-quoted
//!    JSON string; whitespace between tokens is skipped. Anything else is 3143 with the
//!    1-based character position where parsing stopped.
//! 2. `**` must be followed by a leg (`$**` alone is 3143).
//! 3. An array index on a non-array value auto-wraps it: the value is element 0 of a
//!    one-element array (`$[0]` of `"a"` is `"a"`), as MySQL does.
//! 4. Matches come in document order without duplicates (a `**` path can reach a value
//!    twice).

use crate::error::SqlError;
use crate::json::Json;

/// One array position: counted from the start, or back from `last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArrayIndex {
    FromStart(usize),
    /// `last - n`.
    FromLast(usize),
}

impl ArrayIndex {
    /// The index into an array of `len` elements, if any.
    fn resolve(self, len: usize) -> Option<usize> {
        match self {
            ArrayIndex::FromStart(i) => Some(i),
            ArrayIndex::FromLast(n) => len.checked_sub(1)?.checked_sub(n),
        }
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Leg {
    Member(String),
    /// `.*`
    AnyMember,
    Index(ArrayIndex),
    /// `[m to n]`
    Range(ArrayIndex, ArrayIndex),
    /// `[*]`
    AnyIndex,
    /// `**`: the value and every value nested in it.
    Descendants,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonPath {
    pub legs: Vec<Leg>,
}

/// 3143 (rule 1).
pub(crate) fn invalid_path(position: usize) -> SqlError {
    SqlError::new(
        3143,
        "42000",
        format!("Invalid JSON path expression. The error is around character position {position}."),
    )
}

struct Cursor<'a> {
    chars: Vec<char>,
    at: usize,
    _text: &'a str,
}

impl Cursor<'_> {
    fn skip_space(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn error(&self) -> SqlError {
        invalid_path(self.at + 1)
    }
    fn number(&mut self) -> Result<usize, SqlError> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        if start == self.at {
            return Err(self.error());
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        digits.parse().map_err(|_| invalid_path(start + 1))
    }
    fn word(&mut self, w: &str) -> bool {
        let n = w.chars().count();
        let matches = self.chars.get(self.at..self.at + n).is_some_and(|s| {
            s.iter().collect::<String>() == w
                && !self
                    .chars
                    .get(self.at + n)
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        });
        if matches {
            self.at += n;
        }
        matches
    }
    fn index(&mut self) -> Result<ArrayIndex, SqlError> {
        self.skip_space();
        if self.word("last") {
            self.skip_space();
            if self.eat('-') {
                self.skip_space();
                return Ok(ArrayIndex::FromLast(self.number()?));
            }
            return Ok(ArrayIndex::FromLast(0));
        }
        Ok(ArrayIndex::FromStart(self.number()?))
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

fn is_ident_part(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

impl JsonPath {
    /// Parses a path (rules 1 and 2).
    pub(crate) fn parse(text: &str) -> Result<JsonPath, SqlError> {
        let mut c = Cursor {
            chars: text.chars().collect(),
            at: 0,
            _text: text,
        };
        c.skip_space();
        if !c.eat('$') {
            return Err(c.error());
        }
        let mut legs = Vec::new();
        loop {
            c.skip_space();
            match c.peek() {
                None => break,
                Some('.') => {
                    c.at += 1;
                    c.skip_space();
                    match c.peek() {
                        Some('*') => {
                            c.at += 1;
                            legs.push(Leg::AnyMember);
                        }
                        Some('"') => {
                            let start = c.at;
                            c.at += 1;
                            let mut escaped = false;
                            loop {
                                match c.peek() {
                                    None => return Err(c.error()),
                                    Some('\\') if !escaped => escaped = true,
                                    Some('"') if !escaped => break,
                                    Some(_) => escaped = false,
                                }
                                c.at += 1;
                            }
                            c.at += 1;
                            let quoted: String = c.chars[start..c.at].iter().collect();
                            match serde_json::from_str::<String>(&quoted) {
                                Ok(name) => legs.push(Leg::Member(name)),
                                Err(_) => return Err(invalid_path(start + 1)),
                            }
                        }
                        Some(ch) if is_ident_start(ch) => {
                            let start = c.at;
                            while c.peek().is_some_and(is_ident_part) {
                                c.at += 1;
                            }
                            legs.push(Leg::Member(c.chars[start..c.at].iter().collect()));
                        }
                        _ => return Err(c.error()),
                    }
                }
                Some('[') => {
                    c.at += 1;
                    c.skip_space();
                    if c.eat('*') {
                        legs.push(Leg::AnyIndex);
                    } else {
                        let from = c.index()?;
                        c.skip_space();
                        if c.word("to") {
                            let to = c.index()?;
                            legs.push(Leg::Range(from, to));
                        } else {
                            legs.push(Leg::Index(from));
                        }
                    }
                    c.skip_space();
                    if !c.eat(']') {
                        return Err(c.error());
                    }
                }
                Some('*') if c.chars.get(c.at + 1) == Some(&'*') => {
                    c.at += 2;
                    legs.push(Leg::Descendants);
                }
                Some(_) => return Err(c.error()),
            }
        }
        if legs.last() == Some(&Leg::Descendants) {
            return Err(invalid_path(c.chars.len()));
        }
        Ok(JsonPath { legs })
    }

    /// Whether the path can match more than one value (`*`, `**` or a range).
    pub(crate) fn has_wildcard(&self) -> bool {
        self.legs.iter().any(|l| {
            matches!(
                l,
                Leg::AnyMember | Leg::AnyIndex | Leg::Descendants | Leg::Range(..)
            )
        })
    }

    /// The values the path selects in `doc` (rules 3 and 4).
    pub(crate) fn find<'a>(&self, doc: &'a Json) -> Vec<&'a Json> {
        let mut current = vec![doc];
        for leg in &self.legs {
            let mut next: Vec<&Json> = Vec::new();
            for v in current {
                step(leg, v, &mut next);
            }
            if matches!(leg, Leg::Descendants) {
                dedup_by_address(&mut next);
            }
            current = next;
        }
        dedup_by_address(&mut current);
        current
    }
}

fn dedup_by_address(values: &mut Vec<&Json>) {
    let mut seen = std::collections::HashSet::new();
    values.retain(|v| seen.insert(std::ptr::from_ref::<Json>(*v)));
}

fn step<'a>(leg: &Leg, v: &'a Json, out: &mut Vec<&'a Json>) {
    match (leg, v) {
        (Leg::Member(k), _) => out.extend(v.get(k)),
        (Leg::AnyMember, Json::Object(m)) => out.extend(m.iter().map(|(_, x)| x)),
        (Leg::Index(i), Json::Array(a)) => out.extend(i.resolve(a.len()).and_then(|i| a.get(i))),
        (Leg::Index(i), _) if i.resolve(1) == Some(0) => out.push(v),
        (Leg::Range(from, to), Json::Array(a)) => {
            if let (Some(f), Some(t)) = (from.resolve(a.len()), to.resolve(a.len())) {
                if f <= t {
                    out.extend(a.iter().skip(f).take(t - f + 1));
                }
            }
        }
        (Leg::Range(from, to), _) if from.resolve(1) == Some(0) && to.resolve(1).is_some() => {
            out.push(v);
        }
        (Leg::AnyIndex, Json::Array(a)) => out.extend(a.iter()),
        (Leg::Descendants, _) => descendants(v, out),
        _ => {}
    }
}

fn descendants<'a>(v: &'a Json, out: &mut Vec<&'a Json>) {
    out.push(v);
    match v {
        Json::Array(a) => a.iter().for_each(|x| descendants(x, out)),
        Json::Object(m) => m.iter().for_each(|(_, x)| descendants(x, out)),
        _ => {}
    }
}

/// How JSON_SET, JSON_INSERT and JSON_REPLACE treat a path's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// Replace an existing value, add a missing one.
    Set,
    /// Only add a missing value.
    Insert,
    /// Only replace an existing value.
    Replace,
    /// JSON_ARRAY_APPEND: add to the end of the array the path names; a non-array there
    /// becomes `[value, new]` (MySQL's auto-wrap).
    Append,
}

/// The value the legs lead to, for changing it (no wildcards; rule 3 applies).
fn locate_mut<'a>(doc: &'a mut Json, legs: &[Leg]) -> Option<&'a mut Json> {
    let mut v = doc;
    for leg in legs {
        v = match leg {
            Leg::Member(k) => match v {
                Json::Object(m) => {
                    let i = m
                        .binary_search_by(|(x, _)| crate::json::key_order(x, k))
                        .ok()?;
                    &mut m[i].1
                }
                _ => return None,
            },
            Leg::Index(i) => match v {
                Json::Array(a) => {
                    let at = i.resolve(a.len())?;
                    a.get_mut(at)?
                }
                other => {
                    if i.resolve(1) != Some(0) {
                        return None;
                    }
                    other
                }
            },
            _ => return None,
        };
    }
    Some(v)
}

/// Applies one path-value pair of JSON_SET / JSON_INSERT / JSON_REPLACE to `doc`; the path
/// has no wildcard (callers check: 3149).
pub(crate) fn write(doc: &mut Json, path: &JsonPath, value: Json, mode: Write) {
    if mode == Write::Append {
        if let Some(target) = locate_mut(doc, &path.legs) {
            match target {
                Json::Array(a) => a.push(value),
                other => {
                    let old = std::mem::replace(other, Json::Null);
                    *other = Json::Array(vec![old, value]);
                }
            }
        }
        return;
    }
    let Some((last, parent_legs)) = path.legs.split_last() else {
        // `$` itself: it exists, so SET and REPLACE replace the document.
        if mode != Write::Insert {
            *doc = value;
        }
        return;
    };
    let Some(parent) = locate_mut(doc, parent_legs) else {
        return;
    };
    match last {
        Leg::Member(k) => {
            let exists = parent.get(k).is_some();
            if matches!(parent, Json::Object(_))
                && ((exists && mode != Write::Insert) || (!exists && mode != Write::Replace))
            {
                parent.set_member(k, value);
            }
        }
        Leg::Index(i) => match parent {
            Json::Array(a) => match i.resolve(a.len()).filter(|&at| at < a.len()) {
                Some(at) if mode != Write::Insert => a[at] = value,
                None if mode != Write::Replace && matches!(i, ArrayIndex::FromStart(_)) => {
                    a.push(value);
                }
                Some(_) | None => {}
            },
            other => match i.resolve(1) {
                Some(0) if mode != Write::Insert => *other = value,
                Some(0) => {}
                Some(_) if mode != Write::Replace => {
                    let old = std::mem::replace(other, Json::Null);
                    *other = Json::Array(vec![old, value]);
                }
                _ => {}
            },
        },
        _ => {}
    }
}

/// Removes what the path names (JSON_REMOVE); the path is neither `$` nor a wildcard.
pub(crate) fn remove(doc: &mut Json, path: &JsonPath) {
    let Some((last, parent_legs)) = path.legs.split_last() else {
        return;
    };
    let Some(parent) = locate_mut(doc, parent_legs) else {
        return;
    };
    match (last, parent) {
        (Leg::Member(k), Json::Object(m)) => {
            if let Ok(i) = m.binary_search_by(|(x, _)| crate::json::key_order(x, k)) {
                m.remove(i);
            }
        }
        (Leg::Index(i), Json::Array(a)) => {
            if let Some(at) = i.resolve(a.len()).filter(|&at| at < a.len()) {
                a.remove(at);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn texts(doc: &str, path: &str) -> Vec<String> {
        let doc = parse(doc).unwrap();
        JsonPath::parse(path)
            .unwrap()
            .find(&doc)
            .iter()
            .map(|j| j.to_text())
            .collect()
    }

    #[test]
    fn finds_what_mysql_docs_show() {
        let doc = r#"{"a": {"b": 1}, "c": [10, 20, 30], "d e": 5, "b": 2}"#;
        assert_eq!(texts(doc, "$.a.b"), ["1"]);
        assert_eq!(texts(doc, "$.c[1]"), ["20"]);
        assert_eq!(texts(doc, "$.c[last]"), ["30"]);
        assert_eq!(texts(doc, "$.c[last-2]"), ["10"]);
        assert_eq!(texts(doc, "$.c[1 to 2]"), ["20", "30"]);
        assert_eq!(texts(doc, "$.c[*]"), ["10", "20", "30"]);
        assert_eq!(texts(doc, "$.\"d e\""), ["5"]);
        assert_eq!(texts(doc, "$**.b"), ["2", "1"]);
        assert_eq!(texts(doc, "$.*").len(), 4);
        assert_eq!(texts(doc, "$.d[0]"), Vec::<String>::new());
        assert_eq!(texts(doc, "$.b[0]"), ["2"]);
        assert_eq!(texts(doc, "$.b[1]"), Vec::<String>::new());
        assert_eq!(texts(doc, "$.x"), Vec::<String>::new());
        assert_eq!(texts(doc, " $ . a . b "), ["1"]);
    }

    #[test]
    fn bad_paths_are_3143_with_position() {
        for (path, pos) in [
            ("a", 1),
            ("$.", 3),
            ("$[", 3),
            ("$**", 3),
            ("$.a[x]", 5),
            ("$a", 2),
        ] {
            let e = JsonPath::parse(path).unwrap_err();
            assert_eq!(e.code, 3143, "{path}");
            assert!(
                e.message.ends_with(&format!("position {pos}.")),
                "{path}: {}",
                e.message
            );
        }
    }

    #[test]
    fn writes_follow_set_insert_replace() {
        let run = |doc: &str, path: &str, mode: Write| {
            let mut d = parse(doc).unwrap();
            write(&mut d, &JsonPath::parse(path).unwrap(), Json::Int(9), mode);
            d.to_text()
        };
        let doc = r#"{"a": 1, "b": [2, 3]}"#;
        assert_eq!(run(doc, "$.a", Write::Set), r#"{"a": 9, "b": [2, 3]}"#);
        assert_eq!(
            run(doc, "$.c", Write::Set),
            r#"{"a": 1, "b": [2, 3], "c": 9}"#
        );
        assert_eq!(run(doc, "$.a", Write::Insert), doc);
        assert_eq!(run(doc, "$.c", Write::Replace), doc);
        assert_eq!(
            run(doc, "$.b[5]", Write::Insert),
            r#"{"a": 1, "b": [2, 3, 9]}"#
        );
        assert_eq!(
            run(doc, "$.a[1]", Write::Set),
            r#"{"a": [1, 9], "b": [2, 3]}"#
        );
        assert_eq!(run(doc, "$.x.y", Write::Set), doc);
        let mut d = parse(doc).unwrap();
        remove(&mut d, &JsonPath::parse("$.b[0]").unwrap());
        assert_eq!(d.to_text(), r#"{"a": 1, "b": [3]}"#);
    }
}
