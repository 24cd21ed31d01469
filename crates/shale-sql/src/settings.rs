//! Which system variables `SET` may change, and how: the server's live settings
//! (`max_connections`, `wait_timeout`, ... read by the server at each use, so `SET GLOBAL`
//! takes effect at once), variables only a restart changes (error 1238), and GLOBAL-only
//! ones (error 1229 for `SET SESSION`).
//!
//! The engine's live options (`shale_flush_log_at_trx_commit`, block cache size, write buffer
//! size, compaction rate limit, stall thresholds, `shale_max_background_jobs`) are
//! GLOBAL-only and change the engine at once (engine_settings.rs).

use shale_table::Value;

use crate::error::SqlError;
use crate::session::Session;

/// Live server settings: name and MySQL's allowed range. Values outside are clamped with
/// warning 1292, as MySQL does.
const LIVE_GLOBAL: [(&str, u64, u64); 6] = [
    ("max_connections", 1, 100_000),
    // Read by each new connection, which keeps it (the session value is read-only).
    ("max_allowed_packet", 1024, 1_073_741_824),
    ("net_write_timeout", 1, 31_536_000),
    ("wait_timeout", 1, 31_536_000),
    ("interactive_timeout", 1, 31_536_000),
    ("connect_timeout", 2, 31_536_000),
];

/// Variables a running server cannot change: startup settings and the engine's options.
const READ_ONLY: [&str; 16] = [
    "port",
    "socket",
    "datadir",
    "hostname",
    "protocol_version",
    "version",
    "version_comment",
    "lower_case_table_names",
    "character_set_system",
    "have_ssl",
    "license",
    // The log files are opened at start (`--general-log`, `--slow-query-log`).
    "general_log",
    "slow_query_log",
    // The engine opens table files with O_DIRECT or not at start (`--use-direct-reads`).
    "shale_use_direct_reads",
    "shale_use_direct_io_for_flush_and_compaction",
    // The engine's table cache is sized at open (`--max-open-files`).
    "shale_max_open_files",
];

/// `innodb_stats_auto_recalc`'s twin: whether the table layer estimates a table's index
/// statistics again once more than a tenth of its rows changed (shale-table's
/// `auto_recalc.rs`). GLOBAL-only; the store holds the value.
pub(crate) const STATS_AUTO_RECALC: &str = "shale_stats_auto_recalc";

/// A whole number from a variable's value (None when it is not one).
pub(crate) fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Int(i) => u64::try_from(*i).ok(),
        Value::UInt(u) => Some(*u),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

fn read_only(name: &str) -> SqlError {
    SqlError::new(
        1238,
        "HY000",
        format!("Variable '{name}' is a read only variable"),
    )
}

/// Checks a `SET [SESSION] name = v`: read-only and GLOBAL-only variables are refused.
pub(crate) fn check_session_setting(name: &str) -> Result<(), SqlError> {
    if READ_ONLY.contains(&name) {
        return Err(read_only(name));
    }
    if name == "max_allowed_packet" {
        return Err(SqlError::new(
            1621,
            "HY000",
            format!("SESSION variable '{name}' is read-only. Use SET GLOBAL to assign the value"),
        ));
    }
    if name == "max_connections"
        || name == STATS_AUTO_RECALC
        || crate::engine_settings::is_engine_variable(name)
    {
        return Err(SqlError::new(
            1229,
            "HY000",
            format!("Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"),
        ));
    }
    Ok(())
}

impl Session {
    /// Checks a `SET GLOBAL name = v` before it is stored, returning the value to store.
    pub(crate) fn check_global_setting(&mut self, name: &str, v: Value) -> Result<Value, SqlError> {
        if READ_ONLY.contains(&name) {
            return Err(read_only(name));
        }
        if crate::engine_settings::is_engine_variable(name) {
            return self.set_engine_variable(name, &v);
        }
        let Some(&(_, min, max)) = LIVE_GLOBAL.iter().find(|(n, _, _)| *n == name) else {
            return Ok(v);
        };
        let Some(n) = as_u64(&v).or(match v {
            Value::Int(i) if i < 0 => Some(0),
            _ => None,
        }) else {
            return Err(SqlError::new(
                1232,
                "42000",
                format!("Incorrect argument type to variable '{name}'"),
            ));
        };
        let clamped = n.clamp(min, max);
        if clamped != n {
            self.state_mut().warnings.push((
                "Warning",
                1292,
                format!("Truncated incorrect {name} value: '{n}'"),
            ));
        }
        Ok(Value::UInt(clamped))
    }

    /// A variable this session set itself (`SET SESSION wait_timeout = 5`), as a number.
    pub fn own_number(&self, name: &str) -> Option<u64> {
        self.state().vars.get(name).and_then(as_u64)
    }

    /// A session variable's value as `@@name` reads it (the session's own, else the
    /// default); NULL if there is none. The server reads the connection's character sets,
    /// `sql_mode` and `shale_query_memory` with it.
    pub fn session_variable(&self, name: &str) -> Value {
        self.state().variable(name)
    }
}
