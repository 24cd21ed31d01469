//! Bulk ingestion of external table files ([`crate::Db::ingest`], like `RocksDB`'s
//! `IngestExternalFile`).
//!
//! Flow:
//! 1. Validate every file outside any lock: an external table (`shale.external = 1`) with the
//!    database's comparator, intact footer and meta blocks, seqno 0 in its properties, first
//!    and last entries and range deletions, and key-range properties covering them; with
//!    `verify_checksums_before_ingest` also every data block's checksum, strictly increasing
//!    user keys and seqno 0 for every entry. Files of one keyspace must not overlap each
//!    other.
//! 2. Copy (or hard-link, with `move_files`) each file into the database directory under a
//!    new file number, synced, and sync the directory.
//! 3. As the leader of a write group (`write::run_as_leader`: writers wait), flush the
//!    memtables that overlap the files, take ONE new sequence number `G`, place each file at
//!    the deepest level where it overlaps nothing at that level or above (nor the output range
//!    of a running compaction at that level), write ONE `VersionEdit` with every file of every
//!    keyspace, each with global seqno `G` (docs/format/manifest.md, `GLOBAL_SEQNO`), and only
//!    then publish `G`.
//!
//! Invariants:
//! 1. Ingestion is all or nothing across files and keyspaces: the files become live only
//!    through the one edit; before it, they are in `pending_outputs` (never deleted as
//!    obsolete) and any error removes them; after a crash they are unreferenced and the next
//!    open deletes them.
//! 2. Every entry of an ingested file reads at seqno `G`, above every write acknowledged before
//!    the ingestion and below every write after it; a snapshot taken before it (seqno `< G`)
//!    never sees the files.
//! 3. Newer data is never below older data for the same key: overlapping memtables are flushed
//!    first, and a file goes no deeper than the first level that overlaps it.
//! 4. The WAL is synced before the edit is written, so every write acknowledged before the
//!    ingestion survives a crash the ingestion survives: a crash keeps a prefix of history,
//!    whatever the writes' durability.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use shale_sst::{
    printable, Comparator, InternalKey, ParsedInternalKey, ReadOptions as TableReadOptions, SeqNo,
    Table, TableOpenOptions, ValueKind, MAX_SEQNO,
};

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::keyspace::Keyspace;
use crate::memtable::MemTable;
use crate::table_cache::{table_file_name, PinnedTable};
use crate::version::{FileMetaData, Version, VersionEdit};

/// The files to ingest into one keyspace.
#[derive(Debug, Clone)]
pub struct IngestArg {
    /// Where the files go.
    pub keyspace: Keyspace,
    /// External tables written by [`crate::TableFileWriter`] (or any table marked
    /// `shale.external` with only seqno 0 entries), on the database's file system.
    pub files: Vec<PathBuf>,
}

/// How [`crate::Db::ingest`] takes the files in.
#[derive(Debug, Clone, Copy, Default)]
pub struct IngestOptions {
    /// Hard-link the files into the database directory instead of copying them (falls back to
    /// a copy where linking fails, e.g. across file systems). The caller must not change or
    /// reuse a linked file afterwards; deleting its own name is fine.
    pub move_files: bool,
    /// Read every data block of every file before ingesting it: check each block's checksum,
    /// that user keys strictly increase, that every entry has seqno 0 and that the entry
    /// counts match the properties. Off by default (as `RocksDB`'s
    /// `verify_checksums_before_ingest`): ingestion then reads only each file's footer,
    /// metaindex, properties, index, filters and range deletions (all checksummed) and its
    /// first and last data blocks, about 2% of a file with 100-byte values. A damaged data
    /// block in the middle of a file is then found when it is read (every read checks the
    /// block's checksum; the read fails with a corruption error, it never returns bad data),
    /// by `shale tool verify`, or by compaction, not at ingestion. Turn it on for files that
    /// travelled over an untrusted path or were not written by [`crate::TableFileWriter`].
    pub verify_checksums_before_ingest: bool,
}

