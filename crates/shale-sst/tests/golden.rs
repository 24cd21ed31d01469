//! Golden test: writes a tiny table and prints its layout block by block, comparing the
//! printout with `testdata/golden_layout.txt` (the newest format) and
//! `testdata/golden_layout_v1.txt` (format version 1, still written on request and read),
//! and checks that docs/format/sst.md names every constant the code writes. Regenerate the fixture with `SHALE_REGENERATE_GOLDEN=1` after a
//! deliberate format change, and update docs/format/sst.md in the same commit.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use shale_fs::{FileSystem, MemFs};
use shale_sst::format::{
    FOOTER_SIZE, MAGIC, META_COMPRESSION_DICT, META_FILTER, META_PREFIX_FILTER, META_PROPERTIES,
    META_RANGE_DEL,
};
use shale_sst::{
    ChecksumType, Compression, FixedPrefix, Table, TableOpenOptions, TableWriter, ValueKind,
    WriterOptions, FORMAT_VERSION,
};

fn golden_printout(format_version: u32) -> String {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    golden_printout_into(&fs, format_version)
}

/// Writes the golden table as `/db/000007.sst` on `fs` and returns its printout.
fn golden_printout_into(fs: &MemFs, format_version: u32) -> String {
    let path = Path::new("/db/000007.sst");
    let mut user_properties = BTreeMap::new();
    user_properties.insert("schema".to_owned(), b"t1(id INT PRIMARY KEY)".to_vec());
    let options = WriterOptions {
        block_size: 64,
        block_restart_interval: 2,
        compression: Compression::None,
        checksum: ChecksumType::Xxh3,
        filter_bits_per_key: 10,
        prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
        user_properties,
        creation_time: Some(1_700_000_000),
        oldest_entry_time: 1_699_999_000,
        format_version,
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(fs, path, options).unwrap();
    let entries: &[(&[u8], u64, ValueKind, &[u8])] = &[
        (b"apple", 9, ValueKind::Value, b"red"),
        (b"apple", 4, ValueKind::Deletion, b""),
        (b"apricot", 5, ValueKind::Value, b"orange"),
        (
            b"banana",
            7,
            ValueKind::Value,
            b"yellow and long enough to fill a block",
        ),
        (b"blueberry", 3, ValueKind::Value, b"blue"),
        (b"cherry", 8, ValueKind::Deletion, b""),
        (b"date", 2, ValueKind::Value, b"brown"),
    ];
    for &(key, seqno, kind, value) in entries {
        writer.add_entry(key, seqno, kind, value).unwrap();
    }
    writer.add_range_deletion(b"d", b"f", 10).unwrap();
    let (size, _) = writer.finish().unwrap();
    assert_eq!(fs.file_contents(path).unwrap().len() as u64, size);
    describe(fs, path)
}

/// The printout of the table at `path`: its layout, properties, index and range tombstones,
/// and the footer's bytes.
fn describe(fs: &MemFs, path: &Path) -> String {
    let open = TableOpenOptions {
        prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
        ..TableOpenOptions::default()
    };
    let table = Table::open(fs, path, &open).unwrap();
    let layout = table.verify().unwrap();
    let mut out = String::new();
    writeln!(
        out,
        "# docs/format/sst.md, written by crates/shale-sst/tests/golden.rs"
    )
    .unwrap();
    write!(out, "{layout}").unwrap();
    writeln!(out, "\n# properties").unwrap();
    write!(out, "{}", table.properties().describe()).unwrap();
    writeln!(out, "\n# index").unwrap();
    for entry in table.index_entries().unwrap() {
        let separator = if entry.separator_is_user_key {
            shale_sst::printable(&entry.separator)
        } else {
            shale_sst::describe_internal_key(&entry.separator)
        };
        let handle = entry.handle;
        writeln!(
            out,
            "{separator} -> offset {} size {}",
            handle.offset, handle.size
        )
        .unwrap();
    }
    writeln!(out, "\n# range tombstones").unwrap();
    for t in table.range_tombstones() {
        let (start, end) = (shale_sst::printable(&t.start), shale_sst::printable(&t.end));
        writeln!(out, "[{start}, {end}) @ {}", t.seqno).unwrap();
    }
    let bytes = fs.file_contents(path).unwrap();
    writeln!(out, "\n# footer bytes").unwrap();
    for chunk in bytes[bytes.len() - FOOTER_SIZE..].chunks(16) {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "{}", hex.join(" ")).unwrap();
    }
    out
}

