//! The flags of `shale bench`, spelled and defaulted as `db_bench` (`RocksDB` 7.8) spells them
//! (`--benchmarks=fillseq,readrandom --num=1000000 --sync=1`), and their validation into a
//! [`Config`].
//!
//! Defaults are `db_bench`'s: 1,000,000 entries, 16-byte keys, 100-byte values, compression
//! ratio 0.5, snappy, no bloom filter (`--bloom_bits=-1`), an 8 MiB block cache, 4 KiB blocks,
//! a 64 MiB write buffer, one thread, `--sync=0`, seed 0 (a seed taken from the clock).
//! Booleans take `--flag`, `--flag=1|0|true|false`.

use std::path::PathBuf;

use clap::{ArgAction, Args};
use shale_sst::Compression;

use super::engines::EngineKind;

/// The benchmarks `shale bench` knows, in `db_bench`'s names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Benchmark {
    /// Write `--num` keys in ascending order into a fresh database.
    FillSeq,
    /// Write `--num` random keys (with repeats) into a fresh database.
    FillRandom,
    /// Write `--num` random keys into the existing database.
    Overwrite,
    /// `--reads` point lookups of random keys.
    ReadRandom,
    /// Iterate forward over up to `--reads` entries.
    ReadSeq,
    /// Iterate backward over up to `--reads` entries.
    ReadReverse,
    /// `--reads` seeks to random keys, each followed by `--seek_nexts` nexts.
    SeekRandom,
    /// `--threads` readers doing `readrandom` while one more thread writes random keys.
    ReadWhileWriting,
    /// Delete `--deletes` random keys.
    DeleteRandom,
    /// Print the database's statistics.
    Stats,
    /// Print files and bytes per level.
    LevelStats,
    /// Flush the memtables.
    Flush,
    /// Wait until no flush or compaction is pending.
    WaitForCompaction,
    /// Flush, then compact the whole key range down to the last level (`CompactRange`).
    Compact,
}

impl Benchmark {
    const ALL: [(&'static str, Benchmark); 14] = [
        ("fillseq", Benchmark::FillSeq),
        ("fillrandom", Benchmark::FillRandom),
        ("overwrite", Benchmark::Overwrite),
        ("readrandom", Benchmark::ReadRandom),
        ("readseq", Benchmark::ReadSeq),
        ("readreverse", Benchmark::ReadReverse),
        ("seekrandom", Benchmark::SeekRandom),
        ("readwhilewriting", Benchmark::ReadWhileWriting),
        ("deleterandom", Benchmark::DeleteRandom),
        ("stats", Benchmark::Stats),
        ("levelstats", Benchmark::LevelStats),
        ("flush", Benchmark::Flush),
        ("waitforcompaction", Benchmark::WaitForCompaction),
        ("compact", Benchmark::Compact),
    ];

    /// The `db_bench` name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, b)| *b == self)
            .map_or("?", |(name, _)| name)
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }

    /// Whether the benchmark starts from an empty database (`db_bench`'s `fresh_db`).
    pub fn needs_fresh_db(self) -> bool {
        matches!(self, Benchmark::FillSeq | Benchmark::FillRandom)
    }
}

