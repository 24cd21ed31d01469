//! Reads: point lookups and iterators over one keyspace's read view (memtable, frozen
//! memtables, L0 newest first, then one table per level).
//!
//! Range tombstones: a point entry with seqno `s` is hidden by a visible tombstone with a
//! larger seqno covering its key. Sources are searched newest first, and within the LSM every
//! entry of a newer source is newer than every entry of an older one for the same key, so a
//! lookup only needs the tombstones of the sources searched up to and including the one where
//! it finds the key.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use shale_sst::{
    Comparator, PrefixExtractor, RangeTombstone, ReadOptions as TableReadOptions, SeqNo, Table,
    TableIter, ValueKind,
};

use crate::db::DbInner;
use crate::db_iter::{DbIter, DbIterOptions};
use crate::error::Result;
use crate::iterator::{InternalIterator, SourceIter};
use crate::keyspace::SuperVersion;
use crate::level_iter::{LevelFile, LevelIter, LevelTable, TableOpener};
use crate::merging_iter::MergingIter;
use crate::options::{Durability, WriteOptions};
use crate::range_del::RangeDelSet;
use crate::snapshot::Snapshot;
use crate::stats::StatCounters;
use crate::table_cache::{PinnedTable, TableCache};

/// Per-read choices.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Read as of this snapshot instead of now.
    pub snapshot: Option<Snapshot>,
    /// Iterators: smallest key returned (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: key to stop before (exclusive).
    pub upper_bound: Option<Vec<u8>>,
    /// Iterators: return only keys with the same prefix (by the keyspace's prefix extractor)
    /// as the key sought, and skip tables whose prefix filter rules that prefix out.
    pub prefix_same_as_start: bool,
    /// Do not insert the blocks this read loads into the block cache (large scans).
    pub skip_cache_fill: bool,
    /// Iterators: the largest automatic readahead window per table file, in bytes (`RocksDB`'s
    /// `max_auto_readahead_size`); 0 turns readahead off. After two sequential data block
    /// loads from one table, a block missing from the cache is read together with the next
    /// 8 KiB of the file, then 16 KiB, doubling up to this; a seek elsewhere starts over.
    /// Point reads never read ahead. Default 256 KiB.
    pub max_readahead_size: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            lower_bound: None,
            upper_bound: None,
            prefix_same_as_start: false,
            skip_cache_fill: false,
            max_readahead_size: shale_sst::DEFAULT_MAX_READAHEAD_SIZE,
        }
    }
}

fn snapshot_seqno(inner: &DbInner, options: &ReadOptions) -> SeqNo {
    options
        .snapshot
        .as_ref()
        .map_or_else(|| inner.visible_seqno(), Snapshot::seqno)
}

/// The value of `key` in keyspace `keyspace`.
pub(crate) fn get(
    inner: &Arc<DbInner>,
    keyspace: u32,
    key: &[u8],
    options: &ReadOptions,
) -> Result<Option<Vec<u8>>> {
    inner.check_open()?;
    inner.idle.read();
    let view = inner.read_view(keyspace)?;
    let snapshot = snapshot_seqno(inner, options);
    get_from(inner, keyspace, &view, key, snapshot)
}

/// Values of several keys from one read view.
pub(crate) fn multi_get(
    inner: &Arc<DbInner>,
    keyspace: u32,
    keys: &[&[u8]],
    options: &ReadOptions,
) -> Result<Vec<Option<Vec<u8>>>> {
    inner.check_open()?;
    inner.idle.read();
    let view = inner.read_view(keyspace)?;
    let snapshot = snapshot_seqno(inner, options);
    keys.iter()
        .map(|key| get_from(inner, keyspace, &view, key, snapshot))
        .collect()
}

/// The newest visible tombstone seqno covering `key` among `tombstones`.
pub(crate) fn covering(
    cmp: &dyn Comparator,
    tombstones: &[RangeTombstone],
    key: &[u8],
    snapshot: SeqNo,
) -> SeqNo {
    tombstones
        .iter()
        .filter(|t| {
            t.seqno <= snapshot
                && cmp.compare(&t.start, key).is_le()
                && cmp.compare(key, &t.end).is_lt()
        })
        .map(|t| t.seqno)
        .max()
        .unwrap_or(0)
}

