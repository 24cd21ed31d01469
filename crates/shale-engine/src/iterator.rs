//! The iterator interface every source of internal keys implements (memtables, table files,
//! levels, merges), so that merging and the user-facing iterator are written once.
//!
//! Contract (the same for every implementation):
//! 1. Keys are encoded internal keys (docs/format/sst.md, "Internal key"), visited in
//!    internal-key order by `next` and in reverse by `prev`.
//! 2. `key`/`value` may be called only while `valid()`; positioning calls may be made at any
//!    time and fully reset the position.
//! 3. An error makes the iterator invalid; `status` then returns it (and keeps returning it).
//!    `valid() == false` with `status() == Ok` means the end was reached.

use std::fmt;

use crate::error::{Error, Result};
use crate::level_iter::LevelIter;
use crate::memtable::MemTableIter;

/// A positioned cursor over internal keys. See the module docs for the contract.
pub trait InternalIterator: Send {
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// Positions at the first entry.
    fn seek_to_first(&mut self);
    /// Positions at the last entry.
    fn seek_to_last(&mut self);
    /// Positions at the first entry whose key is `>= target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Positions at the last entry whose key is `<= target` (an internal key).
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry.
    fn next(&mut self);
    /// Moves to the previous entry.
    fn prev(&mut self);
    /// [`Self::next`], then the new entry's key (`None` when no longer valid): one call for
    /// a caller that needs all three, as a merge stepping its top child does, so a source
    /// of several layers is entered once rather than three times.
    #[inline]
    fn next_key(&mut self) -> Option<&[u8]> {
        self.next();
        self.valid().then(|| self.key())
    }
    /// [`Self::prev`], then the new entry's key, as [`Self::next_key`].
    #[inline]
    fn prev_key(&mut self) -> Option<&[u8]> {
        self.prev();
        self.valid().then(|| self.key())
    }
    /// The current internal key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];
    /// The first error seen, if any.
    fn status(&self) -> Result<()>;
}

/// Table files iterate through the same interface.
impl InternalIterator for shale_sst::TableIter {
    #[inline]
    fn valid(&self) -> bool {
        shale_sst::TableIter::valid(self)
    }
    fn seek_to_first(&mut self) {
        shale_sst::TableIter::seek_to_first(self);
    }
    fn seek_to_last(&mut self) {
        shale_sst::TableIter::seek_to_last(self);
    }
    fn seek(&mut self, target: &[u8]) {
        shale_sst::TableIter::seek(self, target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        shale_sst::TableIter::seek_for_prev(self, target);
    }
    #[inline]
    fn next(&mut self) {
        shale_sst::TableIter::next(self);
    }
    fn prev(&mut self) {
        shale_sst::TableIter::prev(self);
    }
    #[inline]
    fn key(&self) -> &[u8] {
        shale_sst::TableIter::key(self)
    }
    #[inline]
    fn value(&self) -> &[u8] {
        shale_sst::TableIter::value(self)
    }
    fn status(&self) -> Result<()> {
        shale_sst::TableIter::status(self).map_err(Error::from)
    }
}

/// A boxed iterator iterates as what it holds (tests and callers with their own sources).
impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    #[inline]
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first();
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        (**self).seek_for_prev(target);
    }
    #[inline]
    fn next(&mut self) {
        (**self).next();
    }
    fn prev(&mut self) {
        (**self).prev();
    }
    #[inline]
    fn next_key(&mut self) -> Option<&[u8]> {
        (**self).next_key()
    }
    fn prev_key(&mut self) -> Option<&[u8]> {
        (**self).prev_key()
    }
    #[inline]
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    #[inline]
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
}

/// One source of a merge, as the engine builds them: a memtable, a table file, a sorted level,
/// or any other iterator. A concrete type rather than `Box<dyn InternalIterator>` because the
/// merge asks its sources for a key several times per step: matching on the kind lets those
/// calls be direct and inlined, where a trait object costs a virtual call each. Tables and
/// levels are held in place (a merge keeps its sources in one slice): boxing them would
/// allocate per source for every iterator.
pub enum SourceIter {
    /// A memtable (active or immutable).
    MemTable(MemTableIter),
    /// One table file (an L0 table, or the open table of a level).
    Table(shale_sst::TableIter),
    /// A sorted level (L1 and deeper), in place: a box would cost every iterator an
    /// allocation per level.
    Level(LevelIter),
    /// Anything else.
    Other(Box<dyn InternalIterator>),
}

