//! Data-driven tests of the picker: every file under `testdata/compaction/` holds cases of an
//! LSM shape written as text and what the picker makes of it. Regenerate the expected output
//! with `SHALE_REGENERATE=1 cargo test -p shale-engine --lib picker` (then read the diff).
//!
//! A case:
//!
//! ```text
//! case L0 reaches its trigger
//! options level0_compaction_trigger=2 max_bytes_for_level_base=1000
//! L0 a..c:100 b..d:100
//! L6 a..z:5000
//! pick
//! ----
//! <expected output>
//! ```
//!
//! - `options` sets keyspace options by their OPTIONS-file names (the rest are defaults);
//!   `levels=N` sets the number of levels (default 7), `now=T` the clock in seconds (default
//!   1000000).
//! - `Ln` lines list files as `smallest..largest:size` (user keys; `largest)` marks an exclusive
//!   largest key, the end of a clipped range tombstone), optionally followed by `:dD/E` (D
//!   deletions among E entries; default none of 1), `:tT` (oldest entry written at T) and `:bN`
//!   (its oldest blob reference is into blob file N). Files are numbered from 1 in the order
//!   written; earlier files get larger sequence numbers, so L0 is listed newest first and upper
//!   levels are newer than lower ones.
//! - `blob N T:G` lines add blob file N (number it above the tables) with T record bytes of
//!   which G are garbage (one record a byte).
//! - Commands: `pick` (the automatic choice), `idle` (the idle compaction) and
//!   `manual Ln [start..end]`. Each prints the level
//!   targets and scores, then the compaction or `none`. `pick` may name what running
//!   compactions claim: `busy=N,M` (file numbers; an L0 one means an L0 compaction runs) and
//!   `writing=Ln:a..b` (an output range, repeatable).
//! - Expected output runs to the next blank line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_fs::{FileSystem, MemFs, OsFs};
use shale_sst::{BytewiseComparator, InternalKey, ValueKind, MAX_SEQNO};

use super::picker::{
    estimated_pending_bytes, level_targets, pick, pick_idle, pick_manual, scores, Busy, OutputRange,
};
use crate::blob::BlobFileMeta;
use crate::options::KeyspaceOptions;
use crate::table_cache::PinnedTable;
use crate::version::{FileMetaData, Version, VersionEdit, VersionSet};

struct Case {
    header: String,
    input: Vec<String>,
    expected: Vec<String>,
}

fn parse_cases(text: &str, path: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with("case ") {
            assert!(
                line.trim().is_empty() || line.starts_with('#'),
                "{}: expected `case <name>`, found {line:?}",
                path.display()
            );
            continue;
        }
        let mut input = Vec::new();
        for line in lines.by_ref() {
            if line == "----" {
                break;
            }
            input.push(line.to_owned());
        }
        let mut expected = Vec::new();
        while let Some(line) = lines.next_if(|l| !l.trim().is_empty()) {
            expected.push(line.to_owned());
        }
        cases.push(Case {
            header: line.to_owned(),
            input,
            expected,
        });
    }
    cases
}

fn file_meta(number: u64, spec: &str, seqno: u64) -> FileMetaData {
    let mut parts = spec.split(':');
    let (range, size) = parts
        .next()
        .zip(parts.next())
        .unwrap_or_else(|| panic!("file {spec:?} is not smallest..largest:size"));
    let (mut num_entries, mut num_deletions, mut oldest_entry_time) = (1, 0, None);
    let mut oldest_blob_file = None;
    for attribute in parts {
        if let Some((deletions, entries)) =
            attribute.strip_prefix('d').and_then(|a| a.split_once('/'))
        {
            num_deletions = deletions.parse().expect("dD/E: deletions");
            num_entries = entries.parse().expect("dD/E: entries");
        } else if let Some(time) = attribute.strip_prefix('t') {
            oldest_entry_time = Some(time.parse().expect("tT: seconds"));
        } else if let Some(number) = attribute.strip_prefix('b') {
            oldest_blob_file = Some(number.parse().expect("bN: blob file number"));
        } else {
            panic!("file {spec:?}: unknown attribute {attribute:?}");
        }
    }
    let (smallest, largest) = range
        .split_once("..")
        .unwrap_or_else(|| panic!("file {spec:?} is not smallest..largest:size"));
    let largest = match largest.strip_suffix(')') {
        Some(user) => InternalKey::new(user.as_bytes(), MAX_SEQNO, ValueKind::RangeDeletion),
        None => InternalKey::new(largest.as_bytes(), seqno, ValueKind::Value),
    };
    FileMetaData {
        number,
        size: size
            .parse()
            .unwrap_or_else(|_| panic!("bad size in {spec:?}")),
        smallest: InternalKey::new(smallest.as_bytes(), seqno, ValueKind::Value),
        largest,
        smallest_seqno: seqno,
        largest_seqno: seqno,
        num_entries,
        num_deletions,
        creation_time: None,
        oldest_entry_time,
        global_seqno: None,
        oldest_blob_file,
        pinned_table: PinnedTable::default(),
    }
}