/// A tombstone covers entries with a smaller seqno only: an ingested table's entries and range
/// deletions share one seqno, and its range deletions do not hide its own entries.
fn resolve(kind: ValueKind, seqno: SeqNo, value: Vec<u8>, tombstone: SeqNo) -> Option<Vec<u8>> {
    (kind.is_value() && seqno >= tombstone).then_some(value)
}

fn get_from(
    inner: &DbInner,
    keyspace: u32,
    view: &SuperVersion,
    key: &[u8],
    snapshot: SeqNo,
) -> Result<Option<Vec<u8>>> {
    let stored = get_stored(inner, keyspace, view, key, snapshot)?;
    match (stored, view.ttl) {
        (Some(stored), Some(ttl)) => {
            crate::ttl::visible(key, stored, ttl, inner.options.clock.now_seconds())
        }
        (stored, _) => Ok(stored),
    }
}

/// The newest visible value of `key` as stored (with its write time under a TTL).
fn get_stored(
    inner: &DbInner,
    keyspace: u32,
    view: &SuperVersion,
    key: &[u8],
    snapshot: SeqNo,
) -> Result<Option<Vec<u8>>> {
    let cmp = inner.user_comparator().as_ref();
    let mut tombstone = 0;
    for mem in std::iter::once(&view.mem).chain(&view.imm) {
        tombstone = tombstone.max(mem.covering_tombstone_seqno(key, snapshot));
        if let Some((kind, seqno, value)) = mem.get(key, snapshot) {
            return Ok(resolve(kind, seqno, value, tombstone));
        }
    }
    let version = &view.version;
    let extractor = view.prefix_extractor.as_ref();
    for (level, files) in version.levels(keyspace).iter().enumerate() {
        // Level 0 files overlap: every one whose range holds `key`, newest first. Deeper
        // levels are sorted and disjoint: the first file whose largest key is not below `key`.
        let (from, to) = if level == 0 {
            (0, files.len())
        } else {
            let at = files.partition_point(|f| match cmp.compare(f.largest.user_key(), key) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => f.largest_is_exclusive(),
                std::cmp::Ordering::Greater => false,
            });
            (at, files.len().min(at + 1))
        };
        for file in files.get(from..to).unwrap_or_default() {
            if cmp.compare(file.smallest.user_key(), key).is_gt()
                || (level == 0 && cmp.compare(key, file.largest.user_key()).is_gt())
            {
                continue;
            }
            let table = inner.table_cache.table_of(file, extractor)?;
            tombstone = tombstone.max(covering(cmp, table.range_tombstones(), key, snapshot));
            if let Some(found) = table.get(key, snapshot)? {
                let kind = found.kind;
                return match resolve(kind, found.seqno, found.value, tombstone) {
                    Some(reference) if kind == ValueKind::BlobIndex => {
                        inner.blob_cache.resolve(key, &reference).map(Some)
                    }
                    value => Ok(value),
                };
            }
        }
    }
    Ok(None)
}

/// In prefix mode, the key the user last sought with `seek` or `seek_for_prev`, shared by a
/// [`DbIterator`] and its tables: the iteration keeps to that key's prefix. `None` after
/// `seek_to_first` and `seek_to_last`, whose iteration no filter may narrow.
type PrefixSeekTarget = Arc<Mutex<Option<Vec<u8>>>>;

/// A table iterator that, in prefix mode, is empty after a seek while the prefix the
/// iteration keeps to is one the table's prefix filter rules out (so its blocks are never
/// read). That prefix is the user's seek target's, not the sought key's: a lower bound can
/// replace the target, and the merging iterator re-seeks its children to keys of other
/// prefixes when it changes direction; filtering on those skipped tables the iteration needs.
struct PrefixCheckedIter {
    table: Arc<Table>,
    iter: TableIter,
    ruled_out: bool,
    seek_target: PrefixSeekTarget,
}

impl PrefixCheckedIter {
    fn check(&mut self) -> bool {
        let target = self
            .seek_target
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.ruled_out = target
            .as_deref()
            .is_some_and(|key| !self.table.may_contain_prefix(key));
        !self.ruled_out
    }
}

