//! [`MemFs`]: an in-memory file system that knows what a power cut would keep.
//!
//! Model:
//! - An inode holds `data` (what reads see, like a page cache) and `synced_len`, the prefix
//!   made durable by `sync_data`.
//! - A directory holds a *current* namespace (name -> inode), changed by create, rename,
//!   remove, hard link and lock, and a *durable* namespace, set to the current one by
//!   `sync_dir` of that directory.
//! - `create` always makes a fresh inode, so truncating an existing name is modelled as a new
//!   file that replaces it; the old inode lives on in the durable namespace until `sync_dir`.
//! - Directories made by `create_dir_all` are durable at once and are never removed. Shale
//!   creates its directory once at open; modelling lost directories would test nothing.
//! - [`MemFs::crash_image`] builds a new, independent `MemFs` from the durable namespaces and
//!   the synced bytes (plus, in [`CrashMode::Torn`], part of the unsynced tail).
//!
//! Invariants:
//! 1. `synced_len <= data.len()` for every inode; synced bytes never change except through the
//!    `*_for_test` damage helpers.
//! 2. Lock order is the state lock, then an inode lock; nothing holding an inode lock takes the
//!    state lock. The sync hook runs with no lock held, so it may call any `MemFs` method.
//! 3. Clones share one state (files, locks, sync counter, hook); crash images share nothing
//!    with their origin.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::{DataSyncer, Error, FileLock, FileSystem, Op, RandomAccessFile, Result, WritableFile};

/// The granularity at which [`CrashMode::Torn`] keeps or tears unsynced data.
const SECTOR_SIZE: usize = 512;

/// A callback run after every successful sync point with its number (1-based).
pub type SyncHook = Arc<dyn Fn(u64) + Send + Sync>;

/// What happens to bytes that were appended but not synced when the power is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// All unsynced bytes are lost.
    DropUnsynced,
    /// A random prefix of each file's unsynced tail survives, cut at a 512-byte sector
    /// boundary counted from the file's start (or at the file's end); sometimes the last
    /// surviving sector is torn: only a prefix of it survives, or its bytes are garbage or
    /// zeros. Deterministic for a given seed on a given build.
    Torn {
        /// Seed for the random choices.
        seed: u64,
    },
}

type InodeRef = Arc<Mutex<Inode>>;

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced_len: usize,
}

#[derive(Debug, Default, Clone)]
struct Dir {
    current: BTreeMap<String, InodeRef>,
    durable: BTreeMap<String, InodeRef>,
}

#[derive(Debug, Default)]
struct State {
    /// Every directory that exists, by normalized path. Roots ("/" and "") always exist and
    /// are added on first use.
    dirs: BTreeMap<PathBuf, Dir>,
    /// Paths (normalized) locked through this state.
    locks: HashSet<PathBuf>,
}

struct Shared {
    state: Mutex<State>,
    sync_points: AtomicU64,
    hook: Mutex<Option<SyncHook>>,
    /// The device size `available_space` reports against (`u64::MAX`: unknown).
    capacity: AtomicU64,
}

impl Shared {
    fn new(state: State) -> Self {
        Self {
            state: Mutex::new(state),
            sync_points: AtomicU64::new(0),
            hook: Mutex::new(None),
            capacity: AtomicU64::new(u64::MAX),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every mutation of `State` is completed before anything that can panic, so a
        // poisoned lock still guards consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a successful sync and runs the hook. Call with no lock held (invariant 2).
    fn sync_point(&self) {
        let number = self.sync_points.fetch_add(1, Ordering::SeqCst) + 1;
        let hook = self
            .hook
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(hook) = hook {
            hook(number);
        }
    }
}

fn lock_inode(inode: &InodeRef) -> MutexGuard<'_, Inode> {
    inode.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An in-memory file system tracking durability. Cheap to clone; clones share all state.
#[derive(Clone)]
pub struct MemFs {
    shared: Arc<Shared>,
}

impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemFs")
            .field("sync_points", &self.sync_point_count())
            .finish_non_exhaustive()
    }
}

