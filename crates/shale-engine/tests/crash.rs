//! Crash tests: run a workload on `MemFs`, cut the file system at its sync points and at random
//! points between them, reopen every crash image and check the durability contract
//! (ARCHITECTURE.md invariant 5, docs/format/wal.md "Recovery modes"):
//!
//! 1. the open succeeds (default `TolerateCorruptedTailRecords`);
//! 2. the recovered state is the state after exactly some prefix of each writer's history: no
//!    partial batch, no resurrected delete, nothing invented;
//! 3. that prefix holds every batch acknowledged under `Sync` before the cut, and every batch
//!    acknowledged before the start of the last WAL sync that completed before the cut (what
//!    `Flush`/`Buffered` promise);
//! 4. with several writers, no batch is in the image while a batch acknowledged before it
//!    started is missing (commit order is a global prefix);
//! 5. the recovered database takes more writes, and a crash right after them recovers again;
//! 6. at every sync point (imaged or not), no WAL but the newest has unsynced bytes once a
//!    newer WAL's name is durable (docs/format/wal.md: a torn tail followed by another WAL
//!    fails the open), checked directly so that it does not depend on where a tear falls.
//!
//! `crash_keyspace_create_and_drop` cuts every sync point of keyspace creations and drops: a
//! keyspace whose creation returned exists until its drop starts, one whose drop returned is
//! gone, and each keeps its acknowledged data.
//!
//! Every batch writes values that name it (`b{writer}.{batch}.{entry}`), so the recovered
//! state tells which batches were applied. A workload uses two keyspaces, 4 KiB memtables and
//! an L0 trigger of 2, so flushes, WAL switches, compactions and MANIFEST writes all happen
//! while it runs; it starts by reopening a database with unflushed WAL data, so the cuts also
//! fall inside recovery. Each image is taken both as `CrashMode::DropUnsynced` and as
//! `CrashMode::Torn`.
//!
//! Scale with environment variables (defaults keep the file at a few seconds):
//! - `SHALE_CRASH_BATCHES`: batches per writer (default 250; with the single writers that is
//!   about 25 flushes and a dozen compactions per workload);
//! - `SHALE_CRASH_STRIDE`: image every n-th sync point only, from a seed-dependent phase
//!   (default 1: every sync point; the WAL check of point 6 runs at every one regardless);
//! - `SHALE_CRASH_BETWEEN`: percentage of acknowledged writes followed by an image (default 4);
//! - `SHALE_CRASH_SEED`: the workload seed (default fixed; failures print the seed in use).
//!
//! For a long run: `SHALE_CRASH_BATCHES=3000 SHALE_CRASH_SEED=$RANDOM cargo test -p
//! shale-engine --release --test crash`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    Db, Durability, KeyspaceOptions, Options, ReadOptions, WriteBatch, WriteOptions,
};
use shale_fs::{CrashMode, DataSyncer, FileSystem, MemFs, Result as FsResult, WritableFile};

mod wal_wrapping_fs;
use wal_wrapping_fs::WalWrappingFs;

