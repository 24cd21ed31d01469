//! The model test's machinery, shared by `tests/model.rs` (random runs) and
//! `tests/model_regressions.rs` (the sequences those runs found).
//!
//! An [`Op`] is one concrete step (keys, values and iterator moves spelled out), so a failing
//! random run is a list of ops that replays without the generator, shrinks by deleting ops, and
//! prints as Rust code that pastes into a regression test.
//!
//! The oracle (`oracle::Model`) is a `BTreeMap` per keyspace. Values are named by `(id, len)`
//! and spelled by [`value`], so the oracle and its many clones (snapshots, crash history) stay
//! small. `run::Run` applies ops to a database and to the oracle; `generate` draws them.
//!
//! What is checked:
//! 1. Every get, multi-get and iterator position equals the oracle's answer, now or at a
//!    snapshot (the oracle as it was when the snapshot was taken); an open iterator keeps its
//!    view while writes and flushes go on; an iterator in prefix mode shows what
//!    `oracle::Cursor` derives from the documented prefix rules.
//! 2. After `close` and `open` the database equals the oracle (scans and point lookups of the
//!    whole key space), whatever the durability, even with another prefix extractor.
//! 3. After a crash (`MemFs::crash_image`, unsynced bytes dropped or torn) the database equals
//!    the oracle as it was at some step since the last point at which every acknowledged write
//!    was durable: under `Durability::Sync` that is the last step, under `Flush` and `Buffered`
//!    the last `Db::flush`, sync write, reopen or crash. Batches are all or nothing.
//! 4. While several threads write their own keys (with mixed durability) and another flushes,
//!    a reader sees the keys nobody writes unchanged; afterwards the database holds every write.
//! 5. Once background work is idle, level 0 is below its compaction trigger.
//! 6. No call fails (a reversed range deletion must fail, with `InvalidArgument`), nothing
//!    panics, and nothing hangs (a watchdog aborts after `SHALE_MODEL_HANG_SECS`, default 60).

#![allow(dead_code)] // Each test binary uses a different subset.

mod generate;
mod oracle;
mod run;

use std::fmt;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use shale_engine::{Durability, KeyspaceOptions, Options};
use shale_fs::MemFs;
use shale_sst::{ChecksumType, Compression, FixedPrefix};

pub use generate::key_space;
use generate::Generator;
use run::Run;

/// Keyspaces by index: 0 always exists, 1 is created at the start, 2 comes and goes.
pub const KEYSPACES: [&str; 3] = ["default", "second", "third"];

/// Snapshot slots an op can name.
const SNAPSHOT_SLOTS: u8 = 4;

/// One option set the random runs use.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: &'static str,
    pub write_buffer_size: usize,
    pub max_write_buffer_number: usize,
    pub block_size: usize,
    pub compression: Compression,
    pub bloom_bits_per_key: u32,
    pub level0_compaction_trigger: usize,
    /// Length of the `FixedPrefix` extractor, if any.
    pub prefix_len: Option<usize>,
    pub durability: Durability,
    pub sync_interval: Duration,
    pub checksum: ChecksumType,
    pub block_cache_capacity: usize,
    pub max_open_files: usize,
    /// Longest value the generator writes.
    pub max_value_len: u16,
    /// Keys per two-byte group of the key space (12 groups; at most 100).
    pub keys_per_group: u8,
    /// Key-value separation: blob files for values of at least this many bytes (small blob
    /// files, garbage collection of the oldest half, forced at 30% garbage).
    pub blob_values: Option<u64>,
    /// Level sizes, output file sizes and codecs by level.
    pub leveling: Leveling,
}

/// How the levels are shaped: the default puts everything in the last level (the base size is
/// far above what a run writes) with `Config::compression` at every level; tiny sizes make
/// compactions fill L2 and deeper.
#[derive(Debug, Clone)]
pub struct Leveling {
    pub target_file_size: u64,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: u32,
    /// Use the default codecs by level (none, none, lz4, zstd at the bottom) instead of
    /// `Config::compression` everywhere.
    pub per_level_compression: bool,
    /// Some run must end with at least this many levels below L0 holding tables.
    pub min_deeper_levels: usize,
    /// `KeyspaceOptions::max_subcompactions`.
    pub max_subcompactions: usize,
    /// `KeyspaceOptions::zstd_max_dict_bytes` (used with `per_level_compression`'s zstd).
    pub zstd_max_dict_bytes: usize,
}

impl Default for Leveling {
    fn default() -> Self {
        Leveling {
            target_file_size: 64 << 10,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10,
            per_level_compression: false,
            min_deeper_levels: 0,
            max_subcompactions: 1,
            zstd_max_dict_bytes: 0,
        }
    }
}

