//! The write path: validate, group-commit through the WAL, insert into memtables, publish.
//!
//! The leader of each group (see `write_queue`) first makes room: when a keyspace's L0 has
//! `level0_slowdown_writes_trigger` files or its estimated compaction backlog reaches
//! `soft_pending_compaction_bytes_limit` it sleeps a millisecond; at
//! `level0_stop_writes_trigger` or `hard_pending_compaction_bytes_limit` it waits for
//! compactions; when a keyspace's memtable is full (or a flush was asked for) it waits while
//! too many memtables are already frozen. Each of these write stalls is counted by reason in
//! `DbStats`. Then it switches to a new WAL file and freezes the full memtables. Only then does it write the group's record, so no insert into a
//! frozen memtable is ever in flight (db.rs invariant 2).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use shale_sst::{SeqNo, ValueKind};

use crate::batch::WriteBatch;
use crate::db::{durability_of, DbInner, DbState, GroupContext, WalState};
use crate::error::{Error, Result};
use crate::keyspace::FrozenMemTable;
use crate::memtable::MemTable;
use crate::options::{Durability, WriteOptions};
use crate::stats::StatCounters;
use crate::version::VersionEdit;
use crate::wal::format::log_file_name;
use crate::wal::{GroupRecord, LogWriter};
use crate::write_queue::{Group, GroupPlan};

/// Commits `batch`. With `force_flush`, the leader freezes every non-empty memtable first
/// (how [`crate::Db::flush`] starts).
pub(crate) fn write(
    inner: &Arc<DbInner>,
    batch: WriteBatch,
    options: WriteOptions,
    force_flush: bool,
) -> Result<()> {
    inner.check_open()?;
    inner.check_writable("writing")?;
    inner.check_background_error()?;
    let ttl_keyspaces = validate_entries(inner, &batch)?;
    let batch = if ttl_keyspaces.is_empty() {
        batch
    } else {
        with_write_times(&batch, &ttl_keyspaces, inner.options.clock.now_seconds())?
    };
    let durability = durability_of(inner, options);
    if !batch.is_empty() {
        inner.idle.wrote();
    }
    inner.write_queue.write(
        batch,
        durability,
        |group| lead_group(inner, group, force_flush),
        insert_batch,
        |last_seqno| inner.visible_seqno.store(last_seqno, Ordering::Release),
    )
}

/// Runs `step` as the leader of a write group before the group's WAL step: no other group is
/// in flight, so every allocated sequence number is visible, and none is allocated while
/// `step` runs (how ingestion stops writers briefly). The writers that joined the group are
/// committed after it as usual. Returns what `step` returned: a failure of the group's own WAL
/// step after it goes to the group's writers (and becomes the sticky background error).
pub(crate) fn run_as_leader<T>(
    inner: &Arc<DbInner>,
    step: impl FnOnce() -> Result<T>,
) -> Result<T> {
    inner.check_open()?;
    inner.check_background_error()?;
    lead_while_paused(inner, step)
}

/// [`run_as_leader`] even while writes are paused (the WAL recovery's switch,
/// `crate::wal_recovery`): the writers that joined the group then get the pause's error.
pub(crate) fn lead_while_paused<T>(
    inner: &Arc<DbInner>,
    step: impl FnOnce() -> Result<T>,
) -> Result<T> {
    inner.check_open()?;
    let mut outcome = None;
    let written = inner.write_queue.write_leading(
        WriteBatch::new(),
        Durability::Buffered,
        |group| {
            outcome = Some(step());
            lead_group(inner, group, false)
        },
        insert_batch,
        |last_seqno| inner.visible_seqno.store(last_seqno, Ordering::Release),
    );
    match (outcome, written) {
        (Some(outcome), _) => outcome,
        (None, Err(error)) => Err(error),
        (None, Ok(())) => Err(Error::Background {
            reason: "a leading write did not lead (a bug)".into(),
        }),
    }
}

