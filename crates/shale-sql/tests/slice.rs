//! The session's behaviour outside the text fixtures: every statement of the slice through
//! the API (sysbench's bulk insert at its real size), accounts in `mysql.user` across a
//! reopen, and random garbage that must never panic.

// Each test reads as one script of statements; splitting them would hide the sequence.
#![allow(clippy::too_many_lines)]

mod common;

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::Options;
use shale_fs::MemFs;
use shale_sql::{Instance, InstanceOptions, UserRecord, Value};
use shale_table::StoreOptions;

use common::TextSink;

fn run(session: &mut shale_sql::Session, sql: &str) -> TextSink {
    let mut sink = TextSink::default();
    if let Err(e) = session.execute(sql, &mut sink) {
        panic!("{sql}: {e}");
    }
    sink
}

#[test]
fn sysbench_slice_at_scale() {
    let instance = common::instance();
    let mut s = instance.session();
    s.set_connection_id(42);
    run(&mut s, "CREATE DATABASE sbtest");
    run(&mut s, "USE sbtest");
    run(
        &mut s,
        "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, \
         c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) \
         /*! ENGINE = innodb */",
    );
    // sysbench's prepare sends 10,000-row INSERTs of this shape.
    let c = "83868641912-28773972837-60736120486-75162659906-27563526494-20381887404-41576422241-\
             93426793964-56405065102-33518432330";
    let pad = "67847967377-48000963322-62604785301-91415491898-96926520291";
    let rows: Vec<String> = (0..10_000)
        .map(|i| format!("({}, '{c}', '{pad}')", i % 5000))
        .collect();
    let sink = run(
        &mut s,
        &format!("INSERT INTO sbtest1(k, c, pad) VALUES {}", rows.join(",")),
    );
    assert!(
        sink.out.starts_with("ok affected=10000 last_insert_id=1"),
        "{}",
        sink.out
    );
    run(&mut s, "CREATE INDEX k_1 ON sbtest1(k)");

    let point = s.prepare("SELECT c FROM sbtest1 WHERE id=?").unwrap();
    assert_eq!(point.params.len(), 1);
    assert_eq!(point.columns[0].length, 480);
    let statements = [
        ("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?", 2),
        ("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", 2),
        (
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            2,
        ),
        (
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            2,
        ),
        ("UPDATE sbtest1 SET k=k+1 WHERE id=?", 1),
        ("UPDATE sbtest1 SET c=? WHERE id=?", 2),
        ("DELETE FROM sbtest1 WHERE id=?", 1),
        ("INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)", 4),
        ("BEGIN", 0),
        ("COMMIT", 0),
    ];
    let mut ids = Vec::new();
    for (sql, n) in statements {
        let info = s.prepare(sql).unwrap();
        assert_eq!(info.params.len(), n, "{sql}");
        ids.push(info.id);
    }
    let [range, sum, order, distinct, upd_k, upd_c, del, ins, begin, commit] = ids[..] else {
        panic!("ten statements");
    };
    let mut exec = |id: u32, params: &[Value]| -> TextSink {
        let mut sink = TextSink::default();
        s.execute_prepared(id, params, &mut sink)
            .unwrap_or_else(|e| panic!("statement {id}: {e}"));
        sink
    };
    for round in 0..50i64 {
        let id = 1 + (round * 197) % 10_000;
        exec(begin, &[]);
        let r = exec(point.id, &[Value::Int(id)]);
        assert_eq!(r.rows, vec![vec![Value::Bytes(c.as_bytes().to_vec())]]);
        assert_eq!(
            exec(range, &[Value::Int(id), Value::Int(id + 99)])
                .rows
                .len(),
            { usize::try_from((id + 99).min(10_000) - id + 1).unwrap() }
        );
        assert_eq!(exec(sum, &[Value::Int(id), Value::Int(id)]).rows.len(), 1);
        assert!(
            exec(order, &[Value::Int(id), Value::Int(id + 99)])
                .rows
                .len()
                > 1
        );
        assert_eq!(
            exec(distinct, &[Value::Int(id), Value::Int(id + 99)])
                .rows
                .len(),
            1
        );
        assert!(exec(upd_k, &[Value::Int(id)]).out.contains("affected=1"));
        assert!(
            exec(upd_c, &[Value::Bytes(b"changed".to_vec()), Value::Int(id)])
                .out
                .contains("affected=1")
        );
        assert!(exec(del, &[Value::Int(id)]).out.contains("affected=1"));
        let params = [
            Value::Int(id),
            Value::Int(7),
            Value::Bytes(b"c".to_vec()),
            Value::Bytes(b"pad".to_vec()),
        ];
        assert!(exec(ins, &params).out.contains("affected=1"));
        exec(commit, &[]);
    }
    let check = run(&mut s, "SELECT COUNT(*), SUM(c = 'c') FROM sbtest1");
    assert_eq!(
        check.rows,
        vec![vec![
            Value::Int(10_000),
            Value::Decimal(shale_sql::Decimal::from_i128(50))
        ]]
    );
    let id = run(&mut s, "SELECT CONNECTION_ID()");
    assert_eq!(id.rows, vec![vec![Value::UInt(42)]]);
    run(&mut s, "DROP TABLE IF EXISTS sbtest1");
    // The prepared statements now name a missing table: an error, not a panic.
    let mut sink = TextSink::default();
    let e = s
        .execute_prepared(point.id, &[Value::Int(1)], &mut sink)
        .unwrap_err();
    assert_eq!(e.code, 1146);
}

