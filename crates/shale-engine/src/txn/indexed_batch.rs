//! The indexed write batch: a transaction's uncommitted changes, searchable by key so that the
//! transaction reads its own writes, with a log of every change for savepoints.
//!
//! Invariants:
//! 1. `index[(keyspace, key)]` is the position in `log` of the newest change to that key.
//! 2. `bytes` is the memory charged for `log`: key and value bytes plus a fixed overhead per
//!    change (superseded changes stay charged, since a savepoint may bring them back).
//! 3. Truncating the log to a savepoint's length rebuilds `index` and `bytes` from the log.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

use shale_sst::Comparator;

use crate::batch::WriteBatch;
use crate::error::Result;

/// Bytes charged per change beyond its key and value (the log entry and index node).
pub(crate) const CHANGE_OVERHEAD: usize = 64;

#[derive(Debug, Clone)]
struct Change {
    keyspace: u32,
    key: Vec<u8>,
    /// `None` is a deletion.
    value: Option<Vec<u8>>,
}

/// One key's pending state as an iterator sees it: the key and its value, `None` if deleted.
pub(crate) type PendingEntry = (Vec<u8>, Option<Vec<u8>>);

#[derive(Debug, Default)]
pub(crate) struct IndexedBatch {
    log: Vec<Change>,
    index: BTreeMap<(u32, Vec<u8>), usize>,
    bytes: usize,
}

impl IndexedBatch {
    /// What a change of `key` to `value` would add to [`Self::bytes`].
    pub(crate) fn charge(key: &[u8], value: Option<&[u8]>) -> usize {
        key.len() + value.map_or(0, <[u8]>::len) + CHANGE_OVERHEAD
    }

    pub(crate) fn put(&mut self, keyspace: u32, key: &[u8], value: &[u8]) {
        self.push(keyspace, key, Some(value.to_vec()));
    }

    pub(crate) fn delete(&mut self, keyspace: u32, key: &[u8]) {
        self.push(keyspace, key, None);
    }

    fn push(&mut self, keyspace: u32, key: &[u8], value: Option<Vec<u8>>) {
        self.bytes += Self::charge(key, value.as_deref());
        self.index.insert((keyspace, key.to_vec()), self.log.len());
        self.log.push(Change {
            keyspace,
            key: key.to_vec(),
            value,
        });
    }

    /// `None` if the batch does not touch `key`; `Some(None)` if it deletes it.
    #[allow(clippy::option_option)] // Three states, each with its plain meaning.
    pub(crate) fn get(&self, keyspace: u32, key: &[u8]) -> Option<Option<&[u8]>> {
        // The BTreeMap wants an owned tuple to look up; keys are short enough.
        let at = *self.index.get(&(keyspace, key.to_vec()))?;
        Some(self.log[at].value.as_deref())
    }

    /// Changes made so far (a savepoint records this).
    pub(crate) fn len(&self) -> usize {
        self.log.len()
    }

    /// Distinct keys changed.
    pub(crate) fn rows(&self) -> usize {
        self.index.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.log.is_empty()
    }

    /// Undoes every change after the first `len` (invariant 3).
    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.log.len() {
            return;
        }
        self.log.truncate(len);
        self.index.clear();
        self.bytes = 0;
        for (at, change) in self.log.iter().enumerate() {
            self.index.insert((change.keyspace, change.key.clone()), at);
            self.bytes += Self::charge(&change.key, change.value.as_deref());
        }
    }

    pub(crate) fn clear(&mut self) {
        self.truncate(0);
    }

    /// Every changed key, in (keyspace, bytewise key) order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &(u32, Vec<u8>)> {
        self.index.keys()
    }

    /// The final state of every changed key as one write batch.
    pub(crate) fn to_write_batch(&self) -> Result<WriteBatch> {
        let mut batch = WriteBatch::new();
        for (&(keyspace, ref key), &at) in &self.index {
            match &self.log[at].value {
                Some(value) => batch.put(keyspace, key, value)?,
                None => batch.delete(keyspace, key)?,
            }
        }
        Ok(batch)
    }

    /// The pending entries of `keyspace` within `[lower, upper)`, sorted by `cmp`.
    pub(crate) fn range(
        &self,
        keyspace: u32,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        cmp: &dyn Comparator,
    ) -> Vec<PendingEntry> {
        let start = Bound::Included((keyspace, Vec::new()));
        let mut entries: Vec<PendingEntry> = self
            .index
            .range((start, Bound::Unbounded))
            .take_while(|((ks, _), _)| *ks == keyspace)
            .filter(|((_, key), _)| {
                lower.is_none_or(|l| cmp.compare(key, l) != Ordering::Less)
                    && upper.is_none_or(|u| cmp.compare(key, u) == Ordering::Less)
            })
            .map(|((_, key), &at)| (key.clone(), self.log[at].value.clone()))
            .collect();
        entries.sort_by(|a, b| cmp.compare(&a.0, &b.0));
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_sst::BytewiseComparator;

    #[test]
    fn newest_change_wins_and_savepoints_undo() {
        let mut batch = IndexedBatch::default();
        batch.put(0, b"a", b"1");
        batch.delete(0, b"b");
        let savepoint = batch.len();
        batch.put(0, b"a", b"2");
        batch.put(1, b"a", b"other keyspace");
        assert_eq!(batch.get(0, b"a"), Some(Some(&b"2"[..])));
        assert_eq!(batch.get(0, b"b"), Some(None));
        assert_eq!(batch.get(0, b"c"), None);
        assert_eq!(batch.rows(), 3);
        let before = IndexedBatch::charge(b"a", Some(b"1")) + IndexedBatch::charge(b"b", None);
        batch.truncate(savepoint);
        assert_eq!(batch.get(0, b"a"), Some(Some(&b"1"[..])));
        assert_eq!(batch.get(1, b"a"), None);
        assert_eq!(batch.bytes(), before);
        let written = batch.to_write_batch().unwrap();
        assert_eq!(written.count(), 2);
    }

    #[test]
    fn range_keeps_to_keyspace_and_bounds() {
        let mut batch = IndexedBatch::default();
        for key in [&b"d"[..], b"a", b"c", b"b"] {
            batch.put(0, key, key);
        }
        batch.delete(0, b"c");
        batch.put(1, b"b", b"x");
        let keys: Vec<_> = batch
            .range(0, Some(b"b"), Some(b"d"), &BytewiseComparator)
            .into_iter()
            .map(|(k, v)| (k, v.is_some()))
            .collect();
        assert_eq!(keys, vec![(b"b".to_vec(), true), (b"c".to_vec(), false)]);
    }
}
