//! Runs the built `shale` binary's database tools (`tool wal | manifest | lsm | get | put |
//! delete | scan | verify | repair`) on small databases built with the engine, clean and damaged.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use shale_engine::{Db, KeyspaceOptions, Options};

fn shale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// Runs `shale tool ARGS... DIR` and returns (exit code, stdout, stderr).
fn tool(args: &[&str], dir: &Path) -> (i32, String, String) {
    let mut all = vec!["tool"];
    all.extend_from_slice(&args[..1]);
    let dir = dir.to_str().unwrap();
    all.push(dir);
    all.extend_from_slice(&args[1..]);
    let out = shale(&all);
    let code = out.status.code().expect("exited, not killed by a signal");
    (code, text(&out.stdout), text(&out.stderr))
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

/// A fresh directory under cargo's scratch space.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-tools-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A database with two keyspaces: "default" with two L0 tables (keys `k000`..`k039`, the
/// second table overwriting `k000`..`k009`, deleting `k010` and range-deleting
/// `k020`..`k024`), "users" with one table, and a few writes left in the WAL (`wal-a`,
/// `wal-b` = `\x00\xff`, a range deletion of `wal-0`..`wal-1`).
fn build(name: &str) -> PathBuf {
    let dir = scratch(name);
    let db = Db::open(&dir, Options::default()).unwrap();
    for i in 0..40 {
        db.put(format!("k{i:03}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    for i in 0..10 {
        db.put(format!("k{i:03}").as_bytes(), b"new").unwrap();
    }
    db.delete(b"k010").unwrap();
    db.delete_range(b"k020", b"k025").unwrap();
    db.flush().unwrap();
    let users = db
        .create_keyspace("users", KeyspaceOptions::default())
        .unwrap();
    users.put(b"alice", b"1").unwrap();
    users.put(b"bob", b"2").unwrap();
    db.flush().unwrap();
    db.wait_for_background_work().unwrap();
    db.put(b"wal-a", b"in the log").unwrap();
    db.put(b"wal-b", b"\x00\xff").unwrap();
    db.delete_range(b"wal-0", b"wal-1").unwrap();
    drop(users);
    db.close().unwrap();
    dir
}

fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn manifest_of(dir: &Path) -> PathBuf {
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(current.split(' ').next().unwrap())
}

fn flip_byte(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = usize::try_from(offset).unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

/// The WAL holding the writes left after the last flush (the largest one that is non-empty).
fn live_wal(dir: &Path) -> PathBuf {
    files_with(dir, ".wal")
        .into_iter()
        .rev()
        .find(|p| {
            let (code, out, _) = tool(&["wal"], p);
            code == 0 && out.contains("wal-a")
        })
        .expect("a WAL holding the unflushed writes")
}

#[test]
fn wal_prints_every_record_and_stops_at_damage() {
    let dir = build("wal");
    let (code, out, err) = tool(&["wal"], &dir);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("put ks 0 (\"default\") \"wal-a\" => \"in the log\""),
        "{out}"
    );
    assert!(out.contains("\"wal-b\" => \"\\x00\\xff\""), "{out}");
    assert!(
        out.contains("rangedel ks 0 (\"default\") [\"wal-0\" .. \"wal-1\")"),
        "{out}"
    );
    assert!(out.contains("end: end of file"), "{out}");
    let (code, out, _) = tool(&["wal", "--json", "--hex"], &dir);
    assert_eq!(code, 0);
    let doc = json(&out);
    let entries: Vec<&Value> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["records"].as_array().unwrap())
        .flat_map(|r| r["entries"].as_array().unwrap())
        .collect();
    assert!(
        entries.iter().any(|e| e["key"] == "77616c2d62"
            && e["value"] == "00ff"
            && e["op"] == "put"
            && e["keyspace_name"] == "default"),
        "{out}"
    );

    // Damage the last record's payload: the tool prints the records before it, names the
    // file and the offset, and exits 2.
    let wal = live_wal(&dir);
    let (_, out, _) = tool(&["wal", "--json"], &wal);
    let doc = json(&out);
    let records = doc["files"][0]["records"].as_array().unwrap();
    let last = records.last().unwrap()["offset"].as_u64().unwrap();
    flip_byte(&wal, last + 12);
    let (code, out, err) = tool(&["wal"], &wal);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains(wal.to_str().unwrap()), "{err}");
    assert!(err.contains(&format!("offset {last}")), "{err}");
    assert!(
        out.contains("wal-a"),
        "records before the damage are printed: {out}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let (code, out, _) = tool(&["wal", "--json"], &wal);
    assert_eq!(code, 2);
    assert!(json(&out)["error"].as_str().unwrap().contains("offset"));
}

/// A log written in WAL format `version` holding one record: a two-put batch at seqno 300.
fn log_of_version(dir: &Path, version: u32) -> (PathBuf, usize) {
    use shale_fs::FileSystem as _;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("000005.wal");
    let file = shale_fs::OsFs::new().create(&path).unwrap();
    let mut writer =
        shale_engine::inspect::wal::LogWriter::with_format_version(file, 5, version).unwrap();
    let mut batch = shale_engine::WriteBatch::new();
    batch.put(0, b"old-a", b"1").unwrap();
    batch.put(0, b"old-b", b"2").unwrap();
    batch.set_first_seqno(300);
    let record = batch.to_wal_record(version).unwrap();
    writer.add_record(&record).unwrap();
    writer.sync().unwrap();
    (path, record.len())
}

/// The dump reads each log in its own version: a version 3 record's fixed 12-byte batch
/// header and a version 4 record's varints give the same batch, and the record sizes differ
/// by the header bytes saved.
#[test]
fn wal_prints_logs_of_format_versions_3_and_4() {
    let mut sizes = Vec::new();
    for version in [3u32, 4] {
        let (path, bytes) = log_of_version(&scratch(&format!("wal-v{version}")), version);
        let (code, out, err) = tool(&["wal"], &path);
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(out.contains(&format!("format version {version}")), "{out}");
        assert!(
            out.contains(&format!(
                "record at offset 31: seqno 300, 2 entries, {bytes} bytes"
            )),
            "{out}"
        );
        assert!(out.contains("300 put ks 0 \"old-a\" => \"1\""), "{out}");
        assert!(out.contains("301 put ks 0 \"old-b\" => \"2\""), "{out}");
        let (code, out, _) = tool(&["wal", "--json"], &path);
        assert_eq!(code, 0);
        let doc = json(&out);
        assert_eq!(doc["files"][0]["format_version"], version);
        assert_eq!(doc["files"][0]["records"][0]["seqno"], 300);
        sizes.push(bytes);
    }
    // 12 header bytes in version 3; seqno 300 (2 bytes) and count 2 (1 byte) in version 4.
    assert_eq!(sizes[0] - sizes[1], 12 - 3);
}

#[test]
fn manifest_and_lsm_show_the_shape() {
    let dir = build("manifest");
    let (code, out, err) = tool(&["manifest"], &dir);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("--- edits ---"), "{out}");
    assert!(out.contains("add keyspace 1 \"users\""), "{out}");
    assert!(out.contains("keyspace 1 \"users\""), "{out}");
    assert!(out.contains("L0: 2 files"), "{out}");
    assert!(out.contains("[\"alice\"@"), "{out}");
    let (code, out, _) = tool(&["manifest", "--json"], &dir);
    assert_eq!(code, 0);
    let doc = json(&out);
    let users = &doc["shape"]["keyspaces"][1];
    assert_eq!(users["name"], "users");
    let file = &users["levels"][0]["files"][0];
    assert!(file["smallest"].as_str().unwrap().starts_with("\"alice\"@"));
    assert!(file["largest"].as_str().unwrap().starts_with("\"bob\"@"));
    assert!(!doc["edits"].as_array().unwrap().is_empty());
    // A MANIFEST file can be named directly (an old one kept by a backup, say).
    let manifest = manifest_of(&dir);
    let (code, out, err) = tool(&["manifest", "--shape-only"], &manifest);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("--- edits ---"), "{out}");
    assert!(out.contains("keyspace 1 \"users\""), "{out}");

    let (code, out, err) = tool(&["lsm"], &dir);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("keyspace 0 \"default\""), "{out}");
    let l0 = out
        .lines()
        .find(|l| l.trim_start().starts_with("L0"))
        .unwrap();
    assert_eq!(l0.split_whitespace().nth(1), Some("2"), "{out}");
    let (code, out, _) = tool(&["lsm", "--json"], &dir);
    assert_eq!(code, 0);
    let doc = json(&out);
    assert_eq!(doc["keyspaces"][0]["levels"][0]["files"], 2);
    assert_eq!(doc["keyspaces"][1]["total"]["entries"], 2);
    assert_eq!(doc["total"]["files"], 3);

    // A flipped byte in the MANIFEST: edits before it are shown, the damage is named.
    let size = std::fs::metadata(&manifest).unwrap().len();
    flip_byte(&manifest, size - 3);
    let (code, _, err) = tool(&["manifest"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(manifest.to_str().unwrap()), "{err}");
}

