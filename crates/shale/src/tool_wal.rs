//! `shale tool wal FILE|DIR`: every record of write-ahead log files (docs/format/wal.md) with
//! the write batch it carries (`docs/format/write_batch.md`), like `wt printlog`.
//!
//! Logs are read in `AbsoluteConsistency` mode: the first damaged record (a bad checksum, a
//! torn tail, a batch that does not decode) stops the tool, which prints what it read before
//! it and exits 2 naming the file, the offset and what is wrong.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde_json::{json, Value};
use shale_engine::inspect::wal::format::parse_log_file_name;
use shale_engine::inspect::wal::{LogEnd, LogReader, RecoveryMode};
use shale_engine::inspect::{live_manifest, read_manifest};
use shale_engine::{BatchEntry, WriteBatch};
use shale_fs::{FileSystem, OsFs};
use shale_sst::{BytewiseComparator, Comparator, ValueKind};

use crate::output::{print_json, progress, Failure, Render};

/// Flags of `shale tool wal`.
#[derive(Debug, Args)]
pub struct WalToolArgs {
    /// A log file (`NNNNNN.wal`), or a database directory: every log in it, oldest first.
    pub path: PathBuf,
    /// Show keys and values as hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The log files `path` names, with their log numbers, oldest first.
pub fn log_files(fs: &dyn FileSystem, path: &Path) -> Result<Vec<(u64, PathBuf)>, Failure> {
    if path.is_dir() {
        let mut logs: Vec<(u64, PathBuf)> = fs
            .list(path)?
            .iter()
            .filter_map(|name| Some((parse_log_file_name(name)?, path.join(name))))
            .collect();
        logs.sort();
        return Ok(logs);
    }
    let number = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_log_file_name)
        .ok_or_else(|| {
            Failure::error(format!(
                "{} is neither a directory nor a log named NNNNNN.wal (the name carries the log \
                 number every record is checked against)",
                path.display()
            ))
        })?;
    Ok(vec![(number, path.to_path_buf())])
}

/// Why a log ended, for people.
pub fn describe_end(end: Option<&LogEnd>) -> String {
    match end {
        None => "not read to the end".to_owned(),
        Some(LogEnd::EndOfFile { offset }) => format!("end of file at offset {offset}"),
        Some(LogEnd::ZeroTail { offset }) => {
            format!("zero-filled tail from offset {offset} (preallocated space)")
        }
        Some(LogEnd::StaleRecord {
            offset,
            log_number_low,
        }) => format!(
            "stale record of an older log (low bits {log_number_low}) at offset {offset}: the \
             rest is a recycled file's old contents"
        ),
        Some(LogEnd::TornTail { offset, bytes }) => {
            format!("torn tail of {bytes} bytes at offset {offset}")
        }
        Some(LogEnd::Corruption { offset, detail }) => {
            format!("corruption at offset {offset}: {detail}")
        }
    }
}

fn end_json(end: Option<&LogEnd>) -> Value {
    match end {
        None => Value::Null,
        Some(LogEnd::EndOfFile { offset }) => json!({ "kind": "end_of_file", "offset": offset }),
        Some(LogEnd::ZeroTail { offset }) => json!({ "kind": "zero_tail", "offset": offset }),
        Some(LogEnd::StaleRecord { offset, .. }) => {
            json!({ "kind": "stale_record", "offset": offset })
        }
        Some(LogEnd::TornTail { offset, bytes }) => {
            json!({ "kind": "torn_tail", "offset": offset, "bytes": bytes })
        }
        Some(LogEnd::Corruption { offset, detail }) => {
            json!({ "kind": "corruption", "offset": offset, "detail": detail })
        }
    }
}

/// How entries are shown: the rendering of bytes, and keyspace names where known.
struct Show {
    render: Render,
    /// Keyspace names by id, from the directory's MANIFEST (empty for a lone file).
    names: BTreeMap<u32, String>,
}

/// Keyspace names by id from the MANIFEST of `dir`, read as opening the database would; empty
/// when it cannot be read (the logs are still worth printing).
fn keyspace_names(fs: &OsFs, dir: &Path) -> BTreeMap<u32, String> {
    let comparator: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    live_manifest(fs, dir)
        .and_then(|path| {
            read_manifest(
                fs,
                &path,
                &comparator,
                RecoveryMode::TolerateCorruptedTailRecords,
                &mut |_, _| {},
            )
        })
        .map(|state| state.version.keyspaces().into_iter().collect())
        .unwrap_or_default()
}

/// One batch entry as a text line: `seqno op ks id (name) key [=> value | .. end]`.
fn entry_text(e: &BatchEntry<'_>, show: &Show) -> String {
    let render = show.render;
    let head = match show.names.get(&e.keyspace) {
        Some(name) => format!(
            "{} {} ks {} ({})",
            e.seqno,
            e.kind.name(),
            e.keyspace,
            shale_sst::printable(name.as_bytes())
        ),
        None => format!("{} {} ks {}", e.seqno, e.kind.name(), e.keyspace),
    };
    match e.kind {
        // A batch never holds a blob reference (the decoder refuses one); shown as a value.
        ValueKind::Value | ValueKind::BlobIndex => format!(
            "{head} {} => {}",
            render.bytes(e.key),
            render.bytes(e.value)
        ),
        ValueKind::RangeDeletion => format!(
            "{head} [{} .. {})",
            render.bytes(e.key),
            render.bytes(e.value)
        ),
        ValueKind::Deletion => format!("{head} {}", render.bytes(e.key)),
    }
}

