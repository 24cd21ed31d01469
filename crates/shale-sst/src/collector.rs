//! Table properties collectors: a hook that sees every point entry a [`TableWriter`] adds and
//! returns extra `user.<name>` properties when the file is finished (like `RocksDB`'s
//! `TablePropertiesCollector`). docs/format/sst.md, "Properties block", lists the names the
//! engine's own users write.
//!
//! The writer creates one collector per file from the factory in
//! [`WriterOptions::properties_collector`]; without one it costs a branch per entry. A
//! collector sees point entries (values, deletions, blob references) in the order they are
//! added, which is the file's key order; range deletions are not passed to it.
//!
//! Invariants:
//! 1. A collector's properties never replace a name the writer's options already set
//!    ([`WriterOptions::user_properties`]): the engine's own (`keyspace_id`, `keyspace_name`)
//!    win over a collector's.
//! 2. Collecting cannot fail a write: [`TablePropertiesCollector::finish`] returns properties,
//!    not a result. A collector that cannot describe something leaves it out.
//!
//! [`TableWriter`]: crate::TableWriter
//! [`WriterOptions::properties_collector`]: crate::WriterOptions::properties_collector
//! [`WriterOptions::user_properties`]: crate::WriterOptions::user_properties

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::key::ValueKind;

/// What a factory knows about the file a collector is made for.
#[derive(Debug, Clone, Copy)]
pub struct TableFileContext<'a> {
    /// The file being written.
    pub path: &'a Path,
    /// Whether it is written for ingestion (`shale.external`).
    pub external_file: bool,
}

/// Makes one [`TablePropertiesCollector`] per table file.
pub trait TablePropertiesCollectorFactory: Send + Sync + fmt::Debug {
    /// A stable name (recorded in the OPTIONS file).
    fn name(&self) -> &str;

    /// A collector for the file described by `context`.
    fn create_collector(&self, context: TableFileContext<'_>) -> Box<dyn TablePropertiesCollector>;
}

/// Sees every point entry of one table file, in order, and returns properties at the end.
pub trait TablePropertiesCollector: Send + fmt::Debug {
    /// One point entry: its user key, kind (value, deletion, blob reference) and value as
    /// stored. Called for every entry, so keep it cheap.
    fn add(&mut self, user_key: &[u8], kind: ValueKind, value: &[u8]);

    /// The properties to store as `user.<name>` (module invariant 1); called once, when the
    /// file is finished.
    fn finish(&mut self) -> BTreeMap<String, Vec<u8>>;
}
