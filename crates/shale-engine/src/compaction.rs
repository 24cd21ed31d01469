//! Compaction, in its first form: when a keyspace has `level0_compaction_trigger` L0 tables,
//! merge them with the overlapping L1 tables into new L1 tables. Leveled compaction with
//! dynamic level sizes, the picker and subcompactions come with the compaction issue.
//!
//! What is dropped (ARCHITECTURE.md invariant 3: nothing a live snapshot can see):
//! - snapshot stripes: with live snapshots S, entry seqno `s` is in stripe `count(S < s)`;
//!   an entry is dropped when a newer entry of the same user key is in the same stripe (no
//!   snapshot can see the older one without also seeing the newer);
//! - at the bottommost level, a point deletion in stripe 0 (every snapshot sees it) together
//!   with everything it shadows, and a range tombstone in stripe 0 together with the entries it
//!   covers;
//! - every other range tombstone is carried into the outputs, clipped to each output's
//!   user-key range `[first key, next output's first key)`, so levels stay non-overlapping.

use std::sync::Arc;

use shale_sst::{
    Comparator, ParsedInternalKey, RangeTombstone, ReadOptions as TableReadOptions, SeqNo,
    TableWriter, ValueKind,
};

use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::flush::{file_meta, writer_options};
use crate::iterator::InternalIterator;
use crate::merging_iter::MergingIter;
use crate::options::KeyspaceOptions;
use crate::table_cache::table_file_name;
use crate::version::{FileMetaData, Version, VersionEdit};

/// One compaction: inputs from L0 and L1 of a keyspace.
#[derive(Debug)]
struct Compaction {
    keyspace: u32,
    options: KeyspaceOptions,
    level0: Vec<Arc<FileMetaData>>,
    level1: Vec<Arc<FileMetaData>>,
    bottommost: bool,
    /// The Version the inputs were picked from: while it is held its tables are live, so
    /// dropping the keyspace meanwhile cannot delete them under the compaction.
    _version: Arc<Version>,
}

/// Whether some keyspace not already compacting has reached its L0 trigger.
pub(crate) fn needs_compaction(state: &DbState) -> bool {
    pick(state).is_some()
}

fn pick(state: &DbState) -> Option<Compaction> {
    let version = state.versions.current();
    for keyspace in state.keyspaces.values() {
        if state.compacting.contains(&keyspace.id) {
            continue;
        }
        let level0 = version.files(keyspace.id, 0);
        if level0.len() < keyspace.options.level0_compaction_trigger {
            continue;
        }
        let cmp = version_user_comparator(state);
        let mut smallest = level0[0].smallest.user_key().to_vec();
        let mut largest = level0[0].largest.user_key().to_vec();
        for file in level0 {
            if cmp.compare(file.smallest.user_key(), &smallest).is_lt() {
                smallest = file.smallest.user_key().to_vec();
            }
            if cmp.compare(file.largest.user_key(), &largest).is_gt() {
                largest = file.largest.user_key().to_vec();
            }
        }
        let level1 = version.overlapping_files(keyspace.id, 1, &smallest, &largest);
        let bottommost =
            (2..version.num_levels()).all(|level| version.files(keyspace.id, level).is_empty());
        return Some(Compaction {
            keyspace: keyspace.id,
            options: keyspace.options.clone(),
            level0: level0.to_vec(),
            level1,
            bottommost,
            _version: version.clone(),
        });
    }
    None
}

fn version_user_comparator(state: &DbState) -> Arc<dyn Comparator> {
    state.versions.current().comparator().clone()
}

