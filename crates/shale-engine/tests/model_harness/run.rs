//! [`Run`]: a database under test, its oracle, and the checks of every op.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{
    Db, Durability, Error, IngestArg, IngestOptions, Keyspace, ReadOptions, Snapshot,
    TableFileWriter, WriteBatch, WriteOptions,
};
use shale_fs::{CrashMode, MemFs};

use super::generate::key_space;
use super::oracle::{diff, parse_value, Cursor, Data, Model};
use super::{printable, value, BatchOp, Config, IngestOp, Move, Op, Stats, K, KEYSPACES};

/// Where every run keeps its database.
const DIR: &str = "/model";

/// One writer's share of [`Op::ConcurrentWrites`]: (key, `Some((value id, len))` to put or
/// `None` to delete, durability).
type Plan = Vec<(Vec<u8>, Option<(u32, u16)>, Durability)>;

macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

/// A database under test with its oracle.
pub(super) struct Run {
    /// The run's options; [`Op::ChangePrefix`] changes the extractor.
    pub(super) config: Config,
    pub(super) fs: MemFs,
    pub(super) db: Option<Db>,
    pub(super) handles: BTreeMap<u8, Keyspace>,
    pub(super) model: Model,
    pub(super) snapshots: BTreeMap<u8, (Snapshot, Model)>,
    /// The oracle at every step since the last point at which everything acknowledged was
    /// durable, oldest (that point) first (checked property 3).
    pub(super) durable_history: Vec<Model>,
    pub(super) stats: Stats,
}

impl Run {
    pub(super) fn open(config: &Config) -> Result<Self, String> {
        let fs = MemFs::new();
        let db = Db::open(DIR, config.options(&fs)).map_err(|e| format!("open: {e}"))?;
        let second = db
            .create_keyspace(KEYSPACES[1], config.keyspace_options_for(1))
            .map_err(|e| format!("create_keyspace: {e}"))?;
        let mut handles = BTreeMap::new();
        handles.insert(0, db.default_keyspace());
        handles.insert(1, second);
        let mut model = Model::default();
        model.keyspaces.insert(0, Data::new());
        model.keyspaces.insert(1, Data::new());
        Ok(Run {
            config: config.clone(),
            fs,
            db: Some(db),
            handles,
            durable_history: vec![model.clone()],
            model,
            snapshots: BTreeMap::new(),
            stats: Stats::default(),
        })
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("the database is open between ops")
    }

    /// The oracle's data of `ks` as seen now or through snapshot `slot` (`None` when the
    /// op names a slot that holds no snapshot: the op is skipped).
    fn view(&self, ks: u8, snapshot: Option<u8>) -> Option<(Data, ReadOptions)> {
        match snapshot {
            None => Some((
                self.model.keyspaces.get(&ks).cloned().unwrap_or_default(),
                ReadOptions::default(),
            )),
            Some(slot) => self.snapshots.get(&slot).map(|(snapshot, model)| {
                (
                    model.keyspaces.get(&ks).cloned().unwrap_or_default(),
                    ReadOptions {
                        snapshot: Some(snapshot.clone()),
                        ..ReadOptions::default()
                    },
                )
            }),
        }
    }

    /// Records a step that changed the oracle (checked property 3).
    fn wrote(&mut self, synced: bool) {
        if synced || self.config.durability == Durability::Sync {
            self.made_durable();
        } else {
            self.durable_history.push(self.model.clone());
        }
    }

    fn made_durable(&mut self) {
        self.durable_history.clear();
        self.durable_history.push(self.model.clone());
    }

