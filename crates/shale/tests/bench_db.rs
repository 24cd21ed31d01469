//! Runs `shale bench` (`db_bench`'s flags) end to end on small databases: the "found"
//! accounting after fills and deletes, the result-line shape, levelstats after a flush,
//! the refusal to delete a directory that is not a database, and flag errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NUM: &str = "2000";

fn shale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run the shale binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-bench-db-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs `shale bench` with `flags` on `db`; panics unless it succeeds; returns stdout.
fn bench(db: &Path, flags: &[&str]) -> String {
    let db_flag = format!("--db={}", db.display());
    let mut args = vec!["bench", "--seed=7", &db_flag];
    args.extend_from_slice(flags);
    let out = shale(&args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?} failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        text(&out.stderr)
    );
    stdout
}

/// The result line of `name`.
fn result_line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("{name:<12} : ")))
        .unwrap_or_else(|| panic!("no {name} line in:\n{stdout}"))
}

/// `(found, read)` from a result line's "(F of R found)".
fn found(line: &str) -> (u64, u64) {
    let start = line.rfind('(').expect("a found message");
    let words: Vec<&str> = line[start + 1..].split_whitespace().collect();
    assert_eq!((words[1], words[3]), ("of", "found)"), "{line}");
    (words[0].parse().unwrap(), words[2].parse().unwrap())
}

/// Checks `name : X micros/op Y ops/sec Z seconds N operations;` and returns N.
fn operations(line: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == ":").unwrap();
    assert!(words[at + 1].parse::<f64>().unwrap() > 0.0, "{line}");
    assert_eq!(words[at + 2], "micros/op", "{line}");
    assert!(words[at + 3].parse::<u64>().is_ok(), "{line}");
    assert_eq!(words[at + 4], "ops/sec", "{line}");
    assert!(words[at + 5].parse::<f64>().is_ok(), "{line}");
    assert_eq!(words[at + 6], "seconds", "{line}");
    assert_eq!(words[at + 8].trim_end_matches(';'), "operations", "{line}");
    words[at + 7].parse().unwrap()
}

#[test]
fn fills_find_every_key_and_deletes_lose_some() {
    let db = scratch("found");
    let out = bench(
        &db,
        &[
            "--benchmarks=fillseq,readrandom,seekrandom,readseq,readreverse",
            &format!("--num={NUM}"),
            "--seek_nexts=10",
            "--compression_type=lz4",
            "--bloom_bits=10",
        ],
    );
    let fill = result_line(&out, "fillseq");
    assert_eq!(operations(fill), 2000);
    // 2000 writes of 16 + 100 bytes.
    assert!(fill.ends_with(" MB/s"), "{fill}");
    assert_eq!(found(result_line(&out, "readrandom")), (2000, 2000));
    assert_eq!(found(result_line(&out, "seekrandom")), (2000, 2000));
    assert_eq!(operations(result_line(&out, "readseq")), 2000);
    assert_eq!(operations(result_line(&out, "readreverse")), 2000);

    // Deleting random keys of the same database (with repeats) loses some but not all.
    let out = bench(
        &db,
        &[
            "--benchmarks=deleterandom,readrandom,flush,levelstats,readwhilewriting",
            &format!("--num={NUM}"),
            "--use_existing_db=1",
            "--histogram=1",
        ],
    );
    let deletes = result_line(&out, "deleterandom");
    assert_eq!(operations(deletes), 2000);
    assert!(
        deletes.ends_with("operations;"),
        "no bytes for deletes: {deletes}"
    );
    let (hits, reads) = found(result_line(&out, "readrandom"));
    assert_eq!(reads, 2000);
    // 2000 deletes of uniform random keys leave about 2000/e = 736 keys.
    assert!(hits > 400 && hits < 1100, "{hits} of {reads} found");
    // After the flush, level 0 holds the table.
    let level0 = out
        .lines()
        .skip_while(|l| !l.starts_with("Level Files Size(MB)"))
        .nth(2)
        .expect("a level 0 row");
    let cells: Vec<&str> = level0.split_whitespace().collect();
    assert_eq!(cells[0], "0");
    assert!(cells[1].parse::<u64>().unwrap() >= 1, "{level0}");
    // The writer is not counted: readwhilewriting reports --reads operations.
    assert_eq!(operations(result_line(&out, "readwhilewriting")), 2000);
    assert!(out.contains("Microseconds per delete:"), "{out}");
    assert!(out.contains("Microseconds per read:"), "{out}");
    assert!(out.contains("Percentiles: P50: "), "{out}");

    // A fill starts from an empty database, unless the database is to be kept.
    let out = bench(
        &db,
        &[
            "--benchmarks=fillseq,readrandom",
            "--num=500",
            "--use_existing_db",
        ],
    );
    assert!(
        out.contains("fillseq      : skipped (--use_existing_db is true)"),
        "{out}"
    );
    let out = bench(&db, &["--benchmarks=fillrandom,readrandom", "--num=500"]);
    let (hits, reads) = found(result_line(&out, "readrandom"));
    // 500 random writes of 500 keys hit about 1 - 1/e of them; the old 2000-key data is gone.
    assert_eq!(reads, 500);
    assert!(hits > 250 && hits < 400, "{hits} of {reads}");
}

#[test]
fn same_seed_same_keys() {
    let db = scratch("seed");
    let run = || {
        let out = bench(&db, &["--benchmarks=fillrandom,readrandom", "--num=300"]);
        found(result_line(&out, "readrandom"))
    };
    // Same seed: the same keys are written and then looked up.
    assert_eq!(run(), run());
}