#[test]
fn get_put_delete_scan() {
    let dir = build("kv");
    let (code, out, err) = tool(&["get", "k005"], &dir);
    assert_eq!((code, out.trim()), (0, "\"new\""), "{err}");
    let (code, _, err) = tool(&["get", "k010"], &dir);
    assert_eq!(code, 1);
    assert!(err.contains("not found"), "{err}");
    let (code, out, _) = tool(&["get", "wal-b", "--json"], &dir);
    assert_eq!(code, 0);
    assert_eq!(json(&out)["value"], "\\x00\\xff");

    let (code, out, err) = tool(&["put", "\\x01key", "\\xfevalue"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("put \"\\x01key\" => \"\\xfevalue\""),
        "{out}"
    );
    let (code, out, _) = tool(&["get", "016b6579", "--hex"], &dir);
    assert_eq!((code, out.trim()), (0, "fe76616c7565"));
    let (code, _, err) = tool(&["put", "carol", "3", "--keyspace", "users"], &dir);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = tool(&["delete", "alice", "--keyspace", "users"], &dir);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = tool(&["scan", "--keyspace", "users"], &dir);
    assert_eq!(code, 0);
    assert_eq!(out, "\"bob\" => \"2\"\n\"carol\" => \"3\"\n");
    let (code, _, err) = tool(&["scan", "--keyspace", "nope"], &dir);
    assert_eq!(code, 1);
    assert!(err.contains("no keyspace \"nope\""), "{err}");

    let (code, out, _) = tool(&["scan", "--from", "k008", "--to", "k012", "--json"], &dir);
    assert_eq!(code, 0);
    let doc = json(&out);
    let keys: Vec<&str> = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["k008", "k009", "k011"]);
    let (code, out, _) = tool(&["scan", "--reverse", "--limit", "2"], &dir);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "\"wal-b\" => \"\\x00\\xff\"\n\"wal-a\" => \"in the log\"\n"
    );

    // No database: an error, and nothing is created.
    let empty = scratch("kv-none");
    let (code, _, err) = tool(&["get", "x"], &empty);
    assert_eq!(code, 1);
    assert!(err.contains("no database"), "{err}");
    assert!(!empty.exists());
}