    #[allow(clippy::too_many_lines)] // one arm per kind of op
    pub(super) fn apply(&mut self, op: &Op) -> Result<(), String> {
        self.stats.ops += 1;
        match op {
            Op::Put {
                ks,
                key,
                value: id,
                len,
            } => {
                let Some(handle) = self.handles.get(ks) else {
                    return Ok(());
                };
                handle
                    .put(&key.0, &value(*id, *len))
                    .map_err(|e| format!("put: {e}"))?;
                self.model.apply_put(*ks, key, *id, *len);
                self.wrote(false);
            }
            Op::Delete { ks, key } => {
                let Some(handle) = self.handles.get(ks) else {
                    return Ok(());
                };
                handle.delete(&key.0).map_err(|e| format!("delete: {e}"))?;
                self.model.apply_delete(*ks, key);
                self.wrote(false);
            }
            Op::DeleteRange { ks, start, end } => {
                let Some(handle) = self.handles.get(ks) else {
                    return Ok(());
                };
                let result = handle.delete_range(&start.0, &end.0);
                if start > end {
                    ensure!(
                        matches!(result, Err(Error::InvalidArgument(_))),
                        "delete_range of a reversed range: {result:?}, want InvalidArgument"
                    );
                    return Ok(());
                }
                result.map_err(|e| format!("delete_range: {e}"))?;
                self.model.apply_delete_range(*ks, start, end);
                self.wrote(false);
            }
            Op::Batch { sync, entries } => self.batch(*sync, entries)?,
            Op::Get { ks, key, snapshot } => self.get(*ks, key, *snapshot)?,
            Op::MultiGet { ks, keys, snapshot } => self.multi_get(*ks, keys, *snapshot)?,
            Op::TakeSnapshot { slot } => {
                let snapshot = self.db().snapshot();
                self.snapshots.insert(*slot, (snapshot, self.model.clone()));
            }
            Op::ReleaseSnapshot { slot } => {
                self.snapshots.remove(slot);
            }
            Op::Iterate {
                ks,
                snapshot,
                lower,
                upper,
                prefix,
                moves,
            } => self.iterate(
                *ks,
                *snapshot,
                lower.as_ref(),
                upper.as_ref(),
                *prefix,
                moves,
            )?,
            Op::Scan { ks, snapshot } => {
                if self.handles.contains_key(ks) {
                    if let Some((data, options)) = self.view(*ks, *snapshot) {
                        self.check_scan(*ks, &data, &options)?;
                    }
                }
            }
            Op::Flush => {
                self.db().flush().map_err(|e| format!("flush: {e}"))?;
                self.made_durable();
            }
            Op::CompactRange { ks, start, end } => {
                if let Some(handle) = self.handles.get(ks) {
                    self.db()
                        .compact_range(
                            handle,
                            start.as_ref().map(|key| &key.0[..]),
                            end.as_ref().map(|key| &key.0[..]),
                        )
                        .map_err(|e| format!("compact_range: {e}"))?;
                    self.made_durable();
                }
            }
            Op::WaitIdle => {
                self.db()
                    .wait_for_background_work()
                    .map_err(|e| format!("wait_for_background_work: {e}"))?;
                for (&ks, handle) in &self.handles {
                    let counts = self
                        .db()
                        .level_file_counts(handle)
                        .map_err(|e| format!("level_file_counts: {e}"))?;
                    let trigger = self
                        .config
                        .keyspace_options_for(ks)
                        .level0_compaction_trigger;
                    ensure!(
                        counts[0] < trigger,
                        "{} has {counts:?} files per level once idle",
                        handle.name()
                    );
                }
            }
            Op::Reopen => self.reopen()?,
            Op::ChangePrefix { len } => {
                self.config.prefix_len = *len;
                self.reopen()?;
            }
            Op::ConcurrentWrites {
                ks,
                threads,
                writes,
                flushes,
                first_value,
                seed,
            } => self.concurrent_writes(*ks, *threads, *writes, *flushes, *first_value, *seed)?,
            Op::Ingest { files, move_files } => self.ingest(files, *move_files)?,
            Op::Crash => self.crash(CrashMode::DropUnsynced)?,
            Op::TornCrash { seed } => self.crash(CrashMode::Torn { seed: *seed })?,
            Op::CreateThird => {
                if !self.handles.contains_key(&2) {
                    let handle = self
                        .db()
                        .create_keyspace(KEYSPACES[2], self.config.keyspace_options_for(2))
                        .map_err(|e| format!("create_keyspace: {e}"))?;
                    self.handles.insert(2, handle);
                    self.model.keyspaces.insert(2, Data::new());
                    self.wrote(false);
                }
            }
            Op::DropThird => {
                if self.handles.contains_key(&2) {
                    self.db()
                        .drop_keyspace(KEYSPACES[2])
                        .map_err(|e| format!("drop_keyspace: {e}"))?;
                    self.handles.remove(&2);
                    // A keyspace created later under the same name is a new, empty one at
                    // every older snapshot and step.
                    self.model.keyspaces.remove(&2);
                    for (_, model) in self.snapshots.values_mut() {
                        model.keyspaces.remove(&2);
                    }
                    for model in &mut self.durable_history {
                        model.keyspaces.remove(&2);
                    }
                    self.wrote(false);
                }
            }
        }
        Ok(())
    }

