//! The `sql_mode` flags that change parsing (`ANSI_QUOTES`, `PIPES_AS_CONCAT`,
//! `HIGH_NOT_PRECEDENCE`, `REAL_AS_FLOAT`) through real clients against `shale serve`: PyMySQL's
//! escaped parameters and column names under ANSI, a view made under ANSI read by a session
//! without it, and statements the mariadb client sends one after another from one `-e` text
//! (it splits the text at `;` itself, so each is its own `COM_QUERY`).
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use support::{have, pymysql, scratch, start_shale};

const SCRIPT: &str = r#"
import os, pymysql
def connect():
    return pymysql.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user="root", password="", autocommit=True)
c = connect()
cur = c.cursor()
cur.execute("CREATE DATABASE q")
cur.execute("USE q")
# Without the mode "x" is a string and || is OR.
cur.execute('SELECT "x" AS s, 1 || 0 AS o')
assert cur.fetchall() == (("x", 1),), "default"
cur.execute("SET sql_mode = 'ANSI'")
cur.execute('CREATE TABLE "t" ("id" INT PRIMARY KEY, "na""me" VARCHAR(20), "r" REAL)')
# PyMySQL quotes parameters with '...' and backslash escapes, a " among them.
cur.execute('INSERT INTO "t" ("id", "na""me", "r") VALUES (%s, %s, %s)', (1, 'say "hi"', 0.5))
cur.execute('INSERT INTO "t" VALUES (%s, %s, %s)', (2, None, 1.5))
cur.execute('SELECT "id", "na""me" || \'!\' AS "shout", "t"."r" FROM "t" ORDER BY "id"')
assert [d[0] for d in cur.description] == ["id", "shout", "r"], cur.description
assert cur.fetchall() == ((1, 'say "hi"!', 0.5), (2, None, 1.5)), "rows"
cur.execute("SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'q' AND COLUMN_NAME = 'r'")
assert cur.fetchall() == (("float",),), "REAL_AS_FLOAT"
cur.execute('CREATE VIEW "v" AS SELECT "id" || \'-\' || "r" AS "k" FROM "t" WHERE NOT "id" BETWEEN 2 AND 3')
try:
    cur.execute('SELECT "nope" FROM "t"')
    raise SystemExit("unknown column accepted")
except pymysql.err.MySQLError as e:
    assert e.args == (1054, "Unknown column 'nope' in 'field list'"), e.args
c.close()
# A new session has the default mode: the view still means what it meant.
c = connect()
cur = c.cursor()
cur.execute("SELECT k FROM q.v ORDER BY k")
# ANSI has no HIGH_NOT_PRECEDENCE: NOT (id BETWEEN 2 AND 3).
assert cur.fetchall() == (("1-0.5",),), "view"
cur.execute("SET sql_mode = 'HIGH_NOT_PRECEDENCE'")
cur.execute("SELECT NOT 1 BETWEEN -5 AND 5, NOT 0 = 1")
assert cur.fetchall() == ((1, 1),), "high not"
c.close()
print("ok")
"#;

#[test]
fn pymysql_under_ansi_and_parse_modes() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let server = start_shale(&scratch("syntax-modes-pymysql"));
    assert_eq!(pymysql(server.port, SCRIPT), "ok\n");
}

#[test]
fn mariadb_client_reads_ansi_quotes() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let server = start_shale(&scratch("syntax-modes-mariadb"));
    server
        .query(
            None,
            "CREATE DATABASE d; CREATE TABLE d.t (a INT, `b c` INT)",
        )
        .unwrap();
    let out = server
        .query(
            Some("d"),
            "SET sql_mode = 'ANSI_QUOTES'; INSERT INTO \"t\" VALUES (1, 2); \
             SELECT \"a\", \"b c\", 'a', \"t\".\"a\" + 1 FROM \"t\"; \
             SET sql_mode = ''; SELECT \"a\" FROM t",
        )
        .unwrap();
    assert_eq!(out, "1\t2\ta\t2\na\n");
}
