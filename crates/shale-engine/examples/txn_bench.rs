//! Transactions: what the transaction layer costs over plain batches. Each operation moves one
//! unit between two random accounts (of `--accounts`) and writes both:
//!
//! - `batch`: a `WriteBatch` of two puts through `Db::write` (no reads, no locks);
//! - `pessimistic`: READ COMMITTED, `get_for_update` on both accounts, two puts, commit;
//! - `optimistic`: two reads, two puts, commit (retried on conflict; conflicts are counted).
//!
//! ```text
//! cargo run --release -p shale-engine --example txn_bench -- [--threads 1,4] [--seconds 2]
//!     [--accounts 100000] [--repeat 3]
//! ```
//!
//! The database lives on `MemFs` with `Buffered` durability, so the numbers are the CPU cost
//! of the engine and the transaction layer, not of the disk. Each mode and thread count runs
//! `--repeat` times; the median ops/s is shown with all runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    Durability, Error, IsolationLevel, Options, TransactionDb, TransactionDbOptions,
    TransactionError, TransactionOptions, WriteBatch, WriteOptions,
};
use shale_fs::MemFs;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Batch,
    Pessimistic,
    Optimistic,
}

struct Config {
    threads: Vec<usize>,
    seconds: f64,
    accounts: u32,
    repeat: usize,
}

fn parse_args() -> Config {
    let mut config = Config {
        threads: vec![1, 4],
        seconds: 2.0,
        accounts: 100_000,
        repeat: 3,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| {
            eprintln!("txn_bench: {flag} needs a value");
            std::process::exit(2)
        });
        let bad = |what: &str| -> ! {
            eprintln!("txn_bench: bad {what} {value:?}");
            std::process::exit(2)
        };
        match flag.as_str() {
            "--threads" => {
                config.threads = value
                    .split(',')
                    .map(|t| t.parse().unwrap_or_else(|_| bad("--threads")))
                    .collect();
            }
            "--seconds" => config.seconds = value.parse().unwrap_or_else(|_| bad("--seconds")),
            "--accounts" => config.accounts = value.parse().unwrap_or_else(|_| bad("--accounts")),
            "--repeat" => config.repeat = value.parse().unwrap_or_else(|_| bad("--repeat")),
            _ => bad("flag"),
        }
    }
    config
}

fn key(i: u32) -> [u8; 8] {
    let mut k = *b"acct0000";
    k[4..].copy_from_slice(&i.to_be_bytes());
    k
}

/// One timed run; returns (ops/s, optimistic conflicts).
fn run(config: &Config, mode: Mode, threads: usize) -> (f64, u64) {
    let options = Options {
        file_system: Arc::new(MemFs::new()),
        durability: Durability::Buffered,
        ..Options::default()
    };
    let db = TransactionDb::open("/bench", options, TransactionDbOptions::default()).unwrap();
    let mut load = WriteBatch::new();
    for i in 0..config.accounts {
        load.put(0, &key(i), b"1000").unwrap();
    }
    db.db().write(load, &WriteOptions::default()).unwrap();
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let conflicts = AtomicU64::new(0);
    let start = Instant::now();
    thread::scope(|scope| {
        for t in 0..threads {
            let (db, stop, ops, conflicts) = (&db, &stop, &ops, &conflicts);
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t as u64);
                let mut done = 0;
                while !stop.load(Ordering::Relaxed) {
                    let a = key(rng.gen_range(0..config.accounts));
                    let b = key(rng.gen_range(0..config.accounts));
                    match operation(db, mode, &a, &b) {
                        Ok(()) => done += 1,
                        Err(Error::Transaction(
                            TransactionError::OptimisticConflict { .. }
                            | TransactionError::Deadlock { .. },
                        )) => {
                            conflicts.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                ops.fetch_add(done, Ordering::Relaxed);
            });
        }
        thread::sleep(Duration::from_secs_f64(config.seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = start.elapsed().as_secs_f64();
    if std::env::var_os("TXN_BENCH_STATS").is_some() {
        eprintln!("{mode:?} x{threads}: {:?}", db.stats());
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = ops.load(Ordering::Relaxed) as f64 / elapsed;
    (rate, conflicts.load(Ordering::Relaxed))
}

fn operation(db: &TransactionDb, mode: Mode, a: &[u8], b: &[u8]) -> Result<(), Error> {
    let bump = |v: Option<Vec<u8>>| -> Vec<u8> {
        let n: i64 = v
            .and_then(|v| String::from_utf8(v).ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (n + 1).to_string().into_bytes()
    };
    match mode {
        Mode::Batch => {
            let mut batch = WriteBatch::new();
            batch.put(0, a, b"999")?;
            batch.put(0, b, b"1001")?;
            db.db().write(batch, &WriteOptions::default())
        }
        Mode::Pessimistic | Mode::Optimistic => {
            let options = TransactionOptions {
                isolation: IsolationLevel::ReadCommitted,
                ..TransactionOptions::default()
            };
            let mut txn = if mode == Mode::Pessimistic {
                db.begin(options)?
            } else {
                db.begin_optimistic(options)?
            };
            let (va, vb) = if mode == Mode::Pessimistic {
                (txn.get_for_update(a)?, txn.get_for_update(b)?)
            } else {
                (txn.get(a)?, txn.get(b)?)
            };
            txn.put(a, &bump(va))?;
            txn.put(b, &bump(vb))?;
            txn.commit()
        }
    }
}

fn main() {
    let config = parse_args();
    println!("mode         threads   median ops/s   runs (ops/s)                 conflicts");
    for mode in [Mode::Batch, Mode::Pessimistic, Mode::Optimistic] {
        for &threads in &config.threads {
            let mut runs: Vec<(f64, u64)> = (0..config.repeat.max(1))
                .map(|_| run(&config, mode, threads))
                .collect();
            let shown: Vec<String> = runs.iter().map(|r| format!("{:.0}", r.0)).collect();
            runs.sort_by(|x, y| x.0.total_cmp(&y.0));
            let median = runs[runs.len() / 2];
            println!(
                "{:<12} {threads:>7} {:>14.0}   {:<28} {}",
                format!("{mode:?}").to_lowercase(),
                median.0,
                shown.join(","),
                median.1
            );
        }
    }
}
