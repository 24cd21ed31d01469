//! Checkpoints: a consistent, openable copy of a running database in another directory
//! ([`crate::Db::checkpoint`], docs/operations.md "Checkpoints").
//!
//! The cut is taken under the state lock, then the WAL lock (db.rs lock order), without
//! waiting for any flush: the current Version is pinned (its table files stay alive), the
//! WALs a recovery of that Version reads are pinned against obsolete-file deletion
//! (`DbState::pinned_wals`), the current WAL writer is flushed to the OS and its size noted,
//! and a snapshot is taken at the last sequence number written to the WAL. The WAL lock is
//! held while a leader appends a group's record and stores `last_allocated_seqno`, so the
//! noted size is a record boundary and the WAL prefix holds exactly the groups up to the cut
//! (one record per group, in commit order). Outside the locks the tables are hard-linked
//! (copied if the link fails, e.g. across file systems), the WALs are copied up to the noted
//! sizes (a WAL with a recorded end only up to it), a fresh MANIFEST describing the pinned
//! Version is written, then OPTIONS and `CURRENT`. Every file and the directory are synced.
//!
//! Writers are blocked only for the cut itself (a directory listing and some bookkeeping).
//! Not flushing keeps cross-keyspace atomicity trivially: the WAL prefix is a prefix of the
//! commit order for every keyspace at once, and opening the checkpoint replays it like any
//! recovery would.
//!
//! A read-only open (`crate::read_only`, another process may be writing) is checkpointed as
//! its view: its Version, and each WAL it replayed up to the record boundary where it stopped.
//! Every file is read through the handle the view holds open, so a table the writer has
//! compacted away since is still copied (a hard link by name is tried first), and nothing in
//! the source directory is opened for writing, locked or deleted: a read-only directory or
//! mount can be checkpointed and backed up.
//!
//! Invariants:
//! 1. The checkpoint holds every table of the pinned Version and every WAL at or above the
//!    smallest log number in it, so opening it recovers exactly the writes with sequence
//!    numbers up to [`CheckpointInfo::seqno`].
//! 2. `CURRENT` is written last: a directory without it is an unfinished checkpoint, not a
//!    database (`Db::open` without `create_if_missing` refuses it; delete it and retry).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use shale_fs::{FileSystem, RandomAccessFile};
use shale_sst::SeqNo;

use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::keyspace::KeyspaceState;
use crate::snapshot::Snapshot;
use crate::table_cache::table_file_name;
use crate::version::{write_current, Version};
use crate::wal::format::{log_file_name, parse_log_file_name};

/// Bytes read and written at a time when a file is copied.
const COPY_CHUNK: usize = 1 << 20;

/// What a checkpoint holds and how it was made.
#[derive(Debug)]
pub struct CheckpointInfo {
    /// The checkpoint holds exactly the writes with sequence numbers up to this one.
    pub seqno: SeqNo,
    /// A snapshot of the source database at [`Self::seqno`]: reads through it see what
    /// opening the checkpoint shows.
    pub snapshot: Snapshot,
    /// Table and blob files hard-linked into the checkpoint.
    pub tables_linked: usize,
    /// Table and blob files copied (the hard link failed, e.g. another file system).
    pub tables_copied: usize,
    /// WAL files copied, and their bytes.
    pub wals: usize,
    pub wal_bytes: u64,
    /// The files of the checkpoint, by name, with their sizes.
    pub files: Vec<(String, u64)>,
}

/// The state noted under the locks.
pub(crate) struct Cut {
    pub(crate) version: Arc<Version>,
    /// (WAL number, bytes to copy).
    pub(crate) wals: Vec<(u64, u64)>,
    manifest_number: u64,
    manifest_record: Vec<u8>,
    options_number: u64,
    options: crate::options_file::OptionsFile,
    pub(crate) seqno: SeqNo,
    pub(crate) snapshot: Snapshot,
    /// Files of the cut held open by a read-only view, by file name: read from these, not
    /// by name (the writer may have deleted them).
    held: BTreeMap<String, Arc<dyn RandomAccessFile>>,
}

impl Cut {
    /// The file `name` of the database in `dir`, opened for reading: the handle the cut
    /// holds, or the file by name.
    pub(crate) fn open(
        &self,
        fs: &dyn FileSystem,
        dir: &Path,
        name: &str,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        match self.held.get(name) {
            Some(file) => Ok(file.clone()),
            None => Ok(fs.open_read(&dir.join(name))?),
        }
    }
}

/// Releases the WAL pins of a cut when the checkpoint is done (or failed).
pub(crate) struct WalPins<'a> {
    inner: &'a DbInner,
    numbers: Vec<u64>,
}

impl Drop for WalPins<'_> {
    fn drop(&mut self) {
        let mut state = self.inner.lock_state();
        for number in &self.numbers {
            if let Some(count) = state.pinned_wals.get_mut(number) {
                *count -= 1;
                if *count == 0 {
                    state.pinned_wals.remove(number);
                }
            }
        }
    }
}

