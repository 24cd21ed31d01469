//! `information_schema.TABLES` sizes on a table bigger than the estimate's sample (4,096 rows):
//! the row count is extrapolated, not counted, and the byte figures follow from it. Exact
//! values depend on the key encoding, so they are checked by relation, not by value.

mod common;

use common::TextSink;
use shale_sql::Value;

fn run(session: &mut shale_sql::Session, sql: &str) -> TextSink {
    let mut sink = TextSink::default();
    session
        .execute(sql, &mut sink)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    sink
}

fn uint(v: &Value) -> u64 {
    match v {
        Value::UInt(u) => *u,
        other => panic!("not an unsigned integer: {other:?}"),
    }
}

#[test]
fn table_rows_and_lengths_are_estimated_without_a_full_scan() {
    let instance = common::instance();
    let mut s = instance.session();
    run(&mut s, "CREATE DATABASE d");
    run(&mut s, "USE d");
    run(
        &mut s,
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c CHAR(20), KEY kk (k))",
    );
    for chunk in 0..20 {
        let values: Vec<String> = (0..1000)
            .map(|i| {
                let id = chunk * 1000 + i;
                format!("({id}, {}, 'row{id}')", id % 97)
            })
            .collect();
        run(
            &mut s,
            &format!("INSERT INTO t VALUES {}", values.join(",")),
        );
    }
    let sink = run(
        &mut s,
        "SELECT TABLE_ROWS, AVG_ROW_LENGTH, DATA_LENGTH, INDEX_LENGTH FROM \
         information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't'",
    );
    let [row] = sink.rows.as_slice() else {
        panic!("one row expected: {:?}", sink.rows);
    };
    let (rows, avg, data, index) = (uint(&row[0]), uint(&row[1]), uint(&row[2]), uint(&row[3]));
    // Dense integer keys: the extrapolation from the first 4,096 rows is close.
    assert!((19_000..=21_000).contains(&rows), "TABLE_ROWS {rows}");
    assert_eq!(avg, data / rows);
    // Each row stores its key and at least the 20-byte CHAR value's text.
    assert!(data > rows * 8, "DATA_LENGTH {data}");
    // The secondary index has one entry per row.
    assert!(index > rows * 4, "INDEX_LENGTH {index}");
    // SHOW TABLE STATUS reports the same figures.
    let status = run(&mut s, "SHOW TABLE STATUS LIKE 't'");
    assert_eq!(status.rows[0][4], Value::UInt(rows));
    assert_eq!(status.rows[0][6], Value::UInt(data));
    assert_eq!(status.rows[0][8], Value::UInt(index));
}
