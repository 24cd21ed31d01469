//! What `TransactionDb` shows of its running transactions (docs/transactions.md, "Seeing
//! transactions, locks and deadlocks"): the registry, the lock table snapshot and the
//! ring of recent deadlocks, through the public API.

use std::sync::Arc;
use std::thread;

use shale_engine::{
    IsolationLevel, LockMode, Options, TransactionDb, TransactionDbOptions, TransactionOptions,
    TransactionState,
};
use shale_fs::MemFs;

fn open() -> TransactionDb {
    let options = Options {
        file_system: Arc::new(MemFs::new()),
        ..Options::default()
    };
    TransactionDb::open("/db", options, TransactionDbOptions::default()).unwrap()
}

fn rc() -> TransactionOptions {
    TransactionOptions {
        isolation: IsolationLevel::ReadCommitted,
        ..TransactionOptions::default()
    }
}

#[test]
fn registry_lists_open_transactions_with_their_counts_and_waits() {
    let db = open();
    assert!(db.transactions().is_empty());
    let mut holder = db.begin(TransactionOptions::default()).unwrap();
    holder.set_owner(41);
    holder.set_label(Some("holder".into()));
    holder.put(b"a", b"1").unwrap();
    holder.put(b"b", b"1").unwrap();
    holder.get_for_share(b"c").unwrap();
    let listed = db.transactions();
    assert_eq!(listed.len(), 1);
    let info = &listed[0];
    assert_eq!(info.id, holder.id());
    assert_eq!(info.state, TransactionState::Running);
    assert_eq!((info.keys_locked, info.keys_written), (3, 2));
    assert_eq!(info.snapshot_seqno, holder.snapshot_seqno());
    assert!(
        info.snapshot_seqno.is_some(),
        "REPEATABLE READ reads at a snapshot"
    );
    assert_eq!(
        (info.owner, info.label.as_deref()),
        (Some(41), Some("holder"))
    );

    let locks = db.lock_snapshot();
    let shown: Vec<_> = locks
        .iter()
        .map(|l| (&l.key[..], l.holders.clone()))
        .collect();
    let id = holder.id();
    assert_eq!(
        shown,
        [
            (&b"a"[..], vec![(id, LockMode::Exclusive)]),
            (&b"b"[..], vec![(id, LockMode::Exclusive)]),
            (&b"c"[..], vec![(id, LockMode::Shared)]),
        ]
    );

    thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let mut txn = db.begin(rc()).unwrap();
            let id = txn.id();
            txn.put(b"b", b"2").unwrap();
            txn.commit().unwrap();
            id
        });
        while db.stats().lock_waits == 0 {
            thread::yield_now();
        }
        // The waiter records its key before it sleeps; poll until it shows.
        let waiting = loop {
            let listed = db.transactions();
            if let Some(t) = listed
                .iter()
                .find(|t| t.state == TransactionState::LockWait)
            {
                break t.clone();
            }
            thread::yield_now();
        };
        assert_eq!(waiting.snapshot_seqno, None, "READ COMMITTED has none");
        let wait = waiting.waiting_for.as_ref().unwrap();
        assert_eq!(
            (&wait.key[..], wait.mode, &wait.holders[..]),
            (&b"b"[..], LockMode::Exclusive, &[id][..])
        );
        let locks = db.lock_snapshot();
        let b = locks.iter().find(|l| l.key == b"b").unwrap();
        assert_eq!(b.waiters, [waiting.id]);
        holder.commit().unwrap();
        let waiter_id = waiter.join().unwrap();
        assert_eq!(waiter_id, waiting.id);
    });
    assert!(db.transactions().is_empty(), "ended transactions leave");
    assert!(db.lock_snapshot().is_empty());
}

#[test]
fn a_deadlock_is_kept_with_its_cycle_and_victim() {
    let db = open();
    let mut older = db.begin(rc()).unwrap();
    older.put(b"a", b"older").unwrap();
    let older_id = older.id();
    let mut younger = db.begin(rc()).unwrap();
    younger.put(b"b", b"younger").unwrap();
    let younger_id = younger.id();
    let db = &db;
    thread::scope(|scope| {
        let closing = scope.spawn(move || {
            while db.stats().lock_waits == 0 {
                thread::yield_now();
            }
            let result = younger.put(b"a", b"younger");
            assert!(result.is_err(), "the younger is the victim");
            // Its registry entry went with the rollback.
            assert!(db.transactions().iter().all(|t| t.id != younger_id));
        });
        older.put(b"b", b"older").unwrap();
        closing.join().unwrap();
    });
    older.commit().unwrap();
    let deadlocks = db.recent_deadlocks();
    assert_eq!(deadlocks.len(), 1);
    let found = &deadlocks[0];
    assert_eq!((found.id, found.victim), (1, younger_id));
    let mut waits: Vec<(u64, &[u8], &[u64])> = found
        .waits
        .iter()
        .map(|w| (w.txn, &w.key[..], &w.holders[..]))
        .collect();
    waits.sort_unstable();
    assert_eq!(
        waits,
        [
            (older_id, &b"b"[..], &[younger_id][..]),
            (younger_id, &b"a"[..], &[older_id][..])
        ]
    );
}
