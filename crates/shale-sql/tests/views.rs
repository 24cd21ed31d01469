//! Views through SQL outside the text fixtures: across a restart (their definitions, column
//! lists, options and the database their names resolve in come back from the catalog after
//! the instance is closed and reopened), and views nested as deep as the limit allows.

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

/// A chain of views each reading the one before binds up to `MAX_VIEW_NESTING` levels on
/// a test thread's stack; one more level is a clear error, not a stack overflow.
#[test]
fn nested_views_stop_at_the_limit() {
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE app");
    run(&mut s, "USE app");
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY)");
    run(&mut s, "INSERT INTO t VALUES (1), (2)");
    run(&mut s, "CREATE VIEW v0 AS SELECT id FROM t");
    // v0 reads t; v63 is the 64th view of the chain.
    for i in 1..64 {
        run(
            &mut s,
            &format!("CREATE VIEW v{i} AS SELECT id + 1 AS id FROM v{}", i - 1),
        );
    }
    assert_eq!(run(&mut s, "SELECT MAX(id) FROM v63"), "MAX(id)\n65\nend\n");
    let mut sink = TextSink::default();
    let e = s
        .execute("CREATE VIEW v64 AS SELECT id FROM v63", &mut sink)
        .unwrap_err();
    assert_eq!(e.code, 1235, "{e}");
    // A chain that grew past the limit by replacing its innermost view fails when read.
    run(&mut s, "CREATE VIEW base AS SELECT id FROM t");
    run(&mut s, "CREATE OR REPLACE VIEW v0 AS SELECT id FROM base");
    let e = s.execute("SELECT * FROM v63", &mut sink).unwrap_err();
    assert_eq!(e.code, 1235, "{e}");
    assert_eq!(run(&mut s, "SELECT MAX(id) FROM v62"), "MAX(id)\n64\nend\n");
}

/// Random view DDL over views and tables that come and go: every statement gives a result or
/// one of the expected errors, never a panic, and the views that remain stay readable or
/// report 1356.
#[test]
fn random_view_ddl_never_panics() {
    for seed in 0..8 {
        random_view_ddl(seed);
    }
}

fn random_view_ddl(seed: u64) {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE app");
    run(&mut s, "USE app");
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, a INT)");
    run(&mut s, "INSERT INTO t VALUES (1, 10), (2, 20), (3, NULL)");
    let selects = [
        "SELECT id, a FROM t",
        "SELECT id, a FROM {v}",
        "SELECT id, a + 1 AS a FROM {v} WHERE id > 1",
        "SELECT x.id, y.a FROM {v} AS x JOIN t AS y ON x.id = y.id",
        "SELECT id, COUNT(*) AS a FROM {v} GROUP BY id",
        "SELECT id, a FROM t WHERE id IN (SELECT id FROM {v})",
        "SELECT id, a FROM {v} UNION SELECT id, a FROM t",
        "SELECT * FROM {v}",
        "SELECT id FROM {v}",
    ];
    let mut rng = SmallRng::seed_from_u64(seed);
    let view = |rng: &mut SmallRng| format!("v{}", rng.gen_range(0..6));
    let (mut created, mut read) = (0, 0);
    for _ in 0..600 {
        let sql = match rng.gen_range(0..20) {
            0..=9 => {
                // Views over t are the roots every other view needs.
                let select = if rng.gen_bool(0.4) {
                    selects[0].to_string()
                } else {
                    selects[rng.gen_range(1..selects.len())].replace("{v}", &view(&mut rng))
                };
                format!("CREATE OR REPLACE VIEW {} AS {select}", view(&mut rng))
            }
            10 | 11 => format!("DROP VIEW IF EXISTS {}", view(&mut rng)),
            12 => "DROP TABLE IF EXISTS t".to_string(),
            13 | 14 => "CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, a INT)".to_string(),
            15 => format!("DESCRIBE {}", view(&mut rng)),
            16 => "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS".to_string(),
            _ => format!("SELECT * FROM {} ORDER BY 1", view(&mut rng)),
        };
        let mut sink = TextSink::default();
        match s.execute(&sql, &mut sink) {
            Ok(()) if sql.starts_with("CREATE OR") => created += 1,
            Ok(()) if sql.starts_with("SELECT *") => read += 1,
            Ok(()) => {}
            Err(e) => assert!(
                [1050, 1054, 1060, 1146, 1222, 1353, 1356, 1462].contains(&e.code),
                "seed {seed}: {sql}: {e}"
            ),
        }
    }
    // The run did exercise views, not only errors.
    assert!(
        created > 40 && read > 10,
        "seed {seed}: created {created}, read {read}"
    );
}