#[test]
fn tools_that_open_the_database_refuse_while_another_holds_it() {
    let dir = build("locked");
    let db = Db::open(&dir, Options::default()).unwrap();
    let (code, _, err) = tool(&["put", "x", "y"], &dir);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("another process holds the database"), "{err}");
    assert!(err.contains("LOCK"), "{err}");
    // The file tools still work beside it.
    let (code, _, err) = tool(&["lsm"], &dir);
    assert_eq!(code, 0, "{err}");
    // get and scan open it read-only from this second process: they see the writer's
    // acknowledged writes (still only in its WAL) and leave its files alone.
    db.put(b"live", b"from the writer").unwrap();
    let (code, out, err) = tool(&["get", "live"], &dir);
    assert_eq!((code, out.as_str()), (0, "\"from the writer\"\n"), "{err}");
    let (code, out, err) = tool(&["scan", "--from", "live", "--limit", "1"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"live\" => \"from the writer\""), "{out}");
    db.put(b"live", b"again").unwrap();
    assert_eq!(db.get(b"live").unwrap(), Some(b"again".to_vec()));
    db.close().unwrap();
    let (code, _, err) = tool(&["put", "x", "y"], &dir);
    assert_eq!(code, 0, "{err}");
}

/// `tool verify` on `dir`: (exit code, text stdout, JSON problems).
fn verify(dir: &Path) -> (i32, String, Vec<Value>) {
    let (code, out, err) = tool(&["verify"], dir);
    assert!(!err.contains("panicked"), "{err}");
    let (json_code, json_out, _) = tool(&["verify", "--json"], dir);
    assert_eq!(code, json_code);
    let doc = json(&json_out);
    assert_eq!(doc["ok"], code == 0);
    (code, out, doc["problems"].as_array().unwrap().clone())
}

fn live_tables(dir: &Path) -> Vec<PathBuf> {
    let (_, out, _) = tool(&["manifest", "--json", "--shape-only"], dir);
    let doc = json(&out);
    let mut tables = Vec::new();
    for keyspace in doc["shape"]["keyspaces"].as_array().unwrap() {
        for level in keyspace["levels"].as_array().unwrap() {
            for f in level["files"].as_array().unwrap() {
                let number = f["number"].as_u64().unwrap();
                tables.push(dir.join(format!("{number:06}.sst")));
            }
        }
    }
    assert!(!tables.is_empty());
    tables
}

