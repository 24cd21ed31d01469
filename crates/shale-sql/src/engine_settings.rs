//! The engine's live options as GLOBAL system variables (issue 24), in the style of `MyRocks`'
//! `rocksdb_*` variables: `SET GLOBAL shale_block_cache_size = ...` calls the engine's
//! `Db::set_options` and takes effect at once; `@@global.x` and SHOW [GLOBAL] VARIABLES show
//! the value the engine runs with (docs/operations.md, "Live engine settings through SQL").
//!
//! `SET GLOBAL shale_create_checkpoint = 'DIR'` (`MyRocks`' `rocksdb_create_checkpoint`) makes a
//! consistent, openable copy of the running data directory in `DIR` (the engine's
//! `Db::checkpoint`; the catalog lives in the engine, so it is copied with the rows) without
//! stopping writers; `shale serve --datadir DIR` then opens it. A relative `DIR` is taken
//! from the data directory. An existing `DIR`, or one that cannot be made, is refused with
//! `MyRocks`' error (1296, `Got error N '...' from Shale`), as is any engine failure; the
//! variable itself always reads `''`.
//!
//! Invariants:
//! 1. The global value of each variable here is what the engine last accepted: it is
//!    published from `Db::live_options` when the instance opens, and stored by SET GLOBAL
//!    only after `Db::set_options` succeeded.
//! 2. They are GLOBAL-only (SET SESSION is 1229, as MySQL's global variables), and every
//!    read, session scope included, gives the global value.

use shale_table::Value;

use crate::error::SqlError;
use crate::instance::Instance;
use crate::session::Session;

/// A live engine variable: its SQL name, the engine option it sets, and the range a value
/// is clamped into (warning 1292, as MySQL clamps an integer variable).
struct EngineVariable {
    name: &'static str,
    option: &'static str,
    min: u64,
    max: u64,
}

const fn variable(name: &'static str, option: &'static str, min: u64, max: u64) -> EngineVariable {
    EngineVariable {
        name,
        option,
        min,
        max,
    }
}

/// `MyRocks`' names where it has one (`rocksdb_rate_limiter_bytes_per_sec`,
/// `rocksdb_block_cache_size`, `innodb_flush_log_at_trx_commit`'s meaning), the engine's own
/// option names otherwise.
const VARIABLES: [EngineVariable; 9] = [
    variable(
        "shale_rate_limiter_bytes_per_sec",
        "rate_limit_bytes_per_sec",
        0,
        i64::MAX as u64,
    ),
    // MyRocks' lower bound for rocksdb_block_cache_size.
    variable(
        "shale_block_cache_size",
        "block_cache_capacity",
        1024,
        i64::MAX as u64,
    ),
    variable("shale_flush_log_at_trx_commit", "durability", 0, 2),
    // The engine's bounds for write_buffer_size (4 KiB to 4 GiB).
    variable(
        "shale_write_buffer_size",
        "write_buffer_size",
        4096,
        4 << 30,
    ),
    variable(
        "shale_level0_slowdown_writes_trigger",
        "level0_slowdown_writes_trigger",
        2,
        1 << 30,
    ),
    variable(
        "shale_level0_stop_writes_trigger",
        "level0_stop_writes_trigger",
        2,
        1 << 30,
    ),
    variable(
        "shale_soft_pending_compaction_bytes_limit",
        "soft_pending_compaction_bytes_limit",
        0,
        i64::MAX as u64,
    ),
    variable(
        "shale_hard_pending_compaction_bytes_limit",
        "hard_pending_compaction_bytes_limit",
        0,
        i64::MAX as u64,
    ),
    // MyRocks' rocksdb_max_background_jobs: one flush thread, the rest compaction threads
    // (at least one of each).
    variable(
        "shale_max_background_jobs",
        "max_background_jobs",
        2,
        shale_engine::MAX_BACKGROUND_JOBS as u64,
    ),
];

/// The variable whose assignment makes a checkpoint.
const CREATE_CHECKPOINT: &str = "shale_create_checkpoint";

/// Whether `name` is one of the live engine variables (the checkpoint one included).
pub(crate) fn is_engine_variable(name: &str) -> bool {
    name == CREATE_CHECKPOINT || VARIABLES.iter().any(|v| v.name == name)
}

/// `MyRocks`' error for a failed checkpoint (`ER_GET_ERRMSG`), the message cut to 200
/// characters as MySQL's format cuts it.
fn checkpoint_error(code: u32, detail: &str) -> SqlError {
    let detail: String = detail.chars().take(200).collect();
    SqlError::new(
        1296,
        "HY000",
        format!("Got error {code} '{detail}' from Shale"),
    )
}

