//! Keys and values generated the way `db_bench` (`RocksDB`) generates them, so that figures from
//! `shale bench` can be set beside `db_bench` runs with the same `--key-size`, `--value-size`
//! and `--compression-ratio`.
//!
//! - Keys ([`KeyGenerator`], `db_bench`'s `GenerateKeyFromInt`): the index as a big-endian
//!   integer in the first `min(key_size, 8)` bytes, then ASCII `'0'` (0x30) up to `key_size`.
//!   Big-endian makes bytewise order the numeric order, so keys of increasing index are sorted.
//! - Values ([`ValueGenerator`], `db_bench`'s `RandomGenerator`): a buffer of at least 1 MiB
//!   built from 100-byte pieces, each made by `CompressibleString`: `trunc(100 * ratio)` random
//!   printable bytes repeated to 100 bytes. Values are consecutive `value_size` slices of it,
//!   starting over at 0 when the next slice would run past the end.
//! - The random numbers come from [`LegacyRandom`], `LevelDB`'s `Random` (Park–Miller, seed 301
//!   as in `db_bench`), so the bytes are those `db_bench` writes.
//!
//! Invariant: [`ValueGenerator::value`] of index `i` is the `i`-th slice `db_bench`'s sequential
//! `Generate` would hand out, so a reader can recompute the value of any key to check it.

/// The seed `db_bench`'s `RandomGenerator` uses.
const VALUE_SEED: u32 = 301;
/// The least size of the value buffer: larger than any compression window.
const MIN_VALUE_BUFFER: usize = 1 << 20;
/// Length of one compressible piece.
const PIECE_LEN: usize = 100;

/// `LevelDB`'s `Random`: the Park–Miller "minimal standard" generator, `seed * 16807 mod 2^31-1`.
#[derive(Debug, Clone)]
pub struct LegacyRandom {
    seed: u32,
}

impl LegacyRandom {
    const MODULUS: u64 = 2_147_483_647;
    const MULTIPLIER: u64 = 16_807;

    /// A generator seeded like `LevelDB`'s (0 and 2^31-1 are replaced by 1).
    pub fn new(seed: u32) -> Self {
        let mut seed = seed & 0x7fff_ffff;
        if seed == 0 || u64::from(seed) == Self::MODULUS {
            seed = 1;
        }
        LegacyRandom { seed }
    }

    /// The next number in `1..2^31-1`.
    pub fn next_u32(&mut self) -> u32 {
        let product = u64::from(self.seed) * Self::MULTIPLIER;
        // (product >> 31) + (product & M) is product mod M, up to one subtraction, since
        // 2^31 = 1 (mod M).
        let mut seed = (product >> 31) + (product & Self::MODULUS);
        if seed > Self::MODULUS {
            seed -= Self::MODULUS;
        }
        self.seed = seed as u32;
        self.seed
    }

    /// A number in `0..n`.
    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }
}

/// `len` random printable bytes (`' '..='~'`), as `LevelDB`'s `test::RandomString`.
fn random_string(rnd: &mut LegacyRandom, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend((0..len).map(|_| b' ' + rnd.uniform(95) as u8));
}

/// `len` bytes that compress to about `ratio` of their size, as `LevelDB`'s
/// `test::CompressibleString`: `trunc(len * ratio)` (at least 1) random bytes repeated.
pub fn compressible_string(rnd: &mut LegacyRandom, ratio: f64, len: usize) -> Vec<u8> {
    // Truncation toward zero is what `static_cast<int>` does in db_bench.
    #[allow(clippy::cast_sign_loss)]
    let raw = ((len as f64 * ratio) as usize).max(1);
    let mut random = Vec::with_capacity(raw);
    random_string(rnd, raw, &mut random);
    let mut out = Vec::with_capacity(len + raw);
    while out.len() < len {
        out.extend_from_slice(&random);
    }
    out.truncate(len);
    out
}

/// Values of a fixed size cut from a buffer of compressible random data.
#[derive(Debug, Clone)]
pub struct ValueGenerator {
    data: Vec<u8>,
    value_size: usize,
    /// How many values are cut before starting over at offset 0.
    values_per_cycle: u64,
}

impl ValueGenerator {
    /// The generator `db_bench` builds for `--value_size` and `--compression_ratio`.
    pub fn new(value_size: usize, compression_ratio: f64) -> Self {
        let mut rnd = LegacyRandom::new(VALUE_SEED);
        let target = MIN_VALUE_BUFFER.max(value_size);
        let mut data = Vec::with_capacity(target + PIECE_LEN);
        while data.len() < target {
            data.extend_from_slice(&compressible_string(&mut rnd, compression_ratio, PIECE_LEN));
        }
        let values_per_cycle = data.len().checked_div(value_size).map_or(1, |n| n as u64);
        ValueGenerator {
            data,
            value_size,
            values_per_cycle,
        }
    }