/// Implements [`InternalIterator`] for an enum of iterators by forwarding every call to the
/// variant's iterator: one match per call, and a direct (inlinable) call inside each arm.
macro_rules! forward_internal_iterator {
    ($enum:ident { $($variant:ident),+ $(,)? }) => {
        impl $crate::iterator::InternalIterator for $enum {
            #[inline]
            fn valid(&self) -> bool {
                match self { $($enum::$variant(it) => it.valid(),)+ }
            }
            fn seek_to_first(&mut self) {
                match self { $($enum::$variant(it) => it.seek_to_first(),)+ }
            }
            fn seek_to_last(&mut self) {
                match self { $($enum::$variant(it) => it.seek_to_last(),)+ }
            }
            fn seek(&mut self, target: &[u8]) {
                match self { $($enum::$variant(it) => it.seek(target),)+ }
            }
            fn seek_for_prev(&mut self, target: &[u8]) {
                match self { $($enum::$variant(it) => it.seek_for_prev(target),)+ }
            }
            #[inline]
            fn next(&mut self) {
                match self { $($enum::$variant(it) => it.next(),)+ }
            }
            fn prev(&mut self) {
                match self { $($enum::$variant(it) => it.prev(),)+ }
            }
            #[inline]
            fn next_key(&mut self) -> Option<&[u8]> {
                match self { $($enum::$variant(it) => it.next_key(),)+ }
            }
            fn prev_key(&mut self) -> Option<&[u8]> {
                match self { $($enum::$variant(it) => it.prev_key(),)+ }
            }
            #[inline]
            fn key(&self) -> &[u8] {
                match self { $($enum::$variant(it) => it.key(),)+ }
            }
            #[inline]
            fn value(&self) -> &[u8] {
                match self { $($enum::$variant(it) => it.value(),)+ }
            }
            fn status(&self) -> $crate::error::Result<()> {
                match self {
                    $($enum::$variant(it) => $crate::iterator::InternalIterator::status(it),)+
                }
            }
        }
    };
}
pub(crate) use forward_internal_iterator;

forward_internal_iterator!(SourceIter {
    MemTable,
    Table,
    Level,
    Other
});

impl From<Box<dyn InternalIterator>> for SourceIter {
    fn from(iter: Box<dyn InternalIterator>) -> Self {
        SourceIter::Other(iter)
    }
}

impl fmt::Debug for SourceIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceIter::MemTable(it) => f.debug_tuple("MemTable").field(it).finish(),
            SourceIter::Table(it) => f.debug_tuple("Table").field(it).finish(),
            SourceIter::Level(it) => f.debug_tuple("Level").field(it).finish(),
            SourceIter::Other(_) => f.write_str("Other"),
        }
    }
}

/// An iterator over a sorted in-memory vector of (internal key, value) pairs; used by tests
/// as a reference source and wherever a small fixed set of entries needs iterating.
#[derive(Debug, Default)]
#[cfg(any(test, feature = "testing"))]
pub struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    comparator: Option<std::sync::Arc<shale_sst::InternalKeyComparator>>,
    position: Option<usize>,
}

#[cfg(any(test, feature = "testing"))]
impl VecIterator {
    /// Wraps entries that are already sorted by `comparator`.
    pub fn new(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        comparator: std::sync::Arc<shale_sst::InternalKeyComparator>,
    ) -> Self {
        VecIterator {
            entries,
            comparator: Some(comparator),
            position: None,
        }
    }

    fn less(&self, a: &[u8], b: &[u8]) -> bool {
        use shale_sst::Comparator as _;
        self.comparator
            .as_ref()
            .is_some_and(|c| c.compare(a, b) == std::cmp::Ordering::Less)
    }
}

#[cfg(any(test, feature = "testing"))]
impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.position.is_some()
    }
    fn seek_to_first(&mut self) {
        self.position = (!self.entries.is_empty()).then_some(0);
    }
    fn seek_to_last(&mut self) {
        self.position = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        let p = self.entries.partition_point(|(k, _)| self.less(k, target));
        self.position = (p < self.entries.len()).then_some(p);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let p = self.entries.partition_point(|(k, _)| !self.less(target, k));
        self.position = p.checked_sub(1);
    }
    fn next(&mut self) {
        self.position = self
            .position
            .map(|p| p + 1)
            .filter(|&p| p < self.entries.len());
    }
    fn prev(&mut self) {
        self.position = self.position.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        self.position.map_or(&[], |p| &self.entries[p].0)
    }
    fn value(&self) -> &[u8] {
        self.position.map_or(&[], |p| &self.entries[p].1)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