/// `db_bench`'s flags, as the command line gives them.
// Each bool is one of db_bench's independent switches; clap owns their meaning.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Args)]
pub struct DbBenchArgs {
    /// Comma-separated benchmarks to run in order: fillseq, fillrandom, overwrite, readrandom,
    /// readseq, readreverse, seekrandom, readwhilewriting, deleterandom, stats, levelstats,
    /// flush, waitforcompaction, compact.
    #[arg(long, value_name = "LIST", default_value = "fillseq,readrandom")]
    pub benchmarks: String,
    /// Number of key/values to place in the database (per thread for writes).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub num: u64,
    /// Reads (or seeks, or iterated entries) per thread; negative: --num.
    #[arg(long, value_name = "N", default_value_t = -1, allow_negative_numbers = true)]
    pub reads: i64,
    /// Deletes per thread for deleterandom; negative: --num.
    #[arg(long, value_name = "N", default_value_t = -1, allow_negative_numbers = true)]
    pub deletes: i64,
    /// Bytes per key.
    #[arg(long = "key_size", value_name = "BYTES", default_value_t = 16)]
    pub key_size: usize,
    /// Bytes per value.
    #[arg(long = "value_size", value_name = "BYTES", default_value_t = 100)]
    pub value_size: usize,
    /// How far generated values compress (0.5: to half).
    #[arg(
        long = "compression_ratio",
        value_name = "RATIO",
        default_value_t = 0.5
    )]
    pub compression_ratio: f64,
    /// Block compression at every level, the bottom included (as `db_bench`, whose
    /// `compression_per_level` is empty): none, snappy, lz4, zlib, zstd.
    #[arg(
        long = "compression_type",
        value_name = "CODEC",
        default_value = "snappy"
    )]
    pub compression_type: String,
    /// Bloom filter bits per key; negative or 0: no filter.
    #[arg(long = "bloom_bits", value_name = "BITS", default_value_t = -1, allow_negative_numbers = true)]
    pub bloom_bits: i64,
    /// Block cache bytes; negative or 0: no block cache.
    #[arg(long = "cache_size", value_name = "BYTES", default_value_t = 8 << 20, allow_negative_numbers = true)]
    pub cache_size: i64,
    /// Table files kept open; -1 (`db_bench`'s default): no limit, each table stays open once
    /// read, pinned in its file's metadata (Shale and the rocksdb peer alike).
    #[arg(long = "open_files", value_name = "N", default_value_t = -1, allow_negative_numbers = true)]
    pub open_files: i64,
    /// Background threads: one flush thread and N-1 compaction threads (`db_bench`'s flag and
    /// default; 2 to 64), for both engines.
    #[arg(long = "max_background_jobs", value_name = "N", default_value_t = 2)]
    pub max_background_jobs: usize,
    /// Largest automatic readahead window of an iterator per table file (Shale only; as
    /// `db_bench`'s flag of the same name); 0 turns readahead off.
    #[arg(long = "max_auto_readahead_size", value_name = "BYTES", default_value_t = 256 << 10)]
    pub max_auto_readahead_size: usize,
    /// Read table files with `O_DIRECT`, bypassing the page cache (`db_bench`'s flag; Shale
    /// and the rocksdb peer).
    #[arg(long = "use_direct_reads", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          value_parser = parse_bool, action = ArgAction::Set)]
    pub use_direct_reads: bool,
    /// Write the table files of flushes and compactions with `O_DIRECT` (`db_bench`'s flag;
    /// Shale and the rocksdb peer).
    #[arg(long = "use_direct_io_for_flush_and_compaction", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_value = "false", default_missing_value = "true",
          value_parser = parse_bool, action = ArgAction::Set)]
    pub use_direct_io_for_flush_and_compaction: bool,
    /// Target uncompressed data block size.
    #[arg(long = "block_size", value_name = "BYTES", default_value_t = 4096)]
    pub block_size: usize,
    /// Bytes a memtable holds before it is flushed.
    #[arg(long = "write_buffer_size", value_name = "BYTES", default_value_t = 64 << 20)]
    pub write_buffer_size: usize,
    /// Concurrent threads running each benchmark (readwhilewriting adds one writer).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
    /// Sync the WAL on every write (`Durability::Sync`); otherwise each write reaches the OS
    /// (`Durability::Flush`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          value_parser = parse_bool, action = ArgAction::Set)]
    pub sync: bool,
    /// Nexts after each seek in seekrandom.
    #[arg(long = "seek_nexts", value_name = "N", default_value_t = 0)]
    pub seek_nexts: u64,
    /// Database directory (default: `shalebench` in the system temporary directory).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Keep the database there: do not delete it first; fill benchmarks are skipped.
    #[arg(long = "use_existing_db", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          value_parser = parse_bool, action = ArgAction::Set)]
    pub use_existing_db: bool,
    /// Print a latency histogram with percentiles after each benchmark.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          value_parser = parse_bool, action = ArgAction::Set)]
    pub histogram: bool,
    /// Print the database's statistics at the end.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          value_parser = parse_bool, action = ArgAction::Set)]
    pub statistics: bool,
    /// Set `db_bench`'s value for every Shale default it does not share and Shale can switch
    /// (memtable bloom filter, idle compaction, tombstone-driven compaction and flush, zstd
    /// dictionary, hard pending-compaction limit, open-file limit, periodic WAL fsync), for a
    /// like-for-like comparison; the header names them, and those no flag changes, either way.
    #[arg(long = "like_db_bench", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true",
          value_parser = parse_bool, action = ArgAction::Set)]
    pub like_db_bench: bool,
    /// Seconds each random benchmark runs (ignoring --num/--reads); 0: no limit.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub duration: u64,
    /// Bytes per second (key + value) all writer threads together may write; 0: no limit.
    #[arg(
        long = "benchmark_write_rate_limit",
        value_name = "BYTES",
        default_value_t = 0
    )]
    pub benchmark_write_rate_limit: u64,
    /// Base seed of the per-thread key generators; 0: taken from the clock (and printed).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// The engine to run: shale, redb, or rocksdb (with the rocksdb-peer feature).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "shale",
        conflicts_with = "engines"
    )]
    pub engine: String,
    /// Comma-separated engines to run in turn in this process, each in its own subdirectory
    /// of --db named after it, each with the same seeds.
    #[arg(long, value_name = "LIST")]
    pub engines: Option<String>,
    /// Seconds per interval of the interval throughput series (like `db_bench`'s); 0: none.
    #[arg(
        long = "report_interval_seconds",
        value_name = "SECONDS",
        default_value_t = 0
    )]
    pub report_interval_seconds: u64,
    /// Where the interval series goes as `db_bench`'s CSV (`secs_elapsed,interval_qps`); with
    /// --engines, one file per engine with `-ENGINE` before the extension.
    #[arg(long = "report_file", value_name = "PATH")]
    pub report_file: Option<PathBuf>,
    /// Write one JSON object per benchmark (one per line) to this file for `shale bench
    /// report`: engine, ops/s, percentiles, bytes written, db size, write-amp, intervals.
    #[arg(long = "json_out", value_name = "PATH")]
    pub json_out: Option<PathBuf>,
}

