//! A transaction's iterator: the database as of the transaction's read view merged, at the
//! user-key level, with the transaction's own uncommitted changes (captured when the iterator
//! is created), in both directions and within the read options' bounds.
//!
//! Invariants (with `cur` the key the iterator is on):
//! 1. Moving forward, both the database iterator and `pending[pos]` are at the first entry
//!    `>= cur`; moving backward, both are at the last entry `<= cur` (`pending[pos - 1]`).
//! 2. Where both sides hold the same key, the pending change wins; a pending deletion hides
//!    the key.
//! 3. A direction change re-seeks both sides at `cur` before stepping.

use std::cmp::Ordering;
use std::sync::Arc;

use shale_sst::Comparator;

use super::indexed_batch::PendingEntry;
use crate::error::Result;
use crate::read::DbIterator;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// Where the current entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Database,
    Pending,
}

/// An iterator over one keyspace that sees the transaction's own writes.
pub struct TransactionIterator {
    db: DbIterator,
    pending: Vec<PendingEntry>,
    pos: usize,
    cmp: Arc<dyn Comparator>,
    direction: Direction,
    current: Option<Source>,
}

impl std::fmt::Debug for TransactionIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionIterator")
            .field("valid", &self.valid())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl TransactionIterator {
    pub(crate) fn new(
        db: DbIterator,
        pending: Vec<PendingEntry>,
        cmp: Arc<dyn Comparator>,
    ) -> Self {
        TransactionIterator {
            db,
            pending,
            pos: 0,
            cmp,
            direction: Direction::Forward,
            current: None,
        }
    }

    /// Whether the iterator is on a key.
    pub fn valid(&self) -> bool {
        self.current.is_some()
    }

    /// The current key.
    ///
    /// # Panics
    /// If the iterator is not [`valid`](Self::valid).
    pub fn key(&self) -> &[u8] {
        match self
            .current
            .expect("key() on an invalid TransactionIterator")
        {
            Source::Database => self.db.key(),
            Source::Pending => &self.pending_at().0,
        }
    }

    /// The current value.
    ///
    /// # Panics
    /// If the iterator is not [`valid`](Self::valid).
    pub fn value(&self) -> &[u8] {
        match self
            .current
            .expect("value() on an invalid TransactionIterator")
        {
            Source::Database => self.db.value(),
            Source::Pending => self.pending_at().1.as_deref().unwrap_or_default(),
        }
    }

    /// The first error met by the database side.
    pub fn status(&self) -> Result<()> {
        self.db.status()
    }

    fn pending_at(&self) -> &PendingEntry {
        match self.direction {
            Direction::Forward => &self.pending[self.pos],
            Direction::Backward => &self.pending[self.pos - 1],
        }
    }

    /// Positions at the first key.
    pub fn seek_to_first(&mut self) {
        self.db.seek_to_first();
        self.pos = 0;
        self.direction = Direction::Forward;
        self.settle_forward();
    }

    /// Positions at the last key.
    pub fn seek_to_last(&mut self) {
        self.db.seek_to_last();
        self.pos = self.pending.len();
        self.direction = Direction::Backward;
        self.settle_backward();
    }

    /// Positions at the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.db.seek(key);
        self.pos = self
            .pending
            .partition_point(|(k, _)| self.cmp.compare(k, key) == Ordering::Less);
        self.direction = Direction::Forward;
        self.settle_forward();
    }

    /// Positions at the last key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.db.seek_for_prev(key);
        self.pos = self
            .pending
            .partition_point(|(k, _)| self.cmp.compare(k, key) != Ordering::Greater);
        self.direction = Direction::Backward;
        self.settle_backward();
    }

    /// Moves to the next key.
    pub fn next(&mut self) {
        if self.current.is_none() {
            return;
        }
        let key = self.key().to_vec();
        if self.direction == Direction::Backward {
            // Invariant 3.
            self.db.seek(&key);
            self.pos = self
                .pending
                .partition_point(|(k, _)| self.cmp.compare(k, &key) == Ordering::Less);
            self.direction = Direction::Forward;
        }
        if self.db.valid() && self.cmp.compare(self.db.key(), &key) == Ordering::Equal {
            self.db.next();
        }
        if self.pos < self.pending.len()
            && self.cmp.compare(&self.pending[self.pos].0, &key) == Ordering::Equal
        {
            self.pos += 1;
        }
        self.settle_forward();
    }

    /// Moves to the previous key.
    pub fn prev(&mut self) {
        if self.current.is_none() {
            return;
        }
        let key = self.key().to_vec();
        if self.direction == Direction::Forward {
            self.db.seek_for_prev(&key);
            self.pos = self
                .pending
                .partition_point(|(k, _)| self.cmp.compare(k, &key) != Ordering::Greater);
            self.direction = Direction::Backward;
        }
        if self.db.valid() && self.cmp.compare(self.db.key(), &key) == Ordering::Equal {
            self.db.prev();
        }
        if self.pos > 0 && self.cmp.compare(&self.pending[self.pos - 1].0, &key) == Ordering::Equal
        {
            self.pos -= 1;
        }
        self.settle_backward();
    }

    /// Picks the smaller of the two sides, skipping keys the transaction deleted.
    fn settle_forward(&mut self) {
        loop {
            let pending = self.pending.get(self.pos);
            let order = match (self.db.valid(), pending) {
                (false, None) => {
                    self.current = None;
                    return;
                }
                (true, None) => Ordering::Less,
                (false, Some(_)) => Ordering::Greater,
                (true, Some((key, _))) => self.cmp.compare(self.db.key(), key),
            };
            if order == Ordering::Less {
                self.current = Some(Source::Database);
                return;
            }
            if pending.is_some_and(|(_, value)| value.is_some()) {
                self.current = Some(Source::Pending);
                return;
            }
            // A pending deletion (invariant 2): skip it and the database's version.
            if order == Ordering::Equal {
                self.db.next();
            }
            self.pos += 1;
        }
    }

    fn settle_backward(&mut self) {
        loop {
            let pending = self.pos.checked_sub(1).and_then(|at| self.pending.get(at));
            let order = match (self.db.valid(), pending) {
                (false, None) => {
                    self.current = None;
                    return;
                }
                (true, None) => Ordering::Greater,
                (false, Some(_)) => Ordering::Less,
                (true, Some((key, _))) => self.cmp.compare(self.db.key(), key),
            };
            if order == Ordering::Greater {
                self.current = Some(Source::Database);
                return;
            }
            if pending.is_some_and(|(_, value)| value.is_some()) {
                self.current = Some(Source::Pending);
                return;
            }
            if order == Ordering::Equal {
                self.db.prev();
            }
            self.pos -= 1;
        }
    }
}
