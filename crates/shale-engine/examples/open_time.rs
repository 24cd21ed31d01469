//! Open time after a crash: how long `Db::open` takes to recover N MB of unflushed WAL, on the
//! real file system.
//!
//! ```text
//! cargo run --release -p shale-engine --example open_time -- [--dir PATH] [--sizes 64,128,256]
//!     [--value-size 100] [--repeat 3]
//! ```
//!
//! For each size a child process (this program with `--fill`) opens a database whose memtable
//! is large enough that nothing is flushed, writes batches of 100 puts (16-byte random keys,
//! random values) until the WALs hold the size asked for, makes them durable with a final
//! `sync` write, and exits without closing the database: a crash after the data reached the
//! WAL. That directory is kept as a pristine copy; each repetition copies it (so the WAL is in
//! the page cache, as after a process crash, not a machine restart) and times `Db::open`,
//! which replays the WAL into memtables (sorted once and bulk-built, not inserted one by one),
//! records where each WAL ends in the MANIFEST and returns; the replayed memtables are flushed
//! by the background afterwards.
//!
//! Columns (each the median of the repetitions): `open` is `Db::open`; `first write` is a
//! `Sync` put right after it returns (writes do not wait for the replayed data's flush);
//! `flushed` is how long `Db::flush` then takes to finish the background flush of what was
//! replayed. The split is measured outside the engine with the same public pieces recovery
//! uses, on the pristine WALs: `read` is reading the records (`LogReader`); `build` is
//! reading, decoding, sorting (2 threads) and bulk-building the memtable
//! (`MemTable::from_unsorted`), as recovery replays; `memtable MiB` is that memtable's memory.
//! All file operations go through `shale_fs::OsFs`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::inspect::wal::format::parse_log_file_name;
use shale_engine::inspect::wal::{LogReader, RecoveryMode};
use shale_engine::testing::{MemTable, MemTableEntry};
use shale_engine::{Db, Durability, Options, WriteBatch, WriteOptions};
use shale_fs::{FileSystem, OsFs};
use shale_sst::BytewiseComparator;

/// Puts per batch while filling.
const BATCH: usize = 100;

#[derive(Debug)]
struct Config {
    dir: PathBuf,
    sizes_mb: Vec<u64>,
    value_size: usize,
    repeat: usize,
}

fn usage(problem: &str) -> ! {
    eprintln!("open_time: {problem}");
    eprintln!("usage: open_time [--dir PATH] [--sizes 64,128,256] [--value-size 100] [--repeat 3]");
    std::process::exit(2)
}

