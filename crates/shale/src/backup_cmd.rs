//! `shale backup create | list | verify | restore | purge`: incremental hot backups, like
//! `RocksDB`'s `BackupEngine` (docs/operations.md "Take and restore a backup", layout in
//! docs/format/backup.md).

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use shale_engine::{BackupEngine, BackupInfo, BackupOptions};
use shale_fs::OsFs;

use crate::output::{print_json, progress, utc_iso8601, Failure};
use crate::tool_checkpoint::open_view;

/// `shale backup`: one subcommand per action.
#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Take a backup of a database (tables shared with earlier backups are not copied again).
    Create(CreateArgs),
    /// List the backups in a backup directory.
    List(ListArgs),
    /// Re-read every file of a backup and check its size and checksum.
    Verify(VerifyArgs),
    /// Copy a backup into an empty directory, checking every file.
    Restore(RestoreArgs),
    /// Delete all but the newest N backups and the files only they used.
    Purge(PurgeArgs),
}

/// Flags of `shale backup create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The database directory.
    pub db: PathBuf,
    /// The backup directory (created if missing).
    pub backup_dir: PathBuf,
    /// Copy at most this many MB (10^6 bytes) per second; 0 is unlimited.
    #[arg(long, value_name = "MB", default_value_t = 0.0)]
    pub rate_limit_mb: f64,
    /// Store tables and WAL copies compressed: `zstd` or `zstd:LEVEL` (1 to 22; default 3),
    /// or `none`. Verify and restore decompress.
    #[arg(long, value_name = "CODEC", default_value = "none")]
    pub compress: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub recovery: crate::output::RecoveryArgs,
}