impl InternalIterator for PrefixCheckedIter {
    fn valid(&self) -> bool {
        !self.ruled_out && self.iter.valid()
    }
    fn seek_to_first(&mut self) {
        self.ruled_out = false;
        self.iter.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.ruled_out = false;
        self.iter.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        if self.check() {
            self.iter.seek(target);
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.check() {
            self.iter.seek_for_prev(target);
        }
    }
    fn next(&mut self) {
        self.iter.next();
    }
    fn prev(&mut self) {
        self.iter.prev();
    }
    fn key(&self) -> &[u8] {
        self.iter.key()
    }
    fn value(&self) -> &[u8] {
        self.iter.value()
    }
    fn status(&self) -> Result<()> {
        Ok(self.iter.status()?)
    }
}

/// An iterator over a keyspace as of one snapshot: each live key once, with its newest value,
/// in key order, in either direction.
pub struct DbIterator {
    iter: DbIter<MergingIter>,
    /// Keeps the Version (and so every table file the iterator may still open) alive:
    /// ARCHITECTURE.md invariant 4.
    view: Arc<SuperVersion>,
    /// In prefix mode with an extractor, shared with the tables' `PrefixCheckedIter`s.
    prefix_seek_target: Option<PrefixSeekTarget>,
    /// For the flush a long run of skipped tombstones asks for.
    inner: Arc<DbInner>,
    keyspace: u32,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("valid", &self.iter.valid())
            .finish_non_exhaustive()
    }
}

impl DbIterator {
    /// Whether the iterator is on a key.
    pub fn valid(&self) -> bool {
        self.iter.valid()
    }
    /// The current key.
    pub fn key(&self) -> &[u8] {
        self.iter.key()
    }
    /// The current value.
    pub fn value(&self) -> &[u8] {
        self.iter.value()
    }
    /// Positions at the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        self.set_prefix_seek_target(None);
        self.iter.seek_to_first();
        self.flush_after_long_skip();
    }
    /// Positions at the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        self.set_prefix_seek_target(None);
        self.iter.seek_to_last();
        self.flush_after_long_skip();
    }
    /// Positions at the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.set_prefix_seek_target(Some(key));
        self.iter.seek(key);
        self.flush_after_long_skip();
    }
    /// Positions at the last key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.set_prefix_seek_target(Some(key));
        self.iter.seek_for_prev(key);
        self.flush_after_long_skip();
    }
    /// Moves to the next key.
    pub fn next(&mut self) {
        self.iter.next();
        self.flush_after_long_skip();
    }
    /// Moves to the previous key.
    pub fn prev(&mut self) {
        self.iter.prev();
        self.flush_after_long_skip();
    }
    /// After a step that skipped `tombstone_scan_flush_trigger` entries: when this view's
    /// memtable is still the active one and holds at least that many deletions, freezes it
    /// for flushing, so the tombstone-density compaction can remove the run the step skipped
    /// (a later step then finds a new active memtable and asks nothing).
    #[inline]
    fn flush_after_long_skip(&mut self) {
        if self.iter.take_long_skip() {
            self.flush_for_long_skip();
        }
    }

    #[cold]
    fn flush_for_long_skip(&mut self) {
        let trigger = self.view.tombstone_scan_flush_trigger;
        if self.view.mem.num_deletions() < trigger {
            return;
        }
        let still_active = self
            .inner
            .super_version(self.keyspace)
            .is_ok_and(|view| Arc::ptr_eq(&view.mem, &self.view.mem));
        if still_active {
            StatCounters::add(&self.inner.stats.tombstone_scan_flushes, 1);
            // Errors are sticky in the write path; this read goes on regardless.
            let _ = crate::write::write(
                &self.inner,
                crate::batch::WriteBatch::new(),
                WriteOptions {
                    durability: Some(Durability::Buffered),
                },
                true,
            );
        }
    }

    fn set_prefix_seek_target(&self, key: Option<&[u8]>) {
        if let Some(target) = &self.prefix_seek_target {
            *target.lock().unwrap_or_else(PoisonError::into_inner) = key.map(<[u8]>::to_vec);
        }
    }
    /// The first error met; an iterator that stops early with `Ok` reached the end.
    pub fn status(&self) -> Result<()> {
        self.iter.status()
    }
}