/// Refuses batches naming a missing keyspace or holding a reversed range deletion (which no
/// table could hold: accepting it would fail the flush and, from the WAL, every later open).
/// An empty range (`start == end`) deletes nothing and is accepted, as in `RocksDB`.
/// Returns the keyspaces written that have a TTL.
fn validate_entries(inner: &DbInner, batch: &WriteBatch) -> Result<BTreeSet<u32>> {
    let mut ttl_keyspaces = BTreeSet::new();
    if batch.is_empty() {
        return Ok(ttl_keyspaces);
    }
    let cmp = inner.user_comparator();
    let state = inner.lock_state();
    for entry in batch.iter() {
        let Some(keyspace) = state.keyspaces.get(&entry.keyspace) else {
            return Err(Error::InvalidArgument(format!(
                "write batch names keyspace id {} which does not exist (dropped?)",
                entry.keyspace
            )));
        };
        if keyspace.options.ttl.is_some() {
            ttl_keyspaces.insert(entry.keyspace);
        }
        if entry.kind == ValueKind::RangeDeletion && cmp.compare(entry.key, entry.value).is_gt() {
            return Err(Error::InvalidArgument(format!(
                "range deletion start {} is above its end {}",
                shale_sst::printable(entry.key),
                shale_sst::printable(entry.value)
            )));
        }
    }
    Ok(ttl_keyspaces)
}

/// `batch` with the write time `now` appended to every value of a keyspace in `ttl_keyspaces`
/// (docs/format/ttl.md), before it reaches the WAL so a replay keeps the times.
fn with_write_times(
    batch: &WriteBatch,
    ttl_keyspaces: &BTreeSet<u32>,
    now: u64,
) -> Result<WriteBatch> {
    let mut stamped = WriteBatch::new();
    for entry in batch.iter() {
        match entry.kind {
            ValueKind::Value if ttl_keyspaces.contains(&entry.keyspace) => {
                let stored = crate::ttl::with_write_time(entry.value, now);
                stamped.put(entry.keyspace, entry.key, &stored)?;
            }
            ValueKind::Value => stamped.put(entry.keyspace, entry.key, entry.value)?,
            ValueKind::Deletion => stamped.delete(entry.keyspace, entry.key)?,
            ValueKind::RangeDeletion => {
                stamped.delete_range(entry.keyspace, entry.key, entry.value)?;
            }
            ValueKind::BlobIndex => {
                return Err(Error::InvalidArgument(
                    "a write batch cannot hold a blob reference".to_owned(),
                ))
            }
        }
    }
    Ok(stamped)
}

/// The leader's step: make room, assign sequence numbers, write and sync the WAL record.
fn lead_group(
    inner: &Arc<DbInner>,
    group: Group<'_>,
    force_flush: bool,
) -> Result<GroupPlan<GroupContext>> {
    inner.check_background_error()?;
    let memtables = make_room(inner, force_flush)?;
    let count: u64 = group.writes().map(|w| u64::from(w.batch.count())).sum();
    let first_seqno = inner.last_allocated_seqno.load(Ordering::Acquire) + 1;
    if count > 0 {
        let durability = group
            .writes()
            .map(|w| w.durability)
            .min_by_key(|d| strength_rank(*d))
            .unwrap_or(Durability::Sync);
        let mut guard = inner.lock_wal()?;
        let wal = &mut *guard;
        wal.record.clear();
        for write in group.writes() {
            wal.record.append(&write.batch)?;
        }
        let payload = wal.record.encode(first_seqno, wal.writer.format_version());
        let result = wal
            .writer
            .add_record(payload)
            .and_then(|_| match durability {
                Durability::Sync => {
                    sync_wal_name_locked(inner, wal).and_then(|()| wal.writer.sync())
                }
                Durability::Flush => wal.writer.flush(),
                Durability::Buffered => Ok(()),
            });
        if wal.record.buffered_bytes() > KEEP_RECORD_BYTES {
            wal.record = GroupRecord::new();
        }
        if result.is_ok() {
            wal.written_groups += 1;
            wal.written_end = wal.writer.file_size();
            if durability == Durability::Sync {
                wal.synced_groups = wal.written_groups;
                wal.synced_bytes = wal.writer.file_size();
            }
            // Before the WAL lock is released (db.rs invariant 6): a checkpoint's cut must
            // never see the group's record in the WAL without its sequence numbers.
            inner
                .last_allocated_seqno
                .store(first_seqno + count - 1, Ordering::Release);
        }
        // The state lock comes before the WAL lock.
        let number = wal.number;
        drop(guard);
        if let Err(error) = result {
            // The group gets the pause (write_queue invariant 3: nothing of it is inserted).
            let mut state = inner.lock_state();
            return Err(crate::wal_recovery::wal_failed(
                inner,
                &mut state,
                format!(
                    "writing the WAL failed (WAL {}): {error}",
                    log_file_name(number)
                ),
            ));
        }
        inner.test_hooks.after_wal_record();
    }
    Ok(GroupPlan {
        first_seqno,
        context: memtables,
    })
}

