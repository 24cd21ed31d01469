//! Throughput per interval over a benchmark (`--report_interval_seconds`), like `db_bench`'s
//! reporter: every N seconds, the operations finished since the last sample over the time
//! since it, as ops/s.
//!
//! Each counted thread publishes its own operation count in an [`OpCounter`] of its own cache
//! line (a shared atomic bumped by every thread on every operation would cost throughput);
//! one sampler thread sums them. readwhilewriting's writer is not counted, so the series
//! matches the reported ops/s (`db_bench`'s reporter counts it).
//!
//! The last, shorter interval is kept (as `db_bench` does not), so a benchmark shorter than
//! one interval still has a point.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One thread's finished operations, alone on its cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct OpCounter(AtomicU64);

impl OpCounter {
    /// Publishes the thread's total so far (only its own thread writes it).
    pub fn publish(&self, done: u64) {
        self.0.store(done, Ordering::Relaxed);
    }

    fn load(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One point of the series: the seconds from the benchmark's start to the interval's end,
/// and the interval's operations per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalPoint {
    pub secs_elapsed: f64,
    pub ops_per_sec: f64,
}

/// Samples `counters` every `interval` from `start` until `stop` says so (or is dropped),
/// then adds the last partial interval.
pub fn sample(
    counters: &[Arc<OpCounter>],
    interval: Duration,
    start: Instant,
    stop: &Receiver<()>,
) -> Vec<IntervalPoint> {
    let total = || counters.iter().map(|c| c.load()).sum::<u64>();
    let mut points = Vec::new();
    let mut last_ops = 0u64;
    let mut last_at = start;
    let mut next_at = start + interval;
    loop {
        let wait = next_at.saturating_duration_since(Instant::now());
        let finished = match stop.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => false,
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
        };
        let now = Instant::now();
        let ops = total();
        let seconds = now.duration_since(last_at).as_secs_f64();
        if !finished || (ops > last_ops && seconds > 0.0) {
            points.push(IntervalPoint {
                secs_elapsed: now.duration_since(start).as_secs_f64(),
                ops_per_sec: if seconds > 0.0 {
                    (ops - last_ops) as f64 / seconds
                } else {
                    0.0
                },
            });
        }
        if finished {
            return points;
        }
        last_ops = ops;
        last_at = now;
        next_at += interval;
    }
}

/// The series as `db_bench`'s report file: `secs_elapsed,interval_qps`, whole seconds from
/// `offset` (the benchmark's start within the run) and whole operations per second.
pub fn csv_lines(points: &[IntervalPoint], offset: f64) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for point in points {
        let _ = writeln!(
            text,
            "{:.0},{:.0}",
            offset + point.secs_elapsed,
            point.ops_per_sec
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn samples_every_interval_and_keeps_the_last_partial_one() {
        let counters = vec![
            Arc::new(OpCounter::default()),
            Arc::new(OpCounter::default()),
        ];
        let (stop, stopped) = mpsc::channel();
        let start = Instant::now();
        let points = std::thread::scope(|scope| {
            let shared = &counters;
            let sampler =
                scope.spawn(move || sample(shared, Duration::from_millis(100), start, &stopped));
            // 50 + 50 operations in the first 100 ms, 30 more after it.
            counters[0].publish(50);
            counters[1].publish(50);
            std::thread::sleep(Duration::from_millis(150));
            counters[1].publish(80);
            std::thread::sleep(Duration::from_millis(20));
            stop.send(()).unwrap();
            sampler.join().unwrap()
        });
        // A loaded machine may wake the sampler late; the counts add up regardless.
        assert!(!points.is_empty() && points.len() <= 2, "{points:?}");
        let mut ops = 0.0;
        let mut from = 0.0;
        for point in &points {
            ops += point.ops_per_sec * (point.secs_elapsed - from);
            from = point.secs_elapsed;
        }
        assert!((ops - 130.0).abs() < 1e-6, "{points:?}");
        assert!(points[0].secs_elapsed >= 0.1);
        assert!(points.last().unwrap().secs_elapsed >= 0.17);
        let point = IntervalPoint {
            secs_elapsed: 10.2,
            ops_per_sec: 999.6,
        };
        assert_eq!(csv_lines(&[point], 20.0), "30,1000\n");
    }

    #[test]
    fn an_idle_tail_adds_no_point() {
        let counters = vec![Arc::new(OpCounter::default())];
        let (stop, stopped) = mpsc::channel::<()>();
        drop(stop);
        let points = sample(&counters, Duration::from_secs(10), Instant::now(), &stopped);
        assert!(points.is_empty());
    }
}
