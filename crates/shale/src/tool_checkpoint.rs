//! `shale tool checkpoint DIR DEST`: a consistent, openable copy of a database, like `ldb
//! checkpoint` of `RocksDB` (docs/operations.md "Checkpoints"). Tables are hard-linked (copied
//! across file systems), the WALs copied up to the cut, a fresh MANIFEST written.
//!
//! The database is opened read-only ([`open_view`]): another process (a server, a stress run)
//! may hold it open and keep writing, and nothing in its directory is changed, so a read-only
//! directory works too. The copy is the view the open read.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;
use shale_engine::inspect::CURRENT_FILE_NAME;
use shale_engine::{Db, Options};

use crate::output::{print_json, spinner, Failure, RecoveryArgs};

/// Flags of `shale tool checkpoint`.
#[derive(Debug, Args)]
pub struct CheckpointArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Where the checkpoint goes: a new or empty directory.
    pub dest: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
}

/// Opens the database in `dir` for writing, without creating one (`tool ingest`).
pub fn open_existing(dir: &Path, recovery: RecoveryArgs) -> Result<Db, Failure> {
    if !dir.join(CURRENT_FILE_NAME).exists() {
        return Err(crate::output::missing_current(dir));
    }
    let options = Options {
        create_if_missing: false,
        wal_recovery_mode: recovery.wal_recovery_mode,
        ..Options::default()
    };
    Db::open(dir, options).map_err(|e| match e {
        shale_engine::Error::Io(shale_fs::Error::Locked { .. }) => Failure::error(format!(
            "{} is in use: another process holds the database (its LOCK file is locked); \
             stop it first, or ingest from inside that process (Db::ingest)",
            dir.display()
        )),
        other => Failure::from(other),
    })
}

/// Opens the database in `dir` read-only (`Db::open_read_only`), for the commands that copy
/// it (checkpoint and backup create): beside a writer in another process, changing nothing.
pub fn open_view(dir: &Path, recovery: RecoveryArgs) -> Result<Db, Failure> {
    if !dir.join(CURRENT_FILE_NAME).exists() {
        return Err(crate::output::missing_current(dir));
    }
    let options = Options {
        create_if_missing: false,
        wal_recovery_mode: recovery.wal_recovery_mode,
        ..Options::default()
    };
    Ok(Db::open_read_only(dir, options)?)
}

/// Runs `shale tool checkpoint`.
pub fn run(args: &CheckpointArgs) -> Result<(), Failure> {
    let db = open_view(&args.dir, args.recovery)?;
    let bar = spinner("checkpoint");
    let made = db.checkpoint(&args.dest);
    bar.finish_and_clear();
    let info = match made {
        Ok(info) => info,
        Err(e) => {
            let _ = db.close();
            return Err(e.into());
        }
    };
    let seqno = info.seqno;
    drop(info.snapshot);
    db.close()?;
    if args.json {
        let files: Vec<_> = info
            .files
            .iter()
            .map(|(name, size)| json!({"name": name, "size": size}))
            .collect();
        return print_json(&json!({
            "dir": args.dir.display().to_string(),
            "checkpoint": args.dest.display().to_string(),
            "seqno": seqno,
            "tables_linked": info.tables_linked,
            "tables_copied": info.tables_copied,
            "wals": info.wals,
            "wal_bytes": info.wal_bytes,
            "files": files,
        }));
    }
    println!(
        "checkpoint of {} in {} at seqno {seqno}: {} tables linked, {} copied, {} WALs \
         ({} bytes), {} files",
        args.dir.display(),
        args.dest.display(),
        info.tables_linked,
        info.tables_copied,
        info.wals,
        info.wal_bytes,
        info.files.len()
    );
    Ok(())
}
