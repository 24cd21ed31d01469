//! MySQL function-call syntax sqlparser cannot read, rewritten by parse.rs's pre-pass
//! (rules 7 and 8 there) into forms it parses and Shale binds the same way.
//!
//! Rules:
//! 1. `INTERVAL(n, n1, ...)`, the comparison function, becomes `` `INTERVAL`(n, n1, ...) ``:
//!    sqlparser reads `INTERVAL (` as the start of a temporal interval. A call is told from
//!    an interval (`INTERVAL (1 + 1) DAY`) by a comma directly inside its parentheses. The
//!    quoted name binds as INTERVAL (list_funcs.rs), and [`printed_name`] gives the column
//!    name back its plain spelling.
//! 2. `CHAR(n, ... USING cs)` becomes `CONVERT(CHAR(n, ...) USING cs)`, which is what it
//!    means: the bytes of CHAR read in character set `cs`. A CHAR without a `USING` directly
//!    inside its parentheses (a function call, a type `CHAR(10)`) is left alone.
//! 3. Text inside quotes (`'`, `"`, `` ` ``) and comments is never changed; words after a
//!    `.` (`t.interval`) are names, not these functions.

/// Rules 1 and 2 over a statement's text; the text itself when neither applies.
pub(crate) fn rewrite(sql: &str) -> String {
    let b = sql.as_bytes();
    let may_apply = b.windows(8).any(|w| w.eq_ignore_ascii_case(b"INTERVAL"))
        || b.windows(5).any(|w| w.eq_ignore_ascii_case(b"USING"));
    if !may_apply {
        return sql.to_string();
    }
    let mut out = String::with_capacity(sql.len() + 16);
    rewrite_into(sql, &mut out);
    out
}

/// Rule 1: a column name printed from a rewritten INTERVAL call, in its written form.
pub(crate) fn printed_name(text: String) -> String {
    if text.contains("`INTERVAL`(") {
        text.replace("`INTERVAL`(", "INTERVAL(")
    } else {
        text
    }
}

/// The end (exclusive) of a quoted text starting at `i` (the text's length when it is not
/// closed).
pub(crate) fn skip_quoted(b: &[u8], mut i: usize) -> usize {
    let q = b[i];
    i += 1;
    while i < b.len() && b[i] != q {
        if b[i] == b'\\' && q != b'`' {
            i += 1;
        }
        i += 1;
    }
    (i + 1).min(b.len())
}

/// The index of the `)` closing the `(` at `open`, None when it is not closed.
fn closing_paren(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' | b'`' => {
                i = skip_quoted(b, i);
                continue;
            }
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// What lies directly inside the parentheses `inner` (no nesting): whether a top-level
/// comma appears, and where a top-level word `USING` starts.
fn top_level(inner: &str) -> (bool, Option<usize>) {
    let b = inner.as_bytes();
    let (mut comma, mut using) = (false, None);
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' | b'`' => {
                i = skip_quoted(b, i);
                continue;
            }
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => comma = true,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                if depth == 0 && using.is_none() && inner[start..i].eq_ignore_ascii_case("USING") {
                    using = Some(start);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (comma, using)
}

fn rewrite_into(sql: &str, out: &mut String) {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' | b'`' => {
                let end = skip_quoted(b, i);
                out.push_str(&sql[i..end]);
                i = end;
            }
            b'-' if b[i..].starts_with(b"-- ") => {
                let end = sql[i..].find('\n').map_or(b.len(), |e| i + e);
                out.push_str(&sql[i..end]);
                i = end;
            }
            b'/' if b[i..].starts_with(b"/*") => {
                let end = sql[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                out.push_str(&sql[i..end]);
                i = end;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                let word = &sql[start..i];
                let after_dot = start > 0 && b[start - 1] == b'.';
                let mut open = i;
                while open < b.len() && b[open].is_ascii_whitespace() {
                    open += 1;
                }
                let call = !after_dot
                    && open < b.len()
                    && b[open] == b'('
                    && (word.eq_ignore_ascii_case("INTERVAL") || word.eq_ignore_ascii_case("CHAR"));
                let Some(close) = call.then(|| closing_paren(b, open)).flatten() else {
                    out.push_str(word);
                    continue;
                };
                let inner = &sql[open + 1..close];
                let (comma, using) = top_level(inner);
                if word.eq_ignore_ascii_case("INTERVAL") && comma {
                    out.push_str("`INTERVAL`(");
                    rewrite_into(inner, out);
                    out.push(')');
                    i = close + 1;
                } else if let (true, Some(at)) = (word.eq_ignore_ascii_case("CHAR"), using) {
                    out.push_str("CONVERT(");
                    out.push_str(word);
                    out.push('(');
                    rewrite_into(inner[..at].trim_end(), out);
                    out.push_str(") ");
                    out.push_str(inner[at..].trim_end());
                    out.push(')');
                    i = close + 1;
                } else {
                    out.push_str(word);
                }
            }
            _ => {
                let len = sql[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&sql[i..i + len]);
                i += len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_calls_are_quoted_and_intervals_kept() {
        assert_eq!(
            rewrite("SELECT INTERVAL(23, 1, 15), interval (5,1)"),
            "SELECT `INTERVAL`(23, 1, 15), `INTERVAL`(5,1)"
        );
        for kept in [
            "SELECT d + INTERVAL (1 + 1) DAY",
            "SELECT DATE_ADD(d, INTERVAL 1 DAY)",
            "SELECT t.interval(1, 2)",
            "SELECT 'INTERVAL(1, 2)'",
            "SELECT `INTERVAL`",
        ] {
            assert_eq!(rewrite(kept), kept);
        }
        assert_eq!(
            rewrite("SELECT INTERVAL(INTERVAL(3, 1, 5), 0, 1)"),
            "SELECT `INTERVAL`(`INTERVAL`(3, 1, 5), 0, 1)"
        );
    }

    #[test]
    fn char_using_becomes_convert() {
        assert_eq!(
            rewrite("SELECT CHAR(77, 121 USING utf8mb4), CHAR(65)"),
            "SELECT CONVERT(CHAR(77, 121) USING utf8mb4), CHAR(65)"
        );
        assert_eq!(
            rewrite("SELECT char(0x41 using latin1 )"),
            "SELECT CONVERT(char(0x41) using latin1)"
        );
        for kept in [
            "CREATE TABLE t (c CHAR(10))",
            "SELECT CAST(x AS CHAR(10))",
            "SELECT CONVERT(x USING utf8mb4)",
            "SELECT 'CHAR(1 USING x)'",
        ] {
            assert_eq!(rewrite(kept), kept);
        }
    }
}