#[test]
fn verify_passes_a_clean_database() {
    let dir = build("verify-clean");
    let (code, out, problems) = verify(&dir);
    assert_eq!(code, 0, "{out}");
    assert!(problems.is_empty());
    assert!(out.contains("ok: no problems found"), "{out}");
    assert!(out.contains("CURRENT: ok"), "{out}");
    assert!(out.contains(".wal: ok"), "{out}");
    assert!(out.contains("OPTIONS-"), "{out}");
    assert_eq!(out.matches(".sst: ok").count(), 3, "{out}");
    // A directory that holds no database is a usage error (1), not damage (2).
    let empty = scratch("verify-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, _, err) = tool(&["verify"], &empty);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no database"), "{err}");
}

/// Asserts that verify fails and that some problem names `file` (and `offset` when given).
fn assert_found(dir: &Path, file: &Path, offset: Option<u64>, what: &str) {
    let (code, out, problems) = verify(dir);
    assert_eq!(code, 2, "{what}: {out}");
    let file = file.to_str().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p["file"] == file && offset.is_none_or(|o| p["offset"] == o)),
        "{what}: no problem naming {file} at {offset:?}: {problems:?}"
    );
    assert!(out.contains(&format!("problem: {file}")), "{what}: {out}");
}

#[test]
fn verify_finds_a_flipped_byte_in_a_table() {
    let dir = build("verify-table-byte");
    let table = live_tables(&dir)[0].clone();
    flip_byte(&table, 10);
    let (_, _, problems) = verify(&dir);
    assert_found(&dir, &table, None, "flipped table byte");
    assert!(
        problems.iter().any(|p| p["offset"].is_u64()),
        "a checksum failure names its block: {problems:?}"
    );
}

#[test]
fn verify_finds_a_truncated_table() {
    let dir = build("verify-table-short");
    let table = live_tables(&dir)[1].clone();
    let size = std::fs::metadata(&table).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap();
    file.set_len(size - 100).unwrap();
    assert_found(&dir, &table, Some(size - 100), "truncated table");
}

#[test]
fn verify_finds_a_missing_table() {
    let dir = build("verify-table-gone");
    let table = live_tables(&dir)[2].clone();
    std::fs::remove_file(&table).unwrap();
    assert_found(&dir, &table, None, "deleted table");
    let (_, out, _) = verify(&dir);
    assert!(out.contains("missing"), "{out}");
}

#[test]
fn verify_finds_a_damaged_wal_record() {
    let dir = build("verify-wal");
    let wal = live_wal(&dir);
    let (_, out, _) = tool(&["wal", "--json"], &wal);
    let first = json(&out)["files"][0]["records"][0]["offset"]
        .as_u64()
        .unwrap();
    flip_byte(&wal, first + 10);
    assert_found(&dir, &wal, Some(first), "flipped WAL byte");
}

#[test]
fn verify_reports_what_opening_drops_from_a_torn_wal_tail() {
    use std::io::Write as _;
    let dir = build("verify-wal-torn");
    let wal = live_wal(&dir);
    let size = std::fs::metadata(&wal).unwrap().len();
    // A write the crash interrupted: bytes after the last record that are no record.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&wal)
        .unwrap()
        .write_all(&[0xab; 10])
        .unwrap();
    assert_found(&dir, &wal, Some(size), "torn WAL tail");
    let (_, out, _) = verify(&dir);
    assert!(out.contains("torn tail"), "{out}");
    assert!(
        out.contains("10 bytes after the last complete record") && out.contains("opening drops"),
        "{out}"
    );
}

#[test]
fn verify_reports_synced_wal_data_that_was_cut() {
    let dir = build("verify-wal-synced-cut");
    let wal = live_wal(&dir);
    let (_, out, _) = tool(&["wal", "--json"], &wal);
    let records = json(&out)["files"][0]["records"]
        .as_array()
        .unwrap()
        .clone();
    let last = records.last().unwrap()["offset"].as_u64().unwrap();
    let size = std::fs::metadata(&wal).unwrap().len();
    // Cut exactly at a record boundary: it reads as a clean end, but the clean close
    // recorded the WAL's synced size in the MANIFEST.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(last)
        .unwrap();
    assert_found(&dir, &wal, Some(last), "cut WAL");
    let (_, out, _) = verify(&dir);
    assert!(
        out.contains("synced data lost") && out.contains(&format!("synced to {size} bytes")),
        "{out}"
    );
    let error = Db::open(&dir, Options::default()).unwrap_err().to_string();
    assert!(error.contains("synced"), "{error}");
}

#[test]
fn verify_finds_a_damaged_manifest() {
    let dir = build("verify-manifest");
    let manifest = manifest_of(&dir);
    flip_byte(&manifest, 20);
    assert_found(&dir, &manifest, None, "flipped MANIFEST byte");
    // In the last record, which opening the database would drop as a torn tail: verify
    // still reports it.
    let dir = build("verify-manifest-tail");
    let manifest = manifest_of(&dir);
    let size = std::fs::metadata(&manifest).unwrap().len();
    flip_byte(&manifest, size - 3);
    assert_found(
        &dir,
        &manifest,
        None,
        "flipped byte in the last MANIFEST record",
    );
}

