//! The table iterator: a two-level iterator over the decoded index (a position in
//! [`crate::index::Index`]) and the data blocks it points to, with optional user-key bounds.
//!
//! Invariants:
//! 1. `valid` is true only when the data iterator is positioned on an entry inside the bounds
//!    and no error has been seen; every positioning call recomputes it.
//! 2. The first error (I/O or corruption) is kept, makes the iterator invalid and is returned
//!    by [`TableIter::status`]; nothing after a damaged block is returned silently.
//! 3. For a table opened with a global seqno, every key returned carries that seqno in place
//!    of the stored 0 (`GlobalSeqnoKey`), and seeks position by the keys as returned.
//!    Each user key has one entry in such a table, so the rewrite keeps the order.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::block::BlockIter;
use crate::comparator::Comparator;
use crate::error::{Error, Result};
use crate::format::BlockHandle;
use crate::index::Index;
use crate::key::{user_key_of, InternalKey, SeqNo, ValueKind, MAX_SEQNO, TRAILER_SIZE};
use crate::readahead::Readahead;
use crate::reader::{ReadOptions, Table};

/// Iterates a table's point entries in internal-key order.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    /// The table's decoded index, held for the iterator's life (it may live in the cache).
    block_index: Arc<Index>,
    /// Position in the decoded index; `None` when off either end.
    index: Option<usize>,
    data: Option<BlockIter>,
    data_handle: Option<BlockHandle>,
    // The rarely set parts are boxed: engines build and move iterators for every seek, and
    // a smaller one is copied in fewer instructions.
    /// User-key bounds, when the read has either.
    bounds: Option<Box<Bounds>>,
    error: Option<Box<Error>>,
    valid: bool,
    /// `next` may stay in the block without looking further: no upper bound, no global seqno.
    plain_step: bool,
    skip_cache_fill: bool,
    /// An ingested table's global seqno, with the current key rewritten to carry it.
    global_seqno: Option<Box<GlobalSeqnoKey>>,
    /// Reads ahead of sequential block loads that miss the cache (src/readahead.rs).
    readahead: Readahead,
}

/// A read's user-key bounds (`ReadOptions::lower_bound` and `upper_bound`).
#[derive(Debug)]
struct Bounds {
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

/// The global seqno of a table opened with one, and the current key carrying it in its
/// trailer (invariant 3).
#[derive(Debug)]
struct GlobalSeqnoKey {
    seqno: SeqNo,
    key: Vec<u8>,
}

impl TableIter {
    pub(crate) fn new(table: Arc<Table>, options: ReadOptions) -> Self {
        let index = None;
        // An index that cannot be loaded leaves the iterator empty with the error as status.
        let (block_index, error) = match table.index() {
            Ok(block_index) => (block_index, None),
            Err(error) => (Arc::new(Index::empty()), Some(Box::new(error))),
        };
        let global_seqno = table.global_seqno().map(|seqno| {
            Box::new(GlobalSeqnoKey {
                seqno,
                key: Vec::new(),
            })
        });
        let ReadOptions {
            lower_bound,
            upper_bound,
            skip_cache_fill,
            max_readahead_size,
        } = options;
        let plain_step = upper_bound.is_none() && global_seqno.is_none();
        let bounds = (lower_bound.is_some() || upper_bound.is_some()).then(|| {
            Box::new(Bounds {
                lower: lower_bound,
                upper: upper_bound,
            })
        });
        TableIter {
            block_index,
            index,
            data: None,
            data_handle: None,
            bounds,
            error,
            valid: false,
            plain_step,
            skip_cache_fill,
            global_seqno,
            readahead: Readahead::new(max_readahead_size),
            table,
        }
    }

