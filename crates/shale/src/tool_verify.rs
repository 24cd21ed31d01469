//! `shale tool verify DIR`: checks every checksum and structural invariant of a database
//! directory without opening the database, and reports every problem found.
//!
//! What is checked, in order (each step goes on after a problem in an earlier one, so one run
//! reports everything it can reach):
//! 1. `CURRENT`: its checksum, and that the MANIFEST it names exists. If it is damaged, the
//!    newest `MANIFEST-*` in the directory is checked in its place.
//! 2. The MANIFEST: every record's checksum (a torn last record too), every edit's encoding,
//!    and the level invariants as edits are applied (L0 newest first; deeper levels sorted and
//!    non-overlapping), checked again on the final shape.
//! 3. Every `OPTIONS-*` file: its checksum and syntax.
//! 4. Every `*.wal` file: every record's checksum and write batch.
//! 5. Every live table: present, its size equal to the MANIFEST's, every block's checksum
//!    (`Table::layout`), and every entry and range tombstone inside the MANIFEST's
//!    smallest/largest keys and sequence range. Tables the MANIFEST does not list are checked
//!    too and noted as orphans (opening the database deletes them), which is not a problem.
//!    A table is called an orphan only when the whole MANIFEST read cleanly: when its tail is
//!    torn, the records before it are checked (as opening would read them) and the tables
//!    they do not list are reported as possibly live, since the lost records may list them;
//!    when it does not replay at all, nothing is called an orphan.
//!
//! Exit codes follow [`crate::output`]: 0 when clean, 2 when any problem is found, 1 when the
//! directory cannot be read at all.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use indicatif::ProgressBar;
use serde_json::{json, Value};
use shale_engine::inspect::blob::{
    blob_file_name, parse_blob_file_name, record_size, scan_blob_file, BlobReference, FOOTER_SIZE,
    HEADER_SIZE,
};
use shale_engine::inspect::wal::{LogEnd, LogReader, RecoveryMode};
use shale_engine::inspect::Version;
use shale_engine::inspect::{
    live_manifest, parse_table_file_name, read_manifest, table_file_name, ManifestState,
    CURRENT_FILE_NAME,
};
use shale_engine::inspect::{
    parse_manifest_file_name, parse_options_file_name, FileMetaData, OptionsFile,
};
use shale_engine::WriteBatch;
use shale_fs::{FileSystem, OsFs};
use shale_sst::{
    BytewiseComparator, Comparator, InternalKeyComparator, ParsedInternalKey, ReadOptions, Table,
    TableOpenOptions, ValueKind,
};

use crate::output::{print_json, progress, Failure};
use crate::tool_wal::log_files;

/// Flags of `shale tool verify`.
#[derive(Debug, Args)]
pub struct VerifyToolArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One thing found wrong.
#[derive(Debug, Clone)]
struct Problem {
    file: PathBuf,
    offset: Option<u64>,
    detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(
                f,
                "{} at offset {offset}: {}",
                self.file.display(),
                self.detail
            ),
            None => write!(f, "{}: {}", self.file.display(), self.detail),
        }
    }
}

impl Problem {
    fn new(file: &Path, offset: Option<u64>, detail: impl Into<String>) -> Self {
        Problem {
            file: file.to_path_buf(),
            offset,
            detail: detail.into(),
        }
    }

    /// A problem from an engine error about `file`, keeping the file and offset it names.
    fn from_engine(file: &Path, error: &shale_engine::Error) -> Self {
        match error {
            shale_engine::Error::Corruption {
                file,
                offset,
                detail,
            } => Problem::new(file, Some(*offset), detail.clone()),
            shale_engine::Error::Sst(e) => Problem::from_sst(file, e),
            shale_engine::Error::Io(e) => Problem::from_fs(e),
            other => Problem::new(file, None, other.to_string()),
        }
    }

