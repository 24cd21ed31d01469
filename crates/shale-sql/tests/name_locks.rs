//! Metadata locks on names (shale-table's `name_lock.rs`) through sessions: DROP / ALTER /
//! CREATE OR REPLACE VIEW wait for the transactions that read the view, statements that use
//! the view queue behind them; CREATE TABLE (plain, LIKE, AS SELECT) holds the name it
//! creates; the waits end at `lock_wait_timeout` (1205) or KILL QUERY (1317); a statement
//! never waits for its own session's lock.
//!
//! No test depends on timing: a wait is observed through SHOW PROCESSLIST before the test
//! goes on, and `is_finished` checks only assert that something did *not* happen yet. Every
//! session that could wait by mistake has a short `lock_wait_timeout`, so a wrong wait shows
//! as 1205, not as a hang.

mod common;

use std::sync::Arc;

use common::sessions::{count, impatient, session, spawn, wait_for_state, WAITING};
use common::{fail, run, TextSink};
use shale_sql::{Instance, Session, Value};

/// `d.t` with 3 rows and the view `d.v` over it; a session in `d`.
fn setup(instance: &Arc<Instance>) -> Session {
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(&mut s, "CREATE TABLE t (id INT PRIMARY KEY, v INT)");
    run(&mut s, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)");
    run(&mut s, "CREATE VIEW v AS SELECT id, v FROM t");
    s
}

#[test]
fn drop_view_waits_for_a_transaction_that_read_it_and_readers_queued_behind_it_find_none() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "v"), Value::Int(3));
    let (ddl, ddl_id) = session(&instance);
    let drop_view = spawn(ddl, &["DROP VIEW v"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, ddl_id, WAITING);
    // A new statement on the view queues behind the waiting DROP.
    let (late, late_id) = session(&instance);
    let late_select = spawn(late, &["SELECT COUNT(*) FROM v"]);
    wait_for_state(&mut observer, late_id, WAITING);
    // The holder goes on using the view it holds.
    assert_eq!(count(&mut reader, "v"), Value::Int(3));
    assert!(!drop_view.is_finished(), "DROP VIEW did not wait");
    run(&mut reader, "COMMIT");
    drop_view.join().unwrap().unwrap();
    let error = late_select.join().unwrap().unwrap_err();
    assert_eq!(error.code, 1146, "{error}");
    assert_eq!(fail(&mut reader, "SELECT * FROM v").code, 1146);
}

#[test]
fn view_ddl_waits_end_at_lock_wait_timeout_and_kill_query_and_change_nothing() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "v"), Value::Int(3));
    let mut ddl = impatient(&instance);
    for sql in [
        "DROP VIEW v",
        "ALTER VIEW v AS SELECT id FROM t",
        "CREATE OR REPLACE VIEW v AS SELECT id FROM t",
        "RENAME TABLE v TO v2",
        "CREATE TABLE v (a INT)",
    ] {
        let error = fail(&mut ddl, sql);
        assert_eq!(error.code, 1205, "{sql}: {error}");
    }
    let (killed, killed_id) = session(&instance);
    let alter = spawn(killed, &["ALTER VIEW v AS SELECT id FROM t WHERE id = 1"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, killed_id, WAITING);
    run(&mut observer, &format!("KILL QUERY {killed_id}"));
    let error = alter.join().unwrap().unwrap_err();
    assert_eq!(error.code, 1317, "{error}");
    run(&mut reader, "COMMIT");
    // The view is as it was, and nothing stays locked.
    assert_eq!(count(&mut ddl, "v"), Value::Int(3));
    run(&mut ddl, "DROP VIEW v");
}

#[test]
fn a_select_queued_behind_alter_view_reads_the_new_definition() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    // A prepared statement locks the view at each execution, not only when prepared.
    let prepared = reader.prepare("SELECT COUNT(*) FROM v").unwrap();
    run(&mut reader, "BEGIN");
    let mut sink = TextSink::default();
    reader
        .execute_prepared(prepared.id, &[], &mut sink)
        .unwrap();
    assert_eq!(sink.rows, vec![vec![Value::Int(3)]]);
    let (ddl, ddl_id) = session(&instance);
    let alter = spawn(ddl, &["ALTER VIEW v AS SELECT id, v FROM t WHERE id > 1"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, ddl_id, WAITING);
    let (late, late_id) = session(&instance);
    let late_select = spawn(late, &["SELECT COUNT(*) FROM v"]);
    wait_for_state(&mut observer, late_id, WAITING);
    assert!(!alter.is_finished(), "ALTER VIEW did not wait");
    run(&mut reader, "COMMIT");
    alter.join().unwrap().unwrap();
    let late = late_select.join().unwrap().unwrap();
    assert_eq!(
        late.rows,
        vec![vec![Value::Int(2)]],
        "bound to the new view"
    );
}

