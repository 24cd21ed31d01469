//! Per-thread counters of one benchmark and the lines `db_bench` prints from them.
//!
//! The result line has `db_bench` 7.8's shape, so scripts that read one tool read both:
//!
//! ```text
//! readrandom   :       3.210 micros/op 311526 ops/sec 3.210 seconds 1000000 operations;   34.5 MB/s (1000000 of 1000000 found)
//! ```
//!
//! - micros/op is the sum of every thread's own run time over the operations; ops/sec is the
//!   operations over the wall time from the first thread's start to the last one's finish.
//! - MB/s (2^20 bytes) counts user key + value bytes written, or returned by reads; it is left
//!   out when no bytes were counted (deletes).
//! - "(F of R found)" follows lookups (readrandom, seekrandom, readwhilewriting); as in
//!   `db_bench` the message ends the line with a newline of its own.
//! - A thread marked [`Stats::exclude_from_merge`] (readwhilewriting's writer) is left out.
//!
//! With `--histogram`, a block follows: "Microseconds per read:", count, average, standard
//! deviation, min, median, max, "Percentiles: P50 P75 P99 P99.9 P99.99", and one row per
//! non-empty bucket. A latency is the time between one operation's end and the previous one's
//! (as `db_bench` measures). Bucket edges differ from `db_bench`'s: ours are log-linear in
//! nanoseconds (at most 12.5% wide), shown in microseconds.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Instant;

use super::intervals::OpCounter;
use crate::histogram::Histogram;

/// Bytes in the `MB` of rates, as in `db_bench`.
const MB: f64 = 1_048_576.0;

/// The kind of operation a benchmark times, named as in `db_bench`'s histogram titles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Write,
    Read,
    Seek,
    Delete,
}

impl OpKind {
    fn name(self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Read => "read",
            OpKind::Seek => "seek",
            OpKind::Delete => "delete",
        }
    }
}

/// One thread's counters for one benchmark.
#[derive(Debug, Clone)]
pub struct Stats {
    kind: OpKind,
    start: Instant,
    finish: Instant,
    last_op: Instant,
    done: u64,
    bytes: u64,
    lookups: u64,
    found: u64,
    histogram: Option<Histogram>,
    excluded: bool,
    next_report: u64,
    progress: bool,
    /// Where the interval sampler reads this thread's count, when it does.
    counter: Option<Arc<OpCounter>>,
}

impl Stats {
    /// Counters for operations of `kind`; latencies are recorded when `histogram`; progress
    /// goes to stderr when `progress`.
    pub fn new(kind: OpKind, histogram: bool, progress: bool) -> Self {
        let now = Instant::now();
        Stats {
            kind,
            start: now,
            finish: now,
            last_op: now,
            done: 0,
            bytes: 0,
            lookups: 0,
            found: 0,
            histogram: histogram.then(Histogram::new),
            excluded: false,
            next_report: 100,
            progress,
            counter: None,
        }
    }

    /// Publishes the operation count to `counter` after every operation.
    pub fn publish_to(&mut self, counter: Arc<OpCounter>) {
        self.counter = Some(counter);
    }

    /// Starts the clock (after every thread is ready).
    pub fn start(&mut self) {
        self.start = Instant::now();
        self.last_op = self.start;
        self.finish = self.start;
    }

    /// Stops the clock.
    pub fn stop(&mut self) {
        self.finish = Instant::now();
    }

    /// Leaves this thread out of the reported figures (readwhilewriting's writer).
    pub fn exclude_from_merge(&mut self) {
        self.excluded = true;
    }

    /// Counts user key + value bytes moved.
    pub fn add_bytes(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }

    /// Counts a lookup for the "found" message.
    pub fn add_lookup(&mut self, found: bool) {
        self.lookups += 1;
        self.found += u64::from(found);
    }

    /// Operations done so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Counts one finished operation: its latency, and progress on stderr at `db_bench`'s
    /// steps (every 100 ops up to 1000, then 500, 1000, 5000, 10000, 50000, 100000).
    pub fn finished_op(&mut self) {
        if let Some(histogram) = &mut self.histogram {
            let now = Instant::now();
            let nanos = now.duration_since(self.last_op).as_nanos();
            histogram.record(u64::try_from(nanos).unwrap_or(u64::MAX));
            self.last_op = now;
        }
        self.done += 1;
        if let Some(counter) = &self.counter {
            counter.publish(self.done);
        }
        if self.done >= self.next_report {
            self.next_report += match self.next_report {
                0..1_000 => 100,
                1_000..5_000 => 500,
                5_000..10_000 => 1_000,
                10_000..50_000 => 5_000,
                50_000..100_000 => 10_000,
                100_000..500_000 => 50_000,
                _ => 100_000,
            };
            if self.progress {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "... finished {} ops{:30}\r", self.done, "");
                let _ = err.flush();
            }
        }
    }
}