#[test]
fn a_directory_that_is_not_a_database_is_left_alone() {
    let db = scratch("foreign");
    std::fs::create_dir_all(&db).unwrap();
    std::fs::write(db.join("notes.txt"), b"keep me").unwrap();
    let out = shale(&["bench", &format!("--db={}", db.display()), "--num=10"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("notes.txt") && stderr.contains("not a Shale database file"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(db.join("notes.txt")).unwrap(), b"keep me");
}

#[test]
fn bad_flags_exit_1_naming_the_flag() {
    for (flag, expected) in [
        (
            "--benchmarks=fillseq,nosuch",
            "unknown benchmark \"nosuch\"",
        ),
        ("--compression_type=lzma", "--compression_type"),
        ("--write_buffer_size=10", "write_buffer_size"),
    ] {
        let db = scratch("bad");
        let out = shale(&["bench", flag, "--num=10", &format!("--db={}", db.display())]);
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(expected), "{flag}: {stderr}");
    }
    // `bench sst` is still a subcommand; db_bench flags do not mix with it.
    let out = shale(&["bench", "--num=10", "sst"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn compact_leaves_only_the_last_level_and_stats_print_the_compaction_table() {
    let db = scratch("compact");
    bench(&db, &["--benchmarks=fillrandom", "--num=3000"]);
    let out = bench(
        &db,
        &[
            "--benchmarks=compact,stats,levelstats",
            "--num=3000",
            "--use_existing_db=1",
        ],
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("Level Files Size(MB)"))
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .take_while(|cells: &Vec<&str>| cells.len() == 3)
        .collect();
    let files: Vec<u64> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
    assert!(files.len() > 1, "{out}");
    let (last, above) = files.split_last().unwrap();
    assert!(*last >= 1 && above.iter().all(|f| *f == 0), "{out}");
    // The table of Db::compaction_stats: the flush of the memtable the fill left, then the
    // compaction into the last level, and their sum.
    assert!(out.contains("** Compaction Stats **"), "{out}");
    let sum = out
        .lines()
        .find(|l| l.trim_start().starts_with("Sum "))
        .unwrap_or_else(|| panic!("no Sum row in\n{out}"));
    assert_eq!(
        sum.split_whitespace().nth(1),
        Some(last.to_string().as_str()),
        "{sum}"
    );
    assert!(out.contains("Stalls(count):"), "{out}");
}

/// The newest OPTIONS file of the database at `db`.
fn options_file(db: &Path) -> String {
    let mut names: Vec<_> = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("OPTIONS-"))
        .collect();
    names.sort();
    std::fs::read_to_string(db.join(names.last().expect("an OPTIONS file"))).unwrap()
}

#[test]
fn the_header_names_defaults_db_bench_lacks_and_a_flag_turns_them_off() {
    let db = scratch("like-db-bench");
    let out = bench(&db, &["--benchmarks=fillseq", "--num=100"]);
    for line in [
        "Not in db_bench (--like_db_bench sets db_bench's):",
        "  memtable bloom filter: ratio 0.01 of the write buffer (db_bench: none",
        "  idle compaction: after 30 s without writes",
        "  tombstone-density compaction: files of at least 50% deletions",
        "  memtable flush on tombstone scans: an iterator step skipping 10000 deletions",
        "  zstd dictionary at the bottom level (with zstd): 16384 bytes",
        "  hard pending-compaction limit: 274877906944 bytes",
        "Open files: no limit  Background jobs: 2",
        "  WAL fsync with --sync=0: about every 1000 ms",
        "Differs from db_bench, no switch:",
        "  level sizes: dynamic",
        "  index and filter blocks: pinned by open tables, their memory charged to the block cache",
    ] {
        assert!(out.contains(line), "{line:?} missing from\n{out}");
    }
    let options = options_file(&db);
    for line in [
        "memtable_bloom_size_ratio=0.01\n",
        "idle_compaction_after_ms=30000\n",
        "tombstone_density_percent=50\n",
        // `--open_files=-1`, db_bench's default and the flag's.
        "max_open_files=18446744073709551615\n",
    ] {
        assert!(options.contains(line), "{line:?} missing from\n{options}");
    }
    let out = bench(
        &db,
        &["--benchmarks=fillseq", "--num=100", "--open_files=1000"],
    );
    assert!(out.contains("Open files: 1000"), "{out}");
    assert!(options_file(&db).contains("max_open_files=1000\n"));

    let out = bench(
        &db,
        &[
            "--benchmarks=fillseq",
            "--num=100",
            "--max_background_jobs=4",
        ],
    );
    assert!(out.contains("Background jobs: 4"), "{out}");
    assert!(options_file(&db).contains("max_background_jobs=4\n"));

    let out = bench(
        &db,
        &["--benchmarks=fillseq", "--num=100", "--like_db_bench"],
    );
    assert!(
        out.contains("Like db_bench (--like_db_bench): memtable bloom filter, idle compaction, "),
        "{out}"
    );
    assert!(!out.contains("Not in db_bench"), "{out}");
    assert!(out.contains("Differs from db_bench, no switch:"), "{out}");
    let options = options_file(&db);
    for line in [
        "memtable_bloom_size_ratio=0\n",
        "tombstone_density_percent=0\n",
        "tombstone_scan_flush_trigger=0\n",
        "zstd_max_dict_bytes=0\n",
        "hard_pending_compaction_bytes_limit=137438953472\n",
        "max_open_files=18446744073709551615\n",
        "sync_interval_ms=3600000\n",
        "idle_compaction_after_ms=0\n",
    ] {
        assert!(options.contains(line), "{line:?} missing from\n{options}");
    }
}
