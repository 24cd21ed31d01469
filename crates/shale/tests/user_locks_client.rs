//! Named user locks through `shale serve` with `PyMySQL` (issue 22): two connections contend
//! for a lock, a waiting `GET_LOCK` returns when the holder's connection closes, and the
//! server's connection ids are what `IS_USED_LOCK` reports.
//!
//! Skips (prints SKIPPED) without `PyMySQL`, except under CI=true.

mod support;

use support::{have, pymysql, scratch, start_shale};

const SCRIPT: &str = r#"
import os, threading, time, pymysql
port = int(os.environ["PORT"])
def connect():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True)
def one(cur, sql, args=None):
    cur.execute(sql, args)
    return cur.fetchone()[0]
a, b = connect(), connect()
ca, cb = a.cursor(), b.cursor()
a_id = one(ca, "SELECT CONNECTION_ID()")
b_id = one(cb, "SELECT CONNECTION_ID()")
assert one(ca, "SELECT GET_LOCK(%s, 0)", ("migrations",)) == 1
assert one(ca, "SELECT GET_LOCK('migrations', 0)") == 1, "re-entrant"
assert one(cb, "SELECT GET_LOCK('Migrations', 0.1)") == 0, "held by a"
assert one(cb, "SELECT IS_USED_LOCK('migrations')") == a_id
assert one(cb, "SELECT IS_FREE_LOCK('migrations')") == 0
assert one(cb, "SELECT RELEASE_LOCK('migrations')") == 0, "not b's"
assert one(cb, "SELECT RELEASE_LOCK('nobody')") is None
for sql, code in [("SELECT GET_LOCK(REPEAT('x', 65), 0)", 3057), ("SELECT GET_LOCK(NULL, 0)", 3057),
                  ("SELECT GET_LOCK('x')", 1582)]:
    try:
        cb.execute(sql)
        raise SystemExit("no error: " + sql)
    except pymysql.err.MySQLError as e:
        assert e.args[0] == code, e.args
# b waits; a's connection closes (no RELEASE_LOCK): b gets the lock.
result = {}
def wait():
    result["got"] = one(cb, "SELECT GET_LOCK('migrations', 60)")
t = threading.Thread(target=wait)
t.start()
time.sleep(0.3)
assert "got" not in result, "did not wait"
a.close()
t.join(30)
assert result.get("got") == 1, result
assert one(cb, "SELECT IS_USED_LOCK('migrations')") == b_id
assert one(cb, "SELECT RELEASE_ALL_LOCKS()") == 1
b.close()
# b's close frees nothing more; a fresh connection sees the lock free.
c = connect()
assert one(c.cursor(), "SELECT IS_FREE_LOCK('migrations')") == 1
c.close()
print("ok")
"#;

#[test]
fn pymysql_connections_share_user_locks_and_closing_releases_them() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let server = start_shale(&scratch("user-locks-pymysql"));
    assert_eq!(pymysql(server.port, SCRIPT), "ok\n");
}
