//! LOAD DATA INFILE from the server's file system (inside `secure_file_priv`): MySQL's field
//! and line rules, column lists with user variables and SET, duplicates, the bulk path into
//! an empty table and the session's bulk mode.

mod common;

use std::fmt::Write as _;
use std::path::PathBuf;

use shale_fs::{FileSystem, OsFs};

struct Files {
    dir: PathBuf,
}

impl Files {
    fn new(name: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("shale-load-{name}-{}", std::process::id()));
        let fs = OsFs::new();
        let _ = fs.remove_dir_all(&dir);
        fs.create_dir_all(&dir).unwrap();
        Files { dir }
    }

    fn write(&self, name: &str, text: &str) {
        self.write_bytes(name, text.as_bytes());
    }

    fn write_bytes(&self, name: &str, bytes: &[u8]) {
        let mut file = OsFs::new().create(&self.dir.join(name)).unwrap();
        file.append(bytes).unwrap();
        file.sync_data().unwrap();
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = OsFs::new().remove_dir_all(&self.dir);
    }
}

fn runner(files: &Files) -> common::Runner {
    let mut r = common::Runner::new();
    r.instance.set_secure_file_priv(Some(files.dir.clone()));
    for sql in [
        "CREATE DATABASE app",
        "USE app",
        "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, c VARCHAR(40), \
         pad CHAR(10), KEY k_1 (k))",
    ] {
        let out = r.run(sql);
        assert!(out.starts_with("ok"), "{sql}: {out}");
    }
    r
}

fn rows(r: &mut common::Runner, sql: &str) -> String {
    r.run(sql)
}

#[test]
fn tab_separated_file_with_escapes_and_nulls() {
    let files = Files::new("tsv");
    files.write(
        "rows.tsv",
        "3\t30\tc\\tx\t\\N\n1\t10\ta\\nb\tp\n2\t20\t\\\\N\tq\n",
    );
    let mut r = runner(&files);
    assert_eq!(
        r.run("LOAD DATA INFILE 'rows.tsv' INTO TABLE t"),
        "ok affected=3 info=\"Records: 3  Deleted: 0  Skipped: 0  Warnings: 0\"\n"
    );
    assert_eq!(
        rows(&mut r, "SELECT id, k, c, pad IS NULL FROM t ORDER BY id"),
        "id\tk\tc\tpad IS NULL\n1\t10\ta\\nb\t0\n2\t20\t\\N\t0\n3\t30\tc\tx\t1\nend\n"
    );
    assert_eq!(
        r.run("CHECK TABLE t"),
        "Table\tOp\tMsg_type\tMsg_text\napp.t\tcheck\tstatus\tOK\nend\n"
    );
}

/// A latin1 file is MySQL's latin1, cp1252: 0x80 is '€' (it was read as ISO-8859-1's U+0080).
#[test]
fn latin1_files_are_cp1252() {
    let files = Files::new("latin1");
    files.write_bytes("rows.tsv", b"1\t1\tcaf\xE9 \x80\n");
    let mut r = runner(&files);
    let out = r.run("LOAD DATA INFILE 'rows.tsv' INTO TABLE t CHARACTER SET latin1");
    assert!(out.starts_with("ok affected=1"), "{out}");
    assert_eq!(
        rows(&mut r, "SELECT c, HEX(c) FROM t"),
        "c\tHEX(c)\ncafé €\t636166C3A920E282AC\nend\n"
    );
}

#[test]
fn csv_with_header_enclosures_column_list_and_set() {
    let files = Files::new("csv");
    files.write(
        "rows.csv",
        "id,k,c\r\n1,5,\"a, b\"\r\n2,6,\"say \"\"hi\"\"\"\r\n3,7,NULL\r\n",
    );
    let mut r = runner(&files);
    assert_eq!(
        r.run(
            "LOAD DATA INFILE 'rows.csv' INTO TABLE t CHARACTER SET utf8mb4 FIELDS TERMINATED \
             BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES \
             (id, @k, c) SET k = @k * 10, pad = CONCAT('p', id)"
        ),
        "ok affected=3 info=\"Records: 3  Deleted: 0  Skipped: 0  Warnings: 0\"\n"
    );
    assert_eq!(
        rows(&mut r, "SELECT id, k, c, pad FROM t ORDER BY id"),
        "id\tk\tc\tpad\n1\t50\ta, b\tp1\n2\t60\tsay \"hi\"\tp2\n3\t70\tNULL\tp3\nend\n"
    );
}

