//! Flush: a frozen memtable becomes an L0 table, recorded in the MANIFEST with the
//! keyspace's new log number; then WALs and tables nobody needs are deleted.
//!
//! The table leaves out what no snapshot can see, as compaction does (its first rule): a
//! version of a user key with a newer version in the same snapshot stripe
//! ([`crate::snapshot::stripe`]). Deletions are kept (older data may lie below), and so are
//! range tombstones and whatever they cover. A snapshot taken after the list is read sees
//! every entry of the frozen memtable (its writes were all published before it froze: db.rs
//! invariant 2), so it splits no stripe.
//!
//! Invariants:
//! 1. The table is written and synced, and its directory entry synced, before the MANIFEST
//!    edit that names it; the edit is synced before the memtable is dropped.
//! 2. Frozen memtables of a keyspace are flushed oldest first, so the keyspace's log number
//!    only moves forward and never past a WAL holding unflushed data.
//! 3. A flush whose table write fails (ENOSPC, say) deletes the partial table and leaves the
//!    memtable frozen and its WALs in place; it is retried (db.rs invariant 4).
//! 4. A WAL is deleted only below every log number the MANIFEST holds, never on the strength
//!    of memory alone, so the MANIFEST never names a deleted WAL (recovery.rs invariant 5).
//!    Each flush edit carries every other keyspace's log number forward to the oldest WAL it
//!    needs (an idle keyspace's moves at every WAL switch, in memory), so idle keyspaces do
//!    not pin WALs past the next flush.
//! 5. A failed directory sync of the active WAL's name before the edit (which names the log)
//!    is a WAL failure (`crate::wal_recovery`): the table is deleted, the memtable stays
//!    frozen, and the recovery retries the sync before any edit names the log.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use shale_fs::{FileSystem, IoMode};
use shale_sst::{
    Comparator, InternalKey, ParsedInternalKey, SeqNo, TableProperties, TableWriter, ValueKind,
    WriterOptions,
};

use crate::blob::{discard_blob_files, BlobFileMeta, BlobOutputs, BlobSettings};

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::keyspace::FrozenMemTable;
use crate::memtable::MemTable;
use crate::options::{KeyspaceOptions, WriteOptions};
use crate::rate_limiter::{IoPriority, RateLimitedFile, RateLimiter};
use crate::snapshot::stripe;
use crate::stats::StatCounters;
use crate::table_cache::{table_file_name, PinnedTable};
use crate::version::{FileMetaData, VersionEdit};
use crate::wal::format::parse_log_file_name;

/// The table property (`user.keyspace_id`, docs/format/sst.md) holding the id of the keyspace
/// a table belongs to, in decimal: repair places tables by it when the MANIFEST is lost.
pub(crate) const KEYSPACE_ID_PROPERTY: &str = "keyspace_id";

/// The table property (`user.keyspace_name`) holding the name of the keyspace a table belongs to.
pub(crate) const KEYSPACE_NAME_PROPERTY: &str = "keyspace_name";

