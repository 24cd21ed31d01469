//! [`OsFs`]: the real file system, and the only code in Shale that calls `std::fs`.
//!
//! Invariants:
//! 1. A [`WritableFile`] keeps at most [`WRITE_BUFFER_SIZE`] bytes in user space; `flush`,
//!    `sync_data` and drop (best effort, errors ignored) hand them to the OS. `sync_data` is
//!    flush + `fdatasync`.
//! 2. After any error from a writable file its contents are unknown (a write may have been
//!    partly done and the buffer is discarded); the caller must stop using it.
//! 3. Every OS error leaves as [`Error`] naming the operation and the path.
//! 4. A lock is held by at most one handle in this process (a process-wide set of locked paths)
//!    and one process on the machine (`flock` through `File::try_lock`).
//! 5. A file opened with [`IoMode::Direct`] has `O_DIRECT` on its descriptor or the open fails
//!    ([`Error::DirectIoUnsupported`] when the file system refuses it); it never silently falls
//!    back to buffered I/O. Its alignment rules are kept in direct.rs.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::direct::{self, read_aligned, DirectWritableFile};
use crate::{
    DataSyncer, Error, FileLock, FileSystem, IoMode, Op, RandomAccessFile, Result, WritableFile,
};

/// Bytes a [`WritableFile`] from [`OsFs`] buffers before writing to the OS.
const WRITE_BUFFER_SIZE: usize = 64 * 1024;

/// The real file system.
#[derive(Debug, Clone, Default)]
pub struct OsFs {}

impl OsFs {
    /// The OS file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// The [`IoMode`] of every descriptor this process holds open on `path` (the `flags` line
    /// of Linux's `/proc/self/fdinfo`), for tests and diagnostics that check a file really is
    /// open with `O_DIRECT`. Empty where the file is not open (or `/proc` is missing).
    pub fn descriptor_modes(&self, path: &Path) -> Result<Vec<IoMode>> {
        let target = fs::canonicalize(path).map_err(|e| Error::io(Op::OpenRead, path, e))?;
        let Ok(entries) = fs::read_dir("/proc/self/fd") else {
            return Ok(Vec::new());
        };
        let mut modes = Vec::new();
        for entry in entries.flatten() {
            // Descriptors close while we look: skip any that vanish.
            if fs::read_link(entry.path()).ok().as_deref() != Some(target.as_path()) {
                continue;
            }
            let info_path = Path::new("/proc/self/fdinfo").join(entry.file_name());
            let Ok(info) = fs::read_to_string(&info_path) else {
                continue;
            };
            let flags = info
                .lines()
                .find_map(|line| line.strip_prefix("flags:"))
                .and_then(|octal| i64::from_str_radix(octal.trim(), 8).ok());
            if let Some(flags) = flags {
                modes.push(if flags & i64::from(libc::O_DIRECT) != 0 {
                    IoMode::Direct
                } else {
                    IoMode::Buffered
                });
            }
        }
        Ok(modes)
    }

    /// The whole text of a small file read at once, such as `/proc/self/io`. Not part of
    /// [`FileSystem`]: database files are read through positioned reads, and procfs files
    /// report a size of 0, so benchmarks and tools reading process statistics use this.
    pub fn read_to_string(&self, path: &Path) -> Result<String> {
        fs::read_to_string(path).map_err(|e| Error::io(Op::OpenRead, path, e))
    }

    /// Removes `dir` and everything under it (benchmark scratch directories; no database
    /// code removes a directory tree).
    pub fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        fs::remove_dir_all(dir).map_err(|e| Error::io(Op::Remove, dir, e))
    }
}

