//! `shale tool property DIR NAME`: one named statistic, like `ldb get_property` of `RocksDB`
//! (`rocksdb.num-files-at-level0` is `shale.num-files-at-level0` here).
//!
//! Two kinds: the shape of the tree (from the current Version: files, bytes, keys per level
//! of the keyspace), true whenever it is read; and the process counters of `Db::stats()`
//! (flushes, compactions, stalls), which count what *this* process did since it opened the
//! database, so they are zero in a fresh `shale tool property` run and useful in `shale tool
//! shell` after some work.

use clap::Args;
use serde_json::json;
use shale_engine::DbStats;

use super::say;
use crate::output::{print_json, Failure};
use crate::tool_db::{DbArgs, Target};

/// Flags of `shale tool property`.
#[derive(Debug, Args)]
pub struct PropertyArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The property, e.g. `shale.num-files-at-level0` (the `shale.` prefix may be left out).
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// List every property with its value.
    #[arg(long)]
    pub list: bool,
}

/// Reads one counter of [`DbStats`].
type Counter = fn(&DbStats) -> u64;

/// The process counters, by property name.
const COUNTERS: &[(&str, Counter)] = &[
    ("flushes", |s| s.flushes),
    ("flush-bytes-written", |s| s.flush_bytes_written),
    ("wal-bytes-written", |s| s.wal_bytes_written),
    ("compactions", |s| s.compactions),
    ("trivial-moves", |s| s.trivial_moves),
    ("manual-compactions", |s| s.manual_compactions),
    ("compaction-bytes-read", |s| s.compaction_bytes_read),
    ("compaction-bytes-written", |s| s.compaction_bytes_written),
    ("blob-bytes-written", |s| s.blob_bytes_written),
    ("stall-micros", |s| s.stall_micros),
    ("stall-level0-slowdowns", |s| s.stall_level0_slowdowns),
    ("stall-level0-stops", |s| s.stall_level0_stops),
    ("stall-memtable-stops", |s| s.stall_memtable_stops),
    ("compaction-read-errors", |s| s.compaction_read_errors),
    ("damaged-tables", |s| s.damaged_tables),
    ("background-job-panics", |s| s.background_job_panics),
];

/// Every property of the keyspace `opened` works on, name and value, in a fixed order.
fn properties(opened: &Target<'_>) -> Result<Vec<(String, String)>, Failure> {
    let db = &opened.db;
    let files = db.level_file_counts(&opened.keyspace)?;
    let bytes = db.level_bytes(&opened.keyspace)?;
    let version = db.current_version();
    let id = opened.keyspace.id();
    let (mut entries, mut deletions) = (0u64, 0u64);
    for level in 0..version.num_levels() {
        for file in version.files(id, level) {
            entries += file.num_entries;
            deletions += file.num_deletions;
        }
    }
    let mut out = vec![
        (
            "shale.num-keyspaces".to_owned(),
            db.keyspace_names().len().to_string(),
        ),
        (
            "shale.latest-sequence-number".to_owned(),
            db.latest_seqno().to_string(),
        ),
        (
            "shale.num-files".to_owned(),
            files.iter().sum::<usize>().to_string(),
        ),
        (
            "shale.total-sst-files-size".to_owned(),
            bytes.iter().sum::<u64>().to_string(),
        ),
        // Entries minus deletions of the tables: overwritten keys count once per table.
        (
            "shale.estimate-num-keys".to_owned(),
            entries.saturating_sub(deletions).to_string(),
        ),
    ];
    for (level, count) in files.iter().enumerate() {
        out.push((
            format!("shale.num-files-at-level{level}"),
            count.to_string(),
        ));
    }
    for (level, size) in bytes.iter().enumerate() {
        out.push((format!("shale.bytes-at-level{level}"), size.to_string()));
    }
    let stats = db.stats();
    for (name, get) in COUNTERS {
        out.push((format!("shale.{name}"), get(&stats).to_string()));
    }
    out.push(("shale.stats".to_owned(), stats.to_string()));
    Ok(out)
}

pub(super) fn run(opened: &Target<'_>, args: &PropertyArgs) -> Result<(), Failure> {
    let all = properties(opened)?;
    if args.list {
        if args.db.json {
            let map: serde_json::Map<_, _> = all.into_iter().map(|(k, v)| (k, json!(v))).collect();
            return print_json(&serde_json::Value::Object(map));
        }
        for (name, value) in all {
            say(format!("{name}: {value}"))?;
        }
        return Ok(());
    }
    let asked = args.name.as_deref().unwrap_or_default();
    let name = if asked.starts_with("shale.") {
        asked.to_owned()
    } else {
        format!("shale.{asked}")
    };
    let Some((_, value)) = all.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Failure::error(format!(
            "no property {asked:?}; there are: {}",
            names.join(", ")
        )));
    };
    if args.db.json {
        return print_json(&json!({ "keyspace": args.db.keyspace, "name": name, "value": value }));
    }
    say(value)?;
    Ok(())
}
