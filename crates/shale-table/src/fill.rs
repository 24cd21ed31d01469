//! Writing a table's rows and index entries under index ids no definition names yet: the
//! rewrite of ALTER TABLE (alter.rs) and CREATE TABLE ... AS SELECT
//! ([`Store::create_table_with_rows`]). The rows go out in chunks of plain engine writes;
//! the definition that makes them visible is written last, synced, by the caller, so a crash
//! before it leaves keys only under ids that the sweep at the next open deletes (build.rs
//! invariant 2), and a failure deletes them at once.
//!
//! Invariant: the writer checks the primary key and every unique key against what it wrote
//! before (earlier chunks are read back with `get`), so the new table holds no duplicates.

use std::collections::HashSet;
use std::sync::Arc;

use shale_engine::{Db, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};

use crate::build::delete_index_range;
use crate::codec::row::encode_row;
use crate::error::{Error, Result};
use crate::index::{entry_for_row, is_unique_entry, pk_key_of_row, show_entry};
use crate::schema::TableDef;
use crate::store::{
    assign_index_ids, check_name, normalize_primary_key, persist_next_index_id, validate_table,
    Store,
};
use crate::system::{self, TAG_TABLE};
use crate::value::Value;

/// Rows (and their index entries) per engine write.
const CHUNK_ROWS: u64 = 4096;

/// Writes rows of `def` (whose index ids are fresh) in chunked plain writes.
pub(crate) struct RowWriter<'a> {
    db: &'a Db,
    def: &'a TableDef,
    batch: WriteBatch,
    /// Unique keys (and primary keys) of the chunk not written yet.
    pending_unique: HashSet<Vec<u8>>,
    scratch: Vec<u16>,
    key: Vec<u8>,
    value: Vec<u8>,
    rows: u64,
}

impl<'a> RowWriter<'a> {
    pub(crate) fn new(db: &'a Db, def: &'a TableDef) -> RowWriter<'a> {
        RowWriter {
            db,
            def,
            batch: WriteBatch::new(),
            pending_unique: HashSet::new(),
            scratch: Vec::new(),
            key: Vec::new(),
            value: Vec::new(),
            rows: 0,
        }
    }

    /// Rows put so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds a row (`row_id` for a table without primary key).
    pub(crate) fn put(&mut self, row: &[Value], row_id: Option<u64>) -> Result<()> {
        let (def, db) = (self.def, self.db);
        let completed;
        let row = if def.has_virtual_columns() {
            let mut full = row.to_vec();
            crate::generated::complete(def, &mut full)?;
            completed = full;
            &completed[..]
        } else {
            row
        };
        pk_key_of_row(&mut self.key, def, row, row_id, &mut self.scratch)?;
        let taken = row_id.is_none()
            && (self.pending_unique.contains(&self.key) || db.get(&self.key)?.is_some());
        if taken {
            return Err(Error::DuplicateKey {
                table: def.name.clone(),
                key: "PRIMARY".into(),
                entry: show_entry(row, &def.primary_key.columns),
            });
        }
        if row_id.is_none() {
            self.pending_unique.insert(self.key.clone());
        }
        self.value.clear();
        encode_row(&mut self.value, def, row)?;
        self.batch
            .put(DEFAULT_KEYSPACE_ID, &self.key, &self.value)?;
        for index in &def.indexes {
            let (entry, entry_value) =
                entry_for_row(def, index, row, &self.key, &mut self.scratch)?;
            if index.unique && is_unique_entry(&entry_value) {
                if self.pending_unique.contains(&entry) || db.get(&entry)?.is_some() {
                    return Err(Error::DuplicateKey {
                        table: def.name.clone(),
                        key: index.name.clone(),
                        entry: show_entry(row, &index.columns),
                    });
                }
                self.pending_unique.insert(entry.clone());
            }
            self.batch.put(DEFAULT_KEYSPACE_ID, &entry, &entry_value)?;
        }
        self.rows += 1;
        if self.rows.is_multiple_of(CHUNK_ROWS) {
            db.write(std::mem::take(&mut self.batch), &WriteOptions::default())?;
            self.pending_unique.clear();
        }
        Ok(())
    }

    /// Writes what is left; returns the row count.
    pub(crate) fn finish(self) -> Result<u64> {
        if !self.batch.is_empty() {
            self.db.write(self.batch, &WriteOptions::default())?;
        }
        Ok(self.rows)
    }
}

/// Best effort after a failed fill: range tombstones over `ids` (the sweep at the next open
/// deletes whatever this leaves).
pub(crate) fn discard(db: &Db, ids: std::ops::Range<u32>) {
    let mut batch = WriteBatch::new();
    for id in ids {
        let _ = delete_index_range(&mut batch, id);
    }
    let _ = db.write(batch, &WriteOptions::default());
}

impl Store {
    /// Creates a table already holding `rows` (CREATE TABLE ... AS SELECT): the rows and index
    /// entries are written first, under the new ids, and the definition last, in one synced
    /// write, so the table appears whole or not at all, even across a crash. A table without
    /// primary key numbers its rows from 1. The definition is prepared as
    /// [`Store::create_table`] does.
    pub fn create_table_with_rows<E: From<Error>>(
        &self,
        mut def: TableDef,
        rows: &mut dyn Iterator<Item = Result<Vec<Value>, E>>,
    ) -> Result<(Arc<TableDef>, u64), E> {
        let mut next_id = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let tables = catalog
            .databases
            .get(&def.database)
            .ok_or_else(|| Error::NoSuchDatabase(def.database.clone()))?;
        if tables.contains_key(&def.name) || catalog.view(&def.database, &def.name).is_some() {
            return Err(Error::TableExists {
                database: def.database,
                table: def.name,
            }
            .into());
        }
        check_name("table", &def.name)?;
        normalize_primary_key(&mut def);
        def.schema_version = 1;
        def.past_versions = Vec::new();
        validate_table(&def)?;
        let first = *next_id;
        let after = assign_index_ids(&mut def, first)?;
        let db = self.inner.tdb.db();
        persist_next_index_id(db, after)?;
        *next_id = after;
        let written = (|| -> Result<u64, E> {
            let mut writer = RowWriter::new(db, &def);
            let hidden = def.primary_key.columns.is_empty();
            for row in rows {
                let row_id = hidden.then(|| writer.rows() + 1);
                writer.put(&row?, row_id)?;
            }
            Ok(writer.finish()?)
        })();
        let count = match written {
            Ok(count) => count,
            Err(e) => {
                discard(db, first..after);
                return Err(e);
            }
        };
        let mut batch = WriteBatch::new();
        batch
            .put(
                DEFAULT_KEYSPACE_ID,
                &system::table_key(TAG_TABLE, first),
                &system::encode_table(&def),
            )
            .map_err(Error::from)?;
        db.write(batch, &WriteOptions::sync())
            .map_err(Error::from)?;
        let def = Arc::new(def);
        let mut new = (*catalog).clone();
        if let Some(tables) = new.databases.get_mut(&def.database) {
            tables.insert(def.name.clone(), def.clone());
        }
        self.inner.install(new);
        Ok((def, count))
    }
}
