//! Commit-time validation of optimistic transactions (docs/transactions.md, "Optimistic").
//!
//! An optimistic transaction takes no lock while it runs. At commit it locks every key it
//! read or wrote, exclusively and in key order (so two optimistic commits never deadlock),
//! then checks under those locks that no key changed after its snapshot, and writes while
//! still holding them: the same check-then-write ordering as pessimistic transactions.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use super::error::{show_key, TransactionError};
use super::lock_table::{LockKey, LockMode};
use super::transaction::Transaction;
use crate::error::Result;
use crate::read_latest::newest_seqno;

impl Transaction<'_> {
    pub(super) fn validate_optimistic(&mut self) -> Result<()> {
        let Some(snapshot) = self.snapshot_seqno() else {
            return Ok(());
        };
        let keys: BTreeSet<LockKey> = self
            .read_set
            .iter()
            .chain(self.batch.keys())
            .cloned()
            .collect();
        for key in &keys {
            self.acquire(key, LockMode::Exclusive)?;
        }
        for (keyspace, key) in &keys {
            let changed_at = newest_seqno(&self.tdb.db().inner, *keyspace, key)?;
            if changed_at > snapshot {
                self.tdb
                    .shared()
                    .stats
                    .optimistic_conflicts
                    .fetch_add(1, Ordering::Relaxed);
                return Err(TransactionError::OptimisticConflict {
                    key: show_key(key),
                    changed_at,
                    snapshot,
                }
                .into());
            }
        }
        Ok(())
    }
}