/// Writer options for L0 tables of keyspace `(id, name)` (compaction sets its output level's
/// codec).
pub(crate) fn writer_options(
    comparator: &Arc<dyn Comparator>,
    options: &KeyspaceOptions,
    keyspace: (u32, &str),
) -> WriterOptions {
    let user_properties = [
        (KEYSPACE_ID_PROPERTY, keyspace.0.to_string().into_bytes()),
        (KEYSPACE_NAME_PROPERTY, keyspace.1.as_bytes().to_vec()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect();
    WriterOptions {
        block_size: options.block_size,
        compression: options.compression_for_level(0, false),
        compression_level: options.compression_level,
        checksum: options.checksum,
        filter_bits_per_key: options.bloom_bits_per_key,
        prefix_extractor: options.prefix_extractor.clone(),
        comparator: comparator.clone(),
        user_properties,
        properties_collector: options.table_properties_collector.clone(),
        ..WriterOptions::default()
    }
}

/// The MANIFEST's description of a finished table.
pub(crate) fn file_meta(number: u64, size: u64, props: &TableProperties) -> Result<FileMetaData> {
    let key = |bytes: &[u8], which: &str| {
        shale_sst::InternalKey::from_encoded(bytes.to_vec()).map_err(|e| {
            Error::InvalidArgument(format!("table {number} has a bad {which} key: {e}"))
        })
    };
    Ok(FileMetaData {
        number,
        size,
        smallest: key(&props.smallest_key, "smallest")?,
        largest: key(&props.largest_key, "largest")?,
        smallest_seqno: props.smallest_seqno,
        largest_seqno: props.largest_seqno,
        num_entries: props.num_entries,
        num_deletions: props.num_deletions + props.num_range_deletions,
        creation_time: Some(props.creation_time),
        oldest_entry_time: None,
        global_seqno: None,
        oldest_blob_file: None,
        pinned_table: PinnedTable::default(),
    })
}

/// Writes `mem` as table `number` with `options` (from [`writer_options`]), without the
/// versions no snapshot in `snapshots` (ascending) can see (module docs). Returns `None`
/// when the memtable held nothing. With `ttl` (the keyspace has a TTL, so values end in
/// their write time) the result records the oldest value's write time. With `blobs`, values
/// of at least the keyspace's `min_blob_size` go to blob files and the table holds
/// references (the caller finishes `blobs` and records its files).
#[allow(clippy::too_many_arguments)] // one flush's inputs; a struct would only rename them
pub(crate) fn write_memtable(
    fs: &dyn FileSystem,
    dir: &Path,
    mem: &Arc<MemTable>,
    number: u64,
    options: WriterOptions,
    ttl: bool,
    snapshots: &[SeqNo],
    rate_limiter: Option<&Arc<RateLimiter>>,
    mut blobs: Option<&mut BlobOutputs<'_>>,
    io_mode: IoMode,
) -> Result<Option<FileMetaData>> {
    let comparator = options.comparator.clone();
    // Empty ranges (`start >= end`) delete nothing, and a table cannot hold them.
    let tombstones: Vec<_> = mem
        .range_tombstones()
        .into_iter()
        .filter(|t| comparator.compare(&t.start, &t.end).is_lt())
        .collect();
    let mut iter = mem.iter();
    iter.seek_to_first();
    if !iter.valid() && tombstones.is_empty() {
        return Ok(None);
    }
    let path = table_file_name(dir, number);
    let file = RateLimitedFile::wrap(
        fs.create_with(&path, io_mode)?,
        rate_limiter,
        IoPriority::Flush,
    );
    let mut writer = TableWriter::new(file, path, options)?;
    // Under a TTL, the oldest value's write time, for the picker's TTL reason.
    let mut oldest_write_time: Option<u64> = None;
    let mut oldest_blob_file: Option<u64> = None;
    // The user key of the entry before and its stripe: entries come newest first per key.
    let mut previous_user_key: Vec<u8> = Vec::new();
    let mut previous_stripe = None;
    while iter.valid() {
        let key = ParsedInternalKey::parse(iter.key()).map_err(|e| Error::Corruption {
            file: dir.to_path_buf(),
            offset: 0,
            detail: format!("memtable {} holds a bad internal key: {e}", mem.id()),
        })?;
        let entry_stripe = stripe(snapshots, key.seqno);
        let same_user_key = previous_stripe.is_some()
            && comparator.compare(&previous_user_key, key.user_key).is_eq();
        if same_user_key && previous_stripe == Some(entry_stripe) {
            iter.next();
            continue;
        }
        if !same_user_key {
            previous_user_key.clear();
            previous_user_key.extend_from_slice(key.user_key);
        }
        previous_stripe = Some(entry_stripe);
        let separated = match blobs.as_deref_mut() {
            Some(blobs) if key.kind == ValueKind::Value && blobs.separates(iter.value().len()) => {
                let (reference, blob_number) = blobs.add(key.user_key, iter.value())?;
                let blob_key = InternalKey::new(key.user_key, key.seqno, ValueKind::BlobIndex);
                writer.add(blob_key.encoded(), &reference)?;
                oldest_blob_file =
                    Some(oldest_blob_file.map_or(blob_number, |n| n.min(blob_number)));
                true
            }
            _ => false,
        };
        if !separated {
            writer.add(iter.key(), iter.value())?;
        }
        if ttl {
            let is_value = key.kind == ValueKind::Value;
            if let Some((_, time)) = crate::ttl::split(iter.value()).filter(|_| is_value) {
                oldest_write_time = Some(oldest_write_time.map_or(time, |t| t.min(time)));
            }
        }
        iter.next();
    }
    iter.status()?;
    for tombstone in &tombstones {
        writer.add_range_deletion(&tombstone.start, &tombstone.end, tombstone.seqno)?;
    }
    let (size, props) = writer.finish()?;
    let mut meta = file_meta(number, size, &props)?;
    meta.oldest_entry_time = oldest_write_time;
    meta.oldest_blob_file = oldest_blob_file;
    Ok(Some(meta))
}

/// Writes a flush's table (and blob files), synced with their directory entries. Returns
/// what was written and every blob file number allocated (pending outputs, to release and,
/// after a failure, to delete).
#[allow(clippy::type_complexity)] // one flush's outcome, named at its only caller
fn write_flush_files(
    inner: &Arc<DbInner>,
    mem: &Arc<MemTable>,
    number: u64,
    options: WriterOptions,
    ttl: bool,
    snapshots: &[SeqNo],
    blob_settings: Option<BlobSettings>,
) -> (Result<(Option<FileMetaData>, Vec<BlobFileMeta>)>, Vec<u64>) {
    let new_number = || inner.new_pending_output();
    let mut blobs = blob_settings.map(|settings| {
        BlobOutputs::new(
            &*inner.fs,
            &inner.dir,
            settings,
            inner.rate_limiter.as_ref(),
            IoPriority::Flush,
            &new_number,
        )
    });
    let written = write_memtable(
        &*inner.fs,
        &inner.dir,
        mem,
        number,
        options,
        ttl,
        snapshots,
        inner.rate_limiter.as_ref(),
        blobs.as_mut(),
        crate::direct_io::table_write_mode(&inner.options),
    );
    let blob_numbers: Vec<u64> = blobs
        .as_ref()
        .map_or_else(Vec::new, |b| b.numbers().to_vec());
    let written = written
        .and_then(|meta| {
            let blob_files = match blobs {
                Some(blobs) => blobs.finish()?,
                None => Vec::new(),
            };
            Ok((meta, blob_files))
        })
        .and_then(|written| {
            inner.fs.sync_dir(&inner.dir)?;
            Ok(written)
        });
    (written, blob_numbers)
}

/// One flush, chosen under the state lock: the oldest frozen memtable of some keyspace and
/// what writing it needs.
struct FlushJob {
    keyspace: u32,
    frozen: FrozenMemTable,
    options: WriterOptions,
    ttl: bool,
    number: u64,
    /// Taken with the frozen memtable, under the lock, so no snapshot that can see one of its
    /// versions is missed.
    snapshots: Vec<SeqNo>,
    blob_settings: Option<BlobSettings>,
}

/// Picks the next flush, allocating its table number as a pending output. `None` when no
/// keyspace has a frozen memtable.
fn pick_flush_job(inner: &Arc<DbInner>) -> Result<Option<FlushJob>> {
    let mut state = inner.lock_state();
    let Some(keyspace) = state.keyspaces.values().find(|k| !k.imm.is_empty()) else {
        return Ok(None);
    };
    let id = keyspace.id;
    let options = writer_options(
        &inner.options.comparator,
        &keyspace.options,
        (id, &keyspace.name),
    );
    let frozen = keyspace
        .imm
        .front()
        .cloned()
        .ok_or_else(|| Error::Background {
            reason: "frozen memtable vanished".into(),
        })?;
    let ttl = keyspace.options.ttl.is_some();
    let blob_settings = BlobSettings::of(id, &keyspace.options);
    let number = state.versions.new_file_number();
    state.pending_outputs.insert(number);
    Ok(Some(FlushJob {
        keyspace: id,
        frozen,
        options,
        ttl,
        number,
        snapshots: inner.snapshots.all(),
        blob_settings,
    }))
}

/// Flushes the oldest frozen memtable of some keyspace. Returns whether there was one.
#[allow(clippy::too_many_lines)] // one flush, start to install, under one state lock
pub(crate) fn flush_one(inner: &Arc<DbInner>) -> Result<bool> {
    let Some(FlushJob {
        keyspace,
        frozen,
        options,
        ttl,
        number,
        snapshots,
        blob_settings,
    }) = pick_flush_job(inner)?
    else {
        return Ok(false);
    };
    let started = Instant::now();
    // Only the table write runs without the state lock: a panic there changed nothing
    // shared (`crate::job_panic`).
    let outcome = crate::job_panic::catch(|| {
        inner.test_hooks.in_flush();
        write_flush_files(
            inner,
            &frozen.mem,
            number,
            options,
            ttl,
            &snapshots,
            blob_settings,
        )
    });
    let mut state = inner.lock_state();
    let (written, blob_numbers) = match outcome {
        Ok(outcome) => outcome,
        Err(panic) => {
            // The memtable stays frozen and its WAL stays. Blob files it started stay
            // pending (their numbers died with the write) until the next open deletes them.
            state.pending_outputs.remove(&number);
            let _ = inner.fs.remove(&table_file_name(&inner.dir, number));
            return Err(crate::job_panic::panicked_locked(
                inner,
                &mut state,
                crate::job_panic::JobKind::Flush,
                &format!("flushing a memtable to table {number}"),
                &panic,
            ));
        }
    };
    for output in std::iter::once(&number).chain(&blob_numbers) {
        state.pending_outputs.remove(output);
    }
    let (meta, blob_files) = match written {
        Ok(written) => written,
        Err(error) => {
            // The memtable stays frozen and its WAL stays: nothing is lost. The partial
            // table and blob files go (best effort: a leftover is unreferenced and deleted
            // later).
            let _ = inner.fs.remove(&table_file_name(&inner.dir, number));
            discard_blob_files(&*inner.fs, &inner.dir, &blob_numbers);
            let reason = format!("flushing a memtable to table {number} failed: {error}");
            if error.is_retryable_write() {
                inner.set_recoverable_error_locked(&state, reason);
            } else {
                inner.set_background_error_locked(&state, reason);
            }
            return Err(error);
        }
    };
    let Some(state_keyspace) = state.keyspaces.get(&keyspace) else {
        // Dropped while flushing: the table is obsolete.
        delete_obsolete_files(inner, &mut state);
        return Ok(true);
    };
    // Invariant 2: the next needed log is the next frozen memtable's, or the active one's.
    let next_log = state_keyspace
        .imm
        .get(1)
        .map_or(state_keyspace.mem_log_number, |f| f.log_number);
    let mut edit = VersionEdit::default();
    edit.set_log_number(keyspace, next_log);
    carry_log_numbers_forward(&state, keyspace, &mut edit);
    let flushed_bytes = meta.as_ref().map(|m| m.size);
    if let Some(meta) = meta {
        edit.add_file(keyspace, 0, meta);
    }
    for blob in &blob_files {
        edit.add_blob_file(blob);
    }
    // The edit names the active log: its name must be durable before the MANIFEST says so.
    if let Err(error) = crate::write::make_wal_name_durable(inner) {
        // No MANIFEST names the table: it goes, and the memtable stays frozen with its WAL.
        // The WAL recovery retries the directory sync with backoff (invariant 5).
        let _ = inner.fs.remove(&table_file_name(&inner.dir, number));
        discard_blob_files(&*inner.fs, &inner.dir, &blob_numbers);
        let reason = format!(
            "syncing the directory entry of the WAL failed before recording flushed table \
             {number}: {error}"
        );
        if !error.is_retryable_write() {
            inner.set_background_error_locked(&state, reason);
            return Err(error);
        }
        return Err(crate::wal_recovery::wal_failed(inner, &mut state, reason));
    }
    if let Err(error) = {
        let allocated = inner
            .last_allocated_seqno
            .load(std::sync::atomic::Ordering::Acquire);
        let last = allocated.max(state.versions.last_sequence());
        state.versions.set_last_sequence(last);
        crate::write::live_wal_synced_locked(inner, &mut state, &mut edit);
        state.versions.log_and_apply(edit)
    } {
        // The memtable stays frozen and its WAL stays, as after a failed table write; the
        // table stays while a MANIFEST a reopen may read can name it (manifest_recovery).
        let error = crate::manifest_recovery::edit_failed(
            inner,
            &state,
            format!("recording flushed table {number} in the MANIFEST failed: {error}"),
            error,
        );
        return Err(error);
    }
    let blob_bytes = blob_files.iter().map(BlobFileMeta::file_size).sum();
    StatCounters::add(&inner.stats.blob_files_written, blob_files.len() as u64);
    StatCounters::add(&inner.stats.blob_bytes_written, blob_bytes);
    if let Some(bytes) = flushed_bytes {
        let counters = &inner.stats;
        StatCounters::add(&counters.flushes, 1);
        StatCounters::add(&counters.flush_bytes_written, bytes);
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        counters.levels[0].record_job(0, 0, bytes, micros);
        inner.info_log.log(format_args!(
            "flush keyspace {keyspace}: memtable -> L0 table {number}, {bytes} bytes, {} blob \
             files ({blob_bytes} bytes), {} ms",
            blob_files.len(),
            micros / 1000
        ));
    }
    let version = state.versions.current();
    if let Some(keyspace) = state.keyspaces.get_mut(&keyspace) {
        keyspace.imm.pop_front();
        keyspace.install_super_version(version);
    }
    inner.note_pending_compaction_bytes_locked(&state);
    state.flushes_done += 1;
    state.job_panics.succeeded(crate::job_panic::JobKind::Flush);
    inner.clear_recoverable_error_locked(&mut state);
    delete_obsolete_files(inner, &mut state);
    inner.state_changed.notify_all();
    Ok(true)
}

/// Invariant 4: the keyspaces other than `flushed` whose oldest needed WAL moved on in memory
/// get that log number in `edit`, so their advances become durable with it.
fn carry_log_numbers_forward(state: &DbState, flushed: u32, edit: &mut VersionEdit) {
    for other in state.keyspaces.values().filter(|k| k.id != flushed) {
        let needed = other.oldest_needed_log();
        if state.versions.log_number(other.id) < Some(needed) {
            edit.set_log_number(other.id, needed);
        }
    }
}

/// Freezes every non-empty memtable and waits until all frozen memtables are flushed.
pub(crate) fn flush_and_wait(inner: &Arc<DbInner>) -> Result<()> {
    crate::write::write(
        inner,
        crate::batch::WriteBatch::new(),
        WriteOptions::default(),
        true,
    )?;
    let mut state = inner.lock_state();
    loop {
        inner.check_background_error()?;
        if state.keyspaces.values().all(|k| k.imm.is_empty()) {
            return Ok(());
        }
        inner.check_open()?;
        state = inner.wait_state(state);
    }
}

/// Deletes WALs no keyspace needs, tables and blob files no live Version references, and old MANIFEST and
/// OPTIONS files. Failures are ignored: the files are retried at the next call or open.
pub(crate) fn delete_obsolete_files(inner: &DbInner, state: &mut DbState) {
    let Ok(names) = inner.fs.list(&inner.dir) else {
        return;
    };
    // Invariant 4: the MANIFEST's log numbers, which never run ahead of memory's.
    let min_log = state
        .keyspaces
        .values()
        .map(crate::keyspace::KeyspaceState::oldest_needed_log)
        .min()
        .unwrap_or(0)
        .min(state.versions.min_log_number_to_keep());
    let Ok(current_wal) = inner.lock_wal().map(|wal| wal.number) else {
        return; // Read-only: nothing is ever deleted.
    };
    let live = state.versions.live_files();
    let manifest = state.versions.manifest_file_number();
    let newest_options = names.iter().filter_map(|n| options_number(n)).max();
    for name in names {
        let remove = if let Some(number) = parse_log_file_name(&name) {
            number < min_log && number != current_wal && !state.pinned_wals.contains_key(&number)
        } else if let Some(number) = table_number(&name) {
            let obsolete = !live.contains(&number) && !state.pending_outputs.contains(&number);
            if obsolete {
                inner.table_cache.erase(number);
            }
            obsolete
        } else if let Some(number) = crate::blob::parse_blob_file_name(&name) {
            let obsolete = !live.contains(&number) && !state.pending_outputs.contains(&number);
            if obsolete {
                inner.blob_cache.erase(number);
            }
            obsolete
        } else if let Some(number) = manifest_number(&name) {
            number < manifest
        } else if let Some(number) = options_number(&name) {
            Some(number) < newest_options
        } else {
            false
        };
        if remove {
            let _ = inner.fs.remove(&inner.dir.join(&name));
        }
    }
}

fn table_number(name: &str) -> Option<u64> {
    name.strip_suffix(".sst").and_then(|n| n.parse().ok())
}

fn manifest_number(name: &str) -> Option<u64> {
    name.strip_prefix("MANIFEST-").and_then(|n| n.parse().ok())
}

fn options_number(name: &str) -> Option<u64> {
    name.strip_prefix("OPTIONS-").and_then(|n| n.parse().ok())
}

/// Whether `dir` holds a database (its CURRENT file exists).
pub(crate) fn database_exists(fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
    Ok(fs.exists(&dir.join("CURRENT"))?)
}
