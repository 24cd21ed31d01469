//! Bulk loads through real clients against `shale serve`: LOAD DATA LOCAL INFILE from the
//! mariadb client (`--local-infile=1`) and PyMySQL (`local_infile=True`), LOAD DATA of a
//! server file inside `--secure-file-priv`, and `SET shale_bulk_load` with CHECK TABLE after.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use std::fmt::Write as _;
use std::process::Command;

use support::{have, scratch, start_shale_with};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const TABLE: &str = "CREATE TABLE sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT 0, \
                     c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
                     PRIMARY KEY (id), KEY k_1 (k))";

fn csv(rows: std::ops::Range<u32>) -> String {
    let mut out = String::new();
    for i in rows {
        let _ = writeln!(out, "{i},{},\"c-{i}, with comma\",pad-{i}", i % 13);
    }
    out
}

#[test]
fn mariadb_client_load_data_local_and_bulk_mode() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let dir = scratch("bulk-mariadb");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let server = start_shale_with(
        &dir,
        &[
            "--local-infile",
            &format!("--secure-file-priv={}", files.display()),
        ],
    );
    server
        .query(
            None,
            &format!("CREATE DATABASE sbtest; USE sbtest; {TABLE}"),
        )
        .unwrap();
    let local = dir.join("local.csv");
    std::fs::write(&local, csv(1..2001)).unwrap();
    let load = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE sbtest1 FIELDS TERMINATED BY ',' \
         OPTIONALLY ENCLOSED BY '\"'",
        local.display()
    );
    let out = Command::new("mariadb")
        .args(["--no-defaults", "-h127.0.0.1", "-uroot", "--local-infile=1"])
        .arg(format!("-P{}", server.port))
        .args(["--batch", "--skip-column-names", "-Dsbtest", "-e", &load])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        server
            .query(
                Some("sbtest"),
                "SELECT COUNT(*), SUM(k), MAX(c) FROM sbtest1"
            )
            .unwrap(),
        format!(
            "2000\t{}\tc-999, with comma\n",
            (1..2001u32).map(|i| i % 13).sum::<u32>()
        )
    );
    // With --local-infile=0 the client does not send the file: 3948 (or the client's own
    // refusal, which names the same thing).
    let out = Command::new("mariadb")
        .args(["--no-defaults", "-h127.0.0.1", "-uroot", "--local-infile=0"])
        .arg(format!("-P{}", server.port))
        .args(["--batch", "-Dsbtest", "-e", &load])
        .output()
        .unwrap();
    let refused = text(&out.stderr);
    assert!(
        !out.status.success() && (refused.contains("3948") || refused.contains("2068")),
        "{refused}"
    );
    // A server file inside --secure-file-priv, through the session's bulk mode.
    std::fs::write(files.join("more.csv"), csv(2001..4001)).unwrap();
    let out = server
        .query(
            Some("sbtest"),
            "SET shale_bulk_load = 1; \
             LOAD DATA INFILE 'more.csv' INTO TABLE sbtest1 FIELDS TERMINATED BY ',' \
             OPTIONALLY ENCLOSED BY '\"'; \
             INSERT INTO sbtest1 VALUES (5000, 1, 'x', 'y'), (4500, 2, 'z', 'w'); \
             SELECT COUNT(*) FROM sbtest1; \
             SET shale_bulk_load = 0; \
             SELECT COUNT(*) FROM sbtest1; SELECT COUNT(*) FROM sbtest1 WHERE k = 2; \
             CHECK TABLE sbtest1",
        )
        .unwrap();
    let k2 = (1..4001u32).filter(|i| i % 13 == 2).count() + 1;
    assert_eq!(
        out,
        format!("2000\n4002\n{k2}\nsbtest.sbtest1\tcheck\tstatus\tOK\n")
    );
    let outside = server
        .query(
            Some("sbtest"),
            "LOAD DATA INFILE '/etc/passwd' INTO TABLE sbtest1",
        )
        .unwrap_err();
    assert!(outside.contains("ERROR 1290 (HY000)"), "{outside}");
}

const PYMYSQL_LOCAL: &str = r#"
import os, pymysql
port = int(os.environ["PORT"])
path = os.environ["FILE"]
c = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", local_infile=True, autocommit=True)
cur = c.cursor()
cur.execute("CREATE DATABASE py")
cur.execute("USE py")
cur.execute(os.environ["TABLE"])
n = cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE sbtest1 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' (id, k, c, @pad) SET pad = UPPER(@pad)", (path,))
assert n == 3000, n
cur.execute("SELECT COUNT(*), MIN(pad) FROM sbtest1")
assert cur.fetchone() == (3000, "PAD-1"), "count"
# LOCAL implies IGNORE: a second load skips every row with warnings.
n = cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE sbtest1 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'", (path,))
assert n == 0, n
cur.execute("SHOW WARNINGS")
w = cur.fetchall()
assert len(w) >= 1 and w[0][1] == 1062, w[:1]
cur.execute("CHECK TABLE sbtest1")
assert cur.fetchall()[-1][3] == "OK"
c.close()
print("ok")
"#;

