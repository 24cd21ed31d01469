//! [`VersionSet`]: the current [`Version`], the counters, and the MANIFEST that makes them
//! durable (docs/format/manifest.md, "Writer" and "Recovery").
//!
//! Invariants:
//! 1. `current` is what the MANIFEST records: an edit is installed only after its record was
//!    appended and synced, and an edit that fails the builder's checks writes nothing.
//! 2. After a failed MANIFEST append, sync or switch, a roll is due (`roll`): nothing is
//!    appended to that MANIFEST again (a failed sync is never retried, and a record after a
//!    torn one would be unreadable), and every writing call returns [`Error::Paused`] naming
//!    the failure until [`VersionSet::roll_manifest`] has written a new MANIFEST holding a
//!    snapshot of `current` and `CURRENT` names it durably. The failed edit is not installed:
//!    it may or may not be in the old MANIFEST, and either state is one a reopen may see until
//!    `CURRENT` moves, so the files it added stay in [`VersionSet::live_files`] until then,
//!    and neither the old MANIFEST nor one `CURRENT` may name after a failed switch is
//!    deleted before then (docs/format/manifest.md, "Rolling after a failed write").
//! 3. `next_file_number` is above every number in use: files of any version, log numbers, the
//!    MANIFEST, and (after recovery) every numbered file found in the directory.
//! 4. `old_versions` holds a `Weak` for every version that stopped being current while someone
//!    still held it, so [`VersionSet::live_files`] sees every file a reader may still open
//!    (invariant 4 of docs/architecture.md). Dead entries are pruned on each install.
//! 5. Keyspace ids are never reused: a new id is `max_keyspace_id + 1`, and the maximum is
//!    recorded in the MANIFEST.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use shale_fs::FileSystem;
use shale_sst::{Comparator, SeqNo, MAX_SEQNO};

use super::builder::{index_of, BuildError, FileIndex, VersionBuilder};
use super::edit::{VersionEdit, MANIFEST_FORMAT_VERSION, MANIFEST_MAGIC};
use super::levels::Version;
use super::manifest::{
    manifest_file_name, numbered_file, read_current, start_manifest, write_current, ManifestWriter,
    CURRENT_FILE_NAME, MAX_FILE_NUMBER,
};
use crate::error::{Error, Result};
use crate::wal::{LogReader, RecoveryMode};

/// The number of levels of a keyspace unless configured otherwise.
pub const DEFAULT_NUM_LEVELS: usize = 7;

/// The most levels a database may be opened with.
pub const MAX_NUM_LEVELS: usize = 64;

/// The MANIFEST size after which the next edit starts a new MANIFEST.
pub const DEFAULT_MAX_MANIFEST_SIZE: u64 = 64 << 20;

/// The id of the default keyspace, which every database has and which cannot be dropped.
pub const DEFAULT_KEYSPACE_ID: u32 = 0;

/// The name of the default keyspace.
pub const DEFAULT_KEYSPACE_NAME: &str = "default";

/// The longest keyspace name, in bytes.
pub const MAX_KEYSPACE_NAME_LEN: usize = 255;

/// The database's shape and its history: the current [`Version`], the versions readers still
/// hold, the file-number and sequence counters, the keyspaces, and the MANIFEST they are
/// logged to.
///
/// Single-threaded (`&mut self`); the database wraps it in its own mutex.
pub struct VersionSet {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    comparator: Arc<dyn Comparator>,
    num_levels: usize,
    max_manifest_size: u64,
    current: Arc<Version>,
    /// Where every file of `current` is, so an edit costs what it touches.
    index: FileIndex,
    old_versions: Vec<Weak<Version>>,
    next_file_number: u64,
    last_sequence: SeqNo,
    max_keyspace_id: u32,
    /// `None` in a read-only set ([`VersionSet::open_read_only`]): every writing call fails.
    manifest: Option<ManifestWriter>,
    /// The MANIFEST `CURRENT` named when this set was recovered or last switched.
    manifest_number: u64,
    /// Set after a failed MANIFEST write: the MANIFEST must be rolled (invariant 2).
    roll: Option<PendingRoll>,
}

/// What a MANIFEST roll due after a failed write must keep until `CURRENT` names the new one
/// durably (invariant 2).
#[derive(Debug, Default)]
struct PendingRoll {
    /// The latest failure (of the edit, or of a roll since).
    reason: String,
    /// Table and blob files added by edits that failed: a MANIFEST a reopen may still read
    /// can name them.
    in_doubt_files: BTreeSet<u64>,
    /// MANIFESTs written by a switch that failed at `CURRENT`: the rename may have happened,
    /// so `CURRENT` may name one of them.
    in_doubt_manifests: Vec<u64>,
}

impl fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VersionSet")
            .field("dir", &self.dir)
            .field("comparator", &self.comparator.name())
            .field("num_levels", &self.num_levels)
            .field("manifest", &self.manifest.as_ref().map(|m| &m.path))
            .field("next_file_number", &self.next_file_number)
            .field("last_sequence", &self.last_sequence)
            .field("max_keyspace_id", &self.max_keyspace_id)
            .field("files", &self.current.total_files())
            .field("roll", &self.roll)
            .finish_non_exhaustive()
    }
}

