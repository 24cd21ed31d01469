//! The statement cache: a text INSERT or REPLACE ... VALUES is parsed and planned once per
//! shape, as if the client had prepared it.
//!
//! Parsing is most of a small text INSERT's CPU (docs/benchmarks.md, "Where a text INSERT's
//! CPU goes"). Applications send the same INSERT with other values again and again, so
//! [`normalize`] replaces each literal that stands alone as a value (`(5,` `, 'x')`,
//! `, -1.5,`) with a numbered placeholder, and the session keeps the plan of the
//! placeholder text, keyed by that text. A later statement of the same shape runs the kept
//! plan with its own literals as the parameters, as COM_STMT_EXECUTE does.
//!
//! Rules:
//! 1. Only a single INSERT/REPLACE ... VALUES (or VALUE) without SELECT, comments, user or
//!    system variables, `?`, or a second statement is normalized; anything else takes the
//!    parsing path unchanged.
//! 2. A parameter has exactly the value the binder gives the literal: numbers through the
//!    binder's own `number_value` (and `negate` for a leading minus, as the binder folds
//!    it), strings as their bytes after the parser's own unescaping. A literal whose value
//!    cannot be made so (a number the binder refuses) sends the statement down the
//!    parsing path, which reports the error as it always did.
//! 3. Only a literal that is a whole value of a VALUES row becomes a parameter (right inside
//!    the row's parentheses, between `(`/`,` and `,`/`)`): anywhere else (`1 + 2`, a
//!    function's argument, ON DUPLICATE KEY UPDATE) its type could steer the binder, so it
//!    stays in the text, part of the shape.
//! 4. A kept plan is used only with the database, `sql_mode` and DDL generation it was
//!    planned under (a stale generation re-plans, as a prepared statement does), and the
//!    statement's privileges are checked at every use.
//! 5. Text under ANSI_QUOTES or NO_BACKSLASH_ESCAPES is not normalized (the quoting rules
//!    then differ from the ones below).

use std::collections::HashMap;
use std::sync::Arc;

use shale_table::Value;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::{Planned, Session};
use crate::error::SqlError;
use crate::result::ResultSink;
use crate::status::Counter;

/// Plans kept per session; past it one is dropped.
const CAPACITY: usize = 64;

/// Normalized text longer than this is not kept (a many-row INSERT rarely repeats its
/// shape, and its plan is large).
const MAX_TEXT: usize = 16 * 1024;

/// A statement's shape and the values its literals held.
#[derive(Debug, PartialEq)]
pub(crate) struct Normalized {
    /// The text with `?N` for each parameter, N counting from 0 in text order.
    pub text: String,
    pub params: Vec<Value>,
    /// The statement is a REPLACE (for Com_replace).
    pub replace: bool,
}

/// One kept plan.
#[derive(Debug)]
pub(crate) struct Entry {
    pub planned: Arc<Planned>,
    pub generation: u64,
    pub database: Option<String>,
    pub sql_mode: crate::sql_mode::SqlMode,
    pub needs: crate::privilege::Needs,
    /// The views it reads, locked at every run (views.rs rule 6).
    pub views: Vec<(String, String)>,
}

/// A session's kept plans, keyed by normalized text.
#[derive(Debug, Default)]
pub(crate) struct StatementCache {
    entries: HashMap<String, Entry>,
}

impl StatementCache {
    pub fn get(&self, text: &str) -> Option<&Entry> {
        self.entries.get(text)
    }

