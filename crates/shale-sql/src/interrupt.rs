//! Stopping a running statement: KILL QUERY / KILL CONNECTION from another session (error
//! 1317) and `max_execution_time` (error 3024), checked cooperatively by the executor's row
//! loops, which also count the rows a statement read (`Shale_rows_read`, the slow log's
//! `Rows_examined`).
//!
//! A statement installs a [`Watch`] on its thread for as long as it runs; the row loops call
//! [`row`] (a table row read) or [`tick`] (any other unit of work: a joined row, a filtered
//! row). Both are a thread-local counter bump; every [`CHECK_EVERY`] calls they read the kill
//! flag and the clock. Thread-local because the executor is synchronous and a statement never
//! leaves its session's thread, so the row loops need no handle passed through every
//! operator.
//!
//! Invariants:
//! 1. Outside a statement (no watch installed) [`row`], [`tick`] and [`work`] never fail, and
//!    [`sleep`] sleeps the whole time.
//! 2. A watch restores the one it replaced when dropped, so a statement run inside another
//!    (CHECK TABLE's reads) leaves the outer one's watch in place.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::SqlError;
use crate::processlist::Process;

/// Work units between two looks at the kill flag and the clock.
const CHECK_EVERY: u32 = 256;

/// What a running statement checks against.
struct Current {
    process: Arc<Process>,
    /// `max_execution_time` (SELECT only): past this the statement fails with 3024.
    deadline: Option<Instant>,
    countdown: u32,
    rows_read: u64,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// The process of the statement running on this thread, if any (user_locks.rs).
pub(crate) fn current_process() -> Option<Arc<Process>> {
    CURRENT.with(|c| c.borrow().as_ref().map(|c| Arc::clone(&c.process)))
}

/// MySQL's error for a statement stopped by KILL QUERY or KILL CONNECTION.
pub(crate) fn interrupted() -> SqlError {
    SqlError::new(1317, "70100", "Query execution was interrupted")
}

/// MySQL's error for a SELECT past `max_execution_time`.
pub(crate) fn timed_out() -> SqlError {
    SqlError::new(
        3024,
        "HY000",
        "Query execution was interrupted, maximum statement execution time exceeded",
    )
}

/// The running statement's registration on its thread; dropping it ends the statement.
#[derive(Debug)]
pub(crate) struct Watch {
    previous: Option<(Arc<Process>, Option<Instant>, u64)>,
}

impl Watch {
    /// Starts watching a statement of `process`, failing with `deadline` once it passes.
    pub(crate) fn install(process: Arc<Process>, deadline: Option<Instant>) -> Watch {
        let previous = CURRENT.with(|c| {
            c.borrow_mut().replace(Current {
                process,
                deadline,
                countdown: CHECK_EVERY,
                rows_read: 0,
            })
        });
        Watch {
            previous: previous.map(|p| (p.process, p.deadline, p.rows_read)),
        }
    }

    /// Rows the statement read from tables so far (taking `self`: only the owner of the
    /// installed watch asks).
    #[allow(clippy::unused_self)]
    pub(crate) fn rows_read(&self) -> u64 {
        CURRENT.with(|c| c.borrow().as_ref().map_or(0, |c| c.rows_read))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            let inner_rows = current.as_ref().map_or(0, |c| c.rows_read);
            *current = previous.map(|(process, deadline, rows_read)| Current {
                process,
                deadline,
                countdown: CHECK_EVERY,
                // The outer statement read what the inner one read, too.
                rows_read: rows_read + inner_rows,
            });
        });
    }
}

/// Fails with 1317 or 3024 when the running statement was killed or ran out of time.
fn check(current: &mut Current) -> Result<(), SqlError> {
    current.countdown = CHECK_EVERY;
    if current.process.interrupt_requested() {
        return Err(interrupted());
    }
    if current.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(timed_out());
    }
    Ok(())
}

/// One unit of work done; fails when the statement must stop.
pub(crate) fn tick() -> Result<(), SqlError> {
    CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(current) => {
            current.countdown -= 1;
            if current.countdown == 0 {
                check(current)
            } else {
                Ok(())
            }
        }
        None => Ok(()),
    })
}

/// One table row read; fails when the statement must stop.
pub(crate) fn row() -> Result<(), SqlError> {
    CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(current) => {
            current.rows_read += 1;
            current.countdown -= 1;
            if current.countdown == 0 {
                check(current)
            } else {
                Ok(())
            }
        }
        None => Ok(()),
    })
}

/// `units` units of work done at once (a function that built a long value charges one per
/// [`BYTES_PER_UNIT`] bytes): the kill flag and the clock are read as soon as the count
/// reaches [`CHECK_EVERY`], so one slow expression per row cannot hide 256 rows' worth of
/// work from KILL and `max_execution_time`.
pub(crate) fn work(units: u64) -> Result<(), SqlError> {
    CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(current) => {
            if units >= u64::from(current.countdown) {
                check(current)
            } else {
                // Below countdown, which is a u32.
                current.countdown -= u32::try_from(units).unwrap_or(0);
                Ok(())
            }
        }
        None => Ok(()),
    })
}

/// Bytes of a built value that count as one unit of [`work`].
pub(crate) const BYTES_PER_UNIT: u64 = 16 * 1024;

/// How SLEEP() ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slept {
    /// The whole time.
    Fully,
    /// Cut short by KILL QUERY or `max_execution_time`, in a statement that read no table
    /// row: MySQL's SLEEP() then returns 1 and the statement no error.
    Interrupted,
}

/// Sleeps `duration`, waking every few milliseconds to look at the kill flag and the
/// deadline. Interrupted in a statement that has read table rows, it fails with 1317 or 3024
/// as MySQL does when SLEEP() is only part of the query's work.
pub(crate) fn sleep(duration: Duration) -> Result<Slept, SqlError> {
    const SLICE: Duration = Duration::from_millis(5);
    let end = Instant::now() + duration;
    loop {
        let stop = CURRENT.with(|c| match c.borrow_mut().as_mut() {
            Some(current) => match check(current) {
                Ok(()) => Ok(false),
                Err(e) if current.rows_read > 0 => Err(e),
                Err(_) => Ok(true),
            },
            None => Ok(false),
        })?;
        if stop {
            return Ok(Slept::Interrupted);
        }
        let now = Instant::now();
        if now >= end {
            return Ok(Slept::Fully);
        }
        std::thread::sleep((end - now).min(SLICE));
    }
}
