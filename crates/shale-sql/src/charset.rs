//! The character sets a connection can name (MySQL "Connection Character Sets and
//! Collations"), and conversion between them and UTF-8, which is what the SQL layer reads and
//! stores. The server decodes statement text and string parameters from
//! `character_set_client` with [`Charset::decode`] and encodes text results into
//! `character_set_results` with [`Charset::encode`]; LOAD DATA decodes files with it.
//!
//! `latin1` is MySQL's latin1: Windows cp1252, with the five bytes cp1252 leaves undefined
//! (0x81, 0x8D, 0x8F, 0x90, 0x9D) mapped to the C1 controls of the same number, as MySQL
//! maps them. So every byte decodes, and every character that came from a latin1 byte encodes
//! back to it. The table is 32 entries; a crate (encoding_rs) would map those five bytes the
//! same way but turns unmappable characters into HTML references instead of MySQL's `?`.
//!
//! Invariants:
//! 1. `decode` never alters text silently: bytes that are not a character of the character
//!    set are an error naming them (MySQL's 1300), never replaced.
//! 2. `encode` always succeeds: a character the target cannot represent becomes `?`, as
//!    MySQL sends it.
//! 3. `binary` converts nothing either way.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::error::SqlError;

/// A character set a connection can use (names.rs records the same list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    Utf8mb4,
    /// UTF-8 limited to the Basic Multilingual Plane (at most 3 bytes a character).
    Utf8mb3,
    /// MySQL's latin1 (cp1252; see the module doc).
    Latin1,
    Ascii,
    Binary,
}

/// The characters of latin1's bytes 0x80..=0x9F.
const LATIN1_HIGH_CONTROLS: [char; 32] = [
    '\u{20AC}', '\u{0081}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{008D}', '\u{017D}', '\u{008F}',
    '\u{0090}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}', '\u{0153}', '\u{009D}', '\u{017E}', '\u{0178}',
];

fn latin1_char(byte: u8) -> char {
    match byte {
        0x80..=0x9F => LATIN1_HIGH_CONTROLS[usize::from(byte - 0x80)],
        _ => char::from(byte),
    }
}

fn latin1_byte(c: char) -> Option<u8> {
    match u32::from(c) {
        // `u32 as u8` is exact in these ranges.
        n @ (0..=0x7F | 0xA0..=0xFF) => Some(n as u8),
        _ => LATIN1_HIGH_CONTROLS
            .iter()
            .position(|&known| known == c)
            .map(|i| 0x80 + i as u8),
    }
}

impl Charset {
    /// The character set a variable names (`character_set_client`); `utf8` is utf8mb3, as
    /// in MySQL 8. None for a name Shale does not convert.
    pub fn from_name(name: &str) -> Option<Charset> {
        Some(match name.to_ascii_lowercase().as_str() {
            "utf8mb4" => Charset::Utf8mb4,
            "utf8mb3" | "utf8" => Charset::Utf8mb3,
            "latin1" => Charset::Latin1,
            "ascii" => Charset::Ascii,
            "binary" => Charset::Binary,
            _ => return None,
        })
    }

