//! `sql_mode` through a real client against `shale serve`: PyMySQL sees the normalised mode,
//! error 1231 for an unknown one, and, outside strict mode, INSERT and UPDATE storing clipped
//! values with the warning count in the OK packet and the warnings in SHOW WARNINGS.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use support::{have, pymysql, scratch, start_shale};

const SCRIPT: &str = r#"
import os, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user="root", password="", autocommit=True)
cur = c.cursor()
cur.execute("SELECT @@sql_mode, @@sql_mode + 0")
assert cur.fetchall() == (("STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION", 1168113664),), "default"
try:
    cur.execute("SET sql_mode = 'STRICT_TRANS_TABLES,NOPE'")
    raise SystemExit("unknown mode accepted")
except pymysql.err.MySQLError as e:
    assert e.args == (1231, "Variable 'sql_mode' can't be set to the value of 'NOPE'"), e.args
cur.execute("CREATE DATABASE m")
cur.execute("USE m")
cur.execute("CREATE TABLE t (id INT PRIMARY KEY, n TINYINT NOT NULL, s VARCHAR(3))")
try:
    cur.execute("INSERT INTO t VALUES (1, 300, 'abcdef')")
    raise SystemExit("strict mode stored 300 into a TINYINT")
except pymysql.err.MySQLError as e:
    assert e.args[0] == 1264, e.args
# Non-strict: the values are clipped, the OK packet counts the warnings.
cur.execute("SET SESSION sql_mode = 'no_engine_substitution'")
cur.execute("SELECT @@session.sql_mode")
assert cur.fetchall() == (("NO_ENGINE_SUBSTITUTION",),)
n = cur.execute("INSERT INTO t VALUES (1, 300, 'abcdef'), (2, NULL, 'x')")
assert n == 2, n
assert cur._result.warning_count == 3, cur._result.warning_count
cur.execute("SHOW WARNINGS")
assert cur.fetchall() == (
    ("Warning", 1264, "Out of range value for column 'n' at row 1"),
    ("Warning", 1265, "Data truncated for column 's' at row 1"),
    ("Warning", 1048, "Column 'n' cannot be null"),
), "warnings"
cur.execute("UPDATE t SET n = n - 1000 WHERE id = 2")
assert cur._result.warning_count == 1, cur._result.warning_count
cur.execute("SELECT id, n, s FROM t ORDER BY id")
assert cur.fetchall() == ((1, 127, "abc"), (2, -128, "x")), "rows"
# A combination mode is shown expanded.
cur.execute("SET sql_mode = 'ANSI'")
cur.execute("SELECT @@sql_mode")
assert cur.fetchall() == (("REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI",),), "ansi"
c.close()
print("ok")
"#;

#[test]
fn pymysql_sees_sql_mode_and_non_strict_warnings() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let server = start_shale(&scratch("sql-mode-pymysql"));
    assert_eq!(pymysql(server.port, SCRIPT), "ok\n");
}
