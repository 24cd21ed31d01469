//! Whether a directory holds a Shale database, judged before repair moves anything: a
//! `RocksDB` or `LevelDB` directory names its files much as Shale does (`CURRENT`,
//! `MANIFEST-NNNNNN`, `OPTIONS-NNNNNN`, `NNNNNN.sst`), and repair would set every one of them
//! aside as damaged.
//!
//! Each file that can carry Shale's mark is checked for it: a table's footer ends with
//! `SHALESST` (docs/format/sst.md), a WAL and a MANIFEST start with a record holding
//! `SHALEWAL` or `SHALEMAN` (docs/format/wal.md, manifest.md), a blob file starts with
//! `SHALEBLB` (blob.md), an OPTIONS file with `# Shale OPTIONS file` (options.md), `CURRENT`
//! holds a `crc32c=` checksum. Files only other engines write (`IDENTITY`, `LOG`, `*.log`,
//! `*.ldb`) are foreign. Empty files say nothing. Repair refuses when no file carries the mark
//! or more files are foreign than Shale's, unless forced.

use std::fmt::Write as _;
use std::path::Path;

use shale_fs::FileSystem;

use crate::error::Result;
use crate::version::{parse_manifest_file_name, CURRENT_FILE_NAME};
use crate::wal::format::parse_log_file_name;

/// The last 8 bytes of every Shale table (`shale_sst`'s footer magic, docs/format/sst.md).
const SHALE_TABLE_MAGIC: [u8; 8] = *b"SHALESST";
/// `RocksDB`'s block-based table magic number, as its footer stores it (little-endian).
const ROCKSDB_TABLE_MAGIC: [u8; 8] = 0x88e2_41b7_85f4_cff7_u64.to_le_bytes();
/// `LevelDB`'s table magic number, as its footer stores it (little-endian).
const LEVELDB_TABLE_MAGIC: [u8; 8] = 0xdb47_7524_8b80_fb57_u64.to_le_bytes();

/// Bytes at a file's start searched for a header's magic.
const HEADER_BYTES: u64 = 64;

/// What the files of a directory say about whose they are.
#[derive(Debug, Default)]
pub(super) struct Identity {
    /// Files carrying Shale's mark.
    pub shale: usize,
    /// Files that do not, with what was found.
    pub foreign: Vec<(String, String)>,
}

impl Identity {
    /// Whether repair should refuse the directory.
    pub fn refuse(&self) -> bool {
        self.shale == 0 || self.foreign.len() > self.shale
    }

    /// What was found, for the refusal.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} files carry Shale's format marks and {} do not",
            self.shale,
            self.foreign.len()
        );
        for (name, what) in self.foreign.iter().take(5) {
            let _ = write!(text, "; {name}: {what}");
        }
        if self.foreign.len() > 5 {
            let _ = write!(text, "; and {} more", self.foreign.len() - 5);
        }
        text
    }
}

/// Judges every file of `names` in `dir`.
pub(super) fn identify(fs: &dyn FileSystem, dir: &Path, names: &[String]) -> Result<Identity> {
    let mut identity = Identity::default();
    for name in names {
        let path = dir.join(name);
        let verdict = if crate::info_log::is_log_file_name(name) {
            // Shale writes an info LOG too; its first line says whose it is.
            header_verdict(fs, &path, crate::info_log::LOG_HEADER.as_bytes())?.map(|verdict| {
                verdict.map_err(|_| {
                    "a LOG without Shale's header line (RocksDB and LevelDB write one)".to_owned()
                })
            })
        } else if name == "IDENTITY" || name.starts_with("LOG.old") {
            Some(Err(
                "a file RocksDB and LevelDB write, never Shale".to_owned()
            ))
        } else if has_number_and_suffix(name, ".log") || has_number_and_suffix(name, ".ldb") {
            Some(Err(
                "a RocksDB or LevelDB file name (Shale's WALs end in .wal)".to_owned(),
            ))
        } else if crate::inspect::parse_table_file_name(name).is_some() {
            table_verdict(fs, &path)?
        } else if parse_log_file_name(name).is_some() {
            header_verdict(fs, &path, b"SHALEWAL")?
        } else if parse_manifest_file_name(name).is_some() {
            header_verdict(fs, &path, b"SHALEMAN")?
        } else if crate::blob::parse_blob_file_name(name).is_some() {
            header_verdict(fs, &path, b"SHALEBLB")?
        } else if crate::options_file::parse_options_file_name(name).is_some() {
            header_verdict(fs, &path, b"# Shale OPTIONS file")?
        } else if name == CURRENT_FILE_NAME {
            header_verdict(fs, &path, b" crc32c=")?
        } else {
            None
        };
        match verdict {
            Some(Ok(())) => identity.shale += 1,
            Some(Err(what)) => identity.foreign.push((name.clone(), what)),
            None => {}
        }
    }
    Ok(identity)
}

type Verdict = Option<std::result::Result<(), String>>;

fn has_number_and_suffix(name: &str, suffix: &str) -> bool {
    name.strip_suffix(suffix)
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A table's verdict from the last 8 bytes of its footer.
fn table_verdict(fs: &dyn FileSystem, path: &Path) -> Result<Verdict> {
    let file = fs.open_read(path)?;
    let size = file.size()?;
    if size < 8 {
        return Ok(None);
    }
    let mut magic = [0; 8];
    file.read_exact_at(size - 8, &mut magic)?;
    Ok(Some(if magic == SHALE_TABLE_MAGIC {
        Ok(())
    } else if magic == ROCKSDB_TABLE_MAGIC {
        Err("its footer ends with RocksDB's table magic number".to_owned())
    } else if magic == LEVELDB_TABLE_MAGIC {
        Err("its footer ends with LevelDB's table magic number".to_owned())
    } else {
        Err(format!(
            "its footer does not end with Shale's magic \"SHALESST\" (found {})",
            hex(&magic)
        ))
    }))
}

/// A file's verdict from whether `mark` is in its first bytes.
fn header_verdict(fs: &dyn FileSystem, path: &Path, mark: &[u8]) -> Result<Verdict> {
    let file = fs.open_read(path)?;
    let size = file.size()?.min(HEADER_BYTES);
    if size == 0 {
        return Ok(None);
    }
    let mut head = vec![0; usize::try_from(size).unwrap_or(0)];
    file.read_exact_at(0, &mut head)?;
    Ok(Some(if head.windows(mark.len()).any(|w| w == mark) {
        Ok(())
    } else {
        Err(format!(
            "its first {size} bytes do not hold Shale's mark {:?}",
            String::from_utf8_lossy(mark).trim()
        ))
    }))
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}
