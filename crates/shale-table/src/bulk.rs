//! Bulk load (`MyRocks`' bulk-load mode): rows go straight into table files, which are
//! ingested into the engine at the end, instead of through transactions and the memtable.
//!
//! [`Store::bulk_load`] starts a [`BulkLoad`] for one table. Each [`BulkLoad::insert`] encodes
//! the row and its secondary index entries and hands them to one sorter per index
//! (`bulk_sort.rs`: bounded memory, spill runs on disk). [`BulkLoad::finish`] merges each
//! index's entries in key order into external table files (`TableFileWriter`), refusing a
//! repeated primary or unique key, then ingests all files of all indexes in ONE engine
//! ingestion. Input in primary-key order is never re-sorted; any order is accepted.
//!
//! Invariants:
//! 1. Nothing of a load is visible before `finish` ingests it, and then all of it is, at one
//!    sequence number (the engine's ingestion is atomic across files): a reader never sees a
//!    row without its index entries, or part of a load.
//! 2. A load that fails, is dropped, or is cut by a crash leaves the table as it was; its
//!    files live under `bulk-tmp/` in the database directory, which `Store::open` empties.
//! 3. Loaded keys never shadow existing ones: `finish` refuses a primary key range that holds
//!    rows already ([`Error::BulkLoadOverlap`]) and a unique key that exists
//!    ([`Error::DuplicateKey`]).
//!
//! 4. A load is a writer of its table for online CREATE INDEX (online.rs): it registers when
//!    it starts, so a build on the table waits for it to finish, and `finish` refuses to
//!    ingest when an index was added online that its definition lacks (its files would hold
//!    no entries for it).
//!
//! 5. A load holds its table's metadata lock as a writer does (`metadata_lock.rs`), from its
//!    start until it is finished or dropped: DROP, TRUNCATE, ALTER and LOCK TABLES wait for
//!    it, and a load that waited for one of them starts only if the table is still the one
//!    it was given.
//!
//! Not coordinated with concurrent writers to the same table (as in `MyRocks`): the overlap
//! check and the ingestion are not one atomic step, so a row another session inserts into
//! the loaded key range meanwhile may be shadowed by the loaded one.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use shale_engine::{IngestArg, IngestOptions, ReadOptions, TableFileWriter};

use crate::bulk_sort::Sorter;
use crate::codec::key::range_bounds;
use crate::codec::row::{decode_row, encode_row};
use crate::error::{Error, Result};
use crate::index::{entry_for_row, is_hidden_pk, pk_key_of_row, show_entry, table_id};
use crate::metadata_lock::SharedLocks;
use crate::online::{OnlineIndexes, WriterSlot};
use crate::schema::TableDef;
use crate::store::{Store, StoreInner};
use crate::system::{TAG_AUTO_INCREMENT, TAG_ROW_ID};
use crate::value::Value;

/// The directory of a database that holds bulk loads' temporary files.
pub(crate) const BULK_TMP_DIR: &str = "bulk-tmp";

/// Tells loads of one process apart in `bulk-tmp/`.
static NEXT_LOAD: AtomicU64 = AtomicU64::new(1);

/// How a [`BulkLoad`] uses memory and files.
#[derive(Debug, Clone)]
pub struct BulkLoadOptions {
    /// Memory for sorting, shared by the table and its indexes; past it, sorted runs are
    /// spilled to `bulk-tmp/`. Default 64 MiB.
    pub memory_budget: usize,
    /// Each index's entries are cut into table files of about this size. Default 64 MiB.
    pub target_file_size: u64,
}

impl Default for BulkLoadOptions {
    fn default() -> Self {
        BulkLoadOptions {
            memory_budget: 64 << 20,
            target_file_size: 64 << 20,
        }
    }
}

/// What a finished load did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BulkLoadSummary {
    /// Rows loaded.
    pub rows: u64,
    /// Table files ingested (all indexes).
    pub files: usize,
    /// Spill runs written while sorting (0 when everything fit in memory).
    pub spill_runs: usize,
}

