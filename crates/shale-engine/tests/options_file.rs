//! Behaviour tests of the OPTIONS file (docs/format/options.md): round trips of awkward text,
//! checksum and version checks, damage at every byte, malformed lines naming their offset,
//! crash-safe writing and picking the latest file. The golden test compares a small file with
//! `tests/testdata/golden_options.txt` (regenerate with `SHALE_REGENERATE=1`).

use std::path::Path;
use std::sync::Arc;

use shale_engine::inspect::{options_file_name, OptionsFile, OPTIONS_FORMAT_VERSION};
use shale_engine::Error;
use shale_fs::{
    CrashMode, FaultError, FaultFs, FaultRule, FaultTrigger, FileSystem, MemFs, OpKind,
};

const PATH: &str = "/db/OPTIONS-000005";

fn path() -> &'static Path {
    Path::new(PATH)
}

fn entries(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn sample() -> OptionsFile {
    OptionsFile {
        sections: vec![
            (
                "db".to_owned(),
                entries(&[
                    ("comparator", "shale.BytewiseComparator"),
                    ("durability", "sync"),
                    ("max_open_files", "1000"),
                ]),
            ),
            (
                OptionsFile::keyspace_section("default"),
                entries(&[("write_buffer_size", "67108864"), ("compression", "lz4")]),
            ),
            (
                OptionsFile::keyspace_section("users"),
                entries(&[("compression", "zstd")]),
            ),
        ],
    }
}

fn awkward() -> OptionsFile {
    let nasty = [
        "",
        "a=b=c",
        "line one\nline two\r\n",
        "back\\slash \\n not a newline",
        "#not a comment",
        "[not a section]",
        "tab\tand\u{0}nul\u{1b}escape\u{7f}del",
        "  leading and trailing spaces  ",
        "ünïcödé ✓ \"quotes\"",
        "checksum=00000000",
    ];
    let mut sections = vec![
        (
            "db".to_owned(),
            nasty
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("key{i}"), (*v).to_owned()))
                .collect(),
        ),
        (
            String::new(),
            nasty
                .iter()
                .map(|k| ((*k).to_owned(), "v".to_owned()))
                .collect(),
        ),
        ("version".to_owned(), entries(&[("format_version", "9")])),
        (OptionsFile::keyspace_section("we\"ird]\n[name"), Vec::new()),
        ("db".to_owned(), entries(&[("max_open_files", "2")])),
    ];
    sections.extend(
        nasty
            .iter()
            .map(|n| ((*n).to_owned(), entries(&[("k", n)]))),
    );
    OptionsFile { sections }
}

#[test]
fn awkward_text_round_trips() {
    for file in [sample(), awkward(), OptionsFile::new()] {
        let bytes = file.encode();
        let text = String::from_utf8(bytes.clone()).unwrap();
        // One line per entry and header, plus the header line, [version] and its two
        // entries, and the checksum line.
        let entries: usize = file.sections.iter().map(|(_, e)| e.len() + 1).sum();
        assert_eq!(text.lines().count(), entries + 5, "{text}");
        assert_eq!(OptionsFile::decode(&bytes, path()).unwrap(), file, "{text}");
    }
}

#[test]
fn lookups() {
    let file = awkward();
    assert_eq!(file.get("db", "key1"), Some("a=b=c"));
    // The first section of a name wins.
    assert_eq!(file.get("db", "max_open_files"), None);
    assert_eq!(file.get("nope", "key1"), None);
    assert_eq!(
        file.section("version"),
        entries(&[("format_version", "9")]).as_slice()
    );
    assert!(file.section("nope").is_empty());
    let section = OptionsFile::keyspace_section("we\"ird]\n[name");
    assert_eq!(
        OptionsFile::keyspace_of_section(&section),
        Some("we\"ird]\n[name")
    );
    let decoded = OptionsFile::decode(&file.encode(), path()).unwrap();
    assert!(decoded.sections.iter().any(|(name, _)| *name == section));
}

fn with_checksum(body: &str) -> Vec<u8> {
    format!("{body}checksum={:08x}\n", crc32c::crc32c(body.as_bytes())).into_bytes()
}

const PREAMBLE: &str = "# Shale OPTIONS file\n[version]\nformat_version=1\nshale_version=0.1.0\n";

