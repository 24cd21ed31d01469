//! Opening a database read-only ([`crate::Db::open_read_only`]), maybe while a writer in
//! another process (or this one) keeps writing, flushing and compacting.
//!
//! The open reads what a recovery reads (`crate::recovery`) but writes nothing: no LOCK, no
//! new WAL or MANIFEST, no `WAL_END` edit, no OPTIONS file, no deletion. The replayed WAL
//! writes stay in memory as frozen memtables that are never flushed, and every table of the
//! Version is opened at once and kept open, so the view stays readable when the writer deletes
//! those files later (an open handle keeps a deleted file's bytes on POSIX file systems).
//!
//! Invariants:
//! 1. No WAL the view needs is skipped silently. The writer deletes a WAL only after an edit
//!    in the MANIFEST made it obsolete (a flush moved every keyspace's log number past it).
//!    So the WALs are taken from a listing made after the MANIFEST was read, and the open
//!    then looks whether the writer logged an edit since it started reading (`CURRENT` names
//!    another MANIFEST, or the MANIFEST changed size). If it did, the latest MANIFEST is read
//!    again: when its oldest needed WAL is past the view's, a WAL the view needs may be gone
//!    from the listing, and the open starts over (invariant 2). A WAL deleted after the
//!    listing fails to open, which also starts the open over.
//! 2. Any file the MANIFEST (or the listing) names that is missing when opened (MANIFEST,
//!    OPTIONS, WAL, table) means the writer moved on in between: the open starts over from
//!    the listing, at most [`OPEN_ATTEMPTS`] times.
//! 3. The view is the MANIFEST's Version plus every complete WAL record after its log
//!    numbers, in WAL order: a prefix of the writer's commits, as of some moment during the
//!    open. A damaged tail of the newest WAL is a record the writer is still appending, not
//!    corruption, whatever the recovery mode (`AbsoluteConsistency` is read as
//!    `TolerateCorruptedTailRecords`); damage anywhere else is judged as recovery does.
//! 4. Every file of the view stays open for the life of the view: the tables and blob files
//!    in their caches, the WALs in [`ReplayedWal`]s with the length replayed from each (a
//!    record boundary). A checkpoint or backup of the view (`crate::checkpoint`) copies from
//!    these handles, so it holds exactly the view even when the writer has deleted the files
//!    since, and it never opens a file of the database for writing.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::db::{DbInner, DEFAULT_KEYSPACE_ID};
use crate::error::{Error, Result};
use crate::flush::database_exists;
use crate::keyspace::KeyspaceState;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::options_file::OptionsFile;
use crate::recovery::{
    build_memtables, check_wals_present, keyspace_options, oldest_needed_wal, read_wals, NUM_LEVELS,
};
use crate::version::{manifest_file_name, read_current, Version, VersionSet};
use crate::wal::format::log_file_name;
use crate::wal::RecoveryMode;

/// How many times the open starts over when the writer deleted a file it needed (invariant 2).
pub(crate) const OPEN_ATTEMPTS: usize = 10;

/// A WAL a read-only open replayed (invariant 4).
#[derive(Debug, Clone)]
pub(crate) struct ReplayedWal {
    pub(crate) number: u64,
    /// Bytes replayed: the end of the last complete record read.
    pub(crate) len: u64,
    pub(crate) file: Arc<dyn shale_fs::RandomAccessFile>,
}

/// Opens the database in `dir` read-only (see the module docs). After [`OPEN_ATTEMPTS`]
/// attempts that each found a file missing, fails with the last missing file's error.
pub(crate) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    for _ in 1..OPEN_ATTEMPTS {
        match open_once(dir, options.clone()) {
            Err(error) if is_missing_file(&error) => {}
            result => return result,
        }
    }
    open_once(dir, options)
}

