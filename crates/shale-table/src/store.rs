//! The store: one database directory, its catalog and its DDL (docs/format/catalog.md).
//!
//! Invariants:
//! 1. The in-memory catalog equals what the system keys hold: DDL writes first (one
//!    atomic engine write, synced) and swaps the new [`Catalog`] in only after it succeeded.
//! 2. DDL statements run one at a time (the `ddl` mutex), which also guards the index id
//!    counter.
//! 3. DROP TABLE, TRUNCATE, DROP DATABASE and DROP INDEX delete their data with range
//!    tombstones in the same engine write that changes the catalog, so a crash leaves the old
//!    state or the new one, never a mix (ARCHITECTURE.md invariant 7).
//! 4. After open, the default keyspace holds keys only under index ids of the catalog
//!    (build.rs sweeps the rest).
//!
//! Concurrency with DML: DDL takes no lock on the rows. It takes its tables' metadata locks
//! exclusive (`metadata_lock.rs`), so it waits for every open transaction that used them, and
//! statements that come after it wait for it. DROP TABLE, DROP DATABASE and
//! TRUNCATE also raise the table's fence (fence.rs, invariant 5) and wait for every write
//! transaction that wrote the table before it, as `MySQL`'s metadata lock makes them wait (up to
//! `ddl_wait_timeout`, then [`Error::LockWaitTimeout`]); writers that come later wait at the
//! fence and then find the table gone (dropped) or empty (truncated). CREATE INDEX is online
//! (online.rs): writers go on while it fills the index, and maintain it themselves. At open,
//! keys under index ids no definition owns (a build cut by a crash) are swept.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use shale_engine::{
    ReadOptions, TransactionDb, TransactionDbOptions, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID,
};

use crate::build::{self, delete_index_range};
use crate::codec::Reader;
use crate::error::{Error, Result};
use crate::fence::TableFences;
use crate::file_properties::{IndexIdCollectorFactory, SharedCatalog};
use crate::metadata_lock::{ExclusiveLock, MetadataLocks};
use crate::online::OnlineIndexes;
use crate::schema::{Catalog, ColumnDef, IndexDef, TableDef};
use crate::sequence::Sequence;
use crate::shadow::Shadows;
use crate::system::{self, TAG_AUTO_INCREMENT, TAG_ROW_ID, TAG_TABLE};
use crate::txn::{TableTxn, TxnOptions};
use crate::types::Kind;

/// How to open a [`Store`].
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// The engine's options (file system, cache, durability, ...).
    pub engine: shale_engine::Options,
    /// Row locks: the default lock wait timeout (`innodb_lock_wait_timeout`), deadlock
    /// detection, the transaction size cap.
    pub transactions: TransactionDbOptions,
    /// How long DDL waits for the write transactions that wrote its table before it to end
    /// (online.rs, step 2); None: a year, `MySQL`'s `lock_wait_timeout` default.
    pub ddl_wait_timeout: Option<Duration>,
}

/// `MySQL`'s `lock_wait_timeout` default: 31,536,000 seconds.
const DEFAULT_DDL_WAIT: Duration = Duration::from_secs(31_536_000);

/// What a [`Store`] and its transactions share.
#[derive(Debug)]
pub(crate) struct StoreInner {
    pub(crate) tdb: Arc<TransactionDb>,
    /// The database directory and the options it was opened with (bulk loads write table
    /// files for it).
    pub(crate) path: PathBuf,
    pub(crate) engine_options: shale_engine::Options,
    /// Shared with the collector that writes definitions into table files
    /// (`file_properties.rs`).
    catalog: SharedCatalog,
    /// The next index id; held for the whole of a DDL statement (invariant 2).
    ddl: Mutex<u32>,
    /// `AUTO_INCREMENT` and row id counters by (tag, table id) (sequence.rs).
    pub(crate) sequences: Mutex<HashMap<(u8, u32), Sequence>>,
    /// Indexes added since open, and the writer epochs CREATE INDEX waits on (online.rs).
    pub(crate) online: Arc<OnlineIndexes>,
    /// Tables a rewriting ALTER keeps writers off, and ids it retired (fence.rs).
    pub(crate) fences: TableFences,
    /// Tables being rewritten online, which every writer also writes converted (shadow.rs).
    pub(crate) shadows: Shadows,
    /// `MySQL`'s `lock_wait_timeout`: how long DDL waits for writers, and writers for DDL
    /// (shortened by the thread's [`MetadataWait`](crate::MetadataWait): read it through
    /// [`StoreInner::ddl_wait`]).
    pub(crate) ddl_wait_timeout: Duration,
    /// Metadata locks between DDL and the transactions that use its tables
    /// (`metadata_lock.rs`).
    pub(crate) metadata: Arc<MetadataLocks>,
    /// Index cardinalities by index id, once estimated (cardinality.rs).
    pub(crate) cardinalities: crate::cardinality::Cardinalities,
    /// Rows changed per table and the thread that estimates them again (`auto_recalc.rs`).
    pub(crate) auto_recalc: crate::auto_recalc::AutoRecalc,
    /// The ids of the temporary tables alive now (temporary.rs).
    pub(crate) temporary: crate::temporary::TemporaryTables,
}