fn read_only_error() -> Error {
    Error::ReadOnly("changing the MANIFEST".to_owned())
}

fn check_num_levels(num_levels: usize) -> Result<()> {
    if (1..=MAX_NUM_LEVELS).contains(&num_levels) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "num_levels must be 1 to {MAX_NUM_LEVELS}, not {num_levels}"
        )))
    }
}

/// The first record of a MANIFEST: the whole state (docs/format/manifest.md, "Record 0").
fn snapshot_edit(
    version: &Version,
    comparator: &str,
    next_file_number: u64,
    last_sequence: SeqNo,
    max_keyspace_id: u32,
) -> VersionEdit {
    let mut edit = VersionEdit {
        manifest_format_version: Some(MANIFEST_FORMAT_VERSION),
        comparator: Some(comparator.to_owned()),
        next_file_number: Some(next_file_number),
        last_sequence: Some(last_sequence),
        max_keyspace_id: Some(max_keyspace_id),
        ..VersionEdit::default()
    };
    for (id, keyspace) in version.keyspace_map() {
        edit.added_keyspaces.push((*id, keyspace.name.clone()));
        edit.log_numbers.push((*id, keyspace.log_number));
    }
    for (keyspace, level, meta) in version.all_files() {
        edit.add_file(keyspace, level as u32, (**meta).clone());
    }
    for (log_number, end) in version.wal_ends() {
        edit.set_wal_end(*log_number, *end);
    }
    edit.wals_tracked = version.wals_tracked();
    for (log_number, size) in version.wal_synced_sizes() {
        edit.set_wal_synced(*log_number, *size);
    }
    for blob in version.blob_files().values() {
        edit.add_blob_file(blob);
    }
    edit.damaged_files = version.damaged_files().values().cloned().collect();
    edit
}

/// What replay has gathered besides the version.
pub(crate) struct Replayed {
    pub next_file_number: u64,
    pub last_sequence: SeqNo,
    pub max_keyspace_id: u32,
    /// Where the MANIFEST's last record replayed ends: a tail after it was dropped as torn.
    pub valid_end: u64,
}

/// A MANIFEST read for recovery, nothing written yet ([`PendingRecovery::read`]); the open
/// checks the rest of the directory (the WALs) against it, and only then
/// [`PendingRecovery::start`]s the new MANIFEST, so that an open refused for damage changes
/// nothing on disk.
pub(crate) struct PendingRecovery {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    comparator: Arc<dyn Comparator>,
    num_levels: usize,
    old_number: u64,
    version: Arc<Version>,
    replayed: Replayed,
}

impl PendingRecovery {
    /// Replays the MANIFEST `CURRENT` names (tolerating a torn last record) and runs `check`
    /// on the state; writes nothing.
    pub(crate) fn read(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        num_levels: usize,
        check: RecoveryCheck<'_>,
    ) -> Result<Self> {
        check_num_levels(num_levels)?;
        let old_number = read_current(&*fs, dir)?;
        let old_path = dir.join(manifest_file_name(old_number));
        let (version, replayed) = replay(
            &*fs,
            &old_path,
            old_number,
            &comparator,
            num_levels,
            RecoveryMode::TolerateCorruptedTailRecords,
            &mut |_, _| {},
        )?;
        check(&version, &old_path, replayed.valid_end)?;
        Ok(PendingRecovery {
            fs,
            dir: dir.to_path_buf(),
            comparator,
            num_levels,
            old_number,
            version: Arc::new(version),
            replayed,
        })
    }

    /// The recovered state.
    pub(crate) fn version(&self) -> &Arc<Version> {
        &self.version
    }

    /// Writes a new MANIFEST holding the recovered state, points `CURRENT` at it and removes
    /// the old one: the [`VersionSet`] to run with.
    pub(crate) fn start(self) -> Result<VersionSet> {
        let PendingRecovery {
            fs,
            dir,
            comparator,
            num_levels,
            old_number,
            version,
            replayed,
        } = self;
        let old_path = dir.join(manifest_file_name(old_number));
        // Invariant 3: above every number in use, including files created after the last edit.
        let mut next_file_number = replayed.next_file_number.max(old_number + 1);
        for (_, _, meta) in version.all_files() {
            next_file_number = next_file_number.max(meta.number + 1);
        }
        for keyspace in version.keyspace_map().values() {
            next_file_number = next_file_number.max(keyspace.log_number + 1);
        }
        for name in fs.list(&dir)? {
            if let Some(number) = numbered_file(&name) {
                next_file_number = next_file_number.max(number.saturating_add(1));
            }
        }

        let manifest_number = next_file_number;
        next_file_number += 1;
        let snapshot = snapshot_edit(
            &version,
            comparator.name(),
            next_file_number,
            replayed.last_sequence,
            replayed.max_keyspace_id,
        );
        let manifest = start_manifest(&*fs, &dir, manifest_number, &snapshot.encode(), None)?;
        write_current(&*fs, &dir, manifest_number)?;
        // Best effort: CURRENT no longer names it, so a leftover is only a wasted file that
        // the database's sweep of obsolete files removes.
        let _ = fs.remove(&old_path);
        Ok(VersionSet {
            fs,
            dir,
            comparator,
            num_levels,
            max_manifest_size: DEFAULT_MAX_MANIFEST_SIZE,
            index: index_of(&version),
            current: version,
            old_versions: Vec::new(),
            next_file_number,
            last_sequence: replayed.last_sequence,
            max_keyspace_id: replayed.max_keyspace_id,
            manifest: Some(manifest),
            manifest_number,
            roll: None,
        })
    }
}

