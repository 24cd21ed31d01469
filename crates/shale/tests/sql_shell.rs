//! `shale sql`, the in-process shell: statements from -e, from a pipe and from `source`,
//! printed as the mysql client prints them (tab-separated in batch, boxed with -t, vertical
//! with \G), errors as MySQL's `ERROR code (state) at line N` with exit code 1.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-sql-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn shale_sql(datadir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shale"))
        .arg("sql")
        .arg(format!("--datadir={}", datadir.display()))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "shale sql failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn execute_prints_tab_separated_results_and_the_data_stays() {
    let dir = scratch("execute");
    let out = shale_sql(
        &dir,
        &[
            "-e",
            "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, name VARCHAR(20), n INT); \
             INSERT INTO d.t VALUES (1, 'a\tb', NULL), (2, 'two', 7); \
             SELECT id, name, n FROM d.t ORDER BY id",
        ],
        "",
    );
    assert_eq!(stdout(&out), "id\tname\tn\n1\ta\\tb\tNULL\n2\ttwo\t7\n");
    // A second process sees what the first one wrote (the data directory was closed cleanly).
    let out = shale_sql(&dir, &["-D", "d", "-N", "-e", "SELECT COUNT(*) FROM t"], "");
    assert_eq!(stdout(&out), "2\n");
}

#[test]
fn piped_statements_span_lines_and_table_and_vertical_layouts_print_as_mysql() {
    let dir = scratch("pipe");
    let script =
        "CREATE DATABASE d;\nUSE d;\nCREATE TABLE t (\n  id INT PRIMARY KEY, -- the key\n  \
                  name VARCHAR(10)\n);\nINSERT INTO t VALUES (1, 'x; y'), (10, NULL);\n\
                  SELECT id, name FROM t ORDER BY id;\nSELECT id FROM t WHERE id = 10\\G\n";
    let out = shale_sql(&dir, &["-t"], script);
    assert_eq!(
        stdout(&out),
        "+----+------+\n\
         | id | name |\n\
         +----+------+\n\
         |  1 | x; y |\n\
         | 10 | NULL |\n\
         +----+------+\n\
         *************************** 1. row ***************************\n\
         id: 10\n"
    );
}

#[test]
fn source_runs_a_file_and_an_error_names_code_state_and_line() {
    let dir = scratch("source");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("load.sql");
    std::fs::write(
        &file,
        "CREATE DATABASE d;\nCREATE TABLE d.t (id INT PRIMARY KEY);\nINSERT INTO d.t VALUES (1);\n",
    )
    .unwrap();
    let datadir = dir.join("data");
    let out = shale_sql(
        &datadir,
        &[],
        &format!(
            "source {}\nSELECT id FROM d.t;\nSELECT * FROM d.missing;\nSELECT 'never';\n",
            file.display()
        ),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "id\n1\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ERROR 1146 (42S02) at line 3: Table 'd.missing' doesn't exist"),
        "{stderr}"
    );
}

#[test]
fn altered_tables_read_the_same_in_a_new_process() {
    let dir = scratch("alter");
    let out = shale_sql(
        &dir,
        &[
            "-e",
            "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, k INT, c VARCHAR(10), \
             KEY k_1 (k)); INSERT INTO d.t VALUES (1, 10, 'one'), (2, NULL, 'two')",
        ],
        "",
    );
    stdout(&out);
    // Instant: ADD COLUMN (old rows read its DEFAULT), RENAME COLUMN; rewrite: MODIFY k.
    let out = shale_sql(
        &dir,
        &[
            "-D",
            "d",
            "-e",
            "ALTER TABLE t ADD COLUMN n INT NOT NULL DEFAULT 5 AFTER id, RENAME COLUMN c TO name; \
             INSERT INTO t VALUES (3, 6, 30, 'three'); \
             ALTER TABLE t DROP COLUMN name; ALTER TABLE t MODIFY k BIGINT",
        ],
        "",
    );
    stdout(&out);
    let out = shale_sql(
        &dir,
        &[
            "-D",
            "d",
            "-e",
            "SELECT * FROM t ORDER BY id; SELECT id FROM t WHERE k = 30",
        ],
        "",
    );
    assert_eq!(
        stdout(&out),
        "id\tn\tk\n1\t5\t10\n2\t5\tNULL\n3\t6\t30\nid\n3\n"
    );
    let out = shale_sql(&dir, &["-D", "d", "-e", "CHECK TABLE t"], "");
    assert!(stdout(&out).contains("status\tOK"), "{}", stdout(&out));
}
