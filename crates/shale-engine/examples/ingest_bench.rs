//! Loading sorted keys: through puts versus through `TableFileWriter` files and one
//! `Db::ingest`. Prints wall time and bytes written for both, and their ratios. A
//! measurement, never a test.
//!
//! `cargo run --release -p shale-engine --example ingest_bench -- DIR [KEYS] [VALUE_BYTES]
//! [CODEC]`
//!
//! `DIR` must not exist or be empty; the runs use `DIR/puts` and `DIR/ingest` (and
//! `DIR/external` for the files before they are hard-linked in). `KEYS` (default 10 000 000)
//! sorted 16-byte keys with `VALUE_BYTES` (default 100) values, half random and half a
//! repeated byte (compressible about 2:1, like `shale bench`'s value ratio 0.5). Without
//! `CODEC` both runs use the default keyspace options (sorted puts reach the bottommost level
//! by trivial moves, so they stay uncompressed, while `TableFileWriter` uses the bottommost
//! codec, zstd); `CODEC` (`none`, `lz4`, `zstd`, ...) sets every level's codec for both runs,
//! so that both end with the same tables.
//!
//! - puts: `WriteBatch`es of 1000 keys with `Buffered` durability, then `flush` and a wait
//!   for compactions;
//! - ingest: files of about 64 MiB written with `TableFileWriter` by `INGEST_WRITERS` (default
//!   2) threads, each on one contiguous share of the keys (the puts run has a background flush
//!   thread beside its writer), then one `Db::ingest` of all of them with `move_files` (hard
//!   links), timed from the first file written to the ingestion's return.
//!
//! Bytes written are this process's `wchar` from `/proc/self/io` (every byte handed to
//! `write`, by every thread: WAL, flushes, compactions, external files, MANIFEST); CPU time is
//! its user plus system time from `/proc/self/stat` (all threads), which other processes on a
//! busy machine disturb less than wall time.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    Db, Durability, IngestArg, IngestOptions, KeyspaceOptions, Options, TableFileWriter,
    WriteBatch, WriteOptions,
};
use shale_sst::Compression;

const BATCH: u64 = 1000;
const FILE_BYTES: u64 = 64 << 20;

/// `wchar` of this process: bytes passed to `write` so far.
fn bytes_written() -> Result<u64, Box<dyn std::error::Error>> {
    let io = fs::read_to_string("/proc/self/io")?;
    io.lines()
        .find_map(|line| line.strip_prefix("wchar: "))
        .ok_or("no wchar in /proc/self/io")?
        .trim()
        .parse()
        .map_err(Into::into)
}

