//! Rows that describe the server and the engine: ENGINES, COLLATIONS, CHARACTER_SETS (what
//! Shale supports, fixed), SHALE_KEYSPACES (each keyspace's options now),
//! SHALE_COMPACTION_STATS (`Db::compaction_stats`, the table `shale bench` prints) and
//! SHALE_TABLE_FILES (the live table files, with their damage marks).

use shale_table::{Store, Value};

use super::text;
use crate::error::SqlError;

type Row = Vec<Value>;

pub(super) fn engines() -> Vec<Row> {
    vec![vec![
        text("Shale"),
        text("DEFAULT"),
        text("LSM-tree storage, MyRocks' data model"),
        text("YES"),
        text("NO"),
        text("YES"),
    ]]
}

/// The collations Shale compares and sorts by (shale-table's `Collation`): name,
/// character set, id, default of its character set.
pub(super) const COLLATIONS: [(&str, &str, u64, bool); 3] = [
    ("binary", "binary", 63, true),
    ("utf8mb4_bin", "utf8mb4", 46, false),
    ("utf8mb4_general_ci", "utf8mb4", 45, true),
];

pub(super) fn collations() -> Vec<Row> {
    COLLATIONS
        .iter()
        .map(|(name, charset, id, default)| {
            vec![
                text(name),
                text(charset),
                Value::UInt(*id),
                text(if *default { "Yes" } else { "" }),
                text("Yes"),
                Value::UInt(1),
                text(if *name == "binary" {
                    "NO PAD"
                } else {
                    "PAD SPACE"
                }),
            ]
        })
        .collect()
}

/// Character sets: name, default collation, description, bytes per character at most.
pub(super) const CHARACTER_SETS: [(&str, &str, &str, u64); 2] = [
    ("binary", "binary", "Binary pseudo charset", 1),
    ("utf8mb4", "utf8mb4_general_ci", "UTF-8 Unicode", 4),
];

pub(super) fn character_sets() -> Vec<Row> {
    CHARACTER_SETS
        .iter()
        .map(|(name, collation, description, maxlen)| {
            vec![
                text(name),
                text(collation),
                text(description),
                Value::UInt(*maxlen),
            ]
        })
        .collect()
}

pub(super) fn shale_keyspaces(store: &Store) -> Result<Vec<Row>, SqlError> {
    let db = store.engine().db();
    let mut out = Vec::new();
    for name in db.keyspace_names() {
        let Some(keyspace) = db.keyspace(&name) else {
            continue; // dropped since the names were read
        };
        let pairs = db
            .keyspace_option_pairs(&keyspace)
            .map_err(|e| SqlError::from(shale_table::Error::from(e)))?;
        for (option, value) in pairs {
            out.push(vec![
                Value::UInt(u64::from(keyspace.id())),
                text(&name),
                text(&option),
                text(&value),
            ]);
        }
    }
    Ok(out)
}

#[allow(clippy::cast_precision_loss)] // seconds for people
pub(super) fn shale_compaction_stats(store: &Store) -> Vec<Row> {
    let stats = store.engine().db().compaction_stats();
    let sum = stats.sum();
    let mut out = Vec::new();
    let rows = stats
        .levels
        .iter()
        .map(|l| (format!("L{}", l.level), l, l.io.write_amp()))
        .chain(std::iter::once((
            "Sum".to_string(),
            &sum,
            stats.write_amp(),
        )));
    for (name, l, write_amp) in rows {
        out.push(vec![
            text(&name),
            Value::UInt(l.files as u64),
            Value::UInt(l.size_bytes),
            Value::Double(l.score),
            Value::UInt(l.io.read_bytes()),
            Value::UInt(l.io.read_upper_bytes),
            Value::UInt(l.io.read_output_bytes),
            Value::UInt(l.io.written_bytes),
            Value::UInt(l.io.moved_bytes),
            Value::Double(write_amp),
            Value::Double(l.io.micros as f64 / 1e6),
            Value::UInt(l.io.jobs),
        ]);
    }
    out
}

/// `SHALE_TABLE_FILES`: every live table file of the current Version, by keyspace and level,
/// with the damage a compaction found in it (NULL when none; docs/reliability.md).
pub(super) fn shale_table_files(store: &Store) -> Vec<Row> {
    let db = store.engine().db();
    let damage: std::collections::BTreeMap<u64, String> = db.damaged_tables().into_iter().collect();
    let version = db.current_version();
    let names: std::collections::BTreeMap<u32, String> = version.keyspaces().into_iter().collect();
    version
        .all_files()
        .map(|(keyspace, level, file)| {
            vec![
                text(&format!("{:06}.sst", file.number)),
                Value::UInt(u64::from(keyspace)),
                text(names.get(&keyspace).map_or("", String::as_str)),
                Value::UInt(level as u64),
                Value::UInt(file.size),
                Value::UInt(file.num_entries),
                Value::UInt(file.num_deletions),
                Value::UInt(file.smallest_seqno),
                Value::UInt(file.largest_seqno),
                damage.get(&file.number).map_or(Value::Null, |d| text(d)),
            ]
        })
        .collect()
}
