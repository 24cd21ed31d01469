//! The instance's sessions as MySQL's process list: SHOW [FULL] PROCESSLIST and KILL
//! [CONNECTION | QUERY].
//!
//! Every [`Session`](crate::Session) registers a [`Process`] for its life (a
//! [`Registration`] field, which unregisters when the session is dropped). The session
//! updates it as statements start and end; other sessions read it (SHOW PROCESSLIST) and set
//! its kill flag (KILL). A running statement sees the flag through
//! [`interrupt`](crate::interrupt); an idle connection is closed by the hook the server gave
//! ([`Process::set_kill_hook`]), since only the server can close its socket.
//!
//! Invariants:
//! 1. The list holds exactly the sessions alive now, each under its current connection id
//!    (a session the server has not yet renamed to its connection id may be missing, never
//!    listed in another's place).
//! 2. KILL QUERY only interrupts a statement running when it arrives: a session clears a
//!    query kill when its next statement starts (as MySQL does). A connection kill is never
//!    cleared: every later statement of that session fails with 1317.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use shale_table::Value;

use crate::error::SqlError;
use crate::result::{ColumnMeta, ColumnTypeCode, ResultSink};
use crate::session::{text_column, Session};
use crate::types::SqlType;

const KILL_NONE: u8 = 0;
const KILL_QUERY: u8 = 1;
const KILL_CONNECTION: u8 = 2;

/// SHOW PROCESSLIST (without FULL) cuts Info to this many characters, as MySQL does.
const SHORT_INFO: usize = 100;

/// What the server calls to close a killed connection's socket.
pub type KillHook = Box<dyn Fn() + Send + Sync>;

/// What a session is doing, as SHOW PROCESSLIST shows it.
#[derive(Debug, Clone)]
struct Activity {
    id: u64,
    user: String,
    host: String,
    db: Option<String>,
    /// MySQL's Command column: `Sleep`, `Query`, `Execute`, `Killed`.
    command: &'static str,
    /// When the command began (the Time column counts from here).
    since: Instant,
    /// The statement text while one runs.
    info: Option<String>,
    /// What the running statement reports doing (State), when it says more than
    /// `executing`: a table maintenance statement's progress.
    state: Option<String>,
}

/// One session's entry.
pub(crate) struct Process {
    activity: Mutex<Activity>,
    kill: AtomicU8,
    hook: Mutex<Option<KillHook>>,
    /// The session's own status counters (SHOW SESSION STATUS).
    pub(crate) counters: crate::status::StatusCounters,
    /// The instance's user locks, which this session's are freed from when it ends.
    user_locks: Arc<crate::user_locks::UserLocks>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("activity", &self.activity)
            .field("kill", &self.kill)
            .finish_non_exhaustive()
    }
}

/// The table layer's metadata lock waits (shale-table's `metadata_lock.rs`) end at KILL and
/// show as the statement's State.
impl shale_table::LockWaiter for Process {
    fn interrupted(&self) -> bool {
        self.interrupt_requested()
    }