/// An open database directory: the engine and the catalog. Share it
/// between threads (`Arc<Store>`); every method takes `&self`.
#[derive(Debug)]
pub struct Store {
    pub(crate) inner: Arc<StoreInner>,
    /// The handle [`Store::open`] returned (not one lent by a transaction or the statistics
    /// thread): dropping it stops and joins the statistics thread, so the engine is closed
    /// (its LOCK released) when the drop returns, unless transactions still hold it.
    owner: bool,
}

impl Drop for Store {
    fn drop(&mut self) {
        if self.owner {
            self.inner.auto_recalc.stop();
        }
    }
}

fn sync() -> WriteOptions {
    WriteOptions::sync()
}

impl Store {
    /// A handle that shares the store without owning it (dropping it stops nothing).
    pub(crate) fn from_inner(inner: Arc<StoreInner>) -> Store {
        Store {
            inner,
            owner: false,
        }
    }

    /// Opens (creating if missing) the store at `path`. The default keyspace's
    /// `table_properties_collector` is the store's own (`file_properties.rs`: every table file
    /// records the tables it holds); one set in `options.engine` is replaced.
    pub fn open(path: impl AsRef<Path>, mut options: StoreOptions) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        // Table files name the index ids and definitions they hold (file_properties.rs). The
        // catalog is empty until loaded below: a flush of WAL data replayed at open that
        // finishes before then names ids only (its compaction output names them all).
        let shared_catalog: SharedCatalog = Arc::default();
        options.engine.default_keyspace.table_properties_collector = Some(Arc::new(
            IndexIdCollectorFactory::new(shared_catalog.clone()),
        ));
        let engine_options = options.engine.clone();
        let ddl_wait_timeout = options.ddl_wait_timeout;
        let tdb = TransactionDb::open(&path, options.engine, options.transactions)?;
        let db = tdb.db();
        let next_index_id = match db.get(system::KEY_VERSION)? {
            None => {
                refuse_foreign_keys(db)?;
                let mut batch = WriteBatch::new();
                batch.put(
                    DEFAULT_KEYSPACE_ID,
                    system::KEY_VERSION,
                    &system::CATALOG_VERSION.to_le_bytes(),
                )?;
                batch.put(
                    DEFAULT_KEYSPACE_ID,
                    system::KEY_NEXT_INDEX_ID,
                    &system::FIRST_INDEX_ID.to_le_bytes(),
                )?;
                db.write(batch, &sync())?;
                system::FIRST_INDEX_ID
            }
            Some(version) => {
                let version = Reader::new(&version, "catalog version")
                    .array()
                    .map(u32::from_le_bytes)?;
                if version != system::CATALOG_VERSION {
                    return Err(Error::Corruption(format!(
                        "catalog format version {version}; this build reads {}",
                        system::CATALOG_VERSION
                    )));
                }
                let next = db
                    .get(system::KEY_NEXT_INDEX_ID)?
                    .ok_or_else(|| Error::Corruption("the catalog has no next index id".into()))?;
                Reader::new(&next, "next index id")
                    .array()
                    .map(u32::from_le_bytes)?
            }
        };
        let catalog = load_catalog(db, next_index_id)?;
        build::sweep_orphans(db, &catalog)?;
        crate::cardinality::sweep_statistics(db, &catalog)?;
        crate::temporary::sweep_reservations(db, &catalog)?;
        crate::bulk::sweep_bulk_tmp(&*engine_options.file_system, &path)?;
        let store = Store {
            inner: Arc::new(StoreInner {
                tdb: Arc::new(tdb),
                path,
                engine_options,
                catalog: {
                    *shared_catalog
                        .write()
                        .unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
                    shared_catalog
                },
                ddl: Mutex::new(next_index_id),
                sequences: Mutex::new(HashMap::new()),
                online: Arc::default(),
                fences: TableFences::default(),
                shadows: Shadows::default(),
                cardinalities: crate::cardinality::Cardinalities::default(),
                auto_recalc: crate::auto_recalc::AutoRecalc::default(),
                ddl_wait_timeout: ddl_wait_timeout.unwrap_or(DEFAULT_DDL_WAIT),
                metadata: Arc::default(),
                temporary: crate::temporary::TemporaryTables::default(),
            }),
            owner: true,
        };
        crate::auto_recalc::AutoRecalc::start(&store.inner)?;
        Ok(store)
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog()
    }

    pub fn create_database(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        if catalog.databases.contains_key(name) {
            return Err(Error::DatabaseExists(name.to_owned()));
        }
        check_name("database", name)?;
        let mut batch = WriteBatch::new();
        batch.put(DEFAULT_KEYSPACE_ID, &system::database_key(name), b"")?;
        self.inner.tdb.db().write(batch, &sync())?;
        let mut new = (*catalog).clone();
        new.databases.insert(name.to_owned(), BTreeMap::new());
        self.inner.install(new);
        Ok(())
    }

    /// Drops the database and every table in it.
    pub fn drop_database(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let tables = catalog
            .databases
            .get(name)
            .ok_or_else(|| Error::NoSuchDatabase(name.to_owned()))?;
        let ids: Vec<u32> = tables
            .values()
            .map(|def| def.primary_key.index_id)
            .collect();
        let _tables = self.inner.lock_tables(&ids)?;
        self.inner.fence_writers(&ids)?;
        let written = (|| {
            let mut batch = WriteBatch::new();
            for def in tables.values() {
                drop_table_batch(&mut batch, def)?;
            }
            crate::view::drop_database_views(&mut batch, &catalog, name)?;
            batch.delete(DEFAULT_KEYSPACE_ID, &system::database_key(name))?;
            for &id in &ids {
                self.inner.fences.switching(id);
            }
            self.inner.tdb.db().write(batch, &sync())?;
            Ok(())
        })();
        if let Err(error) = written {
            self.inner.lower_fences(&ids);
            return Err(error);
        }
        for def in tables.values() {
            self.inner.forget_sequences(def.primary_key.index_id);
            self.inner
                .online
                .forget(def.primary_key.index_id, |_| false);
        }
        let mut new = (*catalog).clone();
        new.databases.remove(name);
        new.views.remove(name);
        self.inner.install(new);
        for def in tables.values() {
            self.inner
                .fences
                .dropped(def.primary_key.index_id, name, &def.name);
        }
        Ok(())
    }

    /// Creates a table; the store assigns index ids (those in `def` are ignored), names the
    /// primary key `PRIMARY`, makes its columns NOT NULL (as `MySQL` does) and sets the
    /// schema version to 1.
    pub fn create_table(&self, mut def: TableDef) -> Result<Arc<TableDef>> {
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
            });
        }
        check_name("table", &def.name)?;
        normalize_primary_key(&mut def);
        def.schema_version = 1;
        validate_table(&def)?;
        let first = *next_id;
        let after = assign_index_ids(&mut def, first)?;
        let sys = DEFAULT_KEYSPACE_ID;
        let mut batch = WriteBatch::new();
        batch.put(
            sys,
            &system::table_key(TAG_TABLE, first),
            &system::encode_table(&def),
        )?;
        batch.put(sys, system::KEY_NEXT_INDEX_ID, &after.to_le_bytes())?;
        self.inner.tdb.db().write(batch, &sync())?;
        *next_id = after;
        let def = Arc::new(def);
        let mut new = (*catalog).clone();
        if let Some(tables) = new.databases.get_mut(&def.database) {
            tables.insert(def.name.clone(), def.clone());
        }
        self.inner.install(new);
        Ok(def)
    }

    /// Drops the table at once (range tombstones), after waiting for the write transactions
    /// that wrote it before (module doc); the caller must not hold one itself.
    pub fn drop_table(&self, database: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let def = table_of(&catalog, database, name)?;
        let ids = [def.primary_key.index_id];
        let _table = self.inner.lock_tables(&ids)?;
        self.inner.fence_writers(&ids)?;
        let written = (|| {
            let mut batch = WriteBatch::new();
            drop_table_batch(&mut batch, &def)?;
            // A read from here on may see the rows range-deleted: it fails (fence.rs).
            self.inner.fences.switching(ids[0]);
            self.inner.tdb.db().write(batch, &sync())?;
            Ok(())
        })();
        if let Err(error) = written {
            self.inner.lower_fences(&ids);
            return Err(error);
        }
        self.inner.forget_sequences(def.primary_key.index_id);
        self.inner
            .online
            .forget(def.primary_key.index_id, |_| false);
        let mut new = (*catalog).clone();
        if let Some(tables) = new.databases.get_mut(database) {
            tables.remove(name);
        }
        self.inner.install(new);
        self.inner.fences.dropped(ids[0], database, &def.name);
        Ok(())
    }

    /// Empties the table at once (range tombstones over each of its indexes) and resets its
    /// `AUTO_INCREMENT` counter, as `MySQL` does, after waiting for the write transactions
    /// that wrote it before (module doc); the caller must not hold one itself.
    pub fn truncate_table(&self, database: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let def = table_of(&catalog, database, name)?;
        let ids = [def.primary_key.index_id];
        let _table = self.inner.lock_tables(&ids)?;
        self.inner.fence_writers(&ids)?;
        let written = (|| {
            let mut batch = WriteBatch::new();
            delete_data_batch(&mut batch, &def)?;
            self.inner.tdb.db().write(batch, &sync())?;
            Ok(())
        })();
        if written.is_ok() {
            self.inner.forget_sequences(def.primary_key.index_id);
            for index in std::iter::once(&def.primary_key).chain(&def.indexes) {
                self.inner.cardinalities.forget(index.index_id);
            }
            self.inner.auto_recalc.forget(def.primary_key.index_id);
        }
        // The table keeps its ids: writers waiting at the fence go on into the empty table.
        self.inner.lower_fences(&ids);
        written
    }

    /// Adds a secondary index online (online.rs): registers it so writers maintain it, waits
    /// for older write transactions to end (up to `ddl_wait_timeout`, then
    /// [`Error::LockWaitTimeout`]), fills it from the table's rows, then writes the new
    /// definition. Other transactions go on reading and writing the table meanwhile; the
    /// caller must not hold an open write transaction itself (it would wait for it).
    pub fn create_index(&self, database: &str, table: &str, mut index: IndexDef) -> Result<()> {
        let mut next_id = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let old = table_of(&catalog, database, table)?;
        let mut def = (*old).clone();
        index.index_id = *next_id;
        let after = next_id
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("index ids exhausted".into()))?;
        def.indexes.push(index);
        validate_table(&def)?;
        let position = def.indexes.len() - 1;
        let def = Arc::new(def);
        let db = self.inner.tdb.db();
        let sys = DEFAULT_KEYSPACE_ID;
        // The id is used from here on, whatever happens (build.rs, invariant 1).
        persist_next_index_id(db, after)?;
        *next_id = after;
        let online = &self.inner.online;
        let added = online.register(def.clone(), position);
        let mut table_lock = None;
        let filled = online
            .wait_for_older_writers(&[def.primary_key.index_id], self.inner.ddl_wait())
            .and_then(|()| build::fill(&self.inner.tdb, &added))
            // Transactions that used the table without the index end first: a later
            // statement of theirs would read it from a snapshot older than its entries.
            .and_then(|()| {
                table_lock = Some(self.inner.lock_tables(&[def.primary_key.index_id])?);
                Ok(())
            })
            // Published before the definition is written: from here a writer with an old
            // definition treats a duplicate as its own error, not as the build's failure.
            .and_then(|()| added.publish())
            .and_then(|()| {
                let mut batch = WriteBatch::new();
                batch.put(
                    sys,
                    &system::table_key(TAG_TABLE, def.primary_key.index_id),
                    &system::encode_table(&def),
                )?;
                db.write(batch, &sync())?;
                Ok(())
            });
        if let Err(error) = filled {
            added.abandon();
            let table_id = def.primary_key.index_id;
            online.forget(table_id, |a| !std::ptr::eq(a, added.as_ref()));
            // Best effort: the sweep at the next open deletes whatever this leaves.
            let _ = build::delete_index(db, def.indexes[position].index_id);
            return Err(error);
        }
        self.inner.replace_table(&catalog, def);
        Ok(())
    }

    pub fn drop_index(&self, database: &str, table: &str, index: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let old = table_of(&catalog, database, table)?;
        let mut def = (*old).clone();
        let position = def
            .indexes
            .iter()
            .position(|i| i.name.eq_ignore_ascii_case(index))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "can't DROP '{index}'; check that column/key exists"
                ))
            })?;
        let dropped = def.indexes.remove(position);
        validate_table(&def)?;
        let _table = self.inner.lock_tables(&[def.primary_key.index_id])?;
        let mut batch = WriteBatch::new();
        batch.put(
            DEFAULT_KEYSPACE_ID,
            &system::table_key(TAG_TABLE, def.primary_key.index_id),
            &system::encode_table(&def),
        )?;
        delete_index_range(&mut batch, dropped.index_id)?;
        self.inner.tdb.db().write(batch, &sync())?;
        self.inner.online.forget(def.primary_key.index_id, |a| {
            a.index().index_id != dropped.index_id
        });
        self.inner.replace_table(&catalog, Arc::new(def));
        Ok(())
    }

    /// Begins a transaction (it holds its own reference to the engine).
    #[allow(clippy::needless_pass_by_value)] // the signature the SQL layer codes against
    pub fn begin(&self, options: TxnOptions) -> Result<TableTxn> {
        TableTxn::begin(self.inner.clone(), &options)
    }

    pub(crate) fn inner(&self) -> &Arc<StoreInner> {
        &self.inner
    }

    /// The engine under the store, for statistics, flushes and tools.
    pub fn engine(&self) -> &Arc<TransactionDb> {
        &self.inner.tdb
    }

    /// Closes the engine cleanly (everything durable). Fails if a [`TableTxn`] is still alive.
    pub fn close(self) -> Result<()> {
        let inner = Arc::clone(&self.inner);
        // Stops and joins the statistics thread, which may hold the store.
        drop(self);
        let inner = Arc::try_unwrap(inner).map_err(|_| {
            Error::InvalidArgument("cannot close the store while transactions are open".into())
        })?;
        let StoreInner { tdb, .. } = inner;
        let tdb = Arc::try_unwrap(tdb).map_err(|_| {
            Error::InvalidArgument("cannot close the store while transactions are open".into())
        })?;
        tdb.close()?;
        Ok(())
    }
}