fn entry_json(e: &BatchEntry<'_>, show: &Show) -> Value {
    let render = show.render;
    let mut v = json!({
        "seqno": e.seqno,
        "op": e.kind.name(),
        "keyspace": e.keyspace,
        "keyspace_name": show.names.get(&e.keyspace),
        "key": render.bytes_unquoted(e.key),
    });
    match e.kind {
        ValueKind::Value | ValueKind::BlobIndex => {
            v["value"] = json!(render.bytes_unquoted(e.value));
        }
        ValueKind::RangeDeletion => v["end"] = json!(render.bytes_unquoted(e.value)),
        ValueKind::Deletion => {}
    }
    v
}

/// Runs the tool.
pub fn run(args: &WalToolArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    let logs = log_files(&fs, &args.path)?;
    let show = Show {
        render: Render { hex: args.hex },
        names: if args.path.is_dir() {
            keyspace_names(&fs, &args.path)
        } else {
            BTreeMap::new()
        },
    };
    if logs.is_empty() {
        return Err(Failure::error(format!(
            "no log files (NNNNNN.wal) in {}",
            args.path.display()
        )));
    }
    let total: u64 = logs
        .iter()
        .map(|(_, path)| fs.size(path).unwrap_or(0))
        .sum();
    let bar = progress(total, "reading logs");
    let mut out = BufWriter::new(io::stdout().lock());
    let mut files_json = Vec::new();
    let mut failure = None;
    for (number, path) in &logs {
        let result = print_log(&fs, *number, path, &show, args.json, &mut out);
        bar.inc(fs.size(path).unwrap_or(0));
        match result {
            Ok(file) => files_json.push(file),
            Err((file, error)) => {
                files_json.push(file);
                failure = Some(error);
                break;
            }
        }
    }
    bar.finish_and_clear();
    if args.json {
        out.flush()?;
        drop(out);
        print_json(&json!({
            "files": files_json,
            "error": failure.as_ref().map(ToString::to_string),
        }))?;
    } else {
        out.flush()?;
    }
    failure.map_or(Ok(()), Err)
}

/// Prints (or, with JSON, collects) one log. On damage, returns what was read with the failure.
fn print_log(
    fs: &dyn FileSystem,
    number: u64,
    path: &Path,
    show: &Show,
    json: bool,
    out: &mut impl Write,
) -> Result<Value, (Value, Failure)> {
    let mut records = Vec::new();
    let mut doc = json!({ "file": path.display().to_string(), "log_number": number });
    let fail = |doc: Value, records: Vec<Value>, e: Failure| {
        let mut doc = doc;
        doc["records"] = Value::Array(records);
        (doc, e)
    };
    let size = match fs.size(path) {
        Ok(size) => size,
        Err(e) => return Err(fail(doc, records, e.into())),
    };
    doc["size"] = json!(size);
    if !json {
        let header = writeln!(out, "{} (log {number}, {size} bytes)", path.display());
        if let Err(e) = header {
            return Err(fail(doc, records, e.into()));
        }
    }
    let opened = fs
        .open_read(path)
        .map_err(shale_engine::Error::from)
        .and_then(|file| LogReader::new(file, number, RecoveryMode::AbsoluteConsistency));
    let mut log = match opened {
        Ok(log) => log,
        Err(e) => return Err(fail(doc, records, e.into())),
    };
    // The version decides how each record's batch header is laid out (docs/format/wal.md).
    doc["format_version"] = json!(log.format_version());
    if !json {
        let version = log
            .format_version()
            .map_or_else(|| "unknown".to_owned(), |v| v.to_string());
        if let Err(e) = writeln!(out, "  format version {version}") {
            return Err(fail(doc, records, e.into()));
        }
    }
    let mut entries = 0u64;
    let mut record_count = 0u64;
    loop {
        let step = (|| -> Result<bool, Failure> {
            let Some((record, offset)) = log.read_record()? else {
                return Ok(false);
            };
            let bytes = record.len();
            let batch = WriteBatch::from_wal_record(record, log.format_version(), path, offset)?;
            entries += u64::from(batch.count());
            record_count += 1;
            if json {
                records.push(json!({
                    "offset": offset,
                    "bytes": bytes,
                    "seqno": batch.first_seqno(),
                    "count": batch.count(),
                    "entries": batch.iter().map(|e| entry_json(&e, show)).collect::<Vec<_>>(),
                }));
            } else {
                writeln!(
                    out,
                    "  record at offset {offset}: seqno {}, {} entries, {bytes} bytes",
                    batch.first_seqno(),
                    batch.count()
                )?;
                for e in batch.iter() {
                    writeln!(out, "    {}", entry_text(&e, show))?;
                }
            }
            Ok(true)
        })();
        match step {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                if !json {
                    let _ = writeln!(out, "  stopped after {record_count} records: {e}");
                }
                return Err(fail(doc, records, e));
            }
        }
    }
    let end = log.end();
    doc["end"] = end_json(end);
    doc["record_count"] = json!(record_count);
    doc["entry_count"] = json!(entries);
    if !json {
        let written = writeln!(
            out,
            "  end: {}; {record_count} records, {entries} entries",
            describe_end(end)
        );
        if let Err(e) = written {
            return Err(fail(doc, records, e.into()));
        }
    }
    doc["records"] = Value::Array(records);
    Ok(doc)
}
