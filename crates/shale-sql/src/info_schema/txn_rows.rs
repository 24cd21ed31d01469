//! What a DBA sees of running sessions and transactions: PROCESSLIST (SHOW FULL
//! PROCESSLIST's rows), SHALE_TRX, SHALE_LOCKS and SHALE_DEADLOCKS (MyRocks' `ROCKSDB_TRX`,
//! `ROCKSDB_LOCKS` and `ROCKSDB_DEADLOCK` in spirit), from the engine's registry, lock table
//! and deadlock ring (docs/transactions.md, "Seeing transactions, locks and deadlocks"), and
//! `SHOW ENGINE SHALE TRANSACTION STATUS`.
//!
//! Rules:
//! 1. PROCESSLIST follows SHOW PROCESSLIST's privilege rule: without PROCESS an account sees
//!    only its own sessions. The SHALE_ views of transactions need PROCESS (1227), as
//!    MyRocks' views and MySQL's `INNODB_TRX` do.
//! 2. A key is shown as hex; when its first four bytes are an index id of the catalog, the
//!    index is named (`TABLE_SCHEMA`, `TABLE_NAME`, `INDEX_NAME`), else those are NULL (the
//!    catalog's own system keys, or an index dropped since).
//! 3. A transaction's `THREAD_ID` is the connection id the session gave it when it began
//!    (`TableTxn::set_owner`); `QUERY` is that connection's running statement now, from the
//!    process list.
//! 4. Times are UTC (`DATETIME`, whole seconds).
//! 5. Beside the hex, a key of a known index is read back into its columns (`LOCK_DATA`,
//!    `WAITING_KEY_DATA`: `id=1`, as `shale tool sst` shows entries), in the spirit of
//!    `performance_schema.data_locks.LOCK_DATA`; strings in a case-insensitive collation show
//!    their collation weights (`name~'APPLE'`), since that is what the key holds.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::SystemTime;

use shale_engine::{IsolationLevel, TransactionInfo};
use shale_table::{DateTime, Store, TableDef, Value};

use super::text;
use crate::error::SqlError;
use crate::processlist::ProcessList;

type Row = Vec<Value>;

/// What a query's session may see of the instance's sessions (rule 1).
#[derive(Debug, Clone)]
pub(crate) struct SessionsView {
    pub(crate) processes: Arc<ProcessList>,
    /// The user whose sessions alone may be listed (an account without PROCESS).
    pub(crate) only: Option<String>,
}

impl SessionsView {
    /// 1227 unless the session may see every transaction (rule 1).
    fn require_process(&self) -> Result<(), SqlError> {
        match self.only {
            Some(_) => Err(crate::privilege::global_denied(crate::grants::PROCESS)),
            None => Ok(()),
        }
    }

    /// The running statement of each connection, by id.
    fn statements(&self) -> HashMap<u64, String> {
        self.processes
            .rows(true, None)
            .into_iter()
            .filter_map(|row| match (row.first(), row.get(7)) {
                (Some(Value::UInt(id)), Some(Value::Bytes(info))) => {
                    Some((*id, String::from_utf8_lossy(info).into_owned()))
                }
                _ => None,
            })
            .collect()
    }
}

/// PROCESSLIST: SHOW FULL PROCESSLIST's rows (rule 1); none without a session list.
pub(super) fn processlist(view: Option<&SessionsView>) -> Vec<Row> {
    view.map(|v| v.processes.rows(true, v.only.as_deref()))
        .unwrap_or_default()
}

/// Index ids of the catalog, named, with their table to read keys back (rule 2).
struct IndexNames(HashMap<u32, NamedIndex>);

struct NamedIndex {
    names: [String; 3],
    table: Arc<TableDef>,
    /// None: the primary key.
    index: Option<usize>,
}

impl IndexNames {
    fn of(store: &Store) -> IndexNames {
        let mut named = HashMap::new();
        for (db, tables) in &store.catalog().databases {
            for def in tables.values() {
                let mut add = |name: &str, id: u32, index: Option<usize>| {
                    named.insert(
                        id,
                        NamedIndex {
                            names: [db.clone(), def.name.clone(), name.to_string()],
                            table: Arc::clone(def),
                            index,
                        },
                    );
                };
                add("PRIMARY", def.primary_key.index_id, None);
                for (i, ix) in def.indexes.iter().enumerate() {
                    add(&ix.name, ix.index_id, Some(i));
                }
            }
        }
        IndexNames(named)
    }

    fn lookup(&self, key: &[u8]) -> Option<&NamedIndex> {
        key.first_chunk::<4>()
            .and_then(|id| self.0.get(&u32::from_be_bytes(*id)))
    }

