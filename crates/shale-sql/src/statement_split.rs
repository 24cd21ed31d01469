//! Where one statement of a multi-statement text ends. MySQL reads and runs such a text one
//! statement at a time, each under the session state its predecessors left (a `SET sql_mode`
//! changes how the next statement parses, `SET NAMES` how its bytes decode), so the session
//! (session.rs) and the server (shale-server's command.rs, before decoding bytes) take the
//! first statement off, run it, and split the rest afterwards.
//!
//! A lexical scan, not a parse: a `;` ends a statement unless it is inside a quoted string
//! (`'...'`, `"..."`, with doubled quotes, and backslash escapes unless NO_BACKSLASH_ESCAPES),
//! a quoted name (`` `...` ``), or a comment (`-- `, `#`, `/* */`). Text after a `;` that is
//! only whitespace and comments is no statement, so `SELECT 1;` is one; a `/*!...*/` or
//! `/*+...*/` comment there holds SQL and is one.
//!
//! Invariant: when in doubt (an unterminated quote or comment) the rest of the text is one
//! statement, for the parser to report the syntax error: a split never cuts a valid
//! statement. The bytes that matter (`;`, quotes, comment marks) are ASCII, and every
//! character set Shale reads is ASCII-compatible, so the scan works on undecoded bytes too
//! and its cuts fall on character boundaries of UTF-8 text.

/// How the text's string literals are read: the one mode that moves a statement's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lexing {
    /// False under NO_BACKSLASH_ESCAPES: `\` is then an ordinary character in strings.
    pub backslash_escapes: bool,
}

impl Default for Lexing {
    fn default() -> Self {
        Lexing {
            backslash_escapes: true,
        }
    }
}

/// The first statement of `sql` (without its `;`) and the text after that `;`, or None when
/// `sql` holds one statement (maybe with a trailing `;`, whitespace and comments).
pub fn split_first(sql: &[u8], lexing: Lexing) -> Option<(&[u8], &[u8])> {
    let end = first_separator(sql, lexing)?;
    let rest = &sql[end + 1..];
    holds_statement(rest).then_some((&sql[..end], rest))
}

/// True if `sql` has a second statement after a top-level `;`.
pub fn has_several_statements(sql: &[u8], lexing: Lexing) -> bool {
    split_first(sql, lexing).is_some()
}

/// [`split_first`] on text.
pub fn split_first_str(sql: &str, lexing: Lexing) -> Option<(&str, &str)> {
    let (first, rest) = split_first(sql.as_bytes(), lexing)?;
    // The cuts are at an ASCII `;` (module docs), so both halves are whole characters.
    Some((&sql[..first.len()], &sql[sql.len() - rest.len()..]))
}

/// The index of the first top-level `;`, or None (none, or an unterminated quote or comment
/// before one).
fn first_separator(sql: &[u8], lexing: Lexing) -> Option<usize> {
    let mut i = 0;
    while i < sql.len() {
        match sql[i] {
            b'\'' | b'"' | b'`' => i = skip_quoted(sql, i, lexing)?,
            b'#' => i = skip_line(sql, i),
            b'-' if starts_dash_comment(sql, i) => i = skip_line(sql, i),
            b'/' if sql.get(i + 1) == Some(&b'*') => i = find(sql, i + 2, b"*/")? + 2,
            b';' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Whether `rest` holds more than whitespace and plain comments.
fn holds_statement(rest: &[u8]) -> bool {
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'#' => i = skip_line(rest, i),
            b'-' if starts_dash_comment(rest, i) => i = skip_line(rest, i),
            b'/' if rest.get(i + 1) == Some(&b'*') => {
                // `/*!...*/` and `/*+...*/` hold SQL.
                if matches!(rest.get(i + 2), Some(b'!' | b'+')) {
                    return true;
                }
                match find(rest, i + 2, b"*/") {
                    Some(end) => i = end + 2,
                    None => return false,
                }
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => return true,
        }
    }
    false
}

/// `-- ` starts a comment only with whitespace (or the end) after the dashes: `5--3` is 8.
fn starts_dash_comment(sql: &[u8], i: usize) -> bool {
    sql.get(i + 1) == Some(&b'-') && sql.get(i + 2).is_none_or(u8::is_ascii_whitespace)
}

/// The index after the closing quote of the quoted run starting at `start`.
fn skip_quoted(sql: &[u8], start: usize, lexing: Lexing) -> Option<usize> {
    let quote = sql[start];
    let mut i = start + 1;
    while i < sql.len() {
        let c = sql[i];
        if c == b'\\' && quote != b'`' && lexing.backslash_escapes {
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

    const ESCAPES: Lexing = Lexing {
        backslash_escapes: true,
    };

    /// Every statement of `sql`, split one at a time as the session does.
    fn all(sql: &str, lexing: Lexing) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = sql;
        while let Some((first, after)) = split_first_str(rest, lexing) {
            out.push(first);
            rest = after;
        }
        out.push(rest);
        out
    }

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
            "SELECT /* unterminated; DROP TABLE t",
            "",
        ] {
            assert!(!has_several_statements(sql.as_bytes(), ESCAPES), "{sql}");
            assert_eq!(all(sql, ESCAPES), vec![sql]);
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
            assert!(has_several_statements(sql.as_bytes(), ESCAPES), "{sql}");
        }
    }

    #[test]
    fn statements_come_off_one_at_a_time() {
        assert_eq!(
            all(
                "SET NAMES latin1; SELECT 'a;b' -- ;\n; SELECT 2; /* end */ ",
                ESCAPES
            ),
            vec![
                "SET NAMES latin1",
                " SELECT 'a;b' -- ;\n",
                " SELECT 2; /* end */ "
            ]
        );
        // Empty statements between separators stay, for the parser to call empty (1065).
        assert_eq!(
            all("SELECT 1;;SELECT 2", ESCAPES),
            vec!["SELECT 1", "", "SELECT 2"]
        );
        assert_eq!(
            all("SELECT 'é;'; SELECT 'ü'", ESCAPES),
            vec!["SELECT 'é;'", " SELECT 'ü'"]
        );
    }

    #[test]
    fn no_backslash_escapes_moves_the_end_of_a_string() {
        let literal = Lexing {
            backslash_escapes: false,
        };
        let sql = r"SELECT 'a\'; SELECT 2";
        // With escapes the quote is escaped and the string never ends: one statement.
        assert_eq!(all(sql, ESCAPES), vec![sql]);
        assert_eq!(all(sql, literal), vec![r"SELECT 'a\'", " SELECT 2"]);
    }
}
