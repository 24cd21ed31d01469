//! A compaction that failed reading one of its inputs (docs/reliability.md, "A failed read of
//! a compaction input").
//!
//! `RocksDB`, with `paranoid_checks` (its default), stops writes on a background compaction's
//! error until it is resumed or reopened, except for a retryable I/O error, which is a soft
//! error: writes go on and the compaction is scheduled again; a corruption is unrecoverable
//! there. Shale keeps the soft path for every read error, and for a damaged table keeps
//! serving instead of stopping:
//! - An I/O error (EIO, a failed open) is taken as transient. The compaction's outputs are
//!   already deleted (`run`), its inputs stay in the Version; the failure is logged and
//!   counted (`DbStats::compaction_read_errors`), and background compactions wait 100 ms,
//!   doubling to 5 s, before picking again. Reads and writes go on; the next compaction that
//!   succeeds ends the backoff (`Db::resume` ends the wait at once). A write that reaches a
//!   stop trigger meanwhile fails with [`Error::Paused`] naming the read error instead of
//!   waiting for a compaction that may keep failing.
//! - A corruption (checksum mismatch, a bad block or footer) is real damage, which no retry
//!   fixes. The damaged table is marked (logged, counted in `DbStats::damaged_tables`, listed
//!   by `Db::damaged_tables`) and no automatic compaction takes it as an input again. Reads
//!   go on (a read of the damaged block reports it), writes go on. Not compacting is always
//!   safe, so this never loses or reorders data; the cost is that the keyspace's compactions
//!   that need the table stop. If its L0 or pending bytes then reach a stop trigger, writes
//!   fail with the damage ([`blocked_write_error`]) rather than wait for a compaction that
//!   will not come. Repair (`repair_db`, `shale tool repair`) or a restore is the cure.
//!
//! Invariants:
//! 1. A table in [`CompactionReadFailures::damaged`] is never an input of a compaction the
//!    background picks (`compaction::pick`); a manual `compact_range` still tries and returns
//!    the damage to its caller.
//! 2. A mark is written to the MANIFEST (a `DAMAGED_FILE` edit, docs/format/manifest.md) when
//!    it is made, and an open starts with the marks its MANIFEST holds, so a restart does not
//!    read the damage again to find it. The MANIFEST forgets a mark when its table leaves the
//!    Version (repair, a range deletion that drops the file, a dropped keyspace); a mark only
//!    in memory (its MANIFEST write failed, or the table was gone by then) is never listed once
//!    the table is not live, and table numbers are never reused.
//! 3. Writing a mark changes nothing but the marks: the edit adds and deletes no file, so the
//!    Version's files and every reader's view stay as they were.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::db::{DbInner, DbState};
use crate::error::Error;
use crate::stats::StatCounters;
use crate::table_cache::table_file_name;
use crate::version::{Version, VersionEdit};

use super::Compaction;

/// Compaction read failures (`DbState::compaction_reads`).
#[derive(Debug, Default)]
pub(crate) struct CompactionReadFailures {
    /// After a transient read failure: failures in a row, when compactions may be picked
    /// again, and the last failure.
    backoff: Option<(u32, Instant, Error)>,
    /// Damaged tables by number, with the damage found (an [`Error::Corruption`] or
    /// [`shale_sst::Error::Corruption`]).
    damaged: BTreeMap<u64, Error>,
}

impl CompactionReadFailures {
    /// The failures an open starts with: the damage marks `version` holds (invariant 2) of
    /// the database in `dir`.
    pub(crate) fn remembered(version: &Version, dir: &Path) -> Self {
        let damaged = version
            .damaged_files()
            .values()
            .map(|mark| {
                let damage = Error::Corruption {
                    file: table_file_name(dir, mark.number),
                    offset: mark.offset,
                    detail: mark.detail.clone(),
                };
                (mark.number, damage)
            })
            .collect();
        CompactionReadFailures {
            backoff: None,
            damaged,
        }
    }

