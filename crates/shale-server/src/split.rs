//! Whether a multi-statement COM_QUERY text may change how its later statements' bytes are
//! read. MySQL reads each statement of a text in the character sets and `sql_mode` in force
//! when it starts, so a text that names a character set (`SET NAMES`, `SET CHARACTER SET`,
//! `SET character_set_client`, `SET collation_connection`, ...) or `sql_mode` (ANSI_QUOTES
//! and NO_BACKSLASH_ESCAPES change how statement_text.rs reads literals) is split, converted
//! and run one statement at a time (command.rs `query_each`, with shale-sql's
//! statement_split.rs); any other text is converted whole, and the session splits it.
//!
//! A word test, not a parse: it may say yes for a text that only mentions such a word (which
//! then runs one statement at a time, with the same results), never no for one that changes
//! a character set.

/// True if `sql` mentions a word that can name a character set setting or `sql_mode`.
pub fn may_change_reading(sql: &[u8]) -> bool {
    [
        &b"names"[..],
        b"character",
        b"charset",
        b"collation_connection",
        b"sql_mode",
    ]
    .iter()
    .any(|word| {
        sql.windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_that_may_change_reading_are_recognized() {
        for sql in [
            "SET NAMES latin1; SELECT 1",
            "set character set utf8; SELECT 1",
            "SET character_set_client = latin1;SELECT 1",
            "SET CHARSET latin1; SELECT 2",
            "SET collation_connection = latin1_bin; SELECT 1",
            "SET SESSION sql_mode = 'ANSI_QUOTES'; SELECT \"a\"",
        ] {
            assert!(may_change_reading(sql.as_bytes()), "{sql}");
        }
        for sql in ["SELECT 1; SELECT 2", "SET autocommit = 0; SELECT 1"] {
            assert!(!may_change_reading(sql.as_bytes()), "{sql}");
        }
    }
}
