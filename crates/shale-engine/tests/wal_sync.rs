//! The background WAL sync runs without the WAL lock (`background::sync_wal`): writers go on
//! while the device works, and a caller that needs the log durable never takes a sync still
//! in flight for a finished one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use shale_engine::{
    Db, Durability, IngestArg, IngestOptions, KeyspaceOptions, Options, TableFileWriter,
};
use shale_fs::{DataSyncer, FileSystem, MemFs, Result as FsResult, WritableFile};

mod wal_wrapping_fs;
use wal_wrapping_fs::WalWrappingFs;

const DB: &str = "/db";

/// Holds the first WAL sync (by either path) until the test opens the gate, and counts the
/// WAL syncs that completed.
#[derive(Debug, Default)]
struct Gate {
    /// (a sync is waiting at the gate, the gate is open)
    state: Mutex<(bool, bool)>,
    changed: Condvar,
    armed: Mutex<bool>,
    completed: AtomicUsize,
}

impl Gate {
    fn pass(&self) {
        let first = std::mem::take(&mut *self.armed.lock().unwrap());
        if first {
            let mut state = self.state.lock().unwrap();
            state.0 = true;
            self.changed.notify_all();
            while !state.1 {
                state = self.changed.wait(state).unwrap();
            }
        }
    }

    fn wait_until_held(&self) {
        let mut state = self.state.lock().unwrap();
        while !state.0 {
            let (next, timeout) = self
                .changed
                .wait_timeout(state, Duration::from_secs(20))
                .unwrap();
            assert!(!timeout.timed_out(), "no WAL sync reached the gate");
            state = next;
        }
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

#[derive(Debug)]
struct GatedWal {
    file: Box<dyn WritableFile>,
    gate: Arc<Gate>,
}

#[derive(Debug)]
struct GatedSyncer {
    inner: Box<dyn DataSyncer>,
    gate: Arc<Gate>,
}

impl WritableFile for GatedWal {
    fn append(&mut self, data: &[u8]) -> FsResult<()> {
        self.file.append(data)
    }
    fn flush(&mut self) -> FsResult<()> {
        self.file.flush()
    }
    fn sync_data(&mut self) -> FsResult<()> {
        self.gate.pass();
        self.file.sync_data()?;
        self.gate.completed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn concurrent_syncer(&mut self) -> FsResult<Option<Box<dyn DataSyncer>>> {
        Ok(self.file.concurrent_syncer()?.map(|inner| {
            Box::new(GatedSyncer {
                inner,
                gate: self.gate.clone(),
            }) as Box<dyn DataSyncer>
        }))
    }
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl DataSyncer for GatedSyncer {
    fn sync_data(&self) -> FsResult<()> {
        self.gate.pass();
        self.inner.sync_data()?;
        self.gate.completed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        file_system: fs,
        durability: Durability::Flush,
        sync_interval: Duration::from_millis(5),
        ..Options::default()
    }
}

/// The database's file system, and the gate its WAL syncs pass.
struct Gated {
    mem: MemFs,
    gate: Arc<Gate>,
}

/// Opens a database whose first WAL sync after the open waits at the gate.
fn open_gated() -> (Arc<Db>, Gated) {
    let gate = Arc::new(Gate::default());
    let mem = MemFs::new();
    let wal_gate = gate.clone();
    let fs = WalWrappingFs::new(mem.clone(), move |file| {
        Box::new(GatedWal {
            file,
            gate: wal_gate.clone(),
        })
    });
    let db = Db::open(DB, options(Arc::new(fs))).unwrap();
    *gate.armed.lock().unwrap() = true;
    (Arc::new(db), Gated { mem, gate })
}

/// Runs `work` on another thread and says whether it finished within a few seconds.
fn finishes_while_held(work: impl FnOnce() + Send + 'static) -> bool {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        work();
        let _ = done.send(());
    });
    finished.recv_timeout(Duration::from_secs(5)).is_ok()
}

#[test]
fn writes_go_on_while_the_background_syncer_syncs_the_wal() {
    let (db, fs) = open_gated();
    db.put(b"before", b"1").unwrap();
    fs.gate.wait_until_held();
    let writer = db.clone();
    let went_on = finishes_while_held(move || {
        for i in 0..100 {
            writer.put(format!("during{i}").as_bytes(), b"2").unwrap();
        }
    });
    fs.gate.open();
    assert!(
        went_on,
        "writes waited for the background WAL sync (it held the WAL lock)"
    );
    Arc::into_inner(db).unwrap().close().unwrap();
    // Everything acknowledged is in the log the reopen replays.
    let db = Db::open(DB, options(Arc::new(fs.mem.clone()))).unwrap();
    assert_eq!(db.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"during99").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn an_ingestion_syncs_the_wal_itself_while_a_background_sync_is_in_flight() {
    let (db, fs) = open_gated();
    db.put(b"acknowledged", b"1").unwrap();
    fs.gate.wait_until_held();
    // Ingestion makes the acknowledged writes durable before its files (ingest.rs invariant
    // 4): with the background sync still held, it must sync the WAL itself.
    let path = PathBuf::from("/ext/1.sst");
    fs.mem.create_dir_all(Path::new("/ext")).unwrap();
    let mut table = TableFileWriter::create(
        &path,
        &options(Arc::new(fs.mem.clone())),
        &KeyspaceOptions::default(),
    )
    .unwrap();
    table.put(b"ingested", b"2").unwrap();
    table.finish().unwrap();
    let ingesting_db = db.clone();
    let completed_before = fs.gate.completed.load(Ordering::SeqCst);
    let gate = fs.gate.clone();
    let synced_first = Arc::new(Mutex::new(None));
    let seen = synced_first.clone();
    let ingested = finishes_while_held(move || {
        let arg = IngestArg {
            keyspace: ingesting_db.default_keyspace(),
            files: vec![path],
        };
        ingesting_db
            .ingest(&[arg], IngestOptions::default())
            .unwrap();
        *seen.lock().unwrap() = Some(gate.completed.load(Ordering::SeqCst));
    });
    fs.gate.open();
    assert!(
        ingested,
        "the ingestion waited for the held background sync"
    );
    let completed_at_ingest = synced_first.lock().unwrap().unwrap();
    assert!(
        completed_at_ingest > completed_before,
        "the ingestion returned before any WAL sync completed (it took the held one for done)"
    );
    assert_eq!(db.get(b"ingested").unwrap().as_deref(), Some(&b"2"[..]));
    Arc::into_inner(db).unwrap().close().unwrap();
}
