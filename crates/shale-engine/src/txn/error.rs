//! Why a transaction could not go on (docs/transactions.md, "Errors").

use std::fmt::Write as _;
use std::time::Duration;

/// A transaction failure. Each says whether the transaction is still usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransactionError {
    /// Another transaction held a conflicting lock for longer than the lock wait timeout.
    /// Only the statement failed: the transaction keeps its locks and changes.
    #[error(
        "lock wait timeout on key {key} after {waited:?} (held by transaction(s) {holders:?}); \
         retry the statement or roll back"
    )]
    LockTimeout {
        /// The key, printed as escaped bytes.
        key: String,
        /// How long the request waited.
        waited: Duration,
        /// Transactions holding the lock when the wait ended.
        holders: Vec<u64>,
    },
    /// This transaction was the youngest in a cycle of lock waits and was rolled back.
    #[error(
        "deadlock: transaction {victim} was rolled back as the youngest of the cycle {cycle:?} \
         (waiting for key {key}); retry the transaction"
    )]
    Deadlock {
        /// The transaction rolled back (this one).
        victim: u64,
        /// The transactions of the cycle, each waiting for the next.
        cycle: Vec<u64>,
        /// The key this transaction was waiting for.
        key: String,
    },
    /// Under REPEATABLE READ, the key was changed by a commit after this transaction's
    /// snapshot. The statement failed; roll back and retry the transaction.
    #[error(
        "snapshot conflict on key {key}: changed at seqno {changed_at} after this transaction's \
         snapshot at {snapshot}; roll back and retry"
    )]
    SnapshotConflict {
        /// The key, printed as escaped bytes.
        key: String,
        /// Newest seqno of the key.
        changed_at: u64,
        /// The transaction's snapshot.
        snapshot: u64,
    },
    /// An optimistic transaction's commit found a key it read or wrote changed after its
    /// snapshot. Nothing was written; retry the transaction.
    #[error(
        "optimistic transaction conflict on key {key}: changed at seqno {changed_at} after the \
         snapshot at {snapshot}; nothing was written, retry the transaction"
    )]
    OptimisticConflict {
        /// The key, printed as escaped bytes.
        key: String,
        /// Newest seqno of the key.
        changed_at: u64,
        /// The transaction's snapshot.
        snapshot: u64,
    },
    /// The transaction's changes would use more memory than its cap.
    #[error(
        "transaction too large: its changes would use {would_use} bytes, above the cap of \
         {limit} bytes (TransactionOptions::max_bytes); commit in smaller pieces or use bulk mode"
    )]
    TooLarge {
        /// Bytes the changes would use with this write.
        would_use: usize,
        /// The cap.
        limit: usize,
    },
    /// A call on a transaction that was rolled back after a deadlock, or a savepoint call with
    /// no savepoint set.
    #[error("transaction {txn}: {detail}")]
    InvalidState {
        /// The transaction.
        txn: u64,
        /// What was wrong.
        detail: String,
    },
}

/// A key as printable text (escaped bytes, cut at 64 bytes).
pub(crate) fn show_key(key: &[u8]) -> String {
    let shown = &key[..key.len().min(64)];
    let mut text: String = shown.escape_ascii().to_string();
    if key.len() > shown.len() {
        let _ = write!(text, "... ({} bytes)", key.len());
    }
    format!("\"{text}\"")
}