    /// Whether the iterator is on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current entry's encoded internal key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        if let Some(global) = &self.global_seqno {
            return &global.key;
        }
        self.data.as_ref().map_or(&[], BlockIter::key)
    }

    /// The current entry's user key.
    pub fn user_key(&self) -> &[u8] {
        user_key_of(self.key())
    }

    /// The current entry's value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        self.data.as_ref().map_or(&[], BlockIter::value)
    }

    /// The first error seen, if any.
    pub fn status(&self) -> Result<()> {
        self.error.as_ref().map_or(Ok(()), |e| Err(e.duplicate()))
    }

    /// Positions at the first entry (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        if let Some(lower) = self.lower_bound().map(<[u8]>::to_vec) {
            self.seek(InternalKey::for_seek(&lower, MAX_SEQNO).encoded());
            return;
        }
        self.index = (self.block_index.len() > 0).then_some(0);
        self.load_data_block();
        if let Some(data) = &mut self.data {
            data.seek_to_first();
        }
        self.skip_empty_forward();
        self.settle_forward();
    }

    /// Positions at the last entry (before the upper bound).
    pub fn seek_to_last(&mut self) {
        if let Some(upper) = self.upper_bound().map(<[u8]>::to_vec) {
            self.seek_for_prev(InternalKey::for_seek(&upper, MAX_SEQNO).encoded());
            return;
        }
        self.index = self.block_index.len().checked_sub(1);
        self.load_data_block();
        if let Some(data) = &mut self.data {
            data.seek_to_last();
        }
        self.skip_empty_backward();
        self.settle_backward();
    }

    /// Positions at the first entry whose internal key is `>= target`.
    pub fn seek(&mut self, target: &[u8]) {
        if self.global_seqno.is_none() {
            self.seek_stored(target);
            return;
        }
        // The stored entry of the target's user key (seqno 0) is at or after every target of
        // that user key; as returned it may sort before the target, then the next one is it.
        self.seek_stored(InternalKey::for_seek(user_key_of(target), 0).encoded());
        if self.valid
            && self
                .table
                .internal_comparator()
                .compare(self.key(), target)
                .is_lt()
        {
            self.next();
        }
    }

    /// [`Self::seek`] by the keys as stored.
    fn seek_stored(&mut self, target: &[u8]) {
        let clamped;
        let target = match self.lower_bound() {
            Some(lower) if self.user_compare(user_key_of(target), lower) == Ordering::Less => {
                clamped = InternalKey::for_seek(lower, MAX_SEQNO);
                clamped.encoded()
            }
            _ => target,
        };
        let position = self.block_index.seek(target);
        self.index = (position < self.block_index.len()).then_some(position);
        self.load_data_block();
        if let Some(data) = &mut self.data {
            data.seek_by(&**self.table.internal_comparator(), target);
        }
        self.skip_empty_forward();
        self.settle_forward();
    }

    /// Positions at the last entry whose internal key is `<= target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        if self.global_seqno.is_none() {
            self.seek_for_prev_stored(target);
            return;
        }
        // The smallest internal key of the target's user key is at or after its stored entry.
        let mut last_of_user = user_key_of(target).to_vec();
        last_of_user.extend_from_slice(&u64::from(ValueKind::Deletion.tag()).to_le_bytes());
        self.seek_for_prev_stored(&last_of_user);
        if self.valid
            && self
                .table
                .internal_comparator()
                .compare(self.key(), target)
                .is_gt()
        {
            self.prev();
        }
    }

    /// [`Self::seek_for_prev`] by the keys as stored.
    fn seek_for_prev_stored(&mut self, target: &[u8]) {
        let clamped;
        let target = match self.upper_bound() {
            Some(upper) if self.user_compare(user_key_of(target), upper) != Ordering::Less => {
                clamped = InternalKey::for_seek(upper, MAX_SEQNO);
                clamped.encoded()
            }
            _ => target,
        };
        let index = &self.block_index;
        self.index = Some(index.seek(target).min(index.len())).filter(|&p| p < index.len());
        if self.index.is_none() {
            self.index = index.len().checked_sub(1);
        }
        self.load_data_block();
        if let Some(data) = &mut self.data {
            data.seek_for_prev(target);
        }
        self.skip_empty_backward();
        self.settle_backward();
    }

    /// Moves to the next entry.
    #[inline]
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if let Some(data) = &mut self.data {
            data.next();
            // Still in the block, with no upper bound or global seqno to apply: settled
            // (invariant 1; a block error would have made `data` invalid).
            if data.valid() && self.plain_step {
                return;
            }
        }
        self.next_slow();
    }

    /// The rest of [`Self::next`]: a block boundary, the upper bound, the global seqno.
    fn next_slow(&mut self) {
        self.skip_empty_forward();
        self.settle_forward();
    }

    /// Moves to the previous entry.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if let Some(data) = &mut self.data {
            data.prev();
        }
        self.skip_empty_backward();
        self.settle_backward();
    }

    fn user_compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.table
            .internal_comparator()
            .user_comparator()
            .compare(a, b)
    }

    /// Loads the data block the index position points at (invalidating at either end).
    fn load_data_block(&mut self) {
        let Some(position) = self.index.filter(|_| self.error.is_none()) else {
            self.data = None;
            return;
        };
        let handle = self.block_index.handle(position);
        if self.data.is_some() && self.data_handle == Some(handle) {
            return;
        }
        let readahead = if self.readahead.enabled() {
            self.readahead.note_load(handle);
            Some(&mut self.readahead)
        } else {
            None
        };
        match self
            .table
            .data_block(handle, !self.skip_cache_fill, readahead)
        {
            Ok(block) => {
                match &mut self.data {
                    Some(data) => data.reset_to(&block),
                    None => self.data = Some(block.iter(self.table.internal_comparator().clone())),
                }
                self.data_handle = Some(handle);
            }
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, error: Error) {
        if self.error.is_none() {
            self.error = Some(Box::new(error));
        }
        self.data = None;
        self.data_handle = None;
        self.valid = false;
    }

    /// Takes a data iterator's error, if it has one. Returns true when it did.
    fn take_data_error(&mut self) -> bool {
        let Some(data) = &self.data else { return false };
        match data.status() {
            Ok(()) => false,
            Err(e) => {
                let offset = self.data_handle.map_or(0, |h| h.offset);
                self.fail(e.at(self.table.path(), offset));
                true
            }
        }
    }

    fn skip_empty_forward(&mut self) {
        loop {
            if self.error.is_some() {
                return;
            }
            match self.data.as_ref().map(BlockIter::valid) {
                Some(true) => return,
                Some(false) if self.take_data_error() => return,
                None if self.index.is_none() => return,
                _ => {}
            }
            // Every key of later blocks is above this block's separator; past the upper
            // bound there is nothing left to read.
            if let Some(upper) = self.upper_bound() {
                let separator = self.index.map(|p| self.block_index.key(p));
                if separator
                    .is_some_and(|k| self.user_compare(user_key_of(k), upper) != Ordering::Less)
                {
                    self.data = None;
                    return;
                }
            }
            self.index = self
                .index
                .map(|p| p + 1)
                .filter(|&p| p < self.block_index.len());
            self.load_data_block();
            match &mut self.data {
                Some(data) => data.seek_to_first(),
                None => return,
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        loop {
            if self.error.is_some() {
                return;
            }
            match self.data.as_ref().map(BlockIter::valid) {
                Some(true) => return,
                Some(false) if self.take_data_error() => return,
                None if self.index.is_none() => return,
                _ => {}
            }
            self.index = self.index.and_then(|p| p.checked_sub(1));
            self.load_data_block();
            match &mut self.data {
                Some(data) => data.seek_to_last(),
                None => return,
            }
        }
    }

    fn on_entry(&self) -> bool {
        self.error.is_none() && self.data.as_ref().is_some_and(BlockIter::valid)
    }

    fn settle_forward(&mut self) {
        self.valid = self.on_entry()
            && self.upper_bound().is_none_or(|upper| {
                let key = self.data.as_ref().map_or(&[][..], BlockIter::key);
                self.user_compare(user_key_of(key), upper) == Ordering::Less
            });
        self.apply_global_seqno();
    }

    fn settle_backward(&mut self) {
        self.valid = self.on_entry()
            && self.lower_bound().is_none_or(|lower| {
                let key = self.data.as_ref().map_or(&[][..], BlockIter::key);
                self.user_compare(user_key_of(key), lower) != Ordering::Less
            });
        self.apply_global_seqno();
    }

    /// Rewrites the current key's seqno to the global one (invariant 3).
    fn apply_global_seqno(&mut self) {
        let (Some(global), true, Some(data)) = (&mut self.global_seqno, self.valid, &self.data)
        else {
            return;
        };
        let stored = data.key();
        let Some(split) = stored.len().checked_sub(TRAILER_SIZE) else {
            return;
        };
        let kind = stored[split];
        let with_seqno = (global.seqno << 8) | u64::from(kind);
        global.key.clear();
        global.key.extend_from_slice(&stored[..split]);
        global.key.extend_from_slice(&with_seqno.to_le_bytes());
    }

    fn lower_bound(&self) -> Option<&[u8]> {
        self.bounds.as_ref()?.lower.as_deref()
    }

    fn upper_bound(&self) -> Option<&[u8]> {
        self.bounds.as_ref()?.upper.as_deref()
    }
}
