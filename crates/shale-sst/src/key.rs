//! Internal keys: a user key followed by an 8-byte trailer `(seqno << 8) | kind`.
//!
//! Order (docs/format/sst.md, "Internal key"): user key ascending by the user comparator, then
//! seqno descending, then kind descending, so the newest version of a key sorts first.
//! Invariants:
//! 1. `seqno <= MAX_SEQNO` (56 bits).
//! 2. The kind tags below never change meaning; 4..=127 are reserved, 128..=255 never valid.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::comparator::{bytewise_compare, BytewiseComparator, Comparator};
use crate::error::DecodeError;

/// A sequence number: the commit order of a write.
pub type SeqNo = u64;

/// The largest sequence number (56 bits).
pub const MAX_SEQNO: SeqNo = (1 << 56) - 1;

/// Bytes of the trailer after the user key.
pub const TRAILER_SIZE: usize = 8;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueKind {
    /// A point deletion (tombstone).
    Deletion = 0,
    /// A value.
    Value = 1,
    /// A range deletion; the entry's value is the exclusive end user key.
    RangeDeletion = 2,
    /// A value stored in a blob file; the entry's value is a blob reference (the engine's
    /// docs/format/blob.md). Only tables hold these, never a write batch or memtable.
    BlobIndex = 3,
}

impl ValueKind {
    /// The largest tag, used when seeking so that every kind of a seqno is included.
    pub const MAX: ValueKind = ValueKind::BlobIndex;

    /// Whether the entry carries a value (inline or in a blob file).
    pub fn is_value(self) -> bool {
        matches!(self, Self::Value | Self::BlobIndex)
    }

    /// The on-disk tag.
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// Decodes an on-disk tag.
    #[inline]
    pub fn from_tag(tag: u8) -> Result<Self, DecodeError> {
        match tag {
            0 => Ok(Self::Deletion),
            1 => Ok(Self::Value),
            2 => Ok(Self::RangeDeletion),
            3 => Ok(Self::BlobIndex),
            _ => Err(Self::unknown_tag(tag)),
        }
    }

    #[cold]
    fn unknown_tag(tag: u8) -> DecodeError {
        if tag <= 127 {
            DecodeError::new(format!(
                "value kind {tag} is reserved: written by a newer Shale?"
            ))
        } else {
            DecodeError::new(format!("invalid value kind {tag}"))
        }
    }

    /// A short lowercase name for tools.
    pub fn name(self) -> &'static str {
        match self {
            Self::Deletion => "del",
            Self::Value => "put",
            Self::RangeDeletion => "rangedel",
            Self::BlobIndex => "blob",
        }
    }
}

/// An owned, encoded internal key.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct InternalKey(Vec<u8>);

impl InternalKey {
    /// Encodes `user_key` with `seqno` and `kind`.
    pub fn new(user_key: &[u8], seqno: SeqNo, kind: ValueKind) -> Self {
        let mut buf = Vec::with_capacity(user_key.len() + TRAILER_SIZE);
        append_internal_key(&mut buf, user_key, seqno, kind);
        InternalKey(buf)
    }

    /// The key that sorts before every entry of `user_key` visible at `seqno`: seeking to it
    /// finds the newest version with a sequence number `<= seqno`.
    pub fn for_seek(user_key: &[u8], seqno: SeqNo) -> Self {
        Self::new(user_key, seqno, ValueKind::MAX)
    }

    /// Wraps already-encoded bytes after checking they parse.
    pub fn from_encoded(encoded: Vec<u8>) -> Result<Self, DecodeError> {
        ParsedInternalKey::parse(&encoded)?;
        Ok(InternalKey(encoded))
    }

    /// The encoded bytes.
    pub fn encoded(&self) -> &[u8] {
        &self.0
    }

    /// The user key part.
    pub fn user_key(&self) -> &[u8] {
        &self.0[..self.0.len() - TRAILER_SIZE]
    }

    /// Consumes the key, returning the encoded bytes.
    pub fn into_encoded(self) -> Vec<u8> {
        self.0
    }
}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match ParsedInternalKey::parse(&self.0) {
            Ok(p) => write!(f, "{p:?}"),
            Err(_) => write!(f, "InternalKey(invalid {:02x?})", self.0),
        }
    }
}

