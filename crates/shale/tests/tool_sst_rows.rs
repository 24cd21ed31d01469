//! `shale tool sst --scan` on table files a real data directory holds (made by `shale sql`):
//! entries of the tables a file describes print as rows with named columns; `--raw` and
//! files without table properties print bytes; malformed table properties are an error naming
//! the file and the property.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use shale_fs::OsFs;
use shale_sst::{TableWriter, ValueKind, WriterOptions};

fn shale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// A fresh directory under cargo's scratch space.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-sst-rows-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `shale sql --datadir DIR -e SQL`, which must succeed.
fn sql(dir: &Path, statements: &str) {
    let out = shale(&["sql", "--datadir", dir.to_str().unwrap(), "-e", statements]);
    assert!(
        out.status.success(),
        "shale sql failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// `shale tool sst FILE ARGS...`: (exit code, stdout, stderr).
fn tool_sst(file: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["tool", "sst", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = shale(&all);
    (
        out.status.code().expect("exited"),
        text(&out.stdout),
        text(&out.stderr),
    )
}

fn table_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    files.sort();
    files
}

/// The scan lines of every table file, each without its ` @seqno` ending.
fn rows(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    for file in table_files(dir) {
        let mut scan = vec!["--scan"];
        scan.extend_from_slice(args);
        let (code, out, err) = tool_sst(&file, &scan);
        assert_eq!(code, 0, "{}: {err}", file.display());
        lines.extend(out.lines().map(|l| match l.rsplit_once(" @") {
            Some((row, seqno)) if seqno.bytes().all(|b| b.is_ascii_digit()) => row.to_owned(),
            _ => l.to_owned(),
        }));
    }
    lines
}

fn build(name: &str) -> PathBuf {
    let dir = scratch(name);
    sql(
        &dir,
        "CREATE DATABASE shop; \
         CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, \
           code VARBINARY(8), price DECIMAL(6,2), added DATE, \
           KEY by_name (name), UNIQUE KEY by_code (code)); \
         CREATE TABLE shop.tags (tag BIGINT UNSIGNED); \
         INSERT INTO shop.items VALUES (1, 'Pear', 'p-1', 2.50, '2024-01-02'), \
           (2, 'apple', NULL, NULL, NULL); \
         INSERT INTO shop.tags VALUES (7); \
         OPTIMIZE TABLE shop.items",
    );
    dir
}

/// The table file holding the row `id = 1` of `shop.items`.
fn file_of_items(dir: &Path) -> PathBuf {
    table_files(dir)
        .into_iter()
        .find(|f| tool_sst(f, &["--scan"]).1.contains("shop.items (id=1)"))
        .unwrap()
}

#[test]
fn scan_prints_rows_with_named_columns() {
    let dir = build("named");
    assert!(!table_files(&dir).is_empty(), "OPTIMIZE flushed nothing");
    let lines = rows(&dir, &[]);
    for expected in [
        "shop.items (id=1) = (id=1, name='Pear', code='p-1', price=2.50, added='2024-01-02')",
        "shop.items (id=2) = (id=2, name='apple', code=NULL, price=NULL, added=NULL)",
        "shop.items index by_code (code='p-1') -> pk (id=1)",
        "shop.items index by_code (code=NULL) -> pk (id=2)",
    ] {
        assert!(
            lines.iter().any(|l| l == expected),
            "no {expected:?} in\n{}",
            lines.join("\n")
        );
    }
    // A case-insensitive key keeps weights only: uppercase text.
    assert!(
        lines
            .iter()
            .any(|l| l == "shop.items index by_name (name~'PEAR') -> pk (id=1)"),
        "{}",
        lines.join("\n")
    );
    // A table without primary key shows its hidden row id.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("shop.tags (row id ") && l.ends_with(") = (tag=7)")),
        "{}",
        lines.join("\n")
    );

    // The properties view names the tables and their index ids.
    let (code, props, _) = tool_sst(&file_of_items(&dir), &[]);
    assert_eq!(code, 0);
    let described = props
        .lines()
        .find(|l| l.starts_with("table shop.items: index ids "))
        .unwrap_or_else(|| panic!("{props}"));
    for name in ["(PRIMARY)", "(by_name)", "(by_code)"] {
        assert!(described.contains(name), "{described}");
    }

    // --raw: bytes only, the same number of entries.
    let raw = rows(&dir, &["--raw"]);
    assert_eq!(raw.len(), lines.len());
    assert!(raw.iter().all(|l| !l.starts_with("shop.")), "{raw:?}");

    // --json: each described entry has its row beside its bytes.
    let (code, out, _) = tool_sst(&file_of_items(&dir), &["--scan", "--json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let entries = doc["entries"].as_array().unwrap();
    assert!(entries.iter().any(|e| e["row"]
        .as_str()
        .is_some_and(|r| r.starts_with("shop.items (id=1) = (id=1, name='Pear'"))
        && e["kind"] == "put"));
    assert!(entries.iter().all(|e| e.get("key").is_some()));
}

/// A table file whose `user.shale_table.index_ids` is `index_ids`.
fn file_with_index_ids(dir: &Path, index_ids: &[u8]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("000001.sst");
    let options = WriterOptions {
        user_properties: BTreeMap::from([("shale_table.index_ids".to_owned(), index_ids.to_vec())]),
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(&OsFs::new(), &path, options).unwrap();
    writer
        .add_entry(b"\x00\x00\x01\x00\x80", 1, ValueKind::Value, b"v")
        .unwrap();
    writer.finish().unwrap();
    path
}

#[test]
fn malformed_table_properties_are_reported_after_a_scan_in_bytes() {
    let dir = scratch("malformed");
    // Version 9 of the property: unknown.
    let file = file_with_index_ids(&dir, &[9, 1, 0, 0, 1, 0]);
    let (code, out, err) = tool_sst(&file, &["--scan"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&file.display().to_string()) && err.contains("user.shale_table.index_ids"),
        "{err}"
    );
    assert_eq!(out.lines().count(), 1, "{out}");

    // Well-formed ids with no definitions: the entry prints as bytes.
    let dir = scratch("ids-only");
    let file = file_with_index_ids(&dir, &[1, 1, 0, 0, 1, 0]);
    let (code, out, err) = tool_sst(&file, &["--scan"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("\"\\x00\\x00\\x01\\x00\\x80\"@1:put"),
        "{out}"
    );
}
