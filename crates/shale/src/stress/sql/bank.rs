//! The bank workload of `shale stress sql`: accounts with balances, and a ledger of
//! transfers with a secondary index. Each client makes transfers in transactions (two
//! UPDATEs and an INSERT, some rolled back on purpose) and records what it knows of each:
//! committed (COMMIT acknowledged), aborted (never committed: rolled back, refused, or the
//! connection died before COMMIT was sent) or unknown (the connection died after COMMIT was
//! sent). [`Bank::verify`] checks a restarted server against that record.
//!
//! Invariants the verification holds the server to (docs/reliability.md, "The server"):
//! 1. The sum of the balances never changes.
//! 2. Each account's balance is its initial one plus the ledger's credits minus its debits,
//!    so a transfer is in the ledger exactly when both of its UPDATEs were applied.
//! 3. Every acknowledged transfer is in the ledger (under `buffered`, except a suffix of the
//!    commit order: a lost one was acknowledged after every present one began its COMMIT);
//!    once seen after a restart, a transfer never vanishes.
//! 4. No aborted transfer is in the ledger, and nothing is there that no client made.
//! 5. CHECK TABLE passes for both tables (each index entry has its row and back).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable as _;
use mysql::Conn;
use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};

use super::server::{check_tables, connect};

pub const DATABASE: &str = "bank";
const INITIAL_BALANCE: i64 = 10_000;

/// What a client knows of one transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    Aborted,
    Unknown,
    /// Acknowledged, then lost in a crash (allowed only under `buffered`): must stay absent.
    Lost,
}

#[derive(Debug, Clone)]
pub struct Transfer {
    from: i64,
    to: i64,
    amount: i64,
    outcome: Outcome,
    commit_sent: Option<Instant>,
    acknowledged: Option<Instant>,
    /// Seen in the ledger by a verification.
    seen: bool,
}

/// Counts of one round.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoundCounts {
    pub committed: u64,
    /// Never committed: rolled back on purpose, refused, or cut before COMMIT.
    pub aborted: u64,
    /// Refused by the server (deadlock, snapshot conflict, lock wait timeout).
    pub refused: u64,
    pub unknown: u64,
}

/// What a verification found.
#[derive(Debug, Default, Clone, Copy)]
pub struct VerifyReport {
    pub ledger_rows: usize,
    /// Unknown outcomes found committed / absent.
    pub unknown_present: u64,
    pub unknown_absent: u64,
    /// Acknowledged transfers lost (only ever non-zero under `buffered`).
    pub lost: u64,
    /// The longest time between a lost transfer's acknowledgement and the kill.
    pub lost_window: Duration,
}

/// The workload's shape and the record of every transfer.
#[derive(Debug)]
pub struct Bank {
    pub accounts: i64,
    /// Whether acknowledged transfers may be lost at the end (`buffered` durability).
    pub may_lose_tail: bool,
    transfers: BTreeMap<u64, Transfer>,
}

fn is_connection_error(e: &mysql::Error) -> bool {
    !matches!(e, mysql::Error::MySqlError(_))
}

impl Bank {
    pub fn new(accounts: i64, may_lose_tail: bool) -> Bank {
        Bank {
            accounts,
            may_lose_tail,
            transfers: BTreeMap::new(),
        }
    }

    /// Creates the database, both tables and the accounts.
    pub fn create(&self, conn: &mut Conn) -> Result<(), String> {
        let values: Vec<String> = (0..self.accounts)
            .map(|id| format!("({id}, {INITIAL_BALANCE})"))
            .collect();
        for sql in [
            format!("CREATE DATABASE {DATABASE}"),
            format!(
                "CREATE TABLE {DATABASE}.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)"
            ),
            format!(
                "CREATE TABLE {DATABASE}.ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, \
                 xfer BIGINT NOT NULL, from_id INT NOT NULL, to_id INT NOT NULL, \
                 amount BIGINT NOT NULL, KEY from_id (from_id))"
            ),
            format!(
                "INSERT INTO {DATABASE}.accounts (id, balance) VALUES {}",
                values.join(", ")
            ),
            // DDL is written with a synced write whatever the durability, and a synced write
            // makes every earlier one durable: under `buffered` the accounts would otherwise
            // be lost by a kill in the first second.
            format!("CREATE TABLE {DATABASE}.created (id INT PRIMARY KEY)"),
        ] {
            conn.query_drop(&sql).map_err(|e| format!("{sql}: {e}"))?;
        }
        Ok(())
    }

