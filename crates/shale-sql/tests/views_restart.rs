//! Views through SQL across a restart: their definitions, column lists, options and the
//! database their names resolve in come back from the catalog after the instance is closed
//! and reopened.

mod common;

use std::sync::Arc;

use shale_engine::Options;
use shale_fs::MemFs;
use shale_sql::{Instance, InstanceOptions};
use shale_table::StoreOptions;

use common::TextSink;

fn run(session: &mut shale_sql::Session, sql: &str) -> String {
    let mut sink = TextSink::default();
    if let Err(e) = session.execute(sql, &mut sink) {
        panic!("{sql}: {e}");
    }
    sink.out
}

#[test]
fn views_survive_a_restart() {
    let fs = Arc::new(MemFs::new());
    let options = || InstanceOptions {
        transaction_isolation: shale_sql::IsolationLevel::default(),
        store: StoreOptions {
            engine: Options {
                file_system: fs.clone(),
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    };
    let before;
    {
        let instance = Instance::open("/db", options()).unwrap();
        let mut s = instance.session();
        run(&mut s, "CREATE DATABASE app");
        run(&mut s, "USE app");
        run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, qty INT)");
        run(&mut s, "INSERT INTO t VALUES (1, 5), (2, 0), (3, 7)");
        run(
            &mut s,
            "CREATE SQL SECURITY INVOKER VIEW stocked (item, n) AS SELECT id, qty FROM t WHERE qty > 0",
        );
        run(
            &mut s,
            "CREATE VIEW total AS SELECT SUM(n) AS s FROM stocked",
        );
        run(&mut s, "CREATE VIEW dropped AS SELECT 1 AS one");
        run(&mut s, "DROP VIEW dropped");
        before = run(&mut s, "SHOW CREATE VIEW stocked");
        drop(s);
        instance.close().unwrap();
    }
    let instance = Instance::open("/db", options()).unwrap();
    let mut s = instance.session();
    // Names in the views resolve in `app`, whatever the session's database is.
    run(&mut s, "CREATE DATABASE other");
    run(&mut s, "USE other");
    assert_eq!(run(&mut s, "SHOW CREATE VIEW app.stocked"), before);
    assert_eq!(
        run(&mut s, "SELECT item, n FROM app.stocked ORDER BY item"),
        "item\tn\n1\t5\n3\t7\nend\n"
    );
    assert_eq!(run(&mut s, "SELECT s FROM app.total"), "s\n12\nend\n");
    assert_eq!(
        run(&mut s, "SHOW FULL TABLES FROM app"),
        "Tables_in_app\tTable_type\nstocked\tVIEW\nt\tBASE TABLE\ntotal\tVIEW\nend\n"
    );
    let mut sink = TextSink::default();
    let e = s
        .execute("SELECT * FROM app.dropped", &mut sink)
        .unwrap_err();
    assert_eq!(e.code, 1146);
}
