//! `Db::set_options` changes options while the database is open (issue 24): each test shows
//! the change taking effect without a reopen, and bad input refused with the option named.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::gate::{gated_mem_fs, on_thread};

use shale_engine::{Db, KeyspaceOptions, Options, LIVE_OPTIONS};
use shale_fs::{FileSystem, MemFs, Op};
use shale_sst::Compression;

const DIR: &str = "/db";

fn small_keyspace() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 1 << 20,
        compression: Compression::None,
        compression_per_level: Vec::new(),
        bottommost_compression: None,
        block_size: 1024,
        ..KeyspaceOptions::default()
    }
}

fn open(fs: Arc<dyn FileSystem>, options: Options) -> Db {
    Db::open(
        DIR,
        Options {
            file_system: fs,
            ..options
        },
    )
    .unwrap()
}

fn live(db: &Db, name: &str) -> String {
    db.live_options()
        .into_iter()
        .find(|(n, _)| n == name)
        .map_or_else(|| panic!("{name} is not listed"), |(_, v)| v)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

#[test]
fn every_live_option_is_listed_with_its_value() {
    let db = open(
        Arc::new(MemFs::new()),
        Options {
            block_cache_capacity: 3 << 20,
            rate_limit_bytes_per_sec: 5 << 20,
            default_keyspace: small_keyspace(),
            ..Options::default()
        },
    );
    let names: Vec<String> = db.live_options().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, LIVE_OPTIONS);
    assert_eq!(live(&db, "block_cache_capacity"), (3 << 20).to_string());
    assert_eq!(live(&db, "rate_limit_bytes_per_sec"), (5 << 20).to_string());
    assert_eq!(live(&db, "durability"), "sync");
    assert_eq!(live(&db, "write_buffer_size"), (1 << 20).to_string());
}

#[test]
fn the_rate_limiter_turns_on_changes_and_turns_off_live() {
    let db = open(
        Arc::new(MemFs::new()),
        Options {
            default_keyspace: small_keyspace(),
            ..Options::default()
        },
    );
    assert_eq!(db.stats().rate_limit_bytes_per_sec, 0);
    db.put(b"a", &[1; 4000]).unwrap();
    db.flush().unwrap();
    assert_eq!(
        db.stats().rate_limited_flush_bytes,
        0,
        "an off limiter charges nothing"
    );

    db.set_options(&[("rate_limit_bytes_per_sec", "10485760")])
        .unwrap();
    assert_eq!(db.stats().rate_limit_bytes_per_sec, 10 << 20);
    assert_eq!(live(&db, "rate_limit_bytes_per_sec"), "10485760");
    db.put(b"b", &[2; 4000]).unwrap();
    db.flush().unwrap();
    let charged = db.stats().rate_limited_flush_bytes;
    assert!(charged >= 4000, "the flush was not charged: {charged}");

    db.set_options(&[("rate_limit_bytes_per_sec", "2097152")])
        .unwrap();
    assert_eq!(db.stats().rate_limit_bytes_per_sec, 2 << 20);

    db.set_options(&[("rate_limit_bytes_per_sec", "0")])
        .unwrap();
    assert_eq!(db.stats().rate_limit_bytes_per_sec, 0);
    db.put(b"c", &[3; 4000]).unwrap();
    db.flush().unwrap();
    assert_eq!(db.stats().rate_limited_flush_bytes, charged);
}

