//! MySQL's modifiers of UPDATE and DELETE (`UPDATE [LOW_PRIORITY] [IGNORE] t SET ..`,
//! `DELETE [LOW_PRIORITY] [QUICK] [IGNORE] FROM t ..`), which sqlparser does not parse: it
//! reads `UPDATE IGNORE t SET ..` as an UPDATE of a table named `IGNORE` aliased `t`, and
//! `DELETE IGNORE t1 FROM ..` not at all. They are taken out of the tokens before parsing.
//!
//! Rules:
//! 1. The modifiers are the words right after an unquoted UPDATE or DELETE keyword (white
//!    space and comments between them skipped): UPDATE takes LOW_PRIORITY then IGNORE, in
//!    that order; DELETE takes LOW_PRIORITY, QUICK and IGNORE in any order (MySQL's
//!    grammar). LOW_PRIORITY and IGNORE are reserved words in MySQL, so after these
//!    keywords they are never names; nor is QUICK after DELETE (MySQL's parser reads it as
//!    the modifier there too). Quoted words (`` `ignore` ``) are names and stay.
//! 2. LOW_PRIORITY and QUICK are dropped: they change only table-locking engines.
//! 3. IGNORE becomes an optimizer hint right after the keyword, which sqlparser keeps in the
//!    statement (`optimizer_hints`) for the binder to find ([`has_ignore`]). Its text holds
//!    `*/`, which no comment a client writes can hold, so no hint of the user's is read as
//!    it. Other hints the user wrote stay where they are (Shale ignores them).
//! 4. sqlparser's SQLite conflict clause after UPDATE (`UPDATE OR IGNORE`, `UPDATE OR
//!    REPLACE`, `UPDATE REPLACE`), which MySQL does not have and Shale would otherwise run
//!    as a plain UPDATE, is a syntax error (1064) at its first word.

use sqlparser::ast::{OptimizerHint, OptimizerHintStyle};
use sqlparser::keywords::Keyword;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// The text of the hint IGNORE becomes (rule 3).
const IGNORE_HINT: &str = "*/IGNORE";

/// Takes UPDATE's and DELETE's modifiers out of `tokens` (rules 1 to 3); an SQLite conflict
/// clause after UPDATE is an error (rule 4).
pub(crate) fn take_modifiers(tokens: &mut Vec<TokenWithSpan>) -> Result<(), ParserError> {
    let mut i = 0;
    while i < tokens.len() {
        let Some(keyword) = keyword_at(tokens, i) else {
            i += 1;
            continue;
        };
        let allowed: &[&str] = if keyword == "UPDATE" {
            &["LOW_PRIORITY", "IGNORE"]
        } else {
            &["LOW_PRIORITY", "QUICK", "IGNORE"]
        };
        let mut ignore = false;
        // UPDATE's modifiers come in `allowed`'s order: the first place still open.
        let mut open = 0;
        loop {
            let at = next_significant(tokens, i + 1);
            let Some(word) = word_at(tokens, at) else {
                break;
            };
            let upper = word.to_ascii_uppercase();
            match allowed.iter().position(|w| *w == upper) {
                Some(p) if keyword == "DELETE" || p >= open => {
                    open = p + 1;
                    ignore |= upper == "IGNORE";
                    // Only the word goes: comments before it (the user's hints) stay.
                    tokens.remove(at);
                }
                // A reserved word out of its place.
                Some(_) => return Err(unexpected(&tokens[at])),
                None if keyword == "UPDATE" && (upper == "OR" || upper == "REPLACE") => {
                    return Err(unexpected(&tokens[at]));
                }
                None => break,
            }
        }
        if ignore {
            let span = tokens[i].span;
            tokens.insert(
                i + 1,
                TokenWithSpan::new(
                    Token::Whitespace(Whitespace::MultiLineComment(format!("+{IGNORE_HINT}"))),
                    span,
                ),
            );
        }
        i += 1;
    }
    Ok(())
}

/// sqlparser's error for `found` where a table name belongs, which parse.rs turns into
/// MySQL's 1064 near it.
fn unexpected(found: &TokenWithSpan) -> ParserError {
    ParserError::ParserError(format!(
        "Expected: a table name, found: {}{}",
        found.token, found.span.start
    ))
}

/// Whether a statement's hints hold the IGNORE modifier (rule 3).
pub(crate) fn has_ignore(hints: &[OptimizerHint]) -> bool {
    hints.iter().any(|h| {
        h.prefix.is_empty() && h.text == IGNORE_HINT && h.style == OptimizerHintStyle::MultiLine
    })
}

/// "UPDATE" or "DELETE" when `tokens[i]` is that keyword, unquoted.
fn keyword_at(tokens: &[TokenWithSpan], i: usize) -> Option<&'static str> {
    match &tokens.get(i)?.token {
        Token::Word(w) if w.quote_style.is_none() => match w.keyword {
            Keyword::UPDATE => Some("UPDATE"),
            Keyword::DELETE => Some("DELETE"),
            _ => None,
        },
        _ => None,
    }
}

