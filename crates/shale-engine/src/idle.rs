//! Idle detection for idle compaction (`Options::idle_compaction_after`, docs/compaction.md):
//! when writes stop and reads go on, the compaction thread flushes the memtables and compacts
//! L0 into the base level once, so reads stop merging them (the variance of `MyRocks` issue
//! 427).
//!
//! Kept cheap for the read path: a read loads one flag and stores it only when it is unset
//! (once per write), so readers share the cache line instead of bouncing it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the compaction thread should do about idleness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdleCheck {
    /// Writes stopped long enough ago and reads came since: compact now.
    Due,
    /// Look again after this long.
    WaitFor(Duration),
}

#[derive(Debug)]
pub(crate) struct IdleTracker {
    start: Instant,
    /// Milliseconds after `start` of the last non-empty write.
    last_write_ms: AtomicU64,
    /// A read happened since the last write.
    read_since_write: AtomicBool,
    /// The idle compaction ran since the last write.
    compacted_since_write: AtomicBool,
}

impl Default for IdleTracker {
    fn default() -> Self {
        IdleTracker {
            start: Instant::now(),
            last_write_ms: AtomicU64::new(0),
            read_since_write: AtomicBool::new(false),
            // Nothing was written since open: nothing to compact until something is.
            compacted_since_write: AtomicBool::new(true),
        }
    }
}

impl IdleTracker {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A non-empty write was committed.
    pub(crate) fn wrote(&self) {
        self.last_write_ms.store(self.now_ms(), Ordering::Relaxed);
        if self.read_since_write.load(Ordering::Relaxed) {
            self.read_since_write.store(false, Ordering::Relaxed);
        }
        if self.compacted_since_write.load(Ordering::Relaxed) {
            self.compacted_since_write.store(false, Ordering::Relaxed);
        }
    }

    /// A read (get, multi-get or iterator) started.
    pub(crate) fn read(&self) {
        if !self.read_since_write.load(Ordering::Relaxed) {
            self.read_since_write.store(true, Ordering::Relaxed);
        }
    }

    /// The idle compaction is running: not again until the next write.
    pub(crate) fn compacted(&self) {
        self.compacted_since_write.store(true, Ordering::Relaxed);
    }

    /// Whether the idle compaction is due with writes quiet for `after`.
    pub(crate) fn check(&self, after: Duration) -> IdleCheck {
        let quiet = Duration::from_millis(
            self.now_ms()
                .saturating_sub(self.last_write_ms.load(Ordering::Relaxed)),
        );
        if quiet < after {
            return IdleCheck::WaitFor(after.saturating_sub(quiet));
        }
        let waiting = self.compacted_since_write.load(Ordering::Relaxed)
            || !self.read_since_write.load(Ordering::Relaxed);
        if waiting {
            IdleCheck::WaitFor(after)
        } else {
            IdleCheck::Due
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_once_after_quiet_writes_and_a_read() {
        let idle = IdleTracker::default();
        let after = Duration::from_millis(20);
        // Nothing written since open.
        idle.read();
        assert!(matches!(idle.check(after), IdleCheck::WaitFor(_)));
        idle.wrote();
        assert!(matches!(idle.check(after), IdleCheck::WaitFor(d) if d <= after));
        std::thread::sleep(after * 2);
        // Quiet, but no read since the write.
        assert!(matches!(idle.check(after), IdleCheck::WaitFor(_)));
        idle.read();
        assert_eq!(idle.check(after), IdleCheck::Due);
        idle.compacted();
        assert!(matches!(idle.check(after), IdleCheck::WaitFor(_)));
        idle.wrote();
        idle.read();
        assert!(
            matches!(idle.check(after), IdleCheck::WaitFor(_)),
            "the write is recent"
        );
    }
}
