//! A `MemFs` whose WAL files a test wraps (to watch or hold their syncs), shared by
//! `tests/crash.rs` and `tests/wal_sync.rs`. Every other call passes straight through.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use shale_fs::{FileLock, FileSystem, MemFs, RandomAccessFile, Result as FsResult, WritableFile};

/// Wraps one WAL file as it is created or opened for appending.
type WrapWal = Arc<dyn Fn(Box<dyn WritableFile>) -> Box<dyn WritableFile> + Send + Sync>;

/// `inner` with every `*.wal` writable file passed through `wrap`.
#[derive(Clone)]
pub struct WalWrappingFs {
    pub inner: MemFs,
    wrap: WrapWal,
}

impl fmt::Debug for WalWrappingFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WalWrappingFs").finish_non_exhaustive()
    }
}

impl WalWrappingFs {
    pub fn new(
        inner: MemFs,
        wrap: impl Fn(Box<dyn WritableFile>) -> Box<dyn WritableFile> + Send + Sync + 'static,
    ) -> Self {
        WalWrappingFs {
            inner,
            wrap: Arc::new(wrap),
        }
    }

    fn wrap_if_wal(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        if path.extension().is_some_and(|e| e == "wal") {
            (self.wrap)(file)
        } else {
            file
        }
    }
}

impl FileSystem for WalWrappingFs {
    fn create(&self, path: &Path) -> FsResult<Box<dyn WritableFile>> {
        Ok(self.wrap_if_wal(path, self.inner.create(path)?))
    }
    fn open_append(&self, path: &Path) -> FsResult<Box<dyn WritableFile>> {
        Ok(self.wrap_if_wal(path, self.inner.open_append(path)?))
    }
    fn open_read(&self, path: &Path) -> FsResult<Arc<dyn RandomAccessFile>> {
        self.inner.open_read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> FsResult<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> FsResult<()> {
        self.inner.remove(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> FsResult<()> {
        self.inner.hard_link(from, to)
    }
    fn list(&self, dir: &Path) -> FsResult<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> FsResult<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> FsResult<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> FsResult<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    fn size(&self, path: &Path) -> FsResult<u64> {
        self.inner.size(path)
    }
    fn exists(&self, path: &Path) -> FsResult<bool> {
        self.inner.exists(path)
    }
}
