//! Approximate bytes of a key range ([`Db::approximate_size`]), like `RocksDB`'s
//! `GetApproximateSizes` over table files: for each table of the keyspace whose keys overlap
//! the range, the distance between the data-block offsets of the two bounds in its index
//! (`shale_sst::Table::approximate_offset_of`). Memtables, blob files and WALs are not
//! counted: it answers "how much table data lies in this range", which is what a DBA sizing
//! a compaction or a dump wants, and it reads index blocks only.

use std::cmp::Ordering;

use crate::db::Db;
use crate::error::Result;
use crate::keyspace::Keyspace;

impl Db {
    /// About how many bytes of table data hold keys of `keyspace` in `[start, end)` (`None`:
    /// unbounded on that side). See the module docs for what is counted.
    pub fn approximate_size(
        &self,
        keyspace: &Keyspace,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<u64> {
        self.inner.check_open()?;
        let (version, extractor) = {
            let state = self.inner.lock_state();
            let extractor = state
                .keyspaces
                .get(&keyspace.id())
                .and_then(|k| k.options.prefix_extractor.clone());
            (state.versions.current(), extractor)
        };
        let ucmp = &self.inner.options.comparator;
        let mut total = 0u64;
        for level in 0..version.num_levels() {
            for file in version.files(keyspace.id(), level) {
                let (smallest, largest) = (file.smallest.user_key(), file.largest.user_key());
                if end.is_some_and(|e| ucmp.compare(smallest, e) != Ordering::Less)
                    || start.is_some_and(|s| ucmp.compare(largest, s) == Ordering::Less)
                {
                    continue;
                }
                let table = self.inner.table_cache.get(
                    file.number,
                    file.global_seqno,
                    extractor.as_ref(),
                )?;
                let from = match start {
                    Some(s) if ucmp.compare(s, smallest) == Ordering::Greater => {
                        table.approximate_offset_of(s)?
                    }
                    _ => 0,
                };
                let to = match end {
                    Some(e) if ucmp.compare(e, largest) != Ordering::Greater => {
                        table.approximate_offset_of(e)?
                    }
                    _ => file.size,
                };
                total += to.saturating_sub(from);
            }
        }
        Ok(total)
    }
}
