//! [`FileMetaData`] and [`Version`]: the table files of every level of every keyspace at one
//! point in the MANIFEST's history (docs/format/manifest.md).
//!
//! Invariants (kept by the builder, which refuses an edit that would break one):
//! 1. A `Version` never changes once built. An edit makes a new `Version`, which shares the
//!    levels the edit did not touch (`Arc`).
//! 2. L0 is ordered newest first: by largest seqno descending, then file number descending.
//! 3. In L1 and deeper, files are sorted by smallest key and never overlap: for neighbours `a`
//!    before `b`, `user(a.largest) < user(b.smallest)` by the user comparator (invariant 2 of
//!    docs/architecture.md). One user key never spans two files of such a level.
//! 4. A file number appears at most once in a `Version` (in one keyspace, one level), and every
//!    file has `smallest <= largest` and `smallest_seqno <= largest_seqno`.
//! 5. Every keyspace has exactly `num_levels` levels; keyspace 0 ("default") always exists.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::edit::DamagedFile;
use crate::blob::BlobFileMeta;
use crate::table_cache::PinnedTable;
use shale_sst::{describe_internal_key, printable, Comparator, InternalKey, SeqNo};

/// What the engine knows about one table file without opening it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMetaData {
    /// The file number (the file is `NNNNNN.sst`).
    pub number: u64,
    /// The file size in bytes.
    pub size: u64,
    /// The smallest internal key in the file.
    pub smallest: InternalKey,
    /// The largest internal key in the file.
    pub largest: InternalKey,
    /// The smallest sequence number of any entry.
    pub smallest_seqno: SeqNo,
    /// The largest sequence number of any entry.
    pub largest_seqno: SeqNo,
    /// Entries in the file.
    pub num_entries: u64,
    /// Point and range deletions among them.
    pub num_deletions: u64,
    /// When the file was written, in seconds since the Unix epoch (optional in the MANIFEST).
    pub creation_time: Option<u64>,
    /// In a keyspace with a TTL, the write time of the oldest entry, in seconds since the Unix
    /// epoch (optional in the MANIFEST): the picker compacts the file once it passes the TTL.
    pub oldest_entry_time: Option<u64>,
    /// For an ingested (external) table: the seqno readers give every entry in place of the 0
    /// stored in the file (docs/format/sst.md, "External files and the global seqno").
    pub global_seqno: Option<SeqNo>,
    /// The smallest blob file number the table's blob references point into (optional in
    /// the MANIFEST): the blob garbage-collection picker finds the tables holding up the
    /// oldest blob files by it.
    pub oldest_blob_file: Option<u64>,
    /// The file's open table, kept here by the first lookup that opened it when the database
    /// keeps every table open ([`crate::UNLIMITED_OPEN_FILES`]); empty otherwise. Not part of
    /// the file's identity (equal whatever it holds) and never persisted: build it with
    /// `Default::default()`.
    pub pinned_table: PinnedTable,
}

impl FileMetaData {
    /// The write time of the oldest entry as far as known: the recorded one, else the file's
    /// creation time.
    pub fn oldest_entry_time(&self) -> Option<u64> {
        self.oldest_entry_time.or(self.creation_time)
    }

    /// Whether the largest key is a range-deletion sentinel, `(user key, MAX_SEQNO, range
    /// deletion)`: the end of a tombstone clipped at the next file's first key. Such a bound is
    /// exclusive (the file holds nothing of that user key), so the next file of the level may
    /// start with the same user key.
    pub fn largest_is_exclusive(&self) -> bool {
        shale_sst::ParsedInternalKey::parse(self.largest.encoded()).is_ok_and(|k| {
            k.seqno == shale_sst::MAX_SEQNO && k.kind == shale_sst::ValueKind::RangeDeletion
        })
    }
}

