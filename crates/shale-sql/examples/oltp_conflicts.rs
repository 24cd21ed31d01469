//! Two sessions running sysbench's `oltp_read_write` transaction on a 1000-row table for a few
//! seconds: how many end in 1213/1205 (what sysbench counts as ignored errors).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use shale_sql::{
    ColumnMeta, Instance, InstanceOptions, ResultSink, SqlError, StatementStatus, Value,
};

struct Nothing;
impl ResultSink for Nothing {
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

#[allow(clippy::too_many_lines)] // one script
fn main() {
    let isolation = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "REPEATABLE READ".into());
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
    session.execute("CREATE DATABASE sbtest; USE sbtest; CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))", &mut Nothing).unwrap();
    let rows: Vec<String> = (0..1000).map(|i| format!("({i}, 'c', 'p')")).collect();
    session
        .execute(
            &format!("INSERT INTO sbtest1(k, c, pad) VALUES {}", rows.join(",")),
            &mut Nothing,
        )
        .unwrap();
    session
        .execute("CREATE INDEX k_1 ON sbtest1(k)", &mut Nothing)
        .unwrap();
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let instance = Arc::clone(&instance);
            let isolation = isolation.clone();
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(t);
                let mut s = instance.session();
                s.execute(
                    &format!("USE sbtest; SET SESSION TRANSACTION ISOLATION LEVEL {isolation}"),
                    &mut Nothing,
                )
                .unwrap();
                let prep = |s: &mut shale_sql::Session, sql: &str| s.prepare(sql).unwrap().id;
                let begin = prep(&mut s, "BEGIN");
                let commit = prep(&mut s, "COMMIT");
                let point = prep(&mut s, "SELECT c FROM sbtest1 WHERE id=?");
                let range = prep(&mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?");
                let upd_k = prep(&mut s, "UPDATE sbtest1 SET k=k+1 WHERE id=?");
                let upd_c = prep(&mut s, "UPDATE sbtest1 SET c=? WHERE id=?");
                let del = prep(&mut s, "DELETE FROM sbtest1 WHERE id=?");
                let ins = prep(
                    &mut s,
                    "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
                );
                let (mut done, mut errors) = (0u64, 0u64);
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(3) {
                    let id = &mut || Value::Int(rng.gen_range(1..=1000));
                    let run = |s: &mut shale_sql::Session,
                               stmt: u32,
                               p: &[Value]|
                     -> Result<(), SqlError> {
                        s.execute_prepared(stmt, p, &mut Nothing)
                    };
                    let r = (|| {
                        run(&mut s, begin, &[])?;
                        for _ in 0..10 {
                            run(&mut s, point, &[id()])?;
                        }
                        for _ in 0..4 {
                            let a = id();
                            let Value::Int(lo) = a else { unreachable!() };
                            run(&mut s, range, &[a, Value::Int(lo + 99)])?;
                        }
                        run(&mut s, upd_k, &[id()])?;
                        run(&mut s, upd_c, &[Value::Bytes(b"x".to_vec()), id()])?;
                        let victim = id();
                        run(&mut s, del, std::slice::from_ref(&victim))?;
                        run(
                            &mut s,
                            ins,
                            &[
                                victim,
                                Value::Int(1),
                                Value::Bytes(b"c".to_vec()),
                                Value::Bytes(b"p".to_vec()),
                            ],
                        )?;
                        run(&mut s, commit, &[])
                    })();
                    match r {
                        Ok(()) => done += 1,
                        Err(e) => {
                            errors += 1;
                            if errors < 3 {
                                eprintln!("thread {t}: {e}");
                            }
                            let _ = s.execute("ROLLBACK", &mut Nothing);
                        }
                    }
                }
                (done, errors)
            })
        })
        .collect();
    for t in threads {
        let (done, errors) = t.join().unwrap();
        println!("{isolation}: {done} transactions, {errors} errors");
    }
}
