//! Runs the built `shale` binary: `bench sst` on a small table, then `tool sst` on the table the
//! bench keeps (`<dir>/bench-lz4.sst`), on a damaged copy of it, and on a missing file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

const NUM: u64 = 20_000;

fn shale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// A fresh directory under cargo's scratch space for integration tests.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// One bench run shared by the tests: its directory and stdout.
fn bench() -> &'static (PathBuf, String) {
    static BENCH: OnceLock<(PathBuf, String)> = OnceLock::new();
    BENCH.get_or_init(|| {
        // The directory does not exist yet: the bench must create it.
        let dir = scratch("bench").join("data");
        let num = NUM.to_string();
        let out = shale(&[
            "bench",
            "sst",
            "--num",
            &num,
            "--seconds",
            "1",
            "--absent",
            "100000",
            "--dir",
            dir.to_str().unwrap(),
        ]);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "bench failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            text(&out.stderr)
        );
        (dir, stdout)
    })
}

fn table() -> PathBuf {
    bench().0.join("bench-lz4.sst")
}

/// The text after `name :` on the measurement line called `name`.
fn measurement<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|line| {
            let (left, right) = line.split_once(" : ")?;
            (left.trim_end() == name).then_some(right)
        })
        .unwrap_or_else(|| panic!("no {name} line in:\n{stdout}"))
}

#[test]
fn bench_reports_every_measurement() {
    let (dir, stdout) = bench();
    let bloom = measurement(stdout, "bloom_fp");
    assert!(bloom.ends_with("of 100000 absent keys)"), "{bloom}");
    let percent: f64 = bloom.split('%').next().unwrap().parse().unwrap();
    // 10 bits/key predicts about 0.82%; anything near it is a working filter.
    assert!((0.2..3.0).contains(&percent), "{bloom}");
    assert!(measurement(stdout, "bloom_fp_estimate").starts_with("0.8194% "));
    let lookups = measurement(stdout, "readrandom");
    assert!(lookups.contains("micros/op"), "{lookups}");
    assert!(
        lookups.contains(&format!("{NUM} of {NUM} found right")),
        "{lookups}"
    );
    for scan in ["readseq", "readreverse"] {
        let line = measurement(stdout, scan);
        assert!(line.contains(&format!("MB/s ({NUM} entries)")), "{line}");
    }
    assert!(measurement(stdout, "write").contains("ops/sec"));
    assert!(measurement(stdout, "readrandom_nocache").contains("found right"));
    let mut sizes = Vec::new();
    for codec in ["none", "lz4", "snappy", "zstd", "zlib", "zstd_dict"] {
        let line = measurement(stdout, &format!("size_{codec}"));
        let bytes: u64 = line.split_whitespace().next().unwrap().parse().unwrap();
        sizes.push(bytes);
    }
    // Values compress to about half: every codec must beat no compression.
    assert!(
        sizes[1..].iter().all(|&s| s < sizes[0] * 3 / 4),
        "{sizes:?}"
    );
    // Only the speed table is kept.
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bench-lz4.sst"]);
    assert_eq!(std::fs::metadata(table()).unwrap().len(), sizes[1]);
}