    pub fn insert(&mut self, text: String, entry: Entry) {
        if self.entries.len() >= CAPACITY && !self.entries.contains_key(&text) {
            // Any one: shapes that still repeat come back at their next use.
            if let Some(victim) = self.entries.keys().next().cloned() {
                self.entries.remove(&victim);
            }
        }
        self.entries.insert(text, entry);
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// Where the scan is relative to the VALUES rows (rule 3).
#[derive(Clone, Copy, PartialEq)]
enum Rows {
    Before,
    In,
    /// Past the rows: ON DUPLICATE KEY UPDATE, an alias.
    After,
}

/// What came before a token, for rule 3.
#[derive(Clone, Copy, PartialEq)]
enum Prev {
    /// `(` or `,`: a value may start here.
    ValueStart,
    /// A sign right after a value start: a number may follow it.
    Sign(u8),
    Other,
}

/// `sql` as a shape and its parameters, or None when rule 1 or 5 keeps it on the parsing
/// path. `ansi_or_no_backslash` is rule 5's condition.
pub(crate) fn normalize(sql: &str, ansi_or_no_backslash: bool) -> Option<Normalized> {
    if ansi_or_no_backslash {
        return None;
    }
    let bytes = sql.as_bytes();
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let first_end = start
        + bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_alphabetic())?;
    let first = &sql[start..first_end];
    let replace = if first.eq_ignore_ascii_case("REPLACE") {
        true
    } else if first.eq_ignore_ascii_case("INSERT") {
        false
    } else {
        return None;
    };
    let mut out = String::with_capacity(sql.len());
    let mut params = Vec::new();
    let mut rows = Rows::Before;
    let mut depth = 0usize;
    let mut prev = Prev::Other;
    // Where the text not yet copied to `out` starts.
    let mut copied = 0;
    let mut i = first_end;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'(' | b',' => {
                if b == b'(' {
                    depth += 1;
                }
                prev = if rows == Rows::In && depth == 1 {
                    Prev::ValueStart
                } else {
                    Prev::Other
                };
                i += 1;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                prev = Prev::Other;
                i += 1;
            }
            b'-' | b'+' => {
                if bytes.get(i + 1) == Some(&b'-') {
                    return None; // `--` may be a comment
                }
                prev = if prev == Prev::ValueStart {
                    Prev::Sign(b)
                } else {
                    Prev::Other
                };
                i += 1;
            }
            b'\'' | b'"' => {
                let end = string_end(bytes, i)?;
                let alone = prev == Prev::ValueStart && ends_value(bytes, end);
                if next_significant(bytes, end).is_some_and(|n| n == b'\'' || n == b'"') {
                    return None; // adjacent literals concatenate
                }
                if alone {
                    let value = string_value(&sql[i..end])?;
                    push_param(&mut out, &sql[copied..i], params.len());
                    params.push(value);
                    copied = end;
                }
                prev = Prev::Other;
                i = end;
            }
            b'`' => {
                i = quoted_identifier_end(bytes, i)?;
                prev = Prev::Other;
            }
            b'0'..=b'9' | b'.' if b != b'.' || bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let end = number_end(bytes, i);
                if bytes.get(end).is_some_and(|&c| is_word_byte(c)) {
                    return None; // `0x1F`, `1abc`: not a plain number
                }
                let (value_start, sign) = match prev {
                    Prev::ValueStart => (Some(i), None),
                    Prev::Sign(s) => (Some(sign_position(bytes, i)), Some(s)),
                    Prev::Other => (None, None),
                };
                match value_start {
                    Some(at) if ends_value(bytes, end) => {
                        let mut value = crate::bind::number_value(&sql[i..end]).ok()?;
                        if sign == Some(b'-') {
                            value = crate::value::negate(&value).ok()?;
                        }
                        push_param(&mut out, &sql[copied..at], params.len());
                        params.push(value);
                        copied = end;
                    }
                    _ => {}
                }
                prev = Prev::Other;
                i = end;
            }
            b'#' | b'?' | b'@' | b'\\' => return None,
            b'/' if bytes.get(i + 1) == Some(&b'*') => return None,
            b';' => {
                if bytes[i + 1..].iter().any(|c| !c.is_ascii_whitespace()) {
                    return None; // a second statement
                }
                break;
            }
            _ if is_word_byte(b) => {
                let end = i + bytes[i..]
                    .iter()
                    .position(|&c| !is_word_byte(c))
                    .unwrap_or(bytes.len() - i);
                let word = &sql[i..end];
                if word.eq_ignore_ascii_case("SELECT")
                    || word.eq_ignore_ascii_case("TABLE")
                    || word.eq_ignore_ascii_case("WITH")
                {
                    return None; // INSERT ... SELECT / TABLE / a CTE
                }
                if depth == 0 {
                    let values =
                        word.eq_ignore_ascii_case("VALUES") || word.eq_ignore_ascii_case("VALUE");
                    rows = match rows {
                        Rows::Before if values => Rows::In,
                        Rows::In if !word.eq_ignore_ascii_case("ROW") => Rows::After,
                        other => other,
                    };
                }
                prev = Prev::Other;
                i = end;
            }
            _ => {
                prev = Prev::Other;
                i += 1;
            }
        }
    }
    if rows == Rows::Before {
        return None;
    }
    out.push_str(&sql[copied..]);
    if out.len() > MAX_TEXT {
        return None;
    }
    Some(Normalized {
        text: out,
        params,
        replace,
    })
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

