//! A prepared statement's `?` placeholders, numbered in the order they appear in its text.
//!
//! The binder meets a statement's parts in its own order (a SELECT's FROM and WHERE before its
//! select list, for one), so numbering `?` as it binds them would hand a placeholder another
//! one's parameter. A prepared statement's text is therefore rewritten before it is parsed:
//! each `?` becomes `?N`, N counting from 0 in text order, and the binder takes N as the
//! parameter's index (bind.rs, `literal`).

use std::borrow::Cow;

use sqlparser::tokenizer::{Token, Tokenizer};

use crate::syntax_mode::{ModeDialect, Syntax};

/// `sql` with every `?` placeholder numbered (unchanged when it has none, or does not
/// tokenize: the parser reports that). Even a lone `?` is numbered: a rewrite may copy it
/// (row_compare.rs). `syntax` is the one the text is parsed under, so a `?` inside a
/// string literal is never taken for a placeholder, whatever the quoting rules.
pub(crate) fn number(sql: &str, syntax: Syntax) -> Cow<'_, str> {
    let dialect = ModeDialect::new(syntax);
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize_with_location() else {
        return Cow::Borrowed(sql);
    };
    let starts: Vec<(u64, u64)> = tokens
        .iter()
        .filter(|t| matches!(&t.token, Token::Placeholder(p) if p == "?"))
        .map(|t| (t.span.start.line, t.span.start.column))
        .collect();
    if starts.is_empty() {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len() + 4 * starts.len());
    let mut next = starts.iter().peekable();
    let mut number = 0;
    for (line_index, line) in sql.split_inclusive('\n').enumerate() {
        let line_number = line_index as u64 + 1;
        for (column_index, ch) in line.chars().enumerate() {
            out.push(ch);
            if next.peek() == Some(&&(line_number, column_index as u64 + 1)) {
                if ch != '?' {
                    // The tokenizer counted lines or columns another way (a lone `\r`, say):
                    // leave the text alone rather than number the wrong characters.
                    return Cow::Borrowed(sql);
                }
                out.push_str(&number.to_string());
                number += 1;
                next.next();
            }
        }
    }
    if next.peek().is_some() {
        return Cow::Borrowed(sql);
    }
    Cow::Owned(out)
}

/// The parameter index of a numbered placeholder (`?N`); None for a plain `?`.
pub(crate) fn index(placeholder: &str) -> Option<usize> {
    placeholder.strip_prefix('?')?.parse().ok()
}

/// `text` (an expression as printed, for a column name) with numbered placeholders shown as
/// the client wrote them, `?`.
pub(crate) fn unnumber(text: String) -> String {
    if !text.contains('?') {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut quote = None;
    let mut after_placeholder = false;
    for ch in text.chars() {
        if after_placeholder && ch.is_ascii_digit() {
            continue;
        }
        after_placeholder = false;
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if matches!(ch, '\'' | '"' | '`') => quote = Some(ch),
            None => after_placeholder = ch == '?',
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(sql: &str) -> Cow<'_, str> {
        super::number(sql, Syntax::DEFAULT)
    }

    #[test]
    fn placeholders_are_numbered_in_text_order_and_nothing_else_changes() {
        assert_eq!(
            number("SELECT a + ?, '?' FROM t WHERE b IN (SELECT c FROM u WHERE d >= ?)"),
            "SELECT a + ?0, '?' FROM t WHERE b IN (SELECT c FROM u WHERE d >= ?1)"
        );
        assert_eq!(
            number("SELECT ?,\n  `é?` -- ?\n  , ? /* ? */ , ?"),
            "SELECT ?0,\n  `é?` -- ?\n  , ?1 /* ? */ , ?2"
        );
        assert_eq!(number("SELECT ? FROM t"), "SELECT ?0 FROM t");
        assert_eq!(number("SELECT 1 FROM t"), "SELECT 1 FROM t");
        assert_eq!(number("SELECT 'open"), "SELECT 'open");
        // Whatever the tokenizer makes of odd line breaks, no other character is numbered.
        for text in ["SELECT ?,\r?", "SELECT \r\n?, ?", "\u{2028}? ?"] {
            let numbered = number(text);
            assert_eq!(numbered.replace(|c: char| c.is_ascii_digit(), ""), text);
        }
        assert_eq!(unnumber("a + ?10 * '?3'".into()), "a + ? * '?3'");
        assert_eq!(index("?12"), Some(12));
        assert_eq!(index("?"), None);
    }

    #[test]
    fn a_question_mark_in_a_string_is_no_placeholder_under_any_quoting() {
        let no_backslash = Syntax {
            no_backslash_escapes: true,
            ..Syntax::DEFAULT
        };
        // `'a\'` ends at its second quote only when `\` escapes nothing.
        assert_eq!(
            super::number("SELECT 'a\\', ?, '?'", no_backslash),
            "SELECT 'a\\', ?0, '?'"
        );
        let ansi = Syntax {
            ansi_quotes: true,
            ..Syntax::DEFAULT
        };
        assert_eq!(
            super::number("SELECT \"?\" FROM t WHERE a = ?", ansi),
            "SELECT \"?\" FROM t WHERE a = ?0"
        );
    }
}