    fn batch(&mut self, sync: bool, entries: &[BatchOp]) -> Result<(), String> {
        let mut batch = WriteBatch::new();
        let mut after = self.model.clone();
        let mut reversed = false;
        for entry in entries {
            let (BatchOp::BatchPut { ks, .. }
            | BatchOp::BatchDelete { ks, .. }
            | BatchOp::BatchDeleteRange { ks, .. }) = entry;
            let Some(handle) = self.handles.get(ks) else {
                continue;
            };
            let id = handle.id();
            match entry {
                BatchOp::BatchPut {
                    key, value: v, len, ..
                } => {
                    batch
                        .put(id, &key.0, &value(*v, *len))
                        .map_err(|e| e.to_string())?;
                    after.apply_put(*ks, key, *v, *len);
                }
                BatchOp::BatchDelete { key, .. } => {
                    batch.delete(id, &key.0).map_err(|e| e.to_string())?;
                    after.apply_delete(*ks, key);
                }
                BatchOp::BatchDeleteRange { start, end, .. } => {
                    batch
                        .delete_range(id, &start.0, &end.0)
                        .map_err(|e| e.to_string())?;
                    after.apply_delete_range(*ks, start, end);
                    reversed |= start > end;
                }
            }
        }
        let options = if sync {
            WriteOptions::sync()
        } else {
            WriteOptions::default()
        };
        let result = self.db().write(batch, &options);
        if reversed {
            ensure!(
                matches!(result, Err(Error::InvalidArgument(_))),
                "a batch with a reversed range deletion: {result:?}, want InvalidArgument"
            );
            return Ok(());
        }
        result.map_err(|e| format!("write: {e}"))?;
        self.model = after;
        self.wrote(sync);
        Ok(())
    }