    fn waiting(&self, waiting: bool) {
        if waiting {
            self.set_state(shale_table::WAITING_STATE);
        } else {
            self.clear_state();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Process {
    /// A statement or a connection kill was requested: the running statement must stop.
    pub(crate) fn interrupt_requested(&self) -> bool {
        self.kill.load(Ordering::Relaxed) != KILL_NONE
    }

    /// KILL CONNECTION was issued for this session.
    pub(crate) fn connection_killed(&self) -> bool {
        self.kill.load(Ordering::Relaxed) == KILL_CONNECTION
    }

    pub(crate) fn set_kill_hook(&self, hook: KillHook) {
        *lock(&self.hook) = Some(hook);
    }

    /// A statement starts (`command` is `Query` or `Execute`); fails with 1317 when the
    /// connection was killed. Clears a KILL QUERY that came while idle (invariant 2).
    pub(crate) fn begin(&self, command: &'static str, sql: &str) -> Result<(), SqlError> {
        let _ =
            self.kill
                .compare_exchange(KILL_QUERY, KILL_NONE, Ordering::Relaxed, Ordering::Relaxed);
        if self.connection_killed() {
            return Err(crate::interrupt::interrupted());
        }
        let mut a = lock(&self.activity);
        a.command = command;
        a.since = Instant::now();
        a.info = Some(sql.to_owned());
        Ok(())
    }

    /// The statement ended; the session is idle in `db`.
    pub(crate) fn end(&self, db: Option<&str>) {
        let mut a = lock(&self.activity);
        a.command = if self.connection_killed() {
            "Killed"
        } else {
            "Sleep"
        };
        a.since = Instant::now();
        a.info = None;
        a.state = None;
        if a.db.as_deref() != db {
            a.db = db.map(str::to_owned);
        }
    }

    pub(crate) fn set_user(&self, user: &str, host: &str) {
        let mut a = lock(&self.activity);
        user.clone_into(&mut a.user);
        host.clone_into(&mut a.host);
    }

    /// Clears what [`set_state`](Self::set_state) set.
    pub(crate) fn clear_state(&self) {
        lock(&self.activity).state = None;
    }

    /// Sets what the running statement shows as its State (progress); the statement's end
    /// clears it.
    pub(crate) fn set_state(&self, state: &str) {
        lock(&self.activity).state = Some(state.to_owned());
    }

    pub(crate) fn set_db(&self, db: Option<&str>) {
        lock(&self.activity).db = db.map(str::to_owned);
    }

    pub(crate) fn user_locks(&self) -> &Arc<crate::user_locks::UserLocks> {
        &self.user_locks
    }

    pub(crate) fn id(&self) -> u64 {
        lock(&self.activity).id
    }

    fn running(&self) -> bool {
        lock(&self.activity).command != "Sleep"
    }
}

/// Every live session of an instance, by connection id.
#[derive(Debug, Default)]
pub(crate) struct ProcessList {
    entries: Mutex<BTreeMap<u64, Arc<Process>>>,
    /// The instance's named user locks (user_locks.rs).
    user_locks: Arc<crate::user_locks::UserLocks>,
}

impl ProcessList {
    /// Registers a new session under `id`.
    pub(crate) fn register(self: &Arc<Self>, id: u64) -> Registration {
        let process = Arc::new(Process {
            activity: Mutex::new(Activity {
                id,
                user: "root".into(),
                host: "localhost".into(),
                db: None,
                command: "Sleep",
                since: Instant::now(),
                info: None,
                state: None,
            }),
            kill: AtomicU8::new(KILL_NONE),
            hook: Mutex::new(None),
            counters: crate::status::StatusCounters::default(),
            user_locks: Arc::clone(&self.user_locks),
        });
        // The server renames its sessions to its own connection ids, which may equal an id the
        // instance gives out: a new session never displaces a live one's entry (it is listed
        // once renamed).
        lock(&self.entries)
            .entry(id)
            .or_insert_with(|| Arc::clone(&process));
        Registration {
            list: Arc::clone(self),
            process,
        }
    }

    /// Sessions connected now (`Threads_connected`).
    pub(crate) fn connected(&self) -> usize {
        lock(&self.entries).len()
    }

    /// Sessions running a statement now (`Threads_running`).
    pub(crate) fn running(&self) -> usize {
        lock(&self.entries).values().filter(|p| p.running()).count()
    }

    /// KILL: 1094 for an id no session has; 1095 when `owner` is given (the killer lacks
    /// SUPER and CONNECTION_ADMIN) and the session is another user's.
    pub(crate) fn kill(
        &self,
        id: u64,
        connection: bool,
        owner: Option<&str>,
    ) -> Result<(), SqlError> {
        let Some(process) = lock(&self.entries).get(&id).cloned() else {
            return Err(SqlError::new(
                1094,
                "HY000",
                format!("Unknown thread id: {id}"),
            ));
        };
        if owner.is_some_and(|user| lock(&process.activity).user != user) {
            return Err(SqlError::new(
                1095,
                "HY000",
                format!("You are not owner of thread {id}"),
            ));
        }
        if connection {
            process.kill.store(KILL_CONNECTION, Ordering::Relaxed);
            if let Some(hook) = lock(&process.hook).as_ref() {
                hook();
            }
        } else {
            let _ = process.kill.compare_exchange(
                KILL_NONE,
                KILL_QUERY,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        Ok(())
    }

    /// The rows of SHOW [FULL] PROCESSLIST, by id: every session's, or only those of the
    /// user `only` (an account without PROCESS).
    pub(crate) fn rows(&self, full: bool, only: Option<&str>) -> Vec<Vec<Value>> {
        let processes: Vec<Arc<Process>> = lock(&self.entries).values().cloned().collect();
        let now = Instant::now();
        processes
            .iter()
            .map(|p| lock(&p.activity).clone())
            .filter(|a| only.is_none_or(|user| a.user == user))
            .map(|a| {
                let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
                let info = a.info.map_or(Value::Null, |i| {
                    if full {
                        text(&i)
                    } else {
                        text(&i.chars().take(SHORT_INFO).collect::<String>())
                    }
                });
                let state = match (a.command, a.state.as_deref()) {
                    ("Query" | "Execute", Some(state)) => state,
                    ("Query" | "Execute", None) => "executing",
                    _ => "",
                };
                vec![
                    Value::UInt(a.id),
                    text(&a.user),
                    text(&a.host),
                    a.db.as_deref().map_or(Value::Null, text),
                    text(a.command),
                    Value::Int(now.duration_since(a.since).as_secs() as i64),
                    text(state),
                    info,
                ]
            })
            .collect()
    }
}

/// A session's place in the list; dropping it (with the session) unregisters.
#[derive(Debug)]
pub(crate) struct Registration {
    list: Arc<ProcessList>,
    process: Arc<Process>,
}

impl Registration {
    pub(crate) fn process(&self) -> &Arc<Process> {
        &self.process
    }

    /// The session now goes by `id` (the server's connection id).
    pub(crate) fn rename(&self, id: u64) {
        let mut entries = lock(&self.list.entries);
        let old = self.process.id();
        if entries
            .get(&old)
            .is_some_and(|p| Arc::ptr_eq(p, &self.process))
        {
            entries.remove(&old);
        }
        lock(&self.process.activity).id = id;
        entries.insert(id, Arc::clone(&self.process));
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // A session's user locks end with it (user_locks.rs rule 5).
        self.process.user_locks.release_all(&self.process);
        let mut entries = lock(&self.list.entries);
        let id = self.process.id();
        if entries
            .get(&id)
            .is_some_and(|p| Arc::ptr_eq(p, &self.process))
        {
            entries.remove(&id);
        }
    }
}

/// SHOW PROCESSLIST's columns, with MySQL's types.
fn columns() -> Vec<ColumnMeta> {
    let int = |name: &str, unsigned: bool, code: ColumnTypeCode| {
        let mut m = SqlType::Int { unsigned, len: 21 }.meta(name, false);
        m.type_code = code;
        m
    };
    let mut db = text_column("db");
    db.flags &= !crate::types::flags::NOT_NULL;
    let mut info = text_column("Info");
    info.flags &= !crate::types::flags::NOT_NULL;
    vec![
        int("Id", true, ColumnTypeCode::LongLong),
        text_column("User"),
        text_column("Host"),
        db,
        text_column("Command"),
        int("Time", false, ColumnTypeCode::Long),
        text_column("State"),
        info,
    ]
}

/// The session's user name when its account holds none of the global privileges `any_of`
/// (it then sees and kills only sessions of that user, as MySQL's "own threads"); `None`
/// when it holds one, or is not an account's (embedded use).
fn user_unless(session: &Session, any_of: u32) -> Option<String> {
    let account = session.state().account.as_ref()?;
    let held = session.instance().grants().global(account);
    (!held.any(any_of)).then(|| account.user.clone())
}

/// What an account may see of the instance's sessions: every one with PROCESS, else its own
/// (`account` `None`: an embedded session, not checked).
pub(crate) fn sessions_view(
    instance: &crate::Instance,
    account: Option<&crate::grants::Account>,
) -> crate::info_schema::SessionsView {
    let only = account.and_then(|a| {
        let held = instance.grants().global(a);
        (!held.any(crate::grants::PROCESS)).then(|| a.user.clone())
    });
    crate::info_schema::SessionsView {
        processes: Arc::clone(&instance.processes),
        only,
    }
}

/// SHOW [FULL] PROCESSLIST: every session with PROCESS, else the user's own.
pub(crate) fn show(
    session: &mut Session,
    full: bool,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    let only = user_unless(session, crate::grants::PROCESS);
    let rows = session.instance().processes.rows(full, only.as_deref());
    session.state_mut().warnings.clear();
    session.text_rows(sink, &columns(), &rows)
}

/// KILL [CONNECTION | QUERY] id. Killing the session's own connection ends it after this
/// statement, as in MySQL.
pub(crate) fn kill(
    session: &mut Session,
    id: u64,
    connection: bool,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.state_mut().warnings.clear();
    let owner = user_unless(
        session,
        crate::grants::SUPER | crate::grants::CONNECTION_ADMIN,
    );
    session
        .instance()
        .processes
        .kill(id, connection, owner.as_deref())?;
    if !connection && id == session.connection_id() {
        // A session cannot interrupt its own KILL QUERY statement: nothing is running.
        let _ = session.process().kill.compare_exchange(
            KILL_QUERY,
            KILL_NONE,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
    session.ok(sink, 0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::ProcessList;

    #[test]
    fn a_new_session_never_displaces_a_live_one_with_the_same_id() {
        let list = Arc::new(ProcessList::default());
        // The server's connection 2, then a new session the instance numbered 2 too.
        let server_session = list.register(7);
        server_session.rename(2);
        let fresh = list.register(2);
        assert_eq!(list.connected(), 1);
        let listed = list.rows(true, None);
        assert!(Arc::ptr_eq(
            &list.entries.lock().unwrap()[&2],
            server_session.process()
        ));
        assert_eq!(listed.len(), 1);
        fresh.rename(3);
        assert_eq!(list.connected(), 2);
        drop(fresh);
        assert_eq!(list.connected(), 1);
        assert!(list.kill(2, false, None).is_ok());
        assert!(server_session.process().interrupt_requested());
        drop(server_session);
        assert_eq!(list.kill(2, true, None).unwrap_err().code, 1094);
    }

    #[test]
    fn without_the_privilege_only_the_users_own_sessions_are_listed_and_killed() {
        let list = Arc::new(ProcessList::default());
        let a = list.register(1);
        a.process().set_user("a", "localhost");
        let b = list.register(2);
        b.process().set_user("b", "localhost");
        assert_eq!(list.rows(false, None).len(), 2);
        let own = list.rows(false, Some("a"));
        assert_eq!(own.len(), 1);
        assert_eq!(own[0][0], shale_table::Value::UInt(1));
        let e = list.kill(2, true, Some("a")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (1095, "You are not owner of thread 2")
        );
        assert!(!b.process().connection_killed());
        assert_eq!(list.kill(9, true, Some("a")).unwrap_err().code, 1094);
        assert!(list.kill(1, true, Some("a")).is_ok());
        assert!(list.kill(2, true, None).is_ok());
        assert!(b.process().connection_killed());
    }
}
