//! [`LevelIter`]: one iterator over all the tables of a sorted level (L1 and deeper), opening
//! each table only when the iteration reaches it.
//!
//! The level is given as [`LevelFile`]s (smallest and largest internal key, file number) and a
//! [`TableOpener`] that turns a file number into an iterator, so this module knows nothing of
//! the table cache.
//!
//! Invariants:
//! 1. `files` are sorted and do not overlap: `largest[i] < smallest[i + 1]` by the internal
//!    key comparator (architecture invariant 2). Checked with `debug_assert!` on creation.
//! 2. At most one table is open; `table_index` names it. The iterator is valid exactly when
//!    that table's iterator is valid and no error has been seen.
//! 3. Errors (from opening a table or from a table's iterator) are sticky: the first one makes
//!    the iterator invalid for good and is what `status` returns; no table is skipped.
//! 4. Bounds only save opening tables wholly outside them; entries outside the bounds may
//!    still be returned, and every entry inside them is.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use shale_sst::{Comparator as _, InternalKey, InternalKeyComparator};

use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
#[cfg(doc)]
use crate::iterator::SourceIter;

/// Opens the iterator of the given table (typically through the table cache, with the read's
/// options already applied).
pub type TableOpener = Arc<dyn Fn(&LevelFile) -> Result<LevelTable> + Send + Sync>;

/// The open table of a level: a table file's iterator, called directly, or any other iterator
/// (tests, filtering wrappers). Not a [`SourceIter`], which holds levels: a level inside a level
/// would make the calls recursive, and recursive calls cannot be inlined.
#[expect(
    clippy::large_enum_variant,
    reason = "the table variant is the usual one; boxing it would allocate per table opened"
)]
pub enum LevelTable {
    /// A table file.
    Table(shale_sst::TableIter),
    /// Anything else.
    Other(Box<dyn InternalIterator>),
}

impl fmt::Debug for LevelTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LevelTable::Table(it) => f.debug_tuple("Table").field(it).finish(),
            LevelTable::Other(_) => f.write_str("Other"),
        }
    }
}

crate::iterator::forward_internal_iterator!(LevelTable { Table, Other });

/// One table of a level, as the level iterator needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelFile {
    /// The table's smallest internal key.
    pub smallest: InternalKey,
    /// The table's largest internal key.
    pub largest: InternalKey,
    /// The table's file number.
    pub file_number: u64,
    /// An ingested table's global seqno (docs/format/sst.md), which its reader applies.
    pub global_seqno: Option<shale_sst::SeqNo>,
    /// The open table, when the database keeps every table open (the read plan pins it, as
    /// the file's metadata does: `crate::table_cache` invariant 3).
    pub pinned_table: crate::table_cache::PinnedTable,
}

/// Concatenates the tables of one sorted level; see the module docs.
pub struct LevelIter {
    comparator: Arc<InternalKeyComparator>,
    files: Arc<[LevelFile]>,
    opener: TableOpener,
    table_index: usize,
    table: Option<LevelTable>,
    /// Boxed, being rare: a level iterator is built for every iterator.
    error: Option<Box<Error>>,
    lower_bound: Option<Vec<u8>>,
    upper_bound: Option<Vec<u8>>,
}

impl LevelIter {
    /// Iterates `files` (sorted, non-overlapping), opening each with `opener` when reached.
    pub fn new(
        comparator: Arc<InternalKeyComparator>,
        files: Arc<[LevelFile]>,
        opener: TableOpener,
    ) -> Self {
        debug_assert!(
            files.windows(2).all(|pair| comparator
                .compare(pair[0].largest.encoded(), pair[1].smallest.encoded())
                == Ordering::Less),
            "level files overlap or are out of order"
        );
        LevelIter {
            comparator,
            files,
            opener,
            table_index: 0,
            table: None,
            error: None,
            lower_bound: None,
            upper_bound: None,
        }
    }

