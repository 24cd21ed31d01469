//! Bloom filters over user keys and over key prefixes (docs/format/sst.md, "Filter blocks").
//!
//! A [`BloomBuilder`] collects key hashes while a table is written and produces the filter
//! block; a [`BloomFilter`] answers "may this key be in the table?" for readers. A
//! [`PrefixExtractor`] maps user keys to the prefixes the prefix filter is built over.
//!
//! Invariants:
//! 1. Block layout: `kind: u8 = 1 | num_probes: u8 | reserved: u16 = 0 | num_bits: u32 LE |
//!    bits[ceil(num_bits / 8)]`; bit `b` is bit `b % 8` (LSB first) of byte `b / 8`.
//! 2. `h = XXH3-64(key, seed 0)`, `h1 = h as u32`, `h2 = (h >> 32) as u32 | 1`; probe `i` tests
//!    bit `((h1 + i * h2) mod 2^32) * num_bits >> 32`, which is always `< num_bits`.
//! 3. `num_bits = max(64, keys * bits_per_key)`, capped so the block fits in
//!    [`MAX_BLOCK_SIZE`]; `num_probes = round(bits_per_key * ln 2)` clamped to `1..=30`.
//! 4. A filter never answers false for a key that was added (no false negatives). An unknown
//!    `kind` decodes to "no filter", so a newer writer's filter costs speed, never correctness.
//! 5. A decoded [`BloomFilter`] has `data.len() == 8 + ceil(num_bits / 8)`, `num_bits >= 1` and
//!    `1 <= num_probes <= 30`, so probing never indexes out of bounds.

use std::fmt;

use crate::coding::get_u32;
use crate::error::DecodeError;
use crate::format::MAX_BLOCK_SIZE;

/// The only filter kind this build writes and reads.
const KIND_BLOOM: u8 = 1;
/// `kind`, `num_probes`, `reserved`, `num_bits`.
const HEADER_SIZE: usize = 8;
const MIN_BITS: u64 = 64;
/// The most bits whose block still fits in [`MAX_BLOCK_SIZE`].
const MAX_BITS: u64 = ((MAX_BLOCK_SIZE - HEADER_SIZE) as u64) * 8;
const MAX_PROBES: u8 = 30;

/// Maps a user key to the prefix that prefix filters and prefix seeks use.
///
/// The name is stored in the table's properties; a reader uses a table's prefix filter only
/// if its own extractor has the same name, so an extractor that changes behaviour must change
/// its name.
pub trait PrefixExtractor: Send + Sync + fmt::Debug {
    /// A stable name identifying this extractor and its parameters.
    fn name(&self) -> &str;

    /// The prefix of `key`, or `None` if `key` is outside the extractor's domain: such a key is
    /// not added to the prefix filter, and a prefix lookup with it cannot use the filter.
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]>;
}

/// The first `len` bytes of a key; keys shorter than `len` are out of domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedPrefix {
    len: usize,
    name: String,
}