/// A `blob N T:G` line's blob file.
fn blob_meta(spec: &str) -> BlobFileMeta {
    let (number, sizes) = spec.split_once(' ').expect("blob N T:G");
    let (total, garbage) = sizes.split_once(':').expect("blob N T:G");
    let (total, garbage): (u64, u64) = (
        total.parse().expect("T: bytes"),
        garbage.parse().expect("G: bytes"),
    );
    BlobFileMeta {
        number: number.parse().expect("N: blob file number"),
        keyspace: 0,
        total_count: total,
        total_bytes: total,
        garbage_count: garbage,
        garbage_bytes: garbage,
    }
}

/// Runs one case and returns its output.
fn run_case(case: &Case) -> String {
    let mut options_pairs = Vec::new();
    let mut num_levels = 7;
    let mut now = 1_000_000;
    let mut files: Vec<(usize, String)> = Vec::new();
    let mut blobs: Vec<BlobFileMeta> = Vec::new();
    let mut commands = Vec::new();
    for line in &case.input {
        let (word, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        if word == "options" {
            for pair in rest.split_whitespace() {
                let (key, value) = pair.split_once('=').expect("options take key=value");
                if key == "levels" {
                    num_levels = value.parse().expect("levels=N");
                } else if key == "now" {
                    now = value.parse().expect("now=T");
                } else {
                    options_pairs.push((key.to_owned(), value.to_owned()));
                }
            }
        } else if let Some(level) = word.strip_prefix('L').and_then(|l| l.parse::<usize>().ok()) {
            files.extend(rest.split_whitespace().map(|f| (level, f.to_owned())));
        } else if word == "blob" {
            blobs.push(blob_meta(rest));
        } else if word == "pick" || word == "manual" || word == "idle" {
            commands.push(line.clone());
        } else if !line.trim().is_empty() {
            panic!("{}: unknown line {line:?}", case.header);
        }
    }
    let defaults = KeyspaceOptions::default();
    let options = KeyspaceOptions::from_pairs(&options_pairs, &defaults);
    for (key, value) in &options_pairs {
        let applied = options
            .to_pairs()
            .into_iter()
            .any(|(k, v)| k == *key && v == *value);
        assert!(
            applied,
            "{}: option {key}={value} was not applied",
            case.header
        );
    }
    let version = build_version(&files, &blobs, num_levels);
    let mut out = String::new();
    for command in commands {
        let _ = writeln!(out, "> {command}");
        let targets = level_targets(&version, 0, &options);
        let _ = write!(out, "base L{} targets", targets.base_level);
        for (level, bytes) in targets.max_bytes.iter().enumerate() {
            if *bytes != u64::MAX {
                let _ = write!(out, " L{level}={bytes}");
            }
        }
        let _ = write!(out, "\nscores");
        for (level, score) in scores(&version, 0, &options, &targets) {
            let _ = write!(out, " L{level}={score:.2}");
        }
        let pending = estimated_pending_bytes(&version, 0, &options);
        let _ = writeln!(out, "\npending {pending}");
        let picked = if let Some(claims) = command.strip_prefix("pick") {
            pick(&version, 0, &options, now, &busy(&version, claims))
        } else if command == "idle" {
            pick_idle(&version, 0, &options)
        } else {
            let mut words = command.split_whitespace().skip(1);
            let level = words
                .next()
                .and_then(|l| l.strip_prefix('L'))
                .and_then(|l| l.parse().ok())
                .expect("manual Ln [start..end]");
            let range = words
                .next()
                .map(|r| r.split_once("..").expect("start..end"));
            pick_manual(
                &version,
                0,
                &options,
                level,
                range.map(|(s, _)| s.as_bytes()),
                range.map(|(_, e)| e.as_bytes()),
            )
        };
        match picked {
            Some(compaction) => {
                let _ = writeln!(out, "{compaction}");
            }
            None => out.push_str("none\n"),
        }
    }
    out
}

/// The claims a `pick` line names (`busy=N,M writing=Ln:a..b`).
fn busy(version: &Version, claims: &str) -> Busy {
    let mut busy = Busy::default();
    for word in claims.split_whitespace() {
        if let Some(numbers) = word.strip_prefix("busy=") {
            for number in numbers.split(',') {
                let number: u64 = number.parse().expect("busy=N,M: file numbers");
                busy.level0 |= version.files(0, 0).iter().any(|f| f.number == number);
                busy.files.insert(number);
            }
        } else if let Some(range) = word.strip_prefix("writing=L") {
            let (level, keys) = range.split_once(':').expect("writing=Ln:a..b");
            let (smallest, largest) = keys.split_once("..").expect("writing=Ln:a..b");
            busy.outputs.push(OutputRange {
                level: level.parse().expect("writing=Ln: a level"),
                smallest: smallest.as_bytes().to_vec(),
                largest: largest.as_bytes().to_vec(),
            });
        } else {
            panic!("pick: unknown claim {word:?}");
        }
    }
    busy
}

/// The version holding `files`, built through a `VersionSet` so an impossible shape (an
/// overlap in L1+) fails the case instead of testing the picker on it.
fn build_version(
    files: &[(usize, String)],
    blobs: &[BlobFileMeta],
    num_levels: usize,
) -> Arc<Version> {
    let fs = Arc::new(MemFs::new());
    let mut set = VersionSet::create(
        fs,
        Path::new("/picker"),
        Arc::new(BytewiseComparator),
        num_levels,
    )
    .expect("a version set");
    let mut edit = VersionEdit::new();
    let count = files.len() as u64;
    for (index, (level, spec)) in files.iter().enumerate() {
        let number = index as u64 + 1;
        set.mark_file_number_used(number);
        let meta = file_meta(number, spec, (count - index as u64) * 10);
        edit.add_file(0, u32::try_from(*level).expect("level"), meta);
    }
    for blob in blobs {
        edit.add_blob_file(blob);
    }
    set.set_last_sequence(count * 10 + 10);
    set.log_and_apply(edit).expect("a valid LSM shape");
    set.current()
}

fn testdata_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/compaction")
}

