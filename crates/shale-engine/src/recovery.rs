//! Opening a database: lock, read the MANIFEST, replay the WALs into memtables, record where
//! each replayed WAL ends, start a new WAL.
//!
//! Replay does not insert the writes one by one into a skiplist (a cache miss per level per
//! entry): it decodes every WAL record, cuts each keyspace's writes, in WAL order, into runs
//! of about `write_buffer_size` (what one memtable would have held), sorts each run once and
//! bulk-builds its memtable ([`MemTable::from_unsorted`]). The memtables become the
//! keyspace's frozen memtables, oldest first, each with the number of the WAL holding its
//! first write; the background flushes them like any frozen memtable, and their WALs stay
//! until then (the keyspace's log number in the MANIFEST advances only with those flushes).
//! Writes are accepted as soon as the open returns.
//!
//! Not flushing at open leaves the replayed WALs in the middle of the WAL sequence, so a later
//! recovery reads them again, with newer WALs after them. A tail the recovery mode tolerated
//! (a torn write that was never acknowledged) would then be damage in an older WAL, which
//! docs/format/wal.md treats as corruption, and `SkipAnyCorruptedRecords` could even resurrect
//! records behind it. So the open records in the MANIFEST, before the database accepts a
//! write, where each replayed WAL's valid data ends (`WAL_END`, docs/format/manifest.md), and
//! a later recovery reads such a WAL only up to there ([`LogReader::with_end`]).
//!
//! Invariants:
//! 1. Before the `WAL_END` edit is written, every replayed WAL is synced: a recorded end never
//!    lies beyond data a machine crash could still lose, and the replayed writes, which newer
//!    acknowledged writes may depend on, are as durable as the WAL writes after them.
//! 2. A WAL with a recorded end holds exactly the records before that end. Reading it ending
//!    elsewhere (damage before the end, a file shorter than it, a missing file) is damage in
//!    the middle of the WAL sequence, judged by the recovery mode as for any WAL that is not
//!    the newest; the bytes after the end are never read.
//! 3. Every keyspace's frozen memtables cover consecutive stretches of the WAL history, oldest
//!    first, with non-decreasing log numbers; the oldest one's is the keyspace's log number in
//!    the MANIFEST, so the WALs kept in memory's view (`oldest_needed_log`) are exactly those
//!    a recovery would read (keyspace.rs invariant 2, flush.rs invariant 2).
//! 4. The open's edit sets every keyspace's log number to the oldest WAL it still needs: the
//!    WAL of its first replayed write, or the new WAL for a keyspace that got none (so an idle
//!    keyspace never pins old WALs). The new WAL is created, and its name synced, before that
//!    edit names it.
//! 5. With `WALS_TRACKED` in the MANIFEST (set by that same edit), every keyspace's log number
//!    names a WAL on disk: log numbers only ever name WALs that exist (invariant 4, flush.rs)
//!    and a WAL is deleted only once the MANIFEST's log numbers are all past it
//!    (`delete_obsolete_files`). A missing one means lost writes, and the open refuses it
//!    ([`check_wals_present`]) before anything is written, instead of opening an older state.
//! 7. A WAL with a recorded synced size (`WAL_SYNCED`) and no recorded end must hold valid
//!    records up to at least that size: less means durable, acknowledged data was cut or
//!    damaged after it was synced, and the open refuses it (`PointInTime` stops there,
//!    `SkipAnyCorruptedRecords` goes on), reporting it, rather than dropping it as a torn
//!    tail. The bytes past the size may be torn as usual.
//! 6. An open of an existing database writes nothing until the MANIFEST is replayed and every
//!    WAL it needs is read and judged by the recovery mode: an open refused for damage (or
//!    incompatible options) leaves every file as it was, the MANIFEST's history included.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale_sst::SeqNo;

