//! Large values with and without blob files, after Mark Callaghan's `MyRocks` large-object
//! test (2016): rows with one column of 10,000 to 20,000 bytes whose content is 20%, 45%, 75%
//! or 95% random (the rest a repeated byte). Prints, for blob files on and off (values inline
//! in the tables), inserts per second, the database size against the data compressed with the
//! same codec (each value on its own), and point reads per second while a rate-limited writer
//! overwrites rows. A measurement, never a test.
//!
//! `cargo run --release -p shale-engine --example large_values -- DIR [ROWS] [CODEC]
//! [READ_SECONDS] [WRITER_ROWS_PER_SEC] [ORDER]`
//!
//! `DIR` is scratch space (each run uses and then deletes `DIR/run`). `ROWS` (default 5000)
//! rows of an 8-byte key; `CODEC` (default `zstd`) is the codec of every table level (inline
//! runs) or of blob values (blob runs, whose tables keep the same codec); `READ_SECONDS`
//! (default 5) of point reads by 2 threads while one writer overwrites `WRITER_ROWS_PER_SEC`
//! (default 50) random rows a second. `ORDER` is `seq` (default: keys ascending, an
//! auto-increment primary key, as in the `MyRocks` test) or `random` (the same keys shuffled,
//! so flushed tables overlap and compactions rewrite them).
//!
//! Inserts are single-row `Buffered` puts; the insert time runs to the end of the flush and of
//! every compaction they caused. The database size is every file in the directory after that
//! (tables, blob files, WAL, MANIFEST, OPTIONS). CPU seconds are this process's user plus
//! system time (`/proc/self/stat`), steadier than wall time on a busy machine; bytes written
//! are its `wchar` (`/proc/self/io`) over the inserts, flushes and compactions.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, Durability, KeyspaceOptions, Options};
use shale_fs::{FileSystem, OsFs};
use shale_sst::{Compression, ValueCompressor};

/// CPU seconds (user + system, all threads) of this process so far.
fn cpu_seconds() -> Result<f64, Box<dyn std::error::Error>> {
    let stat = OsFs::new().read_to_string(Path::new("/proc/self/stat"))?;
    let rest = stat.rsplit(')').next().ok_or("odd /proc/self/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).ok_or("no utime")?.parse::<u64>()?
        + fields.get(12).ok_or("no stime")?.parse::<u64>()?;
    #[allow(clippy::cast_precision_loss)]
    Ok(ticks as f64 / 100.0)
}

/// `wchar` of this process: bytes passed to `write` so far (WAL, tables, blob files, ...).
fn bytes_written() -> Result<u64, Box<dyn std::error::Error>> {
    let io = OsFs::new().read_to_string(Path::new("/proc/self/io"))?;
    io.lines()
        .find_map(|line| line.strip_prefix("wchar: "))
        .ok_or("no wchar in /proc/self/io")?
        .trim()
        .parse()
        .map_err(Into::into)
}

/// The value of row `row` (version `version`): 10,000 to 20,000 bytes, `random_percent` of
/// them random, the rest one repeated byte.
fn row_value(row: u64, version: u64, random_percent: u64) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(row.wrapping_mul(1_000_003) ^ version);
    let len = rng.gen_range(10_000..=20_000usize);
    let random = len * usize::try_from(random_percent).unwrap_or(100) / 100;
    let mut value = vec![b'r'; len];
    rng.fill(&mut value[..random]);
    value
}

fn key(row: u64) -> [u8; 8] {
    row.to_be_bytes()
}

fn dir_bytes(dir: &Path) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let fs = OsFs::new();
    let (mut all, mut blobs) = (0, 0);
    for name in fs.list(dir)? {
        let len = fs.size(&dir.join(&name))?;
        all += len;
        if shale_engine::inspect::blob::parse_blob_file_name(&name).is_some() {
            blobs += len;
        }
    }
    Ok((all, blobs))
}

struct RunResult {
    inserts_per_sec: f64,
    insert_cpu: f64,
    insert_written: u64,
    db_bytes: u64,
    blob_bytes: u64,
    reads_per_sec: f64,
}

fn keyspace_options(blobs: bool, codec: Compression) -> KeyspaceOptions {
    KeyspaceOptions {
        compression: codec,
        compression_per_level: Vec::new(),
        bottommost_compression: None,
        zstd_max_dict_bytes: 0,
        enable_blob_files: blobs,
        blob_compression: codec,
        ..KeyspaceOptions::default()
    }
}

