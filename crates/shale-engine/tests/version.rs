//! Behaviour tests of version tracking (docs/format/manifest.md): version edit encoding,
//! `VersionSet` create / `log_and_apply` / recover, level invariants, live files, crash images
//! at every sync point, injected failures, `CURRENT` damage, and two fixtures:
//! - `tests/testdata/golden_manifest.txt`: a small MANIFEST decoded by this file's own reading
//!   of the format page;
//! - `tests/testdata/version/*.txt`: data-driven scripts of edits with the printed state after
//!   each step.
//!
//! Regenerate both with `SHALE_REGENERATE=1 cargo test -p shale-engine --test version`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::inspect::wal::{LogReader, LogWriter, RecoveryMode};
use shale_engine::inspect::{
    manifest_file_name, DeletedFile, FileMetaData, NewFile, PinnedTable, Version, VersionEdit,
    CURRENT_FILE_NAME, MANIFEST_FORMAT_VERSION,
};
use shale_engine::testing::{VersionSet, MANIFEST_MAGIC, SAFE_TO_IGNORE};
use shale_engine::{Error, WriteBatch, DEFAULT_NUM_LEVELS};
use shale_fs::{
    CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind,
};
use shale_sst::{BytewiseComparator, Comparator, InternalKey, ValueKind, MAX_SEQNO};

const DIR: &str = "/db";

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn bytewise() -> Arc<dyn Comparator> {
    Arc::new(BytewiseComparator)
}

fn meta(number: u64, smallest: &str, largest: &str, seqnos: (u64, u64)) -> FileMetaData {
    FileMetaData {
        number,
        size: 1000 + number,
        smallest: InternalKey::new(smallest.as_bytes(), seqnos.1, ValueKind::Value),
        largest: InternalKey::new(largest.as_bytes(), seqnos.0, ValueKind::Value),
        smallest_seqno: seqnos.0,
        largest_seqno: seqnos.1,
        num_entries: seqnos.1 - seqnos.0 + 1,
        num_deletions: 0,
        creation_time: None,
        oldest_entry_time: None,
        global_seqno: None,
        oldest_blob_file: None,
        pinned_table: PinnedTable::default(),
    }
}

fn create(fs: &MemFs) -> VersionSet {
    VersionSet::create(Arc::new(fs.clone()), dir(), bytewise(), DEFAULT_NUM_LEVELS).unwrap()
}

fn recover(fs: &MemFs) -> shale_engine::Result<VersionSet> {
    VersionSet::recover(Arc::new(fs.clone()), dir(), bytewise(), DEFAULT_NUM_LEVELS)
}

/// What must survive a reopen.
#[derive(Debug, Clone, PartialEq)]
struct State {
    version: Version,
    last_sequence: u64,
    max_keyspace_id: u32,
}

fn state(set: &VersionSet) -> State {
    State {
        version: (*set.current()).clone(),
        last_sequence: set.last_sequence(),
        max_keyspace_id: set.max_keyspace_id(),
    }
}

/// Invariant 3 of the version set: every number in use is below `next_file_number`.
fn assert_numbers_below_next(set: &VersionSet) {
    let next = set.next_file_number();
    assert!(set.manifest_file_number() < next);
    for (_, _, f) in set.current().all_files() {
        assert!(f.number < next, "file {} >= next {next}", f.number);
    }
    for (id, _) in set.keyspaces() {
        assert!(set.log_number(id).unwrap() < next);
    }
}

// ---------------------------------------------------------------------------------------------
// Version edit encoding

fn full_edit() -> VersionEdit {
    let mut edit = VersionEdit {
        manifest_format_version: Some(MANIFEST_FORMAT_VERSION),
        comparator: Some("shale.BytewiseComparator".to_owned()),
        next_file_number: Some(u64::MAX),
        last_sequence: Some(MAX_SEQNO),
        max_keyspace_id: Some(u32::MAX),
        added_keyspaces: vec![(7, "users ✓".to_owned()), (8, String::new())],
        deleted_files: vec![DeletedFile {
            keyspace: u32::MAX,
            level: 6,
            number: 1 << 40,
        }],
        new_files: Vec::new(),
        log_numbers: vec![(0, 12), (7, u64::MAX)],
        dropped_keyspaces: vec![3, u32::MAX],
        wal_ends: vec![(12, 0), (u64::MAX, u64::MAX)],
        wals_tracked: true,
        wal_synced: vec![(12, 4096), (u64::MAX, u64::MAX)],
        blob_file_additions: vec![shale_engine::inspect::blob::BlobFileMeta {
            number: 1 << 50,
            keyspace: u32::MAX,
            total_count: u64::MAX,
            total_bytes: 7,
            garbage_count: 0,
            garbage_bytes: 0,
        }],
        blob_file_garbage: vec![(9, 1, u64::MAX)],
        deleted_blob_files: vec![u64::MAX],
        damaged_files: vec![shale_engine::inspect::DamagedFile {
            number: u64::MAX,
            offset: u64::MAX,
            detail: "block checksum mismatch ✓".to_owned(),
        }],
    };
    let mut m = meta(44, "a", "\u{0}\u{ff}zz", (0, MAX_SEQNO));
    m.size = u64::MAX;
    m.num_deletions = 3;
    m.creation_time = Some(1_700_000_000);
    edit.add_file(7, 3, m);
    edit.add_file(0, 0, meta(45, "k", "k", (5, 5)));
    edit
}

#[test]
fn edit_round_trips_every_field() {
    let edit = full_edit();
    let encoded = edit.encode();
    assert_eq!(VersionEdit::decode(&encoded).unwrap(), edit);
    assert_eq!(VersionEdit::decode(&[]).unwrap(), VersionEdit::new());
    assert!(VersionEdit::new().is_empty());
    let text = edit.to_string();
    for needle in [
        "manifest format version 1",
        "comparator \"shale.BytewiseComparator\"",
        "add keyspace 7",
        "delete file keyspace 4294967295 L6 1099511627776",
        "new file keyspace 7 L3 000044",
        "created 1700000000",
        "log number keyspace 7: 18446744073709551615",
        "drop keyspace 3",
        "wal end 000012.wal: 0",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
}

fn random_key(rng: &mut SmallRng) -> Vec<u8> {
    let len = rng.gen_range(0..12);
    (0..len).map(|_| rng.gen()).collect()
}

fn random_edit(rng: &mut SmallRng) -> VersionEdit {
    let mut edit = VersionEdit::new();
    let maybe = |rng: &mut SmallRng| rng.gen_bool(0.3);
    if maybe(rng) {
        edit.manifest_format_version = Some(rng.gen());
    }
    if maybe(rng) {
        edit.comparator = Some(format!("cmp{}", rng.gen::<u16>()));
    }
    if maybe(rng) {
        edit.next_file_number = Some(rng.gen::<u64>() >> rng.gen_range(0..64));
    }
    if maybe(rng) {
        edit.last_sequence = Some(rng.gen_range(0..=MAX_SEQNO));
    }
    if maybe(rng) {
        edit.max_keyspace_id = Some(rng.gen());
    }
    for _ in 0..rng.gen_range(0..3) {
        edit.added_keyspaces
            .push((rng.gen(), format!("ks\n{}", rng.gen::<u32>())));
    }
    for _ in 0..rng.gen_range(0..4) {
        edit.delete_file(rng.gen(), rng.gen_range(0..100), rng.gen());
    }
    for _ in 0..rng.gen_range(0..4) {
        let a = rng.gen_range(0..=MAX_SEQNO);
        let b = rng.gen_range(a..=MAX_SEQNO);
        let kind =
            |rng: &mut SmallRng| [ValueKind::Value, ValueKind::Deletion][rng.gen_range(0..2)];
        let meta = FileMetaData {
            number: rng.gen(),
            size: rng.gen(),
            smallest: InternalKey::new(&random_key(rng), rng.gen_range(0..=MAX_SEQNO), kind(rng)),
            largest: InternalKey::new(
                &random_key(rng),
                rng.gen_range(0..=MAX_SEQNO),
                ValueKind::RangeDeletion,
            ),
            smallest_seqno: a,
            largest_seqno: b,
            num_entries: rng.gen(),
            num_deletions: rng.gen(),
            creation_time: rng.gen_bool(0.5).then(|| rng.gen()),
            oldest_entry_time: rng.gen_bool(0.5).then(|| rng.gen()),
            global_seqno: rng.gen_bool(0.3).then(|| rng.gen_range(0..=MAX_SEQNO)),
            oldest_blob_file: None,
            pinned_table: PinnedTable::default(),
        };
        edit.add_file(rng.gen(), rng.gen_range(0..100), meta);
    }
    let mut keyspaces: Vec<u32> = (0..rng.gen_range(0..4)).map(|_| rng.gen()).collect();
    keyspaces.sort_unstable();
    keyspaces.dedup();
    for id in keyspaces {
        edit.set_log_number(id, rng.gen());
    }
    for _ in 0..rng.gen_range(0..3) {
        edit.dropped_keyspaces.push(rng.gen());
    }
    edit
}

#[test]
fn random_edits_round_trip() {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    for _ in 0..3000 {
        let edit = random_edit(&mut rng);
        let encoded = edit.encode();
        assert_eq!(VersionEdit::decode(&encoded).unwrap(), edit, "{edit}");
    }
}

/// A decoding that succeeded must be canonical: encoding it again gives bytes that decode to
/// the same edit.
fn assert_stable(decoded: &VersionEdit) {
    assert_eq!(&VersionEdit::decode(&decoded.encode()).unwrap(), decoded);
}

#[test]
fn every_byte_flip_and_truncation_of_an_edit_is_an_error_or_a_valid_edit() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut edits = vec![full_edit()];
    edits.extend((0..20).map(|_| random_edit(&mut rng)));
    let mut flips = 0;
    for edit in &edits {
        let encoded = edit.encode();
        for at in 0..encoded.len() {
            for mask in [0x01u8, 0x10, 0x80, 0xff] {
                let mut damaged = encoded.clone();
                damaged[at] ^= mask;
                if let Ok(decoded) = VersionEdit::decode(&damaged) {
                    assert_stable(&decoded);
                }
                flips += 1;
            }
        }
        // A truncation decodes only at a field boundary, to exactly the fields before it.
        for len in 0..encoded.len() {
            match VersionEdit::decode(&encoded[..len]) {
                Ok(decoded) => assert_eq!(decoded.encode(), &encoded[..len]),
                Err(e) => assert!(
                    e.is_corruption() || matches!(e, Error::NotSupported(_)),
                    "{e}"
                ),
            }
        }
    }
    assert!(flips > 10_000, "{flips}");
}

