//! Opening a database: lock, read the MANIFEST, replay the WALs, flush what they held, start
//! a new WAL.
//!
//! Recovery writes every replayed memtable as an L0 table before the database accepts writes
//! (`RocksDB`'s default), so after open no old WAL is needed: a torn tail the recovery mode
//! tolerated can never sit in the middle of the WAL sequence later, which docs/format/wal.md
//! requires. The cost is bounded by `write_buffer_size * max_write_buffer_number` per
//! keyspace, the most a crash can leave unflushed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale_sst::SeqNo;

use crate::batch::WriteBatch;
use crate::db::{DbInner, DbState, WalState, DEFAULT_KEYSPACE_ID};
use crate::error::{Error, Result};
use crate::flush::{database_exists, delete_obsolete_files, write_memtable};
use crate::keyspace::KeyspaceState;
use crate::memtable::MemTable;
use crate::options::{KeyspaceOptions, Options};
use crate::options_file::OptionsFile;
use crate::version::{VersionEdit, VersionSet};
use crate::wal::format::{log_file_name, parse_log_file_name};
use crate::wal::{LogReader, RecoveryMode};

/// Levels per keyspace.
pub(crate) const NUM_LEVELS: usize = 7;

/// Opens the database in `dir` (see the module docs).
pub(crate) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    let fs = options.file_system.clone();
    fs.create_dir_all(dir)?;
    let lock = fs.lock(&dir.join("LOCK"))?;
    let (mut versions, persisted) = load_versions(dir, &options)?;
    let keyspace_options = |name: &str| -> KeyspaceOptions {
        let section = OptionsFile::keyspace_section(name);
        persisted.as_ref().map_or_else(
            || options.default_keyspace.clone(),
            |file| KeyspaceOptions::from_pairs(file.section(&section), &options.default_keyspace),
        )
    };
    let replayed = replay_wals(&options, dir, &mut versions)?;
    let wal_number = versions.new_file_number();
    let version = versions.current();
    let mut keyspaces = BTreeMap::new();
    for (id, name) in version.keyspaces() {
        let own_options = keyspace_options(&name);
        let mem = Arc::new(MemTable::for_write_buffer(
            options.comparator.clone(),
            versions.new_file_number(),
            own_options.write_buffer_size,
        ));
        keyspaces.insert(
            id,
            KeyspaceState::new(id, name, own_options, mem, wal_number, version.clone()),
        );
    }
    if !keyspaces.contains_key(&DEFAULT_KEYSPACE_ID) {
        return Err(Error::Corruption {
            file: dir.join("CURRENT"),
            offset: 0,
            detail: "the MANIFEST has no default keyspace".into(),
        });
    }
    flush_replayed(
        &options,
        dir,
        &mut versions,
        &replayed,
        &keyspaces,
        wal_number,
    )?;
    let version = versions.current();
    for keyspace in keyspaces.values_mut() {
        keyspace.install_super_version(version.clone());
    }
    let writer = {
        let file = fs.create(&dir.join(log_file_name(wal_number)))?;
        let writer = crate::wal::LogWriter::new(file, wal_number)?;
        fs.sync_dir(dir)?;
        writer
    };
    let last_seqno = versions.last_sequence();
    let inner = DbInner::new(
        options,
        dir,
        lock,
        versions,
        keyspaces,
        WalState {
            writer,
            number: wal_number,
            unsynced: false,
        },
        last_seqno,
    );
    {
        let mut state = inner.lock_state();
        write_options_file(&inner, &mut state)?;
        delete_obsolete_files(&inner, &mut state);
    }
    Ok(inner)
}

/// Reads (or creates) the MANIFEST, checking the persisted options first.
fn load_versions(dir: &Path, options: &Options) -> Result<(VersionSet, Option<OptionsFile>)> {
    let fs = &options.file_system;
    let persisted = OptionsFile::read_latest(&**fs, dir)?.map(|(_, file)| file);
    let mut versions = if database_exists(&**fs, dir)? {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a database already exists in {}",
                dir.display()
            )));
        }
        if let Some(persisted) = &persisted {
            options.check_compatible(persisted)?;
        }
        VersionSet::recover(fs.clone(), dir, options.comparator.clone(), NUM_LEVELS)?
    } else {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "no database in {} (set create_if_missing to create one)",
                dir.display()
            )));
        }
        VersionSet::create(fs.clone(), dir, options.comparator.clone(), NUM_LEVELS)?
    };
    // File numbers already on disk are never reused, even if the MANIFEST missed them.
    for name in fs.list(dir)? {
        if let Some(number) = file_number_of(&name) {
            versions.mark_file_number_used(number);
        }
    }
    Ok((versions, persisted))
}

