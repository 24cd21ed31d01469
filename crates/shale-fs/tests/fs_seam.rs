//! House rule: only `shale-fs` touches the OS file system (the `shale` binary is exempt for its
//! argument handling). Scans `crates/*/src/**/*.rs` and `crates/*/examples/**/*.rs` of every other crate for `std::fs`,
//! `File::open`, `File::create` and `OpenOptions`, and fails naming each file and line.
//! Comment lines are skipped; `tests` and `benches` directories are exempt.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Crates allowed to touch `std::fs`, by directory name under `crates/`.
const EXEMPT_CRATES: [&str; 2] = ["shale-fs", "shale"];
const FORBIDDEN: [&str; 4] = ["std::fs", "File::open", "File::create", "OpenOptions"];

/// The 1-based line numbers and text of the lines of `source` that reach the file system.
fn violations(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let lines: Vec<&str> = source.lines().collect();
    for (index, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let grouped_use = code.contains("std::{") && imports_fs(&lines[index..]);
        if grouped_use || FORBIDDEN.iter().any(|pattern| contains_word(code, pattern)) {
            found.push((index + 1, line.trim().to_string()));
        }
    }
    found
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `pattern` occurs in `code` as whole identifiers (`TableOpenOptions` is not
/// `OpenOptions`).
fn contains_word(code: &str, pattern: &str) -> bool {
    code.match_indices(pattern).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + pattern.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

/// Whether the `use std::{ ... }` starting on `lines[0]` names `fs` at any depth.
fn imports_fs(lines: &[&str]) -> bool {
    let text = lines.join("\n");
    let Some(start) = text.find("std::{") else {
        return false;
    };
    let group = &text[start + "std::{".len()..];
    let end = group.find(';').unwrap_or(group.len());
    group[..end]
        .split(|c: char| !is_ident_char(c))
        .any(|word| word == "fs")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = entry.file_name();
            if name != "tests" && name != "benches" {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_shale_fs_touches_the_file_system() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let crates = root.join("crates");
    let mut files = Vec::new();
    let mut scanned_crates = 0;
    for entry in fs::read_dir(&crates).expect("read crates/").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if EXEMPT_CRATES.contains(&name.as_str()) {
            continue;
        }
        scanned_crates += 1;
        rust_files(&entry.path().join("src"), &mut files);
        // Examples are what users copy: they go through the seam too.
        rust_files(&entry.path().join("examples"), &mut files);
    }
    files.sort();
    let mut report = String::new();
    for file in &files {
        let source = fs::read_to_string(file).expect("read source");
        for (line, text) in violations(&source) {
            let shown = file.strip_prefix(&root).unwrap_or(file);
            let _ = writeln!(report, "{}:{line}: {text}", shown.display());
        }
    }
    assert!(
        report.is_empty(),
        "only shale-fs may touch the file system; take a shale_fs::FileSystem instead:\n{report}"
    );
    assert!(
        scanned_crates > 0 && !files.is_empty(),
        "no sources scanned under {}",
        crates.display()
    );
}

#[test]
fn scanner_flags_each_forbidden_form() {
    let source = "\
use std::io;
// std::fs in a comment is fine
use std::fs::File;
let f = File::open(path);
let g = File::create(path);
let o = OpenOptions::new();
use std::{
    fs,
    io::Read,
};
use std::{collections::HashMap, io};
pub use reader::{Table, TableOpenOptions};
let t = TableFile::open(fs, path);
std::fs::read(path);
";
    let lines: Vec<usize> = violations(source)
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert_eq!(lines, [3, 4, 5, 6, 7, 14]);
}