impl fmt::Display for FileMetaData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:06} [{} .. {}] seqno {}..{} size {} entries {} deletions {}",
            self.number,
            describe_internal_key(self.smallest.encoded()),
            describe_internal_key(self.largest.encoded()),
            self.smallest_seqno,
            self.largest_seqno,
            self.size,
            self.num_entries,
            self.num_deletions
        )?;
        if let Some(time) = self.creation_time {
            write!(f, " created {time}")?;
        }
        if let Some(time) = self.oldest_entry_time {
            write!(f, " oldest-entry {time}")?;
        }
        if let Some(seqno) = self.global_seqno {
            write!(f, " global seqno {seqno}")?;
        }
        if let Some(number) = self.oldest_blob_file {
            write!(f, " oldest-blob {number:06}")?;
        }
        Ok(())
    }
}

/// One level's files, shared between versions until an edit touches the level.
pub(crate) type Level = Arc<Vec<Arc<FileMetaData>>>;

/// A keyspace as a version sees it.
#[derive(Debug, Clone)]
pub(crate) struct KeyspaceFiles {
    pub name: String,
    pub log_number: u64,
    /// Exactly `num_levels` entries (invariant 5).
    pub levels: Vec<Level>,
}

impl PartialEq for KeyspaceFiles {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.log_number == other.log_number
            && self.levels.len() == other.levels.len()
            && self
                .levels
                .iter()
                .zip(&other.levels)
                .all(|(a, b)| Arc::ptr_eq(a, b) || a == b)
    }
}

/// The table files of every level of every keyspace at one point in time, with the keyspaces'
/// names and log numbers. Immutable; readers hold an `Arc<Version>` for as long as they read
/// its files, which keeps those files from being deleted
/// ([`crate::VersionSet::live_files`]).
#[derive(Clone)]
pub struct Version {
    comparator: Arc<dyn Comparator>,
    num_levels: usize,
    keyspaces: BTreeMap<u32, KeyspaceFiles>,
    /// Recorded ends of WALs replayed at an open that some keyspace may still need: log
    /// number to the offset where its valid data ends (docs/format/manifest.md, `WAL_END`).
    wal_ends: BTreeMap<u64, u64>,
    /// Synced sizes of WALs some keyspace may still need and that have no recorded end: log
    /// number to the bytes known durable (docs/format/manifest.md, `WAL_SYNCED`).
    wal_synced: BTreeMap<u64, u64>,
    /// Whether every live keyspace's log number names a WAL kept until the log number moves
    /// past it (docs/format/manifest.md, `WALS_TRACKED`).
    wals_tracked: bool,
    /// The live blob files of every keyspace, by number (docs/format/blob.md).
    blob_files: BTreeMap<u64, Arc<BlobFileMeta>>,
    /// Live tables marked damaged, by number (docs/format/manifest.md, `DAMAGED_FILE`); a
    /// mark leaves with its file.
    damaged_files: BTreeMap<u64, DamagedFile>,
}

/// Versions are equal when they hold the same keyspaces, files, WAL ends and WAL tracking (the comparator
/// is not compared: a version set has one).
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.num_levels == other.num_levels
            && self.keyspaces == other.keyspaces
            && self.wal_ends == other.wal_ends
            && self.wal_synced == other.wal_synced
            && self.wals_tracked == other.wals_tracked
            && self.blob_files == other.blob_files
            && self.damaged_files == other.damaged_files
    }
}

impl Eq for Version {}

impl Version {
    #[allow(clippy::too_many_arguments)] // one per part of the state; only the builder calls it
    pub(crate) fn new(
        comparator: Arc<dyn Comparator>,
        num_levels: usize,
        keyspaces: BTreeMap<u32, KeyspaceFiles>,
        wal_ends: BTreeMap<u64, u64>,
        wal_synced: BTreeMap<u64, u64>,
        wals_tracked: bool,
        blob_files: BTreeMap<u64, Arc<BlobFileMeta>>,
        damaged_files: BTreeMap<u64, DamagedFile>,
    ) -> Self {
        Version {
            comparator,
            num_levels,
            keyspaces,
            wal_ends,
            wal_synced,
            wals_tracked,
            blob_files,
            damaged_files,
        }
    }