#[test]
fn a_smaller_block_cache_evicts_down_to_its_capacity() {
    let db = open(
        Arc::new(MemFs::new()),
        Options {
            block_cache_capacity: 8 << 20,
            default_keyspace: small_keyspace(),
            ..Options::default()
        },
    );
    for i in 0..4000 {
        db.put(&key(i), &[7; 200]).unwrap();
    }
    db.flush().unwrap();
    for i in 0..4000 {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    let before = db.block_cache_stats();
    assert!(before.usage > 512 << 10, "{before:?}");
    db.set_options(&[("block_cache_capacity", "262144")])
        .unwrap();
    let after = db.block_cache_stats();
    assert_eq!(after.capacity, 256 << 10);
    assert!(after.usage <= 256 << 10, "{after:?}");
    assert!(after.evictions > before.evictions, "{after:?}");
    assert_eq!(live(&db, "block_cache_capacity"), "262144");
    // Reads go on through the smaller cache.
    for i in (0..4000).step_by(7) {
        assert!(db.get(&key(i)).unwrap().is_some());
    }
    assert!(db.block_cache_stats().usage <= 256 << 10);
}

#[test]
fn the_default_durability_changes_for_later_writes() {
    let fs = Arc::new(MemFs::new());
    let db = open(
        fs.clone(),
        Options {
            // No background sync during the test: only `Sync` writes sync.
            sync_interval: Duration::from_secs(3600),
            wal_synced_record_interval: Duration::ZERO,
            default_keyspace: small_keyspace(),
            ..Options::default()
        },
    );
    let syncs = fs.sync_point_count();
    for i in 0..5 {
        db.put(&key(i), b"synced").unwrap();
    }
    assert!(
        fs.sync_point_count() >= syncs + 5,
        "sync writes did not sync"
    );

    db.set_options(&[("durability", "buffered")]).unwrap();
    assert_eq!(live(&db, "durability"), "buffered");
    let syncs = fs.sync_point_count();
    for i in 5..10 {
        db.put(&key(i), b"buffered").unwrap();
    }
    assert_eq!(fs.sync_point_count(), syncs, "buffered writes synced");

    db.set_options(&[("durability", "sync")]).unwrap();
    db.put(&key(10), b"synced again").unwrap();
    assert!(fs.sync_point_count() > syncs);
    // The sync write made the buffered ones before it durable too (one WAL, in order).
    let image = fs.crash_image(shale_fs::CrashMode::DropUnsynced);
    drop(db);
    let reopened = open(Arc::new(image), Options::default());
    for i in 0..=10 {
        assert!(reopened.get(&key(i)).unwrap().is_some(), "key {i} lost");
    }
}

#[test]
fn bad_names_and_values_are_refused_by_name_and_change_nothing() {
    let db = open(
        Arc::new(MemFs::new()),
        Options {
            default_keyspace: small_keyspace(),
            ..Options::default()
        },
    );
    let error = |changes: &[(&str, &str)]| db.set_options(changes).unwrap_err().to_string();

    let message = error(&[("block_size", "8192")]);
    assert!(
        message.contains("block_size") && message.contains("cannot be changed"),
        "{message}"
    );
    let message = error(&[("write_buffer_size", "lots")]);
    assert!(
        message.contains("write_buffer_size") && message.contains("\"lots\""),
        "{message}"
    );
    let message = error(&[("durability", "2")]);
    assert!(message.contains("durability"), "{message}");
    // Below the slowdown trigger (20): refused by the keyspace's own validation.
    let message = error(&[
        ("rate_limit_bytes_per_sec", "1000"),
        ("level0_stop_writes_trigger", "10"),
    ]);
    assert!(
        message.contains("level0_stop_writes_trigger 10") && message.contains("default"),
        "{message}"
    );
    let message = error(&[("write_buffer_size", "100")]);
    assert!(message.contains("write_buffer_size 100"), "{message}");
    // All or nothing: the valid rate in the refused call was not applied.
    assert_eq!(live(&db, "rate_limit_bytes_per_sec"), "0");
    assert_eq!(live(&db, "level0_stop_writes_trigger"), "36");
}

#[test]
fn a_read_only_open_refuses_live_changes() {
    let fs = Arc::new(MemFs::new());
    open(fs.clone(), Options::default()).close().unwrap();
    let db = Db::open_read_only(
        DIR,
        Options {
            file_system: fs,
            ..Options::default()
        },
    )
    .unwrap();
    let message = db
        .set_options(&[("block_cache_capacity", "1048576")])
        .unwrap_err()
        .to_string();
    assert!(message.contains("set_options"), "{message}");
}

#[test]
fn a_smaller_write_buffer_flushes_sooner() {
    let db = open(
        Arc::new(MemFs::new()),
        Options {
            default_keyspace: KeyspaceOptions {
                write_buffer_size: 64 << 20,
                ..small_keyspace()
            },
            ..Options::default()
        },
    );
    for i in 0..2000 {
        db.put(&key(i), &[1; 100]).unwrap();
    }
    db.wait_for_background_work().unwrap();
    let keyspace = db.default_keyspace();
    assert_eq!(
        db.level_file_counts(&keyspace)
            .unwrap()
            .iter()
            .sum::<usize>(),
        0
    );
    db.set_options(&[("write_buffer_size", "65536")]).unwrap();
    for i in 2000..4000 {
        db.put(&key(i), &[1; 100]).unwrap();
    }
    db.wait_for_background_work().unwrap();
    let files: usize = db.level_file_counts(&keyspace).unwrap().iter().sum();
    assert!(files >= 1, "no flush after the write buffer shrank");
}

/// With a compaction held, L0 holds three tables: lowering the stop trigger to 3 stalls the
/// next write, and raising it again releases that write, all without a reopen.
#[test]
fn a_lower_stop_trigger_stalls_writes_and_a_higher_one_releases_them() {
    // The compaction thread, once the gate is armed, is held as it opens a table, so L0
    // grows while the test changes the stall triggers.
    let (fs, gate) = gated_mem_fs(|call| {
        call.op == Op::OpenRead && call.has_extension("sst") && on_thread("shale-compact")
    });
    let db = Arc::new(open(
        Arc::new(fs),
        Options {
            default_keyspace: KeyspaceOptions {
                level0_compaction_trigger: 2,
                ..small_keyspace()
            },
            ..Options::default()
        },
    ));
    gate.arm();
    let write_table = |round: u64| {
        for i in 0..50 {
            db.put(&key(i), &round.to_le_bytes()).unwrap();
        }
        db.flush().unwrap();
    };
    write_table(0);
    write_table(1);
    gate.wait_until_held(); // compacting the two L0 tables, held
    write_table(2);
    assert_eq!(db.level_file_counts(&db.default_keyspace()).unwrap()[0], 3);
    db.put(b"before", b"1").unwrap();
    assert_eq!(db.stats().stall_level0_stops, 0);

    db.set_options(&[
        ("level0_slowdown_writes_trigger", "2"),
        ("level0_stop_writes_trigger", "3"),
    ])
    .unwrap();
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || db.put(b"stopped", b"1"))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.stats().stall_level0_stops == 0 {
        assert!(Instant::now() < deadline, "the writer never stopped");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !writer.is_finished(),
        "a write went through at the stop trigger"
    );

    // Raised again while the compaction is still held: the waiting write goes through.
    db.set_options(&[
        ("level0_slowdown_writes_trigger", "20"),
        ("level0_stop_writes_trigger", "36"),
    ])
    .unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(db.get(b"stopped").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.level_file_counts(&db.default_keyspace()).unwrap()[0], 3);
    gate.release();
    db.wait_for_background_work().unwrap();
}