    fn from_sst(file: &Path, error: &shale_sst::Error) -> Self {
        match error {
            shale_sst::Error::Corruption {
                file,
                offset,
                detail,
            } => Problem::new(file, Some(*offset), detail.clone()),
            shale_sst::Error::Io(e) => Problem::from_fs(e),
            other => Problem::new(file, None, other.to_string()),
        }
    }

    fn from_fs(error: &shale_fs::Error) -> Self {
        let offset = match error {
            shale_fs::Error::UnexpectedEof { offset, .. } => Some(*offset),
            _ => None,
        };
        Problem::new(error.path(), offset, error.to_string())
    }

    fn json(&self) -> Value {
        json!({
            "file": self.file.display().to_string(),
            "offset": self.offset,
            "detail": self.detail,
        })
    }
}

/// The result shown for a file with problems; the problems follow the list.
const PROBLEM: &str = "PROBLEM (see below)";

/// What one run found.
struct Report {
    dir: PathBuf,
    json: bool,
    /// One line per file checked: (file, what was found).
    checked: Vec<(String, String)>,
    problems: Vec<Problem>,
    notes: Vec<String>,
}

impl Report {
    fn ok(&mut self, file: &Path, what: String) {
        self.checked.push((self.name(file), what));
    }

    fn problem(&mut self, problem: Problem) {
        let line = (self.name(&problem.file), PROBLEM.to_owned());
        if self.checked.last() != Some(&line) {
            self.checked.push(line);
        }
        self.problems.push(problem);
    }

    /// A file's name relative to the database directory, for the list of checked files.
    fn name(&self, file: &Path) -> String {
        file.strip_prefix(&self.dir)
            .unwrap_or(file)
            .display()
            .to_string()
    }
}

/// Runs the tool.
pub fn run(args: &VerifyToolArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(Failure::error(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let names = fs.list(dir)?;
    let is_database = names
        .iter()
        .any(|n| n == CURRENT_FILE_NAME || parse_manifest_file_name(n).is_some());
    if !is_database {
        return Err(Failure::error(format!(
            "no database in {}: neither {CURRENT_FILE_NAME} nor a MANIFEST is there",
            dir.display()
        )));
    }
    let total: u64 = names
        .iter()
        .map(|name| fs.size(&dir.join(name)).unwrap_or(0))
        .sum();
    let bar = progress(total, "verifying");
    let mut report = Report {
        dir: dir.clone(),
        json: args.json,
        checked: Vec::new(),
        problems: Vec::new(),
        notes: Vec::new(),
    };
    let (state, complete) = check_manifest(&fs, dir, &names, &mut report, &bar);
    check_options(&fs, dir, &names, &mut report, &bar);
    check_wals(&fs, dir, state.as_ref(), &mut report, &bar)?;
    let references = check_tables(
        &fs,
        dir,
        &names,
        state.as_ref(),
        complete,
        &mut report,
        &bar,
    );
    check_blob_files(
        &fs,
        dir,
        &names,
        state.as_ref(),
        &references,
        &mut report,
        &bar,
    );
    bar.finish_and_clear();
    print(&report)?;
    if report.problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::Corruption(format!(
            "{} problems found in {}",
            report.problems.len(),
            dir.display()
        )))
    }
}

