//! Named user locks across sessions of one instance (issue 22; `user_locks.rs`): a waiting
//! `GET_LOCK` wakes when the holder releases or its session ends, times out with 0, ends
//! with NULL on KILL QUERY, and the session that closes a wait cycle gets 3058.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{run, TextSink};
use shale_sql::{Session, Value};

/// The single value `sql` returns.
fn value(session: &mut Session, sql: &str) -> Value {
    run(session, sql).rows[0][0].clone()
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

/// Waits until session `id` shows `info` as its running statement in SHOW PROCESSLIST, in
/// the State "User lock": its wait is then registered (a wait seen only as a running
/// statement may not be yet, and the cycle test then raced).
fn wait_until_waiting(watcher: &mut Session, id: u64, info: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows = run(watcher, "SHOW FULL PROCESSLIST").rows;
        let running = rows.iter().any(|row| {
            int(&row[0]) == i64::try_from(id).ok()
                && matches!(&row[6], Value::Bytes(b) if b == b"User lock")
                && matches!(&row[7], Value::Bytes(b) if b == info.as_bytes())
        });
        if running {
            return;
        }
        assert!(Instant::now() < deadline, "{info} never ran: {rows:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_waiter_gets_the_lock_when_the_holder_releases_it() {
    let instance = common::instance();
    let mut a = instance.session();
    let mut watcher = instance.session();
    assert_eq!(int(&value(&mut a, "SELECT GET_LOCK('job', 0)")), Some(1));
    let b = instance.session();
    let b_id = b.connection_id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let mut b = b;
        let got = value(&mut b, "SELECT GET_LOCK('JOB', 60)");
        tx.send(()).unwrap();
        let holder = value(&mut b, "SELECT IS_USED_LOCK('job')");
        (got, holder, b)
    });
    wait_until_waiting(&mut watcher, b_id, "SELECT GET_LOCK('JOB', 60)");
    assert!(rx.try_recv().is_err(), "GET_LOCK did not wait");
    assert_eq!(int(&value(&mut a, "SELECT RELEASE_LOCK('job')")), Some(1));
    let (got, holder, mut b) = waiter.join().unwrap();
    assert_eq!(int(&got), Some(1));
    assert_eq!(int(&holder), i64::try_from(b_id).ok());
    // The lock is b's now: a's release is 0, a's GET_LOCK times out.
    assert_eq!(int(&value(&mut a, "SELECT RELEASE_LOCK('job')")), Some(0));
    assert_eq!(int(&value(&mut a, "SELECT GET_LOCK('job', 0.05)")), Some(0));
    assert_eq!(int(&value(&mut b, "SELECT RELEASE_ALL_LOCKS()")), Some(1));
    assert_eq!(int(&value(&mut a, "SELECT IS_FREE_LOCK('job')")), Some(1));
}

#[test]
fn a_session_that_ends_releases_its_locks_and_wakes_the_waiter() {
    let instance = common::instance();
    let mut a = instance.session();
    let mut watcher = instance.session();
    assert_eq!(
        int(&value(&mut a, "SELECT GET_LOCK('m', 0) + GET_LOCK('m', 0)")),
        Some(2)
    );
    let b = instance.session();
    let b_id = b.connection_id();
    let waiter = std::thread::spawn(move || {
        let mut b = b;
        value(&mut b, "SELECT GET_LOCK('m', -1)")
    });
    wait_until_waiting(&mut watcher, b_id, "SELECT GET_LOCK('m', -1)");
    drop(a);
    assert_eq!(int(&waiter.join().unwrap()), Some(1));
}

#[test]
fn kill_query_ends_a_wait_with_null() {
    let instance = common::instance();
    let mut a = instance.session();
    let mut killer = instance.session();
    assert_eq!(int(&value(&mut a, "SELECT GET_LOCK('k', 0)")), Some(1));
    let b = instance.session();
    let b_id = b.connection_id();
    let waiter = std::thread::spawn(move || {
        let mut b = b;
        value(&mut b, "SELECT GET_LOCK('k', -1)")
    });
    wait_until_waiting(&mut killer, b_id, "SELECT GET_LOCK('k', -1)");
    run(&mut killer, &format!("KILL QUERY {b_id}"));
    assert_eq!(waiter.join().unwrap(), Value::Null);
    assert_eq!(
        int(&value(&mut a, "SELECT IS_USED_LOCK('k')")),
        i64::try_from(a.connection_id()).ok()
    );
}

#[test]
fn the_session_closing_a_wait_cycle_gets_3058() {
    let instance = common::instance();
    let mut a = instance.session();
    let mut b = instance.session();
    let mut watcher = instance.session();
    assert_eq!(int(&value(&mut a, "SELECT GET_LOCK('l1', 0)")), Some(1));
    assert_eq!(int(&value(&mut b, "SELECT GET_LOCK('l2', 0)")), Some(1));
    let a_id = a.connection_id();
    let waiter = std::thread::spawn(move || {
        let v = value(&mut a, "SELECT GET_LOCK('l2', 60)");
        (v, a)
    });
    wait_until_waiting(&mut watcher, a_id, "SELECT GET_LOCK('l2', 60)");
    let mut sink = TextSink::default();
    let err = b
        .execute("SELECT GET_LOCK('l1', 60)", &mut sink)
        .expect_err("a deadlock");
    assert_eq!(err.code, 3058, "{err}");
    // b still holds l2; releasing it lets a through.
    assert_eq!(int(&value(&mut b, "SELECT RELEASE_LOCK('l2')")), Some(1));
    let (got, _a) = waiter.join().unwrap();
    assert_eq!(int(&got), Some(1));
}
