//! Accounts, privileges and login abuse through real clients against `shale serve`: the
//! mariadb command-line client and `PyMySQL` log in as accounts made with each plugin, an
//! account without grants is refused (with MySQL's codes) until a GRANT, a REVOKE applies to
//! an open connection at its next statement, grants survive a restart, and repeated failed
//! logins from one host are delayed (measured; the test asserts only delay >= the minimum).
//!
//! A missing client skips the test, except under CI=true.

mod support;

use std::process::Command;

use support::{have, pymysql};

/// The mariadb client as `user` with `password` (batch, no column names): stdout, or the
/// error line.
fn mariadb(port: u16, user: &str, password: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("mariadb")
        .args(["--no-defaults", "--protocol=TCP", "-h127.0.0.1", "--batch"])
        .arg("--skip-column-names")
        .arg(format!("-P{port}"))
        .arg(format!("-u{user}"))
        .arg(format!("--password={password}"))
        .args(["-e", sql])
        .output()
        .expect("run mariadb");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

const PY_PRELUDE: &str = r#"
import os, pymysql
port = int(os.environ["PORT"])
def connect(user, password, **kw):
    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password,
                           autocommit=True, **kw)
def run(c, sql):
    try:
        with c.cursor() as cur:
            cur.execute(sql)
            return repr(cur.fetchall())
    except pymysql.err.MySQLError as e:
        return "error %d" % e.args[0]
"#;

/// An account without a grant (`nat`) can see or do nothing in `d`, each with MySQL's code.
fn assert_denied_without_a_grant(port: u16) {
    // Without a grant: nothing in d can be seen or done, each with MySQL's code.
    let script = format!(
        "{PY_PRELUDE}
c = connect('nat', 'pw2')
for sql in ['SHOW DATABASES', 'SHOW TABLES FROM d', 'USE d', 'SELECT * FROM d.t',
            'INSERT INTO d.t VALUES (2, 20)', 'UPDATE d.t SET v = 0',
            'DELETE FROM d.t WHERE id = 1', 'CREATE TABLE d.u (id INT PRIMARY KEY)',
            'DROP TABLE d.t', 'CREATE INDEX iv ON d.t (v)', 'SELECT * FROM mysql.user',
            'SET GLOBAL autocommit = 1', 'CREATE USER x']:
    print(sql, '->', run(c, sql))
"
    );
    let before = pymysql(port, &script);
    assert_eq!(
        before,
        "SHOW DATABASES -> ()\n\
         SHOW TABLES FROM d -> error 1044\n\
         USE d -> error 1044\n\
         SELECT * FROM d.t -> error 1142\n\
         INSERT INTO d.t VALUES (2, 20) -> error 1142\n\
         UPDATE d.t SET v = 0 -> error 1142\n\
         DELETE FROM d.t WHERE id = 1 -> error 1142\n\
         CREATE TABLE d.u (id INT PRIMARY KEY) -> error 1142\n\
         DROP TABLE d.t -> error 1142\n\
         CREATE INDEX iv ON d.t (v) -> error 1142\n\
         SELECT * FROM mysql.user -> error 1142\n\
         SET GLOBAL autocommit = 1 -> error 1227\n\
         CREATE USER x -> error 1227\n"
    );
    let message = mariadb(port, "nat", "pw2", "SELECT * FROM d.t").unwrap_err();
    assert!(
        message.ends_with(
            "ERROR 1142 (42000) at line 1: SELECT command denied to user 'nat'@'localhost' for \
             table 't'"
        ),
        "{message}"
    );
}

