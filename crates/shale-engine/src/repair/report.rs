//! What a repair did: the tables kept, what each WAL gave, the files set aside
//! ([`super::repair_db`]).

use std::path::PathBuf;

use shale_sst::SeqNo;

use crate::version::FileMetaData;

/// What a repair did.
#[derive(Debug, Clone, Default)]
pub struct RepairReport {
    /// The MANIFEST whose keyspaces and levels were kept; `None` when none replayed and every
    /// table went to L0.
    pub manifest_used: Option<PathBuf>,
    /// Tables in the repaired database (those written from WALs included).
    pub tables: Vec<SalvagedTable>,
    /// What each WAL gave.
    pub wals: Vec<SalvagedWal>,
    /// Files moved into `lost/`, tables the MANIFEST listed that were missing, and files an
    /// earlier repair set aside that are still in `lost/` ([`LostFile::earlier`]).
    pub lost: Vec<LostFile>,
    /// The keyspaces of the repaired database, (id, name).
    pub keyspaces: Vec<(u32, String)>,
    /// The largest sequence number salvaged.
    pub last_sequence: SeqNo,
    /// The new MANIFEST's number.
    pub manifest_number: u64,
    /// Things worth knowing that are not losses (e.g. "OPTIONS rewritten from the options
    /// given").
    pub notes: Vec<String>,
}

/// A table of the repaired database.
#[derive(Debug, Clone)]
pub struct SalvagedTable {
    /// Keyspace id.
    pub keyspace: u32,
    /// Level it was placed at.
    pub level: usize,
    /// The file's description.
    pub meta: FileMetaData,
    /// The WAL it was written from, for tables made of WAL records.
    pub from_wal: Option<u64>,
}

/// What one WAL gave.
#[derive(Debug, Clone)]
pub struct SalvagedWal {
    /// Log number.
    pub number: u64,
    /// Records (commit groups) read.
    pub records: u64,
    /// Writes in them that went into new tables (writes already in tables are not counted).
    pub entries_replayed: u64,
    /// Bytes after the last good record that were not salvaged.
    pub bytes_lost: u64,
    /// Why reading stopped early, with the offset, if it did.
    pub damage: Option<String>,
}

/// A file repair gave up on.
#[derive(Debug, Clone)]
pub struct LostFile {
    /// The file's name in the database directory.
    pub name: String,
    /// Where it is now (`None`: it was missing).
    pub moved_to: Option<PathBuf>,
    /// Its size.
    pub bytes: u64,
    /// Bytes of table data or WAL records lost with it: a damaged or unplaceable table's
    /// size, a damaged WAL's bytes after its last good record, 0 for metadata files (repair
    /// rebuilds them) and for files that held no live data.
    pub data_lost: u64,
    /// An earlier repair set it aside (its journal in `lost/` says why); it is still in
    /// `lost/`, and its data is still not in the database.
    pub earlier: bool,
    /// The file held no live data: a table the replayed MANIFEST does not list (an obsolete
    /// compaction input, or an output a crash or shutdown left unfinished). Its bytes are not
    /// counted as lost.
    pub obsolete: bool,
    /// Why (the error, naming the offset, for damaged files).
    pub reason: String,
}

impl RepairReport {
    /// Whether any table or WAL record was salvaged.
    pub fn salvaged_anything(&self) -> bool {
        !self.tables.is_empty() || self.wals.iter().any(|w| w.records > 0)
    }

    /// Bytes of table data and WAL records lost ([`LostFile::data_lost`] summed): damaged and
    /// missing tables, tables of unknown or dropped keyspaces, WAL bytes after the first
    /// damage, and what files an earlier repair set aside in `lost/` held. Metadata files
    /// (`CURRENT`, MANIFEST, OPTIONS) are not counted; repair rebuilds them.
    pub fn bytes_lost(&self) -> u64 {
        self.lost.iter().map(|l| l.data_lost).sum()
    }

    /// The part of [`Self::bytes_lost`] in files an earlier repair set aside.
    pub fn bytes_lost_earlier(&self) -> u64 {
        self.lost
            .iter()
            .filter(|l| l.earlier)
            .map(|l| l.data_lost)
            .sum()
    }
}