/// A check of a recovered state against the rest of the directory, run before recovery
/// writes anything: the recovered Version, the MANIFEST it came from, and where that
/// MANIFEST's replayed records end.
pub(crate) type RecoveryCheck<'a> = &'a dyn Fn(&Version, &Path, u64) -> Result<()>;

impl VersionSet {
    /// Creates a new database in `dir` (creating the directory): `MANIFEST-000001` holding the
    /// default keyspace (id 0, `"default"`), then `CURRENT` naming it. Fails with
    /// `InvalidArgument` if `CURRENT` already exists.
    #[cfg(any(test, feature = "testing"))]
    pub fn create(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        num_levels: usize,
    ) -> Result<Self> {
        Self::create_with_wal(fs, dir, comparator, num_levels, None)
    }

    /// [`Self::create`] for a database whose first WAL will be `first_wal` (2: the first
    /// number after the MANIFEST's): the snapshot names it as the default keyspace's log
    /// number and sets `WALS_TRACKED`, so even the first edits of the database are covered by
    /// the recovery check of a missing WAL (docs/format/manifest.md).
    pub(crate) fn create_with_wal(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        num_levels: usize,
        first_wal: Option<u64>,
    ) -> Result<Self> {
        check_num_levels(num_levels)?;
        fs.create_dir_all(dir)?;
        if Self::exists(&*fs, dir)? {
            return Err(Error::InvalidArgument(format!(
                "a database already exists in {} ({CURRENT_FILE_NAME} is there)",
                dir.display()
            )));
        }
        let mut builder = VersionBuilder::new(comparator.clone(), num_levels);
        let manifest_number = 1;
        let mut initial = VersionEdit::new();
        initial
            .added_keyspaces
            .push((DEFAULT_KEYSPACE_ID, DEFAULT_KEYSPACE_NAME.to_owned()));
        if let Some(wal) = first_wal {
            if wal <= manifest_number || wal > MAX_FILE_NUMBER {
                return Err(Error::InvalidArgument(format!(
                    "the first WAL number must be above the MANIFEST's ({manifest_number}), \
                     not {wal}"
                )));
            }
            initial.set_log_number(DEFAULT_KEYSPACE_ID, wal);
            initial.wals_tracked = true;
        }
        builder
            .apply(&initial, 0)
            .map_err(|e| Error::InvalidArgument(e.detail))?;
        let version = builder
            .build()
            .map_err(|e| Error::InvalidArgument(e.detail))?
            .version;
        let next_file_number = first_wal.unwrap_or(manifest_number) + 1;
        let snapshot = snapshot_edit(
            &version,
            comparator.name(),
            next_file_number,
            0,
            DEFAULT_KEYSPACE_ID,
        );
        let manifest = start_manifest(&*fs, dir, manifest_number, &snapshot.encode(), None)?;
        write_current(&*fs, dir, manifest_number)?;
        Ok(VersionSet {
            fs,
            dir: dir.to_path_buf(),
            comparator,
            num_levels,
            max_manifest_size: DEFAULT_MAX_MANIFEST_SIZE,
            index: index_of(&version),
            current: Arc::new(version),
            old_versions: Vec::new(),
            next_file_number,
            last_sequence: 0,
            max_keyspace_id: DEFAULT_KEYSPACE_ID,
            manifest: Some(manifest),
            manifest_number,
            roll: None,
        })
    }

    /// Whether `dir` holds a database (its `CURRENT` exists).
    pub fn exists(fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
        Ok(fs.exists(&dir.join(CURRENT_FILE_NAME))?)
    }

    /// Opens the database in `dir`: reads `CURRENT`, replays every edit of the MANIFEST it
    /// names (a torn last record is dropped; any other damage is `Corruption` naming the file
    /// and record offset), refuses another comparator with `InvalidArgument`, then starts a
    /// new MANIFEST holding a snapshot of the recovered state, switches `CURRENT` to it and
    /// removes the old one (docs/format/manifest.md, "Recovery").
    #[cfg(any(test, feature = "testing"))]
    pub fn recover(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        num_levels: usize,
    ) -> Result<Self> {
        Self::recover_checked(fs, dir, comparator, num_levels, &|_, _, _| Ok(()))
    }

