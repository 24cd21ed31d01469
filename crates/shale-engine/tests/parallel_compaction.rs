//! Several compactions of one keyspace at once (docs/compaction.md, "Compactions at once";
//! compaction/claims.rs): a second compaction of other files starts and installs while the
//! first is held inside its merge; and a stress run with several compaction threads, writers
//! and deletes in one keyspace matches a model, with every Version the MANIFEST records
//! keeping L1+ sorted and non-overlapping, before and after a reopen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use shale_engine::inspect::wal::{LogReader, RecoveryMode};
use shale_engine::inspect::{
    manifest_file_name, parse_manifest_file_name, FileMetaData, VersionEdit,
};
use shale_engine::{Db, KeyspaceOptions, Options, ReadOptions};
use shale_fs::{FileSystem, MemFs};
use shale_sst::{Comparator, Compression};

const DIR: &str = "/db";

/// How long a test waits for a condition before it fails (a loaded CI machine is slow).
const DEADLINE: Duration = Duration::from_secs(120);

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64, round: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{i}-{round}-").into_bytes();
    v.resize(len, b'v');
    v
}

/// Small files and levels, no compression (sizes predictable), memtables flushed only when
/// asked (the tests flush), and `jobs` background jobs.
fn options(fs: Arc<dyn FileSystem>, keyspace: KeyspaceOptions, jobs: usize) -> Options {
    Options {
        file_system: fs,
        default_keyspace: keyspace,
        max_background_jobs: jobs,
        ..Options::default()
    }
}

fn small_levels() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 4 << 20,
        compression: Compression::None,
        compression_per_level: Vec::new(),
        bottommost_compression: None,
        block_size: 1024,
        level0_compaction_trigger: 4,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 16 << 10,
        max_bytes_for_level_multiplier: 4,
        ..KeyspaceOptions::default()
    }
}

/// Every key and value of the default keyspace, in order.
fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut iter = db.iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    let mut pairs = BTreeMap::new();
    while iter.valid() {
        pairs.insert(iter.key().to_vec(), iter.value().to_vec());
        iter.next();
    }
    iter.status().unwrap();
    pairs
}

/// Checks that L1+ of every keyspace is sorted by key and that neighbours do not overlap (a
/// file may end with an exclusive bound at its neighbour's first key).
fn check_levels(cmp: &dyn Comparator, levels: &BTreeMap<(u32, u32), Vec<FileMetaData>>, at: &str) {
    for ((keyspace, level), files) in levels {
        if *level == 0 {
            continue;
        }
        let mut sorted = files.clone();
        sorted.sort_by(|a, b| cmp.compare(a.smallest.user_key(), b.smallest.user_key()));
        for pair in sorted.windows(2) {
            let order = cmp.compare(pair[0].largest.user_key(), pair[1].smallest.user_key());
            assert!(
                order.is_lt() || (order.is_eq() && pair[0].largest_is_exclusive()),
                "{at}: keyspace {keyspace} L{level} files {} and {} overlap:\n{}\n{}",
                pair[0].number,
                pair[1].number,
                pair[0],
                pair[1]
            );
        }
    }
}

/// The live Version's levels of the default keyspace, for `check_levels`.
fn live_levels(db: &Db) -> BTreeMap<(u32, u32), Vec<FileMetaData>> {
    let version = db.current_version();
    (0..version.num_levels())
        .map(|level| {
            let files = version.files(0, level).iter().map(|f| (**f).clone());
            ((0, u32::try_from(level).unwrap()), files.collect())
        })
        .collect()
}

/// Every edit of the live (newest) MANIFEST, in order.
fn manifest_edits(fs: &dyn FileSystem) -> Vec<VersionEdit> {
    let dir = Path::new(DIR);
    let number = fs
        .list(dir)
        .unwrap()
        .iter()
        .filter_map(|name| parse_manifest_file_name(name))
        .max()
        .unwrap();
    let file = fs.open_read(&dir.join(manifest_file_name(number))).unwrap();
    let mut reader = LogReader::new(file, number, RecoveryMode::AbsoluteConsistency).unwrap();
    let mut edits = Vec::new();
    while let Some((record, _)) = reader.read_record().unwrap() {
        edits.push(VersionEdit::decode(&record).unwrap());
    }
    edits
}

