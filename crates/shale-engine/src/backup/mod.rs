//! Hot backups: a [`BackupEngine`] keeps numbered backups of a database in a backup directory
//! (docs/format/backup.md, docs/operations.md "Take and restore a backup"), like `RocksDB`'s
//! `BackupEngine`.
//!
//! Layout: `shared/` holds table files named `<number>-<size>-<crc32c>.sst` (and blob files
//! `<number>-<size>-<crc32c>.blob`, docs/format/blob.md) (`.sst.zst` when
//! stored compressed), shared between backups; `private/<id>/` holds the files only that backup needs (WAL prefixes, its MANIFEST,
//! OPTIONS, CURRENT); `meta/<id>` lists every file of backup `id` with size and checksum.
//!
//! A backup is taken at a checkpoint cut (`crate::checkpoint`), so it holds exactly the writes
//! up to one sequence number, across all keyspaces, without blocking writers.
//!
//! Invariants:
//! 1. `meta/<id>` is written (atomically) only after every file it lists is synced, so a
//!    backup that is listed is complete; a crash mid-backup leaves only unreferenced files,
//!    which the next `purge` removes.
//! 2. A shared file's name carries its size and checksum; it is reused only when the table's
//!    number, size and checksum all match, so two databases backed up to one directory never
//!    mix tables.
//! 3. `purge` deletes a backup's meta before its files, and a shared file only when no
//!    remaining meta lists it.
//! 4. Size and checksum in the meta are those of the original bytes, whatever the codec: a
//!    compressed file is decompressed whole by `verify` and `restore` and checked against
//!    them.
//! 5. `create` and `purge` hold the advisory lock on the backup directory's `LOCK` (as a
//!    database holds its own) for their whole run, so two processes never pick the same id
//!    or purge a table a create is listing; the second fails at once, changing nothing.
//! 6. `create` (uncompressed) and `restore` check the free space the file system reports
//!    before copying anything. A failed `create` removes what it wrote but whole shared tables (its `private/<id>/`
//!    files and the table it was copying); a failed `restore` removes every file it wrote, so
//!    the same command can simply be run again.
//! 7. `open` refuses a directory that holds a database (swapped arguments), and `restore` a
//!    destination that is not empty, before writing anything.

mod compressed;
mod meta;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use shale_fs::{FileSystem, RandomAccessFile};

pub use compressed::DEFAULT_ZSTD_LEVEL;
pub use meta::{BackupCodec, BackupFile, BackupInfo};

use crate::checkpoint::{copy_file_with, copy_from, take_cut, wait_visible, write_metadata, Cut};
use crate::db::Db;
use crate::error::{Error, Result};
use crate::snapshot::Snapshot;
use crate::table_cache::table_file_name;
use crate::wal::format::log_file_name;
use compressed::{read_compressed, write_compressed};

const SHARED: &str = "shared";
const PRIVATE: &str = "private";
const META: &str = "meta";
const LOCK: &str = "LOCK";

/// How [`BackupEngine::create`] copies.
#[derive(Debug, Clone, Default)]
pub struct BackupOptions {
    /// Copy at most this many bytes per second (0: unlimited).
    pub rate_limit_bytes_per_sec: u64,
    /// Store tables and WAL copies zstd-compressed at this level (`None`: as they are).
    pub zstd_level: Option<i32>,
}

/// What [`BackupEngine::create`] did.
#[derive(Debug)]
pub struct CreatedBackup {
    pub info: BackupInfo,
    /// A snapshot of the source at the backup's cut: a restore reads what it reads.
    pub snapshot: Snapshot,
    /// Files and bytes copied (shared tables already in the backup directory are not).
    pub copied_files: usize,
    pub copied_bytes: u64,
    /// Tables found in `shared/` from earlier backups and not copied again.
    pub reused_tables: usize,
}

/// What [`BackupEngine::verify_each`] found.
#[derive(Debug, Default)]
pub struct Verified {
    /// Bytes of the files that checked out.
    pub bytes_checked: u64,
    /// One error per bad file (missing, wrong size, wrong checksum, unreadable).
    pub problems: Vec<Error>,
}

