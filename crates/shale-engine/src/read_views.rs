//! The keyspaces' read views, published so that a lookup takes no lock to find one.
//!
//! A point lookup needs its keyspace's current [`SuperVersion`]. Taken under the state mutex,
//! every get wrote the mutex's cache line, which all readers and writers share. Here each
//! keyspace's view sits in its own [`ArcSwap`] slot, and the map from keyspace ids to slots in
//! another: loading either costs a reader no shared write (arc-swap keeps a reader's claim in
//! a slot of its own thread).
//!
//! Invariants:
//! 1. A keyspace's slot holds that keyspace's `KeyspaceState::super_version`: both are set
//!    together, under the state mutex, by `KeyspaceState::new` and `install_super_version`.
//! 2. The map names exactly the keyspaces of `DbState::keyspaces`: it is replaced under the
//!    state mutex whenever one is created or dropped ([`ReadViews::publish`]). A reader that
//!    loaded the map before a drop may still read the dropped keyspace's last view, as one
//!    that took the view just before the drop could.

use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use crate::keyspace::{KeyspaceState, SuperVersion};

/// Where one keyspace's current read view is published.
pub(crate) type ViewSlot = Arc<ArcSwap<SuperVersion>>;

/// The published read views of every keyspace.
#[derive(Debug)]
pub(crate) struct ReadViews {
    slots: ArcSwap<BTreeMap<u32, ViewSlot>>,
}

impl ReadViews {
    pub(crate) fn new(keyspaces: &BTreeMap<u32, KeyspaceState>) -> Self {
        ReadViews {
            slots: ArcSwap::from_pointee(slots_of(keyspaces)),
        }
    }

    /// Publishes the set of keyspaces after one was created or dropped (invariant 2; the
    /// caller holds the state mutex).
    pub(crate) fn publish(&self, keyspaces: &BTreeMap<u32, KeyspaceState>) {
        self.slots.store(Arc::new(slots_of(keyspaces)));
    }

    /// The current read view of `keyspace`, or `None` for a keyspace that does not exist.
    pub(crate) fn load(&self, keyspace: u32) -> Option<Guard<Arc<SuperVersion>>> {
        self.slots.load().get(&keyspace).map(|slot| slot.load())
    }
}

fn slots_of(keyspaces: &BTreeMap<u32, KeyspaceState>) -> BTreeMap<u32, ViewSlot> {
    keyspaces
        .iter()
        .map(|(&id, keyspace)| (id, keyspace.published.clone()))
        .collect()
}
