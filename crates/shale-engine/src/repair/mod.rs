//! Repair: salvages what can be read from a damaged database directory and makes it openable
//! again ([`repair_db`], `RocksDB`'s `RepairDB`; docs/operations.md "Repair", docs/reliability.md
//! "What repair guarantees").
//!
//! Steps, under the database's `LOCK`:
//! 1. The MANIFEST named by `CURRENT` (the newest `MANIFEST-*` if `CURRENT` is damaged) is
//!    replayed as recovery would, tolerating a torn last record. If it replays, its keyspaces
//!    and the level of every table are kept. If not, the keyspaces its readable records added
//!    and the keyspace every table records in its properties (`user.keyspace_id`,
//!    docs/format/sst.md) are used, and every table goes to L0. The same holds for a MANIFEST
//!    that replays but has lost its newest edits (a WAL its log numbers need is missing,
//!    `recovery::check_wals_present`): the tables those edits added are not in its levels.
//! 2. Every table file is opened and verified (every block checksum, entry counts). A table
//!    that fails, a table the replayed MANIFEST does not list (obsolete or unfinished), and a
//!    table of a dropped keyspace are moved into `lost/`.
//! 3. Every WAL is read up to its first damage (`PointInTime`); the records before it become
//!    new L0 tables, the bytes after it are reported lost and the damaged WAL is moved into
//!    `lost/`. A keyspace's writes already in its tables are skipped (below its log number
//!    when the MANIFEST replayed; at or below its largest table seqno otherwise).
//! 4. A fresh MANIFEST describing the salvaged tables is written (checked against the level
//!    invariants first), then an OPTIONS file if the newest one was unreadable, then the
//!    journal of what is set aside (`lost/REPAIR-NNNNNN`, journal.rs), then `CURRENT`; only
//!    then are the files set aside moved into `lost/`.
//! 5. Without a MANIFEST, a keyspace whose L0 tables overlap in both keys and sequence ranges
//!    is compacted through `Db::open` (see `interleaved_keyspaces`).
//!
//! Invariants:
//! 1. Nothing is deleted: every file repair gives up on is moved into `lost/` with its bytes.
//! 2. Nothing is moved before what repair salvages from it is durable and live: new tables
//!    and the MANIFEST are written and synced in `lost/.staging` and renamed in whole, the
//!    journal is synced, `CURRENT` is written, and only then are originals moved (a damaged
//!    `CURRENT` just before it is replaced). A repair interrupted at any point can simply be
//!    run again: before `CURRENT` the originals are all in place; after it the journal says
//!    what is left to move and why. Either way the rerun ends with what the first run would
//!    have saved, and its report counts the same losses (`tests/repair_crash.rs`).
//! 3. L0 stays ordered newest first by largest seqno, and WAL tables hold seqnos above every
//!    kept table of their keyspace, so newer data wins wherever the old levels were kept.
//! 4. Every keyspace's log number in the new MANIFEST is above every WAL on disk, so opening
//!    the repaired database never replays a WAL repair already salvaged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use shale_sst::{SeqNo, Table, TableOpenOptions, TableProperties};

use crate::batch::WriteBatch;
use crate::blob::BlobFileMeta;
use crate::error::{Error, Result};
use crate::flush::{
    file_meta, write_memtable, writer_options, KEYSPACE_ID_PROPERTY, KEYSPACE_NAME_PROPERTY,
};
use crate::memtable::{MemTable, MemTableEntry};
use crate::options::{KeyspaceOptions, Options};
use crate::options_file::{options_file_name, parse_options_file_name, OptionsFile};
use crate::recovery::{check_wals_present, NUM_LEVELS};
use crate::table_cache::table_file_name;
use crate::version::{
    manifest_file_name, parse_manifest_file_name, read_current, replay, FileMetaData, Version,
    VersionEdit, CURRENT_FILE_NAME, DEFAULT_KEYSPACE_ID, DEFAULT_KEYSPACE_NAME,
    MANIFEST_FORMAT_VERSION,
};
use crate::wal::format::{log_file_name, parse_log_file_name};
use crate::wal::RecoveryMode;

mod identify;
mod journal;
mod lost;
mod report;
mod wal;

pub use report::{LostFile, RepairReport, SalvagedTable, SalvagedWal};
use wal::read_wal;

/// The directory under the database directory that files repair gives up on are moved into.
pub const LOST_DIR_NAME: &str = "lost";

