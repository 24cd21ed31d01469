//! Times sysbench's `oltp_insert` statement as it arrives (text protocol, a new row id from
//! `AUTO_INCREMENT`, one autocommit transaction each) through a session on an in-memory file
//! system: the SQL and table layers' cost per INSERT, without the network and the fsync.
//!
//! It runs blocks of statements with the statement cache off and on in turn
//! (`shale_statement_cache`, `session/statement_cache.rs`) and prints each mode's median
//! block, so a loaded machine slows both alike.
//!
//! `cargo run --release -p shale-sql --example text_insert [-- ROWS]`

use std::sync::Arc;
use std::time::Instant;

use shale_sql::{
    ColumnMeta, Instance, InstanceOptions, ResultSink, SqlError, StatementStatus, Value,
};

struct Discard;
impl ResultSink for Discard {
    fn ok(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
    fn columns(&mut self, _: &[ColumnMeta]) -> Result<(), SqlError> {
        Ok(())
    }
    fn row(&mut self, _: &[Value]) -> Result<(), SqlError> {
        Ok(())
    }
    fn end(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
}

/// Blocks of statements, alternating between the statement cache off and on.
const BLOCKS: usize = 8;

/// sysbench's 119-character `c` value: groups of 11 digits joined by `-`.
fn c_value(i: u64) -> String {
    (0..10)
        .map(|g| format!("{:011}", (i * 7919 + g * 104_729) % 100_000_000_000))
        .collect::<Vec<_>>()
        .join("-")
}

fn main() {
    let rows: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
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
    .unwrap();
    let mut session = instance.session();
    let mut sink = Discard;
    session
        .execute("CREATE DATABASE sbtest; USE sbtest", &mut sink)
        .unwrap();
    session
        .execute(
            "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' \
             NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, \
             PRIMARY KEY (id)) /*! ENGINE = innodb */",
            &mut sink,
        )
        .unwrap();
    session
        .execute("CREATE INDEX k_1 ON sbtest1(k)", &mut sink)
        .unwrap();
    let statements: Vec<String> = (0..rows)
        .map(|i| {
            format!(
                "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, {}, '{}', '{}')",
                (i * 2_654_435_761) % 250_000,
                c_value(i),
                &c_value(i + 1)[..59]
            )
        })
        .collect();
    // Blocks alternate between the modes; each mode's median block is its figure.
    let per_block = statements.len() / BLOCKS;
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (block, chunk) in statements.chunks(per_block.max(1)).enumerate() {
        let cached = block % 2;
        session
            .execute(&format!("SET shale_statement_cache = {cached}"), &mut sink)
            .unwrap();
        let start = Instant::now();
        for sql in chunk {
            session.execute(sql, &mut sink).unwrap();
        }
        times[cached].push(start.elapsed().as_secs_f64() * 1e6 / chunk.len() as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(&mut times[0]), median(&mut times[1]));
    println!(
        "text INSERT, autocommit ({rows} statements, median of {} blocks per mode): \
         {off:.2} us/statement without the statement cache, {on:.2} with it ({:.2}x)",
        times[0].len(),
        off / on
    );
}
