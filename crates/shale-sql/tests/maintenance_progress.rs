//! OPTIMIZE TABLE reports its progress in SHOW PROCESSLIST (issue 24): a compaction held back
//! by a slow rate limit (`SET GLOBAL shale_rate_limiter_bytes_per_sec`) keeps the statement
//! running while a second session reads its State; turning the limiter off live
//! (`= 0`) then lets it finish at once.

mod common;

use std::time::{Duration, Instant};

use common::TextSink;
use shale_sql::Value;

fn run(session: &mut shale_sql::Session, sql: &str) -> TextSink {
    let mut sink = TextSink::default();
    session
        .execute(sql, &mut sink)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    sink
}

fn text(v: &Value) -> String {
    match v {
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Null => "NULL".into(),
        other => format!("{other:?}"),
    }
}

#[test]
fn optimize_shows_which_index_it_compacts_in_the_processlist() {
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(200), KEY kk (k))",
    );
    for chunk in 0..10 {
        let values: Vec<String> = (0..500)
            .map(|i| {
                let id = chunk * 500 + i;
                format!("({id}, {}, REPEAT('x', 150))", id % 97)
            })
            .collect();
        run(
            &mut s,
            &format!("INSERT INTO t VALUES {}", values.join(", ")),
        );
    }
    // About 10 KB a second: flushing and compacting ~1 MB would take minutes.
    run(
        &mut s,
        "SET GLOBAL shale_rate_limiter_bytes_per_sec = 10000",
    );
    let optimizer = std::thread::spawn(move || run(&mut s, "OPTIMIZE TABLE t").out);

    let mut watcher = instance.session();
    let deadline = Instant::now() + Duration::from_secs(60);
    let state = loop {
        let rows = run(&mut watcher, "SHOW FULL PROCESSLIST").rows;
        let optimizing = rows.iter().find_map(|row| {
            let info = text(&row[7]);
            (info == "OPTIMIZE TABLE t").then(|| text(&row[6]))
        });
        if let Some(state) = optimizing.filter(|s| s.starts_with("optimizing")) {
            break state;
        }
        assert!(
            Instant::now() < deadline && !optimizer.is_finished(),
            "OPTIMIZE never showed its progress: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        state.starts_with("optimizing d.t: index 1 of 2 (PRIMARY)")
            || state.starts_with("optimizing d.t: index 2 of 2 (kk)"),
        "{state}"
    );
    // Turned off live: the waiting compaction goes on at full speed.
    run(
        &mut watcher,
        "SET GLOBAL shale_rate_limiter_bytes_per_sec = 0",
    );
    let out = optimizer.join().unwrap();
    assert!(out.contains("d.t\toptimize\tstatus\tOK"), "{out}");
    let rows = run(&mut watcher, "SHOW FULL PROCESSLIST").rows;
    assert!(
        rows.iter()
            .all(|row| !text(&row[6]).starts_with("optimizing")),
        "the State outlived the statement: {rows:?}"
    );
}
