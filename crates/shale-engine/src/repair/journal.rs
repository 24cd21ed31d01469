//! The record a repair keeps of what it sets aside: `lost/REPAIR-NNNNNN`, NNNNNN being the
//! number of the MANIFEST that repair writes (docs/operations.md "Repair").
//!
//! A repair writes its journal durably before it makes its MANIFEST live, and moves files into
//! `lost/` only after. A later repair reads every journal, so that:
//! 1. Files an earlier repair moved into `lost/` are still in the report (and their data in
//!    the bytes lost), with the reason the earlier repair found.
//! 2. When the live MANIFEST is the one a journal names, that repair committed: the files it
//!    planned to move and that are still in the directory (it was interrupted) are moved with
//!    the reason it recorded, not judged again against its MANIFEST (which no longer lists a
//!    damaged table, so it would look obsolete).
//! 3. Every destination a journal names is claimed: a later repair never moves another file
//!    there, so a destination that exists was filled by the repair whose journal names it.
//!
//! Text, one line per file, fields separated by tabs: name, destination in `lost/` (`-` for a
//! missing file), size, bytes of data lost with it, `1` if it held no live data, reason.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};

use super::LostFile;

const PREFIX: &str = "REPAIR-";
const HEADER: &str = "shale repair journal 1";

/// The journal of the repair that writes MANIFEST `number`.
pub(super) fn journal_name(number: u64) -> String {
    format!("{PREFIX}{number:06}")
}

pub(super) fn parse_journal_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The journal's text for `lost` (destinations relative to `lost/`).
pub(super) fn encode(lost: &[LostFile]) -> String {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    let mut text = format!("{HEADER}\n");
    for file in lost {
        let to = file
            .moved_to
            .as_deref()
            .and_then(Path::file_name)
            .map_or_else(|| "-".to_owned(), |n| clean(&n.to_string_lossy()));
        let _ = writeln!(
            text,
            "{}\t{to}\t{}\t{}\t{}\t{}",
            clean(&file.name),
            file.bytes,
            file.data_lost,
            u8::from(file.obsolete),
            clean(&file.reason)
        );
    }
    text
}

/// Decodes a journal read from `path` in `lost_dir`.
pub(super) fn decode(text: &str, path: &Path, lost_dir: &Path) -> Result<Vec<LostFile>> {
    let bad = |offset: usize, detail: &str| Error::Corruption {
        file: path.to_path_buf(),
        offset: offset as u64,
        detail: format!("repair journal: {detail}"),
    };
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some(HEADER) {
        return Err(bad(0, "the first line is not the journal header"));
    }
    let mut offset = HEADER.len() + 1;
    let mut out = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.trim_end_matches('\n').splitn(6, '\t').collect();
        let [name, to, bytes, data_lost, obsolete, reason] = fields[..] else {
            return Err(bad(offset, "a line does not have six fields"));
        };
        let number = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| bad(offset, "a size is not a number"))
        };
        out.push(LostFile {
            name: name.to_owned(),
            moved_to: (to != "-").then(|| lost_dir.join(to)),
            bytes: number(bytes)?,
            data_lost: number(data_lost)?,
            obsolete: obsolete == "1",
            earlier: false,
            reason: reason.to_owned(),
        });
        offset += line.len();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_parse() {
        let lost = Path::new("/db/lost");
        let files = vec![
            LostFile {
                name: "000007.sst".to_owned(),
                moved_to: Some(lost.join("000007.sst.1")),
                bytes: 900,
                data_lost: 900,
                obsolete: false,
                earlier: false,
                reason: "unreadable:\tbad\nblock".to_owned(),
            },
            LostFile {
                name: "000008.sst".to_owned(),
                moved_to: None,
                bytes: 10,
                data_lost: 10,
                obsolete: true,
                earlier: false,
                reason: "missing".to_owned(),
            },
        ];
        let text = encode(&files);
        let back = decode(&text, &lost.join("REPAIR-000009"), lost).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].moved_to.as_deref(), files[0].moved_to.as_deref());
        assert_eq!(back[0].reason, "unreadable: bad block");
        assert_eq!((back[1].moved_to.is_none(), back[1].obsolete), (true, true));
        assert_eq!(parse_journal_name(&journal_name(9)), Some(9));
        assert_eq!(parse_journal_name("REPAIR-"), None);
        assert!(decode("garbage\n", Path::new("j"), lost).is_err());
        assert!(decode(&format!("{HEADER}\na\tb\n"), Path::new("j"), lost).is_err());
    }
}
