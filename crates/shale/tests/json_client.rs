//! JSON columns and functions through real clients against `shale serve`: PyMySQL sees
//! `MYSQL_TYPE_JSON` (245) with the binary charset and gets documents back as text; the
//! mariadb client prints normalized documents and MySQL's JSON errors.
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
from pymysql.constants import FIELD_TYPE
c = pymysql.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user="root", password="", autocommit=True)
cur = c.cursor()
cur.execute("CREATE DATABASE js")
cur.execute("USE js")
cur.execute("CREATE TABLE docs (id INT PRIMARY KEY, doc JSON)")
cur.executemany("INSERT INTO docs VALUES (%s, %s)", [
    (1, '{"name":"ann","tags":["a","b"],"age":41}'),
    (2, '{"name":"bob","age":7,"name":"bo"}'),
    (3, '[1, 2.5, true, null]'),
])
cur.execute("SELECT id, doc, doc->'$.name', doc->>'$.name' FROM docs ORDER BY id")
rows = cur.fetchall()
assert rows == (
    (1, '{"age": 41, "name": "ann", "tags": ["a", "b"]}', '"ann"', 'ann'),
    (2, '{"age": 7, "name": "bo"}', '"bo"', 'bo'),
    (3, '[1, 2.5, true, null]', None, None),
), rows
# The column and the JSON-typed expression are MYSQL_TYPE_JSON with the binary charset;
# ->> is a string.
assert [d[1] for d in cur.description] == [FIELD_TYPE.LONG, FIELD_TYPE.JSON, FIELD_TYPE.JSON, FIELD_TYPE.VAR_STRING], cur.description
fields = cur._result.fields
assert [f.charsetnr for f in fields[1:3]] == [63, 63], [f.charsetnr for f in fields]
# Parameters bound by the client, compared as JSON.
cur.execute("SELECT id FROM docs WHERE doc->'$.age' > %s ORDER BY id", (10,))
assert cur.fetchall() == ((1,),), "age"
cur.execute("SELECT id FROM docs WHERE doc->'$.name' = %s", ("bo",))
assert cur.fetchall() == ((2,),), "name"
cur.execute("SELECT JSON_CONTAINS(doc, %s, '$.tags') FROM docs WHERE id = 1", ('"b"',))
assert cur.fetchall() == ((1,),), "contains"
cur.execute("UPDATE docs SET doc = JSON_SET(doc, '$.age', doc->'$.age' + 1) WHERE id = 2")
cur.execute("SELECT doc FROM docs WHERE id = 2")
assert cur.fetchall() == (('{"age": 8, "name": "bo"}',),), "update"
for sql, code, message in [
    ("INSERT INTO docs VALUES (4, '{\"a\": [1, }')", 3140,
     "Invalid JSON text: \"Invalid value.\" at position 10 in value for column 'doc'."),
    ("SELECT JSON_EXTRACT('[1', '$[0]')", 3141,
     "Invalid JSON text in argument 1 to function json_extract: \"Missing a comma or ']' after an array element.\" at position 2."),
    ("SELECT JSON_EXTRACT('[1]', '$[')", 3143,
     "Invalid JSON path expression. The error is around character position 3."),
    ("CREATE INDEX i ON docs (doc)", 3152,
     "JSON column 'doc' supports indexing only via generated columns on a specified JSON path."),
]:
    try:
        cur.execute(sql)
        raise SystemExit("no error: " + sql)
    except pymysql.err.MySQLError as e:
        assert e.args == (code, message), e.args
c.close()
print("ok")
"#;

#[test]
fn pymysql_reads_json_columns_with_mysql_metadata_and_errors() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let server = start_shale(&scratch("json-pymysql"));
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

#[test]
fn mariadb_client_prints_normalized_documents() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let server = start_shale(&scratch("json-mariadb"));
    server
        .query(
            None,
            "CREATE DATABASE m; USE m; CREATE TABLE t (id INT PRIMARY KEY, j JSON); \
             INSERT INTO t VALUES (1, '{\"b\": {\"y\":1,\"x\":2}, \"a\": \"\\\\u00e9\"}')",
        )
        .unwrap();
    let got = server
        .query(
            Some("m"),
            "SELECT j, JSON_KEYS(j), j->>'$.a', JSON_LENGTH(j, '$.b') FROM t",
        )
        .unwrap();
    assert_eq!(
        got,
        "{\"a\": \"\u{e9}\", \"b\": {\"x\": 2, \"y\": 1}}\t[\"a\", \"b\"]\t\u{e9}\t2\n"
    );
    // Position 1: rapidjson (and so MySQL) stops after the `n` it took for `null`.
    let err = server
        .query(Some("m"), "INSERT INTO t VALUES (2, 'nope')")
        .unwrap_err();
    assert!(
        err.contains("ERROR 3140 (22032)") && err.contains("\"Invalid value.\" at position 1"),
        "{err}"
    );
}
