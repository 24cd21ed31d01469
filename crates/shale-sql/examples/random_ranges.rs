//! Times sysbench 1.0.20's `select_random_ranges` through a session (in-memory file system):
//! `SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR ...` with 10 ranges 5 wide, on
//! a table of `ROWS` rows with sysbench's secondary index `k_1`.
//!
//! `cargo run -p shale-sql --example random_ranges [rows] [statements]`

use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_sql::{
    ColumnMeta, Instance, InstanceOptions, ResultSink, SqlError, StatementStatus, Value,
};

#[derive(Default)]
struct Count(u64);
impl ResultSink for Count {
    fn ok(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
    fn columns(&mut self, _: &[ColumnMeta]) -> Result<(), SqlError> {
        Ok(())
    }
    fn row(&mut self, _: &[Value]) -> Result<(), SqlError> {
        self.0 += 1;
        Ok(())
    }
    fn end(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
}

const RANGES: usize = 10;
const RANGE_SIZE: i64 = 5;

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: i64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(250_000);
    let statements: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let instance = Instance::open(
        "/db",
        InstanceOptions {
            transaction_isolation: shale_sql::IsolationLevel::default(),
            store: shale_table::StoreOptions {
                engine: shale_engine::Options {
                    file_system: Arc::new(shale_fs::MemFs::new()),
                    ..shale_engine::Options::default()
                },
                ..shale_table::StoreOptions::default()
            },
        },
    )
    .expect("open");
    let mut session = instance.session();
    let mut sink = Count::default();
    session
        .execute("CREATE DATABASE sbtest; USE sbtest", &mut sink)
        .expect("database");
    session.execute("CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id), KEY k_1 (k))", &mut sink).expect("table");
    let mut rng = SmallRng::seed_from_u64(1);
    let start = Instant::now();
    let mut id = 0;
    while id < rows {
        let n = 1000.min(rows - id);
        let batch: Vec<String> = (0..n)
            .map(|_| {
                format!(
                    "({}, '{}', '{}')",
                    rng.gen_range(1..=rows),
                    "c".repeat(119),
                    "p".repeat(59)
                )
            })
            .collect();
        id += n;
        session
            .execute(
                &format!("INSERT INTO sbtest1(k, c, pad) VALUES {}", batch.join(",")),
                &mut sink,
            )
            .expect("insert");
    }
    println!("{rows}-row load: {:?}", start.elapsed());
    let text = format!(
        "SELECT count(k) FROM sbtest1 WHERE {}",
        ["k BETWEEN ? AND ?"; RANGES].join(" OR ")
    );
    let ranges = session.prepare(&text).expect("prepare");
    let start = Instant::now();
    for _ in 0..statements {
        let params: Vec<Value> = (0..RANGES)
            .flat_map(|_| {
                let low = rng.gen_range(1..=rows);
                [Value::Int(low), Value::Int(low + RANGE_SIZE)]
            })
            .collect();
        session
            .execute_prepared(ranges.id, &params, &mut sink)
            .expect("select");
    }
    let elapsed = start.elapsed();
    println!(
        "select_random_ranges: {:.1} us/statement, {:.0} statements/s ({statements} statements)",
        elapsed.as_secs_f64() * 1e6 / f64::from(statements),
        f64::from(statements) / elapsed.as_secs_f64()
    );
}
