//! What a DBA sees of and does to running sessions, in one place for `session.rs` to call:
//! the statements (SHOW PROCESSLIST, KILL, SHOW STATUS) and the bookkeeping around every
//! statement a session runs ([`observe`]: status counters, the kill/timeout watch,
//! Slow_queries and the query logs).

use std::time::{Duration, Instant};

use shale_table::Value;
use sqlparser::ast::{self, Statement};

use crate::error::SqlError;
use crate::interrupt::Watch;
use crate::result::{ColumnMeta, ResultSink, StatementStatus};
use crate::session::{Planned, Session};
use crate::status::{count, Counter};

/// Runs SHOW [FULL] PROCESSLIST, KILL and SHOW STATUS (session.rs's dispatch arm).
pub(crate) fn command(
    session: &mut Session,
    stmt: &Statement,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    match stmt {
        Statement::ShowProcessList { full } => crate::processlist::show(session, *full, sink),
        Statement::Kill { modifier, id } => {
            let connection = !matches!(modifier, Some(ast::KillType::Query));
            crate::processlist::kill(session, *id, connection, sink)
        }
        Statement::ShowStatus { filter, global, .. } => {
            let (pattern, condition) = match filter {
                None => (None, None),
                Some(
                    ast::ShowStatementFilter::Like(p)
                    | ast::ShowStatementFilter::ILike(p)
                    | ast::ShowStatementFilter::NoKeyword(p),
                ) => (Some(p.as_str()), None),
                Some(ast::ShowStatementFilter::Where(condition)) => (None, Some(condition)),
            };
            crate::status::show(session, *global, pattern, condition, sink)
        }
        other => Err(SqlError::unsupported(other.to_string())),
    }
}

/// The Com_ counter of a prepared statement's plan.
pub(crate) fn planned_counter(planned: &Planned) -> Counter {
    match planned {
        Planned::Select(..) | Planned::Query(_) => Counter::ComSelect,
        Planned::Insert(..) => Counter::ComInsert,
        // Multi-table forms count with the one-table ones (MySQL has Com_*_multi).
        Planned::MultiTable(dml) if dml.delete => Counter::ComDelete,
        Planned::Update(..) | Planned::MultiTable(_) => Counter::ComUpdate,
        Planned::Delete(..) => Counter::ComDelete,
        Planned::Command(stmt) => crate::status::command_counter(stmt),
    }
}

/// `MAX_EXECUTION_TIME(n)` of an optimizer hint comment `/*+ ... */` in `sql`, in ms.
fn hinted_max_execution_time(sql: &str) -> Option<u64> {
    let start = sql.find("/*+")? + 3;
    let end = start + sql[start..].find("*/")?;
    let hints = sql[start..end].to_ascii_uppercase();
    let at = hints.find("MAX_EXECUTION_TIME")? + "MAX_EXECUTION_TIME".len();
    let rest = hints[at..].trim_start().strip_prefix('(')?;
    let close = rest.find(')')?;
    rest[..close].trim().parse().ok()
}

/// A variable as a number (0 when unset or not a number): the session's own value if it set
/// one, else the global one (`SET GLOBAL`, `shale serve`'s flags), else the default.
fn number(session: &Session, name: &str) -> f64 {
    let state = session.state();
    let value = if state.vars.contains_key(name) {
        state.variable(name)
    } else {
        state.variable(&format!("global.{name}"))
    };
    number_value(&value)
}

/// A variable's value as a number (text is parsed; anything else is 0).
fn number_value(value: &Value) -> f64 {
    match value {
        Value::Int(i) => *i as f64,
        Value::UInt(u) => *u as f64,
        Value::Double(d) => *d,
        Value::Bytes(b) => String::from_utf8_lossy(b).trim().parse().unwrap_or(0.0),
        other => crate::value::as_text(other)
            .and_then(|t| t.parse().ok())
            .unwrap_or(0.0),
    }
}

