//! Whether a COM_QUERY text holds more than one statement, for clients that did not set
//! `CLIENT_MULTI_STATEMENTS`: MySQL refuses a second statement from them with a syntax error
//! (the usual defence against stacked-query injection), so this server does too, before
//! anything runs.
//!
//! A lexical scan, not a parse: a `;` separates statements unless it is inside a quoted string
//! (`'...'`, `"..."`, with backslash escapes and doubled quotes), a quoted name (`` `...` ``), or
//! a comment (`-- `, `#`, `/* */`). Only text after the last `;` that is more than whitespace
//! and comments counts, so `SELECT 1;` is one statement.
//!
//! Invariant: when in doubt (an unterminated quote or comment) the text counts as one
//! statement, and the SQL layer reports the syntax error itself; this check never refuses a
//! single valid statement.

/// True if `sql` has a second statement after a top-level `;`.
pub fn has_several_statements(sql: &[u8]) -> bool {
    let mut i = 0;
    let mut after_separator = false;
    while i < sql.len() {
        let c = sql[i];
        match c {
            b'\'' | b'"' | b'`' => {
                if after_separator {
                    return true;
                }
                match skip_quoted(sql, i) {
                    Some(end) => i = end,
                    None => return false,
                }
            }
            b'#' => i = skip_line(sql, i),
            b'-' if sql.get(i + 1) == Some(&b'-')
                && sql.get(i + 2).is_none_or(u8::is_ascii_whitespace) =>
            {
                i = skip_line(sql, i);
            }
            b'/' if sql.get(i + 1) == Some(&b'*') => {
                // `/*!...*/` and `/*+...*/` hold SQL; anything after a `;` is a statement.
                if after_separator && matches!(sql.get(i + 2), Some(b'!' | b'+')) {
                    return true;
                }
                match find(sql, i + 2, b"*/") {
                    Some(end) => i = end + 2,
                    None => return false,
                }
            }
            b';' => {
                after_separator = true;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                if after_separator {
                    return true;
                }
                i += 1;
            }
        }
    }
    false
}

/// The statements of a multi-statement text, when one of them may change how the next ones
/// are read (`SET NAMES`, `SET CHARACTER SET`, `SET character_set_client`, ...): MySQL reads
/// each statement of a text in the character sets in force when it starts, so such a text
/// is converted and run one statement at a time (command.rs). None for a single statement
/// or a text that names no character set, which runs whole. Pieces are split at top-level
/// `;` by the same scan as [`has_several_statements`]; a last piece of only whitespace and
/// comments is dropped. Every character set Shale reads is ASCII-compatible, so the bytes
/// `;`, quotes and comment marks mean the same before the text is decoded.
pub fn statements_changing_charsets(sql: &[u8]) -> Option<Vec<&[u8]>> {
    // Most texts hold one statement: that scan first, then the words (without a copy).
    if !has_several_statements(sql) {
        return None;
    }
    let names_charset = [
        &b"names"[..],
        b"character",
        b"charset",
        b"collation_connection",
    ]
    .iter()
    .any(|word| {
        sql.windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word))
    });
    if !names_charset {
        return None;
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < sql.len() {
        match sql[i] {
            b'\'' | b'"' | b'`' => match skip_quoted(sql, i) {
                Some(end) => i = end,
                None => break,
            },
            b'#' => i = skip_line(sql, i),
            b'-' if sql.get(i + 1) == Some(&b'-')
                && sql.get(i + 2).is_none_or(u8::is_ascii_whitespace) =>
            {
                i = skip_line(sql, i);
            }
            b'/' if sql.get(i + 1) == Some(&b'*') => match find(sql, i + 2, b"*/") {
                Some(end) => i = end + 2,
                None => break,
            },
            b';' => {
                pieces.push(&sql[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    let rest = &sql[start..];
    // `x;rest` has a second statement only when `rest` is more than whitespace and comments.
    if has_several_statements(&[b"x;", rest].concat()) {
        pieces.push(rest);
    }
    Some(pieces)
}

/// The index after the closing quote of the quoted run starting at `start`.
fn skip_quoted(sql: &[u8], start: usize) -> Option<usize> {
    let quote = sql[start];
    let mut i = start + 1;
    while i < sql.len() {
        let c = sql[i];
        if c == b'\\' && quote != b'`' {
            i += 2;
        } else if c == quote {
            if sql.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return Some(i + 1);
            }
        } else {
            i += 1;
        }
    }
    None
}

fn skip_line(sql: &[u8], start: usize) -> usize {
    sql[start..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(sql.len(), |p| start + p + 1)
}

fn find(sql: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    sql.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_statement_with_semicolons_inside_quotes_comments_or_at_the_end() {
        for sql in [
            "SELECT 1",
            "SELECT 1;",
            "SELECT 1 ;  \n ",
            "SELECT 1; -- done",
            "SELECT 1; # done",
            "SELECT 1; /* done */",
            "SELECT 'a;b'",
            "SELECT 'it''s; fine'",
            r"SELECT 'it\'s; fine'",
            "SELECT \"x;y\"",
            "SELECT `we;ird` FROM t",
            "SELECT 1 -- ; DROP TABLE t\n",
            "SELECT 1 # ; DROP TABLE t",
            "SELECT /* ; DROP */ 1",
            "SELECT 5--3",
            "SELECT 'unterminated; DROP TABLE t",
            "",
        ] {
            assert!(!has_several_statements(sql.as_bytes()), "{sql}");
        }
    }

    #[test]
    fn texts_that_change_charsets_split_into_statements() {
        let split = |sql: &str| {
            statements_changing_charsets(sql.as_bytes()).map(|v| {
                v.iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect()
            })
        };
        assert_eq!(split("SELECT 1; SELECT 2"), None);
        assert_eq!(split("SET NAMES latin1"), None);
        assert_eq!(
            split("SET NAMES latin1; SELECT 'a;b' -- ;\n; SELECT 2; /* end */ "),
            Some(vec![
                "SET NAMES latin1".to_owned(),
                " SELECT 'a;b' -- ;\n".to_owned(),
                " SELECT 2".to_owned(),
            ])
        );
        assert_eq!(
            split("SET character_set_client = latin1;SELECT 1"),
            Some(vec![
                "SET character_set_client = latin1".to_owned(),
                "SELECT 1".to_owned()
            ])
        );
    }

    #[test]
    fn a_second_statement_is_found() {
        for sql in [
            "SELECT 1; SELECT 2",
            "SELECT 1;SELECT 2;",
            "SELECT ';'; DROP TABLE t",
            "SELECT 1; -- x\n DROP TABLE t",
            "SELECT 1; 'x'",
            "SELECT 1; /*!40101 SET NAMES utf8 */",
            "SELECT 5--3; SELECT 2",
        ] {
            assert!(has_several_statements(sql.as_bytes()), "{sql}");
        }
    }
}