/// Where one ingested file went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestedFile {
    /// The file as it was given.
    pub source: PathBuf,
    /// Its keyspace id.
    pub keyspace: u32,
    /// Its table number in the database.
    pub number: u64,
    /// The level it was placed at.
    pub level: usize,
    /// The sequence number every entry reads at.
    pub global_seqno: SeqNo,
}

/// A validated external file, copied in as table `number`.
#[derive(Debug)]
struct Candidate {
    source: PathBuf,
    keyspace: u32,
    number: u64,
    size: u64,
    /// Smallest and largest internal keys as stored (seqno 0, or the range-deletion end
    /// sentinel for the largest).
    smallest: InternalKey,
    largest: InternalKey,
    num_entries: u64,
    num_deletions: u64,
    creation_time: u64,
}

impl Candidate {
    fn meta(&self, global_seqno: SeqNo) -> Result<FileMetaData> {
        Ok(FileMetaData {
            number: self.number,
            size: self.size,
            smallest: with_seqno(&self.smallest, global_seqno)?,
            largest: with_seqno(&self.largest, global_seqno)?,
            smallest_seqno: global_seqno,
            largest_seqno: global_seqno,
            num_entries: self.num_entries,
            num_deletions: self.num_deletions,
            creation_time: Some(self.creation_time),
            oldest_entry_time: None,
            global_seqno: Some(global_seqno),
            oldest_blob_file: None,
            pinned_table: PinnedTable::default(),
        })
    }
}

/// Whether a file whose largest internal key is `largest` holds keys at or above `key`
/// (a range-deletion end sentinel is exclusive).
fn upper_reaches(cmp: &dyn Comparator, largest: &InternalKey, key: &[u8]) -> bool {
    let exclusive = ParsedInternalKey::parse(largest.encoded())
        .is_ok_and(|k| k.seqno == MAX_SEQNO && k.kind == ValueKind::RangeDeletion);
    let order = cmp.compare(largest.user_key(), key);
    if exclusive {
        order.is_gt()
    } else {
        order.is_ge()
    }
}

/// `key` with its seqno replaced by `seqno`, except the exclusive range-deletion end sentinel,
/// which keeps the largest seqno so that it still bounds nothing of its user key.
fn with_seqno(key: &InternalKey, seqno: SeqNo) -> Result<InternalKey> {
    let parsed = ParsedInternalKey::parse(key.encoded())
        .map_err(|e| Error::InvalidArgument(format!("bad internal key: {e}")))?;
    if parsed.seqno == MAX_SEQNO && parsed.kind == ValueKind::RangeDeletion {
        return Ok(key.clone());
    }
    Ok(InternalKey::new(parsed.user_key, seqno, parsed.kind))
}

