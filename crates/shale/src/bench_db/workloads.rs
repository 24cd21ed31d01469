//! What each thread of a benchmark does, following `db_bench` 7.8:
//!
//! - Keys are `KeyGenerator` keys of an index; a random index is `Random64::next_u64() % num`
//!   from the thread's own generator, seeded `seed_base + n` with `n` counting threads over
//!   the whole run. The generator and the draw are `db_bench`'s, so keys are spread the same
//!   way; the same `--seed` does not yet give `db_bench`'s exact sequence (its per-thread
//!   seed derivation in 7.8 differs from this one and is not replicated).
//! - Values are consecutive slices of the `db_bench` value buffer, from slice 0 for every
//!   thread of every benchmark (each `db_bench` thread builds its own `RandomGenerator`).
//! - Writes are one-entry `WriteBatch`es; `MB/s` counts `key_size + value_size` per write.
//! - readrandom and readwhilewriting's readers count a key as found when `get` returns a
//!   value and add its key + value bytes; seekrandom opens a new iterator for every seek (as
//!   `db_bench` does without a tailing iterator), counts the seek as found when it lands on
//!   the key itself, then for up to `--seek_nexts` entries from the landing one adds the
//!   entry's key + value bytes and steps past it.
//! - readwhilewriting runs `--threads` readers and one writer; the writer writes random keys
//!   (at `--benchmark_write_rate_limit` when set) until every reader is done, and is left out
//!   of the reported figures.
//! - With `--duration`, random benchmarks run for that many seconds instead of a count
//!   (checked every 1000 operations); fillseq ignores it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::engines::Engine;
use super::flags::{Benchmark, Config};
use super::random::Random64;
use super::report::{OpKind, Stats};
use crate::keygen::{KeyGenerator, ValueGenerator};
use crate::output::Failure;

/// Operations between clock checks under `--duration`.
const DURATION_CHECK_EVERY: u64 = 1000;

/// What the threads of one benchmark share.
pub struct Shared<'a> {
    pub db: &'a dyn Engine,
    pub config: &'a Config,
    pub keys: KeyGenerator,
    pub values: &'a ValueGenerator,
    pub rate_limiter: Option<RateLimiter>,
    /// Reader threads that have finished (readwhilewriting's writer stops when all have).
    pub readers_done: AtomicUsize,
    /// Reader threads in the benchmark.
    pub readers: usize,
}

/// One thread of a benchmark.
pub struct ThreadState {
    pub tid: usize,
    pub rand: Random64,
    pub stats: Stats,
}

/// The operation a benchmark's threads time.
pub fn op_kind(benchmark: Benchmark) -> OpKind {
    match benchmark {
        Benchmark::ReadRandom
        | Benchmark::ReadSeq
        | Benchmark::ReadReverse
        | Benchmark::ReadWhileWriting => OpKind::Read,
        Benchmark::SeekRandom => OpKind::Seek,
        Benchmark::DeleteRandom => OpKind::Delete,
        _ => OpKind::Write,
    }
}

/// Paces writers of all threads together to a byte rate.
pub struct RateLimiter {
    bytes_per_second: f64,
    start: Instant,
    granted: Mutex<u64>,
}

impl RateLimiter {
    pub fn new(bytes_per_second: u64) -> Self {
        RateLimiter {
            bytes_per_second: bytes_per_second as f64,
            start: Instant::now(),
            granted: Mutex::new(0),
        }
    }