    /// Writes the external tables, ingests them, and applies them to the oracle: all entries
    /// of the ingestion share one seqno, so a file's range deletions hide older data but not
    /// the file's own entries.
    fn ingest(
        &mut self,
        files: &[(u8, Vec<Vec<IngestOp>>)],
        move_files: bool,
    ) -> Result<(), String> {
        use shale_fs::FileSystem as _;
        let external = std::path::Path::new("/external");
        self.fs
            .create_dir_all(external)
            .map_err(|e| format!("create_dir_all: {e}"))?;
        let options = self.config.options(&self.fs);
        let mut after = self.model.clone();
        let mut args = Vec::new();
        let mut paths = Vec::new();
        for (ks, list) in files {
            let Some(handle) = self.handles.get(ks) else {
                continue;
            };
            let mut arg = IngestArg {
                keyspace: handle.clone(),
                files: Vec::new(),
            };
            for entries in list {
                let path = external.join(format!("{}-{}.sst", self.stats.ops, paths.len()));
                let mut writer = TableFileWriter::create(
                    &path,
                    &options,
                    &self.config.keyspace_options_for(*ks),
                )
                .map_err(|e| format!("TableFileWriter::create: {e}"))?;
                for entry in entries {
                    match entry {
                        IngestOp::IngestPut { key, value: v, len } => {
                            writer.put(&key.0, &value(*v, *len))
                        }
                        IngestOp::IngestDelete { key } => writer.delete(&key.0),
                        IngestOp::IngestDeleteRange { start, end } => {
                            after.apply_delete_range(*ks, start, end);
                            writer.delete_range(&start.0, &end.0)
                        }
                    }
                    .map_err(|e| format!("TableFileWriter: {e}"))?;
                }
                for entry in entries {
                    match entry {
                        IngestOp::IngestPut { key, value: v, len } => {
                            after.apply_put(*ks, key, *v, *len);
                        }
                        IngestOp::IngestDelete { key } => after.apply_delete(*ks, key),
                        IngestOp::IngestDeleteRange { .. } => {}
                    }
                }
                writer
                    .finish()
                    .map_err(|e| format!("TableFileWriter::finish: {e}"))?;
                arg.files.push(path.clone());
                paths.push(path);
            }
            args.push(arg);
        }
        if paths.is_empty() {
            return Ok(());
        }
        self.db()
            .ingest(
                &args,
                // Copied files are verified block by block, linked ones only by their meta
                // blocks and first and last entries, so both checks see the op mix.
                IngestOptions {
                    move_files,
                    verify_checksums_before_ingest: !move_files,
                },
            )
            .map_err(|e| format!("ingest: {e}"))?;
        self.stats.ingested_files += paths.len();
        for path in &paths {
            self.fs
                .remove(path)
                .map_err(|e| format!("removing {}: {e}", path.display()))?;
        }
        self.model = after;
        // The ingestion syncs the WAL and the MANIFEST: everything before it is durable.
        self.made_durable();
        Ok(())
    }

    fn concurrent_writes(
        &mut self,
        ks: u8,
        threads: u8,
        writes: u16,
        flushes: u8,
        first_value: u32,
        seed: u64,
    ) -> Result<(), String> {
        let Some(handle) = self.handles.get(&ks).cloned() else {
            return Ok(());
        };
        let keys = key_space(self.config.keys_per_group);
        let threads = usize::from(threads.max(1));
        // Writer `t` owns the keys at positions `t` modulo `threads + 1`; a reader checks that
        // the keys of the last share keep their values all along.
        let shares = threads + 1;
        let stable: Vec<Vec<u8>> = keys.iter().skip(threads).step_by(shares).cloned().collect();
        let data = self.model.keyspaces.get(&ks).cloned().unwrap_or_default();
        let mut next_value = first_value;
        let plans: Vec<Plan> = (0..threads)
            .map(|thread| {
                let mut rng = SmallRng::seed_from_u64(seed ^ ((thread as u64 + 1) * 0x9E37_79B9));
                let own: Vec<&Vec<u8>> = keys.iter().skip(thread).step_by(shares).collect();
                (0..writes)
                    .map(|index| {
                        let key = own[rng.gen_range(0..own.len())].clone();
                        next_value += 1;
                        let put = rng
                            .gen_bool(0.8)
                            .then(|| (next_value, rng.gen_range(1..=self.config.max_value_len)));
                        let durability = if index + 1 == writes {
                            Durability::Sync
                        } else {
                            [Durability::Sync, Durability::Flush, Durability::Buffered]
                                [rng.gen_range(0..3)]
                        };
                        (key, put, durability)
                    })
                    .collect()
            })
            .collect();
        let db = self.db.as_ref().expect("open between ops");
        let id = handle.id();
        let writing = AtomicBool::new(true);
        let errors: Vec<String> = std::thread::scope(|scope| {
            let (handle, stable, data, writing) = (&handle, &stable, &data, &writing);
            let reader =
                scope.spawn(move || read_while_writing(handle, stable, data, writing, seed));
            let mut workers = Vec::new();
            for plan in &plans {
                workers.push(scope.spawn(move || -> Result<(), String> {
                    for (key, put, durability) in plan {
                        let mut batch = WriteBatch::new();
                        match put {
                            Some((v, len)) => batch.put(id, key, &value(*v, *len)),
                            None => batch.delete(id, key),
                        }
                        .map_err(|e| e.to_string())?;
                        let options = WriteOptions {
                            durability: Some(*durability),
                        };
                        db.write(batch, &options)
                            .map_err(|e| format!("concurrent write: {e}"))?;
                    }
                    Ok(())
                }));
            }
            workers.push(scope.spawn(move || -> Result<(), String> {
                for _ in 0..flushes {
                    db.flush().map_err(|e| format!("concurrent flush: {e}"))?;
                }
                Ok(())
            }));
            let mut errors: Vec<String> = workers
                .into_iter()
                .filter_map(|worker| {
                    worker
                        .join()
                        .unwrap_or_else(|_| Err("a writer panicked".into()))
                        .err()
                })
                .collect();
            writing.store(false, Ordering::Release);
            if let Err(error) = reader
                .join()
                .unwrap_or_else(|_| Err("the reader panicked".into()))
            {
                errors.push(error);
            }
            errors
        });
        ensure!(errors.is_empty(), "{errors:?}");
        for plan in &plans {
            for (key, put, _) in plan {
                let key = K(key.clone());
                match put {
                    Some((v, len)) => self.model.apply_put(ks, &key, *v, *len),
                    None => self.model.apply_delete(ks, &key),
                }
            }
        }
        self.made_durable();
        Ok(())
    }