/// Opens the tables of a level for a [`LevelIter`].
fn level_opener(
    table_cache: &Arc<TableCache>,
    extractor: Option<Arc<dyn PrefixExtractor>>,
    table_options: &TableReadOptions,
    prefix_seek_target: Option<PrefixSeekTarget>,
) -> TableOpener {
    let (table_cache, table_options) = (table_cache.clone(), table_options.clone());
    Arc::new(move |file: &LevelFile| {
        let table = match file.pinned_table.get() {
            Some(table) => table.clone(),
            None => table_cache.get(file.file_number, file.global_seqno, extractor.as_ref())?,
        };
        let iter = table.iter(table_options.clone());
        Ok(if let Some(seek_target) = &prefix_seek_target {
            LevelTable::Other(Box::new(PrefixCheckedIter {
                table,
                iter,
                ruled_out: false,
                seek_target: seek_target.clone(),
            }))
        } else {
            LevelTable::Table(iter)
        })
    })
}

/// What iterators need of a Version's tables besides opening them, built once per Version
/// ([`SuperVersion::table_plan`]) rather than per iterator: each sorted level's files as the
/// level iterator takes them, and the range tombstones of every table (reading them opens each
/// table once through the table cache).
#[derive(Debug)]
pub(crate) struct TableReadPlan {
    /// Indexed by level; L0's entry is empty (every iterator opens L0's tables itself).
    levels: Vec<Arc<[LevelFile]>>,
    tombstones: Vec<RangeTombstone>,
    /// The level opener of the first iterator without bounds or prefix mode, shared by later
    /// ones with the same table options and extractor: making an opener allocates and clones
    /// the options, per iterator, where a seek opens one table per level.
    plain_opener: OnceLock<PlainOpener>,
}

/// A level opener with what it was made for ([`TableReadPlan::plain_opener`]).
struct PlainOpener {
    skip_cache_fill: bool,
    max_readahead_size: usize,
    extractor: Option<Arc<dyn PrefixExtractor>>,
    opener: TableOpener,
}

impl std::fmt::Debug for PlainOpener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainOpener")
            .field("skip_cache_fill", &self.skip_cache_fill)
            .field("max_readahead_size", &self.max_readahead_size)
            .finish_non_exhaustive()
    }
}

impl TableReadPlan {
    /// A level opener for an iterator without bounds or prefix mode: the shared one when it
    /// was made for the same options and extractor, else a new one.
    fn plain_opener(
        &self,
        table_cache: &Arc<TableCache>,
        extractor: Option<&Arc<dyn PrefixExtractor>>,
        table_options: &TableReadOptions,
    ) -> TableOpener {
        debug_assert!(table_options.lower_bound.is_none() && table_options.upper_bound.is_none());
        let shared = self.plain_opener.get_or_init(|| PlainOpener {
            skip_cache_fill: table_options.skip_cache_fill,
            max_readahead_size: table_options.max_readahead_size,
            extractor: extractor.cloned(),
            opener: level_opener(table_cache, extractor.cloned(), table_options, None),
        });
        let same_extractor = match (shared.extractor.as_ref(), extractor) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if same_extractor
            && shared.skip_cache_fill == table_options.skip_cache_fill
            && shared.max_readahead_size == table_options.max_readahead_size
        {
            shared.opener.clone()
        } else {
            level_opener(table_cache, extractor.cloned(), table_options, None)
        }
    }
}

/// `view`'s table plan, built now if no iterator has built it yet. A failure (a table that
/// does not open) is returned and nothing is kept, so the next iterator tries again.
fn table_read_plan<'a>(
    inner: &DbInner,
    keyspace: u32,
    view: &'a SuperVersion,
) -> Result<&'a TableReadPlan> {
    if let Some(plan) = view.table_plan.get() {
        return Ok(plan);
    }
    let version = &view.version;
    let mut tombstones = Vec::new();
    let mut levels = Vec::with_capacity(version.num_levels());
    for level in 0..version.num_levels() {
        let files = version.files(keyspace, level);
        let mut level_files = Vec::with_capacity(if level == 0 { 0 } else { files.len() });
        for file in files {
            let table = inner
                .table_cache
                .table_of(file, view.prefix_extractor.as_ref())?;
            tombstones.extend_from_slice(table.range_tombstones());
            if level > 0 {
                let pinned_table = if inner.table_cache.pins_tables {
                    PinnedTable::holding(table.into_arc())
                } else {
                    PinnedTable::default()
                };
                level_files.push(LevelFile {
                    smallest: file.smallest.clone(),
                    largest: file.largest.clone(),
                    file_number: file.number,
                    global_seqno: file.global_seqno,
                    pinned_table,
                });
            }
        }
        levels.push(Arc::from(level_files));
    }
    Ok(view.table_plan.get_or_init(|| TableReadPlan {
        levels,
        tombstones,
        plain_opener: OnceLock::new(),
    }))
}