fn print(report: &Report) -> Result<(), Failure> {
    if report.json {
        return print_json(&json!({
            "dir": report.dir.display().to_string(),
            "ok": report.problems.is_empty(),
            "checked": report.checked.iter()
                .map(|(file, what)| json!({ "file": file, "result": what }))
                .collect::<Vec<_>>(),
            "problems": report.problems.iter().map(Problem::json).collect::<Vec<_>>(),
            "notes": report.notes,
        }));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(out, "verify {}", report.dir.display())?;
    for (file, what) in &report.checked {
        writeln!(out, "  {file}: {what}")?;
    }
    for note in &report.notes {
        writeln!(out, "note: {note}")?;
    }
    for problem in &report.problems {
        writeln!(out, "problem: {problem}")?;
    }
    if report.problems.is_empty() {
        writeln!(out, "ok: no problems found")?;
    } else {
        writeln!(out, "{} problems found", report.problems.len())?;
    }
    out.flush()?;
    Ok(())
}

/// Steps 1 and 2: `CURRENT` and the MANIFEST it names. Returns the shape when the MANIFEST
/// replays (up to a torn tail), and whether it replayed whole.
fn check_manifest(
    fs: &OsFs,
    dir: &Path,
    names: &[String],
    report: &mut Report,
    bar: &ProgressBar,
) -> (Option<ManifestState>, bool) {
    let current = dir.join(CURRENT_FILE_NAME);
    // Only the MANIFEST CURRENT names says which tables are orphans.
    let mut current_names_it = true;
    let manifest = match live_manifest(fs, dir) {
        Ok(path) => {
            report.ok(&current, format!("ok, names {}", report.name(&path)));
            path
        }
        Err(e) => {
            report.problem(Problem::from_engine(&current, &e));
            let Some(newest) = names
                .iter()
                .filter_map(|n| parse_manifest_file_name(n).map(|number| (number, n)))
                .max()
            else {
                return (None, false);
            };
            report.notes.push(format!(
                "CURRENT is unusable; checked the newest MANIFEST, {}, in its place",
                newest.1
            ));
            current_names_it = false;
            dir.join(newest.1)
        }
    };
    let mut records = 0u64;
    let replayed = read_manifest(
        fs,
        &manifest,
        &(Arc::new(BytewiseComparator) as Arc<dyn Comparator>),
        RecoveryMode::AbsoluteConsistency,
        &mut |_, _| records += 1,
    );
    bar.inc(fs.size(&manifest).unwrap_or(0));
    match replayed {
        Ok(state) => {
            report.ok(
                &manifest,
                format!(
                    "ok, {records} records, {} live tables, last sequence {}",
                    state.version.total_files(),
                    state.last_sequence
                ),
            );
            for problem in level_problems(&state.version, &manifest) {
                report.problem(problem);
            }
            (Some(state), current_names_it)
        }
        Err(e) => {
            report.problem(Problem::from_engine(&manifest, &e));
            // What opening reads: the records before a torn tail.
            let tolerant = read_manifest(
                fs,
                &manifest,
                &(Arc::new(BytewiseComparator) as Arc<dyn Comparator>),
                RecoveryMode::TolerateCorruptedTailRecords,
                &mut |_, _| {},
            );
            let Ok(state) = tolerant else {
                report.notes.push(format!(
                    "{} does not replay, so which tables are live is unknown: do not delete \
                     any; `shale tool repair` keeps every readable table",
                    report.name(&manifest)
                ));
                return (None, false);
            };
            report.notes.push(format!(
                "{} has a torn or damaged tail (the problem below); the tables are checked \
                 against the {} live tables its records before it list, as opening reads it. \
                 Tables they do not list may be live (the lost records may list them): do not \
                 delete them; `shale tool repair` keeps every readable table",
                report.name(&manifest),
                state.version.total_files()
            ));
            for problem in level_problems(&state.version, &manifest) {
                report.problem(problem);
            }
            (Some(state), false)
        }
    }
}

/// The level invariants of docs/architecture.md checked on the final shape (replay checks
/// them edit by edit; this makes the report independent of how replay did it).
fn level_problems(version: &Version, manifest: &Path) -> Vec<Problem> {
    let user: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let mut problems = Vec::new();
    for (keyspace, _) in version.keyspaces() {
        let l0 = version.files(keyspace, 0);
        for pair in l0.windows(2) {
            let newer = (pair[0].largest_seqno, pair[0].number);
            let older = (pair[1].largest_seqno, pair[1].number);
            if newer < older {
                problems.push(Problem::new(
                    manifest,
                    None,
                    format!(
                        "keyspace {keyspace} L0 is not newest first: {:06} (seqno up to {}) \
                         comes before {:06} (seqno up to {})",
                        pair[0].number,
                        pair[0].largest_seqno,
                        pair[1].number,
                        pair[1].largest_seqno
                    ),
                ));
            }
        }
        for level in 1..version.num_levels() {
            for pair in version.files(keyspace, level).windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                let order = user.compare(a.largest.user_key(), b.smallest.user_key());
                let ok = order == Ordering::Less
                    || (order == Ordering::Equal && a.largest_is_exclusive());
                if !ok {
                    problems.push(Problem::new(
                        manifest,
                        None,
                        format!(
                            "keyspace {keyspace} L{level}: {:06} ends at {} but the next \
                             file {:06} starts at {} (files of L1 and deeper must be sorted \
                             and must not overlap)",
                            a.number,
                            shale_sst::describe_internal_key(a.largest.encoded()),
                            b.number,
                            shale_sst::describe_internal_key(b.smallest.encoded())
                        ),
                    ));
                }
            }
        }
    }
    problems
}

