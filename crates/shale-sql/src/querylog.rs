//! The general query log and the slow-query log: files in the data directory that
//! `shale serve --general-log` / `--slow-query-log` turn on ([`Instance::open_query_logs`]).
//!
//! The general log gets one line per statement text a client sends, when it arrives:
//! `2025-11-27T05:10:00.123456Z\t     8 Query\tSELECT 1` (`Execute` for a prepared
//! statement, with its text). The slow log gets one entry per statement that ran longer than
//! `long_query_time`, in MySQL's layout, plus a `# Plan:` line with EXPLAIN's access path:
//!
//! ```text
//! # Time: 2025-11-27T05:10:00.123456Z
//! # User@Host: root@localhost  Id:     8
//! # Query_time: 1.250000  Lock_time: 0.000000 Rows_sent: 1  Rows_examined: 27000000
//! # Plan: scan t (full) ...
//! SET timestamp=1764220200;
//! SELECT COUNT(*) FROM t x, t y, t z WHERE x.k + y.k + z.k < 0;
//! ```
//!
//! Writes go through the data directory's file system (`shale_fs`), each entry one append
//! under the log's lock, flushed to the OS but not synced (a log is for people, and a crash
//! may lose its last entries, as MySQL's may). A failed write is reported once on stderr and
//! never fails the statement.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use shale_fs::WritableFile;

use crate::error::SqlError;
use crate::instance::Instance;
use crate::session::Session;

/// The general log's file name in the data directory.
pub const GENERAL_LOG_FILE: &str = "general.log";
/// The slow-query log's file name in the data directory.
pub const SLOW_LOG_FILE: &str = "slow.log";

/// One open log file.
pub(crate) struct LogFile {
    file: Mutex<Box<dyn WritableFile>>,
    failed: AtomicBool,
}

impl std::fmt::Debug for LogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFile").finish_non_exhaustive()
    }
}

impl LogFile {
    fn append(&self, text: &str) {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let written = file.append(text.as_bytes()).and_then(|()| file.flush());
        if let Err(e) = written {
            if !self.failed.swap(true, Ordering::Relaxed) {
                eprintln!("shale: cannot write a query log: {e} (later failures not shown)");
            }
        }
    }
}

/// The query logs an instance has open.
#[derive(Debug, Default)]
pub(crate) struct QueryLogs {
    pub general: Option<LogFile>,
    pub slow: Option<LogFile>,
}

impl Instance {
    /// Opens (appending, creating if missing) the general and/or slow-query log in the data
    /// directory. Called once, before sessions start; a second call changes nothing.
    pub fn open_query_logs(&self, general: bool, slow: bool) -> Result<(), SqlError> {
        let open = |name: &str| -> Result<LogFile, SqlError> {
            let path = self.dir.join(name);
            let file = self.fs.open_append(&path).map_err(|e| {
                SqlError::new(
                    1105,
                    "HY000",
                    format!("cannot open {}: {e}", path.display()),
                )
            })?;
            Ok(LogFile {
                file: Mutex::new(file),
                failed: AtomicBool::new(false),
            })
        };
        let logs = QueryLogs {
            general: general.then(|| open(GENERAL_LOG_FILE)).transpose()?,
            slow: slow.then(|| open(SLOW_LOG_FILE)).transpose()?,
        };
        let _ = self.logs.set(logs);
        Ok(())
    }
}

/// `2025-11-27T05:10:00.123456Z`, MySQL's log timestamp in UTC.
fn timestamp(at: SystemTime) -> String {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = crate::datetime_funcs::civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        since.subsec_micros()
    )
}

/// A statement text arrived (`command`: `Query` or `Execute`).
pub(crate) fn general(session: &Session, command: &str, sql: &str) {
    let Some(log) = session
        .instance()
        .logs
        .get()
        .and_then(|l| l.general.as_ref())
    else {
        return;
    };
    log.append(&format!(
        "{}\t{:>6} {command}\t{sql}\n",
        timestamp(SystemTime::now()),
        session.connection_id()
    ));
}

/// What the slow log records of one statement.
pub(crate) struct SlowEntry<'a> {
    pub sql: &'a str,
    pub took: Duration,
    pub rows_sent: u64,
    pub rows_examined: u64,
}

/// A statement ran past `long_query_time`.
pub(crate) fn slow(session: &Session, entry: &SlowEntry<'_>) {
    let Some(log) = session.instance().logs.get().and_then(|l| l.slow.as_ref()) else {
        return;
    };
    let now = SystemTime::now();
    let unix = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let plan = plan_of(session, entry.sql);
    let sql = entry.sql.trim().trim_end_matches(';');
    log.append(&format!(
        "# Time: {}\n# User@Host: {}  Id: {:>6}\n\
         # Query_time: {:.6}  Lock_time: 0.000000 Rows_sent: {}  Rows_examined: {}\n\
         # Plan: {plan}\nSET timestamp={unix};\n{sql};\n",
        timestamp(now),
        session.state().user,
        session.connection_id(),
        entry.took.as_secs_f64(),
        entry.rows_sent,
        entry.rows_examined,
    ));
}

/// EXPLAIN's plan of a one-statement text, on one line. Planned again here (only for a
/// statement that was slow, so the hot path never pays for it).
fn plan_of(session: &Session, sql: &str) -> String {
    let statements = match crate::parse::parse_as(sql, session.syntax()) {
        Ok(s) if s.len() == 1 => s,
        Ok(_) => return "(not shown for a text of several statements)".into(),
        Err(_) => return "(none)".into(),
    };
    match session.explain(&statements[0]) {
        Ok(text) => text.lines().map(str::trim).collect::<Vec<_>>().join(" | "),
        Err(_) => "(none: not a query)".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    #[test]
    fn timestamps_are_utc_with_microseconds() {
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_764_220_200, 123_456_000);
        assert_eq!(super::timestamp(at), "2025-11-27T05:10:00.123456Z");
    }
}