fn check_fixture(format_version: u32, name: &str) {
    let printout = golden_printout(format_version);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    if std::env::var_os("SHALE_REGENERATE_GOLDEN").is_some() {
        std::fs::write(&fixture, &printout).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(
        printout, expected,
        "table layout changed; if deliberate, update docs/format/sst.md and regenerate with \
         SHALE_REGENERATE_GOLDEN=1 cargo test -p shale-sst --test golden"
    );
}

#[test]
fn layout_matches_fixture() {
    check_fixture(FORMAT_VERSION, "golden_layout.txt");
}

#[test]
fn version_1_layout_matches_fixture() {
    check_fixture(1, "golden_layout_v1.txt");
}

/// The version-1 golden table's bytes, frozen: written once (when the file is missing) and
/// never regenerated, so a reader change that stops opening version-1 files fails here. Its
/// printout, `golden_table_v1.txt`, is frozen too (the writer has since chosen shorter
/// separators, so it differs from `golden_layout_v1.txt`).
#[test]
fn frozen_version_1_table_still_opens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let frozen = dir.join("golden_table_v1.hex");
    let path = Path::new("/db/000007.sst");
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    if !frozen.exists() {
        golden_printout_into(&fs, 1);
        let hex: Vec<String> = fs
            .file_contents(path)
            .unwrap()
            .chunks(32)
            .map(|line| {
                line.iter().fold(String::new(), |mut out, b| {
                    let _ = write!(out, "{b:02x}");
                    out
                })
            })
            .collect();
        std::fs::write(&frozen, hex.join("\n") + "\n").unwrap();
    }
    let text = std::fs::read_to_string(&frozen).unwrap();
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    let bytes: Vec<u8> = digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect();
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    fs.write_file_for_test(path, &bytes).unwrap();
    let expected = std::fs::read_to_string(dir.join("golden_table_v1.txt")).unwrap();
    assert_eq!(describe(&fs, path), expected);
}

#[test]
fn spec_names_every_constant() {
    let spec_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format/sst.md");
    let spec = std::fs::read_to_string(spec_path).unwrap();
    let must_appear = [
        META_COMPRESSION_DICT.to_owned(),
        META_FILTER.to_owned(),
        META_PREFIX_FILTER.to_owned(),
        META_PROPERTIES.to_owned(),
        META_RANGE_DEL.to_owned(),
        String::from_utf8(MAGIC.to_vec()).unwrap(),
        format!("footer ({FOOTER_SIZE} bytes, fixed)"),
        format!("format version {FORMAT_VERSION}"),
    ];
    for needle in &must_appear {
        assert!(
            spec.contains(needle.as_str()),
            "docs/format/sst.md does not mention {needle:?}"
        );
    }
    for compression in [
        Compression::None,
        Compression::Snappy,
        Compression::Zlib,
        Compression::Lz4,
        Compression::Zstd,
        Compression::ZstdDict,
    ] {
        let tag = compression.tag();
        assert!(
            spec.contains(&format!("| {tag} |")),
            "compression tag {tag} missing from the spec"
        );
        let name = format!("`{}`", compression.name());
        assert!(
            spec.contains(&name),
            "compression name {name} missing from the spec"
        );
    }
    for checksum in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
        let row = format!("`{}` {}", checksum.tag(), checksum.name());
        assert!(spec.contains(&row), "checksum {row} missing from the spec");
    }
    for (kind, described) in [
        (ValueKind::Deletion, "deletion"),
        (ValueKind::Value, "value"),
        (ValueKind::RangeDeletion, "range deletion"),
    ] {
        let row = format!("`{}` {described}", kind.tag());
        assert!(
            spec.contains(&row),
            "value kind {row} missing from the spec"
        );
    }
    // Every property the writer emits is in the spec's table.
    for line in golden_printout(FORMAT_VERSION)
        .lines()
        .filter(|l| l.starts_with("shale."))
    {
        let name = line.split(' ').next().unwrap_or(line);
        assert!(
            spec.contains(&format!("`{name}`")),
            "property {name} missing from the spec"
        );
    }
}
