//! [`DbIter`]: the user-facing iterator. It walks a merged stream of internal keys (normally a
//! [`crate::MergingIter`] over every source) and shows each user key once, with its newest
//! value visible at the snapshot, in either direction. `LevelDB`'s `DBIter` is the reference.
//!
//! What is visible: an entry is visible when its seqno is `<= snapshot`. A user key is shown
//! when its newest visible entry is a value that no visible range tombstone newer than it
//! covers. Range-deletion entries in the point stream are ignored (their effect comes through
//! the [`RangeDelSet`]).
//!
//! Invariants:
//! 1. Forward (`direction == Forward`, valid): the inner iterator is on the newest visible
//!    entry of the current user key; `key`/`value` read it in place.
//! 2. Reverse (`direction == Reverse`, valid): the inner iterator is before every entry of the
//!    current user key (on an entry of an earlier key, or invalid); the key and value were
//!    copied to `saved_key`/`saved_value` because the inner iterator has moved on.
//! 3. A key is shown only after every entry that decides it was read: going forward its
//!    newest visible entry comes first; going backward the scan goes on past its oldest-first
//!    versions to the first visible entry of an earlier key, the start of the stream, or a
//!    bound. If the inner iterator stops with an error, nothing is shown and `status` returns
//!    the error: a partial scan could pick an older version. Errors are sticky: after one the
//!    iterator stays invalid whatever it is asked to do.
//! 4. Bounds and prefix: entries whose user key is outside `[lower, upper)`, or (in prefix
//!    mode) whose prefix differs from the iteration's prefix, end the iteration.
//!
//! Prefix mode: the iteration's prefix is the prefix of the seek target (`seek`,
//! `seek_for_prev`) or of the first key found (`seek_to_first`, `seek_to_last`). When that key
//! is outside the extractor's domain there is no prefix to keep to, and the iteration is not
//! restricted.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use shale_sst::{
    append_internal_key, BytewiseComparator, Comparator, InternalKey, ParsedInternalKey,
    PrefixExtractor, SeqNo, ValueKind, MAX_SEQNO,
};

use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::range_del::{RangeDelCursor, RangeDelSet};

/// Saved values larger than this are freed rather than kept for reuse once a smaller one
/// replaces them.
const MAX_RETAINED_VALUE_CAPACITY: usize = 1 << 20;

/// Bytes of an internal key's trailer (docs/format/sst.md, "Internal key").
const TRAILER_SIZE: usize = 8;

/// The user key of an encoded internal key (all of it if it is too short to have a trailer;
/// such a key fails to parse before its user key is used).
pub(crate) fn user_key_of(internal_key: &[u8]) -> &[u8] {
    &internal_key[..internal_key.len().saturating_sub(TRAILER_SIZE)]
}

/// Positions `iter` at the last entry of a user key below `upper`.
fn seek_before(iter: &mut impl InternalIterator, upper: &[u8]) {
    // (upper, MAX_SEQNO, MAX) sorts before every real entry of `upper`.
    iter.seek_for_prev(InternalKey::for_seek(upper, MAX_SEQNO).encoded());
}

fn corrupt_key(key: &[u8], error: &shale_sst::DecodeError) -> Error {
    Error::Corruption {
        file: "<merged iterator>".into(),
        offset: 0,
        detail: format!(
            "internal key {} does not parse: {error}; verify the database's tables",
            shale_sst::printable(key)
        ),
    }
}

/// Under a TTL (`cutoff`), whether the value has expired (hidden). A value too short to carry
/// a write time is hidden and sets `error`. The value is fetched only under a TTL.
#[inline]
fn ttl_expired<'v>(
    cutoff: Option<u64>,
    value: impl FnOnce() -> &'v [u8],
    user_key: &[u8],
    error: &mut Option<Box<Error>>,
) -> bool {
    let Some(cutoff) = cutoff else {
        return false;
    };
    if let Some((_, time)) = crate::ttl::split(value()) {
        time < cutoff
    } else {
        *error = Some(Box::new(crate::ttl::missing_write_time(user_key)));
        true
    }
}