/// Ingests `args` atomically; see the module docs.
pub(crate) fn ingest(
    inner: &Arc<DbInner>,
    args: &[IngestArg],
    options: IngestOptions,
) -> Result<Vec<IngestedFile>> {
    inner.check_open()?;
    inner.check_background_error()?;
    let mut seen = std::collections::BTreeSet::new();
    for arg in args {
        if !seen.insert(arg.keyspace.id()) {
            return Err(Error::InvalidArgument(format!(
                "keyspace {:?} is named twice in one ingestion: give all its files in one \
                 IngestArg",
                arg.keyspace.name()
            )));
        }
    }
    {
        // A TTL keyspace's values end in their write time (docs/format/ttl.md), which
        // TableFileWriter does not append: such files would read as garbage times.
        let state = inner.lock_state();
        for arg in args {
            let ttl = state
                .keyspaces
                .get(&arg.keyspace.id())
                .is_some_and(|k| k.options.ttl.is_some());
            if ttl {
                return Err(Error::InvalidArgument(format!(
                    "keyspace {:?} has a TTL: ingesting external tables into a TTL keyspace \
                     is not supported",
                    arg.keyspace.name()
                )));
            }
        }
    }
    let mut candidates = Vec::new();
    for arg in args {
        let mut files = Vec::new();
        for path in &arg.files {
            files.push(inspect(
                inner,
                arg.keyspace.id(),
                path,
                options.verify_checksums_before_ingest,
            )?);
        }
        check_disjoint(inner, &arg.keyspace, &mut files)?;
        candidates.extend(files);
    }
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    {
        let mut state = inner.lock_state();
        for candidate in &mut candidates {
            candidate.number = state.versions.new_file_number();
            state.pending_outputs.insert(candidate.number);
        }
    }
    let result = bring_in(inner, &candidates, options)
        .and_then(|()| crate::write::run_as_leader(inner, || install(inner, &candidates)));
    let mut state = inner.lock_state();
    if result.is_err() && inner.background_error().is_some() && !state.versions.needs_roll() {
        // A sticky error: the MANIFEST may or may not hold the edit, so the files stay until
        // the next open, which deletes them if they are unreferenced.
        return result;
    }
    for candidate in &candidates {
        state.pending_outputs.remove(&candidate.number);
    }
    if result.is_err() {
        // Invariant 1: nothing of a failed ingestion stays behind, except the files a failed
        // MANIFEST write left in doubt: the roll keeps them until `CURRENT` names a MANIFEST
        // without them, and the obsolete-file sweep deletes them then.
        let in_doubt = state.versions.live_files();
        for candidate in candidates.iter().filter(|c| !in_doubt.contains(&c.number)) {
            let path = table_file_name(&inner.dir, candidate.number);
            if inner.fs.exists(&path).unwrap_or(false) {
                let _ = inner.fs.remove(&path);
            }
        }
    }
    drop(state);
    result
}

/// Opens `path` and checks what ingestion relies on: an external table of the database's
/// comparator whose footer, metaindex, properties, index, filters and range deletions are
/// intact (always checksummed), with seqno 0 everywhere the properties, the first and last
/// entries and the range deletions say, and whose key-range properties (which place it)
/// cover its first and last entries and range deletions. With `verify_blocks` every data
/// block is read as well: its checksum, strictly increasing user keys and seqno 0 for every
/// entry, and the entry counts the properties state.
fn inspect(inner: &DbInner, keyspace: u32, path: &Path, verify_blocks: bool) -> Result<Candidate> {
    let refuse = |detail: String| {
        Error::InvalidArgument(format!("cannot ingest {}: {detail}", path.display()))
    };
    let open_options = TableOpenOptions {
        comparator: inner.options.comparator.clone(),
        verify_checksums: true,
        ..TableOpenOptions::default()
    };
    let table = Table::open(&*inner.fs, path, &open_options)?;
    let props = table.properties();
    if !props.external {
        return Err(refuse(
            "it is not an external table (no shale.external property): write it with \
             TableFileWriter"
                .into(),
        ));
    }
    if props.largest_seqno != 0 {
        return Err(refuse(format!(
            "its properties give seqno {} as its largest, an external table holds only seqno 0",
            props.largest_seqno
        )));
    }
    if let Some(t) = table.range_tombstones().iter().find(|t| t.seqno != 0) {
        return Err(refuse(format!(
            "range deletion from {} has seqno {}, an external table holds only seqno 0",
            printable(&t.start),
            t.seqno
        )));
    }
    if props.num_entries == 0 && table.range_tombstones().is_empty() {
        return Err(refuse("it holds no entries".into()));
    }
    let key = |bytes: &[u8], which: &str| {
        InternalKey::from_encoded(bytes.to_vec())
            .map_err(|e| refuse(format!("its {which} key property is bad: {e}")))
    };
    let smallest = key(&props.smallest_key, "smallest")?;
    let largest = key(&props.largest_key, "largest")?;
    let counted = if verify_blocks {
        Some(scan_entries(
            &table,
            inner.user_comparator().as_ref(),
            &refuse,
        )?)
    } else {
        None
    };
    check_boundaries(inner, &table, &smallest, &largest, &refuse)?;
    let num_deletions = match counted {
        Some((num_entries, num_deletions)) => {
            if num_entries != props.num_entries || num_deletions != props.num_deletions {
                return Err(refuse(format!(
                    "it holds {num_entries} entries ({num_deletions} deletions) but its \
                     properties say {} ({})",
                    props.num_entries, props.num_deletions
                )));
            }
            num_deletions
        }
        None => props.num_deletions,
    };
    Ok(Candidate {
        source: path.to_path_buf(),
        keyspace,
        number: 0,
        size: table.file_size(),
        smallest,
        largest,
        num_entries: props.num_entries,
        num_deletions: num_deletions + table.range_tombstones().len() as u64,
        creation_time: props.creation_time,
    })
}