#[test]
fn short_and_long_rows_warn() {
    let files = Files::new("warn");
    files.write("rows.txt", "1,2\n2,3,x,y,z\n");
    let mut r = runner(&files);
    assert_eq!(
        r.run("LOAD DATA INFILE 'rows.txt' INTO TABLE t FIELDS TERMINATED BY ','"),
        "ok affected=2 warnings=2 info=\"Records: 2  Deleted: 0  Skipped: 0  Warnings: 2\"\n"
    );
    let warnings = r.run("SHOW WARNINGS");
    assert!(
        warnings.contains("1261\tRow 1 doesn't contain data for all columns"),
        "{warnings}"
    );
    assert!(warnings.contains("1262\tRow 2 was truncated"), "{warnings}");
}

#[test]
fn duplicates_fail_the_statement_or_are_skipped_with_ignore() {
    let files = Files::new("dup");
    files.write("dup.tsv", "1\t1\ta\t\n2\t2\tb\t\n1\t3\tc\t\n");
    let mut r = runner(&files);
    // Empty table: the bulk path, which finds the repeat at the end; nothing is kept.
    assert_eq!(
        r.run("LOAD DATA INFILE 'dup.tsv' INTO TABLE t"),
        "error 1062 (23000): Duplicate entry '1' for key 'PRIMARY'\n"
    );
    assert_eq!(r.run("SELECT COUNT(*) FROM t"), "COUNT(*)\n0\nend\n");
    assert_eq!(
        r.run("LOAD DATA INFILE 'dup.tsv' IGNORE INTO TABLE t"),
        "ok affected=2 warnings=1 info=\"Records: 3  Deleted: 0  Skipped: 1  Warnings: 1\"\n"
    );
    assert_eq!(
        r.run("SELECT id, c FROM t ORDER BY id"),
        "id\tc\n1\ta\n2\tb\nend\n"
    );
    // Not empty any more: the transactional path, same error.
    assert_eq!(
        r.run("LOAD DATA INFILE 'dup.tsv' INTO TABLE t"),
        "error 1062 (23000): Duplicate entry '1' for key 'PRIMARY'\n"
    );
}

#[test]
fn files_outside_secure_file_priv_are_refused_and_missing_ones_reported() {
    let files = Files::new("priv");
    let mut r = runner(&files);
    assert!(r
        .run("LOAD DATA INFILE '../etc/passwd' INTO TABLE t")
        .starts_with("error 1290 (HY000)"));
    assert!(r
        .run("LOAD DATA INFILE '/etc/passwd' INTO TABLE t")
        .starts_with("error 1290 (HY000)"));
    let missing = r.run("LOAD DATA INFILE 'nope.tsv' INTO TABLE t");
    assert!(missing.starts_with("error 29 (HY000): File '"), "{missing}");
    assert!(r
        .run("LOAD DATA INFILE 'nope.tsv' INTO TABLE missing")
        .starts_with("error 1146 (42S02)"));
}

