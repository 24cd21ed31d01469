//! Where `shale bench`'s engine defaults differ from `db_bench`'s (`RocksDB` 7.8.3 as Debian's
//! rocksdb-tools ships it; `db_bench --help` lists its defaults), for the header every Shale
//! run prints and for `--like_db_bench`, which sets `db_bench`'s value wherever Shale has a
//! switch for it.
//!
//! The flags both tools take (sizes, codec, bloom bits, cache, open files, sync) are set from the same
//! command line, so only engine defaults that no flag names are listed here. The switchable
//! ones are read from the options the run opens with, so the header cannot drift from the code;
//! the rest are properties of Shale's design with no switch, stated so a reader knows which
//! way they lean.

use std::fmt::Write as _;
use std::time::Duration;

use shale_engine::Options;

/// `db_bench`'s `--hard_pending_compaction_bytes_limit` (128 GiB; `RocksDB`'s own default
/// is 256 GiB).
const DB_BENCH_HARD_PENDING_COMPACTION_BYTES: u64 = 128 << 30;
/// The longest WAL sync interval Shale accepts: with `--sync=0`, `db_bench` never syncs the WAL.
const LONGEST_SYNC_INTERVAL: Duration = Duration::from_secs(3600);

/// One default Shale has and `db_bench` does not.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// What the default is about.
    pub what: &'static str,
    /// Shale's value, as the run has it.
    pub shale: String,
    /// `db_bench`'s, with the flag that sets it.
    pub db_bench: &'static str,
}

/// Differences with no switch: how Shale is built.
const KEPT: [(&str, &str, &str); 3] = [
    (
        "level sizes",
        "dynamic, sized from the bottom level up (always)",
        "static from L1 (--level_compaction_dynamic_level_bytes=false)",
    ),
    (
        "index and filter blocks",
        "pinned by open tables, their memory charged to the block cache (less room for data \
         blocks)",
        "pinned outside the block cache (--cache_index_and_filter_blocks=false)",
    ),
    (
        "index blocks",
        "stored uncompressed, Shale's table format",
        "compressed (--enable_index_compression=true, --format_version=5)",
    ),
];

/// The switchable defaults of `options` that differ from `db_bench`'s.
pub fn switchable_differences(options: &Options) -> Vec<Difference> {
    let keyspace = &options.default_keyspace;
    let mut differences = Vec::new();
    let mut differ = |what, shale: String, db_bench| {
        differences.push(Difference {
            what,
            shale,
            db_bench,
        });
    };
    if keyspace.memtable_bloom_size_ratio > 0.0 {
        differ(
            "memtable bloom filter",
            format!(
                "ratio {} of the write buffer",
                keyspace.memtable_bloom_size_ratio
            ),
            "none (--memtable_bloom_size_ratio=0)",
        );
    }
    if let Some(after) = options.idle_compaction_after {
        differ(
            "idle compaction",
            format!(
                "after {} s without writes, flush and compact L0",
                after.as_secs()
            ),
            "none",
        );
    }
    if keyspace.tombstone_density_percent > 0 {
        differ(
            "tombstone-density compaction",
            format!(
                "files of at least {}% deletions (and {} of them)",
                keyspace.tombstone_density_percent, keyspace.tombstone_min_count
            ),
            "none (no deletion-triggered collector)",
        );
    }
    if keyspace.tombstone_scan_flush_trigger > 0 {
        differ(
            "memtable flush on tombstone scans",
            format!(
                "an iterator step skipping {} deletions",
                keyspace.tombstone_scan_flush_trigger
            ),
            "none",
        );
    }
    if keyspace.zstd_max_dict_bytes > 0 {
        differ(
            "zstd dictionary at the bottom level (with zstd)",
            format!("{} bytes", keyspace.zstd_max_dict_bytes),
            "none (--compression_max_dict_bytes=0)",
        );
    }
    if keyspace.hard_pending_compaction_bytes_limit != DB_BENCH_HARD_PENDING_COMPACTION_BYTES {
        differ(
            "hard pending-compaction limit",
            format!("{} bytes", keyspace.hard_pending_compaction_bytes_limit),
            "137438953472 bytes (--hard_pending_compaction_bytes_limit)",
        );
    }
    if options.sync_interval < LONGEST_SYNC_INTERVAL {
        differ(
            "WAL fsync with --sync=0",
            format!("about every {} ms", options.sync_interval.as_millis()),
            "never",
        );
    }
    differences
}

/// Sets `db_bench`'s value for every switchable difference (`--like_db_bench`).
pub fn apply_db_bench_defaults(options: &mut Options) {
    let keyspace = &mut options.default_keyspace;
    keyspace.memtable_bloom_size_ratio = 0.0;
    keyspace.tombstone_density_percent = 0;
    keyspace.tombstone_scan_flush_trigger = 0;
    keyspace.zstd_max_dict_bytes = 0;
    keyspace.hard_pending_compaction_bytes_limit = DB_BENCH_HARD_PENDING_COMPACTION_BYTES;
    options.idle_compaction_after = None;
    options.sync_interval = LONGEST_SYNC_INTERVAL;
}

/// The header's lines: the switchable differences of a run (Shale's defaults, or none left
/// with `--like_db_bench`) and the ones no flag changes.
pub fn header_lines(like_db_bench: bool) -> String {
    let defaults = switchable_differences(&Options::default());
    let mut text = String::new();
    if like_db_bench {
        let names: Vec<_> = defaults.iter().map(|d| d.what).collect();
        let _ = writeln!(
            text,
            "Like db_bench (--like_db_bench): {} as db_bench has them",
            names.join(", ")
        );
    } else {
        text.push_str("Not in db_bench (--like_db_bench sets db_bench's):\n");
        for d in &defaults {
            let _ = writeln!(text, "  {}: {} (db_bench: {})", d.what, d.shale, d.db_bench);
        }
    }
    text.push_str("Differs from db_bench, no switch:\n");
    for (what, shale, db_bench) in KEPT {
        let _ = writeln!(text, "  {what}: {shale} (db_bench: {db_bench})");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_db_bench_leaves_no_switchable_difference() {
        let defaults = switchable_differences(&Options::default());
        // Each switch named in the header, as of this version's defaults.
        let names: Vec<_> = defaults.iter().map(|d| d.what).collect();
        assert_eq!(names.len(), 7, "{names:?}");
        let mut options = Options::default();
        apply_db_bench_defaults(&mut options);
        assert_eq!(switchable_differences(&options), Vec::new());
        options.validate().unwrap();
        options.default_keyspace.validate().unwrap();
    }

    #[test]
    fn the_header_lists_every_difference_either_way() {
        let shale = header_lines(false);
        for d in switchable_differences(&Options::default()) {
            assert!(
                shale.contains(&format!("  {}: {}", d.what, d.shale)),
                "{shale}"
            );
        }
        let like = header_lines(true);
        assert!(
            like.starts_with(
                "Like db_bench (--like_db_bench): memtable bloom filter, idle compaction, "
            ),
            "{like}"
        );
        for text in [shale, like] {
            for (what, _, _) in KEPT {
                assert!(text.contains(what), "{text}");
            }
        }
    }
}