    /// How many tables are marked damaged.
    pub(crate) fn damaged_count(&self) -> usize {
        self.damaged.len()
    }

    /// Whether `compaction` reads a damaged table (invariant 1).
    pub(crate) fn reads_damaged(&self, compaction: &Compaction) -> bool {
        !self.damaged.is_empty()
            && compaction
                .all_inputs()
                .any(|(_, f)| self.damaged.contains_key(&f.number))
    }

    /// How long background compactions still wait after a transient read failure.
    pub(crate) fn backoff_remaining(&self) -> Option<Duration> {
        let (_, until, _) = self.backoff.as_ref()?;
        let now = Instant::now();
        (now < *until).then(|| *until - now)
    }

    /// The last transient read failure, while no compaction has succeeded since.
    pub(crate) fn failing(&self) -> Option<Error> {
        self.backoff.as_ref().map(|(_, _, error)| error.duplicate())
    }

    /// `Db::resume`: the next compaction may be picked now.
    pub(crate) fn retry_now(&mut self) {
        if let Some((_, until, _)) = &mut self.backoff {
            *until = Instant::now();
        }
    }

    /// A compaction succeeded: the backoff ends.
    pub(crate) fn succeeded(&mut self) {
        self.backoff = None;
    }

    /// The damaged tables live in `version`, by number, with what is wrong with each
    /// (invariant 2: a mark whose table is gone is not listed).
    pub(crate) fn damaged(&self, version: &Version) -> Vec<(u64, String)> {
        if self.damaged.is_empty() {
            return Vec::new();
        }
        let live: std::collections::HashSet<u64> =
            version.all_files().map(|(_, _, f)| f.number).collect();
        self.damaged
            .iter()
            .filter(|(number, _)| live.contains(number))
            .map(|(number, damage)| (*number, damage.to_string()))
            .collect()
    }
}

/// Whether `error` is a failed read, which this module handles (writes are handled as failed
/// table writes, anything else is sticky).
pub(crate) fn is_read_failure(error: &Error) -> bool {
    error.is_corruption()
        || matches!(error, Error::Io(_) | Error::Sst(shale_sst::Error::Io(_)))
            && !error.is_retryable_write()
}

/// The table number `path` names, if it is a table file.
fn table_number(path: &Path) -> Option<u64> {
    path.file_name()?
        .to_str()?
        .strip_suffix(".sst")?
        .parse()
        .ok()
}

/// The file, offset and detail a corruption names.
fn corruption_parts(error: &Error) -> Option<(&Path, u64, &str)> {
    match error {
        Error::Corruption {
            file,
            offset,
            detail,
        }
        | Error::Sst(shale_sst::Error::Corruption {
            file,
            offset,
            detail,
        }) => Some((file, *offset, detail)),
        _ => None,
    }
}

/// Reports the failed read `error` of `compaction`, described by `reason`; a background
/// (not `manual`) compaction's transient failure starts the backoff. Called with the state
/// lock held, after the outputs were deleted.
pub(crate) fn failed_locked(
    inner: &DbInner,
    state: &mut DbState,
    compaction: &Compaction,
    error: &Error,
    reason: &str,
    manual: bool,
) {
    let failures = &mut state.compaction_reads;
    if error.is_corruption() {
        // The table the damage names; a damaged blob file or an unnamed file marks every
        // input table, so the same compaction is not picked again either way.
        let named = corruption_parts(error)
            .and_then(|(file, _, _)| table_number(file))
            .filter(|n| compaction.all_inputs().any(|(_, f)| f.number == *n));
        let tables: Vec<u64> = match named {
            Some(number) => vec![number],
            None => compaction.all_inputs().map(|(_, f)| f.number).collect(),
        };
        let mut marked = Vec::new();
        for number in tables {
            if failures.damaged.insert(number, error.duplicate()).is_none() {
                StatCounters::add(&inner.stats.damaged_tables, 1);
                inner.info_log.log(format_args!(
                    "table {number:06}.sst is damaged and is no longer compacted (reads and \
                     writes go on; repair or restore it): {reason}"
                ));
                marked.push(number);
            }
        }
        record_marks_locked(inner, state, compaction.keyspace, &marked, error);
        return;
    }
    StatCounters::add(&inner.stats.compaction_read_errors, 1);
    if manual {
        inner.info_log.log(format_args!("manual {reason}"));
        return;
    }
    let count = failures
        .backoff
        .as_ref()
        .map_or(1, |(n, _, _)| n.saturating_add(1));
    let delay = crate::db::retry_delay(count);
    failures.backoff = Some((count, Instant::now() + delay, error.duplicate()));
    inner.info_log.log(format_args!(
        "{reason}; compactions wait {} ms before the next try (reads and writes go on)",
        delay.as_millis()
    ));
}

