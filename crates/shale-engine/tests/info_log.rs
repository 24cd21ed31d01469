//! The info LOG (docs/operations.md, "The info LOG"): what an open, a flush and a compaction
//! write to it, rotation by size and count, a read-only open writing none, and LOG failures
//! never failing the database.

use std::path::Path;
use std::sync::Arc;

use shale_engine::{Db, Options};
use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind};

const DIR: &str = "/db";

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        file_system: fs,
        ..Options::default()
    }
}

fn read(fs: &MemFs, name: &str) -> String {
    String::from_utf8(fs.file_contents(Path::new(DIR).join(name)).unwrap()).unwrap()
}

fn names(fs: &MemFs) -> Vec<String> {
    let mut names = fs.list(Path::new(DIR)).unwrap();
    names.sort();
    names
}

#[test]
fn open_flush_and_compaction_are_written_with_timestamps() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(Arc::new(fs.clone()))).unwrap();
    for round in 0..2 {
        for i in 0..50 {
            db.put(
                format!("key{i:03}").as_bytes(),
                format!("v{round}").as_bytes(),
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    db.close().unwrap();
    let log = read(&fs, "LOG");
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].ends_with(" Shale info LOG"), "{log}");
    for line in log.lines().filter(|l| !l.starts_with(' ') && !l.is_empty()) {
        // 2026/11/27-01:46:00.123456
        let stamp = line.split(' ').next().unwrap();
        assert_eq!(stamp.len(), 26, "{line}");
        assert_eq!(&stamp[4..5], "/", "{line}");
        assert_eq!(&stamp[10..11], "-", "{line}");
    }
    for needle in [
        "open /db",
        "options [db] durability = sync",
        "options [keyspace \"default\"] write_buffer_size = ",
        "recovery (tolerate-corrupted-tail-records): read ",
        "nothing dropped",
        "flush keyspace 0: memtable -> L0 table ",
        "compaction keyspace 0 (manual): L0 [",
        "close",
    ] {
        assert!(log.contains(needle), "{needle:?} missing:\n{log}");
    }
    assert_eq!(log.matches("flush keyspace 0").count(), 2, "{log}");
}

#[test]
fn recovery_drops_are_written() {
    let fs = MemFs::new();
    {
        let db = Db::open(DIR, options(Arc::new(fs.clone()))).unwrap();
        db.put(b"a", b"1").unwrap();
        db.put(b"b", b"2").unwrap();
        // Crash: no close, so the live WAL's size is not recorded.
        let image = fs.crash_image(shale_fs::CrashMode::DropUnsynced);
        drop(db);
        let wal = names(&image)
            .into_iter()
            .filter_map(|n| shale_engine::inspect::wal::format::parse_log_file_name(&n))
            .max()
            .map(shale_engine::inspect::wal::format::log_file_name)
            .unwrap();
        let path = Path::new(DIR).join(&wal);
        let size = image.size(&path).unwrap();
        image.truncate_for_test(&path, size - 2).unwrap();
        let db = Db::open(DIR, options(Arc::new(image.clone()))).unwrap();
        assert_eq!(db.recovery_report().dropped.len(), 1);
        db.close().unwrap();
        let log = read(&image, "LOG");
        assert!(
            log.contains("recovery dropped WAL") && log.contains("torn tail at offset"),
            "{log}"
        );
    }
}

#[test]
fn the_log_rotates_by_size_and_keeps_the_count() {
    let fs = MemFs::new();
    let mut opts = options(Arc::new(fs.clone()));
    opts.info_log_max_size = 600;
    opts.info_log_keep = 2;
    for _ in 0..4 {
        let db = Db::open(DIR, opts.clone()).unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    let all = names(&fs);
    assert!(all.contains(&"LOG".to_owned()), "{all:?}");
    assert!(all.contains(&"LOG.old.1".to_owned()), "{all:?}");
    assert!(all.contains(&"LOG.old.2".to_owned()), "{all:?}");
    assert!(!all.contains(&"LOG.old.3".to_owned()), "{all:?}");
    assert!(read(&fs, "LOG").trim_end().ends_with(" close"));
    for name in ["LOG", "LOG.old.1", "LOG.old.2"] {
        let text = read(&fs, name);
        assert!(text.lines().next().unwrap().ends_with("Shale info LOG"));
        // A file grows past the limit by at most one line.
        let last_line = text.lines().last().unwrap().len() as u64 + 1;
        assert!(
            text.len() as u64 <= 600 + last_line,
            "{name}: {}",
            text.len()
        );
    }
}

#[test]
fn each_open_rotates_the_previous_log() {
    let fs = MemFs::new();
    for _ in 0..2 {
        Db::open(DIR, options(Arc::new(fs.clone())))
            .unwrap()
            .close()
            .unwrap();
    }
    let newest = read(&fs, "LOG");
    let previous = read(&fs, "LOG.old.1");
    assert_eq!(newest.matches("open /db").count(), 1, "{newest}");
    assert!(previous.contains("open /db") && previous.trim_end().ends_with(" close"));
}

#[test]
fn a_read_only_open_writes_no_log() {
    let fs = MemFs::new();
    let db = Db::open(DIR, options(Arc::new(fs.clone()))).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let before: Vec<(String, Vec<u8>)> = names(&fs)
        .into_iter()
        .map(|n| {
            let bytes = fs.file_contents(Path::new(DIR).join(&n)).unwrap();
            (n, bytes)
        })
        .collect();
    let db = Db::open_read_only(DIR, options(Arc::new(fs.clone()))).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    let after: Vec<(String, Vec<u8>)> = names(&fs)
        .into_iter()
        .map(|n| {
            let bytes = fs.file_contents(Path::new(DIR).join(&n)).unwrap();
            (n, bytes)
        })
        .collect();
    assert_eq!(before, after);
}

#[test]
fn log_failures_never_fail_the_database() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    for op in [OpKind::Any, OpKind::Create, OpKind::Append, OpKind::Rename] {
        fault.add_rule(
            FaultRule::new(op, FaultTrigger::Always, FaultError::Eio).path_contains("/LOG"),
        );
    }
    let db = Db::open(DIR, options(Arc::new(fault.clone()))).unwrap();
    for i in 0..100 {
        db.put(format!("key{i:03}").as_bytes(), b"v").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(&db.default_keyspace(), None, None)
        .unwrap();
    db.close().unwrap();
    fault.clear_rules();
    let db = Db::open(DIR, options(Arc::new(fault.clone()))).unwrap();
    assert_eq!(db.get(b"key099").unwrap().as_deref(), Some(&b"v"[..]));
}
