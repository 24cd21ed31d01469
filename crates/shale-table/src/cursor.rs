//! Scans: index ranges as engine iterator bounds, and the cursor that turns index entries
//! into rows (docs/format/table-keys.md for the keys it reads).
//!
//! Invariants:
//! 1. A cursor returns the rows of one index range in index order (reversed on request), each
//!    row at most once; a row gone since the iterator was made is skipped.
//! 2. With a lock mode, every row returned was locked before it was read.

use std::ops::Bound;
use std::sync::Arc;

use shale_engine::TransactionIterator;

use crate::codec::key::{encode_bound, range_bounds};
use crate::codec::row::{decode_projected, decode_row};
use crate::error::{Error, Result};
use crate::index::{is_hidden_pk, pk_key_of_entry};
use crate::schema::{ColumnDef, IndexDef, TableDef};
use crate::txn::{LockMode, TableTxn};
use crate::value::Value;

/// Which index a scan walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexChoice {
    Primary,
    /// Position in [`TableDef::indexes`].
    Secondary(usize),
}

/// A range over an index's columns; each bound is a prefix of the index's key columns
/// (`Unbounded` for an open end).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRange {
    pub lower: Bound<Vec<Value>>,
    pub upper: Bound<Vec<Value>>,
}

impl KeyRange {
    /// Every row.
    pub fn all() -> KeyRange {
        KeyRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// The rows whose first index columns equal `prefix`.
    pub fn prefix(prefix: Vec<Value>) -> KeyRange {
        KeyRange {
            lower: Bound::Included(prefix.clone()),
            upper: Bound::Included(prefix),
        }
    }
}

/// `range` with its TIMESTAMP bound values moved from the transaction's zone to UTC
/// (zone.rs), so it bounds the stored keys.
pub(crate) fn range_to_utc(
    table: &TableDef,
    index: IndexChoice,
    mut range: KeyRange,
    zone_offset: i64,
) -> KeyRange {
    if zone_offset == 0 || !crate::zone::has_timestamp(table) {
        return range;
    }
    let columns = match index {
        IndexChoice::Primary => Some(&table.primary_key.columns),
        IndexChoice::Secondary(i) => table.indexes.get(i).map(|x| &x.columns),
    };
    let Some(columns) = columns else {
        return range;
    };
    for bound in [&mut range.lower, &mut range.upper] {
        if let Bound::Included(values) | Bound::Excluded(values) = bound {
            let of_index = columns.iter().filter_map(|&c| table.columns.get(c));
            crate::zone::key_to_utc(of_index, values, zone_offset);
        }
    }
    range
}

/// The definition of `index` of `table` and its key columns, in key order.
pub(crate) fn index_columns(
    table: &TableDef,
    index: IndexChoice,
) -> Result<(&IndexDef, Vec<&ColumnDef>)> {
    let index_def = match index {
        IndexChoice::Primary => &table.primary_key,
        IndexChoice::Secondary(i) => table.indexes.get(i).ok_or_else(|| {
            Error::InvalidArgument(format!("table '{}' has no index #{i}", table.name))
        })?,
    };
    let columns = index_def
        .columns
        .iter()
        .map(|&c| table.columns.get(c))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| Error::InvalidArgument("index names a missing column".into()))?;
    Ok((index_def, columns))
}

/// The engine iterator bounds `[lower, upper)` of `range` over `index` of `table`.
pub(crate) fn engine_range(
    table: &TableDef,
    index: IndexChoice,
    range: KeyRange,
    scratch: &mut Vec<u16>,
) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
    let (index_def, columns) = index_columns(table, index)?;
    let mut encode = |bound: Bound<Vec<Value>>, lower: bool| -> Result<Bound<Vec<u8>>> {
        let (values, included) = match bound {
            Bound::Unbounded => return Ok(Bound::Unbounded),
            Bound::Included(v) => (v, true),
            Bound::Excluded(v) => (v, false),
        };
        if values.is_empty() {
            return Ok(Bound::Unbounded);
        }
        if values.len() > columns.len() {
            return Err(Error::InvalidArgument(format!(
                "a bound of {} values on index '{}' of {} columns",
                values.len(),
                index_def.name,
                columns.len()
            )));
        }
        encode_bound(
            index_def.index_id,
            &columns,
            &values,
            lower,
            included,
            scratch,
        )
    };
    let lower = encode(range.lower, true)?;
    let upper = encode(range.upper, false)?;
    Ok(range_bounds(index_def.index_id, lower, upper))
}

