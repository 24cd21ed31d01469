//! `compact`, `flush`, `keyspace`, `count`, `approx-size`, `delete-range` and `batch-put`.

use std::time::Instant;

use clap::{Args, Subcommand};
use serde_json::json;
use shale_engine::{KeyspaceOptions, ReadOptions, WriteBatch, WriteOptions};

use super::say;
use crate::output::{print_json, Failure, Render};
use crate::tool_db::{DbArgs, Target};

/// A key range: `--from` (inclusive) and `--to` (exclusive), each optional.
#[derive(Debug, Args)]
pub struct RangeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// First key of the range (inclusive; default: the first key).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// Key the range stops before (exclusive; default: past the last key).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
}

/// The bounds `--from` and `--to` give, parsed as the keys of `db`'s `--hex` say.
fn bounds(db: &DbArgs, from: Option<&str>, to: Option<&str>) -> Result<Bounds, Failure> {
    let render = Render { hex: db.hex };
    let lower = from.map(|t| render.parse_key(t, "--from")).transpose()?;
    let upper = to.map(|t| render.parse_key(t, "--to")).transpose()?;
    if let (Some(lower), Some(upper)) = (&lower, &upper) {
        if lower > upper {
            return Err(Failure::error(format!(
                "--from {} is after --to {}: the range is empty",
                render.bytes(lower),
                render.bytes(upper)
            )));
        }
    }
    Ok(Bounds { lower, upper })
}

struct Bounds {
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

impl Bounds {
    fn describe(&self, render: Render) -> String {
        let side = |b: &Option<Vec<u8>>, open: &str| {
            b.as_deref().map_or(open.to_owned(), |k| render.bytes(k))
        };
        format!(
            "[{}, {})",
            side(&self.lower, "first"),
            side(&self.upper, "end")
        )
    }
}

/// Flags of `shale tool compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// First key to compact (inclusive; default: the first key).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// Key to compact up to (exclusive; default: past the last key).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
}

pub(super) fn compact(opened: &Target<'_>, args: &CompactArgs) -> Result<(), Failure> {
    let bounds = bounds(&args.db, args.from.as_deref(), args.to.as_deref())?;
    let render = Render { hex: args.db.hex };
    let db = &opened.db;
    let before = db.level_file_counts(&opened.keyspace)?;
    let bytes_before: u64 = db.level_bytes(&opened.keyspace)?.iter().sum();
    let started = Instant::now();
    db.compact_range(
        &opened.keyspace,
        bounds.lower.as_deref(),
        bounds.upper.as_deref(),
    )?;
    let after = db.level_file_counts(&opened.keyspace)?;
    let bytes_after: u64 = db.level_bytes(&opened.keyspace)?.iter().sum();
    let seconds = started.elapsed().as_secs_f64();
    if args.db.json {
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "range": bounds.describe(render),
            "files_per_level_before": before,
            "files_per_level_after": after,
            "bytes_before": bytes_before,
            "bytes_after": bytes_after,
            "seconds": seconds,
        }));
    }
    say(format!(
        "compacted keyspace {:?} {} in {seconds:.2} s: files per level {before:?} -> \
         {after:?}, {bytes_before} -> {bytes_after} bytes",
        args.db.keyspace,
        bounds.describe(render)
    ))?;
    Ok(())
}

/// Flags of `shale tool flush`.
#[derive(Debug, Args)]
pub struct FlushArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

pub(super) fn flush(opened: &Target<'_>, args: &FlushArgs) -> Result<(), Failure> {
    let db = &opened.db;
    let before = db.current_version().total_files();
    db.flush()?;
    let after = db.current_version().total_files();
    if args.db.json {
        return print_json(&json!({"tables_before": before, "tables_after": after}));
    }
    say(format!(
        "flushed every keyspace's memtable: {before} -> {after} table files"
    ))?;
    Ok(())
}

/// Flags of `shale tool keyspace`.
#[derive(Debug, Args)]
pub struct KeyspaceArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(subcommand)]
    pub action: KeyspaceAction,
}

/// What `shale tool keyspace` does.
#[derive(Debug, Clone, Subcommand)]
pub enum KeyspaceAction {
    /// List the keyspaces.
    List,
    /// Create a keyspace (default options).
    Create {
        /// Its name.
        name: String,
    },
    /// Drop a keyspace and all its data (the default keyspace cannot be dropped).
    Drop {
        /// Its name.
        name: String,
    },
}

