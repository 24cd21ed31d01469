//! Runs `shale bench --engines=shale,redb` end to end on a tiny database with `--json_out`
//! and interval reporting, then `shale bench report` over its output: the ratio table and
//! an SVG chart with a polyline per engine.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-bench-peers-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn succeed(args: &[&str]) -> String {
    let out = shale(args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?} failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        text(&out.stderr)
    );
    stdout
}

#[test]
fn engines_run_in_turn_and_the_report_charts_each() {
    let dir = scratch("report");
    let json = dir.join("run.json");
    let csv = dir.join("run.csv");
    let db = format!("--db={}", dir.join("db").display());
    let json_flag = format!("--json_out={}", json.display());
    let csv_flag = format!("--report_file={}", csv.display());
    let stdout = succeed(&[
        "bench",
        "--engines=shale,redb",
        "--benchmarks=fillrandom,readrandom,seekrandom",
        "--num=2000",
        "--seek_nexts=3",
        "--seed=11",
        "--report_interval_seconds=1",
        &db,
        &json_flag,
        &csv_flag,
    ]);
    // The same seeds give both engines the same keys, so the same "found" counts.
    let found: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("readrandom"))
        .map(|l| &l[l.rfind('(').unwrap()..])
        .collect();
    assert_eq!(found.len(), 2, "{stdout}");
    assert_eq!(found[0], found[1]);
    assert!(dir.join("db/shale/CURRENT").is_file());
    assert!(dir.join("db/redb/bench.redb").is_file());
    for engine in ["shale", "redb"] {
        let series = std::fs::read_to_string(dir.join(format!("run-{engine}.csv"))).unwrap();
        assert!(
            series.starts_with("secs_elapsed,interval_qps\n"),
            "{series}"
        );
        assert!(
            series.lines().count() >= 4,
            "a point per benchmark: {series}"
        );
    }

    let records = std::fs::read_to_string(&json).unwrap();
    let lines: Vec<serde_json::Value> = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    for record in &lines {
        assert!(record["ops_per_sec"].as_f64().unwrap() > 0.0);
        assert!(record["p99_micros"].as_f64().is_some());
        assert!(record["db_size_bytes"].as_u64().unwrap() > 0);
        assert!(!record["intervals"].as_array().unwrap().is_empty());
    }
    let fill = &lines[0];
    assert_eq!(
        (&fill["engine"], &fill["benchmark"]),
        (&"shale".into(), &"fillrandom".into())
    );
    assert_eq!(fill["user_bytes_written"], 2000 * 116);
    // Shale counts its own bytes by source; the WAL holds at least every user byte.
    let part = |name: &str| fill[name].as_u64().unwrap();
    assert!(part("engine_wal_bytes") >= 2000 * 116, "{fill}");
    assert_eq!(
        part("engine_wal_bytes") + part("engine_flush_bytes") + part("engine_compaction_bytes"),
        part("engine_bytes_written")
    );
    let redb_fill = lines
        .iter()
        .find(|r| r["engine"] == "redb" && r["benchmark"] == "fillrandom")
        .unwrap();
    assert!(redb_fill["engine_wal_bytes"].is_null(), "{redb_fill}");

    let charts = dir.join("charts");
    let charts_flag = format!("--svg_dir={}", charts.display());
    let table = succeed(&["bench", "report", json.to_str().unwrap(), &charts_flag]);
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert_eq!(rows.len(), 3, "{table}");
    for (row, benchmark) in rows.iter().zip(["fillrandom", "readrandom", "seekrandom"]) {
        assert!(row.starts_with(benchmark), "{row}");
        assert!(row.contains(" redb "), "{row}");
    }
    for benchmark in ["fillrandom", "readrandom", "seekrandom"] {
        let svg = std::fs::read_to_string(charts.join(format!("{benchmark}.svg"))).unwrap();
        assert_eq!(svg.matches("<polyline ").count(), 2, "{svg}");
        assert!(svg.contains(r#"data-engine="shale""#) && svg.contains(r#"data-engine="redb""#));
    }

    let as_json = succeed(&["bench", "report", "--json", json.to_str().unwrap()]);
    let value: serde_json::Value = serde_json::from_str(&as_json).unwrap();
    assert_eq!(value["rows"].as_array().unwrap().len(), 3);
    assert!(value["rows"][0]["ratios"]["ops_per_sec"].as_f64().unwrap() > 0.0);

    let out = shale(&["bench", "report", "--baseline=lmdb", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--baseline=lmdb: no runs of that engine"));
}