const DIR: &str = "/db";
const OTHER: &str = "other";
/// Keys per writer and keyspace.
const KEYS: usize = 24;
/// Batches written (and made durable by a close) before the imaged part of the workload.
const SETUP_BATCHES: usize = 12;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn base_seed() -> u64 {
    std::env::var("SHALE_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED_C0DE)
}

// ---------------------------------------------------------------------------------------------
// The workload and its model.

/// One entry of a batch; `ks` is 0 for the default keyspace, 1 for `OTHER`.
#[derive(Debug, Clone)]
enum Entry {
    Put {
        ks: usize,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        ks: usize,
        key: Vec<u8>,
    },
    DeleteRange {
        ks: usize,
        start: Vec<u8>,
        end: Vec<u8>,
    },
}

#[derive(Debug, Clone)]
struct Batch {
    entries: Vec<Entry>,
    durability: Durability,
}

/// (keyspace index, key) -> value.
type State = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

fn key(writer: usize, k: usize) -> Vec<u8> {
    format!("w{writer}k{k:02}").into_bytes()
}

/// The part of `state` that `writer` writes.
fn of_writer(state: &State, writer: usize) -> State {
    let prefix = format!("w{writer}k").into_bytes();
    state
        .iter()
        .filter(|((_, k), _)| k.starts_with(&prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// How a workload picks each batch's durability.
#[derive(Debug, Clone, Copy)]
enum DurabilityPlan {
    All(Durability),
    Mixed,
}

fn generate(rng: &mut SmallRng, writer: usize, count: usize, plan: DurabilityPlan) -> Vec<Batch> {
    (0..count)
        .map(|b| {
            let durability = match plan {
                DurabilityPlan::All(d) => d,
                DurabilityPlan::Mixed => {
                    [Durability::Sync, Durability::Flush, Durability::Buffered][rng.gen_range(0..3)]
                }
            };
            let entries = (0..rng.gen_range(1..=5))
                .map(|e| {
                    let ks = usize::from(rng.gen_bool(0.4));
                    let k = rng.gen_range(0..KEYS);
                    match rng.gen_range(0..100) {
                        0..=64 => {
                            let mut value = format!("b{writer}.{b}.{e}|").into_bytes();
                            value.resize(value.len() + rng.gen_range(0..400), b'x');
                            Entry::Put {
                                ks,
                                key: key(writer, k),
                                value,
                            }
                        }
                        65..=91 => Entry::Delete {
                            ks,
                            key: key(writer, k),
                        },
                        _ => Entry::DeleteRange {
                            ks,
                            start: key(writer, k),
                            end: key(writer, k + rng.gen_range(1..=4)),
                        },
                    }
                })
                .collect();
            Batch {
                entries,
                durability,
            }
        })
        .collect()
}

impl Batch {
    fn to_write_batch(&self, ids: [u32; 2]) -> WriteBatch {
        let mut batch = WriteBatch::new();
        for entry in &self.entries {
            match entry {
                Entry::Put { ks, key, value } => batch.put(ids[*ks], key, value),
                Entry::Delete { ks, key } => batch.delete(ids[*ks], key),
                Entry::DeleteRange { ks, start, end } => batch.delete_range(ids[*ks], start, end),
            }
            .unwrap();
        }
        batch
    }

    /// The keys of `model` this batch may change.
    fn touched(&self, model: &State) -> BTreeSet<(usize, Vec<u8>)> {
        let mut keys = BTreeSet::new();
        for entry in &self.entries {
            match entry {
                Entry::Put { ks, key, .. } | Entry::Delete { ks, key } => {
                    keys.insert((*ks, key.clone()));
                }
                Entry::DeleteRange { ks, start, end } => {
                    keys.extend(
                        model
                            .range((*ks, start.clone())..(*ks, end.clone()))
                            .map(|(k, _)| k.clone()),
                    );
                }
            }
        }
        keys
    }

    fn apply(&self, model: &mut State) {
        for entry in &self.entries {
            match entry {
                Entry::Put { ks, key, value } => {
                    model.insert((*ks, key.clone()), value.clone());
                }
                Entry::Delete { ks, key } => {
                    model.remove(&(*ks, key.clone()));
                }
                Entry::DeleteRange { ks, start, end } => {
                    let doomed: Vec<_> = model
                        .range((*ks, start.clone())..(*ks, end.clone()))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        model.remove(&k);
                    }
                }
            }
        }
    }
}

/// A value without its padding: the batch that wrote it.
fn marker(value: &[u8]) -> String {
    let end = value.iter().position(|&b| b == b'|').unwrap_or(value.len());
    String::from_utf8_lossy(&value[..end]).into_owned()
}

fn show(value: Option<&Vec<u8>>) -> String {
    value.map_or_else(|| "(absent)".to_owned(), |v| marker(v))
}

/// The prefix lengths `p` in `lower..=upper` for which `recovered` is exactly the state after
/// `batches[..p]`, as (smallest, largest); or why there is none.
fn find_prefix(
    batches: &[Batch],
    recovered: &State,
    lower: usize,
    upper: usize,
) -> Result<(usize, usize), String> {
    let mut model = State::new();
    let mut mismatches = recovered.len();
    let mut matching: Option<(usize, usize)> = None;
    let mut closest = (usize::MAX, 0);
    let mut consider = |p: usize, mismatches: usize| {
        if p >= lower {
            if mismatches == 0 {
                matching = Some(matching.map_or((p, p), |(first, _)| (first, p)));
            } else if mismatches < closest.0 {
                closest = (mismatches, p);
            }
        }
    };
    for (p, batch) in batches[..upper].iter().enumerate() {
        consider(p, mismatches);
        let touched = batch.touched(&model);
        let differs = |model: &State, k: &(usize, Vec<u8>)| model.get(k) != recovered.get(k);
        let before = touched.iter().filter(|k| differs(&model, k)).count();
        batch.apply(&mut model);
        let after = touched.iter().filter(|k| differs(&model, k)).count();
        mismatches = mismatches + after - before;
    }
    consider(upper, mismatches);
    matching.ok_or_else(|| diagnose(batches, recovered, lower, upper, closest.1))
}

/// Explains why no prefix in `lower..=upper` matches, from the closest one.
fn diagnose(batches: &[Batch], recovered: &State, lower: usize, upper: usize, p: usize) -> String {
    let mut model = State::new();
    for batch in &batches[..p] {
        batch.apply(&mut model);
    }
    let keys: BTreeSet<_> = model.keys().chain(recovered.keys()).cloned().collect();
    let diffs: Vec<String> = keys
        .iter()
        .filter(|k| model.get(*k) != recovered.get(*k))
        .take(8)
        .map(|k| {
            format!(
                "ks{} {}: after {p} batches {} but recovered {}",
                k.0,
                String::from_utf8_lossy(&k.1),
                show(model.get(k)),
                show(recovered.get(k)),
            )
        })
        .collect();
    format!(
        "no prefix of the history between {lower} (must be durable) and {upper} (started) \
         batches explains the recovered state (a lost acknowledged write, a partial batch or a \
         resurrected delete); closest is {p}: {}",
        diffs.join("; ")
    )
}

// ---------------------------------------------------------------------------------------------
// Observing the workload: acknowledged counts, WAL sync floors, images.

/// What the workload has done, read by the image takers and the checkers.
#[derive(Debug)]
struct Probe {
    /// Per writer: batches started (`write` called) and acknowledged (`write` returned).
    started: Vec<AtomicUsize>,
    acked: Vec<AtomicUsize>,
    /// Per writer: batches acknowledged before the start of a WAL sync that completed.
    durable: Vec<AtomicUsize>,
    /// A global clock; per writer and batch, its reading just before `write` and just after
    /// it returned (0: not yet).
    clock: AtomicU64,
    start_ticks: Vec<Vec<AtomicU64>>,
    ack_ticks: Vec<Vec<AtomicU64>>,
    /// Whether sync points are imaged now.
    imaging: AtomicBool,
}

impl Probe {
    fn new(batches_per_writer: &[usize]) -> Self {
        let per_writer =
            |f: &dyn Fn() -> AtomicUsize| batches_per_writer.iter().map(|_| f()).collect();
        let ticks = || {
            batches_per_writer
                .iter()
                .map(|&n| (0..n).map(|_| AtomicU64::new(0)).collect())
                .collect()
        };
        Probe {
            started: per_writer(&|| AtomicUsize::new(0)),
            acked: per_writer(&|| AtomicUsize::new(0)),
            durable: per_writer(&|| AtomicUsize::new(0)),
            clock: AtomicU64::new(1),
            start_ticks: ticks(),
            ack_ticks: ticks(),
            imaging: AtomicBool::new(false),
        }
    }

    fn read(counters: &[AtomicUsize]) -> Vec<usize> {
        counters.iter().map(|c| c.load(Ordering::SeqCst)).collect()
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
}

thread_local! {
    /// While this thread syncs a WAL: the acknowledged counts read before the sync started.
    static WAL_SYNC_IN_PROGRESS: RefCell<Option<Vec<usize>>> = const { RefCell::new(None) };
}

/// A WAL file seen through a wrapper that notes, for each successful sync, which batches were
/// acknowledged before it started (their records were appended before it, so it made them
/// durable).
#[derive(Debug)]
struct TrackedWal {
    file: Box<dyn WritableFile>,
    probe: Arc<Probe>,
}

impl WritableFile for TrackedWal {
    fn append(&mut self, data: &[u8]) -> FsResult<()> {
        self.file.append(data)
    }

    fn flush(&mut self) -> FsResult<()> {
        self.file.flush()
    }

    fn sync_data(&mut self) -> FsResult<()> {
        let file = &mut self.file;
        tracked_sync(&self.probe, || file.sync_data())
    }

    fn concurrent_syncer(&mut self) -> FsResult<Option<Box<dyn DataSyncer>>> {
        Ok(self.file.concurrent_syncer()?.map(|inner| {
            Box::new(TrackedSyncer {
                inner,
                probe: self.probe.clone(),
            }) as Box<dyn DataSyncer>
        }))
    }

    fn len(&self) -> u64 {
        self.file.len()
    }
}

/// A [`TrackedWal`]'s background syncer, tracked the same way.
#[derive(Debug)]
struct TrackedSyncer {
    inner: Box<dyn DataSyncer>,
    probe: Arc<Probe>,
}

impl DataSyncer for TrackedSyncer {
    fn sync_data(&self) -> FsResult<()> {
        tracked_sync(&self.probe, || self.inner.sync_data())
    }
}

/// Runs a WAL sync, noting which batches were acknowledged before it started (`MemFs` has no
/// write buffer: their records were in the file) and, if it succeeds, that they are durable.
fn tracked_sync(probe: &Probe, sync: impl FnOnce() -> FsResult<()>) -> FsResult<()> {
    let acked = Probe::read(&probe.acked);
    WAL_SYNC_IN_PROGRESS.with(|s| *s.borrow_mut() = Some(acked.clone()));
    let result = sync();
    WAL_SYNC_IN_PROGRESS.with(|s| *s.borrow_mut() = None);
    if result.is_ok() {
        for (durable, acked) in probe.durable.iter().zip(acked) {
            durable.fetch_max(acked, Ordering::SeqCst);
        }
    }
    result
}

/// A crash image and what the workload had done when it was taken.
struct Image {
    fs: MemFs,
    label: String,
    /// Per writer, read before the image: batches acknowledged, and batches made durable by a
    /// completed WAL sync.
    acked: Vec<usize>,
    durable: Vec<usize>,
    /// Per writer, read after the image: batches started.
    started: Vec<usize>,
}

/// docs/format/wal.md: a WAL is synced before the next one exists, so only the newest WAL of
/// a crash image may have lost bytes (recovery refuses a torn tail followed by a newer WAL).
/// Checked against the live file system: deterministic, where reopening a torn image finds a
/// violation only when the tear happens to cut a record. WALs of an earlier session (`old`)
/// are skipped: the open that started this session made them obsolete before its first WAL.
fn check_older_wals_durable(
    live: &MemFs,
    image: &MemFs,
    old: &BTreeSet<String>,
    label: &str,
) -> Result<(), String> {
    let dir = Path::new(DIR);
    let mut wals: Vec<(u64, String)> = image
        .list(dir)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter_map(|name| Some((name.strip_suffix(".wal")?.parse().ok()?, name)))
        .collect();
    wals.sort_unstable();
    let newest = wals.pop();
    for (_, name) in wals.into_iter().filter(|(_, name)| !old.contains(name)) {
        let path = dir.join(&name);
        let Ok(current) = live.file_contents(&path) else {
            continue; // deleted since: obsolete
        };
        let durable = image.file_contents(&path).map_err(|e| e.to_string())?;
        if durable != current {
            return Err(format!(
                "{label}: {name} has {} unsynced bytes while the name of a newer WAL ({}) is \
                 durable",
                current.len().saturating_sub(durable.len()),
                newest.map_or_else(String::new, |n| n.1)
            ));
        }
    }
    Ok(())
}

/// Takes a `DropUnsynced` and a `Torn` image of `fs` now and queues both for checking; with
/// `violations`, also checks the WALs of the first (see `check_older_wals_durable`).
fn take_images(
    fs: &MemFs,
    probe: &Probe,
    seed: u64,
    label: &str,
    queue: &SyncSender<Image>,
    wal_check: Option<(&BTreeSet<String>, &Mutex<Vec<String>>)>,
) {
    let mut durable = Probe::read(&probe.durable);
    if let Some(syncing) = WAL_SYNC_IN_PROGRESS.with(|s| s.borrow().clone()) {
        // Called from the sync hook of a WAL sync: that sync has completed.
        for (d, s) in durable.iter_mut().zip(syncing) {
            *d = (*d).max(s);
        }
    }
    let acked = Probe::read(&probe.acked);
    let images = [
        (fs.crash_image(CrashMode::DropUnsynced), "drop unsynced"),
        (fs.crash_image(CrashMode::Torn { seed }), "torn"),
    ];
    let started = Probe::read(&probe.started);
    if let Some((old, violations)) = wal_check {
        if let Err(e) = check_older_wals_durable(fs, &images[0].0, old, label) {
            violations.lock().unwrap().push(e);
        }
    }
    for (image, mode) in images {
        // A closed queue means the checker died; its panic is reported at the end.
        let _ = queue.send(Image {
            fs: image,
            label: format!("{label}, {mode} (seed {seed:#x})"),
            acked: acked.clone(),
            durable: durable.clone(),
            started: started.clone(),
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Opening and checking.

fn keyspace_options() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 4096,
        max_write_buffer_number: 2,
        level0_compaction_trigger: 2,
        target_file_size: 64 << 10,
        block_size: 512,
        ..KeyspaceOptions::default()
    }
}

fn options(fs: Arc<dyn FileSystem>, durability: Durability) -> Options {
    Options {
        file_system: fs,
        durability,
        sync_interval: Duration::from_millis(3),
        default_keyspace: keyspace_options(),
        ..Options::default()
    }
}

fn keyspace_ids(db: &Db) -> Result<[u32; 2], String> {
    let other = db
        .keyspace(OTHER)
        .ok_or_else(|| format!("keyspace {OTHER:?} is missing"))?;
    Ok([db.default_keyspace().id(), other.id()])
}

/// Every entry of both keyspaces.
fn scan(db: &Db) -> Result<State, String> {
    let mut state = State::new();
    let keyspaces = [
        db.default_keyspace(),
        db.keyspace(OTHER)
            .ok_or_else(|| format!("keyspace {OTHER:?} is missing"))?,
    ];
    for (ks, keyspace) in keyspaces.iter().enumerate() {
        let mut iter = keyspace
            .iterator(ReadOptions::default())
            .map_err(|e| format!("iterator: {e}"))?;
        iter.seek_to_first();
        while iter.valid() {
            state.insert((ks, iter.key().to_vec()), iter.value().to_vec());
            iter.next();
        }
        iter.status().map_err(|e| format!("scan failed: {e}"))?;
    }
    Ok(state)
}

/// The workload's histories, shared with the checkers.
struct Plan {
    durability: Durability,
    writers: Vec<Vec<Batch>>,
    probe: Arc<Probe>,
}

impl Plan {
    fn generate(workload: &Workload, batches: usize, seed: u64) -> Plan {
        let mut rng = SmallRng::seed_from_u64(seed);
        let writers: Vec<Vec<Batch>> = (0..workload.writers)
            .map(|w| generate(&mut rng, w, batches, workload.plan))
            .collect();
        let counts: Vec<usize> = writers.iter().map(Vec::len).collect();
        Plan {
            durability: workload.durability,
            writers,
            probe: Arc::new(Probe::new(&counts)),
        }
    }

    /// The fewest batches of `writer` that must be in an image taken when `acked` were
    /// acknowledged and `durable` synced: every `Sync` batch acknowledged, and everything
    /// before it.
    fn must_have(&self, writer: usize, acked: usize, durable: usize) -> usize {
        let last_sync = self.writers[writer][..acked]
            .iter()
            .rposition(|b| b.durability == Durability::Sync)
            .map_or(0, |i| i + 1);
        last_sync.max(durable)
    }

    fn check(&self, image: &Image) -> Result<(), String> {
        let db = Db::open(DIR, options(Arc::new(image.fs.clone()), self.durability))
            .map_err(|e| format!("open failed: {e}"))?;
        let recovered = scan(&db)?;
        let mut prefixes = Vec::new();
        let mut explained = 0;
        for (writer, batches) in self.writers.iter().enumerate() {
            let mine = of_writer(&recovered, writer);
            explained += mine.len();
            let lower = self.must_have(writer, image.acked[writer], image.durable[writer]);
            let upper = image.started[writer];
            let found = find_prefix(batches, &mine, lower, upper).map_err(|e| {
                format!(
                    "writer {writer} (acknowledged {}, synced {}): {e}",
                    image.acked[writer], image.durable[writer]
                )
            })?;
            prefixes.push(found);
        }
        if explained != recovered.len() {
            return Err(format!(
                "{} recovered keys belong to no writer",
                recovered.len() - explained
            ));
        }
        self.check_commit_order(&prefixes)?;
        write_again(db, &image.fs, self.durability, recovered)
    }

    /// No batch is present while a batch acknowledged before it started is absent.
    fn check_commit_order(&self, prefixes: &[(usize, usize)]) -> Result<(), String> {
        let probe = &self.probe;
        for (present_writer, &(present, _)) in prefixes.iter().enumerate() {
            let Some(newest_present) = present.checked_sub(1) else {
                continue;
            };
            let started = probe.start_ticks[present_writer][newest_present].load(Ordering::SeqCst);
            for (absent_writer, &(_, absent)) in prefixes.iter().enumerate() {
                let Some(ack) = probe.ack_ticks[absent_writer].get(absent) else {
                    continue;
                };
                let ack = ack.load(Ordering::SeqCst);
                if ack != 0 && ack < started {
                    return Err(format!(
                        "batch {newest_present} of writer {present_writer} survived but batch \
                         {absent} of writer {absent_writer}, acknowledged before it started, \
                         did not"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Writes more to a recovered database, crashes it, and checks the second recovery.
fn write_again(
    db: Db,
    fs: &MemFs,
    durability: Durability,
    mut expected: State,
) -> Result<(), String> {
    let ids = keyspace_ids(&db)?;
    for n in 0..3u32 {
        let mut batch = WriteBatch::new();
        for (ks, id) in ids.iter().enumerate() {
            let key = format!("z{n}").into_bytes();
            let value = format!("again{n}").into_bytes();
            batch.put(*id, &key, &value).unwrap();
            expected.insert((ks, key), value);
        }
        db.write(batch, &WriteOptions::sync())
            .map_err(|e| format!("write after recovery failed: {e}"))?;
    }
    if scan(&db)? != expected {
        return Err("writes after recovery are not read back".into());
    }
    let image = fs.crash_image(CrashMode::DropUnsynced);
    drop(db);
    let db = Db::open(DIR, options(Arc::new(image), durability))
        .map_err(|e| format!("second recovery failed: {e}"))?;
    if scan(&db)? != expected {
        return Err("the second recovery lost writes acknowledged under Sync".into());
    }
    db.close()
        .map_err(|e| format!("close after second recovery: {e}"))
}

/// Checks images until the queue closes; returns the failures.
#[derive(Default)]
struct Checked {
    images: usize,
    failures: Vec<String>,
    busy: Duration,
}

impl Checked {
    fn merge(mut self, other: Checked) -> Checked {
        self.images += other.images;
        self.failures.extend(other.failures);
        self.busy += other.busy;
        self
    }
}

fn checker(plan: &Plan, queue: &Mutex<Receiver<Image>>) -> Checked {
    let mut checked = Checked::default();
    loop {
        let next = queue.lock().unwrap().recv();
        let Ok(image) = next else {
            return checked;
        };
        checked.images += 1;
        let start = Instant::now();
        let result = plan.check(&image);
        checked.busy += start.elapsed();
        if let Err(e) = result {
            checked.failures.push(format!("{}: {e}", image.label));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Running a workload.

struct Workload {
    name: &'static str,
    durability: Durability,
    plan: DurabilityPlan,
    writers: usize,
}

fn write_batches(
    db: &Db,
    plan: &Plan,
    writer: usize,
    range: std::ops::Range<usize>,
    between: Option<(&MemFs, &SyncSender<Image>, u64)>,
) {
    let ids = keyspace_ids(db).unwrap();
    let probe = &plan.probe;
    let mut rng = SmallRng::seed_from_u64(between.map_or(0, |b| b.2) ^ writer as u64);
    let percent = env_usize("SHALE_CRASH_BETWEEN", 4).min(100) as u32;
    for i in range {
        let batch = &plan.writers[writer][i];
        probe.started[writer].store(i + 1, Ordering::SeqCst);
        probe.start_ticks[writer][i].store(probe.tick(), Ordering::SeqCst);
        let options = WriteOptions {
            durability: Some(batch.durability),
        };
        db.write(batch.to_write_batch(ids), &options)
            .unwrap_or_else(|e| panic!("writer {writer} batch {i}: {e}"));
        probe.ack_ticks[writer][i].store(probe.tick(), Ordering::SeqCst);
        probe.acked[writer].store(i + 1, Ordering::SeqCst);
        if let Some((fs, queue, seed)) = between {
            if rng.gen_ratio(percent, 100) {
                let label = format!("after batch {i} of writer {writer}");
                let image_seed = seed ^ ((i as u64) << 8) ^ writer as u64;
                take_images(fs, probe, image_seed, &label, queue, None);
            }
        }
        if i % 97 == 96 {
            // Now and then a flush that did not wait for a full memtable.
            db.flush().unwrap();
        }
    }
}

fn run(workload: &Workload) {
    let seed = base_seed() ^ workload.name.len() as u64;
    let batches = env_usize("SHALE_CRASH_BATCHES", 250).max(SETUP_BATCHES + 1);
    let stride = env_usize("SHALE_CRASH_STRIDE", 1).max(1) as u64;
    let plan = Arc::new(Plan::generate(workload, batches, seed));
    let mem = MemFs::new();
    let probe = plan.probe.clone();
    let fs: Arc<dyn FileSystem> = Arc::new(WalWrappingFs::new(mem.clone(), move |file| {
        Box::new(TrackedWal {
            file,
            probe: probe.clone(),
        })
    }));

    // Setup, not imaged: the keyspaces and some data left in the WAL for the next open.
    {
        let db = Db::open(DIR, options(fs.clone(), workload.durability)).unwrap();
        db.create_keyspace(OTHER, keyspace_options()).unwrap();
        write_batches(&db, &plan, 0, 0..SETUP_BATCHES, None);
        db.close().unwrap();
    }
    let setup_sync_points = mem.sync_point_count();

    let phase = seed % stride;

    let (sender, receiver) = sync_channel::<Image>(8);
    let receiver = Arc::new(Mutex::new(receiver));
    let checkers: Vec<_> = (0..2)
        .map(|_| {
            let (plan, receiver) = (plan.clone(), receiver.clone());
            thread::spawn(move || checker(&plan, &receiver))
        })
        .collect();
    let violations = Arc::new(Mutex::new(Vec::new()));
    install_sync_hook(
        &mem,
        &plan.probe,
        &sender,
        &violations,
        (stride, phase),
        seed,
    );
    plan.probe.imaging.store(true, Ordering::SeqCst);

    // The imaged part: recovery of the setup's WAL, then the writers.
    let db = Db::open(DIR, options(fs.clone(), workload.durability)).unwrap();
    thread::scope(|scope| {
        for writer in 0..workload.writers {
            let (db, plan, mem, sender) = (&db, &plan, &mem, sender.clone());
            let first = if writer == 0 { SETUP_BATCHES } else { 0 };
            scope.spawn(move || {
                let between = Some((mem, &sender, seed ^ 0xB7));
                write_batches(db, plan, writer, first..batches, between);
            });
        }
    });
    db.close().unwrap();
    plan.probe.imaging.store(false, Ordering::SeqCst);
    mem.set_sync_hook(None);
    let imaged_points = mem.sync_point_count() - setup_sync_points;

    // After a clean close everything is durable.
    take_images(&mem, &plan.probe, seed, "after close", &sender, None);
    let final_image = mem.crash_image(CrashMode::DropUnsynced);
    drop(sender);
    let checked = checkers
        .into_iter()
        .map(|c| c.join().expect("a checker panicked"))
        .fold(Checked::default(), Checked::merge);
    let violations = violations.lock().unwrap();
    assert!(
        violations.is_empty(),
        "{}: {} sync points with a torn WAL before a newer one (seed {:#x}); first ones:\n{}",
        workload.name,
        violations.len(),
        base_seed(),
        violations[..violations.len().min(5)].join("\n")
    );
    let failures = &checked.failures;
    assert!(
        failures.is_empty(),
        "{}: {} of {} crash images fail (seed {:#x}); first ones:\n{}",
        workload.name,
        failures.len(),
        checked.images,
        base_seed(),
        failures[..failures.len().min(5)].join("\n")
    );
    check_everything_durable(&plan, final_image, workload);
    assert!(
        checked.images >= 2,
        "{}: no image was checked",
        workload.name
    );
    eprintln!(
        "{}: {imaged_points} sync points, every {stride}th imaged; {} images checked, {:?} each",
        workload.name,
        checked.images,
        checked.busy / checked.images as u32,
    );
}

/// At every sync point from now on: checks the WALs, and at every `stride`-th (from `phase`)
/// queues crash images.
fn install_sync_hook(
    mem: &MemFs,
    probe: &Arc<Probe>,
    sender: &SyncSender<Image>,
    violations: &Arc<Mutex<Vec<String>>>,
    (stride, phase): (u64, u64),
    seed: u64,
) {
    let first = mem.sync_point_count();
    let old_wals: BTreeSet<String> = mem
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|name| Path::new(name).extension().is_some_and(|e| e == "wal"))
        .collect();
    let (hook_fs, probe, sender) = (mem.clone(), probe.clone(), Mutex::new(sender.clone()));
    let violations = violations.clone();
    mem.set_sync_hook(Some(Arc::new(move |point| {
        let point = point - first;
        if !probe.imaging.load(Ordering::SeqCst) {
            return;
        }
        let label = format!("sync point {point}");
        if point % stride == phase {
            let sender = sender.lock().unwrap().clone();
            let image_seed = seed ^ (point << 20);
            let wal_check = Some((&old_wals, &*violations));
            take_images(&hook_fs, &probe, image_seed, &label, &sender, wal_check);
        } else {
            let image = hook_fs.crash_image(CrashMode::DropUnsynced);
            if let Err(e) = check_older_wals_durable(&hook_fs, &image, &old_wals, &label) {
                violations.lock().unwrap().push(e);
            }
        }
    })));
}

/// The image of a cleanly closed database holds every batch.
fn check_everything_durable(plan: &Plan, image: MemFs, workload: &Workload) {
    let db = Db::open(DIR, options(Arc::new(image), workload.durability)).unwrap();
    let state = scan(&db).unwrap();
    for (writer, batches) in plan.writers.iter().enumerate() {
        let mut model = State::new();
        for batch in batches {
            batch.apply(&mut model);
        }
        assert!(
            of_writer(&state, writer) == model,
            "{}: writer {writer} after close",
            workload.name
        );
    }
}

#[test]
fn crash_sync_single_writer() {
    run(&Workload {
        name: "sync",
        durability: Durability::Sync,
        plan: DurabilityPlan::All(Durability::Sync),
        writers: 1,
    });
}

#[test]
fn crash_flush_single_writer() {
    run(&Workload {
        name: "flush",
        durability: Durability::Flush,
        plan: DurabilityPlan::All(Durability::Flush),
        writers: 1,
    });
}

#[test]
fn crash_buffered_single_writer() {
    run(&Workload {
        name: "buffered",
        durability: Durability::Buffered,
        plan: DurabilityPlan::All(Durability::Buffered),
        writers: 1,
    });
}

#[test]
fn crash_mixed_durability_single_writer() {
    run(&Workload {
        name: "mixed",
        durability: Durability::Flush,
        plan: DurabilityPlan::Mixed,
        writers: 1,
    });
}

#[test]
fn crash_mixed_durability_three_writers() {
    run(&Workload {
        name: "three writers",
        durability: Durability::Buffered,
        plan: DurabilityPlan::Mixed,
        writers: 3,
    });
}

// ---------------------------------------------------------------------------------------------
// Keyspace creation and drop.

/// The steps of `crash_keyspace_create_and_drop`, in order.
const KEYSPACE_STEPS: [&str; 8] = [
    "create a",
    "write a",
    "write default",
    "drop a",
    "create b",
    "write b",
    "flush",
    "drop b",
];

/// Whether keyspace `name` may, and must, exist after a crash when `done` steps had returned
/// and `started` had begun: (created step, dropped step).
fn keyspace_must_and_may(
    done: usize,
    started: usize,
    created: usize,
    dropped: usize,
) -> (bool, bool) {
    let must = done > created && started <= dropped;
    let may = started > created && done <= dropped;
    (must, may)
}

#[test]
fn crash_keyspace_create_and_drop() {
    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    {
        let db = Db::open(DIR, options(fs.clone(), Durability::Sync)).unwrap();
        db.put(b"base", b"1").unwrap();
        db.close().unwrap();
    }
    let done = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let images = Arc::new(Mutex::new(Vec::new()));
    {
        let (hook_fs, done, started, images) =
            (mem.clone(), done.clone(), started.clone(), images.clone());
        mem.set_sync_hook(Some(Arc::new(move |point| {
            let finished = done.load(Ordering::SeqCst);
            let taken = [
                hook_fs.crash_image(CrashMode::DropUnsynced),
                hook_fs.crash_image(CrashMode::Torn { seed: point }),
            ];
            let begun = started.load(Ordering::SeqCst);
            let mut images = images.lock().unwrap();
            for image in taken {
                images.push((point, image, finished, begun));
            }
        })));
    }
    let db = Db::open(DIR, options(fs.clone(), Durability::Sync)).unwrap();
    for (step, what) in KEYSPACE_STEPS.iter().enumerate() {
        started.store(step + 1, Ordering::SeqCst);
        match *what {
            "create a" | "create b" => {
                db.create_keyspace(&what[7..], keyspace_options()).unwrap();
            }
            "drop a" | "drop b" => db.drop_keyspace(&what[5..]).unwrap(),
            "write default" => db.put(b"later", b"2").unwrap(),
            "flush" => db.flush().unwrap(),
            _ => db
                .keyspace(&what[6..])
                .unwrap()
                .put(b"k", what.as_bytes())
                .unwrap(),
        }
        done.store(step + 1, Ordering::SeqCst);
    }
    db.close().unwrap();
    mem.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() > 20, "only {} images", images.len());
    for (point, image, done, started) in images {
        let context = format!("sync point {point} after {done} steps");
        let db = Db::open(DIR, options(Arc::new(image), Durability::Sync))
            .unwrap_or_else(|e| panic!("{context}: open failed: {e}"));
        assert_eq!(db.get(b"base").unwrap(), Some(b"1".to_vec()), "{context}");
        if done > 2 {
            assert_eq!(db.get(b"later").unwrap(), Some(b"2".to_vec()), "{context}");
        }
        for (name, created, wrote, dropped) in [("a", 0, 1, 3), ("b", 4, 5, 7)] {
            let (must, may) = keyspace_must_and_may(done, started, created, dropped);
            let keyspace = db.keyspace(name);
            assert!(
                !must || keyspace.is_some(),
                "{context}: keyspace {name} lost"
            );
            assert!(
                may || keyspace.is_none(),
                "{context}: keyspace {name} present"
            );
            if let Some(keyspace) = keyspace {
                let value = keyspace.get(b"k").unwrap();
                if done > wrote {
                    assert_eq!(
                        value,
                        Some(format!("write {name}").into_bytes()),
                        "{context}"
                    );
                }
                keyspace.put(b"again", b"3").unwrap();
            }
        }
        db.put(b"again", b"3").unwrap();
        db.close().unwrap();
    }
}