use crate::batch::WriteBatch;
use crate::db::{DbInner, DbState, WalState, DEFAULT_KEYSPACE_ID};
use crate::error::{Error, Result};
use crate::flush::{database_exists, delete_obsolete_files};
use crate::inspect::LOCK_FILE_NAME;
use crate::keyspace::{FrozenMemTable, KeyspaceState};
use crate::memtable::{MemTable, MemTableEntry};
use crate::options::{KeyspaceOptions, Options};
use crate::options_file::OptionsFile;
use crate::recovery_report::{DropReason, DroppedWalData, RecoveryReport, ReplayedWal};
use crate::version::{PendingRecovery, Version, VersionEdit, VersionSet};
use crate::wal::format::{log_file_name, parse_log_file_name};
use crate::wal::{GroupRecord, LogEnd, LogReader, RecoveryMode};

/// Levels per keyspace.
pub(crate) const NUM_LEVELS: usize = 7;

/// Threads that sort a replayed memtable's writes.
const SORT_THREADS: usize = 2;

/// Bytes a memtable entry costs besides its key and value, as the memtable counts them
/// (memtable/skiplist.rs): two links on average, two one-byte varint lengths, the internal
/// key's 8-byte trailer and padding to 8 (28 for a 16-byte key and a 100-byte value). Used to
/// cut replay into memtables of about `write_buffer_size`, as the live flush trigger does.
const ENTRY_OVERHEAD: usize = 28;

/// Opens the database in `dir` (see the module docs).
pub(crate) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    let fs = options.file_system.clone();
    // Without create_if_missing a missing database is refused before anything is created:
    // neither the directory nor a LOCK file is left behind by a mistyped path.
    if !database_exists(&*fs, dir)? {
        // A damaged database is refused whatever create_if_missing says: creating one here
        // would start an empty database over its files.
        if let Some(damaged) =
            crate::version::missing_current(&*fs, dir, !options.create_if_missing)?
        {
            return Err(damaged);
        }
        if !options.create_if_missing {
            return Err(no_database(dir));
        }
    }
    fs.create_dir_all(dir)?;
    let lock = fs.lock(&dir.join(LOCK_FILE_NAME))?;
    crate::direct_io::check_writable_open(&*fs, dir, &options)?;
    let names = fs.list(dir)?;
    let (loaded, persisted, first_wal) = load_versions(dir, &options, &names)?;
    let version = loaded.version();
    let keyspace_options = keyspace_options(dir, &options, &version, persisted.as_ref())?;
    let wals = read_wals(&options, dir, &version, &names, options.wal_recovery_mode)?;
    // Invariant 6: only now, with the WALs read, is anything written.
    let mut versions = loaded.start(&*fs, dir)?;
    let mut replayed =
        build_memtables(&options, &version, &keyspace_options, &wals, &mut versions)?;
    let report = wals.report;
    let wal_number = first_wal.unwrap_or_else(|| versions.new_file_number());
    let mut keyspaces = BTreeMap::new();
    for (id, (name, own_options)) in keyspace_options {
        let mem = Arc::new(MemTable::for_write_buffer(
            options.comparator.clone(),
            versions.new_file_number(),
            own_options.write_buffer_size,
            own_options.memtable_bloom_bytes(),
        ));
        let mut keyspace =
            KeyspaceState::new(id, name, own_options, mem, wal_number, version.clone());
        keyspace.imm = replayed.memtables.remove(&id).unwrap_or_default().into();
        keyspaces.insert(id, keyspace);
    }
    // Invariant 4: the new WAL exists before an edit names it.
    let writer = {
        let file = fs.create(&dir.join(log_file_name(wal_number)))?;
        let writer = crate::wal::LogWriter::new(file, wal_number)?;
        fs.sync_dir(dir)?;
        writer
    };
    record_replay(&options, dir, &mut versions, &replayed, &keyspaces)?;
    let version = versions.current();
    for keyspace in keyspaces.values_mut() {
        keyspace.install_super_version(version.clone());
    }
    let last_seqno = versions.last_sequence();
    let inner = DbInner::new(
        options,
        dir,
        Some(lock),
        versions,
        keyspaces,
        Some(WalState {
            written_end: writer.file_size(),
            writer,
            number: wal_number,
            written_groups: 0,
            synced_groups: 0,
            synced_bytes: 0,
            name_durable: true,
            record: GroupRecord::new(),
        }),
        last_seqno,
        report,
    );
    {
        let mut state = inner.lock_state();
        write_options_file(&inner, &mut state)?;
        log_open(&inner, &state);
        delete_obsolete_files(&inner, &mut state);
    }
    Ok(inner)
}

