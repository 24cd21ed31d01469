//! What ROW_COUNT() and FOUND_ROWS() report: the previous statement's affected rows (-1 after
//! a statement that returned a result set, 0 after other commands) and the number of rows the
//! previous SELECT returned (MySQL's FOUND_ROWS() without SQL_CALC_FOUND_ROWS). The session
//! records them after each statement (session.rs); this sink counts a SELECT's rows.

use shale_table::Value;

use crate::error::SqlError;
use crate::result::{ColumnMeta, ResultSink, StatementStatus};

/// Forwards everything to `inner`, counting rows.
pub(crate) struct RowCounter<'a> {
    pub inner: &'a mut dyn ResultSink,
    pub rows: u64,
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
        self.inner.end(status)
    }
}
