//! Online CREATE INDEX: the index is filled while other transactions go on writing the table.
//!
//! The build runs in four steps (`Store::create_index`):
//! 1. The new index is registered here as *building*. From then on every write of a row of
//!    the table also writes (or deletes) the row's entry in it, even when the writer's
//!    statement was bound to a definition without the index ([`TableTxn`]'s write paths ask
//!    [`OnlineIndexes::added_for`]).
//! 2. The build waits until every write transaction that wrote the table before step 1 has
//!    ended ([`OnlineIndexes::wait_for_older_writers`]): those may have written rows without
//!    entries that are not committed yet, so no snapshot could show them. Transactions that
//!    wrote only other tables are not waited for.
//! 3. It reads the table's primary keys from a snapshot taken after the wait and, in small
//!    READ COMMITTED transactions, locks each row, reads its newest committed image and writes
//!    its entry ([`fill`]). Holding the row's lock while computing the entry serializes the
//!    build with the row's writers (they lock the primary key too), so an entry never
//!    describes an image that was already replaced.
//! 4. It writes the definition (synced) and marks the index *published*. It stays registered
//!    for the life of the process, so a statement bound to the old definition still maintains
//!    it; a new definition lists it and the registration is skipped.
//!
//! Unique indexes: while building, the index may lack entries of rows not filled yet, so a
//! writer cannot tell a duplicate from an entry it owns by the key alone. Entries are compared
//! by value (the primary key they point at): a writer deletes a unique entry only if it points
//! at its own row, and a writer that meets another row's entry for its key marks the build
//! failed (the statement goes on, as `InnoDB`'s online ALTER lets it) so CREATE INDEX fails
//! with the duplicate. The build itself fails on the same finding.
//!
//! Invariants:
//! 1. Every write transaction registers before its first write and stays registered until it
//!    committed or rolled back ([`WriterSlot`]); before its first write to a table it records
//!    the table with the epoch current then ([`WriterSlot::writes`]), under its own lock, which
//!    the wait's scan takes too: a table recorded after the scan saw the writer was recorded
//!    in the epoch after the flip.
//! 2. An index is registered before the epoch flips, so every transaction that records the
//!    table after the flip maintains it.
//! 3. An entry of a building index describes its row's newest committed image or the image its
//!    lock holder is writing: it is written only under the row's lock.
//! 4. A failed build's index id is never published; entries a writer adds after the failure
//!    are keys under an id no definition names, invisible, and swept at the next open
//!    (build.rs, invariant 2).
//! 5. A unique entry of a building or added index is read locked at its newest committed
//!    version (`get_for_update_latest`), by the fill and by writers alike: the fill writes
//!    entries after a REPEATABLE READ writer's snapshot, and that must not make the writer's
//!    change of its own row's entry a snapshot conflict (1213).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::schema::{IndexDef, TableDef};

/// Where an added index is in its life.
const BUILDING: u8 = 0;
const PUBLISHED: u8 = 1;
const FAILED: u8 = 2;

/// An index added by CREATE INDEX since the store opened.
#[derive(Debug)]
pub(crate) struct AddedIndex {
    /// The table as it is with the index (the index at `position` of `indexes`).
    pub(crate) def: Arc<TableDef>,
    pub(crate) position: usize,
    state: AtomicU8,
    /// Why the build failed, if a writer found the reason.
    failure: Mutex<Option<Error>>,
}

impl AddedIndex {
    pub(crate) fn index(&self) -> &IndexDef {
        &self.def.indexes[self.position]
    }

    pub(crate) fn is_published(&self) -> bool {
        self.state.load(Ordering::Acquire) == PUBLISHED
    }

    fn is_failed(&self) -> bool {
        self.state.load(Ordering::Acquire) == FAILED
    }

    /// Marks the build failed (a writer found `error`); a published index is never failed.
    pub(crate) fn fail(&self, error: Error) {
        if self
            .state
            .compare_exchange(BUILDING, FAILED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
        }
    }

    /// Marks a filled index published (step 4), unless a writer failed the build meanwhile.
    pub(crate) fn publish(&self) -> Result<()> {
        match self
            .state
            .compare_exchange(BUILDING, PUBLISHED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            Err(_) => self.check(),
        }
    }

    /// Marks the index failed whatever its state: its definition will not be written.
    pub(crate) fn abandon(&self) {
        self.state.store(FAILED, Ordering::Release);
    }

    /// The failure a writer recorded, taken (once).
    fn take_failure(&self) -> Option<Error> {
        if !self.is_failed() {
            return None;
        }
        Some(
            self.failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .unwrap_or_else(|| Error::InvalidArgument("the index build failed".into())),
        )
    }

