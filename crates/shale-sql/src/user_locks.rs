//! Named user-level locks: GET_LOCK, RELEASE_LOCK, IS_FREE_LOCK, IS_USED_LOCK and
//! RELEASE_ALL_LOCKS, as MySQL 8 has them.
//!
//! The table lives in the instance's process list (one per instance, shared by its sessions);
//! a lock's owner is the session's [`Process`], found through the running statement's watch
//! (interrupt.rs), so the functions need nothing passed through the executor.
//!
//! Rules:
//! 1. Names are compared case-insensitively; a NULL or empty name, or one longer than 64
//!    characters, is 3057 `Incorrect user-level lock name`.
//! 2. A session may hold several locks, and the same lock several times (a count):
//!    RELEASE_LOCK gives 1 and lowers the count (freeing the lock at 0), 0 when another
//!    session holds it, NULL when nobody does. RELEASE_ALL_LOCKS frees every lock of the
//!    session and returns the sum of their counts.
//! 3. GET_LOCK(name, timeout) waits up to `timeout` seconds (negative: forever; NULL: 0) and
//!    returns 1, or 0 when the time ran out. KILL QUERY or `max_execution_time` ends the
//!    wait: NULL when the statement read no table row yet, else the statement fails (1317
//!    or 3024), as SLEEP() does.
//! 4. A wait that would close a cycle (this session waits for a lock whose holder waits,
//!    directly or through others, for a lock this session holds) is 3058
//!    ER_USER_LOCK_DEADLOCK, raised in the session whose request closes the cycle.
//! 5. A session's locks are freed when it ends ([`UserLocks::release_all`] from the process
//!    registration's drop), whether it closed normally or was killed.
//!
//! Invariant: `holders` only names processes alive now (rule 5 removes a process's entries
//! before its address can be reused), and `waiting` holds an entry exactly while its
//! session is inside [`UserLocks::get`].

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use shale_table::Value;

use crate::error::SqlError;
use crate::processlist::Process;

/// The longest lock name (MySQL's NAME_LEN).
const MAX_NAME_CHARS: usize = 64;

/// How often a waiting GET_LOCK looks at the kill flag and the deadline.
const POLL: Duration = Duration::from_millis(20);

/// A session's identity in the table: its process's address (rule 5 keeps it unique).
type Owner = usize;

#[derive(Debug)]
struct Held {
    owner: Owner,
    process: Weak<Process>,
    count: u64,
}

#[derive(Debug, Default)]
struct Table {
    holders: HashMap<String, Held>,
    /// The lock each waiting session waits for.
    waiting: HashMap<Owner, String>,
}

/// The user-level locks of one instance.
#[derive(Debug, Default)]
pub(crate) struct UserLocks {
    table: Mutex<Table>,
    released: Condvar,
}

fn owner_of(process: &Arc<Process>) -> Owner {
    Arc::as_ptr(process) as usize
}

/// One function of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockFunc {
    Get,
    Release,
    IsFree,
    IsUsed,
    ReleaseAll,
}

impl LockFunc {
    /// The function's name and argument count.
    pub(crate) fn of(name: &str) -> Option<(LockFunc, usize)> {
        Some(match name {
            "GET_LOCK" => (LockFunc::Get, 2),
            "RELEASE_LOCK" => (LockFunc::Release, 1),
            "IS_FREE_LOCK" => (LockFunc::IsFree, 1),
            "IS_USED_LOCK" => (LockFunc::IsUsed, 1),
            "RELEASE_ALL_LOCKS" => (LockFunc::ReleaseAll, 0),
            _ => return None,
        })
    }
}

/// Names and argument counts (all volatile: builtin.rs never folds them); None for a name
/// not of this module.
pub(crate) fn bind(
    binder: &mut crate::bind::Binder<'_>,
    name: &str,
    args: &[&sqlparser::ast::Expr],
) -> Option<Result<(crate::expr::Expr, crate::types::SqlType), SqlError>> {
    let (f, count) = LockFunc::of(name)?;
    if args.len() != count {
        return Some(Err(crate::builtin::wrong_count(name)));
    }
    let bound: Result<Vec<crate::expr::Expr>, SqlError> =
        args.iter().map(|a| binder.expr(a).map(|b| b.0)).collect();
    let t = crate::types::SqlType::Int {
        unsigned: matches!(f, LockFunc::IsUsed | LockFunc::ReleaseAll),
        len: 21,
    };
    Some(bound.map(|b| {
        let call = crate::expr::Func::Builtin(crate::builtin::Builtin::Lock(f));
        (crate::expr::Expr::Func(call, b), t)
    }))
}

/// Rule 1: the key a name is kept under.
fn lock_key(name: &Value) -> Result<String, SqlError> {
    let wrong = |shown: &str| {
        SqlError::new(
            3057,
            "42000",
            format!("Incorrect user-level lock name '{shown}'."),
        )
    };
    let Some(text) = crate::value::as_text(name) else {
        return Err(wrong("NULL"));
    };
    if text.is_empty() || text.chars().count() > MAX_NAME_CHARS {
        return Err(wrong(&text));
    }
    Ok(text.to_lowercase())
}

fn deadlock() -> SqlError {
    SqlError::new(
        3058,
        "40001",
        "Deadlock found when trying to get user-level lock; try rolling back transaction/releasing locks and restarting lock acquisition.",
    )
}