/// Each keyspace's name and options: the persisted OPTIONS file's section for it, else the
/// defaults of `options`. The default keyspace's TTL may not be turned on or off
/// ([`check_ttl_unchanged`]); its duration is the one asked for.
pub(crate) fn keyspace_options(
    dir: &Path,
    options: &Options,
    version: &Version,
    persisted: Option<&OptionsFile>,
) -> Result<BTreeMap<u32, (String, KeyspaceOptions)>> {
    let mut keyspace_options: BTreeMap<u32, (String, KeyspaceOptions)> = version
        .keyspaces()
        .into_iter()
        .map(|(id, name)| {
            let section = OptionsFile::keyspace_section(&name);
            let own = persisted.map_or_else(
                || options.default_keyspace.clone(),
                |file| {
                    let mut own = KeyspaceOptions::from_pairs(
                        file.section(&section),
                        &options.default_keyspace,
                    );
                    // Written before TTL existed: its values carry no write times.
                    if file.get(&section, "ttl_seconds").is_none() {
                        own.ttl = None;
                    }
                    own
                },
            );
            (id, (name, own))
        })
        .collect();
    let Some((_, default)) = keyspace_options.get_mut(&DEFAULT_KEYSPACE_ID) else {
        return Err(Error::Corruption {
            file: dir.join("CURRENT"),
            offset: 0,
            detail: "the MANIFEST has no default keyspace".into(),
        });
    };
    check_ttl_unchanged(default, &options.default_keyspace)?;
    if default.ttl.is_some() {
        // Both on (checked above): a new duration is safe, and what was asked for.
        default.ttl = options.default_keyspace.ttl;
    }
    Ok(keyspace_options)
}

/// Refuses to turn TTL on or off for the existing default keyspace: its stored values carry
/// write times exactly when it was created with a TTL (docs/format/ttl.md).
fn check_ttl_unchanged(own: &KeyspaceOptions, requested: &KeyspaceOptions) -> Result<()> {
    match (own.ttl, requested.ttl) {
        (Some(ttl), None) => Err(Error::InvalidArgument(format!(
            "the default keyspace was created with a TTL of {} s; it cannot be turned off \
             (its values carry write times): open with default_keyspace.ttl set",
            ttl.as_secs()
        ))),
        (None, Some(_)) => Err(Error::InvalidArgument(
            "the default keyspace was created without a TTL; it cannot be turned on for \
             existing data: create a new keyspace with a TTL instead"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// The MANIFEST as [`load_versions`] leaves it: read but not yet rewritten, or just created.
enum Loaded {
    Existing(PendingRecovery),
    Created(Box<VersionSet>),
}

impl Loaded {
    fn version(&self) -> Arc<Version> {
        match self {
            Loaded::Existing(pending) => pending.version().clone(),
            Loaded::Created(versions) => versions.current(),
        }
    }

    /// The version set to run with: an existing database's new MANIFEST is written here.
    /// File numbers already on disk are never reused, even if the MANIFEST missed them.
    fn start(self, fs: &dyn shale_fs::FileSystem, dir: &Path) -> Result<VersionSet> {
        let mut versions = match self {
            Loaded::Existing(pending) => pending.start()?,
            Loaded::Created(versions) => *versions,
        };
        for name in fs.list(dir)? {
            if let Some(number) = file_number_of(&name) {
                versions.mark_file_number_used(number);
            }
        }
        Ok(versions)
    }
}

/// Reads (or creates) the MANIFEST, checking the persisted options first, and that the WALs it
/// needs are among `names` (the directory listing). An existing MANIFEST is only read here
/// ([`Loaded::start`] rewrites it). For a new database, also returns the number its first WAL
/// must have (the MANIFEST names it from the start).
fn load_versions(
    dir: &Path,
    options: &Options,
    names: &[String],
) -> Result<(Loaded, Option<OptionsFile>, Option<u64>)> {
    let fs = &options.file_system;
    let persisted = OptionsFile::read_latest(&**fs, dir)?.map(|(_, file)| file);
    let mut first_wal = None;
    let loaded = if database_exists(&**fs, dir)? {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a database already exists in {}",
                dir.display()
            )));
        }
        if let Some(persisted) = &persisted {
            options.check_compatible(persisted)?;
        }
        Loaded::Existing(PendingRecovery::read(
            fs.clone(),
            dir,
            options.comparator.clone(),
            NUM_LEVELS,
            &|version, manifest, end| {
                check_wals_present(version, names, options.wal_recovery_mode, manifest, end)
            },
        )?)
    } else {
        if !options.create_if_missing {
            return Err(no_database(dir));
        }
        // Above any stray numbered file a failed creation may have left.
        let wal = names
            .iter()
            .filter_map(|n| file_number_of(n))
            .max()
            .unwrap_or(1)
            + 1;
        first_wal = Some(wal.max(2));
        Loaded::Created(Box::new(VersionSet::create_with_wal(
            fs.clone(),
            dir,
            options.comparator.clone(),
            NUM_LEVELS,
            first_wal,
        )?))
    };
    Ok((loaded, persisted, first_wal))
}