    /// [`Self::recover`], running `check` on the recovered state before anything is written:
    /// an error leaves the old MANIFEST and `CURRENT` as they were.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn recover_checked(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        num_levels: usize,
        check: RecoveryCheck<'_>,
    ) -> Result<Self> {
        PendingRecovery::read(fs, dir, comparator, num_levels, check)?.start()
    }

    /// Reads the MANIFEST `CURRENT` names without writing anything (a read-only open, maybe
    /// while a writer appends to it: a torn last record is where its history ends). The set
    /// it returns refuses every edit with [`Error::ReadOnly`]. `check` runs on the state read.
    pub(crate) fn open_read_only(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        comparator: Arc<dyn Comparator>,
        num_levels: usize,
        check: RecoveryCheck<'_>,
    ) -> Result<Self> {
        check_num_levels(num_levels)?;
        let manifest_number = read_current(&*fs, dir)?;
        let path = dir.join(manifest_file_name(manifest_number));
        let (version, replayed) = replay(
            &*fs,
            &path,
            manifest_number,
            &comparator,
            num_levels,
            RecoveryMode::TolerateCorruptedTailRecords,
            &mut |_, _| {},
        )?;
        check(&version, &path, replayed.valid_end)?;
        Ok(VersionSet {
            fs,
            dir: dir.to_path_buf(),
            comparator,
            num_levels,
            max_manifest_size: DEFAULT_MAX_MANIFEST_SIZE,
            index: index_of(&version),
            current: Arc::new(version),
            old_versions: Vec::new(),
            // Numbers for in-memory memtables only; nothing is ever created under them.
            next_file_number: replayed.next_file_number.max(manifest_number + 1),
            last_sequence: replayed.last_sequence,
            max_keyspace_id: replayed.max_keyspace_id,
            manifest: None,
            manifest_number,
            roll: None,
        })
    }

    /// The current version. Holding it keeps its files from being deleted.
    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    /// Applies `edit`: checks it against the current version (an invalid edit is
    /// `InvalidArgument` and changes nothing), fills in the next file number (after marking
    /// the edit's file and log numbers used), the last sequence and, when it adds keyspaces,
    /// the max keyspace id (overwriting what the caller set), appends it to the MANIFEST (first
    /// switching to a new MANIFEST if this one is too large), syncs, and installs the new
    /// version. Returns only once the edit is durable.
    ///
    /// If writing fails the error is returned, the edit is not installed, and a roll is due
    /// (invariant 2): every later writing call returns `Paused` naming this error until
    /// [`Self::roll_manifest`] succeeds.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<()> {
        self.check_healthy()?;
        if edit.manifest_format_version.is_some() || edit.comparator.is_some() {
            return Err(Error::InvalidArgument(
                "an edit may not carry MANIFEST_HEADER or COMPARATOR: the version set writes \
                 them into each MANIFEST's first record"
                    .to_owned(),
            ));
        }
        let mut max_keyspace_id = self.max_keyspace_id;
        for (id, name) in &edit.added_keyspaces {
            if *id <= self.max_keyspace_id {
                return Err(Error::InvalidArgument(format!(
                    "cannot add keyspace {id} ({name:?}): ids up to {} were assigned before and \
                     are never reused",
                    self.max_keyspace_id
                )));
            }
            check_keyspace_name(name)?;
            max_keyspace_id = max_keyspace_id.max(*id);
        }
        for f in &edit.new_files {
            if f.meta.largest_seqno > self.last_sequence {
                return Err(Error::InvalidArgument(format!(
                    "file {:06} holds seqno {} but the last sequence is {}: publish the \
                     sequence (set_last_sequence) before adding the file",
                    f.meta.number, f.meta.largest_seqno, self.last_sequence
                )));
            }
        }
        let mut builder = VersionBuilder::from_version(&self.current, &self.index);
        builder
            .apply(&edit, 0)
            .map_err(|e| Error::InvalidArgument(e.detail))?;
        let built = builder
            .build()
            .map_err(|e| Error::InvalidArgument(e.detail))?;

        for f in &edit.new_files {
            self.mark_file_number_used(f.meta.number);
        }
        for b in &edit.blob_file_additions {
            self.mark_file_number_used(b.number);
        }
        for (_, log_number) in &edit.log_numbers {
            self.mark_file_number_used(*log_number);
        }
        let roll_over = self.should_roll_over();
        let new_manifest = roll_over.then(|| self.new_file_number());
        edit.next_file_number = Some(self.next_file_number);
        edit.last_sequence = Some(self.last_sequence);
        edit.max_keyspace_id = (!edit.added_keyspaces.is_empty()).then_some(max_keyspace_id);
        let record = edit.encode();

        let written = match new_manifest {
            Some(number) => self.switch_manifest(number, Some(&record)),
            None => match self.manifest.as_mut() {
                Some(manifest) => manifest
                    .log
                    .add_record(&record)
                    .and_then(|_| manifest.log.sync()),
                None => Err(read_only_error()),
            },
        };
        if let Err(e) = written {
            let roll = self.roll.get_or_insert_with(PendingRoll::default);
            roll.reason = e.to_string();
            let added = edit.new_files.iter().map(|f| f.meta.number);
            let blobs = edit.blob_file_additions.iter().map(|b| b.number);
            roll.in_doubt_files.extend(added.chain(blobs));
            // The ids stay used: the failed edit may be on disk (invariant 5).
            self.max_keyspace_id = max_keyspace_id;
            return Err(e);
        }
        self.max_keyspace_id = max_keyspace_id;
        built.update_index(&mut self.index);
        self.install(built.version);
        Ok(())
    }

    fn should_roll_over(&self) -> bool {
        let Some(manifest) = &self.manifest else {
            return false;
        };
        let size = manifest.log.file_size();
        size > self.max_manifest_size && size > manifest.snapshot_end.saturating_mul(2)
    }

    /// Starts MANIFEST `number` with a snapshot of the current state followed by `record`,
    /// points `CURRENT` at it and removes the previous one (and those a failed switch left).
    ///
    /// A failure before `CURRENT` is touched removes the new file (nothing names it); one at
    /// `CURRENT` keeps it: the rename may have happened, so `CURRENT` may name it now.
    fn switch_manifest(&mut self, number: u64, record: Option<&[u8]>) -> Result<()> {
        let snapshot = snapshot_edit(
            &self.current,
            self.comparator.name(),
            self.next_file_number,
            self.last_sequence,
            self.max_keyspace_id,
        );
        let new_path = self.dir.join(manifest_file_name(number));
        let manifest =
            match start_manifest(&*self.fs, &self.dir, number, &snapshot.encode(), record) {
                Ok(manifest) => manifest,
                Err(e) => {
                    // Best effort: a leftover is above the live number, so not swept; a
                    // reopen's sweep removes it.
                    let _ = self.fs.remove(&new_path);
                    return Err(e);
                }
            };
        if let Err(e) = write_current(&*self.fs, &self.dir, number) {
            self.roll
                .get_or_insert_with(PendingRoll::default)
                .in_doubt_manifests
                .push(number);
            return Err(e);
        }
        self.manifest_number = number;
        if let Some(old) = self.manifest.replace(manifest) {
            let old_path = old.path.clone();
            drop(old);
            // Best effort, as in `recover`.
            let _ = self.fs.remove(&old_path);
        }
        if let Some(roll) = &mut self.roll {
            for abandoned in roll.in_doubt_manifests.drain(..) {
                let _ = self
                    .fs
                    .remove(&self.dir.join(manifest_file_name(abandoned)));
            }
        }
        Ok(())
    }

    /// Whether a MANIFEST write failed and [`Self::roll_manifest`] has not succeeded since
    /// (invariant 2).
    pub fn needs_roll(&self) -> bool {
        self.roll.is_some()
    }

    /// After a failed MANIFEST write (invariant 2): writes a new MANIFEST holding a snapshot of
    /// the current version, syncs it, points `CURRENT` at it (rename, directory sync) and
    /// removes the old one; then edits are accepted again. Does nothing when no roll is due.
    /// A failure leaves the roll due, with its reason, for the next attempt.
    pub fn roll_manifest(&mut self) -> Result<()> {
        if self.roll.is_none() {
            return Ok(());
        }
        if self.manifest.is_none() {
            return Err(read_only_error());
        }
        let number = self.new_file_number();
        if let Err(e) = self.switch_manifest(number, None) {
            if let Some(roll) = &mut self.roll {
                roll.reason = format!("writing a new MANIFEST ({number}) failed: {e}");
            }
            return Err(e);
        }
        // `CURRENT` names a MANIFEST without the failed edits: their files are free to go.
        self.roll = None;
        Ok(())
    }

    fn install(&mut self, version: Version) {
        let old = std::mem::replace(&mut self.current, Arc::new(version));
        self.old_versions.retain(|v| v.strong_count() > 0);
        // Nobody else holds it: nobody can obtain it any more either.
        if Arc::strong_count(&old) > 1 {
            self.old_versions.push(Arc::downgrade(&old));
        }
    }

    fn check_healthy(&self) -> Result<()> {
        if self.manifest.is_none() {
            return Err(read_only_error());
        }
        match &self.roll {
            None => Ok(()),
            Some(roll) => Err(Error::Paused {
                reason: format!(
                    "a MANIFEST write failed and no new MANIFEST is written yet: {}",
                    roll.reason
                ),
            }),
        }
    }

    /// The latest failure of a MANIFEST write while a roll is due.
    #[cfg(any(test, feature = "testing"))]
    pub fn failed_reason(&self) -> Option<&str> {
        self.roll.as_ref().map(|r| r.reason.as_str())
    }

    /// [`Self::failed_reason`], owned, for the database's pause.
    pub(crate) fn failed_reason_text(&self) -> Option<String> {
        self.roll.as_ref().map(|r| r.reason.clone())
    }

    /// Allocates a file number (for a WAL, table, MANIFEST or OPTIONS file).
    pub fn new_file_number(&mut self) -> u64 {
        let number = self.next_file_number;
        self.next_file_number += 1;
        number
    }

    /// The number [`Self::new_file_number`] will return next.
    #[cfg(any(test, feature = "testing"))]
    pub fn next_file_number(&self) -> u64 {
        self.next_file_number
    }

    /// Makes sure `number` is never allocated again.
    pub fn mark_file_number_used(&mut self, number: u64) {
        self.next_file_number = self.next_file_number.max(number.saturating_add(1));
    }

    /// The last sequence number in use (published by the database).
    pub fn last_sequence(&self) -> SeqNo {
        self.last_sequence
    }

    /// Publishes `seqno` as the last sequence number in use. It never goes back.
    pub fn set_last_sequence(&mut self, seqno: SeqNo) {
        debug_assert!(
            seqno >= self.last_sequence,
            "last sequence would go back from {} to {seqno}",
            self.last_sequence
        );
        debug_assert!(seqno <= MAX_SEQNO, "seqno {seqno} exceeds 56 bits");
        self.last_sequence = self.last_sequence.max(seqno.min(MAX_SEQNO));
    }

    /// The log number of `keyspace`: its writes in WAL files numbered below it are in tables.
    pub fn log_number(&self, keyspace: u32) -> Option<u64> {
        self.current.log_number(keyspace)
    }

    /// The smallest log number of any keyspace: WAL files numbered below it hold nothing any
    /// keyspace needs and may be deleted. The database must advance the log number of a
    /// keyspace whose memtable is empty when it switches WALs, or that keyspace keeps every
    /// WAL alive.
    pub fn min_log_number_to_keep(&self) -> u64 {
        self.current
            .keyspace_map()
            .values()
            .map(|k| k.log_number)
            .min()
            .unwrap_or(0)
    }

    /// Creates a keyspace named `name` through an edit and returns its new id (never an id
    /// used before). `log_number` is the WAL the database is writing: no WAL below it can hold
    /// writes of a keyspace that did not exist, so it becomes the keyspace's log number.
    /// `InvalidArgument` for a name that is empty, longer than 255 bytes, holds control
    /// characters, or is taken.
    pub fn create_keyspace(&mut self, name: &str, log_number: u64) -> Result<u32> {
        self.check_healthy()?;
        check_keyspace_name(name)?;
        if let Some(id) = self.keyspace_id(name) {
            return Err(Error::InvalidArgument(format!(
                "a keyspace named {name:?} exists (id {id})"
            )));
        }
        let id = self
            .max_keyspace_id
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("every keyspace id has been used".to_owned()))?;
        let mut edit = VersionEdit::new();
        edit.added_keyspaces.push((id, name.to_owned()));
        edit.set_log_number(id, log_number);
        self.log_and_apply(edit)?;
        Ok(id)
    }

    /// Drops keyspace `id` and all its files through an edit. The files stay on disk while an
    /// older version holding them is alive ([`Self::live_files`]).
    pub fn drop_keyspace(&mut self, id: u32) -> Result<()> {
        self.check_healthy()?;
        if id == DEFAULT_KEYSPACE_ID {
            return Err(Error::InvalidArgument(
                "the default keyspace cannot be dropped".to_owned(),
            ));
        }
        if !self.current.has_keyspace(id) {
            return Err(Error::InvalidArgument(format!(
                "keyspace {id} does not exist"
            )));
        }
        let mut edit = VersionEdit::new();
        edit.dropped_keyspaces.push(id);
        self.log_and_apply(edit)
    }

    /// The id of the live keyspace named `name`.
    pub fn keyspace_id(&self, name: &str) -> Option<u32> {
        self.current.keyspace_id(name)
    }

    /// The live keyspaces as (id, name), by id.
    #[cfg(any(test, feature = "testing"))]
    pub fn keyspaces(&self) -> Vec<(u32, String)> {
        self.current.keyspaces()
    }

    /// The largest keyspace id ever assigned.
    #[cfg(any(test, feature = "testing"))]
    pub fn max_keyspace_id(&self) -> u32 {
        self.max_keyspace_id
    }

    /// The numbers of the table and blob files referenced by the current version, by any
    /// older version someone still holds, or by a failed edit while a roll is due (invariant
    /// 2). A file not in this set (and not being written by a
    /// running flush or compaction) may be deleted.
    pub fn live_files(&self) -> BTreeSet<u64> {
        let mut live = BTreeSet::new();
        let mut add = |version: &Version| {
            live.extend(version.all_files().map(|(_, _, f)| f.number));
            live.extend(version.blob_files().keys().copied());
        };
        add(&self.current);
        for old in &self.old_versions {
            if let Some(version) = old.upgrade() {
                add(&version);
            }
        }
        if let Some(roll) = &self.roll {
            live.extend(roll.in_doubt_files.iter().copied());
        }
        live
    }

    /// The number of the live MANIFEST (the one `CURRENT` names). Every other `MANIFEST-*` in
    /// the directory is obsolete.
    pub fn manifest_file_number(&self) -> u64 {
        self.manifest_number
    }

    /// The first record of a new MANIFEST describing `version` with the current counters
    /// (a checkpoint's MANIFEST).
    pub(crate) fn snapshot_record(&self, version: &Version) -> Vec<u8> {
        snapshot_edit(
            version,
            self.comparator.name(),
            self.next_file_number,
            self.last_sequence,
            self.max_keyspace_id,
        )
        .encode()
    }

    /// [`Self::snapshot_record`] for a copy whose WALs hold only `lengths` (log number,
    /// bytes copied): a recorded synced size above a copied length is lowered to it, so the
    /// copy does not claim data it never got (docs/format/manifest.md, `WAL_SYNCED`).
    pub(crate) fn snapshot_record_for_copy(
        &self,
        version: &Version,
        lengths: &[(u64, u64)],
    ) -> Vec<u8> {
        let mut edit = snapshot_edit(
            version,
            self.comparator.name(),
            self.next_file_number,
            self.last_sequence,
            self.max_keyspace_id,
        );
        for (number, synced) in &mut edit.wal_synced {
            let copied = lengths
                .iter()
                .find(|(n, _)| n == number)
                .map_or(0, |(_, len)| *len);
            *synced = (*synced).min(copied);
        }
        edit.encode()
    }

    /// Bytes written to the live MANIFEST so far.
    #[cfg(any(test, feature = "testing"))]
    pub fn manifest_size(&self) -> u64 {
        self.manifest.as_ref().map_or(0, |m| m.log.file_size())
    }

    /// Sets the size after which the next edit starts a new MANIFEST (default 64 MiB). A new
    /// MANIFEST is started only when the current one is also more than twice its snapshot.
    #[cfg(any(test, feature = "testing"))]
    pub fn set_max_manifest_size(&mut self, bytes: u64) {
        self.max_manifest_size = bytes;
    }

    /// The user comparator.
    #[cfg(any(test, feature = "testing"))]
    pub fn comparator(&self) -> &Arc<dyn Comparator> {
        &self.comparator
    }

    /// The number of levels of every keyspace.
    pub fn num_levels(&self) -> usize {
        self.num_levels
    }

    /// The database directory.
    #[cfg(any(test, feature = "testing"))]
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn check_keyspace_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_KEYSPACE_NAME_LEN || name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "keyspace name {name:?} must be 1 to {MAX_KEYSPACE_NAME_LEN} bytes without control \
             characters"
        )));
    }
    Ok(())
}