/// Reads the first and last point entries (one data block each, checksummed) and checks
/// that they are at seqno 0 and that they and every range deletion lie within the file's
/// smallest and largest key properties, which decide where the file is placed.
fn check_boundaries(
    inner: &DbInner,
    table: &Arc<Table>,
    smallest: &InternalKey,
    largest: &InternalKey,
    refuse: &dyn Fn(String) -> Error,
) -> Result<()> {
    let cmp = inner.user_comparator();
    let internal = shale_sst::InternalKeyComparator::new(cmp.clone());
    let num_entries = table.properties().num_entries;
    let mut iter = table.iter(TableReadOptions {
        skip_cache_fill: true,
        ..TableReadOptions::default()
    });
    for (which, last) in [("first", false), ("last", true)] {
        if last {
            iter.seek_to_last();
        } else {
            iter.seek_to_first();
        }
        iter.status()?;
        match (iter.valid(), num_entries) {
            // Only range deletions: they are checked below.
            (false, 0) => break,
            (false, _) => {
                return Err(refuse(format!(
                    "its properties say {num_entries} entries but its index leads to none"
                )))
            }
            (true, 0) => {
                return Err(refuse(
                    "its properties say it holds no entries but its index leads to some".into(),
                ))
            }
            (true, _) => {}
        }
        let entry = ParsedInternalKey::parse(iter.key())
            .map_err(|e| refuse(format!("its {which} entry has a bad key: {e}")))?;
        if entry.seqno != 0 {
            return Err(refuse(format!(
                "entry {} has seqno {}, an external table holds only seqno 0",
                printable(entry.user_key),
                entry.seqno
            )));
        }
        if internal.compare(iter.key(), smallest.encoded()).is_lt()
            || internal.compare(iter.key(), largest.encoded()).is_gt()
        {
            return Err(refuse(format!(
                "its {which} entry {} lies outside the key range its properties give ({} .. {})",
                printable(entry.user_key),
                printable(smallest.user_key()),
                printable(largest.user_key())
            )));
        }
    }
    for tombstone in table.range_tombstones() {
        if cmp.compare(&tombstone.start, smallest.user_key()).is_lt()
            || cmp.compare(&tombstone.end, largest.user_key()).is_gt()
        {
            return Err(refuse(format!(
                "range deletion [{} .. {}) lies outside the key range its properties give \
                 ({} .. {})",
                printable(&tombstone.start),
                printable(&tombstone.end),
                printable(smallest.user_key()),
                printable(largest.user_key())
            )));
        }
    }
    Ok(())
}

/// Reads every data block (checksums checked by the reader) and returns the number of point
/// entries and of deletions, refusing a seqno other than 0 or a user key not above the one
/// before it.
fn scan_entries(
    table: &Arc<Table>,
    cmp: &dyn Comparator,
    refuse: &dyn Fn(String) -> Error,
) -> Result<(u64, u64)> {
    let mut iter = table.iter(TableReadOptions {
        skip_cache_fill: true,
        ..TableReadOptions::default()
    });
    iter.seek_to_first();
    let mut previous: Vec<u8> = Vec::new();
    let mut num_entries = 0u64;
    let mut num_deletions = 0u64;
    while iter.valid() {
        let key = ParsedInternalKey::parse(iter.key())
            .map_err(|e| refuse(format!("entry {num_entries} has a bad key: {e}")))?;
        if key.seqno != 0 {
            return Err(refuse(format!(
                "entry {} has seqno {}, an external table holds only seqno 0",
                printable(key.user_key),
                key.seqno
            )));
        }
        if num_entries > 0 && !cmp.compare(&previous, key.user_key).is_lt() {
            return Err(refuse(format!(
                "key {} does not sort above the previous key {}",
                printable(key.user_key),
                printable(&previous)
            )));
        }
        if key.kind == ValueKind::Deletion {
            num_deletions += 1;
        }
        if key.kind == ValueKind::BlobIndex {
            return Err(refuse(format!(
                "entry {} is a blob reference: it would point into another database's blob \
                 files",
                printable(key.user_key)
            )));
        }
        num_entries += 1;
        previous.clear();
        previous.extend_from_slice(key.user_key);
        iter.next();
    }
    iter.status()?;
    Ok((num_entries, num_deletions))
}

