//! `FROM DUAL`, MySQL's name for "no table" (`SELECT 1 FROM DUAL WHERE ...`), which sqlparser
//! reads as a table named `dual`. The two words are taken out of the tokens before parsing,
//! so the SELECT has no FROM clause, as MySQL reads it.
//!
//! Rules:
//! 1. Only an unquoted DUAL right after an unquoted FROM (white space and comments between
//!    them skipped) is taken, and only when no `.` follows it: DUAL is a reserved word in
//!    MySQL, so there it is never a table; `` `dual` `` and `db.dual` stay names.
//! 2. Comments and white space around the two words stay where they were.

use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::dml_modifiers::{next_significant, word_at};

/// Takes every `FROM DUAL` out of `tokens` (rule 1).
pub(crate) fn take_from_dual(tokens: &mut Vec<TokenWithSpan>) {
    let is = |tokens: &[TokenWithSpan], i, word: &str| {
        word_at(tokens, i).is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    let mut i = 0;
    while i < tokens.len() {
        if is(tokens, i, "FROM") {
            let dual = next_significant(tokens, i + 1);
            let after = next_significant(tokens, dual + 1);
            let dotted = matches!(tokens.get(after), Some(t) if t.token == Token::Period);
            if !dotted && is(tokens, dual, "DUAL") {
                tokens.remove(dual);
                tokens.remove(i);
                continue;
            }
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::syntax_mode::{parse_statements, Syntax};

    fn parsed(sql: &str) -> String {
        parse_statements(sql, Syntax::DEFAULT).unwrap()[0].to_string()
    }

    #[test]
    fn from_dual_is_no_from_clause_and_a_quoted_or_qualified_dual_is_a_table() {
        assert_eq!(parsed("SELECT 1 FROM DUAL"), "SELECT 1");
        assert_eq!(
            parsed("select 1 from /* x */ dual where 1 = 1 limit 1"),
            "SELECT 1 WHERE 1 = 1 LIMIT 1"
        );
        assert_eq!(
            parsed("SELECT (SELECT 2 FROM DUAL) FROM t"),
            "SELECT (SELECT 2) FROM t"
        );
        assert_eq!(parsed("SELECT 1 FROM `dual`"), "SELECT 1 FROM `dual`");
        assert_eq!(parsed("SELECT 1 FROM dual.t"), "SELECT 1 FROM dual.t");
        assert_eq!(parsed("SELECT 'FROM DUAL'"), "SELECT 'FROM DUAL'");
    }
}