/// Parses a `db_bench` (gflags) boolean.
fn parse_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "true" | "TRUE" | "True" | "yes" | "y" => Ok(true),
        "0" | "false" | "FALSE" | "False" | "no" | "n" => Ok(false),
        other => Err(format!(
            "{other:?} is not a boolean (use 1, 0, true or false)"
        )),
    }
}

/// The validated settings of a run.
// The bools mirror db_bench's independent switches.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone)]
pub struct Config {
    pub benchmarks: Vec<Benchmark>,
    pub num: u64,
    pub reads: u64,
    pub deletes: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub compression_ratio: f64,
    pub compression: Compression,
    pub bloom_bits: u32,
    pub cache_size: usize,
    /// `--open_files`; `None`: no limit.
    pub open_files: Option<usize>,
    pub max_background_jobs: usize,
    pub max_auto_readahead_size: usize,
    pub use_direct_reads: bool,
    pub use_direct_io_for_flush_and_compaction: bool,
    pub block_size: usize,
    pub write_buffer_size: usize,
    pub threads: usize,
    pub sync: bool,
    pub like_db_bench: bool,
    pub seek_nexts: u64,
    pub db: PathBuf,
    pub use_existing_db: bool,
    pub histogram: bool,
    pub statistics: bool,
    pub duration: u64,
    pub write_rate_limit: u64,
    pub seed: u64,
    /// The engines to run, in order.
    pub engines: Vec<EngineKind>,
    /// Whether each engine's database goes in a subdirectory of `db` named after it.
    pub engine_subdirs: bool,
    pub report_interval_seconds: u64,
    pub report_file: Option<PathBuf>,
    pub json_out: Option<PathBuf>,
}