/// A `Sync` write's log must survive a power cut by name too (`WalState::name_durable`);
/// the write already waits for the device, so this syncs under the WAL lock.
fn sync_wal_name_locked(inner: &DbInner, wal: &mut WalState) -> Result<()> {
    if !wal.name_durable {
        inner.fs.sync_dir(&inner.dir)?;
        wal.name_durable = true;
    }
    Ok(())
}

/// A group record buffer grown past this is dropped after the write rather than kept.
const KEEP_RECORD_BYTES: usize = 1 << 20;

/// Sync is the strongest durability; the group is written with its strongest member's.
fn strength_rank(durability: Durability) -> u8 {
    match durability {
        Durability::Sync => 0,
        Durability::Flush => 1,
        Durability::Buffered => 2,
    }
}

fn insert_batch(batch: &WriteBatch, first_seqno: SeqNo, context: &GroupContext) {
    for (index, entry) in batch.iter().enumerate() {
        // A keyspace dropped since validation has no memtable here: its data is discarded.
        if let Some(mem) = context.memtables.get(&entry.keyspace) {
            let kind = entry.kind;
            debug_assert!(matches!(
                kind,
                ValueKind::Value | ValueKind::Deletion | ValueKind::RangeDeletion
            ));
            mem.add(first_seqno + index as u64, kind, entry.key, entry.value);
        }
    }
}

/// How long a write group sleeps when L0 reaches its slowdown trigger.
const SLOWDOWN_DELAY: Duration = Duration::from_millis(1);

fn micros_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Whether `value` reached `limit` (0: no limit).
fn reached(limit: u64, value: u64) -> bool {
    limit > 0 && value >= limit
}

/// Delays the group while some keyspace's compaction backlog is at a slowdown trigger (L0
/// files, estimated pending bytes), and waits for compactions while one is at a stop trigger.
/// Each stall is counted under its reason. Returns the state lock, held again after a delay,
/// so the caller's memtable check needs no second acquisition.
fn stall_for_compaction(inner: &Arc<DbInner>) -> Result<MutexGuard<'_, DbState>> {
    let counters = &inner.stats;
    let mut state = inner.lock_state();
    let mut stopped: Option<Instant> = None;
    loop {
        let version = state.versions.current();
        let stop = state.keyspaces.values().find_map(|k| {
            if version.num_files(k.id, 0) >= k.options.level0_stop_writes_trigger {
                Some((
                    &counters.stall_level0_stops,
                    "L0 files reached level0_stop_writes_trigger",
                    k.id,
                ))
            } else if reached(
                k.options.hard_pending_compaction_bytes_limit,
                k.pending_compaction_bytes,
            ) {
                Some((
                    &counters.stall_pending_bytes_stops,
                    "pending compaction bytes reached hard_pending_compaction_bytes_limit",
                    k.id,
                ))
            } else {
                None
            }
        });
        if let Some((counter, cause, keyspace)) = stop {
            // A compaction a damaged table blocks never ends the stop: fail, do not wait.
            let now = inner.options.clock.now_seconds();
            if let Some(error) = crate::compaction::blocked_write_error(&state, keyspace, now) {
                return Err(error);
            }
            // Nor does one that keeps failing to read its inputs: pause rather than wait.
            if let Some(error) = state.compaction_reads.failing() {
                return Err(Error::Paused {
                    reason: format!(
                        "writes stopped ({cause}) while compactions fail reading their inputs \
                         and wait to be retried: {error}"
                    ),
                });
            }
            if stopped.is_none() {
                StatCounters::add(counter, 1);
                stopped = Some(Instant::now());
                inner
                    .info_log
                    .log(format_args!("write stall: writes stopped ({cause})"));
            }
            inner.check_background_error()?;
            inner.check_open()?;
            state = inner.wait_state(state);
            continue;
        }
        let slow = state.keyspaces.values().find_map(|k| {
            if version.num_files(k.id, 0) >= k.options.level0_slowdown_writes_trigger {
                Some((
                    &counters.stall_level0_slowdowns,
                    "L0 files reached level0_slowdown_writes_trigger",
                ))
            } else if reached(
                k.options.soft_pending_compaction_bytes_limit,
                k.pending_compaction_bytes,
            ) {
                Some((
                    &counters.stall_pending_bytes_slowdowns,
                    "pending compaction bytes reached soft_pending_compaction_bytes_limit",
                ))
            } else {
                None
            }
        });
        if let Some(start) = stopped {
            let micros = micros_since(start);
            counters.record_stop(micros);
            inner.info_log.log(format_args!(
                "write stall: writes resumed after {micros} us"
            ));
        } else if let Some((counter, cause)) = slow {
            drop(state);
            // Counted per group: logged at the first and every 1000th.
            let before = counter.fetch_add(1, Ordering::Relaxed);
            if before % 1000 == 0 {
                inner.info_log.log(format_args!(
                    "write stall: writes slowed down ({cause}), {} times so far",
                    before + 1
                ));
            }
            let start = Instant::now();
            std::thread::sleep(SLOWDOWN_DELAY);
            StatCounters::add(&counters.stall_micros, micros_since(start));
            state = inner.lock_state();
        }
        return Ok(state);
    }
}

