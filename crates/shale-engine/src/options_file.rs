//! [`OptionsFile`]: the options a database was opened with, as a checksummed text file
//! (`OPTIONS-NNNNNN`, docs/format/options.md).
//!
//! The file is independent of the engine's options struct: the engine maps its options to
//! `key=value` strings in sections (`db`, `keyspace "name"`) and back.
//!
//! Invariants:
//! 1. `decode(encode(f)) == f` for every `OptionsFile`: section names, keys and values are
//!    escaped so that any text round-trips, and the escaping has one form for each text.
//! 2. Decoding treats its input as untrusted: every failure is an error naming the file and
//!    the byte offset of the offending line; nothing panics.
//! 3. A file is written under a temporary name, synced and renamed, so the final name only
//!    ever holds a complete file.

use std::fmt::Write as _;
use std::path::Path;

use shale_fs::FileSystem;

use crate::error::{Error, Result};

/// The options file format version this build writes, and the newest it reads.
pub const OPTIONS_FORMAT_VERSION: u32 = 1;

/// The first line of every OPTIONS file.
const HEADER_LINE: &str = "# Shale OPTIONS file";
const VERSION_SECTION: &str = "[version]";
const FORMAT_VERSION_KEY: &str = "format_version=";
const SHALE_VERSION_KEY: &str = "shale_version=";
const CHECKSUM_KEY: &str = "checksum=";
const PREFIX: &str = "OPTIONS-";

/// The name of OPTIONS file `number`: `OPTIONS-` and at least six digits.
pub fn options_file_name(number: u64) -> String {
    format!("{PREFIX}{number:06}")
}

/// The number of a file named by [`options_file_name`], or `None` for any other name
/// (temporary files included).
pub fn parse_options_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(PREFIX)?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The contents of an OPTIONS file: sections of `key=value` entries, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OptionsFile {
    /// (section name, entries). The engine writes `db` and one `keyspace "<name>"` per
    /// keyspace ([`OptionsFile::keyspace_section`]). The `[version]` section is not here:
    /// [`OptionsFile::encode`] writes it and [`OptionsFile::decode`] checks it.
    pub sections: Vec<(String, Vec<(String, String)>)>,
}

impl OptionsFile {
    /// A file with no sections.
    pub fn new() -> Self {
        Self::default()
    }

    /// The section name of keyspace `name`: `keyspace "<name>"`. The name is taken as is
    /// between the outer quotes (see [`Self::keyspace_of_section`]).
    pub fn keyspace_section(name: &str) -> String {
        format!("keyspace \"{name}\"")
    }

    /// The keyspace name of a section named by [`Self::keyspace_section`].
    pub fn keyspace_of_section(section: &str) -> Option<&str> {
        section.strip_prefix("keyspace \"")?.strip_suffix('"')
    }

    /// The value of `key` in the first section named `section` (the first entry wins).
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.section(section)
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The entries of the first section named `name` (empty if there is none).
    pub fn section(&self, name: &str) -> &[(String, String)] {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[], |(_, entries)| entries.as_slice())
    }

    /// The file's bytes (docs/format/options.md, "Layout").
    pub fn encode(&self) -> Vec<u8> {
        let mut text = String::new();
        let _ = writeln!(text, "{HEADER_LINE}");
        let _ = writeln!(text, "{VERSION_SECTION}");
        let _ = writeln!(text, "{FORMAT_VERSION_KEY}{OPTIONS_FORMAT_VERSION}");
        let _ = writeln!(
            text,
            "{SHALE_VERSION_KEY}{}",
            escape(env!("CARGO_PKG_VERSION"))
        );
        for (name, entries) in &self.sections {
            let _ = writeln!(text, "[{}]", escape(name));
            for (key, value) in entries {
                let _ = writeln!(text, "{}={}", escape(key), escape(value));
            }
        }
        let checksum = crc32c::crc32c(text.as_bytes());
        let _ = writeln!(text, "{CHECKSUM_KEY}{checksum:08x}");
        text.into_bytes()
    }

    /// Decodes the bytes of the file at `path` (used in error messages): checks the checksum,
    /// the header, the version (newer: `NotSupported`) and every line (malformed:
    /// `Corruption` naming `path` and the line's byte offset).
    pub fn decode(bytes: &[u8], path: &Path) -> Result<OptionsFile> {
        decode(bytes, path)
    }

    /// Writes the file as `OPTIONS-NNNNNN` (`number`) in `dir`: a temporary file, synced, then
    /// renamed, then the directory synced.
    pub fn write(&self, fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
        let path = dir.join(options_file_name(number));
        shale_fs::replace_file_durably(fs, &path, &self.encode())?;
        Ok(())
    }

    /// The OPTIONS file with the largest number in `dir`, decoded, or `None` if there is none.
    /// A damaged latest file is an error (an older one is never used instead).
    pub fn read_latest(fs: &dyn FileSystem, dir: &Path) -> Result<Option<(u64, OptionsFile)>> {
        let Some(number) = fs
            .list(dir)?
            .iter()
            .filter_map(|name| parse_options_file_name(name))
            .max()
        else {
            return Ok(None);
        };
        let path = dir.join(options_file_name(number));
        let file = fs.open_read(&path)?;
        let size = usize::try_from(file.size()?).map_err(|_| Error::Corruption {
            file: path.clone(),
            offset: 0,
            detail: "the file is too large to be an OPTIONS file".to_owned(),
        })?;
        let mut bytes = vec![0; size];
        file.read_exact_at(0, &mut bytes)?;
        Ok(Some((number, decode(&bytes, &path)?)))
    }
}

