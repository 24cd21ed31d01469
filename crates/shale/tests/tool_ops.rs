//! Runs the built `shale` binary's ldb-style commands (`tool compact | flush | keyspace |
//! count | approx-size | property | delete-range | batch-put | dump | load | write-sst |
//! shell`) on small databases, and `bench --use_existing_db`'s header.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use shale_engine::{Db, Options};

/// Runs `shale ARGS` and returns (exit code, stdout, stderr).
fn shale(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary");
    (
        out.status.code().expect("exited, not killed by a signal"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs `shale tool COMMAND DIR REST...`.
fn tool(dir: &Path, command: &str, rest: &[&str]) -> (i32, String, String) {
    let mut args = vec!["tool", command, dir.to_str().unwrap()];
    args.extend_from_slice(rest);
    shale(&args)
}

/// [`tool`], expecting success; returns stdout.
fn ok(dir: &Path, command: &str, rest: &[&str]) -> String {
    let (code, out, err) = tool(dir, command, rest);
    assert_eq!(code, 0, "{command} {rest:?}: {err}");
    out
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-tool-ops-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An empty database in `dir`.
fn create(dir: &Path) {
    Db::open(dir, Options::default()).unwrap().close().unwrap();
}

/// A database with `n` keys `key{i:06}` => `value-{i}-...` (some flushed, some in the WAL).
fn filled(dir: &Path, n: u32) {
    let db = Db::open(dir, Options::default()).unwrap();
    for i in 0..n {
        db.put(
            format!("key{i:06}").as_bytes(),
            format!("value-{i}-{}", "x".repeat(i as usize % 50)).as_bytes(),
        )
        .unwrap();
        if i == n / 2 {
            db.flush().unwrap();
        }
    }
    db.close().unwrap();
}

#[test]
fn batch_put_count_scan_delete_range_and_hex_keys() {
    let dir = scratch("everyday").join("db");
    let (code, _, err) = tool(&dir, "batch-put", &["k1", "v1"]);
    assert_eq!(code, 1, "no database, none created without the flag");
    assert!(err.contains("CURRENT"), "{err}");
    let (code, _, err) = tool(&dir, "count", &["--create_if_missing"]);
    assert_eq!(code, 1, "a reading command never creates one");
    assert!(err.contains("CURRENT"), "{err}");
    ok(
        &dir,
        "batch-put",
        &[
            "k1",
            "v1",
            "k2",
            "v2",
            "k3",
            "v3",
            "k4",
            "v4",
            "--create_if_missing",
        ],
    );
    let (code, _, err) = tool(&dir, "batch-put", &["k5", "v5", "k6"]);
    assert_eq!(code, 1);
    assert!(err.contains("\"k6\" without a value"), "{err}");
    assert_eq!(
        tool(&dir, "get", &["k5"]).0,
        1,
        "a refused batch writes nothing"
    );
    assert_eq!(ok(&dir, "count", &[]).trim(), "4");
    assert_eq!(
        ok(&dir, "count", &["--from", "k2", "--to", "k4"]).trim(),
        "2"
    );
    let (code, _, err) = tool(&dir, "count", &["--from", "k4", "--to", "k2"]);
    assert_eq!(code, 1);
    assert!(err.contains("after --to"), "{err}");
    assert_eq!(
        ok(&dir, "scan", &["--from", "k2", "--limit", "2"]),
        "\"k2\" => \"v2\"\n\"k3\" => \"v3\"\n"
    );
    let deleted = ok(&dir, "delete-range", &["k1", "k3"]);
    assert!(deleted.starts_with("deleted [\"k1\", \"k3\")"), "{deleted}");
    assert_eq!(ok(&dir, "count", &[]).trim(), "2");
    let (code, _, _) = tool(&dir, "get", &["k2"]);
    assert_eq!(code, 1, "k2 is deleted");
    // Hex keys and values, as ldb's --hex.
    ok(&dir, "put", &["--hex", "0x00ff", "0x0102"]);
    assert_eq!(ok(&dir, "get", &["--hex", "00FF"]).trim(), "0102");
    assert_eq!(ok(&dir, "get", &["\\x00\\xff"]).trim(), "\"\\x01\\x02\"");
    let (code, _, err) = tool(&dir, "batch-put", &["--hex", "0x0", "00"]);
    assert_eq!(code, 1);
    assert!(err.contains("odd number of hex digits"), "{err}");
    let counted = json(&ok(&dir, "count", &["--json"]));
    assert_eq!(counted["keys"].as_u64(), Some(3), "{counted}");
}

#[test]
fn keyspaces_are_created_listed_used_and_dropped() {
    let dir = scratch("keyspaces").join("db");
    create(&dir);
    let made = ok(&dir, "keyspace", &["create", "users"]);
    assert!(made.starts_with("created keyspace \"users\""), "{made}");
    let (code, _, err) = tool(&dir, "keyspace", &["create", "users"]);
    assert_eq!(code, 1);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(ok(&dir, "keyspace", &["list"]), "default\nusers\n");
    ok(&dir, "put", &["--keyspace", "users", "alice", "1"]);
    assert_eq!(
        ok(&dir, "get", &["--keyspace", "users", "alice"]).trim(),
        "\"1\""
    );
    assert_eq!(
        ok(&dir, "count", &[]).trim(),
        "0",
        "the default keyspace is apart"
    );
    ok(&dir, "keyspace", &["drop", "users"]);
    assert_eq!(
        ok(&dir, "keyspace", &["list", "--json"]),
        "{\n  \"keyspaces\": [\n    \"default\"\n  ]\n}\n"
    );
    let (code, _, err) = tool(&dir, "keyspace", &["drop", "users"]);
    assert_eq!(code, 1);
    assert!(err.contains("no keyspace \"users\""), "{err}");
    let (code, _, err) = tool(&dir, "keyspace", &["drop", "default"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = tool(&dir, "count", &["--keyspace", "users"]);
    assert_eq!(code, 1);
    assert!(err.contains("it has: default"), "{err}");
}

#[test]
fn flush_compact_approx_size_and_properties() {
    let dir = scratch("admin").join("db");
    filled(&dir, 20_000);
    let files_at = |level: u32| -> u64 {
        ok(
            &dir,
            "property",
            &[&format!("shale.num-files-at-level{level}")],
        )
        .trim()
        .parse()
        .unwrap()
    };
    let l0_before = files_at(0);
    let flushed = json(&ok(&dir, "flush", &["--json"]));
    assert!(
        flushed["tables_after"].as_u64() > flushed["tables_before"].as_u64(),
        "the WAL half became a table: {flushed}"
    );
    assert!(files_at(0) > l0_before);
    let all = ok(&dir, "approx-size", &[]).trim().parse::<u64>().unwrap();
    let half = ok(&dir, "approx-size", &["--to", "key010000"])
        .trim()
        .parse::<u64>()
        .unwrap();
    assert!(all > 200_000, "{all}");
    assert!(half > all / 4 && half < all * 3 / 4, "{half} of {all}");
    assert_eq!(ok(&dir, "approx-size", &["--from", "zzz"]).trim(), "0");
    let compacted = json(&ok(&dir, "compact", &["--json"]));
    let after = compacted["files_per_level_after"].as_array().unwrap();
    assert_eq!(after[0].as_u64(), Some(0), "{compacted}");
    assert_eq!(files_at(0), 0);
    assert_eq!(ok(&dir, "count", &[]).trim(), "20000");
    ok(
        &dir,
        "compact",
        &["--from", "key000100", "--to", "key000200"],
    );
    // Named properties, with or without the prefix; an unknown one lists the names.
    assert_eq!(ok(&dir, "property", &["estimate-num-keys"]).trim(), "20000");
    assert_eq!(ok(&dir, "property", &["shale.num-keyspaces"]).trim(), "1");
    let (code, _, err) = tool(&dir, "property", &["nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("shale.total-sst-files-size"), "{err}");
    let listed = json(&ok(&dir, "property", &["--list", "--json"]));
    assert!(
        listed["shale.total-sst-files-size"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
}

#[test]
fn dump_and_load_round_trip_and_refuse_damage() {
    let root = scratch("dump");
    let (src, dst) = (root.join("src"), root.join("dst"));
    filled(&src, 30_000);
    let dump = root.join("keys.dump");
    let dumped = json(&ok(&src, "dump", &[dump.to_str().unwrap(), "--json"]));
    assert_eq!(dumped["records"].as_u64(), Some(30_000), "{dumped}");
    let (code, _, err) = tool(&src, "dump", &[dump.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("exists"), "{err}");
    create(&dst);
    ok(&dst, "keyspace", &["create", "copy"]);
    let loaded = ok(
        &dst,
        "load",
        &[dump.to_str().unwrap(), "--keyspace", "copy"],
    );
    assert!(loaded.starts_with("loaded 30000 records"), "{loaded}");
    assert_eq!(
        ok(&src, "scan", &[]),
        ok(&dst, "scan", &["--keyspace", "copy"]),
        "the loaded keyspace equals the dumped one"
    );
    // A flipped byte in a chunk: refused (exit 2), nothing of that chunk loaded.
    let mut bytes = std::fs::read(&dump).unwrap();
    let damaged = root.join("damaged.dump");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&damaged, &bytes).unwrap();
    let fresh = root.join("fresh");
    create(&fresh);
    let (code, _, err) = tool(&fresh, "load", &[damaged.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("checksum mismatch") && err.contains("records were loaded"),
        "{err}"
    );
    let partial: u64 = ok(&fresh, "count", &[]).trim().parse().unwrap();
    assert!(partial < 30_000, "{partial}");
    // Truncated: the end chunk is missing.
    bytes[middle] ^= 0x40;
    let truncated = root.join("truncated.dump");
    std::fs::write(&truncated, &bytes[..bytes.len() - 10]).unwrap();
    let (code, _, err) = tool(&fresh, "load", &[truncated.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    std::fs::write(&damaged, b"not a dump at all, just text").unwrap();
    let (code, _, err) = tool(&fresh, "load", &[damaged.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not a shale dump"), "{err}");
}

#[test]
fn dump_file_layout_is_as_documented() {
    let root = scratch("layout");
    let db = root.join("db");
    create(&db);
    ok(&db, "batch-put", &["a", "1", "bb", "22"]);
    let dump = root.join("two.dump");
    ok(&db, "dump", &[dump.to_str().unwrap()]);
    let bytes = std::fs::read(&dump).unwrap();
    let mut want = b"SHALEDMP\x01\x00\x00\x00\x07\x00default".to_vec();
    let header_crc = crc32c::crc32c(&want);
    want.extend_from_slice(&header_crc.to_le_bytes());
    let chunk = b"\x16\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00a1\x02\x00\x00\x00\x02\x00\x00\x00bb22";
    want.extend_from_slice(chunk);
    want.extend_from_slice(&crc32c::crc32c(chunk).to_le_bytes());
    let end = b"\x08\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00";
    want.extend_from_slice(end);
    want.extend_from_slice(&crc32c::crc32c(end).to_le_bytes());
    assert_eq!(bytes, want);
}

#[test]
fn write_sst_from_a_dump_and_a_csv_then_ingest() {
    let root = scratch("write-sst");
    let src = root.join("src");
    filled(&src, 5_000);
    let dump = root.join("keys.dump");
    ok(&src, "dump", &[dump.to_str().unwrap()]);
    let from_dump = root.join("from-dump.sst");
    let (code, out, err) = shale(&[
        "tool",
        "write-sst",
        from_dump.to_str().unwrap(),
        "--dump",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("5000 entries"), "{out}");
    let dst = root.join("dst");
    create(&dst);
    ok(&dst, "ingest", &[from_dump.to_str().unwrap()]);
    assert_eq!(ok(&dst, "count", &[]).trim(), "5000");
    assert_eq!(ok(&src, "scan", &[]), ok(&dst, "scan", &[]));
    // CSV: unsorted lines, commas in values, escapes; duplicates and bad lines refused.
    let csv = root.join("rows.csv");
    std::fs::write(&csv, "zeta,last,one\nalpha,first\n\nk\\x00,nul key\n").unwrap();
    let from_csv = root.join("from-csv.sst");
    let (code, _, err) = shale(&[
        "tool",
        "write-sst",
        from_csv.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let csv_db = root.join("csv-db");
    create(&csv_db);
    ok(&csv_db, "ingest", &[from_csv.to_str().unwrap()]);
    assert_eq!(
        ok(&csv_db, "scan", &[]),
        "\"alpha\" => \"first\"\n\"k\\x00\" => \"nul key\"\n\"zeta\" => \"last,one\"\n"
    );
    std::fs::write(&csv, "a,1\nb,2\na,3\n").unwrap();
    let (code, _, err) = shale(&[
        "tool",
        "write-sst",
        root.join("dup.sst").to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("lines 1 and 3"), "{err}");
    assert!(!root.join("dup.sst").exists(), "no partial file is left");
    std::fs::write(&csv, "a,1\nno comma here\n").unwrap();
    let (code, _, err) = shale(&[
        "tool",
        "write-sst",
        root.join("bad.sst").to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains(":2: expected KEY,VALUE"), "{err}");
}

#[test]
fn the_shell_runs_commands_as_lines_over_one_open_database() {
    let dir = scratch("shell").join("db");
    create(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(["tool", "shell", dir.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"put a 1\nbatch-put b 2 'c d' \"3 4\"\nget 'c d'\ncount\nscan --limit 1\n\
              keyspace create users\nput --keyspace users u 9\nkeyspace list\n\
              bogus\nget nope\ndelete a\ncount --json\nquit\nput never 1\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.contains(&"\"3 4\""), "{stdout}");
    assert!(lines.contains(&"3"), "count before the delete: {stdout}");
    assert!(lines.contains(&"\"a\" => \"1\""), "{stdout}");
    assert!(lines.contains(&"users"), "{stdout}");
    assert!(stdout.contains("\"keys\": 2"), "{stdout}");
    assert!(
        stderr.contains("unrecognized subcommand 'bogus'"),
        "{stderr}"
    );
    assert!(stderr.contains("error: key \"nope\" not found"), "{stderr}");
    // One database, closed at the end: what it wrote is there, nothing after `quit`.
    assert_eq!(
        ok(&dir, "get", &["--keyspace", "users", "u"]).trim(),
        "\"9\""
    );
    let (code, _, _) = tool(&dir, "get", &["never"]);
    assert_eq!(code, 1);
    let (code, _, _) = tool(&dir, "get", &["a"]);
    assert_eq!(code, 1);
}

#[test]
fn bench_on_an_existing_database_prints_its_real_compression() {
    let dir = scratch("bench").join("db");
    filled(&dir, 5_000);
    let (code, out, err) = shale(&[
        "bench",
        &format!("--db={}", dir.display()),
        "--use_existing_db",
        "--benchmarks=readrandom",
        "--num=100",
    ]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("Existing DB:"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(" tables (") && line.contains("ratio"),
        "{line}"
    );
}

#[test]
fn the_shell_reads_beside_a_writer_with_read_only() {
    let dir = scratch("shell-read-only").join("db");
    let writer = Db::open(&dir, Options::default()).unwrap();
    writer.put(b"k", b"v").unwrap();
    let run = |args: &[&str], input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shale"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let path = dir.to_str().unwrap();
    let (code, _, err) = run(&["tool", "shell", path], "get k\n");
    assert_eq!(code, 1);
    assert!(err.contains("--read-only"), "{err}");
    let (code, out, err) = run(
        &["tool", "shell", path, "--read-only"],
        "get k\nput x y\ncount\n",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "\"v\"\n1\n");
    assert!(err.contains("read-only"), "{err}");
    writer.close().unwrap();
}