/// Step 3: every OPTIONS file.
fn check_options(fs: &OsFs, dir: &Path, names: &[String], report: &mut Report, bar: &ProgressBar) {
    let mut files: Vec<&String> = names
        .iter()
        .filter(|n| parse_options_file_name(n).is_some())
        .collect();
    files.sort();
    for name in files {
        let path = dir.join(name);
        let read = (|| -> shale_engine::Result<OptionsFile> {
            let file = fs.open_read(&path)?;
            let size = file.size()?;
            let size = usize::try_from(size).map_err(|_| shale_engine::Error::Corruption {
                file: path.clone(),
                offset: 0,
                detail: "too large to be an OPTIONS file".to_owned(),
            })?;
            let mut bytes = vec![0; size];
            file.read_exact_at(0, &mut bytes)?;
            OptionsFile::decode(&bytes, &path)
        })();
        bar.inc(fs.size(&path).unwrap_or(0));
        match read {
            Ok(_) => report.ok(&path, "ok".to_owned()),
            Err(e) => report.problem(Problem::from_engine(&path, &e)),
        }
    }
}

/// Step 4: every WAL file, every record, read as opening would (up to an end an earlier open
/// recorded in the MANIFEST). Data opening would drop (a torn tail of the newest WAL) is a
/// problem that says what would be dropped; damage anywhere else is corruption opening refuses.
fn check_wals(
    fs: &OsFs,
    dir: &Path,
    state: Option<&ManifestState>,
    report: &mut Report,
    bar: &ProgressBar,
) -> Result<(), Failure> {
    let logs = log_files(fs, dir)?;
    let newest = logs.last().map(|(number, _)| *number);
    for (number, path) in logs {
        let recorded_end = state.and_then(|s| s.version.wal_end(number));
        let read = read_wal_file(fs, &path, number, recorded_end);
        bar.inc(fs.size(&path).unwrap_or(0));
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                report.problem(Problem::from_engine(&path, &e));
                continue;
            }
        };
        let summary = format!("{} records, {} entries", read.records, read.entries);
        let synced = state
            .and_then(|s| s.version.wal_synced(number))
            .filter(|_| recorded_end.is_none());
        if let Some(synced) = synced.filter(|synced| read.end < *synced) {
            report.problem(Problem::new(
                &path,
                Some(read.end),
                format!(
                    "synced data lost: its valid records end at {} ({summary} before), but \
                     the MANIFEST records it synced to {synced} bytes; acknowledged writes are \
                     missing and opening refuses it (restore the file if a copy exists, else \
                     `shale tool repair`, or `--wal_recovery_mode point-in-time` for the state \
                     before the damage)",
                    read.end
                ),
            ));
            continue;
        }
        if let Some((offset, bytes)) = read.torn {
            let seqno = if read.last_seqno > 0 {
                format!(", the writes from seqno {} on", read.last_seqno + 1)
            } else {
                String::new()
            };
            let detail = if Some(number) == newest && recorded_end.is_none() {
                format!(
                    "torn tail: {bytes} bytes after the last complete record ({summary} \
                     before it) do not read as a complete record; opening drops them{seqno} \
                     (the default recovery mode tolerates a torn write the crash interrupted; \
                     `--wal_recovery_mode absolute-consistency` refuses to open instead)"
                )
            } else {
                format!(
                    "damaged where it cannot be a torn tail ({bytes} bytes from here to the \
                     end{}): opening refuses it as corruption; `shale tool repair` salvages the \
                     {summary} before it",
                    if recorded_end.is_some() {
                        " of the data an earlier open recorded"
                    } else {
                        ", and newer WALs follow"
                    }
                )
            };
            report.problem(Problem::new(&path, Some(offset), detail));
            continue;
        }
        if let Some(recorded) = recorded_end.filter(|r| *r != read.end) {
            report.problem(Problem::new(
                &path,
                Some(read.end),
                format!(
                    "its records end at {}, but the MANIFEST records its valid data ending at \
                     {recorded}: data an earlier open recovered is lost; opening refuses it",
                    read.end
                ),
            ));
            continue;
        }
        match recorded_end {
            Some(recorded) => report.ok(
                &path,
                format!("ok, {summary} up to the end an earlier open recorded ({recorded})"),
            ),
            None => report.ok(&path, format!("ok, {summary}")),
        }
    }
    Ok(())
}