    /// Fails with the reason a writer recorded, if any.
    pub(crate) fn check(&self) -> Result<()> {
        match self.take_failure() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// Shards of the live writers' registry (a write transaction's begin and end lock one).
const WRITER_SHARDS: usize = 16;

/// The registry of added indexes and the writer epochs a build waits on.
#[derive(Debug, Default)]
pub(crate) struct OnlineIndexes {
    epoch: AtomicU64,
    next_writer: AtomicU64,
    /// The live write transactions, by their number, sharded by it.
    writers: [Mutex<HashMap<u64, Arc<WrittenTables>>>; WRITER_SHARDS],
    /// Whether `added` holds anything: the writers' fast path reads only this.
    any: AtomicBool,
    /// Table id -> its added indexes.
    added: RwLock<HashMap<u32, Arc<[Arc<AddedIndex>]>>>,
}

/// The tables a write transaction wrote, each with the epoch of its first write there.
#[derive(Debug, Default)]
struct WrittenTables {
    tables: Mutex<Vec<(u32, u64)>>,
    ended: AtomicBool,
}

impl WrittenTables {
    /// Whether the transaction wrote one of `tables` in an epoch before `epoch`.
    fn wrote_before(&self, tables: &[u32], epoch: u64) -> bool {
        self.tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|(t, e)| *e < epoch && tables.contains(t))
    }
}

/// A write transaction's registration (invariant 1); dropping it ends the registration.
#[derive(Debug)]
pub(crate) struct WriterSlot {
    online: Arc<OnlineIndexes>,
    number: u64,
    written: Arc<WrittenTables>,
}

impl WriterSlot {
    /// Records that the transaction writes table `table_id` (before it does) and returns the
    /// epoch of its first write there (invariant 1; fence.rs, invariant 1).
    pub(crate) fn writes(&self, table_id: u32) -> u64 {
        let mut tables = self
            .written
            .tables
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(&(_, epoch)) = tables.iter().find(|(t, _)| *t == table_id) {
            return epoch;
        }
        let epoch = self.online.epoch.load(Ordering::SeqCst);
        tables.push((table_id, epoch));
        epoch
    }
}

impl Drop for WriterSlot {
    fn drop(&mut self) {
        self.written.ended.store(true, Ordering::SeqCst);
        self.online.shard(self.number).remove(&self.number);
    }
}

impl OnlineIndexes {
    fn shard(&self, number: u64) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<WrittenTables>>> {
        self.writers[(number % WRITER_SHARDS as u64) as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a write transaction.
    pub(crate) fn register_writer(self: &Arc<Self>) -> WriterSlot {
        let number = self.next_writer.fetch_add(1, Ordering::Relaxed);
        let written = Arc::new(WrittenTables::default());
        self.shard(number).insert(number, written.clone());
        WriterSlot {
            online: Arc::clone(self),
            number,
            written,
        }
    }

    /// The epoch writers record tables in now;
    /// [`wait_for_older_writers`](Self::wait_for_older_writers) moves it one on.
    pub(crate) fn current_epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Starts a new epoch and waits until every write transaction that wrote one of `tables`
    /// before it has ended (invariant 2's other half); transactions that wrote only other
    /// tables are not waited for. Callers hold the DDL lock, so flips never overlap.
    pub(crate) fn wait_for_older_writers(&self, tables: &[u32], timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let epoch = self.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        let mut older: Vec<Arc<WrittenTables>> = Vec::new();
        for shard in &self.writers {
            let shard = shard.lock().unwrap_or_else(PoisonError::into_inner);
            older.extend(
                shard
                    .values()
                    .filter(|w| w.wrote_before(tables, epoch))
                    .cloned(),
            );
        }
        let mut pause = Duration::from_micros(100);
        for writer in older {
            while !writer.ended.load(Ordering::SeqCst) {
                if Instant::now() >= deadline {
                    return Err(Error::LockWaitTimeout);
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// Registers `index` of `def` as building (step 1).
    pub(crate) fn register(&self, def: Arc<TableDef>, position: usize) -> Arc<AddedIndex> {
        let added = Arc::new(AddedIndex {
            def,
            position,
            state: AtomicU8::new(BUILDING),
            failure: Mutex::new(None),
        });
        let table_id = added.def.primary_key.index_id;
        let mut map = self.added.write().unwrap_or_else(PoisonError::into_inner);
        let mut list: Vec<_> = map.get(&table_id).map(|l| l.to_vec()).unwrap_or_default();
        list.push(added.clone());
        map.insert(table_id, list.into());
        self.any.store(true, Ordering::SeqCst);
        added
    }

    /// Forgets the added indexes of table `table_id` that `keep` rejects (a failed build, a
    /// dropped index or table).
    pub(crate) fn forget(&self, table_id: u32, keep: impl Fn(&AddedIndex) -> bool) {
        let mut map = self.added.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(list) = map.get(&table_id) {
            let kept: Vec<_> = list.iter().filter(|a| keep(a)).cloned().collect();
            if kept.is_empty() {
                map.remove(&table_id);
            } else {
                map.insert(table_id, kept.into());
            }
        }
        self.any.store(!map.is_empty(), Ordering::SeqCst);
    }

    /// The added indexes a writer of `table` must maintain besides `table.indexes`: those not
    /// in its definition, not failed, and made for the same columns (a definition of another
    /// schema version cannot place this index's columns).
    pub(crate) fn added_for(&self, table: &TableDef) -> Option<Vec<Arc<AddedIndex>>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let list = self
            .added
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&table.primary_key.index_id)?
            .clone();
        let wanted: Vec<_> = list
            .iter()
            .filter(|a| {
                !a.is_failed()
                    && a.def.schema_version == table.schema_version
                    && a.def.columns.len() == table.columns.len()
                    && !table
                        .indexes
                        .iter()
                        .any(|i| i.index_id == a.index().index_id)
            })
            .cloned()
            .collect();
        (!wanted.is_empty()).then_some(wanted)
    }
}