#[test]
fn users_survive_reopen() {
    let fs = Arc::new(MemFs::new());
    let options = || common::options_on(&fs);
    let root = UserRecord {
        user: "root".into(),
        host: "%".into(),
        plugin: "mysql_native_password".into(),
        authentication_string: b"*81F5E21E35407D884A6CD4A731AEBFB6AF209E1B".to_vec(),
    };
    {
        let instance = Instance::open("/db", options()).unwrap();
        assert_eq!(instance.lookup_user("root", "localhost").unwrap(), None);
        instance.put_user(&root).unwrap();
        let mut changed = root.clone();
        changed.authentication_string = b"*new".to_vec();
        instance.put_user(&changed).unwrap();
        instance.put_user(&root).unwrap();
        instance.close().unwrap();
    }
    let instance = Instance::open("/db", options()).unwrap();
    // Host '%' matches any host.
    assert_eq!(
        instance.lookup_user("root", "127.0.0.1").unwrap(),
        Some(root.clone())
    );
    assert_eq!(instance.lookup_user("bob", "127.0.0.1").unwrap(), None);
    let mut s = instance.session();
    let sink = run(&mut s, "SHOW DATABASES");
    assert!(sink.out.contains("mysql"));
}

/// A `mysql.user` of four columns (before account locking) gains `account_locked`,
/// `failed_login_attempts` and `password_lock_time` at open (docs/format/privileges.md): its
/// rows still authenticate, read as unlocked, and take the new settings.
#[test]
fn an_account_table_from_before_account_locking_is_upgraded() {
    use shale_table::{Collation, ColumnDef, ColumnType, IndexDef, Store, TableDef, TxnOptions};
    let fs = Arc::new(MemFs::new());
    let store_options = || StoreOptions {
        engine: Options {
            file_system: fs.clone(),
            ..Options::default()
        },
        ..StoreOptions::default()
    };
    {
        let store = Store::open("/db", store_options()).unwrap();
        store.create_database("mysql").unwrap();
        let column = |name: &str, ty: ColumnType| ColumnDef {
            name: name.into(),
            ty,
            nullable: false,
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        };
        let text = |len| ColumnType::VarChar {
            len,
            collation: Collation::Utf8mb4Bin,
        };
        let def = store
            .create_table(TableDef {
                database: "mysql".into(),
                name: "user".into(),
                columns: vec![
                    column("Host", text(255)),
                    column("User", text(128)),
                    column("plugin", text(64)),
                    column(
                        "authentication_string",
                        ColumnType::Text {
                            collation: Collation::Binary,
                        },
                    ),
                ],
                primary_key: IndexDef {
                    name: "PRIMARY".into(),
                    columns: vec![0, 1],
                    unique: true,
                    index_id: 0,
                },
                indexes: Vec::new(),
                schema_version: 1,
                past_versions: Vec::new(),
            })
            .unwrap();
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        let bytes = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        txn.insert(
            &def,
            vec![
                bytes("%"),
                bytes("old"),
                bytes("mysql_native_password"),
                bytes(""),
            ],
        )
        .unwrap();
        txn.commit().unwrap();
        store.close().unwrap();
    }
    let instance = Instance::open(
        "/db",
        InstanceOptions {
            transaction_isolation: shale_sql::IsolationLevel::default(),
            store: store_options(),
        },
    )
    .unwrap();
    let old = instance.lookup_user("old", "127.0.0.1").unwrap().unwrap();
    assert_eq!(old.plugin, "mysql_native_password");
    assert!(instance.check_login("old", "%", "127.0.0.1", true).is_ok());
    let mut s = instance.session();
    let shown = run(&mut s, "SHOW CREATE USER old").out;
    assert!(
        shown.contains("ACCOUNT UNLOCK") && !shown.contains("FAILED_LOGIN"),
        "{shown}"
    );
    run(
        &mut s,
        "ALTER USER old ACCOUNT LOCK FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME 1",
    );
    assert_eq!(
        instance
            .check_login("old", "%", "127.0.0.1", true)
            .unwrap_err()
            .code,
        3118
    );
    let shown = run(&mut s, "SHOW CREATE USER old").out;
    assert!(
        shown.contains("ACCOUNT LOCK PASSWORD HISTORY")
            && shown.contains("FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME 1"),
        "{shown}"
    );
    // The account statements keep working on the upgraded table.
    run(&mut s, "CREATE USER new IDENTIFIED BY 'pw'");
    assert!(instance.check_login("new", "%", "localhost", true).is_ok());
}