    /// The value written for the key of `index`.
    pub fn value(&self, index: u64) -> &[u8] {
        let start = (index % self.values_per_cycle) as usize * self.value_size;
        &self.data[start..start + self.value_size]
    }
}

/// Keys of a fixed size from integer indexes.
#[derive(Debug, Clone, Copy)]
pub struct KeyGenerator {
    key_size: usize,
}

impl KeyGenerator {
    /// Keys of `key_size` bytes (at least 1).
    pub fn new(key_size: usize) -> Self {
        debug_assert!(key_size > 0);
        KeyGenerator { key_size }
    }

    /// The key size.
    pub fn key_size(self) -> usize {
        self.key_size
    }

    /// How many distinct keys there are: `2^(8 * key_size)`, or `u64::MAX` from 8 bytes on.
    pub fn capacity(self) -> u64 {
        if self.key_size >= 8 {
            u64::MAX
        } else {
            1 << (8 * self.key_size)
        }
    }

    /// Writes the key of `index` into `out` (replacing its contents).
    pub fn key_into(self, index: u64, out: &mut Vec<u8>) {
        out.clear();
        let fill = self.key_size.min(8);
        out.extend_from_slice(&index.to_be_bytes()[8 - fill..]);
        out.resize(self.key_size, b'0');
    }

    /// The key of `index`.
    #[cfg(test)]
    pub fn key(self, index: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.key_size);
        self.key_into(index, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_random_matches_leveldb_sequence() {
        // Park-Miller from seed 1: 16807, 282475249, 1622650073 (the published check values).
        let mut rnd = LegacyRandom::new(1);
        assert_eq!(rnd.next_u32(), 16_807);
        assert_eq!(rnd.next_u32(), 282_475_249);
        assert_eq!(rnd.next_u32(), 1_622_650_073);
        // The 10000th value from seed 1 is 1043618065 (Park and Miller, 1988).
        let mut rnd = LegacyRandom::new(1);
        let mut last = 0;
        for _ in 0..10_000 {
            last = rnd.next_u32();
        }
        assert_eq!(last, 1_043_618_065);
        // Seeds that would stick are replaced.
        assert_eq!(LegacyRandom::new(0).seed, 1);
        assert_eq!(LegacyRandom::new(0x7fff_ffff).seed, 1);
    }

    #[test]
    fn keys_are_big_endian_index_padded_with_ascii_zero() {
        let keys = KeyGenerator::new(16);
        assert_eq!(keys.key(0x0102), b"\0\0\0\0\0\0\x01\x0200000000");
        assert!(keys.key(255) < keys.key(256));
        let short = KeyGenerator::new(4);
        assert_eq!(short.key(0x0102_0304), b"\x01\x02\x03\x04");
        assert_eq!(short.capacity(), 1 << 32);
        assert_eq!(KeyGenerator::new(8).capacity(), u64::MAX);
    }

    #[test]
    fn compressible_string_repeats_its_random_part() {
        let mut rnd = LegacyRandom::new(301);
        let s = compressible_string(&mut rnd, 0.5, 100);
        assert_eq!(s.len(), 100);
        assert_eq!(s[..50], s[50..]);
        assert!(s.iter().all(|b| (b' '..=b'~').contains(b)));
        let mut rnd = LegacyRandom::new(301);
        let tiny = compressible_string(&mut rnd, 0.0, 10);
        assert!(tiny.iter().all(|&b| b == tiny[0]));
    }

    #[test]
    fn values_match_a_sequential_generate() {
        let values = ValueGenerator::new(100, 0.5);
        assert!(values.data.len() >= MIN_VALUE_BUFFER);
        // db_bench's Generate: wrap to 0 when pos + len would pass the end.
        let mut pos = 0usize;
        for index in 0..(values.values_per_cycle * 2 + 7) {
            if pos + 100 > values.data.len() {
                pos = 0;
            }
            assert_eq!(values.value(index), &values.data[pos..pos + 100], "{index}");
            pos += 100;
        }
        let empty = ValueGenerator::new(0, 0.5);
        assert!(empty.value(12).is_empty());
    }

    #[test]
    fn values_compress_to_about_the_ratio() {
        let values = ValueGenerator::new(100, 0.5);
        let distinct: std::collections::HashSet<&[u8]> =
            values.data.chunks(50).take(1000).collect();
        // Each 100-byte piece is one 50-byte random string twice.
        assert!(
            distinct.len() <= 500 && distinct.len() > 450,
            "{}",
            distinct.len()
        );
    }
}
