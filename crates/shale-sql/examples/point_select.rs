//! Times sysbench's prepared point select through a session (in-memory file system).

use std::sync::Arc;
use std::time::Instant;

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

fn main() {
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
    let mut sink = Count::default();
    session
        .execute("CREATE DATABASE sbtest; USE sbtest", &mut sink)
        .unwrap();
    session.execute("CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))", &mut sink).unwrap();
    let rows: Vec<String> = (0..10_000)
        .map(|i| format!("({i}, '{}', '{}')", "c".repeat(119), "p".repeat(59)))
        .collect();
    let start = Instant::now();
    session
        .execute(
            &format!("INSERT INTO sbtest1(k, c, pad) VALUES {}", rows.join(",")),
            &mut sink,
        )
        .unwrap();
    println!("10k-row insert: {:?}", start.elapsed());
    let point = session.prepare("SELECT c FROM sbtest1 WHERE id=?").unwrap();
    let n: u32 = 200_000;
    let start = Instant::now();
    for i in 0..n {
        session
            .execute_prepared(
                point.id,
                &[Value::Int(1 + i64::from(i) % 10_000)],
                &mut sink,
            )
            .unwrap();
    }
    let elapsed = start.elapsed();
    println!(
        "point select: {:.2} us/op ({} rows)",
        elapsed.as_secs_f64() * 1e6 / f64::from(n),
        sink.0
    );
    let range = session
        .prepare("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?")
        .unwrap();
    let start = Instant::now();
    for i in 0..20_000 {
        session
            .execute_prepared(
                range.id,
                &[Value::Int(1 + i % 9_000), Value::Int(100 + i % 9_000)],
                &mut sink,
            )
            .unwrap();
    }
    println!(
        "range select (100 rows): {:.2} us/op",
        start.elapsed().as_secs_f64() * 1e6 / 20_000.0
    );
    let update = session
        .prepare("UPDATE sbtest1 SET k=k+1 WHERE id=?")
        .unwrap();
    let start = Instant::now();
    for i in 0..50_000 {
        session
            .execute_prepared(update.id, &[Value::Int(1 + i % 10_000)], &mut sink)
            .unwrap();
    }
    println!(
        "update k: {:.2} us/op",
        start.elapsed().as_secs_f64() * 1e6 / 50_000.0
    );
}
