//! Keeping writers off a table while ALTER TABLE rewrites it, DROP TABLE or TRUNCATE TABLE
//! empties it, and off its old definition after.
//!
//! A rewriting ALTER (alter.rs) copies every row from one snapshot into new index ids, then
//! switches the definition and range-deletes the old ids. A write under the old ids after the
//! snapshot would be lost, so:
//! 1. The ALTER raises a fence on the table, then waits for every write transaction that
//!    wrote the table before it (online.rs's epochs; transactions that wrote only other
//!    tables are not waited for). Those may write the table until they end: their rows are
//!    committed, or rolled back, before the snapshot is taken.
//! 2. A write transaction whose first write to the table comes after the fence waits until the
//!    fence comes down (up to the DDL wait timeout, `MySQL`'s `lock_wait_timeout`), as a DML
//!    statement waits for a metadata lock in `MySQL`.
//! 3. Just before the switch is written the fence is marked *switching*: from then on a read
//!    bound to the old definition may see the old ids already range-deleted, so it fails.
//! 4. Once the new catalog is installed the old table id is *retired*: every later write or
//!    read bound to a definition with that id fails with [`Error::TableDefChanged`] (`MySQL`'s
//!    1412, "Table definition has changed, please retry transaction"), and binding the
//!    statement again reaches the new definition. When the ALTER fails the fence comes down
//!    and writers go on under the unchanged definition.
//! 5. DROP TABLE, DROP DATABASE and TRUNCATE TABLE (store.rs) take the same fence, so their
//!    range tombstones are written only after every older writer ended (a write committed
//!    after them would bring rows back, without their index entries or under a dropped id).
//!    A dropped id is marked *dropped*: later writes and reads bound to it fail with
//!    [`Error::NoSuchTable`] (1146). TRUNCATE keeps its ids, so its fence just comes down and
//!    waiting writers go on into the empty table.
//!
//! Invariants:
//! 1. A fence is raised before the writer epoch flips, with the epoch after the flip. A
//!    writer's epoch for a table is the one it first wrote the table in (online.rs,
//!    invariant 1): one at least the fence's came after the fence was visible, and one with
//!    an older epoch is waited for by the ALTER, so it may write.
//! 2. A read checks the fence *after* it has read (its snapshot is taken by then): if the
//!    table was neither switching nor retired at the check, the switch was not yet written
//!    when the snapshot was taken, so the read saw the old ids whole.
//! 3. Table ids are never reused (build.rs), so a retired id stays retired for the life of the
//!    store.
//! 4. A rewritten table's new id is *born* at a sequence number at or after the switch's
//!    write: a read from a snapshot older than that (a REPEATABLE READ transaction that began
//!    before the switch) would miss rows copied after the snapshot, so it fails with
//!    [`Error::TableDefChanged`], as `InnoDB`'s consistent read of a rebuilt table does. (A
//!    snapshot taken just after the switch but before the birth was recorded fails too: a
//!    retry, never a wrong answer.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
enum TableState {
    /// Being rewritten, dropped or truncated: writers registered in `epoch` or later wait;
    /// once `switching`, reads fail.
    Rewriting { epoch: u64, switching: bool },
    /// Replaced by a rewrite under new ids.
    Retired,
    /// Dropped (with its database, for the message).
    Dropped { database: String, table: String },
}

/// The fenced and retired tables of a store, by table id.
#[derive(Debug, Default)]
pub(crate) struct TableFences {
    /// Whether `states` holds anything: the writers' fast path reads only this.
    any: AtomicBool,
    states: Mutex<HashMap<u32, TableState>>,
    /// Signalled when a fence comes down or its id is retired.
    changed: Condvar,
    /// Whether `born` holds anything: the readers' fast path reads only this.
    any_born: AtomicBool,
    /// Rewritten tables' new ids and the sequence number they were born at (invariant 4).
    born: Mutex<HashMap<u32, u64>>,
}