impl Config {
    /// A plain configuration for regression tests: small memtables, every feature on.
    pub fn small() -> Config {
        Config {
            name: "small",
            write_buffer_size: 4 << 10,
            max_write_buffer_number: 2,
            block_size: 256,
            compression: Compression::None,
            bloom_bits_per_key: 10,
            level0_compaction_trigger: 2,
            prefix_len: None,
            durability: Durability::Sync,
            sync_interval: Duration::from_millis(10),
            checksum: ChecksumType::Xxh3,
            block_cache_capacity: 1 << 20,
            max_open_files: 100,
            max_value_len: 100,
            keys_per_group: 24,
            blob_values: None,
            leveling: Leveling::default(),
        }
    }

    fn keyspace_options(&self) -> KeyspaceOptions {
        let leveling = &self.leveling;
        let defaults = KeyspaceOptions::default();
        let (compression_per_level, bottommost_compression) = if leveling.per_level_compression {
            (
                defaults.compression_per_level,
                defaults.bottommost_compression,
            )
        } else {
            (Vec::new(), None)
        };
        KeyspaceOptions {
            compression_per_level,
            bottommost_compression,
            max_bytes_for_level_base: leveling.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: leveling.max_bytes_for_level_multiplier,
            write_buffer_size: self.write_buffer_size,
            max_write_buffer_number: self.max_write_buffer_number,
            compression: self.compression,
            block_size: self.block_size,
            bloom_bits_per_key: self.bloom_bits_per_key,
            prefix_extractor: self
                .prefix_len
                .map(|len| Arc::new(FixedPrefix::new(len)) as _),
            level0_compaction_trigger: self.level0_compaction_trigger,
            target_file_size: leveling.target_file_size,
            checksum: self.checksum,
            max_subcompactions: leveling.max_subcompactions,
            zstd_max_dict_bytes: leveling.zstd_max_dict_bytes,
            enable_blob_files: self.blob_values.is_some(),
            min_blob_size: self.blob_values.unwrap_or(4096),
            blob_file_size: 8 << 10,
            blob_compression: self.compression,
            blob_garbage_collection_age_cutoff: 0.5,
            blob_garbage_collection_force_threshold: 0.3,
            // A filter of a few lines for these small memtables: lookups lean on it often.
            memtable_bloom_size_ratio: 0.1,
            ..KeyspaceOptions::default()
        }
    }

    /// The options of keyspace `ks`: "second" differs in its table format and has no memtable
    /// filter (persisted in the OPTIONS file, so it must survive reopens); the prefix
    /// extractor is always the database's, as reopens give every keyspace that one.
    fn keyspace_options_for(&self, ks: u8) -> KeyspaceOptions {
        let mut options = self.keyspace_options();
        if ks == 1 {
            options.block_size = (self.block_size * 2).min(8 << 10);
            options.bloom_bits_per_key = if self.bloom_bits_per_key == 0 { 6 } else { 0 };
            options.compression = match self.compression {
                Compression::None => Compression::Lz4,
                _ => Compression::None,
            };
            options.level0_compaction_trigger = self.level0_compaction_trigger + 1;
            options.memtable_bloom_size_ratio = 0.0;
        }
        options
    }

    fn options(&self, fs: &MemFs) -> Options {
        Options {
            durability: self.durability,
            sync_interval: self.sync_interval,
            block_cache_capacity: self.block_cache_capacity,
            max_open_files: self.max_open_files,
            default_keyspace: self.keyspace_options(),
            file_system: Arc::new(fs.clone()),
            ..Options::default()
        }
    }

    /// The prefix of `key` by this configuration's extractor.
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        self.prefix_len.and_then(|len| key.get(..len))
    }
}

/// A key. Its `Debug` form is the Rust expression that builds it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct K(pub Vec<u8>);

/// Builds a [`K`] (what `K`'s `Debug` form calls).
pub fn k(bytes: &[u8]) -> K {
    K(bytes.to_vec())
}

impl fmt::Debug for K {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "k(b\"{}\")", self.0.escape_ascii())
    }
}

/// The bytes of value `id` of `len` bytes: distinct ids give distinct values, except that
/// every `len` of 0 is the empty value.
pub fn value(id: u32, len: u16) -> Vec<u8> {
    if len == 0 {
        return Vec::new();
    }
    let mut bytes = format!("v{id}.").into_bytes();
    let len = usize::from(len).max(bytes.len());
    let mut fill = id.wrapping_mul(2_654_435_761);
    while bytes.len() < len {
        fill = fill.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        // Any byte, so that compression cannot shrink the tables much.
        bytes.push((fill >> 16) as u8);
    }
    bytes
}