    /// Adds one client's transfers to the record.
    pub fn record(&mut self, transfers: Vec<(u64, Transfer)>) -> RoundCounts {
        let mut counts = RoundCounts::default();
        for (id, t) in transfers {
            match t.outcome {
                Outcome::Committed => counts.committed += 1,
                Outcome::Unknown => counts.unknown += 1,
                Outcome::Aborted | Outcome::Lost => counts.aborted += 1,
            }
            self.transfers.insert(id, t);
        }
        counts
    }

    /// Checks invariants 1 to 5 on a restarted server, and settles unknown outcomes by what
    /// it finds. `killed_at` is when the last SIGKILL was sent.
    pub fn verify(
        &mut self,
        conn: &mut Conn,
        killed_at: Option<Instant>,
    ) -> Result<VerifyReport, String> {
        let mut report = VerifyReport::default();
        let balances: Vec<(i64, i64)> = conn
            .query(format!(
                "SELECT id, balance FROM {DATABASE}.accounts ORDER BY id"
            ))
            .map_err(|e| format!("reading accounts: {e}"))?;
        let ledger: Vec<(u64, i64, i64, i64)> = conn
            .query(format!(
                "SELECT xfer, from_id, to_id, amount FROM {DATABASE}.ledger"
            ))
            .map_err(|e| format!("reading the ledger: {e}"))?;
        report.ledger_rows = ledger.len();
        if i64::try_from(balances.len()).ok() != Some(self.accounts) {
            return Err(format!(
                "{} accounts, expected {}",
                balances.len(),
                self.accounts
            ));
        }
        let total: i64 = balances.iter().map(|b| b.1).sum();
        if total != self.accounts * INITIAL_BALANCE {
            return Err(format!(
                "the balances sum to {total}, expected {} (invariant 1)",
                self.accounts * INITIAL_BALANCE
            ));
        }
        let present = self.check_ledger(&balances, &ledger, &mut report)?;
        self.check_acknowledged(&present, killed_at, &mut report)?;
        check_tables(
            conn,
            &[
                &format!("{DATABASE}.accounts"),
                &format!("{DATABASE}.ledger"),
            ],
        )?;
        Ok(report)
    }

    /// Invariants 2 and 4: the ledger holds only transfers that may have committed, once
    /// each, and the balances are its sum. Returns the transfers present.
    fn check_ledger(
        &mut self,
        balances: &[(i64, i64)],
        ledger: &[(u64, i64, i64, i64)],
        report: &mut VerifyReport,
    ) -> Result<BTreeSet<u64>, String> {
        let mut expected = vec![INITIAL_BALANCE; balances.len()];
        let mut present = BTreeSet::new();
        for &(xfer, from, to, amount) in ledger {
            if !present.insert(xfer) {
                return Err(format!("transfer {xfer} is in the ledger twice"));
            }
            let Some(t) = self.transfers.get_mut(&xfer) else {
                return Err(format!(
                    "transfer {xfer} in the ledger was never made (invariant 4)"
                ));
            };
            if (t.from, t.to, t.amount) != (from, to, amount) {
                return Err(format!(
                    "transfer {xfer} reads {from}->{to} {amount}, was made as {t:?}"
                ));
            }
            match t.outcome {
                Outcome::Committed => {}
                Outcome::Unknown => {
                    t.outcome = Outcome::Committed;
                    report.unknown_present += 1;
                }
                Outcome::Aborted | Outcome::Lost => {
                    return Err(format!(
                        "transfer {xfer} ({:?}) is in the ledger (invariant 4)",
                        t.outcome
                    ))
                }
            }
            t.seen = true;
            for (account, delta) in [(from, -amount), (to, amount)] {
                let slot = usize::try_from(account)
                    .ok()
                    .and_then(|a| expected.get_mut(a))
                    .ok_or_else(|| format!("transfer {xfer} names account {account}"))?;
                *slot += delta;
            }
        }
        for ((id, balance), want) in balances.iter().zip(&expected) {
            if balance != want {
                return Err(format!(
                    "account {id} holds {balance}, its ledger says {want} (invariant 2: a \
                     transfer partly applied)"
                ));
            }
        }
        Ok(present)
    }