    /// `TABLE_SCHEMA`, `TABLE_NAME`, `INDEX_NAME` of `key`, NULL when unknown.
    fn of_key(&self, key: &[u8]) -> [Value; 3] {
        match self.lookup(key) {
            Some(NamedIndex {
                names: [db, table, index],
                ..
            }) => [text(db), text(table), text(index)],
            None => [Value::Null, Value::Null, Value::Null],
        }
    }

    /// The key's columns as `name=value, ...` (rule 5); NULL when its index is unknown or
    /// the bytes do not decode against it.
    fn key_data(&self, key: &[u8]) -> Value {
        self.lookup(key)
            .and_then(|n| shale_table::key_text(&n.table, n.index, key).ok())
            .map_or(Value::Null, |t| text(&t))
    }
}

fn hex(bytes: &[u8]) -> Value {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02X}");
    }
    text(&out)
}

fn datetime(at: SystemTime) -> Value {
    let micros = at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| {
        i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 1_000_000) * 1_000_000
    });
    DateTime::from_unix_micros(micros, Some(0)).map_or(Value::Null, Value::DateTime)
}

fn seconds_since(at: SystemTime) -> u64 {
    SystemTime::now()
        .duration_since(at)
        .map_or(0, |d| d.as_secs())
}

fn ids(list: &[u64]) -> Value {
    let joined: Vec<String> = list.iter().map(u64::to_string).collect();
    text(&joined.join(","))
}

fn isolation(level: IsolationLevel) -> &'static str {
    match level {
        IsolationLevel::ReadCommitted => "READ COMMITTED",
        IsolationLevel::RepeatableRead => "REPEATABLE READ",
    }
}

fn lock_type(mode: shale_engine::LockMode) -> &'static str {
    match mode {
        shale_engine::LockMode::Shared => "SHARED",
        shale_engine::LockMode::Exclusive => "EXCLUSIVE",
    }
}

/// SHALE_TRX: one row per open engine transaction (rule 3).
pub(super) fn shale_trx(store: &Store, view: Option<&SessionsView>) -> Result<Vec<Row>, SqlError> {
    if let Some(view) = view {
        view.require_process()?;
    }
    let statements = view.map(SessionsView::statements).unwrap_or_default();
    let names = IndexNames::of(store);
    Ok(store
        .engine()
        .transactions()
        .iter()
        .map(|t| trx_row(t, &names, &statements))
        .collect())
}

fn trx_row(t: &TransactionInfo, names: &IndexNames, statements: &HashMap<u64, String>) -> Row {
    let wait = t.waiting_for.as_ref();
    let [schema, table, index] = wait.map_or([Value::Null, Value::Null, Value::Null], |w| {
        names.of_key(&w.key)
    });
    vec![
        Value::UInt(t.id),
        text(t.state.as_str()),
        t.label.as_deref().map_or(Value::Null, text),
        Value::UInt(t.keys_written),
        Value::UInt(t.keys_locked),
        wait.map_or(Value::Null, |w| hex(&w.key)),
        wait.map_or(Value::Null, |w| Value::UInt(u64::from(w.keyspace))),
        schema,
        table,
        index,
        wait.map_or(Value::Null, |w| text(w.mode.as_str())),
        wait.map_or(Value::Null, |w| ids(&w.holders)),
        wait.map_or(Value::Null, |w| Value::UInt(seconds_since(w.since))),
        text(isolation(t.isolation)),
        Value::UInt(u64::from(t.optimistic)),
        t.snapshot_seqno.map_or(Value::Null, Value::UInt),
        datetime(t.started),
        Value::UInt(seconds_since(t.started)),
        t.owner.map_or(Value::Null, Value::UInt),
        t.owner
            .and_then(|id| statements.get(&id))
            .map_or(Value::Null, |q| text(q)),
        wait.map_or(Value::Null, |w| names.key_data(&w.key)),
    ]
}

/// SHALE_LOCKS: one row per (key, transaction): each holder GRANTED, each waiter WAITING.
pub(super) fn shale_locks(
    store: &Store,
    view: Option<&SessionsView>,
) -> Result<Vec<Row>, SqlError> {
    if let Some(view) = view {
        view.require_process()?;
    }
    let names = IndexNames::of(store);
    let engine = store.engine();
    let waiting: Vec<TransactionInfo> = engine
        .transactions()
        .into_iter()
        .filter(|t| t.waiting_for.is_some())
        .collect();
    let mut out = Vec::new();
    let mut row = |keyspace: u32, key: &[u8], txn: u64, mode: &str, status: &str| {
        let [schema, table, index] = names.of_key(key);
        out.push(vec![
            Value::UInt(u64::from(keyspace)),
            Value::UInt(txn),
            text(mode),
            text(status),
            hex(key),
            schema,
            table,
            index,
            names.key_data(key),
        ]);
    };
    for lock in engine.lock_snapshot() {
        for (txn, mode) in &lock.holders {
            row(lock.keyspace, &lock.key, *txn, mode.as_str(), "GRANTED");
        }
        for t in waiting.iter().filter(|t| lock.waiters.contains(&t.id)) {
            if let Some(w) = &t.waiting_for {
                row(lock.keyspace, &lock.key, t.id, w.mode.as_str(), "WAITING");
            }
        }
    }
    Ok(out)
}