#[test]
fn verify_finds_a_damaged_current_and_still_checks_the_rest() {
    let dir = build("verify-current");
    let current = dir.join("CURRENT");
    flip_byte(&current, 3);
    let (code, out, _) = verify(&dir);
    assert_eq!(code, 2);
    assert_found(&dir, &current, None, "corrupt CURRENT");
    assert_eq!(out.matches(".sst: ok").count(), 3, "{out}");
}

#[test]
fn stats_adds_up_table_properties_per_level() {
    let dir = build("stats");
    let (code, out, err) = tool(&["stats"], &dir);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("keyspace 1 \"users\""), "{out}");
    assert!(out.contains("WAL: 1 files"), "{out}");
    let (code, out, err) = tool(&["stats", "--json"], &dir);
    assert_eq!(code, 0, "{err}");
    let doc = json(&out);
    let l0 = &doc["keyspaces"][0]["levels"][0];
    assert_eq!(l0["files"], 2, "{out}");
    assert_eq!(l0["deletions"], 1, "{out}");
    assert_eq!(l0["range_deletions"], 1, "{out}");
    // 40 + 10 keys of 4 bytes, each with its 8-byte trailer, plus the deletion's.
    assert_eq!(l0["raw_key_bytes"], 51 * 12, "{out}");
    let users = &doc["keyspaces"][1]["total"];
    assert_eq!(users["entries"], 2, "{out}");
    assert_eq!(users["raw_value_bytes"], 2, "{out}");
    assert_eq!(doc["total"]["files"], 3, "{out}");
    assert!(doc["wal_bytes"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(doc["unreferenced_tables"], 0, "{out}");

    // A table no version references (left by a crashed compaction, say) is counted apart.
    let table = live_tables(&dir).remove(0);
    std::fs::copy(&table, dir.join("999999.sst")).unwrap();
    let (code, out, _) = tool(&["stats", "--json"], &dir);
    assert_eq!(code, 0);
    assert_eq!(json(&out)["unreferenced_tables"], 1, "{out}");

    // A damaged live table is an error naming it, not wrong numbers.
    let size = std::fs::metadata(&table).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap()
        .set_len(size - 10)
        .unwrap();
    let (code, _, err) = tool(&["stats"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(table.to_str().unwrap()), "{err}");
}

#[test]
fn help_lists_every_tool() {
    let out = shale(&["tool", "--help"]);
    let help = text(&out.stdout);
    for name in [
        "sst", "wal", "manifest", "lsm", "get", "put", "delete", "scan", "verify", "repair",
        "stats", "blob",
    ] {
        assert!(help.contains(name), "{name} missing from:\n{help}");
    }
}

#[test]
fn verify_checks_table_contents_against_the_manifest() {
    // Swap the two L0 tables of "default": each file now holds keys and seqnos outside the
    // ranges the MANIFEST records for its number.
    let dir = build("verify-swapped");
    let (newer, older) = (dir.join("000010.sst"), dir.join("000007.sst"));
    let live = live_tables(&dir);
    assert!(live.contains(&newer) && live.contains(&older), "{live:?}");
    let scratch = dir.join("swap.tmp");
    std::fs::rename(&newer, &scratch).unwrap();
    std::fs::rename(&older, &newer).unwrap();
    std::fs::rename(&scratch, &older).unwrap();
    let (code, out, problems) = verify(&dir);
    assert_eq!(code, 2, "{out}");
    let about = |file: &Path, text: &str| {
        problems.iter().any(|p| {
            p["file"] == file.to_str().unwrap() && p["detail"].as_str().unwrap().contains(text)
        })
    };
    assert!(
        about(&newer, "sorts after the MANIFEST's largest key"),
        "{problems:?}"
    );
    assert!(
        about(&newer, "outside the MANIFEST's range"),
        "{problems:?}"
    );
    assert!(
        about(&older, "outside the MANIFEST's range"),
        "{problems:?}"
    );
    assert!(about(&older, "but the MANIFEST says"), "{problems:?}");
}

/// Copies the files of `from` (not LOCK) into a fresh `to`.
fn copy_db(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() != "LOCK" {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn verify_finds_any_flipped_byte_in_any_file_without_panicking() {
    use rand::{Rng, SeedableRng};
    let clean = build("verify-flips-clean");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let flips_per_file: usize = std::env::var("SHALE_TOOLS_FLIPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6);
    let mut names: Vec<PathBuf> = files_with(&clean, "");
    // The info LOG is text for people, with no checksum to check (docs/operations.md).
    names.retain(|p| {
        let name = p.file_name().unwrap().to_str().unwrap();
        name != "LOCK" && name != "LOG" && !name.starts_with("LOG.old.")
    });
    assert!(
        clean.join("LOG").exists(),
        "the database writes an info LOG"
    );
    let dir = scratch("verify-flips");
    for file in &names {
        let name = file.file_name().unwrap();
        let size = std::fs::metadata(file).unwrap().len();
        for _ in 0..flips_per_file {
            let offset = rng.gen_range(0..size);
            copy_db(&clean, &dir);
            let damaged = dir.join(name);
            flip_byte(&damaged, offset);
            let (code, out, err) = tool(&["verify"], &dir);
            let what = format!("{} at {offset}", name.to_str().unwrap());
            assert!(!err.contains("panicked"), "{what}: {err}");
            assert_eq!(code, 2, "{what}: {out}");
            let expected = format!("problem: {}", damaged.display());
            assert!(out.contains(&expected), "{what}: {out}");
        }
    }
}

/// `tool get KEY [--keyspace K]` on `dir`: the value printed (unquoted), or `None` when not
/// found.
fn get_value(dir: &Path, key: &str, keyspace: Option<&str>) -> Option<String> {
    let mut args = vec!["get", key];
    if let Some(keyspace) = keyspace {
        args.extend(["--keyspace", keyspace]);
    }
    let (code, out, err) = tool(&args, dir);
    assert!(!err.contains("panicked"), "{err}");
    (code == 0).then(|| out.trim_end().trim_matches('"').to_owned())
}

#[test]
fn repair_salvages_around_a_damaged_table_and_manifest() {
    let dir = build("repair");
    let newer_table = live_tables(&dir)[0].clone();
    let table_name = newer_table
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let size = std::fs::metadata(&newer_table).unwrap().len();
    flip_byte(&newer_table, size / 3);
    let manifest = manifest_of(&dir);
    let manifest_name = manifest.file_name().unwrap().to_str().unwrap().to_owned();
    flip_byte(&manifest, 30);
    let (code, _, _) = tool(&["verify"], &dir);
    assert_eq!(code, 2);

    let (code, out, err) = tool(&["repair", "--json"], &dir);
    assert_eq!(code, 0, "{err}");
    let doc = json(&out);
    assert!(doc["manifest_used"].is_null(), "{doc}");
    let lost: Vec<&str> = doc["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert!(lost.contains(&table_name.as_str()), "{lost:?}");
    assert!(lost.contains(&manifest_name.as_str()), "{lost:?}");
    assert!(doc["bytes_lost"].as_u64().unwrap() >= size);
    assert!(
        dir.join("lost").join(&table_name).exists(),
        "set aside, not deleted"
    );
    let names: Vec<&str> = doc["keyspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "users"]);

    let (code, out, problems) = verify(&dir);
    assert_eq!(code, 0, "{out}\n{problems:?}");
    // The damaged table held the newer versions of k000..k009, the deletion of k010 and the
    // range deletion of k020..k024: the first table's versions show through.
    assert_eq!(get_value(&dir, "k000", None).as_deref(), Some("v0"));
    assert_eq!(get_value(&dir, "k010", None).as_deref(), Some("v10"));
    assert_eq!(get_value(&dir, "k022", None).as_deref(), Some("v22"));
    assert_eq!(get_value(&dir, "k039", None).as_deref(), Some("v39"));
    assert_eq!(
        get_value(&dir, "wal-a", None).as_deref(),
        Some("in the log")
    );
    assert_eq!(get_value(&dir, "bob", Some("users")).as_deref(), Some("2"));

    // A second repair of the repaired database loses nothing more, and still counts what
    // the first one set aside in lost/.
    let (code, out, err) = tool(&["repair"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!(
            "0 files set aside, {size} bytes of data lost ({size} of them set aside by an \
             earlier repair)"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("set aside by an earlier repair: {table_name}")),
        "{out}"
    );
    assert!(out.contains("kept "), "{out}");
}

#[test]
fn repair_reports_a_damaged_wal_tail() {
    let dir = build("repair-wal");
    let wal = live_wal(&dir);
    let size = std::fs::metadata(&wal).unwrap().len();
    flip_byte(&wal, size - 3);
    let (code, out, err) = tool(&["repair"], &dir);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("levels and keyspaces from"), "{out}");
    let wal_name = wal.file_name().unwrap().to_str().unwrap();
    assert!(out.contains(&format!("lost {wal_name}")), "{out}");
    assert!(out.contains("offset"), "{out}");
    let (code, out, _) = verify(&dir);
    assert_eq!(code, 0, "{out}");
    assert_eq!(get_value(&dir, "k039", None).as_deref(), Some("v39"));
}

#[test]
fn repair_refuses_while_another_holds_the_database_or_when_nothing_is_there() {
    let dir = build("repair-locked");
    let db = Db::open(&dir, Options::default()).unwrap();
    let (code, _, err) = tool(&["repair"], &dir);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("another process holds the database"), "{err}");
    db.close().unwrap();
    assert!(!dir.join("lost").exists());

    let empty = scratch("repair-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, _, err) = tool(&["repair"], &empty);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nothing to repair"), "{err}");

    // Only a damaged CURRENT: nothing says it is a Shale database (refused, nothing moved);
    // forced, there is nothing to salvage (exit 2).
    let hopeless = scratch("repair-hopeless");
    std::fs::create_dir_all(&hopeless).unwrap();
    std::fs::write(hopeless.join("CURRENT"), b"garbage").unwrap();
    let (code, _, err) = tool(&["repair"], &hopeless);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("does not look like a Shale database"), "{err}");
    assert!(!hopeless.join("lost").exists());
    let (code, _, err) = tool(&["repair", "--force"], &hopeless);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing could be salvaged"), "{err}");
    assert!(hopeless.join("lost").join("CURRENT").exists());
}

/// A database whose values of 100 bytes and more live in blob files; half of them were
/// overwritten and compacted, so its blob file is part garbage.
fn build_with_blobs(name: &str) -> PathBuf {
    let dir = scratch(name);
    let keyspace = KeyspaceOptions {
        enable_blob_files: true,
        min_blob_size: 100,
        ..KeyspaceOptions::default()
    };
    let db = Db::open(
        &dir,
        Options {
            default_keyspace: keyspace,
            ..Options::default()
        },
    )
    .unwrap();
    let ks = db.default_keyspace();
    for i in 0..20 {
        ks.put(
            format!("b{i:03}").as_bytes(),
            &vec![b'a' + u8::try_from(i).unwrap(); 500],
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(&ks, None, None).unwrap();
    for i in 0..10 {
        ks.delete(format!("b{i:03}").as_bytes()).unwrap();
    }
    db.compact_range(&ks, None, None).unwrap();
    db.close().unwrap();
    dir
}

#[test]
fn blob_files_in_verify_stats_lsm_manifest_and_blob() {
    let dir = build_with_blobs("blobs");
    let blob = files_with(&dir, ".blob").remove(0);
    let (code, out, problems) = verify(&dir);
    assert_eq!(code, 0, "{out}");
    assert!(problems.is_empty());
    assert!(out.contains(".blob: ok, 20 records"), "{out}");
    assert!(out.contains("50.0% live"), "{out}");
    for tool_name in ["stats", "lsm", "manifest"] {
        let (code, out, err) = tool(&[tool_name], &dir);
        assert_eq!(code, 0, "{tool_name}: {err}");
        assert!(out.contains("blob files: 1"), "{tool_name}: {out}");
        assert!(out.contains("live 50.0%"), "{tool_name}: {out}");
    }
    let (_, out, _) = tool(&["manifest"], &dir);
    assert!(out.contains("add blob file"), "{out}");
    assert!(out.contains("garbage +10 records"), "{out}");
    let (_, out, _) = tool(&["lsm", "--json"], &dir);
    let doc = json(&out);
    let blobs = doc["keyspaces"][0]["blob_files"].as_array().unwrap();
    assert_eq!(blobs[0]["garbage_records"], 10);
    let (code, out, err) = tool(&["blob", "--values"], &blob);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("footer: 20 records"), "{out}");
    assert!(out.contains("\"b003\""), "{out}");

    // A flipped byte inside the first record: verify and the dump name the blob file and
    // the record's offset (32, after the header).
    flip_byte(&blob, 40);
    assert_found(&dir, &blob, Some(32), "a damaged blob record");
    let (code, _, err) = tool(&["blob"], &blob);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("offset 32"), "{err}");
}

#[test]
fn verify_finds_a_missing_blob_file() {
    let dir = build_with_blobs("blobs-missing");
    let blob = files_with(&dir, ".blob").remove(0);
    std::fs::remove_file(&blob).unwrap();
    let (code, out, _) = verify(&dir);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(blob.to_str().unwrap()), "{out}");
}

#[test]
fn repair_refuses_a_rocksdb_directory_unless_forced() {
    let dir = scratch("repair-rocksdb");
    std::fs::create_dir_all(&dir).unwrap();
    let mut table = vec![0x5a; 300];
    table.extend_from_slice(&0x88e2_41b7_85f4_cff7_u64.to_le_bytes());
    std::fs::write(dir.join("CURRENT"), "MANIFEST-000005\n").unwrap();
    std::fs::write(dir.join("MANIFEST-000005"), [0x11; 120]).unwrap();
    std::fs::write(dir.join("000004.log"), [0x22; 90]).unwrap();
    std::fs::write(dir.join("000010.sst"), &table).unwrap();
    std::fs::write(dir.join("IDENTITY"), "uuid\n").unwrap();
    let (code, _, err) = tool(&["repair"], &dir);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("does not look like a Shale database") && err.contains("--force"),
        "{err}"
    );
    assert!(!dir.join("lost").exists(), "nothing moved");
    assert!(dir.join("000010.sst").exists() && dir.join("CURRENT").exists());
    let (code, _, err) = tool(&["repair", "--force"], &dir);
    assert!(code == 0 || code == 2, "{err}");
    assert!(dir.join("lost").join("000010.sst").exists());
}

#[test]
fn verify_of_a_manifest_with_a_torn_tail_never_calls_a_live_table_an_orphan() {
    let dir = build("verify-torn-manifest");
    let live: Vec<String> = live_tables(&dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    let manifest = manifest_of(&dir);
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() - 3]).unwrap();
    let (code, out, problems) = verify(&dir);
    assert_eq!(code, 2, "{out}");
    assert!(
        problems
            .iter()
            .any(|p| p["file"].as_str().unwrap().contains("MANIFEST")),
        "the torn tail is the problem: {problems:?}"
    );
    assert!(out.contains("torn or damaged tail"), "{out}");
    assert!(!out.contains("orphan"), "{out}");
    assert!(!out.contains("opening the database deletes"), "{out}");
    for name in &live {
        let checked = out
            .lines()
            .find(|l| l.trim_start().starts_with(name.as_str()))
            .unwrap_or_else(|| panic!("{name} is checked:\n{out}"));
        assert!(!checked.contains("(not in the MANIFEST)"), "{checked}");
    }
    // The records before the tail still list tables: they are checked as live.
    assert!(out.contains("(keyspace 0 L"), "{out}");
}

#[test]
fn a_missing_current_is_named_and_points_at_repair() {
    let dir = build("missing-current");
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    for args in [&["get", "k001"][..], &["manifest"][..], &["scan"][..]] {
        let (code, _, err) = tool(args, &dir);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains("CURRENT is missing")
                && err.contains("shale tool repair")
                && !err.contains("create the database first"),
            "{args:?}: {err}"
        );
    }
    assert!(!dir.join("CURRENT").exists(), "nothing was created");
}