/// CPU seconds (user + system, all threads) of this process so far.
fn cpu_seconds() -> Result<f64, Box<dyn std::error::Error>> {
    let stat = fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit(')').next().ok_or("odd /proc/self/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).ok_or("no utime")?.parse::<u64>()?
        + fields.get(12).ok_or("no stime")?.parse::<u64>()?;
    // USER_HZ is 100 on Linux.
    #[allow(clippy::cast_precision_loss)]
    Ok(ticks as f64 / 100.0)
}

struct Values {
    rng: SmallRng,
    value: Vec<u8>,
}

impl Values {
    fn new(value_bytes: usize) -> Self {
        Values {
            rng: SmallRng::seed_from_u64(42),
            value: vec![b'x'; value_bytes],
        }
    }

    /// Half random bytes, half a repeated byte.
    fn next(&mut self) -> &[u8] {
        let half = self.value.len() / 2;
        self.rng.fill(&mut self.value[..half]);
        &self.value
    }
}

/// Key `index` as 16 decimal digits (sorted as numbers), without the cost of `format!`.
fn key(mut index: u64) -> [u8; 16] {
    let mut key = [b'0'; 16];
    for digit in key.iter_mut().rev() {
        *digit = b'0' + u8::try_from(index % 10).unwrap_or(0);
        index /= 10;
    }
    key
}

struct Measured {
    elapsed: Duration,
    cpu: f64,
    bytes: u64,
}

/// Where a measurement started.
struct Start {
    bytes: u64,
    cpu: f64,
    at: Instant,
}

impl Start {
    fn now() -> Result<Self, Box<dyn std::error::Error>> {
        Ok(Start {
            bytes: bytes_written()?,
            cpu: cpu_seconds()?,
            at: Instant::now(),
        })
    }

    fn measured(&self, elapsed: Duration) -> Result<Measured, Box<dyn std::error::Error>> {
        Ok(Measured {
            elapsed,
            cpu: cpu_seconds()? - self.cpu,
            bytes: bytes_written()? - self.bytes,
        })
    }
}

fn load_with_puts(
    dir: &Path,
    keys: u64,
    value_bytes: usize,
    codec: Option<Compression>,
) -> Result<Measured, Box<dyn std::error::Error>> {
    let db = Db::open(dir, options(codec))?;
    let start = Start::now()?;
    let mut values = Values::new(value_bytes);
    let write_options = WriteOptions {
        durability: Some(Durability::Buffered),
    };
    let id = db.default_keyspace().id();
    let mut batch = WriteBatch::new();
    for index in 0..keys {
        batch.put(id, &key(index), values.next())?;
        if batch.count() as u64 == BATCH {
            db.write(std::mem::take(&mut batch), &write_options)?;
        }
    }
    if !batch.is_empty() {
        db.write(batch, &write_options)?;
    }
    db.flush()?;
    db.wait_for_background_work()?;
    let measured = start.measured(start.at.elapsed())?;
    check(&db, keys)?;
    db.close()?;
    Ok(measured)
}

/// Writes keys `range` into files of about `FILE_BYTES` named `{prefix}-NNNN.sst`.
fn write_files(
    external: &Path,
    prefix: usize,
    range: std::ops::Range<u64>,
    value_bytes: usize,
    codec: Option<Compression>,
) -> Result<Vec<PathBuf>, String> {
    let keyspace_options = options(codec).default_keyspace;
    let mut values = Values::new(value_bytes);
    let mut files: Vec<PathBuf> = Vec::new();
    let mut writer: Option<TableFileWriter> = None;
    for index in range {
        if writer.is_none() {
            let path = external.join(format!("{prefix}-{:04}.sst", files.len()));
            files.push(path.clone());
            writer = Some(
                TableFileWriter::create(&path, &options(codec), &keyspace_options)
                    .map_err(|e| e.to_string())?,
            );
        }
        let Some(current) = writer.as_mut() else {
            continue;
        };
        current
            .put(&key(index), values.next())
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

fn load_with_ingest(
    dir: &Path,
    external: &Path,
    keys: u64,
    value_bytes: usize,
    codec: Option<Compression>,
    writers: u64,
) -> Result<(Measured, usize), Box<dyn std::error::Error>> {
    let db = Db::open(dir, options(codec))?;
    fs::create_dir_all(external)?;
    let start = Start::now()?;
    // Each writer thread builds the files of one contiguous share of the keys.
    let share = keys.div_ceil(writers);
    let written: Vec<Result<Vec<PathBuf>, String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..writers)
            .map(|t| {
                let range = (t * share).min(keys)..((t + 1) * share).min(keys);
                let prefix = usize::try_from(t).unwrap_or(usize::MAX);
                scope.spawn(move || write_files(external, prefix, range, value_bytes, codec))
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
    let written = start.at.elapsed();
    db.ingest(
        &[IngestArg {
            keyspace: db.default_keyspace(),
            files: files.clone(),
        }],
        IngestOptions { move_files: true },
    )?;
    let measured = start.measured(start.at.elapsed())?;
    let elapsed = measured.elapsed;
    println!(
        "  (ingest: files written by {writers} threads in {:.2} s, Db::ingest took {:.2} s)",
        written.as_secs_f64(),
        elapsed.saturating_sub(written).as_secs_f64()
    );
    for file in &files {
        fs::remove_file(file)?;
    }
    check(&db, keys)?;
    db.close()?;
    Ok((measured, files.len()))
}

fn options(codec: Option<Compression>) -> Options {
    let mut options = Options {
        durability: Durability::Buffered,
        ..Options::default()
    };
    if let Some(codec) = codec {
        options.default_keyspace = KeyspaceOptions {
            compression: codec,
            compression_per_level: Vec::new(),
            bottommost_compression: Some(codec),
            ..KeyspaceOptions::default()
        };
    }
    options
}

/// Spot-checks that the first, middle and last keys are there.
fn check(db: &Db, keys: u64) -> Result<(), Box<dyn std::error::Error>> {
    for index in [0, keys / 2, keys - 1] {
        if db.get(&key(index))?.is_none() {
            return Err(format!("key {index} is missing after the load").into());
        }
    }
    Ok(())
}

#[allow(clippy::cast_precision_loss)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or("usage: ingest_bench DIR [KEYS] [VALUE_BYTES]")?,
    );
    let keys: u64 = args.next().map_or(Ok(10_000_000), |a| a.parse())?;
    let value_bytes: usize = args.next().map_or(Ok(100), |a| a.parse())?;
    let codec: Option<Compression> = args
        .next()
        .map(|name| Compression::from_name(&name).ok_or(format!("unknown codec {name}")))
        .transpose()?;
    let writers: u64 = std::env::var("INGEST_WRITERS").map_or(Ok(2), |w| w.parse())?;
    if keys == 0 || writers == 0 {
        return Err("KEYS and INGEST_WRITERS must be at least 1".into());
    }
    if dir.exists() && fs::read_dir(&dir)?.next().is_some() {
        return Err(format!("{} is not empty", dir.display()).into());
    }
    let user_bytes = keys * (16 + value_bytes as u64);
    println!(
        "load {keys} sorted keys (16 B keys, {value_bytes} B values, {:.1} MiB of user data), \
         codec {}",
        user_bytes as f64 / f64::from(1 << 20),
        codec.map_or("default (zstd bottommost)", Compression::name)
    );
    let report = |name: &str, m: &Measured| {
        println!(
            "  {name:<7} {:>8.2} s ({:>6.2} s CPU)  {:>8.1} MiB/s  wrote {:>8.1} MiB ({:.2}x the \
             user data)",
            m.elapsed.as_secs_f64(),
            m.cpu,
            user_bytes as f64 / f64::from(1 << 20) / m.elapsed.as_secs_f64(),
            m.bytes as f64 / f64::from(1 << 20),
            m.bytes as f64 / user_bytes as f64
        );
    };
    let puts = load_with_puts(&dir.join("puts"), keys, value_bytes, codec)?;
    report("puts", &puts);
    let (ingest, files) = load_with_ingest(
        &dir.join("ingest"),
        &dir.join("external"),
        keys,
        value_bytes,
        codec,
        writers,
    )?;
    report("ingest", &ingest);
    println!(
        "  ingest used {files} files; it is {:.2}x faster ({:.2}x less CPU) and writes {:.2}x \
         the bytes of puts",
        puts.elapsed.as_secs_f64() / ingest.elapsed.as_secs_f64(),
        puts.cpu / ingest.cpu,
        ingest.bytes as f64 / puts.bytes as f64
    );
    Ok(())
}
