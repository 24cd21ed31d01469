//! Points where a test can stop an engine thread to force an interleaving that load alone
//! hits only now and then (feature `testing`; without it the hooks are empty and free).

#[cfg(feature = "testing")]
use std::sync::OnceLock;

/// A callback run at one point of the engine.
#[cfg(feature = "testing")]
type Hook = Box<dyn Fn() + Send + Sync>;

/// The hooks of one open database, each set at most once.
#[derive(Default)]
pub(crate) struct TestHooks {
    /// Run by a write leader after its group's WAL record is written and its sequence numbers
    /// allocated and the WAL lock released, before the group inserts and publishes.
    #[cfg(feature = "testing")]
    after_wal_record: OnceLock<Hook>,
    /// Run by a flush job where it starts writing its table (no lock held).
    #[cfg(feature = "testing")]
    in_flush: OnceLock<Hook>,
    /// Run by a compaction that merges, where it starts (no lock held).
    #[cfg(feature = "testing")]
    in_compaction: OnceLock<Hook>,
    /// Run by each subcompaction thread (every range but the first) where it starts (no lock
    /// held).
    #[cfg(feature = "testing")]
    in_subcompaction: OnceLock<Hook>,
}

impl std::fmt::Debug for TestHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestHooks").finish_non_exhaustive()
    }
}

impl TestHooks {
    pub(crate) fn after_wal_record(&self) {
        #[cfg(feature = "testing")]
        if let Some(hook) = self.after_wal_record.get() {
            hook();
        }
    }

    pub(crate) fn in_flush(&self) {
        #[cfg(feature = "testing")]
        if let Some(hook) = self.in_flush.get() {
            hook();
        }
    }

    pub(crate) fn in_compaction(&self) {
        #[cfg(feature = "testing")]
        if let Some(hook) = self.in_compaction.get() {
            hook();
        }
    }

    pub(crate) fn in_subcompaction(&self) {
        #[cfg(feature = "testing")]
        if let Some(hook) = self.in_subcompaction.get() {
            hook();
        }
    }

    /// Sets the hook [`Self::in_subcompaction`] runs; false if one was already set.
    #[cfg(feature = "testing")]
    pub(crate) fn set_in_subcompaction(&self, hook: Hook) -> bool {
        self.in_subcompaction.set(hook).is_ok()
    }

    /// Sets the hook [`Self::in_flush`] runs; false if one was already set.
    #[cfg(feature = "testing")]
    pub(crate) fn set_in_flush(&self, hook: Hook) -> bool {
        self.in_flush.set(hook).is_ok()
    }

    /// Sets the hook [`Self::in_compaction`] runs; false if one was already set.
    #[cfg(feature = "testing")]
    pub(crate) fn set_in_compaction(&self, hook: Hook) -> bool {
        self.in_compaction.set(hook).is_ok()
    }

    /// Sets the hook [`Self::after_wal_record`] runs; false if one was already set.
    #[cfg(feature = "testing")]
    pub(crate) fn set_after_wal_record(&self, hook: Hook) -> bool {
        self.after_wal_record.set(hook).is_ok()
    }
}
