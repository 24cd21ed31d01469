//! An ALTER TABLE that rewrites every row while other sessions insert into the table: every
//! acknowledged row is in the altered table (the table layer's fence keeps writers off during
//! the copy), and autocommit statements, text and prepared, are bound again and rerun without
//! an error.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{run, TextSink};
use shale_sql::{Session, Value};

fn count(session: &mut Session, sql: &str) -> i64 {
    match run(session, sql).rows.first().and_then(|r| r.first()) {
        Some(Value::Int(n)) => *n,
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn rows_inserted_during_a_rewriting_alter_are_kept_and_the_writers_see_no_error() {
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(40), KEY kc (k, c))",
    );
    for chunk in 0..20 {
        let values: Vec<String> = (0..1000)
            .map(|i| format!("({}, {i}, 'seed')", chunk * 1000 + i))
            .collect();
        run(
            &mut s,
            &format!("INSERT INTO t VALUES {}", values.join(", ")),
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Two writers: one sends text statements, one a prepared statement. Each counts the rows
    // the server acknowledged; neither may see an error.
    let writers: Vec<_> = [(1_000_000_i64, false), (2_000_000, true)]
        .into_iter()
        .map(|(first, prepared)| {
            let (instance, stop) = (instance.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut s = instance.session();
                run(&mut s, "USE d");
                let statement =
                    prepared.then(|| s.prepare("INSERT INTO t (id, k) VALUES (?, 1)").unwrap().id);
                let mut acknowledged = 0_i64;
                let mut id = first;
                while !stop.load(Ordering::SeqCst) {
                    let mut sink = TextSink::default();
                    let result = match statement {
                        Some(statement) => {
                            s.execute_prepared(statement, &[Value::Int(id)], &mut sink)
                        }
                        None => s.execute(
                            &format!("INSERT INTO t (id, k) VALUES ({id}, 1)"),
                            &mut sink,
                        ),
                    };
                    result.unwrap_or_else(|e| panic!("insert {id}: {e}"));
                    acknowledged += 1;
                    id += 1;
                }
                acknowledged
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(100));
    // Dropping c, which kc uses, rewrites every row (docs/sql.md, ALTER TABLE).
    let altered = run(&mut s, "ALTER TABLE t DROP COLUMN c");
    assert!(
        altered.out.contains("info=\"Records: ") && !altered.out.contains("Records: 0 "),
        "not a rewrite: {}",
        altered.out
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    stop.store(true, Ordering::SeqCst);
    let acknowledged: i64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(acknowledged > 0);
    assert_eq!(
        count(&mut s, "SELECT COUNT(*) FROM t"),
        20_000 + acknowledged,
        "rows acknowledged during the ALTER were lost"
    );
    assert_eq!(
        count(&mut s, "SELECT COUNT(*) FROM t WHERE id >= 1000000"),
        acknowledged
    );
    let check = run(&mut s, "CHECK TABLE t");
    assert_eq!(
        check.rows[0][3],
        Value::Bytes(b"OK".to_vec()),
        "{:?}",
        check.rows
    );
}

/// Runs `sql` for each id, in order, until told to stop; returns how many ran (each one
/// acknowledged: an error fails the test).
fn each_id(
    instance: &Arc<shale_sql::Instance>,
    stop: &Arc<AtomicBool>,
    ids: impl Iterator<Item = i64> + Send + 'static,
    sql: impl Fn(i64) -> String + Send + 'static,
) -> std::thread::JoinHandle<i64> {
    let (instance, stop) = (instance.clone(), stop.clone());
    std::thread::spawn(move || {
        let mut s = instance.session();
        run(&mut s, "USE d");
        let mut done = 0;
        for id in ids {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            run(&mut s, &sql(id));
            done += 1;
        }
        done
    })
}

#[test]
#[allow(clippy::too_many_lines)] // three writers and the checks of what each did
fn updates_and_deletes_during_an_online_type_change_end_converted() {
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(20), KEY k (k), KEY kc (k, c))",
    );
    for chunk in 0..20 {
        let values: Vec<String> = (0..1000)
            .map(|i| {
                let id = chunk * 1000 + i;
                format!("({id}, {id}, '{id}')")
            })
            .collect();
        run(
            &mut s,
            &format!("INSERT INTO t VALUES {}", values.join(", ")),
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Even ids get c = id + 1 (the converted column), in order; odd ids alternately get
    // k + 100000 (an indexed column) or are deleted, in order; new rows come in.
    let evens = each_id(&instance, &stop, (0..20_000).step_by(2), |id| {
        format!("UPDATE t SET c = {} WHERE id = {id}", id + 1)
    });
    let odds = each_id(&instance, &stop, (1..20_000).step_by(2), |id| {
        if id % 4 == 1 {
            format!("UPDATE t SET k = k + 100000 WHERE id = {id}")
        } else {
            format!("DELETE FROM t WHERE id = {id}")
        }
    });
    let inserts = each_id(&instance, &stop, 100_000.., |id| {
        format!("INSERT INTO t VALUES ({id}, 7, '{id}')")
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    let altered = run(&mut s, "ALTER TABLE t MODIFY c INT");
    assert!(
        altered.out.contains("info=\"Records: ") && !altered.out.contains("Records: 0 "),
        "not a rewrite: {}",
        altered.out
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    stop.store(true, Ordering::SeqCst);
    let (evens, odds, inserts) = (
        evens.join().unwrap(),
        odds.join().unwrap(),
        inserts.join().unwrap(),
    );
    assert!(evens > 0 && odds > 0 && inserts > 0);
    let data_type = run(
        &mut s,
        "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd' \
         AND TABLE_NAME = 't' AND COLUMN_NAME = 'c'",
    );
    assert_eq!(data_type.rows, vec![vec![Value::Bytes(b"int".to_vec())]]);
    let updated = 2 * evens;
    assert_eq!(
        count(
            &mut s,
            &format!("SELECT COUNT(*) FROM t WHERE id < {updated} AND id % 2 = 0 AND c = id + 1")
        ),
        evens
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM t WHERE id < 20000 AND id % 2 = 0 AND c = id"
        ),
        10_000 - evens
    );
    let passed = 2 * odds;
    assert_eq!(
        count(
            &mut s,
            &format!("SELECT COUNT(*) FROM t WHERE id < {passed} AND id % 2 = 1")
        ),
        (odds + 1) / 2,
        "every other odd id was deleted"
    );
    assert_eq!(
        count(
            &mut s,
            &format!(
                "SELECT COUNT(*) FROM t WHERE id < {passed} AND id % 2 = 1 AND k = id + 100000"
            )
        ),
        (odds + 1) / 2
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM t WHERE id >= 100000 AND c = id AND k = 7"
        ),
        inserts
    );
    assert_eq!(
        count(&mut s, "SELECT COUNT(*) FROM t"),
        20_000 - odds / 2 + inserts
    );
    let check = run(&mut s, "CHECK TABLE t");
    assert_eq!(
        check.rows[0][3],
        Value::Bytes(b"OK".to_vec()),
        "{:?}",
        check.rows
    );
}

/// `d.t (id INT PRIMARY KEY, k INT, c INT NOT NULL, KEY k (k))` with rows `(id, id % 97,
/// id)` for ids below 20,000; a session in `d`.
fn rekey_setup() -> (Arc<shale_sql::Instance>, Session) {
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c INT NOT NULL, KEY k (k))",
    );
    for chunk in 0..20 {
        let values: Vec<String> = (0..1000)
            .map(|i| {
                let id = chunk * 1000 + i;
                format!("({id}, {}, {id})", id % 97)
            })
            .collect();
        run(
            &mut s,
            &format!("INSERT INTO t VALUES {}", values.join(", ")),
        );
    }
    (instance, s)
}

#[test]
fn a_primary_key_change_runs_beside_sessions_that_change_both_keys() {
    let (instance, mut s) = rekey_setup();
    let stop = Arc::new(AtomicBool::new(false));
    // Even ids move their c (the new primary key) by 1,000,000, in order; odd ids alternately
    // move their id (the old primary key) by 100,000 or are deleted; new rows come in.
    let evens = each_id(&instance, &stop, (0..20_000).step_by(2), |id| {
        format!("UPDATE t SET c = c + 1000000 WHERE id = {id}")
    });
    let odds = each_id(&instance, &stop, (1..20_000).step_by(2), |id| {
        if id % 4 == 1 {
            format!("UPDATE t SET id = id + 100000 WHERE id = {id}")
        } else {
            format!("DELETE FROM t WHERE id = {id}")
        }
    });
    let inserts = each_id(&instance, &stop, 200_000.., |id| {
        format!("INSERT INTO t VALUES ({id}, 7, {id})")
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    let altered = run(
        &mut s,
        "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (c), ADD UNIQUE KEY uid (id)",
    );
    assert!(
        altered.out.contains("info=\"Records: ") && !altered.out.contains("Records: 0 "),
        "not a rewrite: {}",
        altered.out
    );
    std::thread::sleep(std::time::Duration::from_millis(100));
    stop.store(true, Ordering::SeqCst);
    let (evens, odds, inserts) = (
        evens.join().unwrap(),
        odds.join().unwrap(),
        inserts.join().unwrap(),
    );
    assert!(evens > 0 && odds > 0 && inserts > 0);
    let key = run(
        &mut s,
        "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'd' \
         AND TABLE_NAME = 't' AND INDEX_NAME = 'PRIMARY'",
    );
    assert_eq!(key.rows, vec![vec![Value::Bytes(b"c".to_vec())]]);
    let moved = 2 * evens;
    assert_eq!(
        count(
            &mut s,
            &format!(
                "SELECT COUNT(*) FROM t WHERE id < {moved} AND id % 2 = 0 AND c = id + 1000000"
            )
        ),
        evens
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM t WHERE id < 20000 AND id % 2 = 0 AND c = id"
        ),
        10_000 - evens
    );
    let passed = 2 * odds;
    // Every other odd id passed moved to id + 100000 (c unchanged), the others are gone.
    assert_eq!(
        count(
            &mut s,
            &format!("SELECT COUNT(*) FROM t WHERE id >= 100000 AND id < 200000 AND c = id - 100000 AND c < {passed}")
        ),
        (odds + 1) / 2
    );
    assert_eq!(
        count(
            &mut s,
            &format!("SELECT COUNT(*) FROM t WHERE id < {passed} AND id % 2 = 1")
        ),
        0
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT COUNT(*) FROM t WHERE id >= 200000 AND c = id AND k = 7"
        ),
        inserts
    );
    assert_eq!(
        count(&mut s, "SELECT COUNT(*) FROM t"),
        20_000 - odds / 2 + inserts
    );
    let check = run(&mut s, "CHECK TABLE t");
    assert_eq!(
        check.rows[0][3],
        Value::Bytes(b"OK".to_vec()),
        "{:?}",
        check.rows
    );
}

#[test]
fn a_duplicate_new_primary_key_fails_the_alter_with_1062_and_leaves_the_table() {
    let (instance, mut s) = rekey_setup();
    let before = run(&mut s, "SHOW CREATE TABLE t").rows;
    // k repeats every 97 rows.
    let mut sink = common::TextSink::default();
    let error = s
        .execute(
            "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (k)",
            &mut sink,
        )
        .unwrap_err();
    assert_eq!(
        (error.code, error.sqlstate, error.message.as_str()),
        (1062, "23000", "Duplicate entry '0' for key 'PRIMARY'")
    );
    // Another session's duplicate of c = 5, in a transaction open when the ALTER starts:
    // the ALTER waits for it, then its copy meets the duplicate.
    let mut other = instance.session();
    run(&mut other, "USE d");
    run(&mut other, "BEGIN");
    run(&mut other, "INSERT INTO t VALUES (50000, 1, 5)");
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        run(&mut other, "COMMIT");
    });
    let error = s
        .execute(
            "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (c)",
            &mut sink,
        )
        .unwrap_err();
    writer.join().unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (1062, "Duplicate entry '5' for key 'PRIMARY'")
    );
    assert_eq!(run(&mut s, "SHOW CREATE TABLE t").rows, before);
    assert_eq!(count(&mut s, "SELECT COUNT(*) FROM t"), 20_001);
    let check = run(&mut s, "CHECK TABLE t");
    assert_eq!(check.rows[0][3], Value::Bytes(b"OK".to_vec()));
}
