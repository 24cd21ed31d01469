//! The rate limiter: a bytes-per-second budget shared by the table writes of flushes and
//! compactions, flushes served first (docs/compaction.md, "Rate limiter").
//!
//! [`TokenBucket`] is the policy, a pure state machine driven by the caller's clock so tests
//! step time by hand; [`RateLimiter`] puts it behind a mutex and makes writers wait;
//! [`RateLimitedFile`] charges every append of a table file.
//!
//! Every `REFILL_PERIOD` (100 ms) the bucket gets a tenth of the rate in tokens; tokens do not
//! pile up past one refill, so an idle limiter allows no burst later. A request that cannot be
//! served at once waits in its priority's FIFO queue; at each refill the flush queue is served,
//! then the compaction queue, in arrival order, as far as the tokens go.
//!
//! Invariants:
//! 1. Over any `n` refill periods at most `n + 1` refills' worth of bytes are granted (one
//!    refill may be on hand when the window starts).
//! 2. A request is granted only when no flush request and no earlier request of its own
//!    priority is waiting: flushes go first, and within a priority nobody overtakes.
//! 3. No request exceeds one refill ([`RateLimiter::request`] splits larger writes), so the
//!    head of a queue always fits once the queues ahead of it are empty, and every request is
//!    eventually granted.
//! 4. With auto-tuning the rate stays within `[max / 20, max]` of the configured rate.
//! 5. A limiter whose rate is set to 0 is off: it grants every queued request at once and
//!    every later one without waiting, until a rate is set again
//!    ([`RateLimiter::set_bytes_per_sec`], `Db::set_options`).

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use shale_fs::WritableFile;

/// How often tokens are added.
pub(crate) const REFILL_PERIOD: Duration = Duration::from_millis(100);
/// Refills per second.
const REFILLS_PER_SECOND: u64 = 10;
/// How often auto-tuning looks at the pending compaction bytes.
pub(crate) const TUNE_PERIOD: Duration = Duration::from_secs(1);
/// Auto-tuning never goes below the configured rate divided by this.
const MIN_RATE_DIVISOR: u64 = 20;

/// Who is writing; flushes are served first (a slow flush stalls writers, a slow compaction
/// only lets debt grow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IoPriority {
    Flush,
    Compaction,
}

impl IoPriority {
    fn index(self) -> usize {
        match self {
            IoPriority::Flush => 0,
            IoPriority::Compaction => 1,
        }
    }
}

/// The answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Take the bytes now.
    Granted,
    /// Wait until [`TokenBucket::take_grant`] says this ticket was served.
    Queued(u64),
}

/// The limiter's policy. Times are durations since the limiter started.
#[derive(Debug)]
pub(crate) struct TokenBucket {
    /// The configured rate: the rate itself, or the ceiling with auto-tuning.
    max_bytes_per_sec: u64,
    bytes_per_sec: u64,
    auto_tune: bool,
    available: u64,
    next_refill: Duration,
    /// Waiting requests by priority: (ticket, bytes).
    queues: [VecDeque<(u64, u64)>; 2],
    /// Tickets served but not yet collected by their waiter.
    granted: BTreeSet<u64>,
    next_ticket: u64,
    next_tune: Duration,
    /// The pending compaction bytes at the last tuning, and now.
    tuned_pending: u64,
    pending: u64,
}

impl TokenBucket {
    /// A bucket of `bytes_per_sec` (at least 1) starting full at `now`. With `auto_tune` the
    /// rate starts at half of it.
    pub(crate) fn new(bytes_per_sec: u64, auto_tune: bool, now: Duration) -> TokenBucket {
        let max = bytes_per_sec.max(1);
        let rate = if auto_tune {
            (max / 2).max(min_rate(max))
        } else {
            max
        };
        TokenBucket {
            max_bytes_per_sec: max,
            bytes_per_sec: rate,
            auto_tune,
            available: refill_of(rate),
            next_refill: now + REFILL_PERIOD,
            queues: [VecDeque::new(), VecDeque::new()],
            granted: BTreeSet::new(),
            next_ticket: 0,
            next_tune: now + TUNE_PERIOD,
            tuned_pending: 0,
            pending: 0,
        }
    }

