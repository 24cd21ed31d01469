//! Deeply nested or very long expressions fail cleanly (or run) instead of overflowing the
//! session thread's stack.

mod common;

use shale_sql::Value;

#[test]
fn deep_expressions_never_overflow_the_stack() {
    let instance = common::instance();
    let mut s = instance.session();
    s.execute(
        "CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY)",
        &mut common::TextSink::default(),
    )
    .unwrap();
    // Within the nesting cap: runs.
    let mut sink = common::TextSink::default();
    s.execute(&format!("SELECT 1{}", "+1".repeat(900)), &mut sink)
        .unwrap();
    assert_eq!(sink.rows, vec![vec![Value::Int(901)]]);
    for n in [1500usize, 30_000] {
        let chain = format!("SELECT 1{}", "+1".repeat(n));
        let parens = format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n));
        let ands = format!("SELECT id FROM t WHERE {}", vec!["id=1"; n].join(" AND "));
        let ors = format!("SELECT id FROM t WHERE {}", vec!["id=1"; n].join(" OR "));
        for sql in [chain, parens, ands, ors] {
            let mut sink = common::TextSink::default();
            let e = s.execute(&sql, &mut sink).unwrap_err();
            assert!(matches!(e.code, 1436 | 1064), "{n}: {e}");
            let e = s.prepare(&sql).unwrap_err();
            assert!(matches!(e.code, 1436 | 1064), "{n}: {e}");
        }
    }
    // The session is unharmed.
    let mut sink = common::TextSink::default();
    s.execute("SELECT 2", &mut sink).unwrap();
    assert_eq!(sink.rows, vec![vec![Value::Int(2)]]);
}
