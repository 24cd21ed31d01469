//! Keyspaces (column families): independent key spaces with their own options and
//! memtables, sharing one WAL, one MANIFEST and atomic write batches.
//!
//! Invariants:
//! 1. `SuperVersion` is immutable; a reader holding one sees a fixed set of memtables and
//!    table files (the `Arc`s keep them alive). It is replaced, under the state mutex, after
//!    every memtable switch, flush, compaction and keyspace change. Its `table_plan` is
//!    filled once and depends only on `version`, so read views of one Version share it.
//! 2. `mem_log_number` is the number of the oldest WAL that may hold data of `mem`; the frozen
//!    memtables in `imm` carry theirs. The keyspace's log number in the MANIFEST advances only
//!    when a flush has made those WALs unnecessary for it.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;

use shale_sst::{PrefixExtractor, SeqNo};

use crate::batch::WriteBatch;
use crate::db::{write_one, DbInner, DEFAULT_KEYSPACE_ID};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::KeyspaceOptions;
use crate::read::{DbIterator, ReadOptions, TableReadPlan};
use crate::read_views::ViewSlot;
use crate::version::Version;

/// A fixed read view of one keyspace.
#[derive(Debug)]
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<MemTable>,
    /// Frozen memtables, newest first.
    pub(crate) imm: Vec<Arc<MemTable>>,
    pub(crate) version: Arc<Version>,
    /// The keyspace's TTL in seconds: values carry write times, expired ones are hidden.
    pub(crate) ttl: Option<u64>,
    /// `tombstone_scan_flush_trigger` (0: off).
    pub(crate) tombstone_scan_flush_trigger: u64,
    /// The keyspace's prefix extractor, so a lookup need not take the state lock for it.
    pub(crate) prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// What iterators need of `version`'s tables, built by the first one (shared with the
    /// next read view while the Version stays the same).
    pub(crate) table_plan: Arc<OnceLock<TableReadPlan>>,
}

/// A frozen memtable waiting to be flushed, with the oldest WAL holding its data.
#[derive(Debug, Clone)]
pub(crate) struct FrozenMemTable {
    pub(crate) mem: Arc<MemTable>,
    pub(crate) log_number: u64,
}

/// The engine's state of one keyspace (under the state mutex).
#[derive(Debug)]
pub(crate) struct KeyspaceState {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) options: KeyspaceOptions,
    pub(crate) mem: Arc<MemTable>,
    pub(crate) mem_log_number: u64,
    /// Oldest first.
    pub(crate) imm: VecDeque<FrozenMemTable>,
    pub(crate) super_version: Arc<SuperVersion>,
    /// Where `super_version` is published for lookups (`crate::read_views`, invariant 1).
    pub(crate) published: ViewSlot,
    /// Compaction work the current Version needs (`estimated_pending_bytes`), for the write
    /// stalls; refreshed with the read view.
    pub(crate) pending_compaction_bytes: u64,
}

impl KeyspaceState {
    pub(crate) fn new(
        id: u32,
        name: String,
        options: KeyspaceOptions,
        mem: Arc<MemTable>,
        mem_log_number: u64,
        version: Arc<Version>,
    ) -> Self {
        let pending_compaction_bytes =
            crate::compaction::estimated_pending_bytes(&version, id, &options);
        let super_version = Arc::new(SuperVersion {
            mem: mem.clone(),
            imm: Vec::new(),
            version,
            ttl: options.ttl.map(|ttl| ttl.as_secs()),
            tombstone_scan_flush_trigger: options.tombstone_scan_flush_trigger,
            prefix_extractor: options.prefix_extractor.clone(),
            table_plan: Arc::default(),
        });
        KeyspaceState {
            id,
            name,
            options,
            mem,
            mem_log_number,
            imm: VecDeque::new(),
            published: Arc::new(ArcSwap::new(super_version.clone())),
            super_version,
            pending_compaction_bytes,
        }
    }

    /// Rebuilds the read view after the memtables or the Version changed (invariant 1).
    pub(crate) fn install_super_version(&mut self, version: Arc<Version>) {
        let same_version = Arc::ptr_eq(&version, &self.super_version.version);
        if !same_version {
            self.pending_compaction_bytes =
                crate::compaction::estimated_pending_bytes(&version, self.id, &self.options);
        }
        let table_plan = if same_version {
            self.super_version.table_plan.clone()
        } else {
            Arc::default()
        };
        self.super_version = Arc::new(SuperVersion {
            mem: self.mem.clone(),
            imm: self.imm.iter().rev().map(|f| f.mem.clone()).collect(),
            version,
            ttl: self.options.ttl.map(|ttl| ttl.as_secs()),
            tombstone_scan_flush_trigger: self.options.tombstone_scan_flush_trigger,
            prefix_extractor: self.options.prefix_extractor.clone(),
            table_plan,
        });
        self.published.store(self.super_version.clone());
    }

    /// The oldest WAL this keyspace still needs (invariant 2).
    pub(crate) fn oldest_needed_log(&self) -> u64 {
        self.imm
            .front()
            .map_or(self.mem_log_number, |f| f.log_number)
    }
}

