//! Options that change while the database is open ([`crate::Db::set_options`]), as `RocksDB`'s
//! `SetOptions`/`SetDBOptions` change theirs: the compaction rate limit, the block cache
//! capacity, the default durability of writes, and every keyspace's write buffer size and
//! write-stall thresholds (docs/operations.md, "Changing options live").
//!
//! Where each value lives, and why a change needs no restart:
//! - `rate_limit_bytes_per_sec`: the rate limiter's bucket (`crate::rate_limiter`, invariant 5
//!   for 0, which turns it off); flushes and compactions ask it before every table append.
//! - `block_cache_capacity`: the block cache's shards, which evict down to a smaller budget at
//!   once (`ShardedLru::set_capacity`).
//! - `durability`: an atomic read by every write that names none (`db::durability_of`), so
//!   the write path takes no new lock.
//! - `max_background_jobs`: an atomic the compaction threads read each time they look for
//!   work; `Db::set_options` then starts the threads a raised limit allows, and threads
//!   above a lowered one end after their running compaction (background.rs, invariant 1).
//! - keyspace options: `KeyspaceState::options` under the state lock, which the write path
//!   already holds when it checks stalls and memtable size (write.rs); waiters are woken so a
//!   raised stop trigger releases stalled writes at once.
//!
//! Invariants:
//! 1. A call applies all of its changes or none: every name and value is parsed and every
//!    keyspace's resulting options validated before anything changes.
//! 2. The OPTIONS file keeps the options the database was opened with; a live change lasts
//!    until close (the SQL layer's SET PERSIST is what carries one across restarts).

use std::sync::atomic::{AtomicU8, Ordering};

use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::options::{Durability, KeyspaceOptions};

/// The options [`crate::Db::set_options`] accepts, in the order [`crate::Db::live_options`]
/// lists them.
pub const LIVE_OPTIONS: [&str; 10] = [
    "rate_limit_bytes_per_sec",
    "block_cache_capacity",
    "durability",
    "write_buffer_size",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "soft_pending_compaction_bytes_limit",
    "hard_pending_compaction_bytes_limit",
    "max_write_buffer_number",
    "max_background_jobs",
];

/// One parsed change.
#[derive(Debug, Clone, Copy)]
enum Change {
    RateLimit(u64),
    BlockCache(usize),
    Durability(Durability),
    BackgroundJobs(usize),
    Keyspace(fn(&mut KeyspaceOptions, u64), u64),
}

fn bad_value(name: &str, value: &str, expected: &str) -> Error {
    Error::InvalidArgument(format!(
        "option {name}: {value:?} is not a valid value ({expected})"
    ))
}

fn parse_u64(name: &str, value: &str) -> Result<u64> {
    value
        .trim()
        .parse()
        .map_err(|_| bad_value(name, value, "expected a whole number of at least 0"))
}

fn to_usize(name: &str, value: &str, n: u64) -> Result<usize> {
    usize::try_from(n).map_err(|_| bad_value(name, value, "too large for this machine"))
}

/// Parses one `name = value` pair; every error names the option and the value.
fn parse(name: &str, value: &str) -> Result<Change> {
    let change = match name {
        "rate_limit_bytes_per_sec" => Change::RateLimit(parse_u64(name, value)?),
        "block_cache_capacity" => {
            let n = parse_u64(name, value)?;
            Change::BlockCache(to_usize(name, value, n)?)
        }
        "durability" => Change::Durability(
            Durability::from_name(value.trim())
                .ok_or_else(|| bad_value(name, value, "expected sync, flush or buffered"))?,
        ),
        "write_buffer_size" => {
            let n = parse_u64(name, value)?;
            to_usize(name, value, n)?;
            Change::Keyspace(
                |o, n| o.write_buffer_size = usize::try_from(n).unwrap_or(usize::MAX),
                n,
            )
        }
        "max_write_buffer_number" => {
            let n = parse_u64(name, value)?;
            to_usize(name, value, n)?;
            Change::Keyspace(
                |o, n| o.max_write_buffer_number = usize::try_from(n).unwrap_or(usize::MAX),
                n,
            )
        }
        "level0_slowdown_writes_trigger" => {
            let n = parse_u64(name, value)?;
            to_usize(name, value, n)?;
            Change::Keyspace(
                |o, n| o.level0_slowdown_writes_trigger = usize::try_from(n).unwrap_or(usize::MAX),
                n,
            )
        }
        "level0_stop_writes_trigger" => {
            let n = parse_u64(name, value)?;
            to_usize(name, value, n)?;
            Change::Keyspace(
                |o, n| o.level0_stop_writes_trigger = usize::try_from(n).unwrap_or(usize::MAX),
                n,
            )
        }
        "max_background_jobs" => {
            let n = parse_u64(name, value)?;
            let jobs = to_usize(name, value, n)?;
            crate::options::check_background_jobs(jobs)
                .map_err(|_| bad_value(name, value, "expected 2 to 64"))?;
            Change::BackgroundJobs(jobs)
        }
        "soft_pending_compaction_bytes_limit" => Change::Keyspace(
            |o, n| o.soft_pending_compaction_bytes_limit = n,
            parse_u64(name, value)?,
        ),
        "hard_pending_compaction_bytes_limit" => Change::Keyspace(
            |o, n| o.hard_pending_compaction_bytes_limit = n,
            parse_u64(name, value)?,
        ),
        _ => {
            return Err(Error::InvalidArgument(format!(
                "option {name} cannot be changed while the database is open (live options: {})",
                LIVE_OPTIONS.join(", ")
            )))
        }
    };
    Ok(change)
}

