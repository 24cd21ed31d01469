//! Metadata locks through sessions (shale-table's `metadata_lock.rs`): DDL waits for the open
//! transactions that read a table, not only for its writers; statements that come after a
//! waiting DDL queue behind it; the wait ends at `lock_wait_timeout` (1205) or KILL QUERY
//! (1317) and shows as "Waiting for table metadata lock" in SHOW PROCESSLIST.
//!
//! No test depends on timing: a wait is observed through SHOW PROCESSLIST before the test
//! goes on, and the few `is_finished` checks only assert that something did *not* happen.

mod common;

use std::sync::Arc;

use common::sessions::{count, impatient, session, spawn, wait_for_state, WAITING};
use common::{fail, run, TextSink};
use shale_sql::{Instance, Session, Value};

/// `d.t` and `d.u`, 3 rows each; a session in `d`.
fn setup(instance: &Arc<Instance>) -> Session {
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    for table in ["t", "u"] {
        run(
            &mut s,
            &format!("CREATE TABLE {table} (id INT PRIMARY KEY, v INT)"),
        );
        run(
            &mut s,
            &format!("INSERT INTO {table} VALUES (1, 10), (2, 20), (3, 30)"),
        );
    }
    s
}

#[test]
fn drop_waits_for_an_open_reader_which_keeps_seeing_the_table_until_its_commit() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    let (ddl, ddl_id) = session(&instance);
    let drop_table = spawn(ddl, &["DROP TABLE t"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, ddl_id, WAITING);
    // REPEATABLE READ: the transaction reads the table it read before, whole.
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    let rows = run(&mut reader, "SELECT v FROM t WHERE id = 2");
    assert_eq!(rows.rows, vec![vec![Value::Int(20)]]);
    assert!(
        !drop_table.is_finished(),
        "DROP did not wait for the reader"
    );
    run(&mut reader, "COMMIT");
    drop_table.join().unwrap().unwrap();
    let error = fail(&mut reader, "SELECT * FROM t");
    assert_eq!(error.code, 1146, "{error}");
}

#[test]
fn lock_wait_timeout_ends_the_ddl_wait_with_1205_and_leaves_the_table() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    let (mut ddl, _) = session(&instance);
    run(&mut ddl, "SET SESSION lock_wait_timeout = 1");
    for sql in [
        "DROP TABLE t",
        "TRUNCATE TABLE t",
        "RENAME TABLE t TO t2",
        "ALTER TABLE t ADD COLUMN w INT",
        "ALTER TABLE t MODIFY v BIGINT",
    ] {
        let error = fail(&mut ddl, sql);
        assert_eq!(error.code, 1205, "{sql}: {error}");
        assert_eq!(
            error.message, "Lock wait timeout exceeded; try restarting transaction",
            "{sql}"
        );
    }
    // Nothing changed, and other sessions were never held once the DDL gave up.
    assert_eq!(count(&mut ddl, "t"), Value::Int(3));
    run(&mut reader, "COMMIT");
    run(&mut ddl, "DROP TABLE t");
}

#[test]
fn a_select_behind_a_waiting_drop_waits_and_then_finds_no_table() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    let (ddl, ddl_id) = session(&instance);
    let drop_table = spawn(ddl, &["DROP TABLE t"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, ddl_id, WAITING);
    let (late, late_id) = session(&instance);
    let select = spawn(late, &["SELECT COUNT(*) FROM t"]);
    wait_for_state(&mut observer, late_id, WAITING);
    // Another table is not held up.
    assert_eq!(count(&mut observer, "u"), Value::Int(3));
    run(&mut reader, "COMMIT");
    drop_table.join().unwrap().unwrap();
    let error = select.join().unwrap().unwrap_err();
    assert_eq!(error.code, 1146, "{error}");
}