fn push_param(out: &mut String, before: &str, n: usize) {
    use std::fmt::Write as _;
    out.push_str(before);
    let _ = write!(out, "?{n}");
}

/// The first byte at or after `at` that is not whitespace.
fn next_significant(bytes: &[u8], at: usize) -> Option<u8> {
    bytes[at..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

/// Whether a value ending at `end` is followed by `,` or `)` (rule 3).
fn ends_value(bytes: &[u8], end: usize) -> bool {
    matches!(next_significant(bytes, end), Some(b',' | b')'))
}

/// Where the sign before the number at `number` is (the sign's own position).
fn sign_position(bytes: &[u8], number: usize) -> usize {
    let mut at = number;
    while at > 0 && bytes[at - 1].is_ascii_whitespace() {
        at -= 1;
    }
    at - 1
}

/// The end (one past the closing quote) of the string literal opening at `open`; None when
/// it does not close (the parser reports that).
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let quote = bytes[open];
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            c if c == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    None
}

fn quoted_identifier_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            if bytes.get(i + 1) == Some(&b'`') {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// The end of the number starting at `start`: digits, an optional fraction, an optional
/// exponent (only when digits follow the `e`, as the tokenizer reads it).
fn number_end(bytes: &[u8], start: usize) -> usize {
    let digits = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut i = digits(start);
    if bytes.get(i) == Some(&b'.') {
        i = digits(i + 1);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            i = digits(j);
        }
    }
    i
}

/// A quoted literal's value as the binder makes it (rule 2). Without a backslash the only
/// escape is a doubled quote; with one, the parser's own tokenizer unescapes it.
fn string_value(literal: &str) -> Option<Value> {
    let quote = &literal[..1];
    let inner = &literal[1..literal.len() - 1];
    if !inner.contains('\\') {
        let doubled = if quote == "'" { "''" } else { "\"\"" };
        let text = if inner.contains(doubled) {
            inner.replace(doubled, quote)
        } else {
            inner.to_owned()
        };
        return Some(Value::Bytes(text.into_bytes()));
    }
    let tokens = Tokenizer::new(&sqlparser::dialect::MySqlDialect {}, literal)
        .tokenize()
        .ok()?;
    match tokens.as_slice() {
        [Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)] => {
            Some(Value::Bytes(s.clone().into_bytes()))
        }
        _ => None,
    }
}

impl Session {
    /// Runs `sql` with a kept plan when the statement cache admits it (rule 1); None sends
    /// it down the parsing path. A shape that fails to plan is left to that path too, so
    /// errors are reported exactly as they always were.
    pub(super) fn run_through_cache(
        &mut self,
        sql: &str,
        sink: &mut dyn ResultSink,
    ) -> Option<Result<(), SqlError>> {
        if crate::value::truth(&self.state.variable("shale_statement_cache")) == Some(false) {
            return None;
        }
        let sql_mode = self.state.sql_mode;
        let normalized = normalize(sql, quoting_differs(sql_mode))?;
        let generation = self.instance.generation();
        let kept = self
            .statement_cache
            .get(&normalized.text)
            .filter(|e| e.database == self.state.database && e.sql_mode == sql_mode);
        let planned = match kept {
            Some(entry) if entry.generation == generation => {
                if let Err(e) = self.authorize(&entry.needs) {
                    return Some(Err(e));
                }
                crate::status::count(self, Counter::StatementCacheHits, 1);
                self.views_in_use.replace(entry.views.clone());
                Arc::clone(&entry.planned)
            }
            // Stale (DDL since) or planned under other settings: planned again below.
            _ => {
                let planned = self.plan_shape(&normalized.text, sql_mode).ok()?;
                crate::status::count(self, Counter::StatementCacheMisses, 1);
                planned
            }
        };
        let counter = if normalized.replace {
            Counter::ComReplace
        } else {
            Counter::ComInsert
        };
        let (text, params) = (normalized.text, normalized.params);
        Some(crate::ops::observe(self, counter, sql, sink, |s, sink| {
            s.run_rebinding(&planned, &params, sink, |s| {
                let sql_mode = s.state.sql_mode;
                s.plan_shape(&text, sql_mode)
            })
        }))
    }

