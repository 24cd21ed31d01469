//! `sql_mode` through a real client against `shale serve`: PyMySQL sees the normalised mode,
//! error 1231 for an unknown one, and, outside strict mode, INSERT and UPDATE storing clipped
//! values with the warning count in the OK packet and the warnings in SHOW WARNINGS, and
//! `ONLY_FULL_GROUP_BY`'s 1055 and 1140.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use support::{have, pymysql, scratch, start_shale};

const SCRIPT: &str = r#"
import os, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user="root", password="", autocommit=True)
cur = c.cursor()
cur.execute("SELECT @@sql_mode, @@sql_mode + 0")
assert cur.fetchall() == (("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION", 1168113696),), "default"
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
# The default has ONLY_FULL_GROUP_BY: a column outside GROUP BY is 1055, beside an aggregate
# without GROUP BY 1140; the primary key and ANY_VALUE make it acceptable.
cur.execute("SET sql_mode = DEFAULT")
try:
    cur.execute("SELECT s, id FROM t GROUP BY s")
    raise SystemExit("a column outside GROUP BY was accepted")
except pymysql.err.MySQLError as e:
    assert e.args == (1055, "Expression #2 of SELECT list is not in GROUP BY clause and contains nonaggregated column 'm.t.id' which is not functionally dependent on columns in GROUP BY clause; this is incompatible with sql_mode=only_full_group_by"), e.args
try:
    cur.execute("SELECT n, COUNT(*) FROM t")
    raise SystemExit("a bare column beside an aggregate was accepted")
except pymysql.err.MySQLError as e:
    assert e.args == (1140, "In aggregated query without GROUP BY, expression #1 of SELECT list contains nonaggregated column 'm.t.n'; this is incompatible with sql_mode=only_full_group_by"), e.args
cur.execute("SELECT id, n, s FROM t GROUP BY id ORDER BY id")
assert cur.fetchall() == ((1, 127, "abc"), (2, -128, "x")), "grouped by the key"
cur.execute("SELECT s, ANY_VALUE(id) FROM t GROUP BY s ORDER BY s")
assert cur.fetchall() == (("abc", 1), ("x", 2)), "any_value"
cur.execute("SET sql_mode = ''")
cur.execute("SELECT s, id FROM t GROUP BY s ORDER BY s")
assert cur.fetchall() == (("abc", 1), ("x", 2)), "not checked without the mode"
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
