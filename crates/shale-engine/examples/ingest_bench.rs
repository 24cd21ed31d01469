//! Loading sorted keys: through puts versus through `TableFileWriter` files and one
//! `Db::ingest`. Prints, for each run, wall time, CPU time and bytes written, then the
//! medians and their ratios. A measurement, never a test.
//!
//! ```text
//! cargo run --release -p shale-engine --example ingest_bench -- --dir DIR [--keys 10000000]
//!     [--value-bytes 100] [--codecs none,lz4] [--runs 3] [--writers 2] [--paths puts,ingest]
//!     [--verify] [--bytes-per-sync 1048576]
//! ```
//!
//! `DIR` must not exist or be empty; each run uses a fresh database under it and deletes it
//! afterwards. Both paths load the same `--keys` sorted 16-byte keys with the same
//! `--value-bytes` values (half bytes derived from the key index, half a repeated byte:
//! compressible about 2:1, like `shale bench`'s value ratio 0.5), with the same codec on every
//! level and in the external files, so both end with the same tables:
//!
//! - puts: `WriteBatch`es of 1000 keys with `Buffered` durability on one thread (the
//!   database's background flush thread beside it), then `flush` and a wait for background
//!   work. *Visible* is when the last write returned; *loaded* is when the data is also durable
//!   and in tables (the flush and the trivial moves that follow it are done).
//! - ingest: `--writers` threads each write one contiguous share of the keys into files of
//!   about 64 MiB with `TableFileWriter` (each file synced), then one `Db::ingest` of all of
//!   them with `move_files` (hard links); `--verify` turns on `verify_checksums_before_ingest`
//!   and `--bytes-per-sync` sets `TableFileWriterOptions::bytes_per_sync` (0: off).
//!   The data is visible, durable and in tables when `ingest` returns, so *visible* and
//!   *loaded* are the same moment.
//!
//! Runs alternate between the paths (puts, ingest, puts, ...) so that a change in the
//! machine's load hits both. Bytes written are this process's `wchar` from `/proc/self/io`
//! (every byte handed to `write` by every thread: WAL, flushes, compactions, external files,
//! MANIFEST); CPU time is its user plus system time from `/proc/self/stat` (all threads),
//! which other processes on a busy machine disturb less than wall time. Each run prints the
//! 1-minute load average read when it started.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shale_engine::{
    Db, Durability, IngestArg, IngestOptions, KeyspaceOptions, Options, TableFileWriter,
    TableFileWriterOptions, WriteBatch, WriteOptions,
};
use shale_fs::{FileSystem, OsFs};
use shale_sst::Compression;

const BATCH: u64 = 1000;
const FILE_BYTES: u64 = 64 << 20;
const KEY_BYTES: usize = 16;

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// `wchar` of this process: bytes passed to `write` so far.
fn bytes_written() -> BoxResult<u64> {
    let io = OsFs::new().read_to_string(Path::new("/proc/self/io"))?;
    io.lines()
        .find_map(|line| line.strip_prefix("wchar: "))
        .ok_or("no wchar in /proc/self/io")?
        .trim()
        .parse()
        .map_err(Into::into)
}