/// Values past these are mistakes, not benchmarks.
const MAX_KEY_SIZE: usize = 1 << 20;
const MAX_VALUE_SIZE: usize = 64 << 20;
const MAX_THREADS: usize = 1024;

impl Config {
    /// Checks the flags, naming the one that is wrong.
    pub fn from_args(args: &DbBenchArgs) -> Result<Config, String> {
        let benchmarks = benchmark_list(&args.benchmarks)?;
        if args.num == 0 {
            return Err("--num must be at least 1".into());
        }
        if args.key_size == 0 || args.key_size > MAX_KEY_SIZE {
            return Err(format!(
                "--key_size={} must be between 1 and {MAX_KEY_SIZE}",
                args.key_size
            ));
        }
        if args.value_size > MAX_VALUE_SIZE {
            return Err(format!(
                "--value_size={} is above {MAX_VALUE_SIZE}",
                args.value_size
            ));
        }
        if !(args.compression_ratio > 0.0 && args.compression_ratio <= 1.0) {
            return Err(format!(
                "--compression_ratio={} must be in (0, 1]",
                args.compression_ratio
            ));
        }
        let compression = match Compression::from_name(&args.compression_type) {
            Some(Compression::ZstdDict) | None => {
                return Err(format!(
                    "--compression_type={:?}: use none, snappy, lz4, zlib or zstd",
                    args.compression_type
                ))
            }
            Some(codec) => codec,
        };
        if args.threads == 0 || args.threads > MAX_THREADS {
            return Err(format!(
                "--threads={} must be between 1 and {MAX_THREADS}",
                args.threads
            ));
        }
        let bloom_bits = u32::try_from(args.bloom_bits.max(0))
            .map_err(|_| format!("--bloom_bits={} is too large", args.bloom_bits))?;
        let cache_size = usize::try_from(args.cache_size.max(0))
            .map_err(|_| format!("--cache_size={} is too large", args.cache_size))?;
        let open_files = open_files(args.open_files)?;
        let max_background_jobs = background_jobs(args.max_background_jobs)?;
        let (engines, engine_subdirs) = engines_of(args)?;
        let or_num = |n: i64| u64::try_from(n).unwrap_or(args.num);
        Ok(Config {
            benchmarks,
            num: args.num,
            reads: or_num(args.reads),
            deletes: or_num(args.deletes),
            key_size: args.key_size,
            value_size: args.value_size,
            compression_ratio: args.compression_ratio,
            compression,
            bloom_bits,
            cache_size,
            open_files,
            max_background_jobs,
            max_auto_readahead_size: args.max_auto_readahead_size,
            use_direct_reads: args.use_direct_reads,
            use_direct_io_for_flush_and_compaction: args.use_direct_io_for_flush_and_compaction,
            block_size: args.block_size,
            write_buffer_size: args.write_buffer_size,
            threads: args.threads,
            sync: args.sync,
            like_db_bench: args.like_db_bench,
            seek_nexts: args.seek_nexts,
            db: args
                .db
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join("shalebench")),
            use_existing_db: args.use_existing_db,
            histogram: args.histogram,
            statistics: args.statistics,
            duration: args.duration,
            write_rate_limit: args.benchmark_write_rate_limit,
            seed: args.seed,
            engines,
            engine_subdirs,
            report_interval_seconds: args.report_interval_seconds,
            report_file: args.report_file.clone(),
            json_out: args.json_out.clone(),
        })
    }
}

