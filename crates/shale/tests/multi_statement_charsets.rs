//! A multi-statement text that changes the connection's character sets: each statement is
//! read in the character sets in force when it starts, as MySQL reads it (shale-server's
//! split.rs and command.rs), compared with MariaDB's answers. PyMySQL sends one `COM_QUERY` of
//! raw bytes (`SET NAMES latin1; INSERT ... 'caf\xE9'; SET NAMES utf8mb4; ...`); the mariadb
//! client sends one too under `DELIMITER //`. The collation a `SET NAMES ... COLLATE` in the
//! same text gives literals, and a failing statement in the middle, are checked the same way.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::process::{Command, Stdio};

use support::{have, pymysql, scratch, start_mariadb, start_shale, Server};

const SCRIPT: &str = r#"
import os, pymysql
from pymysql.constants import CLIENT
port = int(os.environ["PORT"])
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True,
                    charset="utf8mb4", client_flag=CLIENT.MULTI_STATEMENTS).cursor()
c.execute("CREATE DATABASE mc")
c.execute("CREATE TABLE mc.t (id INT PRIMARY KEY, s VARCHAR(20))")
# One COM_QUERY: the latin1 byte E9 after SET NAMES latin1, UTF-8 after SET NAMES utf8mb4.
c.execute(b"SET NAMES latin1; INSERT INTO mc.t VALUES (1, 'caf\xe9'); "
          b"SET NAMES utf8mb4; INSERT INTO mc.t VALUES (2, 'caf\xc3\xa9')")
while c.nextset():
    pass
c.execute("SELECT id, s, HEX(s) FROM mc.t ORDER BY id")
print("rows", c.fetchall())
c.execute("SET NAMES utf8mb4 COLLATE utf8mb4_bin; SELECT 'a' = 'A', COLLATION('a'); "
          "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci; SELECT 'a' = 'A'")
sets = []
while True:
    if c.description:
        sets.append(c.fetchall())
    if not c.nextset():
        break
print("collations", sets)
try:
    c.execute("SET NAMES latin1; SELECT 1; SELECT nope FROM mc.t; SELECT 2")
    while c.nextset():
        pass
    print("no error")
except pymysql.err.MySQLError as e:
    # The code only: MariaDB 10.11 names the clause 'SELECT' where MySQL says 'field list'.
    print("error", e.args[0])
c.execute("SELECT @@character_set_client")
print("after the error", c.fetchall())
"#;

/// The mariadb client with one text of several statements (DELIMITER makes it send the
/// text whole); its stdout as bytes.
fn mariadb_text(server: &Server, sql: &[u8]) -> Vec<u8> {
    let output = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            "--batch",
            "--skip-column-names",
            "--default-character-set=utf8mb4",
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

fn client_text(server: &Server) -> Vec<u8> {
    mariadb_text(
        server,
        b"DELIMITER //\n\
          SET NAMES latin1; INSERT INTO mc.t VALUES (3, '\xE9t\xE9'); SELECT s FROM mc.t \
          WHERE id = 1; SET NAMES utf8mb4; SELECT HEX(s), s FROM mc.t WHERE id = 3//\n",
    )
}

#[test]
fn set_names_applies_to_the_next_statements_of_the_same_text() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) || !have("mariadb", &["--version"]) {
        return;
    }
    let dir = scratch("multi_statement_charsets");
    let shale = start_shale(&dir);
    let shale_py = pymysql(shale.port, SCRIPT);
    let shale_cli = client_text(&shale);
    // What the answers are, so a change in MariaDB's could not hide a wrong one of ours.
    assert!(
        shale_py.contains("rows ((1, 'café', '636166C3A9'), (2, 'café', '636166C3A9'))"),
        "{shale_py}"
    );
    assert!(
        shale_py.contains("collations [((0, 'utf8mb4_bin'),), ((1,),)]"),
        "{shale_py}"
    );
    assert!(
        shale_py.contains("error 1054\nafter the error (('latin1',),)"),
        "{shale_py}"
    );
    assert_eq!(shale_cli, b"caf\xE9\nC3A974C3A9\t\xC3\xA9t\xC3\xA9\n");
    if !have("mariadbd", &["--version"]) {
        return;
    }
    let mariadb = start_mariadb(&dir.join("mariadb"));
    assert_eq!(shale_py, pymysql(mariadb.port, SCRIPT));
    assert_eq!(
        String::from_utf8_lossy(&shale_cli),
        String::from_utf8_lossy(&client_text(&mariadb))
    );
}
