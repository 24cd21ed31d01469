//! Disk full and failed writes under the server (docs/reliability.md, "Disk full and failed
//! writes under the server"): `shale serve`'s stack (an `Instance` behind `shale_server`)
//! runs in this process over a `FaultFs`, clients commit rows through the MySQL protocol
//! (the `mysql` crate), and the test makes the disk fail under them:
//!
//! - ENOSPC on table files (a flush cannot write its table): clients get 1021 "Disk full",
//!   the server keeps answering reads, and writes succeed again once the fault is lifted,
//!   without a restart;
//! - ENOSPC on the WAL: clients get 1021 "Disk full" too, and a failed WAL fsync 1030 (errno
//!   5, "writes are paused"); reads go on; once the fault is lifted the engine replaces the
//!   log, flushes its memtables and writes go on, without a restart;
//! - ENOSPC appending to the MANIFEST (1021) or a failed fsync of it (1030, errno 5): the
//!   engine writes a new MANIFEST once the fault is lifted and writes go on, no restart.
//! - EIO reading table files: compactions fail (counted in `Shale_compaction_read_errors`,
//!   retried with backoff), clients go on reading and writing, and once the fault is lifted
//!   a compaction runs to its end, without a restart.
//! - a damaged data block in a table file (bytes flipped on disk under the running server):
//!   the compaction that meets it marks the file, the server keeps serving, undamaged rows
//!   read and write as before, a read of a damaged row is an error naming the file (never
//!   wrong data), the operator sees the mark, and it is still there after a restart.
//!
//! Every case then checks each acknowledged commit (its row is there with its value), that no
//! INSERT that got an error is applied and no row that was never sent is there, both on the
//! running server and after a restart on the same directory.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable as _;
use mysql::{Conn, OptsBuilder};
use shale_fs::{FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, OpKind, OsFs};
use shale_server::{Backend, Server, ServerOptions};
use shale_sql::{Instance, InstanceOptions, UserRecord};