/// `shale_flush_log_at_trx_commit`'s numbers (`innodb_flush_log_at_trx_commit`'s meanings)
/// as the engine's durability names.
pub(crate) fn durability_name(value: u64) -> Option<&'static str> {
    match value {
        0 => Some("buffered"),
        1 => Some("sync"),
        2 => Some("flush"),
        _ => None,
    }
}

fn durability_number(name: &str) -> u64 {
    match name {
        "buffered" => 0,
        "flush" => 2,
        _ => 1,
    }
}

/// Stores the values the engine runs with as the global values (invariant 1).
pub(crate) fn publish(instance: &Instance) {
    let live = instance.store.engine().db().live_options();
    for variable in &VARIABLES {
        let Some((_, value)) = live.iter().find(|(option, _)| option == variable.option) else {
            continue;
        };
        let number = if variable.option == "durability" {
            durability_number(value)
        } else {
            value.parse().unwrap_or_default()
        };
        instance.set_global(variable.name, Value::UInt(number));
    }
}

impl Instance {
    /// Changes engine options by their engine names (`Db::set_options`, all or none) and
    /// publishes the new values as the variables' global ones: how `shale serve` applies its
    /// engine flags and the persisted settings after opening. An empty list changes nothing.
    pub fn set_engine_options(&self, changes: &[(&str, &str)]) -> Result<(), SqlError> {
        if changes.is_empty() {
            return Ok(());
        }
        self.store
            .engine()
            .db()
            .set_options(changes)
            .map_err(|e| SqlError::new(1105, "HY000", e.to_string()))?;
        publish(self);
        Ok(())
    }
}

fn wrong_value(name: &str, value: &str) -> SqlError {
    SqlError::new(
        1231,
        "42000",
        format!("Variable '{name}' can't be set to the value of '{value}'"),
    )
}

impl Session {
    /// `SET GLOBAL name = v` of a live engine variable: clamps `v` into its range (warning
    /// 1292), changes the engine, and returns the value to store as the global one.
    pub(crate) fn set_engine_variable(&mut self, name: &str, v: &Value) -> Result<Value, SqlError> {
        if name == CREATE_CHECKPOINT {
            self.create_checkpoint(v)?;
            return Ok(Value::Bytes(Vec::new()));
        }
        let Some(variable) = VARIABLES.iter().find(|var| var.name == name) else {
            return Err(SqlError::unsupported(format!("engine variable {name}")));
        };
        let shown = crate::value::as_text(v).unwrap_or_default();
        let number = match v {
            Value::Int(i) if *i < 0 => Some(0),
            other => crate::settings::as_u64(other),
        };
        let Some(number) = number else {
            return Err(SqlError::new(
                1232,
                "42000",
                format!("Incorrect argument type to variable '{name}'"),
            ));
        };
        let clamped = number.clamp(variable.min, variable.max);
        if clamped != number || matches!(v, Value::Int(i) if *i < 0) {
            self.state_mut().warnings.push((
                "Warning",
                1292,
                format!("Truncated incorrect {name} value: '{shown}'"),
            ));
        }
        let engine_value = if variable.option == "durability" {
            durability_name(clamped)
                .ok_or_else(|| wrong_value(name, &shown))?
                .to_owned()
        } else {
            clamped.to_string()
        };
        let db = self.instance().store.engine().db();
        db.set_options(&[(variable.option, engine_value.as_str())])
            .map_err(|_| wrong_value(name, &engine_value))?;
        Ok(Value::UInt(clamped))
    }
}

impl Session {
    /// `SET GLOBAL shale_create_checkpoint = 'DIR'` (see the module doc).
    fn create_checkpoint(&mut self, v: &Value) -> Result<(), SqlError> {
        let text = match v {
            Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Null => String::new(),
            other => crate::value::as_text(other).unwrap_or_default(),
        };
        if text.trim().is_empty() {
            return Err(wrong_value(
                CREATE_CHECKPOINT,
                if matches!(v, Value::Null) { "NULL" } else { "" },
            ));
        }
        let instance = self.instance();
        let dir = instance.dir.join(text.trim());
        let exists = instance
            .fs
            .exists(&dir)
            .map_err(|e| checkpoint_error(1, &e.to_string()))?;
        if exists {
            return Err(checkpoint_error(
                1,
                &format!("checkpoint directory {} already exists", dir.display()),
            ));
        }
        self.process()
            .set_state(&format!("creating checkpoint in {}", dir.display()));
        instance
            .store
            .engine()
            .db()
            .checkpoint(&dir)
            .map_err(|e| checkpoint_error(2, &e.to_string()))?;
        Ok(())
    }
}
