//! `shale bench`: the engine under `db_bench`'s benchmarks, flags, keys, values and output,
//! so that the same command line can be given to both tools and the lines compared.
//!
//! - [`flags`]: the flags and their validation.
//! - [`random`]: `db_bench`'s key-picking random numbers (`std::mt19937_64`).
//! - [`workloads`]: what each benchmark's threads do.
//! - [`report`]: per-thread counters and the result and histogram lines.
//!
//! A run: print the header; delete the database unless `--use_existing_db`; open it; run each
//! benchmark of `--benchmarks` in order (fill benchmarks first reopen an empty database);
//! close. Results go to stdout; `... finished N ops` progress goes to stderr.
//!
//! The engine's durability maps `--sync=1` to `Durability::Sync` (fdatasync per commit group)
//! and `--sync=0` to `Durability::Flush` (each write handed to the OS, as `db_bench`'s default
//! write with the WAL on).

mod flags;
mod random;
mod report;
mod workloads;

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Barrier;
use std::time::{SystemTime, UNIX_EPOCH};

use shale_engine::{Db, Durability, Options, WriteOptions};

pub use flags::DbBenchArgs;
use flags::{Benchmark, Config};
use random::Random64;
use report::{Merged, Stats};
use workloads::{op_kind, RateLimiter, Shared, ThreadState};

use crate::keygen::{KeyGenerator, ValueGenerator};
use crate::output::Failure;

/// Bytes in the `MB` of sizes, as in `db_bench`.
const MB: f64 = 1_048_576.0;

/// Runs the benchmarks `args` name.
pub fn run(args: &DbBenchArgs) -> Result<(), Failure> {
    let config = Config::from_args(args).map_err(Failure::error)?;
    let seed_base = if config.seed == 0 {
        let seed = clock_seed();
        say(&format!("Set seed to {seed} because --seed was 0"))?;
        seed
    } else {
        config.seed
    };
    header(&config)?;
    if !config.use_existing_db {
        destroy(&config.db)?;
    }
    let values = ValueGenerator::new(config.value_size, config.compression_ratio);
    let mut db = Some(open(&config)?);
    let mut threads_started = 0u64;
    for &benchmark in &config.benchmarks {
        let current = db
            .as_ref()
            .ok_or_else(|| Failure::error("database not open"))?;
        match benchmark {
            Benchmark::Stats => {
                say(&stats_text(current)?)?;
                continue;
            }
            Benchmark::LevelStats => {
                say(&level_stats_text(current)?)?;
                continue;
            }
            Benchmark::Flush => {
                current.flush()?;
                continue;
            }
            Benchmark::WaitForCompaction => {
                current.wait_for_background_work()?;
                continue;
            }
            Benchmark::Compact => {
                current.flush()?;
                current.compact_range(&current.default_keyspace(), None, None)?;
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
            destroy(&config.db)?;
            db = Some(open(&config)?);
        }
        let current = db
            .as_ref()
            .ok_or_else(|| Failure::error("database not open"))?;
        let stats = run_benchmark(
            benchmark,
            current,
            &config,
            &values,
            seed_base,
            &mut threads_started,
        )?;
        let Some(merged) = Merged::of(&stats) else {
            continue;
        };
        let mut text = merged.result_line(benchmark.name());
        text.push('\n');
        if let Some(block) = merged.histogram_block() {
            text.push_str(&block);
            text.push('\n');
        }
        print(&text)?;
    }
    if let Some(db) = db {
        if config.statistics {
            say(&format!("STATISTICS:\n{}", stats_text(&db)?))?;
        }
        db.close()?;
    }
    Ok(())
}

/// Runs one threaded benchmark and returns every thread's counters.
fn run_benchmark(
    benchmark: Benchmark,
    db: &Db,
    config: &Config,
    values: &ValueGenerator,
    seed_base: u64,
    threads_started: &mut u64,
) -> Result<Vec<Stats>, Failure> {
    let writer = usize::from(benchmark == Benchmark::ReadWhileWriting);
    let count = config.threads + writer;
    let durability = if config.sync {
        Durability::Sync
    } else {
        Durability::Flush
    };
    let shared = Shared {
        db,
        config,
        keys: KeyGenerator::new(config.key_size),
        values,
        write_options: WriteOptions {
            durability: Some(durability),
        },
        rate_limiter: (config.write_rate_limit > 0)
            .then(|| RateLimiter::new(config.write_rate_limit)),
        readers_done: AtomicUsize::new(0),
        readers: config.threads,
    };
    let mut states: Vec<ThreadState> = (0..count)
        .map(|tid| {
            let seed = seed_base.wrapping_add(*threads_started);
            *threads_started += 1;
            ThreadState {
                tid,
                rand: Random64::new(seed),
                stats: Stats::new(op_kind(benchmark), config.histogram, true),
            }
        })
        .collect();
    let barrier = Barrier::new(count);
    let results: Vec<Result<(), Failure>> = std::thread::scope(|scope| {
        let handles: Vec<_> = states
            .iter_mut()
            .map(|state| {
                let shared = &shared;
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    state.stats.start();
                    let result = workloads::run_thread(benchmark, shared, state);
                    state.stats.stop();
                    result
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Failure::error("a benchmark thread panicked")))
            })
            .collect()
    });
    // Progress lines end in '\r'; start the results on a clean line.
    if states.iter().any(|s| s.stats.done() >= 100) {
        let _ = write!(io::stderr(), "\r{:60}\r", "");
    }
    for result in results {
        result?;
    }
    Ok(states.into_iter().map(|s| s.stats).collect())
}

