//! Approximate table sizes and range sizes for the planner, without a full scan.
//!
//! A walk of the primary key reads at most [`COUNT_LIMIT`] rows. If it reaches the end the
//! count is exact. Otherwise the table's last key is sought and the count is extrapolated by
//! key position: reading the 8 bytes after the first and last keys' common prefix as numbers,
//! the sample covered `(sampled last - first) / (last - first)` of the key range. That is
//! exact for dense integer keys (sysbench's `id`) and rough for skewed ones; memtables and
//! table files are seen alike. Bytes are the sample's average key and value size times the
//! rows (uncompressed).
//!
//! Invariants:
//! 1. An estimate reads at most [`COUNT_LIMIT`] entries and seeks once more; never a full scan.
//! 2. An estimate is exact (`exact: true`) only when every entry of the range was counted.

use std::ops::Bound;

use shale_engine::ReadOptions;

use crate::codec::key::range_bounds;
use crate::cursor::{engine_range, IndexChoice, KeyRange};
use crate::error::Result;
use crate::index::table_id;
use crate::schema::TableDef;
use crate::store::Store;

/// Rows read before extrapolating.
pub const COUNT_LIMIT: u64 = 4096;

/// What [`Store::table_stats`] estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStats {
    /// Rows in the table (exact when `exact`).
    pub rows: u64,
    /// Bytes of the rows' keys and values, uncompressed.
    pub data_bytes: u64,
    /// Whether `rows` was counted rather than extrapolated.
    pub exact: bool,
}

/// The 8 bytes of `key` after `skip` bytes, as a big-endian number (zero-padded).
fn position(key: &[u8], skip: usize) -> u64 {
    let mut bytes = [0u8; 8];
    for (slot, byte) in bytes.iter_mut().zip(key.iter().skip(skip)) {
        *slot = *byte;
    }
    u64::from_be_bytes(bytes)
}

impl Store {
    /// Estimates the rows and bytes of `table` (see the module doc); costs at most
    /// [`COUNT_LIMIT`] rows of iteration and one seek.
    pub fn table_stats(&self, table: &TableDef) -> Result<TableStats> {
        let (start, end) = range_bounds(table_id(table), Bound::Unbounded, Bound::Unbounded);
        self.estimate(start, end)
    }

    /// Estimates how many entries of `index` lie in `range` (`MySQL`'s `records_in_range`), as
    /// [`Store::table_stats`] does for a table: counted up to [`COUNT_LIMIT`], else
    /// extrapolated by key position. Committed data only.
    pub fn records_in_range(
        &self,
        table: &TableDef,
        index: IndexChoice,
        range: KeyRange,
    ) -> Result<TableStats> {
        let (start, end) = engine_range(table, index, range, &mut Vec::new())?;
        self.estimate(start, end)
    }

    /// About how many bytes of table files hold entries of `index` of `table`
    /// ([`shale_engine::Db::approximate_size`] over the index's key range): reads index
    /// blocks only; entries still in memtables are not counted.
    pub fn index_disk_bytes(&self, table: &TableDef, index: IndexChoice) -> Result<u64> {
        let (start, end) = engine_range(table, index, KeyRange::all(), &mut Vec::new())?;
        let db = self.engine().db();
        Ok(db.approximate_size(&db.default_keyspace(), Some(&start), end.as_deref())?)
    }

    fn estimate(&self, start: Vec<u8>, end: Option<Vec<u8>>) -> Result<TableStats> {
        if end.as_ref().is_some_and(|end| *end <= start) {
            return Ok(TableStats {
                rows: 0,
                data_bytes: 0,
                exact: true,
            });
        }
        let mut iter = self.engine().db().iterator(ReadOptions {
            lower_bound: Some(start),
            upper_bound: end,
            skip_cache_fill: true,
            ..ReadOptions::default()
        })?;
        iter.seek_to_first();
        let first = if iter.valid() {
            iter.key().to_vec()
        } else {
            Vec::new()
        };
        let (mut counted, mut bytes) = (0u64, 0u64);
        let mut sampled_last = Vec::new();
        while iter.valid() && counted < COUNT_LIMIT {
            counted += 1;
            bytes += (iter.key().len() + iter.value().len()) as u64;
            sampled_last.clear();
            sampled_last.extend_from_slice(iter.key());
            iter.next();
        }
        iter.status()?;
        if !iter.valid() {
            return Ok(TableStats {
                rows: counted,
                data_bytes: bytes,
                exact: true,
            });
        }
        iter.seek_to_last();
        iter.status()?;
        let last = if iter.valid() {
            iter.key().to_vec()
        } else {
            sampled_last.clone()
        };
        let common = first.iter().zip(&last).take_while(|(a, b)| a == b).count();
        let (f, s, l) = (
            position(&first, common),
            position(&sampled_last, common),
            position(&last, common),
        );
        let rows = if l > f && s > f {
            let covered = (s - f) as f64 / (l - f) as f64;
            // Float to int saturates; the max keeps the estimate at least what was read.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let estimate = (counted as f64 / covered) as u64;
            estimate.max(counted + 1)
        } else {
            counted + 1
        };
        Ok(TableStats {
            rows,
            data_bytes: bytes / counted.max(1) * rows,
            exact: false,
        })
    }
}