#[test]
fn a_nested_view_is_locked_too() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "CREATE VIEW w AS SELECT id FROM v");
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "w"), Value::Int(3));
    let mut ddl = impatient(&instance);
    assert_eq!(fail(&mut ddl, "DROP VIEW v").code, 1205);
    run(&mut reader, "COMMIT");
    run(&mut ddl, "DROP VIEW v");
}

#[test]
fn create_table_as_select_holds_the_name_it_creates_for_the_whole_statement() {
    let instance = common::instance();
    let mut owner = setup(&instance);
    // The SELECT of the CREATE waits for the owner's lock of `t`, holding `d.n` meanwhile.
    run(&mut owner, "LOCK TABLES t WRITE");
    let (creator, creator_id) = session(&instance);
    let create_select = spawn(creator, &["CREATE TABLE n AS SELECT id FROM t"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, creator_id, WAITING);
    let (rival, rival_id) = session(&instance);
    let create = spawn(rival, &["CREATE TABLE n (a INT)"]);
    wait_for_state(&mut observer, rival_id, WAITING);
    let (viewer, viewer_id) = session(&instance);
    let create_view = spawn(viewer, &["CREATE VIEW n AS SELECT 1"]);
    wait_for_state(&mut observer, viewer_id, WAITING);
    run(&mut owner, "UNLOCK TABLES");
    create_select.join().unwrap().unwrap();
    assert_eq!(create.join().unwrap().unwrap_err().code, 1050);
    assert_eq!(create_view.join().unwrap().unwrap_err().code, 1050);
    assert_eq!(count(&mut observer, "n"), Value::Int(3));
}

#[test]
fn create_table_and_like_wait_for_a_reader_of_a_view_of_that_name() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "v"), Value::Int(3));
    let mut ddl = impatient(&instance);
    assert_eq!(fail(&mut ddl, "CREATE TABLE v LIKE t").code, 1205);
    assert_eq!(fail(&mut ddl, "CREATE TABLE v AS SELECT 1 AS a").code, 1205);
    run(&mut reader, "COMMIT");
    assert_eq!(fail(&mut ddl, "CREATE TABLE v LIKE t").code, 1050);
}

#[test]
fn a_statement_never_waits_for_its_own_session() {
    let instance = common::instance();
    let mut s = setup(&instance);
    run(&mut s, "SET SESSION lock_wait_timeout = 1");
    // Reads the view of the name it creates: 1050 at the end, not a wait for itself.
    let error = fail(&mut s, "CREATE TABLE v AS SELECT * FROM v");
    assert_eq!(error.code, 1050, "{error}");
    let mut sink = TextSink::default();
    if let Err(error) = s.execute("CREATE OR REPLACE VIEW v AS SELECT id, v FROM v", &mut sink) {
        assert_ne!(error.code, 1205, "waited for itself: {error}");
    }
    // DDL commits the session's transaction first, releasing what it read.
    run(&mut s, "BEGIN");
    assert_eq!(count(&mut s, "v"), Value::Int(3));
    run(&mut s, "ALTER VIEW v AS SELECT id FROM t");
    run(&mut s, "BEGIN");
    assert_eq!(count(&mut s, "v"), Value::Int(3));
    run(&mut s, "DROP VIEW v");
    let mut other = impatient(&instance);
    run(&mut other, "CREATE VIEW v AS SELECT 1 AS one");
}

#[test]
fn a_transaction_that_would_wait_for_a_ddl_waiting_for_its_view_is_the_deadlock_victim() {
    let instance = common::instance();
    let mut reader = setup(&instance);
    run(&mut reader, "CREATE VIEW a AS SELECT 1 AS one");
    run(&mut reader, "BEGIN");
    assert_eq!(count(&mut reader, "v"), Value::Int(3));
    // Takes `a`, then waits for `v`, which `reader` holds (names in sorted order).
    let (dropper, dropper_id) = session(&instance);
    let drop_views = spawn(dropper, &["DROP VIEW v, a"]);
    let (mut observer, _) = session(&instance);
    wait_for_state(&mut observer, dropper_id, WAITING);
    // `reader` now needs `a`: a cycle, and the DML is the victim at once (no 1205 first).
    let error = fail(&mut reader, "SELECT * FROM a");
    assert_eq!(error.code, 1213, "{error}");
    // Its rollback released `v`: the DROP goes on.
    drop_views.join().unwrap().unwrap();
    assert_eq!(fail(&mut reader, "SELECT * FROM v").code, 1146);
}
