//! `shale tool manifest DIR` (the version edits of the live MANIFEST and the shape they
//! build, like `wt list -c`) and `shale tool lsm DIR` (files and bytes per level per keyspace).
//!
//! Both read the files without opening the database ([`shale_engine::inspect`]), so they
//! work beside a running database and on a damaged copy. `manifest` reads every record in
//! `AbsoluteConsistency` mode, so even a torn last record is reported (exit 2) after the
//! edits before it; `lsm` reads as opening the database would (a torn tail is dropped).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde_json::{json, Value};
use shale_engine::inspect::blob::BlobFileMeta;
use shale_engine::inspect::wal::RecoveryMode;
use shale_engine::inspect::{live_manifest, read_manifest, ManifestState};
use shale_engine::inspect::{parse_manifest_file_name, FileMetaData, Version, VersionEdit};
use shale_engine::DEFAULT_NUM_LEVELS;
use shale_fs::{FileSystem, OsFs};
use shale_sst::{BytewiseComparator, Comparator};

use crate::output::{print_json, Failure, Render};

/// Flags of `shale tool manifest`.
#[derive(Debug, Args)]
pub struct ManifestToolArgs {
    /// A database directory (the MANIFEST its CURRENT names), or a MANIFEST-NNNNNN file.
    pub path: PathBuf,
    /// Print only the current shape, not every edit.
    #[arg(long)]
    pub shape_only: bool,
    /// Show keys as hex.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `shale tool lsm`.
#[derive(Debug, Args)]
pub struct LsmToolArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The MANIFEST `path` names: itself if it is a MANIFEST file, else the one `CURRENT` in the
/// directory names.
fn manifest_path(fs: &OsFs, path: &Path) -> Result<PathBuf, Failure> {
    let is_manifest = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_manifest_file_name)
        .is_some();
    if is_manifest && path.is_file() {
        return Ok(path.to_path_buf());
    }
    if !path.is_dir() {
        return Err(Failure::error(format!(
            "{} is neither a database directory nor a MANIFEST-NNNNNN file",
            path.display()
        )));
    }
    Ok(live_manifest(fs, path)?)
}

/// Replays the MANIFEST at `path`, handing each edit to `on_edit`.
fn replay(
    fs: &OsFs,
    path: &Path,
    mode: RecoveryMode,
    on_edit: &mut dyn FnMut(u64, &VersionEdit),
) -> Result<ManifestState, Failure> {
    Ok(read_manifest(
        fs,
        path,
        &(Arc::new(BytewiseComparator) as Arc<dyn Comparator>),
        mode,
        on_edit,
    )?)
}

/// One table file for a text line: number, key range, sequence range, size, entries.
pub fn file_text(f: &FileMetaData, render: Render) -> String {
    let oldest_blob = f
        .oldest_blob_file
        .map_or_else(String::new, |n| format!(" oldest blob {n:06}"));
    format!(
        "{:06} [{} .. {}] seqno {}..{} size {} entries {} deletions {}{oldest_blob}",
        f.number,
        render.internal_key(f.smallest.encoded()),
        render.internal_key(f.largest.encoded()),
        f.smallest_seqno,
        f.largest_seqno,
        f.size,
        f.num_entries,
        f.num_deletions
    )
}

/// One blob file: its records, garbage and live ratio.
pub(crate) fn blob_text(b: &BlobFileMeta) -> String {
    format!(
        "{:06} records {} bytes {} garbage {} records {} bytes, live {:.1}%",
        b.number,
        b.total_count,
        b.total_bytes,
        b.garbage_count,
        b.garbage_bytes,
        b.live_ratio() * 100.0
    )
}

/// One blob file as JSON.
pub(crate) fn blob_json(b: &BlobFileMeta) -> Value {
    json!({
        "number": b.number,
        "keyspace": b.keyspace,
        "file_size": b.file_size(),
        "records": b.total_count,
        "record_bytes": b.total_bytes,
        "garbage_records": b.garbage_count,
        "garbage_bytes": b.garbage_bytes,
        "live_ratio": b.live_ratio(),
    })
}