/// The default durability as an atomic, read by every write that names none.
#[derive(Debug)]
pub(crate) struct DefaultDurability(AtomicU8);

impl DefaultDurability {
    pub(crate) fn new(durability: Durability) -> Self {
        DefaultDurability(AtomicU8::new(Self::code(durability)))
    }

    fn code(durability: Durability) -> u8 {
        match durability {
            Durability::Sync => 0,
            Durability::Flush => 1,
            Durability::Buffered => 2,
        }
    }

    pub(crate) fn get(&self) -> Durability {
        match self.0.load(Ordering::Relaxed) {
            0 => Durability::Sync,
            1 => Durability::Flush,
            _ => Durability::Buffered,
        }
    }

    fn set(&self, durability: Durability) {
        self.0.store(Self::code(durability), Ordering::Relaxed);
    }
}

/// [`crate::Db::set_options`].
pub(crate) fn set(inner: &DbInner, changes: &[(&str, &str)]) -> Result<()> {
    inner.check_open()?;
    inner.check_writable("set_options")?;
    let parsed = changes
        .iter()
        .map(|(name, value)| parse(name, value))
        .collect::<Result<Vec<_>>>()?;
    let mut state = inner.lock_state();
    // Invariant 1: the new keyspace options are built and validated before any is installed.
    let mut keyspaces = Vec::new();
    for (id, keyspace) in &state.keyspaces {
        let mut options = keyspace.options.clone();
        for change in &parsed {
            if let Change::Keyspace(apply, n) = change {
                apply(&mut options, *n);
            }
        }
        options.validate().map_err(|e| match e {
            Error::InvalidArgument(detail) => {
                Error::InvalidArgument(format!("keyspace {:?}: {detail}", keyspace.name))
            }
            other => other,
        })?;
        keyspaces.push((*id, options));
    }
    let version = state.versions.current();
    for (id, options) in keyspaces {
        if let Some(keyspace) = state.keyspaces.get_mut(&id) {
            keyspace.pending_compaction_bytes =
                crate::compaction::estimated_pending_bytes(&version, id, &options);
            keyspace.options = options;
        }
    }
    for change in &parsed {
        match *change {
            Change::RateLimit(rate) => {
                if let Some(limiter) = &inner.rate_limiter {
                    limiter.set_bytes_per_sec(rate);
                }
            }
            Change::BlockCache(bytes) => inner.table_cache.set_block_cache_capacity(bytes),
            Change::Durability(durability) => inner.default_durability.set(durability),
            Change::BackgroundJobs(jobs) => {
                inner.max_background_jobs.store(jobs, Ordering::Release);
            }
            Change::Keyspace(..) => {}
        }
    }
    inner.note_pending_compaction_bytes_locked(&state);
    // Stalled writers re-check their triggers; the compaction thread its work.
    inner.state_changed.notify_all();
    drop(state);
    let described: Vec<String> = changes.iter().map(|(n, v)| format!("{n}={v}")).collect();
    inner
        .info_log
        .log(format_args!("options changed: {}", described.join(" ")));
    Ok(())
}

/// [`crate::Db::live_options`]: the current value of each of [`LIVE_OPTIONS`], the keyspace
/// ones as the default keyspace has them.
pub(crate) fn current(inner: &DbInner) -> Vec<(String, String)> {
    let state = inner.lock_state();
    let keyspace = state
        .keyspaces
        .get(&crate::db::DEFAULT_KEYSPACE_ID)
        .map(|k| k.options.clone())
        .unwrap_or_default();
    drop(state);
    let rate = inner
        .rate_limiter
        .as_ref()
        .map_or(0, |limiter| limiter.configured_bytes_per_sec());
    let values = [
        rate.to_string(),
        inner.table_cache.block_cache_capacity().to_string(),
        inner.default_durability.get().name().to_owned(),
        keyspace.write_buffer_size.to_string(),
        keyspace.level0_slowdown_writes_trigger.to_string(),
        keyspace.level0_stop_writes_trigger.to_string(),
        keyspace.soft_pending_compaction_bytes_limit.to_string(),
        keyspace.hard_pending_compaction_bytes_limit.to_string(),
        keyspace.max_write_buffer_number.to_string(),
        inner
            .max_background_jobs
            .load(Ordering::Acquire)
            .to_string(),
    ];
    LIVE_OPTIONS
        .iter()
        .zip(values)
        .map(|(name, value)| ((*name).to_owned(), value))
        .collect()
}