    /// The live tables marked damaged, by number (`DAMAGED_FILE`).
    pub fn damaged_files(&self) -> &BTreeMap<u64, DamagedFile> {
        &self.damaged_files
    }

    /// Every live blob file, by number.
    pub fn blob_files(&self) -> &BTreeMap<u64, Arc<BlobFileMeta>> {
        &self.blob_files
    }

    /// The live blob files of `keyspace`, oldest (smallest number) first.
    pub fn keyspace_blob_files(&self, keyspace: u32) -> impl Iterator<Item = &Arc<BlobFileMeta>> {
        self.blob_files
            .values()
            .filter(move |b| b.keyspace == keyspace)
    }

    /// Whether a recovery may treat a keyspace's missing log-number WAL as lost data (an
    /// open of this or a later Shale set `WALS_TRACKED`).
    pub fn wals_tracked(&self) -> bool {
        self.wals_tracked
    }

    /// Where WAL `log_number`'s valid data ends, if an open recorded it: recovery reads the
    /// WAL only up to there.
    pub fn wal_end(&self, log_number: u64) -> Option<u64> {
        self.wal_ends.get(&log_number).copied()
    }

    /// The size WAL `log_number` is known synced to, if recorded (`WAL_SYNCED`).
    pub fn wal_synced(&self, log_number: u64) -> Option<u64> {
        self.wal_synced.get(&log_number).copied()
    }

    /// Every recorded WAL synced size, by log number.
    pub fn wal_synced_sizes(&self) -> &BTreeMap<u64, u64> {
        &self.wal_synced
    }

    /// Every recorded WAL end, by log number.
    pub fn wal_ends(&self) -> &BTreeMap<u64, u64> {
        &self.wal_ends
    }

    pub(crate) fn keyspace_map(&self) -> &BTreeMap<u32, KeyspaceFiles> {
        &self.keyspaces
    }

    /// The number of levels of every keyspace.
    pub fn num_levels(&self) -> usize {
        self.num_levels
    }

    /// The user comparator that orders every level.
    pub fn comparator(&self) -> &Arc<dyn Comparator> {
        &self.comparator
    }

    /// The live keyspaces as (id, name), by id.
    pub fn keyspaces(&self) -> Vec<(u32, String)> {
        self.keyspaces
            .iter()
            .map(|(id, k)| (*id, k.name.clone()))
            .collect()
    }

    /// Whether keyspace `id` is live.
    pub fn has_keyspace(&self, id: u32) -> bool {
        self.keyspaces.contains_key(&id)
    }

    /// The id of the live keyspace named `name`.
    pub fn keyspace_id(&self, name: &str) -> Option<u32> {
        self.keyspaces
            .iter()
            .find(|(_, k)| k.name == name)
            .map(|(id, _)| *id)
    }

    /// The log number of `keyspace`: its writes in WAL files numbered below this are all in
    /// table files.
    pub fn log_number(&self, keyspace: u32) -> Option<u64> {
        self.keyspaces.get(&keyspace).map(|k| k.log_number)
    }

    /// Every level of `keyspace`, L0 first, each as [`Self::files`] gives it (one map lookup
    /// for a point read's walk down the levels). Empty for an unknown keyspace.
    pub(crate) fn levels(&self, keyspace: u32) -> &[Level] {
        self.keyspaces
            .get(&keyspace)
            .map_or(&[], |k| k.levels.as_slice())
    }

    /// The files of `level` of `keyspace` in level order (L0: newest first; deeper: by key).
    /// Empty for an unknown keyspace or level.
    pub fn files(&self, keyspace: u32, level: usize) -> &[Arc<FileMetaData>] {
        self.keyspaces
            .get(&keyspace)
            .and_then(|k| k.levels.get(level))
            .map_or(&[], |files| files.as_slice())
    }

