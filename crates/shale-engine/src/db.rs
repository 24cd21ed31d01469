//! [`Db`]: the embeddable key-value engine, and the state its parts share.
//!
//! Flows (ARCHITECTURE.md, "The engine's flows"):
//! - write: [`Db::write`] -> group commit ([`crate::write_queue`]) -> WAL record -> memtable
//!   inserts -> sequence numbers published;
//! - flush: a full memtable is frozen by the write leader, a background thread writes it as an
//!   L0 table and records it in the MANIFEST (`crate::flush`);
//! - compaction: leveled compaction with dynamic level bytes keeps the tree bounded
//!   (`crate::compaction`, docs/compaction.md);
//! - read: memtable, frozen memtables, L0 newest first, then one table per level
//!   (`crate::read`);
//! - open: MANIFEST, then WAL replay (`crate::recovery`).
//!
//! Locks, always taken in this order: `state`, then `wal`. The write queue's own lock is never
//! held while taking either. Invariants:
//! 1. `visible_seqno <= last_allocated_seqno`; a reader never sees an entry above
//!    `visible_seqno` (writes become visible in commit order, see `write_queue`).
//! 2. A memtable is frozen only by the write leader, between groups, so no insert into it is
//!    in flight once it is frozen.
//! 3. Every WAL file with a number below every keyspace's log number holds only flushed data
//!    and may be deleted; a table file is deleted only when no live Version references it and
//!    it is not being written (`pending_outputs`).
//! 4. After a panic in a background job outside a flush's or compaction's table writing (or
//!    a lock it poisoned, or too many panics in a row: `crate::job_panic`), or an edit the
//!    version set refused as invalid, `background_error` is set, sticky, and every later
//!    write fails with it, until reopen. A failed read of a compaction's input sets no error
//!    (`compaction::read_failure`: backoff, or the damaged table is no longer compacted).
//!    A panic inside table writing is recoverable, as below, a few times in a row.
//!    A failed write of a flush's or compaction's table (out of space, say) sets a
//!    *recoverable* one instead: the job deleted its partial outputs and left the memtable or
//!    inputs in place, so nothing acknowledged is lost; writes fail with [`Error::Paused`]
//!    while the background retries the job with backoff (`Db::resume` retries at once), and
//!    the first job that then succeeds clears it. A failed WAL append, flush or sync is
//!    recoverable too (`crate::wal_recovery`): it clears only once the failed log is replaced
//!    and the memtables that needed it are flushed (`wal_recovery::blocks_clear`). So is a
//!    failed MANIFEST append, sync or switch (`crate::manifest_recovery`): it clears only once
//!    a new MANIFEST holding the current version is what `CURRENT` names. A sticky
//!    error replaces a recoverable one, never the reverse.
//! 5. A read-only open (`crate::read_only`) has no WAL, no LOCK and no background threads;
//!    every call that would write fails with [`Error::ReadOnly`] before touching a file.
//! 6. A leader stores `last_allocated_seqno` before it releases the WAL lock that it held to
//!    append the group's record: whoever holds that lock sees a WAL that holds exactly the
//!    sequence numbers up to `last_allocated_seqno` (a checkpoint's cut relies on it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arc_swap::Guard;
use shale_fs::{FileLock, FileSystem};
use shale_sst::{BlockCache, Comparator, InternalKeyComparator, SeqNo};

use crate::batch::WriteBatch;
use crate::blob::BlobFileCache;
use crate::checkpoint::CheckpointInfo;
use crate::compaction::BackgroundCompaction;
use crate::compaction_stats::CompactionStats;
use crate::error::{Error, Result};
use crate::idle::IdleTracker;
use crate::info_log::InfoLog;
use crate::keyspace::{Keyspace, KeyspaceState, SuperVersion};
use crate::memtable::MemTable;
use crate::options::{Durability, KeyspaceOptions, Options, WriteOptions};
use crate::rate_limiter::{IoPriority, RateLimiter};
use crate::read::{DbIterator, ReadOptions};
use crate::read_views::ReadViews;
use crate::recovery_report::RecoveryReport;
use crate::snapshot::{Snapshot, SnapshotList};
use crate::stats::{DbStats, StatCounters};
use crate::table_cache::TableCache;
use crate::test_hooks::TestHooks;
use crate::version::VersionSet;
use crate::wal::{GroupRecord, LogWriter};
use crate::write_queue::WriteQueue;

/// Id of the keyspace every database has.
pub const DEFAULT_KEYSPACE_ID: u32 = 0;
/// Name of the keyspace every database has.
pub const DEFAULT_KEYSPACE: &str = "default";