/// Freezes full memtables (waiting if too many are frozen) and returns the active memtables.
fn make_room(inner: &Arc<DbInner>, force_flush: bool) -> Result<Arc<GroupContext>> {
    let mut state = if force_flush {
        inner.lock_state()
    } else {
        stall_for_compaction(inner)?
    };
    let mut stopped: Option<Instant> = None;
    loop {
        let full: Vec<u32> = state
            .keyspaces
            .values()
            .filter(|k| {
                (force_flush && !k.mem.is_empty())
                    || k.mem.memory_usage_reaches(k.options.write_buffer_size)
            })
            .map(|k| k.id)
            .collect();
        if full.is_empty() {
            request_presync(inner, &mut state);
            break;
        }
        let stalled = full.iter().any(|id| {
            state
                .keyspaces
                .get(id)
                .is_some_and(|k| k.imm.len() + 1 >= k.options.max_write_buffer_number)
        });
        if stalled && !force_flush {
            // Write stall: too many frozen memtables; wait for a flush to finish.
            if stopped.is_none() {
                StatCounters::add(&inner.stats.stall_memtable_stops, 1);
                stopped = Some(Instant::now());
                inner.info_log.log(
                    "write stall: writes stopped (max_write_buffer_number memtables are full, \
                     waiting for a flush)",
                );
            }
            inner.check_background_error()?;
            inner.check_open()?;
            state = inner.wait_state(state);
            continue;
        }
        switch_memtables(inner, &mut state, &full)?;
        inner.state_changed.notify_all();
        break;
    }
    if let Some(start) = stopped {
        inner.stats.record_stop(micros_since(start));
    }
    Ok(group_context_locked(&mut state))
}

/// The active memtables as a group's context: the one the last group used while no memtable
/// was switched and no keyspace added or dropped since, so a write does not rebuild it.
fn group_context_locked(state: &mut DbState) -> Arc<GroupContext> {
    let current = state.group_context.as_ref().filter(|context| {
        context.memtables.len() == state.keyspaces.len()
            && context
                .memtables
                .iter()
                .zip(&state.keyspaces)
                .all(|((id, mem), (key, k))| id == key && Arc::ptr_eq(mem, &k.mem))
    });
    if let Some(context) = current {
        return context.clone();
    }
    let context = Arc::new(GroupContext {
        memtables: state
            .keyspaces
            .iter()
            .map(|(id, k)| (*id, k.mem.clone()))
            .collect(),
    });
    state.group_context = Some(context.clone());
    context
}