/// What [`BackupEngine::purge_files`] removed.
#[derive(Debug, Clone, Default)]
pub struct Purged {
    /// The backups deleted.
    pub ids: Vec<u32>,
    /// Files removed that no deleted backup listed (paths relative to the backup directory):
    /// what failed or interrupted backups left.
    pub leftovers: Vec<String>,
}

/// A directory of backups (see the module docs).
#[derive(Debug, Clone)]
pub struct BackupEngine {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    /// Serializes `create` and `purge` of this engine and its clones (two creates would pick
    /// the same id; a purge could delete a table a create is about to list). Other engines
    /// and processes are excluded by the directory's `LOCK` (invariant 5).
    exclusive: Arc<Mutex<()>>,
}

/// Sleeps to keep a copy at or below a rate.
struct Throttle {
    rate: u64,
    start: Instant,
    bytes: u64,
}

impl Throttle {
    fn account(&mut self, bytes: u64) {
        self.bytes += bytes;
        if self.rate == 0 {
            return;
        }
        #[allow(clippy::cast_precision_loss)] // a delay, not an amount
        let due = Duration::from_secs_f64(self.bytes as f64 / self.rate as f64);
        let elapsed = self.start.elapsed();
        if let Some(wait) = due.checked_sub(elapsed) {
            std::thread::sleep(wait);
        }
    }
}

impl BackupEngine {
    /// Opens (creating if needed) the backup directory `dir` on `fs`.
    pub fn open(fs: Arc<dyn FileSystem>, dir: impl AsRef<Path>) -> Result<BackupEngine> {
        let dir = dir.as_ref().to_path_buf();
        refuse_database(&*fs, &dir, "a backup directory")?;
        for sub in [SHARED, PRIVATE, META] {
            fs.create_dir_all(&dir.join(sub))?;
        }
        Ok(BackupEngine {
            fs,
            dir,
            exclusive: Arc::new(Mutex::new(())),
        })
    }