/// An open database. Cheap to share by reference across threads (`Db: Sync`); dropping it
/// closes the database (see [`Db::close`] to observe errors).
#[derive(Debug)]
pub struct Db {
    pub(crate) inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// What the write leader hands to the inserters of a group.
#[derive(Debug)]
pub(crate) struct GroupContext {
    /// The active memtable of every keyspace when the group was formed.
    pub(crate) memtables: BTreeMap<u32, Arc<MemTable>>,
}

/// The WAL currently written to.
#[derive(Debug)]
pub(crate) struct WalState {
    pub(crate) writer: LogWriter,
    pub(crate) number: u64,
    /// The end of the last record whose group's WAL step (append, and the flush or sync its
    /// durability asked for) succeeded: where a WAL recovery may end the log at most
    /// (`crate::wal_recovery`). A refused group's record may lie after it.
    pub(crate) written_end: u64,
    /// Groups written to this log, and how many of them a completed sync made durable: the
    /// background syncer has work while `synced_groups < written_groups`. Counts rather than
    /// a flag because `background::sync_wal` syncs without the WAL lock: a second caller must
    /// not take the first one's sync, still running, for a finished one.
    pub(crate) written_groups: u64,
    pub(crate) synced_groups: u64,
    /// Bytes of this log a completed sync made durable (0 before the first sync). Recorded in
    /// the MANIFEST as `WAL_SYNCED` (`write::live_wal_synced_locked`), never lowered.
    pub(crate) synced_bytes: u64,
    /// Whether the log's directory entry is durable. A memtable switch creates the next log
    /// without syncing the directory (that is off the writer's path); whatever relies on the
    /// log surviving a power cut syncs it first: a WAL sync, a `Sync` write, and a MANIFEST
    /// edit that names the log (`write::make_wal_name_durable`).
    pub(crate) name_durable: bool,
    /// The group's record is assembled here, reused from group to group so that a write
    /// does not allocate one.
    pub(crate) record: GroupRecord,
}

/// State guarded by the main mutex.
#[derive(Debug)]
pub(crate) struct DbState {
    pub(crate) versions: VersionSet,
    pub(crate) keyspaces: BTreeMap<u32, KeyspaceState>,
    /// Table files being written by flushes or compactions (never deleted as obsolete).
    pub(crate) pending_outputs: BTreeSet<u64>,
    /// What each running compaction reads and writes, and the keyspaces a manual compaction
    /// holds (`crate::compaction::CompactionClaims`, whose invariants say when compactions of
    /// one keyspace may run at once; ingestion keeps its files out of the output ranges,
    /// `crate::ingest`).
    pub(crate) compaction_claims: crate::compaction::CompactionClaims,
    /// The numbers of the compaction threads running (`crate::background`, invariant 1).
    pub(crate) compaction_threads: BTreeSet<usize>,
    /// Flushes and compactions finished since open (tests and tools wait on these).
    pub(crate) flushes_done: u64,
    pub(crate) compactions_done: u64,
    /// WAL numbers a running checkpoint still copies (never deleted as obsolete), with the
    /// number of checkpoints holding each.
    pub(crate) pinned_wals: BTreeMap<u64, usize>,
    /// The active memtables as the last write group saw them (`write::make_room` reuses it
    /// while they are unchanged). Cleared when memtables are switched; a dropped keyspace's
    /// memtable stays alive in it until the next write.
    pub(crate) group_context: Option<Arc<GroupContext>>,
    /// WALs closed by a memtable switch, with their (synced) sizes, that no MANIFEST edit has
    /// recorded yet (`write::live_wal_synced_locked` moves them into the next edit).
    pub(crate) unrecorded_closed_wals: Vec<(u64, u64)>,
    /// The WAL (by the active memtables' log number) for which `write::request_presync`
    /// already woke the syncer: once per memtable.
    pub(crate) presync_requested_for: u64,
    /// A failed WAL being replaced online (`crate::wal_recovery`); `None` otherwise.
    pub(crate) wal_recovery: Option<crate::wal_recovery::WalRecovery>,
    /// Compactions failed reading their inputs, and the tables found damaged
    /// (`crate::compaction::read_failure`).
    pub(crate) compaction_reads: crate::compaction::CompactionReadFailures,
    /// Flush and compaction jobs that panicked in a row (`crate::job_panic`).
    pub(crate) job_panics: crate::job_panic::JobPanics,
}

/// Why writes are refused (db.rs invariant 4).
#[derive(Debug)]
struct BackgroundError {
    reason: String,
    /// `Some` while the failed job may succeed on retry.
    retry: Option<Retry>,
}

/// When a recoverable error's job is retried next.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retry {
    /// Failed attempts so far (the first failure included).
    pub(crate) failures: u32,
    pub(crate) next_attempt: Instant,
    /// `Db::resume` asked for a retry now.
    pub(crate) now: bool,
}

/// The first retry of a recoverable background error waits this long; each failure doubles
/// it, up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);

/// How long to wait before the next try after `failures` failed ones (1 or more): the
/// backoff of invariant 4, 100 ms doubling to 5 s.
pub(crate) fn retry_delay(failures: u32) -> Duration {
    FIRST_RETRY_DELAY
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(MAX_RETRY_DELAY)
}

/// Everything the parts of the engine share. Background threads hold an `Arc` of it.
#[derive(Debug)]
pub(crate) struct DbInner {
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    pub(crate) comparator: Arc<InternalKeyComparator>,
    pub(crate) state: Mutex<DbState>,
    /// The keyspaces' read views, for lookups that take no lock (`crate::read_views`).
    pub(crate) read_views: ReadViews,
    /// Signalled when a flush or compaction finishes, work is queued, or on shutdown.
    pub(crate) state_changed: Condvar,
    /// `None` when the database is open read-only (`crate::read_only`): there is no WAL to
    /// write, and every writing call fails with [`Error::ReadOnly`].
    wal: Option<Mutex<WalState>>,
    pub(crate) write_queue: WriteQueue<GroupContext>,
    pub(crate) last_allocated_seqno: AtomicU64,
    pub(crate) visible_seqno: AtomicU64,
    background_error: Mutex<Option<BackgroundError>>,
    has_background_error: AtomicBool,
    /// Shared with the level openers iterators keep in a Version's table plan.
    pub(crate) table_cache: Arc<TableCache>,
    /// Open blob files, for resolving blob references (docs/format/blob.md).
    pub(crate) blob_cache: Arc<BlobFileCache>,
    /// A read-only open's WALs, each open with the length it replayed (empty otherwise):
    /// what a checkpoint or backup of the read-only view copies (`crate::read_only`).
    pub(crate) replayed_wals: Vec<crate::read_only::ReplayedWal>,
    pub(crate) snapshots: SnapshotList,
    pub(crate) shutting_down: AtomicBool,
    /// Set (with `state_changed` signalled) to make the WAL syncer sync now rather than at
    /// its next interval.
    pub(crate) wal_sync_requested: AtomicBool,
    /// Compaction and write-stall counters ([`Db::stats`]).
    pub(crate) stats: StatCounters,
    /// Writes and reads, for idle compaction.
    pub(crate) idle: IdleTracker,
    /// Released by close even while `Keyspace` handles still hold the `DbInner`.
    lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Charges table writes of flushes and compactions; `None` only for a read-only open
    /// (off while the rate is 0, so `Db::set_options` can turn it on live).
    pub(crate) rate_limiter: Option<Arc<RateLimiter>>,
    /// The durability of writes that name none (`Options::durability`, changed live by
    /// `Db::set_options`).
    pub(crate) default_durability: crate::live_options::DefaultDurability,
    /// `Options::max_background_jobs`, changed live by `Db::set_options`.
    pub(crate) max_background_jobs: std::sync::atomic::AtomicUsize,
    /// Where tests stop engine threads (feature `testing`).
    pub(crate) test_hooks: TestHooks,
    /// What the open replayed from the WALs and dropped ([`Db::recovery_report`]).
    pub(crate) recovery_report: RecoveryReport,
    /// The human-readable LOG (`crate::info_log`); disabled for a read-only open.
    pub(crate) info_log: InfoLog,
}

