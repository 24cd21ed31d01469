//! Account locking, as MySQL 8 does it (docs/sql.md "Accounts and privileges", docs/format/
//! privileges.md): `ACCOUNT LOCK` / `ACCOUNT UNLOCK`, and failed-login tracking with
//! temporary locking (`FAILED_LOGIN_ATTEMPTS n PASSWORD_LOCK_TIME {n | UNBOUNDED}`).
//!
//! The settings are three columns of `mysql.user` (`account_locked`,
//! `failed_login_attempts`, `password_lock_time`), added to an older `mysql.user` at open as
//! an instant ADD COLUMN. The counts of consecutive failures and the temporary locks live in
//! memory ([`LoginLocks`]), as MySQL keeps them: a restart or FLUSH PRIVILEGES clears them.
//!
//! Rules, checked by [`LoginLocks::after_check`] after the password was checked:
//! 1. Tracking is on for an account when both `failed_login_attempts` and
//!    `password_lock_time` are non-zero.
//! 2. While an account is temporarily locked every attempt fails with 3955, right password
//!    or not; the lock ends `password_lock_time` days after it began (never, for UNBOUNDED),
//!    at ALTER USER ... ACCOUNT UNLOCK, at an ALTER USER that sets either setting, at FLUSH
//!    PRIVILEGES and at a restart. Its end also resets the count.
//! 3. A failed attempt adds one to the count; the one that reaches `failed_login_attempts`
//!    locks the account and is answered with 3955 instead of 1045. A successful one resets
//!    the count.
//! 4. An account locked with ACCOUNT LOCK refuses a login with the right password with 3118
//!    (a wrong password still gets 1045, so the lock tells a guesser nothing).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use shale_table::{ColumnDef, ColumnSource, ColumnType, Store, TableChange, Value};

use crate::error::SqlError;

/// Where the settings are in a `mysql.user` row.
pub(crate) const ACCOUNT_LOCKED: usize = 4;
pub(crate) const FAILED_LOGIN_ATTEMPTS: usize = 5;
pub(crate) const PASSWORD_LOCK_TIME: usize = 6;

/// The largest FAILED_LOGIN_ATTEMPTS and PASSWORD_LOCK_TIME, as MySQL's.
const MAX_SETTING: u32 = 32767;

/// `password_lock_time`'s stored value for UNBOUNDED.
const UNBOUNDED: i64 = -1;

/// How long a temporary lock lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum LockTime {
    Days(u32),
    #[default]
    Off,
    Unbounded,
}

impl LockTime {
    fn stored(self) -> i64 {
        match self {
            LockTime::Days(d) => i64::from(d),
            LockTime::Off => 0,
            LockTime::Unbounded => UNBOUNDED,
        }
    }

    fn from_stored(v: i64) -> LockTime {
        match v {
            UNBOUNDED => LockTime::Unbounded,
            d if d > 0 => LockTime::Days(u32::try_from(d).unwrap_or(MAX_SETTING)),
            _ => LockTime::Off,
        }
    }
}

/// The locking clauses of one CREATE USER or ALTER USER (each applies to every account the
/// statement names); `None`: not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LockOptions {
    pub lock: Option<bool>,
    pub failed_login_attempts: Option<u32>,
    pub password_lock_time: Option<LockTime>,
}

impl LockOptions {
    /// Whether the failed-login settings change (which ends a temporary lock, rule 2).
    pub(crate) fn changes_tracking(&self) -> bool {
        self.failed_login_attempts.is_some() || self.password_lock_time.is_some()
    }

    /// Parses one clause starting at `word` (upper case), with `next` giving the word after
    /// it; `Ok(None)` when `word` starts none. MySQL's 1525 for a value out of range.
    pub(crate) fn parse_clause(
        &mut self,
        word: &str,
        mut next: impl FnMut() -> Option<String>,
    ) -> Result<Option<()>, SqlError> {
        let number = |name: &str, text: Option<String>| -> Result<u32, SqlError> {
            let text = text.unwrap_or_default();
            match text.parse::<u32>() {
                Ok(n) if n <= MAX_SETTING => Ok(n),
                _ if text.chars().all(|c| c.is_ascii_digit()) && !text.is_empty() => Err(
                    SqlError::new(1525, "HY000", format!("Incorrect {name} value: '{text}'")),
                ),
                _ => Err(SqlError::syntax(&text, 1)),
            }
        };
        match word {
            "ACCOUNT" => match next().map(|w| w.to_ascii_uppercase()).as_deref() {
                Some("LOCK") => self.lock = Some(true),
                Some("UNLOCK") => self.lock = Some(false),
                other => return Err(SqlError::syntax(other.unwrap_or(""), 1)),
            },
            "FAILED_LOGIN_ATTEMPTS" => {
                self.failed_login_attempts = Some(number("FAILED_LOGIN_ATTEMPTS", next())?);
            }
            "PASSWORD_LOCK_TIME" => {
                let text = next();
                self.password_lock_time = Some(
                    if text
                        .as_deref()
                        .is_some_and(|t| t.eq_ignore_ascii_case("UNBOUNDED"))
                    {
                        LockTime::Unbounded
                    } else {
                        match number("PASSWORD_LOCK_TIME", text)? {
                            0 => LockTime::Off,
                            d => LockTime::Days(d),
                        }
                    },
                );
            }
            _ => return Ok(None),
        }
        Ok(Some(()))
    }
}

