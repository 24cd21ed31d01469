//! The longest pause a writer sees while CREATE INDEX runs online (issue target: below 50 ms
//! on a 10M-row table).
//!
//! Loads sysbench's table without its `k` index, then one writer thread changes random rows
//! (an UPDATE of `k` and `c`, or a delete and re-insert) in one-row transactions while the
//! main thread runs `CREATE INDEX k_1 (k)`. Prints the build's time and rows per second, and
//! the writer's operations per second, p99, p99.9 and longest latency before and during the
//! build. Commits are acknowledged without fsync (`Durability::Buffered`) so the figures are
//! the build's interference, not the disk's sync latency.
//!
//! `cargo run --release -p shale-table --example online_index_pause -- [rows] [dir]`
//! (defaults 1000000, a folder in the temporary directory).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Durability, Options};
use shale_fs::{FileSystem, OsFs};
use shale_table::testing::sysbench_table;
use shale_table::{IndexDef, LockMode, Store, StoreOptions, TableDef, TxnOptions, Value};

fn row(id: i64, k: i64) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Int(k),
        Value::Bytes(format!("{:0>119}", id * 7919).into_bytes()),
        Value::Bytes(format!("{:0>59}", id * 104_729).into_bytes()),
    ]
}

/// Latencies of one phase, sorted.
struct Phase {
    name: &'static str,
    seconds: f64,
    latencies: Vec<Duration>,
}

impl Phase {
    fn print(&mut self) {
        self.latencies.sort_unstable();
        let at = |per_mille: usize| {
            let i = (self.latencies.len() * per_mille / 1000).min(self.latencies.len() - 1);
            self.latencies[i].as_secs_f64() * 1e3
        };
        println!(
            "writer {:<14} {:>8.0} ops/s  p99 {:>7.3} ms  p99.9 {:>7.3} ms  max {:>8.3} ms  ({} ops)",
            self.name,
            self.latencies.len() as f64 / self.seconds,
            at(990),
            at(999),
            at(1000),
            self.latencies.len()
        );
    }
}

fn change(
    store: &Store,
    table: &TableDef,
    rng: &mut SmallRng,
    rows: i64,
) -> shale_table::Result<()> {
    let id = rng.gen_range(1..=rows);
    let mut txn = store.begin(TxnOptions::default())?;
    if let Some(old) = txn.get(table, &[Value::Int(id)], LockMode::Exclusive)? {
        if rng.gen_bool(0.5) {
            txn.update(table, &old, row(id, rng.gen_range(1..=rows)))?;
        } else {
            txn.delete(table, &old)?;
            txn.insert(table, row(id, rng.gen_range(1..=rows)))?;
        }
    }
    txn.commit()
}

fn load(store: &Store, table: &TableDef, rows: i64) -> shale_table::Result<()> {
    let started = Instant::now();
    let mut txn = store.begin(TxnOptions::default())?;
    let mut rng = SmallRng::seed_from_u64(7);
    for id in 1..=rows {
        txn.insert(table, row(id, rng.gen_range(1..=rows)))?;
        if id % 10_000 == 0 {
            txn.commit()?;
            txn = store.begin(TxnOptions::default())?;
        }
    }
    txn.commit()?;
    store.engine().db().flush()?;
    println!(
        "{rows} rows loaded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> shale_table::Result<()> {
    let mut args = std::env::args().skip(1);
    let rows: i64 = args.next().map_or(1_000_000, |a| a.parse().expect("rows"));
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join("shale-online-index"),
        PathBuf::from,
    );
    assert!(rows > 0, "rows must be above 0");
    let fs = OsFs::new();
    let _ = fs.remove_dir_all(&dir);
    fs.create_dir_all(&dir).expect("a scratch directory");
    let store = Arc::new(Store::open(
        &dir,
        StoreOptions {
            engine: Options {
                durability: Durability::Buffered,
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    )?);
    store.create_database("sbtest")?;
    let mut def = sysbench_table(false);
    let k_index: IndexDef = def.indexes.remove(0);
    let table = store.create_table(def)?;
    load(&store, &table, rows)?;
    println!("in {}", dir.display());

    let building = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, table, building, stop) =
            (store.clone(), table.clone(), building.clone(), stop.clone());
        thread::spawn(
            move || -> shale_table::Result<(Vec<Duration>, Vec<Duration>)> {
                let mut rng = SmallRng::seed_from_u64(11);
                let (mut before, mut during) = (Vec::new(), Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let phase = building.load(Ordering::Relaxed);
                    let op = Instant::now();
                    change(&store, &table, &mut rng, rows)?;
                    let latency = op.elapsed();
                    if phase {
                        during.push(latency);
                    } else {
                        before.push(latency);
                    }
                }
                Ok((before, during))
            },
        )
    };
    let baseline = Duration::from_secs(3);
    thread::sleep(baseline);
    building.store(true, Ordering::Relaxed);
    let build = Instant::now();
    store.create_index("sbtest", "sbtest1", k_index)?;
    let build_time = build.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (before, during) = writer.join().expect("the writer thread")?;
    println!(
        "CREATE INDEX k_1 (k): {:.2} s, {:.0} rows/s",
        build_time.as_secs_f64(),
        rows as f64 / build_time.as_secs_f64()
    );
    for mut phase in [
        Phase {
            name: "before build",
            seconds: baseline.as_secs_f64(),
            latencies: before,
        },
        Phase {
            name: "during build",
            seconds: build_time.as_secs_f64(),
            latencies: during,
        },
    ] {
        if !phase.latencies.is_empty() {
            phase.print();
        }
    }
    let mut txn = store.begin(TxnOptions::default())?;
    let table = store
        .catalog()
        .table("sbtest", "sbtest1")
        .cloned()
        .expect("the table");
    let check = txn.check_table(&table)?;
    println!(
        "CHECK TABLE: {} ({} rows, k_1 holds {})",
        if check.is_ok() { "OK" } else { "CORRUPT" },
        check.rows,
        check.index_entries[0]
    );
    drop(txn);
    Arc::try_unwrap(store)
        .map_err(|_| shale_table::Error::InvalidArgument("store still shared".into()))?
        .close()
}