#[test]
fn checksum_mismatch_is_corruption_at_the_checksum_line() {
    let bytes = sample().encode();
    let checksum_at = bytes.len() - "checksum=xxxxxxxx\n".len();
    let mut damaged = bytes.clone();
    damaged[40] ^= 0x01;
    match OptionsFile::decode(&damaged, path()).unwrap_err() {
        Error::Corruption {
            file,
            offset,
            detail,
        } => {
            assert_eq!(file, path());
            assert_eq!(offset, checksum_at as u64);
            assert!(detail.contains("checksum mismatch"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_newer_version_is_refused_even_with_a_bad_checksum() {
    let newer = format!(
        "# Shale OPTIONS file\n[version]\nformat_version={}\nshale_version=9.0.0\n[db]\nnew=syntax\n",
        OPTIONS_FORMAT_VERSION + 1
    );
    let bytes = with_checksum(&newer);
    let err = OptionsFile::decode(&bytes, path()).unwrap_err();
    assert!(matches!(err, Error::NotSupported(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("newer Shale") && text.contains(PATH),
        "{text}"
    );
    // A newer format may checksum differently (or not at all).
    let mut other_checksum = newer.into_bytes();
    other_checksum.extend_from_slice(b"sha256=abcdef\n");
    let err = OptionsFile::decode(&other_checksum, path()).unwrap_err();
    assert!(matches!(err, Error::NotSupported(_)), "{err}");
    for bad in ["0", "01", "x", "", "-1", "99999999999"] {
        let body =
            format!("# Shale OPTIONS file\n[version]\nformat_version={bad}\nshale_version=1\n");
        let err = OptionsFile::decode(&with_checksum(&body), path()).unwrap_err();
        assert!(err.is_corruption(), "{bad:?}: {err}");
    }
}

#[test]
fn malformed_lines_name_the_file_and_the_line_offset() {
    let cases: [(&str, &str); 10] = [
        ("[db]\nno separator\n", "neither a section header"),
        ("orphan=1\n", "before the first section"),
        ("[db]\nk=bad\\escape\n", "unknown escape"),
        ("[db]\nk=a=b\n", "must be escaped"),
        ("[db]\nk=trailing\\\n", "backslash ends"),
        ("[db]\nk=\\x41\n", "not a control character"),
        ("[db]\nk=raw\rcr\n", "raw control character"),
        ("[db\n", "must end with ']'"),
        ("[d]b]\n", "must be escaped"),
        ("[db]\nk\\=v\n", "neither a section header"),
    ];
    for (rest, needle) in cases {
        let body = format!("{PREAMBLE}{rest}");
        let bad_line = rest.lines().last().unwrap();
        let line_at = body.rfind(bad_line).unwrap();
        match OptionsFile::decode(&with_checksum(&body), path()).unwrap_err() {
            Error::Corruption {
                file,
                offset,
                detail,
            } => {
                assert_eq!(file, path());
                assert_eq!(offset, line_at as u64, "{rest:?}: {detail}");
                assert!(detail.contains(needle), "{rest:?}: {detail}");
            }
            other => panic!("{rest:?}: {other:?}"),
        }
    }
    // Comments and blank lines are fine anywhere after the preamble.
    let body = format!("{PREAMBLE}# note\n\n[db]\n# another\nk=v\n\n");
    let file = OptionsFile::decode(&with_checksum(&body), path()).unwrap();
    assert_eq!(file.get("db", "k"), Some("v"));
    // The preamble is strict.
    for body in [
        "# Shale OPTIONS file \n[version]\nformat_version=1\nshale_version=1\n",
        "# Shale OPTIONS file\n[db]\n",
        "# Shale OPTIONS file\n[version]\nshale_version=1\nformat_version=1\n",
        "# Shale OPTIONS file\n[version]\nformat_version=1\n",
        "",
    ] {
        let err = OptionsFile::decode(&with_checksum(body), path()).unwrap_err();
        assert!(err.is_corruption(), "{body:?}: {err}");
    }
    let not_utf8 = with_checksum(&format!("{PREAMBLE}[db]\nk=\u{e9}\n"))
        .iter()
        .map(|&b| if b == 0xc3 { 0xff } else { b })
        .collect::<Vec<u8>>();
    assert!(OptionsFile::decode(&not_utf8, path())
        .unwrap_err()
        .is_corruption());
}

#[test]
fn every_byte_flip_and_truncation_is_an_error_or_identical() {
    for file in [sample(), awkward()] {
        let bytes = file.encode();
        let mut identical = 0;
        for at in 0..bytes.len() {
            for mask in [0x01u8, 0x04, 0x20, 0x80] {
                let mut damaged = bytes.clone();
                damaged[at] ^= mask;
                match OptionsFile::decode(&damaged, path()) {
                    Ok(decoded) => {
                        assert_eq!(decoded, file, "byte {at} ^ {mask:#04x}");
                        identical += 1;
                    }
                    Err(e) => assert!(
                        e.is_corruption() || matches!(e, Error::NotSupported(_)),
                        "byte {at}: {e}"
                    ),
                }
            }
        }
        // Only the informational shale_version line is outside what decoding returns, and the
        // checksum covers it: nothing decodes unchanged.
        assert_eq!(identical, 0);
        for len in 0..bytes.len() {
            assert!(
                OptionsFile::decode(&bytes[..len], path()).is_err(),
                "length {len}"
            );
        }
    }
}

#[test]
fn write_is_atomic_and_read_latest_picks_the_largest_number() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    fs.create_dir_all(dir).unwrap();
    assert!(OptionsFile::read_latest(&fs, dir).unwrap().is_none());
    let mut older = sample();
    older.sections[0]
        .1
        .push(("generation".to_owned(), "old".to_owned()));
    older.write(&fs, dir, 7).unwrap();
    sample().write(&fs, dir, 12).unwrap();
    // Names that are not OPTIONS files, a leftover temporary file and a too-short number.
    fs.write_file_for_test(dir.join("OPTIONS-000099.tmp"), b"garbage")
        .unwrap();
    fs.write_file_for_test(dir.join("OPTIONS-99"), b"garbage")
        .unwrap();
    fs.write_file_for_test(dir.join("000100.wal"), b"").unwrap();
    let (number, file) = OptionsFile::read_latest(&fs, dir).unwrap().unwrap();
    assert_eq!((number, file), (12, sample()));
    // Written files are durable (name and bytes).
    let image = fs.crash_image(CrashMode::DropUnsynced);
    assert_eq!(
        OptionsFile::read_latest(&image, dir).unwrap().unwrap().0,
        12
    );
    assert_eq!(
        image
            .list(dir)
            .unwrap()
            .iter()
            .filter(|n| Path::new(n).extension().is_some_and(|e| e == "tmp"))
            .count(),
        1,
        "only the planted leftover"
    );

    // A failure at any step leaves no file under the final name, or a complete one.
    for (op, error) in [
        (OpKind::Create, FaultError::Eio),
        (OpKind::Append, FaultError::ShortWrite),
        (OpKind::SyncData, FaultError::FailedSync),
        (OpKind::Rename, FaultError::Eio),
        (OpKind::SyncDir, FaultError::FailedSync),
    ] {
        let fault = FaultFs::new(Arc::new(fs.clone()));
        fault.add_rule(FaultRule::new(op, FaultTrigger::Always, error));
        let err = sample().write(&fault, dir, 20).unwrap_err();
        assert!(matches!(&err, Error::Io(e) if e.is_injected()), "{err}");
        for image in [
            fs.crash_image(CrashMode::DropUnsynced),
            fs.crash_image(CrashMode::Torn { seed: 3 }),
        ] {
            let (number, file) = OptionsFile::read_latest(&image, dir).unwrap().unwrap();
            assert!(
                number == 12 || (number == 20 && op == OpKind::SyncDir),
                "{op:?}: {number}"
            );
            assert_eq!(file, sample());
        }
        let _ = fs.remove(&dir.join(options_file_name(20)));
    }

    // A damaged latest file is an error, not a silent fall back to an older one.
    fs.corrupt_for_test(dir.join(options_file_name(12)), 30, 0x01)
        .unwrap();
    let err = OptionsFile::read_latest(&fs, dir).unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("OPTIONS-000012"),
        "{err}"
    );
}

/// The encoded sample with its two build-dependent lines shown as placeholders, after
/// checking them.
fn golden_printout() -> String {
    let bytes = sample().encode();
    let text = String::from_utf8(bytes).unwrap();
    let (body, checksum_line) = text.trim_end().rsplit_once('\n').unwrap();
    let body = format!("{body}\n");
    assert_eq!(
        checksum_line,
        format!("checksum={:08x}", crc32c::crc32c(body.as_bytes()))
    );
    let version_line = format!("shale_version={}\n", env!("CARGO_PKG_VERSION"));
    assert!(body.contains(&version_line));
    let mut out = String::from(
        "# docs/format/options.md, written by crates/shale-engine/tests/options_file.rs\n\
         # (the Shale version and the checksum over the lines above it are placeholders)\n",
    );
    out.push_str(&body.replace(&version_line, "shale_version=<this build>\n"));
    out.push_str("checksum=<crc32c of everything above, 8 lowercase hex digits>\n");
    out
}

#[test]
fn golden_options_file_matches_fixture() {
    let printout = golden_printout();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/golden_options.txt");
    if std::env::var_os("SHALE_REGENERATE").is_some() {
        std::fs::write(&fixture, &printout).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(
        printout, expected,
        "OPTIONS layout changed; if deliberate, update docs/format/options.md and regenerate \
         with SHALE_REGENERATE=1 cargo test -p shale-engine --test options_file"
    );
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format/options.md"),
    )
    .unwrap();
    for line in [
        "# Shale OPTIONS file",
        "[version]",
        "format_version=1",
        "[keyspace \"default\"]",
        "checksum=",
    ] {
        assert!(doc.contains(line), "options.md lacks {line:?}");
    }
}
