//! [`VersionBuilder`]: applies version edits to a base [`Version`] and checks the result
//! (docs/format/manifest.md, "Applying an edit").
//!
//! The builder keeps only deltas against its base: the numbers removed from it, the files
//! added, the keyspaces dropped. Whether a number is live is answered by the deltas and the
//! base's [`FileIndex`] (kept by the version set), so `log_and_apply` costs O(files in the
//! levels the edit touches), not O(files in the database). Recovery applies every MANIFEST
//! record to one builder with an empty base and builds once, in O(files + edits).
//!
//! Level order and overlap are checked in [`VersionBuilder::build`]: a changed level is the
//! base level minus removed files, merged with the added files (sorted); only the neighbours of
//! added files are compared, because the base level was checked when it was built (removing
//! files cannot make a level overlap). An overlap names the record (`origin`) that added the
//! later of the two files.
//!
//! Invariants:
//! 1. The live files are: base files (from `base_index`) not in `removed` and not of a
//!    `dropped` keyspace, plus `added`. Each number is live at most once.
//! 2. A level whose `dirty` flag is clear is exactly its base level.
//! 3. `apply` either applies a whole edit or returns an error; after an error the builder is
//!    discarded (callers never build from it).
//! 4. A built version keeps a WAL's recorded end only while the WAL is at or above some
//!    keyspace's log number (below every one it is never read again).
//! 5. A damage mark names a live table: an edit may only mark a live table, and the mark of a
//!    table leaves with it (an edit that deletes the table or drops its keyspace).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use shale_sst::{Comparator, InternalKeyComparator};

use super::edit::{DamagedFile, VersionEdit};
use super::levels::{FileMetaData, KeyspaceFiles, Level, Version};
use crate::blob::BlobFileMeta;

/// Where a live file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Location {
    pub keyspace: u32,
    pub level: usize,
}

/// Every live file of a version by number.
pub(crate) type FileIndex = HashMap<u64, Location>;

/// The index of `version`, built by walking it.
pub(crate) fn index_of(version: &Version) -> FileIndex {
    version
        .all_files()
        .map(|(keyspace, level, f)| (f.number, Location { keyspace, level }))
        .collect()
}

/// Why an edit cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BuildError {
    pub detail: String,
    /// The origin (MANIFEST record offset) of the edit that broke the rule.
    pub origin: u64,
    /// A file at a level the builder does not have: the database has more levels than it is
    /// opened with (a configuration error rather than damage).
    pub too_few_levels: bool,
}

impl BuildError {
    fn new(origin: u64, detail: String) -> Self {
        BuildError {
            detail,
            origin,
            too_few_levels: false,
        }
    }
}

type Built<T> = std::result::Result<T, BuildError>;

/// A built version and how its file index differs from the base's.
#[derive(Debug)]
pub(crate) struct BuildOutput {
    pub version: Version,
    removed: HashSet<u64>,
    added: Vec<(u64, Location)>,
    dropped: HashSet<u32>,
}

impl BuildOutput {
    /// Turns the base's index into the new version's.
    pub fn update_index(&self, index: &mut FileIndex) {
        for number in &self.removed {
            index.remove(number);
        }
        if !self.dropped.is_empty() {
            index.retain(|_, l| !self.dropped.contains(&l.keyspace));
        }
        index.extend(self.added.iter().copied());
        debug_assert_eq!(index.len(), self.version.total_files());
    }
}

struct KeyspaceBuild {
    name: String,
    log_number: u64,
    /// The base version's levels (empty ones for a keyspace added by an edit).
    base: Vec<Level>,
    dirty: Vec<bool>,
}

struct Added {
    location: Location,
    meta: Arc<FileMetaData>,
    origin: u64,
}

/// A file of a level being rebuilt, with the record that added it (`None`: the base).
type Slot = (Arc<FileMetaData>, Option<u64>);