/// An account's locking settings, as stored in its `mysql.user` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Policy {
    pub account_locked: bool,
    pub failed_login_attempts: u32,
    pub password_lock_time: LockTime,
}

impl Policy {
    /// Reads a `mysql.user` row defensively (the table is SQL-visible).
    pub(crate) fn of_row(row: &[Value]) -> Policy {
        let number = |i: usize| match row.get(i) {
            Some(Value::Int(n)) => *n,
            Some(Value::UInt(n)) => i64::try_from(*n).unwrap_or(i64::MAX),
            _ => 0,
        };
        Policy {
            account_locked: matches!(row.get(ACCOUNT_LOCKED), Some(Value::Bytes(b)) if b == b"Y"),
            failed_login_attempts: u32::try_from(number(FAILED_LOGIN_ATTEMPTS).max(0))
                .unwrap_or(MAX_SETTING),
            password_lock_time: LockTime::from_stored(number(PASSWORD_LOCK_TIME)),
        }
    }

    /// The policy after `options` are applied.
    pub(crate) fn with(self, options: &LockOptions) -> Policy {
        Policy {
            account_locked: options.lock.unwrap_or(self.account_locked),
            failed_login_attempts: options
                .failed_login_attempts
                .unwrap_or(self.failed_login_attempts),
            password_lock_time: options
                .password_lock_time
                .unwrap_or(self.password_lock_time),
        }
    }

    /// The three stored values, in column order.
    pub(crate) fn stored(self) -> [Value; 3] {
        [
            Value::Bytes(if self.account_locked { b"Y" } else { b"N" }.to_vec()),
            Value::Int(i64::from(self.failed_login_attempts)),
            Value::Int(self.password_lock_time.stored()),
        ]
    }

    fn tracking(self) -> bool {
        self.failed_login_attempts > 0 && self.password_lock_time != LockTime::Off
    }

    /// SHOW CREATE USER's text for an account with these settings (MySQL 8's clause order;
    /// the clauses Shale has no setting for show their defaults).
    pub(crate) fn show_create_user(self, account: &str, plugin: &str, stored: &[u8]) -> String {
        let mut out = format!("CREATE USER {account} IDENTIFIED WITH '{plugin}'");
        if !stored.is_empty() {
            let hash = String::from_utf8_lossy(stored)
                .replace('\\', "\\\\")
                .replace('\'', "''");
            let _ = write!(out, " AS '{hash}'");
        }
        out.push_str(" REQUIRE NONE PASSWORD EXPIRE DEFAULT");
        out.push_str(if self.account_locked {
            " ACCOUNT LOCK"
        } else {
            " ACCOUNT UNLOCK"
        });
        out.push_str(
            " PASSWORD HISTORY DEFAULT PASSWORD REUSE INTERVAL DEFAULT PASSWORD REQUIRE CURRENT \
             DEFAULT",
        );
        if self.failed_login_attempts > 0 || self.password_lock_time != LockTime::Off {
            let _ = write!(
                out,
                " FAILED_LOGIN_ATTEMPTS {} PASSWORD_LOCK_TIME {}",
                self.failed_login_attempts,
                match self.password_lock_time {
                    LockTime::Days(d) => d.to_string(),
                    LockTime::Off => "0".to_owned(),
                    LockTime::Unbounded => "UNBOUNDED".to_owned(),
                }
            );
        }
        out
    }
}

