//! `shale bench`: the engine under `db_bench`'s benchmarks, flags, keys, values and output,
//! so that the same command line can be given to both tools and the lines compared.
//!
//! - [`flags`]: the flags and their validation.
//! - [`random`]: `db_bench`'s key-picking random numbers (`std::mt19937_64`).
//! - [`workloads`]: what each benchmark's threads do.
//! - [`report`]: per-thread counters and the result and histogram lines.
//! - [`engines`]: the engines the workloads run against (Shale, redb, `RocksDB`).
//! - [`intervals`]: throughput per interval (`--report_interval_seconds`).
//! - [`results`]: one JSON object per benchmark (`--json_out`).
//! - [`db_bench_defaults`]: Shale's defaults that `db_bench` lacks (the header, `--like_db_bench`).
//!
//! A run: for each engine of `--engine`/`--engines` (each in its own subdirectory of `--db`
//! with `--engines`): print the header; delete the database unless `--use_existing_db`;
//! open it; run each benchmark of `--benchmarks` in order (fill benchmarks first reopen an
//! empty database); close. Every engine gets the same seeds, so the same keys. Results go to
//! stdout; `... finished N ops` progress goes to stderr.

mod db_bench_defaults;
mod engines;
mod flags;
mod intervals;
mod random;
mod report;
mod results;
mod workloads;

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use engines::{Engine, EngineKind};
pub use flags::DbBenchArgs;
use flags::{Benchmark, Config};
use intervals::{IntervalPoint, OpCounter};
use random::Random64;
use report::{Merged, Stats};
use results::BenchmarkRecord;
use workloads::{op_kind, RateLimiter, Shared, ThreadState};

use crate::keygen::{KeyGenerator, ValueGenerator};
use crate::output::Failure;

/// Bytes in the `MB` of sizes, as in `db_bench`.
const MB: f64 = 1_048_576.0;

/// Runs the benchmarks `args` name on each engine it names.
pub fn run(args: &DbBenchArgs) -> Result<(), Failure> {
    let config = Config::from_args(args).map_err(Failure::error)?;
    let seed_base = if config.seed == 0 {
        let seed = clock_seed();
        say(&format!("Set seed to {seed} because --seed was 0"))?;
        seed
    } else {
        config.seed
    };
    let mut json_out = match &config.json_out {
        Some(path) => Some(create(path)?),
        None => None,
    };
    for &engine in &config.engines {
        let dir = if config.engine_subdirs {
            config.db.join(engine.name())
        } else {
            config.db.clone()
        };
        run_engine(engine, &dir, &config, seed_base, json_out.as_mut())?;
    }
    if let Some(out) = json_out {
        finish(out)?;
    }
    Ok(())
}

/// An output file that names itself in errors.
struct Output {
    path: PathBuf,
    file: BufWriter<File>,
}

impl Output {
    fn write(&mut self, text: &str) -> Result<(), Failure> {
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| Failure::error(format!("writing {} failed: {e}", self.path.display())))
    }
}

fn create(path: &Path) -> Result<Output, Failure> {
    let file = File::create(path)
        .map_err(|e| Failure::error(format!("creating {} failed: {e}", path.display())))?;
    Ok(Output {
        path: path.to_path_buf(),
        file: BufWriter::new(file),
    })
}

fn finish(out: Output) -> Result<(), Failure> {
    let Output { path, file } = out;
    file.into_inner()
        .map_err(|e| Failure::error(format!("writing {} failed: {e}", path.display())))?
        .sync_all()
        .map_err(|e| Failure::error(format!("syncing {} failed: {e}", path.display())))
}

/// `--report_file` for `engine`: the path itself, or with `-ENGINE` before the extension when
/// several engines run.
fn report_path(config: &Config, engine: EngineKind) -> Option<PathBuf> {
    let path = config.report_file.as_ref()?;
    if !config.engine_subdirs {
        return Some(path.clone());
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{}.{}", engine.name(), ext.to_string_lossy()),
        None => format!("{stem}-{}", engine.name()),
    };
    Some(path.with_file_name(name))
}