    fn get(&self, ks: u8, key: &K, snapshot: Option<u8>) -> Result<(), String> {
        let (Some(handle), Some((data, options))) =
            (self.handles.get(&ks), self.view(ks, snapshot))
        else {
            return Ok(());
        };
        let got = handle
            .get_with(&key.0, &options)
            .map_err(|e| format!("get: {e}"))?;
        let want = data.get(&key.0).map(|&(id, len)| value(id, len));
        ensure!(
            got == want,
            "get {} (snapshot {snapshot:?}) in {}: got {:?}, want {:?}",
            printable(&key.0),
            KEYSPACES[usize::from(ks)],
            got.as_deref().map(printable),
            want.as_deref().map(printable)
        );
        Ok(())
    }

    fn multi_get(&self, ks: u8, keys: &[K], snapshot: Option<u8>) -> Result<(), String> {
        let (Some(handle), Some((data, options))) =
            (self.handles.get(&ks), self.view(ks, snapshot))
        else {
            return Ok(());
        };
        let refs: Vec<&[u8]> = keys.iter().map(|key| &key.0[..]).collect();
        let got = handle
            .multi_get(&refs, &options)
            .map_err(|e| format!("multi_get: {e}"))?;
        ensure!(
            got.len() == keys.len(),
            "multi_get returned {} values",
            got.len()
        );
        for (key, got) in keys.iter().zip(got) {
            let want = data.get(&key.0).map(|&(id, len)| value(id, len));
            ensure!(
                got == want,
                "multi_get {} (snapshot {snapshot:?}): got {:?}, want {:?}",
                printable(&key.0),
                got.as_deref().map(printable),
                want.as_deref().map(printable)
            );
        }
        Ok(())
    }

