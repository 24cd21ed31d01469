//! The table layer's costs beside the engine's own, on the same bytes (issue targets: a
//! primary-key point read at most 1.3x an engine get; a row insert with one secondary index at
//! most 2x an engine put of the row).
//!
//! sysbench's table (`id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60), KEY k_1 (k)`) in a
//! real directory (`OsFs`), commits acknowledged without fsync (`Durability::Buffered`) on both
//! sides so the figures are CPU and write volume, not the disk's sync latency. The engine side
//! writes and reads the very key and row bytes the table layer stores (its codecs, through the
//! `testing` feature), into a second database.
//!
//! Prints ns/op for each operation, the table/engine ratio, and bytes the WAL wrote per row.
//!
//! `cargo run --release -p shale-table --example table_bench -- [rows] [reads] [dir]`
//! (defaults 200000, 1000000, a folder in the temporary directory).

use std::path::PathBuf;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability, Options, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};
use shale_fs::{FileSystem, OsFs};
use shale_table::testing::sysbench_table;
use shale_table::testing::{encode_key_column, encode_row};
use shale_table::{
    IndexChoice, KeyRange, LockMode, Store, StoreOptions, TableDef, TxnOptions, Value,
};

fn row(id: i64, k: i64) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Int(k),
        Value::Bytes(format!("{:0>119}", id * 7919).into_bytes()),
        Value::Bytes(format!("{:0>59}", id * 104_729).into_bytes()),
    ]
}

fn primary_key(table: &TableDef, id: i64) -> Vec<u8> {
    let mut key = table.primary_key.index_id.to_be_bytes().to_vec();
    key.extend(encode_key_column(&table.columns[0], &Value::Int(id)).expect("an INT encodes"));
    key
}

/// The `k_1` entry of row `id`: the index id, `k`, then the primary key (non-unique entries
/// carry it in the key; docs/format/table-keys.md).
fn index_entry(table: &TableDef, id: i64, k: i64) -> Vec<u8> {
    let mut key = table.indexes[0].index_id.to_be_bytes().to_vec();
    key.extend(encode_key_column(&table.columns[1], &Value::Int(k)).expect("an INT encodes"));
    key.extend(encode_key_column(&table.columns[0], &Value::Int(id)).expect("an INT encodes"));
    key
}