    /// Sets user-key bounds (lower inclusive, upper exclusive): a table whose keys all fall
    /// outside them is not opened when the iteration moves on from its neighbour.
    #[must_use]
    pub fn with_bounds(mut self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Self {
        self.lower_bound = lower;
        self.upper_bound = upper;
        self
    }

    /// Makes table `index` the open one (reusing it if it already is).
    fn open(&mut self, index: usize) -> bool {
        if self.error.is_some() {
            return false;
        }
        if self.table.is_some() && self.table_index == index {
            return true;
        }
        self.table = None;
        match (self.opener)(&self.files[index]) {
            Ok(table) => {
                self.table = Some(table);
                self.table_index = index;
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    fn fail(&mut self, error: Error) {
        if self.error.is_none() {
            self.error = Some(Box::new(error));
        }
        self.table = None;
    }

    /// Whether the open table failed; takes its error if so.
    fn take_table_error(&mut self) -> bool {
        match self.table.as_ref().map(InternalIterator::status) {
            Some(Err(e)) => {
                self.fail(e);
                true
            }
            _ => false,
        }
    }

    /// While the open table is exhausted, moves to the start of the next one.
    fn skip_empty_forward(&mut self) {
        while self.table.as_ref().is_some_and(|t| !t.valid()) {
            if self.take_table_error() {
                return;
            }
            let next = self.table_index + 1;
            let past_upper = self.upper_bound.as_ref().is_some_and(|upper| {
                self.files.get(next).is_some_and(|f| {
                    self.user_compare(f.smallest.user_key(), upper) != Ordering::Less
                })
            });
            if next >= self.files.len() || past_upper {
                self.table = None;
                return;
            }
            if self.open(next) {
                if let Some(table) = &mut self.table {
                    table.seek_to_first();
                }
            }
        }
    }

    /// While the open table is exhausted, moves to the end of the previous one.
    fn skip_empty_backward(&mut self) {
        while self.table.as_ref().is_some_and(|t| !t.valid()) {
            if self.take_table_error() {
                return;
            }
            let Some(previous) = self.table_index.checked_sub(1) else {
                self.table = None;
                return;
            };
            let before_lower = self.lower_bound.as_ref().is_some_and(|lower| {
                self.user_compare(self.files[previous].largest.user_key(), lower) == Ordering::Less
            });
            if before_lower {
                self.table = None;
                return;
            }
            if self.open(previous) {
                if let Some(table) = &mut self.table {
                    table.seek_to_last();
                }
            }
        }
    }

    fn user_compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.comparator.user_comparator().compare(a, b)
    }

    /// Opens table `index` (if it exists) and positions it with `position`.
    fn position_in(&mut self, index: Option<usize>, position: impl FnOnce(&mut LevelTable)) {
        match index.filter(|&i| i < self.files.len()) {
            Some(i) if self.open(i) => {
                if let Some(table) = &mut self.table {
                    position(table);
                }
            }
            _ => self.table = None,
        }
    }
}

impl InternalIterator for LevelIter {
    #[inline]
    fn valid(&self) -> bool {
        self.table.as_ref().is_some_and(InternalIterator::valid)
    }

    fn seek_to_first(&mut self) {
        self.position_in(Some(0), InternalIterator::seek_to_first);
        self.skip_empty_forward();
    }

    fn seek_to_last(&mut self) {
        self.position_in(
            self.files.len().checked_sub(1),
            InternalIterator::seek_to_last,
        );
        self.skip_empty_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        // The first table whose largest key is >= target holds the first entry >= target.
        let index = self.files.partition_point(|f| {
            self.comparator.compare(f.largest.encoded(), target) == Ordering::Less
        });
        self.position_in(Some(index), |t| t.seek(target));
        self.skip_empty_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        // The last table whose smallest key is <= target holds the last entry <= target.
        let count = self.files.partition_point(|f| {
            self.comparator.compare(f.smallest.encoded(), target) != Ordering::Greater
        });
        self.position_in(count.checked_sub(1), |t| t.seek_for_prev(target));
        self.skip_empty_backward();
    }

    #[inline]
    fn next(&mut self) {
        if let Some(table) = self.table.as_mut().filter(|t| t.valid()) {
            table.next();
            if !table.valid() {
                self.skip_empty_forward();
            }
        }
    }

    fn prev(&mut self) {
        if let Some(table) = self.table.as_mut().filter(|t| t.valid()) {
            table.prev();
            self.skip_empty_backward();
        }
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.table.as_ref().map_or(&[], |t| t.key())
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.table.as_ref().map_or(&[], |t| t.value())
    }

    fn status(&self) -> Result<()> {
        self.error.as_ref().map_or(Ok(()), |e| Err(e.duplicate()))
    }
}

impl fmt::Debug for LevelIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LevelIter")
            .field("files", &self.files.len())
            .field(
                "open_table",
                &self
                    .table
                    .as_ref()
                    .map(|_| self.files[self.table_index].file_number),
            )
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}
