//! Index statistics for the planner: how many rows one value of each leading prefix of an
//! index holds, from the cardinalities the table layer keeps (shale-table's cardinality.rs:
//! estimated by ANALYZE TABLE and SHOW INDEX, stored across restarts).
//!
//! Rules:
//! 1. Planning never reads an index to learn them: only kept figures are used
//!    (`Store::known_index_cardinality`); an index never estimated has none.
//! 2. They only break what the rules cannot: plan.rs asks for them when two or more indexes
//!    could serve the WHERE condition, and uses them only when each of those has figures;
//!    otherwise the rules alone choose, as before any ANALYZE. Only those indexes' figures
//!    are looked up. Figures of an empty table cost every index 0, so the rules choose then
//!    too.
//! 3. The cost of a candidate is its estimated rows, twice that for a secondary index (each
//!    entry is followed by a primary key lookup): `rows / distinct(prefix)` for an equality
//!    prefix, a third of that (or of the table) for a range, `MySQL`'s rough guess when it
//!    does not look into the index.

use std::sync::{Arc, Weak};

use shale_table::{IndexChoice, TableDef};

use crate::instance::Instance;

/// Reads the kept statistics of a table; one per session, cloned into the tables a
/// statement binds. The `Weak` is behind the session's own `Arc`, so a clone per statement
/// touches a counter of this session's only, not the instance's that every session shares.
#[derive(Clone)]
pub(crate) struct StatsProvider(Arc<Weak<Instance>>);

impl StatsProvider {
    /// A provider over the instance's store while the instance lives (rule 1).
    pub(crate) fn new(instance: Weak<Instance>) -> Self {
        StatsProvider(Arc::new(instance))
    }

    /// The cost of reading `table`'s `index` with `eq` equal leading columns and maybe a
    /// range on the next (rule 3); `None` when the index has no kept figures.
    pub(crate) fn cost(
        &self,
        table: &TableDef,
        index: IndexChoice,
        eq: usize,
        range: bool,
    ) -> Option<f64> {
        let instance = self.0.upgrade()?;
        let (distinct, rows) = instance
            .store
            .known_index_cardinality(table, index)
            .ok()
            .flatten()?;
        Some(cost(index, rows, &distinct, eq, range))
    }
}

impl std::fmt::Debug for StatsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StatsProvider")
    }
}

/// Rule 3 for an index of a table of `rows` rows whose leading prefixes have `distinct`
/// values each.
fn cost(index: IndexChoice, rows: u64, distinct: &[u64], eq: usize, range: bool) -> f64 {
    #[allow(clippy::cast_precision_loss)] // estimates: a few digits matter
    let rows = rows as f64;
    let mut matched = match eq.checked_sub(1) {
        None => rows,
        #[allow(clippy::cast_precision_loss)]
        Some(p) => rows / distinct.get(p).copied().unwrap_or(1).max(1) as f64,
    };
    if range {
        matched /= 3.0;
    }
    let lookups = match index {
        IndexChoice::Primary => 1.0,
        IndexChoice::Secondary(_) => 2.0,
    };
    matched * lookups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_rows_per_value_and_secondary_lookups_count_twice() {
        let (pk, k0, k1) = (
            IndexChoice::Primary,
            IndexChoice::Secondary(0),
            IndexChoice::Secondary(1),
        );
        assert!((cost(pk, 1000, &[1000], 1, false) - 1.0).abs() < 1e-9);
        assert!((cost(k0, 1000, &[2], 1, false) - 1000.0).abs() < 1e-9);
        assert!((cost(k1, 1000, &[500, 1000], 1, false) - 4.0).abs() < 1e-9);
        assert!((cost(k1, 1000, &[500, 1000], 2, false) - 2.0).abs() < 1e-9);
        assert!((cost(pk, 1000, &[1000], 0, true) - 1000.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn no_distinct_value_counts_as_one_rather_than_dividing_by_zero() {
        assert!((cost(IndexChoice::Secondary(0), 10, &[0], 1, false) - 20.0).abs() < 1e-9);
    }
}
