//! Temporary tables through `shale serve` with `PyMySQL` (issue 22): each connection's
//! temporary table is its own and shadows the base table only for it, and it is dropped when
//! the connection closes or is reset (`COM_RESET_CONNECTION`), as `Shale_temporary_tables`
//! (the temporary tables alive in the server) shows.
//!
//! Skips without `PyMySQL`.

mod support;

use support::{have, pymysql, scratch, start_shale};

const SCRIPT: &str = r#"
import os, time, pymysql
port = int(os.environ["PORT"])
def connect():
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True)
def rows(cur, sql):
    cur.execute(sql)
    return [tuple(r) for r in cur.fetchall()]
def fails(cur, sql, code):
    try:
        cur.execute(sql)
    except pymysql.err.MySQLError as e:
        assert e.args[0] == code, (sql, e.args)
        return
    raise SystemExit("no error: " + sql)
def alive(cur):
    return int(rows(cur, "SHOW GLOBAL STATUS LIKE 'Shale_temporary_tables'")[0][1])
def wait_alive(cur, n):
    deadline = time.time() + 60
    while alive(cur) != n:
        assert time.time() < deadline, ("temporary tables alive", alive(cur), "wanted", n)
        time.sleep(0.05)

setup = connect()
s = setup.cursor()
s.execute("CREATE DATABASE d")
s.execute("CREATE TABLE d.base (id INT PRIMARY KEY, v VARCHAR(10))")
s.execute("INSERT INTO d.base VALUES (1, 'base')")
assert alive(s) == 0

a, b = connect(), connect()
ca, cb = a.cursor(), b.cursor()
ca.execute("USE d")
cb.execute("USE d")
ca.execute("CREATE TEMPORARY TABLE only_a (x INT)")
ca.execute("INSERT INTO only_a VALUES (1), (2)")
ca.execute("CREATE TEMPORARY TABLE base (id INT, w INT)")
ca.execute("INSERT INTO base VALUES (10, 100)")
# Private: b sees neither, and the base table under the shadowed name.
fails(cb, "SELECT * FROM only_a", 1146)
assert rows(cb, "SELECT * FROM base") == [(1, "base")]
assert rows(ca, "SELECT * FROM base") == [(10, 100)]
# Two sessions may each have a temporary table of the same name.
cb.execute("CREATE TEMPORARY TABLE only_a (y VARCHAR(5))")
cb.execute("INSERT INTO only_a VALUES ('b')")
assert rows(cb, "SELECT * FROM only_a") == [("b",)]
assert rows(ca, "SELECT * FROM only_a ORDER BY x") == [(1,), (2,)]
assert ("only_a",) not in rows(cb, "SHOW TABLES")
assert alive(s) == 3
# Closing a's connection drops its two tables.
a.close()
wait_alive(s, 1)
# COM_RESET_CONNECTION drops b's.
b._execute_command(0x1F, b"")
b._read_ok_packet()
assert alive(s) == 0
fails(cb, "SELECT * FROM only_a", 1146)
assert rows(cb, "SELECT * FROM base") == [(1, "base")]
b.close()
setup.close()
print("ok")
"#;

#[test]
fn pymysql_temporary_tables_are_private_and_end_with_the_connection() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let server = start_shale(&scratch("temp-tables-pymysql"));
    assert_eq!(pymysql(server.port, SCRIPT), "ok\n");
}
