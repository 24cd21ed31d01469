//! MySQL's `:=` as SET's assignment operator (`SET @n := 5, @m := @n + 1`), which sqlparser
//! does not parse there.
//!
//! Rules:
//! 1. Only tried when the text fails to parse as it is (parse.rs), so no other statement
//!    pays for the scan.
//! 2. A `:=` becomes `=` only where it assigns: outside quotes and parentheses, right after a
//!    variable name that follows SET, a scope word (SESSION, GLOBAL, LOCAL, PERSIST) or a
//!    top-level comma. A `:=` inside an expression (`SET @a = (@b := 1)`) is left as it is:
//!    it is the assignment operator there (user_vars.rs), never a comparison.

use crate::func_syntax::skip_quoted;

/// The text with SET's assigning `:=` made `=` (rule 2); `None` when there is none.
pub(crate) fn colon_equals_as_equals(sql: &str) -> Option<String> {
    if !crate::parse::starts_with_any(sql, &["SET"]) {
        return None;
    }
    let bytes = sql.as_bytes();
    let start = sql.len() - sql.trim_start().len() + "SET".len();
    // Where an assignment may start: after SET, and after each top-level comma.
    let mut assignment_start = start;
    let mut depth = 0usize;
    let mut found = Vec::new();
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' | b'`' => {
                i = skip_quoted(bytes, i);
                continue;
            }
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => assignment_start = i + 1,
            b':' if depth == 0
                && bytes.get(i + 1) == Some(&b'=')
                && is_variable_target(&sql[assignment_start..i]) =>
            {
                found.push(i);
            }
            _ => {}
        }
        i += 1;
    }
    if found.is_empty() {
        return None;
    }
    Some(crate::parse::replace_at(sql, &found, 2, " ="))
}

/// Whether `text` (from an assignment's start to a `:=`) is an optional scope word and one
/// variable name: `@x`, `@@session.x`, `sql_mode`, `SESSION sql_mode`.
fn is_variable_target(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let (Some(first), second, None) = (words.next(), words.next(), words.next()) else {
        return false;
    };
    let name = match second {
        Some(name) => {
            let scope = ["SESSION", "GLOBAL", "LOCAL", "PERSIST", "PERSIST_ONLY"];
            if !scope.iter().any(|s| first.eq_ignore_ascii_case(s)) {
                return false;
            }
            name
        }
        None => first,
    };
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'@' | b'.' | b'$'))
}

#[cfg(test)]
mod tests {
    use super::colon_equals_as_equals as rewrite;

    #[test]
    fn assigning_colon_equals_becomes_equals() {
        assert_eq!(rewrite("SET @n := 5").as_deref(), Some("SET @n  = 5"));
        assert_eq!(
            rewrite("set @a:=(SELECT 1), SESSION sql_mode := 'ANSI', @@x := 2").as_deref(),
            Some("set @a =(SELECT 1), SESSION sql_mode  = 'ANSI', @@x  = 2")
        );
    }

    #[test]
    fn other_colon_equals_stay() {
        assert_eq!(rewrite("SET @a = (@b := 1)"), None);
        assert_eq!(rewrite("SET @a = ':='"), None);
        assert_eq!(rewrite("SET @a = 1"), None);
        assert_eq!(rewrite("SELECT @a := 1"), None);
        assert_eq!(rewrite("SET @a = 1 + @b := 2"), None);
    }
}
