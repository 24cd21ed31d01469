//! Builds the contents of a block in data-block format: prefix-compressed entries followed by
//! the restart array (docs/format/sst.md, "Data block contents"). Data blocks use a restart
//! interval of 16 by default; index, metaindex, properties and range-deletion blocks use 1.
//!
//! Invariants kept here:
//! 1. `restarts[0] == 0`, and `restarts` is strictly increasing (an empty builder still has the
//!    single restart at 0, so a finished empty builder is a valid block with no entries).
//! 2. The entry at every restart offset is written with `shared == 0`; every other entry shares
//!    the longest common prefix with the previous key.
//! 3. `last_key` is always the full key of the last added entry, and
//!    `estimated_size()` is exactly the length `finish()` will return.
//!
//! Key order is the caller's business (only its comparator knows it); the builder only
//! prefix-compresses against the previous key. No allocation happens per entry once the
//! buffers have grown, and `reset` keeps them for the next block.

use crate::coding::{put_u32, put_varint32};

/// Accumulates sorted entries and encodes them as one block.
pub(crate) struct BlockBuilder {
    restart_interval: usize,
    buffer: Vec<u8>,
    restarts: Vec<u32>,
    /// Entries added since the last restart point.
    counter: usize,
    num_entries: usize,
    last_key: Vec<u8>,
    finished: bool,
}

impl BlockBuilder {
    /// A builder that starts a restart point every `restart_interval` entries (at least 1).
    pub(crate) fn new(restart_interval: usize) -> Self {
        assert!(restart_interval >= 1, "restart interval must be at least 1");
        BlockBuilder {
            restart_interval,
            buffer: Vec::new(),
            restarts: vec![0],
            counter: 0,
            num_entries: 0,
            last_key: Vec::new(),
            finished: false,
        }
    }

    /// Clears the builder for the next block, keeping its allocations.
    pub(crate) fn reset(&mut self) {
        self.buffer.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.num_entries = 0;
        self.last_key.clear();
        self.finished = false;
    }

    /// Appends an entry. `key` must sort after the previous key in the caller's order.
    ///
    /// Panics if the block, the key or the value grows past 4 GiB (the format's u32 widths).
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(
            !self.finished,
            "BlockBuilder::add after finish without reset"
        );
        debug_assert!(self.counter <= self.restart_interval);
        let shared = if self.counter < self.restart_interval {
            shared_prefix_len(&self.last_key, key)
        } else {
            self.restarts.push(to_u32(self.buffer.len(), "block"));
            self.counter = 0;
            0
        };
        let delta = &key[shared..];
        put_varint32(&mut self.buffer, shared as u32);
        put_varint32(&mut self.buffer, to_u32(delta.len(), "key"));
        put_varint32(&mut self.buffer, to_u32(value.len(), "value"));
        self.buffer.extend_from_slice(delta);
        self.buffer.extend_from_slice(value);

        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(delta);
        debug_assert_eq!(self.last_key, key);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// The size of the block `finish` would produce now, restart array included.
    pub(crate) fn estimated_size(&self) -> usize {
        if self.finished {
            self.buffer.len()
        } else {
            self.buffer.len() + 4 * self.restarts.len() + 4
        }
    }

    /// Entries added since the last reset.
    #[cfg(test)]
    pub(crate) fn num_entries(&self) -> usize {
        self.num_entries
    }

    /// True when no entry was added since the last reset.
    pub(crate) fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// The last key added (empty when the builder is empty).
    #[cfg(test)]
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart array and its count and returns the finished block contents.
    /// Call [`BlockBuilder::reset`] before adding to the builder again.
    pub(crate) fn finish(&mut self) -> &[u8] {
        debug_assert!(!self.finished, "BlockBuilder::finish called twice");
        if !self.finished {
            self.buffer.reserve(4 * self.restarts.len() + 4);
            for &restart in &self.restarts {
                put_u32(&mut self.buffer, restart);
            }
            put_u32(
                &mut self.buffer,
                to_u32(self.restarts.len(), "restart count"),
            );
            self.finished = true;
        }
        &self.buffer
    }
}

impl std::fmt::Debug for BlockBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockBuilder")
            .field("restart_interval", &self.restart_interval)
            .field("num_entries", &self.num_entries)
            .field("estimated_size", &self.estimated_size())
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