/// User key + value bytes the benchmark wrote: every writing thread's, readwhilewriting's
/// excluded writer included.
pub fn written_bytes(threads: &[Stats]) -> u64 {
    threads
        .iter()
        .filter(|s| s.kind == OpKind::Write || s.excluded)
        .map(|s| s.bytes)
        .sum()
}

/// The figures of one benchmark that `--json_out` records.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub operations: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub micros_per_op: f64,
    /// Latency percentiles in microseconds: P50, P99, P99.9 (with a histogram).
    pub percentiles: Option<[f64; 3]>,
}

/// The threads' counters of one benchmark, merged.
#[derive(Debug)]
pub struct Merged {
    kind: OpKind,
    /// Wall time from the first start to the last finish, in seconds.
    elapsed: f64,
    /// Sum of each thread's own run time, in seconds.
    thread_seconds: f64,
    done: u64,
    bytes: u64,
    lookups: u64,
    found: u64,
    histogram: Option<Histogram>,
}

impl Merged {
    /// Merges every thread not excluded; `None` when all were.
    pub fn of(threads: &[Stats]) -> Option<Merged> {
        let included: Vec<&Stats> = threads.iter().filter(|s| !s.excluded).collect();
        let first = included.first()?;
        let start = included.iter().map(|s| s.start).min()?;
        let finish = included.iter().map(|s| s.finish).max()?;
        let mut histogram = first.histogram.as_ref().map(|_| Histogram::new());
        if let Some(merged) = &mut histogram {
            for stats in &included {
                if let Some(h) = &stats.histogram {
                    merged.merge(h);
                }
            }
        }
        Some(Merged {
            kind: first.kind,
            elapsed: finish.duration_since(start).as_secs_f64(),
            thread_seconds: included
                .iter()
                .map(|s| s.finish.duration_since(s.start).as_secs_f64())
                .sum(),
            done: included.iter().map(|s| s.done).sum(),
            bytes: included.iter().map(|s| s.bytes).sum(),
            lookups: included.iter().map(|s| s.lookups).sum(),
            found: included.iter().map(|s| s.found).sum(),
            histogram,
        })
    }

    /// Lookups that found their key, and lookups made.
    #[cfg(test)]
    pub fn found(&self) -> (u64, u64) {
        (self.found, self.lookups)
    }

    /// Operations done.
    #[cfg(test)]
    pub fn done(&self) -> u64 {
        self.done
    }

    /// The figures of the result line and the percentiles, as numbers.
    pub fn summary(&self) -> Summary {
        let done = self.done.max(1);
        Summary {
            operations: self.done,
            seconds: self.elapsed,
            ops_per_sec: if self.elapsed > 0.0 {
                done as f64 / self.elapsed
            } else {
                0.0
            },
            micros_per_op: self.thread_seconds * 1e6 / done as f64,
            percentiles: self
                .histogram
                .as_ref()
                .map(|h| [50.0, 99.0, 99.9].map(|p| h.percentile(p) / 1000.0)),
        }
    }

    /// The `db_bench` result line (without the final newline).
    pub fn result_line(&self, name: &str) -> String {
        // db_bench counts at least one operation so that nothing divides by zero.
        let done = self.done.max(1);
        let elapsed = self.elapsed;
        let throughput = if elapsed > 0.0 {
            done as f64 / elapsed
        } else {
            0.0
        };
        let mut extra = String::new();
        if self.bytes > 0 && elapsed > 0.0 {
            let _ = write!(extra, "{:6.1} MB/s", self.bytes as f64 / MB / elapsed);
        }
        if self.lookups > 0 {
            if !extra.is_empty() {
                extra.push(' ');
            }
            let _ = writeln!(extra, "({} of {} found)", self.found, self.lookups);
        }
        // `(long)throughput` truncates toward zero.
        #[allow(clippy::cast_possible_truncation)]
        let ops_per_sec = throughput as i64;
        format!(
            "{name:<12} : {:11.3} micros/op {ops_per_sec} ops/sec {elapsed:.3} seconds {done} operations;{}{extra}",
            self.thread_seconds * 1e6 / done as f64,
            if extra.is_empty() { "" } else { " " },
        )
    }

