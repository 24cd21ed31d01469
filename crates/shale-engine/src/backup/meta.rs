//! The description of one backup, `meta/<id>` in a backup directory (docs/format/backup.md):
//! a versioned text file listing every file of the backup with its size and CRC-32C, ending in
//! a checksum of everything before it. Decoding treats the bytes as untrusted.

use std::fmt::Write as _;
use std::path::Path;

use shale_sst::SeqNo;

use crate::error::{Error, Result};

/// The first line of a meta file listing no compressed file (format version 1).
const HEADER: &str = "shale-backup 1";
/// The first line of a meta file whose `file` lines carry a codec (format version 2).
const HEADER_V2: &str = "shale-backup 2";
/// The prefix of the header line, whatever the version.
const HEADER_PREFIX: &str = "shale-backup ";
/// Meta files larger than this are refused (a backup of a million files stays far below).
pub(crate) const MAX_META_SIZE: u64 = 256 << 20;

/// How a file is stored in the backup directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackupCodec {
    /// The file's own bytes.
    #[default]
    None,
    /// zstd chunks (docs/format/backup.md, "Compressed files").
    Zstd,
}

impl BackupCodec {
    fn name(self) -> &'static str {
        match self {
            BackupCodec::None => "none",
            BackupCodec::Zstd => "zstd",
        }
    }
}

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupFile {
    /// Where it is stored, relative to the backup directory (`shared/..` or `private/<id>/..`).
    pub stored: String,
    /// Its name in a restored database directory.
    pub name: String,
    /// Size and CRC-32C of the file's own (restored) bytes, whatever the codec.
    pub size: u64,
    pub crc32c: u32,
    /// How the stored copy is encoded.
    pub codec: BackupCodec,
}

/// What `meta/<id>` says about one backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    pub id: u32,
    /// Seconds since the Unix epoch when the backup was taken.
    pub created: u64,
    /// The backup holds exactly the writes with sequence numbers up to this one.
    pub seqno: SeqNo,
    pub files: Vec<BackupFile>,
}

impl BackupInfo {
    /// Bytes of all files of the backup (shared ones included).
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Version 1 while no file is compressed (so older builds read such backups), else 2.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let with_codec = self.files.iter().any(|f| f.codec != BackupCodec::None);
        let mut text = format!(
            "{}\nid {}\ncreated {}\nseqno {}\n",
            if with_codec { HEADER_V2 } else { HEADER },
            self.id,
            self.created,
            self.seqno
        );
        for file in &self.files {
            let _ = write!(
                text,
                "file {} {} {} {:08x}",
                file.stored, file.name, file.size, file.crc32c
            );
            if with_codec {
                let _ = write!(text, " {}", file.codec.name());
            }
            text.push('\n');
        }
        let crc = crc32c::crc32c(text.as_bytes());
        let _ = writeln!(text, "end {crc:08x}");
        text.into_bytes()
    }

    pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<BackupInfo> {
        let bad = |offset: usize, detail: String| Error::Corruption {
            file: path.to_path_buf(),
            offset: offset as u64,
            detail,
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| bad(e.valid_up_to(), "backup meta is not UTF-8".into()))?;
        let first = text.lines().next().unwrap_or("");
        let with_codec = first == HEADER_V2;
        if first != HEADER && !with_codec {
            let detail = match first.strip_prefix(HEADER_PREFIX) {
                Some(version) => format!(
                    "backup meta format version {version:?} is not supported (this build reads \
                     1 and 2)"
                ),
                None => "not a backup meta file (bad header)".to_owned(),
            };
            return Err(bad(0, detail));
        }
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or_else(|| bad(0, "backup meta has no end line".into()))?;
        let end_line = text[body_end..].trim_end_matches('\n');
        let stored_crc = end_line
            .strip_prefix("end ")
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .ok_or_else(|| bad(body_end, format!("bad end line {end_line:?}")))?;
        let actual = crc32c::crc32c(&bytes[..body_end]);
        if actual != stored_crc {
            return Err(bad(
                body_end,
                format!("checksum mismatch: stored {stored_crc:08x}, computed {actual:08x}"),
            ));
        }
        let mut info = BackupInfo {
            id: 0,
            created: 0,
            seqno: 0,
            files: Vec::new(),
        };
        let mut seen = [false; 3];
        let mut offset = first.len() + 1;
        for line in text[..body_end].lines().skip(1) {
            let fields: Vec<&str> = line.split(' ').collect();
            let number = |i: usize| -> Result<u64> {
                fields
                    .get(i)
                    .and_then(|f| f.parse().ok())
                    .ok_or_else(|| bad(offset, format!("bad number in line {line:?}")))
            };
            match fields.first().copied() {
                Some("id") if fields.len() == 2 => {
                    info.id = u32::try_from(number(1)?)
                        .map_err(|_| bad(offset, format!("backup id out of range: {line:?}")))?;
                    seen[0] = true;
                }
                Some("created") if fields.len() == 2 => {
                    info.created = number(1)?;
                    seen[1] = true;
                }
                Some("seqno") if fields.len() == 2 => {
                    info.seqno = number(1)?;
                    seen[2] = true;
                }
                Some("file") if fields.len() == if with_codec { 6 } else { 5 } => {
                    let codec = match fields.get(5).copied() {
                        None | Some("none") => BackupCodec::None,
                        Some("zstd") => BackupCodec::Zstd,
                        Some(other) => {
                            return Err(bad(offset, format!("unknown codec {other:?}")));
                        }
                    };
                    let file = BackupFile {
                        stored: fields[1].to_owned(),
                        name: fields[2].to_owned(),
                        size: number(3)?,
                        crc32c: u32::from_str_radix(fields[4], 16)
                            .map_err(|_| bad(offset, format!("bad checksum in line {line:?}")))?,
                        codec,
                    };
                    check_paths(&file, info.id)
                        .map_err(|detail| bad(offset, format!("{detail} in line {line:?}")))?;
                    info.files.push(file);
                }
                _ => return Err(bad(offset, format!("unknown line {line:?}"))),
            }
            offset += line.len() + 1;
        }
        if seen != [true; 3] {
            return Err(bad(
                0,
                "backup meta lacks its id, created or seqno line".into(),
            ));
        }
        if !info.files.iter().any(|f| f.name == "CURRENT") {
            return Err(bad(0, "backup meta lists no CURRENT file".into()));
        }
        Ok(info)
    }
}