    /// The current rate.
    pub(crate) fn bytes_per_sec(&self) -> u64 {
        self.bytes_per_sec
    }

    /// Bytes added at each refill: the largest request (invariant 3).
    pub(crate) fn refill_bytes(&self) -> u64 {
        refill_of(self.bytes_per_sec)
    }

    /// When the next refill is due.
    pub(crate) fn next_refill(&self) -> Duration {
        self.next_refill
    }

    /// Asks for `bytes` (at most [`Self::refill_bytes`]) at `now`.
    pub(crate) fn request(&mut self, bytes: u64, priority: IoPriority, now: Duration) -> Admission {
        debug_assert!(bytes <= self.refill_bytes(), "invariant 3");
        self.advance(now);
        let ahead_empty = self.queues[..=priority.index()]
            .iter()
            .all(VecDeque::is_empty);
        if ahead_empty && bytes <= self.available {
            self.available -= bytes;
            return Admission::Granted;
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.queues[priority.index()].push_back((ticket, bytes));
        Admission::Queued(ticket)
    }

    /// Whether `ticket` was served; a served ticket is forgotten once reported.
    pub(crate) fn take_grant(&mut self, ticket: u64) -> bool {
        self.granted.remove(&ticket)
    }

    /// Sets the configured rate (at least 1; the ceiling with auto-tuning, which keeps its
    /// current rate within the new bounds). Tokens on hand are cut to one refill of it.
    pub(crate) fn set_max_bytes_per_sec(&mut self, bytes_per_sec: u64) {
        let max = bytes_per_sec.max(1);
        self.max_bytes_per_sec = max;
        self.bytes_per_sec = if self.auto_tune {
            self.bytes_per_sec.clamp(min_rate(max), max)
        } else {
            max
        };
        self.available = self.available.min(self.refill_bytes());
    }

    /// Grants every waiting request (the limiter was turned off, invariant 5).
    pub(crate) fn grant_all(&mut self) {
        for queue in &mut self.queues {
            self.granted
                .extend(queue.drain(..).map(|(ticket, _)| ticket));
        }
    }

    /// Notes the engine's estimate of pending compaction bytes (for auto-tuning).
    pub(crate) fn set_pending_compaction_bytes(&mut self, bytes: u64) {
        self.pending = bytes;
    }

    /// Refills and serves the queues if a refill is due at `now`, and retunes if due. Returns
    /// whether any waiting request was served.
    pub(crate) fn advance(&mut self, now: Duration) -> bool {
        if now < self.next_refill {
            return false;
        }
        if self.auto_tune && now >= self.next_tune {
            self.tune();
            self.next_tune = now + TUNE_PERIOD;
        }
        // Refills missed while nobody asked are not made up (no bursts after idleness).
        let periods_behind = (now.saturating_sub(self.next_refill).as_nanos()
            / REFILL_PERIOD.as_nanos())
        .try_into()
        .unwrap_or(u32::MAX);
        self.next_refill += REFILL_PERIOD * periods_behind.saturating_add(1);
        self.available = self.refill_bytes();
        let mut served = false;
        for queue in &mut self.queues {
            while let Some(&(ticket, bytes)) = queue.front() {
                // A request larger than a refill (the rate was tuned down since it queued)
                // takes a whole refill, so it cannot wait forever.
                let charge = bytes.min(refill_of(self.bytes_per_sec));
                if charge > self.available {
                    return served; // invariant 2: nothing behind it, nor of lower priority
                }
                self.available -= charge;
                queue.pop_front();
                self.granted.insert(ticket);
                served = true;
            }
        }
        served
    }

    /// The auto-tuning rule: debt growing means compaction is falling behind, so it gets more
    /// bandwidth (x1.25); debt shrinking, or none at all, gives bandwidth back to the user's
    /// reads and writes (x0.8); unchanged non-zero debt keeps the rate. Within invariant 4.
    fn tune(&mut self) {
        let (before, now) = (self.tuned_pending, self.pending);
        let rate = self.bytes_per_sec;
        let tuned = if now > before {
            rate.saturating_add(rate / 4)
        } else if now < before || now == 0 {
            rate - rate / 5
        } else {
            rate
        };
        self.bytes_per_sec = tuned.clamp(min_rate(self.max_bytes_per_sec), self.max_bytes_per_sec);
        self.tuned_pending = now;
    }
}

fn refill_of(bytes_per_sec: u64) -> u64 {
    (bytes_per_sec / REFILLS_PER_SECOND).max(1)
}

fn min_rate(max: u64) -> u64 {
    (max / MIN_RATE_DIVISOR).max(1)
}

/// The bucket shared by the flush and compaction threads; writers wait on it.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    bucket: Mutex<TokenBucket>,
    served: Condvar,
    start: Instant,
    /// Bytes granted by priority (flush, compaction).
    granted_bytes: [AtomicU64; 2],
    /// The configured rate; 0 means off (invariant 5), checked without the lock.
    configured: AtomicU64,
}

