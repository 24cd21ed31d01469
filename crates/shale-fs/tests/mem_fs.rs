//! Behaviour of `MemFs`: page-cache reads, durability tracking and crash images.

use std::path::Path;
use std::sync::{Arc, Mutex};

use shale_fs::{CrashMode, Error, FileSystem, MemFs};

const DIR: &str = "/db";

fn fs_with_dir() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new(DIR)).expect("mkdir");
    fs
}

fn p(name: &str) -> std::path::PathBuf {
    Path::new(DIR).join(name)
}

/// Creates `name` with `data`, syncs it and its directory entry.
fn durable_file(fs: &MemFs, name: &str, data: &[u8]) {
    let mut file = fs.create(&p(name)).expect("create");
    file.append(data).expect("append");
    file.sync_data().expect("sync");
    fs.sync_dir(Path::new(DIR)).expect("sync dir");
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ salt)
        .collect()
}

#[test]
fn reads_see_unsynced_bytes_like_a_page_cache() {
    let fs = fs_with_dir();
    let mut file = fs.create(&p("1.wal")).expect("create");
    file.append(b"abcdef").expect("append");
    let reader = fs.open_read(&p("1.wal")).expect("open");
    let mut buf = [0; 3];
    reader.read_exact_at(2, &mut buf).expect("read");
    assert_eq!(&buf, b"cde");
    assert_eq!(reader.size().expect("size"), 6);
    let err = reader.read_exact_at(4, &mut buf).expect_err("past end");
    assert!(matches!(
        err,
        Error::UnexpectedEof {
            offset: 4,
            len: 3,
            file_size: 6,
            ..
        }
    ));
}

#[test]
fn drop_unsynced_keeps_synced_bytes_only() {
    let fs = fs_with_dir();
    durable_file(&fs, "1.wal", b"synced");
    let mut file = fs.open_append(&p("1.wal")).expect("open append");
    file.append(b" and not").expect("append");
    assert_eq!(
        fs.file_contents(p("1.wal")).expect("contents"),
        b"synced and not"
    );

    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(
        image.file_contents(p("1.wal")).expect("contents"),
        b"synced"
    );

    file.sync_data().expect("sync");
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(
        image.file_contents(p("1.wal")).expect("contents"),
        b"synced and not"
    );
}

#[test]
fn create_without_sync_dir_is_gone_in_the_image() {
    let fs = fs_with_dir();
    let mut file = fs.create(&p("2.sst")).expect("create");
    file.append(b"data").expect("append");
    file.sync_data().expect("sync data only");
    assert!(!fs.is_durable_name(p("2.sst")));
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert!(!image.exists(&p("2.sst")).expect("exists"));
    assert!(image
        .file_contents(p("2.sst"))
        .expect_err("gone")
        .is_not_found());

    fs.sync_dir(Path::new(DIR)).expect("sync dir");
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(image.file_contents(p("2.sst")).expect("kept"), b"data");
}

#[test]
fn rename_without_sync_dir_is_undone() {
    let fs = fs_with_dir();
    durable_file(&fs, "CURRENT", b"old");
    durable_file(&fs, "CURRENT.tmp", b"new");
    fs.rename(&p("CURRENT.tmp"), &p("CURRENT")).expect("rename");
    assert_eq!(fs.file_contents(p("CURRENT")).expect("current"), b"new");
    assert!(!fs.exists(&p("CURRENT.tmp")).expect("exists"));

    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(image.file_contents(p("CURRENT")).expect("target"), b"old");
    assert_eq!(
        image.file_contents(p("CURRENT.tmp")).expect("source"),
        b"new"
    );

    fs.sync_dir(Path::new(DIR)).expect("sync dir");
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(image.file_contents(p("CURRENT")).expect("target"), b"new");
    assert!(!image.exists(&p("CURRENT.tmp")).expect("exists"));
}

#[test]
fn remove_without_sync_dir_is_resurrected() {
    let fs = fs_with_dir();
    durable_file(&fs, "3.sst", b"table");
    fs.remove(&p("3.sst")).expect("remove");
    assert!(!fs.exists(&p("3.sst")).expect("exists"));
    assert_eq!(fs.list(Path::new(DIR)).expect("list"), Vec::<String>::new());

    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(image.file_contents(p("3.sst")).expect("back"), b"table");

    fs.sync_dir(Path::new(DIR)).expect("sync dir");
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert!(!image.exists(&p("3.sst")).expect("exists"));
}

