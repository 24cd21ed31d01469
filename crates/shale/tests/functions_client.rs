//! Issue 22's third function list through a real client against `shale serve`: PyMySQL gets
//! the binary strings of `AES_ENCRYPT` and `INET6_ATON` back byte for byte, `INTERVAL()` and
//! `CHAR(... USING cs)` parse, `block_encryption_mode` is a session setting, and a
//! `GROUP_CONCAT` cut at `group_concat_max_len` reports warning 1260 in the result's warning
//! count and in SHOW WARNINGS.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use std::process::Command;

use support::{have, scratch, start_shale};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const PYMYSQL_SCRIPT: &str = r#"
import os, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user="root", password="", autocommit=True)
cur = c.cursor()
cur.execute("CREATE DATABASE f3")
cur.execute("USE f3")
cur.execute("CREATE TABLE secrets (id INT PRIMARY KEY, sealed VARBINARY(64), ip VARBINARY(16))")
cur.executemany("INSERT INTO secrets VALUES (%s, AES_ENCRYPT(%s, %s), INET6_ATON(%s))", [
    (1, "text", "F3229A0B371ED2D9441B830D21A390C3", "10.0.5.9"),
    (2, "päivää", "key", "fdfe::5a55:caff:fefa:9089"),
])
cur.execute("SELECT sealed, ip, AES_DECRYPT(sealed, %s), INET6_NTOA(ip) FROM secrets WHERE id = 1",
            ("F3229A0B371ED2D9441B830D21A390C3",))
sealed, ip, plain, ip_text = cur.fetchone()
assert sealed == bytes.fromhex("C2BD89103557CCBF7ED97B51860225A0"), sealed
assert ip == bytes([10, 0, 5, 9]), ip
assert plain == b"text" and ip_text == "10.0.5.9", (plain, ip_text)
cur.execute("SELECT CAST(AES_DECRYPT(sealed, 'key') AS CHAR), LENGTH(ip) FROM secrets WHERE id = 2")
assert cur.fetchone() == ("päivää", 16)
cur.execute("SET block_encryption_mode = 'aes-256-cbc'")
cur.execute("SELECT AES_DECRYPT(AES_ENCRYPT('cbc', 'k', %s), 'k', %s)", (b"0123456789abcdef", b"0123456789abcdef"))
assert cur.fetchone() == (b"cbc",)
try:
    cur.execute("SELECT AES_ENCRYPT('x', 'k')")
    raise SystemExit("no error for CBC without an iv")
except pymysql.err.MySQLError as e:
    assert e.args[0] == 1582, e.args
cur.execute("SELECT INTERVAL(23, 1, 15, 17, 30), CHAR(77, 121 USING utf8mb4), MAKE_SET(5, 'a', 'b', 'c'), INET_NTOA(INET_ATON('127.1'))")
assert cur.fetchone() == (3, "My", "a,c", "127.0.0.1")
cur.execute("SET SESSION group_concat_max_len = 4")
cur.execute("SELECT GROUP_CONCAT(id) FROM (SELECT 1 AS id UNION ALL SELECT 22 UNION ALL SELECT 333) AS t")
assert cur.fetchone() == ("1,22",)
assert cur._result.warning_count == 1, cur._result.warning_count
cur.execute("SHOW WARNINGS")
assert cur.fetchall() == (("Warning", 1260, "Row 3 was cut by GROUP_CONCAT()"),), "warnings"
cur.execute("SELECT GROUP_CONCAT(id) FROM (SELECT 1 AS id) AS t")
assert cur._result.warning_count == 0
c.close()
print("ok")
"#;

#[test]
fn pymysql_runs_the_third_function_list() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let server = start_shale(&scratch("functions3-pymysql"));
    let out = Command::new("/usr/bin/python3")
        .args(["-c", PYMYSQL_SCRIPT])
        .env("PORT", server.port.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "ok\n");
}