    /// The files of `level` of `keyspace` whose user-key range intersects
    /// `[smallest_user_key, largest_user_key]` (both inclusive), in level order. L1 and deeper
    /// are binary-searched; L0 is scanned. The range is not widened by the files found (a
    /// compaction picker that needs the closure over L0 expands it itself).
    pub fn overlapping_files(
        &self,
        keyspace: u32,
        level: usize,
        smallest_user_key: &[u8],
        largest_user_key: &[u8],
    ) -> Vec<Arc<FileMetaData>> {
        let cmp = &self.comparator;
        let files = self.files(keyspace, level);
        if cmp.compare(smallest_user_key, largest_user_key) == Ordering::Greater {
            return Vec::new();
        }
        let overlaps = |f: &FileMetaData| {
            cmp.compare(f.largest.user_key(), smallest_user_key) != Ordering::Less
                && cmp.compare(f.smallest.user_key(), largest_user_key) != Ordering::Greater
        };
        if level == 0 {
            return files.iter().filter(|f| overlaps(f)).cloned().collect();
        }
        // Invariant 3: both the smallest and the largest keys ascend along the level.
        let start = files.partition_point(|f| {
            cmp.compare(f.largest.user_key(), smallest_user_key) == Ordering::Less
        });
        files[start..]
            .iter()
            .take_while(|f| {
                cmp.compare(f.smallest.user_key(), largest_user_key) != Ordering::Greater
            })
            .cloned()
            .collect()
    }

    /// The total size in bytes of the files of `level` of `keyspace`.
    pub fn level_size(&self, keyspace: u32, level: usize) -> u64 {
        self.files(keyspace, level).iter().map(|f| f.size).sum()
    }

    /// The number of files of `level` of `keyspace`.
    pub fn num_files(&self, keyspace: u32, level: usize) -> usize {
        self.files(keyspace, level).len()
    }

    /// The number of files in all levels of all keyspaces.
    pub fn total_files(&self) -> usize {
        self.keyspaces
            .values()
            .flat_map(|k| &k.levels)
            .map(|level| level.len())
            .sum()
    }

    /// Every file as (keyspace, level, file), by keyspace, then level, then level order.
    pub fn all_files(&self) -> impl Iterator<Item = (u32, usize, &Arc<FileMetaData>)> + '_ {
        self.keyspaces.iter().flat_map(|(id, k)| {
            k.levels
                .iter()
                .enumerate()
                .flat_map(move |(level, files)| files.iter().map(move |f| (*id, level, f)))
        })
    }
}

/// One keyspace a paragraph, one file a line, in level order:
///
/// ```text
/// keyspace 0 "default" log 5
///   L0 000009 ["c"@7:put .. "f"@9:put] seqno 7..9 size 100 entries 3 deletions 0
///   L1 000004 ["a"@1:put .. "b"@2:put] seqno 1..2 size 100 entries 2 deletions 0
/// ```
impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (id, k) in &self.keyspaces {
            if !first {
                writeln!(f)?;
            }
            first = false;
            write!(
                f,
                "keyspace {id} {} log {}",
                printable(k.name.as_bytes()),
                k.log_number
            )?;
            for (level, files) in k.levels.iter().enumerate() {
                for file in files.iter() {
                    write!(f, "\n  L{level} {file}")?;
                }
            }
        }
        for (log_number, end) in &self.wal_ends {
            write!(f, "\nwal {log_number:06}.wal ends at {end}")?;
        }
        if self.wals_tracked {
            write!(f, "\nwals tracked")?;
        }
        for (log_number, size) in &self.wal_synced {
            write!(f, "\nwal {log_number:06}.wal synced to {size}")?;
        }
        for blob in self.blob_files.values() {
            write!(f, "\n{blob}")?;
        }
        for damaged in self.damaged_files.values() {
            write!(f, "\ndamaged {damaged}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version({} levels)\n{self}", self.num_levels)
    }
}
