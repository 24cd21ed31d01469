//! Account locking, the administrator's extra connection and the KILL / SHOW PROCESSLIST
//! privileges, through `PyMySQL` against `shale serve` (docs/sql.md "Accounts and
//! privileges", docs/server.md "Limits"):
//! - `FAILED_LOGIN_ATTEMPTS` / `PASSWORD_LOCK_TIME`: the n-th consecutive failure answers 3955
//!   and locks even the right password out, a success resets the count, ALTER USER ...
//!   ACCOUNT UNLOCK ends the lock; ACCOUNT LOCK answers 3118; SHOW CREATE USER shows the
//!   settings, and they survive a restart;
//! - with `--max-connections 2`, a third connection is let in only for an account with
//!   `CONNECTION_ADMIN` (or SUPER); a fourth is refused for anyone;
//! - an account without SUPER / `CONNECTION_ADMIN` kills only its own sessions (1095
//!   otherwise), and without PROCESS lists only its own.
//!
//! A missing `PyMySQL` skips the tests, except under CI=true.

mod support;

use support::have;

/// Runs a `PyMySQL` script after [`PY_PRELUDE`] (`support::pymysql`).
fn pymysql(port: u16, script: &str) -> String {
    support::pymysql(port, &format!("{PY_PRELUDE}{script}"))
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
            return cur.fetchall()
    except pymysql.err.MySQLError as e:
        return "error %d %s" % (e.args[0], e.args[1])
def login(user, password):
    try:
        c = connect(user, password)
        c.close()
        return "ok"
    except pymysql.err.MySQLError as e:
        return "%d %s" % (e.args[0], e.args[1])
"#;

fn available() -> bool {
    have("/usr/bin/python3", &["-c", "import pymysql"])
}

/// Per-host login delays off, so the failures here are not slowed.
const NO_DELAYS: &[&str] = &["--connection-control-failed-connections-threshold", "0"];

#[test]
fn failed_logins_lock_an_account_and_account_lock_refuses_it() {
    if !available() {
        return;
    }
    let dir = support::scratch("account-locks");
    let mut server = support::start_shale_with(&dir, NO_DELAYS);
    let out = pymysql(
        server.port,
        r"
root = connect('root', '')
print(run(root, '''CREATE USER 'lk'@'%' IDENTIFIED BY 'pw' FAILED_LOGIN_ATTEMPTS 3
                   PASSWORD_LOCK_TIME 2'''))
print(run(root, '''CREATE USER 'ub'@'%' IDENTIFIED BY 'pw' FAILED_LOGIN_ATTEMPTS 1
                   PASSWORD_LOCK_TIME UNBOUNDED'''))
print(run(root, '''CREATE USER 'big'@'%' FAILED_LOGIN_ATTEMPTS 32768'''))
for pw in ['bad', 'bad', 'pw', 'bad', 'bad', 'bad', 'pw']:
    print(pw, login('lk', pw))
print(login('ub', 'bad'))
print(run(root, '''SHOW CREATE USER 'lk'@'%' ''')[0][0].split(' REQUIRE ', 1)[1])
print(run(root, ''' ALTER USER 'lk'@'%' ACCOUNT UNLOCK'''))
print(login('lk', 'pw'))
print(run(root, '''ALTER USER 'lk'@'%' ACCOUNT LOCK'''))
print(login('lk', 'pw'))
print(login('lk', 'bad'))
",
    );
    assert_eq!(
        out,
        "()\n\
         ()\n\
         error 1525 Incorrect FAILED_LOGIN_ATTEMPTS value: '32768'\n\
         bad 1045 Access denied for user 'lk'@'localhost' (using password: YES)\n\
         bad 1045 Access denied for user 'lk'@'localhost' (using password: YES)\n\
         pw ok\n\
         bad 1045 Access denied for user 'lk'@'localhost' (using password: YES)\n\
         bad 1045 Access denied for user 'lk'@'localhost' (using password: YES)\n\
         bad 3955 Access denied for user 'lk'@'localhost'. Account is blocked for 2 day(s) (2 day(s) remaining) due to 3 consecutive failed logins.\n\
         pw 3955 Access denied for user 'lk'@'localhost'. Account is blocked for 2 day(s) (2 day(s) remaining) due to 3 consecutive failed logins.\n\
         3955 Access denied for user 'ub'@'localhost'. Account is blocked for unlimited day(s) (unlimited day(s) remaining) due to 1 consecutive failed logins.\n\
         NONE PASSWORD EXPIRE DEFAULT ACCOUNT UNLOCK PASSWORD HISTORY DEFAULT PASSWORD REUSE INTERVAL DEFAULT PASSWORD REQUIRE CURRENT DEFAULT FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME 2\n\
         ()\n\
         ok\n\
         ()\n\
         3118 Access denied for user 'lk'@'localhost'. Account is locked.\n\
         1045 Access denied for user 'lk'@'localhost' (using password: YES)\n"
    );
    // The settings are stored: after a restart the account is still locked (ACCOUNT LOCK),
    // and the temporary lock of `ub` is gone, as MySQL's (it lives in memory).
    server.stop();
    let server = support::start_shale_with(&dir, NO_DELAYS);
    let out = pymysql(
        server.port,
        r"
root = connect('root', '')
print(login('lk', 'pw'))
print(login('ub', 'pw'))
print(run(root, '''SHOW CREATE USER 'ub'@'%' ''')[0][0].split(' CURRENT DEFAULT')[1])
print(run(root, '''ALTER USER 'ub'@'%' PASSWORD_LOCK_TIME 0'''))
for i in range(3):
    print(login('ub', 'bad'))
print(login('ub', 'pw'))
",
    );
    assert_eq!(
        out,
        "3118 Access denied for user 'lk'@'localhost'. Account is locked.\n\
         ok\n \
         FAILED_LOGIN_ATTEMPTS 1 PASSWORD_LOCK_TIME UNBOUNDED\n\
         ()\n\
         1045 Access denied for user 'ub'@'localhost' (using password: YES)\n\
         1045 Access denied for user 'ub'@'localhost' (using password: YES)\n\
         1045 Access denied for user 'ub'@'localhost' (using password: YES)\n\
         ok\n"
    );
}

#[test]
fn past_max_connections_only_an_administrator_gets_the_extra_connection() {
    if !available() {
        return;
    }
    let dir = support::scratch("admin-connection");
    let mut args = vec!["--max-connections", "2"];
    args.extend_from_slice(NO_DELAYS);
    let server = support::start_shale_with(&dir, &args);
    let out = pymysql(
        server.port,
        r"
import time
root = connect('root', '')
run(root, '''CREATE USER 'app'@'%' IDENTIFIED BY 'pw' ''')
run(root, '''CREATE USER 'dba'@'%' IDENTIFIED BY 'pw' ''')
print(run(root, '''GRANT CONNECTION_ADMIN ON *.* TO 'dba'@'%' '''))
root.close()
time.sleep(0.3)
held = [connect('app', 'pw'), connect('app', 'pw')]
print('app', login('app', 'pw'))
time.sleep(0.3)
dba = connect('dba', 'pw')
print('dba', run(dba, 'SELECT 1'))
# (PyMySQL cuts the first characters of an error sent before the handshake, which
# has no SQL state, as MySQL's: only the code is compared.)
print('fourth', login('dba', 'pw').split()[0])
dba.close()
time.sleep(0.3)
root = connect('root', '')
print('root', run(root, 'SELECT 2'))
",
    );
    assert_eq!(
        out,
        "()\n\
         app 1040 Too many connections\n\
         dba ((1,),)\n\
         fourth 1040\n\
         root ((2,),)\n"
    );
}

#[test]
fn without_super_an_account_kills_and_lists_only_its_own_sessions() {
    if !available() {
        return;
    }
    let dir = support::scratch("kill-privileges");
    let server = support::start_shale_with(&dir, NO_DELAYS);
    let out = pymysql(
        server.port,
        r"
root = connect('root', '')
for u in ['a', 'b', 'p']:
    run(root, '''CREATE USER '%s'@'%%' IDENTIFIED BY 'pw' ''' % u)
run(root, '''GRANT PROCESS ON *.* TO 'p'@'%' ''')
a1, a2, b, p = connect('a', 'pw'), connect('a', 'pw'), connect('b', 'pw'), connect('p', 'pw')
ids = {}
for name, c in [('a1', a1), ('a2', a2), ('b', b), ('p', p), ('root', root)]:
    ids[name] = run(c, 'SELECT CONNECTION_ID()')[0][0]
def users(c):
    rows = run(c, 'SHOW PROCESSLIST')
    return sorted(r[1] for r in rows) if isinstance(rows, tuple) else rows
print('a sees', users(a1))
print('p sees', users(p))
print('root sees', users(root))
def refused(c, sql, id, name):
    out = run(c, sql % id)
    return out[:-len(str(id))] + name if out.endswith(' %d' % id) else out
print(refused(a1, 'KILL %d', ids['b'], 'B'))
print(refused(a1, 'KILL QUERY %d', ids['root'], 'R'))
print(refused(p, 'KILL %d', ids['a2'], 'A2'))
print(run(a1, 'KILL 999999'))
print('a kills its own', run(a1, 'KILL %d' % ids['a2']))
r = run(a2, 'SELECT 1')
print('a2 after', 'error' if isinstance(r, str) else r)
print('root kills b', run(root, 'KILL %d' % ids['b']))
",
    );
    assert_eq!(
        out,
        "a sees ['a', 'a']\n\
         p sees ['a', 'a', 'b', 'p', 'root']\n\
         root sees ['a', 'a', 'b', 'p', 'root']\n\
         error 1095 You are not owner of thread B\n\
         error 1095 You are not owner of thread R\n\
         error 1095 You are not owner of thread A2\n\
         error 1094 Unknown thread id: 999999\n\
         a kills its own ()\n\
         a2 after error\n\
         root kills b ()\n"
    );
}
