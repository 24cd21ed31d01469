//! Version tracking: which table files make up each level of each keyspace, and the MANIFEST
//! that records every change (docs/format/manifest.md).
//!
//! - [`VersionEdit`] (`edit.rs`): one change, and the encoding of one MANIFEST record
//!   (`coding.rs`: varints and a bounds-checked cursor).
//! - [`Version`], [`FileMetaData`] (`levels.rs`): an immutable set of levels; readers hold an
//!   `Arc<Version>` while they read its files.
//! - `builder.rs`: applies edits to a version and enforces the level invariants (L0 newest
//!   first; deeper levels sorted and non-overlapping).
//! - `manifest.rs`: MANIFEST file names, `CURRENT` and its crash-safe switch.
//! - [`VersionSet`] (`set.rs`): the current version, the counters and the MANIFEST writer;
//!   `create`, `recover`, `log_and_apply`, keyspaces and `live_files`.

mod builder;
pub(crate) mod coding;
mod edit;
mod levels;
mod manifest;
mod set;

pub use edit::{DamagedFile, DeletedFile, NewFile, VersionEdit, MANIFEST_FORMAT_VERSION};
#[cfg(feature = "testing")]
pub use edit::{MANIFEST_MAGIC, SAFE_TO_IGNORE};
pub use levels::{FileMetaData, Version};
#[cfg(feature = "testing")]
pub(crate) use manifest::{current_contents, parse_current};
pub use manifest::{manifest_file_name, parse_manifest_file_name, CURRENT_FILE_NAME};
pub(crate) use manifest::{missing_current, read_current, start_manifest, write_current};
pub(crate) use set::{replay, write_fresh_manifest, PendingRecovery};
pub use set::{
    VersionSet, DEFAULT_KEYSPACE_ID, DEFAULT_KEYSPACE_NAME, DEFAULT_NUM_LEVELS, MAX_NUM_LEVELS,
};
#[cfg(feature = "testing")]
pub use set::{DEFAULT_MAX_MANIFEST_SIZE, MAX_KEYSPACE_NAME_LEN};
