//! The oracle: what the database must hold ([`Model`]) and what an iterator must show
//! ([`Cursor`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::ops::Bound;

use super::{printable, value, Move, K};

/// Value of a key in the oracle: `(id, len)` of [`value`].
pub(super) type Data = BTreeMap<Vec<u8>, (u32, u16)>;

/// The oracle: the data of every existing keyspace, by keyspace index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Model {
    pub(super) keyspaces: BTreeMap<u8, Data>,
}

impl Model {
    pub(super) fn apply_put(&mut self, ks: u8, key: &K, id: u32, len: u16) {
        if let Some(data) = self.keyspaces.get_mut(&ks) {
            let id = if len == 0 { 0 } else { id };
            data.insert(key.0.clone(), (id, spelled_len(id, len)));
        }
    }

    pub(super) fn apply_delete(&mut self, ks: u8, key: &K) {
        if let Some(data) = self.keyspaces.get_mut(&ks) {
            data.remove(&key.0);
        }
    }

    pub(super) fn apply_delete_range(&mut self, ks: u8, start: &K, end: &K) {
        if start >= end {
            return;
        }
        if let Some(data) = self.keyspaces.get_mut(&ks) {
            let doomed: Vec<Vec<u8>> = data
                .range::<[u8], _>((Bound::Included(&start.0[..]), Bound::Excluded(&end.0[..])))
                .map(|(key, _)| key.clone())
                .collect();
            for key in doomed {
                data.remove(&key);
            }
        }
    }
}

/// The `(id, len)` of a value [`value`] spelled, `len` as [`spelled_len`] gives it.
pub(super) fn parse_value(bytes: &[u8]) -> Option<(u32, u16)> {
    if bytes.is_empty() {
        return Some((0, 0));
    }
    let rest = bytes.strip_prefix(b"v")?;
    let dot = rest.iter().position(|&b| b == b'.')?;
    let id: u32 = std::str::from_utf8(&rest[..dot]).ok()?.parse().ok()?;
    let len = u16::try_from(bytes.len()).ok()?;
    (value(id, len) == bytes).then_some((id, len))
}

/// The length of `value(id, len)`: lengths below the spelling of the id all spell the same
/// bytes, so the oracle keeps the real length.
fn spelled_len(id: u32, len: u16) -> u16 {
    if len == 0 {
        return 0;
    }
    let head = format!("v{id}.").len();
    len.max(u16::try_from(head).unwrap_or(u16::MAX))
}

/// How `got` differs from `want`: the count and the first few keys.
pub(super) fn diff(got: &Data, want: &Data) -> String {
    let mut out = String::new();
    let keys: BTreeSet<&Vec<u8>> = got.keys().chain(want.keys()).collect();
    let mut shown = 0;
    for key in keys {
        let (g, w) = (got.get(key), want.get(key));
        if g != w {
            if shown < 8 {
                let _ = write!(out, "{} got {g:?} want {w:?}; ", printable(key));
            }
            shown += 1;
        }
    }
    format!("{shown} keys differ: {out}")
}

/// The oracle's iterator: what `DbIterator` must show after each move (see `db_iter.rs`:
/// bounds clamp seeks; in prefix mode the prefix of the seek target, or of the key found by
/// `seek_to_first`/`seek_to_last`, confines the iteration; keys too short for the extractor
/// impose no prefix).
pub(super) struct Cursor<'a> {
    pub(super) data: &'a Data,
    pub(super) lower: Option<&'a [u8]>,
    pub(super) upper: Option<&'a [u8]>,
    /// The extractor's length in prefix mode.
    pub(super) prefix_len: Option<usize>,
    pub(super) prefix: Option<Vec<u8>>,
    pub(super) position: Option<Vec<u8>>,
}

impl Cursor<'_> {
    fn in_bounds(&self, key: &[u8]) -> bool {
        self.lower.is_none_or(|lower| key >= lower) && self.upper.is_none_or(|upper| key < upper)
    }

    fn prefix_of<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        self.prefix_len.and_then(|len| key.get(..len))
    }

    /// The first key `>= from` (or `> from`) in bounds, if its prefix matches.
    fn forward(&self, from: Bound<&[u8]>) -> Option<Vec<u8>> {
        let key = self
            .data
            .range::<[u8], _>((from, Bound::Unbounded))
            .map(|(key, _)| key)
            .find(|key| self.lower.is_none_or(|lower| &key[..] >= lower))?;
        self.keep(key)
    }

    /// The last key `<= from` (or `< from`) in bounds, if its prefix matches.
    fn backward(&self, from: Bound<&[u8]>) -> Option<Vec<u8>> {
        let key = self
            .data
            .range::<[u8], _>((Bound::Unbounded, from))
            .map(|(key, _)| key)
            .rev()
            .find(|key| self.upper.is_none_or(|upper| &key[..] < upper))?;
        self.keep(key)
    }

    fn keep(&self, key: &[u8]) -> Option<Vec<u8>> {
        let prefix_ok = self
            .prefix
            .as_ref()
            .is_none_or(|prefix| self.prefix_of(key) == Some(&prefix[..]));
        (self.in_bounds(key) && prefix_ok).then(|| key.to_vec())
    }

    pub(super) fn apply(&mut self, step: &Move) {
        self.position = match step {
            Move::SeekToFirst | Move::SeekToLast => {
                self.prefix = None;
                let found = if matches!(step, Move::SeekToFirst) {
                    self.forward(Bound::Unbounded)
                } else {
                    self.backward(Bound::Unbounded)
                };
                self.prefix = found
                    .as_deref()
                    .and_then(|key| self.prefix_of(key))
                    .map(<[u8]>::to_vec);
                found
            }
            Move::Seek(target) => {
                self.prefix = self.prefix_of(&target.0).map(<[u8]>::to_vec);
                self.forward(Bound::Included(&target.0))
            }
            Move::SeekForPrev(target) => {
                self.prefix = self.prefix_of(&target.0).map(<[u8]>::to_vec);
                self.backward(Bound::Included(&target.0))
            }
            Move::Next => match self.position.take() {
                Some(at) => self.forward(Bound::Excluded(&at)),
                None => None,
            },
            Move::Prev => match self.position.take() {
                Some(at) => self.backward(Bound::Excluded(&at)),
                None => None,
            },
            Move::PutDuring { .. } | Move::DeleteRangeDuring { .. } | Move::FlushDuring => {
                return;
            }
        };
    }

    pub(super) fn current(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let key = self.position.as_ref()?;
        let &(id, len) = self.data.get(key)?;
        Some((key.clone(), value(id, len)))
    }
}