/// Which MANIFEST `CURRENT` names and that file's size: a writer that logs an edit changes
/// one or the other (it only appends to a MANIFEST, and starts a new one by changing
/// `CURRENT`).
#[derive(Debug, PartialEq, Eq)]
struct ManifestMark {
    number: u64,
    size: u64,
}

impl ManifestMark {
    fn read(fs: &dyn shale_fs::FileSystem, dir: &Path) -> Result<Self> {
        let number = read_current(fs, dir)?;
        let size = fs.size(&dir.join(manifest_file_name(number)))?;
        Ok(ManifestMark { number, size })
    }
}

/// Whether `error` says a file was not there (the writer deleted it: invariant 2).
fn is_missing_file(error: &Error) -> bool {
    match error {
        Error::Io(e) | Error::Sst(shale_sst::Error::Io(e)) => e.is_not_found(),
        _ => false,
    }
}

/// The Version's files opened by [`pin_files`], by file number.
#[derive(Default)]
struct PinnedFiles {
    tables: BTreeMap<u64, Arc<dyn shale_fs::RandomAccessFile>>,
    blobs: BTreeMap<u64, Arc<dyn shale_fs::RandomAccessFile>>,
}

/// Invariant 4, early: the Version's table and blob files are opened right after the MANIFEST
/// is read, before the WAL replay, so a writer compacting them away (or collecting a blob
/// file's garbage) during a long replay cannot fail the attempt (a file already deleted still
/// starts the open over, invariant 2).
fn pin_files(
    fs: &dyn shale_fs::FileSystem,
    dir: &Path,
    version: &Version,
    options: &Options,
) -> Result<PinnedFiles> {
    let read_mode = crate::direct_io::table_read_mode(options);
    let mut pinned = PinnedFiles::default();
    for (_, _, file) in version.all_files() {
        let path = crate::table_cache::table_file_name(dir, file.number);
        pinned
            .tables
            .insert(file.number, fs.open_read_with(&path, read_mode)?);
    }
    for &number in version.blob_files().keys() {
        let path = crate::blob::blob_file_name(dir, number);
        pinned.blobs.insert(number, fs.open_read(&path)?);
    }
    Ok(pinned)
}

