//! `repair_db` (docs/operations.md "Repair"): damaged tables, MANIFEST, CURRENT and WAL are
//! salvaged around, set aside in `lost/`, and the result opens with every surviving write.

mod fixture_db;

use std::path::Path;
use std::sync::Arc;

use fixture_db::{build, copy, files, options, read_all, value, History, DIR, OTHER_KEYSPACE};
use shale_engine::inspect::wal::RecoveryMode;
use shale_engine::inspect::{live_manifest, read_manifest, table_file_name};
use shale_engine::{repair_db, Db, RepairOptions, RepairReport, LOST_DIR_NAME};
use shale_fs::{FileSystem, MemFs};
use shale_sst::{BytewiseComparator, Comparator, Table, TableOpenOptions};

/// What `shale tool verify` checks, on a `MemFs`: the live MANIFEST reads strictly and every
/// table it lists verifies.
fn assert_verifies(fs: &MemFs) {
    let manifest = live_manifest(fs, Path::new(DIR)).unwrap();
    let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let state = read_manifest(
        fs,
        &manifest,
        &comparator,
        RecoveryMode::AbsoluteConsistency,
        &mut |_, _| {},
    )
    .unwrap();
    for (_, _, meta) in state.version.all_files() {
        let path = table_file_name(Path::new(DIR), meta.number);
        let table = Table::open(fs, &path, &TableOpenOptions::default()).unwrap();
        table.verify().unwrap();
        assert_eq!(table.file_size(), meta.size);
    }
}

/// Opens the repaired database and checks every key: the latest value unless `older` allows
/// the value the key had before for that key.
fn assert_data(fs: &MemFs, history: &History, older: impl Fn(&str, usize) -> Option<Vec<u8>>) {
    let db = Db::open(DIR, options(fs)).unwrap();
    let mut names = db.keyspace_names();
    names.sort();
    assert_eq!(names, ["default", OTHER_KEYSPACE]);
    let seen = read_all(&db, history).unwrap();
    for ((keyspace, k), got) in &seen {
        let i: usize = String::from_utf8_lossy(&k[3..]).parse().unwrap();
        let expected = older(keyspace, i).map_or_else(|| history.latest(keyspace, k), Some);
        assert_eq!(
            got.as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned()),
            expected.map(|v| String::from_utf8_lossy(&v).into_owned()),
            "{keyspace}/{}",
            String::from_utf8_lossy(k)
        );
    }
    db.close().unwrap();
}

fn lost_names(report: &RepairReport) -> Vec<String> {
    report.lost.iter().map(|l| l.name.clone()).collect()
}

/// The default keyspace's L0 table (key0000..0119 = v2, every 10th deleted).
fn default_l0_table(fs: &MemFs) -> u64 {
    let manifest = live_manifest(fs, Path::new(DIR)).unwrap();
    let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let state = read_manifest(
        fs,
        &manifest,
        &comparator,
        RecoveryMode::AbsoluteConsistency,
        &mut |_, _| {},
    )
    .unwrap();
    state.version.files(0, 0)[0].number
}

#[test]
fn an_undamaged_database_repairs_to_the_same_data() {
    let (image, history) = build();
    let fs = copy(&image);
    // A garbage WAL below every keyspace's log number: already in tables, so not read.
    let obsolete_wal = Path::new(DIR).join("000001.wal");
    fs.write_file_for_test(&obsolete_wal, b"garbage").unwrap();
    let report = repair_db(Path::new(DIR), &options(&fs)).unwrap();
    assert!(
        report.wals.iter().all(|w| w.number != 1),
        "{:?}",
        report.wals
    );
    assert!(report.lost.is_empty(), "{:?}", report.lost);
    assert!(report.manifest_used.is_some());
    assert_eq!(report.bytes_lost(), 0);
    let replayed: u64 = report.wals.iter().map(|w| w.entries_replayed).sum();
    assert_eq!(replayed, 60, "the unflushed writes of both keyspaces");
    assert!(report.tables.iter().any(|t| t.from_wal.is_some()));
    assert_verifies(&fs);
    assert_data(&fs, &history, |_, _| None);
}

