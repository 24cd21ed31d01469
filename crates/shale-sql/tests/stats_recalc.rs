//! Index statistics estimated again in the background (`shale_stats_auto_recalc`, shale-table's
//! `auto_recalc.rs`) reach the planner without ANALYZE TABLE.

mod common;

use std::time::{Duration, Instant};

/// The plan EXPLAIN shows for `sql`.
fn explain(session: &mut shale_sql::Session, sql: &str) -> String {
    common::run(session, &format!("EXPLAIN {sql}")).out
}

#[test]
fn background_statistics_change_the_plan_without_analyze() {
    // As `shale serve` opens it: the recalculation is ON by default.
    let instance = common::open_instance();
    let mut s = instance.session();
    assert_eq!(
        common::run(&mut s, "SELECT @@global.shale_stats_auto_recalc").rows,
        vec![vec![shale_sql::Value::Int(1)]]
    );
    common::run(
        &mut s,
        "CREATE DATABASE d; USE d; \
         CREATE TABLE t (id INT PRIMARY KEY, flag INT, code INT, \
                         KEY by_flag (flag), KEY by_code (code))",
    );
    let query = "SELECT id FROM t WHERE flag = 1 AND code = 7";
    // No statistics: the rules take the earlier index.
    assert!(explain(&mut s, query).contains("t.by_flag"));
    // One statement of 200 rows: the table's first change, so it is estimated at once.
    common::run(
        &mut s,
        "INSERT INTO t SELECT * FROM (WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL \
         SELECT i + 1 FROM n WHERE i < 199) SELECT i AS id, i % 2 AS flag, i AS code FROM n) AS rows_",
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        // by_flag holds 100 rows per value, by_code one.
        let plan = explain(&mut s, query);
        if plan.contains("t.by_code") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no statistics were made in the background: {plan}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
