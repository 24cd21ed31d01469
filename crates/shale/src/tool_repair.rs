//! `shale tool repair DIR`: salvages what can be read from a damaged database, like `ldb repair`
//! of `RocksDB` ([`shale_engine::repair_db`], docs/operations.md "Repair"). Unreadable files are
//! moved into `DIR/lost/`, never deleted; the report lists every table kept and file lost, what
//! each WAL gave, and the bytes lost.
//!
//! Exit codes follow [`crate::output`]: 0 when the database was rebuilt (losses, if any, are
//! in the report), 2 when nothing at all could be salvaged, 1 when the repair could not run
//! (another process holds the database, no database files, an I/O error).

use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use shale_engine::{repair_db_with_progress, Options, RepairOptions, RepairReport};

use crate::output::{print_json, progress, Failure};

/// Flags of `shale tool repair`.
#[derive(Debug, Args)]
pub struct RepairArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Repair even a directory that does not look like a Shale database (no file carries
    /// Shale's format marks, or more files are foreign than Shale's). Without it such a
    /// directory is refused before anything is changed.
    #[arg(long)]
    pub force: bool,
}

/// Runs `shale tool repair`.
pub fn run(args: &RepairArgs) -> Result<(), Failure> {
    if !args.dir.is_dir() {
        return Err(Failure::error(format!(
            "{} is not a directory",
            args.dir.display()
        )));
    }
    let options = Options {
        create_if_missing: false,
        ..Options::default()
    };
    let bar = progress(0, "repairing");
    let repair = RepairOptions { force: args.force };
    let repaired = repair_db_with_progress(&args.dir, &options, repair, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let report = repaired.map_err(|e| match e {
        shale_engine::Error::Io(shale_fs::Error::Locked { .. }) => Failure::error(format!(
            "{} is in use: another process holds the database (its LOCK file is locked); stop \
             it before repairing",
            args.dir.display()
        )),
        other => Failure::from(other),
    })?;
    if args.json {
        print_json(&to_json(args, &report))?;
    } else {
        print_text(args, &report)?;
    }
    if report.salvaged_anything() {
        Ok(())
    } else {
        Err(Failure::Corruption(format!(
            "nothing could be salvaged in {}: no readable table and no readable WAL record",
            args.dir.display()
        )))
    }
}

fn to_json(args: &RepairArgs, report: &RepairReport) -> serde_json::Value {
    json!({
        "dir": args.dir.display().to_string(),
        "manifest_used": report.manifest_used.as_ref().map(|p| p.display().to_string()),
        "manifest_number": report.manifest_number,
        "last_sequence": report.last_sequence,
        "keyspaces": report.keyspaces.iter()
            .map(|(id, name)| json!({"id": id, "name": name}))
            .collect::<Vec<_>>(),
        "tables": report.tables.iter().map(|t| json!({
            "number": t.meta.number,
            "keyspace": t.keyspace,
            "level": t.level,
            "size": t.meta.size,
            "entries": t.meta.num_entries,
            "from_wal": t.from_wal,
        })).collect::<Vec<_>>(),
        "wals": report.wals.iter().map(|w| json!({
            "number": w.number,
            "records": w.records,
            "entries_replayed": w.entries_replayed,
            "bytes_lost": w.bytes_lost,
            "damage": w.damage,
        })).collect::<Vec<_>>(),
        "lost": report.lost.iter().map(|l| json!({
            "name": l.name,
            "moved_to": l.moved_to.as_ref().map(|p| p.display().to_string()),
            "bytes": l.bytes,
            "data_lost": l.data_lost,
            "earlier": l.earlier,
            "obsolete": l.obsolete,
            "reason": l.reason,
        })).collect::<Vec<_>>(),
        "bytes_lost": report.bytes_lost(),
        "bytes_lost_earlier": report.bytes_lost_earlier(),
        "notes": report.notes,
    })
}

fn print_text(args: &RepairArgs, report: &RepairReport) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(out, "repair {}", args.dir.display())?;
    match &report.manifest_used {
        Some(path) => writeln!(out, "  levels and keyspaces from {}", path.display())?,
        None => writeln!(
            out,
            "  no readable MANIFEST: every table placed in L0 of the keyspace it records"
        )?,
    }
    for table in &report.tables {
        let origin = table
            .from_wal
            .map_or(String::new(), |n| format!(", written from WAL {n:06}"));
        writeln!(
            out,
            "  kept {:06}.sst: keyspace {} L{}, {} bytes, {} entries{origin}",
            table.meta.number, table.keyspace, table.level, table.meta.size, table.meta.num_entries
        )?;
    }
    for wal in &report.wals {
        writeln!(
            out,
            "  WAL {:06}: {} records read, {} writes replayed, {} bytes lost",
            wal.number, wal.records, wal.entries_replayed, wal.bytes_lost
        )?;
    }
    for lost in &report.lost {
        if lost.earlier {
            let to = lost
                .moved_to
                .as_deref()
                .map_or_else(|| "missing".to_owned(), |p| p.display().to_string());
            writeln!(
                out,
                "  set aside by an earlier repair: {} ({} bytes, {} bytes of data), in {to}: {}",
                lost.name, lost.bytes, lost.data_lost, lost.reason
            )?;
            continue;
        }
        if lost.obsolete {
            let to = lost
                .moved_to
                .as_deref()
                .unwrap_or(std::path::Path::new("?"));
            writeln!(
                out,
                "  set aside {} ({} bytes, no live data), moved to {}: {}",
                lost.name,
                lost.bytes,
                to.display(),
                lost.reason
            )?;
            continue;
        }
        match &lost.moved_to {
            Some(to) => writeln!(
                out,
                "  lost {} ({} bytes), moved to {}: {}",
                lost.name,
                lost.bytes,
                to.display(),
                lost.reason
            )?,
            None => writeln!(
                out,
                "  lost {} ({} bytes): {}",
                lost.name, lost.bytes, lost.reason
            )?,
        }
    }
    for note in &report.notes {
        writeln!(out, "note: {note}")?;
    }
    let keyspaces: Vec<&str> = report.keyspaces.iter().map(|(_, n)| n.as_str()).collect();
    writeln!(
        out,
        "repaired: {} tables, keyspaces {}, last sequence {}, MANIFEST-{:06}; {} files set \
         aside, {} bytes of data lost ({} of them set aside by an earlier repair)",
        report.tables.len(),
        keyspaces.join(", "),
        report.last_sequence,
        report.manifest_number,
        report
            .lost
            .iter()
            .filter(|l| l.moved_to.is_some() && !l.earlier)
            .count(),
        report.bytes_lost(),
        report.bytes_lost_earlier()
    )?;
    out.flush()?;
    Ok(())
}