/// The zstd level `--compress` asks for (`None`: no compression).
fn parse_compress(text: &str) -> Result<Option<i32>, Failure> {
    let bad = || {
        Failure::error(format!(
            "--compress must be none, zstd or zstd:LEVEL with LEVEL 1 to 22, not {text:?}"
        ))
    };
    match text.split_once(':') {
        None if text == "none" => Ok(None),
        None if text == "zstd" => Ok(Some(shale_engine::DEFAULT_ZSTD_LEVEL)),
        Some(("zstd", level)) => match level.parse::<i32>() {
            Ok(level) if (1..=22).contains(&level) => Ok(Some(level)),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

/// Flags of `shale backup list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The backup directory.
    pub backup_dir: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `shale backup verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The backup directory.
    pub backup_dir: PathBuf,
    /// The backup to verify (default: every backup).
    #[arg(long)]
    pub id: Option<u32>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `shale backup restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup directory.
    pub backup_dir: PathBuf,
    /// The directory to restore into: new or empty.
    pub dest: PathBuf,
    /// The backup to restore (default: the newest).
    #[arg(long)]
    pub id: Option<u32>,
    /// Files copied at once.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `shale backup purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// The backup directory.
    pub backup_dir: PathBuf,
    /// How many of the newest backups to keep.
    #[arg(long, value_name = "N")]
    pub keep: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn engine(dir: &std::path::Path) -> Result<BackupEngine, Failure> {
    Ok(BackupEngine::open(Arc::new(OsFs::new()), dir)?)
}

fn existing_engine(dir: &std::path::Path) -> Result<BackupEngine, Failure> {
    if !dir.join("meta").is_dir() {
        return Err(Failure::error(format!(
            "{} is not a backup directory (it has no meta/)",
            dir.display()
        )));
    }
    engine(dir)
}

fn info_json(info: &BackupInfo) -> Value {
    json!({
        "id": info.id,
        "created": info.created,
        "created_utc": utc_iso8601(info.created),
        "seqno": info.seqno,
        "files": info.files.len(),
        "bytes": info.total_bytes(),
        "compressed_files": info
            .files
            .iter()
            .filter(|f| f.codec != shale_engine::BackupCodec::None)
            .count(),
    })
}

/// Runs `shale backup ...`.
pub fn run(command: &BackupCommand) -> Result<(), Failure> {
    match command {
        BackupCommand::Create(args) => create(args),
        BackupCommand::List(args) => list(args),
        BackupCommand::Verify(args) => verify(args),
        BackupCommand::Restore(args) => restore(args),
        BackupCommand::Purge(args) => purge(args),
    }
}

fn create(args: &CreateArgs) -> Result<(), Failure> {
    if !(args.rate_limit_mb >= 0.0 && args.rate_limit_mb.is_finite()) {
        return Err(Failure::error(format!(
            "--rate-limit-mb must be a number >= 0, not {}",
            args.rate_limit_mb
        )));
    }
    let zstd_level = parse_compress(&args.compress)?;
    // The database first: with the arguments swapped, nothing is written anywhere.
    let db = open_view(&args.db, args.recovery)?;
    let engine = match engine(&args.backup_dir) {
        Ok(engine) => engine,
        Err(e) => {
            let _ = db.close();
            return Err(e);
        }
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked above
    let options = BackupOptions {
        rate_limit_bytes_per_sec: (args.rate_limit_mb * 1e6) as u64,
        zstd_level,
    };
    let bar = progress(0, "backup create");
    let made = engine.create(&db, &options, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let made = match made {
        Ok(made) => made,
        Err(e) => {
            let _ = db.close();
            return Err(e.into());
        }
    };
    drop(made.snapshot);
    db.close()?;
    if args.json {
        let mut value = info_json(&made.info);
        value["copied_files"] = json!(made.copied_files);
        value["copied_bytes"] = json!(made.copied_bytes);
        value["reused_tables"] = json!(made.reused_tables);
        return print_json(&value);
    }
    println!(
        "backup {} of {} at seqno {}: {} files, {} bytes; copied {} files ({} bytes), reused {} \
         tables",
        made.info.id,
        args.db.display(),
        made.info.seqno,
        made.info.files.len(),
        made.info.total_bytes(),
        made.copied_files,
        made.copied_bytes,
        made.reused_tables
    );
    Ok(())
}

fn list(args: &ListArgs) -> Result<(), Failure> {
    let backups = existing_engine(&args.backup_dir)?.list_each()?;
    let damaged: Vec<String> = backups
        .iter()
        .filter_map(|(id, info)| info.as_ref().err().map(|e| format!("backup {id}: {e}")))
        .collect();
    if args.json {
        let list: Vec<Value> = backups
            .iter()
            .map(|(id, info)| match info {
                Ok(info) => info_json(info),
                Err(e) => json!({"id": id, "damaged": true, "error": e.to_string()}),
            })
            .collect();
        print_json(&json!({ "backups": list }))?;
    } else {
        println!(
            "{:>6} {:<20} {:>14} {:>7} {:>14}",
            "id", "created (UTC)", "seqno", "files", "bytes"
        );
        for (id, info) in &backups {
            match info {
                Ok(info) => println!(
                    "{:>6} {:<20} {:>14} {:>7} {:>14}",
                    info.id,
                    utc_iso8601(info.created),
                    info.seqno,
                    info.files.len(),
                    info.total_bytes()
                ),
                Err(_) => println!("{id:>6} DAMAGED (its meta file cannot be read; see below)"),
            }
        }
    }
    if damaged.is_empty() {
        Ok(())
    } else {
        Err(Failure::Corruption(format!(
            "{} of {} backups have a damaged meta file (restore another backup; `backup \
             purge` removes a damaged one once newer ones exist):\n{}",
            damaged.len(),
            backups.len(),
            damaged.join("\n")
        )))
    }
}

fn verify(args: &VerifyArgs) -> Result<(), Failure> {
    let engine = existing_engine(&args.backup_dir)?;
    let ids = match args.id {
        Some(id) => vec![id],
        None => engine.list_each()?.into_iter().map(|(id, _)| id).collect(),
    };
    let mut checked = Vec::new();
    let mut bad = Vec::new();
    for id in ids {
        let bar = progress(0, &format!("verify backup {id}"));
        let result = engine.verify_each(id, &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        });
        bar.finish_and_clear();
        let (bytes, problems) = match result {
            Ok(verified) => (
                verified.bytes_checked,
                verified
                    .problems
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
            ),
            Err(e) => (0, vec![e.to_string()]),
        };
        if !args.json {
            if problems.is_empty() {
                println!("backup {id}: OK ({bytes} bytes checked)");
            } else {
                println!("backup {id}: {} bad files", problems.len());
                for problem in &problems {
                    println!("  {problem}");
                }
            }
        }
        bad.extend(problems.iter().map(|p| format!("backup {id}: {p}")));
        checked.push(json!({
            "id": id,
            "bytes": bytes,
            "ok": problems.is_empty(),
            "problems": problems,
        }));
    }
    if args.json {
        print_json(&json!({ "verified": checked }))?;
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Failure::Corruption(format!(
            "{} bad files in {}:\n{}",
            bad.len(),
            args.backup_dir.display(),
            bad.join("\n")
        )))
    }
}

fn restore(args: &RestoreArgs) -> Result<(), Failure> {
    let engine = existing_engine(&args.backup_dir)?;
    let id = match args.id {
        Some(id) => id,
        None => engine.latest_id()?.ok_or_else(|| {
            Failure::error(format!("no backups in {}", args.backup_dir.display()))
        })?,
    };
    if args.threads == 0 {
        return Err(Failure::error("--threads must be at least 1"));
    }
    let bar = progress(0, &format!("restore backup {id}"));
    let result = engine.restore(id, &args.dest, args.threads, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    result?;
    let info = engine.info(id)?;
    if args.json {
        let mut value = info_json(&info);
        value["restored_to"] = json!(args.dest.display().to_string());
        return print_json(&value);
    }
    println!(
        "restored backup {id} (seqno {}, {} files, {} bytes) into {}",
        info.seqno,
        info.files.len(),
        info.total_bytes(),
        args.dest.display()
    );
    Ok(())
}

fn purge(args: &PurgeArgs) -> Result<(), Failure> {
    let engine = existing_engine(&args.backup_dir)?;
    let purged = engine.purge_files(args.keep)?;
    if args.json {
        return print_json(&json!({
            "purged": purged.ids,
            "kept": args.keep,
            "leftovers_removed": purged.leftovers,
        }));
    }
    if purged.ids.is_empty() {
        println!("no backup to purge");
    } else {
        let ids: Vec<String> = purged.ids.iter().map(u32::to_string).collect();
        println!("purged backups {}", ids.join(", "));
    }
    for leftover in &purged.leftovers {
        println!("removed {leftover}: left by a failed or interrupted backup");
    }
    Ok(())
}