    fn iterate(
        &mut self,
        ks: u8,
        snapshot: Option<u8>,
        lower: Option<&K>,
        upper: Option<&K>,
        prefix: bool,
        moves: &[Move],
    ) -> Result<(), String> {
        let (Some(handle), Some((data, mut options))) =
            (self.handles.get(&ks).cloned(), self.view(ks, snapshot))
        else {
            return Ok(());
        };
        options.lower_bound = lower.map(|key| key.0.clone());
        options.upper_bound = upper.map(|key| key.0.clone());
        options.prefix_same_as_start = prefix;
        let mut iter = handle
            .iterator(options)
            .map_err(|e| format!("iterator: {e}"))?;
        let mut cursor = Cursor {
            data: &data,
            lower: lower.map(|key| &key.0[..]),
            upper: upper.map(|key| &key.0[..]),
            prefix_len: if prefix { self.config.prefix_len } else { None },
            prefix: None,
            position: None,
        };
        for (step, step_move) in moves.iter().enumerate() {
            match step_move {
                Move::SeekToFirst => iter.seek_to_first(),
                Move::SeekToLast => iter.seek_to_last(),
                Move::Seek(target) => iter.seek(&target.0),
                Move::SeekForPrev(target) => iter.seek_for_prev(&target.0),
                Move::Next => iter.next(),
                Move::Prev => iter.prev(),
                // The iterator keeps the view it was created with.
                Move::PutDuring { key, value, len } => self.apply(&Op::Put {
                    ks,
                    key: key.clone(),
                    value: *value,
                    len: *len,
                })?,
                Move::DeleteRangeDuring { start, end } => self.apply(&Op::DeleteRange {
                    ks,
                    start: start.clone(),
                    end: end.clone(),
                })?,
                Move::FlushDuring => self.apply(&Op::Flush)?,
            }
            cursor.apply(step_move);
            iter.status()
                .map_err(|e| format!("iterator status after move {step}: {e}"))?;
            let got = iter
                .valid()
                .then(|| (iter.key().to_vec(), iter.value().to_vec()));
            let want = cursor.current();
            ensure!(
                got == want,
                "iterator move {step} ({step_move:?}): got {:?}, want {:?}",
                got.as_ref().map(|(k, v)| (printable(k), printable(v))),
                want.as_ref().map(|(k, v)| (printable(k), printable(v)))
            );
        }
        Ok(())
    }

    /// Forward and backward scans of `ks` equal `data`.
    fn check_scan(&self, ks: u8, data: &Data, options: &ReadOptions) -> Result<(), String> {
        let handle = &self.handles[&ks];
        let want: Vec<(Vec<u8>, Vec<u8>)> = data
            .iter()
            .map(|(key, &(id, len))| (key.clone(), value(id, len)))
            .collect();
        let mut iter = handle
            .iterator(options.clone())
            .map_err(|e| format!("iterator: {e}"))?;
        let mut forward = Vec::new();
        iter.seek_to_first();
        while iter.valid() {
            forward.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.next();
        }
        iter.status().map_err(|e| format!("forward scan: {e}"))?;
        compare_scans("forward scan", KEYSPACES[usize::from(ks)], &forward, &want)?;
        let mut backward = Vec::new();
        iter.seek_to_last();
        while iter.valid() {
            backward.push((iter.key().to_vec(), iter.value().to_vec()));
            iter.prev();
        }
        iter.status().map_err(|e| format!("backward scan: {e}"))?;
        backward.reverse();
        compare_scans(
            "backward scan",
            KEYSPACES[usize::from(ks)],
            &backward,
            &want,
        )
    }

    /// The whole database equals `model` (keyspace names and every keyspace's data).
    fn check_all(&self, model: &Model) -> Result<(), String> {
        let names: BTreeSet<String> = self.db().keyspace_names().into_iter().collect();
        let want: BTreeSet<String> = model
            .keyspaces
            .keys()
            .map(|&ks| KEYSPACES[usize::from(ks)].to_owned())
            .collect();
        ensure!(names == want, "keyspaces {names:?}, want {want:?}");
        let keys = key_space(self.config.keys_per_group);
        let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        for (ks, data) in &model.keyspaces {
            self.check_scan(*ks, data, &ReadOptions::default())?;
            // Point lookups take another path (bloom filters, one table per level).
            let got = self.handles[ks]
                .multi_get(&key_refs, &ReadOptions::default())
                .map_err(|e| format!("multi_get: {e}"))?;
            for (key, got) in keys.iter().zip(got) {
                let want = data.get(key).map(|&(id, len)| value(id, len));
                ensure!(
                    got == want,
                    "multi_get {} in {}: got {:?}, want {:?}",
                    printable(key),
                    KEYSPACES[usize::from(*ks)],
                    got.as_deref().map(printable),
                    want.as_deref().map(printable)
                );
            }
        }
        Ok(())
    }