/// Random garbage (SQL words, punctuation, quotes, bytes) must give an error or a result,
/// never a panic.
#[test]
fn garbage_never_panics() {
    let words = [
        "SELECT",
        "FROM",
        "WHERE",
        "INSERT",
        "INTO",
        "VALUES",
        "UPDATE",
        "SET",
        "DELETE",
        "CREATE",
        "TABLE",
        "DATABASE",
        "DROP",
        "INDEX",
        "ON",
        "ORDER",
        "BY",
        "GROUP",
        "HAVING",
        "LIMIT",
        "OFFSET",
        "DISTINCT",
        "AND",
        "OR",
        "NOT",
        "NULL",
        "IS",
        "IN",
        "BETWEEN",
        "LIKE",
        "COUNT(*)",
        "SUM",
        "MIN",
        "MAX",
        "AVG",
        "(",
        ")",
        ",",
        ";",
        "=",
        "<",
        ">",
        "<=>",
        "+",
        "-",
        "*",
        "/",
        "%",
        "DIV",
        "?",
        "'",
        "\"",
        "`",
        "/*!",
        "*/",
        "@@version",
        "@@",
        "t",
        "id",
        "k",
        "c",
        "d",
        "d.t",
        "1",
        "0",
        "-1",
        "2.5",
        "1e308",
        "''",
        "'x'",
        "x'4'",
        "9223372036854775808",
        "99999999999999999999999",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "USE",
        "SHOW",
        "TABLES",
        "DATABASES",
        "WARNINGS",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "IF",
        "EXISTS",
        "PRIMARY",
        "KEY",
        "INT",
        "CHAR(3)",
        "AUTO_INCREMENT",
        "DEFAULT",
        "EXPLAIN",
        "DESCRIBE",
        "\u{0}",
        "\u{fffd}",
        "é",
        "\\",
        "JOIN",
        "UNION",
    ];
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c CHAR(3), KEY (k))",
    );
    run(&mut s, "INSERT INTO t VALUES (1, 1, 'a'), (2, NULL, 'b')");
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..3000 {
        let n = rng.gen_range(1..14);
        let sql: Vec<&str> = (0..n)
            .map(|_| words[rng.gen_range(0..words.len())])
            .collect();
        let sql = sql.join(" ");
        let mut sink = TextSink::default();
        let _ = s.execute(&sql, &mut sink);
        if let Ok(info) = s.prepare(&sql) {
            let params: Vec<Value> = (0..info.params.len())
                .map(|i| match i % 4 {
                    0 => Value::Int(rng.gen()),
                    1 => Value::Bytes(vec![rng.gen(); 3]),
                    2 => Value::Double(rng.gen()),
                    _ => Value::Null,
                })
                .collect();
            let _ = s.execute_prepared(info.id, &params, &mut sink);
            s.close_prepared(info.id);
        }
    }
    // Structured near-misses of real statements.
    for sql in [
        "SELECT c FROM t WHERE id = 1e400",
        "SELECT c FROM t WHERE id = -9223372036854775808 - 1",
        "SELECT c FROM t WHERE id BETWEEN 'a' AND 'z'",
        "SELECT c FROM t WHERE k = 99999999999999999999",
        "SELECT c FROM t LIMIT 18446744073709551615",
        "SELECT c FROM t LIMIT -1",
        "SELECT SUM(SUM(id)) FROM t",
        "SELECT COUNT(*) FROM t GROUP BY COUNT(*)",
        "UPDATE t SET id = NULL",
        "INSERT INTO t VALUES (1)",
        "INSERT INTO t (id) SELECT 1",
        "SELECT * FROM t ORDER BY 0",
        "SELECT * FROM t ORDER BY 99",
        "SELECT 1 /*! unterminated",
        "SELECT '\u{0}'",
    ] {
        let mut sink = TextSink::default();
        let _ = s.execute(sql, &mut sink);
    }
    // The session still works.
    let sink = run(&mut s, "SELECT 1");
    assert_eq!(sink.rows, vec![vec![Value::Int(1)]]);
}

