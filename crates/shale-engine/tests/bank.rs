//! The bank-transfer test: 8 threads move money between 1,000 accounts in random
//! transactions (READ COMMITTED and REPEATABLE READ, locking in random order so deadlocks
//! happen), with random aborts; the file system is imaged as a power cut would leave it
//! (`MemFs` crash images, unsynced bytes dropped or torn) while they run, and the database is
//! reopened from the image. Checked after every reopen:
//!
//! 1. the total of all balances never changes;
//! 2. every transfer acknowledged (commit returned, `Sync` durability) before the image was
//!    taken is in the image;
//! 3. the balances are exactly the initial ones plus the transfers recorded in the image (no
//!    partial transfer, nothing invented);
//!
//! and while the threads run, every REPEATABLE READ scan of all accounts sums to the total.
//!
//! Scale: `SHALE_BANK_ROUNDS` (crash-and-reopen rounds, default 3) and
//! `SHALE_BANK_TRANSFERS` (transfers attempted per thread per round, default 150);
//! `SHALE_BANK_SEED` picks the random choices.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    Durability, Error, IsolationLevel, KeyspaceOptions, Options, ReadOptions, TransactionDb,
    TransactionDbOptions, TransactionError, TransactionOptions, WriteOptions,
};
use shale_fs::{CrashMode, MemFs};

const ACCOUNTS: u32 = 1000;
const INITIAL: i64 = 1000;
const THREADS: usize = 8;
/// Accounts `0..HOT` take half the transfers.
const HOT: u32 = 12;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn account(i: u32) -> Vec<u8> {
    format!("acct{i:04}").into_bytes()
}

fn parse(value: &[u8]) -> i64 {
    std::str::from_utf8(value).unwrap().parse().unwrap()
}