/// Runs every benchmark on one engine's database in `dir`.
fn run_engine(
    kind: EngineKind,
    dir: &Path,
    config: &Config,
    seed_base: u64,
    mut json_out: Option<&mut Output>,
) -> Result<(), Failure> {
    header(config, kind, dir)?;
    if !config.use_existing_db {
        kind.destroy(dir)?;
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::error(format!("creating {} failed: {e}", dir.display())))?;
    }
    let mut report_file = match report_path(config, kind) {
        Some(path) => {
            let mut out = create(&path)?;
            out.write("secs_elapsed,interval_qps\n")?;
            Some(out)
        }
        None => None,
    };
    let values = ValueGenerator::new(config.value_size, config.compression_ratio);
    let mut run = EngineRun {
        kind,
        dir,
        config,
        values: &values,
        seed_base,
        threads_started: 0,
        start: Instant::now(),
    };
    let mut db = Some(kind.open(dir, config)?);
    for &benchmark in &config.benchmarks {
        let current = db
            .as_deref()
            .ok_or_else(|| Failure::error("database not open"))?;
        match benchmark {
            Benchmark::Stats => {
                say(&current.stats_text()?)?;
                continue;
            }
            Benchmark::LevelStats => {
                let text = current.level_stats_text()?;
                say(&text.unwrap_or_else(|| format!("{} has no levels", kind.name())))?;
                continue;
            }
            Benchmark::Flush => {
                current.flush()?;
                continue;
            }
            Benchmark::WaitForCompaction => {
                current.wait_for_compaction()?;
                continue;
            }
            Benchmark::Compact => {
                current.compact()?;
                continue;
            }
            _ => {}
        }
        if benchmark.needs_fresh_db() {
            if config.use_existing_db {
                say(&format!(
                    "{:<12} : skipped (--use_existing_db is true)",
                    benchmark.name()
                ))?;
                continue;
            }
            if let Some(old) = db.take() {
                old.close()?;
            }
            kind.destroy(dir)?;
            db = Some(kind.open(dir, config)?);
        }
        let current = db
            .as_deref()
            .ok_or_else(|| Failure::error("database not open"))?;
        measure(
            &mut run,
            benchmark,
            current,
            report_file.as_mut(),
            json_out.as_deref_mut(),
        )?;
    }
    if let Some(db) = db {
        if config.statistics {
            say(&format!("STATISTICS:\n{}", db.stats_text()?))?;
        }
        db.close()?;
    }
    if let Some(out) = report_file {
        finish(out)?;
    }
    Ok(())
}

/// What the benchmarks of one engine's run share.
struct EngineRun<'a> {
    kind: EngineKind,
    dir: &'a Path,
    config: &'a Config,
    values: &'a ValueGenerator,
    seed_base: u64,
    /// Threads started so far in this engine's run (each thread's seed is the next one).
    threads_started: u64,
    start: Instant,
}

/// Runs one threaded benchmark and reports it: the result line (and histogram), the
/// interval series in `report_file`, the JSON record in `json_out`.
fn measure(
    run: &mut EngineRun<'_>,
    benchmark: Benchmark,
    current: &dyn Engine,
    report_file: Option<&mut Output>,
    json_out: Option<&mut Output>,
) -> Result<(), Failure> {
    let offset = run.start.elapsed().as_secs_f64();
    let process_before = results::process_bytes_written();
    let engine_before = current.engine_bytes_written();
    let (stats, intervals) = run_benchmark(
        benchmark,
        current,
        run.config,
        run.values,
        run.seed_base,
        &mut run.threads_started,
    )?;
    let process_written = process_before
        .zip(results::process_bytes_written())
        .map(|(before, after)| after.saturating_sub(before));
    let engine_written = engine_before
        .zip(current.engine_bytes_written())
        .map(|(before, after)| after.since(&before));
    let Some(merged) = Merged::of(&stats) else {
        return Ok(());
    };
    let mut text = merged.result_line(benchmark.name());
    text.push('\n');
    if run.config.histogram {
        if let Some(block) = merged.histogram_block() {
            text.push_str(&block);
            text.push('\n');
        }
    }
    print(&text)?;
    if let Some(out) = report_file {
        out.write(&intervals::csv_lines(&intervals, offset))?;
    }
    if let Some(out) = json_out {
        let record = BenchmarkRecord {
            engine: run.kind.name(),
            benchmark: benchmark.name(),
            num: run.config.num,
            key_size: run.config.key_size,
            value_size: run.config.value_size,
            threads: run.config.threads,
            seed: run.seed_base,
            summary: merged.summary(),
            user_bytes_written: report::written_bytes(&stats),
            process_bytes_written: process_written,
            engine_bytes_written: engine_written,
            db_size_bytes: results::directory_size(run.dir),
            intervals,
        };
        out.write(&format!("{}\n", record.to_json()))?;
    }
    Ok(())
}

