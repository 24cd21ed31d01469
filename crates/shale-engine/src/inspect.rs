//! Read-only access to a database directory's files for inspection tools (`shale tool
//! manifest | lsm | verify | sst`), without opening the database.
//!
//! Opening a database recovers it: it writes a new MANIFEST, replays and flushes the WALs and
//! deletes obsolete files. The functions here only read, so they work beside a running
//! database (seeing the files as they were when read) and on a damaged copy. They use the
//! engine's own decoders, so a tool reports exactly what recovery would see.
//!
//! Formats: docs/format/manifest.md (`CURRENT`, MANIFEST records), docs/format/wal.md (WAL
//! records, read with [`crate::wal::LogReader`] and decoded with
//! [`crate::WriteBatch::from_wal_record`]), docs/format/options.md ([`crate::OptionsFile`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_fs::FileSystem;
use shale_sst::{Comparator, SeqNo};

use crate::error::{Error, Result};
use crate::version::{replay, MAX_NUM_LEVELS};
use crate::wal::RecoveryMode;

pub use crate::options_file::{
    options_file_name, parse_options_file_name, OptionsFile, OPTIONS_FORMAT_VERSION,
};
pub use crate::table_cache::{table_file_name, PinnedTable};
pub use crate::version::{
    manifest_file_name, parse_manifest_file_name, DamagedFile, DeletedFile, FileMetaData, NewFile,
    Version, VersionEdit, CURRENT_FILE_NAME, MANIFEST_FORMAT_VERSION,
};

/// The write-ahead log: record format, reader and writer (docs/format/wal.md).
#[path = "wal/mod.rs"]
pub mod wal;

/// Blob files: format, scanning and names (docs/format/blob.md).
#[path = "blob/mod.rs"]
pub mod blob;

pub use shale_sst::TableProperties;

/// The properties of the table file at `path` (docs/format/sst.md, "Properties block"): its
/// counts, key range and the `user.<name>` properties the engine and a keyspace's
/// [`crate::TablePropertiesCollectorFactory`] wrote. Opens the file on its own (not through a
/// database's table cache), so it works on any table file, live or not; a damaged file is an
/// error naming it.
pub fn read_table_properties(fs: &dyn FileSystem, path: &Path) -> Result<TableProperties> {
    let table = shale_sst::Table::open(fs, path, &shale_sst::TableOpenOptions::default())?;
    Ok(table.properties().clone())
}

/// The name of the lock file a database holds while it is open.
pub const LOCK_FILE_NAME: &str = "LOCK";

/// The number of a table file name (`NNNNNN.sst`), or `None` for any other name.
pub fn parse_table_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".sst")?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Reads and checks `CURRENT` in `dir` (its checksum, and that the MANIFEST it names exists):
/// the path of the live MANIFEST. A damaged `CURRENT` is [`Error::Corruption`] naming it.
pub fn live_manifest(fs: &dyn FileSystem, dir: &Path) -> Result<PathBuf> {
    let number = crate::version::read_current(fs, dir)?;
    Ok(dir.join(manifest_file_name(number)))
}

/// The state a MANIFEST describes once all its edits are applied.
#[derive(Debug)]
pub struct ManifestState {
    /// Table files per level per keyspace, with the keyspaces' names and log numbers.
    pub version: Version,
    /// The next unused file number, as last recorded.
    pub next_file_number: u64,
    /// The last sequence number in use, as last recorded.
    pub last_sequence: SeqNo,
    /// The largest keyspace id ever assigned.
    pub max_keyspace_id: u32,
}

/// Replays the MANIFEST at `path` (named `MANIFEST-NNNNNN`) as recovery does, without writing
/// anything: every record's checksum is checked and every edit applied to an empty version,
/// which enforces the level invariants (docs/format/manifest.md, "Applying an edit").
///
/// `on_edit` sees each edit with the file offset of its record, in order, before it is applied,
/// so a caller can show the edits read before a failure. `mode` judges damaged records:
/// [`RecoveryMode::TolerateCorruptedTailRecords`] reads what opening the database would, and
/// [`RecoveryMode::AbsoluteConsistency`] reports a torn tail too. Damage, an edit that breaks
/// an invariant, or a file sequence beyond the recorded last sequence is
/// [`Error::Corruption`] naming the file and record offset.
///
/// The version has [`MAX_NUM_LEVELS`] levels, so a database configured with any number of
/// levels can be read; deeper levels are empty.
pub fn read_manifest(
    fs: &dyn FileSystem,
    path: &Path,
    comparator: &Arc<dyn Comparator>,
    mode: RecoveryMode,
    on_edit: &mut dyn FnMut(u64, &VersionEdit),
) -> Result<ManifestState> {
    let number = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_manifest_file_name)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} is not named MANIFEST-NNNNNN; the name carries the log number its records \
                 are checked against",
                path.display()
            ))
        })?;
    let (version, replayed) = replay(fs, path, number, comparator, MAX_NUM_LEVELS, mode, on_edit)?;
    Ok(ManifestState {
        version,
        next_file_number: replayed.next_file_number,
        last_sequence: replayed.last_sequence,
        max_keyspace_id: replayed.max_keyspace_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::VersionSet;
    use shale_fs::MemFs;
    use shale_sst::BytewiseComparator;

    #[test]
    fn table_names_parse() {
        assert_eq!(parse_table_file_name("000012.sst"), Some(12));
        assert_eq!(parse_table_file_name("1234567.sst"), Some(1_234_567));
        for bad in ["12.sst", "000012.wal", "00001x.sst", "000012.sst.tmp"] {
            assert_eq!(parse_table_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn reads_edits_in_order_without_writing() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
        let mut set = VersionSet::create(fs.clone(), dir, comparator.clone(), 7).unwrap();
        let id = set.create_keyspace("users", 2).unwrap();
        drop(set);
        let before = fs.list(dir).unwrap();
        let manifest = live_manifest(&*fs, dir).unwrap();
        let mut offsets = Vec::new();
        let state = read_manifest(
            &*fs,
            &manifest,
            &comparator,
            RecoveryMode::AbsoluteConsistency,
            &mut |offset, edit| offsets.push((offset, edit.added_keyspaces.clone())),
        )
        .unwrap();
        assert_eq!(offsets.len(), 2, "{offsets:?}");
        assert!(offsets[0].0 < offsets[1].0);
        assert_eq!(offsets[1].1, vec![(id, "users".to_owned())]);
        assert_eq!(state.version.keyspace_id("users"), Some(id));
        assert_eq!(state.version.num_levels(), MAX_NUM_LEVELS);
        assert_eq!(fs.list(dir).unwrap(), before, "reading wrote files");
    }

    #[test]
    fn a_manifest_needs_its_name() {
        let fs = MemFs::new();
        let err = read_manifest(
            &fs,
            Path::new("/db/copy"),
            &(Arc::new(BytewiseComparator) as Arc<dyn Comparator>),
            RecoveryMode::AbsoluteConsistency,
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("MANIFEST-NNNNNN"), "{err}");
    }
}
