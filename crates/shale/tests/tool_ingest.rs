//! Runs the built `shale` binary's `tool ingest` on a database built with the engine and
//! external tables written with `TableFileWriter`, on the real file system.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use shale_engine::{Db, KeyspaceOptions, Options, TableFileWriter};

fn shale(args: &[&str]) -> (i32, String, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary");
    (
        out.status.code().expect("exited, not killed by a signal"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-ingest-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn external(path: &Path, keys: &[&str]) {
    let mut writer =
        TableFileWriter::create(path, &Options::default(), &KeyspaceOptions::default()).unwrap();
    for key in keys {
        writer.put(key.as_bytes(), b"ingested").unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn ingest_places_files_and_refuses_bad_ones() {
    let root = scratch("cycle");
    let db_dir = root.join("db");
    let db = Db::open(&db_dir, Options::default()).unwrap();
    db.put(b"old", b"1").unwrap();
    db.close().unwrap();
    let (a, b) = (root.join("a.sst"), root.join("b.sst"));
    external(&a, &["a1", "a2"]);
    external(&b, &["b1"]);
    let (code, out, err) = shale(&["tool", "ingest", s(&db_dir), s(&a), s(&b), "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        report["files"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(report["global_seqno"].as_u64(), Some(2), "{report}");
    let (code, out, _) = shale(&["tool", "get", s(&db_dir), "a2"]);
    assert_eq!((code, out.trim()), (0, "\"ingested\""));
    // Overlapping files are refused and nothing is ingested.
    let (c, d) = (root.join("c.sst"), root.join("d.sst"));
    external(&c, &["c1", "c9"]);
    external(&d, &["c5"]);
    let (code, _, err) = shale(&["tool", "ingest", s(&db_dir), s(&c), s(&d)]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("overlap"), "{err}");
    let (code, _, _) = shale(&["tool", "get", s(&db_dir), "c1"]);
    assert_eq!(code, 1);
    // A missing keyspace is named.
    let (code, _, err) = shale(&["tool", "ingest", s(&db_dir), s(&c), "--keyspace", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("no keyspace \"nope\""), "{err}");
    // Text output names where each file went; --move links it.
    let (code, out, err) = shale(&["tool", "ingest", s(&db_dir), s(&c), "--move"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("c.sst -> ") && out.contains("ingested 1 files"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// `--verify-checksums` reads every data block first and refuses a file damaged in the
/// middle (exit 2); without it only the meta blocks and the first and last data blocks are
/// read, and the same file goes in.
#[test]
fn verify_checksums_refuses_a_file_damaged_in_the_middle() {
    let root = scratch("verify");
    let db_dir = root.join("db");
    Db::open(&db_dir, Options::default())
        .unwrap()
        .close()
        .unwrap();
    let path = root.join("big.sst");
    let keys: Vec<String> = (0..2000).map(|i| format!("k{i:06}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    external(&path, &keys);
    let mut bytes = std::fs::read(&path).unwrap();
    // A third of the way in: past the first data block, well before the last.
    let middle = bytes.len() / 3;
    bytes[middle] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let (code, _, err) = shale(&["tool", "ingest", s(&db_dir), s(&path), "--verify-checksums"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("big.sst") && err.contains("checksum"), "{err}");
    let (code, out, err) = shale(&["tool", "ingest", s(&db_dir), s(&path)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ingested 1 files"), "{out}");
    let (code, out, _) = shale(&["tool", "get", s(&db_dir), "k000000"]);
    assert_eq!((code, out.trim()), (0, "\"ingested\""));
    let _ = std::fs::remove_dir_all(&root);
}
