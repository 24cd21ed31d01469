//! Automatic recalculation of index statistics, as `InnoDB`'s `innodb_stats_auto_recalc`:
//! when more than a tenth of a table's rows changed since its indexes were last estimated
//! (cardinality.rs), a background thread estimates them again and stores them, as ANALYZE
//! TABLE does (docs/operations.md, "Index statistics").
//!
//! Counting: a [`TableTxn`](crate::TableTxn) counts the rows it inserts, updates and
//! deletes per table in a list of its own and adds them here when it commits (a rolled-back
//! change counts nothing); a bulk load adds its rows when it finishes. Adding takes one lock
//! of a shard chosen by table id, once per table per commit, so sessions writing other
//! tables share no lock and no counter.
//!
//! Rules:
//! 1. A table is queued when its changed rows exceed `rows / 10`, `rows` being the table's
//!    estimated rows when its figures were made (`InnoDB`'s test). A table whose figures were
//!    not looked at since open is queued at its first change: the thread reads the stored
//!    figures' rows and estimates only if the changes already pass a tenth of them; a table
//!    never estimated is estimated.
//! 2. A table is estimated automatically at most once per [`MIN_INTERVAL`] (`InnoDB`'s 10
//!    seconds), so a small table written without pause costs one estimate per interval.
//! 3. An estimate (every index of the table, primary first, as ANALYZE TABLE) subtracts only
//!    the changes counted before it began; those counted meanwhile stay for the next. ANALYZE
//!    TABLE's estimate counts the same way ([`Store::analyze_index`] of the primary key).
//! 4. A table is in the queue at most once (its entry's `queued`); an entry whose table is no
//!    longer in the catalog (dropped, or rewritten under new ids) is forgotten when the
//!    thread meets it.
//! 5. Switched off ([`Store::set_stats_auto_recalc`]), changes are still counted and nothing
//!    is queued; switched on again, the next change of a table past its threshold queues it.
//! 6. The thread holds the store only while it estimates; [`Store::close`] and dropping the
//!    handle [`Store::open`] returned both stop and join it, so the engine is closed (its
//!    LOCK released) when they return, not later when an estimate ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::cursor::IndexChoice;
use crate::error::{Error, Result};
use crate::index::table_id;
use crate::schema::TableDef;
use crate::store::{Store, StoreInner};

/// The shortest time between two automatic estimates of one table (rule 2).
pub(crate) const MIN_INTERVAL: Duration = Duration::from_secs(10);

/// Shards of the change counters (a power of two).
const SHARDS: usize = 16;

/// What is counted of one table.
#[derive(Debug, Default)]
struct TableChanges {
    /// Rows inserted, updated or deleted since the last estimate.
    changed: u64,
    /// Changes past this queue the table (`rows / 10` of its figures); `None` until known
    /// (rule 1).
    threshold: Option<u64>,
    /// Waiting in the queue (rule 4).
    queued: bool,
    /// When the thread last estimated it (rule 2).
    last_estimate: Option<Instant>,
}

/// What the thread waits on.
#[derive(Debug, Default)]
struct Queue {
    /// Tables to look at, each no earlier than its instant.
    due: Vec<(Instant, u32)>,
    stop: bool,
}

/// Shared by the store and the thread.
#[derive(Debug)]
struct Shared {
    shards: Vec<Mutex<HashMap<u32, TableChanges>>>,
    enabled: AtomicBool,
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// The store's side: counters, the queue and the thread.
#[derive(Debug)]
pub(crate) struct AutoRecalc {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    fn shard(&self, table: u32) -> MutexGuard<'_, HashMap<u32, TableChanges>> {
        self.shards[table as usize % SHARDS]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `table` if it is due and not queued (rules 1, 2, 4, 5); called under its shard.
    fn queue_if_due(&self, table: u32, changes: &mut TableChanges) {
        let due = changes.threshold.is_none_or(|t| changes.changed > t);
        if changes.queued || !due || !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        changes.queued = true;
        let at = changes
            .last_estimate
            .map_or_else(Instant::now, |last| last + MIN_INTERVAL);
        self.lock_queue().due.push((at, table));
        self.wake.notify_one();
    }