/// How the metadata lock waits of `session`'s statement behave: they end after
/// `lock_wait_timeout` seconds or at KILL, and the session's LOCK TABLES locks do not hold
/// it up. The session's own value (set at connect from the global one, as in MySQL): reading
/// it takes no lock that other sessions share.
pub(crate) fn metadata_wait(session: &Session) -> shale_table::MetadataWait {
    let lock_wait = number_value(&session.state().variable("lock_wait_timeout"));
    shale_table::MetadataWait {
        timeout: Duration::from_secs_f64(lock_wait.clamp(1.0, 31_536_000.0)),
        waiter: Some(session.process().clone()),
        owner: Some(session.connection_id()),
    }
}

/// Runs one statement (`run`) with the bookkeeping every statement gets: Questions, Queries
/// and its Com_ counter; a [`Watch`] so KILL and `max_execution_time` (read-only SELECTs
/// only, as in MySQL; the session variable or the statement's hint) can stop it; the rows it
/// read and wrote; Slow_queries past `long_query_time`.
pub(crate) fn observe(
    session: &mut Session,
    counter: Counter,
    sql: &str,
    sink: &mut dyn ResultSink,
    run: impl FnOnce(&mut Session, &mut dyn ResultSink) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    count(session, Counter::Questions, 1);
    count(session, Counter::Queries, 1);
    count(session, counter, 1);
    let started = Instant::now();
    let deadline = if counter == Counter::ComSelect {
        let ms = hinted_max_execution_time(sql)
            .unwrap_or_else(|| number(session, "max_execution_time").max(0.0) as u64);
        (ms > 0).then(|| started + Duration::from_millis(ms))
    } else {
        None
    };
    let watch = Watch::install(session.process().clone(), deadline);
    let _metadata_wait = metadata_wait(session).install();
    let mut observed = Observed {
        inner: sink,
        affected: 0,
        rows_sent: 0,
    };
    let result = run(session, &mut observed);
    let rows_read = watch.rows_read();
    drop(watch);
    count(session, Counter::RowsRead, rows_read);
    let written = match counter {
        Counter::ComInsert | Counter::ComInsertSelect | Counter::ComReplace => {
            Some(Counter::RowsInserted)
        }
        Counter::ComUpdate => Some(Counter::RowsUpdated),
        Counter::ComDelete => Some(Counter::RowsDeleted),
        _ => None,
    };
    if let (Some(c), Ok(())) = (written, &result) {
        count(session, c, observed.affected);
    }
    let took = started.elapsed();
    if took.as_secs_f64() > number(session, "long_query_time") {
        count(session, Counter::SlowQueries, 1);
        let entry = crate::querylog::SlowEntry {
            sql,
            took,
            rows_sent: observed.rows_sent,
            rows_examined: rows_read,
        };
        crate::querylog::slow(session, &entry);
    }
    result
}

/// Passes everything through, noting the affected rows of the statement's OK and the rows
/// it sent.
struct Observed<'a> {
    inner: &'a mut dyn ResultSink,
    affected: u64,
    rows_sent: u64,
}

impl ResultSink for Observed<'_> {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.affected += status.affected_rows;
        self.inner.ok(status)
    }
    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.inner.columns(columns)
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        crate::interrupt::tick()?;
        self.rows_sent += 1;
        self.inner.row(row)
    }
    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.inner.end(status)
    }
}

#[cfg(test)]
mod tests {
    use super::hinted_max_execution_time;

    #[test]
    fn max_execution_time_hints_are_found_in_their_comment_only() {
        let found = |sql: &str| hinted_max_execution_time(sql);
        assert_eq!(
            found("SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t"),
            Some(1000)
        );
        assert_eq!(
            found("select /*+ BKA(t) max_execution_time( 25 ) */ 1"),
            Some(25)
        );
        assert_eq!(found("SELECT 1 /* MAX_EXECUTION_TIME(5) */"), None);
        assert_eq!(found("SELECT /*+ MAX_EXECUTION_TIME(x) */ 1"), None);
        assert_eq!(found("SELECT /*+ MAX_EXECUTION_TIME(5)"), None);
    }
}