#[test]
fn unknown_fields_safe_to_ignore_are_skipped_others_refused() {
    let base = VersionEdit {
        last_sequence: Some(9),
        ..VersionEdit::default()
    };
    let mut with_ignorable = base.encode();
    // tag SAFE_TO_IGNORE | 1 (varint: 0x81 0x40), 3 bytes of body.
    let tag = SAFE_TO_IGNORE | 1;
    with_ignorable.extend_from_slice(&[(tag as u8) | 0x80, (tag >> 7) as u8, 3, b'x', b'y', b'z']);
    assert_eq!(VersionEdit::decode(&with_ignorable).unwrap(), base);

    let mut with_unknown = base.encode();
    with_unknown.extend_from_slice(&[42, 0]);
    let err = VersionEdit::decode(&with_unknown).unwrap_err();
    assert!(matches!(err, Error::NotSupported(_)), "{err}");
    assert!(err.to_string().contains("tag 42"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// A workload of valid edits, for recovery and crash tests

/// Makes random but valid edits the way flushes and compactions would.
struct Workload {
    rng: SmallRng,
    next_name: u32,
}

fn key(slot: u32) -> String {
    format!("k{slot:04}")
}

impl Workload {
    fn new(seed: u64) -> Self {
        Workload {
            rng: SmallRng::seed_from_u64(seed),
            next_name: 0,
        }
    }

    /// Applies one random operation and returns a description of it.
    fn step(&mut self, set: &mut VersionSet) -> shale_engine::Result<String> {
        let keyspaces = set.keyspaces();
        let (ks, _) = keyspaces[self.rng.gen_range(0..keyspaces.len())].clone();
        match self.rng.gen_range(0..20) {
            0 => {
                self.next_name += 1;
                let name = format!("ks{}", self.next_name);
                let log = set.log_number(0).unwrap();
                let id = set.create_keyspace(&name, log)?;
                Ok(format!("create keyspace {name} = {id}"))
            }
            1 if ks != 0 => {
                set.drop_keyspace(ks)?;
                Ok(format!("drop keyspace {ks}"))
            }
            2..=8 => self.flush(set, ks),
            _ => self.compact(set, ks),
        }
    }

    fn flush(&mut self, set: &mut VersionSet, ks: u32) -> shale_engine::Result<String> {
        let first = set.last_sequence() + 1;
        let last = first + self.rng.gen_range(0..50);
        set.set_last_sequence(last);
        let a = self.rng.gen_range(0..1000);
        let b = self.rng.gen_range(a..1000);
        let number = set.new_file_number();
        let wal = set.new_file_number();
        let mut edit = VersionEdit::new();
        edit.add_file(ks, 0, meta(number, &key(a), &key(b), (first, last)));
        edit.set_log_number(ks, wal);
        set.log_and_apply(edit)?;
        Ok(format!("flush {number} to keyspace {ks}"))
    }

    /// Compacts one file of a random level with what overlaps it one level down.
    fn compact(&mut self, set: &mut VersionSet, ks: u32) -> shale_engine::Result<String> {
        let version = set.current();
        let levels: Vec<usize> = (0..version.num_levels() - 1)
            .filter(|l| version.num_files(ks, *l) > 0)
            .collect();
        let Some(&level) = levels.get(self.rng.gen_range(0..levels.len().max(1))) else {
            return self.flush(set, ks);
        };
        let files = version.files(ks, level);
        let input = files[self.rng.gen_range(0..files.len())].clone();
        let below = version.overlapping_files(
            ks,
            level + 1,
            input.smallest.user_key(),
            input.largest.user_key(),
        );
        let mut edit = VersionEdit::new();
        let mut smallest = input.smallest.user_key().to_vec();
        let mut largest = input.largest.user_key().to_vec();
        let mut seqnos = (input.smallest_seqno, input.largest_seqno);
        edit.delete_file(ks, level as u32, input.number);
        for f in &below {
            edit.delete_file(ks, level as u32 + 1, f.number);
            smallest = smallest.min(f.smallest.user_key().to_vec());
            largest = largest.max(f.largest.user_key().to_vec());
            seqnos = (
                seqnos.0.min(f.smallest_seqno),
                seqnos.1.max(f.largest_seqno),
            );
        }
        if below.is_empty() && self.rng.gen_bool(0.5) {
            // A trivial move: the same file, one level down.
            edit.add_file(ks, level as u32 + 1, (*input).clone());
            set.log_and_apply(edit)?;
            return Ok(format!("move {} to L{}", input.number, level + 1));
        }
        let number = set.new_file_number();
        let out = meta(
            number,
            std::str::from_utf8(&smallest).unwrap(),
            std::str::from_utf8(&largest).unwrap(),
            seqnos,
        );
        edit.add_file(ks, level as u32 + 1, out);
        set.log_and_apply(edit)?;
        Ok(format!(
            "compact {} + {} files into {number} at L{}",
            input.number,
            below.len(),
            level + 1
        ))
    }
}

#[test]
fn create_apply_recover_gives_the_same_state_and_counters() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    assert_eq!(set.manifest_file_number(), 1);
    assert_eq!(set.next_file_number(), 2);
    assert_eq!(set.keyspaces(), vec![(0, "default".to_owned())]);
    let mut workload = Workload::new(1);
    for round in 0..5 {
        for _ in 0..60 {
            workload.step(&mut set).unwrap();
        }
        let before = state(&set);
        let next = set.next_file_number();
        let old_manifest = set.manifest_file_number();
        drop(set);
        set = recover(&fs).unwrap();
        assert_eq!(state(&set), before, "round {round}");
        // The new MANIFEST took the next number; the old one is gone.
        assert_eq!(set.manifest_file_number(), next);
        assert_eq!(set.next_file_number(), next + 1);
        assert!(!fs
            .exists(&dir().join(manifest_file_name(old_manifest)))
            .unwrap());
        assert_numbers_below_next(&set);
    }
    assert!(set.current().total_files() > 10, "{}", set.current());
    assert!(set.keyspaces().len() > 1);
}

#[test]
fn recovery_marks_numbers_of_files_in_the_directory_used() {
    let fs = MemFs::new();
    drop(create(&fs));
    // A WAL created after the last edit (its number never reached the MANIFEST).
    fs.write_file_for_test(dir().join("000040.wal"), b"")
        .unwrap();
    fs.write_file_for_test(dir().join("OPTIONS-000041"), b"")
        .unwrap();
    let mut set = recover(&fs).unwrap();
    assert_eq!(set.manifest_file_number(), 42);
    assert_eq!(set.new_file_number(), 43);
}

// ---------------------------------------------------------------------------------------------
// Level invariants and refused edits

#[test]
fn level_overlap_and_other_invalid_edits_are_refused_without_harm() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    set.set_last_sequence(100);
    let mut edit = VersionEdit::new();
    edit.add_file(0, 1, meta(10, "a", "c", (1, 5)));
    edit.add_file(0, 1, meta(11, "e", "g", (1, 5)));
    set.log_and_apply(edit).unwrap();
    let before = state(&set);
    let size = set.manifest_size();

    let refuse = |set: &mut VersionSet, edit: VersionEdit, needle: &str| {
        let err = set.log_and_apply(edit).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains(needle), "{needle:?} not in {err}");
    };
    let one = |level: u32, m: FileMetaData| {
        let mut edit = VersionEdit::new();
        edit.add_file(0, level, m);
        edit
    };
    refuse(
        &mut set,
        one(1, meta(12, "b", "d", (1, 5))),
        "would overlap",
    );
    // Sharing one user key at the boundary is an overlap too.
    refuse(
        &mut set,
        one(1, meta(12, "c", "d", (1, 5))),
        "would overlap",
    );
    refuse(
        &mut set,
        one(1, meta(12, "d", "h", (1, 5))),
        "would overlap",
    );
    refuse(
        &mut set,
        one(1, meta(12, "0", "z", (1, 5))),
        "would overlap",
    );
    refuse(&mut set, one(2, meta(10, "x", "y", (1, 5))), "is live");
    refuse(&mut set, one(7, meta(12, "x", "y", (1, 5))), "levels");
    refuse(&mut set, one(0, meta(12, "y", "x", (1, 5))), "sorts after");
    refuse(
        &mut set,
        one(0, meta(12, "x", "y", (1, 101))),
        "last sequence",
    );
    let mut edit = VersionEdit::new();
    edit.add_file(5, 0, meta(12, "x", "y", (1, 5)));
    refuse(&mut set, edit, "keyspace 5 is not live");
    let mut edit = VersionEdit::new();
    edit.delete_file(0, 2, 10);
    refuse(&mut set, edit, "it is in keyspace 0 L1");
    let mut edit = VersionEdit::new();
    edit.delete_file(0, 1, 99);
    refuse(&mut set, edit, "not live");
    let mut edit = VersionEdit::new();
    edit.set_log_number(0, 5);
    set.log_and_apply(edit).unwrap();
    let before = State {
        version: (*set.current()).clone(),
        ..before
    };
    let size_after_log = set.manifest_size();
    assert!(size_after_log > size);
    let mut edit = VersionEdit::new();
    edit.set_log_number(0, 4);
    refuse(&mut set, edit, "cannot go back");
    let mut edit = VersionEdit::new();
    edit.dropped_keyspaces.push(0);
    refuse(&mut set, edit, "cannot be dropped");
    let mut edit = VersionEdit::new();
    edit.comparator = Some("x".into());
    refuse(&mut set, edit, "COMPARATOR");
    let mut edit = VersionEdit::new();
    edit.added_keyspaces.push((0, "again".into()));
    refuse(&mut set, edit, "never reused");

    // Nothing was written or changed, and the set still works.
    assert_eq!(state(&set), before);
    assert_eq!(set.manifest_size(), size_after_log);
    assert!(set.failed_reason().is_none());
    set.log_and_apply(one(1, meta(12, "d", "d", (1, 5))))
        .unwrap();
    let files: Vec<u64> = set.current().files(0, 1).iter().map(|f| f.number).collect();
    assert_eq!(files, vec![10, 12, 11]);
    let after = state(&set);
    drop(set);
    assert_eq!(state(&recover(&fs).unwrap()), after);
}