#[test]
fn create_over_a_durable_name_is_a_new_file_until_sync_dir() {
    let fs = fs_with_dir();
    durable_file(&fs, "OPTIONS", b"version 1");
    let mut file = fs.create(&p("OPTIONS")).expect("truncate");
    file.append(b"v2").expect("append");
    file.sync_data().expect("sync");
    assert_eq!(fs.file_contents(p("OPTIONS")).expect("now"), b"v2");
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(
        image.file_contents(p("OPTIONS")).expect("image"),
        b"version 1"
    );
}

#[test]
fn hard_links_share_one_file() {
    let fs = fs_with_dir();
    durable_file(&fs, "4.sst", b"abc");
    fs.hard_link(&p("4.sst"), &p("backup.sst")).expect("link");
    assert!(
        fs.hard_link(&p("4.sst"), &p("backup.sst")).is_err(),
        "target exists"
    );
    fs.corrupt_for_test(p("4.sst"), 0, 0x20).expect("corrupt");
    assert_eq!(fs.file_contents(p("backup.sst")).expect("link"), b"Abc");
    assert_eq!(fs.total_bytes(), 3, "a linked file counts once");
}

#[test]
fn torn_images_keep_sector_prefixes_and_differ_by_seed() {
    let fs = fs_with_dir();
    let synced = pattern(1000, 1);
    let tail = pattern(9000, 2);
    durable_file(&fs, "5.wal", &synced);
    let mut file = fs.open_append(&p("5.wal")).expect("open");
    file.append(&tail).expect("append");
    let full = fs.file_contents(p("5.wal")).expect("contents");

    let mut images = Vec::new();
    for seed in 0..64 {
        let kept = fs
            .crash_image(CrashMode::Torn { seed })
            .file_contents(p("5.wal"))
            .expect("kept");
        let k = kept.len();
        assert!(
            k >= synced.len() && k <= full.len(),
            "seed {seed}: {k} bytes"
        );
        // Everything before the last kept sector is exactly the original.
        let last_sector = if k > synced.len() {
            ((k - 1) / 512 * 512).max(synced.len())
        } else {
            k
        };
        assert_eq!(kept[..last_sector], full[..last_sector], "seed {seed}");
        images.push(kept);
    }
    let same = fs
        .crash_image(CrashMode::Torn { seed: 7 })
        .file_contents(p("5.wal"))
        .expect("again");
    assert_eq!(same, images[7], "same seed, same image");
    let distinct: std::collections::HashSet<_> = images.iter().collect();
    assert!(
        distinct.len() > 10,
        "only {} distinct images from 64 seeds",
        distinct.len()
    );
    assert!(
        images
            .iter()
            .any(|i| i.len() > synced.len() && i.len() < full.len() && i.len() % 512 == 0),
        "some image must keep whole sectors of the tail"
    );
}

#[test]
fn images_are_independent_of_the_original() {
    let fs = fs_with_dir();
    durable_file(&fs, "6.sst", b"before");
    let image = fs.crash_image(CrashMode::DropUnsynced);
    fs.corrupt_for_test(p("6.sst"), 0, 0xff)
        .expect("corrupt original");
    fs.remove(&p("6.sst")).expect("remove");
    fs.sync_dir(Path::new(DIR)).expect("sync");
    assert_eq!(image.file_contents(p("6.sst")).expect("image"), b"before");

    let mut file = image.open_append(&p("6.sst")).expect("append to image");
    file.append(b" after").expect("append");
    assert!(!fs.exists(&p("6.sst")).expect("exists"));
    assert_eq!(image.sync_point_count(), 0);
    // The image is fully durable: a crash of the image loses nothing that was in it.
    drop(file);
    let again = image.crash_image(CrashMode::DropUnsynced);
    assert_eq!(again.file_contents(p("6.sst")).expect("again"), b"before");
}

#[test]
fn sync_hook_fires_with_increasing_numbers_and_may_take_images() {
    let fs = fs_with_dir();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook_fs = fs.clone();
    let hook_seen = seen.clone();
    fs.set_sync_hook(Some(Arc::new(move |n| {
        let image = hook_fs.crash_image(CrashMode::DropUnsynced);
        let durable = image.file_contents(p("7.wal")).ok();
        hook_seen.lock().expect("seen").push((n, durable));
    })));
    let mut file = fs.create(&p("7.wal")).expect("create");
    file.append(b"a").expect("append");
    file.sync_data().expect("sync 1");
    fs.sync_dir(Path::new(DIR)).expect("sync 2");
    file.append(b"b").expect("append");
    file.sync_data().expect("sync 3");
    fs.set_sync_hook(None);
    file.sync_data().expect("sync 4, no hook");

    assert_eq!(fs.sync_point_count(), 4);
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(
        seen,
        [
            (1, None),
            (2, Some(b"a".to_vec())),
            (3, Some(b"ab".to_vec()))
        ]
    );
}