/// Appends an encoded internal key to `out`.
pub fn append_internal_key(out: &mut Vec<u8>, user_key: &[u8], seqno: SeqNo, kind: ValueKind) {
    debug_assert!(seqno <= MAX_SEQNO, "seqno {seqno} exceeds 56 bits");
    out.reserve(user_key.len() + TRAILER_SIZE);
    out.extend_from_slice(user_key);
    out.extend_from_slice(&((seqno << 8) | u64::from(kind.tag())).to_le_bytes());
}

/// Writes the seek key of `user_key` at `seqno` ([`InternalKey::for_seek`]) into `out`, which
/// is exactly `user_key.len() + TRAILER_SIZE` bytes (a stack buffer on the lookup path).
pub(crate) fn encode_seek_key(out: &mut [u8], user_key: &[u8], seqno: SeqNo) {
    debug_assert_eq!(out.len(), user_key.len() + TRAILER_SIZE);
    debug_assert!(seqno <= MAX_SEQNO, "seqno {seqno} exceeds 56 bits");
    let (user, trailer) = out.split_at_mut(user_key.len());
    user.copy_from_slice(user_key);
    let packed = (seqno << 8) | u64::from(ValueKind::MAX.tag());
    trailer.copy_from_slice(&packed.to_le_bytes());
}

/// A decoded view of an internal key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// The sequence number.
    pub seqno: SeqNo,
    /// The entry kind.
    pub kind: ValueKind,
}

impl<'a> ParsedInternalKey<'a> {
    /// Parses an encoded internal key, rejecting short keys and unknown kinds.
    #[inline]
    pub fn parse(encoded: &'a [u8]) -> Result<Self, DecodeError> {
        let Some((user_key, trailer)) = encoded.split_last_chunk::<TRAILER_SIZE>() else {
            return Err(Self::too_short(encoded.len()));
        };
        let trailer = u64::from_le_bytes(*trailer);
        Ok(ParsedInternalKey {
            user_key,
            seqno: trailer >> 8,
            kind: ValueKind::from_tag(trailer as u8)?,
        })
    }

    #[cold]
    fn too_short(len: usize) -> DecodeError {
        DecodeError::new(format!("internal key of {len} bytes is shorter than 8"))
    }
}

impl std::fmt::Debug for ParsedInternalKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}@{}:{}",
            crate::layout::printable(self.user_key),
            self.seqno,
            self.kind.name()
        )
    }
}

/// The user key of an encoded internal key (all of it if it is too short to have a trailer).
#[inline]
pub(crate) fn user_key_of(encoded: &[u8]) -> &[u8] {
    &encoded[..encoded.len().saturating_sub(TRAILER_SIZE)]
}