/// Sorts one keyspace's files by key and refuses overlapping ones.
fn check_disjoint(inner: &DbInner, keyspace: &Keyspace, files: &mut [Candidate]) -> Result<()> {
    let cmp = inner.user_comparator().clone();
    files.sort_by(|a, b| cmp.compare(a.smallest.user_key(), b.smallest.user_key()));
    for pair in files.windows(2) {
        if upper_reaches(&*cmp, &pair[0].largest, pair[1].smallest.user_key()) {
            return Err(Error::InvalidArgument(format!(
                "cannot ingest {} and {} into keyspace {:?}: their key ranges overlap ({} .. {} \
                 and {} .. {})",
                pair[0].source.display(),
                pair[1].source.display(),
                keyspace.name(),
                printable(pair[0].smallest.user_key()),
                printable(pair[0].largest.user_key()),
                printable(pair[1].smallest.user_key()),
                printable(pair[1].largest.user_key()),
            )));
        }
    }
    Ok(())
}

/// Copies or links every file in under its number, synced, then syncs the directory.
fn bring_in(inner: &DbInner, candidates: &[Candidate], options: IngestOptions) -> Result<()> {
    for candidate in candidates {
        let to = table_file_name(&inner.dir, candidate.number);
        let linked = options.move_files && inner.fs.hard_link(&candidate.source, &to).is_ok();
        if !linked {
            crate::checkpoint::copy_file(&*inner.fs, &candidate.source, &to, candidate.size)?;
        }
    }
    inner.fs.sync_dir(&inner.dir)?;
    Ok(())
}

/// The step under the write leadership: flush what overlaps, assign the seqno, place the
/// files, record them in one edit, publish.
fn install(inner: &Arc<DbInner>, candidates: &[Candidate]) -> Result<Vec<IngestedFile>> {
    // Invariant 4: what was acknowledged before is durable before the files are.
    crate::background::sync_wal(inner)?;
    let mut state = inner.lock_state();
    inner.check_background_error()?;
    inner.check_open()?;
    for candidate in candidates {
        if !state.keyspaces.contains_key(&candidate.keyspace) {
            return Err(Error::InvalidArgument(format!(
                "keyspace id {} was dropped during the ingestion",
                candidate.keyspace
            )));
        }
    }
    state = flush_overlapping_memtables(inner, state, candidates)?;
    let global_seqno = inner.last_allocated_seqno.load(Ordering::Acquire) + 1;
    if global_seqno > MAX_SEQNO {
        return Err(Error::InvalidArgument(format!(
            "sequence numbers are exhausted (next would be {global_seqno})"
        )));
    }
    let version = state.versions.current();
    let mut edit = VersionEdit::default();
    let mut placed = Vec::new();
    for candidate in candidates {
        let level = pick_level(inner, &state, &version, candidate);
        edit.add_file(
            candidate.keyspace,
            u32::try_from(level).unwrap_or(u32::MAX),
            candidate.meta(global_seqno)?,
        );
        placed.push(IngestedFile {
            source: candidate.source.clone(),
            keyspace: candidate.keyspace,
            number: candidate.number,
            level,
            global_seqno,
        });
    }
    let last = global_seqno.max(state.versions.last_sequence());
    state.versions.set_last_sequence(last);
    if let Err(error) = state.versions.log_and_apply(edit) {
        let error = crate::manifest_recovery::edit_failed(
            inner,
            &state,
            format!("recording ingested tables in the MANIFEST failed: {error}"),
            error,
        );
        return Err(error);
    }
    // As the leader, every earlier seqno is already published (write_queue invariant 4).
    inner
        .last_allocated_seqno
        .store(global_seqno, Ordering::Release);
    inner.visible_seqno.store(global_seqno, Ordering::Release);
    let version = state.versions.current();
    for candidate in candidates {
        if let Some(keyspace) = state.keyspaces.get_mut(&candidate.keyspace) {
            keyspace.install_super_version(version.clone());
        }
    }
    inner.state_changed.notify_all();
    Ok(placed)
}

