//! Table maintenance behind the SQL layer's OPTIMIZE TABLE and ANALYZE TABLE (issue 24):
//! compacting the key range of each of a table's indexes, and measuring the estimates the
//! planner and `information_schema` read ([`crate::stats`]).
//!
//! The row and range estimates are computed when asked, from at most
//! [`crate::COUNT_LIMIT`] entries and one seek; index cardinalities are kept once estimated
//! (cardinality.rs). [`Store::analyze_index`] reads one index's estimate now and estimates its
//! cardinality again, so ANALYZE TABLE refreshes what SHOW INDEX shows.

use crate::cursor::{engine_range, IndexChoice, KeyRange};
use crate::error::Result;
use crate::schema::TableDef;
use crate::stats::TableStats;
use crate::store::Store;

impl Store {
    /// Compacts the key range of `index` of `table` down to the bottom level (the engine's
    /// `compact_range`, after flushing the memtables): versions no snapshot can see, deleted
    /// rows and their tombstones are dropped, and the range ends up in as few files as the
    /// level sizes allow. Waits until done; other sessions read and write meanwhile.
    pub fn compact_index(&self, table: &TableDef, index: IndexChoice) -> Result<()> {
        let (start, end) = engine_range(table, index, KeyRange::all(), &mut Vec::new())?;
        let db = self.engine().db();
        // `end` is exclusive for readers; compact_range's is inclusive, and the one extra key
        // it covers (the next index's bare prefix) is never a row or index entry.
        db.compact_range(&db.default_keyspace(), Some(&start), end.as_deref())?;
        Ok(())
    }

    /// The estimate of `index`'s entries and bytes of `table` as of now, after estimating its
    /// cardinality again (see the module doc).
    pub fn analyze_index(&self, table: &TableDef, index: IndexChoice) -> Result<TableStats> {
        let id = crate::index::table_id(table);
        let counted = self.inner.auto_recalc.changed(id);
        let rows = self.table_stats(table)?.rows;
        self.refresh_index_cardinality(table, index, rows)?;
        if matches!(index, IndexChoice::Primary) {
            // The changes counted so far are estimated (auto_recalc.rs, rule 3).
            self.inner.auto_recalc.estimated(id, rows, counted, false);
        }
        self.records_in_range(table, index, KeyRange::all())
    }
}