/// Reads one WAL as opening would (in the default recovery mode, up to `recorded_end`).
fn read_wal_file(
    fs: &OsFs,
    path: &Path,
    number: u64,
    recorded_end: Option<u64>,
) -> shale_engine::Result<WalRead> {
    let file = fs.open_read(path)?;
    let mut reader = LogReader::with_end(
        file,
        number,
        RecoveryMode::TolerateCorruptedTailRecords,
        recorded_end,
    )?;
    let mut read = WalRead::default();
    while let Some((record, offset)) = reader.read_record()? {
        let version = reader.format_version();
        let batch = WriteBatch::from_wal_record(record, version, path, offset)?;
        read.records += 1;
        read.entries += u64::from(batch.count());
        if batch.count() > 0 {
            read.last_seqno = batch.first_seqno() + u64::from(batch.count()) - 1;
        }
    }
    read.end = reader.last_record_end();
    if let Some(LogEnd::TornTail { offset, bytes }) = reader.end() {
        read.torn = Some((*offset, *bytes));
    }
    Ok(read)
}

/// What reading one WAL found.
#[derive(Default)]
struct WalRead {
    records: u64,
    entries: u64,
    /// The last sequence number read (0: none).
    last_seqno: u64,
    /// Where the last complete record ends.
    end: u64,
    /// A torn tail: (offset, bytes).
    torn: Option<(u64, u64)>,
}

/// Live references per blob file, as (records, record bytes).
type BlobReferences = BTreeMap<u64, (u64, u64)>;