pub(super) fn keyspace(opened: &Target<'_>, args: &KeyspaceArgs) -> Result<(), Failure> {
    let db = &opened.db;
    match &args.action {
        KeyspaceAction::List => {
            let names = db.keyspace_names();
            if args.db.json {
                return print_json(&json!({ "keyspaces": names }));
            }
            for name in names {
                say(name)?;
            }
        }
        KeyspaceAction::Create { name } => {
            if db.keyspace(name).is_some() {
                return Err(Failure::error(format!("keyspace {name:?} already exists")));
            }
            let created = db.create_keyspace(name, KeyspaceOptions::default())?;
            if args.db.json {
                return print_json(&json!({"created": name, "id": created.id()}));
            }
            say(format!("created keyspace {name:?} (id {})", created.id()))?;
        }
        KeyspaceAction::Drop { name } => {
            if db.keyspace(name).is_none() {
                return Err(Failure::error(format!(
                    "no keyspace {name:?}; there are: {}",
                    db.keyspace_names().join(", ")
                )));
            }
            db.drop_keyspace(name)?;
            if args.db.json {
                return print_json(&json!({ "dropped": name }));
            }
            say(format!("dropped keyspace {name:?}"))?;
        }
    }
    Ok(())
}

pub(super) fn count(opened: &Target<'_>, args: &RangeArgs) -> Result<(), Failure> {
    let bounds = bounds(&args.db, args.from.as_deref(), args.to.as_deref())?;
    let mut iter = opened.keyspace.iterator(ReadOptions {
        lower_bound: bounds.lower.clone(),
        upper_bound: bounds.upper.clone(),
        skip_cache_fill: true,
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    let mut keys = 0u64;
    while iter.valid() {
        keys += 1;
        iter.next();
    }
    iter.status()?;
    if args.db.json {
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "range": bounds.describe(Render { hex: args.db.hex }),
            "keys": keys,
        }));
    }
    say(keys)?;
    Ok(())
}

pub(super) fn approx_size(opened: &Target<'_>, args: &RangeArgs) -> Result<(), Failure> {
    let bounds = bounds(&args.db, args.from.as_deref(), args.to.as_deref())?;
    let bytes = opened.db.approximate_size(
        &opened.keyspace,
        bounds.lower.as_deref(),
        bounds.upper.as_deref(),
    )?;
    if args.db.json {
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "range": bounds.describe(Render { hex: args.db.hex }),
            "bytes": bytes,
        }));
    }
    say(bytes)?;
    Ok(())
}

/// Flags of `shale tool delete-range`.
#[derive(Debug, Args)]
pub struct DeleteRangeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// First key deleted (inclusive).
    pub from: String,
    /// Key the deletion stops before (exclusive).
    pub to: String,
}

pub(super) fn delete_range(opened: &Target<'_>, args: &DeleteRangeArgs) -> Result<(), Failure> {
    let bounds = bounds(&args.db, Some(&args.from), Some(&args.to))?;
    let (Some(lower), Some(upper)) = (&bounds.lower, &bounds.upper) else {
        return Err(Failure::error("delete-range needs FROM and TO"));
    };
    opened.keyspace.delete_range(lower, upper)?;
    let seqno = opened.keyspace.latest_seqno();
    let range = bounds.describe(Render { hex: args.db.hex });
    if args.db.json {
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "deleted_range": range,
            "seqno": seqno,
        }));
    }
    say(format!(
        "deleted {range} in keyspace {:?} at seqno {seqno}",
        args.db.keyspace
    ))?;
    Ok(())
}

/// Flags of `shale tool batch-put`.
#[derive(Debug, Args)]
pub struct BatchPutArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// KEY VALUE pairs, written in one batch (all or none).
    #[arg(required = true, value_name = "KEY VALUE")]
    pub pairs: Vec<String>,
}

pub(super) fn batch_put(opened: &Target<'_>, args: &BatchPutArgs) -> Result<(), Failure> {
    if !args.pairs.len().is_multiple_of(2) {
        return Err(Failure::error(format!(
            "batch-put takes KEY VALUE pairs; {} arguments leave {:?} without a value",
            args.pairs.len(),
            args.pairs.last().map_or("", String::as_str)
        )));
    }
    let render = Render { hex: args.db.hex };
    let mut batch = WriteBatch::new();
    for (i, pair) in args.pairs.chunks(2).enumerate() {
        let key = render.parse_key(&pair[0], &format!("KEY {}", i + 1))?;
        let value = render.parse_key(&pair[1], &format!("VALUE {}", i + 1))?;
        batch.put(opened.keyspace.id(), &key, &value)?;
    }
    let puts = args.pairs.len() / 2;
    opened.db.write(batch, &WriteOptions::default())?;
    let seqno = opened.keyspace.latest_seqno();
    if args.db.json {
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "puts": puts,
            "seqno": seqno,
        }));
    }
    say(format!(
        "put {puts} keys in keyspace {:?} in one batch, last seqno {seqno}",
        args.db.keyspace
    ))?;
    Ok(())
}