    /// Waits until `bytes` more fit in the rate since the start.
    fn request(&self, bytes: usize) {
        let due = {
            let mut granted = self
                .granted
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *granted += bytes as u64;
            Duration::from_secs_f64(*granted as f64 / self.bytes_per_second)
        };
        if let Some(wait) = due.checked_sub(self.start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

/// `db_bench`'s `Duration`: a count of operations, or a time when `seconds > 0`.
struct Limit {
    max_ops: u64,
    deadline: Option<Instant>,
    ops: u64,
}

impl Limit {
    fn new(max_ops: u64, seconds: u64) -> Self {
        Limit {
            max_ops,
            deadline: (seconds > 0).then(|| Instant::now() + Duration::from_secs(seconds)),
            ops: 0,
        }
    }

    /// Whether the benchmark is over (counts the next operation when it is not).
    fn done(&mut self) -> bool {
        let over = match self.deadline {
            Some(deadline) => {
                self.ops.is_multiple_of(DURATION_CHECK_EVERY) && Instant::now() >= deadline
            }
            None => self.ops >= self.max_ops,
        };
        if !over {
            self.ops += 1;
        }
        over
    }
}

/// Runs `benchmark`'s part for one thread.
// Never inlined: scripts/callgrind-ops.sh counts instructions inside this symbol only.
#[inline(never)]
pub fn run_thread(
    benchmark: Benchmark,
    shared: &Shared<'_>,
    thread: &mut ThreadState,
) -> Result<(), Failure> {
    let config = shared.config;
    match benchmark {
        Benchmark::FillSeq => write(shared, thread, Order::Sequential, 0),
        Benchmark::FillRandom | Benchmark::Overwrite => {
            write(shared, thread, Order::Random, config.duration)
        }
        Benchmark::DeleteRandom => delete_random(shared, thread),
        Benchmark::ReadRandom => read_random(shared, thread),
        Benchmark::ReadSeq => read_sequential(shared, thread, true),
        Benchmark::ReadReverse => read_sequential(shared, thread, false),
        Benchmark::SeekRandom => seek_random(shared, thread),
        Benchmark::ReadWhileWriting => {
            if thread.tid == 0 {
                background_writer(shared, thread)
            } else {
                // Counted even when the reader fails, so the writer always stops.
                struct Done<'a>(&'a AtomicUsize);
                impl Drop for Done<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_add(1, Ordering::AcqRel);
                    }
                }
                let _done = Done(&shared.readers_done);
                read_random(shared, thread)
            }
        }
        Benchmark::Stats
        | Benchmark::LevelStats
        | Benchmark::Flush
        | Benchmark::WaitForCompaction
        | Benchmark::Compact => Err(Failure::error(format!(
            "{} is not a threaded benchmark",
            benchmark.name()
        ))),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Sequential,
    Random,
}

/// Writes one entry as `db_bench`'s `DoWrite` does with one entry per batch.
fn put(shared: &Shared<'_>, key: &[u8], value: &[u8]) -> Result<(), Failure> {
    if let Some(limiter) = &shared.rate_limiter {
        limiter.request(key.len() + value.len());
    }
    shared.db.put(key, value)
}

fn write(
    shared: &Shared<'_>,
    thread: &mut ThreadState,
    order: Order,
    seconds: u64,
) -> Result<(), Failure> {
    let num = shared.config.num;
    let mut limit = Limit::new(num, seconds);
    let mut key = Vec::with_capacity(shared.keys.key_size());
    let mut written = 0u64;
    while !limit.done() {
        let index = match order {
            Order::Sequential => written,
            Order::Random => thread.rand.next_u64() % num,
        };
        shared.keys.key_into(index, &mut key);
        let value = shared.values.value(written);
        put(shared, &key, value)?;
        written += 1;
        thread.stats.add_bytes(key.len() + value.len());
        thread.stats.finished_op();
    }
    Ok(())
}

fn delete_random(shared: &Shared<'_>, thread: &mut ThreadState) -> Result<(), Failure> {
    let num = shared.config.num;
    let mut limit = Limit::new(shared.config.deletes, shared.config.duration);
    let mut key = Vec::with_capacity(shared.keys.key_size());
    while !limit.done() {
        shared.keys.key_into(thread.rand.next_u64() % num, &mut key);
        shared.db.delete(&key)?;
        thread.stats.finished_op();
    }
    Ok(())
}

// Never inlined: scripts/callgrind-ops.sh counts readwhilewriting's readers by this symbol.
#[inline(never)]
fn read_random(shared: &Shared<'_>, thread: &mut ThreadState) -> Result<(), Failure> {
    let num = shared.config.num;
    let mut limit = Limit::new(shared.config.reads, shared.config.duration);
    let mut key = Vec::with_capacity(shared.keys.key_size());
    while !limit.done() {
        shared.keys.key_into(thread.rand.next_u64() % num, &mut key);
        let value_len = shared.db.get(&key)?;
        if let Some(value_len) = value_len {
            thread.stats.add_bytes(key.len() + value_len);
        }
        thread.stats.add_lookup(value_len.is_some());
        thread.stats.finished_op();
    }
    Ok(())
}

fn read_sequential(
    shared: &Shared<'_>,
    thread: &mut ThreadState,
    forward: bool,
) -> Result<(), Failure> {
    let mut iter = shared.db.cursor()?;
    if forward {
        iter.seek_to_first();
    } else {
        iter.seek_to_last();
    }
    let mut read = 0;
    while read < shared.config.reads && iter.valid() {
        thread
            .stats
            .add_bytes(iter.key().len() + iter.value().len());
        thread.stats.finished_op();
        read += 1;
        if forward {
            iter.next();
        } else {
            iter.prev();
        }
    }
    iter.status()
}

fn seek_random(shared: &Shared<'_>, thread: &mut ThreadState) -> Result<(), Failure> {
    let num = shared.config.num;
    let mut limit = Limit::new(shared.config.reads, shared.config.duration);
    let mut key = Vec::with_capacity(shared.keys.key_size());
    while !limit.done() {
        shared.keys.key_into(thread.rand.next_u64() % num, &mut key);
        let mut iter = shared.db.cursor()?;
        iter.seek(&key);
        thread
            .stats
            .add_lookup(iter.valid() && iter.key() == key.as_slice());
        for _ in 0..shared.config.seek_nexts {
            if !iter.valid() {
                break;
            }
            thread
                .stats
                .add_bytes(iter.key().len() + iter.value().len());
            iter.next();
        }
        iter.status()?;
        thread.stats.finished_op();
    }
    Ok(())
}

fn background_writer(shared: &Shared<'_>, thread: &mut ThreadState) -> Result<(), Failure> {
    thread.stats.exclude_from_merge();
    let num = shared.config.num;
    let mut key = Vec::with_capacity(shared.keys.key_size());
    let mut written = 0u64;
    while shared.readers_done.load(Ordering::Acquire) < shared.readers {
        shared.keys.key_into(thread.rand.next_u64() % num, &mut key);
        let value = shared.values.value(written);
        put(shared, &key, value)?;
        written += 1;
        thread.stats.add_bytes(key.len() + value.len());
        thread.stats.finished_op();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_counts_operations_or_time() {
        let mut limit = Limit::new(3, 0);
        let mut ops = 0;
        while !limit.done() {
            ops += 1;
        }
        assert_eq!(ops, 3);
        let start = Instant::now();
        let mut limit = Limit::new(1, 1);
        let mut ops = 0u64;
        while !limit.done() {
            ops += 1;
        }
        assert!(ops > 1, "the count is ignored under a duration");
        assert!(start.elapsed() >= Duration::from_secs(1));
    }

    #[test]
    fn rate_limiter_paces_to_the_rate() {
        let limiter = RateLimiter::new(100_000);
        let start = Instant::now();
        for _ in 0..10 {
            limiter.request(2_000);
        }
        // 20,000 bytes at 100,000 bytes/s: at least 0.2 s.
        assert!(start.elapsed() >= Duration::from_millis(200));
    }
}