    /// Reads the whole database (the data of every keyspace the model knows of).
    fn read_all(&self) -> Result<Model, String> {
        let mut model = Model::default();
        for (&ks, handle) in &self.handles {
            let mut data = Data::new();
            let mut iter = handle
                .iterator(ReadOptions::default())
                .map_err(|e| format!("iterator: {e}"))?;
            iter.seek_to_first();
            while iter.valid() {
                let (id, len) = parse_value(iter.value()).ok_or_else(|| {
                    format!(
                        "{} holds {} = {}, which no write wrote",
                        KEYSPACES[usize::from(ks)],
                        printable(iter.key()),
                        printable(iter.value())
                    )
                })?;
                data.insert(iter.key().to_vec(), (id, len));
                iter.next();
            }
            iter.status().map_err(|e| format!("scan: {e}"))?;
            model.keyspaces.insert(ks, data);
        }
        Ok(model)
    }

    fn attach(&mut self, db: Db) -> Result<(), String> {
        self.handles.clear();
        for &ks in self.model.keyspaces.keys() {
            let name = KEYSPACES[usize::from(ks)];
            let handle = db
                .keyspace(name)
                .ok_or_else(|| format!("keyspace {name} is missing after reopen"))?;
            self.handles.insert(ks, handle);
        }
        self.db = Some(db);
        Ok(())
    }

    fn reopen(&mut self) -> Result<(), String> {
        self.stats.reopens += 1;
        self.snapshots.clear();
        let db = self.db.take().expect("open between ops");
        self.handles.clear();
        db.close().map_err(|e| format!("close: {e}"))?;
        let db =
            Db::open(DIR, self.config.options(&self.fs)).map_err(|e| format!("reopen: {e}"))?;
        self.attach(db)?;
        self.check_all(&self.model)
            .map_err(|e| format!("after reopen: {e}"))?;
        self.made_durable();
        Ok(())
    }

    fn crash(&mut self, mode: CrashMode) -> Result<(), String> {
        self.stats.crashes += 1;
        self.snapshots.clear();
        let image = self.fs.crash_image(mode);
        let db = self.db.take().expect("open between ops");
        self.handles.clear();
        // The original goes on to close cleanly on its own file system, unobserved.
        drop(db);
        self.fs = image;
        let db = Db::open(DIR, self.config.options(&self.fs))
            .map_err(|e| format!("open after crash: {e}"))?;
        self.attach(db)?;
        let names: BTreeSet<String> = self.db().keyspace_names().into_iter().collect();
        let want: BTreeSet<String> = self
            .model
            .keyspaces
            .keys()
            .map(|&ks| KEYSPACES[usize::from(ks)].to_owned())
            .collect();
        ensure!(
            names == want,
            "after crash: keyspaces {names:?}, want {want:?}"
        );
        let recovered = self.read_all()?;
        // The newest step the recovered state equals (`durable_history` holds no keyspace the
        // database does not have, and a missing one is empty).
        let matches = |model: &Model| {
            recovered.keyspaces.iter().all(|(ks, data)| {
                model
                    .keyspaces
                    .get(ks)
                    .map_or(data.is_empty(), |want| want == data)
            })
        };
        let Some(found) = self.durable_history.iter().rposition(matches) else {
            let newest = self.durable_history.last().cloned().unwrap_or_default();
            let mut detail = String::new();
            for (ks, data) in &recovered.keyspaces {
                let want = newest.keyspaces.get(ks).cloned().unwrap_or_default();
                let _ = write!(
                    detail,
                    "\n  {}: {}",
                    KEYSPACES[usize::from(*ks)],
                    diff(data, &want)
                );
            }
            return Err(format!(
                "after crash the database matches none of the {} states since the last durable \
                 point; against the newest:{detail}",
                self.durable_history.len()
            ));
        };
        let mut model = self.durable_history[found].clone();
        model
            .keyspaces
            .retain(|ks, _| self.handles.contains_key(ks));
        for &ks in self.handles.keys() {
            model.keyspaces.entry(ks).or_default();
        }
        self.model = model;
        self.made_durable();
        Ok(())
    }