fn parse_args(args: &[String]) -> Config {
    let mut config = Config {
        dir: PathBuf::from("shale-data/open-time"),
        sizes_mb: vec![64, 128, 256],
        value_size: 100,
        repeat: 3,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else {
            usage(&format!("{flag} needs a value"))
        };
        let bad = || -> ! { usage(&format!("bad value {value:?} for {flag}")) };
        match flag.as_str() {
            "--dir" => config.dir = PathBuf::from(value),
            "--sizes" => {
                config.sizes_mb = value
                    .split(',')
                    .map(|s| s.trim().parse().unwrap_or_else(|_| bad()))
                    .collect();
            }
            "--value-size" => config.value_size = value.parse().unwrap_or_else(|_| bad()),
            "--repeat" => config.repeat = value.parse().unwrap_or_else(|_| bad()),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    if config.repeat == 0 || config.sizes_mb.contains(&0) {
        usage("--repeat and every size must be positive");
    }
    config
}

/// Options under which `size_mb` of WAL never fills a memtable. The keyspace options are
/// persisted, so the reopen uses the same ones.
fn db_options(size_mb: u64) -> Options {
    let mut options = Options::default();
    // A memtable takes more memory than the WAL bytes it holds (skiplist links, arena slack).
    options.default_keyspace.write_buffer_size = ((size_mb as usize) << 21).max(512 << 20);
    options.default_keyspace.max_write_buffer_number = 2;
    options
}

fn wal_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = OsFs::new()
        .list(dir)
        .expect("list the database directory")
        .into_iter()
        .filter(|name| parse_log_file_name(name).is_some())
        .map(|name| dir.join(name))
        .collect();
    files.sort();
    files
}

fn wal_bytes(dir: &Path) -> u64 {
    let fs = OsFs::new();
    wal_files(dir).iter().map(|p| fs.size(p).unwrap_or(0)).sum()
}

/// The child: fills `dir` with `size_mb` of WAL, syncs, and exits without closing.
fn fill(dir: &Path, size_mb: u64, value_size: usize) -> ! {
    let db = Db::open(dir, db_options(size_mb)).expect("open the database to fill");
    let keyspace = db.default_keyspace().id();
    let buffered = WriteOptions {
        durability: Some(Durability::Buffered),
    };
    let mut rng = SmallRng::seed_from_u64(size_mb);
    let mut value = vec![0u8; value_size];
    let mut entries = 0u64;
    let target = size_mb << 20;
    let mut written = 0;
    while written < target {
        for _ in 0..64 {
            let mut batch = WriteBatch::new();
            for _ in 0..BATCH {
                let key: [u8; 16] = rng.gen();
                rng.fill(&mut value[..]);
                batch.put(keyspace, &key, &value).expect("valid put");
            }
            db.write(batch, &buffered).expect("fill write");
            entries += BATCH as u64;
        }
        written = wal_bytes(dir);
    }
    // A synced write makes every earlier WAL record durable too.
    let mut batch = WriteBatch::new();
    batch.put(keyspace, b"last", b"write").expect("valid put");
    db.write(batch, &WriteOptions::sync())
        .expect("final sync write");
    entries += 1;
    let tables: usize = db
        .level_file_counts(&db.default_keyspace())
        .expect("level counts")
        .iter()
        .sum();
    assert_eq!(
        tables, 0,
        "a flush ran while filling; raise write_buffer_size"
    );
    println!("{entries}");
    // The crash: no close, no drop, no final WAL sync beyond the one above.
    std::mem::forget(db);
    std::process::exit(0)
}

/// Empties `dir` (its files; Shale's directories are flat), creating it if needed.
fn fresh_dir(dir: &Path) {
    let fs = OsFs::new();
    fs.create_dir_all(dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    for name in fs.list(dir).expect("list a directory") {
        fs.remove(&dir.join(&name))
            .unwrap_or_else(|e| panic!("cannot remove {name}: {e}"));
    }
}

fn copy_dir(from: &Path, to: &Path) {
    let fs = OsFs::new();
    fresh_dir(to);
    let mut buffer = vec![0u8; 1 << 20];
    for name in fs.list(from).expect("list the pristine copy") {
        let source = fs
            .open_read(&from.join(&name))
            .expect("open a file to copy");
        let size = source.size().expect("size of a file to copy");
        let mut target = fs.create(&to.join(&name)).expect("create a copy");
        let mut offset = 0;
        while offset < size {
            let len = (size - offset).min(buffer.len() as u64) as usize;
            source
                .read_exact_at(offset, &mut buffer[..len])
                .expect("read a file to copy");
            target.append(&buffer[..len]).expect("write a copy");
            offset += len as u64;
        }
        target.flush().expect("write a copy");
    }
}

/// What the recovery steps cost when run one by one outside the engine.
#[derive(Debug, Default)]
struct Split {
    read: Duration,
    build: Duration,
    memtable_bytes: usize,
}

fn measure_split(pristine: &Path) -> Split {
    let fs = OsFs::new();
    let mut split = Split::default();
    // Reading alone.
    let start = Instant::now();
    let mut records = 0u64;
    for path in &wal_files(pristine) {
        let mut reader = open_log(&fs, path);
        while let Some((record, _)) = reader.read_record().expect("read the WAL") {
            records += record.len() as u64;
        }
    }
    split.read = start.elapsed();
    assert!(records > 0);
    // Reading, decoding, sorting and bulk-building, as recovery replays.
    let start = Instant::now();
    let mut batches = Vec::new();
    for path in &wal_files(pristine) {
        let mut reader = open_log(&fs, path);
        while let Some((record, offset)) = reader.read_record().expect("read the WAL") {
            let version = reader.format_version();
            let batch = WriteBatch::from_wal_record(record, version, path, offset);
            batches.push(batch.expect("decode"));
        }
    }
    let entries: Vec<MemTableEntry<'_>> = batches
        .iter()
        .flat_map(WriteBatch::iter)
        .map(|e| MemTableEntry {
            seqno: e.seqno,
            kind: e.kind,
            user_key: e.key,
            value: e.value,
        })
        .collect();
    let mem = MemTable::from_unsorted(Arc::new(BytewiseComparator), 0, usize::MAX, 0, &entries, 2)
        .expect("bulk-build the memtable");
    split.build = start.elapsed();
    split.memtable_bytes = mem.approximate_memory_usage();
    assert_eq!(entries.len() as u64, mem.num_entries());
    split
}

/// A reader of WAL `path`, whose log number is in its name (`000012.wal`).
fn open_log(fs: &OsFs, path: &Path) -> LogReader {
    let number = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("unexpected WAL name {}", path.display()));
    let file = fs.open_read(path).expect("open the WAL");
    LogReader::new(file, number, RecoveryMode::default()).expect("read the WAL header")
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

fn millis(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1000.0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--fill") {
        let size_mb = args[2].parse().expect("SIZE_MB");
        let value_size = args[3].parse().expect("VALUE_SIZE");
        fill(Path::new(&args[1]), size_mb, value_size);
    }
    let config = parse_args(&args);
    let exe = std::env::current_exe().expect("path of this program");
    println!(
        "open time after a crash: 16-byte keys, {}-byte values, batches of {BATCH}, median of {} \
         opens per size, WAL in the page cache, dir {}",
        config.value_size,
        config.repeat,
        config.dir.display()
    );
    println!();
    println!(
        "| WAL MiB | entries | open ms | first write ms | flushed ms | read ms | build ms | \
         memtable MiB | opens (ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let pristine = config.dir.join("pristine");
    let work = config.dir.join("work");
    for &size_mb in &config.sizes_mb {
        fresh_dir(&pristine);
        let output = Command::new(&exe)
            .args([
                "--fill",
                pristine.to_str().expect("UTF-8 path"),
                &size_mb.to_string(),
                &config.value_size.to_string(),
            ])
            .output()
            .expect("run the fill child");
        assert!(
            output.status.success(),
            "fill failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let entries: u64 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("entry count from the fill child");
        let wal = wal_bytes(&pristine);
        let mut opens = Vec::new();
        let mut first_writes = Vec::new();
        let mut flushes = Vec::new();
        let mut splits = Vec::new();
        for _ in 0..config.repeat {
            copy_dir(&pristine, &work);
            let start = Instant::now();
            let db = Db::open(&work, db_options(size_mb)).expect("recovering open");
            opens.push(start.elapsed());
            let start = Instant::now();
            db.put(b"after", b"open").expect("first write");
            first_writes.push(start.elapsed());
            assert_eq!(db.get(b"last").expect("read"), Some(b"write".to_vec()));
            let start = Instant::now();
            db.flush().expect("flush the replayed memtables");
            flushes.push(start.elapsed());
            db.close().expect("close");
            splits.push(measure_split(&pristine));
        }
        let pick = |f: fn(&Split) -> Duration| median(splits.iter().map(f).collect());
        let memtable_bytes = splits.iter().map(|s| s.memtable_bytes).max().unwrap_or(0);
        println!(
            "| {:.1} | {entries} | {} | {} | {} | {} | {} | {:.1} | {} |",
            wal as f64 / f64::from(1 << 20),
            millis(median(opens.clone())),
            millis(median(first_writes)),
            millis(median(flushes)),
            millis(pick(|s| s.read)),
            millis(pick(|s| s.build)),
            memtable_bytes as f64 / f64::from(1 << 20),
            opens
                .iter()
                .map(|d| millis(*d))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for dir in [&pristine, &work] {
        fresh_dir(dir);
    }
}