/// Step 5: live tables against the MANIFEST, then tables it does not list. Returns the blob
/// references the live tables hold.
fn check_tables(
    fs: &OsFs,
    dir: &Path,
    names: &[String],
    state: Option<&ManifestState>,
    complete: bool,
    report: &mut Report,
    bar: &ProgressBar,
) -> BlobReferences {
    let mut live = BTreeSet::new();
    let mut references = BlobReferences::new();
    if let Some(state) = state {
        for (keyspace, level, meta) in state.version.all_files() {
            live.insert(meta.number);
            let path = table_file_name(dir, meta.number);
            let problems = check_live_table(fs, &path, meta, &state.version, &mut references);
            bar.inc(meta.size);
            let place = format!("keyspace {keyspace} L{level}");
            match problems {
                Ok(summary) => report.ok(&path, format!("ok, {summary} ({place})")),
                Err(problems) => {
                    for p in problems {
                        report.problem(Problem {
                            detail: format!("{} ({place})", p.detail),
                            ..p
                        });
                    }
                }
            }
        }
    }
    let mut orphans: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_table_file_name(n))
        .filter(|n| !live.contains(n))
        .collect();
    orphans.sort_unstable();
    for number in orphans {
        let path = table_file_name(dir, number);
        bar.inc(fs.size(&path).unwrap_or(0));
        match open_and_walk(fs, &path, None) {
            Ok((table, blocks)) => {
                let entries = table.properties().num_entries;
                let what = if state.is_some() && complete {
                    report.notes.push(format!(
                        "{} is not in the MANIFEST (an orphan, e.g. from a crash; opening the \
                         database deletes it)",
                        report.name(&path)
                    ));
                    "not in the MANIFEST"
                } else if state.is_some() {
                    "not in the MANIFEST checked (its tail is damaged, or CURRENT does not name \
                     it): may be live, keep it"
                } else {
                    "the MANIFEST is unreadable: may be live, keep it"
                };
                report.ok(
                    &path,
                    format!("ok, {blocks} blocks, {entries} entries ({what})"),
                );
            }
            Err(p) => report.problem(p),
        }
    }
    references
}

/// Step 6: live blob files against the MANIFEST and the tables' references, then blob files
/// it does not list.
fn check_blob_files(
    fs: &OsFs,
    dir: &Path,
    names: &[String],
    state: Option<&ManifestState>,
    references: &BlobReferences,
    report: &mut Report,
    bar: &ProgressBar,
) {
    let live = state
        .map(|s| s.version.blob_files().clone())
        .unwrap_or_default();
    for meta in live.values() {
        let path = blob_file_name(dir, meta.number);
        bar.inc(meta.file_size());
        let summary = match scan_blob_file(fs, &path, &mut |_, _| Ok(())) {
            Ok(summary) => summary,
            Err(e) => {
                report.problem(Problem::from_engine(&path, &e));
                continue;
            }
        };
        let footer = summary.footer;
        let mut problems = Vec::new();
        if summary.header.keyspace != meta.keyspace {
            problems.push(format!(
                "the file belongs to keyspace {}, the MANIFEST says {}",
                summary.header.keyspace, meta.keyspace
            ));
        }
        if (footer.record_count, footer.record_bytes) != (meta.total_count, meta.total_bytes) {
            problems.push(format!(
                "the file holds {} records in {} bytes, the MANIFEST says {} in {}",
                footer.record_count, footer.record_bytes, meta.total_count, meta.total_bytes
            ));
        }
        let from_tables = references.get(&meta.number).copied().unwrap_or((0, 0));
        let live_records = (
            meta.total_count - meta.garbage_count,
            meta.total_bytes - meta.garbage_bytes,
        );
        if from_tables != live_records {
            problems.push(format!(
                "the tables reference {} records ({} bytes), the MANIFEST's garbage leaves {} \
                 ({} bytes) live",
                from_tables.0, from_tables.1, live_records.0, live_records.1
            ));
        }
        if problems.is_empty() {
            report.ok(
                &path,
                format!(
                    "ok, {} records, {} bytes, {:.1}% live (keyspace {})",
                    footer.record_count,
                    footer.record_bytes,
                    meta.live_ratio() * 100.0,
                    meta.keyspace
                ),
            );
        } else {
            for detail in problems {
                report.problem(Problem::new(&path, None, detail));
            }
        }
    }
    let mut orphans: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_blob_file_name(n))
        .filter(|n| !live.contains_key(n))
        .collect();
    orphans.sort_unstable();
    for number in orphans {
        let path = blob_file_name(dir, number);
        bar.inc(fs.size(&path).unwrap_or(0));
        match scan_blob_file(fs, &path, &mut |_, _| Ok(())) {
            Ok(summary) => {
                if state.is_some() {
                    report.notes.push(format!(
                        "{} is not in the MANIFEST (an orphan, e.g. from a crash; opening the \
                         database deletes it)",
                        report.name(&path)
                    ));
                }
                report.ok(
                    &path,
                    format!(
                        "ok, {} records (not in the MANIFEST)",
                        summary.footer.record_count
                    ),
                );
            }
            Err(e) => report.problem(Problem::from_engine(&path, &e)),
        }
    }
}