    /// Checks, closes, reopens and checks again.
    pub(super) fn finish(mut self) -> Result<Stats, String> {
        self.check_all(&self.model)?;
        let counts = self
            .db()
            .level_file_counts(&self.handles[&0])
            .map_err(|e| format!("level_file_counts: {e}"))?;
        self.stats.level0_files = counts.first().copied().unwrap_or(0);
        self.stats.deeper_files = counts.iter().skip(1).sum();
        self.stats.deeper_levels = counts.iter().skip(1).filter(|c| **c > 0).count();
        let stats = self.db().stats();
        self.stats.blob_files_written = stats.blob_files_written;
        self.stats.blob_bytes_relocated = stats.blob_bytes_relocated;
        self.reopen()?;
        self.stats.reopens -= 1;
        let db = self.db.take().expect("open");
        self.handles.clear();
        db.close().map_err(|e| format!("final close: {e}"))?;
        Ok(self.stats)
    }
}

fn compare_scans(
    what: &str,
    keyspace: &str,
    got: &[(Vec<u8>, Vec<u8>)],
    want: &[(Vec<u8>, Vec<u8>)],
) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let at = got
        .iter()
        .zip(want)
        .position(|(g, w)| g != w)
        .unwrap_or(got.len().min(want.len()));
    let show = |entries: &[(Vec<u8>, Vec<u8>)]| {
        entries
            .get(at)
            .map(|(k, v)| format!("{} = {}", printable(k), printable(v)))
    };
    Err(format!(
        "{what} of {keyspace}: {} entries, want {}; first difference at #{at}: got {:?}, want {:?}",
        got.len(),
        want.len(),
        show(got),
        show(want)
    ))
}

/// Reads the keys of `stable` (which no writer touches) until `writing` turns false: gets,
/// and now and then a scan, must show the values of `data` for them.
fn read_while_writing(
    handle: &Keyspace,
    stable: &[Vec<u8>],
    data: &Data,
    writing: &AtomicBool,
    seed: u64,
) -> Result<(), String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut round = 0u32;
    while writing.load(Ordering::Acquire) && !stable.is_empty() {
        round += 1;
        let key = &stable[rng.gen_range(0..stable.len())];
        let got = handle
            .get(key)
            .map_err(|e| format!("get during concurrent writes: {e}"))?;
        let want = data.get(key).map(|&(id, len)| value(id, len));
        ensure!(
            got == want,
            "get {} during concurrent writes: got {:?}, want {:?}",
            printable(key),
            got.as_deref().map(printable),
            want.as_deref().map(printable)
        );
        if round.is_multiple_of(16) {
            let mut iter = handle
                .iterator(ReadOptions::default())
                .map_err(|e| format!("iterator: {e}"))?;
            iter.seek_to_first();
            let mut shown = Vec::new();
            while iter.valid() {
                if stable
                    .binary_search_by(|k| k.as_slice().cmp(iter.key()))
                    .is_ok()
                {
                    shown.push((iter.key().to_vec(), iter.value().to_vec()));
                }
                iter.next();
            }
            iter.status().map_err(|e| format!("scan: {e}"))?;
            let want: Vec<(Vec<u8>, Vec<u8>)> = stable
                .iter()
                .filter_map(|k| data.get(k).map(|&(id, len)| (k.clone(), value(id, len))))
                .collect();
            compare_scans(
                "scan during concurrent writes",
                handle.name(),
                &shown,
                &want,
            )?;
        }
    }
    Ok(())
}
