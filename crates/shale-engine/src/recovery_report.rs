//! [`RecoveryReport`]: what an open replayed from the WALs and what it dropped
//! ([`crate::Db::recovery_report`]).
//!
//! docs/format/wal.md promises that damage a recovery mode tolerates is dropped *and
//! reported*: a torn tail of the newest WAL under `TolerateCorruptedTailRecords`, everything
//! after the first damage under `PointInTime`, the damaged records `SkipAnyCorruptedRecords`
//! skipped. The open builds this report while it reads the WALs (`recovery::read_wals`); the
//! engine exposes it on the open database, counts it in [`crate::DbStats`] and writes it to the
//! info LOG.

use std::fmt;

use shale_sst::SeqNo;

use crate::wal::format::log_file_name;
use crate::wal::RecoveryMode;

/// What an open found in the WALs it replayed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The recovery mode the WALs were read in.
    pub mode: RecoveryMode,
    /// Every WAL the open looked at, oldest first.
    pub wals: Vec<ReplayedWal>,
    /// Data the open did not replay, in WAL order. Empty when every WAL read cleanly.
    pub dropped: Vec<DroppedWalData>,
}

/// One WAL an open read (or, after a `PointInTime` stop, skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayedWal {
    /// The WAL's number (`000012.wal` is 12).
    pub number: u64,
    /// Logical records (commit groups) replayed from it.
    pub records: u64,
    /// The offset just past its last replayed record.
    pub end: u64,
}

/// Why WAL data was not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Damage with no valid record after it: a write a crash interrupted (or damage that looks
    /// exactly like one). Dropped by `TolerateCorruptedTailRecords` and
    /// `SkipAnyCorruptedRecords`, and the stopping point of `PointInTime`.
    TornTail,
    /// `PointInTime`: damage with valid records after it; the records after it were not read.
    Corruption,
    /// `SkipAnyCorruptedRecords`: damaged records skipped, reading went on after them.
    Skipped,
    /// `PointInTime`: a WAL after the one recovery stopped in, not read at all.
    AfterStop,
    /// `PointInTime` or `SkipAnyCorruptedRecords`: the WAL's valid data ends before the size
    /// the MANIFEST recorded as synced (docs/format/manifest.md, `WAL_SYNCED`): it was cut or
    /// zeroed after the data was durable. The other modes refuse to open.
    SyncedDataMissing,
}

impl DropReason {
    /// A few words for people.
    pub fn describe(self) -> &'static str {
        match self {
            DropReason::TornTail => "torn tail",
            DropReason::Corruption => "corruption (point-in-time stopped here)",
            DropReason::Skipped => "damaged records skipped",
            DropReason::AfterStop => "not replayed (after a point-in-time stop)",
            DropReason::SyncedDataMissing => "synced data missing (the file was cut)",
        }
    }
}

/// A stretch of one WAL the open did not replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DroppedWalData {
    /// The WAL's number.
    pub wal_number: u64,
    /// Why.
    pub reason: DropReason,
    /// Where the dropped data starts; `None` for skipped records, which may lie anywhere.
    pub offset: Option<u64>,
    /// Bytes not replayed.
    pub bytes: u64,
    /// Logical records (commit groups) among them, when known (a damaged record's extent, and
    /// so the count, is not).
    pub records: Option<u64>,
    /// The first sequence number the dropped writes would have carried, when known: the one
    /// after the last write recovered before them. How many followed is not known.
    pub first_seqno: Option<SeqNo>,
}

impl RecoveryReport {
    /// Bytes of WAL data not replayed.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped.iter().map(|d| d.bytes).sum()
    }

    /// Logical records replayed, every WAL together.
    pub fn replayed_records(&self) -> u64 {
        self.wals.iter().map(|w| w.records).sum()
    }
}

impl fmt::Display for DroppedWalData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "WAL {} ({}): {}",
            self.wal_number,
            log_file_name(self.wal_number),
            self.reason.describe()
        )?;
        if let Some(offset) = self.offset {
            write!(f, " at offset {offset}")?;
        }
        write!(f, ", {} bytes", self.bytes)?;
        match self.records {
            Some(records) => write!(f, ", {records} records")?,
            None => write!(f, ", records not known")?,
        }
        if let Some(seqno) = self.first_seqno {
            write!(f, ", writes from seqno {seqno} on")?;
        }
        Ok(())
    }
}

/// `replayed 3 WALs (120 records) in mode ...; dropped: ...` on one line per dropped stretch.
impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let numbers: Vec<String> = self.wals.iter().map(|w| w.number.to_string()).collect();
        write!(
            f,
            "recovery ({}): read {} WALs [{}], {} records replayed",
            self.mode.name(),
            self.wals.len(),
            numbers.join(", "),
            self.replayed_records()
        )?;
        if self.dropped.is_empty() {
            return write!(f, ", nothing dropped");
        }
        write!(
            f,
            "; DROPPED {} bytes in {} places",
            self.dropped_bytes(),
            self.dropped.len()
        )?;
        for dropped in &self.dropped {
            write!(f, "\n  dropped: {dropped}")?;
        }
        Ok(())
    }
}