/// Wakes the WAL syncer once an active memtable is 7/8 full. Switching memtables syncs the
/// old WAL on the writer's path (docs/format/wal.md: a log is synced before the next one
/// exists); synced in the background shortly before, it leaves that sync little to write.
fn request_presync(inner: &DbInner, state: &mut DbState) {
    let nearly_full = state
        .keyspaces
        .values()
        .filter(|k| k.mem_log_number > state.presync_requested_for)
        .find(|k| {
            let size = k.options.write_buffer_size;
            k.mem.memory_usage_reaches(size - size / 8)
        })
        .map(|k| k.mem_log_number);
    if let Some(log_number) = nearly_full {
        state.presync_requested_for = log_number;
        inner.wal_sync_requested.store(true, Ordering::Release);
        inner.state_changed.notify_all();
    }
}

/// Starts a new WAL and freezes the memtables of `keyspaces`.
pub(crate) fn switch_memtables(
    inner: &DbInner,
    state: &mut DbState,
    keyspaces: &[u32],
) -> Result<()> {
    let number = state.versions.new_file_number();
    let mut wal = inner.lock_wal()?;
    // docs/format/wal.md: a WAL is synced before the next one exists (its name and file
    // header would follow a torn tail), so a torn tail can only be in the newest log. A
    // completed WAL sync promises its records survive a power cut, so the log's name goes
    // first (usually made durable already by the syncer woken at 7/8 full).
    let synced = sync_wal_name_locked(inner, &mut wal).and_then(|()| wal.writer.sync());
    if synced.is_ok() {
        // What a WAL recovery records as the log's end if creating the next one fails.
        wal.synced_groups = wal.written_groups;
        wal.synced_bytes = wal.writer.file_size();
    }
    let new_wal = synced.and_then(|()| create_wal(inner, number));
    let closed_bytes = wal.writer.file_size();
    let (closed_number, closed_groups) = (wal.number, wal.written_groups);
    let writer = match new_wal {
        Ok(writer) => writer,
        Err(error) => {
            drop(wal);
            return Err(crate::wal_recovery::wal_failed(
                inner,
                state,
                format!(
                    "switching from WAL {} to WAL {number} failed: {error}",
                    log_file_name(closed_number)
                ),
            ));
        }
    };
    *wal = WalState {
        written_end: writer.file_size(),
        writer,
        number,
        written_groups: 0,
        synced_groups: 0,
        synced_bytes: 0,
        name_durable: false,
        record: GroupRecord::new(),
    };
    drop(wal);
    StatCounters::add(&inner.stats.closed_wal_bytes, closed_bytes);
    if closed_groups > 0 {
        // docs/format/manifest.md, WAL_SYNCED: the closed log is durable whole (synced above).
        // The next MANIFEST edit records it (the flush this switch leads to, or the periodic
        // record), so the switch adds no MANIFEST write to the writer's path.
        state
            .unrecorded_closed_wals
            .push((closed_number, closed_bytes));
    }
    freeze_memtables_locked(inner, state, keyspaces, number);
    Ok(())
}

/// Freezes the memtables of `keyspaces` behind new ones that start in WAL `number`, which is
/// the WAL now. Run by the write leader (db.rs invariant 2).
pub(crate) fn freeze_memtables_locked(
    inner: &DbInner,
    state: &mut DbState,
    keyspaces: &[u32],
    number: u64,
) {
    // Frozen memtables are no longer the group's: do not keep them alive for the flush.
    state.group_context = None;
    let version = state.versions.current();
    for id in keyspaces {
        let Some((write_buffer_size, bloom_bytes)) = state.keyspaces.get(id).map(|k| {
            (
                k.options.write_buffer_size,
                k.options.memtable_bloom_bytes(),
            )
        }) else {
            continue;
        };
        let new_mem = Arc::new(MemTable::for_write_buffer(
            inner.options.comparator.clone(),
            state.versions.new_file_number(),
            write_buffer_size,
            bloom_bytes,
        ));
        if let Some(keyspace) = state.keyspaces.get_mut(id) {
            let old = std::mem::replace(&mut keyspace.mem, new_mem);
            let log_number = std::mem::replace(&mut keyspace.mem_log_number, number);
            keyspace.imm.push_back(FrozenMemTable {
                mem: old,
                log_number,
            });
            keyspace.install_super_version(version.clone());
        }
    }
    // An empty active memtable needs no older WAL (no insert is in flight: invariant 2).
    // Without this, a keyspace nobody writes kept every WAL from its creation on.
    for keyspace in state.keyspaces.values_mut() {
        if keyspace.mem.is_empty() {
            keyspace.mem_log_number = number;
        }
    }
}