fn replay_error(path: &Path, e: BuildError) -> Error {
    if e.too_few_levels {
        Error::InvalidArgument(format!("{}: {}", path.display(), e.detail))
    } else {
        Error::Corruption {
            file: path.to_path_buf(),
            offset: e.origin,
            detail: e.detail,
        }
    }
}

/// What is wrong with the counters of `edit`, replayed after records that left the last
/// sequence at `last_sequence`:
/// - a file number above [`MAX_FILE_NUMBER`]: recovery derives new numbers from these by
///   adding to them, which must not overflow;
/// - a `LAST_SEQUENCE` below `last_sequence`: the engine never lowers it, and a lower one would
///   leave files of earlier records above the recovered last sequence, which the next
///   recovery refuses.
fn bad_counter(edit: &VersionEdit, last_sequence: SeqNo) -> Option<String> {
    if let Some(n) = edit.last_sequence.filter(|&n| n < last_sequence) {
        return Some(format!(
            "LAST_SEQUENCE {n} is below {last_sequence} set by an earlier record; the last \
             sequence never decreases"
        ));
    }
    let numbers = edit
        .next_file_number
        .map(|n| ("NEXT_FILE_NUMBER", n))
        .into_iter()
        .chain(
            edit.new_files
                .iter()
                .map(|f| ("NEW_FILE number", f.meta.number)),
        )
        .chain(
            edit.blob_file_additions
                .iter()
                .map(|b| ("BLOB_FILE_ADDITION number", b.number)),
        )
        .chain(edit.log_numbers.iter().map(|&(_, n)| ("LOG_NUMBER", n)));
    for (what, number) in numbers {
        if number > MAX_FILE_NUMBER {
            return Some(format!(
                "{what} {number} exceeds the largest file number {MAX_FILE_NUMBER}"
            ));
        }
    }
    None
}