fn per_op(started: Instant, ops: u64) -> f64 {
    started.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

fn report(name: &str, table_ns: f64, engine_ns: Option<f64>) {
    match engine_ns {
        Some(engine_ns) => println!(
            "{name:<34} table {table_ns:>8.0} ns/op   engine {engine_ns:>8.0} ns/op   ratio {:.2}",
            table_ns / engine_ns
        ),
        None => println!("{name:<34} table {table_ns:>8.0} ns/op"),
    }
}

fn engine_options() -> Options {
    Options {
        durability: Durability::Buffered,
        ..Options::default()
    }
}

/// The keys `k` of rows `1..=rows`, drawn once so both sides write the same rows.
struct Workload {
    rows: i64,
    ks: Vec<i64>,
    ids: Vec<i64>,
}

impl Workload {
    fn k(&self, id: i64) -> i64 {
        self.ks[usize::try_from(id - 1).expect("ids start at 1")]
    }

    fn count(&self) -> u64 {
        self.rows.unsigned_abs()
    }
}

/// Inserts every row on both sides; prints the per-row costs and WAL bytes.
fn inserts(
    store: &Store,
    table: &TableDef,
    engine: &Db,
    engine_batches: &Db,
    w: &Workload,
) -> shale_table::Result<()> {
    // Rows are made before the clock starts, as the engine side's pairs are.
    let rows: Vec<Vec<Value>> = (1..=w.rows).map(|id| row(id, w.k(id))).collect();
    let wal_before = store.engine().db().stats().wal_bytes_written;
    let started = Instant::now();
    for row in rows {
        let mut txn = store.begin(TxnOptions::default())?;
        txn.insert(table, row)?;
        txn.commit()?;
    }
    let table_insert = per_op(started, w.count());
    let table_wal = store.engine().db().stats().wal_bytes_written - wal_before;

    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (1..=w.rows)
        .map(|id| {
            let value = encode_row(table, &row(id, w.k(id))).expect("a row encodes");
            (primary_key(table, id), value)
        })
        .collect();
    let wal_before = engine.stats().wal_bytes_written;
    let started = Instant::now();
    for (key, value) in &pairs {
        engine.put(key, value)?;
    }
    let engine_put = per_op(started, w.count());
    let engine_wal = engine.stats().wal_bytes_written - wal_before;

    // The same two writes the table layer makes (row, then its index entry), as one engine
    // batch: what is left of the table's cost above this is the table layer's own.
    let batches: Vec<WriteBatch> = (1..=w.rows)
        .map(|id| {
            let mut batch = WriteBatch::new();
            let row_bytes = encode_row(table, &row(id, w.k(id))).expect("a row encodes");
            batch.put(DEFAULT_KEYSPACE_ID, &primary_key(table, id), &row_bytes)?;
            batch.put(DEFAULT_KEYSPACE_ID, &index_entry(table, id, w.k(id)), b"")?;
            Ok(batch)
        })
        .collect::<shale_engine::Result<_>>()?;
    let started = Instant::now();
    for batch in batches {
        engine_batches.write(batch, &WriteOptions::default())?;
    }
    let engine_batch = per_op(started, w.count());

    report("insert (1 secondary index)", table_insert, Some(engine_put));
    report(
        "  beside the same 2 writes batched",
        table_insert,
        Some(engine_batch),
    );
    println!(
        "{:<34} table {:>8.1} B/row   engine {:>8.1} B/row   (key {} B, row {} B)",
        "WAL bytes written",
        table_wal as f64 / w.rows as f64,
        engine_wal as f64 / w.rows as f64,
        pairs[0].0.len(),
        pairs[0].1.len()
    );
    Ok(())
}

/// Point reads by primary key: inside one read transaction (the table layer's own cost), and
/// one transaction per read (what an autocommit SELECT pays), beside engine gets.
fn point_reads(
    store: &Store,
    table: &TableDef,
    engine: &Db,
    w: &Workload,
) -> shale_table::Result<()> {
    let reads = w.ids.len() as u64;
    let mut txn = store.begin(TxnOptions::default())?;
    let started = Instant::now();
    let mut found = 0u64;
    for &id in &w.ids {
        found += u64::from(txn.get(table, &[Value::Int(id)], LockMode::None)?.is_some());
    }
    let table_get = per_op(started, reads);
    let started = Instant::now();
    for &id in &w.ids {
        found += u64::from(
            txn.get_projected(table, &[Value::Int(id)], LockMode::None, &[2])?
                .is_some(),
        );
    }
    let table_get_c = per_op(started, reads);
    drop(txn);
    let started = Instant::now();
    for &id in &w.ids {
        let mut txn = store.begin(TxnOptions::default())?;
        found += u64::from(
            txn.get_projected(table, &[Value::Int(id)], LockMode::None, &[2])?
                .is_some(),
        );
        txn.commit()?;
    }
    let table_get_autocommit = per_op(started, reads);
    let started = Instant::now();
    for &id in &w.ids {
        found += u64::from(engine.get(&primary_key(table, id))?.is_some());
    }
    let engine_get = per_op(started, reads);
    assert_eq!(found, reads * 4, "every id was loaded");
    report("point read by pk (whole row)", table_get, Some(engine_get));
    report("point read by pk (column c)", table_get_c, Some(engine_get));
    report(
        "point read, one txn per read",
        table_get_autocommit,
        Some(engine_get),
    );
    Ok(())
}

/// Secondary lookups (`k = ?`: index prefix, then the row by pk) and 100-row pk ranges.
fn scans(store: &Store, table: &TableDef, w: &Workload) -> shale_table::Result<()> {
    let mut txn = store.begin(TxnOptions::default())?;
    let lookups = w.ids.len() / 10;
    let started = Instant::now();
    let mut returned = 0u64;
    for &id in w.ids.iter().take(lookups) {
        let mut cursor = txn.scan(
            table,
            IndexChoice::Secondary(0),
            KeyRange::prefix(vec![Value::Int(id)]),
            false,
            LockMode::None,
        )?;
        while cursor.next_row()?.is_some() {
            returned += 1;
        }
    }
    report(
        "secondary lookup k = ?",
        per_op(started, lookups as u64),
        None,
    );
    let ranges = w.ids.len() / 100;
    let started = Instant::now();
    for &id in w.ids.iter().take(ranges) {
        let range = KeyRange {
            lower: std::ops::Bound::Included(vec![Value::Int(id)]),
            upper: std::ops::Bound::Excluded(vec![Value::Int(id + 100)]),
        };
        let mut cursor = txn.scan(table, IndexChoice::Primary, range, false, LockMode::None)?;
        while cursor.next_row()?.is_some() {
            returned += 1;
        }
    }
    report("pk range of 100 rows", per_op(started, ranges as u64), None);
    println!("({returned} rows returned by the scans)");
    Ok(())
}

fn main() -> shale_table::Result<()> {
    let mut args = std::env::args().skip(1);
    let rows: i64 = args.next().map_or(200_000, |a| a.parse().expect("rows"));
    let reads: usize = args.next().map_or(1_000_000, |a| a.parse().expect("reads"));
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join("shale-table-bench"),
        PathBuf::from,
    );
    assert!(rows > 0, "rows must be above 0");
    let fs = OsFs::new();
    let _ = fs.remove_dir_all(&dir);
    fs.create_dir_all(&dir).expect("a scratch directory");

    let store = Store::open(
        dir.join("table"),
        StoreOptions {
            engine: engine_options(),
            ..StoreOptions::default()
        },
    )?;
    store.create_database("sbtest")?;
    let table = store.create_table(sysbench_table(false))?;
    let engine = Db::open(dir.join("engine"), engine_options())?;
    println!("{rows} rows, {reads} reads, in {}", dir.display());

    let mut rng = SmallRng::seed_from_u64(7);
    let workload = Workload {
        rows,
        ks: (0..rows).map(|_| rng.gen_range(1..=rows)).collect(),
        ids: (0..reads).map(|_| rng.gen_range(1..=rows)).collect(),
    };
    let engine_batches = Db::open(dir.join("engine-batches"), engine_options())?;
    inserts(&store, &table, &engine, &engine_batches, &workload)?;
    engine_batches.close()?;
    store.engine().db().flush()?;
    engine.flush()?;
    point_reads(&store, &table, &engine, &workload)?;
    scans(&store, &table, &workload)?;
    engine.close()?;
    store.close()
}