/// Freezes the active memtables that overlap a file of their keyspace and waits until every
/// overlapping memtable is flushed (invariant 3).
fn flush_overlapping_memtables<'a>(
    inner: &'a DbInner,
    mut state: std::sync::MutexGuard<'a, DbState>,
    candidates: &[Candidate],
) -> Result<std::sync::MutexGuard<'a, DbState>> {
    let cmp = inner.user_comparator().clone();
    let overlaps = |keyspace: u32, mem: &Arc<MemTable>| {
        candidates
            .iter()
            .filter(|c| c.keyspace == keyspace)
            .any(|c| memtable_overlaps(&*cmp, mem, c))
    };
    let to_freeze: Vec<u32> = state
        .keyspaces
        .values()
        .filter(|k| overlaps(k.id, &k.mem))
        .map(|k| k.id)
        .collect();
    if !to_freeze.is_empty() {
        crate::write::switch_memtables(inner, &mut state, &to_freeze)?;
        inner.state_changed.notify_all();
    }
    loop {
        inner.check_background_error()?;
        inner.check_open()?;
        let waiting = state
            .keyspaces
            .values()
            .any(|k| k.imm.iter().any(|frozen| overlaps(k.id, &frozen.mem)));
        if !waiting {
            return Ok(state);
        }
        state = inner.wait_state(state);
    }
}

/// Whether `mem` holds a point entry or range deletion in the file's key range.
fn memtable_overlaps(cmp: &dyn Comparator, mem: &Arc<MemTable>, file: &Candidate) -> bool {
    if mem.is_empty() {
        return false;
    }
    let (smallest, largest) = (file.smallest.user_key(), file.largest.user_key());
    let mut iter = mem.iter();
    iter.seek(InternalKey::for_seek(smallest, MAX_SEQNO).encoded());
    if iter.valid() {
        if let Ok(first) = ParsedInternalKey::parse(iter.key()) {
            if cmp.compare(first.user_key, largest).is_le() {
                return true;
            }
        }
    }
    mem.range_tombstones()
        .iter()
        .any(|t| cmp.compare(&t.start, largest).is_le() && cmp.compare(&t.end, smallest).is_gt())
}

/// The deepest level where `candidate` overlaps nothing at that level or above, nor the
/// output range of any running compaction of its keyspace into that level (several may run,
/// compaction/claims.rs). Overlap is judged on
/// inclusive user-key ranges (an exclusive range-deletion end counts), which at worst places a
/// file one level higher than needed.
fn pick_level(inner: &DbInner, state: &DbState, version: &Version, candidate: &Candidate) -> usize {
    let cmp = inner.user_comparator();
    let (smallest, largest) = (candidate.smallest.user_key(), candidate.largest.user_key());
    let mut chosen = 0;
    for level in 0..version.num_levels() {
        let overlapping = !version
            .overlapping_files(candidate.keyspace, level, smallest, largest)
            .is_empty();
        let in_compaction = state
            .compaction_claims
            .output_ranges(candidate.keyspace)
            .any(|r| r.level == level && r.overlaps(&**cmp, smallest, largest));
        if overlapping || in_compaction {
            break;
        }
        chosen = level;
    }
    chosen
}