impl Default for MemFs {
    fn default() -> Self {
        Self::new()
    }
}

/// Normalizes a path: drops `.` components and trailing slashes, resolves `..` lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Splits a normalized file path into its directory and its name.
fn split(path: &Path) -> Option<(PathBuf, String)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let parent = path.parent()?.to_path_buf();
    Some((parent, name))
}

fn is_root(path: &Path) -> bool {
    path.parent().is_none() || path.as_os_str().is_empty()
}

fn os_error(op: Op, path: &Path, kind: io::ErrorKind, message: &str) -> Error {
    Error::io(op, path, io::Error::new(kind, message))
}

impl State {
    fn dir(&self, dir: &Path) -> Option<&Dir> {
        self.dirs.get(dir)
    }

    fn dir_exists(&self, dir: &Path) -> bool {
        is_root(dir) || self.dirs.contains_key(dir)
    }

    /// The directory `dir`, which must exist (roots are added on demand).
    fn dir_mut(&mut self, op: Op, dir: &Path) -> Result<&mut Dir> {
        if !self.dir_exists(dir) {
            return Err(Error::NotFound {
                op,
                path: dir.to_path_buf(),
            });
        }
        Ok(self.dirs.entry(dir.to_path_buf()).or_default())
    }

    /// The parent directory and name of the file `path`, checking the parent exists and `path`
    /// is not a directory.
    fn file_slot(&mut self, op: Op, path: &Path) -> Result<(&mut Dir, String)> {
        if self.dirs.contains_key(path) || is_root(path) {
            return Err(os_error(
                op,
                path,
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        let Some((parent, name)) = split(path) else {
            return Err(os_error(
                op,
                path,
                io::ErrorKind::InvalidInput,
                "not a file path",
            ));
        };
        let dir = self.dir_mut(op, &parent).map_err(|_| Error::NotFound {
            op,
            path: path.to_path_buf(),
        })?;
        Ok((dir, name))
    }

    fn lookup(&self, op: Op, path: &Path) -> Result<InodeRef> {
        split(path)
            .and_then(|(parent, name)| self.dir(&parent)?.current.get(&name).cloned())
            .ok_or_else(|| Error::NotFound {
                op,
                path: path.to_path_buf(),
            })
    }

    fn add_dirs(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut cursor = Some(dir);
        while let Some(path) = cursor {
            if self.dir_exists(path) {
                break;
            }
            if self.lookup(Op::CreateDir, path).is_ok() {
                return Err(os_error(
                    Op::CreateDir,
                    path,
                    io::ErrorKind::AlreadyExists,
                    "a file has this name",
                ));
            }
            missing.push(path.to_path_buf());
            cursor = path.parent();
        }
        for path in missing {
            self.dirs.insert(path, Dir::default());
        }
        Ok(())
    }
}

impl MemFs {
    /// An empty file system with the root directories (`/` and the relative root) present.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Shared::new(State::default())),
        }
    }

    /// The state a power cut at this instant would leave, as a new independent `MemFs`:
    /// only directory entries made durable by `sync_dir`, and for each file its synced bytes
    /// plus what `mode` keeps of the rest. Everything in the image is durable; it holds no
    /// locks, no hook, and its sync counter starts at 0.
    #[must_use]
    pub fn crash_image(&self, mode: CrashMode) -> MemFs {
        let state = self.shared.state();
        // Hard links share an inode in the image too, and its bytes are decided once.
        let mut copies: HashMap<*const Mutex<Inode>, InodeRef> = HashMap::new();
        let mut dirs = BTreeMap::new();
        for (dir_path, dir) in &state.dirs {
            let mut names = BTreeMap::new();
            for (name, inode) in &dir.durable {
                let copy = copies
                    .entry(Arc::as_ptr(inode))
                    .or_insert_with(|| {
                        let inode = lock_inode(inode);
                        let data = match mode {
                            CrashMode::DropUnsynced => inode.data[..inode.synced_len].to_vec(),
                            CrashMode::Torn { seed } => {
                                let mut rng =
                                    SmallRng::seed_from_u64(seed ^ path_hash(&dir_path.join(name)));
                                torn_bytes(&inode.data, inode.synced_len, &mut rng)
                            }
                        };
                        let synced_len = data.len();
                        Arc::new(Mutex::new(Inode { data, synced_len }))
                    })
                    .clone();
                names.insert(name.clone(), copy);
            }
            dirs.insert(
                dir_path.clone(),
                Dir {
                    current: names.clone(),
                    durable: names,
                },
            );
        }
        MemFs {
            shared: Arc::new(Shared::new(State {
                dirs,
                locks: HashSet::new(),
            })),
        }
    }

    /// Successful `sync_data` and `sync_dir` calls so far (on this instance and its clones).
    pub fn sync_point_count(&self) -> u64 {
        self.shared.sync_points.load(Ordering::SeqCst)
    }

    /// Sets (or clears, with `None`) a callback run after each successful `sync_data` or
    /// `sync_dir` with the sync-point number (1-based, as [`Self::sync_point_count`] then
    /// reads). It runs on the syncing thread with no lock held, so it may call
    /// [`Self::crash_image`]. A hook that captures a clone of this `MemFs` keeps its state
    /// alive until the hook is cleared.
    pub fn set_sync_hook(&self, hook: Option<SyncHook>) {
        *self
            .shared
            .hook
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = hook;
    }

    /// Makes `available_space` report `capacity` less [`Self::total_bytes`] (`None`: unknown,
    /// the default). Writes are not refused by it; inject ENOSPC with `FaultFs` for that.
    pub fn set_capacity_for_test(&self, capacity: Option<u64>) {
        self.shared
            .capacity
            .store(capacity.unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// The sum of the sizes of the files currently named (a file with several names counts
    /// once), including unsynced bytes.
    pub fn total_bytes(&self) -> u64 {
        let state = self.shared.state();
        let mut seen = HashSet::new();
        let mut total = 0;
        for dir in state.dirs.values() {
            for inode in dir.current.values() {
                if seen.insert(Arc::as_ptr(inode)) {
                    total += lock_inode(inode).data.len() as u64;
                }
            }
        }
        total
    }

    /// The current bytes of a file, synced or not (for tests).
    pub fn file_contents(&self, path: impl AsRef<Path>) -> Result<Vec<u8>> {
        let path = normalize(path.as_ref());
        let inode = self.shared.state().lookup(Op::Read, &path)?;
        let data = lock_inode(&inode).data.clone();
        Ok(data)
    }

    /// Whether the file's name is durable, i.e. would survive a crash (for tests).
    pub fn is_durable_name(&self, path: impl AsRef<Path>) -> bool {
        let path = normalize(path.as_ref());
        let state = self.shared.state();
        split(&path)
            .and_then(|(parent, name)| state.dir(&parent).map(|d| d.durable.contains_key(&name)))
            .unwrap_or(false)
    }

    /// Writes a file holding `bytes`, already durable (name and contents), creating missing
    /// parent directories (for tests planting fixtures).
    pub fn write_file_for_test(&self, path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        let path = normalize(path.as_ref());
        let mut state = self.shared.state();
        if let Some(parent) = path.parent() {
            state.add_dirs(parent)?;
        }
        let (dir, name) = state.file_slot(Op::Create, &path)?;
        let inode = Arc::new(Mutex::new(Inode {
            data: bytes.to_vec(),
            synced_len: bytes.len(),
        }));
        dir.current.insert(name.clone(), inode.clone());
        dir.durable.insert(name, inode);
        Ok(())
    }

    /// Flips bits of the byte at `offset` (`byte ^= xor_mask`), synced or not, as storage
    /// corruption would. Open readers see the change.
    pub fn corrupt_for_test(
        &self,
        path: impl AsRef<Path>,
        offset: u64,
        xor_mask: u8,
    ) -> Result<()> {
        let path = normalize(path.as_ref());
        let inode = self.shared.state().lookup(Op::Read, &path)?;
        let mut inode = lock_inode(&inode);
        let file_size = inode.data.len() as u64;
        match usize::try_from(offset)
            .ok()
            .and_then(|i| inode.data.get_mut(i))
        {
            Some(byte) => {
                *byte ^= xor_mask;
                Ok(())
            }
            None => Err(Error::UnexpectedEof {
                path,
                offset,
                len: 1,
                file_size,
            }),
        }
    }

    /// Cuts a file to `len` bytes (or extends it with zeros), as a lost tail would.
    pub fn truncate_for_test(&self, path: impl AsRef<Path>, len: u64) -> Result<()> {
        let path = normalize(path.as_ref());
        let inode = self.shared.state().lookup(Op::Read, &path)?;
        let len = usize::try_from(len)
            .map_err(|_| os_error(Op::Append, &path, io::ErrorKind::InvalidInput, "too long"))?;
        let mut inode = lock_inode(&inode);
        inode.data.resize(len, 0);
        inode.synced_len = inode.synced_len.min(len);
        Ok(())
    }
}

/// FNV-1a of a path, to give every file of a torn image its own random stream.
fn path_hash(path: &Path) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// What [`CrashMode::Torn`] keeps of a file with `data` of which `synced` bytes are durable.
/// The result is at least `synced` and at most `data.len()` bytes long, and equals `data` on
/// every byte except possibly those of the last kept sector at or after `synced`.
fn torn_bytes(data: &[u8], synced: usize, rng: &mut impl Rng) -> Vec<u8> {
    let len = data.len();
    if synced >= len {
        return data.to_vec();
    }
    // Cut points: nothing of the tail, each sector boundary inside it, all of it.
    let first_boundary = (synced / SECTOR_SIZE + 1) * SECTOR_SIZE;
    let inner_boundaries = if first_boundary < len {
        (len - 1 - first_boundary) / SECTOR_SIZE + 1
    } else {
        0
    };
    let choice = rng.gen_range(0..inner_boundaries + 2);
    let cut = match choice {
        0 => synced,
        c if c <= inner_boundaries => first_boundary + (c - 1) * SECTOR_SIZE,
        _ => len,
    };
    let mut kept = data[..cut].to_vec();
    if cut > synced && rng.gen_bool(0.25) {
        // The last kept sector, never reaching into synced bytes.
        let sector_start = ((cut - 1) / SECTOR_SIZE * SECTOR_SIZE).max(synced);
        match rng.gen_range(0..3) {
            0 => kept.truncate(rng.gen_range(sector_start..cut)),
            1 => rng.fill(&mut kept[sector_start..cut]),
            _ => kept[sector_start..cut].fill(0),
        }
    }
    kept
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let path = normalize(path);
        let inode = InodeRef::default();
        let mut state = self.shared.state();
        let (dir, name) = state.file_slot(Op::Create, &path)?;
        dir.current.insert(name, inode.clone());
        drop(state);
        Ok(Box::new(MemWritableFile {
            inode,
            len: 0,
            shared: self.shared.clone(),
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let path = normalize(path);
        let mut state = self.shared.state();
        let (dir, name) = state.file_slot(Op::OpenAppend, &path)?;
        let inode = dir.current.entry(name).or_default().clone();
        let len = lock_inode(&inode).data.len() as u64;
        drop(state);
        Ok(Box::new(MemWritableFile {
            inode,
            len,
            shared: self.shared.clone(),
        }))
    }

    fn open_read(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let normalized = normalize(path);
        let inode = self.shared.state().lookup(Op::OpenRead, &normalized)?;
        Ok(Arc::new(MemRandomAccessFile {
            inode,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (from, to) = (normalize(from), normalize(to));
        let mut state = self.shared.state();
        let inode = state.lookup(Op::Rename, &from)?;
        let (to_dir, to_name) = state.file_slot(Op::Rename, &to)?;
        to_dir.current.insert(to_name, inode);
        if from != to {
            let (from_dir, from_name) = state.file_slot(Op::Rename, &from)?;
            from_dir.current.remove(&from_name);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let path = normalize(path);
        let mut state = self.shared.state();
        let (dir, name) = state.file_slot(Op::Remove, &path)?;
        match dir.current.remove(&name) {
            Some(_) => Ok(()),
            None => Err(Error::NotFound {
                op: Op::Remove,
                path,
            }),
        }
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        let (from, to) = (normalize(from), normalize(to));
        let mut state = self.shared.state();
        let inode = state.lookup(Op::HardLink, &from)?;
        let (dir, name) = state.file_slot(Op::HardLink, &to)?;
        if dir.current.contains_key(&name) {
            return Err(os_error(
                Op::HardLink,
                &to,
                io::ErrorKind::AlreadyExists,
                "link target exists",
            ));
        }
        dir.current.insert(name, inode);
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let dir = normalize(dir);
        let state = self.shared.state();
        if !state.dir_exists(&dir) {
            return Err(Error::NotFound {
                op: Op::List,
                path: dir,
            });
        }
        let mut names: Vec<String> = state
            .dir(&dir)
            .map(|d| d.current.keys().cloned().collect())
            .unwrap_or_default();
        for child in state.dirs.keys() {
            if child.parent() == Some(dir.as_path()) && !is_root(child) {
                if let Some((_, name)) = split(child) {
                    names.push(name);
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.shared.state().add_dirs(&normalize(dir))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let dir = normalize(dir);
        {
            let mut state = self.shared.state();
            let entry = state.dir_mut(Op::SyncDir, &dir)?;
            entry.durable = entry.current.clone();
        }
        self.shared.sync_point();
        Ok(())
    }

    /// Creates the file if missing, like `OsFs`. Locks are per `MemFs` state: a crash image
    /// starts unlocked.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let path = normalize(path);
        let mut state = self.shared.state();
        let (dir, name) = state.file_slot(Op::Lock, &path)?;
        dir.current.entry(name).or_default();
        if !state.locks.insert(path.clone()) {
            return Err(Error::Locked { path });
        }
        drop(state);
        Ok(Box::new(MemFileLock {
            path,
            shared: self.shared.clone(),
        }))
    }

    fn size(&self, path: &Path) -> Result<u64> {
        let path = normalize(path);
        let state = self.shared.state();
        if state.dir_exists(&path) {
            return Ok(0);
        }
        let inode = state.lookup(Op::Size, &path)?;
        let len = lock_inode(&inode).data.len() as u64;
        Ok(len)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        let path = normalize(path);
        let state = self.shared.state();
        Ok(state.dir_exists(&path) || state.lookup(Op::Exists, &path).is_ok())
    }

    fn available_space(&self, _dir: &Path) -> Result<Option<u64>> {
        let capacity = self.shared.capacity.load(Ordering::SeqCst);
        if capacity == u64::MAX {
            return Ok(None);
        }
        Ok(Some(capacity.saturating_sub(self.total_bytes())))
    }
}

/// A held [`MemFs`] lock.
struct MemFileLock {
    path: PathBuf,
    shared: Arc<Shared>,
}

impl fmt::Debug for MemFileLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemFileLock")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl FileLock for MemFileLock {}

impl Drop for MemFileLock {
    fn drop(&mut self) {
        self.shared.state().locks.remove(&self.path);
    }
}

/// A [`MemFs`] file open for appending. There is no user-space buffer: appended bytes are in
/// the "page cache" at once, and `flush` does nothing.
struct MemWritableFile {
    inode: InodeRef,
    len: u64,
    shared: Arc<Shared>,
}

impl fmt::Debug for MemWritableFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemWritableFile")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl WritableFile for MemWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        lock_inode(&self.inode).data.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        sync_inode(&self.inode, &self.shared);
        Ok(())
    }

    fn concurrent_syncer(&mut self) -> Result<Option<Box<dyn DataSyncer>>> {
        Ok(Some(Box::new(MemDataSyncer {
            inode: self.inode.clone(),
            shared: self.shared.clone(),
        })))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// Makes every byte of the inode durable, then counts the sync point.
fn sync_inode(inode: &InodeRef, shared: &Shared) {
    {
        let mut inode = lock_inode(inode);
        inode.synced_len = inode.data.len();
    }
    shared.sync_point();
}

/// A [`MemWritableFile`]'s [`DataSyncer`]: there is no buffer, so every byte appended before
/// the call is in the inode.
struct MemDataSyncer {
    inode: InodeRef,
    shared: Arc<Shared>,
}

impl fmt::Debug for MemDataSyncer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemDataSyncer").finish_non_exhaustive()
    }
}

impl DataSyncer for MemDataSyncer {
    fn sync_data(&self) -> Result<()> {
        sync_inode(&self.inode, &self.shared);
        Ok(())
    }
}

/// A [`MemFs`] file open for reading; it keeps seeing the inode's bytes after a rename or
/// remove, as an open file descriptor does.
struct MemRandomAccessFile {
    inode: InodeRef,
    path: PathBuf,
}

impl fmt::Debug for MemRandomAccessFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemRandomAccessFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl RandomAccessFile for MemRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let inode = lock_inode(&self.inode);
        let file_size = inode.data.len() as u64;
        let range = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(buf.len())?));
        match range.and_then(|r| inode.data.get(r)) {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(Error::UnexpectedEof {
                path: self.path.clone(),
                offset,
                len: buf.len(),
                file_size,
            }),
        }
    }

    fn size(&self) -> Result<u64> {
        Ok(lock_inode(&self.inode).data.len() as u64)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_bytes_stays_between_synced_and_len_and_only_changes_last_sector() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8 + 1).collect();
        let synced = 700;
        let mut lengths = HashSet::new();
        let mut torn_seen = false;
        for seed in 0..2000 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let kept = torn_bytes(&data, synced, &mut rng);
            let k = kept.len();
            assert!((synced..=data.len()).contains(&k), "seed {seed}: len {k}");
            let last_sector = if k > synced {
                ((k - 1) / SECTOR_SIZE * SECTOR_SIZE).max(synced)
            } else {
                k
            };
            assert_eq!(kept[..last_sector], data[..last_sector], "seed {seed}");
            let whole_cut = k == synced || k == data.len() || k % SECTOR_SIZE == 0;
            if !whole_cut || kept[..] != data[..k] {
                torn_seen = true;
            }
            lengths.insert(k);
        }
        assert!(torn_seen, "some images must tear their last sector");
        for expected in [700, 1024, 1536, 4608, 5000] {
            assert!(
                lengths.contains(&expected),
                "cut at {expected} never chosen"
            );
        }
    }

    #[test]
    fn torn_bytes_of_fully_synced_file_is_the_file() {
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(torn_bytes(b"abc", 3, &mut rng), b"abc");
    }

    #[test]
    fn normalize_drops_dots_and_trailing_slashes() {
        assert_eq!(normalize(Path::new("/a/./b/")), Path::new("/a/b"));
        assert_eq!(normalize(Path::new("/a/c/../b")), Path::new("/a/b"));
        assert_eq!(normalize(Path::new("./a")), Path::new("a"));
    }
}