/// A key-value database that was never a store: its keys would look like orphans to the
/// sweep at open, so refuse it rather than delete them.
fn refuse_foreign_keys(db: &shale_engine::Db) -> Result<()> {
    let mut iter = db.iterator(ReadOptions::default())?;
    iter.seek_to_first();
    iter.status()?;
    if iter.valid() {
        return Err(Error::InvalidArgument(
            "the database holds keys but no table catalog: it is not a shale-table store (open \
             it with the engine instead)"
                .into(),
        ));
    }
    Ok(())
}

pub(crate) fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 64 {
        return Err(Error::InvalidArgument(format!(
            "{what} name '{name}' must be 1 to 64 bytes"
        )));
    }
    Ok(())
}

pub(crate) fn table_of(catalog: &Catalog, database: &str, name: &str) -> Result<Arc<TableDef>> {
    if !catalog.databases.contains_key(database) {
        return Err(Error::NoSuchDatabase(database.to_owned()));
    }
    catalog
        .table(database, name)
        .cloned()
        .ok_or_else(|| Error::NoSuchTable {
            database: database.to_owned(),
            table: name.to_owned(),
        })
}

/// What every new or rewritten definition gets, as `MySQL` does: a primary key called
/// `PRIMARY`, unique, over NOT NULL columns.
pub(crate) fn normalize_primary_key(def: &mut TableDef) {
    def.primary_key.name = "PRIMARY".into();
    def.primary_key.unique = true;
    for &c in &def.primary_key.columns {
        if let Some(column) = def.columns.get_mut(c) {
            column.nullable = false;
        }
    }
}

