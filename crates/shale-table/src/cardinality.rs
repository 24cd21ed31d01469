//! Index cardinality (SHOW INDEX's `Cardinality`, ANALYZE TABLE): how many distinct values
//! each leading prefix of an index's columns has, estimated from a sample of its entries.
//!
//! The first [`SAMPLE_LIMIT`] entries of the index are read in key order. Each entry's key
//! is split into its columns with [`skip_column`]; an entry starts a new value of the prefix
//! of `p` columns when its first `p` columns' bytes differ from the previous entry's. Keys are
//! memcomparable (equal bytes iff equal in SQL, collation included), so counting byte
//! prefixes counts SQL values. When the walk reaches the end of the index the counts are
//! exact. Otherwise the sample's last value of each prefix may go on past it, so the values
//! before it are scaled: `(values - 1) * rows / entries before the last value`, with the
//! table's estimated rows (one value alone is scaled by `rows / entries read`). That is right
//! for evenly spread duplicates and rough for skewed ones, as InnoDB's sampled pages are.
//!
//! Each estimate is kept in memory by index id and persisted as a system key (`S` ++ index
//! id, docs/format/catalog.md), as InnoDB keeps persistent statistics
//! (`innodb_stats_persistent=ON`): [`Store::cached_index_cardinality`] (SHOW INDEX) estimates
//! the first time an index is asked for when nothing was ever stored, and again when the
//! table's estimated rows moved by more than a tenth since (InnoDB's automatic recalculation
//! also waits for 10% of the table to change); ANALYZE TABLE always estimates again
//! ([`Store::refresh_index_cardinality`]). [`Store::known_index_cardinality`] (the planner)
//! only reads what is kept and never starts an estimate, so planning never reads an index.
//!
//! Invariants:
//! 1. An estimate reads at most [`SAMPLE_LIMIT`] entries; never a full scan. The table's
//!    row estimate it scales by is taken once per table by the caller.
//! 2. The counts never decrease from one prefix to the next longer one, and none exceeds
//!    the entries counted or estimated.
//! 3. A stored estimate belongs to one index id; ids are never reused, so it can never
//!    describe another index. DROP TABLE and TRUNCATE delete their indexes' records with
//!    the rows (store.rs); those of ids no longer in the catalog otherwise (DROP INDEX, a
//!    rewriting ALTER) are deleted at open ([`sweep_statistics`]). A stored record that does not decode, or whose column count
//!    is not the index's, is ignored (estimated again), never trusted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use shale_engine::{Db, ReadOptions, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};

use crate::codec::key::skip_column;
use crate::codec::Reader;
use crate::cursor::{engine_range, index_columns, IndexChoice, KeyRange};
use crate::error::Result;
use crate::schema::{Catalog, TableDef};
use crate::store::Store;
use crate::system::{table_key, TAG_INDEX_STATS};

/// Entries of one index read per estimate.
pub const SAMPLE_LIMIT: u64 = 16_384;

/// Figures by index id, with the table's estimated rows when they were made; `None` when the
/// stored record was looked for and there is none. An index id is never reused while its
/// data may remain (schema.rs), so a rewritten or recreated index never shows an older
/// index's figures.
#[derive(Debug, Default)]
pub(crate) struct Cardinalities {
    by_index: Mutex<HashMap<u32, Option<Kept>>>,
    /// Raised whenever figures are estimated or forgotten ([`Store::statistics_version`]).
    version: AtomicU64,
}

/// One index's figures and the table's estimated rows when they were made.
type Kept = (Arc<[u64]>, u64);

/// What is known of one index: looked up in memory, whether the stored record was read.
enum Known {
    /// Neither estimated nor read from the stored record since open.
    NotLooked,
    /// Estimated or read (`None`: there is no stored record).
    Looked(Option<Kept>),
}

impl Cardinalities {
    fn get(&self, index_id: u32) -> Known {
        match self.lock().get(&index_id) {
            None => Known::NotLooked,
            Some(kept) => Known::Looked(kept.clone()),
        }
    }

