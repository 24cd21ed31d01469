//! `shale tool blob FILE`: one blob file (docs/format/blob.md): its header, every record
//! (offset, key, stored and raw size, codec) with `--values` their values, and its footer.
//! Every checksum is checked as the file is read; damage stops the dump and exits 2 naming
//! the offset.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use shale_engine::inspect::blob::{record_size, scan_blob_file};
use shale_fs::OsFs;

use crate::output::{print_json, Failure, Render};

/// Flags of `shale tool blob`.
#[derive(Debug, Args)]
pub struct BlobToolArgs {
    /// The blob file (`NNNNNN.blob`).
    pub file: PathBuf,
    /// Print each record's value too (decompressed).
    #[arg(long)]
    pub values: bool,
    /// Show keys and values in hex.
    #[arg(long)]
    pub hex: bool,
    /// Print at most this many records.
    #[arg(long)]
    pub limit: Option<u64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs the tool.
pub fn run(args: &BlobToolArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    let render = Render { hex: args.hex };
    let mut lines = Vec::new();
    let mut records = Vec::new();
    let mut shown = 0u64;
    let summary = scan_blob_file(&fs, &args.file, &mut |offset, record| {
        if args.limit.is_some_and(|limit| shown >= limit) {
            return Ok(());
        }
        shown += 1;
        let value = shale_sst::decompress_value(record.compression, record.value).ok();
        let raw_len = value.as_ref().map_or(0, Vec::len);
        let size = record_size(record.key.len(), record.value.len() as u64);
        if args.json {
            let mut r = json!({
                "offset": offset,
                "size": size,
                "key": render.bytes_unquoted(record.key),
                "stored_bytes": record.value.len(),
                "raw_bytes": raw_len,
                "compression": record.compression,
            });
            if args.values {
                r["value"] = json!(value.as_deref().map(|v| render.bytes_unquoted(v)));
            }
            records.push(r);
        } else {
            let mut line = format!(
                "  @{offset} {} stored {} raw {} codec {}",
                render.bytes(record.key),
                record.value.len(),
                raw_len,
                record.compression
            );
            if args.values {
                line.push_str(" => ");
                line.push_str(
                    &value
                        .as_deref()
                        .map_or_else(String::new, |v| render.bytes(v)),
                );
            }
            lines.push(line);
        }
        Ok(())
    })?;
    let (header, footer) = (summary.header, summary.footer);
    if args.json {
        return print_json(&json!({
            "file": args.file.display().to_string(),
            "size": summary.size,
            "keyspace": header.keyspace,
            "compression": header.compression,
            "record_count": footer.record_count,
            "record_bytes": footer.record_bytes,
            "records": records,
        }));
    }
    let mut out = BufWriter::new(io::stdout().lock());
    writeln!(
        out,
        "blob file {}: {} bytes, keyspace {}, codec {}",
        args.file.display(),
        summary.size,
        header.keyspace,
        header.compression
    )?;
    for line in lines {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "footer: {} records, {} record bytes, checksums ok",
        footer.record_count, footer.record_bytes
    )?;
    out.flush()?;
    Ok(())
}