/// Waits (bounded) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn max_background_jobs_starts_and_stops_compaction_threads_live() {
    let db = open(
        Arc::new(MemFs::new()),
        Options {
            default_keyspace: small_keyspace(),
            ..Options::default()
        },
    );
    // One flush thread and one compaction thread.
    assert_eq!(live(&db, "max_background_jobs"), "2");
    assert_eq!(db.compaction_threads(), 1);
    db.set_options(&[("max_background_jobs", "5")]).unwrap();
    assert_eq!(live(&db, "max_background_jobs"), "5");
    // Started before set_options returns.
    assert_eq!(db.compaction_threads(), 4);
    db.set_options(&[("max_background_jobs", "3")]).unwrap();
    assert_eq!(live(&db, "max_background_jobs"), "3");
    wait_until("two compaction threads are left", || {
        db.compaction_threads() == 2
    });
    // Bad values are refused, naming the option, and change nothing.
    for bad in ["1", "0", "65", "two"] {
        let error = db
            .set_options(&[("max_background_jobs", bad)])
            .unwrap_err()
            .to_string();
        assert!(error.contains("max_background_jobs"), "{error}");
    }
    assert_eq!(live(&db, "max_background_jobs"), "3");
    assert_eq!(db.compaction_threads(), 2);

    // The threads left compact: two keyspaces with L0 past its trigger both get compacted.
    let other = db.create_keyspace("other", small_keyspace()).unwrap();
    for round in 0..4u64 {
        for i in 0..50 {
            db.put(&key(round * 50 + i), b"v").unwrap();
            other.put(&key(round * 50 + i), b"v").unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_background_work().unwrap();
    let stats = db.stats();
    assert!(stats.compactions + stats.trivial_moves >= 2, "{stats:?}");
    assert_eq!(db.get(&key(199)).unwrap().as_deref(), Some(&b"v"[..]));
    drop(other);
    db.close().unwrap();
}

#[test]
fn max_background_jobs_below_two_is_refused_at_open() {
    let Err(error) = Db::open(
        DIR,
        Options {
            file_system: Arc::new(MemFs::new()),
            max_background_jobs: 1,
            ..Options::default()
        },
    ) else {
        panic!("opened with one background job");
    };
    let error = error.to_string();
    assert!(error.contains("max_background_jobs"), "{error}");
}
