//! [`FaultFs`]: a [`FileSystem`] wrapper that injects failures by operation, path and count.
//!
//! Every call through a `FaultFs`, or through a file opened by it, is counted by [`OpKind`] and
//! checked against the rules in the order they were added. Every rule whose operation and path
//! filter match counts the call; the first of them whose trigger fires decides the failure.
//!
//! What each [`FaultError`] does:
//! - `Eio`, `NoSpace`: the operation is not performed and fails.
//! - `ShortWrite` on an append: the first half of the data reaches the inner file, then the
//!   append fails. On any other operation it acts like `Eio`.
//! - `FailedSync` on `sync_data`: buffered bytes are flushed to the inner file but not synced,
//!   and the call fails; on `sync_dir` nothing is synced. On any other operation it acts like
//!   `Eio`.
//!
//! A test can also set a hook ([`FaultFs::set_hook`]): a closure run on the calling thread for
//! every call, before the rules, with what the call is ([`FsCall`]). It may block (hold a
//! background job at a chosen file), count, act on the file system, or fail the call with any
//! [`Error`] (which then is not counted as injected).
//!
//! Invariants:
//! 1. A rule's trigger sees only the calls matching its operation and path filter, numbered
//!    from 1 in the order they reached the `FaultFs` (calls are serialized on one lock).
//! 2. Without rules or hook a `FaultFs` behaves exactly like its inner file system.
//! 3. The hook runs with no lock of the `FaultFs` held, so it may block or call back into it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::{
    DataSyncer, Error, FileLock, FileSystem, IoMode, Op, RandomAccessFile, Result, WritableFile,
};

/// Which calls a [`FaultRule`] applies to: one operation, or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// Every operation.
    Any,
    /// [`FileSystem::create`].
    Create,
    /// [`FileSystem::open_append`].
    OpenAppend,
    /// [`FileSystem::open_read`].
    OpenRead,
    /// [`RandomAccessFile::read_exact_at`].
    Read,
    /// [`WritableFile::append`].
    Append,
    /// [`WritableFile::flush`].
    Flush,
    /// [`WritableFile::sync_data`].
    SyncData,
    /// [`FileSystem::rename`].
    Rename,
    /// [`FileSystem::remove`].
    Remove,
    /// [`FileSystem::hard_link`].
    HardLink,
    /// [`FileSystem::list`].
    List,
    /// [`FileSystem::create_dir_all`].
    CreateDir,
    /// [`FileSystem::sync_dir`].
    SyncDir,
    /// [`FileSystem::lock`].
    Lock,
    /// [`FileSystem::size`] and [`RandomAccessFile::size`].
    Size,
    /// [`FileSystem::exists`].
    Exists,
}

impl OpKind {
    const COUNT: usize = 17;

    fn index(self) -> usize {
        self as usize
    }

    /// Whether a rule for `self` applies to `op`.
    pub fn matches(self, op: Op) -> bool {
        self == OpKind::Any || self == OpKind::from(op)
    }
}

impl From<Op> for OpKind {
    fn from(op: Op) -> Self {
        match op {
            Op::Create => OpKind::Create,
            Op::OpenAppend => OpKind::OpenAppend,
            Op::OpenRead => OpKind::OpenRead,
            Op::Read => OpKind::Read,
            Op::Append => OpKind::Append,
            Op::Flush => OpKind::Flush,
            Op::SyncData => OpKind::SyncData,
            Op::Rename => OpKind::Rename,
            Op::Remove => OpKind::Remove,
            Op::HardLink => OpKind::HardLink,
            Op::List => OpKind::List,
            Op::CreateDir => OpKind::CreateDir,
            Op::SyncDir => OpKind::SyncDir,
            Op::Lock => OpKind::Lock,
            Op::Size => OpKind::Size,
            Op::Exists => OpKind::Exists,
        }
    }
}

/// When a matching call fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultTrigger {
    /// The nth matching call (1-based), once.
    Nth(u64),
    /// The nth matching call and every later one.
    EveryFrom(u64),
    /// Each matching call with probability `p`, from a random stream seeded by `seed`.
    Probability {
        /// Chance of failing, 0.0 to 1.0.
        p: f64,
        /// Seed of the rule's random stream.
        seed: u64,
    },
    /// Every matching call.
    Always,
}

/// The failure injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultError {
    /// An I/O error (`EIO`).
    Eio,
    /// The device is full (`ENOSPC`); [`Error::is_no_space`] is true.
    NoSpace,
    /// An append writes the first half of its data, then fails.
    ShortWrite,
    /// A sync fails without making anything durable.
    FailedSync,
}

impl fmt::Display for FaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultError::Eio => "I/O error (EIO)",
            FaultError::NoSpace => "no space left on device (ENOSPC)",
            FaultError::ShortWrite => "short write",
            FaultError::FailedSync => "failed sync",
        })
    }
}