fn no_database(dir: &Path) -> Error {
    Error::InvalidArgument(format!(
        "no database in {} (no CURRENT file; set create_if_missing to create one)",
        dir.display()
    ))
}

/// Syncs the replayed WALs (invariant 1), then records in one MANIFEST edit where each
/// replayed WAL ends, every keyspace's oldest needed WAL as its log number (invariant 4),
/// `WALS_TRACKED` (invariant 5) and the last sequence number replayed.
fn record_replay(
    options: &Options,
    dir: &Path,
    versions: &mut VersionSet,
    replayed: &Replayed,
    keyspaces: &BTreeMap<u32, KeyspaceState>,
) -> Result<()> {
    let fs = &*options.file_system;
    let version = versions.current();
    let mut edit = VersionEdit::new();
    for &(number, end) in &replayed.wal_ends {
        if end > 0 && fs.exists(&dir.join(log_file_name(number)))? {
            fs.open_append(&dir.join(log_file_name(number)))?
                .sync_data()?;
        }
        if version.wal_end(number) != Some(end) {
            edit.set_wal_end(number, end);
        }
    }
    for (id, keyspace) in keyspaces {
        let needed = keyspace.oldest_needed_log();
        if version.log_number(*id) != Some(needed) {
            edit.set_log_number(*id, needed);
        }
    }
    edit.wals_tracked = !version.wals_tracked();
    let last_seqno = replayed.last_seqno.max(versions.last_sequence());
    versions.set_last_sequence(last_seqno);
    versions.log_and_apply(edit)
}

/// With `WALS_TRACKED` (invariant 5), refuses a state whose keyspaces need a WAL that is not
/// among `names`: the MANIFEST (`manifest`, valid up to `end`) lost its newest edits (a cut
/// or damaged tail, which replay drops as torn) after their flushes deleted the WAL, or the
/// WAL was deleted by hand. Either way writes are lost, and opening the older state the
/// MANIFEST describes would hide it. `SkipAnyCorruptedRecords` opens it anyway (salvage).
/// Not detectable: every WAL deleted from a database that has no table yet (it looks like a
/// database created by an open that stopped before its first WAL).
pub(crate) fn check_wals_present(
    version: &Version,
    names: &[String],
    mode: RecoveryMode,
    manifest: &Path,
    end: u64,
) -> Result<()> {
    if !version.wals_tracked() || mode == RecoveryMode::SkipAnyCorruptedRecords {
        return Ok(());
    }
    let on_disk: std::collections::BTreeSet<u64> = names
        .iter()
        .filter_map(|n| parse_log_file_name(n))
        .collect();
    for (id, name) in version.keyspaces() {
        let Some(needed) = version.log_number(id) else {
            continue;
        };
        // A database created but never opened to the end: nothing was ever written.
        if on_disk.contains(&needed) || (on_disk.is_empty() && version.total_files() == 0) {
            continue;
        }
        let cause = match on_disk.last().filter(|newest| **newest > needed) {
            Some(newest) => format!(
                "newer WAL {newest} exists, so the MANIFEST has most likely lost its newest                  edits (a cut or damaged tail after its last valid record here) and with them                  the tables that hold those writes"
            ),
            None => "no newer WAL exists: it was deleted or not copied".to_owned(),
        };
        return Err(Error::Corruption {
            file: manifest.to_path_buf(),
            offset: end,
            detail: format!(
                "keyspace {name:?} needs WAL {} ({}), which is missing: {cause}; writes may be                  lost. `shale tool repair` rebuilds the MANIFEST from the tables and WALs on                  disk; SkipAnyCorruptedRecords recovery opens this state as it is",
                needed,
                log_file_name(needed)
            ),
        });
    }
    Ok(())
}

