//! `shale tool write-sst OUT.sst (--dump FILE | --csv FILE)`: an external table file
//! (`shale_engine::TableFileWriter`) built from a dump (`shale tool dump`, already in key
//! order, streamed) or a CSV file of `KEY,VALUE` lines (sorted in memory), so `shale tool
//! ingest` can bulk-load data without writing Rust, like `RocksDB`'s `SstFileWriter` driven
//! by `ldb`-style scripts.
//!
//! CSV lines: the key, a comma, the value (the rest of the line, commas included); both in
//! the escaped form the tools print (`\xNN`, `\\`, optional quotes), or hex with `--hex`.
//! Empty lines are skipped. A key given twice is an error (which value wins would be a
//! guess).

use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use shale_engine::{KeyspaceOptions, Options, TableFileWriter};
use shale_fs::{FileSystem, OsFs};

use super::dump::DumpReader;
use super::say;
use crate::output::{print_json, progress, Failure, Render};

/// Flags of `shale tool write-sst`.
#[derive(Debug, Args)]
pub struct WriteSstArgs {
    /// The table file to write (must not exist).
    pub output: PathBuf,
    /// Read the records from this dump file.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "csv",
        required_unless_present = "csv"
    )]
    pub dump: Option<PathBuf>,
    /// Read KEY,VALUE lines from this CSV file.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// CSV keys and values are hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(args: &WriteSstArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    if fs.exists(&args.output)? {
        return Err(Failure::error(format!(
            "{} exists; write-sst writes a new file",
            args.output.display()
        )));
    }
    let options = Options::default();
    let mut writer = TableFileWriter::create(&args.output, &options, &KeyspaceOptions::default())?;
    let written = match (&args.dump, &args.csv) {
        (Some(dump), _) => from_dump(&fs, dump, &mut writer),
        (None, Some(csv)) => from_csv(&fs, csv, Render { hex: args.hex }, &mut writer),
        (None, None) => Err(Failure::error("give --dump FILE or --csv FILE")),
    };
    let info = match written.and_then(|()| Ok(writer.finish()?)) {
        Ok(info) => info,
        Err(e) => {
            let _ = fs.remove(&args.output);
            return Err(e);
        }
    };
    let render = Render { hex: args.hex };
    if args.json {
        return print_json(&json!({
            "file": args.output.display().to_string(),
            "entries": info.num_entries,
            "bytes": info.file_size,
            "smallest_key": render.bytes_unquoted(&info.smallest_key),
            "largest_key": render.bytes_unquoted(&info.largest_key),
        }));
    }
    say(format!(
        "wrote {} ({} entries, {} bytes, keys {} .. {}); load it with `shale tool ingest DIR {}`",
        args.output.display(),
        info.num_entries,
        info.file_size,
        render.bytes(&info.smallest_key),
        render.bytes(&info.largest_key),
        args.output.display()
    ))?;
    Ok(())
}

fn from_dump(
    fs: &dyn FileSystem,
    path: &std::path::Path,
    writer: &mut TableFileWriter,
) -> Result<(), Failure> {
    let mut reader = DumpReader::open(fs, path)?;
    let bar = progress(reader.size(), "write-sst");
    let mut records = 0u64;
    while let Some(chunk) = reader.next_chunk()? {
        for (key, value) in chunk {
            writer.put(&key, &value).map_err(|e| {
                Failure::error(format!("{}: record {records}: {e}", path.display()))
            })?;
            records += 1;
        }
        bar.set_position(reader.position());
    }
    bar.finish_and_clear();
    if records == 0 {
        return Err(Failure::error(format!(
            "{} holds no records; an empty table file cannot be ingested",
            path.display()
        )));
    }
    Ok(())
}

fn from_csv(
    fs: &dyn FileSystem,
    path: &std::path::Path,
    render: Render,
    writer: &mut TableFileWriter,
) -> Result<(), Failure> {
    let file = fs.open_read(path)?;
    let size = usize::try_from(file.size()?)
        .map_err(|_| Failure::error(format!("{} is too big to sort in memory", path.display())))?;
    let mut bytes = vec![0u8; size];
    file.read_exact_at(0, &mut bytes)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| Failure::error(format!("{}: not UTF-8 text: {e}", path.display())))?;
    let mut records = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let at = |what: &str| format!("{}:{}: {what}", path.display(), n + 1);
        let Some((key, value)) = line.split_once(',') else {
            return Err(Failure::error(at("expected KEY,VALUE")));
        };
        let key = render.parse_key(key, &at("key"))?;
        let value = render.parse_key(value, &at("value"))?;
        records.push((key, value, n + 1));
    }
    if records.is_empty() {
        return Err(Failure::error(format!(
            "{} holds no KEY,VALUE lines; an empty table file cannot be ingested",
            path.display()
        )));
    }
    records.sort_by(|a, b| a.0.cmp(&b.0));
    for pair in records.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(Failure::error(format!(
                "{}: key {} is on lines {} and {}",
                path.display(),
                render.bytes(&pair[0].0),
                pair[0].2.min(pair[1].2),
                pair[0].2.max(pair[1].2)
            )));
        }
    }
    for (key, value, _) in &records {
        writer.put(key, value)?;
    }
    Ok(())
}