/// A keyspace's blob files: a summary line, then one line each (`details`).
pub(crate) fn blob_files_text(
    version: &Version,
    keyspace: u32,
    details: bool,
    out: &mut impl Write,
) -> io::Result<()> {
    let blobs: Vec<_> = version.keyspace_blob_files(keyspace).collect();
    if blobs.is_empty() {
        return Ok(());
    }
    let size: u64 = blobs.iter().map(|b| b.file_size()).sum();
    let total: u64 = blobs.iter().map(|b| b.total_bytes).sum();
    let garbage: u64 = blobs.iter().map(|b| b.garbage_bytes).sum();
    #[allow(clippy::cast_precision_loss)] // a percentage for display
    let garbage_percent = garbage as f64 * 100.0 / total.max(1) as f64;
    writeln!(
        out,
        "  blob files: {}, {} ({size} bytes), {garbage_percent:.1}% garbage",
        blobs.len(),
        human_bytes(size)
    )?;
    if details {
        for b in blobs {
            writeln!(out, "    {}", blob_text(b))?;
        }
    }
    Ok(())
}

/// One table file as JSON.
pub fn file_json(f: &FileMetaData, render: Render) -> Value {
    json!({
        "number": f.number,
        "size": f.size,
        "smallest": render.internal_key(f.smallest.encoded()),
        "largest": render.internal_key(f.largest.encoded()),
        "smallest_seqno": f.smallest_seqno,
        "largest_seqno": f.largest_seqno,
        "entries": f.num_entries,
        "deletions": f.num_deletions,
        "creation_time": f.creation_time,
        "oldest_blob_file": f.oldest_blob_file,
    })
}

fn edit_lines(edit: &VersionEdit, render: Render) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(v) = edit.manifest_format_version {
        lines.push(format!("manifest format version {v}"));
    }
    if let Some(name) = &edit.comparator {
        lines.push(format!(
            "comparator {}",
            shale_sst::printable(name.as_bytes())
        ));
    }
    if let Some(n) = edit.next_file_number {
        lines.push(format!("next file number {n}"));
    }
    if let Some(n) = edit.last_sequence {
        lines.push(format!("last sequence {n}"));
    }
    if let Some(n) = edit.max_keyspace_id {
        lines.push(format!("max keyspace id {n}"));
    }
    for (id, name) in &edit.added_keyspaces {
        let name = shale_sst::printable(name.as_bytes());
        lines.push(format!("add keyspace {id} {name}"));
    }
    for (keyspace, log_number) in &edit.log_numbers {
        lines.push(format!("log number of keyspace {keyspace}: {log_number}"));
    }
    for d in &edit.deleted_files {
        lines.push(format!(
            "delete file {:06} from keyspace {} L{}",
            d.number, d.keyspace, d.level
        ));
    }
    for n in &edit.new_files {
        lines.push(format!(
            "add file to keyspace {} L{}: {}",
            n.keyspace,
            n.level,
            file_text(&n.meta, render)
        ));
    }
    for id in &edit.dropped_keyspaces {
        lines.push(format!("drop keyspace {id}"));
    }
    for b in &edit.blob_file_additions {
        lines.push(format!(
            "add blob file {:06} to keyspace {}: records {} bytes {}",
            b.number, b.keyspace, b.total_count, b.total_bytes
        ));
    }
    for (number, count, bytes) in &edit.blob_file_garbage {
        lines.push(format!(
            "blob file {number:06} garbage +{count} records +{bytes} bytes"
        ));
    }
    for number in &edit.deleted_blob_files {
        lines.push(format!("delete blob file {number:06}"));
    }
    for d in &edit.damaged_files {
        lines.push(format!("mark damaged {d}"));
    }
    if lines.is_empty() {
        lines.push("(empty edit)".to_owned());
    }
    lines
}

fn edit_json(offset: u64, edit: &VersionEdit, render: Render) -> Value {
    json!({
        "offset": offset,
        "manifest_format_version": edit.manifest_format_version,
        "comparator": edit.comparator,
        "next_file_number": edit.next_file_number,
        "last_sequence": edit.last_sequence,
        "max_keyspace_id": edit.max_keyspace_id,
        "added_keyspaces": edit.added_keyspaces.iter()
            .map(|(id, name)| json!({ "id": id, "name": name })).collect::<Vec<_>>(),
        "log_numbers": edit.log_numbers.iter()
            .map(|(id, n)| json!({ "keyspace": id, "log_number": n })).collect::<Vec<_>>(),
        "deleted_files": edit.deleted_files.iter()
            .map(|d| json!({ "keyspace": d.keyspace, "level": d.level, "number": d.number }))
            .collect::<Vec<_>>(),
        "new_files": edit.new_files.iter()
            .map(|n| {
                let mut f = file_json(&n.meta, render);
                f["keyspace"] = json!(n.keyspace);
                f["level"] = json!(n.level);
                f
            })
            .collect::<Vec<_>>(),
        "dropped_keyspaces": edit.dropped_keyspaces,
        "blob_file_additions": edit.blob_file_additions.iter().map(blob_json).collect::<Vec<_>>(),
        "blob_file_garbage": edit.blob_file_garbage.iter()
            .map(|(n, c, b)| json!({ "number": n, "records": c, "bytes": b }))
            .collect::<Vec<_>>(),
        "deleted_blob_files": edit.deleted_blob_files,
        "damaged_files": edit.damaged_files.iter()
            .map(|d| json!({ "number": d.number, "offset": d.offset, "detail": d.detail }))
            .collect::<Vec<_>>(),
    })
}

