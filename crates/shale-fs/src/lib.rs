//! The file-system seam of Shale: the only crate that touches the OS file system.
//!
//! Every other crate takes a [`FileSystem`] so that the same engine code runs on
//! - [`OsFs`]: the real file system (fdatasync, directory fsync, `flock`-style locks,
//!   buffered or `O_DIRECT` reads and writes, chosen per open by [`IoMode`]);
//! - [`MemFs`]: memory that knows which bytes and directory entries are durable and can
//!   produce the image a power cut would leave ([`MemFs::crash_image`]);
//! - [`FaultFs`]: a wrapper that injects failures by operation, path and count, and runs a
//!   test's hook before every call.
//!
//! # Durability contract (what callers must do, and what `MemFs` models)
//! 1. Appended bytes are durable only after [`WritableFile::sync_data`] returns `Ok`.
//! 2. A directory entry change (create, rename, remove, hard link) is durable only after
//!    [`FileSystem::sync_dir`] of the parent directory returns `Ok`.
//! 3. After a failed `sync_data` the file's unsynced bytes are in an unknown state; callers
//!    must never retry the sync and assume the data is safe (see "fsyncgate").
//! 4. A [`DataSyncer`] from [`WritableFile::concurrent_syncer`] makes durable every byte
//!    flushed to its file before its `sync_data` call, while the file's writer goes on
//!    appending; bytes appended during the call may or may not be durable after it. Rule 3
//!    holds for it too.
//!
//! Clock and threads stay out of this crate on purpose.

mod direct;
mod error;
mod fault;
mod mem;
mod os;
mod replace;

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

pub use error::{Error, Op, Result};
pub use fault::{FaultError, FaultFs, FaultRule, FaultTrigger, FsCall, FsHook, OpKind, RuleId};
pub use mem::{CrashMode, MemFs, SyncHook};
pub use os::OsFs;
pub use replace::{replace_file_durably, temp_path};

/// A file system shaped for an LSM tree: write-once files built by appending, read by
/// position, published by rename and made durable by explicit syncs.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates `path` empty (truncating any existing file) and opens it for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens an existing file for appending at its end (creating it if missing).
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens an existing file for positional reads.
    fn open_read(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// [`Self::create`] with the given [`IoMode`]. A file system that refuses `O_DIRECT`
    /// fails with [`Error::DirectIoUnsupported`]. The default ignores the mode (right for a
    /// file system without a page cache, such as `MemFs`); a wrapper must pass it through.
    fn create_with(&self, path: &Path, mode: IoMode) -> Result<Box<dyn WritableFile>> {
        let _ = mode;
        self.create(path)
    }
    /// [`Self::open_read`] with the given [`IoMode`]; the default ignores the mode, as
    /// [`Self::create_with`]'s does.
    fn open_read_with(&self, path: &Path, mode: IoMode) -> Result<Arc<dyn RandomAccessFile>> {
        let _ = mode;
        self.open_read(path)
    }
    /// Atomically replaces `to` with `from` (POSIX rename semantics).
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Creates a hard link `to` naming the same file as `from`.
    fn hard_link(&self, from: &Path, to: &Path) -> Result<()>;
    /// Lists the names (not paths) of the entries in `dir`, sorted.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates `dir` and any missing parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the entries of `dir` (creates, renames, removes) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes an exclusive advisory lock on `path` (creating it), held until the guard drops.
    /// Fails with [`Error::Locked`] when another holder (process or handle) has it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// The current size of a file in bytes.
    fn size(&self, path: &Path) -> Result<u64>;
    /// Whether `path` names an existing file or directory.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// Bytes free for new files on the device holding the existing directory `dir`, when the
    /// file system can tell (`None`: unknown, the default). Tools that copy a lot check it
    /// before they start, so that a full disk refuses them instead of stopping them midway.
    fn available_space(&self, dir: &Path) -> Result<Option<u64>> {
        let _ = dir;
        Ok(None)
    }
}

/// How a file's bytes move between Shale and the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// Through the OS page cache.
    #[default]
    Buffered,
    /// With `O_DIRECT`, bypassing the page cache (`RocksDB`'s `use_direct_reads` and
    /// `use_direct_io_for_flush_and_compaction`): the block cache is then the only cache of
    /// the file's bytes. `OsFs` aligns offsets, lengths and buffers itself (os.rs), so callers
    /// read and append as usual.
    Direct,
}

/// A file open for appending.
pub trait WritableFile: Send + Debug {
    /// Appends `data`. It may sit in a user-space buffer until [`Self::flush`] or a sync.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the OS (they survive a process crash, not a power cut).
    fn flush(&mut self) -> Result<()>;
    /// Flushes, then asks the OS to start writing the flushed bytes to the device without
    /// waiting for it (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`, as `RocksDB`'s
    /// `bytes_per_sync` does). Nothing becomes durable by it (contract 1 still holds): it
    /// spreads a large file's device writes over the time it is written, so that the final
    /// [`Self::sync_data`] waits for the last stretch only. Failures count as a flush's. The
    /// default only flushes.
    fn start_writeback(&mut self) -> Result<()> {
        self.flush()
    }
    /// Flushes, then makes every appended byte durable (fdatasync).
    fn sync_data(&mut self) -> Result<()>;
    /// Flushes, then returns a handle that syncs this file from another thread (contract 4),
    /// so that a background sync does not hold up the appends behind it (`RocksDB`'s
    /// `SyncWithoutFlush`). `None` where the file cannot be synced that way: the caller then
    /// syncs through [`Self::sync_data`]. The default flushes and returns `None`.
    fn concurrent_syncer(&mut self) -> Result<Option<Box<dyn DataSyncer>>> {
        self.flush()?;
        Ok(None)
    }
    /// Bytes appended so far, including any still buffered.
    fn len(&self) -> u64;
    /// Whether nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Syncs one file's flushed bytes while its writer keeps appending (contract 4).
pub trait DataSyncer: Send + Debug {
    /// Makes every byte flushed to the file before this call durable (fdatasync).
    fn sync_data(&self) -> Result<()>;
}

/// A file open for positional reads; shareable between threads.
pub trait RandomAccessFile: Send + Sync + Debug {
    /// Reads exactly `buf.len()` bytes at `offset`, failing with
    /// [`Error::UnexpectedEof`] if the file is shorter.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The file's size in bytes.
    fn size(&self) -> Result<u64>;
    /// The path the file was opened with (for error messages).
    fn path(&self) -> &Path;
}

/// A held lock; dropping it releases the lock.
pub trait FileLock: Send + Sync + Debug {}
