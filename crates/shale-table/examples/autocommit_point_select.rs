//! sysbench's `oltp_point_select` as autocommit statements on the table layer: each lookup
//! is its own transaction (begin, one projected primary key get, rollback), as the SQL
//! layer runs an autocommit SELECT, so per-statement costs (the engine transaction, the
//! table's metadata lock and its release) are all in the figure. Prints ns per statement
//! for each thread count; every thread reads the same table.
//!
//! `cargo run -p shale-table --example autocommit_point_select -- [rows] [lookups] [threads]`

use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_fs::MemFs;
use shale_table::testing::sysbench_table;
use shale_table::{LockMode, Store, StoreOptions, TxnOptions, Value};

fn main() -> shale_table::Result<()> {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let rows = args.next().unwrap_or(10_000);
    let lookups = args.next().unwrap_or(200_000);
    let threads = args.next().unwrap_or(2);

    let mut options = StoreOptions::default();
    options.engine.file_system = Arc::new(MemFs::new());
    let store = Arc::new(Store::open("/db", options)?);
    store.create_database("sbtest")?;
    let table = store.create_table(sysbench_table(true))?;
    let mut txn = store.begin(TxnOptions::default())?;
    for n in 1..=rows {
        let id = i64::try_from(n).unwrap_or(i64::MAX);
        txn.insert(
            &table,
            vec![
                Value::Int(id),
                Value::Int(id),
                Value::Bytes(format!("{:0>119}", n * 7919).into_bytes()),
                Value::Bytes(format!("{:0>59}", n * 104_729).into_bytes()),
            ],
        )?;
    }
    txn.commit()?;

    for threads in 1..=threads {
        let per_thread = lookups / threads;
        let started = Instant::now();
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (store, table) = (store.clone(), table.clone());
                std::thread::spawn(move || -> shale_table::Result<u64> {
                    let mut rng = SmallRng::seed_from_u64(t);
                    let mut found = 0;
                    for _ in 0..per_thread {
                        let id = rng.gen_range(1..=i64::try_from(rows).unwrap_or(i64::MAX));
                        let mut txn = store.begin(TxnOptions::default())?;
                        found += u64::from(
                            txn.get_projected(&table, &[Value::Int(id)], LockMode::None, &[2])?
                                .is_some(),
                        );
                        txn.rollback();
                    }
                    Ok(found)
                })
            })
            .collect();
        let mut found = 0;
        for worker in workers {
            found += worker.join().expect("worker panicked")?;
        }
        let took = started.elapsed();
        let statements = per_thread * threads;
        println!(
            "{threads} thread(s): {statements} statements ({found} found) in {took:.2?}: \
             {:.0} ns/statement, {:.0} statements/s",
            took.as_nanos() as f64 / statements as f64,
            statements as f64 / took.as_secs_f64(),
        );
    }
    Ok(())
}
