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
