//! The newest sequence number of a user key: what transactions compare with their snapshot
//! to tell whether a key changed after it (docs/transactions.md, "Conflicts").
//!
//! Unlike a read, this looks at every committed version, deletions and covering range
//! tombstones included, and returns only the seqno. A key never written returns 0.

use std::sync::Arc;

use shale_sst::SeqNo;

use crate::db::DbInner;
use crate::error::Result;
use crate::read::covering;

/// The largest seqno of any visible write (put, delete or covering range deletion) to `key`
/// in `keyspace`.
pub(crate) fn newest_seqno(inner: &Arc<DbInner>, keyspace: u32, key: &[u8]) -> Result<SeqNo> {
    inner.check_open()?;
    let view = inner.super_version(keyspace)?;
    let now = inner.visible_seqno();
    let cmp = inner.user_comparator().as_ref();
    // Sources are searched newest first; the first point entry found is the newest one, and
    // a tombstone in a newer source than that entry is newer than it.
    let mut tombstone = 0;
    for mem in std::iter::once(&view.mem).chain(&view.imm) {
        tombstone = tombstone.max(mem.covering_tombstone_seqno(key, now));
        if let Some((_, seqno, _)) = mem.get(key, now) {
            return Ok(seqno.max(tombstone));
        }
    }
    let version = &view.version;
    let extractor = view.prefix_extractor.clone();
    for level in 0..version.num_levels() {
        let files = version.files(keyspace, level);
        // Below L0 files are sorted and disjoint: only the first whose largest key is not
        // below `key` can hold it (as in `read::get_from`).
        let from = if level == 0 {
            0
        } else {
            files.partition_point(|f| match cmp.compare(f.largest.user_key(), key) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => f.largest_is_exclusive(),
                std::cmp::Ordering::Greater => false,
            })
        };
        let to = if level == 0 {
            files.len()
        } else {
            (from + 1).min(files.len())
        };
        for file in &files[from..to] {
            if cmp.compare(file.smallest.user_key(), key).is_gt()
                || cmp.compare(key, file.largest.user_key()).is_gt()
            {
                continue;
            }
            let table =
                inner
                    .table_cache
                    .get(file.number, file.global_seqno, extractor.as_ref())?;
            tombstone = tombstone.max(covering(cmp, table.range_tombstones(), key, now));
            if let Some(found) = table.get(key, now)? {
                return Ok(found.seqno.max(tombstone));
            }
        }
    }
    Ok(tombstone)
}
