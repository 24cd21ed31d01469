//! Character set conversion through real clients, compared with MariaDB's answers: PyMySQL's
//! `bytes` parameters (inlined with raw bytes as `'...'`, or as `_binary'...'` with
//! `binary_prefix=True`) round-trip every byte value
//! through VARBINARY and BLOB columns; a latin1 connection (PyMySQL `charset='latin1'`, and
//! the mariadb client with `--default-character-set=latin1`) writes and reads 'café' and '€'
//! in a utf8mb4 column, and reads a character latin1 lacks as `?`.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::process::{Command, Stdio};

use support::{have, pymysql, scratch, start_mariadb, start_shale, Server};

const SCRIPT: &str = r#"
import os, pymysql
port = int(os.environ["PORT"])
def connect(charset):
    return pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                           autocommit=True, charset=charset)
u = connect("utf8mb4").cursor()
u.execute("CREATE DATABASE cs")
u.execute("CREATE TABLE cs.t (id INT PRIMARY KEY, b VARBINARY(300), bl BLOB, s VARCHAR(20))")
every = bytes(range(256))
u.execute("INSERT INTO cs.t (id, b, bl) VALUES (%s, %s, %s)", (1, every, every[::-1]))
u.execute("SELECT b, bl, HEX(bl), LENGTH(b) FROM cs.t WHERE id = 1")
b, bl, hexed, n = u.fetchone()
assert b == every and bl == every[::-1] and n == 256, (b, bl, n)
assert hexed == every[::-1].hex().upper(), hexed
u.execute("SELECT id FROM cs.t WHERE b = %s", (every,))
print("where bytes", u.fetchall())
# With binary_prefix=True PyMySQL sends _binary'...' with the raw bytes.
bp = pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                     autocommit=True, charset="utf8mb4", binary_prefix=True).cursor()
bp.execute("INSERT INTO cs.t (id, b, bl) VALUES (%s, %s, %s)", (0, every, every))
bp.execute("SELECT b, bl FROM cs.t WHERE id = 0 AND b = %s", (every,))
assert bp.fetchone() == (every, every), "_binary"

l = connect("latin1").cursor()
l.execute("INSERT INTO cs.t (id, s) VALUES (%s, %s), (%s, %s)", (2, "café", 3, "€"))
u.execute("INSERT INTO cs.t (id, s) VALUES (4, 'жx😀')")
l.execute("SELECT id, s FROM cs.t WHERE id >= 2 ORDER BY id")
print("latin1 reads", l.fetchall())
print("latin1 charsetnr", [f.charsetnr for f in l._result.fields])
u.execute("SELECT id, s, HEX(s) FROM cs.t WHERE id >= 2 ORDER BY id")
print("utf8mb4 reads", u.fetchall())
l.execute("SELECT id FROM cs.t WHERE s = %s", ("café",))
print("latin1 where", l.fetchall())
l.execute("SELECT b FROM cs.t WHERE id = 1")
assert l.fetchone()[0] == every, "binary columns are not converted"
"#;

/// Runs `sql` (raw bytes, in the client's character set) with the mariadb client using
/// `--default-character-set=charset`; its stdout as bytes.
fn mariadb_in(server: &Server, charset: &str, sql: &[u8]) -> Vec<u8> {
    let output = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            "--batch",
            "--skip-column-names",
            &format!("--default-character-set={charset}"),
            "-e",
        ])
        .arg(OsStr::from_bytes(sql))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}: {}",
        server.name,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// What the mariadb client in latin1 writes and reads back, and how it is stored.
fn latin1_client(server: &Server) -> Vec<u8> {
    let mut out = mariadb_in(
        server,
        "latin1",
        b"INSERT INTO cs.t (id, s) VALUES (10, 'caf\xE9 \x80'); \
          SELECT s FROM cs.t WHERE id IN (2, 3, 4, 10) ORDER BY id",
    );
    out.extend(mariadb_in(
        server,
        "utf8mb4",
        b"SELECT HEX(s), s FROM cs.t WHERE id = 10",
    ));
    out
}

#[test]
fn latin1_and_binary_clients_see_what_mariadb_clients_see() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) || !have("mariadb", &["--version"]) {
        return;
    }
    let dir = scratch("charsets");
    let shale = start_shale(&dir);
    let shale_py = pymysql(shale.port, SCRIPT);
    let shale_cli = latin1_client(&shale);
    if !have("mariadbd", &["--version"]) {
        return;
    }
    let mariadb = start_mariadb(&dir.join("mariadb"));
    let mariadb_py = pymysql(mariadb.port, SCRIPT);
    let mariadb_cli = latin1_client(&mariadb);

    assert_eq!(shale_py, mariadb_py);
    // What the answers are, so a change in MariaDB's could not hide a wrong one of ours.
    assert!(
        shale_py.contains("latin1 reads ((2, 'café'), (3, '€'), (4, '?x?'))"),
        "{shale_py}"
    );
    assert!(shale_py.contains("latin1 charsetnr [63, 8]"), "{shale_py}");
    assert!(
        shale_py.contains("(2, 'café', '636166C3A9'), (3, '€', 'E282AC')"),
        "{shale_py}"
    );
    assert_eq!(
        String::from_utf8_lossy(&shale_cli),
        String::from_utf8_lossy(&mariadb_cli)
    );
    assert_eq!(
        shale_cli,
        b"caf\xE9\n\x80\n?x?\ncaf\xE9 \x80\n636166C3A920E282AC\tcaf\xC3\xA9 \xE2\x82\xAC\n"
    );
}
