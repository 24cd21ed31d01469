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
//! [`Store::cached_index_cardinality`] keeps each index's figures in memory by index id, as
//! InnoDB keeps transient statistics (`innodb_stats_persistent=OFF`): estimated the first
//! time they are asked for, again when the table's estimated rows moved by more than a tenth
//! since (InnoDB's automatic recalculation also waits for 10% of the table to change), and
//! by [`Store::analyze_index`] (ANALYZE TABLE); forgotten at close.
//!
//! Invariants:
//! 1. An estimate reads at most [`SAMPLE_LIMIT`] entries; never a full scan. The table's
//!    row estimate it scales by is taken once per table by the caller.
//! 2. The counts never decrease from one prefix to the next longer one, and none exceeds
//!    the entries counted or estimated.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use shale_engine::ReadOptions;

use crate::codec::key::skip_column;
use crate::codec::Reader;
use crate::cursor::{engine_range, index_columns, IndexChoice, KeyRange};
use crate::error::Result;
use crate::schema::TableDef;
use crate::store::Store;

/// Entries of one index read per estimate.
pub const SAMPLE_LIMIT: u64 = 16_384;

/// Cached figures by index id, with the table's estimated rows when they were made. An index
/// id is never reused while its data may remain (schema.rs), so a rewritten or recreated
/// index never shows an older index's figures.
#[derive(Debug, Default)]
pub(crate) struct Cardinalities {
    by_index: Mutex<HashMap<u32, Kept>>,
}

/// One index's figures and the table's estimated rows when they were made.
type Kept = (Arc<[u64]>, u64);

impl Cardinalities {
    fn get(&self, index_id: u32) -> Option<Kept> {
        self.lock().get(&index_id).cloned()
    }

    fn put(&self, index_id: u32, figures: Arc<[u64]>, rows: u64) {
        self.lock().insert(index_id, (figures, rows));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Kept>> {
        self.by_index.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a table of `now` rows changed enough since `then` to estimate again.
fn moved(then: u64, now: u64) -> bool {
    then.abs_diff(now) > then / 10
}

impl Store {
    /// [`Store::index_cardinality`] as last estimated, estimated again when never or when
    /// the table's estimated `rows` ([`Store::table_stats`], taken once per table by the
    /// caller) moved by more than a tenth since.
    pub fn cached_index_cardinality(
        &self,
        table: &TableDef,
        index: IndexChoice,
        rows: u64,
    ) -> Result<Arc<[u64]>> {
        let id = index_columns(table, index)?.0.index_id;
        match self.inner.cardinalities.get(id) {
            Some((figures, then)) if !moved(then, rows) => Ok(figures),
            _ => self.refresh_index_cardinality(table, index, rows),
        }
    }

    /// Estimates `index`'s cardinality again and keeps it for
    /// [`Store::cached_index_cardinality`].
    pub(crate) fn refresh_index_cardinality(
        &self,
        table: &TableDef,
        index: IndexChoice,
        rows: u64,
    ) -> Result<Arc<[u64]>> {
        let id = index_columns(table, index)?.0.index_id;
        let figures: Arc<[u64]> = self.index_cardinality(table, index, rows)?.into();
        self.inner.cardinalities.put(id, Arc::clone(&figures), rows);
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
