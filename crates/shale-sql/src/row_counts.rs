//! What ROW_COUNT() and FOUND_ROWS() report: the previous statement's affected rows (-1 after
//! a statement that returned a result set, 0 after other commands) and the number of rows the
//! previous SELECT returned (MySQL's FOUND_ROWS() without SQL_CALC_FOUND_ROWS). The session
//! records them after each statement (session.rs); this sink counts a SELECT's rows.

use shale_table::Value;

use crate::error::SqlError;
use crate::result::{ColumnMeta, ResultSink, StatementStatus};

/// Forwards everything to `inner`, counting rows; the end of a result set also counts
/// the warnings its evaluation raised (`Env::warn`), which the status built before the
/// query ran could not know.
pub(crate) struct RowCounter<'a> {
    pub inner: &'a mut dyn ResultSink,
    pub rows: u64,
    pub raised: &'a std::cell::RefCell<Vec<(&'static str, u16, String)>>,
}

impl ResultSink for RowCounter<'_> {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.inner.ok(status)
    }
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.inner.columns(columns)
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.rows += 1;
        self.inner.row(row)
    }
    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        let raised = self.raised.borrow().len();
        if raised == 0 {
            return self.inner.end(status);
        }
        let mut status = status.clone();
        let count = usize::from(status.warnings).saturating_add(raised);
        status.warnings = u16::try_from(count).unwrap_or(u16::MAX);
        self.inner.end(&status)
    }
}