impl RateLimiter {
    /// A limiter of `bytes_per_sec`; 0 makes one that is off until a rate is set.
    pub(crate) fn new(bytes_per_sec: u64, auto_tune: bool) -> RateLimiter {
        RateLimiter {
            bucket: Mutex::new(TokenBucket::new(bytes_per_sec, auto_tune, Duration::ZERO)),
            served: Condvar::new(),
            start: Instant::now(),
            granted_bytes: [AtomicU64::new(0), AtomicU64::new(0)],
            configured: AtomicU64::new(bytes_per_sec),
        }
    }

    /// The configured rate (0: off); with auto-tuning the ceiling, not the current rate.
    pub(crate) fn configured_bytes_per_sec(&self) -> u64 {
        self.configured.load(Ordering::Acquire)
    }

    /// Changes the configured rate while writers use the limiter; 0 turns it off and lets
    /// every waiting writer go (invariant 5).
    pub(crate) fn set_bytes_per_sec(&self, bytes_per_sec: u64) {
        let mut bucket = self.lock();
        self.configured.store(bytes_per_sec, Ordering::Release);
        if bytes_per_sec == 0 {
            bucket.grant_all();
        } else {
            bucket.set_max_bytes_per_sec(bytes_per_sec);
        }
        drop(bucket);
        self.served.notify_all();
    }