/// Opens a table (an ingested one with its global seqno) and reads every block, checking
/// checksums: the table and its block count.
fn open_and_walk(
    fs: &OsFs,
    path: &Path,
    global_seqno: Option<shale_sst::SeqNo>,
) -> Result<(Arc<Table>, usize), Problem> {
    let options = TableOpenOptions {
        global_seqno,
        ..TableOpenOptions::default()
    };
    let table = Table::open(fs, path, &options).map_err(|e| Problem::from_sst(path, &e))?;
    let layout = table.layout().map_err(|e| Problem::from_sst(path, &e))?;
    Ok((table, layout.blocks.len()))
}

/// Checks one live table against its MANIFEST entry (and its blob references against the
/// Version's blob files, counting them into `references`); a summary when clean.
fn check_live_table(
    fs: &OsFs,
    path: &Path,
    meta: &FileMetaData,
    version: &Version,
    references: &mut BlobReferences,
) -> Result<String, Vec<Problem>> {
    let size = match fs.size(path) {
        Ok(size) => size,
        Err(e) if e.is_not_found() => {
            return Err(vec![Problem::new(
                path,
                None,
                "missing: the MANIFEST lists this live table but the file does not exist",
            )]);
        }
        Err(e) => return Err(vec![Problem::from_fs(&e)]),
    };
    let mut problems = Vec::new();
    if size != meta.size {
        problems.push(Problem::new(
            path,
            Some(size.min(meta.size)),
            format!(
                "the file is {size} bytes but the MANIFEST says {} ({})",
                meta.size,
                if size < meta.size {
                    "truncated"
                } else {
                    "grown"
                }
            ),
        ));
    }
    let (table, blocks) = match open_and_walk(fs, path, meta.global_seqno) {
        Ok(opened) => opened,
        Err(p) => {
            problems.push(p);
            return Err(problems);
        }
    };
    let entries = match check_contents(&table, path, meta, version, references, &mut problems) {
        Ok(entries) => entries,
        Err(p) => {
            problems.push(p);
            return Err(problems);
        }
    };
    if problems.is_empty() {
        Ok(format!("{blocks} blocks, {entries} entries"))
    } else {
        Err(problems)
    }
}

/// Checks the blob reference `value` of `user_key`: it decodes, and points into a live blob
/// file, inside its records. Counts it into `references`.
fn check_reference(
    user_key: &[u8],
    value: &[u8],
    version: &Version,
    references: &mut BlobReferences,
) -> Result<(), String> {
    let key = shale_sst::printable(user_key);
    let reference = BlobReference::decode(value).map_err(|(detail, _)| {
        format!("the blob reference of key {key} does not decode: {detail}")
    })?;
    let Some(blob) = version.blob_files().get(&reference.file_number) else {
        return Err(format!(
            "key {key} references blob file {:06}, which is not live",
            reference.file_number
        ));
    };
    let size = record_size(user_key.len(), u64::from(reference.value_len));
    let records_end = blob.file_size() - FOOTER_SIZE;
    if reference.offset < HEADER_SIZE || reference.offset.saturating_add(size) > records_end {
        return Err(format!(
            "key {key} references a {size}-byte record at offset {} of blob file {:06}, outside \
             its records ({HEADER_SIZE}..{records_end})",
            reference.offset, reference.file_number
        ));
    }
    let entry = references.entry(reference.file_number).or_default();
    entry.0 += 1;
    entry.1 += size;
    Ok(())
}