/// Builds the iterator over `keyspace`'s read view.
pub(crate) fn iter(
    inner: &Arc<DbInner>,
    keyspace: u32,
    options: ReadOptions,
) -> Result<DbIterator> {
    inner.check_open()?;
    inner.idle.read();
    let view = inner.super_version(keyspace)?;
    let snapshot = snapshot_seqno(inner, &options);
    let extractor = view.prefix_extractor.clone();
    let table_options = TableReadOptions {
        lower_bound: options.lower_bound.clone(),
        upper_bound: options.upper_bound.clone(),
        skip_cache_fill: options.skip_cache_fill,
        max_readahead_size: options.max_readahead_size,
    };
    let prefix_seek_target: Option<PrefixSeekTarget> =
        (options.prefix_same_as_start && extractor.is_some()).then(PrefixSeekTarget::default);
    let plan = table_read_plan(inner, keyspace, &view)?;
    let version = &view.version;
    let level0 = version.files(keyspace, 0);
    let sorted_levels = plan.levels.iter().filter(|files| !files.is_empty()).count();
    let mut children: Vec<SourceIter> =
        Vec::with_capacity(1 + view.imm.len() + level0.len() + sorted_levels);
    let mut tombstones: Vec<RangeTombstone> = Vec::new();
    for mem in std::iter::once(&view.mem).chain(&view.imm) {
        tombstones.extend(mem.range_tombstones());
        children.push(SourceIter::MemTable(mem.iter()));
    }
    tombstones.extend_from_slice(&plan.tombstones);
    for file in level0 {
        let table = inner
            .table_cache
            .table_of(file, extractor.as_ref())?
            .into_arc();
        let iter = table.iter(table_options.clone());
        if let Some(seek_target) = &prefix_seek_target {
            children.push(SourceIter::Other(Box::new(PrefixCheckedIter {
                table,
                iter,
                ruled_out: false,
                seek_target: seek_target.clone(),
            })));
        } else {
            children.push(SourceIter::Table(iter));
        }
    }
    // One opener serves every level of this iterator.
    let mut opener: Option<TableOpener> = None;
    for level_files in plan.levels.iter().skip(1) {
        if level_files.is_empty() {
            continue;
        }
        let opener = opener.get_or_insert_with(|| {
            if prefix_seek_target.is_none()
                && table_options.lower_bound.is_none()
                && table_options.upper_bound.is_none()
            {
                plan.plain_opener(&inner.table_cache, extractor.as_ref(), &table_options)
            } else {
                level_opener(
                    &inner.table_cache,
                    extractor.clone(),
                    &table_options,
                    prefix_seek_target.clone(),
                )
            }
        });
        let level_iter = LevelIter::new(
            inner.comparator.clone(),
            level_files.clone(),
            opener.clone(),
        )
        .with_bounds(options.lower_bound.clone(), options.upper_bound.clone());
        children.push(SourceIter::Level(level_iter));
    }
    let cmp = inner.user_comparator().clone();
    let range_dels = if tombstones.is_empty() {
        RangeDelSet::empty(cmp.clone())
    } else {
        RangeDelSet::new(cmp.clone(), snapshot, &tombstones)
    };
    let merged = MergingIter::from_sources(inner.comparator.clone(), children);
    let iter_options = DbIterOptions {
        lower_bound: options.lower_bound,
        upper_bound: options.upper_bound,
        prefix_extractor: if options.prefix_same_as_start {
            extractor
        } else {
            None
        },
        ttl_cutoff: view
            .ttl
            .map(|ttl| crate::ttl::cutoff(ttl, inner.options.clock.now_seconds())),
        long_skip: view.tombstone_scan_flush_trigger,
        blob_resolver: Some(inner.blob_cache.clone()),
    };
    Ok(DbIterator {
        view: view.clone(),
        iter: DbIter::new(merged, cmp, snapshot, range_dels, iter_options),
        prefix_seek_target,
        inner: inner.clone(),
        keyspace,
    })
}