impl TableFences {
    fn states(&self) -> MutexGuard<'_, HashMap<u32, TableState>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Raises a fence on `table_id` for writers of `epoch` and later (invariant 1).
    pub(crate) fn raise(&self, table_id: u32, epoch: u64) {
        let mut states = self.states();
        states.insert(
            table_id,
            TableState::Rewriting {
                epoch,
                switching: false,
            },
        );
        self.any.store(true, Ordering::SeqCst);
    }

    /// Marks `table_id`'s fence switching: the new definition is about to be written.
    pub(crate) fn switching(&self, table_id: u32) {
        let mut states = self.states();
        if let Some(TableState::Rewriting { switching, .. }) = states.get_mut(&table_id) {
            *switching = true;
        }
    }

    /// Retires `table_id` (its new definition is installed) and wakes the writers waiting at
    /// its fence.
    pub(crate) fn retire(&self, table_id: u32) {
        let mut states = self.states();
        states.insert(table_id, TableState::Retired);
        self.any.store(true, Ordering::SeqCst);
        self.changed.notify_all();
    }

    /// Marks `table_id` dropped and wakes the writers waiting at its fence (invariant 5).
    pub(crate) fn dropped(&self, table_id: u32, database: &str, table: &str) {
        let mut states = self.states();
        states.insert(
            table_id,
            TableState::Dropped {
                database: database.to_owned(),
                table: table.to_owned(),
            },
        );
        self.any.store(true, Ordering::SeqCst);
        self.changed.notify_all();
    }

    /// Records that the rewritten table `table_id` was born at `seqno` (invariant 4).
    pub(crate) fn born(&self, table_id: u32, seqno: u64) {
        self.born
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(table_id, seqno);
        self.any_born.store(true, Ordering::SeqCst);
    }

    /// Takes a fence down when the rewrite failed: the table keeps its definition and id.
    pub(crate) fn lower(&self, table_id: u32) {
        let mut states = self.states();
        states.remove(&table_id);
        self.any.store(!states.is_empty(), Ordering::SeqCst);
        self.changed.notify_all();
    }