    fn put(&self, index_id: u32, kept: Option<Kept>) {
        self.lock().insert(index_id, kept);
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// Keeps `stored` (read from disk) unless an estimate was kept meanwhile; what is kept.
    fn put_stored(&self, index_id: u32, stored: Option<Kept>) -> Option<Kept> {
        self.lock().entry(index_id).or_insert(stored).clone()
    }

    /// Forgets `index_id`'s figures (TRUNCATE deleted its rows and its stored record).
    pub(crate) fn forget(&self, index_id: u32) {
        self.lock().remove(&index_id);
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Option<Kept>>> {
        self.by_index.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The version byte of a stored estimate.
const STATS_VERSION: u8 = 1;

/// `version: u8 | rows: u64 LE | count: u32 LE | count x distinct: u64 LE`.
fn encode_stats(figures: &[u64], rows: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(13 + figures.len() * 8);
    out.push(STATS_VERSION);
    out.extend_from_slice(&rows.to_le_bytes());
    let count = u32::try_from(figures.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    for f in figures.iter().take(count as usize) {
        out.extend_from_slice(&f.to_le_bytes());
    }
    out
}

/// A stored estimate of an index of `columns` columns (invariant 3: `None` when it does
/// not decode or does not fit the index).
fn decode_stats(bytes: &[u8], columns: usize) -> Option<Kept> {
    let mut reader = Reader::new(bytes, "index statistics");
    if reader.u8().ok()? != STATS_VERSION {
        return None;
    }
    let rows = u64::from_le_bytes(reader.array().ok()?);
    let count = u32::from_le_bytes(reader.array().ok()?) as usize;
    if count != columns {
        return None;
    }
    let mut figures = Vec::with_capacity(count);
    for _ in 0..count {
        figures.push(u64::from_le_bytes(reader.array().ok()?));
    }
    reader.is_empty().then(|| (figures.into(), rows))
}

/// Deletes the stored estimates of index ids not in `catalog` (invariant 3).
pub(crate) fn sweep_statistics(db: &Db, catalog: &Catalog) -> Result<()> {
    let live = crate::build::live_index_ids(catalog);
    let start = table_key(TAG_INDEX_STATS, 0);
    let mut end = start[..5].to_vec();
    end[4] += 1;
    let mut iter = db.iterator(ReadOptions {
        lower_bound: Some(start.to_vec()),
        upper_bound: Some(end),
        skip_cache_fill: true,
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    let mut batch = WriteBatch::new();
    let mut stale = 0;
    while iter.valid() {
        let id = iter
            .key()
            .get(5..9)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_be_bytes);
        if id.is_none_or(|id| !live.contains(&id)) {
            batch.delete(DEFAULT_KEYSPACE_ID, iter.key())?;
            stale += 1;
        }
        iter.next();
    }
    iter.status()?;
    if stale > 0 {
        db.write(batch, &WriteOptions::default())?;
    }
    Ok(())
}

/// Whether a table of `now` rows changed enough since `then` to estimate again.
fn moved(then: u64, now: u64) -> bool {
    then.abs_diff(now) > then / 10
}

impl Store {
    /// A number raised whenever any index's figures are estimated again or forgotten
    /// (ANALYZE TABLE, SHOW INDEX, the automatic recalculation, TRUNCATE), so a plan chosen
    /// with older figures can tell it should be chosen again. Reading the stored figures
    /// for the first time does not raise it: the planner reads them itself when it needs
    /// them, so no plan was made without them.
    pub fn statistics_version(&self) -> u64 {
        self.inner.cardinalities.version.load(Ordering::Acquire)
    }

    /// [`Store::index_cardinality`] as last estimated, estimated again when never or when
    /// the table's estimated `rows` ([`Store::table_stats`], taken once per table by the
    /// caller) moved by more than a tenth since.
    pub fn cached_index_cardinality(
        &self,
        table: &TableDef,
        index: IndexChoice,
        rows: u64,
    ) -> Result<Arc<[u64]>> {
        match self.known_index_cardinality(table, index)? {
            Some((figures, then)) if !moved(then, rows) => Ok(figures),
            _ => self.refresh_index_cardinality(table, index, rows),
        }
    }

    /// `index`'s figures and the table's estimated rows they were made with, as kept in
    /// memory or stored, without estimating (the planner's view); `None` when never
    /// estimated.
    pub fn known_index_cardinality(
        &self,
        table: &TableDef,
        index: IndexChoice,
    ) -> Result<Option<(Arc<[u64]>, u64)>> {
        let (def, columns) = index_columns(table, index)?;
        let id = def.index_id;
        if let Known::Looked(kept) = self.inner.cardinalities.get(id) {
            return Ok(kept);
        }
        let stored = self
            .engine()
            .db()
            .get(&table_key(TAG_INDEX_STATS, id))?
            .and_then(|bytes| decode_stats(&bytes, columns.len()));
        Ok(self.inner.cardinalities.put_stored(id, stored))
    }

    /// Estimates `index`'s cardinality again, keeps it and stores it for
    /// [`Store::cached_index_cardinality`] and [`Store::known_index_cardinality`].
    pub(crate) fn refresh_index_cardinality(
        &self,
        table: &TableDef,
        index: IndexChoice,
        rows: u64,
    ) -> Result<Arc<[u64]>> {
        let id = index_columns(table, index)?.0.index_id;
        let figures: Arc<[u64]> = self.index_cardinality(table, index, rows)?.into();
        // Storing is best effort: SHOW INDEX must not fail because writes are paused (a
        // full disk); the figures are kept in memory and the next estimate stores them.
        let mut batch = WriteBatch::new();
        if batch
            .put(
                DEFAULT_KEYSPACE_ID,
                &table_key(TAG_INDEX_STATS, id),
                &encode_stats(&figures, rows),
            )
            .is_ok()
        {
            let _ = self.engine().db().write(batch, &WriteOptions::default());
        }
        self.inner
            .cardinalities
            .put(id, Some((Arc::clone(&figures), rows)));
        Ok(figures)
    }

    /// The estimated number of distinct values of each leading prefix of `index`'s columns:
    /// element `p` is for its first `p + 1` columns (see the module doc). `rows` is the
    /// table's estimated rows ([`Store::table_stats`]), which scale a sample. Committed data
    /// only.
    pub fn index_cardinality(
        &self,
        table: &TableDef,
        index: IndexChoice,
        rows: u64,
    ) -> Result<Vec<u64>> {
        let (_, columns) = index_columns(table, index)?;
        let (start, end) = engine_range(table, index, KeyRange::all(), &mut Vec::new())?;
        let mut iter = self.engine().db().iterator(ReadOptions {
            lower_bound: Some(start),
            upper_bound: end,
            skip_cache_fill: true,
            ..ReadOptions::default()
        })?;
        iter.seek_to_first();
        let mut distinct = vec![0u64; columns.len()];
        // The entry number at which each prefix's current value started.
        let mut value_start = vec![0u64; columns.len()];
        // Where each prefix ends in the previous entry's key, and that key.
        let mut previous_ends = vec![0usize; columns.len()];
        let mut ends = vec![0usize; columns.len()];
        let mut previous_key: Vec<u8> = Vec::new();
        let mut read = 0u64;
        while iter.valid() && read < SAMPLE_LIMIT {
            let key = iter.key();
            // The 4-byte index id, then the columns.
            let body = key.get(4..).unwrap_or_default();
            let mut reader = Reader::new(body, "an index key");
            for (end, column) in ends.iter_mut().zip(&columns) {
                skip_column(&mut reader, column)?;
                *end = 4 + body.len() - reader.rest().len();
            }
            // Once a shorter prefix differs, every longer one does too.
            let mut changed = read == 0;
            for p in 0..columns.len() {
                changed = changed
                    || ends[p] != previous_ends[p]
                    || key[..ends[p]] != previous_key[..previous_ends[p]];
                if changed {
                    distinct[p] += 1;
                    value_start[p] = read;
                }
            }
            previous_key.clear();
            previous_key.extend_from_slice(key);
            std::mem::swap(&mut previous_ends, &mut ends);
            read += 1;
            iter.next();
        }
        iter.status()?;
        if iter.valid() {
            let rows = rows.max(read);
            for (d, start) in distinct.iter_mut().zip(&value_start) {
                let (values, entries) = if *d > 1 { (*d - 1, *start) } else { (*d, read) };
                // u128 keeps the product exact; the result is at most `rows`.
                let scaled = u128::from(values) * u128::from(rows) / u128::from(entries.max(1));
                *d = u64::try_from(scaled).unwrap_or(rows).clamp(*d, rows);
            }
        }
        Ok(distinct)
    }
}

#[cfg(test)]
mod tests {
    use super::{decode_stats, encode_stats};

    #[test]
    fn a_stored_record_that_does_not_fit_is_ignored() {
        let good = encode_stats(&[3, 7], 10);
        let (figures, rows) = decode_stats(&good, 2).unwrap();
        assert_eq!((&*figures, rows), (&[3u64, 7][..], 10));
        // Invariant 3: another column count, a cut record, trailing bytes, another version.
        assert!(decode_stats(&good, 1).is_none());
        assert!(decode_stats(&good[..good.len() - 1], 2).is_none());
        let mut longer = good.clone();
        longer.push(0);
        assert!(decode_stats(&longer, 2).is_none());
        let mut other_version = good;
        other_version[0] = 2;
        assert!(decode_stats(&other_version, 2).is_none());
        assert!(decode_stats(&[], 2).is_none());
    }
}