#[test]
fn a_table_the_manifest_does_not_list_is_set_aside_as_obsolete() {
    let (image, history) = build();
    let fs = copy(&image);
    let live = table_file_name(Path::new(DIR), default_l0_table(&fs));
    let orphan = table_file_name(Path::new(DIR), 999);
    fs.write_file_for_test(&orphan, &fs.file_contents(&live).unwrap())
        .unwrap();
    let report = repair_db(Path::new(DIR), &options(&fs)).unwrap();
    assert_eq!(lost_names(&report), ["000999.sst"]);
    assert!(report.lost[0].obsolete);
    assert_eq!(report.bytes_lost(), 0, "an orphan held no live data");
    assert!(fs
        .file_contents(Path::new(DIR).join(LOST_DIR_NAME).join("000999.sst"))
        .is_ok());
    assert_verifies(&fs);
    assert_data(&fs, &history, |_, _| None);
}

#[test]
fn a_damaged_table_is_set_aside_and_older_versions_show_through() {
    let (image, history) = build();
    let fs = copy(&image);
    let number = default_l0_table(&fs);
    let path = table_file_name(Path::new(DIR), number);
    let size = fs.file_contents(&path).unwrap().len() as u64;
    fs.corrupt_for_test(&path, size / 3, 0x01).unwrap();
    let report = repair_db(Path::new(DIR), &options(&fs)).unwrap();
    let name = format!("{number:06}.sst");
    assert_eq!(lost_names(&report), std::slice::from_ref(&name));
    let lost = &report.lost[0];
    assert!(
        lost.reason.contains(&name) && lost.reason.contains("offset"),
        "{}",
        lost.reason
    );
    assert_eq!(lost.bytes, size);
    let moved = Path::new(DIR).join(LOST_DIR_NAME).join(&name);
    assert_eq!(lost.moved_to.as_deref(), Some(moved.as_path()));
    assert_eq!(
        fs.file_contents(&moved).unwrap().len() as u64,
        size,
        "kept, not deleted"
    );
    assert!(report.bytes_lost() >= size);
    assert_verifies(&fs);
    // The lost table held key0000..0119's newer versions: the bottom level's v1 shows.
    assert_data(&fs, &history, |keyspace, i| {
        (keyspace == "default" && i < 120).then(|| value("v1", i))
    });
}

#[test]
fn a_damaged_manifest_is_rebuilt_from_the_tables_and_wal() {
    let (image, history) = build();
    let fs = copy(&image);
    let manifest = live_manifest(&fs, Path::new(DIR)).unwrap();
    fs.corrupt_for_test(&manifest, 30, 0x10).unwrap();
    let report = repair_db(Path::new(DIR), &options(&fs)).unwrap();
    assert!(report.manifest_used.is_none());
    let manifest_name = manifest.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(lost_names(&report), [manifest_name]);
    assert!(
        report.lost[0].reason.contains("offset"),
        "{}",
        report.lost[0].reason
    );
    assert_eq!(report.bytes_lost(), 0, "no table or WAL data lost");
    assert!(
        report.keyspaces.contains(&(1, OTHER_KEYSPACE.to_owned())),
        "{:?}",
        report.keyspaces
    );
    assert!(report.tables.iter().all(|t| t.level == 0));
    assert_verifies(&fs);
    assert_data(&fs, &history, |_, _| None);
}

#[test]
fn a_damaged_current_falls_back_to_the_newest_manifest() {
    let (image, history) = build();
    let fs = copy(&image);
    fs.corrupt_for_test(Path::new(DIR).join("CURRENT"), 2, 0x04)
        .unwrap();
    assert!(Db::open(DIR, options(&fs)).is_err());
    let report = repair_db(Path::new(DIR), &options(&fs)).unwrap();
    assert!(report.manifest_used.is_some(), "{:?}", report.notes);
    assert_eq!(lost_names(&report), ["CURRENT"]);
    assert_verifies(&fs);
    assert_data(&fs, &history, |_, _| None);
}