/// Runs one compaction if one is needed.
pub(crate) fn compact_once(inner: &Arc<DbInner>) -> Result<()> {
    let (compaction, snapshots) = {
        let mut state = inner.lock_state();
        let Some(compaction) = pick(&state) else {
            return Ok(());
        };
        state.compacting.insert(compaction.keyspace);
        let mut snapshots = inner.snapshots.all();
        snapshots.sort_unstable();
        (compaction, snapshots)
    };
    let result = run(inner, &compaction, &snapshots);
    let mut state = inner.lock_state();
    state.compacting.remove(&compaction.keyspace);
    let outputs = match result {
        Ok(outputs) => outputs,
        Err(_)
            if inner
                .shutting_down
                .load(std::sync::atomic::Ordering::Acquire) =>
        {
            // Stopped by close: nothing was recorded, the inputs stay, the partial outputs are
            // deleted as unreferenced at the next open.
            return Ok(());
        }
        Err(error) => {
            // Partial outputs stay in pending_outputs: the error is sticky, and the next open
            // deletes them as unreferenced.
            drop(state);
            inner.set_background_error(format!(
                "compaction of keyspace {} failed: {error}",
                compaction.keyspace
            ));
            return Err(error);
        }
    };
    let mut edit = VersionEdit::default();
    for file in &compaction.level0 {
        edit.delete_file(compaction.keyspace, 0, file.number);
    }
    for file in &compaction.level1 {
        edit.delete_file(compaction.keyspace, 1, file.number);
    }
    for output in &outputs {
        edit.add_file(compaction.keyspace, 1, output.clone());
    }
    let applied = if state.keyspaces.contains_key(&compaction.keyspace) {
        {
            let allocated = inner
                .last_allocated_seqno
                .load(std::sync::atomic::Ordering::Acquire);
            let last = allocated.max(state.versions.last_sequence());
            state.versions.set_last_sequence(last);
            state.versions.log_and_apply(edit)
        }
    } else {
        Ok(()) // dropped meanwhile: the outputs are simply obsolete
    };
    for output in &outputs {
        state.pending_outputs.remove(&output.number);
    }
    if let Err(error) = applied {
        drop(state);
        inner.set_background_error(format!(
            "recording a compaction in the MANIFEST failed: {error}"
        ));
        return Err(error);
    }
    let version = state.versions.current();
    if let Some(keyspace) = state.keyspaces.get_mut(&compaction.keyspace) {
        keyspace.install_super_version(version);
    }
    state.compactions_done += 1;
    // Its Version no longer keeps the inputs: delete them now.
    drop(compaction);
    crate::flush::delete_obsolete_files(inner, &mut state);
    inner.state_changed.notify_all();
    Ok(())
}

/// The stripe of `seqno`: how many live snapshots are older than it.
fn stripe(snapshots: &[SeqNo], seqno: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seqno)
}

/// Output tables being written.
struct Outputs<'a> {
    inner: &'a DbInner,
    compaction: &'a Compaction,
    /// Tombstones to carry, sorted by start.
    tombstones: Vec<RangeTombstone>,
    current: Option<(TableWriter, u64, Vec<u8>)>,
    finished: Vec<FileMetaData>,
}

impl Outputs<'_> {
    fn add(&mut self, key: &[u8], value: &[u8], user_key: &[u8], new_user_key: bool) -> Result<()> {
        let full = self.current.as_ref().is_some_and(|(writer, _, _)| {
            writer.estimated_file_size() >= self.compaction.options.target_file_size
        });
        if full && new_user_key {
            self.finish_current(Some(user_key))?;
        }
        if self.current.is_none() {
            self.open(user_key)?;
        }
        if let Some((writer, _, _)) = &mut self.current {
            writer.add(key, value)?;
        }
        Ok(())
    }

    fn open(&mut self, first_user_key: &[u8]) -> Result<()> {
        let number = {
            let mut state = self.inner.lock_state();
            let number = state.versions.new_file_number();
            state.pending_outputs.insert(number);
            number
        };
        let path = table_file_name(&self.inner.dir, number);
        let writer = TableWriter::create(
            &*self.inner.fs,
            &path,
            writer_options(&self.inner.options.comparator, &self.compaction.options),
        )?;
        // The first output also takes tombstones that start before its first key.
        let lower = if self.finished.is_empty() {
            Vec::new()
        } else {
            first_user_key.to_vec()
        };
        self.current = Some((writer, number, lower));
        Ok(())
    }

    /// Finishes the current output; `next_first` is the first user key of the next one.
    fn finish_current(&mut self, next_first: Option<&[u8]>) -> Result<()> {
        let Some((mut writer, number, lower)) = self.current.take() else {
            return Ok(());
        };
        let cmp = self.inner.user_comparator().clone();
        let is_first = self.finished.is_empty();
        for t in &self.tombstones {
            let start = if is_first || cmp.compare(&t.start, &lower).is_ge() {
                t.start.as_slice()
            } else {
                lower.as_slice()
            };
            let end = match next_first {
                Some(next) if cmp.compare(&t.end, next).is_gt() => next,
                _ => t.end.as_slice(),
            };
            if cmp.compare(start, end).is_lt() {
                writer.add_range_deletion(start, end, t.seqno)?;
            }
        }
        let (size, props) = writer.finish()?;
        self.finished.push(file_meta(number, size, &props)?);
        Ok(())
    }
}