/// Makes a checkpoint of the database in `dest` (see the module docs). `dest` must not exist
/// or be an empty directory.
pub(crate) fn create(inner: &DbInner, dest: &Path) -> Result<CheckpointInfo> {
    inner.check_open()?;
    inner.check_background_error()?;
    let fs = &*inner.fs;
    if fs.exists(dest)? && !fs.list(dest)?.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "checkpoint directory {} is not empty",
            dest.display()
        )));
    }
    fs.create_dir_all(dest)?;
    let (cut, pins) = take_cut(inner)?;
    let mut info = CheckpointInfo {
        seqno: cut.seqno,
        snapshot: cut.snapshot.clone(),
        tables_linked: 0,
        tables_copied: 0,
        wals: 0,
        wal_bytes: 0,
        files: Vec::new(),
    };
    // Tables and blob files are write-once: linked, or copied (blob files counted with the
    // tables).
    let tables = cut
        .version
        .all_files()
        .map(|(_, _, meta)| (table_file_name(&inner.dir, meta.number), meta.size));
    let blobs = cut.version.blob_files().values().map(|blob| {
        (
            crate::blob::blob_file_name(&inner.dir, blob.number),
            blob.file_size(),
        )
    });
    for (from, size) in tables.chain(blobs) {
        let name = file_name(&from);
        let to = dest.join(&name);
        if fs.hard_link(&from, &to).is_ok() {
            info.tables_linked += 1;
        } else {
            let source = cut.open(fs, &inner.dir, &name)?;
            copy_from(&*source, fs, &to, size, &mut |_| {})?;
            info.tables_copied += 1;
        }
        info.files.push((name, size));
    }
    for &(number, len) in &cut.wals {
        let name = log_file_name(number);
        let source = cut.open(fs, &inner.dir, &name)?;
        copy_from(&*source, fs, &dest.join(&name), len, &mut |_| {})?;
        info.wals += 1;
        info.wal_bytes += len;
        info.files.push((name, len));
    }
    drop(pins);
    info.files.extend(write_metadata(fs, dest, &cut)?);
    wait_visible(inner, cut.seqno)?;
    Ok(info)
}

/// Writes the fresh MANIFEST describing the cut's Version, the OPTIONS file, syncs `dest`,
/// then writes `CURRENT` (invariant 2). Returns the files written with their sizes.
pub(crate) fn write_metadata(
    fs: &dyn FileSystem,
    dest: &Path,
    cut: &Cut,
) -> Result<Vec<(String, u64)>> {
    let mut files = Vec::new();
    let manifest =
        crate::version::start_manifest(fs, dest, cut.manifest_number, &cut.manifest_record, None)?;
    files.push((file_name(&manifest.path), manifest.log.file_size()));
    drop(manifest);
    cut.options.write(fs, dest, cut.options_number)?;
    let options_name = crate::options_file::options_file_name(cut.options_number);
    let options_size = fs.size(&dest.join(&options_name))?;
    files.push((options_name, options_size));
    fs.sync_dir(dest)?;
    write_current(fs, dest, cut.manifest_number)?;
    let current = crate::version::CURRENT_FILE_NAME;
    files.push((current.to_owned(), fs.size(&dest.join(current))?));
    Ok(files)
}

/// Takes the cut under the state and WAL locks (module docs), or of a read-only view.
pub(crate) fn take_cut(inner: &DbInner) -> Result<(Cut, WalPins<'_>)> {
    if inner.is_read_only() {
        return Ok(take_read_only_cut(inner));
    }
    let mut state = inner.lock_state();
    let version = state.versions.current();
    let min_log = version
        .keyspaces()
        .iter()
        .filter_map(|(id, _)| version.log_number(*id))
        .min()
        .unwrap_or(0);
    let mut numbers: Vec<u64> = inner
        .fs
        .list(&inner.dir)?
        .iter()
        .filter_map(|name| parse_log_file_name(name))
        .filter(|number| *number >= min_log)
        .collect();
    let manifest_number = state.versions.new_file_number();
    let options_number = state.versions.new_file_number();
    let manifest_record = state.versions.snapshot_record(&version);
    let keyspaces: Vec<_> = state
        .keyspaces
        .values()
        .map(|k: &KeyspaceState| (k.name.clone(), k.options.clone()))
        .collect();
    let options = inner.options.to_file(&keyspaces);
    let (current, current_size, seqno, snapshot) = {
        let mut wal = inner.lock_wal()?;
        if let Err(error) = wal.writer.flush() {
            // The writer is poisoned now: pause writes until it is replaced, as after a
            // failed write (crate::wal_recovery).
            drop(wal);
            crate::wal_recovery::wal_failed(
                inner,
                &mut state,
                format!("flushing the WAL for a checkpoint failed: {error}"),
            );
            return Err(error);
        }
        let seqno = inner
            .last_allocated_seqno
            .load(std::sync::atomic::Ordering::Acquire);
        (
            wal.number,
            wal.writer.file_size(),
            seqno,
            inner.snapshots.acquire(seqno),
        )
    };
    if !numbers.contains(&current) {
        numbers.push(current);
    }
    numbers.sort_unstable();
    let mut wals = Vec::with_capacity(numbers.len());
    for &number in &numbers {
        let len = if number == current {
            current_size
        } else if let Some(end) = version.wal_end(number) {
            end
        } else {
            inner.fs.size(&inner.dir.join(log_file_name(number)))?
        };
        wals.push((number, len));
        *state.pinned_wals.entry(number).or_insert(0) += 1;
    }
    drop(state);
    let pins = WalPins { inner, numbers };
    Ok((
        Cut {
            version,
            wals,
            manifest_number,
            manifest_record,
            options_number,
            options,
            seqno,
            snapshot,
            held: BTreeMap::new(),
        },
        pins,
    ))
}

