//! Temporary tables (`CREATE TEMPORARY TABLE`): tables whose definition lives only in the
//! memory of the session that made it, and whose rows are ordinary table keys under fresh
//! index ids (docs/format/catalog.md, "Temporary tables").
//!
//! The store hands out the ids and writes and deletes the rows; the session (shale-sql's
//! `temp_tables.rs`) keeps the definition, resolves names to it and drops it when it ends.
//!
//! Invariants:
//! 1. A temporary table's definition is never written to the catalog (no `T` key), so it is
//!    never in a checkpoint's or backup's catalog, and no other session can find it by name.
//! 2. Its index ids come from `N`, advanced (synced) before any of its keys is written, so
//!    they are never reused and never collide with a base table's.
//! 3. After a crash (or any end that skipped the drop) its keys are under ids no definition
//!    names: the open's sweep of orphaned ids deletes them (build.rs), and
//!    [`sweep_reservations`] deletes its `AUTO_INCREMENT` and row id reservations. Nothing is
//!    left behind.
//! 4. Transactions take no metadata lock on a temporary table (only its session uses it, so
//!    no DDL of another session can wait for it or be seen waiting).
//! 5. A temporary table's ALTER (or TRUNCATE inside a transaction) moves it to fresh index
//!    ids rather than changing rows in place: no other session can see it, so there is
//!    nothing to fence or lock, and the old ids are simply dropped afterwards.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};

use shale_engine::{ReadOptions, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};

use crate::alter::{caller_error, check_sources, ConvertFn, TableChange};
use crate::error::{Error, Result};
use crate::fill::discard;
use crate::schema::{Catalog, ColumnDef, TableDef};
use crate::shadow::Failure;
use crate::store::{
    assign_index_ids, check_name, normalize_primary_key, persist_next_index_id, validate_table,
    Store,
};
use crate::system::{self, TAG_AUTO_INCREMENT, TAG_ROW_ID};

/// The table ids of the temporary tables alive in this process (invariant 4).
#[derive(Debug, Default)]
pub(crate) struct TemporaryTables {
    ids: RwLock<HashSet<u32>>,
}

impl TemporaryTables {
    pub(crate) fn contains(&self, table_id: u32) -> bool {
        self.ids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&table_id)
    }

    fn len(&self) -> usize {
        self.ids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn insert(&self, table_id: u32) {
        self.ids
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(table_id);
    }

    fn remove(&self, table_id: u32) {
        self.ids
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&table_id);
    }
}

impl Store {
    /// Creates a temporary table: assigns its index ids (those in `def` are ignored) as
    /// [`Store::create_table`] does and returns the definition, which is not put in the
    /// catalog (invariant 1): the caller keeps it and must end it with
    /// [`Store::drop_temporary_table`]. Its database must exist; a base table of the same
    /// name may (the caller's name resolution decides which one a name means).
    pub fn create_temporary_table(&self, mut def: TableDef) -> Result<Arc<TableDef>> {
        self.assign_temporary_ids(&mut def)?;
        Ok(Arc::new(def))
    }

    /// Drops a temporary table made by [`Store::create_temporary_table`]: range tombstones
    /// over its ids and deletes of its reservations and statistics, in one write. Not synced:
    /// a crash before it reaches the disk leaves what the next open sweeps (invariant 3).
    pub fn drop_temporary_table(&self, def: &TableDef) -> Result<()> {
        let table_id = def.primary_key.index_id;
        let mut batch = WriteBatch::new();
        crate::store::delete_data_batch(&mut batch, def)?;
        self.inner.tdb.db().write(batch, &WriteOptions::default())?;
        self.forget_temporary(def);
        self.inner.temporary.remove(table_id);
        Ok(())
    }

    /// Empties a temporary table and resets its `AUTO_INCREMENT` counter (TRUNCATE). A
    /// transaction begun before sees the rows it saw: the caller ends its own first.
    pub fn truncate_temporary_table(&self, def: &TableDef) -> Result<()> {
        let mut batch = WriteBatch::new();
        crate::store::delete_data_batch(&mut batch, def)?;
        self.inner.tdb.db().write(batch, &WriteOptions::default())?;
        self.forget_temporary(def);
        Ok(())
    }