/// Applies edits to a base version (see the module doc).
pub(crate) struct VersionBuilder<'a> {
    comparator: Arc<dyn Comparator>,
    icmp: InternalKeyComparator,
    num_levels: usize,
    keyspaces: BTreeMap<u32, KeyspaceBuild>,
    base_index: Option<&'a FileIndex>,
    removed: HashSet<u64>,
    /// The numbers in `removed`, by the base level they left (usually a handful a level).
    removed_by_level: HashMap<Location, Vec<u64>>,
    added: HashMap<u64, Added>,
    dropped: HashSet<u32>,
    wal_ends: BTreeMap<u64, u64>,
    wal_synced: BTreeMap<u64, u64>,
    wals_tracked: bool,
    /// The live blob files (a whole copy: a database has few, and edits touch few).
    blob_files: BTreeMap<u64, Arc<BlobFileMeta>>,
    /// Damage marks of live tables (invariant 5; a whole copy: a database has few).
    damaged_files: BTreeMap<u64, DamagedFile>,
}

impl<'a> VersionBuilder<'a> {
    /// A builder with no keyspaces and no files.
    pub fn new(comparator: Arc<dyn Comparator>, num_levels: usize) -> Self {
        VersionBuilder {
            icmp: InternalKeyComparator::new(comparator.clone()),
            comparator,
            num_levels,
            keyspaces: BTreeMap::new(),
            base_index: None,
            removed: HashSet::new(),
            removed_by_level: HashMap::new(),
            added: HashMap::new(),
            dropped: HashSet::new(),
            wal_ends: BTreeMap::new(),
            wal_synced: BTreeMap::new(),
            wals_tracked: false,
            blob_files: BTreeMap::new(),
            damaged_files: BTreeMap::new(),
        }
    }

    /// A builder starting from `base`, whose files `index` lists.
    pub fn from_version(base: &Version, index: &'a FileIndex) -> Self {
        let mut builder = Self::new(base.comparator().clone(), base.num_levels());
        builder.base_index = Some(index);
        builder.wal_ends = base.wal_ends().clone();
        builder.wal_synced = base.wal_synced_sizes().clone();
        builder.wals_tracked = base.wals_tracked();
        builder.blob_files = base.blob_files().clone();
        builder.damaged_files = base.damaged_files().clone();
        for (id, k) in base.keyspace_map() {
            builder.keyspaces.insert(
                *id,
                KeyspaceBuild {
                    name: k.name.clone(),
                    log_number: k.log_number,
                    base: k.levels.clone(),
                    dirty: vec![false; base.num_levels()],
                },
            );
        }
        builder
    }

    /// Where file `number` is live, if it is (invariant 1).
    fn lookup(&self, number: u64) -> Option<Location> {
        if let Some(added) = self.added.get(&number) {
            return Some(added.location);
        }
        if self.removed.contains(&number) {
            return None;
        }
        self.base_index?
            .get(&number)
            .filter(|l| !self.dropped.contains(&l.keyspace))
            .copied()
    }

    fn keyspace_mut(&mut self, id: u32, origin: u64, what: &str) -> Built<&mut KeyspaceBuild> {
        self.keyspaces
            .get_mut(&id)
            .ok_or_else(|| BuildError::new(origin, format!("{what}: keyspace {id} is not live")))
    }

    /// Applies `edit` (which came from `origin`) in the order of the format page. The
    /// counters are the caller's business.
    pub fn apply(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        self.add_keyspaces(edit, origin)?;
        self.delete_files(edit, origin)?;
        self.add_files(edit, origin)?;
        self.apply_blob_files(edit, origin)?;
        self.set_log_numbers(edit, origin)?;
        self.drop_keyspaces(edit, origin)?;
        // Step 6: a later WAL_END of a log replaces an earlier one (a PointInTime recovery
        // may cut a log shorter than an earlier open recorded).
        self.wal_ends.extend(edit.wal_ends.iter().copied());
        // A synced size only grows; a recorded end is exact and replaces it (a PointInTime
        // recovery may keep less than was synced, by the user's choice).
        for (log, size) in &edit.wal_synced {
            let synced = self.wal_synced.entry(*log).or_default();
            *synced = (*synced).max(*size);
        }
        for (log, _) in &edit.wal_ends {
            self.wal_synced.remove(log);
        }
        // Step 7: once set, WAL tracking stays on (a snapshot carries it on).
        self.wals_tracked |= edit.wals_tracked;
        self.mark_damaged(edit, origin)
    }

