//! Machine-readable results (`--json_out`): one JSON object per benchmark, one per line, that
//! `shale bench report` reads. Fields:
//!
//! - `engine`, `benchmark`, and the run's `num`, `key_size`, `value_size`, `threads`, `seed`;
//! - `operations`, `seconds`, `ops_per_sec`, `micros_per_op` as in the result line;
//! - `p50_micros`, `p99_micros`, `p999_micros` (latency percentiles);
//! - `user_bytes_written`: key + value bytes the benchmark wrote;
//! - `process_bytes_written`: the process's `write_bytes` in /proc/self/io over the benchmark
//!   (bytes sent towards storage, whatever the engine: log, tables, B-tree pages), `null`
//!   where the kernel does not account it;
//! - `write_amp`: `process_bytes_written / user_bytes_written`, `null` for benchmarks that
//!   write nothing; measured the same way for every engine;
//! - `engine_bytes_written`: what the engine itself counted (WAL + flush + compaction), when
//!   it counts it (Shale, `RocksDB`), else `null`; and the three parts apart, as
//!   `engine_wal_bytes`, `engine_flush_bytes`, `engine_compaction_bytes` (where write-amp
//!   comes from);
//! - `db_size_bytes`: bytes of the files in the database directory at the benchmark's end;
//! - `intervals`: `[[secs_elapsed, ops_per_sec], ...]` with `--report_interval_seconds`.

use std::path::Path;

use serde_json::{json, Value};

use super::engines::EngineBytes;
use super::intervals::IntervalPoint;
use super::report::Summary;

/// One benchmark's result as `--json_out` writes it.
#[derive(Debug, Clone)]
pub struct BenchmarkRecord<'a> {
    pub engine: &'a str,
    pub benchmark: &'a str,
    pub num: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub threads: usize,
    pub seed: u64,
    pub summary: Summary,
    pub user_bytes_written: u64,
    pub process_bytes_written: Option<u64>,
    pub engine_bytes_written: Option<EngineBytes>,
    pub db_size_bytes: u64,
    pub intervals: Vec<IntervalPoint>,
}

impl BenchmarkRecord<'_> {
    /// Process bytes written per user byte written, when both are known and non-zero.
    pub fn write_amp(&self) -> Option<f64> {
        let process = self.process_bytes_written?;
        (self.user_bytes_written > 0).then(|| process as f64 / self.user_bytes_written as f64)
    }

    pub fn to_json(&self) -> Value {
        let [p50, p99, p999] = self.summary.percentiles.map_or([None; 3], |p| p.map(Some));
        json!({
            "engine": self.engine,
            "benchmark": self.benchmark,
            "num": self.num,
            "key_size": self.key_size,
            "value_size": self.value_size,
            "threads": self.threads,
            "seed": self.seed,
            "operations": self.summary.operations,
            "seconds": self.summary.seconds,
            "ops_per_sec": self.summary.ops_per_sec,
            "micros_per_op": self.summary.micros_per_op,
            "p50_micros": p50,
            "p99_micros": p99,
            "p999_micros": p999,
            "user_bytes_written": self.user_bytes_written,
            "process_bytes_written": self.process_bytes_written,
            "write_amp": self.write_amp(),
            "engine_bytes_written": self.engine_bytes_written.map(|b| b.total()),
            "engine_wal_bytes": self.engine_bytes_written.map(|b| b.wal),
            "engine_flush_bytes": self.engine_bytes_written.map(|b| b.flush),
            "engine_compaction_bytes": self.engine_bytes_written.map(|b| b.compaction),
            "db_size_bytes": self.db_size_bytes,
            "intervals": self
                .intervals
                .iter()
                .map(|p| json!([p.secs_elapsed, p.ops_per_sec]))
                .collect::<Vec<_>>(),
        })
    }
}

/// The process's `write_bytes` from /proc/self/io; `None` where it is not available.
pub fn process_bytes_written() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    parse_write_bytes(&text)
}

fn parse_write_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|value| value.trim().parse().ok())
}

/// Bytes of the regular files under `dir` (0 when it does not exist). Files that vanish
/// while it is walked (compaction deleting inputs) are skipped.
pub fn directory_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => directory_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_bytes_is_read_from_proc_io_text() {
        let text = "rchar: 10\nwchar: 20\nread_bytes: 0\nwrite_bytes: 4096\n\
                    cancelled_write_bytes: 0\n";
        assert_eq!(parse_write_bytes(text), Some(4096));
        assert_eq!(parse_write_bytes("rchar: 1\n"), None);
        assert_eq!(parse_write_bytes("write_bytes: lots\n"), None);
    }

    #[test]
    fn record_has_every_field_and_write_amp() {
        let record = BenchmarkRecord {
            engine: "redb",
            benchmark: "fillrandom",
            num: 10,
            key_size: 16,
            value_size: 100,
            threads: 1,
            seed: 7,
            summary: Summary {
                operations: 10,
                seconds: 0.5,
                ops_per_sec: 20.0,
                micros_per_op: 50_000.0,
                percentiles: Some([1.0, 2.0, 3.0]),
            },
            user_bytes_written: 1160,
            process_bytes_written: Some(4640),
            engine_bytes_written: None,
            db_size_bytes: 8192,
            intervals: vec![IntervalPoint {
                secs_elapsed: 0.5,
                ops_per_sec: 20.0,
            }],
        };
        let value = record.to_json();
        assert_eq!(value["engine"], "redb");
        assert_eq!(value["write_amp"], 4.0);
        assert_eq!(value["p999_micros"], 3.0);
        assert_eq!(value["engine_bytes_written"], Value::Null);
        assert_eq!(value["engine_wal_bytes"], Value::Null);
        assert_eq!(value["intervals"], json!([[0.5, 20.0]]));
        let counted = BenchmarkRecord {
            engine_bytes_written: Some(EngineBytes {
                wal: 1500,
                flush: 700,
                compaction: 900,
            }),
            ..record.clone()
        };
        let value = counted.to_json();
        assert_eq!(value["engine_bytes_written"], 3100);
        assert_eq!(value["engine_wal_bytes"], 1500);
        assert_eq!(value["engine_flush_bytes"], 700);
        assert_eq!(value["engine_compaction_bytes"], 900);
        let reads = BenchmarkRecord {
            user_bytes_written: 0,
            ..record
        };
        assert_eq!(reads.to_json()["write_amp"], Value::Null);
    }
}
