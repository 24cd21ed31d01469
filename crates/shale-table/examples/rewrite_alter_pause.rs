//! The longest pause a writer sees while a rewriting ALTER TABLE runs.
//!
//! Loads sysbench's table, then one writer thread changes random rows (an UPDATE of `k` and
//! `c`, or a delete and re-insert) in one-row transactions while the main thread runs
//! `ALTER TABLE sbtest1 MODIFY k BIGINT NOT NULL`, a rewrite (the index on `k` changes its key
//! bytes) that keeps the primary key. The writer binds to the table's definition again when
//! told it changed (`Error::TableDefChanged`), as the SQL layer does. Prints the ALTER's time,
//! and the writer's operations per second, p99, p99.9 and longest latency before and during
//! the ALTER. Commits are acknowledged without fsync (`Durability::Buffered`).
//!
//! With `key` as the third argument the ALTER is `MODIFY id BIGINT NOT NULL` instead: the
//! primary key's bytes change, so every row moves to a new key (shale-table's shadow.rs, "a
//! new primary key").
//!
//! `cargo run -p shale-table --example rewrite_alter_pause -- [rows] [dir] [key]`
//! (defaults 200000, a folder in the temporary directory).

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
use shale_table::{
    AlterMethod, ColumnDef, ColumnSource, ColumnType, Error, LockMode, Store, StoreOptions,
    TableChange, TableDef, TxnOptions, Value,
};

fn row(id: i64, k: i64) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Int(k),
        Value::Bytes(format!("{:0>119}", id * 7919).into_bytes()),
        Value::Bytes(format!("{:0>59}", id * 104_729).into_bytes()),
    ]
}

fn print(name: &str, seconds: f64, latencies: &mut [Duration]) {
    if latencies.is_empty() {
        return;
    }
    latencies.sort_unstable();
    let at = |per_mille: usize| {
        let i = (latencies.len() * per_mille / 1000).min(latencies.len() - 1);
        latencies[i].as_secs_f64() * 1e3
    };
    println!(
        "writer {name:<13} {:>8.0} ops/s  p99 {:>7.3} ms  p99.9 {:>7.3} ms  max {:>8.3} ms  ({} ops)",
        latencies.len() as f64 / seconds,
        at(990),
        at(999),
        at(1000),
        latencies.len()
    );
}

fn table(store: &Store) -> Arc<TableDef> {
    store
        .catalog()
        .table("sbtest", "sbtest1")
        .cloned()
        .expect("the table")
}

/// One row changed in its own transaction, bound again while the definition changes.
fn change(store: &Store, rng: &mut SmallRng, rows: i64) -> shale_table::Result<()> {
    let id = rng.gen_range(1..=rows);
    let (k, update) = (rng.gen_range(1..=rows), rng.gen_bool(0.5));
    loop {
        let table = table(store);
        let mut txn = store.begin(TxnOptions::default())?;
        let done = match txn.get(&table, &[Value::Int(id)], LockMode::Exclusive) {
            Ok(Some(old)) if update => txn.update(&table, &old, row(id, k)),
            Ok(Some(old)) => txn
                .delete(&table, &old)
                .and_then(|()| txn.insert(&table, row(id, k))),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        match done {
            Ok(()) => return txn.commit(),
            Err(Error::TableDefChanged { .. }) => txn.rollback(),
            Err(e) => return Err(e),
        }
    }
}

fn def_name(column: usize) -> &'static str {
    if column == 0 {
        "id"
    } else {
        "k"
    }
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
    let rows: i64 = args.next().map_or(200_000, |a| a.parse().expect("rows"));
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join("shale-rewrite-alter"),
        PathBuf::from,
    );
    let column = match args.next().as_deref() {
        None => 1,
        Some("key") => 0,
        Some(other) => panic!("unknown mode {other}: only `key`"),
    };
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
    let created = store.create_table(sysbench_table(false))?;
    load(&store, &created, rows)?;
    println!("in {}", dir.display());

    let altering = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, altering, stop) = (store.clone(), altering.clone(), stop.clone());
        thread::spawn(
            move || -> shale_table::Result<(Vec<Duration>, Vec<Duration>)> {
                let mut rng = SmallRng::seed_from_u64(11);
                let (mut before, mut during) = (Vec::new(), Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let phase = altering.load(Ordering::Relaxed);
                    let op = Instant::now();
                    change(&store, &mut rng, rows)?;
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
    altering.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let mut def = (*table(&store)).clone();
    def.columns[column].ty = ColumnType::BigInt { unsigned: false };
    let sources = (0..def.columns.len()).map(ColumnSource::Stored).collect();
    let (_, method) = store.alter_table(
        "sbtest",
        "sbtest1",
        TableChange { def, sources },
        Arc::new(|_: &ColumnDef, _: &ColumnDef, v: Value, _: u64| Ok::<_, Error>(v)),
    )?;
    let alter_time = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (mut before, mut during) = writer.join().expect("the writer thread")?;
    assert!(matches!(method, AlterMethod::Rewrite { .. }), "{method:?}");
    println!(
        "ALTER TABLE sbtest1 MODIFY {} BIGINT NOT NULL: {:.2} s, {:.0} rows/s",
        def_name(column),
        alter_time.as_secs_f64(),
        rows as f64 / alter_time.as_secs_f64()
    );
    print("before ALTER", baseline.as_secs_f64(), &mut before);
    print("during ALTER", alter_time.as_secs_f64(), &mut during);
    let mut txn = store.begin(TxnOptions::default())?;
    let check = txn.check_table(&table(&store))?;
    println!(
        "CHECK TABLE: {} ({} rows)",
        if check.is_ok() { "OK" } else { "CORRUPT" },
        check.rows
    );
    drop(txn);
    Arc::try_unwrap(store)
        .map_err(|_| shale_table::Error::InvalidArgument("store still shared".into()))?
        .close()
}