/// Levels worth showing: the default number, or up to the deepest non-empty level.
pub(crate) fn shown_levels(version: &Version, keyspace: u32) -> usize {
    let deepest = (0..version.num_levels())
        .rev()
        .find(|&level| version.num_files(keyspace, level) > 0)
        .map_or(0, |level| level + 1);
    deepest.max(DEFAULT_NUM_LEVELS).min(version.num_levels())
}

fn shape_text(state: &ManifestState, render: Render, out: &mut impl Write) -> io::Result<()> {
    let version = &state.version;
    for (id, name) in version.keyspaces() {
        writeln!(
            out,
            "keyspace {id} {} (log number {})",
            shale_sst::printable(name.as_bytes()),
            version.log_number(id).unwrap_or(0)
        )?;
        for level in 0..shown_levels(version, id) {
            let files = version.files(id, level);
            writeln!(
                out,
                "  L{level}: {} files, {} bytes",
                files.len(),
                version.level_size(id, level)
            )?;
            for f in files {
                writeln!(out, "    {}", file_text(f, render))?;
                if let Some(d) = version.damaged_files().get(&f.number) {
                    writeln!(
                        out,
                        "      DAMAGED at offset {}: {} (not compacted; repair or restore it)",
                        d.offset, d.detail
                    )?;
                }
            }
        }
        blob_files_text(version, id, true, out)?;
    }
    writeln!(
        out,
        "next file number {}, last sequence {}, max keyspace id {}",
        state.next_file_number, state.last_sequence, state.max_keyspace_id
    )
}