/// One step of a run.
#[derive(Debug, Clone)]
pub enum Op {
    Put {
        ks: u8,
        key: K,
        value: u32,
        len: u16,
    },
    Delete {
        ks: u8,
        key: K,
    },
    DeleteRange {
        ks: u8,
        start: K,
        end: K,
    },
    /// A `WriteBatch`; `sync` writes it with `WriteOptions::sync()`.
    Batch {
        sync: bool,
        entries: Vec<BatchOp>,
    },
    Get {
        ks: u8,
        key: K,
        snapshot: Option<u8>,
    },
    MultiGet {
        ks: u8,
        keys: Vec<K>,
        snapshot: Option<u8>,
    },
    TakeSnapshot {
        slot: u8,
    },
    ReleaseSnapshot {
        slot: u8,
    },
    /// An iterator with the given options, moved step by step; every position is checked.
    Iterate {
        ks: u8,
        snapshot: Option<u8>,
        lower: Option<K>,
        upper: Option<K>,
        prefix: bool,
        moves: Vec<Move>,
    },
    /// Full forward and backward scans.
    Scan {
        ks: u8,
        snapshot: Option<u8>,
    },
    Flush,
    WaitIdle,
    /// `Db::compact_range` over `[start, end]` (flushes first, so everything becomes durable).
    CompactRange {
        ks: u8,
        start: Option<K>,
        end: Option<K>,
    },
    Reopen,
    /// Power cut (unsynced bytes dropped), then open the image.
    Crash,
    /// Power cut that keeps a random part of each file's unsynced tail, sometimes torn
    /// (`CrashMode::Torn`), then open the image.
    TornCrash {
        seed: u64,
    },
    CreateThird,
    DropThird,
    /// Puts and deletes from `threads` threads at once, each on its own keys (every
    /// `threads`-th key of the key space) with mixed durability, and `flushes` flushes from
    /// another thread; values are numbered from `first_value`. Each writer's last write is
    /// synced, so all of them are durable at the end.
    ConcurrentWrites {
        ks: u8,
        threads: u8,
        writes: u16,
        flushes: u8,
        first_value: u32,
        seed: u64,
    },
    /// Reopens with another prefix extractor (`None`: none). Tables written with the old one
    /// are still read, without their prefix filter.
    ChangePrefix {
        len: Option<usize>,
    },
    /// Writes external tables with `TableFileWriter` and ingests them all at once
    /// (`Db::ingest`): per keyspace, files of strictly increasing keys that do not overlap each
    /// other; `move_files` hard-links them in.
    Ingest {
        files: Vec<(u8, Vec<Vec<IngestOp>>)>,
        move_files: bool,
    },
}

/// One entry of an external table of [`Op::Ingest`].
#[derive(Debug, Clone)]
#[allow(clippy::enum_variant_names)] // Distinct from `Op`'s, so op lists can import both.
pub enum IngestOp {
    IngestPut { key: K, value: u32, len: u16 },
    IngestDelete { key: K },
    IngestDeleteRange { start: K, end: K },
}

/// One entry of [`Op::Batch`].
#[derive(Debug, Clone)]
#[allow(clippy::enum_variant_names)] // Distinct from `Op`'s, so op lists can import both.
pub enum BatchOp {
    BatchPut {
        ks: u8,
        key: K,
        value: u32,
        len: u16,
    },
    BatchDelete {
        ks: u8,
        key: K,
    },
    BatchDeleteRange {
        ks: u8,
        start: K,
        end: K,
    },
}

/// One iterator call.
#[derive(Debug, Clone)]
pub enum Move {
    SeekToFirst,
    SeekToLast,
    Seek(K),
    SeekForPrev(K),
    Next,
    Prev,
    /// A write to the iterator's keyspace while it is open (it must not see it).
    PutDuring {
        key: K,
        value: u32,
        len: u16,
    },
    DeleteRangeDuring {
        start: K,
        end: K,
    },
    /// `Db::flush` while the iterator is open (compactions follow).
    FlushDuring,
}

/// What a run saw, for the summary a test prints.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub ops: usize,
    /// Table files of the default keyspace at the end: in L0, and below it.
    pub level0_files: usize,
    pub deeper_files: usize,
    /// Levels below L0 holding tables at the end.
    pub deeper_levels: usize,
    pub reopens: usize,
    pub crashes: usize,
    pub ingested_files: usize,
    /// Blob files written and bytes relocated by blob garbage collection, since the last
    /// open of the run.
    pub blob_files_written: u64,
    pub blob_bytes_relocated: u64,
}