/// Checks the raw bytes of record 0 before decoding: a `MANIFEST_HEADER` field (tag 1, 12 bytes)
/// with the magic, and a version this build reads.
fn check_manifest_header(record: &[u8], path: &Path, offset: u64) -> Result<()> {
    let corruption = |detail: String| Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail,
    };
    let (Some(&[1, 12]), Some(magic), Some(version)) =
        (record.get(..2), record.get(2..10), record.get(10..14))
    else {
        return Err(corruption(
            "the first record does not start with a MANIFEST_HEADER field: not a Shale \
             MANIFEST (a write-ahead log?)"
                .to_owned(),
        ));
    };
    if magic != MANIFEST_MAGIC {
        return Err(corruption(format!(
            "the manifest magic is {}, not {}: not a Shale MANIFEST",
            shale_sst::printable(magic),
            shale_sst::printable(MANIFEST_MAGIC)
        )));
    }
    let version = u32::from_le_bytes([version[0], version[1], version[2], version[3]]);
    if version > MANIFEST_FORMAT_VERSION {
        return Err(Error::NotSupported(format!(
            "{} is manifest format version {version}, written by a newer Shale; this build \
             reads versions up to {MANIFEST_FORMAT_VERSION}",
            path.display()
        )));
    }
    if version == 0 {
        return Err(corruption(
            "manifest format version 0 is invalid".to_owned(),
        ));
    }
    Ok(())
}