    /// Step 10 (invariant 5): marks live tables damaged, then forgets the marks of tables this
    /// edit took out of the version (deleted, or their keyspace dropped).
    fn mark_damaged(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        for mark in &edit.damaged_files {
            if self.lookup(mark.number).is_none() {
                return Err(BuildError::new(
                    origin,
                    format!(
                        "cannot mark table {:06} damaged: it is not a live table",
                        mark.number
                    ),
                ));
            }
            self.damaged_files.insert(mark.number, mark.clone());
        }
        if !self.damaged_files.is_empty()
            && (!edit.deleted_files.is_empty() || !edit.dropped_keyspaces.is_empty())
        {
            let marked: Vec<u64> = self.damaged_files.keys().copied().collect();
            for number in marked {
                if self.lookup(number).is_none() {
                    self.damaged_files.remove(&number);
                }
            }
        }
        Ok(())
    }

    fn add_keyspaces(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        for (id, name) in &edit.added_keyspaces {
            if self.keyspaces.contains_key(id) {
                return Err(BuildError::new(
                    origin,
                    format!("cannot add keyspace {id}: the id is live"),
                ));
            }
            if let Some((other, _)) = self.keyspaces.iter().find(|(_, k)| k.name == *name) {
                return Err(BuildError::new(
                    origin,
                    format!(
                        "cannot add keyspace {id} named {name:?}: keyspace {other} has that name"
                    ),
                ));
            }
            let empty: Level = Arc::new(Vec::new());
            self.keyspaces.insert(
                *id,
                KeyspaceBuild {
                    name: name.clone(),
                    log_number: 0,
                    base: vec![empty; self.num_levels],
                    dirty: vec![false; self.num_levels],
                },
            );
        }
        Ok(())
    }

    fn delete_files(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        for d in &edit.deleted_files {
            let level = d.level as usize;
            let wanted = Location {
                keyspace: d.keyspace,
                level,
            };
            match self.lookup(d.number) {
                Some(found) if found == wanted => {}
                Some(found) => {
                    return Err(BuildError::new(
                        origin,
                        format!(
                            "cannot delete file {:06} from keyspace {} L{}: it is in keyspace {} \
                             L{}",
                            d.number, d.keyspace, d.level, found.keyspace, found.level
                        ),
                    ))
                }
                None => {
                    return Err(BuildError::new(
                        origin,
                        format!(
                            "cannot delete file {:06} from keyspace {} L{}: it is not live",
                            d.number, d.keyspace, d.level
                        ),
                    ))
                }
            }
            if self.added.remove(&d.number).is_none() {
                self.removed.insert(d.number);
                self.removed_by_level
                    .entry(wanted)
                    .or_default()
                    .push(d.number);
            }
            self.keyspace_mut(d.keyspace, origin, "delete file")?.dirty[level] = true;
        }
        Ok(())
    }

    fn add_files(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        for n in &edit.new_files {
            let level = n.level as usize;
            let meta = &n.meta;
            let num_levels = self.num_levels;
            let what = format!("cannot add file {:06}", meta.number);
            if let Some(found) = self.lookup(meta.number) {
                return Err(BuildError::new(
                    origin,
                    format!(
                        "{what} to keyspace {} L{level}: the number is live in keyspace {} L{}",
                        n.keyspace, found.keyspace, found.level
                    ),
                ));
            }
            if self.blob_files.contains_key(&meta.number) {
                return Err(BuildError::new(
                    origin,
                    format!("{what}: the number is a live blob file"),
                ));
            }
            let keyspace = self.keyspace_mut(n.keyspace, origin, &what)?;
            if level >= num_levels {
                return Err(BuildError {
                    detail: format!(
                        "{what} at L{level}: the database is opened with {num_levels} levels \
                         (L0..L{}); open it with at least {} levels",
                        num_levels - 1,
                        level + 1
                    ),
                    origin,
                    too_few_levels: true,
                });
            }
            keyspace.dirty[level] = true;
            if self
                .icmp
                .compare(meta.smallest.encoded(), meta.largest.encoded())
                == Ordering::Greater
            {
                return Err(BuildError::new(
                    origin,
                    format!("{what}: its smallest key sorts after its largest ({meta})"),
                ));
            }
            if meta.smallest_seqno > meta.largest_seqno {
                return Err(BuildError::new(
                    origin,
                    format!("{what}: smallest seqno above largest seqno ({meta})"),
                ));
            }
            self.added.insert(
                meta.number,
                Added {
                    location: Location {
                        keyspace: n.keyspace,
                        level,
                    },
                    meta: Arc::new(meta.clone()),
                    origin,
                },
            );
        }
        Ok(())
    }