/// The directory under `lost/` where repair writes new tables and its MANIFEST before
/// publishing them by rename, so that a name in the database directory only ever holds a
/// complete, synced file. What an interrupted repair left there is removed by the next.
const STAGING_DIR_NAME: &str = ".staging";

/// Threads that sort a WAL's replayed writes.
const SORT_THREADS: usize = 2;

/// How [`repair_db_with_progress`] runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct RepairOptions {
    /// Repair a directory even when its files do not look like a Shale database's (no file
    /// carries Shale's format marks, or more files are foreign than Shale's: a `RocksDB`
    /// directory, files of another program). Without it such a directory is refused before
    /// anything is changed; with it every file repair cannot read is moved into `lost/`.
    pub force: bool,
}

/// Repairs the database in `dir` with `options` (its file system, comparator and keyspace
/// options); see the module docs. Fails if another process holds the database's `LOCK`, if
/// the directory holds no database files or does not look like a Shale database
/// ([`RepairOptions::force`]), or if a file cannot be read or written for a reason other than
/// damage.
pub fn repair_db(dir: &Path, options: &Options) -> Result<RepairReport> {
    repair_db_with_progress(dir, options, RepairOptions::default(), &mut |_, _| {})
}

/// [`repair_db`] with `repair` options, calling `progress(done, total)` with the table and
/// WAL bytes read so far.
pub fn repair_db_with_progress(
    dir: &Path,
    options: &Options,
    repair: RepairOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    let force = repair.force;
    let fs = &*options.file_system;
    if !fs.exists(dir)? {
        return Err(Error::InvalidArgument(format!(
            "{} does not exist: nothing to repair",
            dir.display()
        )));
    }
    let lock = fs.lock(&dir.join("LOCK"))?;
    let mut repair = Repair {
        dir,
        options,
        names: fs.list(dir)?,
        report: RepairReport::default(),
        keyspaces: BTreeMap::new(),
        dropped: BTreeSet::new(),
        max_keyspace_id: DEFAULT_KEYSPACE_ID,
        next_file_number: 1,
        pending: Vec::new(),
        claimed: BTreeSet::new(),
        journals: Vec::new(),
    };
    if !repair.names.iter().any(|n| is_database_file(n)) {
        return Err(Error::InvalidArgument(format!(
            "no database files in {}: nothing to repair",
            dir.display()
        )));
    }
    let identity = identify::identify(fs, dir, &repair.names)?;
    if identity.refuse() && !force {
        return Err(Error::InvalidArgument(format!(
            "{} does not look like a Shale database ({}); nothing was changed. If it is a Shale \
             database damaged this badly, repair it with --force (RepairOptions::force): every \
             file it cannot read is then moved into {LOST_DIR_NAME}/",
            dir.display(),
            identity.describe()
        )));
    }
    repair.next_file_number = repair
        .names
        .iter()
        .filter_map(|n| file_number(n))
        .max()
        .unwrap_or(0)
        + 1;
    repair.read_journals()?;
    let persisted = repair.read_options()?;
    let manifest = repair.read_manifest()?;
    repair.account_for_earlier_repairs()?;
    let total: u64 = repair
        .names
        .iter()
        .filter(|n| table_number(n).is_some() || parse_log_file_name(n).is_some())
        .map(|n| fs.size(&dir.join(n)).unwrap_or(0))
        .sum();
    let mut done = 0;
    let mut tick = |bytes: u64| {
        done += bytes;
        progress(done, total);
    };
    let mut levels = repair.salvage_tables(manifest.as_ref(), &mut tick)?;
    repair.salvage_wals(
        manifest.as_ref(),
        persisted.as_ref(),
        &mut levels,
        &mut tick,
    )?;
    repair.write_metadata(manifest.as_ref(), persisted.is_none(), &levels)?;
    let mut report = repair.report;
    if manifest.is_none() {
        let interleaved = interleaved_keyspaces(&levels, &options.comparator);
        if !interleaved.is_empty() {
            // Opening takes the LOCK itself.
            drop(lock);
            compact_keyspaces(dir, options, &interleaved, &mut report)?;
        }
    }
    Ok(report)
}

/// The MANIFEST that replayed.
struct OldManifest {
    version: Version,
    last_sequence: SeqNo,
    next_file_number: u64,
}

/// Tables placed so far: (keyspace, level) -> tables.
type Levels = BTreeMap<(u32, usize), Vec<SalvagedTable>>;