/// The server moves sessions between threads and shares the instance.
#[test]
fn sessions_are_send_and_the_instance_is_shared() {
    fn send<T: Send>() {}
    fn shared<T: Send + Sync>() {}
    send::<shale_sql::Session>();
    shared::<Instance>();
}

/// Autocommit updates of one hot row from two sessions all succeed (write conflicts are
/// retried inside the statement) and none is lost.
#[test]
fn concurrent_autocommit_updates_all_apply() {
    let instance = common::instance();
    let mut s = instance.session();
    run(
        &mut s,
        "CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY, v INT); \
         INSERT INTO t VALUES (1, 0)",
    );
    let per_thread = 300;
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let instance = Arc::clone(&instance);
            std::thread::spawn(move || {
                let mut s = instance.session();
                run(&mut s, "USE d");
                let update = s.prepare("UPDATE t SET v = v + 1 WHERE id = ?").unwrap();
                for _ in 0..per_thread {
                    let mut sink = TextSink::default();
                    s.execute_prepared(update.id, &[Value::Int(1)], &mut sink)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let sink = run(&mut s, "SELECT v FROM t WHERE id = 1");
    assert_eq!(sink.rows, vec![vec![Value::Int(2 * per_thread)]]);
}

/// The clock functions give the text forms `MySQL` prints (UTC).
#[test]
fn clock_functions() {
    let instance = common::instance();
    let mut s = instance.session();
    let sink = run(
        &mut s,
        "SELECT NOW(), CURRENT_TIMESTAMP, CURDATE(), UNIX_TIMESTAMP()",
    );
    let row = &sink.rows[0];
    // DATETIME and DATE values of the statement's start time (docs/sql.md), in UTC.
    let (Value::DateTime(now), Value::DateTime(ts), Value::DateTime(today)) =
        (&row[0], &row[1], &row[2])
    else {
        panic!("{row:?}")
    };
    assert_eq!(now, ts);
    assert_eq!(now.fsp(), Some(0));
    assert_eq!(today.fsp(), None);
    assert_eq!(today.to_string(), now.to_string()[..10]);
    let Value::Int(unix) = row[3] else {
        panic!("{row:?}")
    };
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        unix > 1_700_000_000 && unix.unsigned_abs().abs_diff(clock) < 60,
        "{unix}"
    );
}

/// Valid statements from the fixtures with words dropped, repeated, swapped or replaced:
/// near-misses reach binding and execution, where garbage stops at the parser.
#[test]
fn mutated_statements_never_panic() {
    let dir = format!("{}/testdata", env!("CARGO_MANIFEST_DIR"));
    let mut statements = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut prev = "";
        for line in text.lines() {
            if line == "----" && !prev.starts_with('@') && !prev.is_empty() {
                statements.push(prev.to_string());
            }
            prev = line;
        }
    }
    assert!(statements.len() > 100, "{}", statements.len());
    let fillers = [
        "NULL",
        "1",
        "-1",
        "'x'",
        "?",
        "*",
        "(",
        ")",
        ",",
        "id",
        "k",
        "c",
        "t",
        "AND",
        "=",
        "18446744073709551615",
        "1e308",
        "DEFAULT",
        "@@autocommit",
        "@v",
        "ORDER",
        "BY",
    ];
    let instance = common::instance();
    let mut s = instance.session();
    // An id no statement names: a mutated `KILL 1` must not end this session (a killed
    // connection fails every later statement, as MySQL closes it).
    s.set_connection_id(987_654_321);
    run(
        &mut s,
        "CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY, k INT, c CHAR(3), \
         KEY (k)); INSERT INTO t VALUES (1, 1, 'a'), (2, NULL, 'b')",
    );
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..4000 {
        let base = &statements[rng.gen_range(0..statements.len())];
        let mut words: Vec<String> = base.split_whitespace().map(str::to_string).collect();
        for _ in 0..rng.gen_range(1..4) {
            if words.is_empty() {
                break;
            }
            let i = rng.gen_range(0..words.len());
            match rng.gen_range(0..4) {
                0 => {
                    words.remove(i);
                }
                1 => {
                    let w = words[i].clone();
                    words.insert(i, w);
                }
                2 => {
                    let j = rng.gen_range(0..words.len());
                    words.swap(i, j);
                }
                _ => words[i] = fillers[rng.gen_range(0..fillers.len())].to_string(),
            }
        }
        let sql = words.join(" ");
        let mut sink = TextSink::default();
        let _ = s.execute(&sql, &mut sink);
        if let Ok(info) = s.prepare(&sql) {
            let params = vec![Value::Int(1); info.params.len()];
            let _ = s.execute_prepared(info.id, &params, &mut sink);
            s.close_prepared(info.id);
        }
        // Keep the scratch table around for the next mutation.
        if s.current_database() != Some("d") {
            let _ = s.execute("CREATE DATABASE IF NOT EXISTS d; USE d", &mut sink);
        }
        let _ = s.execute("ROLLBACK; SET autocommit = 1", &mut sink);
    }
    let sink = run(&mut s, "SELECT 1");
    assert_eq!(sink.rows, vec![vec![Value::Int(1)]]);
}

/// `COM_RESET_CONNECTION`'s reset: the transaction is rolled back and session state is gone,
/// the database stays.
#[test]
fn reset_rolls_back_and_forgets() {
    let instance = common::instance();
    let mut s = instance.session();
    run(
        &mut s,
        "CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY); SET @x = 1; \
         SET autocommit = 0; SET SESSION transaction_isolation = 'READ-COMMITTED'; \
         INSERT INTO t VALUES (1)",
    );
    let prepared = s.prepare("SELECT 1").unwrap();
    assert!(s.in_transaction());
    s.reset();
    assert!(!s.in_transaction());
    assert!(s.autocommit());
    assert_eq!(s.current_database(), Some("d"));
    let sink = run(
        &mut s,
        "SELECT COUNT(*), @x, @@transaction_isolation FROM t",
    );
    assert_eq!(
        sink.rows,
        vec![vec![
            Value::Int(0),
            Value::Null,
            Value::Bytes(b"REPEATABLE-READ".to_vec())
        ]]
    );
    let mut sink = TextSink::default();
    assert_eq!(
        s.execute_prepared(prepared.id, &[], &mut sink)
            .unwrap_err()
            .code,
        1243
    );
}

/// A data directory from before the CREATE TEMPORARY TABLES privilege has no grant of it
/// anywhere; at open every global or database CREATE grant gains it (MySQL's upgrade sets
/// `Create_tmp_table_priv` from `Create_priv`). Here the old state is made by revoking it
/// from every account.
#[test]
fn grants_from_before_create_temporary_tables_gain_it_with_create() {
    let fs = Arc::new(MemFs::new());
    let options = || common::options_on(&fs);
    let grants = |instance: &Arc<Instance>, account: &str| {
        run(
            &mut instance.session(),
            &format!("SHOW GRANTS FOR {account}"),
        )
        .out
    };
    {
        let instance = Instance::open("/db", options()).unwrap();
        let mut s = instance.session();
        run(&mut s, "CREATE DATABASE d");
        for account in ["g@localhost", "d@localhost", "n@localhost"] {
            run(&mut s, &format!("CREATE USER {account}"));
        }
        run(&mut s, "GRANT CREATE, SELECT ON *.* TO g@localhost");
        run(&mut s, "GRANT CREATE ON d.* TO d@localhost");
        run(&mut s, "GRANT SELECT ON *.* TO n@localhost");
        run(
            &mut s,
            "REVOKE CREATE TEMPORARY TABLES ON *.* FROM g@localhost",
        );
        drop(s);
        assert!(!grants(&instance, "g@localhost").contains("TEMPORARY"));
        assert!(!grants(&instance, "d@localhost").contains("TEMPORARY"));
        instance.close().unwrap();
    }
    let instance = Instance::open("/db", options()).unwrap();
    let g = grants(&instance, "g@localhost");
    assert!(
        g.contains("GRANT SELECT, CREATE, CREATE TEMPORARY TABLES ON *.*"),
        "{g}"
    );
    let d = grants(&instance, "d@localhost");
    assert!(
        d.contains("GRANT CREATE, CREATE TEMPORARY TABLES ON `d`.*"),
        "{d}"
    );
    assert!(!grants(&instance, "n@localhost").contains("TEMPORARY"));
}
