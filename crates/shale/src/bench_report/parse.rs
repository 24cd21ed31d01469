//! Reading benchmark runs: `shale bench --json_out` files (one JSON object per line), and
//! `db_bench`-shaped stdout (`db_bench` itself, or `shale bench` without `--json_out`) with
//! its `--report_file` CSV (`secs_elapsed,interval_qps`) when there is one.
//!
//! From stdout: the engine is the header's `Engine:` word (`shale bench`), else `db_bench`
//! (whose 7.8 build prints its `RocksDB:` header on stderr); each `name : X micros/op Y ops/sec ...` line is a run, and a
//! `Percentiles: P50: .. P75: .. P99: .. P99.9: ..` line after it gives its percentiles.
//! `db_bench` reopens its report file for every benchmark, so the CSV holds the intervals of
//! the last benchmark of the output, and that is the one it is given to. Bytes written,
//! write-amp and db size are not in stdout and stay unknown.

use serde_json::Value;

/// One benchmark of one run of one engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub engine: String,
    pub benchmark: String,
    pub ops_per_sec: f64,
    pub p99_micros: Option<f64>,
    pub p999_micros: Option<f64>,
    /// Key and value bytes the benchmark wrote (what write-amp is per).
    pub user_bytes_written: Option<f64>,
    pub process_bytes_written: Option<f64>,
    pub write_amp: Option<f64>,
    pub db_size_bytes: Option<f64>,
    /// `(secs_elapsed, ops_per_sec)` from the benchmark's start.
    pub intervals: Vec<(f64, f64)>,
}

/// Runs from `--json_out` text; `source` names the file in errors.
pub fn json_lines(text: &str, source: &str) -> Result<Vec<Run>, String> {
    let mut runs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{source} line {}", number + 1);
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("{}: not JSON: {e}", at()))?;
        let text_field = |name: &str| {
            value[name]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{}: no string field {name:?}", at()))
        };
        let number_field = |name: &str| value[name].as_f64();
        let mut intervals = Vec::new();
        if let Some(points) = value["intervals"].as_array() {
            for point in points {
                match (point[0].as_f64(), point[1].as_f64()) {
                    (Some(secs), Some(qps)) => intervals.push((secs, qps)),
                    _ => return Err(format!("{}: an interval is not [secs, ops/s]", at())),
                }
            }
        }
        runs.push(Run {
            engine: text_field("engine")?,
            benchmark: text_field("benchmark")?,
            ops_per_sec: number_field("ops_per_sec")
                .ok_or_else(|| format!("{}: no number field \"ops_per_sec\"", at()))?,
            p99_micros: number_field("p99_micros"),
            p999_micros: number_field("p999_micros"),
            user_bytes_written: number_field("user_bytes_written"),
            process_bytes_written: number_field("process_bytes_written"),
            write_amp: number_field("write_amp"),
            db_size_bytes: number_field("db_size_bytes"),
            intervals,
        });
    }
    Ok(runs)
}

/// Runs from `db_bench`-shaped stdout, with the intervals of `csv` (its `--report_file`).
pub fn db_bench_output(text: &str, csv: Option<&str>, source: &str) -> Result<Vec<Run>, String> {
    let mut engine = None;
    let mut runs: Vec<Run> = Vec::new();
    let mut percentiles_for: Option<usize> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Engine:") {
            engine = rest.split_whitespace().next().map(str::to_string);
        } else if line.starts_with("RocksDB:") && engine.is_none() {
            engine = Some("db_bench".to_string());
        } else if line.starts_with("Shale:") && engine.is_none() {
            engine = Some("shale".to_string());
        } else if let Some((name, ops_per_sec)) = result_line(line) {
            // db_bench 7.8 prints its "RocksDB: version" line on stderr.
            let engine = engine.clone().unwrap_or_else(|| "db_bench".to_string());
            runs.push(Run {
                engine,
                benchmark: name.to_string(),
                ops_per_sec,
                p99_micros: None,
                p999_micros: None,
                user_bytes_written: None,
                process_bytes_written: None,
                write_amp: None,
                db_size_bytes: None,
                intervals: Vec::new(),
            });
            percentiles_for = Some(runs.len() - 1);
        } else if let Some(rest) = line.strip_prefix("Percentiles:") {
            if let Some(run) = percentiles_for.take().and_then(|i| runs.get_mut(i)) {
                run.p99_micros = labelled(rest, "P99:");
                run.p999_micros = labelled(rest, "P99.9:");
            }
        }
    }
    if runs.is_empty() {
        return Err(format!("{source}: no benchmark result lines"));
    }
    if let (Some(csv), Some(last)) = (csv, runs.last_mut()) {
        last.intervals = report_csv(csv).map_err(|e| format!("{source} (report CSV): {e}"))?;
    }
    Ok(runs)
}

/// `(name, ops/sec)` from `name : X micros/op Y ops/sec ...`.
fn result_line(line: &str) -> Option<(&str, f64)> {
    let (name, rest) = line.split_once(" : ")?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        [_, "micros/op", ops, "ops/sec", ..] => Some((name, ops.parse().ok()?)),
        _ => None,
    }
}

