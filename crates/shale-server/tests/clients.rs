//! Real clients (the mariadb command-line client, `PyMySQL`) against the server over a fake SQL
//! layer: handshake and authentication, text result sets, multi-statements, errors, status
//! flags, streaming a large result.

mod support;

use support::{have, mariadb, python, start, text};

#[test]
fn mariadb_batch_prints_result_sets_of_every_statement() {
    if !have("mariadb", "--version") {
        return;
    }
    let addr = start(64 << 20);
    let out = mariadb(
        addr,
        "root",
        "pw",
        "select mixed; select 1; create table t (a int)",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "i\tu\td\ts\tn\tdt\n-5\t18446744073709551615\t2.5\thello\tNULL\t2024-01-02 03:04:05\n1\n1\n"
    );
}

#[test]
fn mariadb_reports_sql_errors_and_bad_passwords() {
    if !have("mariadb", "--version") {
        return;
    }
    let addr = start(64 << 20);
    let out = mariadb(addr, "root", "pw", "select 1; fail");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains('1'));
    assert!(
        text(&out.stderr)
            .contains("ERROR 1064 (42000) at line 1: You have an error in your SQL syntax"),
        "{}",
        text(&out.stderr)
    );
    for (user, password) in [("root", "wrong"), ("nobody", "pw")] {
        let out = mariadb(addr, user, password, "select 1");
        assert_eq!(out.status.code(), Some(1));
        let expected = format!(
            "ERROR 1045 (28000): Access denied for user '{user}'@'localhost' (using password: YES)"
        );
        assert!(
            text(&out.stderr).contains(&expected),
            "{}",
            text(&out.stderr)
        );
    }
    let out = mariadb(addr, "nopw", "", "select 1");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = mariadb(addr, "root", "pw", "use nodb");
    assert!(
        text(&out.stderr).contains("ERROR 1049 (42000)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn mariadb_authenticates_caching_sha2_through_auth_switch() {
    if !have("mariadb", "--version") {
        return;
    }
    let addr = start(64 << 20);
    let out = mariadb(addr, "sha", "pw2", "select 1");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1\n1\n");
    let out = mariadb(addr, "sha", "bad", "select 1");
    assert!(
        text(&out.stderr).contains("ERROR 1045 (28000)"),
        "{}",
        text(&out.stderr)
    );
}

const PYMYSQL_SCRIPT: &str = r#"
import os, datetime, pymysql
port = int(os.environ["PORT"])
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="pw", database="db1")
cur = c.cursor()
cur.execute("select mixed")
row = cur.fetchone()
assert row == (-5, 18446744073709551615, 2.5, "hello", None, datetime.datetime(2024, 1, 2, 3, 4, 5)), row
assert [d[0] for d in cur.description] == ["i", "u", "d", "s", "n", "dt"]
# PyMySQL turns autocommit off at connect; the status flags must follow the session.
assert not c.get_autocommit()
cur.execute("begin")
assert c.get_server_info() == "8.0.36-Shale", c.get_server_info()
# PyMySQL sends one multi-row INSERT, which the fake counts as one row.
n = cur.executemany("insert into t values (%s, %s)", [(1, "a"), (2, "b"), (3, "c")])
assert n == 1, n
assert c.server_status & 1, "IN_TRANS after begin"
c.commit()
cur.execute("select rows 100000")
rows = cur.fetchall()
assert len(rows) == 100000 and rows[-1] == (99999, "row-99999"), rows[-1]
try:
    cur.execute("fail")
    raise SystemExit("no error")
except pymysql.err.ProgrammingError as e:
    assert e.args[0] == 1064, e.args
c.ping()
c.select_db("other")
c.close()
try:
    pymysql.connect(host="127.0.0.1", port=port, user="root", password="nope")
    raise SystemExit("wrong password accepted")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 1045, e.args
s = pymysql.connect(host="127.0.0.1", port=port, user="sha", password="pw2")
s.cursor().execute("select 1")
print("ok")
"#;

#[test]
fn pymysql_text_protocol_transactions_and_caching_sha2() {
    if !have("/usr/bin/python3", "--version") || !python_has_pymysql() {
        return;
    }
    let addr = start(64 << 20);
    let out = python(addr, PYMYSQL_SCRIPT);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "ok\n");
}

fn python_has_pymysql() -> bool {
    let ok = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import pymysql"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        support::skip_outside_ci("PyMySQL is not installed (apt-get install python3-pymysql)");
    }
    ok
}

const MYSQLDB_SCRIPT: &str = r#"
import os, MySQLdb
port = int(os.environ["PORT"])
c = MySQLdb.connect(host="127.0.0.1", port=port, user="root", passwd="pw")
cur = c.cursor()
cur.execute("select 1")
assert cur.fetchall() == ((1,),)
# libmariadb's mysql_change_user: a native-password start switched to caching_sha2.
c.change_user("sha", "pw2", "db2")
cur = c.cursor()
cur.execute("select 1")
assert cur.fetchall() == ((1,),)
c.change_user("root", "pw")
try:
    c.change_user("root", "bad")
    raise SystemExit("wrong password accepted")
except MySQLdb.OperationalError as e:
    assert e.args[0] == 1045, e.args
print("ok")
"#;

#[test]
fn libmariadb_change_user_authenticates_again() {
    if !have("/usr/bin/python3", "--version") {
        return;
    }
    let has_mysqldb = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import MySQLdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_mysqldb {
        support::skip_outside_ci("python3-mysqldb is not installed");
        return;
    }
    let addr = start(64 << 20);
    let out = python(addr, MYSQLDB_SCRIPT);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "ok\n");
}
