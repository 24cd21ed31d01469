//! sysbench's `oltp_point_select` on the table layer alone: loads an `sbtest` table, then
//! times primary key point reads (`SELECT c FROM sbtest1 WHERE id = ?`'s table work: one key
//! encode, one engine get, one projected row decode) and `k` index range reads.
//!
//! `cargo run -p shale-table --example table_point_select -- [rows] [lookups]`

use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_fs::MemFs;
use shale_table::testing::sysbench_table;
use shale_table::{IndexChoice, KeyRange, LockMode, Store, StoreOptions, TxnOptions, Value};

fn main() -> shale_table::Result<()> {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let rows = args.next().unwrap_or(100_000);
    let lookups = args.next().unwrap_or(1_000_000);

    let mut options = StoreOptions::default();
    options.engine.file_system = Arc::new(MemFs::new());
    let store = Store::open("/db", options)?;
    store.create_database("sbtest")?;
    let table = store.create_table(sysbench_table(true))?;

    let mut rng = SmallRng::seed_from_u64(1);
    let started = Instant::now();
    let mut txn = store.begin(TxnOptions::default())?;
    for n in 1..=rows {
        let id = txn.next_auto_increment(&table)?;
        let k = rng.gen_range(1..=rows);
        txn.insert(
            &table,
            vec![
                Value::Int(i64::try_from(id).unwrap_or(i64::MAX)),
                Value::Int(i64::try_from(k).unwrap_or(i64::MAX)),
                Value::Bytes(format!("{:0>119}", n * 7919).into_bytes()),
                Value::Bytes(format!("{:0>59}", n * 104_729).into_bytes()),
            ],
        )?;
        if n % 10_000 == 0 {
            txn.commit()?;
            txn = store.begin(TxnOptions::default())?;
        }
    }
    txn.commit()?;
    println!("load: {rows} rows in {:.2?}", started.elapsed());

    let mut txn = store.begin(TxnOptions::default())?;
    let started = Instant::now();
    let mut found = 0u64;
    for _ in 0..lookups {
        let id = rng.gen_range(1..=i64::try_from(rows).unwrap_or(i64::MAX));
        found += u64::from(
            txn.get_projected(&table, &[Value::Int(id)], LockMode::None, &[2])?
                .is_some(),
        );
    }
    let elapsed = started.elapsed();
    println!(
        "point select: {lookups} in {elapsed:.2?} ({:.0} ns/op, {found} found)",
        elapsed.as_nanos() as f64 / lookups as f64
    );

    let started = Instant::now();
    let ranges = lookups / 100;
    let mut returned = 0u64;
    for _ in 0..ranges {
        let k = rng.gen_range(1..=i64::try_from(rows).unwrap_or(i64::MAX));
        let range = KeyRange::prefix(vec![Value::Int(k)]);
        let mut cursor = txn.scan(
            &table,
            IndexChoice::Secondary(0),
            range,
            false,
            LockMode::None,
        )?;
        while cursor.next_row()?.is_some() {
            returned += 1;
        }
    }
    let elapsed = started.elapsed();
    println!(
        "k lookups: {ranges} in {elapsed:.2?} ({:.0} ns/op, {returned} rows)",
        elapsed.as_nanos() as f64 / ranges.max(1) as f64
    );
    drop(txn);
    store.close()
}
