//! Behaviour of `OsFs` on the real file system, in a fresh directory under the temp dir.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use shale_fs::{Error, FileSystem, IoMode, OsFs};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "shale-fs-test-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        OsFs::new().create_dir_all(&path).expect("create temp dir");
        Self(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where the direct I/O tests run: they need a file system that takes `O_DIRECT` (ext4, xfs,
/// tmpfs from Linux 6.6), and fail rather than skip where the temp dir refuses it.
const DIRECT_IO_DIR_HINT: &str =
    "the temp dir refuses O_DIRECT: run with TMPDIR on a disk file system (ext4, xfs)";

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + i / 509) as u8).collect()
}

fn write_file(fs: &dyn FileSystem, path: &Path, data: &[u8]) {
    let mut file = fs.create(path).expect("create");
    for chunk in data.chunks(1000) {
        file.append(chunk).expect("append");
    }
    file.sync_data().expect("sync");
}

#[test]
fn round_trip_through_append_sync_and_positional_reads() {
    let dir = TempDir::new("roundtrip");
    let fs = OsFs::new();
    let path = dir.join("000001.sst");
    let data = pattern(200_000);
    let mut file = fs.create(&path).expect("create");
    assert!(file.is_empty());
    for chunk in data.chunks(777) {
        file.append(chunk).expect("append");
    }
    assert_eq!(file.len(), data.len() as u64);
    file.sync_data().expect("sync");
    drop(file);
    fs.sync_dir(&dir.0).expect("sync dir");

    assert_eq!(fs.size(&path).expect("size"), data.len() as u64);
    let reader = fs.open_read(&path).expect("open");
    assert_eq!(reader.size().expect("size"), data.len() as u64);
    assert_eq!(reader.path(), path);
    for (offset, len) in [(0, 10), (12_345, 67_890), (199_990, 10)] {
        let mut buf = vec![0; len];
        reader.read_exact_at(offset as u64, &mut buf).expect("read");
        assert_eq!(buf, data[offset..offset + len]);
    }
    let mut buf = vec![0; 20];
    let err = reader
        .read_exact_at(199_990, &mut buf)
        .expect_err("read past end");
    assert!(
        matches!(
            err,
            Error::UnexpectedEof {
                offset: 199_990,
                len: 20,
                file_size: 200_000,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn open_append_continues_and_create_truncates() {
    let dir = TempDir::new("append");
    let fs = OsFs::new();
    let path = dir.join("000002.wal");
    write_file(&fs, &path, b"hello ");
    let mut file = fs.open_append(&path).expect("open append");
    assert_eq!(file.len(), 6);
    file.append(b"world").expect("append");
    file.flush().expect("flush");
    assert_eq!(std::fs::read(&path).expect("read"), b"hello world");
    drop(file);

    let file = fs.create(&path).expect("create again");
    drop(file);
    assert_eq!(fs.size(&path).expect("size"), 0, "create must truncate");
}

#[test]
fn missing_files_are_not_found() {
    let dir = TempDir::new("missing");
    let fs = OsFs::new();
    let missing = dir.join("nope");
    assert!(fs.open_read(&missing).expect_err("open").is_not_found());
    assert!(fs.size(&missing).expect_err("size").is_not_found());
    assert!(fs.remove(&missing).expect_err("remove").is_not_found());
    assert!(fs.list(&missing).expect_err("list").is_not_found());
    assert!(!fs.exists(&missing).expect("exists"));
}

#[test]
fn lock_conflicts_within_the_process_until_released() {
    let dir = TempDir::new("lock");
    let path = dir.join("LOCK");
    let first = OsFs::new().lock(&path).expect("first lock");
    let err = OsFs::new().lock(&path).expect_err("second lock");
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another Shale"));
    // Another spelling of the same path must conflict too.
    let dotted = dir.0.join(".").join("LOCK");
    assert!(matches!(
        OsFs::new().lock(&dotted).expect_err("dotted"),
        Error::Locked { .. }
    ));
    drop(first);
    let again = OsFs::new().lock(&path).expect("lock after release");
    drop(again);
}

#[test]
fn direct_reads_return_the_same_bytes_as_buffered() {
    let dir = TempDir::new("direct");
    let path = dir.join("000003.sst");
    let data = pattern(3 * 4096 + 1234);
    write_file(&OsFs::new(), &path, &data);
    let buffered = OsFs::new().open_read(&path).expect("open buffered");
    let direct = OsFs::new()
        .open_read_with(&path, IoMode::Direct)
        .unwrap_or_else(|e| panic!("{e}\n{DIRECT_IO_DIR_HINT}"));
    assert_eq!(
        OsFs::new().descriptor_modes(&path).expect("modes"),
        [IoMode::Buffered, IoMode::Direct],
        "one descriptor of each mode, in descriptor order"
    );
    for (offset, len) in [
        (0, 1),
        (1, 100),
        (4095, 3),
        (4000, 9000),
        (13_000, 522),
        (0, data.len()),
    ] {
        let mut a = vec![0; len];
        let mut b = vec![0; len];
        buffered
            .read_exact_at(offset as u64, &mut a)
            .expect("buffered");
        direct.read_exact_at(offset as u64, &mut b).expect("direct");
        assert_eq!(a, b, "offset {offset} len {len}");
        assert_eq!(a, data[offset..offset + len]);
    }
    let mut buf = vec![0; 10];
    let err = direct
        .read_exact_at(data.len() as u64 - 5, &mut buf)
        .expect_err("past end");
    assert!(matches!(err, Error::UnexpectedEof { .. }), "{err}");
}

#[test]
fn list_is_sorted_and_includes_directories() {
    let dir = TempDir::new("list");
    let fs = OsFs::new();
    for name in [
        "MANIFEST-000005",
        "000010.sst",
        "CURRENT",
        "000002.wal",
        "LOCK",
    ] {
        write_file(&fs, &dir.join(name), b"x");
    }
    fs.create_dir_all(&dir.join("archive")).expect("mkdir");
    assert_eq!(
        fs.list(&dir.0).expect("list"),
        [
            "000002.wal",
            "000010.sst",
            "CURRENT",
            "LOCK",
            "MANIFEST-000005",
            "archive"
        ]
    );
}

#[test]
fn rename_replaces_the_target_and_hard_link_shares_contents() {
    let dir = TempDir::new("rename");
    let fs = OsFs::new();
    let (tmp, current) = (dir.join("CURRENT.tmp"), dir.join("CURRENT"));
    write_file(&fs, &current, b"MANIFEST-000001\n");
    write_file(&fs, &tmp, b"MANIFEST-000002\n");
    fs.rename(&tmp, &current).expect("rename");
    assert!(!fs.exists(&tmp).expect("exists"));
    assert_eq!(std::fs::read(&current).expect("read"), b"MANIFEST-000002\n");

    let link = dir.join("backup");
    fs.hard_link(&current, &link).expect("link");
    fs.remove(&current).expect("remove");
    assert_eq!(std::fs::read(&link).expect("read"), b"MANIFEST-000002\n");
    let err = fs.rename(&current, &tmp).expect_err("rename missing");
    assert!(err.is_not_found(), "{err}");
}

#[test]
fn start_writeback_between_appends_keeps_every_byte_in_order() {
    let dir = TempDir::new("writeback");
    let fs = OsFs::new();
    let path = dir.join("f");
    let data = pattern(300_000);
    let mut file = fs.create(&path).expect("create");
    for chunk in data.chunks(70_000) {
        file.append(chunk).expect("append");
        file.start_writeback().expect("start writeback");
        // A second request with nothing new asks for nothing.
        file.start_writeback().expect("start writeback again");
    }
    file.sync_data().expect("sync");
    assert_eq!(file.len(), data.len() as u64);
    assert_eq!(std::fs::read(&path).expect("read"), data);
}

#[test]
fn a_concurrent_syncer_flushes_then_syncs_from_another_thread() {
    let dir = TempDir::new("syncer");
    let fs = OsFs::new();
    let path = dir.join("000002.wal");
    let mut file = fs.create(&path).expect("create");
    file.append(b"small record").expect("append");
    let syncer = file
        .concurrent_syncer()
        .expect("flush")
        .expect("OS files have one");
    // Flushed by the call: another descriptor sees the bytes before any sync.
    assert_eq!(fs.size(&path).expect("size"), 12);
    let syncing = std::thread::spawn(move || syncer.sync_data());
    for _ in 0..100 {
        file.append(b"more").expect("append while syncing");
    }
    syncing.join().expect("thread").expect("sync");
    file.sync_data().expect("sync");
    assert_eq!(fs.size(&path).expect("size"), 12 + 400);
}

#[test]
fn direct_writes_write_whole_chunks_then_the_tail_at_sync() {
    let dir = TempDir::new("direct-write");
    let path = dir.join("000004.sst");
    let fs = OsFs::new();
    let data = pattern(4 * (1 << 20) + 10_000);
    let mut file = fs
        .create_with(&path, IoMode::Direct)
        .unwrap_or_else(|e| panic!("{e}\n{DIRECT_IO_DIR_HINT}"));
    assert_eq!(fs.descriptor_modes(&path).expect("modes"), [IoMode::Direct]);
    // Appends of odd sizes, crossing chunk and buffer boundaries, one larger than the buffer.
    let mut at = 0;
    for size in [1, 4095, 5000, 3 << 19, 77, 1 << 21] {
        file.append(&data[at..at + size]).expect("append");
        at += size;
    }
    // A writeback request writes whole chunks only, and the descriptor stays direct.
    file.start_writeback().expect("writeback");
    let on_disk = fs.size(&path).expect("size");
    assert_eq!(on_disk % 4096, 0, "only whole chunks before the sync");
    assert!(
        at as u64 - on_disk < 4096,
        "{at} appended, {on_disk} written"
    );
    assert_eq!(fs.descriptor_modes(&path).expect("modes"), [IoMode::Direct]);
    file.append(&data[at..]).expect("append");
    assert_eq!(file.len(), data.len() as u64);
    file.sync_data().expect("sync");
    assert_eq!(fs.size(&path).expect("size"), data.len() as u64);
    // The tail went out buffered: the descriptor left direct mode for it.
    assert_eq!(
        fs.descriptor_modes(&path).expect("modes"),
        [IoMode::Buffered]
    );
    drop(file);
    let mut back = vec![0; data.len()];
    fs.open_read(&path)
        .expect("open")
        .read_exact_at(0, &mut back)
        .expect("read");
    assert!(back == data, "direct writes changed the bytes");
}

#[test]
fn an_aligned_direct_file_stays_direct_through_its_sync_and_drop_writes_the_rest() {
    let dir = TempDir::new("direct-aligned");
    let fs = OsFs::new();
    let path = dir.join("000005.sst");
    let mut file = fs
        .create_with(&path, IoMode::Direct)
        .unwrap_or_else(|e| panic!("{e}\n{DIRECT_IO_DIR_HINT}"));
    file.append(&pattern(8192)).expect("append");
    file.sync_data().expect("sync");
    assert_eq!(fs.descriptor_modes(&path).expect("modes"), [IoMode::Direct]);
    file.append(&pattern(100)).expect("append");
    drop(file);
    assert_eq!(fs.size(&path).expect("size"), 8192 + 100);
    assert!(fs.descriptor_modes(&path).expect("modes").is_empty());

    // `flush` hands every byte to the OS, as the trait says, the partial tail included.
    let path = dir.join("000007.sst");
    let mut file = fs.create_with(&path, IoMode::Direct).expect("create");
    file.append(&pattern(5000)).expect("append");
    file.flush().expect("flush");
    assert_eq!(fs.size(&path).expect("size"), 5000);
    assert_eq!(
        fs.descriptor_modes(&path).expect("modes"),
        [IoMode::Buffered]
    );
    file.append(&pattern(10)).expect("append");
    file.sync_data().expect("sync");
    assert_eq!(fs.size(&path).expect("size"), 5010);
}

#[test]
fn fault_fs_passes_the_direct_mode_through_and_mem_fs_accepts_it() {
    let dir = TempDir::new("direct-fault");
    let os = std::sync::Arc::new(OsFs::new());
    let fault = shale_fs::FaultFs::new(os.clone());
    let path = dir.join("000006.sst");
    let mut file = fault
        .create_with(&path, IoMode::Direct)
        .unwrap_or_else(|e| panic!("{e}\n{DIRECT_IO_DIR_HINT}"));
    assert_eq!(os.descriptor_modes(&path).expect("modes"), [IoMode::Direct]);
    file.append(b"abc").expect("append");
    file.sync_data().expect("sync");
    drop(file);
    let read = fault
        .open_read_with(&path, IoMode::Direct)
        .expect("open direct");
    assert_eq!(os.descriptor_modes(&path).expect("modes"), [IoMode::Direct]);
    let mut back = [0; 3];
    read.read_exact_at(0, &mut back).expect("read");
    assert_eq!(&back, b"abc");

    let mem = shale_fs::MemFs::new();
    let mut file = mem
        .create_with(Path::new("/t"), IoMode::Direct)
        .expect("MemFs has no page cache to bypass: it accepts the mode");
    file.append(b"xyz").expect("append");
    drop(file);
    let mut back = [0; 3];
    mem.open_read_with(Path::new("/t"), IoMode::Direct)
        .expect("open")
        .read_exact_at(0, &mut back)
        .expect("read");
    assert_eq!(&back, b"xyz");
}