/// A repair in progress.
struct Repair<'a> {
    dir: &'a Path,
    options: &'a Options,
    names: Vec<String>,
    report: RepairReport,
    /// Keyspaces known so far, id -> name.
    keyspaces: BTreeMap<u32, String>,
    /// Keyspaces the old MANIFEST dropped.
    dropped: BTreeSet<u32>,
    max_keyspace_id: u32,
    next_file_number: u64,
    /// Files to move into `lost/` once the new MANIFEST is live: (name, destination).
    pending: Vec<(String, std::path::PathBuf)>,
    /// Names in `lost/` that a journal or this repair has taken (journal invariant 3).
    claimed: BTreeSet<String>,
    /// Every journal in `lost/`: (MANIFEST number, what it set aside).
    journals: Vec<(u64, Vec<LostFile>)>,
}

impl Repair<'_> {
    fn new_file_number(&mut self) -> u64 {
        let number = self.next_file_number;
        self.next_file_number += 1;
        number
    }

    /// The newest OPTIONS file, if it decodes. Damaged OPTIONS files are set aside (the
    /// newest one is what opening reads; an older one must not silently take its place, so
    /// a fresh one is written later).
    fn read_options(&mut self) -> Result<Option<OptionsFile>> {
        let fs = &*self.options.file_system;
        let mut numbers: Vec<u64> = self
            .names
            .iter()
            .filter_map(|n| parse_options_file_name(n))
            .collect();
        numbers.sort_unstable();
        let mut newest = None;
        let mut damaged = Vec::new();
        for &number in &numbers {
            let path = self.dir.join(options_file_name(number));
            match read_whole(fs, &path).and_then(|bytes| OptionsFile::decode(&bytes, &path)) {
                Ok(file) => newest = Some(file),
                Err(e) if e.is_corruption() => {
                    damaged.push((number, e.to_string()));
                    newest = None;
                }
                Err(e) => return Err(e),
            }
        }
        for (number, reason) in damaged {
            self.set_aside(&options_file_name(number), reason)?;
        }
        if let Some(file) = &newest {
            self.options.check_compatible(file)?;
        }
        Ok(newest)
    }

    /// Step 1: replays the live MANIFEST. On failure, records what was wrong and keeps the
    /// keyspaces the readable records named.
    fn read_manifest(&mut self) -> Result<Option<OldManifest>> {
        let fs = &*self.options.file_system;
        self.keyspaces
            .insert(DEFAULT_KEYSPACE_ID, DEFAULT_KEYSPACE_NAME.to_owned());
        let number = match read_current(fs, self.dir) {
            Ok(number) => number,
            Err(e) => {
                let newest = self
                    .names
                    .iter()
                    .filter_map(|n| parse_manifest_file_name(n))
                    .max();
                self.report.notes.push(format!(
                    "{CURRENT_FILE_NAME} is unusable; {}",
                    newest.map_or("no MANIFEST is there".to_owned(), |n| format!(
                        "tried the newest MANIFEST, {}",
                        manifest_file_name(n)
                    ))
                ));
                if self.names.iter().any(|n| n == CURRENT_FILE_NAME) {
                    self.set_aside(CURRENT_FILE_NAME, e.to_string())?;
                }
                let Some(newest) = newest else {
                    return Ok(None);
                };
                newest
            }
        };
        let path = self.dir.join(manifest_file_name(number));
        let mut added = Vec::new();
        let replayed = replay(
            fs,
            &path,
            number,
            &self.options.comparator,
            NUM_LEVELS,
            RecoveryMode::TolerateCorruptedTailRecords,
            &mut |_, edit: &VersionEdit| {
                added.extend(
                    edit.added_keyspaces
                        .iter()
                        .map(|(id, n)| (*id, Some(n.clone()))),
                );
                added.extend(edit.dropped_keyspaces.iter().map(|id| (*id, None)));
                if let Some(id) = edit.max_keyspace_id {
                    added.push((id, None));
                }
            },
        );
        match replayed {
            Ok((version, replayed)) => {
                self.keyspaces = version.keyspaces().into_iter().collect();
                self.max_keyspace_id = replayed.max_keyspace_id;
                // New files never reuse a number the MANIFEST knows, even of a missing file.
                let known = version
                    .all_files()
                    .map(|(_, _, meta)| meta.number)
                    .chain(version.keyspace_map().values().map(|k| k.log_number))
                    .chain([number, replayed.next_file_number.saturating_sub(1)]);
                for used in known {
                    self.next_file_number = self.next_file_number.max(used.saturating_add(1));
                }
                if self.lost_newest_edits(&version, &path, replayed.valid_end)? {
                    self.max_keyspace_id = replayed.max_keyspace_id;
                    return Ok(None);
                }
                self.report.manifest_used = Some(path);
                Ok(Some(OldManifest {
                    version,
                    last_sequence: replayed.last_sequence,
                    next_file_number: replayed.next_file_number,
                }))
            }
            Err(e) => {
                for (id, name) in added {
                    self.max_keyspace_id = self.max_keyspace_id.max(id);
                    match name {
                        Some(name) => {
                            self.dropped.remove(&id);
                            self.keyspaces.insert(id, name);
                        }
                        // A MAX_KEYSPACE_ID carries no name; only a dropped keyspace is removed.
                        None if self.keyspaces.contains_key(&id) && id != DEFAULT_KEYSPACE_ID => {
                            self.keyspaces.remove(&id);
                            self.dropped.insert(id);
                        }
                        None => {}
                    }
                }
                self.report.notes.push(format!(
                    "{} does not replay; every readable table goes to L0 of the keyspace it \
                     records",
                    file_name(&path)
                ));
                if fs.exists(&path)? {
                    self.set_aside(&file_name(&path), e.to_string())?;
                }
                Ok(None)
            }
        }
    }

    /// Whether the replayed MANIFEST at `path` lost its newest edits (recovery.rs invariant
    /// 5): then it misses the tables they added, so its levels are not trusted (its keyspaces
    /// are), and it is set aside.
    fn lost_newest_edits(
        &mut self,
        version: &Version,
        path: &Path,
        valid_end: u64,
    ) -> Result<bool> {
        let Err(e) = check_wals_present(
            version,
            &self.names,
            RecoveryMode::TolerateCorruptedTailRecords,
            path,
            valid_end,
        ) else {
            return Ok(false);
        };
        self.report.notes.push(format!(
            "{} replays but has lost its newest edits ({e}); every readable table goes to L0 \
             of the keyspace it records",
            file_name(path)
        ));
        self.set_aside(&file_name(path), e.to_string())?;
        Ok(true)
    }

    /// Step 2: verifies every table and places the readable ones.
    fn salvage_tables(
        &mut self,
        manifest: Option<&OldManifest>,
        tick: &mut dyn FnMut(u64),
    ) -> Result<Levels> {
        let fs = &*self.options.file_system;
        let listed: BTreeMap<u64, (u32, usize, FileMetaData)> = manifest
            .map(|m| {
                m.version
                    .all_files()
                    .map(|(keyspace, level, meta)| {
                        (meta.number, (keyspace, level, (**meta).clone()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut numbers: Vec<u64> = self.names.iter().filter_map(|n| table_number(n)).collect();
        numbers.sort_unstable();
        let mut levels = Levels::new();
        for number in numbers {
            let path = table_file_name(self.dir, number);
            let name = file_name(&path);
            let size = fs.size(&path)?;
            if manifest.is_some() && !listed.contains_key(&number) {
                tick(size);
                self.set_aside(
                    &name,
                    "not in the MANIFEST: an obsolete or unfinished table (opening the database \
                     would delete it)"
                        .to_owned(),
                )?;
                if let Some(lost) = self.report.lost.last_mut() {
                    lost.obsolete = true;
                    lost.data_lost = 0;
                }
                continue;
            }
            let checked = verify_table(self.options, &path);
            tick(size);
            let props = match checked {
                Ok(props) => props,
                Err(e) if e.is_corruption() => {
                    self.set_aside(&name, format!("unreadable: {e}"))?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let placed = if manifest.is_some() {
                match listed.get(&number) {
                    Some((keyspace, level, meta)) if meta.size == size => {
                        Ok((*keyspace, *level, meta.clone()))
                    }
                    Some((_, _, meta)) => Err(format!(
                        "the file is {size} bytes but the MANIFEST says {}",
                        meta.size
                    )),
                    None => Err("not in the MANIFEST".to_owned()),
                }
            } else {
                self.keyspace_of(&props)
                    .and_then(|keyspace| Ok((keyspace, 0, meta_of(number, size, &props)?)))
            };
            match placed {
                Ok((keyspace, level, meta)) => {
                    levels
                        .entry((keyspace, level))
                        .or_default()
                        .push(SalvagedTable {
                            keyspace,
                            level,
                            meta,
                            from_wal: None,
                        });
                }
                Err(reason) => self.set_aside(&name, reason)?,
            }
        }
        for (number, (_, _, meta)) in &listed {
            let found = levels.values().flatten().any(|t| t.meta.number == *number);
            if !found
                && !self
                    .report
                    .lost
                    .iter()
                    .any(|l| table_number(&l.name) == Some(*number))
            {
                self.report.lost.push(LostFile {
                    name: file_name(&table_file_name(self.dir, *number)),
                    moved_to: None,
                    bytes: meta.size,
                    data_lost: meta.size,
                    earlier: false,
                    obsolete: false,
                    reason: "missing: the MANIFEST lists it but the file does not exist".into(),
                });
            }
        }
        Ok(levels)
    }

    /// The keyspace a table records in its properties, when the MANIFEST did not replay.
    fn keyspace_of(&mut self, props: &TableProperties) -> std::result::Result<u32, String> {
        let Some(id) = props.user.get(KEYSPACE_ID_PROPERTY) else {
            // Tables written before keyspaces were recorded: only safe when no other keyspace
            // is known.
            return if self.keyspaces.len() == 1 {
                Ok(DEFAULT_KEYSPACE_ID)
            } else {
                Err(
                    "the table does not record its keyspace and the database has several; \
                     cannot place it"
                        .to_owned(),
                )
            };
        };
        let id: u32 = std::str::from_utf8(id)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| "the table's keyspace id property is not a number".to_owned())?;
        if self.dropped.contains(&id) {
            return Err(format!("keyspace {id} was dropped"));
        }
        if !self.keyspaces.contains_key(&id) {
            let name = props
                .user
                .get(KEYSPACE_NAME_PROPERTY)
                .and_then(|n| String::from_utf8(n.clone()).ok())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| format!("keyspace-{id}"));
            if self.keyspaces.values().any(|n| *n == name) {
                return Err(format!(
                    "the table records keyspace {id} named {name:?}, but that name belongs to \
                     another keyspace"
                ));
            }
            self.keyspaces.insert(id, name);
            self.max_keyspace_id = self.max_keyspace_id.max(id);
        }
        Ok(id)
    }

    /// Step 3: replays every WAL's readable prefix into new L0 tables.
    fn salvage_wals(
        &mut self,
        manifest: Option<&OldManifest>,
        persisted: Option<&OptionsFile>,
        levels: &mut Levels,
        tick: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let fs = &*self.options.file_system;
        let mut numbers: Vec<u64> = self
            .names
            .iter()
            .filter_map(|n| parse_log_file_name(n))
            .collect();
        numbers.sort_unstable();
        // Writes of a keyspace at or below this are already in its tables.
        let mut flushed: BTreeMap<u32, SeqNo> = BTreeMap::new();
        for table in levels.values().flatten() {
            let seqno = flushed.entry(table.keyspace).or_default();
            *seqno = (*seqno).max(table.meta.largest_seqno);
        }
        let mut batches = Vec::new();
        // With a MANIFEST, a WAL below every keyspace's log number is already in tables (the
        // next open deletes it).
        let oldest_needed = manifest.map_or(0, |m| {
            self.keyspaces
                .keys()
                .filter_map(|id| m.version.log_number(*id))
                .min()
                .unwrap_or(u64::MAX)
        });
        for &number in numbers.iter().filter(|n| **n >= oldest_needed) {
            let path = self.dir.join(log_file_name(number));
            let size = fs.size(&path)?;
            let recorded = manifest.and_then(|m| m.version.wal_end(number));
            let (records, end, damage) = read_wal(fs, &path, number, recorded, &mut batches)?;
            tick(size);
            let readable_end = recorded.unwrap_or(size).min(size);
            let bytes_lost = if damage.is_some() {
                readable_end.saturating_sub(end)
            } else {
                0
            };
            self.report.wals.push(SalvagedWal {
                number,
                records,
                entries_replayed: 0,
                bytes_lost,
                damage: damage.clone(),
            });
            if let Some(damage) = damage {
                // Moved only once the tables holding its records are live (invariant 2).
                self.set_aside(&log_file_name(number), damage)?;
                if let Some(lost) = self.report.lost.last_mut() {
                    lost.data_lost = bytes_lost;
                }
            }
        }
        self.write_wal_tables(manifest, persisted, &flushed, &batches, levels)
    }

    /// Writes each keyspace's salvaged WAL writes as one new L0 table.
    fn write_wal_tables(
        &mut self,
        manifest: Option<&OldManifest>,
        persisted: Option<&OptionsFile>,
        flushed: &BTreeMap<u32, SeqNo>,
        batches: &[(u64, WriteBatch)],
        levels: &mut Levels,
    ) -> Result<()> {
        let fs = &*self.options.file_system;
        let staging = self.dir.join(LOST_DIR_NAME).join(STAGING_DIR_NAME);
        if manifest.is_none() {
            // Keyspaces whose names were lost with the MANIFEST and that no table records.
            let unknown: BTreeSet<u32> = batches
                .iter()
                .flat_map(|(_, batch)| batch.iter().map(|e| e.keyspace))
                .filter(|id| !self.keyspaces.contains_key(id) && !self.dropped.contains(id))
                .collect();
            for id in unknown {
                let name = format!("keyspace-{id}");
                self.report.notes.push(format!(
                    "WAL writes of keyspace {id}, whose name was lost, are salvaged into a \
                     keyspace named {name:?}"
                ));
                self.keyspaces.insert(id, name);
                self.max_keyspace_id = self.max_keyspace_id.max(id);
            }
        }
        let mut per_keyspace: BTreeMap<u32, (Vec<MemTableEntry<'_>>, u64)> = BTreeMap::new();
        for (number, batch) in batches {
            for e in batch.iter() {
                if !self.wants(manifest, flushed, *number, e.keyspace, e.seqno) {
                    continue;
                }
                let slot = per_keyspace.entry(e.keyspace).or_default();
                slot.0.push(MemTableEntry {
                    seqno: e.seqno,
                    kind: e.kind,
                    user_key: e.key,
                    value: e.value,
                });
                slot.1 = slot.1.max(*number);
                if let Some(wal) = self.report.wals.iter_mut().find(|w| w.number == *number) {
                    wal.entries_replayed += 1;
                }
            }
        }
        for (keyspace, (entries, newest_wal)) in per_keyspace {
            let name = self.keyspaces.get(&keyspace).cloned().unwrap_or_default();
            let own = keyspace_options(self.options, persisted, &name);
            let number = self.new_file_number();
            let mem = Arc::new(MemTable::from_unsorted(
                self.options.comparator.clone(),
                number,
                usize::MAX,
                0,
                &entries,
                SORT_THREADS,
            )?);
            if !fs.exists(&staging)? {
                fs.create_dir_all(&staging)?;
            }
            let written = write_memtable(
                fs,
                &staging,
                &mem,
                number,
                writer_options(&self.options.comparator, &own, (keyspace, &name)),
                own.ttl.is_some(),
                &[],                        // offline: no snapshots
                None,                       // repair runs offline: nothing to share the disk with
                None, // salvaged WAL values stay inline; compaction may separate them later
                shale_fs::IoMode::Buffered, // an offline tool: the page cache does no harm
            )?;
            if let Some(meta) = written {
                // Written and synced in staging; published whole.
                fs.rename(
                    &table_file_name(&staging, number),
                    &table_file_name(self.dir, number),
                )?;
                levels
                    .entry((keyspace, 0))
                    .or_default()
                    .push(SalvagedTable {
                        keyspace,
                        level: 0,
                        meta,
                        from_wal: Some(newest_wal),
                    });
            }
        }
        fs.sync_dir(self.dir)?;
        Ok(())
    }

    /// Whether a WAL write belongs in a new table: its keyspace exists and does not have it
    /// in a table already.
    fn wants(
        &self,
        manifest: Option<&OldManifest>,
        flushed: &BTreeMap<u32, SeqNo>,
        wal: u64,
        keyspace: u32,
        seqno: SeqNo,
    ) -> bool {
        if !self.keyspaces.contains_key(&keyspace) {
            return false;
        }
        match manifest {
            Some(m) => m.version.log_number(keyspace).is_some_and(|log| wal >= log),
            None => flushed.get(&keyspace).is_none_or(|&s| seqno > s),
        }
    }

    /// Step 4a: the blob files the salvaged tables reference. Each is scanned whole (every
    /// checksum and its footer); a sound one is kept with its garbage recomputed as its total
    /// less what the tables still reference; a damaged one, one of no live keyspace, and one
    /// no table references go into `lost/`. References into a blob file that is missing or
    /// set aside are reported (reading those keys fails with the file named).
    fn salvage_blob_files(&mut self, levels: &Levels) -> Result<Vec<BlobFileMeta>> {
        let fs = &*self.options.file_system;
        let blob_names: Vec<(u64, String)> = self
            .names
            .iter()
            .filter_map(|n| crate::blob::parse_blob_file_name(n).map(|number| (number, n.clone())))
            .collect();
        // Live references per blob file: (records, bytes).
        let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for table in levels.values().flatten() {
            let path = table_file_name(self.dir, table.meta.number);
            let opened = Table::open(
                fs,
                &path,
                &TableOpenOptions {
                    comparator: self.options.comparator.clone(),
                    ..TableOpenOptions::default()
                },
            )?;
            let mut iter = opened.iter(shale_sst::ReadOptions::default());
            iter.seek_to_first();
            while iter.valid() {
                let key = shale_sst::ParsedInternalKey::parse(iter.key()).ok();
                if let Some(key) = key.filter(|k| k.kind == shale_sst::ValueKind::BlobIndex) {
                    if let Ok(reference) = crate::blob::decode_reference(iter.value(), key.user_key)
                    {
                        let entry = live.entry(reference.file_number).or_default();
                        entry.0 += 1;
                        entry.1 += crate::blob::record_size(
                            key.user_key.len(),
                            u64::from(reference.value_len),
                        );
                    }
                }
                iter.next();
            }
            iter.status()?;
        }
        let mut kept = Vec::new();
        for (number, name) in blob_names {
            let scanned =
                crate::blob::scan_blob_file(fs, &self.dir.join(&name), &mut |_, _| Ok(()));
            let summary = match scanned {
                Ok(summary) => summary,
                Err(e) if e.is_corruption() || matches!(e, Error::NotSupported(_)) => {
                    self.set_aside(&name, e.to_string())?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let keyspace = summary.header.keyspace;
            let Some(&(count, bytes)) = live.get(&number) else {
                self.set_aside(&name, "no salvaged table references it".to_owned())?;
                continue;
            };
            if !self.keyspaces.contains_key(&keyspace) {
                self.set_aside(&name, format!("its keyspace {keyspace} is not live"))?;
                continue;
            }
            let footer = summary.footer;
            kept.push(BlobFileMeta {
                number,
                keyspace,
                total_count: footer.record_count,
                total_bytes: footer.record_bytes,
                garbage_count: footer.record_count.saturating_sub(count),
                garbage_bytes: footer.record_bytes.saturating_sub(bytes),
            });
            self.next_file_number = self.next_file_number.max(number + 1);
        }
        for number in live.keys() {
            if !kept.iter().any(|b| b.number == *number) {
                self.report.notes.push(format!(
                    "tables reference blob file {number:06}, which is missing or damaged: \
                     reading those keys fails naming it"
                ));
            }
        }
        Ok(kept)
    }

    /// Step 4: the new MANIFEST, OPTIONS when needed, then `CURRENT` (invariant 2).
    fn write_metadata(
        &mut self,
        manifest: Option<&OldManifest>,
        write_options: bool,
        levels: &Levels,
    ) -> Result<()> {
        let fs = &*self.options.file_system;
        if let Some(m) = manifest {
            self.next_file_number = self.next_file_number.max(m.next_file_number);
        }
        let manifest_number = self.new_file_number();
        let options_number = self.new_file_number();
        let mut last_sequence = manifest.map_or(0, |m| m.last_sequence);
        for table in levels.values().flatten() {
            last_sequence = last_sequence.max(table.meta.largest_seqno);
        }
        let mut edit = VersionEdit {
            manifest_format_version: Some(MANIFEST_FORMAT_VERSION),
            comparator: Some(self.options.comparator.name().to_owned()),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(last_sequence),
            max_keyspace_id: Some(self.max_keyspace_id),
            ..VersionEdit::default()
        };
        for (id, name) in &self.keyspaces {
            edit.added_keyspaces.push((*id, name.clone()));
            // Invariant 4: the new MANIFEST's number is above every WAL on disk.
            edit.log_numbers.push((*id, manifest_number));
        }
        for table in levels.values().flatten() {
            edit.add_file(table.keyspace, table.level as u32, table.meta.clone());
        }
        for blob in self.salvage_blob_files(levels)? {
            edit.add_blob_file(&blob);
        }
        if write_options {
            let keyspaces: Vec<(String, KeyspaceOptions)> = self
                .keyspaces
                .values()
                .map(|name| (name.clone(), self.options.default_keyspace.clone()))
                .collect();
            self.options
                .to_file(&keyspaces)
                .write(fs, self.dir, options_number)?;
            self.report.notes.push(format!(
                "no readable OPTIONS file: wrote {} from the options given",
                options_file_name(options_number)
            ));
        }
        fs.sync_dir(self.dir)?;
        self.commit(manifest_number, &edit)?;
        self.report.tables = levels.values().flatten().cloned().collect();
        self.report.keyspaces = self.keyspaces.clone().into_iter().collect();
        self.report.last_sequence = last_sequence;
        self.report.manifest_number = manifest_number;
        Ok(())
    }
}

/// Keyspaces whose L0, rebuilt without a MANIFEST, holds two tables that share user keys and
/// whose sequence ranges interleave. Their old levels are unknown, and a point lookup reads
/// L0 newest first by largest seqno and stops at the first table holding the key, which there
/// could be an older version (a deeper table's output can hold a larger seqno for another
/// key). A compaction merges the tables by internal key, so newer versions win again.
fn interleaved_keyspaces(levels: &Levels, comparator: &Arc<dyn shale_sst::Comparator>) -> Vec<u32> {
    let mut out = Vec::new();
    for ((keyspace, level), tables) in levels {
        if *level != 0 {
            continue;
        }
        let overlap = |a: &FileMetaData, b: &FileMetaData| {
            let keys = comparator
                .compare(a.smallest.user_key(), b.largest.user_key())
                .is_le()
                && comparator
                    .compare(b.smallest.user_key(), a.largest.user_key())
                    .is_le();
            let seqnos = a.smallest_seqno <= b.largest_seqno && b.smallest_seqno <= a.largest_seqno;
            keys && seqnos
        };
        let found = tables
            .iter()
            .enumerate()
            .any(|(i, a)| tables[i + 1..].iter().any(|b| overlap(&a.meta, &b.meta)));
        if found {
            out.push(*keyspace);
        }
    }
    out
}

/// Opens the repaired database and compacts `keyspaces` (see [`interleaved_keyspaces`]).
fn compact_keyspaces(
    dir: &Path,
    options: &Options,
    keyspaces: &[u32],
    report: &mut RepairReport,
) -> Result<()> {
    let db = crate::Db::open(
        dir,
        Options {
            create_if_missing: false,
            ..options.clone()
        },
    )?;
    for id in keyspaces {
        let Some((_, name)) = report.keyspaces.iter().find(|(k, _)| k == id) else {
            continue;
        };
        let Some(handle) = db.keyspace(name) else {
            continue;
        };
        db.compact_range(&handle, None, None)?;
        report.notes.push(format!(
            "keyspace {name:?}: tables whose sequence ranges interleave over the same keys were \
             compacted, so the newest version of every key wins"
        ));
    }
    db.close()
}

/// Opens the table at `path` and checks every block: its properties when it is sound.
fn verify_table(options: &Options, path: &Path) -> Result<TableProperties> {
    let table = Table::open(
        &*options.file_system,
        path,
        &TableOpenOptions {
            comparator: options.comparator.clone(),
            ..TableOpenOptions::default()
        },
    )?;
    table.verify()?;
    Ok(table.properties().clone())
}

/// The MANIFEST's description of a salvaged table, from its properties.
fn meta_of(
    number: u64,
    size: u64,
    props: &TableProperties,
) -> std::result::Result<FileMetaData, String> {
    if props.num_entries == 0 && props.num_range_deletions == 0 {
        return Err("the table holds nothing".to_owned());
    }
    file_meta(number, size, props).map_err(|e| e.to_string())
}

/// A keyspace's options from the persisted OPTIONS file, else the defaults given.
fn keyspace_options(
    options: &Options,
    persisted: Option<&OptionsFile>,
    name: &str,
) -> KeyspaceOptions {
    persisted.map_or_else(
        || options.default_keyspace.clone(),
        |file| {
            KeyspaceOptions::from_pairs(
                file.section(&OptionsFile::keyspace_section(name)),
                &options.default_keyspace,
            )
        },
    )
}

fn read_whole(fs: &dyn shale_fs::FileSystem, path: &Path) -> Result<Vec<u8>> {
    let file = fs.open_read(path)?;
    let size = usize::try_from(file.size()?).map_err(|_| Error::Corruption {
        file: path.to_path_buf(),
        offset: 0,
        detail: "the file is too large to be an OPTIONS file".to_owned(),
    })?;
    let mut bytes = vec![0; size];
    file.read_exact_at(0, &mut bytes)?;
    Ok(bytes)
}

fn table_number(name: &str) -> Option<u64> {
    crate::inspect::parse_table_file_name(name)
}

/// The number in a file name Shale writes (tables, blob files, WALs, MANIFEST, OPTIONS).
fn file_number(name: &str) -> Option<u64> {
    table_number(name)
        .or_else(|| crate::blob::parse_blob_file_name(name))
        .or_else(|| parse_log_file_name(name))
        .or_else(|| parse_manifest_file_name(name))
        .or_else(|| parse_options_file_name(name))
}

fn is_database_file(name: &str) -> bool {
    name == CURRENT_FILE_NAME || file_number(name).is_some()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
