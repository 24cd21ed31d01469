//! Wall-clock time behind a trait, so TTL tests move time instead of sleeping.

use std::fmt::Debug;
use std::time::{SystemTime, UNIX_EPOCH};

/// The current wall-clock time (`Options::clock`).
pub trait Clock: Debug + Send + Sync {
    /// Seconds since the Unix epoch.
    fn now_seconds(&self) -> u64;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_seconds(&self) -> u64 {
        // A clock before 1970 is treated as 1970: entries then look young, never expired.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}