/// Merges the inputs into new L1 tables (written and synced, not yet recorded).
fn run(inner: &DbInner, compaction: &Compaction, snapshots: &[SeqNo]) -> Result<Vec<FileMetaData>> {
    let cmp = inner.user_comparator().clone();
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut tombstones = Vec::new();
    for file in compaction.level0.iter().chain(&compaction.level1) {
        let table = inner
            .table_cache
            .get(file.number, compaction.options.prefix_extractor.as_ref())?;
        tombstones.extend_from_slice(table.range_tombstones());
        children.push(Box::new(table.iter(TableReadOptions {
            skip_cache_fill: true,
            ..TableReadOptions::default()
        })));
    }
    // Tombstones every snapshot sees are applied at the bottom and not carried.
    let (applied, carried): (Vec<RangeTombstone>, Vec<RangeTombstone>) = tombstones
        .into_iter()
        .partition(|t| compaction.bottommost && stripe(snapshots, t.seqno) == 0);
    let mut carried = carried;
    carried.sort_by(|a, b| cmp.compare(&a.start, &b.start));
    let covered_by_applied = |user_key: &[u8], seqno: SeqNo| {
        applied.iter().any(|t| {
            t.seqno > seqno
                && cmp.compare(&t.start, user_key).is_le()
                && cmp.compare(user_key, &t.end).is_lt()
        })
    };
    let mut merged = MergingIter::new(inner.comparator.clone(), children);
    let mut outputs = Outputs {
        inner,
        compaction,
        tombstones: carried,
        current: None,
        finished: Vec::new(),
    };
    let mut current_user_key: Option<Vec<u8>> = None;
    let mut last_stripe = usize::MAX;
    merged.seek_to_first();
    while merged.valid() {
        if inner
            .shutting_down
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(Error::Background {
                reason: "compaction stopped by shutdown".into(),
            });
        }
        let key = ParsedInternalKey::parse(merged.key()).map_err(|e| Error::Corruption {
            file: inner.dir.clone(),
            offset: 0,
            detail: format!("compaction input holds a bad internal key: {e}"),
        })?;
        let new_user_key = current_user_key
            .as_deref()
            .is_none_or(|k| cmp.compare(k, key.user_key).is_ne());
        if new_user_key {
            current_user_key = Some(key.user_key.to_vec());
            last_stripe = usize::MAX;
        }
        let entry_stripe = stripe(snapshots, key.seqno);
        let shadowed = entry_stripe == last_stripe;
        last_stripe = entry_stripe;
        let dropped_deletion =
            key.kind == ValueKind::Deletion && compaction.bottommost && entry_stripe == 0;
        let drop = shadowed || dropped_deletion || covered_by_applied(key.user_key, key.seqno);
        if !drop {
            outputs.add(merged.key(), merged.value(), key.user_key, new_user_key)?;
        }
        merged.next();
    }
    merged.status()?;
    if outputs.current.is_none() && !outputs.tombstones.is_empty() {
        let first = outputs.tombstones[0].start.clone();
        outputs.open(&first)?;
    }
    outputs.finish_current(None)?;
    inner.fs.sync_dir(&inner.dir)?;
    Ok(outputs.finished)
}