    /// Blob files added, then garbage added, then blob files deleted (docs/format/manifest.md,
    /// "Applying an edit"). Garbage never exceeds a file's total (blob/mod.rs invariant 2).
    fn apply_blob_files(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        for b in &edit.blob_file_additions {
            let what = format!("cannot add blob file {:06}", b.number);
            if self.blob_files.contains_key(&b.number) {
                return Err(BuildError::new(origin, format!("{what}: it is live")));
            }
            if let Some(found) = self.lookup(b.number) {
                return Err(BuildError::new(
                    origin,
                    format!(
                        "{what}: the number is a live table in keyspace {} L{}",
                        found.keyspace, found.level
                    ),
                ));
            }
            self.keyspace_mut(b.keyspace, origin, &what)?;
            self.blob_files.insert(b.number, Arc::new(b.clone()));
        }
        for &(number, count, bytes) in &edit.blob_file_garbage {
            let Some(meta) = self.blob_files.get_mut(&number) else {
                return Err(BuildError::new(
                    origin,
                    format!("cannot add garbage to blob file {number:06}: it is not live"),
                ));
            };
            let (garbage_count, garbage_bytes) = (
                meta.garbage_count.saturating_add(count),
                meta.garbage_bytes.saturating_add(bytes),
            );
            if garbage_count > meta.total_count || garbage_bytes > meta.total_bytes {
                return Err(BuildError::new(
                    origin,
                    format!(
                        "blob file {number:06} would hold more garbage ({garbage_count} records,                          {garbage_bytes} bytes) than records ({} records, {} bytes)",
                        meta.total_count, meta.total_bytes
                    ),
                ));
            }
            let meta = Arc::make_mut(meta);
            meta.garbage_count = garbage_count;
            meta.garbage_bytes = garbage_bytes;
        }
        for number in &edit.deleted_blob_files {
            if self.blob_files.remove(number).is_none() {
                return Err(BuildError::new(
                    origin,
                    format!("cannot delete blob file {number:06}: it is not live"),
                ));
            }
        }
        Ok(())
    }

    fn set_log_numbers(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        for (id, log_number) in &edit.log_numbers {
            let keyspace = self.keyspace_mut(*id, origin, "set log number")?;
            if *log_number < keyspace.log_number {
                return Err(BuildError::new(
                    origin,
                    format!(
                        "the log number of keyspace {id} cannot go back from {} to {log_number}",
                        keyspace.log_number
                    ),
                ));
            }
            keyspace.log_number = *log_number;
        }
        Ok(())
    }

    fn drop_keyspaces(&mut self, edit: &VersionEdit, origin: u64) -> Built<()> {
        for id in &edit.dropped_keyspaces {
            if *id == 0 {
                return Err(BuildError::new(
                    origin,
                    "the default keyspace (id 0) cannot be dropped".to_owned(),
                ));
            }
            if self.keyspaces.remove(id).is_none() {
                return Err(BuildError::new(
                    origin,
                    format!("cannot drop keyspace {id}: it is not live"),
                ));
            }
            self.added.retain(|_, a| a.location.keyspace != *id);
            self.blob_files.retain(|_, b| b.keyspace != *id);
            self.dropped.insert(*id);
        }
        Ok(())
    }

