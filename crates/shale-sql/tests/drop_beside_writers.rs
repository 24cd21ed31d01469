//! DROP TABLE and TRUNCATE TABLE beside an open transaction that wrote the table, through two
//! sessions: the DDL waits until the transaction ends (as `MySQL`'s metadata lock makes it
//! wait), fails with 1205 when that takes longer than the wait timeout, and a statement that
//! comes after the DDL finds the table gone (1146) or empty.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{fail, run};
use shale_engine::Options;
use shale_fs::MemFs;
use shale_sql::{Instance, InstanceOptions, Session, Value};
use shale_table::StoreOptions;

/// An instance whose DDL waits at most `ddl_wait` for writers (`lock_wait_timeout`).
fn instance(ddl_wait: Option<Duration>) -> Arc<Instance> {
    Instance::open(
        "/db",
        InstanceOptions {
            transaction_isolation: shale_sql::IsolationLevel::default(),
            store: StoreOptions {
                engine: Options {
                    file_system: Arc::new(MemFs::new()),
                    ..Options::default()
                },
                ddl_wait_timeout: ddl_wait,
                ..StoreOptions::default()
            },
        },
    )
    .unwrap()
}

/// `d.t (id INT PRIMARY KEY, k INT, v INT, KEY (k))` with 100 rows; a session in `d`.
fn setup(instance: &Arc<Instance>) -> Session {
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, v INT, KEY k (k))",
    );
    let values: Vec<String> = (0..100).map(|i| format!("({i}, {}, 0)", i * 10)).collect();
    run(
        &mut s,
        &format!("INSERT INTO t VALUES {}", values.join(", ")),
    );
    s
}

fn check_ok(s: &mut Session) {
    let check = run(s, "CHECK TABLE t");
    assert_eq!(
        check.rows[0][3],
        Value::Bytes(b"OK".to_vec()),
        "{:?}",
        check.rows
    );
}

#[test]
fn truncate_waits_for_the_transaction_that_updated_the_table() {
    let instance = instance(None);
    let mut a = setup(&instance);
    run(&mut a, "BEGIN");
    run(&mut a, "UPDATE t SET v = 5 WHERE id = 1");
    let truncate = {
        let instance = instance.clone();
        std::thread::spawn(move || {
            let mut b = instance.session();
            run(&mut b, "USE d");
            run(&mut b, "TRUNCATE TABLE t");
        })
    };
    std::thread::sleep(Duration::from_millis(150));
    assert!(!truncate.is_finished(), "TRUNCATE did not wait");
    run(&mut a, "COMMIT");
    truncate.join().unwrap();
    let count = run(&mut a, "SELECT COUNT(*) FROM t");
    assert_eq!(count.rows, vec![vec![Value::Int(0)]]);
    check_ok(&mut a);
    // Statements after it work on the empty table.
    run(&mut a, "INSERT INTO t VALUES (1, 10, 1)");
    check_ok(&mut a);
}

#[test]
fn drop_waits_for_the_transaction_then_later_statements_find_no_table() {
    let instance = instance(None);
    let mut a = setup(&instance);
    run(&mut a, "BEGIN");
    run(&mut a, "UPDATE t SET v = 5 WHERE id = 1");
    let drop_table = {
        let instance = instance.clone();
        std::thread::spawn(move || {
            let mut b = instance.session();
            run(&mut b, "USE d");
            run(&mut b, "DROP TABLE t");
        })
    };
    std::thread::sleep(Duration::from_millis(150));
    assert!(!drop_table.is_finished(), "DROP TABLE did not wait");
    // The transaction that holds the DROP back goes on using the table.
    run(&mut a, "UPDATE t SET v = 6 WHERE id = 2");
    run(&mut a, "COMMIT");
    drop_table.join().unwrap();
    let error = fail(&mut a, "INSERT INTO t VALUES (1000, 1, 1)");
    assert_eq!(error.code, 1146, "{error}");
    assert_eq!(error.message, "Table 'd.t' doesn't exist");
    run(&mut a, "CREATE TABLE t (id INT PRIMARY KEY)");
    let count = run(&mut a, "SELECT COUNT(*) FROM t");
    assert_eq!(count.rows, vec![vec![Value::Int(0)]]);
}

#[test]
fn drop_and_truncate_fail_with_1205_after_the_wait_timeout() {
    let instance = instance(Some(Duration::from_millis(200)));
    let mut a = setup(&instance);
    run(&mut a, "BEGIN");
    run(&mut a, "UPDATE t SET v = 5 WHERE id = 1");
    let mut b = instance.session();
    run(&mut b, "USE d");
    for sql in ["TRUNCATE TABLE t", "DROP TABLE t"] {
        let error = fail(&mut b, sql);
        assert_eq!(error.code, 1205, "{sql}: {error}");
        assert_eq!(
            error.message,
            "Lock wait timeout exceeded; try restarting transaction"
        );
    }
    run(&mut a, "COMMIT");
    let v = run(&mut b, "SELECT v FROM t WHERE id = 1");
    assert_eq!(v.rows, vec![vec![Value::Int(5)]]);
    let count = run(&mut b, "SELECT COUNT(*) FROM t");
    assert_eq!(count.rows, vec![vec![Value::Int(100)]]);
    check_ok(&mut b);
    run(&mut b, "DROP TABLE t");
}