/// The unquoted word at `tokens[i]`.
pub(crate) fn word_at(tokens: &[TokenWithSpan], i: usize) -> Option<&str> {
    match &tokens.get(i)?.token {
        Token::Word(w) if w.quote_style.is_none() => Some(&w.value),
        _ => None,
    }
}

/// The first token at or after `from` that is not white space or a comment.
pub(crate) fn next_significant(tokens: &[TokenWithSpan], from: usize) -> usize {
    let mut i = from;
    while matches!(tokens.get(i), Some(t) if matches!(t.token, Token::Whitespace(_))) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::Statement;

    use crate::syntax_mode::{parse_statements, Syntax};

    fn parse(sql: &str) -> Result<Vec<Statement>, String> {
        parse_statements(sql, Syntax::DEFAULT).map_err(|e| e.to_string())
    }

    /// The statement's IGNORE and its text as sqlparser prints it without hints.
    fn read(sql: &str) -> (bool, String) {
        let mut s = parse(sql).unwrap().remove(0);
        let ignore = match &mut s {
            Statement::Update(u) => {
                let i = super::has_ignore(&u.optimizer_hints);
                u.optimizer_hints.clear();
                i
            }
            Statement::Delete(d) => {
                let i = super::has_ignore(&d.optimizer_hints);
                d.optimizer_hints.clear();
                i
            }
            other => panic!("not UPDATE or DELETE: {other}"),
        };
        (ignore, s.to_string())
    }

    #[test]
    fn modifiers_are_taken_out_and_ignore_marked() {
        assert_eq!(
            read("UPDATE IGNORE t SET a = 1"),
            (true, "UPDATE t SET a = 1".into())
        );
        assert_eq!(
            read("update low_priority\n ignore t AS x SET x.a = 1"),
            (true, "UPDATE t AS x SET x.a = 1".into())
        );
        assert_eq!(
            read("UPDATE LOW_PRIORITY t SET a = 1"),
            (false, "UPDATE t SET a = 1".into())
        );
        assert_eq!(
            read("DELETE QUICK IGNORE LOW_PRIORITY FROM t WHERE a = 1"),
            (true, "DELETE FROM t WHERE a = 1".into())
        );
        assert_eq!(
            read("DELETE IGNORE t1 FROM t1 JOIN t2 ON t1.a = t2.a"),
            (true, "DELETE t1 FROM t1 JOIN t2 ON t1.a = t2.a".into())
        );
        assert_eq!(
            read("DELETE /* c */ IGNORE FROM t"),
            (true, "DELETE FROM t".into())
        );
        assert_eq!(read("DELETE FROM t"), (false, "DELETE FROM t".into()));
        // Quoted, the word is a table name.
        assert_eq!(
            read("UPDATE `ignore` SET a = 1"),
            (false, "UPDATE `ignore` SET a = 1".into())
        );
        // Each statement of a text.
        let both = parse("UPDATE IGNORE t SET a = 1; DELETE IGNORE FROM t").unwrap();
        assert!(matches!(&both[0], Statement::Update(u) if super::has_ignore(&u.optimizer_hints)));
        assert!(matches!(&both[1], Statement::Delete(d) if super::has_ignore(&d.optimizer_hints)));
    }

    #[test]
    fn a_hint_the_user_wrote_is_not_ignore() {
        // A comment ends at its first `*/`: the marker's text cannot be written.
        assert!(parse("UPDATE /*+*/IGNORE*/ t SET a = 1").is_err());
        let (ignore, _) = read("UPDATE /*+ IGNORE */ t SET a = 1");
        assert!(!ignore);
        let (ignore, _) = read("UPDATE /*+ NO_ICP(t) */ IGNORE t SET a = 1");
        assert!(ignore);
    }

    #[test]
    fn misplaced_modifiers_and_sqlite_clauses_are_syntax_errors() {
        // MySQL's UPDATE takes LOW_PRIORITY before IGNORE only.
        assert!(parse("UPDATE IGNORE LOW_PRIORITY t SET a = 1").is_err());
        assert!(parse("UPDATE QUICK t SET a = 1").is_ok_and(|s| {
            // QUICK is no UPDATE modifier: a table named quick aliased t.
            s[0].to_string() == "UPDATE QUICK t SET a = 1"
        }));
        for sql in [
            "UPDATE OR IGNORE t SET a = 1",
            "UPDATE OR REPLACE t SET a = 1",
            "UPDATE REPLACE t SET a = 1",
            "UPDATE IGNORE OR IGNORE t SET a = 1",
        ] {
            let e = parse(sql).unwrap_err();
            assert!(
                e.contains("found: OR") || e.contains("found: REPLACE"),
                "{sql}: {e}"
            );
        }
    }
}