/// Writes what the WALs held as L0 tables and points every keyspace at the new WAL, in one
/// MANIFEST edit: after it, no older WAL is needed.
fn flush_replayed(
    options: &Options,
    dir: &Path,
    versions: &mut VersionSet,
    replayed: &Replayed,
    keyspaces: &BTreeMap<u32, KeyspaceState>,
    wal_number: u64,
) -> Result<()> {
    let fs = &*options.file_system;
    let mut edit = VersionEdit::new();
    for (id, mem) in &replayed.memtables {
        let Some(keyspace) = keyspaces.get(id) else {
            continue;
        };
        let number = versions.new_file_number();
        if let Some(meta) =
            write_memtable(fs, dir, &options.comparator, mem, number, &keyspace.options)?
        {
            edit.add_file(*id, 0, meta);
        }
    }
    for id in keyspaces.keys() {
        edit.set_log_number(*id, wal_number);
    }
    let last_seqno = replayed.last_seqno.max(versions.last_sequence());
    versions.set_last_sequence(last_seqno);
    fs.sync_dir(dir)?;
    versions.log_and_apply(edit)
}

/// What WAL replay produced.
struct Replayed {
    memtables: BTreeMap<u32, Arc<MemTable>>,
    last_seqno: SeqNo,
}

/// Replays every WAL the MANIFEST says may hold unflushed data, in order.
fn replay_wals(options: &Options, dir: &Path, versions: &mut VersionSet) -> Result<Replayed> {
    let fs = &options.file_system;
    let version = versions.current();
    let keyspaces = version.keyspaces();
    let min_log = keyspaces
        .iter()
        .filter_map(|(id, _)| version.log_number(*id))
        .min()
        .unwrap_or(0);
    let mut logs: Vec<u64> = fs
        .list(dir)?
        .iter()
        .filter_map(|n| parse_log_file_name(n))
        .filter(|n| *n >= min_log)
        .collect();
    logs.sort_unstable();
    let mut memtables: BTreeMap<u32, Arc<MemTable>> = BTreeMap::new();
    let mut last_seqno = 0;
    for (position, &number) in logs.iter().enumerate() {
        let path = dir.join(log_file_name(number));
        let file = fs.open_read(&path)?;
        let mut reader = LogReader::new(file, number, options.wal_recovery_mode)?;
        while let Some((record, offset)) = reader.read_record()? {
            let batch = WriteBatch::from_wal_record(record, &path, offset)?;
            for entry in batch.iter() {
                let flushed_through = version.log_number(entry.keyspace);
                // Dropped keyspace, or data already in tables.
                if flushed_through.is_none_or(|log| number < log) {
                    continue;
                }
                let mem = memtables
                    .entry(entry.keyspace)
                    .or_insert_with(|| Arc::new(MemTable::new(options.comparator.clone(), 0)));
                mem.add(entry.seqno, entry.kind, entry.key, entry.value);
                last_seqno = last_seqno.max(entry.seqno);
            }
        }
        let is_last = position + 1 == logs.len();
        if let Some(end) = reader.end() {
            if end.is_damage() {
                match options.wal_recovery_mode {
                    RecoveryMode::PointInTime => break, // everything after the damage is dropped
                    RecoveryMode::TolerateCorruptedTailRecords if !is_last => {
                        return Err(Error::Corruption {
                            file: path,
                            offset: reader.last_record_end(),
                            detail: format!(
                                "WAL {number} ends damaged but newer WALs follow it ({end:?}); \
                                 a torn tail is only possible in the newest WAL"
                            ),
                        });
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(Replayed {
        memtables,
        last_seqno,
    })
}

/// The number in a file name Shale writes (`000012.sst`, `000012.wal`, `MANIFEST-000012`,
/// `OPTIONS-000012`).
fn file_number_of(name: &str) -> Option<u64> {
    parse_log_file_name(name)
        .or_else(|| name.strip_suffix(".sst").and_then(|n| n.parse().ok()))
        .or_else(|| name.strip_prefix("MANIFEST-").and_then(|n| n.parse().ok()))
        .or_else(|| name.strip_prefix("OPTIONS-").and_then(|n| n.parse().ok()))
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