/// A handle to one keyspace of an open database. Cheap to clone; all methods are safe to call
/// from many threads.
#[derive(Debug, Clone)]
pub struct Keyspace {
    inner: Arc<DbInner>,
    id: u32,
    name: String,
}

impl Keyspace {
    pub(crate) fn new(inner: Arc<DbInner>, id: u32, name: String) -> Self {
        Keyspace { inner, id, name }
    }

    /// The id that [`WriteBatch`] entries use for this keyspace.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Writes `key = value` with the database's default durability.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::with_capacity(WriteBatch::put_size(key, value));
        batch.put(self.id, key, value)?;
        write_one(&self.inner, batch)
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::with_capacity(WriteBatch::put_size(key, &[]));
        batch.delete(self.id, key)?;
        write_one(&self.inner, batch)
    }

    /// Deletes every key in `[start, end)`.
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_range(self.id, start, end)?;
        write_one(&self.inner, batch)
    }

    /// The value of `key`, as of now.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(key, &ReadOptions::default())
    }

    /// The value of `key`, as of `options.snapshot` (or now).
    pub fn get_with(&self, key: &[u8], options: &ReadOptions) -> Result<Option<Vec<u8>>> {
        crate::read::get(&self.inner, self.id, key, options)
    }

    /// The values of several keys from one consistent view.
    pub fn multi_get(&self, keys: &[&[u8]], options: &ReadOptions) -> Result<Vec<Option<Vec<u8>>>> {
        crate::read::multi_get(&self.inner, self.id, keys, options)
    }

    /// An iterator over the keyspace (bounds, direction and prefix mode in `options`).
    pub fn iterator(&self, options: ReadOptions) -> Result<DbIterator> {
        crate::read::iter(&self.inner, self.id, options)
    }

    /// The sequence number reads see when no snapshot is given.
    pub fn latest_seqno(&self) -> SeqNo {
        self.inner.visible_seqno()
    }
}

/// Creates keyspace `name` (recorded in the MANIFEST and the OPTIONS file).
pub(crate) fn create(
    inner: &Arc<DbInner>,
    name: &str,
    options: KeyspaceOptions,
) -> Result<Keyspace> {
    options.validate()?;
    if name.is_empty() || name.len() > 255 || name.contains(['"', '\n', '\r']) {
        return Err(Error::InvalidArgument(format!(
            "keyspace name {name:?} must be 1 to 255 bytes without quotes or newlines"
        )));
    }
    let mut state = inner.lock_state();
    if state.keyspaces.values().any(|k| k.name == name) {
        return Err(Error::InvalidArgument(format!(
            "keyspace {name:?} already exists"
        )));
    }
    let log_number = inner.lock_wal()?.number;
    // The edit names this log: its name must be durable before the MANIFEST says so.
    if let Err(error) = crate::write::make_wal_name_durable(inner) {
        let reason = format!(
            "syncing the directory entry of WAL {log_number} failed creating keyspace \
             {name:?}: {error}"
        );
        if !error.is_retryable_write() {
            inner.set_background_error_locked(&state, reason);
            return Err(error);
        }
        // Nothing was recorded: the WAL recovery retries the sync, then the creation can be
        // made again (`crate::wal_recovery`).
        return Err(crate::wal_recovery::wal_failed(inner, &mut state, reason));
    }
    let id = state
        .versions
        .create_keyspace(name, log_number)
        .map_err(|e| {
            crate::manifest_recovery::edit_failed(
                inner,
                &state,
                format!("MANIFEST write failed creating keyspace {name:?}: {e}"),
                e,
            )
        })?;
    let mem = Arc::new(MemTable::for_write_buffer(
        inner.options.comparator.clone(),
        state.versions.new_file_number(),
        options.write_buffer_size,
        options.memtable_bloom_bytes(),
    ));
    let version = state.versions.current();
    state.keyspaces.insert(
        id,
        KeyspaceState::new(id, name.to_owned(), options, mem, log_number, version),
    );
    inner.read_views.publish(&state.keyspaces);
    crate::recovery::write_options_file(inner, &mut state)?;
    Ok(Keyspace::new(inner.clone(), id, name.to_owned()))
}

/// Drops keyspace `name`; its table files become obsolete and are deleted.
pub(crate) fn drop_keyspace(inner: &Arc<DbInner>, name: &str) -> Result<()> {
    let mut state = inner.lock_state();
    let Some(id) = state
        .keyspaces
        .values()
        .find(|k| k.name == name)
        .map(|k| k.id)
    else {
        return Err(Error::InvalidArgument(format!(
            "keyspace {name:?} does not exist"
        )));
    };
    if id == DEFAULT_KEYSPACE_ID {
        return Err(Error::InvalidArgument(
            "the default keyspace cannot be dropped".into(),
        ));
    }
    state.versions.drop_keyspace(id).map_err(|e| {
        crate::manifest_recovery::edit_failed(
            inner,
            &state,
            format!("MANIFEST write failed dropping keyspace {name:?}: {e}"),
            e,
        )
    })?;
    state.keyspaces.remove(&id);
    inner.read_views.publish(&state.keyspaces);
    crate::recovery::write_options_file(inner, &mut state)?;
    crate::flush::delete_obsolete_files(inner, &mut state);
    Ok(())
}