/// The raw trailer of an encoded internal key (0 if it is too short to have one).
#[inline]
fn trailer_of(encoded: &[u8]) -> u64 {
    encoded
        .len()
        .checked_sub(TRAILER_SIZE)
        .and_then(|at| encoded[at..].try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Orders encoded internal keys: user key by the user comparator, then trailer descending.
/// Keys too short to carry a trailer compare as if their trailer were 0 (corrupt input must
/// not panic; the table reader reports it separately).
#[derive(Debug, Clone)]
pub struct InternalKeyComparator {
    user: Arc<dyn Comparator>,
    /// The user comparator is the bytewise one: compare inline, without a virtual call. A
    /// comparator's name is its order (tables are refused on a name mismatch for that reason),
    /// so one calling itself bytewise sorts bytewise.
    bytewise: bool,
}

impl InternalKeyComparator {
    /// Wraps a user comparator.
    pub fn new(user: Arc<dyn Comparator>) -> Self {
        let bytewise = user.name() == BytewiseComparator::NAME;
        InternalKeyComparator { user, bytewise }
    }

    /// The user-key comparator.
    pub fn user_comparator(&self) -> &Arc<dyn Comparator> {
        &self.user
    }

    /// Whether two user keys are equal in the user comparator's order.
    #[inline]
    pub fn user_keys_equal(&self, a: &[u8], b: &[u8]) -> bool {
        if self.bytewise {
            a == b
        } else {
            self.user.compare(a, b) == Ordering::Equal
        }
    }
}

impl Comparator for InternalKeyComparator {
    fn name(&self) -> &str {
        self.user.name()
    }

    // Inline: block seeks call it with the type known, a few times per entry they pass.
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let users = if self.bytewise {
            bytewise_compare(user_key_of(a), user_key_of(b))
        } else {
            self.user.compare(user_key_of(a), user_key_of(b))
        };
        users.then_with(|| trailer_of(b).cmp(&trailer_of(a)))
    }

    fn find_shortest_separator(&self, start: &mut Vec<u8>, limit: &[u8]) {
        let user_start = user_key_of(start);
        let mut shortened = user_start.to_vec();
        self.user
            .find_shortest_separator(&mut shortened, user_key_of(limit));
        if shortened.len() < user_start.len()
            && self.user.compare(user_start, &shortened) == Ordering::Less
        {
            // Tag 2 (not MAX): the bytes separators had before blob references existed.
            append_internal_key(&mut shortened, &[], MAX_SEQNO, ValueKind::RangeDeletion);
            debug_assert_eq!(self.compare(start, &shortened), Ordering::Less);
            debug_assert_eq!(self.compare(&shortened, limit), Ordering::Less);
            *start = shortened;
        }
    }

    fn find_short_successor(&self, key: &mut Vec<u8>) {
        let user_key = user_key_of(key);
        let mut successor = user_key.to_vec();
        self.user.find_short_successor(&mut successor);
        if successor.len() < user_key.len()
            && self.user.compare(user_key, &successor) == Ordering::Less
        {
            append_internal_key(&mut successor, &[], MAX_SEQNO, ValueKind::RangeDeletion);
            *key = successor;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::BytewiseComparator;

    fn cmp() -> InternalKeyComparator {
        InternalKeyComparator::new(Arc::new(BytewiseComparator))
    }

    #[test]
    fn newest_version_sorts_first() {
        let c = cmp();
        let a5 = InternalKey::new(b"a", 5, ValueKind::Value);
        let a3 = InternalKey::new(b"a", 3, ValueKind::Value);
        let a5del = InternalKey::new(b"a", 5, ValueKind::Deletion);
        let b1 = InternalKey::new(b"b", 1, ValueKind::Value);
        assert_eq!(c.compare(a5.encoded(), a3.encoded()), Ordering::Less);
        assert_eq!(c.compare(a5.encoded(), a5del.encoded()), Ordering::Less);
        assert_eq!(c.compare(a3.encoded(), b1.encoded()), Ordering::Less);
        assert_eq!(
            c.compare(InternalKey::for_seek(b"a", 4).encoded(), a3.encoded()),
            Ordering::Less
        );
        assert_eq!(
            c.compare(a5.encoded(), InternalKey::for_seek(b"a", 4).encoded()),
            Ordering::Less
        );
    }

    #[test]
    fn parse_round_trip_and_rejects() {
        let k = InternalKey::new(b"user", MAX_SEQNO, ValueKind::RangeDeletion);
        let p = ParsedInternalKey::parse(k.encoded()).unwrap();
        assert_eq!(
            (p.user_key, p.seqno, p.kind),
            (&b"user"[..], MAX_SEQNO, ValueKind::RangeDeletion)
        );
        assert!(ParsedInternalKey::parse(b"short").is_err());
        let mut bad = k.into_encoded();
        let last = bad.len() - 8;
        bad[last] = 7;
        assert!(ParsedInternalKey::parse(&bad).is_err());
    }

    #[test]
    fn separators_stay_between() {
        let c = cmp();
        let mut start = InternalKey::new(b"apple_pie", 9, ValueKind::Value).into_encoded();
        let limit = InternalKey::new(b"cherry", 3, ValueKind::Value).into_encoded();
        let orig = start.clone();
        c.find_shortest_separator(&mut start, &limit);
        assert!(start.len() < orig.len());
        assert_eq!(c.compare(&orig, &start), Ordering::Less);
        assert_eq!(c.compare(&start, &limit), Ordering::Less);
        let mut last = orig.clone();
        c.find_short_successor(&mut last);
        assert_ne!(c.compare(&last, &orig), Ordering::Less);
    }
}