/// The three columns as `mysql.user` defines them (after `authentication_string`).
pub(crate) fn user_columns() -> [ColumnDef; 3] {
    let int = |name: &str| ColumnDef {
        name: name.into(),
        ty: ColumnType::Int { unsigned: false },
        nullable: false,
        default: Some(Value::Int(0)),
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    [
        ColumnDef {
            name: "account_locked".into(),
            ty: ColumnType::VarChar {
                len: 1,
                collation: shale_table::Collation::Utf8mb4Bin,
            },
            nullable: false,
            default: Some(Value::Bytes(b"N".to_vec())),
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        },
        int("failed_login_attempts"),
        int("password_lock_time"),
    ]
}

/// Adds the three columns to a `mysql.user` made before they existed (an instant ADD
/// COLUMN: old rows read `N`, 0, 0).
pub(crate) fn upgrade_user_table(store: &Store) -> Result<(), SqlError> {
    let Some(old) = store.catalog().table("mysql", "user").cloned() else {
        return Ok(());
    };
    if old.columns.len() > ACCOUNT_LOCKED {
        return Ok(());
    }
    let mut def = (*old).clone();
    let mut sources: Vec<ColumnSource> = (0..def.columns.len()).map(ColumnSource::Stored).collect();
    for column in user_columns() {
        sources.push(ColumnSource::Fill(
            column.default.clone().unwrap_or(Value::Null),
        ));
        def.columns.push(column);
    }
    store.alter_table::<SqlError>(
        "mysql",
        "user",
        TableChange { def, sources },
        std::sync::Arc::new(|_: &ColumnDef, _: &ColumnDef, v: Value, _: u64| Ok(v)),
    )?;
    Ok(())
}

/// One account's failed-login state.
#[derive(Debug, Clone, Copy, Default)]
struct Tracking {
    failures: u32,
    locked_at: Option<Instant>,
}

/// The in-memory failure counts and temporary locks, per account (user and the account's
/// host pattern).
#[derive(Debug, Default)]
pub(crate) struct LoginLocks {
    accounts: Mutex<HashMap<(String, String), Tracking>>,
}

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

impl LoginLocks {
    /// The answer to a login of `account` (user and host pattern) from `client_host` whose
    /// password check came out `verified`, under `policy`, at `now`: `Ok` to let it in, else
    /// the error to send (rules 2-4), naming the client's host as 1045 does. `Ok` for a
    /// wrong password means the usual 1045.
    pub(crate) fn after_check(
        &self,
        account: (&str, &str),
        client_host: &str,
        policy: Policy,
        verified: bool,
        now: Instant,
    ) -> Result<(), SqlError> {
        if policy.tracking() {
            let mut accounts = self.accounts.lock().unwrap_or_else(PoisonError::into_inner);
            let (user, host) = (account.0, client_host);
            let key = (account.0.to_owned(), account.1.to_owned());
            let tracking = accounts.entry(key.clone()).or_default();
            if let Some(since) = tracking.locked_at {
                let remaining = match policy.password_lock_time {
                    LockTime::Days(d) => {
                        let elapsed = now.saturating_duration_since(since);
                        let total = DAY * d;
                        total
                            .checked_sub(elapsed)
                            .filter(|left| !left.is_zero())
                            .map(|left| left.as_secs().div_ceil(DAY.as_secs()).to_string())
                    }
                    LockTime::Unbounded => Some("unlimited".to_owned()),
                    LockTime::Off => None,
                };
                match remaining {
                    Some(remaining) => {
                        return Err(blocked(user, host, policy, &remaining));
                    }
                    None => *tracking = Tracking::default(),
                }
            }
            if verified {
                accounts.remove(&key);
            } else {
                tracking.failures += 1;
                if tracking.failures >= policy.failed_login_attempts {
                    tracking.locked_at = Some(now);
                    let days = match policy.password_lock_time {
                        LockTime::Days(d) => d.to_string(),
                        _ => "unlimited".to_owned(),
                    };
                    return Err(blocked(user, host, policy, &days));
                }
            }
        }
        if verified && policy.account_locked {
            return Err(SqlError::new(
                3118,
                "HY000",
                format!(
                    "Access denied for user '{}'@'{client_host}'. Account is locked.",
                    account.0
                ),
            ));
        }
        Ok(())
    }

    /// Ends `user`@`host`'s temporary lock and resets its count.
    pub(crate) fn unlock(&self, user: &str, host: &str) {
        self.accounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(user.to_owned(), host.to_owned()));
    }

    /// Ends every temporary lock (FLUSH PRIVILEGES).
    pub(crate) fn clear(&self) {
        self.accounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// 3955, MySQL's words.
fn blocked(user: &str, host: &str, policy: Policy, remaining: &str) -> SqlError {
    let days = match policy.password_lock_time {
        LockTime::Days(d) => d.to_string(),
        _ => "unlimited".to_owned(),
    };
    SqlError::new(
        3955,
        "HY000",
        format!(
            "Access denied for user '{user}'@'{host}'. Account is blocked for {days} day(s) \
             ({remaining} day(s) remaining) due to {} consecutive failed logins.",
            policy.failed_login_attempts
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(n: u32, time: LockTime) -> Policy {
        Policy {
            account_locked: false,
            failed_login_attempts: n,
            password_lock_time: time,
        }
    }

    #[test]
    fn the_nth_failure_locks_for_the_lock_time_and_a_success_resets_the_count() {
        let locks = LoginLocks::default();
        let p = policy(3, LockTime::Days(2));
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        // Two failures, a success (resets), then two more failures are still allowed.
        for (i, ok) in [false, false, true, false, false].into_iter().enumerate() {
            assert!(locks
                .after_check(("u", "%"), "%", p, ok, at(i as u64))
                .is_ok());
        }
        // The third consecutive failure locks, with 3955.
        let e = locks
            .after_check(("u", "%"), "%", p, false, at(10))
            .unwrap_err();
        assert_eq!(e.code, 3955);
        assert_eq!(
            e.message,
            "Access denied for user 'u'@'%'. Account is blocked for 2 day(s) (2 day(s) \
             remaining) due to 3 consecutive failed logins."
        );
        // Locked: even the right password, with the days left rounded up.
        let e = locks
            .after_check(("u", "%"), "%", p, true, at(10 + 86_400 + 5))
            .unwrap_err();
        assert!(e.message.contains("(1 day(s) remaining)"), "{}", e.message);
        // Another account is not locked.
        assert!(locks.after_check(("v", "%"), "%", p, true, at(11)).is_ok());
        // After two days the lock is over and the count starts afresh.
        assert!(locks
            .after_check(("u", "%"), "%", p, false, at(10 + 2 * 86_400))
            .is_ok());
        assert!(locks
            .after_check(("u", "%"), "%", p, true, at(10 + 2 * 86_400 + 1))
            .is_ok());
    }

    #[test]
    fn unbounded_locks_until_unlocked_and_unlock_or_flush_ends_it() {
        let locks = LoginLocks::default();
        let p = policy(1, LockTime::Unbounded);
        let now = Instant::now();
        let e = locks
            .after_check(("u", "h"), "h", p, false, now)
            .unwrap_err();
        assert!(
            e.message.contains(
                "blocked for unlimited day(s) (unlimited day(s) remaining) due to 1 consecutive"
            ),
            "{}",
            e.message
        );
        let years = now + DAY * 3650;
        assert_eq!(
            locks
                .after_check(("u", "h"), "h", p, true, years)
                .unwrap_err()
                .code,
            3955
        );
        locks.unlock("u", "h");
        assert!(locks.after_check(("u", "h"), "h", p, true, years).is_ok());
        assert!(locks.after_check(("u", "h"), "h", p, false, years).is_err());
        locks.clear();
        assert!(locks.after_check(("u", "h"), "h", p, true, years).is_ok());
    }

    #[test]
    fn tracking_needs_both_settings_and_account_lock_refuses_the_right_password() {
        let locks = LoginLocks::default();
        let now = Instant::now();
        for p in [policy(0, LockTime::Days(1)), policy(2, LockTime::Off)] {
            for _ in 0..5 {
                assert!(locks.after_check(("u", "%"), "%", p, false, now).is_ok());
            }
        }
        let locked = Policy {
            account_locked: true,
            ..Policy::default()
        };
        assert!(locks
            .after_check(("u", "%"), "%", locked, false, now)
            .is_ok());
        let e = locks
            .after_check(("u", "%"), "%", locked, true, now)
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (3118, "Access denied for user 'u'@'%'. Account is locked.")
        );
    }

    #[test]
    fn clauses_parse_with_mysql_limits() {
        let parse = |words: &[&str]| {
            let mut options = LockOptions::default();
            let mut rest = words[1..].iter().map(|w| (*w).to_owned());
            options
                .parse_clause(words[0], || rest.next())
                .map(|found| (found, options))
        };
        assert_eq!(
            parse(&["FAILED_LOGIN_ATTEMPTS", "32767"])
                .unwrap()
                .1
                .failed_login_attempts,
            Some(32767)
        );
        let e = parse(&["FAILED_LOGIN_ATTEMPTS", "32768"]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (1525, "Incorrect FAILED_LOGIN_ATTEMPTS value: '32768'")
        );
        assert_eq!(
            parse(&["PASSWORD_LOCK_TIME", "unbounded"])
                .unwrap()
                .1
                .password_lock_time,
            Some(LockTime::Unbounded)
        );
        assert_eq!(
            parse(&["PASSWORD_LOCK_TIME", "0"])
                .unwrap()
                .1
                .password_lock_time,
            Some(LockTime::Off)
        );
        assert_eq!(parse(&["ACCOUNT", "lock"]).unwrap().1.lock, Some(true));
        assert_eq!(parse(&["ACCOUNT", "x"]).unwrap_err().code, 1064);
        assert_eq!(parse(&["REQUIRE", "NONE"]).unwrap().0, None);
    }
}
