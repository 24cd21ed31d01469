//! `shale tool ingest DIR FILE...`: ingests external table files (written by
//! `shale_engine::TableFileWriter`) into one keyspace, atomically, like `ldb ingest_extern_sst`
//! of `RocksDB` (docs/operations.md "Bulk ingestion").

use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use shale_engine::{IngestArg, IngestOptions};

use crate::output::{print_json, spinner, Failure};
use crate::tool_checkpoint::open_existing;

/// Flags of `shale tool ingest`.
#[derive(Debug, Args)]
pub struct IngestToolArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// External table files; their key ranges must not overlap each other.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The keyspace to ingest into.
    #[arg(long, default_value = shale_engine::DEFAULT_KEYSPACE)]
    pub keyspace: String,
    /// Hard-link the files into the database instead of copying them (never modify them
    /// afterwards).
    #[arg(long = "move")]
    pub move_files: bool,
    /// Read every data block before ingesting (checksums, key order, seqnos), not only each
    /// file's meta blocks and first and last entries.
    #[arg(long)]
    pub verify_checksums: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub recovery: crate::output::RecoveryArgs,
}

/// Runs `shale tool ingest`.
pub fn run(args: &IngestToolArgs) -> Result<(), Failure> {
    let db = open_existing(&args.dir, args.recovery)?;
    let Some(keyspace) = db.keyspace(&args.keyspace) else {
        let names = db.keyspace_names().join(", ");
        let _ = db.close();
        return Err(Failure::error(format!(
            "no keyspace {:?} in {} (it has: {names})",
            args.keyspace,
            args.dir.display()
        )));
    };
    let bar = spinner("ingest");
    let ingested = db.ingest(
        &[IngestArg {
            keyspace,
            files: args.files.clone(),
        }],
        IngestOptions {
            move_files: args.move_files,
            verify_checksums_before_ingest: args.verify_checksums,
        },
    );
    bar.finish_and_clear();
    let placed = match ingested {
        Ok(placed) => placed,
        Err(e) => {
            let _ = db.close();
            return Err(e.into());
        }
    };
    db.close()?;
    if args.json {
        let files: Vec<_> = placed
            .iter()
            .map(|f| {
                json!({
                    "source": f.source.display().to_string(),
                    "table": format!("{:06}.sst", f.number),
                    "level": f.level,
                })
            })
            .collect();
        return print_json(&json!({
            "dir": args.dir.display().to_string(),
            "keyspace": args.keyspace,
            "global_seqno": placed.first().map(|f| f.global_seqno),
            "files": files,
        }));
    }
    for file in &placed {
        println!(
            "{} -> {:06}.sst in L{} at seqno {}",
            file.source.display(),
            file.number,
            file.level,
            file.global_seqno
        );
    }
    println!(
        "ingested {} files into keyspace {:?} of {}",
        placed.len(),
        args.keyspace,
        args.dir.display()
    );
    Ok(())
}