/// The number after `label` in `P50: 1.2 P75: 3.4 ...`.
fn labelled(text: &str, label: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == label)?;
    words.next()?.parse().ok()
}

/// `secs_elapsed,interval_qps` lines after the header.
fn report_csv(text: &str) -> Result<Vec<(f64, f64)>, String> {
    let mut points = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("secs_elapsed") {
            continue;
        }
        let parsed = line
            .split_once(',')
            .and_then(|(secs, qps)| Some((secs.trim().parse().ok()?, qps.trim().parse().ok()?)));
        points.push(parsed.ok_or_else(|| {
            format!(
                "line {} is not secs_elapsed,interval_qps: {line:?}",
                number + 1
            )
        })?);
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DB_BENCH: &str = "\
Set seed to 1795602345949733 because --seed was 0
Keys:       16 bytes each (+ 0 bytes user-defined timestamp)
------------------------------------------------
DB path: [/tmp/rocksdb]
fillrandom   :       3.102 micros/op 322368 ops/sec 3.102 seconds 1000000 operations;   35.7 MB/s
Microseconds per write:
Count: 1000000 Average: 3.1017  StdDev: 28.63
Min: 1  Median: 1.9000  Max: 17745
Percentiles: P50: 1.90 P75: 2.54 P99: 9.93 P99.9: 38.40 P99.99: 1120.56
------------------------------------------------------
readrandom   :       2.500 micros/op 400000 ops/sec 2.500 seconds 1000000 operations;   30.0 MB/s (632000 of 1000000 found)

Percentiles: P50: 2.10 P75: 2.80 P99: 7.00 P99.9: 20.00 P99.99: 100.00
";

    #[test]
    fn db_bench_output_gives_runs_percentiles_and_last_benchmark_intervals() {
        let csv = "secs_elapsed,interval_qps\n1,390000\n2,410000\n";
        let runs = db_bench_output(DB_BENCH, Some(csv), "out.txt").unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].engine, "db_bench");
        assert_eq!(runs[0].benchmark, "fillrandom");
        assert!((runs[0].ops_per_sec - 322_368.0).abs() < 1e-9);
        assert_eq!(
            (runs[0].p99_micros, runs[0].p999_micros),
            (Some(9.93), Some(38.4))
        );
        assert!(runs[0].intervals.is_empty());
        assert_eq!(runs[1].benchmark, "readrandom");
        assert_eq!(runs[1].p99_micros, Some(7.0));
        assert_eq!(runs[1].intervals, vec![(1.0, 390_000.0), (2.0, 410_000.0)]);
        assert_eq!(runs[1].write_amp, None);
    }

    #[test]
    fn shale_output_names_its_engine() {
        let text = "Shale:      version 0.1.0\nEngine:     redb (redb 4)\n\
                    fillseq      :       2.000 micros/op 500000 ops/sec 0.002 seconds 1000 operations;\n";
        let runs = db_bench_output(text, None, "x").unwrap();
        assert_eq!(runs[0].engine, "redb");
        assert_eq!(runs[0].benchmark, "fillseq");
    }

    #[test]
    fn bad_inputs_are_named() {
        assert!(db_bench_output("nothing here\n", None, "a.txt")
            .unwrap_err()
            .contains("a.txt: no benchmark result lines"));
        let error = db_bench_output(DB_BENCH, Some("1,2\nthree\n"), "b.txt").unwrap_err();
        assert!(error.contains("b.txt (report CSV): line 2"), "{error}");
        let error = json_lines("{\"engine\":\"shale\"}\n", "c.json").unwrap_err();
        assert!(
            error.contains("c.json line 1: no string field \"benchmark\""),
            "{error}"
        );
        let error = json_lines("{oops\n", "d.json").unwrap_err();
        assert!(error.contains("d.json line 1: not JSON"), "{error}");
    }

    #[test]
    fn json_lines_read_every_field() {
        let text = r#"{"engine":"shale","benchmark":"fillrandom","ops_per_sec":1000.5,"p99_micros":9.0,"p999_micros":30.0,"user_bytes_written":2048,"process_bytes_written":4096,"write_amp":1.5,"db_size_bytes":8192,"intervals":[[1.0,900.0],[2.0,1100.0]]}

{"engine":"redb","benchmark":"fillrandom","ops_per_sec":500,"p99_micros":null,"write_amp":null,"intervals":[]}"#;
        let runs = json_lines(text, "r.json").unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(
            runs[0],
            Run {
                engine: "shale".into(),
                benchmark: "fillrandom".into(),
                ops_per_sec: 1000.5,
                p99_micros: Some(9.0),
                p999_micros: Some(30.0),
                user_bytes_written: Some(2048.0),
                process_bytes_written: Some(4096.0),
                write_amp: Some(1.5),
                db_size_bytes: Some(8192.0),
                intervals: vec![(1.0, 900.0), (2.0, 1100.0)],
            }
        );
        assert_eq!(
            (
                runs[1].p99_micros,
                runs[1].user_bytes_written,
                runs[1].write_amp
            ),
            (None, None, None)
        );
    }
}