/// Runs one threaded benchmark; returns every thread's counters and, with
/// `--report_interval_seconds`, the throughput per interval.
fn run_benchmark(
    benchmark: Benchmark,
    db: &dyn Engine,
    config: &Config,
    values: &ValueGenerator,
    seed_base: u64,
    threads_started: &mut u64,
) -> Result<(Vec<Stats>, Vec<IntervalPoint>), Failure> {
    let writer = usize::from(benchmark == Benchmark::ReadWhileWriting);
    let count = config.threads + writer;
    let shared = Shared {
        db,
        config,
        keys: KeyGenerator::new(config.key_size),
        values,
        rate_limiter: (config.write_rate_limit > 0)
            .then(|| RateLimiter::new(config.write_rate_limit)),
        readers_done: AtomicUsize::new(0),
        readers: config.threads,
    };
    let interval = Duration::from_secs(config.report_interval_seconds);
    let mut counters = Vec::new();
    // --json_out records percentiles, so it needs the histogram even without --histogram.
    let histogram = config.histogram || config.json_out.is_some();
    let mut states: Vec<ThreadState> = (0..count)
        .map(|tid| {
            let seed = seed_base.wrapping_add(*threads_started);
            *threads_started += 1;
            let mut stats = Stats::new(op_kind(benchmark), histogram, true);
            // readwhilewriting's writer (thread 0) is left out, as from the result line.
            if !interval.is_zero() && (writer == 0 || tid > 0) {
                let counter = Arc::new(OpCounter::default());
                stats.publish_to(Arc::clone(&counter));
                counters.push(counter);
            }
            ThreadState {
                tid,
                rand: Random64::new(seed),
                stats,
            }
        })
        .collect();
    let sampling = !counters.is_empty();
    let barrier = Barrier::new(count + usize::from(sampling));
    let (stop_sampler, sampler_stopped) = mpsc::channel::<()>();
    let (results, points) = std::thread::scope(|scope| {
        let sampler = sampling.then(|| {
            let barrier = &barrier;
            let counters = &counters;
            scope.spawn(move || {
                barrier.wait();
                intervals::sample(counters, interval, Instant::now(), &sampler_stopped)
            })
        });
        let handles: Vec<_> = states
            .iter_mut()
            .map(|state| {
                let shared = &shared;
                let barrier = &barrier;
                // Named so per-thread accounting (scripts/rww-threads.py, top -H) can tell
                // them apart; a thread name is at most 15 bytes on Linux.
                let name = match (writer, state.tid) {
                    (1, 0) => "bench-writer".to_owned(),
                    (1, tid) => format!("bench-reader-{tid}"),
                    (_, tid) => format!("bench-{}", tid + 1),
                };
                std::thread::Builder::new()
                    .name(name)
                    .spawn_scoped(scope, move || {
                        barrier.wait();
                        state.stats.start();
                        let result = workloads::run_thread(benchmark, shared, state);
                        state.stats.stop();
                        result
                    })
            })
            .collect();
        let results: Vec<Result<(), Failure>> = handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(Failure::error("a benchmark thread panicked"))),
                Err(e) => Err(Failure::error(format!(
                    "cannot start a benchmark thread: {e}"
                ))),
            })
            .collect();
        let _ = stop_sampler.send(());
        let points = sampler.map_or_else(Vec::new, |s| s.join().unwrap_or_default());
        (results, points)
    });
    // Progress lines end in '\r'; start the results on a clean line.
    if states.iter().any(|s| s.stats.done() >= 100) {
        let _ = write!(io::stderr(), "\r{:60}\r", "");
    }
    for result in results {
        result?;
    }
    Ok((states.into_iter().map(|s| s.stats).collect(), points))
}

/// A seed from the clock, for `--seed=0` (as `db_bench` does).
fn clock_seed() -> u64 {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    micros.max(1)
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn header(config: &Config, engine: EngineKind, dir: &Path) -> Result<(), Failure> {
    let compressed = (config.value_size as f64 * config.compression_ratio + 0.5).floor();
    let raw = (config.key_size + config.value_size) as f64 * config.num as f64 / MB;
    let file = (config.key_size as f64 + config.value_size as f64 * config.compression_ratio)
        * config.num as f64
        / MB;
    let mut text = format!(
        "Shale:      version {}\n\
         Engine:     {} ({})\n\
         Keys:       {} bytes each\n\
         Values:     {} bytes each ({compressed} bytes after compression)\n\
         Entries:    {}\n\
         RawSize:    {raw:.1} MB (estimated)\n\
         FileSize:   {file:.1} MB (estimated)\n\
         Write rate: {} bytes/second\n\
         Compression: {}\n\
         Bloom bits: {}  Block cache: {} bytes  Block size: {}  Write buffer: {}\n\
         Open files: {}  Background jobs: {}\n\
         Durability: {}\n\
         Direct I/O: reads {}, flush and compaction {}\n",
        env!("CARGO_PKG_VERSION"),
        engine.name(),
        engine.version(),
        config.key_size,
        config.value_size,
        config.num,
        config.write_rate_limit,
        config.compression.name(),
        config.bloom_bits,
        config.cache_size,
        config.block_size,
        config.write_buffer_size,
        config
            .open_files
            .map_or_else(|| "no limit".to_owned(), |n| n.to_string()),
        config.max_background_jobs,
        if config.sync { "sync" } else { "flush" },
        on_off(config.use_direct_reads),
        on_off(config.use_direct_io_for_flush_and_compaction),
    );
    if engine == EngineKind::Shale {
        text.push_str(&db_bench_defaults::header_lines(config.like_db_bench));
    }
    if config.use_existing_db && engine == EngineKind::Shale {
        // The flag sets the codec of new tables; the existing ones keep theirs.
        if let Some(existing) = crate::tool_stats::compression_summary(dir)? {
            let _ = writeln!(text, "Existing DB: {existing}");
        }
    }
    if cfg!(debug_assertions) {
        text.push_str("WARNING: Assertions are enabled; benchmarks unnecessarily slow\n");
    }
    text.push_str(&"-".repeat(48));
    text.push('\n');
    let _ = write!(text, "DB path: [{}]", dir.display());
    say(&text)
}

/// Prints `text` and a newline on stdout.
fn say(text: &str) -> Result<(), Failure> {
    print(&format!("{text}\n"))
}

fn print(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
