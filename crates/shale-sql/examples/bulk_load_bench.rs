//! Rows per second of three ways to fill sysbench's table shape (id INT PK, k INT with an
//! index, c CHAR(120), pad CHAR(60)) through a session, on the real file system, in one run:
//! plain multi-row INSERTs (100 rows a statement, autocommit), the same INSERTs with
//! `SET shale_bulk_load = 1`, and `LOAD DATA INFILE` of a tab-separated file into an empty
//! table. Rows arrive in random primary-key order in every case. Usage:
//!
//! `cargo run -p shale-sql --example bulk_load_bench -- [ROWS] [DIR]`
//!
//! (defaults: 200000 rows, a folder under the system temp dir, deleted at the end). Prints
//! each rate and the ratios to plain INSERT; measure on a quiet machine, or compare only the
//! ratios of one run.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use shale_fs::{FileSystem, OsFs};
use shale_sql::{
    ColumnMeta, Instance, InstanceOptions, ResultSink, Session, SqlError, StatementStatus, Value,
};

struct Quiet;
impl ResultSink for Quiet {
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

fn run(session: &mut Session, sql: &str) {
    if let Err(e) = session.execute(sql, &mut Quiet) {
        panic!("{sql:.200}: {e}");
    }
}

const TABLE: &str = "(id INT NOT NULL, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL \
                     DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))";

/// 1..=n shuffled (Fisher-Yates with a fixed xorshift seed: the same order every run).
fn ids(n: u64) -> Vec<u64> {
    let mut out: Vec<u64> = (1..=n).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in (1..out.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        out.swap(i, j);
    }
    out
}

fn c_of(id: u64) -> String {
    format!("{id:011}-{}", "c".repeat(107))
}

fn inserts(session: &mut Session, table: &str, order: &[u64]) {
    for chunk in order.chunks(100) {
        let mut sql = format!("INSERT INTO {table} VALUES ");
        for (i, id) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push(',');
            }
            let _ = write!(
                sql,
                "({id}, {}, '{}', '{}')",
                id % 1000,
                c_of(*id),
                "p".repeat(59)
            );
        }
        run(session, &sql);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join(format!("shale-bulk-bench-{}", std::process::id())),
        PathBuf::from,
    );
    let fs = OsFs::new();
    let _ = fs.remove_dir_all(&dir);
    fs.create_dir_all(&dir).unwrap();
    let files = dir.join("files");
    fs.create_dir_all(&files).unwrap();
    let order = ids(rows);
    let mut tsv = String::with_capacity(order.len() * 200);
    for id in &order {
        let _ = writeln!(
            tsv,
            "{id}\t{}\t{}\t{}",
            id % 1000,
            c_of(*id),
            "p".repeat(59)
        );
    }
    let mut file = fs.create(&files.join("rows.tsv")).unwrap();
    file.append(tsv.as_bytes()).unwrap();
    file.sync_data().unwrap();
    drop(file);

    let instance = Instance::open(dir.join("data"), InstanceOptions::default()).unwrap();
    instance.set_secure_file_priv(Some(files.clone()));
    let mut session = instance.session();
    run(&mut session, "CREATE DATABASE sbtest");
    run(&mut session, "USE sbtest");
    for t in ["plain", "bulk", "loaddata"] {
        run(&mut session, &format!("CREATE TABLE {t} {TABLE}"));
    }

    let start = Instant::now();
    inserts(&mut session, "plain", &order);
    let plain = start.elapsed().as_secs_f64();

    let start = Instant::now();
    run(&mut session, "SET shale_bulk_load = 1");
    inserts(&mut session, "bulk", &order);
    run(&mut session, "SET shale_bulk_load = 0");
    let bulk = start.elapsed().as_secs_f64();

    let start = Instant::now();
    run(
        &mut session,
        "LOAD DATA INFILE 'rows.tsv' INTO TABLE loaddata",
    );
    let load = start.elapsed().as_secs_f64();

    for t in ["plain", "bulk", "loaddata"] {
        let mut check = Quiet;
        session
            .execute(&format!("CHECK TABLE {t}"), &mut check)
            .unwrap();
    }
    drop(session);
    instance.close().unwrap();
    let _ = fs.remove_dir_all(&dir);

    let rate = |s: f64| rows as f64 / s;
    println!("rows: {rows} (random primary-key order; table with PK and one secondary index)");
    println!("plain INSERT (100 rows/stmt): {:>10.0} rows/s", rate(plain));
    println!(
        "bulk-load INSERT:             {:>10.0} rows/s  ({:.1}x plain)",
        rate(bulk),
        plain / bulk
    );
    println!(
        "LOAD DATA INFILE:             {:>10.0} rows/s  ({:.1}x plain)",
        rate(load),
        plain / load
    );
}
