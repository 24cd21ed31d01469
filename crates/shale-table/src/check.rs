//! CHECK TABLE: walks a table and its secondary indexes and reports where they disagree
//! (ARCHITECTURE.md invariant 6: each index holds exactly one entry per row, and nothing
//! else), by the layout of docs/format/table-keys.md.
//!
//! Invariants:
//! 1. It reports and never repairs: it takes no lock and writes nothing.
//! 2. It sees what its transaction sees (the snapshot under REPEATABLE READ), so a clean
//!    report is about one consistent state.

use std::ops::Bound;

use shale_engine::ReadOptions;

use crate::codec::key::range_bounds;
use crate::codec::row::decode_row;
use crate::error::Result;
use crate::index::{entry_for_row, pk_key_of_entry, table_id};
use crate::schema::TableDef;
use crate::txn::TableTxn;

/// What [`TableTxn::check_table`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableCheck {
    /// Rows in the table.
    pub rows: u64,
    /// Entries in each secondary index (in [`TableDef::indexes`] order).
    pub index_entries: Vec<u64>,
    /// Entries whose row is missing or would not produce them: (index name, entry key).
    pub entries_without_rows: Vec<(String, Vec<u8>)>,
    /// Rows missing their entry in an index: (index name, row key).
    pub rows_without_entries: Vec<(String, Vec<u8>)>,
}

impl TableCheck {
    /// Whether the table and its indexes agree.
    pub fn is_ok(&self) -> bool {
        self.entries_without_rows.is_empty()
            && self.rows_without_entries.is_empty()
            && self.index_entries.iter().all(|&n| n == self.rows)
    }
}

impl TableTxn {
    /// Checks that every row has its entry in every secondary index and every entry its row,
    /// as this transaction sees them (a full scan of the table and of each index). Rows that
    /// do not decode fail the check with [`Error::Corruption`](crate::Error::Corruption).
    pub fn check_table(&mut self, table: &TableDef) -> Result<TableCheck> {
        let mut check = TableCheck {
            index_entries: vec![0; table.indexes.len()],
            ..TableCheck::default()
        };
        let mut scratch = Vec::new();
        let (lower, upper) = range_bounds(table_id(table), Bound::Unbounded, Bound::Unbounded);
        let mut iter = self.engine().iterator(ReadOptions {
            lower_bound: Some(lower),
            upper_bound: upper,
            ..ReadOptions::default()
        })?;
        iter.seek_to_first();
        while iter.valid() {
            check.rows += 1;
            let row = decode_row(table, iter.value())?;
            for index in &table.indexes {
                let (key, value) = entry_for_row(table, index, &row, iter.key(), &mut scratch)?;
                if self.engine().get(&key)?.as_deref() != Some(&value[..]) {
                    check
                        .rows_without_entries
                        .push((index.name.clone(), iter.key().to_vec()));
                }
            }
            iter.next();
        }
        iter.status()?;
        for (i, index) in table.indexes.iter().enumerate() {
            let (lower, upper) = range_bounds(index.index_id, Bound::Unbounded, Bound::Unbounded);
            let mut iter = self.engine().iterator(ReadOptions {
                lower_bound: Some(lower),
                upper_bound: upper,
                ..ReadOptions::default()
            })?;
            iter.seek_to_first();
            while iter.valid() {
                if let Some(n) = check.index_entries.get_mut(i) {
                    *n += 1;
                }
                let matches = match pk_key_of_entry(table, index, iter.key(), iter.value()) {
                    Ok(pk) => match self.engine().get(&pk)? {
                        Some(bytes) => {
                            let row = decode_row(table, &bytes)?;
                            let expected = entry_for_row(table, index, &row, &pk, &mut scratch)?;
                            expected.0 == iter.key() && expected.1 == iter.value()
                        }
                        None => false,
                    },
                    Err(_) => false,
                };
                if !matches {
                    check
                        .entries_without_rows
                        .push((index.name.clone(), iter.key().to_vec()));
                }
                iter.next();
            }
            iter.status()?;
        }
        Ok(check)
    }

    /// Deletes only the row's key, leaving its index entries (tests plant inconsistencies).
    #[cfg(feature = "testing")]
    pub fn delete_row_key_only(&mut self, table: &TableDef, pk: &[crate::Value]) -> Result<()> {
        let mut key = Vec::new();
        crate::index::pk_key_from_values(&mut key, table, pk, &mut Vec::new())?;
        Ok(self.engine().delete(&key)?)
    }

    /// Deletes only `row`'s entry in `table.indexes[index]` (tests plant inconsistencies).
    #[cfg(feature = "testing")]
    pub fn delete_index_entry_only(
        &mut self,
        table: &TableDef,
        index: usize,
        row: &[crate::Value],
    ) -> Result<()> {
        let mut scratch = Vec::new();
        let mut pk = Vec::new();
        crate::index::pk_key_of_row(&mut pk, table, row, None, &mut scratch)?;
        let index = table
            .indexes
            .get(index)
            .ok_or_else(|| crate::Error::InvalidArgument("no such index".into()))?;
        let (key, _) = entry_for_row(table, index, row, &pk, &mut scratch)?;
        Ok(self.engine().delete(&key)?)
    }
}
