//! Status counters (SHOW [GLOBAL | SESSION] STATUS, the server's /metrics): what statements
//! ran, rows read and written, connections and bytes, with MySQL's names, plus the engine's
//! own figures under `Shale_`.
//!
//! Each counter is counted twice: in the instance's [`StatusCounters`] (GLOBAL) and in the
//! session's own (SESSION). Counters only the server knows (connections, bytes on the wire)
//! are counted by it in the instance's set only; SESSION scope shows their global value, as
//! MySQL does for variables without a session value.
//!
//! Invariant: counters only grow (until restart): a counter is never decremented, so
//! graphs of their rates are right.

use std::sync::atomic::{AtomicU64, Ordering};

use shale_table::Value;
use sqlparser::ast::Statement;

use crate::error::SqlError;
use crate::instance::Instance;
use crate::result::ResultSink;
use crate::session::{text_column, Session};

/// One status counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Counter {
    Questions,
    Queries,
    ComSelect,
    ComInsert,
    ComInsertSelect,
    ComReplace,
    ComUpdate,
    ComDelete,
    ComBegin,
    ComCommit,
    ComRollback,
    ComSavepoint,
    ComSet,
    ComShow,
    ComKill,
    ComChangeDb,
    ComCreateDb,
    ComDropDb,
    ComCreateTable,
    ComDropTable,
    ComAlterTable,
    ComCreateIndex,
    ComDropIndex,
    ComTruncate,
    ComExplain,
    ComOther,
    ComStmtPrepare,
    ComStmtExecute,
    SlowQueries,
    RowsRead,
    RowsInserted,
    RowsUpdated,
    RowsDeleted,
    /// Connection attempts, successful or not (the server counts them).
    Connections,
    /// Connection attempts that failed to log in.
    AbortedConnects,
    BytesReceived,
    BytesSent,
    /// A text INSERT/REPLACE ran a plan the statement cache kept (session/statement_cache.rs).
    StatementCacheHits,
    /// A text INSERT/REPLACE the statement cache admits was planned and kept.
    StatementCacheMisses,
}

/// Every counter with its SHOW STATUS name, in the order of the enum.
const NAMES: [(Counter, &str); 39] = [
    (Counter::Questions, "Questions"),
    (Counter::Queries, "Queries"),
    (Counter::ComSelect, "Com_select"),
    (Counter::ComInsert, "Com_insert"),
    (Counter::ComInsertSelect, "Com_insert_select"),
    (Counter::ComReplace, "Com_replace"),
    (Counter::ComUpdate, "Com_update"),
    (Counter::ComDelete, "Com_delete"),
    (Counter::ComBegin, "Com_begin"),
    (Counter::ComCommit, "Com_commit"),
    (Counter::ComRollback, "Com_rollback"),
    (Counter::ComSavepoint, "Com_savepoint"),
    (Counter::ComSet, "Com_set_option"),
    (Counter::ComShow, "Com_show"),
    (Counter::ComKill, "Com_kill"),
    (Counter::ComChangeDb, "Com_change_db"),
    (Counter::ComCreateDb, "Com_create_db"),
    (Counter::ComDropDb, "Com_drop_db"),
    (Counter::ComCreateTable, "Com_create_table"),
    (Counter::ComDropTable, "Com_drop_table"),
    (Counter::ComAlterTable, "Com_alter_table"),
    (Counter::ComCreateIndex, "Com_create_index"),
    (Counter::ComDropIndex, "Com_drop_index"),
    (Counter::ComTruncate, "Com_truncate"),
    (Counter::ComExplain, "Com_explain_other"),
    (Counter::ComOther, "Com_other"),
    (Counter::ComStmtPrepare, "Com_stmt_prepare"),
    (Counter::ComStmtExecute, "Com_stmt_execute"),
    (Counter::SlowQueries, "Slow_queries"),
    (Counter::RowsRead, "Shale_rows_read"),
    (Counter::RowsInserted, "Shale_rows_inserted"),
    (Counter::RowsUpdated, "Shale_rows_updated"),
    (Counter::RowsDeleted, "Shale_rows_deleted"),
    (Counter::Connections, "Connections"),
    (Counter::AbortedConnects, "Aborted_connects"),
    (Counter::BytesReceived, "Bytes_received"),
    (Counter::BytesSent, "Bytes_sent"),
    (Counter::StatementCacheHits, "Shale_statement_cache_hits"),
    (
        Counter::StatementCacheMisses,
        "Shale_statement_cache_misses",
    ),
];

