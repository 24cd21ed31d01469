//! The store: one database directory, its catalog and its DDL.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::schema::{Catalog, IndexDef, TableDef};
use crate::txn::{TableTxn, TxnOptions};

/// How to open a [`Store`].
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// The engine's options (file system, cache, durability, ...).
    pub engine: shale_engine::Options,
    /// Row locks: the default lock wait timeout (`innodb_lock_wait_timeout`), deadlock
    /// detection, the transaction size cap.
    pub transactions: shale_engine::TransactionDbOptions,
}

/// An open database directory: the engine, the system keyspace and the catalog.
#[derive(Debug)]
pub struct Store {
    _private: (),
}

impl Store {
    /// Opens (creating if missing) the store at `path`.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let _ = (path, options);
        todo!("table layer: open")
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        todo!("table layer: catalog")
    }

    pub fn create_database(&self, name: &str) -> Result<()> {
        let _ = name;
        todo!()
    }

    /// Drops the database and every table in it.
    pub fn drop_database(&self, name: &str) -> Result<()> {
        let _ = name;
        todo!()
    }

    /// Creates a table; the store assigns index ids (those in `def` are ignored).
    pub fn create_table(&self, def: TableDef) -> Result<Arc<TableDef>> {
        let _ = def;
        todo!()
    }

    pub fn drop_table(&self, database: &str, name: &str) -> Result<()> {
        let _ = (database, name);
        todo!()
    }

    pub fn truncate_table(&self, database: &str, name: &str) -> Result<()> {
        let _ = (database, name);
        todo!()
    }

    /// Adds a secondary index and fills it from the table's rows.
    pub fn create_index(&self, database: &str, table: &str, index: IndexDef) -> Result<()> {
        let _ = (database, table, index);
        todo!()
    }

    pub fn drop_index(&self, database: &str, table: &str, index: &str) -> Result<()> {
        let _ = (database, table, index);
        todo!()
    }

    /// Begins a transaction (it holds its own reference to the engine).
    pub fn begin(&self, options: TxnOptions) -> Result<TableTxn> {
        let _ = options;
        todo!()
    }

    /// Closes the engine cleanly (everything durable).
    pub fn close(self) -> Result<()> {
        todo!()
    }
}