    /// Bytes granted so far to `priority`.
    pub(crate) fn granted_bytes(&self, priority: IoPriority) -> u64 {
        self.granted_bytes[priority.index()].load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, TokenBucket> {
        self.bucket.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current rate (it moves with auto-tuning); 0 when off.
    pub(crate) fn bytes_per_sec(&self) -> u64 {
        let bucket = self.lock();
        if self.configured_bytes_per_sec() == 0 {
            return 0;
        }
        bucket.bytes_per_sec()
    }

    /// Notes the engine's pending compaction bytes (for auto-tuning).
    pub(crate) fn set_pending_compaction_bytes(&self, bytes: u64) {
        self.lock().set_pending_compaction_bytes(bytes);
    }

    /// Waits until `bytes` may be written, in pieces of at most one refill (invariant 3).
    pub(crate) fn request(&self, mut bytes: u64, priority: IoPriority) {
        if self.configured_bytes_per_sec() == 0 {
            return;
        }
        self.granted_bytes[priority.index()].fetch_add(bytes, Ordering::Relaxed);
        while bytes > 0 {
            let mut bucket = self.lock();
            if self.configured_bytes_per_sec() == 0 {
                return; // turned off meanwhile (invariant 5)
            }
            let chunk = bytes.min(bucket.refill_bytes());
            bytes -= chunk;
            let ticket = match bucket.request(chunk, priority, self.start.elapsed()) {
                Admission::Granted => continue,
                Admission::Queued(ticket) => ticket,
            };
            // Whoever wakes first after the refill time refills and wakes the others.
            while !bucket.take_grant(ticket) {
                let wait = bucket.next_refill().saturating_sub(self.start.elapsed());
                bucket = self
                    .served
                    .wait_timeout(bucket, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                if bucket.advance(self.start.elapsed()) {
                    self.served.notify_all();
                }
            }
        }
    }
}

/// A table file whose appends are charged to the rate limiter first.
#[derive(Debug)]
pub(crate) struct RateLimitedFile {
    file: Box<dyn WritableFile>,
    limiter: Arc<RateLimiter>,
    priority: IoPriority,
}

impl RateLimitedFile {
    /// `file` itself when there is no limiter.
    pub(crate) fn wrap(
        file: Box<dyn WritableFile>,
        limiter: Option<&Arc<RateLimiter>>,
        priority: IoPriority,
    ) -> Box<dyn WritableFile> {
        match limiter {
            None => file,
            Some(limiter) => Box::new(RateLimitedFile {
                file,
                limiter: limiter.clone(),
                priority,
            }),
        }
    }
}

impl WritableFile for RateLimitedFile {
    fn append(&mut self, data: &[u8]) -> shale_fs::Result<()> {
        self.limiter.request(data.len() as u64, self.priority);
        self.file.append(data)
    }

    fn flush(&mut self) -> shale_fs::Result<()> {
        self.file.flush()
    }

    fn start_writeback(&mut self) -> shale_fs::Result<()> {
        self.file.start_writeback()
    }

    fn sync_data(&mut self) -> shale_fs::Result<()> {
        self.file.sync_data()
    }

    fn concurrent_syncer(&mut self) -> shale_fs::Result<Option<Box<dyn shale_fs::DataSyncer>>> {
        self.file.concurrent_syncer()
    }

    fn len(&self) -> u64 {
        self.file.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Serves a bucket as the waiting writers would, at each refill time up to `until`;
    /// returns the tickets served at each refill.
    fn run_until(bucket: &mut TokenBucket, until: Duration) -> Vec<(Duration, Vec<u64>)> {
        let mut log = Vec::new();
        while bucket.next_refill() <= until {
            let at = bucket.next_refill();
            bucket.advance(at);
            let served: Vec<u64> = (0..bucket.next_ticket)
                .filter(|t| bucket.take_grant(*t))
                .collect();
            log.push((at, served));
        }
        log
    }

    #[test]
    fn a_full_bucket_grants_one_refill_then_queues() {
        let mut bucket = TokenBucket::new(10_000, false, Duration::ZERO);
        assert_eq!(bucket.refill_bytes(), 1000);
        assert_eq!(
            bucket.request(600, IoPriority::Compaction, Duration::ZERO),
            Admission::Granted
        );
        assert_eq!(
            bucket.request(400, IoPriority::Compaction, 10 * MS),
            Admission::Granted
        );
        assert_eq!(
            bucket.request(1, IoPriority::Compaction, 20 * MS),
            Admission::Queued(0)
        );
        // Nothing before the refill, then served.
        assert!(!bucket.advance(99 * MS));
        assert!(!bucket.take_grant(0));
        assert!(bucket.advance(100 * MS));
        assert!(bucket.take_grant(0));
        assert!(!bucket.take_grant(0), "a grant is reported once");
    }

    #[test]
    fn throughput_matches_the_rate() {
        // 100 KB/s in 1 KB requests, always someone waiting: the refill on hand at the start,
        // then 10 KB at each of the 100 refills up to 10 s (invariant 1), and the one request
        // the loop makes after it.
        let mut bucket = TokenBucket::new(100_000, false, Duration::ZERO);
        let mut granted = 0u64;
        let mut now = Duration::ZERO;
        while now <= Duration::from_secs(10) {
            match bucket.request(1000, IoPriority::Compaction, now) {
                Admission::Granted => granted += 1000,
                Admission::Queued(ticket) => {
                    now = bucket.next_refill();
                    bucket.advance(now);
                    if bucket.take_grant(ticket) {
                        granted += 1000;
                    }
                }
            }
        }
        assert_eq!(granted, 10_000 + 100 * 10_000 + 1000);
    }

    #[test]
    fn flushes_are_served_before_compactions_and_fifo_within_a_priority() {
        let mut bucket = TokenBucket::new(10_000, false, Duration::ZERO);
        let t0 = Duration::ZERO;
        assert_eq!(
            bucket.request(1000, IoPriority::Compaction, t0),
            Admission::Granted
        );
        let c1 = bucket.request(700, IoPriority::Compaction, t0);
        let c2 = bucket.request(100, IoPriority::Compaction, t0);
        let f1 = bucket.request(600, IoPriority::Flush, t0);
        let f2 = bucket.request(600, IoPriority::Flush, t0);
        assert_eq!(
            [c1, c2, f1, f2],
            [0, 1, 2, 3].map(Admission::Queued),
            "all wait"
        );
        let log = run_until(&mut bucket, 400 * MS);
        // Refill 1: f1 (600); f2 does not fit and blocks the compactions behind it.
        // Refill 2: f2 (600), then c1 (700) does not fit, and c2 must not overtake it.
        // Refill 3: c1 and c2.
        assert_eq!(
            log,
            vec![
                (100 * MS, vec![2]),
                (200 * MS, vec![3]),
                (300 * MS, vec![0, 1]),
                (400 * MS, vec![]),
            ]
        );
        // A flush arriving while compactions wait goes ahead of them.
        let c = bucket.request(1000, IoPriority::Compaction, 400 * MS);
        assert_eq!(c, Admission::Granted);
        let c3 = bucket.request(900, IoPriority::Compaction, 410 * MS);
        let f3 = bucket.request(900, IoPriority::Flush, 420 * MS);
        assert_eq!([c3, f3], [4, 5].map(Admission::Queued));
        assert_eq!(
            run_until(&mut bucket, 600 * MS),
            vec![(500 * MS, vec![5]), (600 * MS, vec![4])]
        );
    }

    #[test]
    fn idle_time_builds_no_burst() {
        let mut bucket = TokenBucket::new(10_000, false, Duration::ZERO);
        // An hour idle, then: one refill's worth at once, no more.
        let later = Duration::from_secs(3600) + 50 * MS;
        assert_eq!(
            bucket.request(1000, IoPriority::Flush, later),
            Admission::Granted
        );
        assert_eq!(
            bucket.request(1, IoPriority::Flush, later),
            Admission::Queued(0)
        );
        // The next refill is on the period grid after `later`, not an hour of refills ago.
        assert_eq!(bucket.next_refill(), Duration::from_secs(3600) + 100 * MS);
    }

    #[test]
    fn auto_tune_follows_the_compaction_debt_within_bounds() {
        let max = 20_000_000;
        let mut bucket = TokenBucket::new(max, true, Duration::ZERO);
        assert_eq!(bucket.bytes_per_sec(), max / 2);
        let mut now = Duration::ZERO;
        let mut step = |bucket: &mut TokenBucket, pending: u64| {
            bucket.set_pending_compaction_bytes(pending);
            now += TUNE_PERIOD;
            bucket.advance(now);
            bucket.bytes_per_sec()
        };
        // Debt grows: x1.25 per second, up to the configured rate.
        assert_eq!(step(&mut bucket, 100), 12_500_000);
        assert_eq!(step(&mut bucket, 200), 15_625_000);
        assert_eq!(step(&mut bucket, 300), 19_531_250);
        assert_eq!(step(&mut bucket, 400), max);
        // Unchanged non-zero debt keeps the rate.
        assert_eq!(step(&mut bucket, 400), max);
        // Debt falls: x0.8.
        assert_eq!(step(&mut bucket, 300), 16_000_000);
        // No debt: keeps falling, down to max / 20.
        for _ in 0..40 {
            step(&mut bucket, 0);
        }
        assert_eq!(bucket.bytes_per_sec(), max / 20);
        assert_eq!(bucket.refill_bytes(), max / 20 / 10);
        // Without auto-tuning the rate never moves.
        let mut fixed = TokenBucket::new(max, false, Duration::ZERO);
        assert_eq!(step(&mut fixed, 1000), max);
        assert_eq!(step(&mut fixed, 0), max);
    }

    #[test]
    fn turning_the_limiter_off_lets_a_waiting_writer_go() {
        // 10 B/s: one byte a refill, so a 1000-byte write would wait about 100 s.
        let limiter = Arc::new(RateLimiter::new(10, false));
        let writer = {
            let limiter = limiter.clone();
            std::thread::spawn(move || limiter.request(1000, IoPriority::Compaction))
        };
        std::thread::sleep(Duration::from_millis(250));
        assert!(
            !writer.is_finished(),
            "a 10 B/s limiter granted 1000 bytes at once"
        );
        limiter.set_bytes_per_sec(0);
        writer.join().unwrap();
        assert_eq!(limiter.bytes_per_sec(), 0);
        limiter.request(1 << 30, IoPriority::Flush); // off: no wait
        limiter.set_bytes_per_sec(1 << 20);
        assert_eq!(limiter.bytes_per_sec(), 1 << 20);
        assert_eq!(limiter.configured_bytes_per_sec(), 1 << 20);
    }

    #[test]
    fn a_new_rate_keeps_an_auto_tuned_rate_within_its_bounds() {
        let mut bucket = TokenBucket::new(1_000_000, true, Duration::ZERO);
        assert_eq!(bucket.bytes_per_sec(), 500_000);
        bucket.set_max_bytes_per_sec(200_000);
        assert_eq!(bucket.bytes_per_sec(), 200_000);
        bucket.set_max_bytes_per_sec(100_000_000);
        // Raised to the new floor (max / 20), not to the ceiling.
        assert_eq!(bucket.bytes_per_sec(), 5_000_000);
        bucket.set_max_bytes_per_sec(100);
        assert_eq!(bucket.refill_bytes(), 10);
    }

    #[test]
    fn a_request_queued_before_the_rate_fell_is_still_served() {
        let mut bucket = TokenBucket::new(1_000_000, true, Duration::ZERO);
        let refill = bucket.refill_bytes();
        assert_eq!(
            bucket.request(refill, IoPriority::Compaction, Duration::ZERO),
            Admission::Granted
        );
        let ticket = bucket.request(refill, IoPriority::Compaction, Duration::ZERO);
        assert_eq!(ticket, Admission::Queued(0));
        // No debt: at the first tuning the rate drops below what the request asked for.
        bucket.set_pending_compaction_bytes(0);
        bucket.advance(TUNE_PERIOD);
        assert!(bucket.refill_bytes() < refill);
        assert!(bucket.take_grant(0));
    }

    #[test]
    fn the_limiter_splits_large_writes_and_grants_them() {
        // A rate high enough that one refill covers everything: no waiting in this test.
        let limiter = RateLimiter::new(u64::MAX / 4, false);
        limiter.request(5 << 20, IoPriority::Flush);
        limiter.request(0, IoPriority::Compaction);
        limiter.request(7, IoPriority::Compaction);
        assert_eq!(limiter.granted_bytes(IoPriority::Flush), 5 << 20);
        assert_eq!(limiter.granted_bytes(IoPriority::Compaction), 7);
        assert_eq!(limiter.bytes_per_sec(), u64::MAX / 4);
    }
}