#[test]
fn pymysql_load_data_local() {
    if !have("/usr/bin/python3", &["-c", "import pymysql"]) {
        return;
    }
    let dir = scratch("bulk-pymysql");
    let server = start_shale_with(&dir, &["--local-infile"]);
    let file = dir.join("rows.csv");
    std::fs::write(&file, csv(1..3001)).unwrap();
    let out = Command::new("/usr/bin/python3")
        .args(["-c", PYMYSQL_LOCAL])
        .env("PORT", server.port.to_string())
        .env("FILE", &file)
        .env("TABLE", TABLE)
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

/// Runs the built `shale` with `args`; its stdout, or a panic with its stderr.
fn shale(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "shale {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `sysbench oltp_read_write prepare` on MariaDB, `mariadb-dump` of the database, unmodified,
/// then `shale import` of the dump and of a CSV file: the tables, rows and indexes match.
/// Rows: `SHALE_IMPORT_ROWS` per table (default 2000; the full-size run used 100000).
#[test]
#[allow(clippy::too_many_lines)] // one end-to-end story: prepare, dump, import, compare
fn shale_import_loads_a_mysqldump_of_a_sysbench_database_and_csv() {
    if !have("mariadbd", &["--version"])
        || !have("sysbench", &["--version"])
        || !have("mariadb-dump", &["--version"])
    {
        return;
    }
    let rows: u32 = std::env::var("SHALE_IMPORT_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dir = scratch("bulk-import");
    let mariadb = support::start_mariadb(&dir.join("mariadb"));
    mariadb.query(None, "CREATE DATABASE sbtest").unwrap();
    let prepare = Command::new("sysbench")
        .args([
            "oltp_read_write",
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &format!("--mysql-port={}", mariadb.port),
            "--mysql-user=root",
            "--mysql-password=",
            "--mysql-db=sbtest",
            "--tables=2",
            &format!("--table-size={rows}"),
            "prepare",
        ])
        .output()
        .unwrap();
    assert!(prepare.status.success(), "{}", text(&prepare.stderr));
    let dump = Command::new("mariadb-dump")
        .args(["--no-defaults", "-h127.0.0.1", "-uroot"])
        .arg(format!("-P{}", mariadb.port))
        .args(["--databases", "sbtest"])
        .output()
        .unwrap();
    assert!(dump.status.success(), "{}", text(&dump.stderr));
    let dump_text = text(&dump.stdout);
    assert!(dump_text.contains("LOCK TABLES") && dump_text.contains("DISABLE KEYS"));
    let dump_file = dir.join("sbtest.sql");
    std::fs::write(&dump_file, &dump.stdout).unwrap();
    let expected = mariadb
        .query(
            Some("sbtest"),
            "SELECT COUNT(*), SUM(k), SUM(CRC32(CONCAT(c, pad))) FROM sbtest1; \
             SELECT COUNT(*), SUM(k), SUM(CRC32(CONCAT(c, pad))) FROM sbtest2",
        )
        .unwrap();
    let datadir = dir.join("shale-data");
    let datadir_arg = datadir.to_str().unwrap();
    let out = shale(&[
        "import",
        "--datadir",
        datadir_arg,
        dump_file.to_str().unwrap(),
    ]);
    assert!(
        out.starts_with(&format!("imported {} rows", 2 * rows)),
        "{out}"
    );
    let counts = shale(&[
        "sql",
        "--datadir",
        datadir_arg,
        "-D",
        "sbtest",
        "--batch",
        "--skip-column-names",
        "-e",
        "SELECT COUNT(*), SUM(k) FROM sbtest1; SELECT COUNT(*), SUM(k) FROM sbtest2; \
         SELECT COUNT(*) FROM sbtest1 WHERE k = 1; CHECK TABLE sbtest1, sbtest2",
    ]);
    let mut want = String::new();
    for line in expected.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let _ = writeln!(want, "{}\t{}", fields[0], fields[1]);
    }
    let k1 = mariadb
        .query(Some("sbtest"), "SELECT COUNT(*) FROM sbtest1 WHERE k = 1")
        .unwrap();
    want.push_str(&k1);
    want.push_str("sbtest.sbtest1\tcheck\tstatus\tOK\nsbtest.sbtest2\tcheck\tstatus\tOK\n");
    assert_eq!(counts, want);
    // CSV into an existing empty table, with a header line.
    shale(&[
        "sql",
        "--datadir",
        datadir_arg,
        "-e",
        "CREATE TABLE sbtest.csv_rows (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60), \
         KEY k_1 (k))",
    ]);
    let csv_file = dir.join("rows.csv");
    std::fs::write(&csv_file, format!("id,k,c,pad\n{}", csv(1..1001))).unwrap();
    let out = shale(&[
        "import",
        "--datadir",
        datadir_arg,
        "--format",
        "csv",
        "--table",
        "sbtest.csv_rows",
        "--header",
        csv_file.to_str().unwrap(),
    ]);
    assert!(out.starts_with("imported 1000 rows"), "{out}");
    let out = shale(&[
        "sql",
        "--datadir",
        datadir_arg,
        "--batch",
        "--skip-column-names",
        "-e",
        "SELECT COUNT(*), MAX(c) FROM sbtest.csv_rows; CHECK TABLE sbtest.csv_rows",
    ]);
    assert_eq!(
        out,
        "1000\tc-999, with comma\nsbtest.csv_rows\tcheck\tstatus\tOK\n"
    );
}