#[test]
fn l0_is_newest_first_and_deeper_levels_are_sorted() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    set.set_last_sequence(100);
    let mut edit = VersionEdit::new();
    edit.add_file(0, 0, meta(20, "a", "z", (1, 10)));
    edit.add_file(0, 0, meta(21, "a", "z", (11, 30)));
    edit.add_file(0, 0, meta(22, "m", "n", (5, 30)));
    edit.add_file(0, 0, meta(23, "b", "c", (40, 50)));
    edit.add_file(0, 2, meta(24, "q", "r", (1, 1)));
    edit.add_file(0, 2, meta(25, "a", "b", (1, 1)));
    edit.add_file(0, 2, meta(26, "d", "e", (1, 1)));
    set.log_and_apply(edit).unwrap();
    let v = set.current();
    let numbers = |level| -> Vec<u64> { v.files(0, level).iter().map(|f| f.number).collect() };
    assert_eq!(numbers(0), vec![23, 22, 21, 20]);
    assert_eq!(numbers(2), vec![25, 26, 24]);
    assert_eq!(v.level_size(0, 2), 1024 + 1025 + 1026);
    assert_eq!(v.num_files(0, 0), 4);
    assert_eq!(v.total_files(), 7);
    assert!(v.files(0, 9).is_empty() && v.files(9, 0).is_empty());
}

#[test]
fn overlapping_files_matches_a_scan() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    let mut workload = Workload::new(3);
    for _ in 0..300 {
        workload.step(&mut set).unwrap();
    }
    let v = set.current();
    let mut rng = SmallRng::seed_from_u64(4);
    let mut found = 0;
    for _ in 0..2000 {
        let (ks, _) = v.keyspaces()[rng.gen_range(0..v.keyspaces().len())].clone();
        let level = rng.gen_range(0..v.num_levels());
        let a = key(rng.gen_range(0..1000));
        let b = key(rng.gen_range(0..1000));
        let got: Vec<u64> = v
            .overlapping_files(ks, level, a.as_bytes(), b.as_bytes())
            .iter()
            .map(|f| f.number)
            .collect();
        let want: Vec<u64> = v
            .files(ks, level)
            .iter()
            .filter(|f| {
                a <= b
                    && f.largest.user_key() >= a.as_bytes()
                    && f.smallest.user_key() <= b.as_bytes()
            })
            .map(|f| f.number)
            .collect();
        assert_eq!(got, want, "ks {ks} L{level} {a}..{b}");
        found += got.len();
    }
    assert!(found > 100, "{found}");
}

// ---------------------------------------------------------------------------------------------
// Keyspaces