    /// Replaces a temporary table's definition (ALTER TABLE, CREATE / DROP INDEX of a
    /// temporary table) by copying its rows, converted, into fresh index ids (invariant 5),
    /// then dropping the old ids. `change.def` may name another database or table (a rename
    /// the caller has checked). `convert` is as [`Store::alter_table`]'s. Returns the new
    /// definition and the rows copied. The rows are read from one snapshot: the caller must
    /// not hold an open write transaction (its writes would be left behind). On failure the
    /// new ids are deleted and `old` is left whole.
    pub fn alter_temporary_table<E: From<Error> + Send + 'static>(
        &self,
        old: &TableDef,
        change: TableChange,
        convert: ConvertFn<E>,
    ) -> std::result::Result<(Arc<TableDef>, u64), E> {
        let TableChange { mut def, sources } = change;
        check_sources(old, &def, &sources)?;
        let (first, after) = self.assign_temporary_ids(&mut def)?;
        let db = self.inner.tdb.db();
        let convert = move |was: &ColumnDef, column: &ColumnDef, value, row| {
            convert(was, column, value, row).map_err(|e| Failure::Caller(Box::new(e)))
        };
        let rows = match self.rewrite_rows(old, &def, &sources, &convert) {
            Ok(rows) => rows,
            Err(failure) => {
                self.inner.temporary.remove(first);
                discard(db, first..after);
                return Err(caller_error(failure));
            }
        };
        self.move_auto_increment(old, &def)?;
        self.drop_temporary_table(old)?;
        Ok((Arc::new(def), rows))
    }

    /// An empty copy of a temporary table under fresh index ids, its `AUTO_INCREMENT` counter
    /// reset (TRUNCATE inside an open transaction, invariant 5). The old ids' rows are
    /// deleted now; the caller drops the old ids once more (with
    /// [`Store::drop_temporary_table`]) after its transaction ends, since a commit writes
    /// the transaction's own writes under them.
    pub fn renew_temporary_table(&self, old: &TableDef) -> Result<Arc<TableDef>> {
        let mut def = old.clone();
        self.assign_temporary_ids(&mut def)?;
        self.drop_temporary_table(old)?;
        Ok(Arc::new(def))
    }

    /// Checks `def` as [`Store::create_temporary_table`] does and gives it fresh index ids,
    /// registered as a temporary table's; the range of ids used.
    fn assign_temporary_ids(&self, def: &mut TableDef) -> Result<(u32, u32)> {
        let mut next_id = self.inner.lock_ddl();
        if !self.inner.catalog().databases.contains_key(&def.database) {
            return Err(Error::NoSuchDatabase(def.database.clone()));
        }
        check_name("table", &def.name)?;
        normalize_primary_key(def);
        def.schema_version = 1;
        def.past_versions = Vec::new();
        validate_table(def)?;
        let first = *next_id;
        let after = assign_index_ids(def, first)?;
        persist_next_index_id(self.inner.tdb.db(), after)?;
        *next_id = after;
        self.inner.temporary.insert(first);
        Ok((first, after))
    }

    /// Carries the `AUTO_INCREMENT` counter of `old` over to `def` (a rewrite hands out no
    /// value twice).
    fn move_auto_increment(&self, old: &TableDef, def: &TableDef) -> Result<()> {
        let db = self.inner.tdb.db();
        let old_id = old.primary_key.index_id;
        let reserved = match self.inner.loaded_next(TAG_AUTO_INCREMENT, old_id) {
            Some(next) => Some(next.to_le_bytes().to_vec()),
            None => db.get(&system::table_key(TAG_AUTO_INCREMENT, old_id))?,
        };
        if let Some(reserved) = reserved {
            let mut batch = WriteBatch::new();
            batch.put(
                DEFAULT_KEYSPACE_ID,
                &system::table_key(TAG_AUTO_INCREMENT, def.primary_key.index_id),
                &reserved,
            )?;
            db.write(batch, &WriteOptions::default())?;
        }
        Ok(())
    }

    /// Whether `table_id` is a temporary table's alive in this process.
    pub fn is_temporary(&self, table_id: u32) -> bool {
        self.inner.temporary.contains(table_id)
    }

    /// How many temporary tables are alive now, in every session.
    pub fn temporary_table_count(&self) -> usize {
        self.inner.temporary.len()
    }

    fn forget_temporary(&self, def: &TableDef) {
        let table_id = def.primary_key.index_id;
        self.inner.forget_sequences(table_id);
        for index in std::iter::once(&def.primary_key).chain(&def.indexes) {
            self.inner.cardinalities.forget(index.index_id);
        }
        self.inner.auto_recalc.forget(table_id);
    }
}

/// Deletes the `AUTO_INCREMENT` and row id reservations of table ids the catalog does not
/// have (temporary tables of a process that ended without dropping them, invariant 3).
pub(crate) fn sweep_reservations(db: &shale_engine::Db, catalog: &Catalog) -> Result<()> {
    let live = crate::build::live_index_ids(catalog);
    let mut batch = WriteBatch::new();
    for tag in [TAG_AUTO_INCREMENT, TAG_ROW_ID] {
        let start = system::table_key(tag, 0).to_vec();
        let end = system::table_key(tag + 1, 0).to_vec();
        let mut iter = db.iterator(ReadOptions {
            lower_bound: Some(start.clone()),
            upper_bound: Some(end),
            ..ReadOptions::default()
        })?;
        iter.seek(&start);
        while iter.valid() {
            let id = iter
                .key()
                .get(5..9)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_be_bytes);
            if id.is_none_or(|id| !live.contains(&id)) {
                batch.delete(DEFAULT_KEYSPACE_ID, iter.key())?;
            }
            iter.next();
        }
        iter.status()?;
    }
    if !batch.is_empty() {
        db.write(batch, &WriteOptions::sync())?;
    }
    Ok(())
}