/// The cut of a read-only view (module docs): nothing to lock or pin, since the view never
/// changes and holds its files open.
fn take_read_only_cut(inner: &DbInner) -> (Cut, WalPins<'_>) {
    let mut state = inner.lock_state();
    let version = state.versions.current();
    let manifest_number = state.versions.new_file_number();
    let options_number = state.versions.new_file_number();
    let lengths: Vec<(u64, u64)> = inner
        .replayed_wals
        .iter()
        .map(|wal| (wal.number, wal.len))
        .collect();
    let manifest_record = state.versions.snapshot_record_for_copy(&version, &lengths);
    let keyspaces: Vec<_> = state
        .keyspaces
        .values()
        .map(|k: &KeyspaceState| (k.name.clone(), k.options.clone()))
        .collect();
    drop(state);
    let mut held = BTreeMap::new();
    let mut wals = Vec::with_capacity(inner.replayed_wals.len());
    for wal in &inner.replayed_wals {
        wals.push((wal.number, wal.len));
        held.insert(log_file_name(wal.number), wal.file.clone());
    }
    // Every table and blob file of the view is open in its cache (read_only invariant 4).
    for (_, _, meta) in version.all_files() {
        if let Some(table) = inner.table_cache.cached(meta.number) {
            held.insert(
                file_name(&table_file_name(&inner.dir, meta.number)),
                table.file().clone(),
            );
        }
    }
    for number in version.blob_files().keys() {
        if let Ok(blob) = inner.blob_cache.get(*number) {
            held.insert(
                file_name(&crate::blob::blob_file_name(&inner.dir, *number)),
                blob.file().clone(),
            );
        }
    }
    let seqno = inner
        .last_allocated_seqno
        .load(std::sync::atomic::Ordering::Acquire);
    let cut = Cut {
        version,
        wals,
        manifest_number,
        manifest_record,
        options_number,
        options: inner.options.to_file(&keyspaces),
        seqno,
        snapshot: inner.snapshots.acquire(seqno),
        held,
    };
    let pins = WalPins {
        inner,
        numbers: Vec::new(),
    };
    (cut, pins)
}

/// Waits until the groups up to `seqno` are published, so the returned snapshot reads what
/// the checkpoint holds (a group in the WAL prefix may still be inserting).
pub(crate) fn wait_visible(inner: &DbInner, seqno: SeqNo) -> Result<()> {
    while inner.visible_seqno() < seqno {
        inner.check_background_error()?;
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Copies the first `len` bytes of `from` to a new file `to` and syncs it. Returns the
/// CRC-32C of the bytes copied.
pub(crate) fn copy_file(fs: &dyn FileSystem, from: &Path, to: &Path, len: u64) -> Result<u32> {
    copy_file_with(fs, from, to, len, &mut |_| {})
}

/// [`copy_file`], calling `progress` with the size of each chunk after it is written (the
/// backup engine's throttle and progress bars).
pub(crate) fn copy_file_with(
    fs: &dyn FileSystem,
    from: &Path,
    to: &Path,
    len: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<u32> {
    copy_from(&*fs.open_read(from)?, fs, to, len, progress)
}

/// Copies the first `len` bytes of the open file `source` to a new file `to` on `fs` and
/// syncs it. Returns the CRC-32C of the bytes copied; `progress` gets each chunk's size.
pub(crate) fn copy_from(
    source: &dyn RandomAccessFile,
    fs: &dyn FileSystem,
    to: &Path,
    len: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<u32> {
    let available = source.size()?;
    if available < len {
        return Err(Error::Corruption {
            file: source.path().to_path_buf(),
            offset: available,
            detail: format!("file is {available} bytes, expected at least {len}"),
        });
    }
    let mut out = fs.create(to)?;
    let mut crc = 0u32;
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut offset = 0u64;
    while offset < len {
        let n = usize::try_from((len - offset).min(COPY_CHUNK as u64)).unwrap_or(COPY_CHUNK);
        source.read_exact_at(offset, &mut buf[..n])?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        out.append(&buf[..n])?;
        offset += n as u64;
        progress(n as u64);
    }
    out.sync_data()?;
    Ok(crc)
}