#[test]
fn a_damaged_wal_keeps_the_records_before_the_damage() {
    let (image, history) = build();
    let fs = copy(&image);
    let wal = files(&fs)
        .into_iter()
        .rfind(|n| shale_engine::inspect::wal::format::parse_log_file_name(n).is_some())
        .unwrap();
    let path = Path::new(DIR).join(&wal);
    let size = fs.file_contents(&path).unwrap().len() as u64;
    fs.corrupt_for_test(&path, size / 2, 0x20).unwrap();
    let report = repair_db(Path::new(DIR), &options(&fs)).unwrap();
    let salvaged = report
        .wals
        .iter()
        .find(|w| format!("{:06}.wal", w.number) == wal)
        .unwrap();
    assert!(
        salvaged.records > 0 && salvaged.bytes_lost > 0,
        "{salvaged:?}"
    );
    assert!(salvaged.damage.as_ref().unwrap().contains("offset"));
    assert_eq!(lost_names(&report), std::slice::from_ref(&wal));
    assert!(fs
        .file_contents(Path::new(DIR).join(LOST_DIR_NAME).join(&wal))
        .is_ok());
    assert_verifies(&fs);
    // Writes before the damage survive; the rest read as they were before the WAL.
    let db = Db::open(DIR, options(&fs)).unwrap();
    let seen = read_all(&db, &history).unwrap();
    let mut survived = 0;
    for ((keyspace, k), got) in &seen {
        if history.in_wal.contains(&(keyspace.clone(), k.clone())) {
            assert!(history.ever(keyspace, k, got.as_deref()));
            survived += usize::from(*got == history.latest(keyspace, k));
        } else {
            assert_eq!(*got, history.latest(keyspace, k));
        }
    }
    assert!(
        survived > 0 && survived < 60,
        "{survived} of 60 WAL writes survived"
    );
}

#[test]
fn repair_refuses_while_the_database_is_open() {
    let (image, _) = build();
    let fs = copy(&image);
    let db = Db::open(DIR, options(&fs)).unwrap();
    let error = repair_db(Path::new(DIR), &options(&fs)).unwrap_err();
    assert!(error.to_string().contains("LOCK"), "{error}");
    drop(db);
    let names = files(&fs);
    assert!(!fs.exists(&Path::new(DIR).join(LOST_DIR_NAME)).unwrap());
    assert!(names.iter().any(|n| n == "CURRENT"));
}

#[test]
fn a_directory_without_a_database_is_refused() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let error = repair_db(Path::new(DIR), &options(&fs)).unwrap_err();
    assert!(error.to_string().contains("nothing to repair"), "{error}");
}

/// Writes table `number` of the default keyspace holding `entries` (key, seqno, value).
fn plant_table(fs: &MemFs, number: u64, entries: &[(&[u8], u64, &[u8])]) {
    let mut options = shale_sst::WriterOptions::default();
    options
        .user_properties
        .insert("keyspace_id".to_owned(), b"0".to_vec());
    let path = table_file_name(Path::new(DIR), number);
    let mut writer = shale_sst::TableWriter::create(fs, &path, options).unwrap();
    for (k, seqno, v) in entries {
        let key = shale_sst::InternalKey::new(k, *seqno, shale_sst::ValueKind::Value);
        writer.add(key.encoded(), v).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn without_a_manifest_interleaved_l0_tables_are_compacted_so_the_newest_version_wins() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(&fs)).unwrap();
    db.put(b"seed", b"s").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    // An old output holding b@5 and a newer key d@20, and a newer table holding b@10: L0 by
    // largest seqno puts the old output first, where a lookup of b would stop at b@5.
    plant_table(&fs, 100, &[(b"b", 5, b"old"), (b"d", 20, b"d")]);
    plant_table(&fs, 101, &[(b"b", 10, b"new")]);
    let manifest = live_manifest(&fs, Path::new(DIR)).unwrap();
    fs.corrupt_for_test(&manifest, 30, 0x10).unwrap();
    let report = repair_db(Path::new(DIR), &options(&fs)).unwrap();
    assert!(report.manifest_used.is_none());
    assert!(
        report.notes.iter().any(|n| n.contains("interleave")),
        "{:?}",
        report.notes
    );
    assert_verifies(&fs);
    let db = Db::open(DIR, options(&fs)).unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"d"[..]));
    assert_eq!(db.get(b"seed").unwrap().as_deref(), Some(&b"s"[..]));
}