/// A failing run: the ops that reproduce it and what went wrong.
#[derive(Debug)]
pub struct Failure {
    pub ops: Vec<Op>,
    pub message: String,
}

fn printable(bytes: &[u8]) -> String {
    format!("\"{}\"", bytes.escape_ascii())
}

/// Runs `f`, turning a panic into an error message.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .map_or_else(|| "panic".to_owned(), |m| format!("panic: {m}"))),
    }
}

/// Aborts the process, saying where, when a run stops making progress: a hang (a lost
/// wakeup, a deadlock) is a failure too, and the test harness alone would wait forever.
struct Watchdog {
    beats: mpsc::Sender<String>,
}

impl Watchdog {
    fn new(label: String) -> Watchdog {
        let limit = Duration::from_secs(env_usize("SHALE_MODEL_HANG_SECS", 60) as u64);
        let (beats, received) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut last = String::from("opening");
            loop {
                match received.recv_timeout(limit) {
                    Ok(beat) => last = beat,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        eprintln!("model test hung for {limit:?}: {label}\nat: {last}");
                        std::process::abort();
                    }
                }
            }
        });
        Watchdog { beats }
    }

    fn beat(&self, at: impl FnOnce() -> String) {
        let _ = self.beats.send(at());
    }
}

/// Replays `ops` on a fresh database, then checks, closes, reopens and checks it.
pub fn run_ops(config: &Config, ops: &[Op]) -> Result<Stats, String> {
    let watchdog = Watchdog::new(format!(
        "option set {}, replaying:\n{}",
        config.name,
        render(ops)
    ));
    guarded(|| {
        let mut run = Run::open(config)?;
        for (index, op) in ops.iter().enumerate() {
            watchdog.beat(|| format!("op #{index} {op:?}"));
            run.apply(op)
                .map_err(|e| format!("op #{index} {op:?}: {e}"))?;
        }
        watchdog.beat(|| "the final check, close and reopen".to_owned());
        run.finish()
    })
}

/// [`run_ops`] for a regression test: panics with the message on failure.
pub fn replay(config: &Config, ops: &[Op]) {
    if let Err(message) = run_ops(config, ops) {
        panic!("{} ops on {}: {message}", ops.len(), config.name);
    }
}

/// Runs `steps` random ops from `seed`; a failure carries the ops that led to it.
pub fn run_random(config: &Config, seed: u64, steps: usize) -> Result<Stats, Failure> {
    let mut ops = Vec::with_capacity(steps);
    let watchdog = Watchdog::new(format!(
        "option set {}, seed {seed}, {steps} steps",
        config.name
    ));
    let result = guarded(|| {
        let mut generator = Generator {
            rng: SmallRng::seed_from_u64(seed),
            keys: key_space(config.keys_per_group),
            next_value: 0,
            max_value_len: config.max_value_len,
            change_prefix: config.prefix_len.is_some(),
        };
        let mut run = Run::open(config)?;
        for index in 0..steps {
            let op = generator.op(&run);
            watchdog.beat(|| format!("op #{index} {op:?}"));
            ops.push(op.clone());
            run.apply(&op)
                .map_err(|e| format!("op #{index} {op:?}: {e}"))?;
        }
        watchdog.beat(|| "the final check, close and reopen".to_owned());
        run.finish()
    });
    result.map_err(|message| Failure { ops, message })
}