/// Counters only the server counts: SESSION scope shows their global value.
fn server_only(c: Counter) -> bool {
    matches!(
        c,
        Counter::Connections
            | Counter::AbortedConnects
            | Counter::BytesReceived
            | Counter::BytesSent
    )
}

/// A set of counters (the instance's, or one session's).
#[derive(Debug)]
pub struct StatusCounters {
    values: [AtomicU64; NAMES.len()],
}

impl Default for StatusCounters {
    fn default() -> Self {
        StatusCounters {
            values: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl StatusCounters {
    pub fn add(&self, counter: Counter, n: u64) {
        self.values[counter as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self, counter: Counter) -> u64 {
        self.values[counter as usize].load(Ordering::Relaxed)
    }
}

/// The Com_ counter of a statement.
pub(crate) fn command_counter(stmt: &Statement) -> Counter {
    use sqlparser::ast::ObjectType;
    match stmt {
        Statement::Query(_) => Counter::ComSelect,
        Statement::Insert(i) if i.replace_into => Counter::ComReplace,
        Statement::Insert(i)
            if i.source
                .as_ref()
                .is_some_and(|q| q.body.as_select().is_some()) =>
        {
            Counter::ComInsertSelect
        }
        Statement::Insert(_) => Counter::ComInsert,
        Statement::Update(_) => Counter::ComUpdate,
        Statement::Delete(_) => Counter::ComDelete,
        Statement::StartTransaction { .. } => Counter::ComBegin,
        Statement::Commit { .. } => Counter::ComCommit,
        Statement::Rollback { .. } => Counter::ComRollback,
        Statement::Savepoint { .. } | Statement::ReleaseSavepoint { .. } => Counter::ComSavepoint,
        Statement::Set(_) => Counter::ComSet,
        Statement::Kill { .. } => Counter::ComKill,
        Statement::Use(_) => Counter::ComChangeDb,
        Statement::CreateDatabase { .. } | Statement::CreateSchema { .. } => Counter::ComCreateDb,
        Statement::CreateTable(_) => Counter::ComCreateTable,
        Statement::CreateIndex(_) => Counter::ComCreateIndex,
        Statement::AlterTable(_) => Counter::ComAlterTable,
        Statement::Truncate(_) => Counter::ComTruncate,
        Statement::Drop { object_type, .. } => match object_type {
            ObjectType::Database | ObjectType::Schema => Counter::ComDropDb,
            ObjectType::Index => Counter::ComDropIndex,
            _ => Counter::ComDropTable,
        },
        Statement::Explain { .. } | Statement::ExplainTable { .. } => Counter::ComExplain,
        other if other.to_string().to_ascii_uppercase().starts_with("SHOW") => Counter::ComShow,
        _ => Counter::ComOther,
    }
}

/// Counts `n` for `counter` in the session's and the instance's counters.
pub(crate) fn count(session: &Session, counter: Counter, n: u64) {
    if n > 0 {
        session.process().counters.add(counter, n);
        session.instance().counters.add(counter, n);
    }
}

/// Every GLOBAL status variable now, sorted by name as MySQL lists them.
pub(crate) fn global_variables(instance: &Instance) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = NAMES
        .iter()
        .map(|(counter, name)| {
            (
                (*name).to_owned(),
                instance.counters.get(*counter).to_string(),
            )
        })
        .collect();
    let uptime = instance.started.elapsed().as_secs();
    let processes = &instance.processes;
    let figures = [
        ("Uptime", uptime),
        ("Uptime_since_flush_status", uptime),
        ("Threads_connected", processes.connected() as u64),
        ("Threads_running", processes.running() as u64),
        // Alive now, in every session (temp_tables.rs): a gauge, as Threads_connected.
        (
            "Shale_temporary_tables",
            instance.store.temporary_table_count() as u64,
        ),
    ];
    out.extend(
        figures
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.to_string())),
    );
    out.extend(engine_figures(instance));
    out.sort_by_key(|(name, _)| name.to_ascii_lowercase());
    out
}

/// The status variables SHOW STATUS lists: `global` or the session's own counters (with the
/// global value of those without one), and the connection's own variables the server set
/// (`Ssl_cipher`).
fn variables(session: &Session, global: bool) -> Vec<(String, String)> {
    let mut out = global_variables(session.instance());
    if !global {
        let own = &session.process().counters;
        for (counter, name) in NAMES {
            if server_only(counter) {
                continue;
            }
            if let Some(slot) = out.iter_mut().find(|(n, _)| n == name) {
                slot.1 = own.get(counter).to_string();
            }
        }
    }
    out.extend(
        session
            .state()
            .status
            .iter()
            .map(|(n, v)| (n.clone(), v.clone())),
    );
    out.sort_by_key(|(name, _)| name.to_ascii_lowercase());
    out
}

/// The engine's counters since open (`DbStats`), as `Shale_` status variables.
fn engine_figures(instance: &Instance) -> Vec<(String, String)> {
    let db = instance.store.engine().db();
    let s = db.stats();
    let cache = db.block_cache_stats();
    let stalls = s.stall_level0_slowdowns
        + s.stall_level0_stops
        + s.stall_pending_bytes_slowdowns
        + s.stall_pending_bytes_stops
        + s.stall_memtable_stops;
    [
        (
            "Shale_bytes_written",
            s.wal_bytes_written + s.flush_bytes_written + s.compaction_bytes_written,
        ),
        ("Shale_wal_bytes_written", s.wal_bytes_written),
        ("Shale_flush_bytes_written", s.flush_bytes_written),
        ("Shale_compaction_bytes_read", s.compaction_bytes_read),
        ("Shale_compaction_bytes_written", s.compaction_bytes_written),
        ("Shale_flushes", s.flushes),
        ("Shale_compactions", s.compactions),
        ("Shale_stall_count", stalls),
        ("Shale_stall_micros", s.stall_micros),
        ("Shale_compaction_read_errors", s.compaction_read_errors),
        ("Shale_damaged_tables", s.damaged_tables),
        ("Shale_background_job_panics", s.background_job_panics),
        ("Shale_block_cache_hits", cache.hits),
        ("Shale_block_cache_misses", cache.misses),
        ("Shale_block_cache_usage", cache.usage),
        ("Shale_block_cache_capacity", cache.capacity),
    ]
    .iter()
    .map(|(n, v)| ((*n).to_owned(), v.to_string()))
    .collect()
}

/// SHOW [GLOBAL | SESSION] STATUS [LIKE 'pattern' | WHERE condition] (show_where.rs).
pub(crate) fn show(
    session: &mut Session,
    global: bool,
    pattern: Option<&str>,
    condition: Option<&sqlparser::ast::Expr>,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
    let rows: Vec<Vec<Value>> = variables(session, global)
        .into_iter()
        .filter(|(name, _)| {
            pattern.is_none_or(|p| {
                crate::value::like(
                    &text(name),
                    &text(p),
                    '\\',
                    shale_table::Collation::Utf8mb4GeneralCi,
                ) == Value::Int(1)
            })
        })
        .map(|(n, v)| vec![text(&n), text(&v)])
        .collect();
    let columns = [text_column("Variable_name"), text_column("Value")];
    let rows = crate::show_where::retain(session, &columns, rows, condition)?;
    session.state_mut().warnings.clear();
    session.text_rows(sink, &columns, &rows)
}