/// Evaluates `f` for the session whose statement runs on this thread.
pub(crate) fn eval(f: LockFunc, args: &[Value]) -> Result<Value, SqlError> {
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    let key = if f == LockFunc::ReleaseAll {
        String::new()
    } else {
        lock_key(arg(0))?
    };
    // Outside a statement (never: the functions are volatile, so never folded) nothing holds.
    let Some(process) = crate::interrupt::current_process() else {
        return Ok(Value::Null);
    };
    let locks = Arc::clone(process.user_locks());
    Ok(match f {
        LockFunc::Get => {
            let timeout = crate::value::to_f64(arg(1)).unwrap_or(0.0);
            let limit = if timeout < 0.0 {
                None
            } else {
                Some(Duration::from_secs_f64(timeout.min(31_536_000.0)))
            };
            match locks.get(&process, &key, limit)? {
                Some(true) => Value::Int(1),
                Some(false) => Value::Int(0),
                None => Value::Null,
            }
        }
        LockFunc::Release => locks.release(&process, &key),
        LockFunc::IsFree => Value::Int(i64::from(locks.holder(&key).is_none())),
        LockFunc::IsUsed => locks.holder(&key).map_or(Value::Null, Value::UInt),
        LockFunc::ReleaseAll => Value::UInt(locks.release_all(&process)),
    })
}

impl UserLocks {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Rules 2 to 4: Some(true) when acquired, Some(false) on timeout, None when the
    /// statement was interrupted.
    fn get(
        &self,
        process: &Arc<Process>,
        key: &str,
        limit: Option<Duration>,
    ) -> Result<Option<bool>, SqlError> {
        let me = owner_of(process);
        let end = limit.map(|l| Instant::now() + l);
        let mut table = self.table();
        loop {
            match table.holders.get_mut(key) {
                None => {
                    table.holders.insert(
                        key.to_string(),
                        Held {
                            owner: me,
                            process: Arc::downgrade(process),
                            count: 1,
                        },
                    );
                    table.waiting.remove(&me);
                    return Ok(Some(true));
                }
                Some(held) if held.owner == me => {
                    held.count += 1;
                    table.waiting.remove(&me);
                    return Ok(Some(true));
                }
                Some(_) => {}
            }
            if closes_cycle(&table, me, key) {
                table.waiting.remove(&me);
                return Err(deadlock());
            }
            let now = Instant::now();
            let slice = match end {
                Some(end) if now >= end => {
                    table.waiting.remove(&me);
                    return Ok(Some(false));
                }
                Some(end) => (end - now).min(POLL),
                None => POLL,
            };
            if table.waiting.insert(me, key.to_string()).is_none() {
                // MySQL's State for a GET_LOCK wait; shown only once `waiting` has the entry,
                // so whoever sees it can rely on the wait being registered (rule 4's cycles).
                process.set_state("User lock");
            }
            table = self
                .released
                .wait_timeout(table, slice)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            // The kill flag and deadline are read outside the table's mutex.
            drop(table);
            let stopped = match crate::interrupt::sleep(Duration::ZERO) {
                Ok(crate::interrupt::Slept::Fully) => None,
                Ok(crate::interrupt::Slept::Interrupted) => Some(Ok(None)),
                Err(e) => Some(Err(e)),
            };
            table = self.table();
            if let Some(result) = stopped {
                table.waiting.remove(&me);
                return result;
            }
        }
    }

    /// Rule 2: RELEASE_LOCK's result.
    fn release(&self, process: &Arc<Process>, key: &str) -> Value {
        let me = owner_of(process);
        let mut table = self.table();
        let result = match table.holders.get_mut(key) {
            None => return Value::Null,
            Some(held) if held.owner != me => return Value::Int(0),
            Some(held) => {
                held.count -= 1;
                held.count
            }
        };
        if result == 0 {
            table.holders.remove(key);
            drop(table);
            self.released.notify_all();
        }
        Value::Int(1)
    }

    /// The connection id of the session holding `key`, if any.
    fn holder(&self, key: &str) -> Option<u64> {
        let table = self.table();
        let held = table.holders.get(key)?;
        held.process.upgrade().map(|p| p.id())
    }

    /// Rules 2 and 5: frees every lock `process` holds; the sum of their counts.
    pub(crate) fn release_all(&self, process: &Arc<Process>) -> u64 {
        let me = owner_of(process);
        let mut table = self.table();
        let mut freed = 0;
        table.holders.retain(|_, held| {
            if held.owner == me {
                freed += held.count;
                false
            } else {
                true
            }
        });
        table.waiting.remove(&me);
        drop(table);
        if freed > 0 {
            self.released.notify_all();
        }
        freed
    }
}

/// Rule 4: whether `me` waiting for `key` closes a cycle of waits.
fn closes_cycle(table: &Table, me: Owner, key: &str) -> bool {
    let mut next = key;
    // Each step moves to another session; more steps than sessions waiting is a cycle
    // not through `me`, which is not this request's to break.
    for _ in 0..=table.waiting.len() {
        let Some(held) = table.holders.get(next) else {
            return false;
        };
        if held.owner == me {
            return true;
        }
        match table.waiting.get(&held.owner) {
            Some(k) => next = k,
            None => return false,
        }
    }
    false
}