/// Adds to `edit` the synced sizes of the WALs closed since the last edit, and the live WAL's
/// when it grew past what the MANIFEST records (docs/format/manifest.md, `WAL_SYNCED`), so
/// every MANIFEST edit carries them for free. Called with the state lock held (the WAL lock
/// comes after it).
pub(crate) fn live_wal_synced_locked(inner: &DbInner, state: &mut DbState, edit: &mut VersionEdit) {
    let version = state.versions.current();
    // A closed WAL's size stays listed until the Version records it (or no longer needs the
    // WAL): an edit that failed (a MANIFEST pause) did not record it, and the next one must.
    let oldest = crate::recovery::oldest_needed_wal(&version);
    state.unrecorded_closed_wals.retain(|&(number, size)| {
        number >= oldest && version.wal_synced(number).unwrap_or(0) < size
    });
    for &(number, size) in &state.unrecorded_closed_wals {
        edit.set_wal_synced(number, size);
    }
    let Ok(wal) = inner.lock_wal() else {
        return; // read-only: there is no WAL
    };
    let (number, synced) = (wal.number, wal.synced_bytes);
    drop(wal);
    let recorded = version.wal_synced(number).unwrap_or(0);
    // A replayed log has an exact recorded end instead; the live log never has one.
    if synced > recorded && version.wal_end(number).is_none() {
        edit.set_wal_synced(number, synced);
    }
}

/// Writes a MANIFEST edit holding the live WAL's synced size, if it grew since the last one
/// (the background's periodic record, and a clean close). The edit carries the counters every
/// edit does and nothing else.
pub(crate) fn record_live_wal_synced(inner: &DbInner) -> Result<()> {
    let mut state = inner.lock_state();
    if inner.check_background_error().is_err() {
        return Ok(());
    }
    let mut edit = VersionEdit::new();
    live_wal_synced_locked(inner, &mut state, &mut edit);
    if edit.wal_synced.is_empty() {
        return Ok(());
    }
    let allocated = inner.last_allocated_seqno.load(Ordering::Acquire);
    let last = allocated.max(state.versions.last_sequence());
    state.versions.set_last_sequence(last);
    if let Err(error) = state.versions.log_and_apply(edit) {
        let error = crate::manifest_recovery::edit_failed(
            inner,
            &state,
            format!("recording the synced size of the WAL failed: {error}"),
            error,
        );
        return Err(error);
    }
    Ok(())
}

/// Creates WAL file `number`. Its name is not durable yet (`WalState::name_durable`).
pub(crate) fn create_wal(inner: &DbInner, number: u64) -> Result<LogWriter> {
    let path = inner.dir.join(log_file_name(number));
    let file = inner.fs.create(&path)?;
    LogWriter::new(file, number)
}

/// Makes the current WAL's directory entry durable if it is not yet. Called before a MANIFEST
/// edit that names the log (recovery refuses a MANIFEST whose needed WAL is missing) and by
/// the WAL syncs. The directory sync runs without the WAL lock. The caller makes a failure
/// the sticky background error (it may hold the state lock).
pub(crate) fn make_wal_name_durable(inner: &DbInner) -> Result<()> {
    let number = match inner.lock_wal() {
        Ok(wal) if !wal.name_durable => wal.number,
        _ => return Ok(()), // durable already, or read-only (no WAL)
    };
    inner.fs.sync_dir(&inner.dir)?;
    if let Ok(mut wal) = inner.lock_wal() {
        // A directory sync covers every entry: a newer log's too, had one been created since
        // (it would have been created after this one, so after the sync started: not marked).
        if wal.number == number {
            wal.name_durable = true;
        }
    }
    Ok(())
}
