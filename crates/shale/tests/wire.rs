//! Protocol features through real clients against the built `shale serve`: the compressed
//! protocol (the mariadb client's `--compress`, `MySQLdb`'s `compress=1`, sysbench's
//! `--mysql-compression=on` with prepared statements) with results of several MB, and the
//! `Compression` status variable. Byte-level tests of the same features are in
//! crates/shale-server/tests (compressed.rs).

mod support;

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use support::{have, scratch, start_shale, Server};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The mariadb client in batch mode with extra flags, `sql` on its standard input (a long
/// INSERT does not fit in an argument); stdout, or a panic with its stderr.
fn mariadb(server: &Server, flags: &[&str], sql: &str) -> String {
    let mut child = Command::new("mariadb")
        .args([
            "--no-defaults",
            "-h127.0.0.1",
            &format!("-P{}", server.port),
            "-uroot",
            "--batch",
            "--skip-column-names",
        ])
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mariadb");
    let mut stdin = child.stdin.take().unwrap();
    let input = sql.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let shown: String = sql.chars().take(200).collect();
    assert!(out.status.success(), "{shown}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// Runs a Python script with `/usr/bin/python3` (which has `MySQLdb` and `PyMySQL`); `PORT` is
/// set in its environment.
fn python(server: &Server, script: &str) -> Output {
    Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .env("PORT", server.port.to_string())
        .output()
        .expect("run python3")
}

/// The number after `label` in sysbench's summary (`transactions:   1234   (246.6 per sec.)`).
fn summary(stdout: &str, label: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{label}` in:\n{stdout}"))
}

fn have_mysqldb() -> bool {
    have("/usr/bin/python3", &["-c", "import MySQLdb"])
}

/// A table of `rows` rows of 100 bytes each (about 10 KB per 100 rows), made with the
/// mariadb client.
fn fill(server: &Server, rows: u32) {
    mariadb(
        server,
        &[],
        "CREATE DATABASE w; CREATE TABLE w.t (id INT PRIMARY KEY, s VARCHAR(200))",
    );
    let mut sql = String::from("INSERT INTO w.t VALUES ");
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        let _ = write!(sql, "({i}, CONCAT(REPEAT('a', 50), LPAD({i}, 50, '-')))");
    }
    mariadb(server, &[], &sql);
}

#[test]
fn the_mariadb_client_with_compress_gets_large_results_whole() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let server = start_shale(&scratch("wire-compress-mariadb"));
    fill(&server, 40_000);
    let plain = mariadb(&server, &[], "SELECT id, s FROM w.t ORDER BY id");
    let compressed = mariadb(
        &server,
        &["--compress"],
        "SELECT id, s FROM w.t ORDER BY id",
    );
    assert!(plain.len() > 4_000_000, "{} bytes", plain.len());
    assert!(compressed == plain, "the same rows either way");
    // One value of 5 MB: a packet that spans compressed packets.
    let big = mariadb(
        &server,
        &["--compress", "--max-allowed-packet=64M"],
        "SELECT LENGTH(REPEAT('xyz', 1700000)), REPEAT('xyz', 1700000)",
    );
    let (length, value) = big.trim_end().split_once('\t').unwrap();
    assert_eq!(length, "5100000");
    assert_eq!(value, "xyz".repeat(1_700_000));
    let status = mariadb(
        &server,
        &["--compress"],
        "SHOW SESSION STATUS LIKE 'Compression'",
    );
    assert_eq!(status, "Compression\tON\n");
    let status = mariadb(&server, &[], "SHOW SESSION STATUS LIKE 'Compression'");
    assert_eq!(status, "Compression\tOFF\n");
}

#[test]
fn mysqldb_with_compress_reads_megabytes_and_writes() {
    if !have("mariadb", &["--version"]) || !have_mysqldb() {
        return;
    }
    let server = start_shale(&scratch("wire-compress-mysqldb"));
    fill(&server, 30_000);
    let out = python(
        &server,
        r#"
import os, MySQLdb
c = MySQLdb.connect(host="127.0.0.1", port=int(os.environ["PORT"]), user="root", passwd="",
                    db="w", compress=1)
cur = c.cursor()
cur.execute("SHOW SESSION STATUS LIKE 'Compression'")
assert cur.fetchall() == (("Compression", "ON"),), "compressed"
cur.execute("SELECT id, s FROM t ORDER BY id")
rows = cur.fetchall()
assert len(rows) == 30000, len(rows)
for i, (id, s) in enumerate(rows):
    assert id == i and s == "a" * 50 + str(i).rjust(50, "-"), (i, id, s)
# A large statement from the client: many rows in one INSERT (several MB compressed).
values = ",".join("(%d, '%s')" % (100000 + i, "b" * 150) for i in range(20000))
cur.execute("INSERT INTO t VALUES " + values)
assert cur.rowcount == 20000
c.commit()
cur.execute("SELECT COUNT(*), SUM(LENGTH(s)) FROM t WHERE id >= 100000")
assert cur.fetchall() == ((20000, 3000000),), "inserted"
# Parameters (MySQLdb inlines them in the text) and a server-side (unbuffered) cursor.
ss = c.cursor(MySQLdb.cursors.SSCursor)
ss.execute("SELECT id FROM t WHERE id < %s ORDER BY id", (1000,))
assert [r[0] for r in ss] == list(range(1000))
print("ok")
"#,
    );
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "ok\n");
}

#[test]
fn sysbench_with_compression_runs_prepared_statements() {
    if !have("sysbench", &["--version"]) || !have("mariadb", &["--version"]) {
        return;
    }
    let server = start_shale(&scratch("wire-compress-sysbench"));
    mariadb(&server, &[], "CREATE DATABASE sbtest");
    let sysbench = |command: &str| {
        let out = Command::new("sysbench")
            .args([
                "oltp_read_only",
                "--db-driver=mysql",
                "--mysql-host=127.0.0.1",
                &format!("--mysql-port={}", server.port),
                "--mysql-user=root",
                "--mysql-password=",
                "--mysql-db=sbtest",
                "--mysql-compression=on",
                "--tables=1",
                "--table-size=2000",
                "--time=2",
                "--threads=2",
                "--report-interval=0",
                command,
            ])
            .output()
            .expect("run sysbench");
        assert!(
            out.status.success(),
            "sysbench {command}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    sysbench("prepare");
    let stdout = sysbench("run");
    let transactions = summary(&stdout, "transactions:");
    assert!(transactions > 0, "{stdout}");
    assert_eq!(summary(&stdout, "ignored errors:"), 0, "{stdout}");
    eprintln!("oltp_read_only with compression: {transactions} transactions in 2 s");
}