/// Deletes ops (and moves and entries inside ops) while the run still fails, for at most
/// `budget`. Returns the smallest failing sequence found and its failure.
pub fn shrink(config: &Config, failure: Failure, budget: Duration) -> Failure {
    let deadline = Instant::now() + budget;
    let mut best = failure;
    let fails = |ops: &[Op]| run_ops(config, ops).err();
    // Whole ops, in halving chunks.
    let mut chunk = best.ops.len().div_ceil(2).max(1);
    loop {
        let mut at = 0;
        while at < best.ops.len() && Instant::now() < deadline {
            let mut candidate = best.ops.clone();
            candidate.drain(at..(at + chunk).min(candidate.len()));
            match fails(&candidate) {
                Some(message) => {
                    best = Failure {
                        ops: candidate,
                        message,
                    }
                }
                None => at += chunk,
            }
        }
        if chunk == 1 || Instant::now() >= deadline {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    // Parts of the ops that remain.
    for index in 0..best.ops.len() {
        let mut part = 0;
        while Instant::now() < deadline {
            let mut candidate = best.ops.clone();
            let removed = match &mut candidate[index] {
                Op::Batch { entries: list, .. } if part < list.len() && list.len() > 1 => {
                    list.remove(part);
                    true
                }
                Op::Iterate { moves: list, .. } if part < list.len() && list.len() > 1 => {
                    list.remove(part);
                    true
                }
                Op::MultiGet { keys: list, .. } if part < list.len() && list.len() > 1 => {
                    list.remove(part);
                    true
                }
                _ => false,
            };
            if !removed {
                break;
            }
            match fails(&candidate) {
                Some(message) => {
                    best = Failure {
                        ops: candidate,
                        message,
                    }
                }
                None => part += 1,
            }
        }
    }
    best
}

/// `ops` as the Rust code of a regression test body.
pub fn render(ops: &[Op]) -> String {
    let mut out = String::from("&[\n");
    for op in ops {
        // `Debug` prints lists as `[..]`; a `Vec` field needs `vec![..]`.
        let line = format!("{op:?}")
            .replace("entries: [", "entries: vec![")
            .replace("moves: [", "moves: vec![")
            .replace("keys: [", "keys: vec![");
        let _ = writeln!(out, "    {line},");
    }
    out.push(']');
    out
}

/// Reads a count from the environment.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The random runs of one option set (see `tests/model.rs` for the environment variables).
pub fn run_config(config: &Config, default_cases: usize, default_steps: usize) {
    let steps = env_usize("SHALE_MODEL_STEPS", default_steps);
    let seeds: Vec<u64> = if let Ok(seed) = std::env::var("SHALE_MODEL_SEED") {
        vec![seed.parse().expect("SHALE_MODEL_SEED is a u64")]
    } else {
        let base = env_usize("SHALE_MODEL_SEED_BASE", 0) as u64;
        let cases = env_usize("SHALE_MODEL_CASES", default_cases) as u64;
        (base..base + cases).collect()
    };
    let started = Instant::now();
    let mut total = Stats::default();
    let mut with_deeper = 0;
    let mut most_deeper_levels = 0;
    for &seed in &seeds {
        match run_random(config, seed, steps) {
            Ok(stats) => {
                total.ops += stats.ops;
                total.reopens += stats.reopens;
                total.crashes += stats.crashes;
                total.ingested_files += stats.ingested_files;
                with_deeper += usize::from(stats.deeper_files > 0);
                total.blob_files_written += stats.blob_files_written;
                total.blob_bytes_relocated += stats.blob_bytes_relocated;
                most_deeper_levels = most_deeper_levels.max(stats.deeper_levels);
            }
            Err(failure) => {
                eprintln!(
                    "model test failed: option set {}, seed {seed}, {steps} steps\n{config:#?}\n\
                     {}\nreplay: SHALE_MODEL_SEED={seed} SHALE_MODEL_STEPS={steps} cargo test \
                     -p shale-engine --test model -- {}\nshrinking...",
                    config.name, failure.message, config.name
                );
                let budget = env_usize("SHALE_MODEL_SHRINK_SECS", 120) as u64;
                let small = shrink(config, failure, Duration::from_secs(budget));
                panic!(
                    "option set {}, seed {seed}: {}\nshrunk to {} ops (replay with \
                     model_harness::replay(&config, OPS)):\n{}",
                    config.name,
                    small.message,
                    small.ops.len(),
                    render(&small.ops)
                );
            }
        }
    }
    eprintln!(
        "model {}: {} seeds x {steps} steps, {} ops ({} reopens, {} crashes, {} files \
         ingested), compacted tables in {with_deeper} runs (at most {most_deeper_levels} levels \
         below L0), {:.1?}",
        config.name,
        seeds.len(),
        total.ops,
        total.reopens,
        total.crashes,
        total.ingested_files,
        started.elapsed()
    );
    if config.blob_values.is_some() {
        eprintln!(
            "model {}: {} blob files written, {} bytes relocated by garbage collection",
            config.name, total.blob_files_written, total.blob_bytes_relocated
        );
    }
    if seeds.len() > 1 && config.blob_values.is_some() {
        assert!(
            total.blob_files_written > 0 && total.blob_bytes_relocated > 0,
            "option set {}: no run wrote blob files and relocated values out of old ones",
            config.name
        );
    }
    if seeds.len() > 1 {
        assert!(
            most_deeper_levels >= config.leveling.min_deeper_levels,
            "option set {}: no run filled {} levels below L0 (at most {most_deeper_levels})",
            config.name,
            config.leveling.min_deeper_levels
        );
    }
}