impl FileSystem for OsFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(Op::Create, path, e))?;
        Ok(Box::new(OsWritableFile::new(file, path.to_path_buf(), 0)))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| Error::io(Op::OpenAppend, path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(Op::OpenAppend, path, e))?
            .len();
        Ok(Box::new(OsWritableFile::new(file, path.to_path_buf(), len)))
    }

    fn open_read(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_read_with(path, IoMode::Buffered)
    }

    fn create_with(&self, path: &Path, mode: IoMode) -> Result<Box<dyn WritableFile>> {
        if mode == IoMode::Buffered {
            return self.create(path);
        }
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|e| direct::open_error(Op::Create, path, e))?;
        Ok(Box::new(DirectWritableFile::new(file, path.to_path_buf())?))
    }

    fn open_read_with(&self, path: &Path, mode: IoMode) -> Result<Arc<dyn RandomAccessFile>> {
        let direct = mode == IoMode::Direct;
        let file = if direct {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
                .map_err(|e| direct::open_error(Op::OpenRead, path, e))?
        } else {
            File::open(path).map_err(|e| Error::io(Op::OpenRead, path, e))?
        };
        Ok(Arc::new(OsRandomAccessFile {
            file,
            path: path.to_path_buf(),
            direct,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io2(Op::Rename, from, to, &e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io(Op::Remove, path, e))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| Error::io2(Op::HardLink, from, to, &e))
    }

    /// Names that are not UTF-8 are converted lossily; they cannot be Shale's own files.
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io(Op::List, dir, e))? {
            let entry = entry.map_err(|e| Error::io(Op::List, dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(Op::CreateDir, dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let file = File::open(dir).map_err(|e| Error::io(Op::SyncDir, dir, e))?;
        file.sync_all().map_err(|e| Error::io(Op::SyncDir, dir, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(Op::Lock, path, e))?;
        // The same file reached by two spellings of its path must conflict.
        let key = fs::canonicalize(path).map_err(|e| Error::io(Op::Lock, path, e))?;
        if !locked_paths().insert(key.clone()) {
            return Err(Error::Locked {
                path: path.to_path_buf(),
            });
        }
        match file.try_lock() {
            Ok(()) => Ok(Box::new(OsFileLock { file, key })),
            Err(e) => {
                locked_paths().remove(&key);
                Err(match e {
                    fs::TryLockError::WouldBlock => Error::Locked {
                        path: path.to_path_buf(),
                    },
                    fs::TryLockError::Error(e) => Error::io(Op::Lock, path, e),
                })
            }
        }
    }

    fn size(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io(Op::Size, path, e))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists()
            .map_err(|e| Error::io(Op::Exists, path, e))
    }

    fn available_space(&self, dir: &Path) -> Result<Option<u64>> {
        use std::os::unix::ffi::OsStrExt as _;
        let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            return Ok(None);
        };
        // SAFETY: `c_path` is a NUL-terminated path and `stat` a zeroed, writable statvfs
        // that the call fills in; neither outlives the call.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        let status = unsafe { libc::statvfs(c_path.as_ptr(), &raw mut stat) };
        if status != 0 {
            return Err(Error::io(Op::Size, dir, std::io::Error::last_os_error()));
        }
        #[allow(clippy::useless_conversion)] // the field widths differ between platforms
        let free = u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize));
        Ok(Some(free))
    }
}

/// Paths locked by any `OsFs` handle in this process.
fn locked_paths() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    static LOCKED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    // The set stays consistent even if a holder panicked: each update is a single insert/remove.
    LOCKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An exclusive lock from [`OsFs::lock`].
#[derive(Debug)]
struct OsFileLock {
    file: File,
    key: PathBuf,
}

impl FileLock for OsFileLock {}

impl Drop for OsFileLock {
    fn drop(&mut self) {
        // Release the OS lock before the in-process entry, so a new holder that passes the set
        // check cannot find the flock still taken. Closing the file would release it anyway.
        let _ = self.file.unlock();
        locked_paths().remove(&self.key);
    }
}

/// A file from [`OsFs::create`] or [`OsFs::open_append`].
#[derive(Debug)]
struct OsWritableFile {
    file: File,
    path: PathBuf,
    buffer: Vec<u8>,
    /// Bytes in the file plus bytes in `buffer`.
    len: u64,
    /// Where the last `start_writeback` ended: the next one asks for the bytes after it.
    written_back: u64,
}

impl OsWritableFile {
    fn new(file: File, path: PathBuf, len: u64) -> Self {
        Self {
            file,
            path,
            buffer: Vec::with_capacity(WRITE_BUFFER_SIZE),
            len,
            written_back: len,
        }
    }

    fn write_buffer(&mut self, op: Op) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all(&self.buffer);
        // Written or not, these bytes must never be written twice (invariant 2).
        self.buffer.clear();
        result.map_err(|e| Error::io(op, &self.path, e))
    }
}