    /// Parses, plans and authorizes a normalized statement and keeps its plan.
    fn plan_shape(
        &mut self,
        text: &str,
        sql_mode: crate::sql_mode::SqlMode,
    ) -> Result<Arc<Planned>, SqlError> {
        let generation = self.instance.generation();
        let syntax = crate::syntax_mode::Syntax::of(sql_mode);
        let mut statements = crate::parse::parse_as(text, syntax)?;
        if statements.len() != 1 {
            return Err(SqlError::syntax(text, 1));
        }
        let (planned, needs) = self.plan_with_needs(statements.remove(0))?;
        self.authorize(&needs)?;
        let planned = Arc::new(planned);
        self.statement_cache.insert(
            text.to_owned(),
            Entry {
                planned: Arc::clone(&planned),
                generation,
                database: self.state.database.clone(),
                sql_mode,
                needs,
                views: self.views_in_use.borrow().clone(),
            },
        );
        Ok(planned)
    }
}

/// Rule 5: `sql_mode` has ANSI_QUOTES (ANSI includes it) or NO_BACKSLASH_ESCAPES.
fn quoting_differs(sql_mode: crate::sql_mode::SqlMode) -> bool {
    use crate::sql_mode::SqlMode;
    sql_mode.has(SqlMode::ANSI_QUOTES | SqlMode::NO_BACKSLASH_ESCAPES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(sql: &str) -> Option<(String, Vec<Value>)> {
        normalize(sql, false).map(|n| (n.text, n.params))
    }

    fn bytes(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn standalone_literals_become_parameters() {
        let (text, params) =
            shape("INSERT INTO t (id, k, c) VALUES (1, -20, 'a''b'), (2.5, 1e3, \"x\")").unwrap();
        assert_eq!(
            text,
            "INSERT INTO t (id, k, c) VALUES (?0, ?1, ?2), (?3, ?4, ?5)"
        );
        assert_eq!(params[0], Value::Int(1));
        assert_eq!(params[1], Value::Int(-20));
        assert_eq!(params[2], bytes("a'b"));
        assert!(matches!(params[3], Value::Decimal(_)));
        assert_eq!(params[4], Value::Double(1000.0));
        assert_eq!(params[5], bytes("x"));
    }

    #[test]
    fn literals_inside_expressions_stay_in_the_shape() {
        let (text, params) = shape(
            "insert into t values (1 + 2, - 3, CONCAT('a', 'b'), NULL, DEFAULT, x'41', _utf8mb4'z', \
             (4)), ROW(5, ROUND(2.675, 2)) on duplicate key update c = IF(c > 0, 1, 2), d = 'q'",
        )
        .unwrap();
        assert_eq!(
            text,
            "insert into t values (1 + 2, ?0, CONCAT('a', 'b'), NULL, DEFAULT, x'41', _utf8mb4'z', \
             (4)), ROW(?1, ROUND(2.675, 2)) on duplicate key update c = IF(c > 0, 1, 2), d = 'q'"
        );
        assert_eq!(params, vec![Value::Int(-3), Value::Int(5)]);
    }

    #[test]
    fn backslash_escapes_are_read_as_the_parser_reads_them() {
        let (_, params) = shape(r"INSERT INTO t VALUES ('a\nb', 'c\'d')").unwrap();
        assert_eq!(params, vec![bytes("a\nb"), bytes("c'd")]);
    }

    #[test]
    fn statements_outside_the_rules_are_not_normalized() {
        for sql in [
            "SELECT 1",
            "UPDATE t SET a = 1",
            "INSERT INTO t SELECT 1",
            "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
            "INSERT INTO t VALUES (1) -- x",
            "INSERT INTO t VALUES (1) # x",
            "INSERT /* c */ INTO t VALUES (1)",
            "INSERT INTO t VALUES (@a)",
            "INSERT INTO t VALUES (?)",
            "INSERT INTO t VALUES ('a' 'b')",
            "INSERT INTO t VALUES ('open",
            "INSERT INTO t VALUES (0x41)",
            "INSERT INTO t SET a = 1",
        ] {
            assert_eq!(shape(sql), None, "{sql}");
        }
        assert_eq!(normalize("INSERT INTO t VALUES (1)", true), None);
    }

    #[test]
    fn a_trailing_semicolon_and_quoted_identifiers_are_kept() {
        let (text, params) = shape("REPLACE INTO `my``t` VALUES (7) ;  ").unwrap();
        assert_eq!(text, "REPLACE INTO `my``t` VALUES (?0) ;  ");
        assert_eq!(params, vec![Value::Int(7)]);
        assert!(
            normalize("REPLACE INTO t VALUES (7)", false)
                .unwrap()
                .replace
        );
    }
}