/// A stored path stays inside `shared/` or the backup's own `private/<id>/`; a restored name
/// is one plain file name.
fn check_paths(file: &BackupFile, id: u32) -> std::result::Result<(), String> {
    let plain = |name: &str| {
        !name.is_empty()
            && name != "."
            && name != ".."
            && !name.contains('/')
            && !name.contains('\\')
    };
    if !plain(&file.name) {
        return Err(format!("bad file name {:?}", file.name));
    }
    let private = format!("private/{id}/");
    let rest = file
        .stored
        .strip_prefix("shared/")
        .or_else(|| file.stored.strip_prefix(&private));
    match rest {
        Some(rest) if plain(rest) => Ok(()),
        _ => Err(format!("bad stored path {:?}", file.stored)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BackupInfo {
        BackupInfo {
            id: 3,
            created: 1_700_000_000,
            seqno: 42,
            files: vec![
                BackupFile {
                    stored: "shared/000007-100-0000abcd.sst".into(),
                    name: "000007.sst".into(),
                    size: 100,
                    crc32c: 0xabcd,
                    codec: BackupCodec::None,
                },
                BackupFile {
                    stored: "private/3/CURRENT".into(),
                    name: "CURRENT".into(),
                    size: 30,
                    crc32c: 1,
                    codec: BackupCodec::None,
                },
            ],
        }
    }

    #[test]
    fn round_trips_and_prints_its_layout() {
        let bytes = sample().encode();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let body = "shale-backup 1\nid 3\ncreated 1700000000\nseqno 42\n\
                    file shared/000007-100-0000abcd.sst 000007.sst 100 0000abcd\n\
                    file private/3/CURRENT CURRENT 30 00000001\n";
        assert_eq!(
            text,
            format!("{body}end {:08x}\n", crc32c::crc32c(body.as_bytes()))
        );
        assert_eq!(
            BackupInfo::decode(&bytes, Path::new("m")).unwrap(),
            sample()
        );
    }

    #[test]
    fn a_compressed_file_makes_version_2_with_a_codec_on_every_line() {
        let mut info = sample();
        info.files[0].stored = "shared/000007-100-0000abcd.sst.zst".into();
        info.files[0].codec = BackupCodec::Zstd;
        let bytes = info.encode();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let body = "shale-backup 2\nid 3\ncreated 1700000000\nseqno 42\n\
                    file shared/000007-100-0000abcd.sst.zst 000007.sst 100 0000abcd zstd\n\
                    file private/3/CURRENT CURRENT 30 00000001 none\n";
        assert_eq!(
            text,
            format!("{body}end {:08x}\n", crc32c::crc32c(body.as_bytes()))
        );
        assert_eq!(BackupInfo::decode(&bytes, Path::new("m")).unwrap(), info);
        let unknown = body.replace(" zstd\n", " lzma\n");
        let unknown = format!("{unknown}end {:08x}\n", crc32c::crc32c(unknown.as_bytes()));
        let err = BackupInfo::decode(unknown.as_bytes(), Path::new("m"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown codec"), "{err}");
    }

    #[test]
    fn refuses_damage_versions_and_escaping_paths() {
        let path = Path::new("/b/meta/3");
        let mut flipped = sample().encode();
        flipped[20] ^= 1;
        let err = BackupInfo::decode(&flipped, path).unwrap_err().to_string();
        assert!(
            err.contains("checksum mismatch") && err.contains("/b/meta/3"),
            "{err}"
        );
        let newer = String::from_utf8(sample().encode())
            .unwrap()
            .replace("shale-backup 1", "shale-backup 3");
        let err = BackupInfo::decode(newer.as_bytes(), path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("version \"3\""), "{err}");
        for (stored, name) in [
            ("shared/../../etc/passwd", "x"),
            ("private/4/CURRENT", "CURRENT"),
            ("shared/a", "../a"),
        ] {
            let mut info = sample();
            info.files[0].stored = stored.into();
            info.files[0].name = name.into();
            let err = BackupInfo::decode(&info.encode(), path)
                .unwrap_err()
                .to_string();
            assert!(err.contains("bad"), "{stored} {name}: {err}");
        }
        for cut in [0, 10, 60] {
            assert!(BackupInfo::decode(&sample().encode()[..cut], path).is_err());
        }
    }
}