impl FixedPrefix {
    /// An extractor of `len`-byte prefixes, named `shale.FixedPrefix.<len>`.
    pub fn new(len: usize) -> Self {
        FixedPrefix {
            len,
            name: format!("shale.FixedPrefix.{len}"),
        }
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> usize {
        self.len
    }
}

impl PrefixExtractor for FixedPrefix {
    fn name(&self) -> &str {
        &self.name
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        key.get(..self.len)
    }
}

/// The filter hash of a key or prefix: XXH3-64 with seed 0.
#[inline]
pub(crate) fn bloom_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// `round(bits_per_key * ln 2)` clamped to `1..=30`.
fn probes_for(bits_per_key: u32) -> u8 {
    let probes = (f64::from(bits_per_key) * std::f64::consts::LN_2).round();
    // Clamped to 1..=30 first, so the cast is exact.
    #[allow(clippy::cast_sign_loss)]
    let probes = probes.clamp(1.0, f64::from(MAX_PROBES)) as u8;
    probes
}

/// Collects the hashes of a table's keys (or prefixes) and builds its filter block.
#[derive(Debug, Clone)]
pub(crate) struct BloomBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    /// A builder that will spend `bits_per_key` bits per distinct added hash.
    pub(crate) fn new(bits_per_key: u32) -> Self {
        BloomBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// Adds a key (or prefix).
    pub(crate) fn add_key(&mut self, key: &[u8]) {
        self.add_hash(bloom_hash(key));
    }

    /// Adds a precomputed [`bloom_hash`]. A hash equal to the previous one is skipped, so the
    /// versions of one user key, or the keys sharing a prefix, count once.
    pub(crate) fn add_hash(&mut self, hash: u64) {
        if self.hashes.last() != Some(&hash) {
            self.hashes.push(hash);
        }
    }

    /// Hashes added so far (consecutive duplicates counted once).
    #[cfg(test)]
    pub(crate) fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    /// Whether nothing was added since the last [`BloomBuilder::finish`].
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Returns the filter block contents for the added hashes and resets the builder.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let wanted = (self.hashes.len() as u64).saturating_mul(u64::from(self.bits_per_key));
        let num_bits = wanted.clamp(MIN_BITS, MAX_BITS);
        let num_probes = probes_for(self.bits_per_key);
        let bytes = num_bits.div_ceil(8) as usize;
        let mut block = vec![0u8; HEADER_SIZE + bytes];
        block[0] = KIND_BLOOM;
        block[1] = num_probes;
        // block[2..4]: reserved, zero.
        block[4..8].copy_from_slice(&(num_bits as u32).to_le_bytes());
        let bits = &mut block[HEADER_SIZE..];
        for &hash in &self.hashes {
            let (mut x, step) = split_hash(hash);
            for _ in 0..num_probes {
                let bit = reduce(x, num_bits);
                bits[bit >> 3] |= 1 << (bit & 7);
                x = x.wrapping_add(step);
            }
        }
        self.hashes.clear();
        block
    }
}

/// `(h1, h2)` of the double-hashing scheme.
#[inline]
fn split_hash(hash: u64) -> (u32, u32) {
    (hash as u32, ((hash >> 32) as u32) | 1)
}

/// Maps a 32-bit probe value onto `[0, num_bits)` without a division.
#[inline]
fn reduce(x: u32, num_bits: u64) -> usize {
    ((u64::from(x) * num_bits) >> 32) as usize
}

/// A decoded filter block.
pub(crate) struct BloomFilter {
    /// The whole block, header included (invariant 5).
    data: Box<[u8]>,
    num_bits: u32,
    num_probes: u8,
}

impl fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("num_bits", &self.num_bits)
            .field("num_probes", &self.num_probes)
            .finish_non_exhaustive()
    }
}

impl BloomFilter {
    /// Decodes a filter block. `Ok(None)` means the block is of a kind this build does not know
    /// and must be treated as absent; a malformed bloom header is an error.
    pub(crate) fn decode(block: Vec<u8>) -> Result<Option<BloomFilter>, DecodeError> {
        let Some(&kind) = block.first() else {
            return Err(DecodeError::new("filter block is empty"));
        };
        if kind != KIND_BLOOM {
            return Ok(None);
        }
        if block.len() < HEADER_SIZE {
            return Err(DecodeError::new(format!(
                "filter block of {} bytes is shorter than its {HEADER_SIZE}-byte header",
                block.len()
            )));
        }
        let num_probes = block[1];
        if num_probes == 0 || num_probes > MAX_PROBES {
            return Err(DecodeError::new(format!(
                "filter has {num_probes} probes; expected 1..={MAX_PROBES}"
            )));
        }
        if block[2..4] != [0, 0] {
            return Err(DecodeError::new(
                "filter header reserved bytes are not zero",
            ));
        }
        let num_bits = get_u32(&block, 4)?;
        if num_bits == 0 {
            return Err(DecodeError::new("filter has zero bits"));
        }
        let expected = (num_bits as usize).div_ceil(8);
        if block.len() - HEADER_SIZE != expected {
            return Err(DecodeError::new(format!(
                "filter states {num_bits} bits ({expected} bytes) but has {} bytes of bits",
                block.len() - HEADER_SIZE
            )));
        }
        Ok(Some(BloomFilter {
            data: block.into_boxed_slice(),
            num_bits,
            num_probes,
        }))
    }