/// The defaults with `--db=db`, for tests of the modules that take a [`Config`].
/// `--benchmarks`: the names in order; empty names are skipped, as `db_bench` does
/// (`--benchmarks=fillseq,,readrandom`).
fn benchmark_list(flag: &str) -> Result<Vec<Benchmark>, String> {
    let mut benchmarks = Vec::new();
    for name in flag.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let benchmark = Benchmark::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Benchmark::ALL.iter().map(|(n, _)| *n).collect();
            format!(
                "--benchmarks: unknown benchmark {name:?} (known: {})",
                known.join(", ")
            )
        })?;
        benchmarks.push(benchmark);
    }
    if benchmarks.is_empty() {
        return Err("--benchmarks names no benchmark".into());
    }
    Ok(benchmarks)
}

/// `--max_background_jobs`: what the engine takes (2 to 64).
fn background_jobs(flag: usize) -> Result<usize, String> {
    if (2..=shale_engine::MAX_BACKGROUND_JOBS).contains(&flag) {
        Ok(flag)
    } else {
        Err(format!(
            "--max_background_jobs={flag} must be 2 to {}",
            shale_engine::MAX_BACKGROUND_JOBS
        ))
    }
}

/// `--open_files`: `None` for -1 (no limit), else a limit the engines accept.
fn open_files(flag: i64) -> Result<Option<usize>, String> {
    if flag == -1 {
        return Ok(None);
    }
    usize::try_from(flag)
        .ok()
        .filter(|&n| n >= 16)
        .map(Some)
        .ok_or_else(|| format!("--open_files={flag} must be -1 (no limit) or at least 16"))
}

#[cfg(test)]
pub fn default_config(db: &std::path::Path) -> Config {
    use clap::Parser;
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: DbBenchArgs,
    }
    let flag = format!("--db={}", db.display());
    let cli = Cli::try_parse_from(["bench", flag.as_str()]).expect("default flags parse");
    Config::from_args(&cli.args).expect("default flags are valid")
}

/// `--engine` or `--engines`, and whether the engines get subdirectories; checks the
/// interval flags that go with them.
fn engines_of(args: &DbBenchArgs) -> Result<(Vec<EngineKind>, bool), String> {
    let (engines, engine_subdirs) = match &args.engines {
        Some(list) => (parse_engines("--engines", list)?, true),
        None => (parse_engines("--engine", &args.engine)?, false),
    };
    if engines.len() != 1 && !engine_subdirs {
        return Err("--engine names one engine (use --engines for several)".into());
    }
    if (args.use_direct_reads || args.use_direct_io_for_flush_and_compaction)
        && engines.contains(&EngineKind::Redb)
    {
        return Err(
            "--use_direct_reads and --use_direct_io_for_flush_and_compaction: redb has no \
             direct I/O (run it in a separate run)"
                .into(),
        );
    }
    if args.report_file.is_some() && args.report_interval_seconds == 0 {
        return Err("--report_file needs --report_interval_seconds above 0".into());
    }
    Ok((engines, engine_subdirs))
}

