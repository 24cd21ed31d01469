//! Sessions that run beside each other, for the metadata lock tests: one per connection,
//! statements on a thread, and waits observed through SHOW PROCESSLIST (never timed).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shale_sql::{Instance, Session, SqlError, Value};

use super::{run, TextSink};

/// What SHOW PROCESSLIST shows for a statement waiting for a metadata lock.
pub const WAITING: &str = "Waiting for table metadata lock";

/// A session in `d` with its connection id.
pub fn session(instance: &Arc<Instance>) -> (Session, i64) {
    let mut s = instance.session();
    run(&mut s, "USE d");
    let id = match &run(&mut s, "SELECT CONNECTION_ID()").rows[0][0] {
        Value::Int(i) => *i,
        Value::UInt(u) => i64::try_from(*u).unwrap(),
        other => panic!("connection id {other:?}"),
    };
    (s, id)
}

/// Runs `sqls` in order in `session` on a thread; returns the last one's result.
pub fn spawn(mut session: Session, sqls: &[&str]) -> JoinHandle<Result<TextSink, SqlError>> {
    let sqls: Vec<String> = sqls.iter().map(|s| (*s).to_owned()).collect();
    std::thread::spawn(move || {
        let (last, before) = sqls.split_last().unwrap();
        for sql in before {
            run(&mut session, sql);
        }
        let mut sink = TextSink::default();
        session.execute(last, &mut sink).map(|()| sink)
    })
}

/// Waits (up to a minute, then fails) until connection `id` shows `state` in SHOW
/// PROCESSLIST.
pub fn wait_for_state(observer: &mut Session, id: i64, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list = run(observer, "SHOW PROCESSLIST");
        let shown = list.rows.iter().any(|row| {
            matches!(&row[0], Value::Int(i) if *i == id)
                || matches!(&row[0], Value::UInt(u) if i64::try_from(*u).ok() == Some(id))
        } && row[6] == Value::Bytes(state.as_bytes().to_vec()));
        if shown {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "connection {id} never showed {state:?}: {:?}",
            list.rows
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn count(session: &mut Session, table: &str) -> Value {
    run(session, &format!("SELECT COUNT(*) FROM {table}")).rows[0][0].clone()
}

/// A session in `d` whose metadata lock waits end after a second.
pub fn impatient(instance: &Arc<Instance>) -> Session {
    let (mut s, _) = session(instance);
    run(&mut s, "SET SESSION lock_wait_timeout = 1");
    s
}