// Library sources reach the disk only through shale-fs, tests included.
fn read_text(fs: &OsFs, path: &Path) -> String {
    let file = fs.open_read(path).expect("readable testdata");
    let mut bytes = vec![0; usize::try_from(file.size().expect("size")).expect("small")];
    file.read_exact_at(0, &mut bytes)
        .expect("readable testdata");
    String::from_utf8(bytes).expect("UTF-8 testdata")
}

fn write_text(fs: &OsFs, path: &Path, text: &str) {
    let mut file = fs.create(path).expect("writable testdata");
    file.append(text.as_bytes()).expect("writable testdata");
    file.sync_data().expect("writable testdata");
}

#[test]
fn picker_testdata() {
    let regenerate = std::env::var_os("SHALE_REGENERATE").is_some();
    let fs = OsFs::new();
    let mut paths: Vec<PathBuf> = fs
        .list(&testdata_dir())
        .expect("testdata/compaction")
        .into_iter()
        .filter(|name| Path::new(name).extension().is_some_and(|e| e == "txt"))
        .map(|name| testdata_dir().join(name))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no picker testdata");
    let mut failures = Vec::new();
    for path in paths {
        let text = read_text(&fs, &path);
        let cases = parse_cases(&text, &path);
        assert!(!cases.is_empty(), "{} holds no case", path.display());
        let mut rewritten = String::new();
        // Comments before the first case are kept.
        for line in text.lines().take_while(|l| !l.starts_with("case ")) {
            let _ = writeln!(rewritten, "{line}");
        }
        for case in &cases {
            let actual = run_case(case);
            let expected: String = case.expected.iter().fold(String::new(), |mut out, line| {
                let _ = writeln!(out, "{line}");
                out
            });
            if actual != expected {
                failures.push(format!(
                    "{} / {}\n--- expected\n{expected}--- actual\n{actual}",
                    path.display(),
                    case.header
                ));
            }
            let _ = writeln!(rewritten, "{}", case.header);
            for line in &case.input {
                let _ = writeln!(rewritten, "{line}");
            }
            let _ = write!(rewritten, "----\n{actual}\n");
        }
        if regenerate {
            write_text(&fs, &path, &(rewritten.trim_end().to_owned() + "\n"));
        }
    }
    if !regenerate {
        assert!(
            failures.is_empty(),
            "{}\n(regenerate with SHALE_REGENERATE=1 cargo test -p shale-engine --lib picker)",
            failures.join("\n")
        );
    }
}