#[test]
fn kill_query_ends_a_waiting_ddl_and_the_queued_statements_go_on() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    let (ddl, ddl_id) = session(&instance);
    let truncate = spawn(ddl, &["TRUNCATE TABLE t"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, ddl_id, WAITING);
    let (late, late_id) = session(&instance);
    let insert = spawn(late, &["INSERT INTO t VALUES (4, 40)"]);
    wait_for_state(&mut observer, late_id, WAITING);
    run(&mut observer, &format!("KILL QUERY {ddl_id}"));
    let error = truncate.join().unwrap().unwrap_err();
    assert_eq!(error.code, 1317, "{error}");
    insert.join().unwrap().unwrap();
    run(&mut reader, "COMMIT");
    assert_eq!(
        count(&mut reader, "t"),
        Value::Int(4),
        "TRUNCATE did not run"
    );
}

#[test]
fn two_ddls_on_a_held_table_both_finish_once_the_reader_ends() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    let (first, first_id) = session(&instance);
    let alter = spawn(first, &["ALTER TABLE t ADD COLUMN w INT"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, first_id, WAITING);
    let (second, _) = session(&instance);
    let drop_table = spawn(second, &["DROP TABLE t"]);
    run(&mut reader, "COMMIT");
    alter.join().unwrap().unwrap();
    drop_table.join().unwrap().unwrap();
    let error = fail(&mut reader, "SELECT * FROM t");
    assert_eq!(error.code, 1146, "{error}");
}

#[test]
fn a_transaction_that_would_wait_for_a_ddl_waiting_for_it_is_the_deadlock_victim() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    // RENAME takes u, then waits for t, which the reader holds.
    let (ddl, ddl_id) = session(&instance);
    let rename = spawn(ddl, &["RENAME TABLE u TO u2, t TO t2"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, ddl_id, WAITING);
    let error = fail(&mut reader, "SELECT COUNT(*) FROM u");
    assert_eq!(error.code, 1213, "{error}");
    // The deadlock rolled the transaction back: its lock on t went with it.
    rename.join().unwrap().unwrap();
    assert_eq!(count(&mut reader, "t2"), Value::Int(3));
    assert_eq!(count(&mut reader, "u2"), Value::Int(3));
}

#[test]
fn a_select_queued_behind_a_rewriting_alter_is_bound_again_and_reads_the_new_table() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
    // The rewrite copies the rows, then waits at its switch for the reader.
    let (ddl, ddl_id) = session(&instance);
    let alter = spawn(ddl, &["ALTER TABLE t MODIFY v VARCHAR(10) NOT NULL"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, ddl_id, WAITING);
    let (autocommit, autocommit_id) = session(&instance);
    let select = spawn(autocommit, &["SELECT v FROM t WHERE id = 2"]);
    wait_for_state(&mut observer, autocommit_id, WAITING);
    // A transaction's first read, prepared: bound again too, its snapshot taken after the wait.
    let (mut in_transaction, in_transaction_id) = session(&instance);
    let prepared = in_transaction
        .prepare("SELECT COUNT(*), MAX(v) FROM t")
        .unwrap()
        .id;
    let first_read = std::thread::spawn(move || {
        run(&mut in_transaction, "BEGIN");
        let mut sink = TextSink::default();
        in_transaction
            .execute_prepared(prepared, &[], &mut sink)
            .map(|()| sink)
    });
    wait_for_state(&mut observer, in_transaction_id, WAITING);
    run(&mut reader, "COMMIT");
    alter.join().unwrap().unwrap();
    let rows = select.join().unwrap().unwrap().rows;
    assert_eq!(rows, vec![vec![Value::Bytes(b"20".to_vec())]]);
    let rows = first_read.join().unwrap().unwrap().rows;
    assert_eq!(
        rows,
        vec![vec![Value::Int(3), Value::Bytes(b"30".to_vec())]]
    );
}

#[test]
fn a_repeatable_read_snapshot_older_than_a_rewrite_still_gets_1412() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "u"), Value::Int(3));
    let (mut ddl, _) = session(&instance);
    run(&mut ddl, "ALTER TABLE t MODIFY v VARCHAR(10) NOT NULL");
    // InnoDB: the transaction's read view predates the rebuilt table.
    let error = fail(&mut reader, "SELECT COUNT(*) FROM t");
    assert_eq!(error.code, 1412, "{error}");
    run(&mut reader, "COMMIT");
    assert_eq!(count(&mut reader, "t"), Value::Int(3));
}