    /// Invariant 3: every acknowledged transfer is present, but for a lost suffix under
    /// `buffered`.
    fn check_acknowledged(
        &mut self,
        present: &BTreeSet<u64>,
        killed_at: Option<Instant>,
        report: &mut VerifyReport,
    ) -> Result<(), String> {
        let mut lost_acks = Vec::new();
        for (xfer, t) in &mut self.transfers {
            if present.contains(xfer) {
                continue;
            }
            match t.outcome {
                Outcome::Unknown => {
                    t.outcome = Outcome::Aborted;
                    report.unknown_absent += 1;
                }
                Outcome::Committed if t.seen => {
                    return Err(format!(
                        "transfer {xfer} was seen after a restart and is gone now"
                    ));
                }
                Outcome::Committed if self.may_lose_tail => {
                    t.outcome = Outcome::Lost;
                    lost_acks.push(t.acknowledged);
                }
                Outcome::Committed => {
                    return Err(format!(
                        "transfer {xfer} was acknowledged and is not in the ledger (invariant 3): {t:?}"
                    ));
                }
                Outcome::Aborted | Outcome::Lost => {}
            }
        }
        report.lost = lost_acks.len() as u64;
        if let Some(earliest_lost) = lost_acks.iter().flatten().min() {
            // Only a suffix of the commit order may be lost: nothing present began its COMMIT
            // after a lost one was acknowledged.
            if let Some((xfer, t)) = self.transfers.iter().find(|(x, t)| {
                present.contains(x) && t.commit_sent.is_some_and(|s| s > *earliest_lost)
            }) {
                return Err(format!(
                    "transfer {xfer} is present though it committed after a lost one was \
                     acknowledged (not a suffix): {t:?}"
                ));
            }
            if let Some(killed) = killed_at {
                report.lost_window = killed.saturating_duration_since(*earliest_lost);
            }
        }
        Ok(())
    }
}

/// One client's loop: transfers until `stop` or until its connection dies; returns what it
/// knows of each transfer it began.
pub fn run_client(
    port: u16,
    accounts: i64,
    rollback_percent: u32,
    first_id: u64,
    seed: u64,
    stop: &AtomicBool,
) -> (Vec<(u64, Transfer)>, u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut refused = 0;
    let Ok(mut conn) = connect(port, DATABASE) else {
        return (out, refused);
    };
    let mut next_id = first_id;
    while !stop.load(Ordering::Relaxed) {
        let from = rng.gen_range(0..accounts);
        let to = (from + rng.gen_range(1..accounts)) % accounts;
        let amount = rng.gen_range(1..=100);
        let xfer = next_id;
        next_id += 1;
        let mut t = Transfer {
            from,
            to,
            amount,
            outcome: Outcome::Aborted,
            commit_sent: None,
            acknowledged: None,
            seen: false,
        };
        let body = [
            "BEGIN".to_string(),
            format!("UPDATE accounts SET balance = balance - {amount} WHERE id = {from}"),
            format!("UPDATE accounts SET balance = balance + {amount} WHERE id = {to}"),
            format!(
                "INSERT INTO ledger (xfer, from_id, to_id, amount) VALUES ({xfer}, {from}, {to}, {amount})"
            ),
        ]
        .iter()
        .try_for_each(|sql| conn.query_drop(sql));
        if let Err(e) = body {
            out.push((xfer, t));
            if is_connection_error(&e) || conn.query_drop("ROLLBACK").is_err() {
                return (out, refused);
            }
            refused += 1;
            continue;
        }
        if rng.gen_range(0..100) < rollback_percent {
            out.push((xfer, t));
            if conn.query_drop("ROLLBACK").is_err() {
                return (out, refused);
            }
            continue;
        }
        t.commit_sent = Some(Instant::now());
        match conn.query_drop("COMMIT") {
            Ok(()) => {
                t.outcome = Outcome::Committed;
                t.acknowledged = Some(Instant::now());
                out.push((xfer, t));
            }
            Err(e) => {
                // Sent, and no answer (or a failed COMMIT): it may or may not have happened.
                t.outcome = Outcome::Unknown;
                out.push((xfer, t));
                if is_connection_error(&e) {
                    return (out, refused);
                }
            }
        }
    }
    (out, refused)
}