/// The WAL records replay keeps, in WAL order, and where each WAL's valid data ends.
pub(crate) struct WalContents {
    /// (log number, batch), oldest first.
    batches: Vec<(u64, WriteBatch)>,
    /// (log number, end of valid data) of every WAL at or above the oldest needed one.
    ends: Vec<(u64, u64)>,
    /// What was read and what was dropped.
    pub(crate) report: RecoveryReport,
}

/// What replay produced.
pub(crate) struct Replayed {
    /// Per keyspace, the frozen memtables, oldest first.
    pub(crate) memtables: BTreeMap<u32, Vec<FrozenMemTable>>,
    pub(crate) last_seqno: SeqNo,
    wal_ends: Vec<(u64, u64)>,
}

/// The oldest WAL number some keyspace still needs replayed (0: none recorded); older WALs
/// hold only flushed writes.
pub(crate) fn oldest_needed_wal(version: &Version) -> u64 {
    version
        .keyspaces()
        .iter()
        .filter_map(|(id, _)| version.log_number(*id))
        .min()
        .unwrap_or(0)
}

/// Reads every WAL the MANIFEST says may hold unflushed data, oldest first, each up to its
/// recorded end if it has one, judging damage by `mode` (invariant 2). `names` is the
/// directory listing the WALs on disk are taken from.
pub(crate) fn read_wals(
    options: &Options,
    dir: &Path,
    version: &Version,
    names: &[String],
    mode: RecoveryMode,
) -> Result<WalContents> {
    let fs = &options.file_system;
    let min_log = oldest_needed_wal(version);
    let on_disk: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_log_file_name(n))
        .filter(|n| *n >= min_log)
        .collect();
    let mut logs: Vec<u64> = on_disk.clone();
    logs.extend(version.wal_ends().keys().filter(|n| **n >= min_log));
    logs.extend(version.wal_synced_sizes().keys().filter(|n| **n >= min_log));
    logs.sort_unstable();
    logs.dedup();
    let mut contents = WalContents {
        batches: Vec::new(),
        ends: Vec::new(),
        report: RecoveryReport {
            mode,
            ..RecoveryReport::default()
        },
    };
    // The last sequence number replayed so far (0: none): what a dropped write would follow.
    let mut last_seqno: SeqNo = 0;
    let mut stopped = false;
    for (position, &number) in logs.iter().enumerate() {
        let path = dir.join(log_file_name(number));
        if stopped {
            // PointInTime stopped at an earlier WAL: nothing here is part of the recovered
            // history, and a later recovery must not read it either.
            contents.ends.push((number, 0));
            let bytes = if fs.exists(&path)? {
                fs.size(&path)?
            } else {
                0
            };
            contents.report.wals.push(ReplayedWal {
                number,
                records: 0,
                end: 0,
            });
            if bytes > 0 {
                contents.report.dropped.push(DroppedWalData {
                    wal_number: number,
                    reason: DropReason::AfterStop,
                    offset: Some(0),
                    bytes,
                    records: None,
                    first_seqno: None,
                });
            }
            continue;
        }
        let recorded = version.wal_end(number);
        // A recorded end is exact; a synced size is a lower bound (invariant 7).
        let synced = version.wal_synced(number).filter(|_| recorded.is_none());
        let (records, end, damage) = if on_disk.binary_search(&number).is_ok() {
            read_wal(
                &**fs,
                &path,
                number,
                mode,
                recorded,
                synced,
                &mut last_seqno,
                &mut contents,
            )?
        } else {
            missing_wal(number, recorded, synced, &mut contents.report)
        };
        contents.ends.push((number, end));
        contents.report.wals.push(ReplayedWal {
            number,
            records,
            end,
        });
        let Some(damage) = damage else { continue };
        // A WAL with a recorded end was sealed by an earlier open; any other WAL but the
        // newest was synced before the next one got its first record; a WAL with a synced
        // size ending before it lost data that was durable.
        let lost_synced = synced.is_some_and(|synced| end < synced);
        let sealed = recorded.is_some() || position + 1 < logs.len() || lost_synced;
        match mode {
            RecoveryMode::PointInTime => stopped = true,
            RecoveryMode::TolerateCorruptedTailRecords | RecoveryMode::AbsoluteConsistency
                if sealed =>
            {
                return Err(sealed_damage(
                    path,
                    number,
                    end,
                    &damage,
                    recorded,
                    lost_synced,
                ));
            }
            _ => {}
        }
    }
    Ok(contents)
}