/// CPU seconds (user + system, all threads) of this process so far.
fn cpu_seconds() -> BoxResult<f64> {
    let stat = OsFs::new().read_to_string(Path::new("/proc/self/stat"))?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit(')').next().ok_or("odd /proc/self/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).ok_or("no utime")?.parse::<u64>()?
        + fields.get(12).ok_or("no stime")?.parse::<u64>()?;
    // USER_HZ is 100 on Linux.
    Ok(ticks as f64 / 100.0)
}

/// The 1-minute load average.
fn load_average() -> BoxResult<f64> {
    let loadavg = OsFs::new().read_to_string(Path::new("/proc/loadavg"))?;
    Ok(loadavg
        .split_whitespace()
        .next()
        .ok_or("empty /proc/loadavg")?
        .parse()?)
}

/// Key `index` as 16 decimal digits (sorted as numbers).
fn key(mut index: u64) -> [u8; KEY_BYTES] {
    let mut key = [b'0'; KEY_BYTES];
    for digit in key.iter_mut().rev() {
        *digit = b'0' + u8::try_from(index % 10).unwrap_or(0);
        index /= 10;
    }
    key
}

/// Consecutive keys from a starting index, each made by incrementing the previous one's
/// digits: the input generator should cost next to nothing beside what it measures.
struct Keys {
    index: u64,
    key: [u8; KEY_BYTES],
}

impl Keys {
    fn from(index: u64) -> Self {
        Keys {
            index,
            key: key(index),
        }
    }

    /// The current key and its index; then moves to the next one.
    fn next(&mut self) -> ([u8; KEY_BYTES], u64) {
        let current = (self.key, self.index);
        self.index += 1;
        for digit in self.key.iter_mut().rev() {
            if *digit == b'9' {
                *digit = b'0';
            } else {
                *digit += 1;
                break;
            }
        }
        current
    }
}

/// The value of key `index`: its first half pseudo-random bytes derived from `index`
/// (splitmix64), the rest a repeated byte. Both paths and every writer thread produce the
/// same value for the same key.
struct Values {
    value: Vec<u8>,
}

impl Values {
    fn new(value_bytes: usize) -> Self {
        Values {
            value: vec![b'x'; value_bytes],
        }
    }

    fn of(&mut self, index: u64) -> &[u8] {
        let half = self.value.len() / 2;
        // Each key's stream starts at a scattered point, so neighbours share no bytes.
        let mut state = splitmix64(index);
        let mut chunks = self.value[..half].chunks_exact_mut(8);
        for chunk in &mut chunks {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            chunk.copy_from_slice(&splitmix64(state).to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = splitmix64(state.wrapping_add(0x9E37_79B9_7F4A_7C15)).to_le_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
        &self.value
    }
}

/// The splitmix64 output function: a cheap, well-mixed 64-bit hash.
fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One run of one path.
#[derive(Debug, Clone, Copy)]
struct Measured {
    /// From the first key to the data readable.
    visible: Duration,
    /// From the first key to the data durable and in tables.
    loaded: Duration,
    cpu: f64,
    bytes: u64,
    load_average: f64,
}

/// Where a measurement started.
struct Start {
    bytes: u64,
    cpu: f64,
    at: Instant,
    load_average: f64,
}

impl Start {
    fn now() -> BoxResult<Self> {
        Ok(Start {
            load_average: load_average()?,
            bytes: bytes_written()?,
            cpu: cpu_seconds()?,
            at: Instant::now(),
        })
    }

    fn measured(&self, visible: Duration) -> BoxResult<Measured> {
        Ok(Measured {
            visible,
            loaded: self.at.elapsed(),
            cpu: cpu_seconds()? - self.cpu,
            bytes: bytes_written()? - self.bytes,
            load_average: self.load_average,
        })
    }
}

#[derive(Debug, Clone)]
struct Config {
    dir: PathBuf,
    keys: u64,
    value_bytes: usize,
    codecs: Vec<Compression>,
    runs: usize,
    writers: u64,
    puts: bool,
    ingest: bool,
    verify: bool,
    bytes_per_sync: u64,
}

fn options(codec: Compression) -> Options {
    Options {
        durability: Durability::Buffered,
        default_keyspace: KeyspaceOptions {
            compression: codec,
            compression_per_level: Vec::new(),
            bottommost_compression: Some(codec),
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    }
}

fn load_with_puts(config: &Config, dir: &Path, codec: Compression) -> BoxResult<Measured> {
    let db = Db::open(dir, options(codec))?;
    let start = Start::now()?;
    let mut values = Values::new(config.value_bytes);
    let write_options = WriteOptions {
        durability: Some(Durability::Buffered),
    };
    let id = db.default_keyspace().id();
    let mut batch = WriteBatch::new();
    let mut keys = Keys::from(0);
    for _ in 0..config.keys {
        let (key, index) = keys.next();
        batch.put(id, &key, values.of(index))?;
        if batch.count() as u64 == BATCH {
            db.write(std::mem::take(&mut batch), &write_options)?;
        }
    }
    if !batch.is_empty() {
        db.write(batch, &write_options)?;
    }
    let visible = start.at.elapsed();
    db.flush()?;
    db.wait_for_background_work()?;
    let measured = start.measured(visible)?;
    check(&db, config)?;
    db.close()?;
    Ok(measured)
}

/// Writes keys `range` into files of about `FILE_BYTES` named `{prefix}-NNNN.sst`.
fn write_files(
    config: &Config,
    external: &Path,
    prefix: u64,
    range: std::ops::Range<u64>,
    codec: Compression,
) -> Result<Vec<PathBuf>, String> {
    let options = options(codec);
    let writer_options = TableFileWriterOptions {
        compression: Some(codec),
        bytes_per_sync: config.bytes_per_sync,
    };
    let mut values = Values::new(config.value_bytes);
    let mut files: Vec<PathBuf> = Vec::new();
    let mut writer: Option<TableFileWriter> = None;
    let mut keys = Keys::from(range.start);
    for _ in range {
        let (key, index) = keys.next();
        if writer.is_none() {
            let path = external.join(format!("{prefix}-{:04}.sst", files.len()));
            files.push(path.clone());
            writer = Some(
                TableFileWriter::create_with(
                    &path,
                    &options,
                    &options.default_keyspace,
                    &writer_options,
                )
                .map_err(|e| e.to_string())?,
            );
        }
        let Some(current) = writer.as_mut() else {
            continue;
        };
        current
            .put(&key, values.of(index))
            .map_err(|e| e.to_string())?;
        if current.estimated_file_size() >= FILE_BYTES {
            if let Some(full) = writer.take() {
                full.finish().map_err(|e| e.to_string())?;
            }
        }
    }
    if let Some(last) = writer.take() {
        last.finish().map_err(|e| e.to_string())?;
    }
    Ok(files)
}

/// The ingestion run; also returns how long the files took and how many there were.
fn load_with_ingest(
    config: &Config,
    dir: &Path,
    external: &Path,
    codec: Compression,
) -> BoxResult<(Measured, Duration, usize)> {
    let db = Db::open(dir, options(codec))?;
    OsFs::new().create_dir_all(external)?;
    let start = Start::now()?;
    // Each writer thread builds the files of one contiguous share of the keys.
    let (keys, writers) = (config.keys, config.writers);
    let share = keys.div_ceil(writers);
    let written: Vec<Result<Vec<PathBuf>, String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..writers)
            .map(|t| {
                let range = (t * share).min(keys)..((t + 1) * share).min(keys);
                scope.spawn(move || write_files(config, external, t, range, codec))
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err("a writer panicked".into())))
            .collect()
    });
    let mut files = Vec::new();
    for result in written {
        files.extend(result?);
    }
    let files_written = start.at.elapsed();
    db.ingest(
        &[IngestArg {
            keyspace: db.default_keyspace(),
            files: files.clone(),
        }],
        IngestOptions {
            move_files: true,
            verify_checksums_before_ingest: config.verify,
        },
    )?;
    let measured = start.measured(start.at.elapsed())?;
    for file in &files {
        OsFs::new().remove(file)?;
    }
    check(&db, config)?;
    db.close()?;
    Ok((measured, files_written, files.len()))
}

/// Spot-checks that the first, middle and last keys are there with their values.
fn check(db: &Db, config: &Config) -> BoxResult<()> {
    let mut values = Values::new(config.value_bytes);
    for index in [0, config.keys / 2, config.keys - 1] {
        if db.get(&key(index))?.as_deref() != Some(values.of(index)) {
            return Err(format!("key {index} is missing or wrong after the load").into());
        }
    }
    Ok(())
}

fn parse_args() -> BoxResult<Config> {
    let mut config = Config {
        dir: PathBuf::new(),
        keys: 10_000_000,
        value_bytes: 100,
        codecs: vec![Compression::None, Compression::Lz4],
        runs: 3,
        writers: 2,
        puts: true,
        ingest: true,
        verify: false,
        bytes_per_sync: TableFileWriterOptions::default().bytes_per_sync,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--verify" {
            config.verify = true;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--dir" => config.dir = PathBuf::from(value),
            "--keys" => config.keys = value.parse()?,
            "--value-bytes" => config.value_bytes = value.parse()?,
            "--runs" => config.runs = value.parse()?,
            "--writers" => config.writers = value.parse()?,
            "--bytes-per-sync" => config.bytes_per_sync = value.parse()?,
            "--codecs" => {
                config.codecs = value
                    .split(',')
                    .map(|name| Compression::from_name(name).ok_or(format!("unknown codec {name}")))
                    .collect::<Result<_, _>>()?;
            }
            "--paths" => {
                config.puts = value.split(',').any(|p| p == "puts");
                config.ingest = value.split(',').any(|p| p == "ingest");
            }
            other => return Err(format!("unknown flag {other} (see the example's docs)").into()),
        }
    }
    if config.dir.as_os_str().is_empty() {
        return Err("--dir DIR is required".into());
    }
    if config.keys == 0 || config.writers == 0 || config.runs == 0 {
        return Err("--keys, --writers and --runs must be at least 1".into());
    }
    if config.codecs.contains(&Compression::ZstdDict) {
        return Err("zstd-dict needs a dictionary; use zstd".into());
    }
    Ok(config)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Medians of a path's runs: visible s, loaded s, CPU s, MiB written.
fn medians(runs: &[Measured]) -> (f64, f64, f64, f64) {
    (
        median(runs.iter().map(|m| m.visible.as_secs_f64()).collect()),
        median(runs.iter().map(|m| m.loaded.as_secs_f64()).collect()),
        median(runs.iter().map(|m| m.cpu).collect()),
        median(runs.iter().map(|m| m.bytes as f64).collect()) / f64::from(1 << 20),
    )
}

fn main() -> BoxResult<()> {
    let config = parse_args()?;
    if config.dir.exists() && !OsFs::new().list(&config.dir)?.is_empty() {
        return Err(format!("{} is not empty", config.dir.display()).into());
    }
    let user_bytes = config.keys * (KEY_BYTES + config.value_bytes) as u64;
    let user_mib = user_bytes as f64 / f64::from(1 << 20);
    println!(
        "load {} sorted keys ({KEY_BYTES} B keys, {} B values, {user_mib:.1} MiB of user data), \
         {} runs per path, ingest with {} writer threads{}",
        config.keys,
        config.value_bytes,
        config.runs,
        config.writers,
        if config.verify {
            " and verify_checksums_before_ingest"
        } else {
            ""
        }
    );
    for &codec in &config.codecs {
        println!(
            "codec {} (every level and the external files)",
            codec.name()
        );
        let mut puts = Vec::new();
        let mut ingests = Vec::new();
        for run in 0..config.runs {
            let base = config.dir.join(format!("{}-{run}", codec.name()));
            if config.puts {
                let m = load_with_puts(&config, &base.join("puts"), codec)?;
                println!(
                    "  run {run} puts    visible {:>6.2} s  loaded {:>6.2} s  CPU {:>6.2} s  wrote \
                     {:>7.1} MiB ({:.2}x user data)  load average {:.2}",
                    m.visible.as_secs_f64(),
                    m.loaded.as_secs_f64(),
                    m.cpu,
                    m.bytes as f64 / f64::from(1 << 20),
                    m.bytes as f64 / user_bytes as f64,
                    m.load_average
                );
                puts.push(m);
            }
            if config.ingest {
                let (m, files_written, files) =
                    load_with_ingest(&config, &base.join("ingest"), &base.join("external"), codec)?;
                println!(
                    "  run {run} ingest  loaded {:>6.2} s (files {:.2} s, Db::ingest {:.3} s, {files} \
                     files)  CPU {:>6.2} s  wrote {:>7.1} MiB ({:.2}x user data)  load average \
                     {:.2}",
                    m.loaded.as_secs_f64(),
                    files_written.as_secs_f64(),
                    m.loaded.saturating_sub(files_written).as_secs_f64(),
                    m.cpu,
                    m.bytes as f64 / f64::from(1 << 20),
                    m.bytes as f64 / user_bytes as f64,
                    m.load_average
                );
                ingests.push(m);
            }
            OsFs::new().remove_dir_all(&base)?;
        }
        let mut summary = Vec::new();
        for (name, runs) in [("puts", &puts), ("ingest", &ingests)] {
            if runs.is_empty() {
                continue;
            }
            let (visible, loaded, cpu, mib) = medians(runs);
            println!(
                "  median {name:<7} visible {visible:>6.2} s  loaded {loaded:>6.2} s  CPU \
                 {cpu:>6.2} s ({:.3} us/key)  wrote {mib:>7.1} MiB ({:.2}x user data)",
                cpu * 1e6 / config.keys as f64,
                mib / user_mib
            );
            summary.push((visible, loaded, cpu, mib));
        }
        if let [puts, ingest] = summary[..] {
            println!(
                "  ingest vs puts: {:.2}x faster to loaded ({:.2}x to visible), {:.2}x less \
                 CPU, {:.2}x the bytes written",
                puts.1 / ingest.1,
                puts.0 / ingest.1,
                puts.2 / ingest.2,
                ingest.3 / puts.3
            );
        }
    }
    Ok(())
}