#[test]
fn bench_json_has_every_measurement() {
    let dir = scratch("bench-json");
    let out = shale(&[
        "bench",
        "sst",
        "--num",
        "3000",
        "--seconds",
        "1",
        "--absent",
        "5000",
        "--keep-tables",
        "--json",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("bench --json prints JSON");
    assert_eq!(doc["config"]["num"], 3000);
    assert_eq!(doc["bloom"]["absent"], 5000);
    assert!(doc["bloom"]["rate"].as_f64().unwrap() < 0.05);
    assert_eq!(doc["readrandom"]["mismatches"], 0);
    assert!(doc["readrandom"]["p99_micros"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["readseq"]["entries"], 3000);
    assert_eq!(doc["readreverse"]["entries"], 3000);
    let sizes = doc["sizes"].as_array().unwrap();
    let codecs: Vec<&str> = sizes
        .iter()
        .map(|s| s["compression"].as_str().unwrap())
        .collect();
    assert_eq!(
        codecs,
        ["none", "lz4", "snappy", "zstd", "zlib", "zstd-dict"]
    );
    for size in sizes {
        let file = size["file"].as_str().unwrap();
        assert_eq!(
            std::fs::metadata(file).unwrap().len(),
            size["file_size"].as_u64().unwrap(),
            "--keep-tables keeps {file}"
        );
    }
}

#[test]
fn tool_shows_blocks_properties_entries_and_filter() {
    let path = table();
    let out = shale(&[
        "tool",
        "sst",
        path.to_str().unwrap(),
        "--blocks",
        "--properties",
        "--scan",
        "--limit",
        "5",
        "--filter",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("shale.num_entries = {NUM}\n")),
        "{stdout}"
    );
    assert!(stdout.contains("shale.compression = lz4\n"));
    assert!(stdout.contains("--- blocks ---\ntable: "));
    let data_blocks = stdout.lines().filter(|l| l.contains(" data ")).count();
    assert!(data_blocks > 100, "{stdout}");
    assert!(stdout.contains("filter: 200000 bits, 7 probes, 25008 bytes, 10.00 bits/key"));
    assert!(stdout.contains("estimated false-positive rate 0.8194%"));
    let entries: Vec<&str> = stdout.lines().filter(|l| l.contains(" => ")).collect();
    assert_eq!(entries.len(), 5, "{stdout}");
    // The first key: index 0 as 8 big-endian bytes, then ASCII '0' padding, seqno 1.
    assert!(
        entries[0].starts_with(r#""\x00\x00\x00\x00\x00\x00\x00\x0000000000"@1:put => ""#),
        "{}",
        entries[0]
    );
}

#[test]
fn tool_scan_honours_hex_bounds() {
    let path = table();
    let out = shale(&[
        "tool",
        "sst",
        path.to_str().unwrap(),
        "--scan",
        "--hex",
        "--from",
        "0000000000000005",
        "--to",
        "0x0000000000000008",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let keys: Vec<&str> = stdout
        .lines()
        .map(|l| l.split('@').next().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "00000000000000053030303030303030",
            "00000000000000063030303030303030",
            "00000000000000073030303030303030"
        ]
    );
}

#[test]
fn tool_verify_passes_on_the_bench_table() {
    let path = table();
    let out = shale(&["tool", "sst", path.to_str().unwrap(), "--verify"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("verify: ok, "));
}

/// A copy of the bench table with one byte flipped inside the first data block.
fn damaged_copy(name: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("damaged.sst");
    let mut bytes = std::fs::read(table()).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&copy, bytes).unwrap();
    copy
}

#[test]
fn tool_verify_finds_a_flipped_byte_and_exits_2() {
    let copy = damaged_copy("verify");
    let out = shale(&["tool", "sst", copy.to_str().unwrap(), "--verify"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: corruption in {} at offset 0: block checksum mismatch",
            copy.display()
        )),
        "{stderr}"
    );
    // Opening does not read data blocks, so the properties still print.
    let out = shale(&["tool", "sst", copy.to_str().unwrap()]);
    assert!(out.status.success());
}

#[test]
fn tool_json_has_the_asked_for_fields() {
    let path = table();
    let out = shale(&[
        "tool",
        "sst",
        path.to_str().unwrap(),
        "--json",
        "--properties",
        "--blocks",
        "--filter",
        "--scan",
        "--limit",
        "2",
        "--verify",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("tool --json prints JSON");
    assert_eq!(doc["file"], path.to_str().unwrap());
    assert_eq!(doc["properties"]["num_entries"], NUM);
    assert_eq!(doc["properties"]["compression"], "lz4");
    let blocks = doc["blocks"]["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["offset"], 0);
    assert_eq!(blocks[0]["kind"], "data");
    assert_eq!(blocks[0]["compression"], "lz4");
    assert!(blocks.iter().any(|b| b["kind"] == "filter"));
    assert_eq!(doc["filter"]["bits"], 200_000);
    assert_eq!(doc["filter"]["probes"], 7);
    assert!(
        (doc["filter"]["estimated_false_positive_rate"]
            .as_f64()
            .unwrap()
            - 0.008_194)
            .abs()
            < 1e-5
    );
    assert_eq!(doc["prefix_filter"], Value::Null);
    let entries = doc["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[1]["key"],
        r"\x00\x00\x00\x00\x00\x00\x00\x0100000000"
    );
    assert_eq!(entries[1]["seqno"], 2);
    assert_eq!(entries[1]["kind"], "put");
    // 100 printable bytes; quotes and backslashes among them are escaped.
    assert!(entries[1]["value"].as_str().unwrap().len() >= 100);
    assert_eq!(doc["verify"]["ok"], true);

    // Only what was asked for.
    let out = shale(&["tool", "sst", path.to_str().unwrap(), "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fields: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["file", "file_size", "properties"]);
}

#[test]
fn tool_json_verify_of_a_damaged_file_reports_and_exits_2() {
    let copy = damaged_copy("verify-json");
    let out = shale(&["tool", "sst", copy.to_str().unwrap(), "--verify", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["verify"]["ok"], false);
    assert!(doc["verify"]["error"]
        .as_str()
        .unwrap()
        .contains("at offset 0: block checksum mismatch"));
}

#[test]
fn tool_on_a_missing_file_exits_1_with_a_clear_message() {
    let missing = scratch("missing").join("nope.sst");
    let out = shale(&["tool", "sst", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: open for read of {} failed: no such file or directory\n",
            missing.display()
        )
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_usage_exits_1() {
    // --limit only makes sense with --scan.
    let out = shale(&["tool", "sst", "x.sst", "--limit", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error: "));
    let out = shale(&["bench", "sst", "--compression", "brotli", "--dir", "unused"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("unknown --compression \"brotli\""));
    let out = shale(&["--help"]);
    assert!(out.status.success());
}