/// What a WAL the MANIFEST knows of but the directory lacks means: lost data if it had a
/// synced size or a recorded end above 0, else nothing (it never held a record).
fn missing_wal(
    number: u64,
    recorded: Option<u64>,
    synced: Option<u64>,
    report: &mut RecoveryReport,
) -> (u64, u64, Option<String>) {
    if let Some(synced) = synced.filter(|s| *s > 0) {
        report.dropped.push(DroppedWalData {
            wal_number: number,
            reason: DropReason::SyncedDataMissing,
            offset: Some(0),
            bytes: synced,
            records: None,
            first_seqno: None,
        });
        (0, 0, Some(synced_data_lost(0, synced, None)))
    } else if recorded.is_some_and(|r| r > 0) {
        (
            0,
            0,
            Some(format!(
                "the file is missing, but an earlier open recorded its valid data ending \
                 at {}",
                recorded.unwrap_or(0)
            )),
        )
    } else {
        (0, 0, None)
    }
}

/// The error for damage in WAL `number` (at `path`, valid data ending at `end`) that cannot
/// be a torn tail: lost synced data, a WAL an earlier open sealed, or one newer WALs follow.
fn sealed_damage(
    path: std::path::PathBuf,
    number: u64,
    end: u64,
    damage: &str,
    recorded: Option<u64>,
    lost_synced: bool,
) -> Error {
    if lost_synced {
        return Error::Corruption {
            file: path,
            offset: end,
            detail: format!(
                "WAL {number} ({}) lost data that was synced ({damage}): acknowledged writes \
                 are missing, so the open is refused rather than rolling them back. Restore \
                 the file if a copy exists; otherwise `shale tool repair` salvages what is \
                 left, and `--wal_recovery_mode point-in-time` (Options::wal_recovery_mode in \
                 a program) opens the state before the damage",
                log_file_name(number)
            ),
        };
    }
    Error::Corruption {
        file: path,
        offset: end,
        detail: format!(
            "WAL {number} is damaged where it cannot be a torn tail ({damage}): {}; recovering \
             with point-in-time or skip-any-corrupted-records would open it \
             (`--wal_recovery_mode point-in-time` on the shale tools, \
             Options::wal_recovery_mode in a program)",
            if recorded.is_some() {
                "an earlier open recorded where its valid data ends"
            } else {
                "newer WALs follow it, and a torn tail is only possible in the newest WAL"
            }
        ),
    }
}