fn open(fs: &MemFs) -> TransactionDb {
    let options = Options {
        file_system: Arc::new(fs.clone()),
        durability: Durability::Sync,
        default_keyspace: KeyspaceOptions {
            write_buffer_size: 32 << 10,
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    };
    TransactionDb::open(
        "/db",
        options,
        TransactionDbOptions {
            lock_wait_timeout: Duration::from_secs(20),
            ..TransactionDbOptions::default()
        },
    )
    .unwrap()
}

/// A committed transfer as its record key says: `xfer/{round}/{thread}/{n}` = "from,to,amount".
type Transfer = (u32, u32, i64);

/// Runs one thread's transfers until `count` are attempted or `stop` is set; pushes the record
/// key of every acknowledged transfer to `acked`.
#[allow(clippy::too_many_arguments)]
fn transfers(
    db: &TransactionDb,
    round: u64,
    thread: usize,
    count: u64,
    seed: u64,
    acked: &Mutex<Vec<Vec<u8>>>,
    stop: &AtomicBool,
    start: &Barrier,
) {
    start.wait();
    let mut rng = SmallRng::seed_from_u64(seed ^ (round << 8) ^ thread as u64);
    for n in 0..count {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // Half the transfers stay among a few hot accounts, so that threads meet on locks.
        let range = if rng.gen_bool(0.5) { HOT } else { ACCOUNTS };
        let from = rng.gen_range(0..range);
        let to = (from + rng.gen_range(1..range)) % range;
        let amount = rng.gen_range(1..=200);
        let isolation = if rng.gen_bool(0.5) {
            IsolationLevel::ReadCommitted
        } else {
            IsolationLevel::RepeatableRead
        };
        let mut txn = db
            .begin(TransactionOptions {
                isolation,
                write_options: WriteOptions::sync(),
                ..TransactionOptions::default()
            })
            .unwrap();
        // Lock in random order so that deadlocks happen.
        let (first, second) = if rng.gen_bool(0.5) {
            (from, to)
        } else {
            (to, from)
        };
        let locked = txn
            .get_for_update(&account(first))
            .and_then(|_| txn.get_for_update(&account(second)));
        match locked {
            Ok(_) => {}
            Err(Error::Transaction(
                TransactionError::Deadlock { .. } | TransactionError::SnapshotConflict { .. },
            )) => continue,
            Err(e) => panic!("thread {thread}: {e}"),
        }
        let balance = parse(&txn.get(&account(from)).unwrap().unwrap());
        let other = parse(&txn.get(&account(to)).unwrap().unwrap());
        txn.put(&account(from), (balance - amount).to_string().as_bytes())
            .unwrap();
        if rng.gen_bool(0.1) {
            // An abort halfway: the debit must vanish.
            txn.rollback();
            continue;
        }
        txn.put(&account(to), (other + amount).to_string().as_bytes())
            .unwrap();
        let record = format!("xfer/{round}/{thread}/{n}").into_bytes();
        txn.put(&record, format!("{from},{to},{amount}").as_bytes())
            .unwrap();
        if rng.gen_bool(0.05) {
            txn.rollback();
            continue;
        }
        txn.commit().unwrap();
        acked.lock().unwrap().push(record);
    }
}

/// Balances and recorded transfers of a database.
fn read_all(db: &TransactionDb) -> (BTreeMap<u32, i64>, BTreeMap<Vec<u8>, Transfer>) {
    let mut balances = BTreeMap::new();
    let mut records = BTreeMap::new();
    let mut iter = db.db().iterator(ReadOptions::default()).unwrap();
    iter.seek_to_first();
    while iter.valid() {
        let key = std::str::from_utf8(iter.key()).unwrap();
        if let Some(number) = key.strip_prefix("acct") {
            balances.insert(number.parse().unwrap(), parse(iter.value()));
        } else {
            let value = std::str::from_utf8(iter.value()).unwrap();
            let parts: Vec<i64> = value.split(',').map(|p| p.parse().unwrap()).collect();
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            records.insert(
                iter.key().to_vec(),
                (parts[0] as u32, parts[1] as u32, parts[2]),
            );
        }
        iter.next();
    }
    iter.status().unwrap();
    (balances, records)
}

/// The sum of all balances as one REPEATABLE READ transaction sees them.
fn snapshot_total(db: &TransactionDb) -> i64 {
    let mut txn = db.begin(TransactionOptions::default()).unwrap();
    let mut iter = txn
        .iterator(ReadOptions {
            lower_bound: Some(b"acct".to_vec()),
            upper_bound: Some(b"acct~".to_vec()),
            ..ReadOptions::default()
        })
        .unwrap();
    let mut total = 0;
    iter.seek_to_first();
    while iter.valid() {
        total += parse(iter.value());
        iter.next();
    }
    iter.status().unwrap();
    total
}

#[test]
fn bank_transfers_survive_crashes_and_keep_the_total() {
    let rounds = env_u64("SHALE_BANK_ROUNDS", 3);
    let per_thread = env_u64("SHALE_BANK_TRANSFERS", 150);
    let seed = env_u64("SHALE_BANK_SEED", 0xba4c);
    let total = i64::from(ACCOUNTS) * INITIAL;
    let mut fs = MemFs::new();
    {
        let db = open(&fs);
        let mut txn = db.begin(TransactionOptions::default()).unwrap();
        for i in 0..ACCOUNTS {
            txn.put(&account(i), INITIAL.to_string().as_bytes())
                .unwrap();
        }
        txn.commit().unwrap();
        db.close().unwrap();
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut all_acked: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut stats = Vec::new();
    for round in 0..rounds {
        let db = open(&fs);
        let acked = Mutex::new(Vec::new());
        let stop = AtomicBool::new(false);
        let start = Barrier::new(THREADS);
        // Image once this many transfers were acknowledged (or at the end).
        let image_after = rng.gen_range(0..=per_thread * THREADS as u64 / 2);
        let torn = rng.gen_bool(0.5);
        let image_seed = rng.gen();
        let (image, acked_before) = thread::scope(|scope| {
            let workers: Vec<_> = (0..THREADS)
                .map(|thread| {
                    let (db, acked, stop, start) = (&db, &acked, &stop, &start);
                    scope.spawn(move || {
                        transfers(db, round, thread, per_thread, seed, acked, stop, start);
                    })
                })
                .collect();
            loop {
                assert_eq!(
                    snapshot_total(&db),
                    total,
                    "round {round}: a snapshot's total"
                );
                let done = workers.iter().all(thread::ScopedJoinHandle::is_finished);
                if done || acked.lock().unwrap().len() as u64 >= image_after {
                    break;
                }
                thread::sleep(Duration::from_millis(1));
            }
            // Everything acknowledged before the image starts must be in it.
            let acked_before: Vec<Vec<u8>> = acked.lock().unwrap().clone();
            let mode = if torn {
                CrashMode::Torn { seed: image_seed }
            } else {
                CrashMode::DropUnsynced
            };
            let image = fs.crash_image(mode);
            stop.store(true, Ordering::Relaxed);
            for worker in workers {
                worker.join().unwrap();
            }
            (image, acked_before)
        });
        stats.push(db.stats());
        drop(db);
        fs = image;
        let db = open(&fs);
        let (balances, records) = read_all(&db);
        assert_eq!(balances.len(), ACCOUNTS as usize, "round {round}");
        assert_eq!(
            balances.values().sum::<i64>(),
            total,
            "round {round}: total"
        );
        all_acked.extend(acked_before);
        for record in &all_acked {
            assert!(
                records.contains_key(record),
                "round {round}: acknowledged transfer {} lost",
                String::from_utf8_lossy(record)
            );
        }
        let mut expected: BTreeMap<u32, i64> = (0..ACCOUNTS).map(|i| (i, INITIAL)).collect();
        for &(from, to, amount) in records.values() {
            *expected.get_mut(&from).unwrap() -= amount;
            *expected.get_mut(&to).unwrap() += amount;
        }
        assert_eq!(
            balances, expected,
            "round {round}: balances vs recorded transfers"
        );
        db.close().unwrap();
    }
    assert!(!all_acked.is_empty());
    eprintln!(
        "bank: {rounds} rounds, {} acknowledged transfers checked; per round {stats:?}",
        all_acked.len()
    );
}
