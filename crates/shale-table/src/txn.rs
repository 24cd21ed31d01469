//! Row reads and writes inside one engine transaction.

use std::ops::Bound;

use crate::error::Result;
use crate::schema::TableDef;
use crate::value::Value;
use shale_engine::{Durability, IsolationLevel};

/// How a transaction reads and commits.
#[derive(Debug, Clone)]
pub struct TxnOptions {
    /// REPEATABLE READ by default (snapshot at the first read, as `MyRocks`).
    pub isolation: IsolationLevel,
    /// None: the store's durability.
    pub durability: Option<Durability>,
    /// None: the store's lock wait timeout ([`StoreOptions::transactions`](crate::StoreOptions)).
    pub lock_wait_timeout: Option<std::time::Duration>,
}

impl Default for TxnOptions {
    fn default() -> Self {
        TxnOptions {
            isolation: IsolationLevel::RepeatableRead,
            durability: None,
            lock_wait_timeout: None,
        }
    }
}

/// What a read locks (FOR UPDATE, FOR SHARE, or a plain consistent read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    None,
    Shared,
    Exclusive,
}

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
}

/// One transaction over tables. Dropping it rolls it back.
#[derive(Debug)]
pub struct TableTxn {
    _private: (),
}

impl TableTxn {
    /// Inserts a full row (one value per column); fails with `DuplicateKey` on a primary or
    /// unique key that exists.
    pub fn insert(&mut self, table: &TableDef, row: Vec<Value>) -> Result<()> {
        let _ = (table, row);
        todo!()
    }

    /// The row whose primary key is `pk`.
    pub fn get(
        &mut self,
        table: &TableDef,
        pk: &[Value],
        lock: LockMode,
    ) -> Result<Option<Vec<Value>>> {
        let _ = (table, pk, lock);
        todo!()
    }

    /// Rows of `table` in `index` order within `range` (descending if `reverse`).
    pub fn scan(
        &mut self,
        table: &TableDef,
        index: IndexChoice,
        range: KeyRange,
        reverse: bool,
        lock: LockMode,
    ) -> Result<RowCursor<'_>> {
        let _ = (table, index, range, reverse, lock);
        todo!()
    }

    /// Replaces `old` (as read) with `new`, maintaining every index.
    pub fn update(&mut self, table: &TableDef, old: &[Value], new: Vec<Value>) -> Result<()> {
        let _ = (table, old, new);
        todo!()
    }

    /// Deletes `row` (as read) and its index entries.
    pub fn delete(&mut self, table: &TableDef, row: &[Value]) -> Result<()> {
        let _ = (table, row);
        todo!()
    }

    /// The next AUTO_INCREMENT value of `table`, never handed out twice, even across restarts.
    pub fn next_auto_increment(&mut self, table: &TableDef) -> Result<u64> {
        let _ = table;
        todo!()
    }

    pub fn commit(self) -> Result<()> {
        todo!()
    }

    pub fn rollback(self) {}
}

/// Rows of a scan, in index order.
#[derive(Debug)]
pub struct RowCursor<'t> {
    _txn: &'t mut TableTxn,
}

impl RowCursor<'_> {
    /// The next row (every column), or None at the end of the range.
    pub fn next_row(&mut self) -> Result<Option<Vec<Value>>> {
        todo!()
    }
}
