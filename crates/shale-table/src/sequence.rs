//! `AUTO_INCREMENT` and hidden row id counters (docs/format/catalog.md, "Reservations").
//!
//! Invariants:
//! 1. No value is handed out twice, across restarts and crashes too: every value handed out
//!    is below the reservation persisted under `A`/`R` (written before the value is handed
//!    out) or below the largest value stored + 1, and a counter starts above both.
//! 2. A counter is created lazily, on first use after open or after TRUNCATE/DROP forgot it.

use std::collections::HashMap;
use std::sync::PoisonError;

use shale_engine::{ReadOptions, WriteBatch, WriteOptions};

use crate::codec::key::{decode_int_column, index_prefix, prefix_successor};
use crate::codec::Reader;
use crate::error::{Error, Result};
use crate::schema::TableDef;
use crate::store::StoreInner;
use crate::system::{self, TAG_AUTO_INCREMENT, TAG_ROW_ID};
use crate::value::Value;

/// How many values one persisted `AUTO_INCREMENT` / row id reservation covers.
const RESERVATION: u64 = 1024;

/// One `AUTO_INCREMENT` or hidden row id counter (invariant 1).
#[derive(Debug)]
pub(crate) struct Sequence {
    next: u64,
    /// Persisted: no value at or above it was handed out before this open.
    reserved: u64,
}

impl StoreInner {
    pub(crate) fn forget_sequences(&self, table_id: u32) {
        let mut sequences = self
            .sequences
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        sequences.remove(&(TAG_AUTO_INCREMENT, table_id));
        sequences.remove(&(TAG_ROW_ID, table_id));
    }

    /// The value the counter `(tag, table_id)` hands out next, if it is loaded (every value
    /// handed out is below it, so it is a valid reservation: ALTER's rewrite moves it to the
    /// new table id exactly instead of the persisted reservation up to 1024 above).
    pub(crate) fn loaded_next(&self, tag: u8, table_id: u32) -> Option<u64> {
        self.sequences
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(tag, table_id))
            .map(|s| s.next)
    }

    /// Hands out the next value of the table's `AUTO_INCREMENT` (`TAG_AUTO_INCREMENT`) or hidden
    /// row id (`TAG_ROW_ID`) counter (invariant 1).
    pub(crate) fn next_sequence(&self, tag: u8, table: &TableDef) -> Result<u64> {
        let table_id = table.primary_key.index_id;
        let mut sequences = self
            .sequences
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let sequence = self.sequence_locked(&mut sequences, tag, table)?;
        let value = sequence.next;
        let next = value.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument(format!("table '{}': counter exhausted", table.name))
        })?;
        if next > sequence.reserved {
            let reserved = next.saturating_add(RESERVATION);
            let mut batch = WriteBatch::new();
            batch.put(
                shale_engine::DEFAULT_KEYSPACE_ID,
                &system::table_key(tag, table_id),
                &reserved.to_le_bytes(),
            )?;
            self.tdb.db().write(batch, &WriteOptions::default())?;
            sequence.reserved = reserved;
        }
        sequence.next = next;
        Ok(value)
    }

    /// Moves the `AUTO_INCREMENT` counter past an explicitly inserted `value`.
    pub(crate) fn note_auto_increment(&self, table: &TableDef, value: u64) -> Result<()> {
        let mut sequences = self
            .sequences
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let sequence = self.sequence_locked(&mut sequences, TAG_AUTO_INCREMENT, table)?;
        if value >= sequence.next {
            sequence.next = value.saturating_add(1);
        }
        Ok(())
    }

    fn sequence_locked<'s>(
        &self,
        sequences: &'s mut HashMap<(u8, u32), Sequence>,
        tag: u8,
        table: &TableDef,
    ) -> Result<&'s mut Sequence> {
        let table_id = table.primary_key.index_id;
        let key = (tag, table_id);
        Ok(match sequences.entry(key) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                let reserved = match self.tdb.db().get(&system::table_key(tag, table_id))? {
                    Some(bytes) => Reader::new(&bytes, "counter reservation")
                        .array()
                        .map(u64::from_le_bytes)?,
                    None => 0,
                };
                let stored = self.largest_stored(tag, table)?;
                let next = reserved.max(stored.saturating_add(1)).max(1);
                entry.insert(Sequence { next, reserved })
            }
        })
    }

    /// The largest committed row id, or value of the `AUTO_INCREMENT` column (0: none; a
    /// column that starts no index is not looked up).
    fn largest_stored(&self, tag: u8, table: &TableDef) -> Result<u64> {
        let (index_id, column) = if tag == TAG_ROW_ID {
            (table.primary_key.index_id, None)
        } else {
            let Some(position) = table.columns.iter().position(|c| c.auto_increment) else {
                return Ok(0);
            };
            let index = std::iter::once(&table.primary_key)
                .chain(&table.indexes)
                .find(|i| i.columns.first() == Some(&position));
            match index {
                Some(index) => (index.index_id, table.columns.get(position)),
                None => return Ok(0),
            }
        };
        let start = index_prefix(index_id).to_vec();
        let options = ReadOptions {
            upper_bound: prefix_successor(&start),
            lower_bound: Some(start),
            ..ReadOptions::default()
        };
        let mut iter = self.tdb.db().iterator(options)?;
        iter.seek_to_last();
        if !iter.valid() {
            iter.status()?;
            return Ok(0);
        }
        let mut reader = Reader::new(iter.key(), "largest key");
        reader.take(4)?;
        Ok(match column {
            None => u64::from_be_bytes(reader.array()?),
            Some(column) => match decode_int_column(&mut reader, column)? {
                Some(Value::UInt(v)) => v,
                Some(Value::Int(v)) => u64::try_from(v).unwrap_or(0),
                _ => 0,
            },
        })
    }
}