    /// The `--histogram` block (ends with an empty line), or `None` without `--histogram`.
    pub fn histogram_block(&self) -> Option<String> {
        let h = self.histogram.as_ref()?;
        let micros = |nanos: f64| nanos / 1000.0;
        let mut out = String::new();
        let _ = writeln!(out, "Microseconds per {}:", self.kind.name());
        let _ = writeln!(
            out,
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            h.count(),
            micros(h.mean()),
            micros(h.std_dev())
        );
        let _ = writeln!(
            out,
            "Min: {:.4}  Median: {:.4}  Max: {:.4}",
            micros(h.min() as f64),
            micros(h.percentile(50.0)),
            micros(h.max() as f64)
        );
        let _ = writeln!(
            out,
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            micros(h.percentile(50.0)),
            micros(h.percentile(75.0)),
            micros(h.percentile(99.0)),
            micros(h.percentile(99.9)),
            micros(h.percentile(99.99))
        );
        out.push_str(&"-".repeat(54));
        out.push('\n');
        let total = h.count().max(1) as f64;
        let mut cumulative = 0u64;
        for (low, high, n) in h.buckets() {
            cumulative += n;
            let share = n as f64 / total;
            // 20 marks for 100%, as db_bench draws them.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let marks = (20.0 * share).round() as usize;
            let _ = writeln!(
                out,
                "[ {:9.3}, {:9.3} ) {:8} {:7.3}% {:7.3}% {}",
                micros(low as f64),
                micros(high as f64),
                n,
                100.0 * share,
                100.0 * cumulative as f64 / total,
                "#".repeat(marks)
            );
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stats_with(done: u64, bytes: usize, millis: u64) -> Stats {
        let mut stats = Stats::new(OpKind::Read, true, false);
        stats.start();
        for _ in 0..done {
            stats.finished_op();
        }
        stats.add_bytes(bytes);
        stats.finish = stats.start + Duration::from_millis(millis);
        stats
    }

    #[test]
    fn result_line_has_db_bench_shape() {
        let stats = stats_with(1000, 1 << 20, 500);
        let merged = Merged::of(&[stats]).unwrap();
        let summary = merged.summary();
        assert_eq!((summary.operations, summary.ops_per_sec), (1000, 2000.0));
        assert!((summary.micros_per_op - 500.0).abs() < 1e-9);
        assert!(summary.percentiles.is_some());
        assert_eq!(
            merged.result_line("fillseq"),
            "fillseq      :     500.000 micros/op 2000 ops/sec 0.500 seconds 1000 operations;    2.0 MB/s"
        );
    }

    #[test]
    fn lookups_add_the_found_message_and_deletes_have_no_rate() {
        let mut stats = stats_with(4, 116 * 3, 1000);
        for found in [true, true, false, true] {
            stats.add_lookup(found);
        }
        let merged = Merged::of(&[stats]).unwrap();
        assert_eq!(merged.found(), (3, 4));
        assert_eq!(
            merged.result_line("readrandom"),
            "readrandom   :  250000.000 micros/op 4 ops/sec 1.000 seconds 4 operations;    0.0 MB/s (3 of 4 found)\n"
        );
        let deletes = Merged::of(&[stats_with(10, 0, 1000)]).unwrap();
        assert!(deletes
            .result_line("deleterandom")
            .ends_with("10 operations;"));
    }

    #[test]
    fn threads_merge_and_the_excluded_writer_is_left_out() {
        let a = stats_with(100, 1000, 1000);
        let mut b = stats_with(300, 3000, 1000);
        b.start = a.start + Duration::from_millis(500);
        b.finish = b.start + Duration::from_secs(1);
        let mut writer = stats_with(1_000_000, 1 << 30, 1000);
        writer.exclude_from_merge();
        let merged = Merged::of(&[a, b, writer.clone()]).unwrap();
        assert_eq!(merged.done(), 400);
        // Two threads of one second each over 400 ops; 1.5 s of wall time.
        let line = merged.result_line("readwhilewriting");
        assert!(
            line.starts_with("readwhilewriting :    5000.000 micros/op 266 ops/sec 1.500 seconds 400 operations;"),
            "{line}"
        );
        assert!(Merged::of(&[writer]).is_none());
    }

    #[test]
    fn histogram_block_lists_percentiles_and_buckets() {
        let merged = Merged::of(&[stats_with(50, 0, 10)]).unwrap();
        let block = merged.histogram_block().unwrap();
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[0], "Microseconds per read:");
        assert!(lines[1].starts_with("Count: 50 Average: "), "{}", lines[1]);
        assert!(lines[2].starts_with("Min: "));
        assert!(lines[3].starts_with("Percentiles: P50: "));
        assert!(lines[3].contains(" P99.99: "));
        assert_eq!(lines[4], "-".repeat(54));
        let counted: u64 = lines[5..]
            .iter()
            .map(|l| l.split_whitespace().nth(4).unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(counted, 50);
        assert!(lines.last().unwrap().contains("100.000%"));
        let plain = Stats::new(OpKind::Read, false, false);
        assert!(Merged::of(&[plain]).unwrap().histogram_block().is_none());
    }
}