fn to_u32(len: usize, what: &str) -> u32 {
    u32::try_from(len)
        .unwrap_or_else(|_| panic!("{what} length {len} does not fit the block format's u32"))
}

/// Length of the common prefix of `a` and `b`, compared eight bytes at a time.
fn shared_prefix_len(left: &[u8], right: &[u8]) -> usize {
    let len = left.len().min(right.len());
    let (left, right) = (&left[..len], &right[..len]);
    let mut matched = 0;
    for (l, r) in left.chunks_exact(8).zip(right.chunks_exact(8)) {
        let diff = u64::from_le_bytes(l.try_into().unwrap_or_default())
            ^ u64::from_le_bytes(r.try_into().unwrap_or_default());
        if diff != 0 {
            return matched + (diff.trailing_zeros() / 8) as usize;
        }
        matched += 8;
    }
    matched
        + left[matched..]
            .iter()
            .zip(&right[matched..])
            .take_while(|(l, r)| l == r)
            .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::{get_u32, get_varint32};

    #[test]
    fn empty_builder_finishes_to_one_restart() {
        let mut b = BlockBuilder::new(16);
        assert!(b.is_empty());
        assert_eq!(b.estimated_size(), 8);
        assert_eq!(b.finish(), &[0, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn prefix_compression_and_restarts() {
        let mut b = BlockBuilder::new(2);
        b.add(b"apple", b"1");
        b.add(b"apricot", b"");
        b.add(b"apron", b"33");
        assert_eq!(b.num_entries(), 3);
        assert_eq!(b.last_key(), b"apron");
        let expected_size = b.estimated_size();
        let block = b.finish().to_vec();
        assert_eq!(block.len(), expected_size);
        #[rustfmt::skip]
        let entries: &[u8] = &[
            0, 5, 1, b'a', b'p', b'p', b'l', b'e', b'1',
            2, 5, 0, b'r', b'i', b'c', b'o', b't',
            0, 5, 2, b'a', b'p', b'r', b'o', b'n', b'3', b'3',
        ];
        assert_eq!(&block[..entries.len()], entries);
        let restarts = entries.len();
        assert_eq!(get_u32(&block, restarts).unwrap(), 0);
        assert_eq!(get_u32(&block, restarts + 4).unwrap(), 17);
        assert_eq!(get_u32(&block, restarts + 8).unwrap(), 2);
        assert_eq!(block.len(), restarts + 12);
    }

    #[test]
    fn reset_reuses_and_reproduces() {
        let mut b = BlockBuilder::new(3);
        let keys: Vec<Vec<u8>> = (0..50u32)
            .map(|i| format!("key{i:05}").into_bytes())
            .collect();
        let mut first = Vec::new();
        for round in 0..2 {
            for (i, k) in keys.iter().enumerate() {
                b.add(k, &vec![b'v'; i % 7]);
                assert!(b.estimated_size() > 0);
            }
            let size = b.estimated_size();
            let out = b.finish().to_vec();
            assert_eq!(out.len(), size);
            if round == 0 {
                first = out;
            } else {
                assert_eq!(out, first);
            }
            b.reset();
            assert!(b.is_empty());
            assert_eq!(b.last_key(), b"");
        }
    }

    #[test]
    fn long_lengths_use_multibyte_varints() {
        let mut b = BlockBuilder::new(1);
        let key = vec![b'k'; 300];
        let value = vec![7u8; 70_000];
        b.add(&key, &value);
        let block = b.finish();
        let (shared, n1) = get_varint32(block).unwrap();
        let (unshared, n2) = get_varint32(&block[n1..]).unwrap();
        let (value_len, _) = get_varint32(&block[n1 + n2..]).unwrap();
        assert_eq!((shared, unshared, value_len), (0, 300, 70_000));
    }

    #[test]
    fn shared_prefix_len_matches_naive() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"", b""),
            (b"abc", b""),
            (b"abcdefghij", b"abcdefghij"),
            (b"abcdefghij", b"abcdefghiX"),
            (b"abcdefgh", b"abcdefghijk"),
            (b"abcdefXhijklmnopq", b"abcdefghijklmnopq"),
            (b"0123456789abcdefZ", b"0123456789abcdefY"),
        ];
        for &(a, b) in cases {
            let naive = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            assert_eq!(shared_prefix_len(a, b), naive, "{a:?} {b:?}");
            assert_eq!(shared_prefix_len(b, a), naive);
        }
    }
}
