//! Generated columns in the table layer (docs/format/catalog.md, "Generated columns").
//!
//! The table layer keeps a generated column's expression as text and never evaluates it.
//! STORED columns arrive computed by the SQL layer and are stored like any other column.
//! VIRTUAL columns are not stored (docs/format/rows.md); their values come from the
//! [`VirtualColumns`] evaluator the SQL layer installs once per process.
//!
//! Invariants:
//! 1. Every full row the table layer decodes, and every row it is given to write, has its
//!    VIRTUAL columns recomputed by the evaluator before any index entry is computed from it,
//!    so index entries on virtual columns always match the row's other columns (an update or
//!    delete finds the old entries from the stored image, txn.rs invariant 3).
//! 2. A rewriting ALTER TABLE recomputes every generated column of every row, and is
//!    forced (alter.rs) when a STORED column is added or changes its expression.
//! 3. A table with virtual columns cannot be read or written without an evaluator: that
//!    fails with [`Error::InvalidArgument`] rather than returning or indexing NULLs.

use std::sync::{Arc, RwLock};

use crate::error::{Error, Result};
use crate::schema::TableDef;
use crate::value::Value;

/// Computes a table's VIRTUAL generated columns from the other columns of a row.
pub trait VirtualColumns: Send + Sync {
    /// Replaces the value of every VIRTUAL column of `row` (a full row of `table`, with
    /// TIMESTAMP columns in UTC as stored), and every STORED one too if `stored`, by its
    /// expression's value, in column order.
    fn compute(&self, table: &TableDef, row: &mut [Value], stored: bool) -> Result<()>;
}

static EVALUATOR: RwLock<Option<Arc<dyn VirtualColumns>>> = RwLock::new(None);

/// Installs the process's evaluator of VIRTUAL columns (the SQL layer does at start); a
/// later call replaces it.
pub fn install_virtual_columns(evaluator: Arc<dyn VirtualColumns>) {
    let mut slot = EVALUATOR
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *slot = Some(evaluator);
}

/// Recomputes `row`'s VIRTUAL columns (invariant 1); nothing for a table without any.
pub(crate) fn complete(table: &TableDef, row: &mut [Value]) -> Result<()> {
    if !table.has_virtual_columns() {
        return Ok(());
    }
    evaluate(table, row, false)
}

/// Recomputes every generated column of `row`, STORED ones too: a rewriting ALTER TABLE,
/// whose rows may have a STORED column added or an input converted.
pub(crate) fn recompute_all(table: &TableDef, row: &mut [Value]) -> Result<()> {
    if !table.columns.iter().any(|c| c.generated.is_some()) {
        return Ok(());
    }
    evaluate(table, row, true)
}

fn evaluate(table: &TableDef, row: &mut [Value], stored: bool) -> Result<()> {
    let evaluator = EVALUATOR
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    match evaluator {
        Some(evaluator) => evaluator.compute(table, row, stored),
        None => Err(Error::InvalidArgument(format!(
            "table '{}.{}' has generated columns and no evaluator is installed",
            table.database, table.name
        ))),
    }
}