    /// Lets a write to `table` (named for messages) by a transaction that first wrote it in
    /// `epoch` go on, after waiting at a fence if there is one (up to `timeout`).
    pub(crate) fn before_write(
        &self,
        table_id: u32,
        table: &str,
        epoch: u64,
        timeout: Duration,
    ) -> Result<()> {
        if !self.any.load(Ordering::SeqCst) {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        let mut states = self.states();
        loop {
            match states.get(&table_id) {
                None => return Ok(()),
                Some(TableState::Retired) => return Err(changed(table)),
                Some(TableState::Dropped { database, table }) => return Err(gone(database, table)),
                Some(TableState::Rewriting { epoch: fence, .. }) if epoch < *fence => {
                    return Ok(());
                }
                Some(TableState::Rewriting { .. }) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(Error::LockWaitTimeout);
                    }
                    states = self
                        .changed
                        .wait_timeout(states, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }

    /// Fails a read, made already, that was bound to a definition being switched or retired
    /// (its ids may have been range-deleted before its snapshot, invariant 2), or that read a
    /// rewritten table from a `snapshot` older than the table (invariant 4).
    pub(crate) fn after_read(
        &self,
        table_id: u32,
        table: &str,
        snapshot: Option<u64>,
    ) -> Result<()> {
        if let Some(snapshot) = snapshot.filter(|_| self.any_born.load(Ordering::SeqCst)) {
            let born = self.born.lock().unwrap_or_else(PoisonError::into_inner);
            if born.get(&table_id).is_some_and(|&at| snapshot < at) {
                return Err(changed(table));
            }
        }
        if !self.any.load(Ordering::SeqCst) {
            return Ok(());
        }
        match self.states().get(&table_id) {
            Some(
                TableState::Retired
                | TableState::Rewriting {
                    switching: true, ..
                },
            ) => Err(changed(table)),
            Some(TableState::Dropped { database, table }) => Err(gone(database, table)),
            _ => Ok(()),
        }
    }
}

fn gone(database: &str, table: &str) -> Error {
    Error::NoSuchTable {
        database: database.to_owned(),
        table: table.to_owned(),
    }
}

fn changed(table: &str) -> Error {
    Error::TableDefChanged {
        table: table.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn older_writers_pass_newer_ones_wait_until_the_fence_comes_down() {
        let fences = Arc::new(TableFences::default());
        let wait = Duration::from_secs(10);
        assert!(fences.before_write(7, "t", 3, wait).is_ok());
        fences.raise(7, 4);
        assert!(fences.before_write(7, "t", 3, wait).is_ok(), "older epoch");
        assert!(fences.before_write(8, "u", 9, wait).is_ok(), "other table");
        assert!(matches!(
            fences.before_write(7, "t", 4, Duration::from_millis(20)),
            Err(Error::LockWaitTimeout)
        ));
        let waiter = {
            let fences = fences.clone();
            std::thread::spawn(move || fences.before_write(7, "t", 5, wait))
        };
        std::thread::sleep(Duration::from_millis(20));
        fences.lower(7);
        assert!(waiter.join().unwrap().is_ok());
        assert!(fences.after_read(7, "t", None).is_ok());
        fences.raise(7, 6);
        assert!(
            fences.after_read(7, "t", None).is_ok(),
            "reads go on while rows are copied"
        );
        fences.switching(7);
        assert!(
            fences.after_read(7, "t", None).is_err(),
            "but not across the switch"
        );
        fences.lower(7);
        assert!(fences.after_read(7, "t", None).is_ok());
    }

    #[test]
    fn a_retired_id_fails_writers_waiting_and_later_ones_and_reads() {
        let fences = Arc::new(TableFences::default());
        fences.raise(7, 1);
        let waiter = {
            let fences = fences.clone();
            std::thread::spawn(move || fences.before_write(7, "t", 1, Duration::from_secs(10)))
        };
        std::thread::sleep(Duration::from_millis(20));
        fences.retire(7);
        let error = waiter.join().unwrap().unwrap_err();
        assert!(matches!(&error, Error::TableDefChanged { table } if table == "t"));
        assert!(fences.before_write(7, "t", 0, Duration::ZERO).is_err());
        assert!(fences.after_read(7, "t", None).is_err());
    }

    #[test]
    fn a_snapshot_older_than_a_rewritten_table_cannot_read_it() {
        let fences = TableFences::default();
        assert!(fences.after_read(9, "t", Some(5)).is_ok());
        fences.born(9, 10);
        assert!(matches!(
            fences.after_read(9, "t", Some(9)),
            Err(Error::TableDefChanged { .. })
        ));
        assert!(fences.after_read(9, "t", Some(10)).is_ok());
        assert!(fences.after_read(9, "t", None).is_ok(), "no snapshot");
        assert!(fences.after_read(8, "u", Some(1)).is_ok(), "another table");
    }

    #[test]
    fn a_dropped_id_fails_writers_waiting_and_later_ones_and_reads_as_a_missing_table() {
        let fences = Arc::new(TableFences::default());
        fences.raise(7, 1);
        let waiter = {
            let fences = fences.clone();
            std::thread::spawn(move || fences.before_write(7, "t", 1, Duration::from_secs(10)))
        };
        std::thread::sleep(Duration::from_millis(20));
        fences.dropped(7, "d", "t");
        let missing = |e: &Error| matches!(e, Error::NoSuchTable { database, table } if database == "d" && table == "t");
        assert!(missing(&waiter.join().unwrap().unwrap_err()));
        assert!(missing(
            &fences.before_write(7, "t", 0, Duration::ZERO).unwrap_err()
        ));
        assert!(missing(&fences.after_read(7, "t", None).unwrap_err()));
    }
}
