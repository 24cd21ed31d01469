//! CREATE INDEX's build, and the sweep of index ids no definition owns.
//!
//! The build reads the table at one snapshot and writes the new index's entries in chunks of
//! plain engine writes (no row locks, bounded memory), under an index id already persisted as
//! used; the definition that makes the index visible is written last, synced (`Store`'s
//! job). A build that fails deletes what it wrote; one cut by a crash leaves entries under an
//! id no definition names, which [`sweep_orphans`] deletes at the next open. So the catalog
//! and the data still match one definition after any crash (ARCHITECTURE.md invariant 7).
//!
//! Invariants:
//! 1. An index id is persisted in `N` before any key of it is written, so it is never
//!    reused, even if the build dies.
//! 2. After `Store::open` returns, the default keyspace holds keys only under index ids of the
//!    catalog.
//!
//! Not an online build: rows written by other transactions while it runs are not indexed.

use std::collections::{BTreeSet, HashSet};
use std::ops::Bound;

use shale_engine::{Db, ReadOptions, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};

use crate::codec::key::{prefix_successor, range_bounds};
use crate::codec::row::decode_row;
use crate::error::{Error, Result};
use crate::index::{entry_for_row, is_unique_entry, show_entry, table_id};
use crate::schema::{Catalog, TableDef};

/// Entries per engine write of a build.
const CHUNK_ENTRIES: usize = 16 * 1024;

/// Writes the entries of `table.indexes[position]` for every row of `table` as of now.
pub(crate) fn build_index(db: &Db, table: &TableDef, position: usize) -> Result<()> {
    let index = table
        .indexes
        .get(position)
        .ok_or_else(|| Error::InvalidArgument("no such index".into()))?;
    let result = write_entries(db, table, position);
    if result.is_err() {
        // Best effort: the sweep at the next open deletes whatever this leaves.
        let _ = delete_index(db, index.index_id);
    }
    result
}

fn write_entries(db: &Db, table: &TableDef, position: usize) -> Result<()> {
    let index = table
        .indexes
        .get(position)
        .ok_or_else(|| Error::InvalidArgument("no such index".into()))?;
    let (lower, upper) = range_bounds(table_id(table), Bound::Unbounded, Bound::Unbounded);
    let mut iter = db.iterator(ReadOptions {
        snapshot: Some(db.snapshot()),
        lower_bound: Some(lower),
        upper_bound: upper,
        skip_cache_fill: true,
        ..ReadOptions::default()
    })?;
    let mut scratch = Vec::new();
    let mut batch = WriteBatch::new();
    // Unique keys written by the batch not yet applied (earlier chunks are found by `get`).
    let mut pending_unique = HashSet::new();
    iter.seek_to_first();
    while iter.valid() {
        let row = decode_row(table, iter.value())?;
        let (key, value) = entry_for_row(table, index, &row, iter.key(), &mut scratch)?;
        if index.unique && is_unique_entry(&value) {
            if pending_unique.contains(&key) || db.get(&key)?.is_some() {
                return Err(Error::DuplicateKey {
                    table: table.name.clone(),
                    key: index.name.clone(),
                    entry: show_entry(&row, &index.columns),
                });
            }
            pending_unique.insert(key.clone());
        }
        batch.put(DEFAULT_KEYSPACE_ID, &key, &value)?;
        if batch.count() as usize >= CHUNK_ENTRIES {
            db.write(std::mem::take(&mut batch), &WriteOptions::default())?;
            pending_unique.clear();
        }
        iter.next();
    }
    iter.status()?;
    if !batch.is_empty() {
        db.write(batch, &WriteOptions::default())?;
    }
    Ok(())
}

fn delete_index(db: &Db, index_id: u32) -> Result<()> {
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

/// Deletes every key of the default keyspace under an index id that `catalog` does not have
/// (invariant 2): one seek per distinct id present. Returns the ids swept.
pub(crate) fn sweep_orphans(db: &Db, catalog: &Catalog) -> Result<Vec<u32>> {
    let live: BTreeSet<u32> = catalog
        .databases
        .values()
        .flat_map(|tables| tables.values())
        .flat_map(|t| std::iter::once(&t.primary_key).chain(&t.indexes))
        .map(|i| i.index_id)
        .chain(std::iter::once(crate::system::SYSTEM_INDEX_ID))
        .collect();
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