/// Walks every entry and range tombstone of `table`, checking each lies inside the MANIFEST's
/// key and sequence ranges for it (a key outside would be invisible to reads that trust
/// the MANIFEST). Returns the number of entries.
fn check_contents(
    table: &Arc<Table>,
    path: &Path,
    meta: &FileMetaData,
    version: &Version,
    references: &mut BlobReferences,
    problems: &mut Vec<Problem>,
) -> Result<u64, Problem> {
    let user: Arc<dyn Comparator> = Arc::new(BytewiseComparator);
    let icmp = InternalKeyComparator::new(user.clone());
    let mut iter = table.iter(ReadOptions {
        skip_cache_fill: true,
        ..ReadOptions::default()
    });
    let (mut first, mut last): (Option<Vec<u8>>, Option<Vec<u8>>) = (None, None);
    let (mut min_seqno, mut max_seqno) = (u64::MAX, 0u64);
    let mut entries = 0u64;
    iter.seek_to_first();
    while iter.valid() {
        let key = ParsedInternalKey::parse(iter.key()).map_err(|e| {
            Problem::new(
                path,
                None,
                format!("entry {entries} has an undecodable key: {e}"),
            )
        })?;
        min_seqno = min_seqno.min(key.seqno);
        max_seqno = max_seqno.max(key.seqno);
        if key.kind == ValueKind::BlobIndex {
            if let Err(detail) = check_reference(key.user_key, iter.value(), version, references) {
                problems.push(Problem::new(path, None, detail));
            }
        }
        if first.is_none() {
            first = Some(iter.key().to_vec());
        }
        last = Some(iter.key().to_vec());
        entries += 1;
        iter.next();
    }
    iter.status().map_err(|e| Problem::from_sst(path, &e))?;
    let describe = shale_sst::describe_internal_key;
    if let Some(first) = &first {
        if icmp.compare(first, meta.smallest.encoded()) == Ordering::Less {
            problems.push(Problem::new(
                path,
                None,
                format!(
                    "the first entry {} sorts before the MANIFEST's smallest key {}",
                    describe(first),
                    describe(meta.smallest.encoded())
                ),
            ));
        }
    }
    if let Some(last) = &last {
        if icmp.compare(last, meta.largest.encoded()) == Ordering::Greater {
            problems.push(Problem::new(
                path,
                None,
                format!(
                    "the last entry {} sorts after the MANIFEST's largest key {}",
                    describe(last),
                    describe(meta.largest.encoded())
                ),
            ));
        }
    }
    for t in table.range_tombstones() {
        min_seqno = min_seqno.min(t.seqno);
        max_seqno = max_seqno.max(t.seqno);
        let below = user.compare(&t.start, meta.smallest.user_key()) == Ordering::Less;
        let above = user.compare(&t.end, meta.largest.user_key()) == Ordering::Greater;
        if below || above {
            problems.push(Problem::new(
                path,
                None,
                format!(
                    "range tombstone [{} .. {})@{} reaches outside the MANIFEST's key range \
                     [{} .. {}]",
                    shale_sst::printable(&t.start),
                    shale_sst::printable(&t.end),
                    t.seqno,
                    describe(meta.smallest.encoded()),
                    describe(meta.largest.encoded())
                ),
            ));
        }
    }
    if min_seqno <= max_seqno && (min_seqno < meta.smallest_seqno || max_seqno > meta.largest_seqno)
    {
        problems.push(Problem::new(
            path,
            None,
            format!(
                "entries hold seqnos {min_seqno}..{max_seqno}, outside the MANIFEST's range \
                 {}..{}",
                meta.smallest_seqno, meta.largest_seqno
            ),
        ));
    }
    Ok(entries)
}