/// Gives `def`'s primary key the id `first` and its indexes the ids after it; returns the
/// next id left free.
pub(crate) fn assign_index_ids(def: &mut TableDef, first: u32) -> Result<u32> {
    let after = first
        .checked_add(1 + def.indexes.len() as u32)
        .ok_or_else(|| Error::InvalidArgument("index ids exhausted".into()))?;
    def.primary_key.index_id = first;
    for (i, index) in def.indexes.iter_mut().enumerate() {
        index.index_id = first + 1 + i as u32;
    }
    Ok(after)
}

/// Persists (synced) that index ids below `after` are used, before any key of them is
/// written (build.rs, invariant 1).
pub(crate) fn persist_next_index_id(db: &shale_engine::Db, after: u32) -> Result<()> {
    let mut batch = WriteBatch::new();
    batch.put(
        DEFAULT_KEYSPACE_ID,
        system::KEY_NEXT_INDEX_ID,
        &after.to_le_bytes(),
    )?;
    db.write(batch, &sync())?;
    Ok(())
}

/// Checks what the encoders rely on: positions in range, unique names, at most one
/// `AUTO_INCREMENT` column and it an integer.
pub(crate) fn validate_table(def: &TableDef) -> Result<()> {
    let bad = |detail: String| {
        Err(Error::InvalidArgument(format!(
            "table '{}': {detail}",
            def.name
        )))
    };
    if def.columns.is_empty() {
        return bad("a table needs at least one column".into());
    }
    if def.columns.len() > 4096 {
        return bad("more than 4096 columns".into());
    }
    for (i, column) in def.columns.iter().enumerate() {
        if def.columns[..i]
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(&column.name))
        {
            return bad(format!("duplicate column name '{}'", column.name));
        }
        if column.auto_increment && !matches!(column.ty.kind(), Kind::Int { .. }) {
            return bad(format!(
                "AUTO_INCREMENT column '{}' must be an integer",
                column.name
            ));
        }
    }
    if let Some(c) = def
        .columns
        .iter()
        .find(|c| c.generated.is_some() && c.auto_increment)
    {
        return bad(format!(
            "generated column '{}' cannot be AUTO_INCREMENT",
            c.name
        ));
    }
    if let Some(&c) = def
        .primary_key
        .columns
        .iter()
        .find(|&&c| def.columns.get(c).is_some_and(ColumnDef::is_virtual))
    {
        return bad(format!(
            "virtual generated column '{}' cannot be part of the primary key",
            def.columns[c].name
        ));
    }
    if def.columns.iter().filter(|c| c.auto_increment).count() > 1 {
        return bad("more than one AUTO_INCREMENT column".into());
    }
    if let Some(position) = def.auto_increment_column() {
        // As `MySQL`: the counter recovers from the largest value of that index at open.
        let keyed = std::iter::once(&def.primary_key)
            .chain(&def.indexes)
            .any(|index| index.columns.first() == Some(&position));
        if !keyed {
            return bad("the AUTO_INCREMENT column must be the first column of a key".into());
        }
    }
    for (i, index) in std::iter::once(&def.primary_key)
        .chain(&def.indexes)
        .enumerate()
    {
        if index.columns.iter().any(|&c| c >= def.columns.len()) {
            return bad(format!(
                "index '{}' names a column that does not exist",
                index.name
            ));
        }
        if i > 0 && index.columns.is_empty() {
            return bad(format!("index '{}' has no columns", index.name));
        }
        if i > 0 && index.name.eq_ignore_ascii_case("PRIMARY") {
            return bad("a secondary index cannot be called PRIMARY".into());
        }
    }
    for (i, index) in def.indexes.iter().enumerate() {
        if def.indexes[..i]
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(&index.name))
        {
            return bad(format!("duplicate key name '{}'", index.name));
        }
    }
    Ok(())
}

