//! MANIFEST files and `CURRENT` (docs/format/manifest.md, "File names and numbers",
//! "`CURRENT`" and "Switching `CURRENT`").
//!
//! A MANIFEST is a WAL-format log ([`crate::wal::LogWriter`]) whose records are version edits;
//! `CURRENT` is one checksummed line naming it, replaced atomically by rename.
//!
//! Invariants:
//! 1. A MANIFEST is synced (snapshot record first) before `CURRENT` can name it.
//! 2. `CURRENT` is only ever replaced by renaming a synced `CURRENT.tmp` over it, followed by a
//!    sync of the directory; nothing else writes it.

use std::path::{Path, PathBuf};

use shale_fs::FileSystem;

use crate::error::{Error, Result};
use crate::wal::format::parse_log_file_name;
use crate::wal::LogWriter;

/// The name of the file that names the live MANIFEST.
pub const CURRENT_FILE_NAME: &str = "CURRENT";

/// The most bytes of `CURRENT` that are read; a longer file is corrupt.
const CURRENT_MAX_SIZE: u64 = 255;

const MANIFEST_PREFIX: &str = "MANIFEST-";
const OPTIONS_PREFIX: &str = "OPTIONS-";

/// The name of MANIFEST number `number`: `MANIFEST-` and at least six digits.
pub fn manifest_file_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// The number of a file named by [`manifest_file_name`], or `None` for any other name.
pub fn parse_manifest_file_name(name: &str) -> Option<u64> {
    parse_digits(name.strip_prefix(MANIFEST_PREFIX)?)
}