/// The engines of a comma-separated `list`, each once.
fn parse_engines(flag: &str, list: &str) -> Result<Vec<EngineKind>, String> {
    let mut engines = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let kind = EngineKind::from_name(name).map_err(|e| format!("{flag}: {e}"))?;
        if engines.contains(&kind) {
            return Err(format!("{flag}: {name} is named twice"));
        }
        engines.push(kind);
    }
    if engines.is_empty() {
        return Err(format!("{flag} names no engine"));
    }
    Ok(engines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: DbBenchArgs,
    }

    fn parse(flags: &[&str]) -> Result<Config, String> {
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(flags.iter().copied()))
            .map_err(|e| e.to_string())?;
        Config::from_args(&cli.args)
    }

    #[test]
    fn defaults_are_db_bench_defaults() {
        let config = parse(&[]).unwrap();
        assert_eq!(
            config.benchmarks,
            vec![Benchmark::FillSeq, Benchmark::ReadRandom]
        );
        assert_eq!(config.num, 1_000_000);
        assert_eq!(config.reads, 1_000_000);
        assert_eq!(config.deletes, 1_000_000);
        assert_eq!((config.key_size, config.value_size), (16, 100));
        assert!((config.compression_ratio - 0.5).abs() < f64::EPSILON);
        assert_eq!(config.compression, Compression::Snappy);
        assert_eq!(config.bloom_bits, 0);
        assert_eq!(config.cache_size, 8 << 20);
        assert_eq!(config.block_size, 4096);
        assert_eq!(config.write_buffer_size, 64 << 20);
        assert_eq!(config.threads, 1);
        assert!(!config.sync && !config.use_existing_db && !config.histogram);
        assert!(!config.statistics);
        assert_eq!((config.seek_nexts, config.duration, config.seed), (0, 0, 0));
        assert_eq!(config.engines, vec![EngineKind::Shale]);
        assert!(!config.engine_subdirs);
        assert_eq!(config.report_interval_seconds, 0);
        assert!(config.report_file.is_none() && config.json_out.is_none());
        assert!(!config.use_direct_reads && !config.use_direct_io_for_flush_and_compaction);
    }

    #[test]
    fn direct_io_flags_parse_as_db_bench_booleans_and_redb_refuses_them() {
        let config = parse(&[
            "--use_direct_reads",
            "--use_direct_io_for_flush_and_compaction=1",
        ])
        .unwrap();
        assert!(config.use_direct_reads && config.use_direct_io_for_flush_and_compaction);
        let config = parse(&["--use_direct_reads=false"]).unwrap();
        assert!(!config.use_direct_reads);
        let err = parse(&["--engine=redb", "--use_direct_reads"]).unwrap_err();
        assert!(err.contains("redb has no direct I/O"), "{err}");
    }

    #[test]
    fn open_files_is_unlimited_by_default_as_in_db_bench() {
        assert_eq!(parse(&[]).unwrap().open_files, None);
        assert_eq!(parse(&["--open_files=-1"]).unwrap().open_files, None);
        assert_eq!(parse(&["--open_files=500"]).unwrap().open_files, Some(500));
        for bad in ["--open_files=8", "--open_files=-2"] {
            let err = parse(&[bad]).unwrap_err();
            assert!(err.contains("--open_files="), "{err}");
        }
    }

    #[test]
    fn background_jobs_default_to_db_benchs_two_and_take_two_to_sixty_four() {
        assert_eq!(parse(&[]).unwrap().max_background_jobs, 2);
        let config = parse(&["--max_background_jobs=8"]).unwrap();
        assert_eq!(config.max_background_jobs, 8);
        for bad in ["--max_background_jobs=1", "--max_background_jobs=65"] {
            let err = parse(&[bad]).unwrap_err();
            assert!(err.contains("--max_background_jobs="), "{err}");
        }
    }

    #[test]
    fn engines_run_in_subdirectories_and_report_flags_parse() {
        let config = parse(&[
            "--engines=redb,shale",
            "--report_interval_seconds=10",
            "--report_file=/tmp/r.csv",
            "--json_out=/tmp/r.json",
        ])
        .unwrap();
        assert_eq!(config.engines, vec![EngineKind::Redb, EngineKind::Shale]);
        assert!(config.engine_subdirs);
        assert_eq!(config.report_interval_seconds, 10);
        assert_eq!(config.report_file, Some(PathBuf::from("/tmp/r.csv")));
        assert_eq!(config.json_out, Some(PathBuf::from("/tmp/r.json")));
        let config = parse(&["--engine=redb"]).unwrap();
        assert_eq!(config.engines, vec![EngineKind::Redb]);
        assert!(!config.engine_subdirs);
    }

    #[test]
    fn db_bench_spellings_are_accepted() {
        let config = parse(&[
            "--benchmarks=fillrandom,,readrandom,seekrandom,readwhilewriting,stats",
            "--num=5000",
            "--reads=100",
            "--key_size=20",
            "--value_size=400",
            "--compression_ratio=0.25",
            "--compression_type=lz4",
            "--bloom_bits=10",
            "--cache_size=268435456",
            "--block_size=16384",
            "--write_buffer_size=1048576",
            "--threads=4",
            "--sync=1",
            "--seek_nexts=10",
            "--db=/tmp/x",
            "--use_existing_db=true",
            "--histogram",
            "--statistics=0",
            "--duration=7",
            "--benchmark_write_rate_limit=1000000",
            "--seed=42",
        ])
        .unwrap();
        assert_eq!(
            config.benchmarks,
            vec![
                Benchmark::FillRandom,
                Benchmark::ReadRandom,
                Benchmark::SeekRandom,
                Benchmark::ReadWhileWriting,
                Benchmark::Stats
            ]
        );
        assert_eq!(
            (config.num, config.reads, config.deletes),
            (5000, 100, 5000)
        );
        assert_eq!((config.key_size, config.value_size), (20, 400));
        assert_eq!(config.compression, Compression::Lz4);
        assert_eq!((config.bloom_bits, config.cache_size), (10, 256 << 20));
        assert_eq!(
            (config.block_size, config.write_buffer_size),
            (16384, 1 << 20)
        );
        assert_eq!(config.threads, 4);
        assert!(config.sync && config.use_existing_db && config.histogram);
        assert!(!config.statistics);
        assert_eq!(config.seek_nexts, 10);
        assert_eq!(config.db, PathBuf::from("/tmp/x"));
        assert_eq!(
            (config.duration, config.write_rate_limit, config.seed),
            (7, 1_000_000, 42)
        );
        // Negative sizes mean "none", as in db_bench.
        let config = parse(&["--cache_size=-1", "--bloom_bits=-1", "--reads=-1"]).unwrap();
        assert_eq!((config.cache_size, config.bloom_bits), (0, 0));
        assert_eq!(config.reads, config.num);
    }

    #[test]
    fn every_benchmark_name_round_trips() {
        for (name, benchmark) in Benchmark::ALL {
            assert_eq!(benchmark.name(), name);
            let config = parse(&[&format!("--benchmarks={name}")]).unwrap();
            assert_eq!(config.benchmarks, vec![benchmark]);
        }
        assert!(Benchmark::FillSeq.needs_fresh_db() && Benchmark::FillRandom.needs_fresh_db());
        assert!(!Benchmark::Overwrite.needs_fresh_db());
    }

    #[test]
    fn bad_flags_are_named() {
        let cases: [(&[&str], &str); 16] = [
            (&["--engine=lmdb"], "--engine: unknown engine \"lmdb\""),
            (&["--engine=shale,redb"], "--engine names one engine"),
            (&["--engines=shale,shale"], "named twice"),
            (&["--engines=,"], "names no engine"),
            (&["--report_file=/tmp/x.csv"], "--report_interval_seconds"),
            (
                &["--benchmarks=fillseq,readfast"],
                "unknown benchmark \"readfast\"",
            ),
            (&["--benchmarks=,"], "names no benchmark"),
            (&["--num=0"], "--num"),
            (&["--key_size=0"], "--key_size"),
            (&["--compression_ratio=0"], "--compression_ratio"),
            (&["--compression_ratio=1.5"], "--compression_ratio"),
            (&["--compression_type=lzma"], "--compression_type"),
            (&["--compression_type=zstd-dict"], "--compression_type"),
            (&["--threads=0"], "--threads"),
            (&["--sync=maybe"], "not a boolean"),
            (&["--num=ten"], "--num"),
        ];
        for (flags, expected) in cases {
            let error = parse(flags).unwrap_err();
            assert!(error.contains(expected), "{flags:?}: {error}");
        }
    }
}