/// A server over an `Instance` in this process, stopped by [`Running::stop`].
struct Running {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    fn start(instance: &Arc<Instance>) -> Running {
        let backend: Arc<dyn Backend> = Arc::new(Arc::clone(instance));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let options = ServerOptions {
                    shutdown_timeout: Duration::from_secs(5),
                    ..ServerOptions::default()
                };
                let server = Server::bind("127.0.0.1:0".parse().unwrap(), backend, options)
                    .await
                    .unwrap();
                addr_tx.send(server.local_addr().unwrap()).unwrap();
                server
                    .run(async {
                        let _ = stop_rx.await;
                    })
                    .await;
            });
            runtime.shutdown_timeout(Duration::from_secs(10));
        });
        Running {
            addr: addr_rx.recv().unwrap(),
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// root@localhost over TCP, in database `db`.
    fn opts(&self, db: Option<&str>) -> OptsBuilder {
        OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(self.addr.port())
            .user(Some("root"))
            .pass(Some(""))
            .db_name(db)
            .prefer_socket(false)
            .read_timeout(Some(Duration::from_secs(60)))
            .write_timeout(Some(Duration::from_secs(60)))
    }

    fn connect(&self) -> Conn {
        Conn::new(self.opts(Some("d"))).expect("connect")
    }

    /// Stops the listener and waits until every session has ended.
    fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// Opens the data directory over `fs` with small memtables (flushes every few hundred rows),
/// durability `Sync`, and root@localhost without a password on first open.
fn open(dir: &Path, fs: Arc<dyn FileSystem>) -> Arc<Instance> {
    let mut options = InstanceOptions::default();
    options.store.engine.file_system = fs;
    options.store.engine.default_keyspace.write_buffer_size = 64 << 10;
    options.store.engine.durability = shale_engine::Durability::Sync;
    // A session thread of the stopped server may still hold the last reference for a moment
    // (the directory's lock goes with it).
    let deadline = Instant::now() + Duration::from_secs(20);
    let instance = loop {
        match Instance::open(dir, options.clone()) {
            Ok(instance) => break instance,
            Err(e) if Instant::now() < deadline => {
                eprintln!("open: {e}; retrying");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("open the data directory: {e}"),
        }
    };
    if instance.lookup_user("root", "localhost").unwrap().is_none() {
        instance
            .put_user(&UserRecord {
                user: "root".into(),
                host: "localhost".into(),
                plugin: shale_server::NATIVE_PASSWORD.into(),
                authentication_string: shale_server::hash_password(
                    shale_server::NATIVE_PASSWORD,
                    "",
                ),
            })
            .unwrap();
        instance.grant_all("root", "localhost").unwrap();
    }
    instance
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("shale-disk-{name}"));
    let fs = OsFs::new();
    if fs.exists(&dir).unwrap_or(false) {
        let _ = std::process::Command::new("rm")
            .arg("-rf")
            .arg(&dir)
            .status();
    }
    fs.create_dir_all(&dir).unwrap();
    dir
}

/// Each row's fate as its client saw it.
#[derive(Debug, Default)]
struct History {
    /// id -> value, for every INSERT that was acknowledged.
    acknowledged: BTreeMap<u64, String>,
    /// ids whose INSERT got an error (may or may not be applied).
    failed: BTreeMap<u64, String>,
    /// (code, message) of every error, in order.
    errors: Vec<(u16, String)>,
}

fn value_of(id: u64) -> String {
    format!("row-{id}-{}", "x".repeat((id % 97) as usize + 100))
}

/// Clients inserting rows (client `c` uses ids `c, c + clients, ...`) until `stop`.
fn writers(
    addr: &Running,
    clients: u64,
    stop: &Arc<AtomicBool>,
    history: &Arc<Mutex<History>>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..clients)
        .map(|c| {
            let mut conn = addr.connect();
            let stop = Arc::clone(stop);
            let history = Arc::clone(history);
            std::thread::spawn(move || {
                let mut id = c;
                while !stop.load(Ordering::Relaxed) {
                    let value = value_of(id);
                    let result = conn.exec_drop("INSERT INTO t VALUES (?, ?)", (id, &value));
                    let mut h = history.lock().unwrap();
                    match result {
                        Ok(()) => {
                            h.acknowledged.insert(id, value);
                        }
                        Err(mysql::Error::MySqlError(e)) => {
                            h.failed.insert(id, value);
                            h.errors.push((e.code, e.message));
                            drop(h);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(other) => panic!("the connection failed: {other}"),
                    }
                    id += clients;
                }
            })
        })
        .collect()
}

/// Waits until `check` holds, failing after `limit` with `what`.
fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn acknowledged(history: &Mutex<History>) -> usize {
    history.lock().unwrap().acknowledged.len()
}

fn errors_since(history: &Mutex<History>, from: usize) -> Vec<(u16, String)> {
    history.lock().unwrap().errors[from..].to_vec()
}

/// The server answers reads: a probe and a count of the table.
fn reads_work(server: &Running) -> u64 {
    let mut conn = server.connect();
    assert_eq!(conn.query_first::<u64, _>("SELECT 1").unwrap(), Some(1));
    conn.query_first("SELECT COUNT(*) FROM t").unwrap().unwrap()
}

/// Every acknowledged row is there with its value, and no row holds an id nobody sent.
fn check_rows(server: &Running, history: &History, when: &str) {
    let mut conn = server.connect();
    let rows: Vec<(u64, String)> = conn.query("SELECT id, v FROM t ORDER BY id").unwrap();
    let found: BTreeMap<u64, String> = rows.into_iter().collect();
    for (id, value) in &history.acknowledged {
        assert_eq!(
            found.get(id),
            Some(value),
            "{when}: acknowledged row {id} is missing or wrong"
        );
    }
    for (id, value) in &found {
        let sent = history.acknowledged.get(id).or(history.failed.get(id));
        assert_eq!(sent, Some(value), "{when}: row {id} was never sent");
    }
    let unknown_applied = found
        .keys()
        .filter(|id| history.failed.contains_key(id))
        .count();
    eprintln!(
        "{when}: {} acknowledged rows all present; {} failed inserts, {unknown_applied} of them applied",
        history.acknowledged.len(),
        history.failed.len()
    );
}

fn setup(server: &Running) {
    let mut conn = Conn::new(server.opts(None)).unwrap();
    conn.query_drop("CREATE DATABASE d").unwrap();
    conn.query_drop("CREATE TABLE d.t (id BIGINT PRIMARY KEY, v VARCHAR(300))")
        .unwrap();
}

/// Restarts on the same directory (no faults) and checks every acknowledged row, then that
/// writes work.
fn restart_and_check(dir: &Path, instance: Arc<Instance>, server: Running, history: &History) {
    server.stop();
    // After a sticky failure closing may fail; what counts is what the next open finds.
    if let Err(e) = instance.close() {
        eprintln!("close after the fault: {e}");
    }
    let instance = open(dir, Arc::new(OsFs::new()));
    let server = Running::start(&instance);
    check_rows(&server, history, "after restart");
    assert_no_refused_applied(&server, history, "after restart");
    let mut conn = server.connect();
    conn.query_drop("INSERT INTO t VALUES (9223372036854775807, 'after restart')")
        .expect("writes work after the restart");
    server.stop();
    instance.close().unwrap();
}

#[test]
fn a_full_disk_pauses_writes_with_1021_and_they_resume_when_space_returns() {
    let dir = scratch("enospc-tables");
    let fault = Arc::new(FaultFs::new(Arc::new(OsFs::new())));
    let instance = open(&dir, fault.clone());
    let server = Running::start(&instance);
    setup(&server);
    let history = Arc::new(Mutex::new(History::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let threads = writers(&server, 3, &stop, &history);
    wait_for("200 acknowledged rows", Duration::from_secs(60), || {
        acknowledged(&history) >= 200
    });

    // No table file can be created or written: the next flush fails with ENOSPC.
    let rules = [OpKind::Create, OpKind::Append].map(|op| {
        fault.add_rule(
            FaultRule::new(op, FaultTrigger::Always, FaultError::NoSpace).path_contains(".sst"),
        )
    });
    wait_for("a client to get 1021", Duration::from_secs(60), || {
        history
            .lock()
            .unwrap()
            .errors
            .iter()
            .any(|(c, _)| *c == 1021)
    });
    let (code, message) = history.lock().unwrap().errors[0].clone();
    assert_eq!(code, 1021, "{message}");
    assert!(message.starts_with("Disk full ("), "{message}");
    assert!(
        message.ends_with(
            "waiting for someone to free some space... (errno: 28 - No space left on device)"
        ),
        "{message}"
    );
    let during = reads_work(&server);
    assert!(during >= 200, "{during}");
    // While the disk stays full, every write keeps failing with 1021.
    let seen = history.lock().unwrap().errors.len();
    std::thread::sleep(Duration::from_millis(500));
    let acknowledged_while_full = acknowledged(&history);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(acknowledged(&history), acknowledged_while_full);
    let later = errors_since(&history, seen);
    assert!(
        !later.is_empty() && later.iter().all(|(c, _)| *c == 1021),
        "{later:?}"
    );

    // Space returns: the background retry flushes, and writes go on without a restart.
    for rule in rules {
        fault.remove_rule(rule);
    }
    let resumed_from = acknowledged(&history);
    wait_for("writes to resume", Duration::from_secs(30), || {
        acknowledged(&history) >= resumed_from + 100
    });
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    let history = Arc::try_unwrap(history).unwrap().into_inner().unwrap();
    eprintln!(
        "ENOSPC on tables: {} acknowledged, {} refused with 1021",
        history.acknowledged.len(),
        history.errors.len()
    );
    check_rows(&server, &history, "after the fault was lifted");
    restart_and_check(&dir, instance, server, &history);
}

/// ENOSPC on every append to `file` (a fragment of the name: the WAL or the MANIFEST), or a
/// failed fsync of every such file: writes are refused with `code` (errno `errno` for 1030)
/// while the fault lasts; the engine replaces the log and flushes the memtables, or writes a
/// new MANIFEST, so once the fault is lifted writes go on without a restart. Nothing
/// acknowledged is lost and no refused INSERT is applied, before and after a restart.
fn log_failure_pauses_writes_until_the_log_is_replaced(
    name: &str,
    file: &str,
    op: OpKind,
    error: FaultError,
    (code, errno): (u16, u16),
) {
    let dir = scratch(name);
    let fault = Arc::new(FaultFs::new(Arc::new(OsFs::new())));
    let instance = open(&dir, fault.clone());
    let server = Running::start(&instance);
    setup(&server);
    let history = Arc::new(Mutex::new(History::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let threads = writers(&server, 3, &stop, &history);
    wait_for("100 acknowledged rows", Duration::from_secs(60), || {
        acknowledged(&history) >= 100
    });
    let rule = fault.add_rule(FaultRule::new(op, FaultTrigger::Always, error).path_contains(file));
    wait_for("clients to get errors", Duration::from_secs(30), || {
        history.lock().unwrap().errors.len() >= 6
    });
    let during = reads_work(&server);
    assert!(during >= 100, "{during}");
    // While the fault lasts nothing is acknowledged (every write needs the log; a roll of the
    // MANIFEST fails as long as it lasts).
    let acknowledged_during = acknowledged(&history);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(acknowledged(&history), acknowledged_during);
    // Lifted: the background retry replaces the log and writes go on, no restart.
    fault.remove_rule(rule);
    wait_for("writes to resume", Duration::from_secs(30), || {
        acknowledged(&history) >= acknowledged_during + 100
    });
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    let history = Arc::try_unwrap(history).unwrap().into_inner().unwrap();
    for (got, message) in &history.errors {
        assert_eq!(*got, code, "{message}");
        if code == 1021 {
            assert!(message.starts_with("Disk full ("), "{message}");
            assert!(
                message.ends_with(
                    "waiting for someone to free some space... (errno: 28 - No space left on \
                     device)"
                ),
                "{message}"
            );
        } else {
            assert!(
                message.starts_with(&format!("Got error {errno} - 'writes are paused: ")),
                "{message}"
            );
            assert!(message.ends_with("' from storage engine"), "{message}");
        }
        assert!(
            message.contains(file),
            "the error names no {file}: {message}"
        );
        assert!(!message.contains("restart"), "{message}");
    }
    eprintln!(
        "{name}: {} acknowledged, {} refused with {code}; first: {}",
        history.acknowledged.len(),
        history.errors.len(),
        history.errors[0].1
    );
    check_rows(&server, &history, "after the fault was lifted");
    assert_no_refused_applied(&server, &history, "after the fault was lifted");
    restart_and_check(&dir, instance, server, &history);
}

/// No INSERT that got an error is applied (the WAL recovery cuts a refused write out of the
/// failed log).
fn assert_no_refused_applied(server: &Running, history: &History, when: &str) {
    let mut conn = server.connect();
    for id in history.failed.keys() {
        let found: Option<u64> = conn
            .exec_first("SELECT id FROM t WHERE id = ?", (id,))
            .unwrap();
        assert_eq!(
            found, None,
            "{when}: refused INSERT of row {id} was applied"
        );
    }
}

#[test]
fn a_full_disk_under_the_log_pauses_writes_with_1021_until_space_returns_and_loses_nothing() {
    log_failure_pauses_writes_until_the_log_is_replaced(
        "enospc-wal",
        ".wal",
        OpKind::Append,
        FaultError::NoSpace,
        (1021, 28),
    );
}

#[test]
fn a_failed_log_fsync_pauses_writes_until_the_log_is_replaced_and_loses_nothing() {
    log_failure_pauses_writes_until_the_log_is_replaced(
        "fsync-wal",
        ".wal",
        OpKind::SyncData,
        FaultError::FailedSync,
        (1030, 5),
    );
}

#[test]
fn a_full_disk_under_the_manifest_pauses_writes_with_1021_until_a_new_manifest_is_written() {
    log_failure_pauses_writes_until_the_log_is_replaced(
        "enospc-manifest",
        "MANIFEST",
        OpKind::Append,
        FaultError::NoSpace,
        (1021, 28),
    );
}

#[test]
fn a_failed_manifest_fsync_pauses_writes_with_1030_until_a_new_manifest_is_written() {
    log_failure_pauses_writes_until_the_log_is_replaced(
        "fsync-manifest",
        "MANIFEST",
        OpKind::SyncData,
        FaultError::FailedSync,
        (1030, 5),
    );
}

/// A GLOBAL status counter of the server, through `conn` (opened before a fault: a login
/// reads the accounts from the tables).
fn status(conn: &mut Conn, name: &str) -> u64 {
    let row: Option<(String, u64)> = conn
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap();
    row.unwrap_or_else(|| panic!("no status variable {name}")).1
}

#[test]
fn failed_compaction_reads_keep_the_server_serving_and_compaction_resumes_once_they_stop() {
    let dir = scratch("eio-compaction-reads");
    let fault = Arc::new(FaultFs::new(Arc::new(OsFs::new())));
    let instance = open(&dir, fault.clone());
    let server = Running::start(&instance);
    setup(&server);
    let history = Arc::new(Mutex::new(History::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let threads = writers(&server, 2, &stop, &history);
    wait_for("200 acknowledged rows", Duration::from_secs(60), || {
        acknowledged(&history) >= 200
    });

    // A third of the reads of table files fail with EIO: a compaction reads many blocks, so
    // each one fails (compaction.rs read_failure: a transient error, retried with backoff);
    // a client read that meets the fault gets an error and the next one may succeed.
    let mut watcher = server.connect();
    let rule = fault.add_rule(
        FaultRule::new(
            OpKind::Read,
            FaultTrigger::Probability { p: 0.3, seed: 26 },
            FaultError::Eio,
        )
        .path_contains(".sst"),
    );
    wait_for(
        "a compaction to fail reading its input",
        Duration::from_secs(120),
        || status(&mut watcher, "Shale_compaction_read_errors") >= 2,
    );
    assert_eq!(
        watcher.query_first::<u64, _>("SELECT 1").unwrap(),
        Some(1),
        "the server answers while compactions fail"
    );
    // A login that cannot read the accounts gets that error, not "Access denied" (1045).
    for _ in 0..5 {
        if let Err(mysql::Error::MySqlError(e)) = Conn::new(server.opts(None)) {
            assert_ne!(e.code, 1045, "a failed read is not a wrong password: {e:?}");
        }
    }
    let during = acknowledged(&history);
    wait_for("writes to go on", Duration::from_secs(60), || {
        acknowledged(&history) >= during + 50
    });

    // The fault ends: a compaction runs to its end (the backoff is at most 5 s).
    fault.remove_rule(rule);
    let compactions = status(&mut watcher, "Shale_compactions");
    let read_errors = status(&mut watcher, "Shale_compaction_read_errors");
    wait_for("a compaction to succeed", Duration::from_secs(60), || {
        status(&mut watcher, "Shale_compactions") > compactions
    });
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(
        status(&mut watcher, "Shale_damaged_tables"),
        0,
        "EIO is no damage"
    );
    drop(watcher);
    let history = Arc::try_unwrap(history).unwrap().into_inner().unwrap();
    eprintln!(
        "EIO on compaction reads: {} acknowledged, {} client errors, {read_errors} failed compactions",
        history.acknowledged.len(),
        history.errors.len()
    );
    check_rows(&server, &history, "after the fault was lifted");
    let mut conn = server.connect();
    let check: Vec<(String, String, String, String)> = conn.query("CHECK TABLE t").unwrap();
    assert_eq!(check.last().unwrap().3, "OK", "{check:?}");
    drop(conn);
    restart_and_check(&dir, instance, server, &history);
}

/// The key prefix of `d.t`'s primary index: its 4-byte index id, big-endian
/// (docs/format/table-keys.md).
fn primary_index_prefix(conn: &mut Conn) -> [u8; 4] {
    let id: u64 = conn
        .query_first(
            "SELECT INDEX_ID FROM information_schema.SHALE_DDL \
             WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't' AND INDEX_NAME = 'PRIMARY'",
        )
        .unwrap()
        .expect("t has a primary index");
    u32::try_from(id).unwrap().to_be_bytes()
}

/// A data block of a table file in `dir` holding only keys that start with `prefix` (its
/// neighbours' separators start with it too): the file and the block's offset and size.
fn data_block_of(dir: &Path, prefix: &[u8]) -> (PathBuf, u64, u64) {
    let fs = OsFs::new();
    let mut names = fs.list(dir).unwrap();
    names.sort();
    // Table files are `NNNNNN.sst`, lower case, as the engine names them.
    for name in names.iter().filter(|n| n.strip_suffix(".sst").is_some()) {
        let path = dir.join(name);
        let table =
            shale_sst::Table::open(&fs, &path, &shale_sst::TableOpenOptions::default()).unwrap();
        let entries = table.index_entries().unwrap();
        let inside: Vec<usize> = (1..entries.len())
            .filter(|&i| {
                entries[i - 1].separator.starts_with(prefix)
                    && entries[i].separator.starts_with(prefix)
            })
            .collect();
        if let Some(&i) = inside.get(inside.len() / 2) {
            let handle = entries[i].handle;
            return (path, handle.offset, handle.size);
        }
    }
    panic!(
        "no table file in {} holds a whole block of t",
        dir.display()
    );
}

/// XORs `len` bytes of `file` at `at`, in place (same inode: open handles see the change).
fn flip_bytes(file: &Path, at: u64, len: usize) {
    use std::os::unix::fs::FileExt as _;
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut bytes = vec![0; len];
    handle.read_exact_at(&mut bytes, at).unwrap();
    for b in &mut bytes {
        *b ^= 0x5a;
    }
    handle.write_all_at(&bytes, at).unwrap();
    handle.sync_all().unwrap();
}

fn multi_row_insert(conn: &mut Conn, ids: impl Iterator<Item = u64>) {
    let rows: Vec<String> = ids
        .map(|id| format!("({id}, '{}')", value_of(id)))
        .collect();
    for chunk in rows.chunks(100) {
        conn.query_drop(format!("INSERT INTO t VALUES {}", chunk.join(", ")))
            .unwrap();
    }
}

/// Inserts rows `ids` into a table with a damaged file, 100 rows a statement. An INSERT's
/// duplicate-key check may read the damaged block (when its bloom filter lets the new key
/// through): such an INSERT fails naming `file_name`, and its rows are retried one by one.
/// Returns the ids still refused (at most 99).
fn insert_beside_damage(
    conn: &mut Conn,
    ids: impl Iterator<Item = u64>,
    file_name: &str,
) -> std::collections::BTreeSet<u64> {
    let mut left_out = std::collections::BTreeSet::new();
    let ids: Vec<u64> = ids.collect();
    for chunk in ids.chunks(100) {
        let rows: Vec<String> = chunk
            .iter()
            .map(|id| format!("({id}, '{}')", value_of(*id)))
            .collect();
        let Err(e) = conn.query_drop(format!("INSERT INTO t VALUES {}", rows.join(", "))) else {
            continue;
        };
        assert!(e.to_string().contains(file_name), "{e}");
        for id in chunk {
            let one = format!("INSERT INTO t VALUES ({id}, '{}')", value_of(*id));
            if let Err(e) = conn.query_drop(one) {
                assert!(e.to_string().contains(file_name), "{e}");
                left_out.insert(*id);
            }
        }
    }
    assert!(left_out.len() < 100, "{} rows left out", left_out.len());
    left_out
}

/// The damage marks `SHALE_TABLE_FILES` shows, as (file name, damage).
fn damaged_files(conn: &mut Conn) -> Vec<(String, String)> {
    conn.query(
        "SELECT FILE_NAME, DAMAGE FROM information_schema.SHALE_TABLE_FILES \
         WHERE DAMAGE IS NOT NULL ORDER BY FILE_NAME",
    )
    .unwrap()
}

#[test]
fn a_damaged_table_file_is_marked_the_server_keeps_serving_and_a_restart_remembers() {
    let dir = scratch("damaged-table");
    let instance = open(&dir, Arc::new(OsFs::new()));
    let server = Running::start(&instance);
    setup(&server);
    let mut conn = server.connect();
    // Even ids, compacted into the last level's files; the damage goes into one of them.
    let evens: Vec<u64> = (0..2000).map(|n| n * 2).collect();
    multi_row_insert(&mut conn, evens.iter().copied());
    conn.query_drop("OPTIMIZE TABLE t").unwrap();
    let prefix = primary_index_prefix(&mut conn);
    let (file, offset, size) = data_block_of(&dir, &prefix);
    let file_name = file.file_name().unwrap().to_str().unwrap().to_owned();
    // Flip bytes in the middle of the block, in place (the server holds the file open): its
    // checksum no longer matches. Nothing has read the block since the compaction wrote it,
    // so no cache holds it.
    flip_bytes(&file, offset + size / 2, 8);

    // Odd ids land in new tables overlapping every file of t, so compacting them down has to
    // read the damaged block.
    let left_out = insert_beside_damage(&mut conn, (0..2000).map(|n| n * 2 + 1), &file_name);
    let mut watcher = server.connect();
    match conn.query::<(String, String, String, String), _>("OPTIMIZE TABLE t") {
        // MySQL reports a failed OPTIMIZE in its result rows; an error names the file too.
        Ok(rows) => assert!(
            rows.iter().any(|r| r.3.contains(&file_name)),
            "OPTIMIZE did not report the damage: {rows:?}"
        ),
        Err(mysql::Error::MySqlError(e)) => {
            assert!(e.message.contains(&file_name), "{e:?}");
        }
        Err(other) => panic!("the connection failed: {other}"),
    }
    wait_for(
        "the damaged file to be marked",
        Duration::from_secs(60),
        || status(&mut watcher, "Shale_damaged_tables") >= 1,
    );
    let marked = damaged_files(&mut watcher);
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert_eq!(marked[0].0, file_name, "{marked:?}");
    let engine_status: Vec<(String, String, String)> =
        watcher.query("SHOW ENGINE SHALE STATUS").unwrap();
    assert!(
        engine_status
            .iter()
            .any(|(kind, name, _)| kind == "DAMAGED_TABLE" && *name == file_name),
        "SHOW ENGINE SHALE STATUS lacks the damaged table"
    );

    // The server keeps serving: every row reads its own value or fails naming the file; the
    // undamaged ones (every odd row, most even ones) read, and writes go on.
    let mut damaged_rows = 0;
    for id in 0..4000u64 {
        match conn.exec_first::<String, _, _>("SELECT v FROM t WHERE id = ?", (id,)) {
            Ok(value) if left_out.contains(&id) => assert_eq!(value, None, "row {id}"),
            Ok(value) => assert_eq!(value, Some(value_of(id)), "row {id}"),
            Err(mysql::Error::MySqlError(e)) => {
                let never_stored = left_out.contains(&id);
                assert!(
                    id % 2 == 0 || never_stored,
                    "undamaged row {id} failed: {e:?}"
                );
                assert!(e.message.contains(&file_name), "row {id}: {e:?}");
                if damaged_rows == 0 {
                    eprintln!("a read of damaged row {id}: {} {}", e.code, e.message);
                }
                damaged_rows += 1;
            }
            Err(other) => panic!("the connection failed: {other}"),
        }
    }
    assert!(
        (1..200).contains(&damaged_rows),
        "{damaged_rows} rows read the damaged block"
    );
    conn.query_drop("INSERT INTO t VALUES (100000, 'after the damage')")
        .expect("writes go on beside a damaged table");
    let scan = conn.query::<u64, _>("SELECT COUNT(*) FROM t");
    match scan {
        Ok(count) => panic!("a scan over the damaged block gave an answer: {count:?}"),
        Err(mysql::Error::MySqlError(e)) => assert!(e.message.contains(&file_name), "{e:?}"),
        Err(other) => panic!("the connection failed: {other}"),
    }
    eprintln!("damaged {file_name} at {offset} ({size} bytes): {damaged_rows} rows unreadable");
    drop((conn, watcher));

    // A restart remembers the mark (the MANIFEST holds it) before any compaction runs.
    server.stop();
    instance.close().unwrap();
    let instance = open(&dir, Arc::new(OsFs::new()));
    let server = Running::start(&instance);
    let mut conn = server.connect();
    assert_eq!(damaged_files(&mut conn), marked, "the mark after a restart");
    assert_eq!(status(&mut conn, "Shale_damaged_tables"), 1);
    assert_eq!(
        conn.exec_first::<String, _, _>("SELECT v FROM t WHERE id = ?", (1u64,))
            .unwrap(),
        Some(value_of(1))
    );
    conn.query_drop("INSERT INTO t VALUES (100001, 'after the restart')")
        .expect("writes work after the restart");
    drop(conn);
    server.stop();
    instance.close().unwrap();
    assert_tool_shows_mark(&dir, &file_name, offset);
}

/// `shale tool manifest --shape-only` shows the mark on the line after `file_name`'s.
fn assert_tool_shows_mark(dir: &Path, file_name: &str, offset: u64) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(["tool", "manifest", "--shape-only"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let number = file_name.trim_end_matches(".sst");
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with(number))
        .unwrap_or_else(|| panic!("{number} not listed: {text}"));
    assert!(
        lines
            .get(at + 1)
            .is_some_and(|l| l.contains(&format!("DAMAGED at offset {offset}"))),
        "{text}"
    );
}