/// Reads the value a blob reference points at (docs/format/blob.md).
pub trait BlobResolver: Send + Sync + fmt::Debug {
    /// The stored value the `BlobIndex` entry of `user_key` with value `reference` refers to.
    fn resolve(&self, user_key: &[u8], reference: &[u8]) -> Result<Vec<u8>>;
}

/// What restricts a [`DbIter`] besides the snapshot.
#[derive(Debug, Clone, Default)]
pub struct DbIterOptions {
    /// Smallest user key to return (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// User key to stop before (exclusive).
    pub upper_bound: Option<Vec<u8>>,
    /// Prefix mode: return only keys with the prefix of the seek key (see the module docs).
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// A keyspace with a TTL: every value ends in its write time (docs/format/ttl.md), which
    /// `value` strips; a value written before this time is expired and hidden like a
    /// deletion (older versions are older still, so they stay hidden too).
    pub ttl_cutoff: Option<u64>,
    /// A step (seek, next, prev) that skips at least this many entries without showing one
    /// (deletions, what they hide, expired values) is noted for [`DbIter::take_long_skip`];
    /// 0 never notes.
    pub long_skip: u64,
    /// Resolves `BlobIndex` entries; without one, meeting such an entry is an error.
    pub blob_resolver: Option<Arc<dyn BlobResolver>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// The user-facing iterator over a snapshot; see the module docs. Generic over the stream it
/// walks so the engine's (a [`crate::MergingIter`]) is called directly, not through a box.
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent flags of one cursor, read on every step"
)]
pub struct DbIter<I = Box<dyn InternalIterator>> {
    iter: I,
    comparator: Arc<dyn Comparator>,
    /// `comparator` is the bytewise order: compare user keys inline, without a virtual call
    /// (a comparator's name is its order).
    bytewise: bool,
    snapshot: SeqNo,
    range_dels: RangeDelSet,
    range_del_cursor: RangeDelCursor,
    options: DbIterOptions,
    /// In prefix mode, whether the iteration keeps to `prefix`.
    prefix_active: bool,
    prefix: Vec<u8>,
    direction: Direction,
    valid: bool,
    /// Reverse: the current key. Forward: the key being skipped.
    saved_key: Vec<u8>,
    /// Reverse: the current value.
    saved_value: Vec<u8>,
    /// Forward, when the current entry is a blob reference: the value it refers to.
    blob_value: Option<Vec<u8>>,
    /// Boxed, being rare: an iterator is built (and moved) for every seek.
    error: Option<Box<Error>>,
    /// A step skipped at least `options.long_skip` entries since the last `take_long_skip`.
    long_skip_seen: bool,
}

impl<I: InternalIterator> DbIter<I> {
    /// Iterates `iter` (internal keys ordered by `comparator`'s internal-key order) as of
    /// `snapshot`, hiding what `range_dels` deletes. Starts unpositioned.
    pub fn new(
        iter: I,
        comparator: Arc<dyn Comparator>,
        snapshot: SeqNo,
        range_dels: RangeDelSet,
        options: DbIterOptions,
    ) -> Self {
        debug_assert!(snapshot <= MAX_SEQNO);
        DbIter {
            iter,
            bytewise: comparator.name() == BytewiseComparator::NAME,
            comparator,
            snapshot,
            range_dels,
            range_del_cursor: RangeDelCursor::default(),
            options,
            prefix_active: false,
            prefix: Vec::new(),
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            blob_value: None,
            error: None,
            long_skip_seen: false,
        }
    }