/// Rows of a scan, in index order.
#[derive(Debug)]
pub struct RowCursor<'t> {
    txn: &'t mut TableTxn,
    table: Arc<TableDef>,
    secondary: Option<usize>,
    iter: TransactionIterator,
    reverse: bool,
    lock: LockMode,
    started: bool,
    projection: Option<Vec<usize>>,
    /// The hidden row id of the row returned last (tables without primary key).
    row_id: Option<u64>,
}

impl<'t> RowCursor<'t> {
    pub(crate) fn new(
        txn: &'t mut TableTxn,
        table: Arc<TableDef>,
        secondary: Option<usize>,
        iter: TransactionIterator,
        reverse: bool,
        lock: LockMode,
    ) -> Self {
        RowCursor {
            txn,
            table,
            secondary,
            iter,
            reverse,
            lock,
            started: false,
            projection: None,
            row_id: None,
        }
    }
    /// Ends the scan and hands back its transaction (to open the next range of a
    /// multi-range read).
    #[must_use]
    pub fn into_txn(self) -> &'t mut TableTxn {
        self.txn
    }

    /// The hidden row id of the row [`next_row`](Self::next_row) returned last, in a table
    /// without primary key (for [`TableTxn::update_by_row_id`] and
    /// [`TableTxn::delete_by_row_id`]); None in other tables.
    pub fn row_id(&self) -> Option<u64> {
        self.row_id
    }

    /// From now on return only the columns at `columns`, in that order (other strings are not
    /// copied).
    pub fn set_projection(&mut self, columns: Vec<usize>) {
        self.projection = Some(columns);
    }

    /// The next row (every column, or those of [`set_projection`](Self::set_projection)), or
    /// None at the end of the range.
    pub fn next_row(&mut self) -> Result<Option<Vec<Value>>> {
        let result = self.next_row_inner();
        self.txn.after(result)
    }

    fn next_row_inner(&mut self) -> Result<Option<Vec<Value>>> {
        loop {
            if !self.started {
                self.started = true;
                if self.reverse {
                    self.iter.seek_to_last();
                } else {
                    self.iter.seek_to_first();
                }
            } else if self.reverse {
                self.iter.prev();
            } else {
                self.iter.next();
            }
            if !self.iter.valid() {
                self.iter.status()?;
                return Ok(None);
            }
            let hidden = is_hidden_pk(&self.table);
            let row_id_of = |key: &[u8]| {
                key.get(4..)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_be_bytes)
            };
            if self.secondary.is_none() && self.lock == LockMode::None {
                // The hot range scan: decode straight from the iterator's value.
                self.row_id = if hidden {
                    row_id_of(self.iter.key())
                } else {
                    None
                };
                return self.decode(self.iter.value()).map(Some);
            }
            let pk_key = match self.secondary {
                None => self.iter.key().to_vec(),
                Some(i) => {
                    let index = self
                        .table
                        .indexes
                        .get(i)
                        .ok_or_else(|| Error::InvalidArgument("no such index".into()))?;
                    pk_key_of_entry(&self.table, index, self.iter.key(), self.iter.value())?
                }
            };
            // A row gone since the iterator was made (deleted by this transaction, or by a
            // commit under READ COMMITTED) is skipped.
            if let Some(bytes) = self.txn.read(&pk_key, self.lock)? {
                self.row_id = if hidden { row_id_of(&pk_key) } else { None };
                return self.decode(&bytes).map(Some);
            }
        }
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<Value>> {
        let offset = self.txn.zone_offset();
        match &self.projection {
            None => {
                let mut row = decode_row(&self.table, bytes)?;
                crate::zone::values_to_local(self.table.columns.iter(), &mut row, offset);
                Ok(row)
            }
            Some(columns) => {
                let mut row = decode_projected(&self.table, bytes, columns)?;
                let projected = columns.iter().filter_map(|&c| self.table.columns.get(c));
                crate::zone::values_to_local(projected, &mut row, offset);
                Ok(row)
            }
        }
    }
}