#[test]
fn keyspaces_are_created_dropped_and_never_reuse_ids() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    assert_eq!(set.create_keyspace("users", 0).unwrap(), 1);
    assert_eq!(set.create_keyspace("orders", 0).unwrap(), 2);
    assert_eq!(set.keyspace_id("orders"), Some(2));
    for bad in ["users", "", "tab\there", &"x".repeat(256)] {
        let err = set.create_keyspace(bad, 0).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    assert!(matches!(
        set.drop_keyspace(0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        set.drop_keyspace(9),
        Err(Error::InvalidArgument(_))
    ));
    set.set_last_sequence(10);
    let mut edit = VersionEdit::new();
    edit.add_file(2, 0, meta(50, "a", "b", (1, 10)));
    set.log_and_apply(edit).unwrap();
    set.drop_keyspace(2).unwrap();
    assert_eq!(set.keyspace_id("orders"), None);
    assert!(!set.live_files().contains(&50));
    assert_eq!(set.max_keyspace_id(), 2);
    drop(set);
    let mut set = recover(&fs).unwrap();
    assert_eq!(
        set.keyspaces(),
        vec![(0, "default".to_owned()), (1, "users".to_owned())]
    );
    // The dropped id stays retired across a recovery (and the snapshot it wrote).
    assert_eq!(set.create_keyspace("orders", 7).unwrap(), 3);
    assert_eq!(set.log_number(3), Some(7));
    assert_eq!(set.min_log_number_to_keep(), 0);
    let mut edit = VersionEdit::new();
    edit.set_log_number(0, 9);
    edit.set_log_number(1, 8);
    set.log_and_apply(edit).unwrap();
    assert_eq!(set.min_log_number_to_keep(), 7);
}

#[test]
fn damage_marks_survive_recovery_and_leave_with_their_tables() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    let users = set.create_keyspace("users", 0).unwrap();
    set.set_last_sequence(10);
    let mut edit = VersionEdit::new();
    edit.add_file(0, 1, meta(50, "a", "b", (1, 10)));
    edit.add_file(0, 1, meta(51, "c", "d", (1, 10)));
    edit.add_file(users, 0, meta(52, "a", "b", (1, 10)));
    set.log_and_apply(edit).unwrap();
    // Only a live table can be marked; the refused edit changes nothing.
    let mut not_live = VersionEdit::new();
    not_live.mark_damaged(49, 0, "gone");
    let err = set.log_and_apply(not_live).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let mut marks = VersionEdit::new();
    marks.mark_damaged(50, 4096, "block checksum mismatch");
    marks.mark_damaged(51, 0, "bad footer");
    marks.mark_damaged(52, 7, "bad block");
    set.log_and_apply(marks).unwrap();
    let marked =
        |set: &VersionSet| -> Vec<u64> { set.current().damaged_files().keys().copied().collect() };
    assert_eq!(marked(&set), [50, 51, 52]);
    // A restart reads them back (record 0 of the new MANIFEST carries them on).
    drop(set);
    let mut set = recover(&fs).unwrap();
    assert_eq!(marked(&set), [50, 51, 52]);
    let version = set.current();
    let mark = &version.damaged_files()[&50];
    assert_eq!(
        (mark.offset, mark.detail.as_str()),
        (4096, "block checksum mismatch")
    );
    // A move to another level keeps the mark (the same file); a deleted table takes its mark
    // along, and a dropped keyspace the marks of all its tables.
    let mut edit = VersionEdit::new();
    edit.delete_file(0, 1, 50);
    edit.add_file(0, 2, meta(50, "a", "b", (1, 10)));
    set.log_and_apply(edit).unwrap();
    assert_eq!(marked(&set), [50, 51, 52]);
    let mut edit = VersionEdit::new();
    edit.delete_file(0, 1, 51);
    set.log_and_apply(edit).unwrap();
    set.drop_keyspace(users).unwrap();
    assert_eq!(marked(&set), [50]);
    drop(set);
    let set = recover(&fs).unwrap();
    assert_eq!(marked(&set), [50]);
}

// ---------------------------------------------------------------------------------------------
// Live files

#[test]
fn live_files_keep_the_files_of_held_versions() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    set.set_last_sequence(10);
    let ks = set.create_keyspace("t", 0).unwrap();
    let mut edit = VersionEdit::new();
    edit.add_file(0, 0, meta(10, "a", "b", (1, 2)));
    edit.add_file(0, 0, meta(11, "c", "d", (3, 4)));
    edit.add_file(ks, 1, meta(12, "c", "d", (3, 4)));
    set.log_and_apply(edit).unwrap();
    assert_eq!(set.live_files(), BTreeSet::from([10, 11, 12]));

    let reader = set.current();
    let mut edit = VersionEdit::new();
    edit.delete_file(0, 0, 10);
    edit.add_file(0, 1, meta(13, "a", "b", (1, 2)));
    set.log_and_apply(edit).unwrap();
    assert_eq!(set.live_files(), BTreeSet::from([10, 11, 12, 13]));

    let second_reader = set.current();
    set.drop_keyspace(ks).unwrap();
    let mut edit = VersionEdit::new();
    edit.delete_file(0, 0, 11);
    set.log_and_apply(edit).unwrap();
    assert_eq!(set.live_files(), BTreeSet::from([10, 11, 12, 13]));
    drop(reader);
    assert_eq!(set.live_files(), BTreeSet::from([11, 12, 13]));
    drop(second_reader);
    assert_eq!(set.live_files(), BTreeSet::from([13]));
}

// ---------------------------------------------------------------------------------------------
// Crash images at every sync point

type Images = Arc<Mutex<Vec<(usize, MemFs)>>>;

/// Captures a crash image in every mode at every sync point of `fs`, tagged with the number of
/// operations acknowledged at that moment.
fn capture_images(fs: &MemFs, acked: &Arc<AtomicUsize>, seeds: u64) -> Images {
    let images: Images = Arc::default();
    let (fs2, acked2, images2) = (fs.clone(), acked.clone(), images.clone());
    fs.set_sync_hook(Some(Arc::new(move |_| {
        let k = acked2.load(Ordering::SeqCst);
        let mut images = images2.lock().unwrap();
        images.push((k, fs2.crash_image(CrashMode::DropUnsynced)));
        for seed in 0..seeds {
            images.push((k, fs2.crash_image(CrashMode::Torn { seed })));
        }
    })));
    images
}

#[test]
fn crash_images_at_every_sync_point_recover_the_last_acknowledged_state() {
    let fs = MemFs::new();
    let acked = Arc::new(AtomicUsize::new(0));
    let images = capture_images(&fs, &acked, 2);
    // acked[i] is the state after i + 1 acknowledged operations (create is the first).
    let mut states = Vec::new();
    let mut set = create(&fs);
    // A small limit: rollovers (new MANIFEST + CURRENT switch) happen along the way.
    set.set_max_manifest_size(400);
    states.push(state(&set));
    acked.store(1, Ordering::SeqCst);
    let mut workload = Workload::new(11);
    let mut manifests = BTreeSet::from([set.manifest_file_number()]);
    for _ in 0..80 {
        workload.step(&mut set).unwrap();
        manifests.insert(set.manifest_file_number());
        states.push(state(&set));
        acked.fetch_add(1, Ordering::SeqCst);
    }
    fs.set_sync_hook(None);
    assert!(manifests.len() >= 4, "too few rollovers: {manifests:?}");

    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() > 3 * 80, "{}", images.len());
    let mut newer = 0;
    for (i, (k, image)) in images.iter().enumerate() {
        match recover(image) {
            Err(e) => {
                // Only before `create` returned may there be no database yet.
                assert_eq!(*k, 0, "image {i} (after {k} acks): {e}");
                assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
            }
            Ok(set) => {
                let got = state(&set);
                // Never older than the last acknowledged state: edits are synced first.
                if *k > 0 && got == states[k - 1] {
                    continue;
                }
                // Or the operation in flight, if its record was synced before the crash.
                assert_eq!(
                    Some(&got),
                    states.get(*k),
                    "image {i} taken after {k} acknowledged operations"
                );
                newer += 1;
            }
        }
    }
    assert!(newer > 50, "{newer}");
}