    /// Orders two user keys.
    #[inline]
    fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.bytewise {
            BytewiseComparator.compare(a, b)
        } else {
            self.comparator.compare(a, b)
        }
    }

    /// Whether the iterator is on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key. Only while [`Self::valid`].
    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        match self.direction {
            Direction::Forward => user_key_of(self.iter.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value. Only while [`Self::valid`].
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        let value = match (self.direction, &self.blob_value) {
            (Direction::Forward, Some(resolved)) => resolved,
            (Direction::Forward, None) => self.iter.value(),
            (Direction::Reverse, _) => &self.saved_value,
        };
        match self.options.ttl_cutoff {
            // Shown values were checked to carry a write time.
            Some(_) => &value[..value.len().saturating_sub(crate::ttl::WRITE_TIME_LEN)],
            None => value,
        }
    }

    /// Whether a step skipped at least `long_skip` entries since the last call.
    pub fn take_long_skip(&mut self) -> bool {
        std::mem::take(&mut self.long_skip_seen)
    }

    /// Counts one more entry a step skipped (`skipped` so far in this step).
    fn skipped_one(&mut self, skipped: &mut u64) {
        *skipped += 1;
        if *skipped == self.options.long_skip {
            self.long_skip_seen = true;
        }
    }

    /// The first error seen (of this iterator or the stream below it), if any. After an error
    /// the iterator is invalid.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.iter.status(),
        }
    }

    /// Positions at the first visible key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        self.direction = Direction::Forward;
        self.prefix_active = false;
        match &self.options.lower_bound {
            Some(lower) => self
                .iter
                .seek(InternalKey::for_seek(lower, self.snapshot).encoded()),
            None => self.iter.seek_to_first(),
        }
        self.find_next_user_entry(false);
        self.adopt_prefix_of_current_key();
    }

    /// Positions at the last visible key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        self.direction = Direction::Reverse;
        self.prefix_active = false;
        match &self.options.upper_bound {
            Some(upper) => seek_before(&mut self.iter, upper),
            None => self.iter.seek_to_last(),
        }
        self.find_prev_user_entry();
        self.adopt_prefix_of_current_key();
    }

    /// Positions at the first visible key `>= target` (and not below the lower bound).
    pub fn seek(&mut self, target: &[u8]) {
        self.direction = Direction::Forward;
        self.set_prefix_of(target);
        let target = match &self.options.lower_bound {
            Some(lower) if self.compare_user(target, lower) == Ordering::Less => lower,
            _ => target,
        };
        if self.at_or_above_upper(target) {
            self.valid = false;
            return;
        }
        // The seek key is built in `saved_key`, which a forward step reads only after setting
        // it: one buffer for the seek and the steps after it.
        self.saved_key.clear();
        append_internal_key(&mut self.saved_key, target, self.snapshot, ValueKind::MAX);
        self.iter.seek(&self.saved_key);
        self.find_next_user_entry(false);
    }

    /// Positions at the last visible key `<= target` (and below the upper bound).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.direction = Direction::Reverse;
        self.set_prefix_of(target);
        if self.below_lower(target) {
            self.valid = false;
            return;
        }
        if let Some(upper) = self
            .options
            .upper_bound
            .as_deref()
            .filter(|&upper| self.compare_user(target, upper) != Ordering::Less)
        {
            seek_before(&mut self.iter, upper);
        } else {
            // (target, 0, Deletion) sorts after every entry of `target`.
            self.iter
                .seek_for_prev(InternalKey::new(target, 0, ValueKind::Deletion).encoded());
        }
        self.find_prev_user_entry();
    }

    /// Moves to the next visible key. Does nothing unless [`Self::valid`].
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            // The inner iterator is before the current key's entries (or off the start):
            // bring it back onto them; the forward scan skips them as `saved_key`'s. In prefix
            // mode it may be on a key of another prefix, and entries of that prefix written
            // since the snapshot may lie between it and the current key: the forward scan
            // would stop at them as the prefix's end, so seek the current key instead.
            self.direction = Direction::Forward;
            if self.iter.valid() && !self.prefix_active {
                self.iter.next();
            } else {
                self.iter
                    .seek(InternalKey::for_seek(&self.saved_key, MAX_SEQNO).encoded());
            }
        } else {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(user_key_of(self.iter.key()));
            self.iter.next();
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous visible key. Does nothing unless [`Self::valid`].
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // One step back suffices (`LevelDB` steps back to the previous user key): the
            // current entry is its key's newest visible one, so the key's entries before it
            // are above the snapshot, and the reverse scan passes over them.
            self.iter.prev();
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    /// Going forward from the inner iterator's position, finds the newest visible entry of
    /// the next shown key. With `skipping`, entries of user keys `<= saved_key` are hidden.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        debug_assert_eq!(self.direction, Direction::Forward);
        self.blob_value = None;
        let mut skipped = 0;
        while self.iter.valid() && self.error.is_none() {
            let entry = match ParsedInternalKey::parse(self.iter.key()) {
                Ok(entry) => entry,
                Err(e) => {
                    self.error = Some(Box::new(corrupt_key(self.iter.key(), &e)));
                    self.valid = false;
                    return;
                }
            };
            if self.at_or_above_upper(entry.user_key) || !self.prefix_matches(entry.user_key) {
                break;
            }
            if entry.seqno <= self.snapshot {
                let hidden = skipping
                    && self.compare_user(entry.user_key, &self.saved_key) != Ordering::Greater;
                match entry.kind {
                    ValueKind::Value | ValueKind::BlobIndex if !hidden => {
                        let expired = ttl_expired(
                            self.options.ttl_cutoff,
                            || self.iter.value(),
                            entry.user_key,
                            &mut self.error,
                        );
                        if !range_deleted(
                            &self.range_dels,
                            &mut self.range_del_cursor,
                            entry.user_key,
                            entry.seqno,
                        ) && !expired
                        {
                            if entry.kind == ValueKind::BlobIndex {
                                match self.resolve_blob(entry.user_key, self.iter.value()) {
                                    Ok(value) => self.blob_value = Some(value),
                                    Err(e) => {
                                        self.error = Some(Box::new(e));
                                        break;
                                    }
                                }
                            }
                            self.valid = true;
                            return;
                        }
                        if self.error.is_some() {
                            break;
                        }
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(entry.user_key);
                        skipping = true;
                    }
                    ValueKind::Deletion if !hidden => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(entry.user_key);
                        skipping = true;
                    }
                    _ => {}
                }
            }
            self.skipped_one(&mut skipped);
            self.iter.next();
        }
        self.valid = false;
    }

    /// Going backward from the inner iterator's position, finds the previous shown key and
    /// its newest visible value (copied, as the scan moves past them).
    fn find_prev_user_entry(&mut self) {
        debug_assert_eq!(self.direction, Direction::Reverse);
        // Whether `saved_key`/`saved_value` hold a candidate: the newest visible entry seen
        // so far of the key being scanned is a value no tombstone covers.
        let mut found = false;
        // Whether `saved_value` is a blob reference still to resolve.
        let mut saved_is_blob = false;
        let mut skipped = 0;
        while self.iter.valid() && self.error.is_none() {
            let entry = match ParsedInternalKey::parse(self.iter.key()) {
                Ok(entry) => entry,
                Err(e) => {
                    self.error = Some(Box::new(corrupt_key(self.iter.key(), &e)));
                    self.valid = false;
                    return;
                }
            };
            if self.below_lower(entry.user_key) || !self.prefix_matches(entry.user_key) {
                break;
            }
            if entry.seqno <= self.snapshot && entry.kind != ValueKind::RangeDeletion {
                if found && self.compare_user(entry.user_key, &self.saved_key) == Ordering::Less {
                    break; // every entry of the candidate was read
                }
                if entry.kind.is_value()
                    && !ttl_expired(
                        self.options.ttl_cutoff,
                        || self.iter.value(),
                        entry.user_key,
                        &mut self.error,
                    )
                    && !range_deleted(
                        &self.range_dels,
                        &mut self.range_del_cursor,
                        entry.user_key,
                        entry.seqno,
                    )
                {
                    let value = self.iter.value();
                    if self.saved_value.capacity() > value.len() + MAX_RETAINED_VALUE_CAPACITY {
                        self.saved_value = Vec::new();
                    }
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(entry.user_key);
                    self.saved_value.clear();
                    self.saved_value.extend_from_slice(value);
                    saved_is_blob = entry.kind == ValueKind::BlobIndex;
                    found = true;
                } else {
                    found = false;
                }
            }
            if !found {
                self.skipped_one(&mut skipped);
            }
            self.iter.prev();
        }
        // Off the start of the stream: an error there means the scan is incomplete.
        self.valid =
            found && self.error.is_none() && (self.iter.valid() || self.iter.status().is_ok());
        if self.valid && saved_is_blob {
            match self.resolve_blob(&self.saved_key, &self.saved_value) {
                Ok(value) => self.saved_value = value,
                Err(e) => {
                    self.error = Some(Box::new(e));
                    self.valid = false;
                }
            }
        }
    }

    /// The value the blob reference `reference` of `user_key` refers to.
    fn resolve_blob(&self, user_key: &[u8], reference: &[u8]) -> Result<Vec<u8>> {
        match &self.options.blob_resolver {
            Some(resolver) => resolver.resolve(user_key, reference),
            None => Err(Error::Corruption {
                file: "<merged iterator>".into(),
                offset: 0,
                detail: format!(
                    "key {} has a blob reference, but this iterator cannot read blob files",
                    shale_sst::printable(user_key)
                ),
            }),
        }
    }

    fn at_or_above_upper(&self, user_key: &[u8]) -> bool {
        self.options
            .upper_bound
            .as_ref()
            .is_some_and(|upper| self.compare_user(user_key, upper) != Ordering::Less)
    }

    fn below_lower(&self, user_key: &[u8]) -> bool {
        self.options
            .lower_bound
            .as_ref()
            .is_some_and(|lower| self.compare_user(user_key, lower) == Ordering::Less)
    }

    /// In prefix mode, keeps the iteration to the prefix of `key` (if it has one).
    fn set_prefix_of(&mut self, key: &[u8]) {
        self.prefix_active = false;
        if let Some(prefix) = self
            .options
            .prefix_extractor
            .as_ref()
            .and_then(|e| e.prefix(key))
        {
            self.prefix.clear();
            self.prefix.extend_from_slice(prefix);
            self.prefix_active = true;
        }
    }

    /// In prefix mode, keeps the iteration to the prefix of the key just found.
    fn adopt_prefix_of_current_key(&mut self) {
        let Some(extractor) = self
            .options
            .prefix_extractor
            .as_ref()
            .filter(|_| self.valid)
        else {
            return;
        };
        let key = match self.direction {
            Direction::Forward => user_key_of(self.iter.key()),
            Direction::Reverse => &self.saved_key,
        };
        self.prefix_active = false;
        if let Some(prefix) = extractor.prefix(key) {
            self.prefix.clear();
            self.prefix.extend_from_slice(prefix);
            self.prefix_active = true;
        }
    }

    fn prefix_matches(&self, user_key: &[u8]) -> bool {
        !self.prefix_active
            || self
                .options
                .prefix_extractor
                .as_ref()
                .and_then(|e| e.prefix(user_key))
                == Some(self.prefix.as_slice())
    }
}

/// Whether `range_dels` deletes the entry `(user_key, seqno)`.
#[inline]
fn range_deleted(
    range_dels: &RangeDelSet,
    cursor: &mut RangeDelCursor,
    user_key: &[u8],
    seqno: SeqNo,
) -> bool {
    !range_dels.is_empty() && range_dels.covers_near(cursor, user_key, seqno)
}

impl<I: InternalIterator> fmt::Debug for DbIter<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("DbIter");
        s.field("snapshot", &self.snapshot)
            .field("direction", &self.direction)
            .field("valid", &self.valid);
        if self.valid {
            s.field("key", &shale_sst::printable(self.key()));
        }
        s.field("range_dels", &self.range_dels)
            .field("options", &self.options)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}