fn open_once(dir: &Path, options: Options) -> Result<DbInner> {
    let fs = options.file_system.clone();
    if !database_exists(&*fs, dir)? {
        if let Some(damaged) = crate::version::missing_current(&*fs, dir, true)? {
            return Err(damaged);
        }
        return Err(Error::InvalidArgument(format!(
            "no database in {} (CURRENT is missing); a read-only open never creates one",
            dir.display()
        )));
    }
    crate::direct_io::check_read_only_open(&*fs, dir, &options)?;
    // The writer creates a WAL before an edit names it: a WAL the MANIFEST read below names is
    // in this listing (taken before the read) or in the one taken after it.
    let listed_before = fs.list(dir)?;
    let manifest_before = ManifestMark::read(&*fs, dir)?;
    let persisted = OptionsFile::read_latest(&*fs, dir)?.map(|(_, file)| file);
    if let Some(persisted) = &persisted {
        options.check_compatible(persisted)?;
    }
    let mut versions = VersionSet::open_read_only(
        fs.clone(),
        dir,
        options.comparator.clone(),
        NUM_LEVELS,
        &|version, manifest, end| {
            let mut names = fs.list(dir)?;
            names.extend(listed_before.iter().cloned());
            check_wals_present(version, &names, options.wal_recovery_mode, manifest, end)
        },
    )?;
    let names = fs.list(dir)?;
    let version = versions.current();
    let pinned = pin_files(&*fs, dir, &version, &options)?;
    let keyspace_options = keyspace_options(dir, &options, &version, persisted.as_ref())?;
    let mode = match options.wal_recovery_mode {
        RecoveryMode::AbsoluteConsistency => RecoveryMode::TolerateCorruptedTailRecords,
        mode => mode,
    };
    // Invariant 1: a WAL missing from `names` because the writer flushed it since the MANIFEST
    // was read is not lost data but a stale MANIFEST; read_wals would skip it (or call synced
    // data lost).
    if ManifestMark::read(&*fs, dir)? != manifest_before {
        let latest = VersionSet::open_read_only(
            fs.clone(),
            dir,
            options.comparator.clone(),
            NUM_LEVELS,
            &|_, _, _| Ok(()),
        )?;
        let needed = oldest_needed_wal(&version);
        if oldest_needed_wal(&latest.current()) > needed {
            return Err(Error::Io(shale_fs::Error::NotFound {
                op: shale_fs::Op::List,
                path: dir.join(log_file_name(needed)),
            }));
        }
    }
    let wals = read_wals(&options, dir, &version, &names, mode)?;
    // Invariant 4. A WAL deleted since it was read fails here with not-found: the open starts
    // over (invariant 2).
    let mut replayed_wals = Vec::new();
    for &(number, len) in wals.ends() {
        versions.mark_file_number_used(number);
        if len > 0 {
            let file = fs.open_read(&dir.join(log_file_name(number)))?;
            replayed_wals.push(ReplayedWal { number, len, file });
        }
    }
    let mut replayed =
        build_memtables(&options, &version, &keyspace_options, &wals, &mut versions)?;
    let report = wals.report;
    let last_seqno = replayed.last_seqno.max(versions.last_sequence());
    versions.set_last_sequence(last_seqno);
    let mut keyspaces = BTreeMap::new();
    let mut extractors = BTreeMap::new();
    for (id, (name, own_options)) in keyspace_options {
        // Never written: it only gives the read view the active memtable it expects.
        let mem = Arc::new(MemTable::for_write_buffer(
            options.comparator.clone(),
            versions.new_file_number(),
            own_options.write_buffer_size,
            own_options.memtable_bloom_bytes(),
        ));
        let log_number = version.log_number(id).unwrap_or(0);
        extractors.insert(id, own_options.prefix_extractor.clone());
        let mut keyspace =
            KeyspaceState::new(id, name, own_options, mem, log_number, version.clone());
        keyspace.imm = replayed.memtables.remove(&id).unwrap_or_default().into();
        keyspace.install_super_version(version.clone());
        keyspaces.insert(id, keyspace);
    }
    debug_assert!(keyspaces.contains_key(&DEFAULT_KEYSPACE_ID));
    let inner = DbInner::new(
        options, dir, None, versions, keyspaces, None, last_seqno, report,
    );
    keep_files_open(&inner, &version, pinned, &extractors)?;
    // Invariant 4: the WALs stay open with the view.
    let mut inner = inner;
    inner.replayed_wals = replayed_wals;
    Ok(inner)
}

/// Opens every table and blob file of `version` into the caches from their pinned files
/// (invariant 4): an open handle keeps a file the writer deletes readable.
fn keep_files_open(
    inner: &DbInner,
    version: &Version,
    mut pinned: PinnedFiles,
    extractors: &BTreeMap<u32, Option<Arc<dyn shale_sst::PrefixExtractor>>>,
) -> Result<()> {
    let not_pinned = |kind: &str, number: u64| {
        Error::InvalidArgument(format!(
            "read-only open: {kind} {number} of the Version was not pinned"
        ))
    };
    for (keyspace, _, file) in version.all_files() {
        let extractor = extractors.get(&keyspace).cloned().flatten();
        // pin_files opened every table and blob file of this Version.
        let table = pinned
            .tables
            .remove(&file.number)
            .ok_or_else(|| not_pinned("table", file.number))?;
        inner
            .table_cache
            .get_from(file.number, table, file.global_seqno, extractor.as_ref())?;
    }
    for &number in version.blob_files().keys() {
        let blob = pinned
            .blobs
            .remove(&number)
            .ok_or_else(|| not_pinned("blob file", number))?;
        inner.blob_cache.get_from(number, blob)?;
    }
    Ok(())
}
