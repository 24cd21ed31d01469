//! CREATE INDEX's fill, and the sweep of index ids no definition owns.
//!
//! The fill (online.rs has the whole protocol) reads the table's primary keys from one
//! snapshot and, in small READ COMMITTED transactions, locks each row, reads its newest
//! committed image and writes its entry, under an index id already persisted as used; the
//! definition that makes the index visible is written last, synced (`Store`'s job). A build
//! that fails deletes what it wrote; one cut by a crash leaves entries under an id no
//! definition names, which [`sweep_orphans`] deletes at the next open. So the catalog and the
//! data still match one definition after any crash (ARCHITECTURE.md invariant 7).
//!
//! Invariants:
//! 1. An index id is persisted in `N` before any key of it is written, so it is never
//!    reused, even if the build dies.
//! 2. After `Store::open` returns, the default keyspace holds keys only under index ids of the
//!    catalog.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use shale_engine::{
    Db, Durability, IsolationLevel, ReadOptions, TransactionDb, TransactionOptions, WriteBatch,
    WriteOptions, DEFAULT_KEYSPACE_ID,
};

use crate::codec::key::{prefix_successor, range_bounds};
use crate::codec::row::decode_row;
use crate::error::{Error, Result};
use crate::index::{entry_for_row, is_unique_entry, show_entry, table_id};
use crate::online::AddedIndex;
use crate::schema::Catalog;

/// Rows per fill transaction: small, so a writer waiting for one of its locks waits briefly.
const FILL_ROWS: usize = 256;

/// How often a fill transaction that lost a deadlock, or timed out waiting for a row lock, is
/// tried again before CREATE INDEX gives up.
const FILL_DEADLOCK_RETRIES: u32 = 100;
const FILL_TIMEOUT_RETRIES: u32 = 3;

/// Writes the entry of every row of `added`'s table in its index (step 3 of online.rs). Rows
/// written after the snapshot the keys are read from are their writers' job; the rows are
/// those of the snapshot, each locked and read at its newest version.
pub(crate) fn fill(tdb: &Arc<TransactionDb>, added: &AddedIndex) -> Result<()> {
    let db = tdb.db();
    let (lower, upper) = range_bounds(table_id(&added.def), Bound::Unbounded, Bound::Unbounded);
    let mut iter = db.iterator(ReadOptions {
        snapshot: Some(db.snapshot()),
        lower_bound: Some(lower),
        upper_bound: upper,
        skip_cache_fill: true,
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    let mut keys = Vec::with_capacity(FILL_ROWS);
    loop {
        keys.clear();
        while iter.valid() && keys.len() < FILL_ROWS {
            keys.push(iter.key().to_vec());
            iter.next();
        }
        iter.status()?;
        if keys.is_empty() {
            return added.check();
        }
        fill_retrying(tdb, added, &keys)?;
    }
}

fn fill_retrying(tdb: &Arc<TransactionDb>, added: &AddedIndex, keys: &[Vec<u8>]) -> Result<()> {
    let (mut deadlocks, mut timeouts) = (0, 0);
    loop {
        added.check()?;
        match fill_rows(tdb, added, keys) {
            Err(Error::Deadlock) if deadlocks < FILL_DEADLOCK_RETRIES => deadlocks += 1,
            Err(Error::LockWaitTimeout) if timeouts < FILL_TIMEOUT_RETRIES => timeouts += 1,
            other => return other,
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One fill transaction over `keys` (invariant 3 of online.rs: each entry under its row's
/// lock). Not synced: the synced definition written after the fill makes it durable, and a
/// crash before that sweeps it.
fn fill_rows(tdb: &Arc<TransactionDb>, added: &AddedIndex, keys: &[Vec<u8>]) -> Result<()> {
    let table = &added.def;
    let index = added.index();
    let mut txn = tdb.begin(TransactionOptions {
        isolation: IsolationLevel::ReadCommitted,
        write_options: WriteOptions {
            durability: Some(Durability::Buffered),
        },
        ..TransactionOptions::default()
    })?;
    let mut scratch = Vec::new();
    for key in keys {
        let Some(bytes) = txn.get_for_update(key)? else {
            continue; // deleted since the snapshot, with its entry
        };
        let row = decode_row(table, &bytes)?;
        let (entry, value) = entry_for_row(table, index, &row, key, &mut scratch)?;
        if is_unique_entry(&value) {
            match txn.get_for_update_latest(&entry)? {
                None => txn.put(&entry, &value)?,
                Some(existing) if existing == value => {}
                Some(_) => {
                    return Err(Error::DuplicateKey {
                        table: table.name.clone(),
                        key: index.name.clone(),
                        entry: show_entry(&row, &index.columns),
                    })
                }
            }
        } else {
            txn.put_untracked(&entry, &value)?;
        }
    }
    txn.commit()?;
    Ok(())
}

/// Deletes every key of `index_id` (a failed build's entries).
pub(crate) fn delete_index(db: &Db, index_id: u32) -> Result<()> {
    let mut batch = WriteBatch::new();
    delete_index_range(&mut batch, index_id)?;
    db.write(batch, &WriteOptions::default())?;
    Ok(())
}

/// Adds a range tombstone over every key of `index_id`.
pub(crate) fn delete_index_range(batch: &mut WriteBatch, index_id: u32) -> Result<()> {
    let start = index_id.to_be_bytes();
    let end = prefix_successor(&start).unwrap_or_else(|| vec![0xFF; 5]);
    batch.delete_range(DEFAULT_KEYSPACE_ID, &start, &end)?;
    Ok(())
}

/// The index ids of every table and index in `catalog`.
pub(crate) fn live_index_ids(catalog: &Catalog) -> BTreeSet<u32> {
    catalog
        .databases
        .values()
        .flat_map(|tables| tables.values())
        .flat_map(|t| std::iter::once(&t.primary_key).chain(&t.indexes))
        .map(|i| i.index_id)
        .collect()
}

/// Deletes every key of the default keyspace under an index id that `catalog` does not have
/// (invariant 2): one seek per distinct id present. Returns the ids swept.
pub(crate) fn sweep_orphans(db: &Db, catalog: &Catalog) -> Result<Vec<u32>> {
    let mut live = live_index_ids(catalog);
    live.insert(crate::system::SYSTEM_INDEX_ID);
    let mut orphans = Vec::new();
    let mut iter = db.iterator(ReadOptions {
        skip_cache_fill: true,
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    while iter.valid() {
        let Some(id) = iter
            .key()
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)
        else {
            // A key shorter than an index id is not ours either; step over it.
            iter.next();
            continue;
        };
        if !live.contains(&id) {
            orphans.push(id);
        }
        match id.checked_add(1) {
            Some(next) => iter.seek(&next.to_be_bytes()),
            None => break,
        }
    }
    iter.status()?;
    if !orphans.is_empty() {
        let mut batch = WriteBatch::new();
        for &id in &orphans {
            delete_index_range(&mut batch, id)?;
        }
        db.write(batch, &WriteOptions::sync())?;
    }
    Ok(orphans)
}