/// Reads MANIFEST `number` at `path` and replays it (docs/format/manifest.md, "Recovery",
/// steps 2 to 4), judging damaged records by `mode` (recovery tolerates a torn tail) and
/// handing each decoded edit with its record offset to `on_edit` before applying it.
pub(crate) fn replay(
    fs: &dyn FileSystem,
    path: &Path,
    number: u64,
    comparator: &Arc<dyn Comparator>,
    num_levels: usize,
    mode: RecoveryMode,
    on_edit: &mut dyn FnMut(u64, &VersionEdit),
) -> Result<(Version, Replayed)> {
    let file = fs.open_read(path)?;
    let mut reader = LogReader::new(file, number, mode)?;
    let mut builder = VersionBuilder::new(comparator.clone(), num_levels);
    let mut replayed = Replayed {
        next_file_number: 0,
        last_sequence: 0,
        max_keyspace_id: 0,
        valid_end: 0,
    };
    let mut records = 0u64;
    let corruption = |offset: u64, detail: String| Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail,
    };
    while let Some((record, offset)) = reader.read_record()? {
        if records == 0 {
            check_manifest_header(&record, path, offset)?;
        }
        let edit = VersionEdit::decode_record(&record, path, offset)?;
        on_edit(offset, &edit);
        if records == 0 {
            let name = edit.comparator.as_deref().ok_or_else(|| {
                corruption(offset, "the first record has no COMPARATOR".to_owned())
            })?;
            if name != comparator.name() {
                return Err(Error::InvalidArgument(format!(
                    "{} was written with comparator {name:?}, but the database is opened with \
                     {:?}; open it with the comparator it was created with",
                    path.display(),
                    comparator.name()
                )));
            }
            if edit.next_file_number.is_none() || edit.last_sequence.is_none() {
                return Err(corruption(
                    offset,
                    "the first record lacks NEXT_FILE_NUMBER or LAST_SEQUENCE: not a snapshot"
                        .to_owned(),
                ));
            }
        } else if edit.manifest_format_version.is_some() || edit.comparator.is_some() {
            return Err(corruption(
                offset,
                "MANIFEST_HEADER or COMPARATOR in a record other than the first".to_owned(),
            ));
        }
        if let Some(detail) = bad_counter(&edit, replayed.last_sequence) {
            return Err(corruption(offset, detail));
        }
        builder
            .apply(&edit, offset)
            .map_err(|e| replay_error(path, e))?;
        if let Some(n) = edit.next_file_number {
            replayed.next_file_number = n;
        }
        if let Some(n) = edit.last_sequence {
            replayed.last_sequence = n;
        }
        let added = edit.added_keyspaces.iter().map(|(id, _)| *id);
        replayed.max_keyspace_id = added
            .chain(edit.max_keyspace_id)
            .fold(replayed.max_keyspace_id, u32::max);
        if let Some(f) = edit
            .new_files
            .iter()
            .find(|f| f.meta.largest_seqno > replayed.last_sequence)
        {
            return Err(corruption(
                offset,
                format!(
                    "file {:06} holds seqno {} beyond the last sequence {}",
                    f.meta.number, f.meta.largest_seqno, replayed.last_sequence
                ),
            ));
        }
        records += 1;
        replayed.valid_end = reader.last_record_end();
    }
    if records == 0 {
        return Err(corruption(
            0,
            "the MANIFEST holds no complete record (a MANIFEST is synced with its snapshot \
             before CURRENT names it)"
                .to_owned(),
        ));
    }
    let version = builder.build().map_err(|e| replay_error(path, e))?.version;
    if !version.has_keyspace(DEFAULT_KEYSPACE_ID) {
        return Err(corruption(
            0,
            "the default keyspace (id 0) is missing".to_owned(),
        ));
    }
    Ok((version, replayed))
}

/// Writes `snapshot`, a complete first record describing a whole database, as MANIFEST
/// `number` in `dir`, synced, without touching `CURRENT` (repair, which rebuilds the state
/// from the files themselves, writes it in a staging directory and publishes it by rename).
/// The snapshot is first applied to an empty version, which refuses one that breaks a level
/// invariant (`levels.rs`), so an invalid MANIFEST is never written.
pub(crate) fn write_fresh_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    comparator: &Arc<dyn Comparator>,
    num_levels: usize,
    number: u64,
    snapshot: &VersionEdit,
) -> Result<()> {
    let invalid = |e: BuildError| {
        Error::InvalidArgument(format!(
            "the rebuilt MANIFEST for {} would be invalid: {}",
            dir.display(),
            e.detail
        ))
    };
    let mut builder = VersionBuilder::new(comparator.clone(), num_levels);
    builder.apply(snapshot, 0).map_err(invalid)?;
    builder.build().map_err(invalid)?;
    drop(start_manifest(fs, dir, number, &snapshot.encode(), None)?);
    Ok(())
}