/// At least six ASCII digits and nothing else, as a number.
pub(crate) fn parse_digits(digits: &str) -> Option<u64> {
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The number of any file that takes a number from the database's file-number counter:
/// `NNNNNN.wal`, `NNNNNN.sst`, `MANIFEST-NNNNNN`, `OPTIONS-NNNNNN`.
pub(crate) fn numbered_file(name: &str) -> Option<u64> {
    parse_log_file_name(name)
        .or_else(|| parse_digits(name.strip_suffix(".sst")?))
        .or_else(|| parse_digits(name.strip_suffix(".blob")?))
        .or_else(|| parse_manifest_file_name(name))
        .or_else(|| parse_digits(name.strip_prefix(OPTIONS_PREFIX)?))
}

/// The largest file number a MANIFEST or `CURRENT` may hold (2^63 - 1), so that recovery's
/// "one above every number in use" and the new MANIFEST's number never overflow.
pub(crate) const MAX_FILE_NUMBER: u64 = (1 << 63) - 1;

/// The contents of `CURRENT` naming MANIFEST `number`.
pub(crate) fn current_contents(number: u64) -> String {
    let name = manifest_file_name(number);
    let crc = crc32c::crc32c(name.as_bytes());
    format!("{name} crc32c={crc:08x}\n")
}

fn current_corruption(path: &Path, offset: usize, detail: String) -> Error {
    Error::Corruption {
        file: path.to_path_buf(),
        offset: offset as u64,
        detail,
    }
}

/// Parses the contents of `CURRENT` (read from `path`) into a MANIFEST number.
pub(crate) fn parse_current(bytes: &[u8], path: &Path) -> Result<u64> {
    let hint =
        "CURRENT must hold one line `MANIFEST-NNNNNN crc32c=xxxxxxxx` (docs/format/manifest.md)";
    let Some(line) = bytes.strip_suffix(b"\n") else {
        return Err(current_corruption(
            path,
            bytes.len(),
            format!("missing the final newline; {hint}"),
        ));
    };
    let Some(space) = line.iter().position(|&b| b == b' ') else {
        return Err(current_corruption(
            path,
            0,
            format!("no checksum after the MANIFEST name; {hint}"),
        ));
    };
    let (name, checksum) = line.split_at(space);
    let checksum = &checksum[1..];
    let number = std::str::from_utf8(name)
        .ok()
        .and_then(parse_manifest_file_name)
        .ok_or_else(|| {
            current_corruption(
                path,
                0,
                format!(
                    "{} is not a MANIFEST name; {hint}",
                    shale_sst::printable(name)
                ),
            )
        })?;
    let stored = checksum
        .strip_prefix(b"crc32c=")
        .filter(|hex| {
            hex.len() == 8
                && hex
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        })
        .and_then(|hex| std::str::from_utf8(hex).ok())
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or_else(|| {
            current_corruption(
                path,
                space + 1,
                format!(
                    "{} is not `crc32c=` and 8 lowercase hex digits; {hint}",
                    shale_sst::printable(checksum)
                ),
            )
        })?;
    if number > MAX_FILE_NUMBER {
        return Err(current_corruption(
            path,
            0,
            format!(
                "{} has file number {number}, above the largest file number \
                 {MAX_FILE_NUMBER}; {hint}",
                shale_sst::printable(name)
            ),
        ));
    }
    let computed = crc32c::crc32c(name);
    if stored != computed {
        return Err(current_corruption(
            path,
            space + 1,
            format!(
                "checksum mismatch: CURRENT says {stored:08x}, the name {} has {computed:08x}",
                shale_sst::printable(name)
            ),
        ));
    }
    Ok(number)
}

/// The error for `dir` without a `CURRENT` when database files are there: a damaged
/// database, not a missing one (repair rebuilds `CURRENT`; creating a database there would
/// start an empty one over them). `None` when none of the files counted is there. A MANIFEST
/// counts when `manifests` is set: a creation cut short leaves one with no data, which opening
/// with `create_if_missing` may replace, but a tool reading the database must not call it
/// absent. Tables, blob files and WALs holding records always count.
pub(crate) fn missing_current(
    fs: &dyn FileSystem,
    dir: &Path,
    manifests: bool,
) -> Result<Option<Error>> {
    if !fs.exists(dir)? {
        return Ok(None);
    }
    let mut manifest = None;
    let (mut tables, mut blobs, mut wals) = (0, 0, 0);
    // A WAL holding only its file header holds no writes.
    let wal_header =
        (crate::wal::format::V1_HEADER_SIZE + crate::wal::format::FILE_HEADER_PAYLOAD_SIZE) as u64;
    for name in fs.list(dir)? {
        if let Some(number) = parse_manifest_file_name(&name) {
            manifest = manifest.max(Some(number));
        } else if crate::inspect::parse_table_file_name(&name).is_some() {
            tables += 1;
        } else if crate::blob::parse_blob_file_name(&name).is_some() {
            blobs += 1;
        } else if crate::wal::format::parse_log_file_name(&name).is_some()
            && fs.size(&dir.join(&name))? > wal_header
        {
            wals += 1;
        }
    }
    if tables + blobs + wals == 0 && !(manifests && manifest.is_some()) {
        return Ok(None);
    }
    let mut found: Vec<String> = manifest.map(manifest_file_name).into_iter().collect();
    for (count, what) in [(tables, "table"), (blobs, "blob file"), (wals, "WAL")] {
        if count > 0 {
            found.push(format!(
                "{count} {what}{}",
                if count == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(Some(Error::Corruption {
        file: dir.join(CURRENT_FILE_NAME),
        offset: 0,
        detail: format!(
            "{CURRENT_FILE_NAME} is missing, but the database's files are there ({}): the \
             database is damaged, not absent. Run `shale tool repair {}` (it rebuilds \
             {CURRENT_FILE_NAME} from the newest MANIFEST and keeps every readable table), or \
             restore a backup; do not create a new database in this directory",
            found.join(", "),
            dir.display()
        ),
    }))
}

/// Reads `CURRENT` in `dir`: the number of the live MANIFEST, which must exist.
pub(crate) fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
    let path = dir.join(CURRENT_FILE_NAME);
    let file = match fs.open_read(&path) {
        Ok(file) => file,
        Err(e) if e.is_not_found() => {
            return Err(missing_current(fs, dir, true)?.unwrap_or_else(|| {
                Error::InvalidArgument(format!(
                    "no database in {}: {CURRENT_FILE_NAME} is missing and no MANIFEST, table \
                     or WAL is there (create the database first)",
                    dir.display()
                ))
            }));
        }
        Err(e) => return Err(Error::Io(e)),
    };
    let size = file.size()?;
    if size > CURRENT_MAX_SIZE {
        return Err(current_corruption(
            &path,
            CURRENT_MAX_SIZE as usize,
            format!("{size} bytes long; a valid CURRENT has at most {CURRENT_MAX_SIZE}"),
        ));
    }
    let mut bytes = vec![0; size as usize];
    file.read_exact_at(0, &mut bytes)?;
    let number = parse_current(&bytes, &path)?;
    let manifest = dir.join(manifest_file_name(number));
    if !fs.exists(&manifest)? {
        return Err(current_corruption(
            &path,
            0,
            format!(
                "CURRENT names {}, which does not exist",
                manifest_file_name(number)
            ),
        ));
    }
    Ok(number)
}

/// Points `CURRENT` at MANIFEST `number`, crash-safely (invariant 2).
pub(crate) fn write_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let path = dir.join(CURRENT_FILE_NAME);
    shale_fs::replace_file_durably(fs, &path, current_contents(number).as_bytes())?;
    Ok(())
}

/// An open MANIFEST being appended to.
#[derive(Debug)]
pub(crate) struct ManifestWriter {
    pub log: LogWriter,
    pub path: PathBuf,
    /// Bytes of the file after its snapshot record (the rollover rule compares with it).
    pub snapshot_end: u64,
}

/// Writes MANIFEST `number` in `dir`: the `snapshot` record, then `edit` if any, synced
/// (invariant 1). `CURRENT` is not touched.
pub(crate) fn start_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    snapshot: &[u8],
    edit: Option<&[u8]>,
) -> Result<ManifestWriter> {
    let path = dir.join(manifest_file_name(number));
    let file = fs.create(&path)?;
    let mut log = LogWriter::new(file, number)?;
    let snapshot_end = log.add_record(snapshot)?;
    if let Some(edit) = edit {
        log.add_record(edit)?;
    }
    log.sync()?;
    Ok(ManifestWriter {
        log,
        path,
        snapshot_end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(manifest_file_name(1), "MANIFEST-000001");
        assert_eq!(parse_manifest_file_name("MANIFEST-000001"), Some(1));
        assert_eq!(
            parse_manifest_file_name("MANIFEST-1234567"),
            Some(1_234_567)
        );
        for bad in [
            "MANIFEST-1",
            "MANIFEST-00000x",
            "MANIFEST-000001.tmp",
            "000001",
        ] {
            assert_eq!(parse_manifest_file_name(bad), None, "{bad}");
        }
        assert_eq!(numbered_file("000012.wal"), Some(12));
        assert_eq!(numbered_file("000013.sst"), Some(13));
        assert_eq!(numbered_file("OPTIONS-000014"), Some(14));
        assert_eq!(numbered_file("OPTIONS-000014.tmp"), None);
        assert_eq!(numbered_file("CURRENT"), None);
    }

    #[test]
    fn current_round_trip_and_checks() {
        let path = Path::new("/db/CURRENT");
        let text = current_contents(7);
        assert!(text.starts_with("MANIFEST-000007 crc32c="), "{text}");
        assert_eq!(parse_current(text.as_bytes(), path).unwrap(), 7);
        let bad: &[&[u8]] = &[
            b"",
            b"MANIFEST-000007\n",
            b"MANIFEST-000007 crc32c=00000000\n",
            b"MANIFEST-7 crc32c=00000000\n",
        ];
        for bytes in bad {
            let err = parse_current(bytes, path).unwrap_err();
            assert!(err.is_corruption(), "{err}");
        }
        let upper = text
            .to_uppercase()
            .replace("MANIFEST-000007 CRC32C=", "MANIFEST-000007 crc32c=");
        if upper != text {
            assert!(parse_current(upper.as_bytes(), path).is_err());
        }
    }
}