/// A bulk load into one table; see the module docs.
#[derive(Debug)]
pub struct BulkLoad {
    store: Arc<StoreInner>,
    table: Arc<TableDef>,
    dir: PathBuf,
    /// Files prefix of this load in `dir`.
    prefix: String,
    options: BulkLoadOptions,
    /// `sorters[0]` holds the rows; `sorters[1 + i]` the entries of `table.indexes[i]`.
    sorters: Vec<Sorter>,
    outputs: Vec<PathBuf>,
    rows: u64,
    value: Vec<u8>,
    pk_key: Vec<u8>,
    scratch: Vec<u16>,
    /// Invariant 4: held until the load is finished or dropped.
    _writer: WriterSlot,
    /// Invariant 5: the table's metadata lock, a writer's, held as long.
    _metadata: SharedLocks,
}

impl Store {
    /// Starts a bulk load into `table` (as the catalog has it now). Nothing is visible until
    /// [`BulkLoad::finish`].
    pub fn bulk_load(&self, table: &TableDef, options: BulkLoadOptions) -> Result<BulkLoad> {
        let inner = self.inner().clone();
        let mut metadata = SharedLocks::new(Arc::clone(&inner.metadata));
        if metadata.lock(table_id(table), &table.name, true, inner.ddl_wait_timeout)? {
            crate::txn::check_still_usable(&inner.catalog(), table)?;
        }
        let table = inner.shared_def(table);
        let fs = inner.engine_options.file_system.clone();
        let dir = inner.path.join(BULK_TMP_DIR);
        fs.create_dir_all(&dir)?;
        let prefix = format!("load{}", NEXT_LOAD.fetch_add(1, Ordering::Relaxed));
        let budget = options.memory_budget / (1 + table.indexes.len());
        let sorters = (0..=table.indexes.len())
            .map(|i| Sorter::new(fs.clone(), dir.join(format!("{prefix}-{i}")), budget))
            .collect();
        let writer = OnlineIndexes::register_writer(&inner.online);
        writer.writes(table.primary_key.index_id);
        Ok(BulkLoad {
            _writer: writer,
            _metadata: metadata,
            store: inner,
            table,
            dir,
            prefix,
            options,
            sorters,
            outputs: Vec::new(),
            rows: 0,
            value: Vec::with_capacity(256),
            pk_key: Vec::with_capacity(32),
            scratch: Vec::new(),
        })
    }
}

/// Deletes what loads cut by a crash left in `bulk-tmp/` (invariant 2); at open only.
pub(crate) fn sweep_bulk_tmp(fs: &dyn shale_fs::FileSystem, db_path: &Path) -> Result<()> {
    let dir = db_path.join(BULK_TMP_DIR);
    if !fs.exists(&dir)? {
        return Ok(());
    }
    for name in fs.list(&dir)? {
        fs.remove(&dir.join(name))?;
    }
    Ok(())
}

impl BulkLoad {
    /// The table being loaded.
    pub fn table(&self) -> &Arc<TableDef> {
        &self.table
    }

    /// Rows added so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The next `AUTO_INCREMENT` value of the table (shared with transactions).
    pub fn next_auto_increment(&mut self) -> Result<u64> {
        if !self.table.columns.iter().any(|c| c.auto_increment) {
            return Err(Error::InvalidArgument(format!(
                "table '{}' has no AUTO_INCREMENT column",
                self.table.name
            )));
        }
        self.store.next_sequence(TAG_AUTO_INCREMENT, &self.table)
    }