impl WritableFile for OsWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.buffer.len() + data.len() > WRITE_BUFFER_SIZE {
            self.write_buffer(Op::Append)?;
        }
        if data.len() >= WRITE_BUFFER_SIZE {
            self.file
                .write_all(data)
                .map_err(|e| Error::io(Op::Append, &self.path, e))?;
        } else {
            self.buffer.extend_from_slice(data);
        }
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_buffer(Op::Flush)
    }

    fn start_writeback(&mut self) -> Result<()> {
        self.write_buffer(Op::Flush)?;
        let Ok(offset) = libc::off64_t::try_from(self.written_back) else {
            return Ok(());
        };
        let len = self.len.saturating_sub(self.written_back);
        let Ok(nbytes) = libc::off64_t::try_from(len) else {
            return Ok(());
        };
        if nbytes == 0 {
            return Ok(());
        }
        // SAFETY: the descriptor is this open file's; the call reads no memory of ours.
        let done = unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                offset,
                nbytes,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        if done != 0 {
            return Err(Error::io(Op::Flush, &self.path, io::Error::last_os_error()));
        }
        self.written_back = self.len;
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        self.write_buffer(Op::SyncData)?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(Op::SyncData, &self.path, e))
    }

    fn concurrent_syncer(&mut self) -> Result<Option<Box<dyn DataSyncer>>> {
        self.write_buffer(Op::Flush)?;
        // A second descriptor of the same open file: fdatasync on it covers what this
        // one wrote, and needs nothing of this writer's state.
        let file = self
            .file
            .try_clone()
            .map_err(|e| Error::io(Op::SyncData, &self.path, e))?;
        Ok(Some(Box::new(OsDataSyncer {
            file,
            path: self.path.clone(),
        })))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// An [`OsWritableFile`]'s [`DataSyncer`].
#[derive(Debug)]
struct OsDataSyncer {
    file: File,
    path: PathBuf,
}

impl DataSyncer for OsDataSyncer {
    fn sync_data(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(Op::SyncData, &self.path, e))
    }
}

impl Drop for OsWritableFile {
    fn drop(&mut self) {
        // Best effort: a caller that cares about the bytes has flushed or synced already.
        let _ = self.write_buffer(Op::Flush);
    }
}

/// A file from [`OsFs::open_read`].
#[derive(Debug)]
struct OsRandomAccessFile {
    file: File,
    path: PathBuf,
    /// Whether `file` was opened with `O_DIRECT`.
    direct: bool,
}

impl OsRandomAccessFile {
    fn eof_error(&self, offset: u64, len: usize) -> Error {
        // If even the size is unavailable, report 0: the read failing is the news.
        let file_size = self.file.metadata().map_or(0, |m| m.len());
        Error::UnexpectedEof {
            path: self.path.clone(),
            offset,
            len,
            file_size,
        }
    }
}

impl RandomAccessFile for OsRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let result = if self.direct {
            read_aligned(&self.file, offset, buf)
        } else {
            self.file.read_exact_at(buf, offset)
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(self.eof_error(offset, buf.len()))
            }
            Err(e) => Err(Error::io(Op::Read, &self.path, e)),
        }
    }

    fn size(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| Error::io(Op::Size, &self.path, e))
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let path = std::env::temp_dir().join(format!(
                "shale-fs-os-{tag}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&path);
            fs::create_dir_all(&path).expect("create temp dir");
            Self(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn buffer_is_written_when_full_and_on_drop() {
        let dir = TempDir::new("buffer");
        let path = dir.0.join("f");
        let fs = OsFs::new();
        let mut file = fs.create(&path).expect("create");
        file.append(&[1; 100]).expect("append");
        assert_eq!(
            fs.size(&path).expect("size"),
            0,
            "small appends stay buffered"
        );
        file.append(&vec![2; WRITE_BUFFER_SIZE]).expect("append");
        assert_eq!(
            fs.size(&path).expect("size"),
            100 + WRITE_BUFFER_SIZE as u64
        );
        file.append(&[3; 10]).expect("append");
        assert_eq!(file.len(), 110 + WRITE_BUFFER_SIZE as u64);
        drop(file);
        assert_eq!(
            fs.size(&path).expect("size"),
            110 + WRITE_BUFFER_SIZE as u64
        );
    }

    #[test]
    fn available_space_is_reported_for_a_directory() {
        let dir = TempDir::new("space");
        let free = OsFs::new().available_space(&dir.0).expect("statvfs");
        assert!(free.is_some_and(|f| f > 0), "{free:?}");
        assert!(OsFs::new().available_space(&dir.0.join("missing")).is_err());
    }
}