fn run(
    dir: &Path,
    blobs: bool,
    codec: Compression,
    random_percent: u64,
    read_seconds: u64,
    writer_rate: u64,
    order: &[u64],
) -> Result<RunResult, Box<dyn std::error::Error>> {
    let rows = order.len() as u64;
    let _ = OsFs::new().remove_dir_all(dir);
    let options = Options {
        durability: Durability::Buffered,
        default_keyspace: keyspace_options(blobs, codec),
        idle_compaction_after: None,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir, options)?);
    let ks = db.default_keyspace();
    let (started, cpu, written) = (Instant::now(), cpu_seconds()?, bytes_written()?);
    for &row in order {
        ks.put(&key(row), &row_value(row, 0, random_percent))?;
    }
    db.flush()?;
    db.wait_for_background_work()?;
    let elapsed = started.elapsed().as_secs_f64();
    let insert_cpu = cpu_seconds()? - cpu;
    let insert_written = bytes_written()? - written;
    let (db_bytes, blob_bytes) = dir_bytes(dir)?;

    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    {
        let (db, stop) = (db.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let ks = db.default_keyspace();
            let mut rng = SmallRng::seed_from_u64(7);
            let mut version = 1;
            let interval = Duration::from_secs_f64(1.0 / writer_rate.max(1) as f64);
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let row = rng.gen_range(0..rows);
                let _ = ks.put(&key(row), &row_value(row, version, random_percent));
                version += 1;
                next += interval;
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
        }));
    }
    for seed in 0..2 {
        let (db, stop, reads) = (db.clone(), stop.clone(), reads.clone());
        threads.push(std::thread::spawn(move || {
            let ks = db.default_keyspace();
            let mut rng = SmallRng::seed_from_u64(100 + seed);
            while !stop.load(Ordering::Relaxed) {
                let row = rng.gen_range(0..rows);
                match ks.get(&key(row)) {
                    Ok(Some(_)) => {
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                    other => panic!("row {row}: {other:?}"),
                }
            }
        }));
    }
    let reading = Instant::now();
    std::thread::sleep(Duration::from_secs(read_seconds));
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().map_err(|_| "a benchmark thread panicked")?;
    }
    #[allow(clippy::cast_precision_loss)]
    let reads_per_sec = reads.load(Ordering::Relaxed) as f64 / reading.elapsed().as_secs_f64();
    drop(ks);
    Arc::try_unwrap(db)
        .map_err(|_| "the database is still shared")?
        .close()?;
    OsFs::new().remove_dir_all(dir)?;
    #[allow(clippy::cast_precision_loss)]
    Ok(RunResult {
        inserts_per_sec: rows as f64 / elapsed,
        insert_cpu,
        insert_written,
        db_bytes,
        blob_bytes,
        reads_per_sec,
    })
}

/// Keys and values compressed one value at a time with `codec`, the floor a store of these
/// rows can reach without cross-value compression.
fn compressed_size(rows: u64, random_percent: u64, codec: Compression) -> u64 {
    let mut compressor = ValueCompressor::new(codec).expect("a codec for values");
    let mut out = Vec::new();
    (0..rows)
        .map(|row| {
            compressor.compress(&row_value(row, 0, random_percent), &mut out);
            8 + out.len() as u64
        })
        .sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = Path::new(
        args.first()
            .ok_or("usage: large_values DIR [ROWS] [CODEC] ...")?,
    );
    let rows: u64 = args.get(1).map_or(Ok(5000), |a| a.parse())?;
    let codec: Compression = args.get(2).map_or(Ok(Compression::Zstd), |a| a.parse())?;
    let read_seconds: u64 = args.get(3).map_or(Ok(5), |a| a.parse())?;
    let writer_rate: u64 = args.get(4).map_or(Ok(50), |a| a.parse())?;
    let random_order = match args.get(5).map_or("seq", String::as_str) {
        "seq" => false,
        "random" => true,
        other => return Err(format!("ORDER is seq or random, not {other}").into()),
    };
    let mut order: Vec<u64> = (0..rows).collect();
    if random_order {
        let mut rng = SmallRng::seed_from_u64(3);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.gen_range(0..=i));
        }
    }
    OsFs::new().create_dir_all(dir)?;
    let load = OsFs::new()
        .read_to_string(Path::new("/proc/loadavg"))
        .unwrap_or_default();
    println!(
        "large values: {rows} rows of 10,000-20,000 bytes in {} order, codec {codec}, reads for \
         {read_seconds} s with a writer at {writer_rate} rows/s; load average {}",
        if random_order { "random" } else { "key" },
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:>7} {:>6} {:>10} {:>9} {:>10} {:>10} {:>11} {:>7} {:>9}",
        "random",
        "blobs",
        "inserts/s",
        "cpu s",
        "db MB",
        "blob MB",
        "data cmp MB",
        "db/cmp",
        "reads/s"
    );
    for random_percent in [20, 45, 75, 95] {
        let compressed = compressed_size(rows, random_percent, codec);
        for blobs in [true, false] {
            let r = run(
                &dir.join("run"),
                blobs,
                codec,
                random_percent,
                read_seconds,
                writer_rate,
                &order,
            )?;
            #[allow(clippy::cast_precision_loss)]
            let mb = |b: u64| b as f64 / 1e6;
            println!(
                "{:>6}% {:>6} {:>10.0} {:>7.2} {:>11.1} {:>9.1} {:>9.1} {:>11.1} {:>7.2} {:>9.0}",
                random_percent,
                if blobs { "on" } else { "off" },
                r.inserts_per_sec,
                r.insert_cpu,
                mb(r.insert_written),
                mb(r.db_bytes),
                mb(r.blob_bytes),
                mb(compressed),
                mb(r.db_bytes) / mb(compressed),
                r.reads_per_sec
            );
        }
    }
    Ok(())
}