    /// False only if `key` was certainly not added.
    #[inline]
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(bloom_hash(key))
    }

    /// [`BloomFilter::may_contain`] for a precomputed [`bloom_hash`].
    #[inline]
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        let num_bits = u64::from(self.num_bits);
        let (mut x, step) = split_hash(hash);
        for _ in 0..self.num_probes {
            let bit = reduce(x, num_bits);
            // In bounds by invariant 5: bit < num_bits, so bit / 8 < ceil(num_bits / 8).
            if self.data[HEADER_SIZE + (bit >> 3)] & (1 << (bit & 7)) == 0 {
                return false;
            }
            x = x.wrapping_add(step);
        }
        true
    }

    /// Bits in the filter.
    pub(crate) fn num_bits(&self) -> u32 {
        self.num_bits
    }

    /// Probes per key.
    pub(crate) fn num_probes(&self) -> u8 {
        self.num_probes
    }

    /// Bytes held in memory (the whole block).
    pub(crate) fn size_bytes(&self) -> usize {
        self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Vec<u8> {
        format!("user{i:012}").into_bytes()
    }

    fn build(keys: impl IntoIterator<Item = Vec<u8>>, bits_per_key: u32) -> BloomFilter {
        let mut builder = BloomBuilder::new(bits_per_key);
        for k in keys {
            builder.add_key(&k);
        }
        BloomFilter::decode(builder.finish()).unwrap().unwrap()
    }

    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let present = 100_000u64;
        let filter = build((0..present).map(key), 10);
        assert_eq!(filter.num_bits(), 1_000_000);
        assert_eq!(filter.num_probes(), 7);
        assert_eq!(filter.size_bytes(), 8 + 125_000);
        for i in 0..present {
            assert!(filter.may_contain(&key(i)), "false negative for key {i}");
        }
        let absent = 1_000_000u64;
        let false_positives = (present..present + absent)
            .filter(|&i| filter.may_contain(&key(i)))
            .count();
        let rate = false_positives as f64 / absent as f64;
        println!(
            "bloom false-positive rate at 10 bits/key: {:.4}%",
            rate * 100.0
        );
        assert!(rate <= 0.01, "false-positive rate {rate} above 1%");
    }

    #[test]
    fn layout_matches_spec() {
        let mut builder = BloomBuilder::new(10);
        builder.add_key(b"hello");
        let block = builder.finish();
        // max(64, 1 * 10) bits = 8 bytes.
        assert_eq!(block.len(), 16);
        assert_eq!(&block[..8], &[1, 7, 0, 0, 64, 0, 0, 0]);
        // Recompute the set bits by hand from the spec's formula.
        let h = xxhash_rust::xxh3::xxh3_64(b"hello");
        let (h1, h2) = (h as u32, (h >> 32) as u32 | 1);
        let mut expected = [0u8; 8];
        for i in 0..7u32 {
            let x = h1.wrapping_add(i.wrapping_mul(h2));
            let bit = ((x as u64 * 64) >> 32) as usize;
            expected[bit / 8] |= 1 << (bit % 8);
        }
        assert_eq!(&block[8..], &expected);

        // num_bits is exact, not rounded to bytes: 13 keys * 5 bits = 65 bits in 9 bytes.
        let mut builder = BloomBuilder::new(5);
        for i in 0..13 {
            builder.add_key(&key(i));
        }
        let block = builder.finish();
        assert_eq!(u32::from_le_bytes(block[4..8].try_into().unwrap()), 65);
        assert_eq!(block.len(), 8 + 9);
        assert_eq!(block[1], 3);
        let filter = BloomFilter::decode(block).unwrap().unwrap();
        assert!((0..13).all(|i| filter.may_contain(&key(i))));
    }

    #[test]
    fn probes_follow_bits_per_key() {
        assert_eq!(probes_for(0), 1);
        assert_eq!(probes_for(1), 1);
        assert_eq!(probes_for(10), 7);
        assert_eq!(probes_for(20), 14);
        assert_eq!(probes_for(100), 30);
    }

    #[test]
    fn empty_builder_makes_a_valid_filter_that_answers_false() {
        let mut builder = BloomBuilder::new(10);
        assert!(builder.is_empty());
        let filter = BloomFilter::decode(builder.finish()).unwrap().unwrap();
        assert_eq!(filter.num_bits(), 64);
        assert!((0..1000).all(|i| !filter.may_contain(&key(i))));
    }

    #[test]
    fn consecutive_duplicates_count_once_and_finish_resets() {
        let mut builder = BloomBuilder::new(10);
        for _ in 0..5 {
            builder.add_key(b"same");
        }
        builder.add_key(b"other");
        builder.add_key(b"same");
        assert_eq!(builder.num_keys(), 3);
        let first = builder.finish();
        assert!(builder.is_empty());
        assert_eq!(builder.num_keys(), 0);
        for k in [&b"same"[..], b"other", b"same"] {
            builder.add_key(k);
        }
        assert_eq!(builder.finish(), first);
    }

    #[test]
    fn decode_rejects_bad_headers_and_skips_unknown_kinds() {
        let good = build((0..100).map(key), 10);
        let mut block = good.data.to_vec();
        assert!(BloomFilter::decode(block.clone()).unwrap().is_some());

        let mut unknown = block.clone();
        unknown[0] = 2;
        assert!(BloomFilter::decode(unknown).unwrap().is_none());
        assert!(BloomFilter::decode(vec![7]).unwrap().is_none());

        assert!(BloomFilter::decode(Vec::new()).is_err());
        assert!(BloomFilter::decode(block[..7].to_vec()).is_err());
        for probes in [0u8, 31, 255] {
            let mut bad = block.clone();
            bad[1] = probes;
            assert!(BloomFilter::decode(bad).is_err(), "probes {probes}");
        }
        for at in [2, 3] {
            let mut bad = block.clone();
            bad[at] = 1;
            assert!(BloomFilter::decode(bad).is_err(), "reserved byte {at}");
        }
        let mut bad = block.clone();
        bad[4..8].copy_from_slice(&0u32.to_le_bytes());
        assert!(BloomFilter::decode(bad).is_err(), "zero bits");
        let mut bad = block.clone();
        bad.truncate(bad.len() - 1);
        assert!(BloomFilter::decode(bad).is_err(), "short bit array");
        let mut bad = block.clone();
        bad.push(0);
        assert!(BloomFilter::decode(bad).is_err(), "long bit array");
        let mut bad = block.clone();
        bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(BloomFilter::decode(bad).is_err(), "huge bit count");
        // One bit more than the array holds when the count is a multiple of 8.
        let bits = u32::from_le_bytes(block[4..8].try_into().unwrap());
        assert_eq!(bits % 8, 0);
        block[4..8].copy_from_slice(&(bits + 1).to_le_bytes());
        assert!(BloomFilter::decode(block).is_err(), "bits + 1");
    }

    #[test]
    fn odd_bit_counts_never_probe_out_of_bounds() {
        for num_bits in [1u32, 7, 9, 63, 65, 1001] {
            let mut block = vec![1, 30, 0, 0];
            block.extend_from_slice(&num_bits.to_le_bytes());
            block.resize(8 + (num_bits as usize).div_ceil(8), 0xff);
            let filter = BloomFilter::decode(block).unwrap().unwrap();
            assert!((0..2000).all(|i| filter.may_contain(&key(i))));
        }
    }

    #[test]
    fn fixed_prefix_domain() {
        let extractor = FixedPrefix::new(4);
        assert_eq!(extractor.name(), "shale.FixedPrefix.4");
        assert_eq!(extractor.prefix_len(), 4);
        assert_eq!(extractor.prefix(b"abcdef"), Some(&b"abcd"[..]));
        assert_eq!(extractor.prefix(b"abcd"), Some(&b"abcd"[..]));
        assert_eq!(extractor.prefix(b"abc"), None);
        assert_eq!(extractor.prefix(b""), None);
        assert_eq!(FixedPrefix::new(0).prefix(b""), Some(&b""[..]));

        // Prefix filter: every key sharing an in-domain prefix is answered true.
        let mut builder = BloomBuilder::new(10);
        for k in [&b"aaaa1"[..], b"aaaa2", b"bbbb1", b"cc"] {
            if let Some(prefix) = extractor.prefix(k) {
                builder.add_key(prefix);
            }
        }
        assert_eq!(builder.num_keys(), 2);
        let filter = BloomFilter::decode(builder.finish()).unwrap().unwrap();
        assert!(filter.may_contain(b"aaaa"));
        assert!(filter.may_contain(b"bbbb"));
        let dyn_extractor: &dyn PrefixExtractor = &extractor;
        assert!(format!("{dyn_extractor:?}").contains("FixedPrefix"));
    }
}