    /// Takes a backup of `db` (module docs). `progress` is called with the bytes copied so far
    /// and the bytes the backup holds.
    pub fn create(
        &self,
        db: &Db,
        options: &BackupOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CreatedBackup> {
        let _exclusive = self
            .exclusive
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let _lock = self.lock_dir("create a backup")?;
        let id = self.ids()?.last().map_or(1, |last| last + 1);
        let created = self.create_locked(db, options, progress, id);
        if created.is_err() {
            // Invariant 6: what the failed backup wrote goes (best effort: the error that
            // stopped it, often a full disk, is the one to report).
            let _ = self.remove_leftovers(id);
        }
        created
    }

    /// [`Self::create`] of backup `id`, under the directory's lock.
    #[allow(clippy::too_many_lines)] // the copy steps in order, each short
    fn create_locked(
        &self,
        db: &Db,
        options: &BackupOptions,
        progress: &mut dyn FnMut(u64, u64),
        id: u32,
    ) -> Result<CreatedBackup> {
        let inner = &db.inner;
        inner.check_open()?;
        inner.check_background_error()?;
        let fs = &*self.fs;
        let private_rel = format!("{PRIVATE}/{id}");
        let private_dir = self.dir.join(&private_rel);
        fs.create_dir_all(&private_dir)?;
        for leftover in fs.list(&private_dir)? {
            fs.remove(&private_dir.join(leftover))?;
        }
        let shared_names: BTreeSet<String> = fs.list(&self.dir.join(SHARED))?.into_iter().collect();
        let (cut, pins) = take_cut(inner)?;
        let total: u64 = cut.version.all_files().map(|(_, _, f)| f.size).sum::<u64>()
            + cut
                .version
                .blob_files()
                .values()
                .map(|b| b.file_size())
                .sum::<u64>()
            + cut.wals.iter().map(|(_, len)| len).sum::<u64>();
        if options.zstd_level.is_none() {
            // What is not in shared/ yet is copied as it is: refuse now if it cannot fit.
            let in_shared = |number: u64, size: u64| {
                let prefix = format!("{number:06}-{size}-");
                shared_names.iter().any(|n| n.starts_with(&prefix))
            };
            let tables = cut
                .version
                .all_files()
                .map(|(_, _, f)| (f.number, f.size))
                .chain(
                    cut.version
                        .blob_files()
                        .values()
                        .map(|b| (b.number, b.file_size())),
                );
            let needed = tables
                .filter(|&(number, size)| !in_shared(number, size))
                .map(|(_, size)| size)
                .sum::<u64>()
                + cut.wals.iter().map(|(_, len)| len).sum::<u64>();
            check_space(fs, &self.dir, needed, "the backup")?;
        }
        let mut throttle = Throttle {
            rate: options.rate_limit_bytes_per_sec,
            start: Instant::now(),
            bytes: 0,
        };
        let mut done = 0u64;
        let mut files = Vec::new();
        let (mut copied_files, mut reused_tables) = (0, 0);
        // Tables and blob files are write-once: shared between backups by number, size and
        // CRC-32C.
        let tables = cut.version.all_files().map(|(_, _, meta)| {
            (
                table_file_name(&inner.dir, meta.number),
                meta.number,
                meta.size,
            )
        });
        let blobs = cut.version.blob_files().values().map(|b| {
            (
                crate::blob::blob_file_name(&inner.dir, b.number),
                b.number,
                b.file_size(),
            )
        });
        for (path, number, size) in tables.chain(blobs) {
            let (file, copied) = self.backup_table(
                &cut,
                &path,
                TableToStore { number, size },
                &shared_names,
                options.zstd_level,
                &mut throttle,
            )?;
            if copied {
                copied_files += 1;
            } else {
                reused_tables += 1;
            }
            done += size;
            progress(done, total);
            files.push(file);
        }
        for &(number, len) in &cut.wals {
            let name = log_file_name(number);
            let codec = codec_of(options.zstd_level);
            let stored = stored_name(&name, codec);
            let crc = store_copy(
                fs,
                &*cut.open(fs, &inner.dir, &name)?,
                &private_dir.join(&stored),
                len,
                options.zstd_level,
                &mut throttle,
            )?;
            copied_files += 1;
            done += len;
            progress(done, total);
            files.push(BackupFile {
                stored: format!("{private_rel}/{stored}"),
                name,
                size: len,
                crc32c: crc,
                codec,
            });
        }
        drop(pins);
        for (name, size) in write_metadata(fs, &private_dir, &cut)? {
            let crc = checksum_file(&*fs.open_read(&private_dir.join(&name))?, size)?;
            copied_files += 1;
            files.push(BackupFile {
                stored: format!("{private_rel}/{name}"),
                name,
                size,
                crc32c: crc,
                codec: BackupCodec::None,
            });
        }
        fs.sync_dir(&self.dir.join(SHARED))?;
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let info = BackupInfo {
            id,
            created,
            seqno: cut.seqno,
            files,
        };
        shale_fs::replace_file_durably(fs, &self.meta_path(id), &info.encode())?;
        wait_visible(inner, cut.seqno)?;
        Ok(CreatedBackup {
            info,
            snapshot: cut.snapshot,
            copied_files,
            copied_bytes: throttle.bytes,
            reused_tables,
        })
    }

    /// Every backup, oldest first. A damaged meta file fails the whole list; see
    /// [`Self::list_each`] to list around it.
    pub fn list(&self) -> Result<Vec<BackupInfo>> {
        self.ids()?.into_iter().map(|id| self.info(id)).collect()
    }

    /// Every backup id, oldest first, each with what its meta file says or why it cannot be
    /// read: one damaged meta does not hide the other backups.
    pub fn list_each(&self) -> Result<Vec<(u32, Result<BackupInfo>)>> {
        Ok(self
            .ids()?
            .into_iter()
            .map(|id| (id, self.info(id)))
            .collect())
    }

    /// What `meta/<id>` says about backup `id`.
    pub fn info(&self, id: u32) -> Result<BackupInfo> {
        let path = self.meta_path(id);
        if !self.fs.exists(&path)? {
            return Err(Error::InvalidArgument(format!(
                "no backup {id} in {} ({} is missing)",
                self.dir.display(),
                path.display()
            )));
        }
        let file = self.fs.open_read(&path)?;
        let size = file.size()?;
        if size > meta::MAX_META_SIZE {
            return Err(Error::Corruption {
                file: path,
                offset: 0,
                detail: format!("backup meta is {size} bytes, more than any backup needs"),
            });
        }
        let mut bytes = vec![0u8; usize::try_from(size).unwrap_or(0)];
        file.read_exact_at(0, &mut bytes)?;
        let info = BackupInfo::decode(&bytes, &path)?;
        if info.id != id {
            return Err(Error::Corruption {
                file: path,
                offset: 0,
                detail: format!("meta file of backup {id} describes backup {}", info.id),
            });
        }
        Ok(info)
    }

    /// The newest backup's id, if any.
    pub fn latest_id(&self) -> Result<Option<u32>> {
        Ok(self.ids()?.last().copied())
    }

    /// Re-reads every file of backup `id` and checks its size and checksum against the meta.
    /// Returns the bytes checked; the first bad file is a corruption error naming it (see
    /// [`Self::verify_each`] for all of them).
    pub fn verify(&self, id: u32, progress: &mut dyn FnMut(u64, u64)) -> Result<u64> {
        let verified = self.verify_each(id, progress)?;
        match verified.problems.into_iter().next() {
            Some(problem) => Err(problem),
            None => Ok(verified.bytes_checked),
        }
    }

    /// Re-reads every file of backup `id` and checks its size and checksum against the meta,
    /// going on past a bad file: every bad file is in [`Verified::problems`]. Fails only when
    /// the meta itself cannot be read.
    pub fn verify_each(&self, id: u32, progress: &mut dyn FnMut(u64, u64)) -> Result<Verified> {
        let info = self.info(id)?;
        let total = info.total_bytes();
        let mut verified = Verified::default();
        let mut done = 0;
        for file in &info.files {
            match self.verify_file(file) {
                Ok(()) => verified.bytes_checked += file.size,
                Err(problem) => verified.problems.push(problem),
            }
            done += file.size;
            progress(done, total);
        }
        Ok(verified)
    }

    fn verify_file(&self, file: &BackupFile) -> Result<()> {
        let path = self.dir.join(&file.stored);
        self.check_size(&path, file)?;
        let crc = match file.codec {
            BackupCodec::None => checksum_file(&*self.fs.open_read(&path)?, file.size)?,
            BackupCodec::Zstd => read_compressed(&*self.fs, &path, file.size, &mut |_| Ok(()))?,
        };
        check_crc(&path, file, crc)
    }

    /// Copies backup `id` into `dest` (which must not exist or be empty) with `threads`
    /// threads, checking every file's checksum as it is copied; `CURRENT` is written last.
    pub fn restore(
        &self,
        id: u32,
        dest: &Path,
        threads: usize,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<()> {
        let fs = &*self.fs;
        let info = self.info(id)?;
        if fs.exists(dest)? && !fs.list(dest)?.is_empty() {
            refuse_database(fs, dest, "a restore target")?;
            return Err(Error::InvalidArgument(format!(
                "restore target {} is not empty; restore into an empty or new directory",
                dest.display()
            )));
        }
        fs.create_dir_all(dest)?;
        check_space(fs, dest, info.total_bytes(), "the restore")?;
        let restored = self.restore_into(&info, dest, threads, progress);
        if restored.is_err() {
            // Invariant 6: the directory was empty, so every file in it is this restore's
            // (best effort: the error that stopped it is the one to report).
            if let Ok(names) = fs.list(dest) {
                for name in names {
                    let _ = fs.remove(&dest.join(name));
                }
                let _ = fs.sync_dir(dest);
            }
        }
        restored
    }

    /// [`Self::restore`] into the empty directory `dest`.
    fn restore_into(
        &self,
        info: &BackupInfo,
        dest: &Path,
        threads: usize,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<()> {
        let fs = &*self.fs;
        let total = info.total_bytes();
        let (current, rest): (Vec<&BackupFile>, Vec<&BackupFile>) =
            info.files.iter().partition(|f| f.name == "CURRENT");
        let queue = Mutex::new(rest);
        let done = Mutex::new(0u64);
        let first_error: Mutex<Option<Error>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                scope.spawn(|| loop {
                    if first_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .is_some()
                    {
                        return;
                    }
                    let Some(file) = queue.lock().unwrap_or_else(PoisonError::into_inner).pop()
                    else {
                        return;
                    };
                    match self.restore_file(file, dest) {
                        Ok(()) => {
                            let mut done = done.lock().unwrap_or_else(PoisonError::into_inner);
                            *done += file.size;
                            progress(*done, total);
                        }
                        Err(e) => {
                            first_error
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .get_or_insert(e);
                            return;
                        }
                    }
                });
            }
        });
        if let Some(error) = first_error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            return Err(error);
        }
        fs.sync_dir(dest)?;
        for file in current {
            self.restore_file(file, dest)?;
        }
        fs.sync_dir(dest)?;
        progress(total, total);
        Ok(())
    }

    /// Deletes all but the newest `keep` backups, then every shared file no remaining backup
    /// lists (and leftovers of interrupted backups). Returns the ids deleted.
    pub fn purge(&self, keep: usize) -> Result<Vec<u32>> {
        Ok(self.purge_files(keep)?.ids)
    }

    /// [`Self::purge`], reporting every file removed that no deleted backup listed: the
    /// leftovers of failed or interrupted backups (`shared/*-tmp`, tables only they copied,
    /// `private/<id>/` files without a meta).
    pub fn purge_files(&self, keep: usize) -> Result<Purged> {
        let _exclusive = self
            .exclusive
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let _lock = self.lock_dir("purge")?;
        let fs = &*self.fs;
        let ids = self.ids()?;
        let doomed: Vec<u32> = ids[..ids.len().saturating_sub(keep)].to_vec();
        // What the deleted backups listed: any other file removed is a leftover.
        let mut listed = BTreeSet::new();
        for &id in &doomed {
            if let Ok(info) = self.info(id) {
                listed.extend(info.files.into_iter().map(|f| f.stored));
            }
        }
        for &id in &doomed {
            fs.remove(&self.meta_path(id))?;
        }
        fs.sync_dir(&self.dir.join(META))?;
        let mut leftovers = Vec::new();
        let mut remove = |relative: String| -> Result<()> {
            fs.remove(&self.dir.join(&relative))?;
            if !listed.contains(&relative) {
                leftovers.push(relative);
            }
            Ok(())
        };
        let kept = self.list()?;
        let kept_ids: BTreeSet<String> = kept.iter().map(|b| b.id.to_string()).collect();
        for sub in fs.list(&self.dir.join(PRIVATE))? {
            if kept_ids.contains(&sub) {
                continue;
            }
            let dir = self.dir.join(PRIVATE).join(&sub);
            for name in fs.list(&dir)? {
                remove(format!("{PRIVATE}/{sub}/{name}"))?;
            }
        }
        let referenced: BTreeSet<&str> = kept
            .iter()
            .flat_map(|b| b.files.iter())
            .filter_map(|f| f.stored.strip_prefix("shared/"))
            .collect();
        for name in fs.list(&self.dir.join(SHARED))? {
            if !referenced.contains(name.as_str()) {
                remove(format!("{SHARED}/{name}"))?;
            }
        }
        fs.sync_dir(&self.dir.join(SHARED))?;
        Ok(Purged {
            ids: doomed,
            leftovers,
        })
    }

    /// Stores table `number` (`size` bytes at `source`) in `shared/` (compressed at
    /// `zstd_level` if given), unless a file with the same number, size, checksum and codec
    /// is there (invariant 2). Returns its entry and whether it was copied.
    fn backup_table(
        &self,
        cut: &Cut,
        path: &Path,
        TableToStore { number, size }: TableToStore,
        shared_names: &BTreeSet<String>,
        zstd_level: Option<i32>,
        throttle: &mut Throttle,
    ) -> Result<(BackupFile, bool)> {
        let fs = &*self.fs;
        let codec = codec_of(zstd_level);
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("sst");
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(Error::InvalidArgument(format!(
                "{} is not a table file path",
                path.display()
            )));
        };
        let source = cut.open(fs, dir, &name.to_string_lossy())?;
        let shared_name =
            |number, size, crc, codec| shared_name(number, size, crc, codec, extension);
        let prefix = format!("{number:06}-{size}-");
        let mut reused = None;
        if shared_names.iter().any(|n| n.starts_with(&prefix)) {
            let crc = checksum_file(&*source, size)?;
            if shared_names.contains(&shared_name(number, size, crc, codec)) {
                reused = Some(crc);
            }
        }
        let (crc, copied) = if let Some(crc) = reused {
            (crc, false)
        } else {
            let temp = self.dir.join(SHARED).join(format!("{prefix}tmp"));
            let crc = store_copy(fs, &*source, &temp, size, zstd_level, throttle)?;
            let stored = self
                .dir
                .join(SHARED)
                .join(shared_name(number, size, crc, codec));
            fs.rename(&temp, &stored)?;
            (crc, true)
        };
        let file = BackupFile {
            stored: format!("{SHARED}/{}", shared_name(number, size, crc, codec)),
            name: format!("{number:06}.{extension}"),
            size,
            crc32c: crc,
            codec,
        };
        Ok((file, copied))
    }

    fn restore_file(&self, file: &BackupFile, dest: &Path) -> Result<()> {
        let from = self.dir.join(&file.stored);
        self.check_size(&from, file)?;
        let to = dest.join(&file.name);
        let crc = match file.codec {
            BackupCodec::None => copy_file_with(&*self.fs, &from, &to, file.size, &mut |_| {})?,
            BackupCodec::Zstd => {
                let mut out = self.fs.create(&to)?;
                let crc = read_compressed(&*self.fs, &from, file.size, &mut |bytes| {
                    Ok(out.append(bytes)?)
                })?;
                out.sync_data()?;
                crc
            }
        };
        check_crc(&from, file, crc)
    }

    /// The stored file exists and, unless compressed, has the original's size.
    fn check_size(&self, path: &Path, file: &BackupFile) -> Result<()> {
        if !self.fs.exists(path)? {
            return Err(Error::Corruption {
                file: path.to_path_buf(),
                offset: 0,
                detail: "file of the backup is missing".into(),
            });
        }
        if file.codec != BackupCodec::None {
            return Ok(()); // its decompressed size is checked as it is read
        }
        let size = self.fs.size(path)?;
        if size != file.size {
            return Err(Error::Corruption {
                file: path.to_path_buf(),
                offset: size.min(file.size),
                detail: format!("file is {size} bytes, the backup meta says {}", file.size),
            });
        }
        Ok(())
    }

    /// Removes what an unfinished backup `id` wrote: its `private/<id>/` files and tables
    /// being copied (`*-tmp`). Tables copied whole stay in `shared/` for the next backup to
    /// reuse; `purge` removes them (and reports them) if none does.
    fn remove_leftovers(&self, id: u32) -> Result<Vec<String>> {
        let fs = &*self.fs;
        let mut removed = Vec::new();
        let private = self.dir.join(PRIVATE).join(id.to_string());
        if fs.exists(&private)? {
            for name in fs.list(&private)? {
                fs.remove(&private.join(&name))?;
                removed.push(format!("{PRIVATE}/{id}/{name}"));
            }
        }
        let shared = self.dir.join(SHARED);
        for name in fs.list(&shared)? {
            if is_temporary(&name) {
                fs.remove(&shared.join(&name))?;
                removed.push(format!("{SHARED}/{name}"));
            }
        }
        Ok(removed)
    }

    /// Takes the backup directory's lock (invariant 5) to `action`.
    fn lock_dir(&self, action: &str) -> Result<Box<dyn shale_fs::FileLock>> {
        let path = self.dir.join(LOCK);
        match self.fs.lock(&path) {
            Ok(lock) => Ok(lock),
            Err(shale_fs::Error::Locked { .. }) => Err(Error::InvalidArgument(format!(
                "cannot {action}: backup directory {} is in use by another backup create or \
                 purge (it holds {}); nothing was changed. Wait for it to finish and run this \
                 again",
                self.dir.display(),
                path.display()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    fn ids(&self) -> Result<Vec<u32>> {
        let mut ids: Vec<u32> = self
            .fs
            .list(&self.dir.join(META))?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn meta_path(&self, id: u32) -> PathBuf {
        self.dir.join(META).join(id.to_string())
    }
}

/// Refuses to start `what` when the device holding `dir` reports fewer than `needed` bytes
/// free (invariant 6: a full disk midway would leave it to clean up).
fn check_space(fs: &dyn FileSystem, dir: &Path, needed: u64, what: &str) -> Result<()> {
    match fs.available_space(dir)? {
        Some(free) if free < needed => Err(Error::InvalidArgument(format!(
            "{what} needs {needed} bytes in {} but only {free} are free; nothing was written. \
             Free some space (or choose another directory) and run it again",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// Refuses `dir` as `what` when it holds a database (`CURRENT`, a MANIFEST or a table):
/// backup folders written into a database directory (swapped arguments) would be left among
/// its files.
fn refuse_database(fs: &dyn FileSystem, dir: &Path, what: &str) -> Result<()> {
    if !fs.exists(dir)? {
        return Ok(());
    }
    let found = fs.list(dir)?.into_iter().find(|name| {
        name == crate::version::CURRENT_FILE_NAME
            || crate::version::parse_manifest_file_name(name).is_some()
            || crate::inspect::parse_table_file_name(name).is_some()
    });
    match found {
        Some(name) => Err(Error::InvalidArgument(format!(
            "{} holds a database ({name} is there), so it cannot be {what}; nothing was \
             written. Check the order of the arguments: `shale backup create DBDIR BACKUPDIR`, \
             `shale backup restore BACKUPDIR DEST`",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// A table being copied into `shared/` (`<number>-<size>-tmp`, `.zst` when compressed is not
/// added to it): a crashed or failed backup's leftover once no backup runs.
fn is_temporary(name: &str) -> bool {
    name.ends_with("-tmp")
}

/// The name a file called `name` is stored under.
fn stored_name(name: &str, codec: BackupCodec) -> String {
    match codec {
        BackupCodec::None => name.to_owned(),
        BackupCodec::Zstd => format!("{name}.zst"),
    }
}

fn codec_of(zstd_level: Option<i32>) -> BackupCodec {
    if zstd_level.is_some() {
        BackupCodec::Zstd
    } else {
        BackupCodec::None
    }
}

/// Copies the first `len` bytes of `from` to `to` (synced), zstd-compressed at `zstd_level`
/// if given. Returns the CRC-32C of the original bytes.
fn store_copy(
    fs: &dyn FileSystem,
    from: &dyn RandomAccessFile,
    to: &Path,
    len: u64,
    zstd_level: Option<i32>,
    throttle: &mut Throttle,
) -> Result<u32> {
    let mut account = |n| throttle.account(n);
    match zstd_level {
        Some(level) => write_compressed(from, fs, to, len, level, &mut account),
        None => copy_from(from, fs, to, len, &mut account),
    }
}

/// A table or blob file of the cut: its number and size.
#[derive(Clone, Copy)]
struct TableToStore {
    number: u64,
    size: u64,
}

/// `extension`: `sst` for a table, `blob` for a blob file.
fn shared_name(number: u64, size: u64, crc: u32, codec: BackupCodec, extension: &str) -> String {
    stored_name(&format!("{number:06}-{size}-{crc:08x}.{extension}"), codec)
}

fn check_crc(path: &Path, file: &BackupFile, crc: u32) -> Result<()> {
    if crc == file.crc32c {
        Ok(())
    } else {
        Err(Error::Corruption {
            file: path.to_path_buf(),
            offset: 0,
            detail: format!(
                "checksum mismatch: the backup meta says crc32c {:08x}, the file has {crc:08x}",
                file.crc32c
            ),
        })
    }
}

/// The CRC-32C of the first `len` bytes of `file`.
fn checksum_file(file: &dyn RandomAccessFile, len: u64) -> Result<u32> {
    let mut buf = vec![0u8; 1 << 20];
    let mut crc = 0;
    let mut offset = 0u64;
    while offset < len {
        let n = usize::try_from((len - offset).min(buf.len() as u64)).unwrap_or(buf.len());
        file.read_exact_at(offset, &mut buf[..n])?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        offset += n as u64;
    }
    Ok(crc)
}