/// Writes the marks of tables `numbers` (damaged as `error` says) to the MANIFEST
/// (invariant 2) and installs the Version holding them. A table no longer live is skipped; a
/// failed MANIFEST write keeps the marks in memory and pauses writes until the MANIFEST is
/// rolled, as any failed edit does (`manifest_recovery`).
fn record_marks_locked(
    inner: &DbInner,
    state: &mut DbState,
    keyspace: u32,
    numbers: &[u64],
    error: &Error,
) {
    if numbers.is_empty() || inner.is_read_only() {
        return;
    }
    let version = state.versions.current();
    let live: std::collections::HashSet<u64> =
        version.all_files().map(|(_, _, f)| f.number).collect();
    let (offset, detail) = corruption_parts(error)
        .map_or((0, error.to_string()), |(_, offset, detail)| {
            (offset, detail.to_owned())
        });
    let mut edit = VersionEdit::new();
    for number in numbers {
        if live.contains(number) && !version.damaged_files().contains_key(number) {
            edit.mark_damaged(*number, offset, &detail);
        }
    }
    if edit.is_empty() {
        return;
    }
    match state.versions.log_and_apply(edit) {
        Ok(()) => {
            // Invariant 3: only the marks changed; the read view takes the new Version so
            // it stays the current one.
            let version = state.versions.current();
            if let Some(k) = state.keyspaces.get_mut(&keyspace) {
                k.install_super_version(version);
            }
        }
        Err(write_error) => {
            let _ = crate::manifest_recovery::edit_failed(
                inner,
                state,
                format!("recording damaged tables in the MANIFEST failed: {write_error}"),
                write_error,
            );
        }
    }
}

/// The error a write gets instead of waiting at a stop trigger of `keyspace` when the
/// compaction that would end the stop needs a damaged table (`now`: the clock).
pub(crate) fn blocked_write_error(state: &DbState, keyspace: u32, now: u64) -> Option<Error> {
    let failures = &state.compaction_reads;
    if failures.damaged.is_empty() {
        return None;
    }
    let k = state.keyspaces.get(&keyspace)?;
    let version = state.versions.current();
    // The compaction the keyspace needs, whatever runs: a running one ends, the damage stays.
    let idle = super::picker::Busy::default();
    let compaction = super::picker::pick(&version, keyspace, &k.options, now, &idle)?;
    let (number, damage) = compaction
        .all_inputs()
        .find_map(|(_, f)| Some((f.number, failures.damaged.get(&f.number)?)))?;
    let (file, offset, detail) = match corruption_parts(damage) {
        Some((file, offset, detail)) => (file.to_path_buf(), offset, detail.to_owned()),
        // Only corruptions are marked; kept total for any other.
        None => (
            PathBuf::from(format!("{number:06}.sst")),
            0,
            damage.to_string(),
        ),
    };
    Some(Error::Corruption {
        file,
        offset,
        detail: format!(
            "{detail}; writes to keyspace {:?} stop at a write stall trigger because the \
             compaction that would end the stall needs damaged table {number:06}.sst: repair \
             the database (shale tool repair) or restore it",
            k.name
        ),
    })
}