#[test]
fn lock_is_exclusive_per_instance_until_dropped() {
    let fs = fs_with_dir();
    let guard = fs.lock(&p("LOCK")).expect("lock");
    let err = fs.clone().lock(&p("LOCK")).expect_err("second");
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(
        fs.exists(&p("LOCK")).expect("exists"),
        "lock creates the file"
    );
    // A separate instance (here: a crash image) has its own locks.
    drop(
        fs.crash_image(CrashMode::DropUnsynced)
            .lock(&p("LOCK"))
            .expect("image lock"),
    );
    drop(guard);
    drop(fs.lock(&p("LOCK")).expect("relock"));
}

#[test]
fn namespace_errors_and_listing() {
    let fs = fs_with_dir();
    assert!(fs
        .create(Path::new("/nodir/x"))
        .expect_err("no parent")
        .is_not_found());
    assert!(fs
        .list(Path::new("/nodir"))
        .expect_err("no dir")
        .is_not_found());
    assert!(fs.open_read(&p("x")).expect_err("missing").is_not_found());
    assert!(fs.remove(&p("x")).expect_err("missing").is_not_found());
    fs.create_dir_all(&p("sub/deeper")).expect("mkdir");
    durable_file(&fs, "b", b"");
    durable_file(&fs, "a", b"");
    assert_eq!(fs.list(Path::new("/db/")).expect("list"), ["a", "b", "sub"]);
    assert!(fs.exists(&p("sub")).expect("exists"));
    assert!(fs.exists(Path::new("/db/./sub/deeper")).expect("exists"));
}

#[test]
fn test_helpers_plant_damage_and_measure() {
    let fs = MemFs::new();
    fs.write_file_for_test("/fixtures/old/1.sst", b"0123456789")
        .expect("plant");
    assert!(fs.is_durable_name("/fixtures/old/1.sst"));
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(
        image.file_contents("/fixtures/old/1.sst").expect("durable"),
        b"0123456789"
    );

    fs.truncate_for_test("/fixtures/old/1.sst", 4)
        .expect("truncate");
    assert_eq!(
        fs.file_contents("/fixtures/old/1.sst").expect("cut"),
        b"0123"
    );
    assert_eq!(fs.total_bytes(), 4);
    let err = fs
        .corrupt_for_test("/fixtures/old/1.sst", 4, 1)
        .expect_err("past end");
    assert!(matches!(
        err,
        Error::UnexpectedEof {
            offset: 4,
            file_size: 4,
            ..
        }
    ));
    fs.corrupt_for_test("/fixtures/old/1.sst", 3, 0x01)
        .expect("flip");
    assert_eq!(
        fs.file_contents("/fixtures/old/1.sst").expect("flipped"),
        b"0122"
    );
}

#[test]
fn start_writeback_hands_bytes_to_readers_but_makes_nothing_durable() {
    let fs = fs_with_dir();
    durable_file(&fs, "1.sst", b"synced");
    let mut file = fs.open_append(&p("1.sst")).expect("open append");
    file.append(b" written back").expect("append");
    file.start_writeback().expect("start writeback");
    assert_eq!(
        fs.file_contents(p("1.sst")).expect("contents"),
        b"synced written back"
    );
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(
        image.file_contents(p("1.sst")).expect("contents"),
        b"synced"
    );
}

#[test]
fn a_concurrent_syncer_makes_what_was_appended_before_it_durable() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut file = fs.create(&p("1.wal")).unwrap();
    fs.sync_dir(Path::new("/db")).unwrap();
    file.append(b"before;").unwrap();
    let syncer = file
        .concurrent_syncer()
        .unwrap()
        .expect("MemFs files have one");
    // The writer goes on appending; the syncer needs nothing of it.
    file.append(b"after-handle;").unwrap();
    let points = fs.sync_point_count();
    syncer.sync_data().unwrap();
    assert_eq!(
        fs.sync_point_count(),
        points + 1,
        "a sync point, as for sync_data"
    );
    file.append(b"after-sync").unwrap();
    let image = fs.crash_image(CrashMode::DropUnsynced);
    // Bytes appended before the call are durable (those between the handle and the call
    // may be: here they are); bytes after it are not.
    assert_eq!(
        image.file_contents(p("1.wal")).unwrap(),
        b"before;after-handle;"
    );
}