    /// Adds a full row (one value per column; TIMESTAMPs in UTC: a load has no time zone).
    /// Values are checked here; a repeated key is found only at [`Self::finish`].
    pub fn insert(&mut self, row: &[Value]) -> Result<()> {
        let table = &*self.table;
        if crate::zone::has_timestamp(table) {
            crate::zone::row_to_utc(table, &mut row.to_vec(), 0)?;
        }
        let completed;
        let row = if table.has_virtual_columns() {
            let mut full = row.to_vec();
            crate::generated::complete(table, &mut full)?;
            completed = full;
            &completed[..]
        } else {
            row
        };
        self.value.clear();
        encode_row(&mut self.value, table, row)?;
        if let Some(position) = table.columns.iter().position(|c| c.auto_increment) {
            let explicit = match row.get(position) {
                Some(Value::Int(v)) => u64::try_from(*v).ok(),
                Some(Value::UInt(v)) => Some(*v),
                _ => None,
            };
            if let Some(v) = explicit.filter(|&v| v > 0) {
                self.store.note_auto_increment(table, v)?;
            }
        }
        let row_id = if is_hidden_pk(table) {
            Some(self.store.next_sequence(TAG_ROW_ID, table)?)
        } else {
            None
        };
        pk_key_of_row(&mut self.pk_key, table, row, row_id, &mut self.scratch)?;
        for (i, index) in table.indexes.iter().enumerate() {
            let (key, value) = entry_for_row(table, index, row, &self.pk_key, &mut self.scratch)?;
            self.sorters[1 + i].add(&key, &value)?;
        }
        self.sorters[0].add(&self.pk_key, &self.value)?;
        self.rows += 1;
        Ok(())
    }

    /// Sorts, writes and ingests everything added: after it returns `Ok`, every row and index
    /// entry is visible at once; after an error, none is (invariants 1 and 2).
    pub fn finish(mut self) -> Result<BulkLoadSummary> {
        let spill_runs = self.sorters.iter().map(|s| s.runs().len()).sum();
        if self.rows == 0 {
            return Ok(BulkLoadSummary::default());
        }
        let store = self.store.clone();
        if store.online.added_for(&self.table).is_some() {
            return Err(Error::InvalidArgument(format!(
                "an index was added to table '{}' after this bulk load began; load again",
                self.table.name
            )));
        }
        let db = store.tdb.db();
        // Secondary indexes first: a repeated unique key is reported with its row, looked up
        // in the rows' sorter, which is still whole then.
        for position in 0..self.table.indexes.len() {
            self.write_index(Some(position))?;
        }
        self.write_index(None)?;
        let args = [IngestArg {
            keyspace: db.default_keyspace(),
            files: self.outputs.clone(),
        }];
        db.ingest(
            &args,
            IngestOptions {
                move_files: true,
                ..IngestOptions::default()
            },
        )?;
        store
            .auto_recalc
            .note_changes(self.table.primary_key.index_id, self.rows);
        Ok(BulkLoadSummary {
            rows: self.rows,
            files: self.outputs.len(),
            spill_runs,
        })
    }