/// Reads WAL `number` (on disk at `path`) into `contents`, up to its `recorded` end if it has
/// one, and says where its valid data ends and what is wrong with it, if anything: damage,
/// an end other than the recorded one, or valid data ending before its `synced` size.
#[allow(clippy::too_many_arguments)] // the per-WAL part of read_wals, which owns them all
fn read_wal(
    fs: &dyn shale_fs::FileSystem,
    path: &Path,
    number: u64,
    mode: RecoveryMode,
    recorded: Option<u64>,
    synced: Option<u64>,
    last_seqno: &mut SeqNo,
    contents: &mut WalContents,
) -> Result<(u64, u64, Option<String>)> {
    let mut records = 0u64;
    let file = fs.open_read(path)?;
    let mut reader = LogReader::with_end(file, number, mode, recorded)?;
    while let Some((record, offset)) = reader.read_record()? {
        let version = reader.format_version();
        let batch = WriteBatch::from_wal_record(record, version, path, offset)?;
        if batch.count() > 0 {
            *last_seqno = (*last_seqno).max(batch.first_seqno() + u64::from(batch.count()) - 1);
        }
        records += 1;
        contents.batches.push((number, batch));
    }
    let end = reader.last_record_end();
    report_dropped(&reader, number, *last_seqno, &mut contents.report);
    let damage = match (reader.end(), recorded) {
        _ if synced.is_some_and(|synced| end < synced) => {
            let cut = synced.unwrap_or(0);
            if !reader.end().is_some_and(LogEnd::is_damage) {
                contents.report.dropped.push(DroppedWalData {
                    wal_number: number,
                    reason: DropReason::SyncedDataMissing,
                    offset: Some(end),
                    bytes: cut - end,
                    records: None,
                    first_seqno: (*last_seqno > 0).then_some(*last_seqno + 1),
                });
            }
            Some(synced_data_lost(end, cut, reader.end()))
        }
        (Some(log_end), _) if log_end.is_damage() => Some(format!("{log_end:?}")),
        (_, Some(recorded)) if recorded != end => Some(format!(
            "its records end at {end}, but an earlier open recorded its valid data \
                 ending at {recorded}"
        )),
        _ => None,
    };
    Ok((records, end, damage))
}

/// Why a WAL whose valid data ends at `end` falls short of its recorded synced size.
fn synced_data_lost(end: u64, synced: u64, log_end: Option<&LogEnd>) -> String {
    let how = match log_end {
        Some(LogEnd::TornTail { offset, .. } | LogEnd::Corruption { offset, .. }) => {
            format!("damage at offset {offset}")
        }
        Some(LogEnd::ZeroTail { offset }) => format!("zeros from offset {offset}"),
        Some(LogEnd::StaleRecord { offset, .. }) => format!("a stale record at offset {offset}"),
        Some(LogEnd::EndOfFile { offset }) => format!("the file ends at {offset}"),
        None => "the file is missing".to_owned(),
    };
    format!(
        "its valid records end at offset {end} ({how}), but the MANIFEST records it synced \
         to {synced} bytes: {} synced bytes are missing",
        synced - end
    )
}

/// Adds to `report` what `reader`, done with WAL `number`, dropped; `last_seqno` is the last
/// sequence number recovered before it.
fn report_dropped(reader: &LogReader, number: u64, last_seqno: SeqNo, report: &mut RecoveryReport) {
    if reader.skipped_corruptions() > 0 {
        report.dropped.push(DroppedWalData {
            wal_number: number,
            reason: DropReason::Skipped,
            offset: None,
            bytes: reader.skipped_bytes(),
            records: None,
            first_seqno: None,
        });
    }
    let (reason, offset, bytes) = match reader.end() {
        Some(LogEnd::TornTail { offset, bytes }) => (DropReason::TornTail, *offset, *bytes),
        Some(LogEnd::Corruption { offset, .. }) => (
            DropReason::Corruption,
            *offset,
            reader.file_size().saturating_sub(*offset),
        ),
        _ => return,
    };
    report.dropped.push(DroppedWalData {
        wal_number: number,
        reason,
        offset: Some(offset),
        bytes,
        records: None,
        first_seqno: (last_seqno > 0).then_some(last_seqno + 1),
    });
}