/// SHALE_DEADLOCKS: one row per member of each of the last deadlocks, oldest first.
pub(super) fn shale_deadlocks(
    store: &Store,
    view: Option<&SessionsView>,
) -> Result<Vec<Row>, SqlError> {
    if let Some(view) = view {
        view.require_process()?;
    }
    let names = IndexNames::of(store);
    let mut out = Vec::new();
    for deadlock in store.engine().recent_deadlocks() {
        for w in &deadlock.waits {
            let [schema, table, index] = names.of_key(&w.key);
            out.push(vec![
                Value::UInt(deadlock.id),
                datetime(deadlock.time),
                Value::UInt(w.txn),
                Value::UInt(u64::from(w.keyspace)),
                hex(&w.key),
                text(lock_type(w.mode)),
                schema,
                table,
                index,
                ids(&w.holders),
                Value::UInt(u64::from(w.txn == deadlock.victim)),
                names.key_data(&w.key),
            ]);
        }
    }
    Ok(out)
}

/// `SHOW ENGINE SHALE TRANSACTION STATUS`'s Status text: a TRANSACTIONS section with one
/// paragraph per open transaction, then the last deadlock, as MyRocks prints it in spirit.
pub(crate) fn transaction_status(store: &Store, view: &SessionsView) -> Result<String, SqlError> {
    view.require_process()?;
    let statements = view.statements();
    let names = IndexNames::of(store);
    let engine = store.engine();
    let show_index = |key: &[u8]| match names.lookup(key) {
        Some(named) => {
            let [db, table, index] = &named.names;
            let data = shale_table::key_text(&named.table, named.index, key)
                .map(|d| format!(" {d}"))
                .unwrap_or_default();
            format!(" ({db}.{table}.{index}{data})")
        }
        None => String::new(),
    };
    let show_key = |key: &[u8]| match hex(key) {
        Value::Bytes(h) => String::from_utf8_lossy(&h).into_owned(),
        _ => String::new(),
    };
    let mut out = String::from("\n============================================================\n");
    let _ = writeln!(out, "SHALE TRANSACTION MONITOR OUTPUT");
    let _ = writeln!(
        out,
        "============================================================"
    );
    let _ = writeln!(out, "---------\nTRANSACTIONS\n---------");
    for t in engine.transactions() {
        let _ = writeln!(
            out,
            "---TRANSACTION {}, {}, ACTIVE {} sec, {}{}",
            t.id,
            t.state.as_str(),
            seconds_since(t.started),
            isolation(t.isolation),
            t.snapshot_seqno
                .map_or(String::new(), |s| format!(", snapshot seqno {s}"))
        );
        if let Some(owner) = t.owner {
            let _ = write!(out, "MySQL thread id {owner}");
            match statements.get(&owner) {
                Some(q) => {
                    let _ = writeln!(out, ", query: {q}");
                }
                None => out.push('\n'),
            }
        }
        let _ = writeln!(
            out,
            "lock count {}, write count {}",
            t.keys_locked, t.keys_written
        );
        if let Some(w) = &t.waiting_for {
            let _ = writeln!(
                out,
                "waiting {} sec for {} lock on key {}{} held by {:?}",
                seconds_since(w.since),
                lock_type(w.mode),
                show_key(&w.key),
                show_index(&w.key),
                w.holders
            );
        }
    }
    if let Some(last) = engine.recent_deadlocks().last() {
        let _ = writeln!(
            out,
            "---------\nLATEST DETECTED DEADLOCK\n---------\ndeadlock {} at {}; victim: transaction {}",
            last.id,
            match datetime(last.time) {
                Value::DateTime(d) => d.to_string(),
                _ => String::new(),
            },
            last.victim
        );
        for w in &last.waits {
            let _ = writeln!(
                out,
                "transaction {} waited for {} lock on key {}{} held by {:?}",
                w.txn,
                lock_type(w.mode),
                show_key(&w.key),
                show_index(&w.key),
                w.holders
            );
        }
    }
    let _ = writeln!(out, "-----------------------------------------\nEND OF SHALE TRANSACTION MONITOR OUTPUT\n=========================================");
    Ok(out)
}