    /// Builds the version, checking the order and overlap of every level that changed.
    pub fn build(self) -> Built<BuildOutput> {
        let mut added_by_level: HashMap<Location, Vec<&Added>> = HashMap::new();
        for added in self.added.values() {
            added_by_level
                .entry(added.location)
                .or_default()
                .push(added);
        }
        let mut keyspaces = BTreeMap::new();
        for (id, k) in &self.keyspaces {
            let mut levels = Vec::with_capacity(self.num_levels);
            for level in 0..self.num_levels {
                if !k.dirty[level] {
                    levels.push(k.base[level].clone());
                    continue;
                }
                let location = Location {
                    keyspace: *id,
                    level,
                };
                let added = added_by_level.remove(&location).unwrap_or_default();
                levels.push(self.rebuild_level(location, &k.base[level], added)?);
            }
            keyspaces.insert(
                *id,
                KeyspaceFiles {
                    name: k.name.clone(),
                    log_number: k.log_number,
                    levels,
                },
            );
        }
        let added = self
            .added
            .iter()
            .map(|(number, a)| (*number, a.location))
            .collect();
        // A WAL below every keyspace's log number is never read again: forget its end.
        let min_log = keyspaces.values().map(|k| k.log_number).min().unwrap_or(0);
        let mut wal_ends = self.wal_ends;
        wal_ends.retain(|log, _| *log >= min_log);
        let mut wal_synced = self.wal_synced;
        wal_synced.retain(|log, _| *log >= min_log);
        Ok(BuildOutput {
            version: Version::new(
                self.comparator,
                self.num_levels,
                keyspaces,
                wal_ends,
                wal_synced,
                self.wals_tracked,
                self.blob_files,
                self.damaged_files,
            ),
            removed: self.removed,
            added,
            dropped: self.dropped,
        })
    }

    /// The base level minus removed files, with `added` in level order (module doc).
    fn rebuild_level(&self, at: Location, base: &Level, added: Vec<&Added>) -> Built<Level> {
        let gone = self
            .removed_by_level
            .get(&at)
            .map_or(&[][..], Vec::as_slice);
        let kept: Vec<&Arc<FileMetaData>> = if gone.len() > 16 {
            let gone: HashSet<u64> = gone.iter().copied().collect();
            base.iter().filter(|f| !gone.contains(&f.number)).collect()
        } else {
            base.iter().filter(|f| !gone.contains(&f.number)).collect()
        };
        let mut added: Vec<Slot> = added
            .into_iter()
            .map(|a| (a.meta.clone(), Some(a.origin)))
            .collect();
        if at.level == 0 {
            let mut files: Vec<Slot> = kept.into_iter().map(|f| (f.clone(), None)).collect();
            files.append(&mut added);
            files.sort_by(|(a, _), (b, _)| {
                (b.largest_seqno, b.number).cmp(&(a.largest_seqno, a.number))
            });
            return Ok(Arc::new(files.into_iter().map(|(f, _)| f).collect()));
        }
        let by_smallest = |a: &FileMetaData, b: &FileMetaData| {
            self.icmp
                .compare(a.smallest.encoded(), b.smallest.encoded())
                .then(a.number.cmp(&b.number))
        };
        added.sort_by(|a, b| by_smallest(&a.0, &b.0));
        // Each added file goes where a binary search of the kept (sorted) files puts it, so a
        // merge costs O(added * log(level)) comparisons.
        let mut files: Vec<Slot> = Vec::with_capacity(kept.len() + added.len());
        let mut next_kept = 0;
        for slot in added {
            let at = next_kept
                + kept[next_kept..].partition_point(|k| by_smallest(k, &slot.0) == Ordering::Less);
            files.extend(kept[next_kept..at].iter().map(|f| ((*f).clone(), None)));
            files.push(slot);
            next_kept = at;
        }
        files.extend(kept[next_kept..].iter().map(|f| ((*f).clone(), None)));
        for (i, (_, origin)) in files.iter().enumerate() {
            if origin.is_some() {
                if i > 0 {
                    self.check_neighbours(at, &files[i - 1], &files[i])?;
                }
                if let Some(next) = files.get(i + 1) {
                    self.check_neighbours(at, &files[i], next)?;
                }
            }
        }
        Ok(Arc::new(files.into_iter().map(|(f, _)| f).collect()))
    }