/// One failure to inject: on calls of `op` whose path contains `path_contains` (any path if
/// `None`; for rename and hard link either path), when `trigger` fires, fail with `error`.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// The operation to fail.
    pub op: OpKind,
    /// A substring the path must contain.
    pub path_contains: Option<String>,
    /// Which matching calls fail.
    pub trigger: FaultTrigger,
    /// How they fail.
    pub error: FaultError,
}

impl FaultRule {
    /// A rule for `op` on any path.
    pub fn new(op: OpKind, trigger: FaultTrigger, error: FaultError) -> Self {
        Self {
            op,
            path_contains: None,
            trigger,
            error,
        }
    }

    /// Restricts the rule to paths containing `fragment`.
    #[must_use]
    pub fn path_contains(mut self, fragment: impl Into<String>) -> Self {
        self.path_contains = Some(fragment.into());
        self
    }

    fn matches(&self, op: Op, paths: &[&Path]) -> bool {
        self.op.matches(op)
            && self
                .path_contains
                .as_deref()
                .is_none_or(|fragment| paths.iter().any(|p| p.to_string_lossy().contains(fragment)))
    }
}

/// One call through a [`FaultFs`], as its hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct FsCall<'a> {
    /// The operation.
    pub op: Op,
    /// The file or directory it is on; for rename and hard link, the source.
    pub path: &'a Path,
    /// For rename and hard link: the destination.
    pub to: Option<&'a Path>,
    /// For an open (`create`, `open_append`, `open_read` and their `_with` forms): the mode
    /// asked for, [`IoMode::Buffered`] for the forms without one. `None` for other calls.
    pub mode: Option<IoMode>,
}

impl<'a> FsCall<'a> {
    fn on(op: Op, path: &'a Path) -> Self {
        Self {
            op,
            path,
            to: None,
            mode: None,
        }
    }

    fn open(op: Op, path: &'a Path, mode: IoMode) -> Self {
        Self {
            mode: Some(mode),
            ..Self::on(op, path)
        }
    }

    fn between(op: Op, from: &'a Path, to: &'a Path) -> Self {
        Self {
            to: Some(to),
            ..Self::on(op, from)
        }
    }

    /// Whether the call is on a file whose name ends with `.{extension}`.
    pub fn has_extension(&self, extension: &str) -> bool {
        self.path.extension().is_some_and(|e| e == extension)
    }
}