/// Cuts each keyspace's replayed writes, in WAL order, into memtables of about
/// `write_buffer_size` and bulk-builds them (invariant 3).
pub(crate) fn build_memtables(
    options: &Options,
    version: &Version,
    keyspace_options: &BTreeMap<u32, (String, KeyspaceOptions)>,
    wals: &WalContents,
    versions: &mut VersionSet,
) -> Result<Replayed> {
    /// A keyspace's writes for one memtable, not yet sorted.
    struct Run<'a> {
        log_number: u64,
        entries: Vec<MemTableEntry<'a>>,
        bytes: usize,
    }
    let mut open_runs: BTreeMap<u32, Run<'_>> = BTreeMap::new();
    let mut full_runs: Vec<(u32, Run<'_>)> = Vec::new();
    let mut last_seqno = 0;
    for (number, batch) in &wals.batches {
        for entry in batch.iter() {
            // Dropped keyspace, or data already in tables.
            if version
                .log_number(entry.keyspace)
                .is_none_or(|log| *number < log)
            {
                continue;
            }
            let Some((_, own)) = keyspace_options.get(&entry.keyspace) else {
                continue;
            };
            last_seqno = last_seqno.max(entry.seqno);
            // Each memtable needs the WALs from the one holding its first write on: no older
            // WAL holds a write of the keyspace that is not in tables.
            let run = open_runs.entry(entry.keyspace).or_insert_with(|| Run {
                log_number: *number,
                entries: Vec::new(),
                bytes: 0,
            });
            run.entries.push(MemTableEntry {
                seqno: entry.seqno,
                kind: entry.kind,
                user_key: entry.key,
                value: entry.value,
            });
            run.bytes += entry.key.len() + entry.value.len() + ENTRY_OVERHEAD;
            if run.bytes >= own.write_buffer_size {
                if let Some(run) = open_runs.remove(&entry.keyspace) {
                    full_runs.push((entry.keyspace, run));
                }
            }
        }
    }
    full_runs.extend(open_runs);
    let mut memtables: BTreeMap<u32, Vec<FrozenMemTable>> = BTreeMap::new();
    // `full_runs` holds each keyspace's runs oldest first (the open ones came last).
    for (id, run) in full_runs {
        let own = keyspace_options
            .get(&id)
            .map_or(&options.default_keyspace, |(_, o)| o);
        let mem = MemTable::from_unsorted(
            options.comparator.clone(),
            versions.new_file_number(),
            own.write_buffer_size,
            own.memtable_bloom_bytes(),
            &run.entries,
            SORT_THREADS,
        )?;
        memtables.entry(id).or_default().push(FrozenMemTable {
            mem: Arc::new(mem),
            log_number: run.log_number,
        });
    }
    Ok(Replayed {
        memtables,
        last_seqno,
        wal_ends: wals.ends.clone(),
    })
}

/// The number in a file name Shale writes (`000012.sst`, `000012.blob`, `000012.wal`,
/// `MANIFEST-000012`, `OPTIONS-000012`).
fn file_number_of(name: &str) -> Option<u64> {
    parse_log_file_name(name)
        .or_else(|| name.strip_suffix(".sst").and_then(|n| n.parse().ok()))
        .or_else(|| crate::blob::parse_blob_file_name(name))
        .or_else(|| name.strip_prefix("MANIFEST-").and_then(|n| n.parse().ok()))
        .or_else(|| name.strip_prefix("OPTIONS-").and_then(|n| n.parse().ok()))
}

/// Writes the open to the info LOG: the options of the database and its keyspaces, then what
/// recovery replayed and dropped.
fn log_open(inner: &DbInner, state: &DbState) {
    let log = &inner.info_log;
    log.log(format_args!("open {}", inner.dir.display()));
    let keyspaces: Vec<(String, KeyspaceOptions)> = state
        .keyspaces
        .values()
        .map(|k| (k.name.clone(), k.options.clone()))
        .collect();
    for (section, pairs) in &inner.options.to_file(&keyspaces).sections {
        for (key, value) in pairs {
            log.log(format_args!("options [{section}] {key} = {value}"));
        }
    }
    log.log(&inner.recovery_report);
    for dropped in &inner.recovery_report.dropped {
        log.log(format_args!("recovery dropped {dropped}"));
    }
    let wal = inner.lock_wal().map_or(0, |wal| wal.number);
    log.log(format_args!(
        "recovery done: last sequence {}, writing WAL {wal}",
        state.versions.last_sequence()
    ));
}

impl WalContents {
    /// (log number, end of valid data) of every WAL read, oldest first.
    pub(crate) fn ends(&self) -> &[(u64, u64)] {
        &self.ends
    }
}

/// Persists the current options of the database and its keyspaces as a new OPTIONS file.
pub(crate) fn write_options_file(inner: &DbInner, state: &mut DbState) -> Result<()> {
    let keyspaces: Vec<(String, KeyspaceOptions)> = state
        .keyspaces
        .values()
        .map(|k| (k.name.clone(), k.options.clone()))
        .collect();
    let file = inner.options.to_file(&keyspaces);
    let number = state.versions.new_file_number();
    file.write(&*inner.fs, &inner.dir, number)?;
    Ok(())
}