    /// MySQL's name of the character set.
    pub fn name(self) -> &'static str {
        match self {
            Charset::Utf8mb4 => "utf8mb4",
            Charset::Utf8mb3 => "utf8mb3",
            Charset::Latin1 => "latin1",
            Charset::Ascii => "ascii",
            Charset::Binary => "binary",
        }
    }

    /// The most bytes one character takes (MySQL's `mbmaxlen`).
    pub fn max_bytes(self) -> u32 {
        match self {
            Charset::Utf8mb4 => 4,
            Charset::Utf8mb3 => 3,
            Charset::Latin1 | Charset::Ascii | Charset::Binary => 1,
        }
    }

    /// The id of the character set's default collation, which column definitions carry when
    /// results are converted into it (MySQL sends `character_set_results`' number).
    pub fn collation_id(self) -> u16 {
        match self {
            Charset::Utf8mb4 => 255,
            Charset::Utf8mb3 => 33,
            Charset::Latin1 => 8,
            Charset::Ascii => 11,
            Charset::Binary => 63,
        }
    }

    /// Whether text in UTF-8 is already in this character set's encoding, so results need no
    /// conversion (utf8mb3 does: its clients cannot take 4-byte characters).
    pub fn is_utf8mb4(self) -> bool {
        self == Charset::Utf8mb4
    }

    /// `bytes` in this character set as UTF-8 (borrowed when nothing changes). For `binary`
    /// the bytes must be UTF-8 already, since the SQL layer reads statement text as UTF-8.
    pub fn decode(self, bytes: &[u8]) -> Result<Cow<'_, str>, SqlError> {
        match self {
            Charset::Utf8mb4 | Charset::Binary => std::str::from_utf8(bytes)
                .map(Cow::Borrowed)
                .map_err(|e| invalid(self, &bytes[e.valid_up_to()..])),
            Charset::Utf8mb3 => {
                let text = std::str::from_utf8(bytes)
                    .map_err(|e| invalid(self, &bytes[e.valid_up_to()..]))?;
                match text.char_indices().find(|(_, c)| c.len_utf8() == 4) {
                    Some((at, _)) => Err(invalid(self, &bytes[at..])),
                    None => Ok(Cow::Borrowed(text)),
                }
            }
            Charset::Ascii => match bytes.iter().position(|b| !b.is_ascii()) {
                Some(at) => Err(invalid(self, &bytes[at..])),
                // ASCII is UTF-8.
                None => Ok(Cow::Borrowed(
                    std::str::from_utf8(bytes).unwrap_or_default(),
                )),
            },
            Charset::Latin1 => {
                if bytes.is_ascii() {
                    return Ok(Cow::Borrowed(
                        std::str::from_utf8(bytes).unwrap_or_default(),
                    ));
                }
                Ok(Cow::Owned(bytes.iter().map(|&b| latin1_char(b)).collect()))
            }
        }
    }

    /// Whether `c` is a character of this character set (`binary` and utf8mb4 hold all).
    pub fn holds(self, c: char) -> bool {
        match self {
            Charset::Latin1 => latin1_byte(c).is_some(),
            Charset::Ascii => c.is_ascii(),
            Charset::Utf8mb3 => c.len_utf8() < 4,
            Charset::Utf8mb4 | Charset::Binary => true,
        }
    }

    /// The character set of a stored collation's columns.
    pub(crate) fn of_collation(c: shale_table::Collation) -> Charset {
        match c {
            shale_table::Collation::Latin1SwedishCi => Charset::Latin1,
            shale_table::Collation::Utf8mb3GeneralCi => Charset::Utf8mb3,
            shale_table::Collation::Binary => Charset::Binary,
            _ => Charset::Utf8mb4,
        }
    }

    /// `text` with each character this set lacks as `?` (what MySQL stores outside strict
    /// mode), and whether any was.
    pub(crate) fn replace_lacking(self, text: String) -> (String, bool) {
        if text.chars().all(|c| self.holds(c)) {
            return (text, false);
        }
        let kept = text
            .chars()
            .map(|c| if self.holds(c) { c } else { '?' })
            .collect();
        (kept, true)
    }

    /// UTF-8 `text` in this character set; a character it lacks becomes `?` (borrowed when
    /// nothing changes). Bytes that are not UTF-8 (a binary value in a text column) go out
    /// unchanged.
    pub fn encode(self, text: &[u8]) -> Cow<'_, [u8]> {
        if text.is_ascii() || matches!(self, Charset::Utf8mb4 | Charset::Binary) {
            return Cow::Borrowed(text);
        }
        let Ok(text) = std::str::from_utf8(text) else {
            return Cow::Borrowed(text);
        };
        let mut out = Vec::with_capacity(text.len());
        for c in text.chars() {
            match self {
                Charset::Latin1 => out.push(latin1_byte(c).unwrap_or(b'?')),
                Charset::Ascii => out.push(if c.is_ascii() { c as u8 } else { b'?' }),
                _ if c.len_utf8() == 4 => out.push(b'?'),
                _ => {
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        Cow::Owned(out)
    }
}

/// MySQL's error for bytes that are not a character of `charset`: 1300 `Invalid utf8mb4
/// character string: 'F09F98'`, naming (in hex) the bad bytes and a few after them.
fn invalid(charset: Charset, bad: &[u8]) -> SqlError {
    let mut hex = String::new();
    for b in bad.iter().take(6) {
        let _ = write!(hex, "{b:02X}");
    }
    SqlError {
        code: 1300,
        sqlstate: "HY000",
        message: format!("Invalid {} character string: '{hex}'", charset.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_is_mysqls_cp1252_both_ways() {
        let every: Vec<u8> = (0..=255).collect();
        let text = Charset::Latin1.decode(&every).unwrap();
        assert_eq!(text.chars().count(), 256);
        assert!(text.starts_with("\0\u{1}"));
        let high: String = text.chars().skip(0x80).take(4).collect();
        assert_eq!(high, "\u{20AC}\u{81}\u{201A}\u{192}");
        for (byte, c) in [
            (0x8D, '\u{8D}'),
            (0x8F, '\u{8F}'),
            (0x90, '\u{90}'),
            (0x9D, '\u{9D}'),
        ] {
            assert_eq!(text.chars().nth(byte).unwrap(), c);
        }
        assert_eq!(text.chars().nth(0xE9).unwrap(), 'é');
        // Every byte comes back.
        assert_eq!(Charset::Latin1.encode(text.as_bytes()).as_ref(), &every[..]);
    }

    #[test]
    fn characters_a_target_lacks_become_question_marks() {
        assert_eq!(
            Charset::Latin1.encode("café €".as_bytes()).as_ref(),
            b"caf\xE9 \x80"
        );
        assert_eq!(Charset::Latin1.encode("ж😀".as_bytes()).as_ref(), b"??");
        assert_eq!(Charset::Ascii.encode("é-a".as_bytes()).as_ref(), b"?-a");
        assert_eq!(
            Charset::Utf8mb3.encode("é😀".as_bytes()).as_ref(),
            "é?".as_bytes()
        );
        assert_eq!(
            Charset::Utf8mb4.encode("é😀".as_bytes()).as_ref(),
            "é😀".as_bytes()
        );
        assert_eq!(Charset::Binary.encode(b"\xE9").as_ref(), b"\xE9");
        // A binary value in a text column is not touched.
        assert_eq!(Charset::Latin1.encode(b"\xFF\xFE").as_ref(), b"\xFF\xFE");
    }

    #[test]
    fn decoding_refuses_what_the_charset_lacks() {
        let error = Charset::Utf8mb4.decode(b"a\xFFbc").unwrap_err();
        assert_eq!(error.code, 1300);
        assert_eq!(error.message, "Invalid utf8mb4 character string: 'FF6263'");
        let error = Charset::Utf8mb3.decode("x😀".as_bytes()).unwrap_err();
        assert_eq!(
            error.message,
            "Invalid utf8mb3 character string: 'F09F9880'"
        );
        assert_eq!(Charset::Utf8mb3.decode("é".as_bytes()).unwrap(), "é");
        let error = Charset::Ascii.decode(b"a\xE9").unwrap_err();
        assert_eq!(error.message, "Invalid ascii character string: 'E9'");
        assert!(matches!(
            Charset::Utf8mb4.decode(b"plain").unwrap(),
            Cow::Borrowed(_)
        ));
        assert_eq!(Charset::Latin1.decode(b"caf\xE9 \x80").unwrap(), "café €");
    }

    #[test]
    fn names_are_mysqls() {
        assert_eq!(Charset::from_name("UTF8"), Some(Charset::Utf8mb3));
        assert_eq!(Charset::from_name("latin1"), Some(Charset::Latin1));
        assert_eq!(Charset::from_name("koi8r"), None);
        assert_eq!(Charset::Latin1.collation_id(), 8);
    }
}
