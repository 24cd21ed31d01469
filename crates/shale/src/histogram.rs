//! A latency histogram with log-linear buckets, for per-operation timings in benchmarks.
//!
//! Values (nanoseconds) below 16 get a bucket each; above, every power of two is split into 8
//! equal buckets, so a bucket is at most 1/8 (12.5%) wider than its lower bound. Percentiles
//! interpolate linearly inside the bucket and are clamped to the exact minimum and maximum.
//!
//! Invariant: `count` is the sum of `buckets`, and `min <= max` once `count > 0`.

/// Values below this are recorded exactly.
const LINEAR: u64 = 16;
/// Buckets per power of two above [`LINEAR`] (as a bit count: 2^3 = 8).
const SUB_BITS: u32 = 3;
const BUCKETS: usize = LINEAR as usize + (64 - 4) * (1 << SUB_BITS);

/// Counts of recorded values by bucket.
#[derive(Debug, Clone)]
pub struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    /// Sum of squares, for the standard deviation.
    sum_squares: f64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            sum_squares: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }
}

/// The bucket of `value`.
fn bucket_of(value: u64) -> usize {
    if value < LINEAR {
        return value as usize;
    }
    let exponent = value.ilog2(); // >= 4
    let sub = (value >> (exponent - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    LINEAR as usize + ((exponent - 4) as usize) * (1 << SUB_BITS) + sub as usize
}

/// The half-open value range `[low, high)` of bucket `index`.
fn bucket_range(index: usize) -> (u64, u64) {
    if index < LINEAR as usize {
        return (index as u64, index as u64 + 1);
    }
    let rest = index - LINEAR as usize;
    let exponent = (rest >> SUB_BITS) as u32 + 4;
    let sub = (rest & ((1 << SUB_BITS) - 1)) as u64;
    let step = 1u64 << (exponent - SUB_BITS);
    let low = ((1 << SUB_BITS) + sub) * step;
    (low, low.saturating_add(step))
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one value.
    pub fn record(&mut self, value: u64) {
        self.buckets[bucket_of(value)] += 1;
        self.count += 1;
        self.sum += u128::from(value);
        self.sum_squares += (value as f64) * (value as f64);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The mean, or 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Adds every value `other` recorded.
    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_squares += other.sum_squares;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// The population standard deviation, or 0 when empty.
    pub fn std_dev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.mean();
        (self.sum_squares / n - mean * mean).max(0.0).sqrt()
    }

    /// The smallest value recorded, or 0 when empty.
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// The non-empty buckets in order: `(low, high, count)` with values in `[low, high)`.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(index, &n)| {
                let (low, high) = bucket_range(index);
                (low, high, n)
            })
    }

    /// The largest value recorded, or 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value below which `percent` percent of the values lie (estimated within a bucket),
    /// or 0 when empty.
    pub fn percentile(&self, percent: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let threshold = self.count as f64 * (percent / 100.0).clamp(0.0, 1.0);
        let mut cumulative = 0u64;
        for (index, &n) in self.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let before = cumulative as f64;
            cumulative += n;
            if cumulative as f64 >= threshold {
                let (low, high) = bucket_range(index);
                let fraction = ((threshold - before) / n as f64).clamp(0.0, 1.0);
                let value = low as f64 + (high - low) as f64 * fraction;
                return value.clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_value_range() {
        let mut expected_low = 0;
        for index in 0..BUCKETS {
            let (low, high) = bucket_range(index);
            assert_eq!(low, expected_low, "bucket {index}");
            assert!(high > low);
            assert_eq!(bucket_of(low), index);
            assert_eq!(bucket_of(high - 1), index);
            // No bucket is wider than an eighth of its lower bound (past the exact ones).
            if low >= LINEAR {
                assert!((high - low) * 8 <= low, "bucket {index}: {low}..{high}");
            }
            expected_low = high;
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_of_a_uniform_range_are_close() {
        let mut h = Histogram::new();
        for v in 1..=10_000 {
            h.record(v);
        }
        assert_eq!(h.count(), 10_000);
        assert!((h.mean() - 5000.5).abs() < 1e-9);
        for (p, exact) in [(50.0, 5000.0), (99.0, 9900.0), (10.0, 1000.0)] {
            let got = h.percentile(p);
            assert!((got - exact).abs() / exact < 0.13, "p{p}: {got} vs {exact}");
        }
        assert!((h.percentile(100.0) - 10_000.0).abs() < f64::EPSILON);
        assert_eq!(h.max(), 10_000);
    }

    #[test]
    fn merge_adds_counts_and_keeps_extremes() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for v in [10, 20, 30] {
            a.record(v);
        }
        for v in [5, 1000] {
            b.record(v);
        }
        a.merge(&b);
        assert_eq!(a.count(), 5);
        assert_eq!((a.min(), a.max()), (5, 1000));
        assert!((a.mean() - 213.0).abs() < 1e-9);
        assert_eq!(a.buckets().map(|(_, _, n)| n).sum::<u64>(), 5);
        let mut same = Histogram::new();
        for _ in 0..4 {
            same.record(7);
        }
        assert!(same.std_dev().abs() < 1e-9);
        let mut spread = Histogram::new();
        spread.record(2);
        spread.record(4);
        assert!((spread.std_dev() - 1.0).abs() < 1e-9);
        assert_eq!(Histogram::new().min(), 0);
    }

    #[test]
    fn one_value_gives_that_value_at_every_percentile() {
        let mut h = Histogram::new();
        h.record(777);
        assert!((h.percentile(50.0) - 777.0).abs() < f64::EPSILON);
        assert!((h.percentile(99.0) - 777.0).abs() < f64::EPSILON);
        assert!(Histogram::new().percentile(50.0).abs() < f64::EPSILON);
    }
}