    /// Refuses neighbours `a` before `b` in a level below L0 that share user keys. `a` may
    /// end at `b`'s first user key only when its largest key is an exclusive range-deletion
    /// sentinel (see [`FileMetaData::largest_is_exclusive`]).
    fn check_neighbours(&self, at: Location, a: &Slot, b: &Slot) -> Built<()> {
        let apart = match self
            .comparator
            .compare(a.0.largest.user_key(), b.0.smallest.user_key())
        {
            Ordering::Less => true,
            Ordering::Equal => a.0.largest_is_exclusive(),
            Ordering::Greater => false,
        };
        if apart {
            return Ok(());
        }
        let (later, earlier) = if b.1.unwrap_or(0) >= a.1.unwrap_or(0) {
            (b, a)
        } else {
            (a, b)
        };
        Err(BuildError::new(
            later.1.unwrap_or(0),
            format!(
                "keyspace {} L{} would overlap: file {} and file {}",
                at.keyspace, at.level, later.0, earlier.0
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_cache::PinnedTable;
    use shale_sst::{BytewiseComparator, InternalKey, ValueKind};

    fn file(number: u64, smallest: &str, largest: &str, seqno: u64) -> FileMetaData {
        FileMetaData {
            number,
            size: 100,
            smallest: InternalKey::new(smallest.as_bytes(), seqno, ValueKind::Value),
            largest: InternalKey::new(largest.as_bytes(), seqno, ValueKind::Value),
            smallest_seqno: seqno,
            largest_seqno: seqno,
            num_entries: 1,
            num_deletions: 0,
            creation_time: None,
            oldest_entry_time: None,
            global_seqno: None,
            oldest_blob_file: None,
            pinned_table: PinnedTable::default(),
        }
    }

    fn base() -> VersionBuilder<'static> {
        let mut b = VersionBuilder::new(Arc::new(BytewiseComparator), 3);
        let mut edit = VersionEdit::new();
        edit.added_keyspaces.push((0, "default".into()));
        b.apply(&edit, 1).unwrap();
        b
    }

    fn numbers(v: &Version, level: usize) -> Vec<u64> {
        v.files(0, level).iter().map(|f| f.number).collect()
    }

    #[test]
    fn unchanged_levels_are_shared_and_the_index_follows() {
        let mut b = base();
        let mut edit = VersionEdit::new();
        edit.add_file(0, 1, file(5, "a", "b", 1));
        edit.add_file(0, 2, file(6, "a", "b", 1));
        b.apply(&edit, 2).unwrap();
        let v1 = b.build().unwrap().version;
        let mut index = index_of(&v1);
        let mut b = VersionBuilder::from_version(&v1, &index);
        let mut edit = VersionEdit::new();
        edit.add_file(0, 0, file(7, "c", "d", 2));
        edit.delete_file(0, 2, 6);
        b.apply(&edit, 3).unwrap();
        let out = b.build().unwrap();
        out.update_index(&mut index);
        let v2 = out.version;
        assert_eq!(index, index_of(&v2));
        let levels = |v: &Version| v.keyspace_map()[&0].levels.clone();
        assert!(Arc::ptr_eq(&levels(&v1)[1], &levels(&v2)[1]));
        assert!(!Arc::ptr_eq(&levels(&v1)[0], &levels(&v2)[0]));
        assert_eq!(numbers(&v2, 2), Vec::<u64>::new());
    }

    #[test]
    fn wal_ends_replace_and_are_forgotten_below_every_log_number() {
        let mut b = base();
        let mut edit = VersionEdit::new();
        edit.set_log_number(0, 4);
        edit.set_wal_end(4, 100);
        edit.set_wal_end(5, 200);
        b.apply(&edit, 2).unwrap();
        let mut edit = VersionEdit::new();
        edit.set_wal_end(5, 0);
        b.apply(&edit, 3).unwrap();
        let v1 = b.build().unwrap().version;
        assert_eq!((v1.wal_end(4), v1.wal_end(5)), (Some(100), Some(0)));
        let index = index_of(&v1);
        let mut b = VersionBuilder::from_version(&v1, &index);
        let mut edit = VersionEdit::new();
        edit.set_log_number(0, 5);
        b.apply(&edit, 4).unwrap();
        let v2 = b.build().unwrap().version;
        assert_eq!((v2.wal_end(4), v2.wal_end(5)), (None, Some(0)));
        assert!(v2.to_string().contains("wal 000005.wal ends at 0"), "{v2}");
    }

    #[test]
    fn overlap_names_the_later_record() {
        let mut b = base();
        let mut edit = VersionEdit::new();
        edit.add_file(0, 1, file(5, "a", "c", 1));
        b.apply(&edit, 100).unwrap();
        let mut edit = VersionEdit::new();
        edit.add_file(0, 1, file(6, "c", "d", 1));
        b.apply(&edit, 200).unwrap();
        let err = b.build().unwrap_err();
        assert_eq!(err.origin, 200);
        assert!(err.detail.contains("would overlap"), "{}", err.detail);
    }

    #[test]
    fn merging_into_a_base_level_checks_only_what_is_new() {
        let mut b = base();
        let mut edit = VersionEdit::new();
        for (i, k) in ["b", "d", "f", "h"].iter().enumerate() {
            edit.add_file(0, 1, file(10 + i as u64, k, k, 1));
        }
        b.apply(&edit, 1).unwrap();
        let v = b.build().unwrap().version;
        let index = index_of(&v);
        let rebuild = |edit: &VersionEdit| {
            let mut b = VersionBuilder::from_version(&v, &index);
            b.apply(edit, 2).and_then(|()| b.build()).map(|o| o.version)
        };
        let mut edit = VersionEdit::new();
        edit.add_file(0, 1, file(20, "a", "a", 1));
        edit.add_file(0, 1, file(21, "e", "e", 1));
        edit.add_file(0, 1, file(22, "z", "z", 1));
        edit.delete_file(0, 1, 12);
        edit.add_file(0, 1, file(23, "f", "g", 1));
        assert_eq!(
            numbers(&rebuild(&edit).unwrap(), 1),
            [20, 10, 11, 21, 23, 13, 22]
        );
        for (smallest, largest) in [("a", "b"), ("h", "i"), ("c", "d"), ("0", "z")] {
            let mut edit = VersionEdit::new();
            edit.add_file(0, 1, file(30, smallest, largest, 1));
            let err = rebuild(&edit).unwrap_err();
            assert!(
                err.detail.contains("000030"),
                "{smallest}..{largest}: {}",
                err.detail
            );
        }
    }

    #[test]
    fn moving_a_file_and_dropping_a_keyspace() {
        let mut b = base();
        let mut edit = VersionEdit::new();
        edit.added_keyspaces.push((1, "t".into()));
        edit.add_file(0, 0, file(5, "a", "c", 1));
        edit.add_file(1, 0, file(6, "a", "c", 1));
        b.apply(&edit, 1).unwrap();
        let v = b.build().unwrap().version;
        let mut index = index_of(&v);
        let mut b = VersionBuilder::from_version(&v, &index);
        let mut edit = VersionEdit::new();
        edit.delete_file(0, 0, 5);
        edit.add_file(0, 2, file(5, "a", "c", 1));
        edit.dropped_keyspaces.push(1);
        b.apply(&edit, 2).unwrap();
        // The dropped keyspace's file is no longer live to later edits.
        let mut again = VersionEdit::new();
        again.delete_file(1, 0, 6);
        assert!(b.apply(&again, 3).is_err());
        let out = b.build().unwrap();
        out.update_index(&mut index);
        assert_eq!(index, index_of(&out.version));
        assert_eq!(numbers(&out.version, 0), Vec::<u64>::new());
        assert_eq!(numbers(&out.version, 2), [5]);
        assert!(!out.version.has_keyspace(1));
    }
}