pub(crate) fn delete_data_batch(batch: &mut WriteBatch, def: &TableDef) -> Result<()> {
    delete_index_range(batch, def.primary_key.index_id)?;
    for index in &def.indexes {
        delete_index_range(batch, index.index_id)?;
    }
    let sys = DEFAULT_KEYSPACE_ID;
    batch.delete(
        sys,
        &system::table_key(TAG_AUTO_INCREMENT, def.primary_key.index_id),
    )?;
    batch.delete(
        sys,
        &system::table_key(TAG_ROW_ID, def.primary_key.index_id),
    )?;
    // Kept statistics describe the rows deleted (cardinality.rs invariant 3).
    for index in std::iter::once(&def.primary_key).chain(&def.indexes) {
        batch.delete(
            sys,
            &system::table_key(system::TAG_INDEX_STATS, index.index_id),
        )?;
    }
    Ok(())
}

fn drop_table_batch(batch: &mut WriteBatch, def: &TableDef) -> Result<()> {
    delete_data_batch(batch, def)?;
    batch.delete(
        DEFAULT_KEYSPACE_ID,
        &system::table_key(TAG_TABLE, def.primary_key.index_id),
    )?;
    Ok(())
}

fn load_catalog(db: &shale_engine::Db, next_index_id: u32) -> Result<Catalog> {
    let mut catalog = Catalog::default();
    let mut tables = Vec::new();
    let mut views = Vec::new();
    let (start, end) = system::system_range();
    let mut iter = db.iterator(ReadOptions {
        lower_bound: Some(start),
        upper_bound: Some(end),
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    while iter.valid() {
        let (key, value) = (iter.key(), iter.value());
        match key.get(4) {
            Some(&system::TAG_DATABASE) => {
                let name = String::from_utf8(key.get(5..).unwrap_or_default().to_vec())
                    .map_err(|_| Error::Corruption("a database name is not UTF-8".into()))?;
                catalog.databases.insert(name, BTreeMap::new());
            }
            Some(&TAG_TABLE) => {
                let def = system::decode_table(value)?;
                if key.get(5..) != Some(&def.primary_key.index_id.to_be_bytes()[..])
                    || def.primary_key.index_id >= next_index_id
                {
                    return Err(Error::Corruption(format!(
                        "table '{}.{}' is stored under the wrong id",
                        def.database, def.name
                    )));
                }
                tables.push(def);
            }
            Some(&crate::view::TAG_VIEW) => views.push((key.to_vec(), value.to_vec())),
            _ => {}
        }
        iter.next();
    }
    iter.status()?;
    for def in tables {
        let Some(in_database) = catalog.databases.get_mut(&def.database) else {
            return Err(Error::Corruption(format!(
                "table '{}.{}' belongs to no database",
                def.database, def.name
            )));
        };
        in_database.insert(def.name.clone(), Arc::new(def));
    }
    for (key, value) in views {
        crate::view::load_view(&mut catalog, &key, &value)?;
    }
    Ok(catalog)
}

impl StoreInner {
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn install(&self, catalog: Catalog) {
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
    }

    fn replace_table(&self, catalog: &Catalog, def: Arc<TableDef>) {
        let mut new = catalog.clone();
        if let Some(tables) = new.databases.get_mut(&def.database) {
            tables.insert(def.name.clone(), def);
        }
        self.install(new);
    }

    /// Raises the fence on the tables `ids` and waits for every write transaction that wrote
    /// one of them before it (fence.rs, invariant 5); if the wait times out the fences come
    /// down again. Called under the DDL lock.
    fn fence_writers(&self, ids: &[u32]) -> Result<()> {
        let epoch = self.online.current_epoch() + 1;
        for &id in ids {
            self.fences.raise(id, epoch);
        }
        let waited = self.online.wait_for_older_writers(ids, self.ddl_wait());
        if waited.is_err() {
            self.lower_fences(ids);
        }
        waited
    }

    fn lower_fences(&self, ids: &[u32]) {
        for &id in ids {
            self.fences.lower(id);
        }
    }

    /// How long DDL waits for transactions, and transactions for DDL: the store's
    /// `ddl_wait_timeout`, or the thread's shorter `lock_wait_timeout` (`metadata_lock.rs`).
    pub(crate) fn ddl_wait(&self) -> Duration {
        crate::metadata_lock::wait_timeout(self.ddl_wait_timeout)
    }

    /// Takes the tables `ids` exclusive for a DDL statement (`metadata_lock.rs`): waits for
    /// the transactions that use them to end. Called under the DDL lock (invariant 2).
    pub(crate) fn lock_tables(&self, ids: &[u32]) -> Result<ExclusiveLock<'_>> {
        self.metadata.lock_exclusive(ids, self.ddl_wait_timeout)
    }

    pub(crate) fn lock_ddl(&self) -> std::sync::MutexGuard<'_, u32> {
        self.ddl.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shared definition of `table` if it is the catalog's (no copy), else a copy.
    pub(crate) fn shared_def(&self, table: &TableDef) -> Arc<TableDef> {
        let catalog = self.catalog();
        match catalog.table(&table.database, &table.name) {
            Some(def) if std::ptr::eq(def.as_ref(), table) => def.clone(),
            _ => Arc::new(table.clone()),
        }
    }
}
