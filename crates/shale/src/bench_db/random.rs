//! The random numbers `db_bench` draws keys with: `RocksDB`'s `Random64`, which is the C++
//! standard library's `std::mt19937_64` (64-bit Mersenne Twister). Implemented from the
//! algorithm's published parameters so that the same seed picks the same keys in both tools.

const STATE_WORDS: usize = 312;
const SHIFT_WORDS: usize = 156;
const MATRIX: u64 = 0xB502_6F5A_A966_19E9;
const UPPER_MASK: u64 = 0xFFFF_FFFF_8000_0000;
const LOWER_MASK: u64 = 0x7FFF_FFFF;

/// `std::mt19937_64` seeded with one 64-bit number.
#[derive(Clone)]
pub struct Random64 {
    state: Box<[u64; STATE_WORDS]>,
    index: usize,
}

impl Random64 {
    /// The generator `std::mt19937_64(seed)` builds.
    pub fn new(seed: u64) -> Self {
        let mut state = Box::new([0u64; STATE_WORDS]);
        state[0] = seed;
        for i in 1..STATE_WORDS {
            let previous = state[i - 1];
            state[i] = 6_364_136_223_846_793_005u64
                .wrapping_mul(previous ^ (previous >> 62))
                .wrapping_add(i as u64);
        }
        Random64 {
            state,
            index: STATE_WORDS,
        }
    }

    fn twist(&mut self) {
        for i in 0..STATE_WORDS {
            let x = (self.state[i] & UPPER_MASK) | (self.state[(i + 1) % STATE_WORDS] & LOWER_MASK);
            let mut shifted = x >> 1;
            if x & 1 != 0 {
                shifted ^= MATRIX;
            }
            self.state[i] = self.state[(i + SHIFT_WORDS) % STATE_WORDS] ^ shifted;
        }
        self.index = 0;
    }

    /// The next 64-bit number.
    pub fn next_u64(&mut self) -> u64 {
        if self.index >= STATE_WORDS {
            self.twist();
        }
        let mut x = self.state[self.index];
        self.index += 1;
        x ^= (x >> 29) & 0x5555_5555_5555_5555;
        x ^= (x << 17) & 0x71D6_7FFF_EDA6_0000;
        x ^= (x << 37) & 0xFFF7_EEE0_0000_0000;
        x ^ (x >> 43)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_check_value() {
        // The C++ standard ([rand.predef]) requires the 10000th output of a default-seeded
        // (5489) mt19937_64 to be 9981545732273789042.
        let mut rnd = Random64::new(5489);
        let mut last = 0;
        for _ in 0..10_000 {
            last = rnd.next_u64();
        }
        assert_eq!(last, 9_981_545_732_273_789_042);
    }

    #[test]
    fn same_seed_same_sequence_other_seed_other_sequence() {
        let mut a = Random64::new(1000);
        let mut b = Random64::new(1000);
        let mut c = Random64::new(1001);
        let first: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        assert_eq!(first, (0..5).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(first, (0..5).map(|_| c.next_u64()).collect::<Vec<_>>());
    }
}