#[test]
fn crash_images_during_recovery_recover_the_same_state() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    let mut workload = Workload::new(5);
    for _ in 0..50 {
        workload.step(&mut set).unwrap();
    }
    let expected = state(&set);
    drop(set);
    let acked = Arc::new(AtomicUsize::new(0));
    let images = capture_images(&fs, &acked, 3);
    let set = recover(&fs).unwrap();
    fs.set_sync_hook(None);
    assert_eq!(state(&set), expected);
    let images = std::mem::take(&mut *images.lock().unwrap());
    // New MANIFEST synced, CURRENT.tmp synced, directory synced: 3 points, 4 images each.
    assert_eq!(images.len(), 12);
    for (_, image) in images {
        let recovered = recover(&image).unwrap();
        assert_eq!(state(&recovered), expected);
        // And the image of a recovered image recovers again.
        drop(recovered);
        let again = image.crash_image(CrashMode::DropUnsynced);
        assert_eq!(state(&recover(&again).unwrap()), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Injected failures: paused until a roll, never retried, and recoverable

fn fault_set(memfs: &MemFs) -> (FaultFs, VersionSet) {
    let fault = FaultFs::new(Arc::new(memfs.clone()));
    let set = VersionSet::create(Arc::new(fault.clone()), dir(), bytewise(), 7).unwrap();
    (fault, set)
}

fn flush_edit(set: &mut VersionSet, number: u64, key: &str) -> VersionEdit {
    let seqno = set.last_sequence() + 1;
    set.set_last_sequence(seqno);
    set.mark_file_number_used(number);
    let mut edit = VersionEdit::new();
    edit.add_file(0, 0, meta(number, key, key, (seqno, seqno)));
    edit
}

/// After a failed write, every writing call is refused with `Paused` naming it (and writes
/// nothing) until the MANIFEST is rolled.
fn assert_paused(set: &mut VersionSet, first: &str) {
    for _ in 0..2 {
        let edit = flush_edit(set, 900, "z");
        let err = set.log_and_apply(edit).unwrap_err();
        match &err {
            Error::Paused { reason } => assert!(reason.contains(first), "{reason}"),
            other => panic!("{other:?}"),
        }
        let err = set.create_keyspace("later", 0).unwrap_err();
        assert!(err.to_string().contains(first), "{err}");
    }
    assert_eq!(set.failed_reason(), Some(first));
}

fn files_of(set: &VersionSet) -> Vec<u64> {
    set.current()
        .all_files()
        .map(|(_, _, f)| f.number)
        .collect()
}

#[test]
fn failed_manifest_sync_pauses_and_recovery_shows_the_edit_or_not() {
    let memfs = MemFs::new();
    let (fault, mut set) = fault_set(&memfs);
    let edit = flush_edit(&mut set, 10, "a");
    set.log_and_apply(edit).unwrap();
    let syncs_before = fault.op_count(OpKind::SyncData);
    fault.add_rule(
        FaultRule::new(
            OpKind::SyncData,
            FaultTrigger::Nth(1),
            FaultError::FailedSync,
        )
        .path_contains("MANIFEST"),
    );
    let edit = flush_edit(&mut set, 11, "b");
    let err = set.log_and_apply(edit).unwrap_err();
    assert!(matches!(&err, Error::Io(e) if e.is_injected()), "{err}");
    let first = err.to_string();
    assert_paused(&mut set, &first);
    // The failed sync was never retried, and the edit was not installed.
    assert_eq!(fault.op_count(OpKind::SyncData), syncs_before + 1);
    assert_eq!(files_of(&set), vec![10]);
    drop(set);

    // A power cut: the unsynced record is gone.
    let image = memfs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(files_of(&recover(&image).unwrap()), vec![10]);
    // A process restart: the record reached the OS whole, so the edit is there. Both are
    // correct: it was never acknowledged (docs/format/manifest.md, "Writer").
    assert_eq!(files_of(&recover(&memfs).unwrap()), vec![11, 10]);
}

#[test]
fn short_manifest_write_pauses_and_recovery_drops_the_torn_record() {
    let memfs = MemFs::new();
    let (fault, mut set) = fault_set(&memfs);
    let edit = flush_edit(&mut set, 10, "a");
    set.log_and_apply(edit).unwrap();
    fault.add_rule(
        FaultRule::new(OpKind::Append, FaultTrigger::Nth(1), FaultError::ShortWrite)
            .path_contains("MANIFEST"),
    );
    let edit = flush_edit(&mut set, 11, "b");
    let first = set.log_and_apply(edit).unwrap_err().to_string();
    assert_paused(&mut set, &first);
    drop(set);
    assert_eq!(files_of(&recover(&memfs).unwrap()), vec![10]);
    for seed in 0..4 {
        let image = memfs.crash_image(CrashMode::Torn { seed });
        assert_eq!(files_of(&recover(&image).unwrap()), vec![10]);
    }
}

/// The MANIFEST files in the directory.
fn manifest_names(fs: &MemFs) -> Vec<String> {
    fs.list(dir())
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect()
}

#[test]
fn failures_at_each_step_of_a_rollover_pause_until_a_roll_succeeds() {
    let steps: [(OpKind, &str, FaultError); 6] = [
        (OpKind::Create, "MANIFEST", FaultError::Eio),
        (OpKind::Append, "MANIFEST", FaultError::NoSpace),
        (OpKind::SyncData, "MANIFEST", FaultError::FailedSync),
        (OpKind::SyncData, "CURRENT", FaultError::FailedSync),
        (OpKind::Rename, "CURRENT", FaultError::Eio),
        (OpKind::SyncDir, "db", FaultError::FailedSync),
    ];
    for (op, path, error) in steps {
        let memfs = MemFs::new();
        let (fault, mut set) = fault_set(&memfs);
        let mut number = 10;
        let mut acked = Vec::new();
        // Fill the MANIFEST past the limit set below (more than twice its snapshot).
        while set.manifest_size() <= 600 {
            let edit = flush_edit(&mut set, number, "k");
            set.log_and_apply(edit).unwrap();
            acked.push(number);
            number += 1;
        }
        let old_manifest = set.manifest_file_number();
        set.set_max_manifest_size(300);
        fault.add_rule(FaultRule::new(op, FaultTrigger::Always, error).path_contains(path));
        let edit = flush_edit(&mut set, number, "k");
        let err = set.log_and_apply(edit).unwrap_err();
        let first = err.to_string();
        assert!(first.contains("injected"), "{op:?}: {first}");
        assert_paused(&mut set, &first);
        assert_eq!(set.manifest_file_number(), old_manifest, "{op:?}");
        // The failed edit's table stays live: a MANIFEST a reopen may read can name it.
        assert!(set.live_files().contains(&number), "{op:?}");
        // A roll while the fault lasts fails too, and stays due.
        assert!(set.roll_manifest().is_err(), "{op:?}");
        assert!(set.needs_roll(), "{op:?}");
        assert!(
            manifest_names(&memfs).contains(&manifest_file_name(old_manifest)),
            "{op:?}: the old MANIFEST was deleted before CURRENT moved"
        );

        let without: BTreeSet<u64> = acked.iter().copied().collect();
        let mut with = without.clone();
        with.insert(number);
        // (Images only: recovering the live files would write a MANIFEST under the set.)
        for image in [
            memfs.crash_image(CrashMode::DropUnsynced),
            memfs.crash_image(CrashMode::Torn { seed: 1 }),
        ] {
            let files: BTreeSet<u64> = files_of(&recover(&image).unwrap()).into_iter().collect();
            assert!(files == without || files == with, "{op:?}: {files:?}");
        }

        // The fault lifted, the roll succeeds: CURRENT names a new MANIFEST holding the
        // in-memory version (without the failed edit), the old ones are gone, and edits go on.
        fault.clear_rules();
        let images = Arc::new(AtomicUsize::new(0));
        let captured = capture_images(&memfs, &images, 1);
        set.roll_manifest().unwrap();
        memfs.set_sync_hook(None);
        assert!(!set.needs_roll(), "{op:?}");
        assert!(!set.live_files().contains(&number), "{op:?}");
        assert_ne!(set.manifest_file_number(), old_manifest, "{op:?}");
        assert_eq!(
            manifest_names(&memfs),
            vec![manifest_file_name(set.manifest_file_number())],
            "{op:?}"
        );
        // A crash at any sync of the roll recovers with or without the failed edit.
        for (_, image) in std::mem::take(&mut *captured.lock().unwrap()) {
            let files: BTreeSet<u64> = files_of(&recover(&image).unwrap()).into_iter().collect();
            assert!(
                files == without || files == with,
                "{op:?}: roll image {files:?}"
            );
        }
        let expected = state(&set);
        let edit = flush_edit(&mut set, number + 1, "k");
        set.log_and_apply(edit).unwrap();
        let expected_after = state(&set);
        assert_ne!(expected, expected_after);
        drop(set);
        let recovered = recover(&memfs).unwrap();
        assert_eq!(state(&recovered), expected_after, "{op:?}");
        assert!(!files_of(&recovered).contains(&number), "{op:?}");
    }
}

#[test]
fn rollover_switches_current_and_removes_the_old_manifest() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    set.set_max_manifest_size(1000);
    let mut workload = Workload::new(21);
    let mut seen = BTreeSet::new();
    while seen.len() < 4 {
        workload.step(&mut set).unwrap();
        let number = set.manifest_file_number();
        if seen.insert(number) {
            let manifests: Vec<String> = fs
                .list(dir())
                .unwrap()
                .into_iter()
                .filter(|n| n.starts_with("MANIFEST-"))
                .collect();
            assert_eq!(manifests, vec![manifest_file_name(number)]);
            let current =
                String::from_utf8(fs.file_contents(dir().join("CURRENT")).unwrap()).unwrap();
            assert!(
                current.starts_with(&format!("{} crc32c=", manifest_file_name(number))),
                "{current}"
            );
        }
    }
    // After a rollover the MANIFEST is its snapshot and the edit that caused the rollover.
    let expected = state(&set);
    drop(set);
    assert_eq!(state(&recover(&fs).unwrap()), expected);
}

// ---------------------------------------------------------------------------------------------
// Damage, foreign files and refusals at recovery

/// A small database: the MANIFEST's bytes and the state after each edit.
fn small_database() -> (MemFs, Vec<State>) {
    let fs = MemFs::new();
    let mut set = create(&fs);
    let mut states = vec![state(&set)];
    set.create_keyspace("t", 0).unwrap();
    states.push(state(&set));
    for i in 0..3 {
        let edit = flush_edit(&mut set, 10 + i, &key(i as u32));
        set.log_and_apply(edit).unwrap();
        states.push(state(&set));
    }
    (fs, states)
}

#[test]
fn every_byte_flip_of_a_manifest_is_an_error_or_an_acknowledged_state() {
    let (fs, states) = small_database();
    let manifest = dir().join(manifest_file_name(1));
    let bytes = fs.file_contents(&manifest).unwrap();
    let current = fs.file_contents(dir().join(CURRENT_FILE_NAME)).unwrap();
    // Where the last record starts: damage there looks like a torn write (the WAL's limit).
    let file = fs.open_read(&manifest).unwrap();
    let mut reader = LogReader::new(file, 1, RecoveryMode::AbsoluteConsistency).unwrap();
    let mut last_start = 0;
    while let Some((_, offset)) = reader.read_record().unwrap() {
        last_start = offset;
    }
    let (final_state, before_last) = (&states[states.len() - 1], &states[states.len() - 2]);
    let (mut errors, mut dropped) = (0, 0);
    for at in 0..bytes.len() {
        for mask in [0x01u8, 0x80] {
            let image = MemFs::new();
            let mut damaged = bytes.clone();
            damaged[at] ^= mask;
            image.write_file_for_test(&manifest, &damaged).unwrap();
            image
                .write_file_for_test(dir().join(CURRENT_FILE_NAME), &current)
                .unwrap();
            match recover(&image) {
                Err(e) => {
                    errors += 1;
                    assert!(
                        e.is_corruption() || matches!(e, Error::NotSupported(_)),
                        "byte {at}: {e}"
                    );
                }
                Ok(set) if state(&set) == *final_state => {
                    // Only bytes no checksum covers: block padding (none here).
                    panic!("byte {at} changed nothing");
                }
                Ok(set) => {
                    assert!(at >= last_start as usize, "byte {at}: {:?}", state(&set));
                    assert_eq!(&state(&set), before_last, "byte {at}");
                    dropped += 1;
                }
            }
        }
    }
    assert!(
        errors > 400 && dropped > 0,
        "{errors} errors, {dropped} dropped"
    );
}

#[test]
fn current_damage_is_corruption_naming_current() {
    let (fs, states) = small_database();
    let path = dir().join(CURRENT_FILE_NAME);
    let current = fs.file_contents(&path).unwrap();
    assert_eq!(current.len(), "MANIFEST-000001 crc32c=xxxxxxxx\n".len());
    for at in 0..current.len() {
        for mask in [0x01u8, 0x02, 0x20, 0x80] {
            let mut damaged = current.clone();
            damaged[at] ^= mask;
            let image = fs.crash_image(CrashMode::DropUnsynced);
            image.write_file_for_test(&path, &damaged).unwrap();
            let err = recover(&image).unwrap_err();
            assert!(err.is_corruption(), "byte {at}: {err}");
            assert!(err.to_string().contains("/db/CURRENT"), "{err}");
        }
    }
    for len in 0..current.len() {
        let image = fs.crash_image(CrashMode::DropUnsynced);
        image.write_file_for_test(&path, &current[..len]).unwrap();
        assert!(recover(&image).unwrap_err().is_corruption());
    }
    // A valid CURRENT naming a MANIFEST that does not exist.
    let image = fs.crash_image(CrashMode::DropUnsynced);
    let name = manifest_file_name(99);
    let line = format!("{name} crc32c={:08x}\n", crc32c::crc32c(name.as_bytes()));
    image.write_file_for_test(&path, line.as_bytes()).unwrap();
    let err = recover(&image).unwrap_err();
    assert!(
        err.to_string()
            .contains("MANIFEST-000099, which does not exist"),
        "{err}"
    );
    // No CURRENT: no database.
    let empty = MemFs::new();
    let err = recover(&empty).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(!VersionSet::exists(&empty, dir()).unwrap());
    // The undamaged database still opens, and create refuses to overwrite it.
    assert_eq!(&state(&recover(&fs).unwrap()), states.last().unwrap());
    let err = VersionSet::create(Arc::new(fs.clone()), dir(), bytewise(), 7).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

/// Points CURRENT at `MANIFEST-000009` holding `records` (a WAL-format log).
fn planted_manifest(records: &[Vec<u8>]) -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(dir()).unwrap();
    let path = dir().join(manifest_file_name(9));
    let mut writer = LogWriter::new(fs.create(&path).unwrap(), 9).unwrap();
    for record in records {
        writer.add_record(record).unwrap();
    }
    writer.sync().unwrap();
    let name = manifest_file_name(9);
    let line = format!("{name} crc32c={:08x}\n", crc32c::crc32c(name.as_bytes()));
    fs.write_file_for_test(dir().join(CURRENT_FILE_NAME), line.as_bytes())
        .unwrap();
    fs.sync_dir(dir()).unwrap();
    fs
}

fn snapshot_record(version: u32, comparator: &str) -> VersionEdit {
    VersionEdit {
        manifest_format_version: Some(version),
        comparator: Some(comparator.to_owned()),
        next_file_number: Some(10),
        last_sequence: Some(0),
        max_keyspace_id: Some(0),
        added_keyspaces: vec![(0, "default".to_owned())],
        ..VersionEdit::default()
    }
}

#[test]
fn foreign_newer_and_mismatched_manifests_are_refused() {
    // A write-ahead log where a MANIFEST should be.
    let mut batch = WriteBatch::new();
    batch.put(0, b"k", b"v").unwrap();
    batch.set_first_seqno(1);
    let fs = planted_manifest(&[batch.data().to_vec()]);
    let err = recover(&fs).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("not a Shale MANIFEST"), "{err}");

    let fs =
        planted_manifest(&[
            snapshot_record(MANIFEST_FORMAT_VERSION + 1, BytewiseComparator::NAME).encode(),
        ]);
    let err = recover(&fs).unwrap_err();
    assert!(matches!(err, Error::NotSupported(_)), "{err}");
    assert!(err.to_string().contains("newer Shale"), "{err}");

    let fs = planted_manifest(&[snapshot_record(0, BytewiseComparator::NAME).encode()]);
    assert!(recover(&fs).unwrap_err().is_corruption());

    let fs = planted_manifest(&[snapshot_record(1, "acme.ReverseComparator").encode()]);
    let err = recover(&fs).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("acme.ReverseComparator") && text.contains(BytewiseComparator::NAME),
        "{text}"
    );

    // A second header, a missing default keyspace, an edit that breaks a rule: corruption
    // naming the record.
    let snapshot = snapshot_record(1, BytewiseComparator::NAME);
    let mut bad_edit = VersionEdit::new();
    bad_edit.delete_file(0, 1, 77);
    let fs = planted_manifest(&[snapshot.encode(), bad_edit.encode()]);
    match recover(&fs).unwrap_err() {
        Error::Corruption {
            file,
            offset,
            detail,
        } => {
            assert_eq!(file, dir().join(manifest_file_name(9)));
            assert!(offset > 31, "{offset}");
            assert!(detail.contains("not live"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    let fs = planted_manifest(&[snapshot.encode(), snapshot.encode()]);
    assert!(recover(&fs).unwrap_err().is_corruption());
    let mut no_default = snapshot.clone();
    no_default.added_keyspaces.clear();
    let fs = planted_manifest(&[no_default.encode()]);
    assert!(recover(&fs)
        .unwrap_err()
        .to_string()
        .contains("default keyspace"));
    let fs = planted_manifest(&[]);
    assert!(recover(&fs)
        .unwrap_err()
        .to_string()
        .contains("no complete record"));

    // An ignorable field from a newer Shale is skipped.
    let mut record = snapshot.encode();
    let tag = SAFE_TO_IGNORE | 3;
    record.extend_from_slice(&[(tag as u8) | 0x80, (tag >> 7) as u8, 2, 0xab, 0xcd]);
    let fs = planted_manifest(&[record]);
    assert_eq!(
        recover(&fs).unwrap().keyspaces(),
        vec![(0, "default".to_owned())]
    );
}

#[test]
fn opening_with_fewer_levels_than_the_files_use_is_refused() {
    let fs = MemFs::new();
    let mut set = create(&fs);
    set.set_last_sequence(5);
    let mut edit = VersionEdit::new();
    edit.add_file(0, 5, meta(10, "a", "b", (1, 5)));
    set.log_and_apply(edit).unwrap();
    drop(set);
    let err = VersionSet::recover(Arc::new(fs.clone()), dir(), bytewise(), 4).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("at least 6 levels"), "{err}");
    assert!(VersionSet::recover(Arc::new(fs.clone()), dir(), bytewise(), 0).is_err());
    // Nothing was changed by the refused opens.
    assert_eq!(recover(&fs).unwrap().current().files(0, 5)[0].number, 10);
}

// ---------------------------------------------------------------------------------------------
// Golden MANIFEST: this file's own reading of docs/format/manifest.md

fn varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut value = 0;
    let mut shift = 0;
    loop {
        let byte = bytes[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return value;
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe_record(out: &mut String, record: &[u8]) {
    let names = [
        "",
        "MANIFEST_HEADER",
        "COMPARATOR",
        "NEXT_FILE_NUMBER",
        "LAST_SEQUENCE",
        "MAX_KEYSPACE_ID",
        "ADD_KEYSPACE",
        "DELETED_FILE",
        "NEW_FILE",
        "LOG_NUMBER",
        "DROP_KEYSPACE",
        "WAL_END",
    ];
    let mut at = 0;
    while at < record.len() {
        let start = at;
        let tag = varint(record, &mut at);
        let len = varint(record, &mut at) as usize;
        let body = &record[at..at + len];
        at += len;
        let name = names.get(tag as usize).copied().unwrap_or("?");
        writeln!(
            out,
            "  @{start:<4} tag {tag:>2} {name:<16} {len:>3} bytes: {}",
            hex(body)
        )
        .unwrap();
    }
}

fn golden_printout() -> String {
    let fs = MemFs::new();
    let mut set = create(&fs);
    let id = set.create_keyspace("users", 0).unwrap();
    set.set_last_sequence(7);
    let mut edit = VersionEdit::new();
    let mut m = meta(3, "apple", "cherry", (1, 7));
    m.creation_time = Some(1_700_000_000);
    edit.add_file(id, 0, m);
    edit.set_log_number(id, 4);
    set.log_and_apply(edit).unwrap();
    let mut edit = VersionEdit::new();
    edit.delete_file(id, 0, 3);
    edit.add_file(id, 1, meta(3, "apple", "cherry", (1, 7)));
    edit.set_wal_end(4, 4096);
    set.log_and_apply(edit).unwrap();

    let mut out = String::new();
    writeln!(
        out,
        "# docs/format/manifest.md, written by crates/shale-engine/tests/version.rs"
    )
    .unwrap();
    let current = fs.file_contents(dir().join(CURRENT_FILE_NAME)).unwrap();
    writeln!(out, "\n## CURRENT: {:?}", String::from_utf8_lossy(&current)).unwrap();
    let path = dir().join(manifest_file_name(set.manifest_file_number()));
    let bytes = fs.file_contents(&path).unwrap();
    writeln!(out, "\n## {}: {} bytes", manifest_file_name(1), bytes.len()).unwrap();
    let file = fs.open_read(&path).unwrap();
    let mut reader = LogReader::new(file, 1, RecoveryMode::AbsoluteConsistency).unwrap();
    while let Some((record, offset)) = reader.read_record().unwrap() {
        writeln!(out, "record at offset {offset}, {} bytes", record.len()).unwrap();
        describe_record(&mut out, &record);
        let edit = VersionEdit::decode(&record).unwrap();
        for line in edit.to_string().lines() {
            writeln!(out, "  | {line}").unwrap();
        }
    }
    writeln!(out, "\n## version\n{}", set.current()).unwrap();
    assert_eq!(&bytes[11..19], b"SHALEWAL");
    out
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/testdata")
        .join(name)
}

fn regenerate() -> bool {
    std::env::var_os("SHALE_REGENERATE").is_some()
}

#[test]
fn golden_manifest_matches_fixture() {
    let printout = golden_printout();
    let path = fixture("golden_manifest.txt");
    if regenerate() {
        std::fs::write(&path, &printout).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        printout, expected,
        "MANIFEST layout changed; if deliberate, update docs/format/manifest.md and regenerate \
         with SHALE_REGENERATE=1 cargo test -p shale-engine --test version"
    );
}

#[test]
fn manifest_spec_names_every_tag_and_constant() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format/manifest.md"),
    )
    .unwrap();
    let rows = [
        "| 1 | MANIFEST_HEADER |",
        "| 2 | COMPARATOR |",
        "| 3 | NEXT_FILE_NUMBER |",
        "| 4 | LAST_SEQUENCE |",
        "| 5 | MAX_KEYSPACE_ID |",
        "| 6 | ADD_KEYSPACE |",
        "| 7 | DELETED_FILE |",
        "| 8 | NEW_FILE |",
        "| 9 | LOG_NUMBER |",
        "| 10 | DROP_KEYSPACE |",
        "| 1 | CREATION_TIME |",
    ];
    for row in rows {
        assert!(doc.contains(row), "manifest.md lacks {row:?}");
    }
    let magic = String::from_utf8(MANIFEST_MAGIC.to_vec()).unwrap();
    for needle in [
        magic.as_str(),
        &format!("manifest format version {MANIFEST_FORMAT_VERSION}"),
        &format!("{SAFE_TO_IGNORE:#06x}"),
        "crc32c=",
        "CURRENT.tmp",
    ] {
        assert!(doc.contains(needle), "manifest.md lacks {needle:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Data-driven scripts: tests/testdata/version/*.txt

/// Runs the scripts' commands against one database.
struct Script {
    fs: MemFs,
    set: Option<VersionSet>,
    held: Vec<(String, Arc<Version>)>,
}

fn describe(set: &VersionSet) -> String {
    format!(
        "manifest {:06} next_file {} last_seq {} max_keyspace {}\n{}",
        set.manifest_file_number(),
        set.next_file_number(),
        set.last_sequence(),
        set.max_keyspace_id(),
        set.current()
    )
}

/// `a..b` into its two halves.
fn range(text: &str) -> (&str, &str) {
    text.split_once("..")
        .unwrap_or_else(|| panic!("{text:?} is not a..b"))
}

fn level(text: &str) -> u32 {
    text.strip_prefix('L').unwrap().parse().unwrap()
}

/// One edit line: `add <ks> L<n> <number> <a>..<b> <seq>..<seq>`, `delete <ks> L<n> <number>`,
/// `log <ks> <n>`, `add-keyspace <id> <name>`, `drop-keyspace <id>`.
fn parse_edit_line(edit: &mut VersionEdit, line: &str) {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["add", ks, lvl, number, keys, seqnos] => {
            let (a, b) = range(keys);
            let (s, l) = range(seqnos);
            edit.add_file(
                ks.parse().unwrap(),
                level(lvl),
                meta(
                    number.parse().unwrap(),
                    a,
                    b,
                    (s.parse().unwrap(), l.parse().unwrap()),
                ),
            );
        }
        ["delete", ks, lvl, number] => {
            edit.delete_file(ks.parse().unwrap(), level(lvl), number.parse().unwrap());
        }
        ["log", ks, n] => edit.set_log_number(ks.parse().unwrap(), n.parse().unwrap()),
        ["add-keyspace", id, name] => edit
            .added_keyspaces
            .push((id.parse().unwrap(), (*name).to_owned())),
        ["drop-keyspace", id] => edit.dropped_keyspaces.push(id.parse().unwrap()),
        _ => panic!("unknown edit line {line:?}"),
    }
}

impl Script {
    fn set(&mut self) -> &mut VersionSet {
        self.set.as_mut().expect("no database: run `create` first")
    }

    /// `recover [levels=N]`; after a refused open the database is reopened as it was.
    fn recover(&mut self, args: &[&str]) -> shale_engine::Result<String> {
        let levels = args
            .iter()
            .find_map(|w| w.strip_prefix("levels="))
            .map_or(DEFAULT_NUM_LEVELS, |n| n.parse().unwrap());
        let levels_before = self.set.as_ref().map(VersionSet::num_levels);
        self.set = None;
        let fs: Arc<dyn FileSystem> = Arc::new(self.fs.clone());
        match VersionSet::recover(fs.clone(), dir(), bytewise(), levels) {
            Ok(set) => {
                self.set = Some(set);
                Ok(describe(self.set()))
            }
            Err(e) => {
                let before = levels_before.unwrap();
                self.set = Some(VersionSet::recover(fs, dir(), bytewise(), before).unwrap());
                Err(e)
            }
        }
    }

    /// Every record of the live MANIFEST, as tools print edits.
    fn manifest(&mut self) -> String {
        let number = self.set().manifest_file_number();
        let path = dir().join(manifest_file_name(number));
        let file = self.fs.open_read(&path).unwrap();
        let mut reader = LogReader::new(file, number, RecoveryMode::AbsoluteConsistency).unwrap();
        let mut out = Vec::new();
        while let Some((record, offset)) = reader.read_record().unwrap() {
            out.push(format!("record @{offset}"));
            let edit = VersionEdit::decode(&record).unwrap();
            out.extend(edit.to_string().lines().map(|l| format!("  {l}")));
        }
        out.join("\n")
    }

    fn run(&mut self, command: &str, body: &[&str]) -> String {
        let words: Vec<&str> = command.split_whitespace().collect();
        let result = match words.as_slice() {
            ["create", rest @ ..] => {
                let levels = rest
                    .iter()
                    .find_map(|w| w.strip_prefix("levels="))
                    .map_or(DEFAULT_NUM_LEVELS, |n| n.parse().unwrap());
                self.fs = MemFs::new();
                self.held.clear();
                VersionSet::create(Arc::new(self.fs.clone()), dir(), bytewise(), levels).map(
                    |set| {
                        self.set = Some(set);
                        describe(self.set())
                    },
                )
            }
            ["set-last-sequence", n] => {
                self.set().set_last_sequence(n.parse().unwrap());
                Ok(format!("last_seq {}", self.set().last_sequence()))
            }
            ["apply"] => {
                let mut edit = VersionEdit::new();
                for line in body {
                    parse_edit_line(&mut edit, line);
                }
                self.set()
                    .log_and_apply(edit)
                    .map(|()| describe(self.set()))
            }
            ["create-keyspace", name, log] => {
                let log = log.strip_prefix("log=").unwrap().parse().unwrap();
                self.set()
                    .create_keyspace(name, log)
                    .map(|id| format!("id {id}\n{}", describe(self.set())))
            }
            ["drop-keyspace", id] => {
                let id = id.parse().unwrap();
                self.set().drop_keyspace(id).map(|()| describe(self.set()))
            }
            ["recover", rest @ ..] => self.recover(rest),
            ["overlapping", ks, lvl, keys] => {
                let (a, b) = range(keys);
                let files = self.set().current().overlapping_files(
                    ks.parse().unwrap(),
                    level(lvl) as usize,
                    a.as_bytes(),
                    b.as_bytes(),
                );
                let numbers: Vec<String> = files.iter().map(|f| f.number.to_string()).collect();
                Ok(format!("[{}]", numbers.join(" ")))
            }
            ["hold", name] => {
                let version = self.set().current();
                self.held.push(((*name).to_owned(), version));
                Ok("ok".to_owned())
            }
            ["release", name] => {
                self.held.retain(|(n, _)| n != name);
                Ok("ok".to_owned())
            }
            ["live-files"] => {
                let live: Vec<String> =
                    self.set().live_files().iter().map(u64::to_string).collect();
                Ok(format!("[{}]", live.join(" ")))
            }
            ["manifest"] => Ok(self.manifest()),
            _ => panic!("unknown command {command:?}"),
        };
        match result {
            Ok(text) => text,
            Err(e) => format!("error: {e}"),
        }
    }
}

/// A script file: blocks separated by blank lines; each block is comment lines (`#`), a
/// command line, body lines, `----`, and the expected output.
fn run_script(text: &str) -> String {
    let mut script = Script {
        fs: MemFs::new(),
        set: None,
        held: Vec::new(),
    };
    let mut out = String::new();
    for block in text.split("\n\n") {
        let block = block.trim_matches('\n');
        if block.is_empty() {
            continue;
        }
        let input: Vec<&str> = block.lines().take_while(|l| *l != "----").collect();
        for line in input.iter().take_while(|l| l.starts_with('#')) {
            writeln!(out, "{line}").unwrap();
        }
        let mut commands = input.iter().skip_while(|l| l.starts_with('#'));
        let Some(command) = commands.next() else {
            writeln!(out).unwrap();
            continue;
        };
        let body: Vec<&str> = commands.copied().collect();
        writeln!(out, "{command}").unwrap();
        for line in &body {
            writeln!(out, "{line}").unwrap();
        }
        let result = script.run(command, &body);
        assert!(
            !result.contains("\n\n"),
            "output with a blank line: {result}"
        );
        writeln!(out, "----\n{result}\n").unwrap();
    }
    out
}

#[test]
fn data_driven_scripts() {
    let dir = fixture("version");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no scripts in {}", dir.display());
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let actual = run_script(&text);
        if regenerate() {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        assert_eq!(
            actual.trim_end(),
            text.trim_end(),
            "{} differs; if the change is deliberate, regenerate with SHALE_REGENERATE=1",
            path.display()
        );
    }
}

#[test]
fn new_file_display_is_what_tools_print() {
    let nf = NewFile {
        keyspace: 2,
        level: 3,
        meta: meta(17, "a", "b", (4, 9)),
    };
    assert_eq!(
        nf.to_string(),
        "keyspace 2 L3 000017 [\"a\"@9:put .. \"b\"@4:put] seqno 4..9 size 1017 entries 6 deletions 0"
    );
}

#[test]
fn versions_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Version>();
    send_sync::<VersionEdit>();
    send::<VersionSet>();
}

#[test]
fn blob_files_are_added_garbage_collected_deleted_and_recovered() {
    use shale_engine::inspect::blob::BlobFileMeta;
    let fs = MemFs::new();
    let mut set = create(&fs);
    let blob = BlobFileMeta {
        number: 50,
        keyspace: 0,
        total_count: 10,
        total_bytes: 1000,
        garbage_count: 0,
        garbage_bytes: 0,
    };
    set.mark_file_number_used(50);
    let mut edit = VersionEdit::new();
    edit.add_blob_file(&blob);
    set.log_and_apply(edit).unwrap();
    // More garbage than records is refused and changes nothing.
    let mut too_much = VersionEdit::new();
    too_much.add_blob_garbage(50, 11, 100);
    let err = set.log_and_apply(too_much).unwrap_err();
    assert!(err.to_string().contains("more garbage"), "{err}");
    // Garbage on an unknown file, a second addition, a table with a blob file's number.
    let mut unknown = VersionEdit::new();
    unknown.add_blob_garbage(51, 1, 1);
    assert!(set.log_and_apply(unknown).is_err());
    let mut again = VersionEdit::new();
    again.add_blob_file(&blob);
    assert!(set.log_and_apply(again).is_err());
    let mut half = VersionEdit::new();
    half.add_blob_garbage(50, 5, 500);
    set.log_and_apply(half).unwrap();
    assert!(set.live_files().contains(&50));
    let meta = set.current().blob_files()[&50].clone();
    assert_eq!((meta.garbage_count, meta.garbage_bytes), (5, 500));
    // Recovery (a new MANIFEST's snapshot) keeps the garbage.
    drop(set);
    let mut set = recover(&fs).unwrap();
    assert_eq!(set.current().blob_files()[&50], meta);
    let mut rest = VersionEdit::new();
    rest.add_blob_garbage(50, 5, 500);
    rest.delete_blob_file(50);
    set.log_and_apply(rest).unwrap();
    assert!(set.current().blob_files().is_empty());
    assert!(!set.live_files().contains(&50));
}