impl DbInner {
    #[allow(clippy::too_many_arguments)] // assembled once, in recovery
    pub(crate) fn new(
        options: Options,
        dir: &Path,
        lock: Option<Box<dyn FileLock>>,
        versions: VersionSet,
        keyspaces: BTreeMap<u32, KeyspaceState>,
        wal: Option<WalState>,
        last_seqno: SeqNo,
        recovery_report: RecoveryReport,
    ) -> Self {
        let fs = options.file_system.clone();
        let writable = wal.is_some();
        let block_cache = Arc::new(BlockCache::new(options.block_cache_capacity));
        // A read-only open keeps every table of its Version open: the writer may delete the
        // files, and an open handle is what keeps their bytes readable.
        let max_open_files = if wal.is_some() {
            options.max_open_files
        } else {
            usize::MAX
        };
        let table_cache = Arc::new(TableCache::new(
            fs.clone(),
            dir,
            options.comparator.clone(),
            block_cache,
            options.verify_checksums,
            max_open_files,
            crate::direct_io::table_read_mode(&options),
        ));
        let blob_cache = Arc::new(BlobFileCache::new(fs.clone(), dir, max_open_files));
        // Damage marks the MANIFEST remembers (compaction/read_failure.rs invariant 2).
        let compaction_reads =
            crate::compaction::CompactionReadFailures::remembered(&versions.current(), dir);
        let stats = StatCounters::default();
        StatCounters::add(
            &stats.damaged_tables,
            compaction_reads.damaged_count() as u64,
        );
        let info_log = if wal.is_some() && options.info_log {
            InfoLog::open(
                fs.clone(),
                dir,
                options.info_log_max_size,
                options.info_log_keep,
            )
        } else {
            InfoLog::disabled()
        };
        DbInner {
            fs,
            dir: dir.to_path_buf(),
            comparator: Arc::new(InternalKeyComparator::new(options.comparator.clone())),
            read_views: ReadViews::new(&keyspaces),
            state: Mutex::new(DbState {
                versions,
                keyspaces,
                pending_outputs: BTreeSet::new(),
                compaction_claims: crate::compaction::CompactionClaims::default(),
                compaction_threads: BTreeSet::new(),
                flushes_done: 0,
                compactions_done: 0,
                pinned_wals: BTreeMap::new(),
                group_context: None,
                unrecorded_closed_wals: Vec::new(),
                presync_requested_for: 0,
                wal_recovery: None,
                compaction_reads,
                job_panics: crate::job_panic::JobPanics::default(),
            }),
            state_changed: Condvar::new(),
            wal: wal.map(Mutex::new),
            write_queue: WriteQueue::new(),
            last_allocated_seqno: AtomicU64::new(last_seqno),
            visible_seqno: AtomicU64::new(last_seqno),
            background_error: Mutex::new(None),
            has_background_error: AtomicBool::new(false),
            table_cache,
            blob_cache,
            replayed_wals: Vec::new(),
            snapshots: SnapshotList::default(),
            shutting_down: AtomicBool::new(false),
            wal_sync_requested: AtomicBool::new(false),
            stats,
            idle: IdleTracker::default(),
            default_durability: crate::live_options::DefaultDurability::new(options.durability),
            max_background_jobs: std::sync::atomic::AtomicUsize::new(options.max_background_jobs),
            rate_limiter: writable.then(|| {
                Arc::new(RateLimiter::new(
                    options.rate_limit_bytes_per_sec,
                    options.rate_limiter_auto_tune,
                ))
            }),
            options,
            lock: Mutex::new(lock),
            test_hooks: TestHooks::default(),
            recovery_report,
            info_log,
        }
    }

    /// [`Db::stats`].
    pub(crate) fn db_stats(&self) -> DbStats {
        let mut stats = self.stats.snapshot();
        stats.recovery_wal_drops = self.recovery_report.dropped.len() as u64;
        stats.recovery_wal_dropped_bytes = self.recovery_report.dropped_bytes();
        if let Ok(wal) = self.lock_wal() {
            stats.wal_bytes_written += wal.writer.file_size();
        }
        if let Some(limiter) = &self.rate_limiter {
            stats.rate_limit_bytes_per_sec = limiter.bytes_per_sec();
            stats.rate_limited_flush_bytes = limiter.granted_bytes(IoPriority::Flush);
            stats.rate_limited_compaction_bytes = limiter.granted_bytes(IoPriority::Compaction);
        }
        stats
    }

