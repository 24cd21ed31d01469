//! `@@warning_count` and `@@error_count`: the counts of the statement before the one that
//! reads them, as MySQL's diagnostics area keeps them.
//!
//! Rules:
//! 1. When a client statement starts (a text, or COM_STMT_EXECUTE), the counts of the one
//!    before it are kept: its messages (the warnings SHOW WARNINGS lists, plus its error if
//!    it failed) and its errors (1 if it failed, else 0). `@@warning_count` and
//!    `@@error_count` read these, so `SELECT 1/0; ... SELECT @@warning_count` shows 1.
//! 2. The counts are per client statement: in a multi-statement text the statements after
//!    the first read the counts from before the text.

use shale_table::Value;

/// The previous statement's counts (rule 1).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LastCounts {
    /// Whether the statement that ran last failed.
    failed: bool,
    /// (messages, errors) of the statement before the running one.
    previous: (usize, usize),
}

impl LastCounts {
    /// A client statement starts; `warnings` is what the statement before it left.
    pub(crate) fn statement_starts(&mut self, warnings: usize) {
        let errors = usize::from(self.failed);
        self.previous = (warnings + errors, errors);
    }

    /// A client statement ended.
    pub(crate) fn statement_ended(&mut self, failed: bool) {
        self.failed = failed;
    }

    pub(crate) fn warning_count(&self) -> Value {
        Value::Int(i64::try_from(self.previous.0).unwrap_or(i64::MAX))
    }

    pub(crate) fn error_count(&self) -> Value {
        Value::Int(i64::try_from(self.previous.1).unwrap_or(i64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_previous_statements() {
        let mut c = LastCounts::default();
        c.statement_starts(0);
        assert_eq!(c.warning_count(), Value::Int(0));
        c.statement_ended(true);
        c.statement_starts(2);
        assert_eq!(
            (c.warning_count(), c.error_count()),
            (Value::Int(3), Value::Int(1))
        );
        c.statement_ended(false);
        c.statement_starts(1);
        assert_eq!(
            (c.warning_count(), c.error_count()),
            (Value::Int(1), Value::Int(0))
        );
    }
}