#[test]
fn accounts_of_each_plugin_log_in_and_privileges_gate_every_statement() {
    if !have("mariadb", &["--version"]) || !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let dir = support::scratch("accounts");
    let mut server = support::start_shale(&dir);
    let port = server.port;
    let root = |sql: &str| mariadb(port, "root", "", sql).unwrap();
    root(
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v INT); \
         INSERT INTO d.t VALUES (1, 10); \
         CREATE USER 'sha'@'%' IDENTIFIED BY 'pw1'; \
         CREATE USER 'nat'@'%' IDENTIFIED WITH mysql_native_password BY 'pw2'; \
         CREATE USER 'open'@'%'",
    );
    assert_eq!(
        root("SELECT User, plugin FROM mysql.user ORDER BY User"),
        "nat\tmysql_native_password\nopen\tcaching_sha2_password\n\
         root\tmysql_native_password\nsha\tcaching_sha2_password\n"
    );
    // Each plugin with the mariadb client (caching_sha2 full authentication over TLS or
    // RSA, then the fast path on the second login) and with PyMySQL.
    for _ in 0..2 {
        assert_eq!(
            mariadb(port, "sha", "pw1", "SELECT CURRENT_USER(), USER()").unwrap(),
            "sha@%\tsha@localhost\n"
        );
    }
    for (user, password) in [("nat", "pw2"), ("open", "")] {
        let out = mariadb(port, user, password, "SELECT CURRENT_USER()").unwrap();
        assert_eq!(out, format!("{user}@%\n"));
    }
    let denied = mariadb(port, "sha", "wrong", "SELECT 1").unwrap_err();
    assert!(
        denied.contains("ERROR 1045 (28000): Access denied for user 'sha'@'localhost'"),
        "{denied}"
    );
    let out = pymysql(
        port,
        &format!(
            "{PY_PRELUDE}
for user, pw in [('sha', 'pw1'), ('nat', 'pw2'), ('open', '')]:
    c = connect(user, pw, ssl={{'check_hostname': False}}) if user == 'sha' else connect(user, pw)
    print(run(c, 'SELECT CURRENT_USER()'))
"
        ),
    );
    assert_eq!(out, "(('sha@%',),)\n(('nat@%',),)\n(('open@%',),)\n");

    assert_denied_without_a_grant(port);

    // A GRANT applies to a connection that is already open, at its next statement; so
    // does a REVOKE.
    let out = pymysql(
        port,
        &format!(
            "{PY_PRELUDE}
import subprocess
c = connect('nat', 'pw2')
root = connect('root', '')
print(run(c, 'SELECT v FROM d.t'))
run(root, \"GRANT SELECT, INSERT ON d.* TO 'nat'@'%'\")
print(run(c, 'SELECT v FROM d.t'))
print(run(c, 'INSERT INTO d.t VALUES (2, 20)'))
print(run(c, 'UPDATE d.t SET v = 0'))
print(run(c, 'SHOW DATABASES'))
print(run(c, 'SHOW TABLES FROM d'))
print(run(root, \"SHOW GRANTS FOR 'nat'@'%'\"))
run(root, \"REVOKE INSERT ON d.* FROM 'nat'@'%'\")
print(run(c, 'INSERT INTO d.t VALUES (3, 30)'))
"
        ),
    );
    assert_eq!(
        out,
        "error 1142\n\
         ((10,),)\n\
         ()\n\
         error 1142\n\
         (('d',),)\n\
         (('t',),)\n\
         (('GRANT USAGE ON *.* TO `nat`@`%`',), ('GRANT SELECT, INSERT ON `d`.* TO `nat`@`%`',))\n\
         error 1142\n"
    );

    // Accounts and grants survive a restart; the revoked privilege stays revoked.
    server.stop();
    drop(server);
    let server = support::start_shale(&dir);
    let port = server.port;
    assert_eq!(
        mariadb(port, "nat", "pw2", "SELECT COUNT(*) FROM d.t").unwrap(),
        "2\n"
    );
    assert!(
        mariadb(port, "nat", "pw2", "INSERT INTO d.t VALUES (4, 40)")
            .unwrap_err()
            .contains("ERROR 1142")
    );
    assert_eq!(
        mariadb(port, "sha", "pw1", "SELECT CURRENT_USER()").unwrap(),
        "sha@%\n"
    );
    mariadb(port, "root", "", "DROP USER 'nat'@'%'").unwrap();
    let gone = mariadb(port, "nat", "pw2", "SELECT 1").unwrap_err();
    assert!(gone.contains("ERROR 1045"), "{gone}");
}

#[test]
fn failed_logins_from_one_host_are_delayed_and_unknown_users_look_like_known_ones() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let dir = support::scratch("login-abuse");
    let server = support::start_shale(&dir);
    let port = server.port;
    mariadb(
        port,
        "root",
        "",
        "CREATE USER 'app'@'%' IDENTIFIED WITH mysql_native_password BY 'right'",
    )
    .unwrap();
    // Times each attempt (ms) and its error; the threshold is 3, the first delay 1000 ms.
    let out = pymysql(
        port,
        &format!(
            "{PY_PRELUDE}
import time
def attempt(user, pw, bind='127.0.0.1'):
    start = time.monotonic()
    try:
        connect(user, pw, bind_address=bind).close()
        result = 'ok'
    except pymysql.err.OperationalError as e:
        result = '%d %s' % (e.args[0], e.args[1])
    return int((time.monotonic() - start) * 1000), result
for user in ['app', 'ghost', 'app']:
    print(attempt(user, 'wrong'))
print(attempt('app', 'wrong'))
print(attempt('app', 'right', bind='127.0.0.2'))
print(attempt('app', 'right'))
print(attempt('app', 'wrong'))
"
        ),
    );
    let lines: Vec<(u64, String)> = out
        .lines()
        .map(|l| {
            let (ms, rest) = l
                .trim_matches(|c| c == '(' || c == ')')
                .split_once(", ")
                .unwrap();
            // Python's repr quotes with " when the text holds a '.
            let rest = rest.trim_matches(|c| c == '\'' || c == '"');
            (ms.parse().unwrap(), rest.to_owned())
        })
        .collect();
    println!("attempt times (ms): {lines:?}");
    assert_eq!(
        lines[0].1,
        "1045 Access denied for user 'app'@'localhost' (using password: YES)"
    );
    // An unknown user gets the same answer as a known one with a wrong password.
    assert_eq!(
        lines[1].1,
        "1045 Access denied for user 'ghost'@'localhost' (using password: YES)"
    );
    // The fourth attempt from the host waits for the first delay; the answer is the same.
    assert!(lines[3].1.starts_with("1045 "), "{lines:?}");
    assert!(
        lines[3].0 >= 1000,
        "the fourth failed attempt took {} ms",
        lines[3].0
    );
    // Another host is not throttled (not timed: it must only succeed).
    assert_eq!(lines[4].1, "ok");
    // The right password from the throttled host works (after waiting out its window).
    assert_eq!(lines[5].1, "ok");
    // A success resets the host: the next failure is not delayed by the earlier ones.
    assert!(lines[6].1.starts_with("1045 "));
    drop(server);
}