    /// Merges one index's entries (`None`: the rows) into table files.
    fn write_index(&mut self, position: Option<usize>) -> Result<()> {
        let store = self.store.clone();
        let db = store.tdb.db();
        let table = self.table.clone();
        let (index, sorter_at) = match position {
            Some(p) => (&table.indexes[p], 1 + p),
            None => (&table.primary_key, 0),
        };
        let index_id = index.index_id;
        let has_data = index_has_data(db, index_id)?;
        let check_unique = position.is_some() && index.unique && has_data;
        let options = &store.engine_options;
        let mut writer: Option<TableFileWriter> = None;
        let mut first_key: Option<Vec<u8>> = None;
        let mut last_key: Vec<u8> = Vec::new();
        let mut duplicate: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut file_number = 0usize;
        let mut outputs = Vec::new();
        let target = self.options.target_file_size;
        let dir = self.dir.clone();
        let prefix = format!("{}-{index_id}", self.prefix);
        let mut sorter = std::mem::replace(
            &mut self.sorters[sorter_at],
            Sorter::new(options.file_system.clone(), PathBuf::new(), 0),
        );
        let result = sorter.merge(|key, value| {
            if first_key.is_some() && key == last_key.as_slice() {
                if position.is_some() && !crate::index::is_unique_entry(value) {
                    // A non-unique entry repeats only with its row's primary key: the rows'
                    // merge, which comes last, reports that.
                    return Ok(());
                }
                duplicate = Some((key.to_vec(), value.to_vec()));
                return Err(Error::InvalidArgument(String::new()));
            }
            if check_unique && crate::index::is_unique_entry(value) && db.get(key)?.is_some() {
                duplicate = Some((key.to_vec(), value.to_vec()));
                return Err(Error::InvalidArgument(String::new()));
            }
            if writer
                .as_ref()
                .is_some_and(|w| w.estimated_file_size() >= target)
            {
                if let Some(w) = writer.take() {
                    w.finish()?;
                }
            }
            if writer.is_none() {
                let path = dir.join(format!("{prefix}-{file_number}.sst"));
                file_number += 1;
                outputs.push(path.clone());
                writer = Some(TableFileWriter::create(
                    &path,
                    options,
                    &options.default_keyspace,
                )?);
            }
            if let Some(w) = &mut writer {
                w.put(key, value)?;
            }
            if first_key.is_none() {
                first_key = Some(key.to_vec());
            }
            last_key.clear();
            last_key.extend_from_slice(key);
            Ok(())
        });
        sorter.remove_runs();
        self.outputs.extend(outputs);
        if let Some((key, value)) = duplicate {
            drop(writer);
            let entry = match position {
                None => show_entry(&decode_row(&table, &value)?, &table.primary_key.columns),
                Some(p) => self.show_unique_entry(p, &key, &value),
            };
            return Err(Error::DuplicateKey {
                table: table.name.clone(),
                key: index.name.clone(),
                entry,
            });
        }
        result?;
        if let Some(w) = writer {
            w.finish()?;
        }
        // The rows must not overlap rows already there (invariant 3).
        if let (None, true, Some(first)) = (position, has_data, first_key) {
            if range_has_data(db, first, &last_key)? {
                return Err(Error::BulkLoadOverlap {
                    table: table.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// The values of unique index `position` as a duplicate-key error shows them, for the
    /// entry `key -> value` (value: the row's pk suffix): the row is found in the rows' sorter.
    fn show_unique_entry(&mut self, position: usize, key: &[u8], value: &[u8]) -> String {
        let table = self.table.clone();
        let index = &table.indexes[position];
        let mut pk = table_id(&table).to_be_bytes().to_vec();
        pk.extend_from_slice(value);
        let mut found = None;
        let _ = self.sorters[0].merge(|k, v| {
            if k == pk.as_slice() {
                found = Some(decode_row(&table, v)?);
            }
            Ok(())
        });
        match found {
            Some(row) => show_entry(&row, &index.columns),
            // The row cannot be read back (a damaged run): show the key's bytes.
            None => format!("{key:02x?}"),
        }
    }
}

impl Drop for BulkLoad {
    /// A load dropped before (or failing in) `finish` leaves nothing visible; its files are
    /// deleted here (best effort; the next open deletes what remains).
    fn drop(&mut self) {
        for sorter in &mut self.sorters {
            sorter.remove_runs();
        }
        let fs = &self.store.engine_options.file_system;
        for path in self.outputs.drain(..) {
            // After a successful ingestion (`move_files`) this removes only our link.
            let _ = fs.remove(&path);
        }
    }
}

/// Whether any key of `index_id` exists.
fn index_has_data(db: &shale_engine::Db, index_id: u32) -> Result<bool> {
    let (lower, upper) = range_bounds(index_id, Bound::Unbounded, Bound::Unbounded);
    let mut iter = db.iterator(ReadOptions {
        lower_bound: Some(lower),
        upper_bound: upper,
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    let valid = iter.valid();
    iter.status()?;
    Ok(valid)
}

/// Whether any key in `first..=last` exists.
fn range_has_data(db: &shale_engine::Db, first: Vec<u8>, last: &[u8]) -> Result<bool> {
    let mut upper = last.to_vec();
    upper.push(0);
    let mut iter = db.iterator(ReadOptions {
        lower_bound: Some(first),
        upper_bound: Some(upper),
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    let valid = iter.valid();
    iter.status()?;
    Ok(valid)
}