#[test]
fn lock_tables_write_keeps_other_sessions_from_reading_and_writing_until_unlock() {
    let instance = common::instance();
    let mut owner = setup(&instance);
    run(&mut owner, "LOCK TABLES t WRITE");
    // The owner uses its table, DDL included, without waiting for its own lock.
    run(&mut owner, "INSERT INTO t VALUES (4, 40)");
    assert_eq!(count(&mut owner, "t"), Value::Int(4));
    run(&mut owner, "ALTER TABLE t ADD COLUMN w INT");
    let mut other = impatient(&instance);
    for sql in [
        "SELECT COUNT(*) FROM t",
        "INSERT INTO t VALUES (5, 50, 0)",
        "DROP TABLE t",
        "LOCK TABLES t READ",
    ] {
        let error = fail(&mut other, sql);
        assert_eq!(error.code, 1205, "{sql}: {error}");
    }
    assert_eq!(
        count(&mut other, "u"),
        Value::Int(3),
        "another table is free"
    );
    let (reader, reader_id) = session(&instance);
    let select = spawn(reader, &["SELECT COUNT(*) FROM t"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, reader_id, WAITING);
    run(&mut owner, "UNLOCK TABLES");
    assert_eq!(
        select.join().unwrap().unwrap().rows,
        vec![vec![Value::Int(4)]]
    );
    run(&mut other, "DROP TABLE t");
}

#[test]
fn under_lock_tables_other_tables_are_1100_and_a_rewrite_keeps_the_lock() {
    let instance = common::instance();
    let mut owner = setup(&instance);
    run(&mut owner, "LOCK TABLES t WRITE");
    for sql in ["SELECT COUNT(*) FROM u", "INSERT INTO u VALUES (4, 40)"] {
        let error = fail(&mut owner, sql);
        assert_eq!(error.code, 1100, "{sql}: {error}");
        assert_eq!(error.message, "Table 'u' was not locked with LOCK TABLES");
    }
    // A rewrite gives t new ids: the lock moves to them.
    run(&mut owner, "ALTER TABLE t MODIFY v VARCHAR(10)");
    run(&mut owner, "INSERT INTO t VALUES (4, 'x')");
    let mut other = impatient(&instance);
    let error = fail(&mut other, "SELECT COUNT(*) FROM t");
    assert_eq!(
        error.code, 1205,
        "the rewritten table is still locked: {error}"
    );
    run(&mut owner, "UNLOCK TABLES");
    assert_eq!(count(&mut other, "t"), Value::Int(4));
    assert_eq!(count(&mut owner, "u"), Value::Int(3));
}

#[test]
fn lock_tables_read_keeps_writers_out_and_lets_readers_in() {
    let instance = common::instance();
    let mut owner = setup(&instance);
    run(&mut owner, "LOCK TABLES t READ, u WRITE");
    let error = fail(&mut owner, "INSERT INTO t VALUES (4, 40)");
    assert_eq!(error.code, 1099, "{error}");
    assert_eq!(
        error.message,
        "Table 't' was locked with a READ lock and can't be updated"
    );
    run(&mut owner, "INSERT INTO u VALUES (4, 40)");
    let (mut other, _) = session(&instance);
    assert_eq!(count(&mut other, "t"), Value::Int(3), "readers go on");
    let (writer, writer_id) = session(&instance);
    let insert = spawn(writer, &["INSERT INTO t VALUES (4, 40)"]);
    wait_for_state(&mut other, writer_id, WAITING);
    // A second session may hold the table READ too.
    run(&mut other, "LOCK TABLES t READ");
    run(&mut owner, "UNLOCK TABLES");
    assert!(!insert.is_finished(), "the writer went past a READ lock");
    run(&mut other, "UNLOCK TABLES");
    insert.join().unwrap().unwrap();
    assert_eq!(count(&mut owner, "t"), Value::Int(4));
    assert_eq!(count(&mut owner, "u"), Value::Int(4));
}

#[test]
fn lock_tables_waits_for_the_transactions_that_use_the_table() {
    let instance = common::instance();
    let mut user = setup(&instance);
    run(&mut user, "BEGIN");
    assert_eq!(count(&mut user, "t"), Value::Int(3));
    let mut locker = impatient(&instance);
    // A reader holds WRITE off, not READ.
    let error = fail(&mut locker, "LOCK TABLES t WRITE");
    assert_eq!(error.code, 1205, "{error}");
    run(&mut locker, "LOCK TABLES t READ");
    run(&mut locker, "UNLOCK TABLES");
    // A writer holds READ off too.
    run(&mut user, "INSERT INTO t VALUES (4, 40)");
    let error = fail(&mut locker, "LOCK TABLES t READ");
    assert_eq!(error.code, 1205, "{error}");
    run(&mut user, "COMMIT");
    run(&mut locker, "LOCK TABLES t READ");
    // START TRANSACTION releases the locks, as in MySQL.
    run(&mut locker, "START TRANSACTION");
    run(&mut user, "INSERT INTO t VALUES (5, 50)");
    run(&mut locker, "COMMIT");
}

#[test]
fn lock_tables_on_a_view_locks_its_base_tables_and_a_closed_session_releases_them() {
    let instance = common::instance();
    let mut owner = setup(&instance);
    run(
        &mut owner,
        "CREATE VIEW v AS SELECT t.id, u.v FROM t JOIN u USING (id)",
    );
    run(&mut owner, "CREATE VIEW w AS SELECT * FROM v");
    run(&mut owner, "LOCK TABLES w WRITE");
    let mut other = impatient(&instance);
    for sql in ["SELECT COUNT(*) FROM t", "SELECT COUNT(*) FROM u"] {
        let error = fail(&mut other, sql);
        assert_eq!(error.code, 1205, "{sql}: {error}");
    }
    let error = fail(&mut owner, "LOCK TABLES missing READ");
    assert_eq!(error.code, 1146, "{error}");
    // The failed LOCK TABLES released the earlier locks, as MySQL's does.
    assert_eq!(count(&mut other, "t"), Value::Int(3));
    run(&mut owner, "LOCK TABLES t WRITE");
    drop(owner);
    assert_eq!(count(&mut other, "t"), Value::Int(3));
}

#[test]
fn a_running_bulk_load_holds_its_table_like_a_writer() {
    let instance = common::instance();
    let mut loader = setup(&instance);
    run(&mut loader, "SET SESSION shale_bulk_load = 1");
    run(&mut loader, "INSERT INTO t VALUES (10, 100), (11, 110)");
    let mut other = impatient(&instance);
    for sql in ["DROP TABLE t", "TRUNCATE TABLE t", "LOCK TABLES t READ"] {
        let error = fail(&mut other, sql);
        assert_eq!(error.code, 1205, "{sql}: {error}");
    }
    assert_eq!(count(&mut other, "t"), Value::Int(3), "readers go on");
    run(&mut loader, "SET SESSION shale_bulk_load = 0");
    assert_eq!(count(&mut other, "t"), Value::Int(5));
    run(&mut other, "DROP TABLE t");
}

fn text(value: &str) -> Value {
    Value::Bytes(value.as_bytes().to_vec())
}

#[test]
fn under_lock_tables_ddl_may_change_only_a_table_locked_write() {
    let instance = common::instance();
    let mut owner = setup(&instance);
    for table in ["r", "w"] {
        run(
            &mut owner,
            &format!("CREATE TABLE {table} (id INT PRIMARY KEY, v INT)"),
        );
    }
    run(&mut owner, "LOCK TABLES t WRITE, r READ, w WRITE");
    for (sql, code, table) in [
        ("ALTER TABLE u ADD COLUMN w INT", 1100, "u"),
        ("ALTER TABLE r ADD COLUMN w INT", 1099, "r"),
        ("ALTER TABLE r ADD INDEX k (v)", 1099, "r"),
        ("TRUNCATE TABLE u", 1100, "u"),
        ("TRUNCATE TABLE r", 1099, "r"),
        ("CREATE INDEX k ON u (v)", 1100, "u"),
        ("CREATE INDEX k ON r (v)", 1099, "r"),
        ("DROP INDEX k ON r", 1099, "r"),
        ("DROP TABLE u", 1100, "u"),
        ("DROP TABLE t, r", 1099, "r"),
        ("DROP TABLE IF EXISTS missing", 1100, "missing"),
        ("RENAME TABLE r TO r2", 1099, "r"),
        ("RENAME TABLE u TO u2", 1100, "u"),
        ("CREATE TABLE n (a INT)", 1100, "n"),
        ("CREATE TABLE n LIKE t", 1100, "n"),
        ("CREATE TABLE n AS SELECT * FROM t", 1100, "n"),
    ] {
        let error = fail(&mut owner, sql);
        assert_eq!(error.code, code, "{sql}: {error}");
        let expected = if code == 1100 {
            format!("Table '{table}' was not locked with LOCK TABLES")
        } else {
            format!("Table '{table}' was locked with a READ lock and can't be updated")
        };
        assert_eq!(error.message, expected, "{sql}");
    }
    for sql in [
        "CREATE VIEW v AS SELECT * FROM t",
        "DROP VIEW IF EXISTS v",
        "CREATE DATABASE d2",
        "DROP DATABASE d",
    ] {
        let error = fail(&mut owner, sql);
        assert_eq!(error.code, 1192, "{sql}: {error}");
    }
    let error = fail(&mut owner, "CREATE TABLE t (a INT)");
    assert_eq!(error.code, 1050, "an existing name is 1050 first: {error}");
    // Nothing above changed a table: r keeps its columns, t its rows.
    assert_eq!(count(&mut owner, "t"), Value::Int(3));
    assert_eq!(run(&mut owner, "SELECT * FROM r").columns.len(), 2);
    // OPTIMIZE needs WRITE; ANALYZE and CHECK need READ; each answers per table.
    let rows = run(&mut owner, "OPTIMIZE TABLE r, t").rows;
    assert_eq!(rows[0][2], text("Error"), "{rows:?}");
    assert_eq!(
        rows[0][3],
        text("Table 'r' was locked with a READ lock and can't be updated")
    );
    assert_eq!(rows.last().unwrap()[3], text("OK"), "{rows:?}");
    let rows = run(&mut owner, "ANALYZE TABLE r, u").rows;
    assert_eq!(rows[0][3], text("OK"), "{rows:?}");
    assert_eq!(
        rows[1][3],
        text("Table 'u' was not locked with LOCK TABLES"),
        "{rows:?}"
    );
    let rows = run(&mut owner, "CHECK TABLE r").rows;
    assert_eq!(rows[0][3], text("OK"), "{rows:?}");
    // On a table locked WRITE, DDL runs.
    run(&mut owner, "CREATE INDEX k ON t (v)");
    run(&mut owner, "DROP INDEX k ON t");
    run(&mut owner, "ALTER TABLE t ADD COLUMN w INT");
    run(&mut owner, "TRUNCATE TABLE t");
    run(&mut owner, "INSERT INTO t VALUES (1, 1, 1)");
    // RENAME TABLE keeps the lock on the table under its new name (MySQL 8).
    run(&mut owner, "RENAME TABLE t TO t2");
    run(&mut owner, "INSERT INTO t2 VALUES (2, 2, 2)");
    let mut other = impatient(&instance);
    let error = fail(&mut other, "SELECT COUNT(*) FROM t2");
    assert_eq!(error.code, 1205, "t2 is still locked: {error}");
    // A dropped table leaves the set: its name is then not locked.
    run(&mut owner, "DROP TABLE w");
    let error = fail(&mut owner, "CREATE TABLE w (a INT)");
    assert_eq!(error.code, 1100, "{error}");
    run(&mut owner, "UNLOCK TABLES");
    assert_eq!(count(&mut other, "t2"), Value::Int(2));
    run(&mut owner, "CREATE TABLE w AS SELECT * FROM t2");
    assert_eq!(count(&mut other, "w"), Value::Int(2));
}