#[test]
fn in_bulk_mode_rows_wait_for_the_load_to_finish() {
    let files = Files::new("bulk");
    let mut text = String::new();
    for id in (0..5000).rev() {
        let _ = writeln!(text, "{id}\t{}\tc{id}\tp", id % 10);
    }
    files.write("many.tsv", &text);
    let mut r = runner(&files);
    assert_eq!(
        r.run("INSERT INTO t VALUES (-1, 0, 'x', 'y')"),
        "ok affected=1\n"
    );
    assert_eq!(r.run("SET shale_bulk_load = 1"), "ok affected=0\n");
    assert_eq!(
        r.run("LOAD DATA INFILE 'many.tsv' INTO TABLE t"),
        "ok affected=5000 info=\"Records: 5000  Deleted: 0  Skipped: 0  Warnings: 0\"\n"
    );
    assert_eq!(r.run("SELECT COUNT(*) FROM t"), "COUNT(*)\n1\nend\n");
    assert_eq!(r.run("SET shale_bulk_load = 0"), "ok affected=0\n");
    assert_eq!(r.run("SELECT COUNT(*) FROM t"), "COUNT(*)\n5001\nend\n");
    assert_eq!(
        r.run("SELECT COUNT(*) FROM t WHERE k = 3"),
        "COUNT(*)\n500\nend\n"
    );
    assert_eq!(
        r.run("CHECK TABLE t"),
        "Table\tOp\tMsg_type\tMsg_text\napp.t\tcheck\tstatus\tOK\nend\n"
    );
}

#[test]
fn generated_columns_are_computed_and_indexed_and_refuse_values() {
    let files = Files::new("gencols");
    files.write(
        "rows.tsv",
        "1\t{\"name\": \"ann\"}\n2\t{\"name\": \"bob\"}\n",
    );
    files.write("given.tsv", "3\t{}\tzed\n");
    let mut r = runner(&files);
    let out = r.run(
        "CREATE TABLE p (id INT PRIMARY KEY, j JSON, name VARCHAR(40) AS (j->>'$.name'), \
         up VARCHAR(40) AS (UPPER(name)) STORED, KEY (name))",
    );
    assert!(out.starts_with("ok"), "{out}");
    assert_eq!(
        r.run("LOAD DATA INFILE 'rows.tsv' INTO TABLE p (id, j)"),
        "ok affected=2 info=\"Records: 2  Deleted: 0  Skipped: 0  Warnings: 0\"\n"
    );
    assert_eq!(
        rows(&mut r, "SELECT id, up FROM p WHERE name = 'bob'"),
        "id\tup\n2\tBOB\nend\n"
    );
    assert_eq!(
        r.run("CHECK TABLE p"),
        "Table\tOp\tMsg_type\tMsg_text\napp.p\tcheck\tstatus\tOK\nend\n"
    );
    assert_eq!(
        r.run("LOAD DATA INFILE 'given.tsv' INTO TABLE p (id, j, name)"),
        "error 3105 (HY000): The value specified for generated column 'name' in table 'p' is \
         not allowed.\n"
    );
}

/// LOAD DATA and bulk-mode INSERTs write the session's temporary table of the name, never
/// the base table it shadows (`bulk_insert.rs` rule 3), in a transaction, visible at once.
#[test]
fn temporary_tables_are_loaded_in_a_transaction() {
    let files = Files::new("temporary");
    files.write("rows.tsv", "1\ta\n2\tb\n");
    let mut r = runner(&files);
    let create = "CREATE TEMPORARY TABLE t (id INT PRIMARY KEY, c VARCHAR(10))";
    assert_eq!(r.run(create), "ok affected=0\n");
    // The empty table would take the bulk path were it a base table.
    assert_eq!(
        r.run("LOAD DATA INFILE 'rows.tsv' INTO TABLE t"),
        "ok affected=2 info=\"Records: 2  Deleted: 0  Skipped: 0  Warnings: 0\"\n"
    );
    assert_eq!(r.run("SET SESSION shale_bulk_load = 1"), "ok affected=0\n");
    assert_eq!(r.run("INSERT INTO t VALUES (3, 'c')"), "ok affected=1\n");
    // A bulk load's rows would be invisible until it finishes.
    assert_eq!(
        r.run("SELECT * FROM t ORDER BY id"),
        "id\tc\n1\ta\n2\tb\n3\tc\nend\n"
    );
    assert_eq!(r.run("SET SESSION shale_bulk_load = 0"), "ok affected=0\n");
    assert_eq!(r.run("DROP TEMPORARY TABLE t"), "ok affected=0\n");
    assert_eq!(r.run("SELECT COUNT(*) FROM t"), "COUNT(*)\n0\nend\n");
}