    /// [`Db::compaction_stats`].
    pub(crate) fn compaction_stats(&self) -> CompactionStats {
        let (version, keyspaces) = {
            let state = self.lock_state();
            let keyspaces: Vec<_> = state
                .keyspaces
                .values()
                .map(|k| (k.id, k.options.clone()))
                .collect();
            (state.versions.current(), keyspaces)
        };
        let io = self.stats.level_snapshot(version.num_levels());
        CompactionStats::build(&version, &keyspaces, &io, &self.db_stats())
    }

    /// Tells the rate limiter's auto-tuning the pending compaction bytes of all keyspaces.
    pub(crate) fn note_pending_compaction_bytes_locked(&self, state: &DbState) {
        if let Some(limiter) = &self.rate_limiter {
            let pending = state
                .keyspaces
                .values()
                .map(|k| k.pending_compaction_bytes)
                .fold(0u64, u64::saturating_add);
            limiter.set_pending_compaction_bytes(pending);
        }
    }

    /// A new file number for a flush or compaction output, marked pending so no
    /// obsolete-file sweep deletes the file before the MANIFEST names it.
    pub(crate) fn new_pending_output(&self) -> u64 {
        let mut state = self.lock_state();
        let number = state.versions.new_file_number();
        state.pending_outputs.insert(number);
        number
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, DbState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The WAL, or [`Error::ReadOnly`] when the database is open read-only.
    pub(crate) fn lock_wal(&self) -> Result<MutexGuard<'_, WalState>> {
        match &self.wal {
            Some(wal) => Ok(wal.lock().unwrap_or_else(PoisonError::into_inner)),
            None => Err(Error::ReadOnly("writing the WAL".into())),
        }
    }

    /// Whether a thread panicked holding the state or the WAL lock (`crate::job_panic`): what
    /// the lock guards may be half-changed.
    pub(crate) fn locks_poisoned(&self) -> bool {
        self.state.is_poisoned() || self.wal.as_ref().is_some_and(Mutex::is_poisoned)
    }

    /// Whether the database was opened read-only ([`Db::open_read_only`]).
    pub(crate) fn is_read_only(&self) -> bool {
        self.wal.is_none()
    }

    /// Fails with [`Error::ReadOnly`] naming `operation` when the database is open read-only.
    pub(crate) fn check_writable(&self, operation: &str) -> Result<()> {
        if self.is_read_only() {
            return Err(Error::ReadOnly(operation.to_owned()));
        }
        Ok(())
    }

