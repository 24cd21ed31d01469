//! sysbench's `oltp_read_write` transaction on the table layer alone, on several threads:
//! 10 point selects, 4 range reads (plain, SUM, ORDER BY, DISTINCT: the table work is one
//! primary key range each), an index update (`k = k + 1`), a non-index update (`c`), a delete
//! and the re-insert of that id, in one REPEATABLE READ transaction; deadlocks and lock
//! timeouts are retried as sysbench does. Ends with CHECK TABLE.
//!
//! `cargo run -p shale-table --example oltp_read_write -- [rows] [threads] [seconds]`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_fs::MemFs;
use shale_table::testing::sysbench_table;
use shale_table::{
    Error, IndexChoice, KeyRange, LockMode, Store, StoreOptions, TableDef, TableTxn, TxnOptions,
    Value,
};

fn text(rng: &mut SmallRng, len: usize) -> Value {
    Value::Bytes((0..len).map(|_| rng.gen_range(b'0'..=b'9')).collect())
}

/// One sysbench `oltp_read_write` transaction's table work.
fn transaction(
    txn: &mut TableTxn,
    t: &TableDef,
    rng: &mut SmallRng,
    rows: i64,
) -> Result<(), Error> {
    let id = |rng: &mut SmallRng| Value::Int(rng.gen_range(1..=rows));
    for _ in 0..10 {
        txn.get_projected(t, &[id(rng)], LockMode::None, &[2])?;
    }
    for _ in 0..4 {
        let start = rng.gen_range(1..=rows);
        let range = KeyRange {
            lower: std::ops::Bound::Included(vec![Value::Int(start)]),
            upper: std::ops::Bound::Included(vec![Value::Int(start + 99)]),
        };
        let mut cursor = txn.scan(t, IndexChoice::Primary, range, false, LockMode::None)?;
        cursor.set_projection(vec![2]);
        while cursor.next_row()?.is_some() {}
    }
    let target = id(rng);
    if let Some(old) = txn.get(t, std::slice::from_ref(&target), LockMode::Exclusive)? {
        let mut new = old.clone();
        if let Value::Int(k) = new[1] {
            new[1] = Value::Int(k + 1);
        }
        txn.update(t, &old, new)?;
    }
    let target = id(rng);
    if let Some(old) = txn.get(t, std::slice::from_ref(&target), LockMode::Exclusive)? {
        let mut new = old.clone();
        new[2] = text(rng, 119);
        txn.update(t, &old, new)?;
    }
    let target = id(rng);
    if let Some(old) = txn.get(t, std::slice::from_ref(&target), LockMode::Exclusive)? {
        txn.delete(t, &old)?;
    }
    let k = Value::Int(rng.gen_range(1..=rows));
    let (c, pad) = (text(rng, 119), text(rng, 59));
    match txn.insert(t, vec![target, k, c, pad]) {
        Ok(()) | Err(Error::DuplicateKey { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

fn main() -> shale_table::Result<()> {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let rows = i64::try_from(args.next().unwrap_or(10_000)).unwrap_or(i64::MAX);
    let threads = args.next().unwrap_or(2);
    let seconds = args.next().unwrap_or(5);

    let mut options = StoreOptions::default();
    options.engine.file_system = Arc::new(MemFs::new());
    options.engine.durability = shale_table::Durability::Buffered;
    let store = Arc::new(Store::open("/db", options)?);
    store.create_database("sbtest")?;
    let table = store.create_table(sysbench_table(false))?;
    let mut rng = SmallRng::seed_from_u64(0);
    let mut txn = store.begin(TxnOptions::default())?;
    for id in 1..=rows {
        let row = vec![
            Value::Int(id),
            Value::Int(rng.gen_range(1..=rows)),
            text(&mut rng, 119),
            text(&mut rng, 59),
        ];
        txn.insert(&table, row)?;
    }
    txn.commit()?;

    let stop = Arc::new(AtomicBool::new(false));
    let (commits, retries) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|seed| {
            let (store, table, stop) = (store.clone(), table.clone(), stop.clone());
            let (commits, retries) = (commits.clone(), retries.clone());
            std::thread::spawn(move || -> shale_table::Result<()> {
                let mut rng = SmallRng::seed_from_u64(seed + 1);
                while !stop.load(Ordering::Relaxed) {
                    let mut txn = store.begin(TxnOptions::default())?;
                    match transaction(&mut txn, &table, &mut rng, rows) {
                        Ok(()) => {
                            txn.commit()?;
                            commits.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Deadlock | Error::LockWaitTimeout) => {
                            retries.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("a worker panicked")?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let commits = commits.load(Ordering::Relaxed);
    println!(
        "{threads} threads, {rows} rows: {commits} transactions in {elapsed:.1} s ({:.0} tps), {} retried",
        commits as f64 / elapsed,
        retries.load(Ordering::Relaxed)
    );
    let mut txn = store.begin(TxnOptions::default())?;
    let check = txn.check_table(&table)?;
    println!("CHECK TABLE: {} rows, ok = {}", check.rows, check.is_ok());
    assert!(check.is_ok(), "{check:?}");
    Ok(())
}