fn shape_json(state: &ManifestState, render: Render) -> Value {
    let version = &state.version;
    let keyspaces: Vec<Value> = version
        .keyspaces()
        .into_iter()
        .map(|(id, name)| {
            let levels: Vec<Value> = (0..shown_levels(version, id))
                .map(|level| {
                    json!({
                        "level": level,
                        "bytes": version.level_size(id, level),
                        "files": version.files(id, level).iter()
                            .map(|f| {
                                let mut file = file_json(f, render);
                                if let Some(d) = version.damaged_files().get(&f.number) {
                                    file["damaged"] =
                                        json!({ "offset": d.offset, "detail": d.detail });
                                }
                                file
                            })
                            .collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "id": id,
                "name": name,
                "log_number": version.log_number(id),
                "levels": levels,
                "blob_files": version.keyspace_blob_files(id).map(|b| blob_json(b)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "keyspaces": keyspaces,
        "next_file_number": state.next_file_number,
        "last_sequence": state.last_sequence,
        "max_keyspace_id": state.max_keyspace_id,
    })
}

/// Runs `shale tool manifest`.
pub fn run_manifest(args: &ManifestToolArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    let render = Render { hex: args.hex };
    let path = manifest_path(&fs, &args.path)?;
    let mut edits = Vec::new();
    let state = replay(
        &fs,
        &path,
        RecoveryMode::AbsoluteConsistency,
        &mut |offset, edit| edits.push((offset, edit.clone())),
    );
    if args.json {
        let mut doc = json!({
            "manifest": path.display().to_string(),
            "size": fs.size(&path).ok(),
        });
        if !args.shape_only {
            doc["edits"] = edits
                .iter()
                .map(|(offset, edit)| edit_json(*offset, edit, render))
                .collect();
        }
        match &state {
            Ok(state) => doc["shape"] = shape_json(state, render),
            Err(e) => doc["error"] = json!(e.to_string()),
        }
        print_json(&doc)?;
        return state.map(|_| ());
    }
    let mut out = BufWriter::new(io::stdout().lock());
    writeln!(
        out,
        "{} ({} bytes)",
        path.display(),
        fs.size(&path).unwrap_or(0)
    )?;
    if !args.shape_only {
        writeln!(out, "--- edits ---")?;
        for (offset, edit) in &edits {
            writeln!(out, "record at offset {offset}:")?;
            for line in edit_lines(edit, render) {
                writeln!(out, "  {line}")?;
            }
        }
    }
    let state = match state {
        Ok(state) => state,
        Err(e) => {
            out.flush()?;
            return Err(e);
        }
    };
    writeln!(out, "--- shape ---")?;
    shape_text(&state, render, &mut out)?;
    out.flush()?;
    Ok(())
}

/// Totals of a set of files.
#[derive(Default, Clone, Copy)]
struct Totals {
    files: u64,
    bytes: u64,
    entries: u64,
    deletions: u64,
}

impl Totals {
    fn of<'a>(files: impl IntoIterator<Item = &'a Arc<FileMetaData>>) -> Totals {
        files.into_iter().fold(Totals::default(), |t, f| Totals {
            files: t.files + 1,
            bytes: t.bytes + f.size,
            entries: t.entries + f.num_entries,
            deletions: t.deletions + f.num_deletions,
        })
    }

    fn add(self, other: Totals) -> Totals {
        Totals {
            files: self.files + other.files,
            bytes: self.bytes + other.bytes,
            entries: self.entries + other.entries,
            deletions: self.deletions + other.deletions,
        }
    }

    /// As JSON, led by the level number when these are one level's totals.
    fn json(self, level: Option<usize>) -> Value {
        let mut v = serde_json::Map::new();
        if let Some(level) = level {
            v.insert("level".into(), json!(level));
        }
        let totals = json!({
            "files": self.files,
            "bytes": self.bytes,
            "entries": self.entries,
            "deletions": self.deletions,
        });
        if let Value::Object(fields) = totals {
            v.extend(fields);
        }
        Value::Object(v)
    }
}

/// `bytes` with a binary unit, for the table's last column.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Runs `shale tool lsm`.
pub fn run_lsm(args: &LsmToolArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    if !args.dir.is_dir() {
        return Err(Failure::error(format!(
            "{} is not a directory",
            args.dir.display()
        )));
    }
    let path = live_manifest(&fs, &args.dir)?;
    let state = replay(
        &fs,
        &path,
        RecoveryMode::TolerateCorruptedTailRecords,
        &mut |_, _| {},
    )?;
    let version = &state.version;
    let mut keyspaces = Vec::new();
    let mut out = BufWriter::new(io::stdout().lock());
    let mut grand = Totals::default();
    for (id, name) in version.keyspaces() {
        let levels: Vec<(usize, Totals)> = (0..shown_levels(version, id))
            .map(|level| (level, Totals::of(version.files(id, level))))
            .collect();
        let total = levels
            .iter()
            .fold(Totals::default(), |sum, (_, t)| sum.add(*t));
        grand = grand.add(total);
        if args.json {
            keyspaces.push(json!({
                "id": id,
                "name": name,
                "levels": levels.iter().map(|(level, t)| t.json(Some(*level))).collect::<Vec<_>>(),
                "total": total.json(None),
                "blob_files": version.keyspace_blob_files(id).map(|b| blob_json(b)).collect::<Vec<_>>(),
            }));
            continue;
        }
        writeln!(
            out,
            "keyspace {id} {}",
            shale_sst::printable(name.as_bytes())
        )?;
        writeln!(
            out,
            "  {:<6} {:>7} {:>14} {:>12} {:>10} {:>10}",
            "level", "files", "bytes", "entries", "deletions", "size"
        )?;
        let rows = levels
            .iter()
            .map(|(level, t)| (format!("L{level}"), *t))
            .chain([("total".to_owned(), total)]);
        for (label, t) in rows {
            writeln!(
                out,
                "  {label:<6} {:>7} {:>14} {:>12} {:>10} {:>10}",
                t.files,
                t.bytes,
                t.entries,
                t.deletions,
                human_bytes(t.bytes)
            )?;
        }
        blob_files_text(version, id, true, &mut out)?;
    }
    if args.json {
        drop(out);
        return print_json(&json!({
            "manifest": path.display().to_string(),
            "keyspaces": keyspaces,
            "total": grand.json(None),
            "last_sequence": state.last_sequence,
        }));
    }
    writeln!(
        out,
        "all keyspaces: {} files, {} bytes ({}), last sequence {}",
        grand.files,
        grand.bytes,
        human_bytes(grand.bytes),
        state.last_sequence
    )?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_picks_a_unit() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 30), "5.0 GiB");
    }
}
