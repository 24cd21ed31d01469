//! Group commit: commits/s of N writer threads, each committing single-put batches, on the real
//! file system.
//!
//! ```text
//! cargo run --release -p shale-engine --example group_commit -- [--dir PATH] [--seconds N]
//!     [--threads 1,2,4,8,16] [--durability sync|flush|buffered] [--value-size 100] [--repeat 3]
//! ```
//!
//! Every run opens a fresh database in `--dir` (default `shale-data/group-commit`, deleted and
//! recreated each time) on `OsFs` wrapped in a rule-less `FaultFs`, which only counts calls:
//! `fsyncs/s` counts the `sync_data` calls made during the timed window (WAL syncs, plus any
//! table or MANIFEST syncs a flush makes). Each commit group is one WAL record, written with one
//! `append` call, so `commits/group` is commits per `append` call (a memtable flush during the
//! run adds its table's appends, a few percent at most); under `sync` it equals commits per
//! fsync. Keys are 16 random bytes, values `--value-size`
//! random bytes. Latency is measured around each `Db::write` call. Each thread count runs
//! `--repeat` times; the row shown is the run with the median commits/s, and `runs` lists all.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability, Options, WriteBatch, WriteOptions};
use shale_fs::{FaultFs, FileSystem, OpKind, OsFs};

#[derive(Debug)]
struct Config {
    dir: PathBuf,
    seconds: f64,
    threads: Vec<usize>,
    durability: Durability,
    value_size: usize,
    repeat: usize,
}

fn usage(problem: &str) -> ! {
    eprintln!("group_commit: {problem}");
    eprintln!(
        "usage: group_commit [--dir PATH] [--seconds N] [--threads 1,2,4,8,16] \
         [--durability sync|flush|buffered] [--value-size 100] [--repeat 3]"
    );
    std::process::exit(2)
}

fn parse_args() -> Config {
    let mut config = Config {
        dir: PathBuf::from("shale-data/group-commit"),
        seconds: 5.0,
        threads: vec![1, 2, 4, 8, 16],
        durability: Durability::Sync,
        value_size: 100,
        repeat: 3,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else {
            usage(&format!("{flag} needs a value"))
        };
        let bad = || -> ! { usage(&format!("bad value {value:?} for {flag}")) };
        match flag.as_str() {
            "--dir" => config.dir = PathBuf::from(&value),
            "--seconds" => config.seconds = value.parse().unwrap_or_else(|_| bad()),
            "--threads" => {
                config.threads = value
                    .split(',')
                    .map(|t| t.trim().parse().unwrap_or_else(|_| bad()))
                    .collect();
                if config.threads.contains(&0) {
                    bad();
                }
            }
            "--durability" => {
                config.durability = Durability::from_name(&value).unwrap_or_else(|| bad());
            }
            "--value-size" => config.value_size = value.parse().unwrap_or_else(|_| bad()),
            "--repeat" => config.repeat = value.parse().unwrap_or_else(|_| bad()),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    if !config.seconds.is_finite() || config.seconds <= 0.0 || config.repeat == 0 {
        usage("--seconds and --repeat must be positive");
    }
    config
}

/// What one timed run measured.
#[derive(Debug)]
struct Run {
    commits: u64,
    elapsed: Duration,
    syncs: u64,
    appends: u64,
    /// Nanoseconds per commit, sorted.
    latencies: Vec<u64>,
}

impl Run {
    fn commits_per_second(&self) -> f64 {
        self.commits as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile_micros(&self, percent: usize) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let index = (self.latencies.len() - 1) * percent / 100;
        self.latencies[index] as f64 / 1000.0
    }
}

/// Empties (or creates) `dir` through the file-system seam; a database directory is flat.
fn fresh_dir(dir: &Path) {
    let fs = OsFs::new();
    fs.create_dir_all(dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    for name in fs.list(dir).expect("list the benchmark directory") {
        fs.remove(&dir.join(&name))
            .unwrap_or_else(|e| panic!("cannot remove {name} in {}: {e}", dir.display()));
    }
}

fn run_once(config: &Config, threads: usize, run_index: usize) -> Run {
    fresh_dir(&config.dir);
    let fs = FaultFs::new(Arc::new(OsFs::new()));
    let options = Options {
        durability: config.durability,
        file_system: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open(&config.dir, options).expect("open the database");
    let keyspace = db.default_keyspace().id();
    let duration = Duration::from_secs_f64(config.seconds);
    let syncs_before = fs.op_count(OpKind::SyncData);
    let appends_before = fs.op_count(OpKind::Append);
    let start = Instant::now();
    let deadline = start + duration;
    let per_thread: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let db = &db;
                scope.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64((run_index * 1000 + t) as u64);
                    let mut value = vec![0u8; config.value_size];
                    let mut latencies = Vec::with_capacity(1 << 16);
                    while Instant::now() < deadline {
                        let key: [u8; 16] = rng.gen();
                        rng.fill(&mut value[..]);
                        let mut batch = WriteBatch::new();
                        batch.put(keyspace, &key, &value).expect("valid put");
                        let begin = Instant::now();
                        db.write(batch, &WriteOptions::default()).expect("commit");
                        latencies.push(begin.elapsed().as_nanos() as u64);
                    }
                    latencies
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer thread"))
            .collect()
    });
    let elapsed = start.elapsed();
    let syncs = fs.op_count(OpKind::SyncData) - syncs_before;
    let appends = fs.op_count(OpKind::Append) - appends_before;
    db.close().expect("close the database");
    let mut latencies: Vec<u64> = per_thread.into_iter().flatten().collect();
    latencies.sort_unstable();
    Run {
        commits: latencies.len() as u64,
        elapsed,
        syncs,
        appends,
        latencies,
    }
}

fn main() {
    let config = parse_args();
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    println!(
        "group commit: durability {}, {}-byte keys, {}-byte values, {} s per run, {} run(s) \
         per row (median shown), {} cores, dir {}",
        config.durability.name(),
        16,
        config.value_size,
        config.seconds,
        config.repeat,
        cores,
        config.dir.display()
    );
    println!();
    println!(
        "| threads | commits/s | fsyncs/s | commits/group | p50 µs | p99 µs | vs 1 thread | runs (commits/s) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut baseline: Option<f64> = None;
    for &threads in &config.threads {
        let mut runs: Vec<Run> = (0..config.repeat)
            .map(|r| run_once(&config, threads, r))
            .collect();
        let all: Vec<String> = runs
            .iter()
            .map(|r| format!("{:.0}", r.commits_per_second()))
            .collect();
        runs.sort_by(|a, b| a.commits_per_second().total_cmp(&b.commits_per_second()));
        let median = &runs[runs.len() / 2];
        let rate = median.commits_per_second();
        if threads == 1 || baseline.is_none() {
            baseline = Some(rate);
        }
        let group = median.commits as f64 / median.appends.max(1) as f64;
        println!(
            "| {threads} | {rate:.0} | {:.0} | {group:.2} | {:.1} | {:.1} | {:.2}x | {} |",
            median.syncs as f64 / median.elapsed.as_secs_f64(),
            median.percentile_micros(50),
            median.percentile_micros(99),
            rate / baseline.unwrap_or(rate),
            all.join(", ")
        );
    }
    fresh_dir(&config.dir);
}
