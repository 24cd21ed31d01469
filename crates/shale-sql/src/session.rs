//! One client's state: current database, variables, open transaction, prepared statements.

use crate::error::SqlError;
use crate::result::{ColumnMeta, ResultSink};
use shale_table::Value;

/// What COM_STMT_PREPARE answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedInfo {
    pub id: u32,
    /// Metadata of each `?` (MySQL sends them as VAR_STRING columns named `?`).
    pub params: Vec<ColumnMeta>,
    /// The result columns, empty for a statement that returns none.
    pub columns: Vec<ColumnMeta>,
}

/// One client session.
#[derive(Debug)]
pub struct Session {
    _private: (),
}

impl Session {
    /// Runs every statement of `sql` (`;`-separated), reporting each to `sink`. Stops at the
    /// first error and returns it.
    pub fn execute(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), SqlError> {
        let _ = (sql, sink);
        todo!()
    }

    /// Prepares one statement with `?` placeholders.
    pub fn prepare(&mut self, sql: &str) -> Result<PreparedInfo, SqlError> {
        let _ = sql;
        todo!()
    }

    /// Runs a prepared statement with one value per placeholder.
    pub fn execute_prepared(
        &mut self,
        id: u32,
        params: &[Value],
        sink: &mut dyn ResultSink,
    ) -> Result<(), SqlError> {
        let _ = (id, params, sink);
        todo!()
    }

    /// Forgets a prepared statement (COM_STMT_CLOSE).
    pub fn close_prepared(&mut self, id: u32) {
        let _ = id;
    }

    /// COM_INIT_DB: fails with 1049 for an unknown database.
    pub fn use_database(&mut self, name: &str) -> Result<(), SqlError> {
        let _ = name;
        todo!()
    }

    pub fn current_database(&self) -> Option<&str> {
        todo!()
    }

    /// Whether a transaction is open (`SERVER_STATUS_IN_TRANS`).
    pub fn in_transaction(&self) -> bool {
        todo!()
    }

    pub fn autocommit(&self) -> bool {
        todo!()
    }
}
