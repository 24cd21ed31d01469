//! Index statistics for the planner: how many rows one value of each leading prefix of an
//! index holds, from the cardinalities the table layer keeps (shale-table's cardinality.rs:
//! estimated by ANALYZE TABLE and SHOW INDEX, stored across restarts).
//!
//! Rules:
//! 1. Planning never reads an index to learn them: only kept figures are used
//!    (`Store::known_index_cardinality`); an index never estimated has none.
//! 2. They only break what the rules cannot: plan.rs asks for them when two or more indexes
//!    could serve the WHERE condition, and uses them only when each of those has figures;
//!    otherwise the rules alone choose, as before any ANALYZE.
//! 3. The cost of a candidate is its estimated rows, twice that for a secondary index (each
//!    entry is followed by a primary key lookup): `rows / distinct(prefix)` for an equality
//!    prefix, a third of that (or of the table) for a range, `MySQL`'s rough guess when it
//!    does not look into the index.

use std::sync::{Arc, Weak};

use shale_table::{IndexChoice, Store, TableDef};

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

    pub(crate) fn of(&self, table: &TableDef) -> Option<IndexStats> {
        self.0.upgrade().map(|i| IndexStats::of(&i.store, table))
    }
}

impl std::fmt::Debug for StatsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StatsProvider")
    }
}

/// Per index, the estimated rows per value of each leading prefix, and the table's rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexStats {
    primary: Option<Estimate>,
    secondary: Vec<Option<Estimate>>,
}

#[derive(Debug, Clone, PartialEq)]
struct Estimate {
    rows: u64,
    distinct: Arc<[u64]>,
}

impl IndexStats {
    fn of(store: &Store, table: &TableDef) -> IndexStats {
        let known = |choice| {
            store
                .known_index_cardinality(table, choice)
                .ok()
                .flatten()
                // An estimate of an empty table says nothing about how values spread.
                .filter(|(_, rows)| *rows > 0)
                .map(|(distinct, rows)| Estimate { rows, distinct })
        };
        IndexStats {
            primary: known(IndexChoice::Primary),
            secondary: (0..table.indexes.len())
                .map(|i| known(IndexChoice::Secondary(i)))
                .collect(),
        }
    }

    /// The cost of reading `index` with `eq` equal leading columns and maybe a range on the
    /// next (rule 3); `None` when the index has no figures.
    pub(crate) fn cost(&self, index: IndexChoice, eq: usize, range: bool) -> Option<f64> {
        let estimate = match index {
            IndexChoice::Primary => self.primary.as_ref(),
            IndexChoice::Secondary(i) => self.secondary.get(i)?.as_ref(),
        }?;
        #[allow(clippy::cast_precision_loss)] // estimates: a few digits matter
        let rows = estimate.rows as f64;
        let mut matched = match eq.checked_sub(1) {
            None => rows,
            #[allow(clippy::cast_precision_loss)]
            Some(p) => rows / estimate.distinct.get(p).copied().unwrap_or(1).max(1) as f64,
        };
        if range {
            matched /= 3.0;
        }
        let lookups = match index {
            IndexChoice::Primary => 1.0,
            IndexChoice::Secondary(_) => 2.0,
        };
        Some(matched * lookups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(primary: (u64, &[u64]), secondary: &[(u64, &[u64])]) -> IndexStats {
        let e = |(rows, distinct): (u64, &[u64])| {
            Some(Estimate {
                rows,
                distinct: distinct.into(),
            })
        };
        IndexStats {
            primary: e(primary),
            secondary: secondary.iter().map(|&s| e(s)).collect(),
        }
    }

    #[test]
    fn cost_is_rows_per_value_and_secondary_lookups_count_twice() {
        let s = stats((1000, &[1000]), &[(1000, &[2]), (1000, &[500, 1000])]);
        assert_eq!(s.cost(IndexChoice::Primary, 1, false), Some(1.0));
        assert_eq!(s.cost(IndexChoice::Secondary(0), 1, false), Some(1000.0));
        assert_eq!(s.cost(IndexChoice::Secondary(1), 1, false), Some(4.0));
        assert_eq!(s.cost(IndexChoice::Secondary(1), 2, false), Some(2.0));
        let third = s.cost(IndexChoice::Primary, 0, true).unwrap();
        assert!((third - 1000.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.cost(IndexChoice::Secondary(5), 1, false), None);
    }

    #[test]
    fn no_distinct_value_counts_as_one_rather_than_dividing_by_zero() {
        let s = stats((10, &[0]), &[(10, &[0])]);
        assert_eq!(s.cost(IndexChoice::Secondary(0), 1, false), Some(20.0));
    }
}