/// A [`FaultFs`] hook: runs before every call; an error fails the call with it.
pub type FsHook = dyn Fn(&FsCall<'_>) -> Result<()> + Send + Sync;

/// Names a rule added to a [`FaultFs`], for [`FaultFs::remove_rule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(u64);

#[derive(Debug)]
struct ActiveRule {
    id: RuleId,
    rule: FaultRule,
    /// Matching calls seen so far.
    matched: u64,
    rng: Option<SmallRng>,
}

impl ActiveRule {
    /// Counts a matching call and says whether it fails.
    fn fires(&mut self) -> bool {
        self.matched += 1;
        match self.rule.trigger {
            FaultTrigger::Nth(n) => self.matched == n,
            FaultTrigger::EveryFrom(n) => self.matched >= n,
            FaultTrigger::Probability { p, .. } => {
                self.rng.as_mut().is_some_and(|rng| rng.gen::<f64>() < p)
            }
            FaultTrigger::Always => true,
        }
    }
}

#[derive(Debug, Default)]
struct Rules {
    rules: Vec<ActiveRule>,
    next_id: u64,
}

struct Shared {
    rules: Mutex<Rules>,
    hook: RwLock<Option<Arc<FsHook>>>,
    op_counts: [AtomicU64; OpKind::COUNT],
    injected: AtomicU64,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("rules", &self.rules)
            .field("op_counts", &self.op_counts)
            .field("injected", &self.injected)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn rules(&self) -> MutexGuard<'_, Rules> {
        // Rule updates cannot panic half-way, so a poisoned lock still holds consistent rules.
        self.rules.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts `call`, runs the hook on it (its error fails the call), and returns the
    /// failure the rules inject, if any.
    fn check(&self, call: FsCall<'_>) -> Result<Option<FaultError>> {
        let op = call.op;
        self.op_counts[OpKind::from(op).index()].fetch_add(1, Ordering::SeqCst);
        self.op_counts[OpKind::Any.index()].fetch_add(1, Ordering::SeqCst);
        // Cloned out so that the hook runs with no lock held (invariant 3).
        let hook = self
            .hook
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(hook) = hook {
            hook(&call)?;
        }
        let paths: &[&Path] = match call.to {
            Some(to) => &[call.path, to],
            None => &[call.path],
        };
        let mut rules = self.rules();
        let mut fault = None;
        for active in &mut rules.rules {
            if active.rule.matches(op, paths) && active.fires() && fault.is_none() {
                fault = Some(active.rule.error);
            }
        }
        if fault.is_some() {
            self.injected.fetch_add(1, Ordering::SeqCst);
        }
        Ok(fault)
    }

    /// Fails `call` if the hook or a rule says so.
    fn guard(&self, call: FsCall<'_>) -> Result<()> {
        match self.check(call)? {
            Some(fault) => Err(injected(call.op, call.path, fault)),
            None => Ok(()),
        }
    }
}

fn injected(op: Op, path: &Path, fault: FaultError) -> Error {
    Error::Injected {
        op,
        path: path.to_path_buf(),
        fault,
    }
}

/// A [`FileSystem`] that passes calls to an inner one, failing those its rules pick.
/// Cheap to clone; clones share rules and counters.
#[derive(Debug, Clone)]
pub struct FaultFs {
    inner: Arc<dyn FileSystem>,
    shared: Arc<Shared>,
}

impl FaultFs {
    /// Wraps `inner` with no rules.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        Self {
            inner,
            shared: Arc::new(Shared {
                rules: Mutex::new(Rules::default()),
                hook: RwLock::new(None),
                op_counts: std::array::from_fn(|_| AtomicU64::new(0)),
                injected: AtomicU64::new(0),
            }),
        }
    }

    /// The wrapped file system.
    pub fn inner(&self) -> &Arc<dyn FileSystem> {
        &self.inner
    }

    /// Adds a rule, checked after those added before it.
    pub fn add_rule(&self, rule: FaultRule) -> RuleId {
        let mut rules = self.shared.rules();
        let id = RuleId(rules.next_id);
        rules.next_id += 1;
        let rng = match rule.trigger {
            FaultTrigger::Probability { seed, .. } => Some(SmallRng::seed_from_u64(seed)),
            _ => None,
        };
        rules.rules.push(ActiveRule {
            id,
            rule,
            matched: 0,
            rng,
        });
        id
    }

    /// Removes a rule; returns whether it was present.
    pub fn remove_rule(&self, id: RuleId) -> bool {
        let mut rules = self.shared.rules();
        let before = rules.rules.len();
        rules.rules.retain(|active| active.id != id);
        rules.rules.len() != before
    }

    /// Sets the hook run before every call (replacing any earlier one); see the module docs.
    pub fn set_hook(&self, hook: impl Fn(&FsCall<'_>) -> Result<()> + Send + Sync + 'static) {
        *self
            .shared
            .hook
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(hook));
    }

    /// Removes the hook.
    pub fn clear_hook(&self) {
        *self
            .shared
            .hook
            .write()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Removes every rule (counters are kept).
    pub fn clear_rules(&self) {
        self.shared.rules().rules.clear();
    }

    /// Failures injected so far.
    pub fn injected_count(&self) -> u64 {
        self.shared.injected.load(Ordering::SeqCst)
    }

    /// Calls of `kind` seen so far, failed or not ([`OpKind::Any`]: all calls).
    pub fn op_count(&self, kind: OpKind) -> u64 {
        self.shared.op_counts[kind.index()].load(Ordering::SeqCst)
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.shared
            .guard(FsCall::open(Op::Create, path, IoMode::Buffered))?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.create(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.shared
            .guard(FsCall::open(Op::OpenAppend, path, IoMode::Buffered))?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.open_append(path)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn open_read(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.shared
            .guard(FsCall::open(Op::OpenRead, path, IoMode::Buffered))?;
        Ok(Arc::new(FaultRandomAccessFile {
            inner: self.inner.open_read(path)?,
            shared: self.shared.clone(),
        }))
    }

    // The direct-I/O opens count and fail as `create` and `open_read` do, and hand the mode
    // to the wrapped file system.
    fn create_with(&self, path: &Path, mode: IoMode) -> Result<Box<dyn WritableFile>> {
        self.shared.guard(FsCall::open(Op::Create, path, mode))?;
        Ok(Box::new(FaultWritableFile {
            inner: self.inner.create_with(path, mode)?,
            path: path.to_path_buf(),
            shared: self.shared.clone(),
        }))
    }

    fn open_read_with(&self, path: &Path, mode: IoMode) -> Result<Arc<dyn RandomAccessFile>> {
        self.shared.guard(FsCall::open(Op::OpenRead, path, mode))?;
        Ok(Arc::new(FaultRandomAccessFile {
            inner: self.inner.open_read_with(path, mode)?,
            shared: self.shared.clone(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        if let Some(fault) = self.shared.check(FsCall::between(Op::Rename, from, to))? {
            return Err(injected(Op::Rename, from, fault));
        }
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.shared.guard(FsCall::on(Op::Remove, path))?;
        self.inner.remove(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        if let Some(fault) = self.shared.check(FsCall::between(Op::HardLink, from, to))? {
            return Err(injected(Op::HardLink, from, fault));
        }
        self.inner.hard_link(from, to)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.shared.guard(FsCall::on(Op::List, dir))?;
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.shared.guard(FsCall::on(Op::CreateDir, dir))?;
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.shared.guard(FsCall::on(Op::SyncDir, dir))?;
        self.inner.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.shared.guard(FsCall::on(Op::Lock, path))?;
        self.inner.lock(path)
    }

    fn size(&self, path: &Path) -> Result<u64> {
        self.shared.guard(FsCall::on(Op::Size, path))?;
        self.inner.size(path)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.shared.guard(FsCall::on(Op::Exists, path))?;
        self.inner.exists(path)
    }

    fn available_space(&self, dir: &Path) -> Result<Option<u64>> {
        self.inner.available_space(dir)
    }
}

/// A writable file opened through a [`FaultFs`].
#[derive(Debug)]
struct FaultWritableFile {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        match self.shared.check(FsCall::on(Op::Append, &self.path))? {
            None => self.inner.append(data),
            Some(FaultError::ShortWrite) => {
                self.inner.append(&data[..data.len() / 2])?;
                Err(injected(Op::Append, &self.path, FaultError::ShortWrite))
            }
            Some(fault) => Err(injected(Op::Append, &self.path, fault)),
        }
    }

    fn flush(&mut self) -> Result<()> {
        self.shared.guard(FsCall::on(Op::Flush, &self.path))?;
        self.inner.flush()
    }

    fn start_writeback(&mut self) -> Result<()> {
        self.shared.guard(FsCall::on(Op::Flush, &self.path))?;
        self.inner.start_writeback()
    }

    fn sync_data(&mut self) -> Result<()> {
        match self.shared.check(FsCall::on(Op::SyncData, &self.path))? {
            None => self.inner.sync_data(),
            Some(FaultError::FailedSync) => {
                self.inner.flush()?;
                Err(injected(Op::SyncData, &self.path, FaultError::FailedSync))
            }
            Some(fault) => Err(injected(Op::SyncData, &self.path, fault)),
        }
    }

    fn concurrent_syncer(&mut self) -> Result<Option<Box<dyn DataSyncer>>> {
        self.shared.guard(FsCall::on(Op::Flush, &self.path))?;
        Ok(self.inner.concurrent_syncer()?.map(|inner| {
            Box::new(FaultDataSyncer {
                inner,
                path: self.path.clone(),
                shared: self.shared.clone(),
            }) as Box<dyn DataSyncer>
        }))
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// A [`FaultWritableFile`]'s [`DataSyncer`]: its syncs count, and fail, as the file's do.
#[derive(Debug)]
struct FaultDataSyncer {
    inner: Box<dyn DataSyncer>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl DataSyncer for FaultDataSyncer {
    fn sync_data(&self) -> Result<()> {
        match self.shared.check(FsCall::on(Op::SyncData, &self.path))? {
            None => self.inner.sync_data(),
            Some(fault) => Err(injected(Op::SyncData, &self.path, fault)),
        }
    }
}

/// A readable file opened through a [`FaultFs`].
#[derive(Debug)]
struct FaultRandomAccessFile {
    inner: Arc<dyn RandomAccessFile>,
    shared: Arc<Shared>,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.shared.guard(FsCall::on(Op::Read, self.inner.path()))?;
        self.inner.read_exact_at(offset, buf)
    }

    fn size(&self) -> Result<u64> {
        self.shared.guard(FsCall::on(Op::Size, self.inner.path()))?;
        self.inner.size()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_kind_index_covers_every_kind() {
        let kinds = [
            OpKind::Any,
            OpKind::Create,
            OpKind::OpenAppend,
            OpKind::OpenRead,
            OpKind::Read,
            OpKind::Append,
            OpKind::Flush,
            OpKind::SyncData,
            OpKind::Rename,
            OpKind::Remove,
            OpKind::HardLink,
            OpKind::List,
            OpKind::CreateDir,
            OpKind::SyncDir,
            OpKind::Lock,
            OpKind::Size,
            OpKind::Exists,
        ];
        assert_eq!(kinds.len(), OpKind::COUNT);
        let mut seen = [false; OpKind::COUNT];
        for kind in kinds {
            assert!(!seen[kind.index()], "{kind:?} shares an index");
            seen[kind.index()] = true;
        }
    }

    #[test]
    fn any_matches_every_op_and_specific_kinds_only_their_own() {
        assert!(OpKind::Any.matches(Op::SyncDir));
        assert!(OpKind::SyncDir.matches(Op::SyncDir));
        assert!(!OpKind::SyncData.matches(Op::SyncDir));
    }
}