    pub(crate) fn wait_state<'a>(&self, guard: MutexGuard<'a, DbState>) -> MutexGuard<'a, DbState> {
        self.state_changed
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes every later write fail with `reason` (invariant 4). The first sticky reason
    /// wins; it replaces a recoverable one.
    pub(crate) fn set_background_error(&self, reason: String) {
        let state = self.lock_state();
        self.set_background_error_locked(&state, reason);
    }

    fn lock_background_error(&self) -> MutexGuard<'_, Option<BackgroundError>> {
        self.background_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A flush or compaction failed writing its tables (invariant 4): pauses writes with
    /// `reason` and schedules a retry with backoff, unless a sticky error is already set.
    pub(crate) fn set_recoverable_error_locked(&self, _state: &DbState, reason: String) {
        let mut error = self.lock_background_error();
        let failures = match &*error {
            None => 1,
            Some(BackgroundError { retry: None, .. }) => return,
            Some(BackgroundError {
                retry: Some(retry), ..
            }) => retry.failures.saturating_add(1),
        };
        let delay = retry_delay(failures);
        *error = Some(BackgroundError {
            reason,
            retry: Some(Retry {
                failures,
                next_attempt: Instant::now() + delay,
                now: false,
            }),
        });
        self.has_background_error.store(true, Ordering::Release);
        drop(error);
        self.state_changed.notify_all();
    }

    /// A flush or compaction succeeded: clears a recoverable error (invariant 4), unless a
    /// WAL recovery still needs its switch or flushes.
    pub(crate) fn clear_recoverable_error_locked(&self, state: &mut DbState) {
        if !self.has_background_error.load(Ordering::Acquire)
            || crate::wal_recovery::blocks_clear(state)
            || crate::manifest_recovery::needs_roll(state)
        {
            return;
        }
        let mut error = self.lock_background_error();
        if error.as_ref().is_some_and(|e| e.retry.is_some()) {
            if state.wal_recovery.take().is_some() {
                self.info_log
                    .log("WAL recovery done: the memtables are flushed, writes resume");
            }
            *error = None;
            self.has_background_error.store(false, Ordering::Release);
            drop(error);
            self.state_changed.notify_all();
        }
    }

    /// The retry schedule of a recoverable error, if that is what is set.
    pub(crate) fn retry_locked(&self, _state: &DbState) -> Option<Retry> {
        if !self.has_background_error.load(Ordering::Acquire) {
            return None;
        }
        self.lock_background_error().as_ref().and_then(|e| e.retry)
    }

    /// Whether a sticky error is set (background jobs stop for good).
    pub(crate) fn has_sticky_error(&self) -> bool {
        self.has_background_error.load(Ordering::Acquire)
            && self
                .lock_background_error()
                .as_ref()
                .is_some_and(|e| e.retry.is_none())
    }

    /// Asks for the retry of a recoverable error now; returns its failure count then.
    pub(crate) fn request_retry_locked(&self, _state: &DbState) -> Option<u32> {
        let mut error = self.lock_background_error();
        let retry = error.as_mut()?.retry.as_mut()?;
        retry.now = true;
        let failures = retry.failures;
        drop(error);
        self.state_changed.notify_all();
        Some(failures)
    }

    /// [`Self::set_background_error`] for a caller holding the state lock. Waiters check the
    /// error under that lock before they wait, so notifying with it held loses no wakeup (a
    /// lost one left a stalled writer or `flush` waiting forever).
    pub(crate) fn set_background_error_locked(&self, _state: &DbState, reason: String) {
        let mut error = self.lock_background_error();
        if error.as_ref().is_none_or(|e| e.retry.is_some()) {
            self.info_log.log(format_args!(
                "background error (writes stop until reopened): {reason}"
            ));
            *error = Some(BackgroundError {
                reason,
                retry: None,
            });
            self.has_background_error.store(true, Ordering::Release);
        }
        drop(error);
        self.state_changed.notify_all();
    }

    /// The sticky background error, if any.
    pub(crate) fn background_error(&self) -> Option<Error> {
        if !self.has_background_error.load(Ordering::Acquire) {
            return None;
        }
        let error = self.lock_background_error();
        error.as_ref().map(|e| {
            let reason = e.reason.clone();
            if e.retry.is_some() {
                Error::Paused { reason }
            } else {
                Error::Background { reason }
            }
        })
    }

    pub(crate) fn check_background_error(&self) -> Result<()> {
        self.background_error().map_or(Ok(()), Err)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::InvalidArgument("the database is closed".into()));
        }
        Ok(())
    }

    /// The newest sequence number readers may see.
    pub(crate) fn visible_seqno(&self) -> SeqNo {
        self.visible_seqno.load(Ordering::Acquire)
    }

    /// The current read view of a keyspace.
    pub(crate) fn super_version(&self, keyspace: u32) -> Result<Arc<SuperVersion>> {
        self.read_view(keyspace).map(Guard::into_inner)
    }

    /// The current read view of `keyspace`, held without a reference count of its own (a
    /// lookup's; an iterator keeps an `Arc` from [`DbInner::super_version`]).
    pub(crate) fn read_view(&self, keyspace: u32) -> Result<Guard<Arc<SuperVersion>>> {
        self.read_views.load(keyspace).ok_or_else(|| {
            Error::InvalidArgument(format!("keyspace id {keyspace} does not exist (dropped?)"))
        })
    }

    pub(crate) fn user_comparator(&self) -> &Arc<dyn Comparator> {
        self.comparator.user_comparator()
    }
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in `path`.
    ///
    /// ```
    /// use shale_engine::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
    /// use std::sync::Arc;
    ///
    /// # fn main() -> shale_engine::Result<()> {
    /// // An in-memory file system keeps the example self-contained; leave `file_system`
    /// // at its default for a real directory.
    /// let options = Options { file_system: Arc::new(shale_fs::MemFs::new()), ..Options::default() };
    /// let db = Db::open("/example", options)?;
    /// db.put(b"apple", b"red")?;
    /// let users = db.create_keyspace("users", Default::default())?;
    /// let mut batch = WriteBatch::new();
    /// batch.put(users.id(), b"u1", b"alice")?;
    /// batch.delete(db.default_keyspace().id(), b"apple")?;
    /// db.write(batch, &WriteOptions::sync())?; // both or neither
    /// assert_eq!(users.get(b"u1")?, Some(b"alice".to_vec()));
    /// assert_eq!(db.get(b"apple")?, None);
    /// let mut iter = users.iterator(ReadOptions::default())?;
    /// iter.seek_to_first();
    /// assert_eq!(iter.key(), b"u1");
    /// db.close()
    /// # }
    /// ```
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        options.validate()?;
        let inner = Arc::new(crate::recovery::open(path.as_ref(), options)?);
        let threads = crate::background::start(&inner)?;
        Ok(Db {
            inner,
            threads: Mutex::new(threads),
        })
    }

    /// Opens the database in `path` read-only, as it is now, even while another process (or
    /// another `Db` in this one) writes to it: like `RocksDB`'s read-only mode.
    ///
    /// It neither takes nor checks the `LOCK`, and never creates, writes, renames or deletes
    /// a file: it reads `CURRENT` and the MANIFEST, replays the live WALs into memory (a torn
    /// tail of the WAL a writer is appending is where the view ends), and opens every table of
    /// that Version, keeping them open so a writer deleting them later does not disturb it.
    /// Reads, iterators and snapshots work; everything that writes fails with
    /// [`Error::ReadOnly`]. The view never changes: reopen to see newer writes. If the writer
    /// deletes a file between our reading the MANIFEST and opening the file, the open starts
    /// over from `CURRENT`, a few times (docs/operations.md, "Read-only open").
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        options.validate()?;
        let inner = Arc::new(crate::read_only::open(path.as_ref(), options)?);
        Ok(Db {
            inner,
            threads: Mutex::new(Vec::new()),
        })
    }

    /// Whether this database was opened with [`Db::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    /// The keyspace every database has.
    pub fn default_keyspace(&self) -> Keyspace {
        Keyspace::new(
            self.inner.clone(),
            DEFAULT_KEYSPACE_ID,
            DEFAULT_KEYSPACE.to_owned(),
        )
    }

    /// A handle to the keyspace called `name`, if it exists.
    pub fn keyspace(&self, name: &str) -> Option<Keyspace> {
        let state = self.inner.lock_state();
        state
            .keyspaces
            .values()
            .find(|k| k.name == name)
            .map(|k| Keyspace::new(self.inner.clone(), k.id, k.name.clone()))
    }

    /// Names of all keyspaces, sorted.
    pub fn keyspace_names(&self) -> Vec<String> {
        let state = self.inner.lock_state();
        let mut names: Vec<String> = state.keyspaces.values().map(|k| k.name.clone()).collect();
        names.sort();
        names
    }

    /// Creates a keyspace with its own options.
    pub fn create_keyspace(&self, name: &str, options: KeyspaceOptions) -> Result<Keyspace> {
        self.inner.check_open()?;
        self.inner.check_writable("creating a keyspace")?;
        self.inner.check_background_error()?;
        crate::keyspace::create(&self.inner, name, options)
    }

    /// Drops a keyspace: its data becomes unreachable at once and its files are deleted.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        self.inner.check_open()?;
        self.inner.check_writable("dropping a keyspace")?;
        self.inner.check_background_error()?;
        crate::keyspace::drop_keyspace(&self.inner, name)
    }

    /// Writes `key = value` in the default keyspace with the default durability.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.default_keyspace().put(key, value)
    }

    /// Deletes `key` from the default keyspace.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.default_keyspace().delete(key)
    }

    /// Deletes keys in `[start, end)` from the default keyspace.
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        self.default_keyspace().delete_range(start, end)
    }

    /// The value of `key` in the default keyspace.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.default_keyspace().get(key)
    }

    /// Applies `batch` atomically: after a crash either all of it or none of it is there.
    pub fn write(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        crate::write::write(&self.inner, batch, *options, false)
    }

    /// An iterator over the default keyspace.
    pub fn iterator(&self, options: ReadOptions) -> Result<DbIterator> {
        self.default_keyspace().iterator(options)
    }

    /// A consistent read view as of now; pass it in [`ReadOptions::snapshot`].
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshots.acquire(self.inner.visible_seqno())
    }

    /// Freezes every keyspace's memtable and waits until all are written as tables.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_writable("flush")?;
        crate::flush::flush_and_wait(&self.inner)
    }

    /// The live tables marked damaged, by number, with the damage: found by a compaction
    /// since open or remembered by the MANIFEST from an earlier one. No background compaction
    /// takes them as inputs (docs/reliability.md, "A failed read of a compaction input"); a
    /// mark goes with its table. Empty on a healthy database.
    pub fn damaged_tables(&self) -> Vec<(u64, String)> {
        let state = self.inner.lock_state();
        state.compaction_reads.damaged(&state.versions.current())
    }

    /// Waits until no flush or compaction is pending (tests and tools). Fails with the
    /// background error, or with the read error of a compaction that failed reading an input
    /// and waits to be tried again (docs/reliability.md, "A failed read of a compaction
    /// input"), rather than wait for a retry that may never succeed.
    pub fn wait_for_background_work(&self) -> Result<()> {
        if self.inner.is_read_only() {
            // No background work ever runs (the replayed memtables stay frozen in memory).
            return Ok(());
        }
        crate::background::wait_idle(&self.inner)
    }

    /// The sequence number of the newest visible write.
    pub fn latest_seqno(&self) -> SeqNo {
        self.inner.visible_seqno()
    }

    /// Number of table files per level of a keyspace (level 0 first).
    pub fn level_file_counts(&self, keyspace: &Keyspace) -> Result<Vec<usize>> {
        let version = self.inner.super_version(keyspace.id())?.version.clone();
        Ok((0..version.num_levels())
            .map(|level| version.num_files(keyspace.id(), level))
            .collect())
    }

    /// Bytes of table files per level of a keyspace (level 0 first), as recorded in the
    /// current Version: what `db_bench`'s `levelstats` shows beside the file counts.
    pub fn level_bytes(&self, keyspace: &Keyspace) -> Result<Vec<u64>> {
        let version = self.inner.super_version(keyspace.id())?.version.clone();
        Ok((0..version.num_levels())
            .map(|level| {
                version
                    .files(keyspace.id(), level)
                    .iter()
                    .map(|file| file.size)
                    .sum()
            })
            .collect())
    }

    /// Compacts the keys of `keyspace` in `[start, end]` (`None`: unbounded on that side):
    /// flushes every memtable, then merges each level's files in the range into the next
    /// level, down to the last non-empty one, so shadowed versions nobody's snapshot can see
    /// and tombstones at the bottom are gone. Waits until done.
    pub fn compact_range(
        &self,
        keyspace: &Keyspace,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        self.inner.check_open()?;
        self.inner.check_writable("compact_range")?;
        self.inner.check_background_error()?;
        crate::compaction::compact_range(&self.inner, keyspace.id(), start, end)
    }

    /// Starts [`Self::compact_range`] on its own thread and returns at once; the returned
    /// [`BackgroundCompaction`] says when it is done and waits for it. `close` stops it
    /// between steps (its `wait` then returns the error).
    pub fn compact_range_in_background(
        &self,
        keyspace: &Keyspace,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<BackgroundCompaction> {
        self.inner.check_open()?;
        self.inner.check_background_error()?;
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        // Under the lock `close` takes the threads with, so it joins this one too.
        self.inner.check_open()?;
        let (handle, thread) = crate::compaction::start_background_compact_range(
            &self.inner,
            keyspace.id(),
            start.map(<[u8]>::to_vec),
            end.map(<[u8]>::to_vec),
        )?;
        threads.retain(|t| !t.is_finished() || t.thread().name() != Some("shale-manual-compact"));
        threads.push(thread);
        Ok(handle)
    }

    /// Makes a consistent, openable copy of the database in `dir` (which must not exist or be
    /// empty) without blocking writers: table files are hard-linked (copied across file
    /// systems), the WALs copied up to the cut, and a fresh MANIFEST written. The returned
    /// [`CheckpointInfo`] names the cut's sequence number and holds a snapshot at it.
    ///
    /// A database open read-only ([`Db::open_read_only`]) is checkpointed as it reads: the
    /// files are read through the handles the view holds, nothing in its directory is
    /// written, so this works beside a writer in another process and on a read-only mount.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointInfo> {
        crate::checkpoint::create(&self.inner, dir.as_ref())
    }

    /// Changes options while the database is open, all or none: `rate_limit_bytes_per_sec`
    /// (0 turns the limiter off), `block_cache_capacity` (a smaller one evicts at once),
    /// `durability` (`sync`, `flush` or `buffered`: the default of later writes), and, for
    /// `max_background_jobs` (compaction threads start at once, or stop after their running
    /// compaction), and, for
    /// every keyspace open now, `write_buffer_size`, `max_write_buffer_number`,
    /// `level0_slowdown_writes_trigger`, `level0_stop_writes_trigger` and the
    /// `soft_`/`hard_pending_compaction_bytes_limit`s ([`crate::LIVE_OPTIONS`]). A bad name or
    /// value, or a combination a keyspace's options refuse, fails with
    /// [`Error::InvalidArgument`] naming it and changes nothing. The changes last until close;
    /// the OPTIONS file keeps the open-time options (`crate::live_options`).
    pub fn set_options(&self, changes: &[(&str, &str)]) -> Result<()> {
        // Under the lock `close` takes the threads with, so it joins any started here.
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        crate::live_options::set(&self.inner, changes)?;
        if self.inner.is_read_only() {
            return Ok(());
        }
        threads.retain(|t| !t.is_finished());
        crate::background::start_compaction_threads(&self.inner, &mut threads)
    }

    /// How many compaction threads run now (feature `testing`): `max_background_jobs - 1`
    /// once threads above a lowered limit finished their compaction.
    #[cfg(feature = "testing")]
    pub fn compaction_threads(&self) -> usize {
        self.inner.lock_state().compaction_threads.len()
    }

    /// How many compactions run now (background, idle and manual ones).
    #[cfg(feature = "testing")]
    pub fn running_compactions(&self) -> usize {
        self.inner.lock_state().compaction_claims.running()
    }

    /// The current values of the options [`Self::set_options`] changes, named as it names
    /// them (the keyspace options as the default keyspace has them).
    pub fn live_options(&self) -> Vec<(String, String)> {
        crate::live_options::current(&self.inner)
    }

    /// Point lookups that searched the list of one of `keyspace`'s live memtables (the active
    /// one and the frozen ones), summed (feature `testing`): a lookup the memtable bloom filter
    /// rules out is not counted. A flushed memtable's lookups leave the sum with it.
    #[cfg(feature = "testing")]
    pub fn memtable_list_lookups(&self, keyspace: &Keyspace) -> Result<usize> {
        let view = self.inner.super_version(keyspace.id())?;
        Ok(std::iter::once(&view.mem)
            .chain(&view.imm)
            .map(|mem| mem.list_lookups())
            .sum())
    }

    /// Runs `hook` in every write leader after its group's WAL record is written and the WAL
    /// lock released, before the group is inserted and published (feature `testing`: lets a
    /// test hold a group there). Returns false, leaving the first, if a hook was already set.
    #[cfg(feature = "testing")]
    pub fn set_after_wal_record_hook(&self, hook: impl Fn() + Send + Sync + 'static) -> bool {
        self.inner.test_hooks.set_after_wal_record(Box::new(hook))
    }

    /// Runs `hook` in every flush job where it starts writing its table, holding no lock
    /// (feature `testing`: a panicking hook is a bug inside a flush). False if one was set.
    #[cfg(feature = "testing")]
    pub fn set_in_flush_hook(&self, hook: impl Fn() + Send + Sync + 'static) -> bool {
        self.inner.test_hooks.set_in_flush(Box::new(hook))
    }

    /// Runs `hook` in every subcompaction thread (each range of a split compaction but the
    /// first, which runs on the compaction's own thread) where it starts, holding no lock
    /// (feature `testing`). False if one was set.
    #[cfg(feature = "testing")]
    pub fn set_in_subcompaction_hook(&self, hook: impl Fn() + Send + Sync + 'static) -> bool {
        self.inner.test_hooks.set_in_subcompaction(Box::new(hook))
    }

    /// Runs `hook` in every compaction that merges, where it starts, holding no lock
    /// (feature `testing`). False if one was set.
    #[cfg(feature = "testing")]
    pub fn set_in_compaction_hook(&self, hook: impl Fn() + Send + Sync + 'static) -> bool {
        self.inner.test_hooks.set_in_compaction(Box::new(hook))
    }

    /// Ingests external table files (written by [`crate::TableFileWriter`]) into their
    /// keyspaces atomically: all files of all keyspaces become visible at once, at one new
    /// sequence number above every earlier write, each placed at the deepest level where it
    /// overlaps nothing newer (docs/operations.md, "Bulk ingestion"). Writers wait while the
    /// files are placed; memtables overlapping them are flushed first. On error nothing is
    /// ingested and nothing is left in the database directory.
    ///
    /// Each file is checked before anything happens: its footer, meta blocks (properties,
    /// index, filters, range deletions) and first and last data blocks are read with their
    /// checksums, every seqno they show must be 0 and its key-range properties must cover
    /// them. Only with [`crate::IngestOptions::verify_checksums_before_ingest`] is every data
    /// block read too (checksums, key order, seqnos, entry counts); without it the cost of
    /// an ingestion does not grow with the data in the files, and a damaged block in the
    /// middle of a file is reported by the first read of it instead.
    pub fn ingest(
        &self,
        args: &[crate::IngestArg],
        options: crate::IngestOptions,
    ) -> Result<Vec<crate::IngestedFile>> {
        self.inner.check_writable("ingest")?;
        crate::ingest::ingest(&self.inner, args, options)
    }

    /// Retries now the flush, compaction or WAL recovery whose failure paused writes
    /// ([`Error::Paused`], e.g. after the disk filled up and space was freed) and waits for
    /// the outcome: `Ok` once it succeeded and writes go on (or nothing was paused), the new
    /// failure if it failed again (the background keeps retrying with backoff), and
    /// [`Error::Background`] if the error is sticky (a failed MANIFEST write or sync): only a
    /// reopen clears that. A WAL recovery succeeds once the failed log is replaced by a new
    /// one and every memtable that needed it is flushed (`crate::wal_recovery`). A compaction
    /// waiting to be retried after a failed read of an input (which pauses only writes at a
    /// stop trigger) is also tried now, without waiting for its outcome.
    pub fn resume(&self) -> Result<()> {
        self.inner.check_open()?;
        self.inner.check_writable("resume")?;
        let mut state = self.inner.lock_state();
        // A compaction waiting after a failed read is tried now (compaction/read_failure.rs).
        state.compaction_reads.retry_now();
        self.inner.state_changed.notify_all();
        let Some(failures) = self.inner.request_retry_locked(&state) else {
            return self.inner.check_background_error();
        };
        if state.keyspaces.values().all(|k| k.imm.is_empty())
            && !crate::compaction::needs_compaction(&state, self.inner.options.clock.now_seconds())
            && !crate::wal_recovery::blocks_clear(&state)
            && !crate::manifest_recovery::needs_roll(&state)
        {
            // The failed job is gone (a manual compaction's caller saw its error): nothing
            // to retry.
            self.inner.clear_recoverable_error_locked(&mut state);
            return Ok(());
        }
        loop {
            match self.inner.retry_locked(&state) {
                None => return self.inner.check_background_error(),
                Some(retry) if retry.failures != failures => {
                    return self.inner.check_background_error();
                }
                Some(_) => {}
            }
            self.inner.check_open()?;
            state = self.inner.wait_state(state);
        }
    }

    /// What the open replayed from the WALs, and every stretch of WAL data it dropped
    /// (a torn tail, or what the recovery mode skipped): docs/format/wal.md, "Recovery modes".
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery_report
    }

    /// Compaction and write-stall counters since open.
    pub fn stats(&self) -> DbStats {
        self.inner.db_stats()
    }

    /// The block cache's lookups that hit and missed since open, and its usage and capacity
    /// now (SHOW STATUS's `Shale_block_cache_*`).
    pub fn block_cache_stats(&self) -> shale_sst::CacheStats {
        self.inner.table_cache.block_cache_stats()
    }

    /// `RocksDB`'s compaction stats table: files, size and score of every level now, and the
    /// flush and compaction work into each since open, every keyspace together; its `Display`
    /// is the text `shale bench`'s `stats` prints.
    pub fn compaction_stats(&self) -> CompactionStats {
        self.inner.compaction_stats()
    }

    /// The options `keyspace` runs with now, as the name and value pairs its OPTIONS file
    /// section holds (docs/format/options.md); for `information_schema.SHALE_KEYSPACES`.
    pub fn keyspace_option_pairs(&self, keyspace: &Keyspace) -> Result<Vec<(String, String)>> {
        let state = self.inner.lock_state();
        state
            .keyspaces
            .get(&keyspace.id())
            .map(|k| k.options.to_pairs())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "keyspace {:?} does not exist (dropped?)",
                    keyspace.name()
                ))
            })
    }

    /// The current Version: every keyspace's table files by level (tests and tools).
    pub fn current_version(&self) -> Arc<crate::version::Version> {
        self.inner.lock_state().versions.current()
    }

    /// The base level (where L0 is compacted to) and each level's target size in bytes
    /// (`u64::MAX` for L0 and the empty levels above the base) of `keyspace`, as the picker
    /// sees them now (docs/compaction.md).
    pub fn level_targets(&self, keyspace: &Keyspace) -> Result<(usize, Vec<u64>)> {
        let state = self.inner.lock_state();
        let options = state
            .keyspaces
            .get(&keyspace.id())
            .map(|k| k.options.clone())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "keyspace {:?} does not exist (dropped?)",
                    keyspace.name()
                ))
            })?;
        let targets =
            crate::compaction::level_targets(&state.versions.current(), keyspace.id(), &options);
        Ok((targets.base_level, targets.max_bytes))
    }

    /// Closes the database: waits for the running background job, stops the threads, and
    /// makes every acknowledged write durable (the WAL is synced), whatever its durability.
    /// While a failed WAL is being replaced (`crate::wal_recovery`) it first retries that
    /// once, as [`Self::resume`] does; if that fails, close returns the error, and the
    /// acknowledged writes past the failed log's last good sync may be lost.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        if self.inner.lock_state().wal_recovery.is_some() && !self.inner.has_sticky_error() {
            // A failed log's acknowledged writes past its last good sync are only in the
            // memtables (crate::wal_recovery): one try to get them into tables before the
            // threads stop. A failure is what close then returns.
            let _ = self.resume();
        }
        if self.inner.shutting_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Under the state lock: a background thread checks the flag under it before waiting,
        // so it cannot miss this wakeup (and hang the join below).
        {
            let _state = self.inner.lock_state();
            self.inner.state_changed.notify_all();
        }
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            if thread.join().is_err() {
                self.inner
                    .set_background_error("a background thread panicked".into());
            }
        }
        let synced = crate::background::sync_wal(&self.inner);
        if synced.is_ok() {
            // A clean close leaves every WAL's synced size in the MANIFEST.
            let _ = crate::write::record_live_wal_synced(&self.inner);
        }
        self.inner.info_log.log("close");
        self.inner.info_log.close();
        self.inner
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        synced?;
        self.inner.check_background_error()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // Errors were already made sticky; `close` is the way to see them.
        let _ = self.shutdown();
    }
}

/// Acknowledged-write helper for keyspace handles: one entry, default durability.
pub(crate) fn write_one(inner: &Arc<DbInner>, batch: WriteBatch) -> Result<()> {
    crate::write::write(inner, batch, WriteOptions::default(), false)
}

/// The durability a write uses.
pub(crate) fn durability_of(inner: &DbInner, options: WriteOptions) -> Durability {
    options
        .durability
        .unwrap_or_else(|| inner.default_durability.get())
}