/// Replays the live MANIFEST edit by edit, checking the levels after each one; returns the
/// number of edits that deleted files (compactions and trivial moves) and the replayed files.
fn replay_and_check(
    fs: &dyn FileSystem,
    cmp: &dyn Comparator,
) -> (u64, BTreeMap<(u32, u32), Vec<FileMetaData>>) {
    let mut levels: BTreeMap<(u32, u32), Vec<FileMetaData>> = BTreeMap::new();
    let mut compaction_edits = 0;
    for (at, edit) in manifest_edits(fs).iter().enumerate() {
        let deleted: BTreeSet<(u32, u32, u64)> = edit
            .deleted_files
            .iter()
            .map(|d| (d.keyspace, d.level, d.number))
            .collect();
        for ((keyspace, level), files) in &mut levels {
            files.retain(|f| !deleted.contains(&(*keyspace, *level, f.number)));
        }
        for new in &edit.new_files {
            levels
                .entry((new.keyspace, new.level))
                .or_default()
                .push(new.meta.clone());
        }
        if !edit.deleted_files.is_empty() {
            compaction_edits += 1;
        }
        check_levels(cmp, &levels, &format!("MANIFEST edit {at}"));
    }
    (compaction_edits, levels)
}

/// Holds the `hold_at`-th merge (counting from 0) in its `in_compaction` hook until released,
/// and counts the merges that start while it is held.
#[derive(Default)]
struct MergeHold {
    merges: AtomicUsize,
    started_while_held: AtomicUsize,
    /// (held now, released)
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl MergeHold {
    fn on_merge(&self, hold_at: usize) {
        let number = self.merges.fetch_add(1, Ordering::SeqCst);
        let mut state = self.state.lock().unwrap();
        if number == hold_at {
            state.0 = true;
            self.changed.notify_all();
            let start = Instant::now();
            while !state.1 && start.elapsed() < DEADLINE {
                state = self.changed.wait_timeout(state, DEADLINE).unwrap().0;
            }
            state.0 = false;
        } else if state.0 {
            self.started_while_held.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn is_held(&self) -> bool {
        self.state.lock().unwrap().0
    }

    fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

/// Releases the hold when the test ends, passed or not, so the held thread never outlives it.
struct ReleaseOnDrop(Arc<MergeHold>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[test]
fn a_second_compaction_of_other_files_runs_while_one_is_held() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(fs.clone(), small_levels(), 4)).unwrap();
    let hold = Arc::new(MergeHold::default());
    let _release = ReleaseOnDrop(hold.clone());
    let armed = Arc::new(AtomicBool::new(false));
    let (hook_hold, hook_armed) = (hold.clone(), armed.clone());
    // Merge 0 after arming is L0's into the base level; merge 1 (a deeper level's, into the
    // bottom) is held.
    assert!(db.set_in_compaction_hook(move || {
        if hook_armed.load(Ordering::SeqCst) {
            hook_hold.on_merge(1);
        }
    }));
    let mut model = BTreeMap::new();
    // The bottom level: 4000 keys of 100 bytes in ~50 tables, merged from two L0 tables (one
    // would only move down whole).
    for pass in 0..2 {
        for i in 0..4000 {
            db.put(&key(i), &value(i, pass, 100)).unwrap();
            model.insert(key(i), value(i, pass, 100));
        }
        db.flush().unwrap();
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    db.wait_for_background_work().unwrap();
    let before = db.stats().compactions;
    armed.store(true, Ordering::SeqCst);
    // Four L0 tables over the whole key range: L0's compaction merges them into the base
    // level, which is then far over its target; its tables go down one level at a time.
    for round in 2..=5 {
        for i in (0..4000).filter(|i| i % 4 == round - 2) {
            db.put(&key(i), &value(i, round, 100)).unwrap();
            model.insert(key(i), value(i, round, 100));
        }
        db.flush().unwrap();
    }
    wait_until("the second merge is held", || hold.is_held());
    let held_at = db.stats().compactions;
    assert!(held_at > before, "L0's merge installed before the hold");
    wait_until(
        "another merge starts and installs beside the held one",
        || hold.started_while_held.load(Ordering::SeqCst) >= 1 && db.stats().compactions > held_at,
    );
    assert!(hold.is_held(), "the held merge was released early");
    assert!(db.running_compactions() >= 1);
    hold.release();
    db.wait_for_background_work().unwrap();
    assert_eq!(scan(&db), model);
    let cmp = db.current_version().comparator().clone();
    check_levels(&*cmp, &live_levels(&db), "after the compactions");
    replay_and_check(&*fs, &*cmp);
    db.close().unwrap();
    let db = Db::open(DIR, options(fs, small_levels(), 4)).unwrap();
    assert_eq!(scan(&db), model);
    db.close().unwrap();
}

/// A deterministic pseudo-random sequence (xorshift), so failures replay.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Keys each writer owns: writer `w` writes only `[w * KEYS_PER_WRITER, (w + 1) * ...)`, so
/// the final state is each writer's own sequence, whatever the interleaving.
const KEYS_PER_WRITER: u64 = 1500;
const WRITERS: u64 = 4;

/// One writer's puts, deletes and range deletions of its keys into its part of the model.
fn write_part(db: &Db, writer: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut rng = Rng(0x5eed + writer);
    let base = writer * KEYS_PER_WRITER;
    for step in 0..6000 {
        let i = base + rng.below(KEYS_PER_WRITER);
        match rng.below(20) {
            0 | 1 => {
                db.delete(&key(i)).unwrap();
                model.remove(&key(i));
            }
            2 => {
                let end = (i + 1 + rng.below(30)).min(base + KEYS_PER_WRITER);
                db.delete_range(&key(i), &key(end)).unwrap();
                for k in i..end {
                    model.remove(&key(k));
                }
            }
            _ => {
                let v = value(i, step, 60 + usize::try_from(rng.below(80)).unwrap());
                db.put(&key(i), &v).unwrap();
                model.insert(key(i), v);
            }
        }
    }
}

#[test]
fn many_writers_and_compaction_threads_in_one_keyspace_match_a_model() {
    let fs = Arc::new(MemFs::new());
    let keyspace = KeyspaceOptions {
        write_buffer_size: 16 << 10,
        level0_compaction_trigger: 2,
        max_subcompactions: 2,
        ..small_levels()
    };
    let db = Db::open(DIR, options(fs.clone(), keyspace.clone(), 6)).unwrap();
    let cmp = db.current_version().comparator().clone();
    let stop = AtomicBool::new(false);
    let writers_done = AtomicBool::new(false);
    let most_running = AtomicUsize::new(0);
    let model = std::thread::scope(|scope| {
        // Checks the live levels while the writers and compactions run.
        let checker = scope.spawn(|| {
            let mut checks = 0;
            while !stop.load(Ordering::SeqCst) {
                check_levels(&*cmp, &live_levels(&db), &format!("live check {checks}"));
                most_running.fetch_max(db.running_compactions(), Ordering::SeqCst);
                checks += 1;
                std::thread::yield_now();
            }
        });
        // Manual compactions of key ranges meanwhile: each step waits for the running
        // compactions it would meet and runs alone (claims invariant 6).
        let manual = scope.spawn(|| {
            let keyspace = db.default_keyspace();
            let mut rng = Rng(0x00c0_ffee);
            let mut done = 0;
            while !writers_done.load(Ordering::SeqCst) || done < 2 {
                let start = rng.below(WRITERS * KEYS_PER_WRITER);
                let end = start + rng.below(2000);
                db.compact_range(&keyspace, Some(&key(start)), Some(&key(end)))
                    .unwrap();
                done += 1;
            }
            done
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let db = &db;
                scope.spawn(move || {
                    let mut model = BTreeMap::new();
                    write_part(db, writer, &mut model);
                    model
                })
            })
            .collect();
        let mut model = BTreeMap::new();
        for writer in writers {
            model.extend(writer.join().unwrap());
        }
        writers_done.store(true, Ordering::SeqCst);
        assert!(manual.join().unwrap() >= 2);
        db.wait_for_background_work().unwrap();
        stop.store(true, Ordering::SeqCst);
        checker.join().unwrap();
        model
    });
    let stats = db.stats();
    assert!(stats.compactions > 10, "{stats:?}");
    assert!(stats.manual_compactions >= 2, "{stats:?}");
    assert_eq!(scan(&db), model);
    check_levels(&*cmp, &live_levels(&db), "after the run");
    let (compaction_edits, replayed) = replay_and_check(&*fs, &*cmp);
    // The MANIFEST never rolled over: it holds every compaction since open.
    assert_eq!(
        compaction_edits,
        stats.compactions + stats.trivial_moves,
        "{stats:?}"
    );
    let numbers = |levels: BTreeMap<(u32, u32), Vec<FileMetaData>>| -> BTreeSet<(u32, u64)> {
        levels
            .into_iter()
            .flat_map(|((_, level), files)| files.into_iter().map(move |f| (level, f.number)))
            .collect()
    };
    assert_eq!(numbers(replayed), numbers(live_levels(&db)));
    eprintln!(
        "most compactions seen running at once: {}",
        most_running.load(Ordering::SeqCst)
    );
    db.close().unwrap();
    let db = Db::open(DIR, options(fs, keyspace, 6)).unwrap();
    assert_eq!(scan(&db), model);
    check_levels(&*cmp, &live_levels(&db), "after the reopen");
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    assert_eq!(scan(&db), model);
    db.close().unwrap();
}
