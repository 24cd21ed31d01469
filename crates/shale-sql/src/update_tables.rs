//! MySQL's comma-separated table list of a multi-table UPDATE (`UPDATE t1, t2 SET t1.a =
//! t2.b WHERE t1.id = t2.id`), which sqlparser does not parse: it reads one table with its
//! joins before SET.
//!
//! Rules:
//! 1. Only tried when the text fails to parse as it is (parse.rs), so no other statement
//!    pays for the scan.
//! 2. The commas between UPDATE and SET at parenthesis depth 0 become `CROSS JOIN`, which
//!    the multi-table UPDATE binds as MySQL binds the comma (an inner join without a
//!    condition; the WHERE joins). Text inside quotes is never changed; a comment before
//!    SET, or a text of several statements, is left alone (the parse error stands).
//! 3. MySQL gives the comma a lower precedence than JOIN, so `t1, t2 JOIN t3 ON c` is
//!    `t1, (t2 JOIN t3 ON c)`; read as `(t1 CROSS JOIN t2) JOIN t3 ON c` the rows are the
//!    same for inner and outer joins (the cross product is associative with them), and the
//!    only difference is that `c` may name `t1`, which MySQL refuses with 1054.

use crate::func_syntax::skip_quoted;

/// The text with its UPDATE table list's commas made `CROSS JOIN` (rule 2); `None` when the
/// text is not such an UPDATE.
pub(crate) fn comma_tables_as_joins(sql: &str) -> Option<String> {
    let start = sql.len() - sql.trim_start().len();
    let body = &sql[start..];
    if !crate::parse::starts_with_any(body, &["UPDATE"]) {
        return None;
    }
    let bytes = sql.as_bytes();
    let mut commas = Vec::new();
    let mut depth = 0usize;
    let mut i = start + "UPDATE".len();
    let set_at = loop {
        let b = *bytes.get(i)?;
        match b {
            b'\'' | b'"' | b'`' => i = skip_quoted(bytes, i),
            b'#' | b';' => return None,
            b'-' if bytes.get(i + 1) == Some(&b'-') => return None,
            b'/' if bytes.get(i + 1) == Some(&b'*') => return None,
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            b',' if depth == 0 => {
                commas.push(i);
                i += 1;
            }
            _ if b.is_ascii_alphabetic() || b == b'_' => {
                let word_start = i;
                while bytes
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$')
                {
                    i += 1;
                }
                let word = &sql[word_start..i];
                let after_dot = word_start > 0 && bytes[word_start - 1] == b'.';
                if depth == 0 && !after_dot && word.eq_ignore_ascii_case("SET") {
                    break word_start;
                }
            }
            _ => i += 1,
        }
    };
    if commas.is_empty() {
        return None;
    }
    // The rest of the text must be this one statement (rule 2).
    if has_statement_end(&sql[set_at..]) {
        return None;
    }
    Some(crate::parse::replace_at(sql, &commas, 1, " CROSS JOIN "))
}

/// Whether `text` has a `;` outside quotes before its end (trailing white space and `;`
/// excepted).
fn has_statement_end(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' | b'`' => i = skip_quoted(bytes, i),
            b';' => return !text[i + 1..].trim().trim_matches(';').trim().is_empty(),
            _ => i += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::comma_tables_as_joins as rewrite;

    #[test]
    fn commas_before_set_become_cross_joins() {
        assert_eq!(
            rewrite("UPDATE t1, t2 SET t1.a = t2.b WHERE t1.id = t2.id").as_deref(),
            Some("UPDATE t1 CROSS JOIN  t2 SET t1.a = t2.b WHERE t1.id = t2.id")
        );
        assert_eq!(
            rewrite("  update IGNORE d.t1 AS x,(SELECT 1 AS a, 2 AS b) AS y set x.a = y.b")
                .as_deref(),
            Some("  update IGNORE d.t1 AS x CROSS JOIN (SELECT 1 AS a, 2 AS b) AS y set x.a = y.b")
        );
        // Commas after SET, in quotes and in parentheses stay.
        assert_eq!(
            rewrite("UPDATE `a,b`, t SET `a,b`.x = 1, t.y = ','").as_deref(),
            Some("UPDATE `a,b` CROSS JOIN  t SET `a,b`.x = 1, t.y = ','")
        );
        assert_eq!(
            rewrite("UPDATE t1, t2 SET t1.a = 1;").as_deref(),
            Some("UPDATE t1 CROSS JOIN  t2 SET t1.a = 1;")
        );
    }

    #[test]
    fn other_texts_are_left_alone() {
        assert_eq!(rewrite("UPDATE t SET a = 1, b = 2"), None);
        assert_eq!(rewrite("SELECT 1, 2"), None);
        assert_eq!(rewrite("UPDATE t1, t2 SET a = 1; SELECT 1"), None);
        assert_eq!(rewrite("UPDATE t1, /* c */ t2 SET a = 1"), None);
        assert_eq!(rewrite("UPDATE t1, t2"), None);
        assert_eq!(rewrite("UPDATE 't1, t2"), None);
        assert_eq!(rewrite("UPDATE t1, t2) SET a = 1"), None);
        // A column named `set` after a dot is not the SET clause.
        assert_eq!(
            rewrite("UPDATE t1 JOIN t2 ON t1.set = 1, t3 SET a = 1").as_deref(),
            Some("UPDATE t1 JOIN t2 ON t1.set = 1 CROSS JOIN  t3 SET a = 1")
        );
    }
}
