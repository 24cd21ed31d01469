//! mysqldump (MariaDB's `mariadb-dump`) of a Shale database through `shale serve`: the dump
//! must run without an error or warning, and its output must load back into a fresh Shale
//! database, and into MariaDB, with equal table contents. mysqldump reads
//! `information_schema`, SHOW TABLE STATUS, SHOW CREATE TABLE, SHOW TRIGGERS, LOCK TABLES and
//! many `/*!NNNNN ... */` SET statements, so this is the proof that they answer as clients
//! need. The database has views (a view of a view, a join, a column list, INVOKER), which the
//! dump writes as placeholders first and as `CREATE ... VIEW` at the end.
//!
//! Skips (prints SKIPPED) without `mariadb-dump`/`mariadb`, or without `mariadbd` for the
//! MariaDB half, except under CI=true, where .ci/run installs them and a missing one fails.

mod support;

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use support::{scratch, start_mariadb, start_shale, Server};

fn have(program: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "`{program}` is missing in CI; .ci/run must install it"
        );
        eprintln!("SKIPPED: `{program}` is not installed (apt-get install mariadb-client)");
    }
    found
}

/// `mariadb-dump` of database `db` with `options`: the dump text (fails the test on a
/// non-zero exit or anything on stderr).
fn dump(server: &Server, db: &str, options: &[&str]) -> String {
    let out = Command::new("mariadb-dump")
        .args([
            "--no-defaults",
            "--protocol=TCP",
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
        ])
        .args(options)
        .arg(db)
        .output()
        .expect("run mariadb-dump");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "mariadb-dump {options:?} failed ({}):\n{stderr}",
        out.status
    );
    String::from_utf8(out.stdout).expect("the dump is UTF-8")
}

/// Feeds `script` to the mariadb client connected to `db` (fails the test on an error).
fn load(server: &Server, db: &str, script: &str) {
    let mut child = Command::new("mariadb")
        .args([
            "--no-defaults",
            "--protocol=TCP",
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            db,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mariadb");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "loading the dump into {} failed:\n{}",
        server.name,
        String::from_utf8_lossy(&out.stderr)
    );
}

const SCHEMA: &str = "\
    CREATE TABLE items (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40) NOT NULL, \
      price DECIMAL(10,2), added DATETIME, note TEXT, UNIQUE KEY uname (name), KEY kprice (price)); \
    CREATE TABLE tags (item_id INT NOT NULL, tag VARCHAR(20) NOT NULL, weight DOUBLE, \
      PRIMARY KEY (item_id, tag)); \
    CREATE TABLE log (at DATE, msg VARCHAR(100), raw VARBINARY(16), took TIME(1), \
      kind ENUM('info', 'warn', 'Error'), flags SET('a', 'b', 'c')); \
    CREATE VIEW priced AS SELECT name, price FROM items WHERE price IS NOT NULL; \
    CREATE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW cheap (label) AS \
      SELECT UPPER(name) FROM priced WHERE price < 5; \
    CREATE VIEW tagged AS SELECT i.name, g.tag FROM items AS i JOIN tags AS g ON g.item_id = i.id;";

const ROWS: &str = "\
    INSERT INTO items (name, price, added, note) VALUES \
      ('apple', 0.50, '2024-01-02 03:04:05', 'red'), \
      ('pear', 1.25, NULL, 'quote '' and backslash \\\\ and tab \\t'), \
      ('fig', NULL, '2023-12-31 23:59:59', NULL), \
      ('crème brûlée', 9.99, '2024-02-29 12:00:00', 'ünïcödé ✓'); \
    INSERT INTO tags VALUES (1, 'fruit', 1.5), (1, 'red', NULL), (2, 'fruit', -0.25); \
    INSERT INTO log VALUES ('2024-05-06', 'first', 'ab', '-1 02:03:04.5', 'warn', 'c,a'), \
      (NULL, NULL, NULL, NULL, NULL, NULL), ('2024-05-07', 'x', '', '838:59:59', 'error', '');";

/// Every table's rows, sorted, as the mariadb client prints them.
fn contents(server: &Server, db: &str) -> String {
    let mut out = String::new();
    for (table, order) in [
        ("items", "id"),
        ("tags", "item_id, tag"),
        ("log", "msg, at"),
        ("priced", "name"),
        ("cheap", "label"),
        ("tagged", "name, tag"),
    ] {
        let rows = server
            .query(Some(db), &format!("SELECT * FROM {table} ORDER BY {order}"))
            .unwrap_or_else(|e| panic!("{}: {e}", server.name));
        let _ = write!(out, "{table}:\n{rows}");
    }
    out
}

#[test]
fn mysqldump_of_a_shale_database_loads_back_into_shale_and_mariadb() {
    if !have("mariadb-dump") || !have("mariadb") {
        return;
    }
    let dir = scratch("dump");
    let shale = start_shale(&dir);
    shale.query(None, "CREATE DATABASE shop").unwrap();
    shale.query(Some("shop"), SCHEMA).unwrap();
    shale.query(Some("shop"), ROWS).unwrap();
    let original = contents(&shale, "shop");
    assert!(original.contains("crème brûlée"), "{original}");

    // The default options (--opt: LOCK TABLES, extended inserts, /*!40101 SET ...*/ forms).
    let text = dump(&shale, "shop", &[]);
    assert!(text.contains("CREATE TABLE `items`"), "{text}");
    assert!(text.contains("VIEW `cheap`"), "{text}");
    assert!(text.contains("INSERT INTO `items` VALUES"), "{text}");
    assert!(text.contains("-- Dump completed"), "{text}");
    // And the consistent form a DBA uses on a live server.
    let consistent = dump(&shale, "shop", &["--single-transaction"]);
    assert!(
        consistent.contains("INSERT INTO `tags` VALUES"),
        "{consistent}"
    );

    shale.query(None, "CREATE DATABASE copy").unwrap();
    load(&shale, "copy", &text);
    assert_eq!(contents(&shale, "copy"), original);
    shale.query(None, "CREATE DATABASE copy2").unwrap();
    load(&shale, "copy2", &consistent);
    assert_eq!(contents(&shale, "copy2"), original);
    // The restored table keeps its indexes and AUTO_INCREMENT.
    shale
        .query(Some("copy"), "INSERT INTO items (name) VALUES ('kiwi')")
        .unwrap();
    assert_eq!(
        shale
            .query(Some("copy"), "SELECT id FROM items WHERE name = 'kiwi'")
            .unwrap(),
        "5\n"
    );
    let dup = shale.query(Some("copy"), "INSERT INTO items (name) VALUES ('fig')");
    assert!(dup.is_err_and(|e| e.contains("1062")));

    if !have("mariadbd") {
        return;
    }
    let maria = start_mariadb(&dir.join("maria"));
    maria.query(None, "CREATE DATABASE shop").unwrap();
    load(&maria, "shop", &text);
    assert_eq!(contents(&maria, "shop"), original);
}