/// A seed from the clock, for `--seed=0` (as `db_bench` does).
fn clock_seed() -> u64 {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    micros.max(1)
}

fn header(config: &Config) -> Result<(), Failure> {
    let compressed = (config.value_size as f64 * config.compression_ratio + 0.5).floor();
    let raw = (config.key_size + config.value_size) as f64 * config.num as f64 / MB;
    let file = (config.key_size as f64 + config.value_size as f64 * config.compression_ratio)
        * config.num as f64
        / MB;
    let mut text = format!(
        "Shale:      version {}\n\
         Keys:       {} bytes each\n\
         Values:     {} bytes each ({compressed} bytes after compression)\n\
         Entries:    {}\n\
         RawSize:    {raw:.1} MB (estimated)\n\
         FileSize:   {file:.1} MB (estimated)\n\
         Write rate: {} bytes/second\n\
         Compression: {}\n\
         Bloom bits: {}  Block cache: {} bytes  Block size: {}  Write buffer: {}\n\
         Durability: {}\n",
        env!("CARGO_PKG_VERSION"),
        config.key_size,
        config.value_size,
        config.num,
        config.write_rate_limit,
        config.compression.name(),
        config.bloom_bits,
        config.cache_size,
        config.block_size,
        config.write_buffer_size,
        if config.sync { "sync" } else { "flush" },
    );
    if cfg!(debug_assertions) {
        text.push_str("WARNING: Assertions are enabled; benchmarks unnecessarily slow\n");
    }
    text.push_str(&"-".repeat(48));
    text.push('\n');
    let _ = write!(text, "DB path: [{}]", config.db.display());
    say(&text)
}

fn open(config: &Config) -> Result<Db, Failure> {
    let mut options = Options {
        create_if_missing: !config.use_existing_db,
        durability: if config.sync {
            Durability::Sync
        } else {
            Durability::Flush
        },
        block_cache_capacity: config.cache_size,
        ..Options::default()
    };
    let keyspace = &mut options.default_keyspace;
    keyspace.write_buffer_size = config.write_buffer_size;
    // As `db_bench`'s --compression_type: one codec at every level, bottom included.
    keyspace.compression = config.compression;
    keyspace.compression_per_level = Vec::new();
    keyspace.bottommost_compression = None;
    keyspace.block_size = config.block_size;
    keyspace.bloom_bits_per_key = config.bloom_bits;
    Db::open(&config.db, options)
        .map_err(|e| Failure::error(format!("opening --db={} failed: {e}", config.db.display())))
}

/// Whether `name` is a file a Shale database directory holds.
fn is_database_file(name: &str) -> bool {
    let base = name.strip_suffix(".tmp").unwrap_or(name);
    matches!(base, "CURRENT" | "LOCK")
        || base.starts_with("MANIFEST-")
        || base.starts_with("OPTIONS-")
        || Path::new(base)
            .extension()
            .is_some_and(|ext| ext == "sst" || ext == "wal")
}

/// Deletes the database in `dir` (as `db_bench`'s `DestroyDB`): only Shale's own files, and
/// nothing at all when the directory holds anything else.
fn destroy(dir: &Path) -> Result<(), Failure> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Failure::error(format!(
                "reading --db={} failed: {e}",
                dir.display()
            )))
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry
            .map_err(|e| Failure::error(format!("reading --db={} failed: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_database_file(&name) || !entry.path().is_file() {
            return Err(Failure::error(format!(
                "--db={} holds {name:?}, which is not a Shale database file; not deleting \
                 anything (use an empty directory, or --use_existing_db)",
                dir.display()
            )));
        }
        files.push(entry.path());
    }
    for file in files {
        std::fs::remove_file(&file)
            .map_err(|e| Failure::error(format!("deleting {} failed: {e}", file.display())))?;
    }
    Ok(())
}

/// `levelstats`: files and bytes per level, in `db_bench`'s table.
fn level_stats_text(db: &Db) -> Result<String, Failure> {
    let keyspace = db.default_keyspace();
    let counts = db.level_file_counts(&keyspace)?;
    let bytes = db.level_bytes(&keyspace)?;
    let mut text = String::from("Level Files Size(MB)\n--------------------\n");
    for (level, (files, size)) in counts.iter().zip(&bytes).enumerate() {
        let _ = writeln!(text, "{level:3} {files:8} {:8.0}", *size as f64 / MB);
    }
    Ok(text)
}

/// `stats`: table counts and the compaction stats table with its stall line.
fn stats_text(db: &Db) -> Result<String, Failure> {
    let keyspace = db.default_keyspace();
    let counts = db.level_file_counts(&keyspace)?;
    let bytes = db.level_bytes(&keyspace)?;
    let mut text = format!(
        "** DB Stats [{}] **\nLatest sequence number: {}\nTable files: {}  Table bytes: {}\n",
        keyspace.name(),
        db.latest_seqno(),
        counts.iter().sum::<usize>(),
        bytes.iter().sum::<u64>()
    );
    let _ = writeln!(text, "{}", db.compaction_stats());
    Ok(text)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_database_files_are_recognised() {
        for name in [
            "CURRENT",
            "CURRENT.tmp",
            "LOCK",
            "MANIFEST-000003",
            "OPTIONS-000005",
            "OPTIONS-000005.tmp",
            "000012.sst",
            "000007.wal",
        ] {
            assert!(is_database_file(name), "{name}");
        }
        for name in ["notes.txt", "data", ".bashrc", "sst"] {
            assert!(!is_database_file(name), "{name}");
        }
    }
}