/// A `RocksDB` directory: names much like Shale's, contents not.
fn plant_rocksdb_dir(fs: &MemFs) {
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let mut table = vec![0x5a; 300];
    table.extend_from_slice(&0x88e2_41b7_85f4_cff7_u64.to_le_bytes());
    for (name, bytes) in [
        ("CURRENT", b"MANIFEST-000005\n".to_vec()),
        ("MANIFEST-000005", vec![0x11; 120]),
        (
            "OPTIONS-000007",
            b"[Version]\n  rocksdb_version=8.10.0\n".to_vec(),
        ),
        ("000004.log", vec![0x22; 90]),
        ("000010.sst", table.clone()),
        ("000011.sst", table),
        ("IDENTITY", b"8d2c3c1e-uuid\n".to_vec()),
        ("LOG", b"RocksDB version: 8.10.0\n".to_vec()),
    ] {
        fs.write_file_for_test(Path::new(DIR).join(name), &bytes)
            .unwrap();
    }
}

fn snapshot(fs: &MemFs) -> Vec<(String, Vec<u8>)> {
    files(fs)
        .into_iter()
        .map(|n| {
            let bytes = fs.file_contents(Path::new(DIR).join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

#[test]
fn a_rocksdb_directory_is_refused_before_anything_moves_unless_forced() {
    let fs = MemFs::new();
    plant_rocksdb_dir(&fs);
    let before = snapshot(&fs);
    let error = repair_db(Path::new(DIR), &options(&fs)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("does not look like a Shale database")
            && text.contains("RocksDB")
            && text.contains("000010.sst")
            && text.contains("--force"),
        "{text}"
    );
    assert_eq!(snapshot(&fs), before, "nothing changed");
    assert!(!fs.exists(&Path::new(DIR).join(LOST_DIR_NAME)).unwrap());

    let forced = shale_engine::repair_db_with_progress(
        Path::new(DIR),
        &options(&fs),
        RepairOptions { force: true },
        &mut |_, _| {},
    )
    .unwrap();
    assert!(lost_names(&forced).contains(&"000010.sst".to_owned()));
}

#[test]
fn shales_own_info_log_does_not_make_a_directory_foreign() {
    let (image, history) = build();
    let fs = copy(&image);
    // An open and close writes the LOG (and a reopen rotates it to LOG.old.1).
    for _ in 0..2 {
        Db::open(DIR, options(&fs)).unwrap().close().unwrap();
    }
    let names = files(&fs);
    assert!(names.contains(&"LOG".to_owned()) && names.contains(&"LOG.old.1".to_owned()));
    repair_db(Path::new(DIR), &options(&fs)).unwrap();
    assert_data(&fs, &history, |_, _| None);
}

#[test]
fn a_database_whose_files_carry_the_wrong_magic_is_refused() {
    let (image, _) = build();
    let fs = copy(&image);
    for name in files(&fs) {
        let path = Path::new(DIR).join(&name);
        let len = fs.file_contents(&path).unwrap().len() as u64;
        if shale_engine::inspect::parse_table_file_name(&name).is_some() {
            fs.corrupt_for_test(&path, len - 1, 0xff).unwrap();
        } else if shale_engine::inspect::wal::format::parse_log_file_name(&name).is_some()
            || name.starts_with("MANIFEST")
        {
            for offset in 0..len.min(64) {
                fs.corrupt_for_test(&path, offset, 0x5a).unwrap();
            }
        }
    }
    let before = snapshot(&fs);
    let error = repair_db(Path::new(DIR), &options(&fs)).unwrap_err();
    assert!(
        error.to_string().contains("SHALESST"),
        "the table magic is named: {error}"
    );
    assert_eq!(snapshot(&fs), before, "nothing changed");
}

#[test]
fn a_missing_current_is_named_and_points_at_repair_and_nothing_is_created_over_it() {
    let (image, history) = build();
    let fs = copy(&image);
    fs.remove(&Path::new(DIR).join("CURRENT")).unwrap();
    let before = snapshot(&fs);
    let check = |error: shale_engine::Error| {
        let text = error.to_string();
        assert!(
            text.contains("CURRENT is missing")
                && text.contains("MANIFEST-")
                && text.contains("shale tool repair")
                && !text.contains("create the database first"),
            "{text}"
        );
    };
    // create_if_missing (the default) must not start an empty database over the tables.
    let mut create = options(&fs);
    create.create_if_missing = true;
    check(Db::open(DIR, create).unwrap_err());
    check(Db::open_read_only(DIR, options(&fs)).unwrap_err());
    check(live_manifest(&fs, Path::new(DIR)).unwrap_err());
    assert_eq!(snapshot(&fs), before, "nothing changed");
    repair_db(Path::new(DIR), &options(&fs)).unwrap();
    assert_data(&fs, &history, |_, _| None);
}