    /// The next table whose time has come, waiting for it; `None` once stopped.
    fn next(&self) -> Option<u32> {
        let mut queue = self.lock_queue();
        loop {
            if queue.stop {
                return None;
            }
            let now = Instant::now();
            let first = queue
                .due
                .iter()
                .enumerate()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(i, (at, _))| (i, *at));
            queue = match first {
                Some((i, at)) if at <= now => return Some(queue.due.swap_remove(i).1),
                Some((_, at)) => {
                    self.wake
                        .wait_timeout(queue, at - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .wake
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

impl AutoRecalc {
    /// Starts the thread over `store` (held weakly: rule 6).
    pub(crate) fn start(store: &Arc<StoreInner>) -> Result<()> {
        let shared = Arc::clone(&store.auto_recalc.shared);
        let weak = Arc::downgrade(store);
        let thread = std::thread::Builder::new()
            .name("shale-stats-recalc".to_owned())
            .spawn(move || run(&shared, &weak))
            .map_err(|e| {
                Error::InvalidArgument(format!("cannot start the statistics thread: {e}"))
            })?;
        *store
            .auto_recalc
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(thread);
        Ok(())
    }

    /// Adds `rows` changed rows of table `table` (rule 1).
    pub(crate) fn note_changes(&self, table: u32, rows: u64) {
        if rows == 0 {
            return;
        }
        let mut shard = self.shared.shard(table);
        let changes = shard.entry(table).or_default();
        changes.changed = changes.changed.saturating_add(rows);
        self.shared.queue_if_due(table, changes);
    }

    /// The changes counted of `table` so far (an estimate about to begin: rule 3).
    pub(crate) fn changed(&self, table: u32) -> u64 {
        self.shared
            .shard(table)
            .get(&table)
            .map_or(0, |c| c.changed)
    }

    /// `table` was estimated with `rows` rows after `counted` changes were counted (rule 3).
    pub(crate) fn estimated(&self, table: u32, rows: u64, counted: u64, automatic: bool) {
        let mut shard = self.shared.shard(table);
        let changes = shard.entry(table).or_default();
        changes.changed = changes.changed.saturating_sub(counted);
        changes.threshold = Some(rows / 10);
        if automatic {
            changes.last_estimate = Some(Instant::now());
        }
    }

    /// Forgets what was counted of `table` (TRUNCATE emptied it and forgot its figures): its
    /// next change queues it (rule 1).
    pub(crate) fn forget(&self, table: u32) {
        if let Some(changes) = self.shared.shard(table).get_mut(&table) {
            changes.changed = 0;
            changes.threshold = None;
        }
    }

    /// Stops the thread and waits for it (rule 6).
    pub(crate) fn stop(&self) {
        self.shared.lock_queue().stop = true;
        self.shared.wake.notify_all();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            // Joining itself would never end: the thread drops the store when it held the
            // last reference.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

impl Default for AutoRecalc {
    fn default() -> Self {
        AutoRecalc {
            shared: Arc::new(Shared {
                shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
                enabled: AtomicBool::new(true),
                queue: Mutex::default(),
                wake: Condvar::new(),
            }),
            thread: Mutex::new(None),
        }
    }
}

impl Drop for AutoRecalc {
    fn drop(&mut self) {
        self.shared.lock_queue().stop = true;
        self.shared.wake.notify_all();
    }
}

/// The thread: looks at each due table while the store lives.
fn run(recalc: &Shared, store: &Weak<StoreInner>) {
    while let Some(table) = recalc.next() {
        let Some(inner) = store.upgrade() else {
            return;
        };
        let store = Store::from_inner(inner);
        // A failed estimate (a paused engine) is tried again at the table's next change.
        let _ = recalculate(recalc, &store, table);
        if let Some(changes) = recalc.shard(table).get_mut(&table) {
            changes.queued = false;
        }
    }
}

/// Looks at `table` (rules 1, 3 and 4).
fn recalculate(recalc: &Shared, store: &Store, table: u32) -> Result<()> {
    let catalog = store.catalog();
    let def = catalog
        .databases
        .values()
        .flat_map(|tables| tables.values())
        .find(|def| table_id(def) == table);
    let Some(def) = def else {
        recalc.shard(table).remove(&table);
        return Ok(());
    };
    let threshold = recalc.shard(table).get(&table).and_then(|c| c.threshold);
    if threshold.is_none() {
        if let Some((_, rows)) = store.known_index_cardinality(def, IndexChoice::Primary)? {
            let mut counts = recalc.shard(table);
            let changes = counts.entry(table).or_default();
            changes.threshold = Some(rows / 10);
            if changes.changed <= rows / 10 {
                return Ok(());
            }
        }
    }
    store.estimate_table(def, true)
}

impl Store {
    /// Estimates every index of `table` again and stores the figures (rule 3); `automatic`
    /// when the thread does it (rule 2).
    pub(crate) fn estimate_table(&self, table: &TableDef, automatic: bool) -> Result<()> {
        let id = table_id(table);
        let counted = self.inner.auto_recalc.changed(id);
        let rows = self.table_stats(table)?.rows;
        self.refresh_index_cardinality(table, IndexChoice::Primary, rows)?;
        for index in 0..table.indexes.len() {
            self.refresh_index_cardinality(table, IndexChoice::Secondary(index), rows)?;
        }
        self.inner
            .auto_recalc
            .estimated(id, rows, counted, automatic);
        Ok(())
    }

    /// Switches automatic recalculation on or off (`shale_stats_auto_recalc`, rule 5).
    pub fn set_stats_auto_recalc(&self, on: bool) {
        self.inner
            .auto_recalc
            .shared
            .enabled
            .store(on, Ordering::Relaxed);
    }

    /// Whether automatic recalculation is on.
    pub fn stats_auto_recalc(&self) -> bool {
        self.inner
            .auto_recalc
            .shared
            .enabled
            .load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables waiting in the queue, and when each is due.
    fn queued(recalc: &AutoRecalc) -> Vec<(Instant, u32)> {
        recalc.shared.lock_queue().due.clone()
    }

    /// What the thread does once it looked at `table`.
    fn looked_at(recalc: &AutoRecalc, table: u32) {
        recalc.shared.lock_queue().due.clear();
        if let Some(changes) = recalc.shared.shard(table).get_mut(&table) {
            changes.queued = false;
        }
    }

    #[test]
    fn a_table_is_queued_once_more_than_a_tenth_of_its_rows_changed() {
        let recalc = AutoRecalc::default();
        // Rule 1: figures not looked at yet, so the first change queues it.
        recalc.note_changes(7, 1);
        assert_eq!(queued(&recalc).len(), 1);
        looked_at(&recalc, 7);
        recalc.estimated(7, 100, recalc.changed(7), false);
        recalc.note_changes(7, 10);
        assert!(
            queued(&recalc).is_empty(),
            "10 of 100 rows is not more than a tenth"
        );
        recalc.note_changes(7, 1);
        assert_eq!(queued(&recalc).iter().map(|q| q.1).collect::<Vec<_>>(), [7]);
        // Rule 4: queued once however many changes follow.
        recalc.note_changes(7, 50);
        assert_eq!(queued(&recalc).len(), 1);
        // Another table has its own count.
        recalc.note_changes(8 + SHARDS as u32, 1);
        assert_eq!(queued(&recalc).len(), 2);
    }

    #[test]
    fn changes_counted_during_an_estimate_stay_for_the_next() {
        let recalc = AutoRecalc::default();
        recalc.note_changes(3, 40);
        let counted = recalc.changed(3);
        recalc.note_changes(3, 5);
        looked_at(&recalc, 3);
        recalc.estimated(3, 100, counted, false);
        assert_eq!(recalc.changed(3), 5);
        recalc.forget(3);
        assert_eq!(recalc.changed(3), 0);
    }

    #[test]
    fn switched_off_changes_are_counted_and_nothing_is_queued() {
        let recalc = AutoRecalc::default();
        recalc.shared.enabled.store(false, Ordering::Relaxed);
        recalc.note_changes(5, 1000);
        assert!(queued(&recalc).is_empty());
        assert_eq!(recalc.changed(5), 1000);
        recalc.shared.enabled.store(true, Ordering::Relaxed);
        recalc.note_changes(5, 1);
        assert_eq!(queued(&recalc).len(), 1);
    }

    #[test]
    fn an_automatic_estimate_is_not_repeated_within_the_interval() {
        let recalc = AutoRecalc::default();
        recalc.estimated(9, 10, 0, true);
        let after_estimate = Instant::now();
        recalc.note_changes(9, 5);
        let due = queued(&recalc);
        assert_eq!(due.len(), 1);
        assert!(due[0].0 <= after_estimate + MIN_INTERVAL);
        assert!(due[0].0 + Duration::from_secs(1) > after_estimate + MIN_INTERVAL);
        // ANALYZE TABLE's estimate does not delay the next automatic one.
        looked_at(&recalc, 9);
        recalc.estimated(10, 10, 0, false);
        recalc.note_changes(10, 5);
        assert!(queued(&recalc)[0].0 <= Instant::now());
    }
}