/// Escapes text for a line (docs/format/options.md, "Escaping").
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '=' => out.push_str("\\="),
            '#' => out.push_str("\\#"),
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Decodes the `\xNN` escape whose two characters follow in `chars` (only control
/// characters other than newline, carriage return and tab are written this way).
fn unescape_hex(
    chars: &mut std::str::CharIndices<'_>,
    at: usize,
) -> std::result::Result<char, (usize, String)> {
    let hex: String = chars.by_ref().take(2).map(|(_, c)| c).collect();
    (hex.len() == 2
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| u8::from_str_radix(&hex, 16).ok())
    .flatten()
    .filter(|b| b.is_ascii_control() && !matches!(b, b'\n' | b'\r' | b'\t'))
    .map(char::from)
    .ok_or_else(|| {
        (
            at,
            format!("\\x{hex} is not a control character in two lowercase hex digits"),
        )
    })
}

/// Undoes [`escape`]; refuses anything `escape` never writes. The error is the byte offset
/// inside `text` and what is wrong.
fn unescape(text: &str) -> std::result::Result<String, (usize, String)> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                let escaped = match chars.next().map(|(_, c)| c) {
                    Some('\\') => '\\',
                    Some('n') => '\n',
                    Some('r') => '\r',
                    Some('t') => '\t',
                    Some('=') => '=',
                    Some('#') => '#',
                    Some('[') => '[',
                    Some(']') => ']',
                    Some('x') => unescape_hex(&mut chars, at)?,
                    Some(other) => return Err((at, format!("unknown escape \\{other}"))),
                    None => return Err((at, "a backslash ends the text".to_owned())),
                };
                out.push(escaped);
            }
            '=' | '#' | '[' | ']' => {
                return Err((at, format!("{c:?} must be escaped as \\{c}")));
            }
            c if c.is_ascii_control() => {
                return Err((at, format!("raw control character {:#04x}", c as u32)));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The offset of the first unescaped `=` in `line`.
fn find_separator(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn corruption(path: &Path, offset: usize, detail: impl Into<String>) -> Error {
    Error::Corruption {
        file: path.to_path_buf(),
        offset: offset as u64,
        detail: detail.into(),
    }
}

fn newer_version(path: &Path, version: u32) -> Error {
    Error::NotSupported(format!(
        "{} is OPTIONS format version {version}, written by a newer Shale; this build reads \
         versions up to {OPTIONS_FORMAT_VERSION}",
        path.display()
    ))
}

/// The format version a file claims on its third line, without trusting anything else.
fn claimed_version(bytes: &[u8]) -> Option<u32> {
    let mut lines = bytes.split(|&b| b == b'\n');
    let _header = lines.next()?;
    if lines.next()? != VERSION_SECTION.as_bytes() {
        return None;
    }
    let line = std::str::from_utf8(lines.next()?).ok()?;
    let digits = line.strip_prefix(FORMAT_VERSION_KEY)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn decode(bytes: &[u8], path: &Path) -> Result<OptionsFile> {
    let (text, checksum_at) = check_checksum(bytes, path)?;
    // Every line of `text` ends with '\n' (it ends right after one, or is empty).
    let mut lines = Vec::new();
    let mut offset = 0;
    for line in text.split_terminator('\n') {
        lines.push((offset, line));
        offset += line.len() + 1;
    }
    let mut lines = lines.into_iter();
    check_preamble(&mut lines, path, checksum_at)?;
    let mut file = OptionsFile::new();
    for (at, line) in lines {
        parse_line(&mut file, line, at, path)?;
    }
    Ok(file)
}

/// Checks the last line's checksum (and, first, a newer version any reader can see) and
/// returns the text it covers and the checksum line's offset.
fn check_checksum<'a>(bytes: &'a [u8], path: &Path) -> Result<(&'a str, usize)> {
    let Some(body) = bytes.strip_suffix(b"\n") else {
        return Err(corruption(
            path,
            bytes.len(),
            "the file does not end with a newline: truncated?",
        ));
    };
    let checksum_at = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let covered = &bytes[..checksum_at];
    // A newer format may checksum differently: say so rather than "corrupt".
    if let Some(version) = claimed_version(covered).filter(|v| *v > OPTIONS_FORMAT_VERSION) {
        return Err(newer_version(path, version));
    }
    let stored = body[checksum_at..]
        .strip_prefix(CHECKSUM_KEY.as_bytes())
        .filter(|hex| {
            hex.len() == 8
                && hex
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        })
        .and_then(|hex| std::str::from_utf8(hex).ok())
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or_else(|| {
            corruption(
                path,
                checksum_at,
                "the last line is not `checksum=` and 8 lowercase hex digits: truncated?",
            )
        })?;
    let computed = crc32c::crc32c(covered);
    if stored != computed {
        return Err(corruption(
            path,
            checksum_at,
            format!(
                "checksum mismatch: the file says {stored:08x}, its contents have {computed:08x}"
            ),
        ));
    }
    let text = std::str::from_utf8(covered).map_err(|e| {
        corruption(
            path,
            e.valid_up_to(),
            "the file is not UTF-8 text at this offset",
        )
    })?;
    Ok((text, checksum_at))
}

/// Checks the header line and the `[version]` section.
fn check_preamble<'a>(
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
    path: &Path,
    checksum_at: usize,
) -> Result<()> {
    let mut expect = |expected: &str, what: &str, exact: bool| -> Result<(usize, &'a str)> {
        match lines.next() {
            Some((at, line)) if line == expected || (!exact && line.starts_with(expected)) => {
                Ok((at, line))
            }
            Some((at, line)) => Err(corruption(
                path,
                at,
                format!("expected {what}, found {line:?}"),
            )),
            None => Err(corruption(path, checksum_at, format!("{what} is missing"))),
        }
    };
    expect(HEADER_LINE, "the header line", true)?;
    expect(VERSION_SECTION, "the [version] section", true)?;
    let (at, line) = expect(FORMAT_VERSION_KEY, "format_version", false)?;
    let digits = &line[FORMAT_VERSION_KEY.len()..];
    let version = digits
        .parse::<u32>()
        .ok()
        .filter(|v| {
            *v > 0 && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0')
        })
        .ok_or_else(|| {
            corruption(
                path,
                at,
                format!("format_version {digits:?} is not a positive decimal number"),
            )
        })?;
    if version > OPTIONS_FORMAT_VERSION {
        return Err(newer_version(path, version));
    }
    let (at, line) = expect(SHALE_VERSION_KEY, "shale_version", false)?;
    unescape(&line[SHALE_VERSION_KEY.len()..])
        .map_err(|(col, detail)| corruption(path, at, format!("column {}: {detail}", col + 1)))?;
    Ok(())
}

/// Adds one line after the preamble (at offset `at`) to `file`.
fn parse_line(file: &mut OptionsFile, line: &str, at: usize, path: &Path) -> Result<()> {
    let bad =
        |col: usize, detail: String| corruption(path, at, format!("column {}: {detail}", col + 1));
    if line.is_empty() || line.starts_with('#') {
        return Ok(());
    }
    if let Some(inner) = line.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| bad(line.len(), "a section header must end with ']'".to_owned()))?;
        let name = unescape(inner).map_err(|(col, detail)| bad(col + 1, detail))?;
        file.sections.push((name, Vec::new()));
        return Ok(());
    }
    let Some(separator) = find_separator(line) else {
        return Err(bad(
            0,
            "neither a section header nor a key=value line".to_owned(),
        ));
    };
    let key = unescape(&line[..separator]).map_err(|(col, detail)| bad(col, detail))?;
    let value = unescape(&line[separator + 1..])
        .map_err(|(col, detail)| bad(separator + 1 + col, detail))?;
    let Some((_, entries)) = file.sections.last_mut() else {
        return Err(bad(0, "an entry before the first section".to_owned()));
    };
    entries.push((key, value));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trips_awkward_text() {
        for text in [
            "",
            "plain",
            "a=b",
            "line\nbreak\r\n",
            "\\",
            "\\n",
            "#hash",
            "[bracket]",
            "tab\there",
            "\u{0}\u{1}\u{7f}",
            " spaced ",
            "\"quoted\"",
            "ünïcödé ✓",
        ] {
            let escaped = escape(text);
            assert!(!escaped.contains('\n'), "{escaped:?}");
            assert_eq!(unescape(&escaped).unwrap(), text, "{escaped:?}");
        }
    }

    #[test]
    fn unescape_refuses_what_escape_never_writes() {
        for bad in [
            "\\q", "\\", "a=b", "#", "[", "]", "\\x41", "\\xZZ", "\\x0", "\u{1}",
        ] {
            assert!(unescape(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_names() {
        assert_eq!(options_file_name(5), "OPTIONS-000005");
        assert_eq!(parse_options_file_name("OPTIONS-000005"), Some(5));
        assert_eq!(parse_options_file_name("OPTIONS-000005.tmp"), None);
        assert_eq!(parse_options_file_name("OPTIONS-5"), None);
    }

    #[test]
    fn keyspace_sections() {
        let section = OptionsFile::keyspace_section("a \"b\" c");
        assert_eq!(section, "keyspace \"a \"b\" c\"");
        assert_eq!(
            OptionsFile::keyspace_of_section(&section),
            Some("a \"b\" c")
        );
        assert_eq!(OptionsFile::keyspace_of_section("db"), None);
    }
}