/// Every file of `dir`: name and contents.
fn dir_contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_write_tool_refused_for_mid_wal_damage_changes_nothing_and_its_advice_works() {
    let dir = build("mid-wal-damage");
    let wal = live_wal(&dir);
    flip_byte(&wal, 45);
    let before = dir_contents(&dir);
    let (code, _, err) = tool(&["put", "x", "y"], &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--wal_recovery_mode point-in-time"), "{err}");
    assert_eq!(
        dir_contents(&dir)
            .iter()
            .map(|(n, b)| (n.clone(), b.len()))
            .collect::<Vec<_>>(),
        before
            .iter()
            .map(|(n, b)| (n.clone(), b.len()))
            .collect::<Vec<_>>(),
        "the refused open changed the directory"
    );
    assert!(
        dir_contents(&dir) == before,
        "the refused open changed a file"
    );
    // Every tool that opens the database takes the mode the error names.
    let (code, _, err) = tool(
        &["get", "k039", "--wal_recovery_mode", "point-in-time"],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = tool(
        &["put", "x", "y", "--wal_recovery_mode", "point-in-time"],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = tool(&["get", "x"], &dir);
    assert_eq!((code, out.trim()), (0, "\"y\""), "{err}");
    let (code, _, err) = tool(&["put", "x", "y", "--wal_recovery_mode", "sometimes"], &dir);
    assert_eq!(code, 1, "a usage error: {err}");
    assert!(err.contains("point-in-time"), "{err}");
}

#[test]
fn verify_with_a_damaged_current_calls_no_table_an_orphan() {
    let dir = build("verify-damaged-current");
    // A table the newest MANIFEST does not list: with CURRENT damaged, nothing says whether
    // the MANIFEST checked is the live one, so it may be live.
    let live = live_tables(&dir);
    std::fs::copy(&live[0], dir.join("000999.sst")).unwrap();
    flip_byte(&dir.join("CURRENT"), 2);
    let (code, out, _) = verify(&dir);
    assert_eq!(code, 2, "{out}");
    assert!(!out.contains("orphan"), "{out}");
    let checked = out
        .lines()
        .find(|l| l.contains("000999.sst"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(checked.contains("may be live, keep it"), "{checked}");
}
