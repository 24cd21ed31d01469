//! Statement text from the client's bytes to the UTF-8 the SQL layer parses (MySQL
//! "Connection Character Sets and Collations", "Character Set Introducers").
//!
//! The text is in `character_set_client` ([`Charset::decode`]), except string literals with
//! an introducer, whose bytes are in the introducer's character set whatever the client's
//! is: `_binary'...'` may hold any bytes (PyMySQL sends `bytes` parameters so, raw), and
//! `_latin1'caf\xE9'` is latin1 even from a utf8mb4 client. So before the text is decoded, a
//! small lexer finds those literals and replaces each with one the parser reads in UTF-8:
//!
//! - `_binary'...'` (and `_binary"..."`, `_binary X'..'`, `_binary 0x..`) becomes
//!   `X'hex'` of the literal's bytes, a binary string as the original is;
//! - `_cs'...'` and `_cs X'..'`/`_cs 0x..` for the other known character sets become
//!   `_cs'...'` of the bytes decoded from `cs` (1300 if they are not characters of it): the
//!   introducer stays, as it gives the literal its collation (the SQL layer's
//!   coercibility.rs);
//! - quoted strings right after an introduced one are part of it (`_binary'a' 'b'` is
//!   `X'6162'`), as MySQL's lexer joins them;
//! - a plain literal whose bytes are not UTF-8, from a utf8mb4 or binary client, becomes
//!   `X'hex'` too. PyMySQL sends `bytes` parameters so by default (raw, in `'...'`, without
//!   `_binary` unless `binary_prefix=True`). MySQL takes such a literal's bytes as they are:
//!   stored into a binary column they are kept, into a text column they fail with 1366, and
//!   the binary string does the same in Shale. A binary client's literals are binary
//!   strings anyway.
//!
//! The literal's value is read as MySQL's lexer reads it: `''` (or `""`) is one quote, and
//! unless `sql_mode` has NO_BACKSLASH_ESCAPES, `\0 \b \n \r \t \Z` are their control
//! characters, `\%` and `\_` keep their backslash, and `\` before any other byte is that
//! byte. Comments (`#`, `-- `, `/* */`, but not the executable `/*! */`), quoted identifiers
//! and other literals are skipped, so an `_binary` inside them is left alone.
//!
//! Invariants:
//! 1. Text without an introducer or a non-UTF-8 literal (from a utf8mb4 or binary client)
//!    is only decoded, never rewritten; text that needs neither is borrowed, not copied.
//! 2. A rewritten literal has exactly the value the original has in MySQL, in the form the
//!    parser reads under the session's `sql_mode`: hex, or `'...'` with `\\`, `\'` and `\0`
//!    escapes, or under NO_BACKSLASH_ESCAPES (where the parser takes `\` as it is) with only
//!    `''` for a quote.
//! 3. A literal that does not end (no closing quote) is left as it is, for the parser to
//!    report.

use std::borrow::Cow;
use std::fmt::Write as _;

use shale_sql::SqlError;

use shale_sql::Charset;

/// What reading statement text depends on, from the session's variables.
#[derive(Debug, Clone, Copy)]
pub struct TextMode {
    /// `character_set_client`.
    pub client: Charset,
    /// `sql_mode` has NO_BACKSLASH_ESCAPES.
    pub no_backslash_escapes: bool,
    /// `sql_mode` has ANSI_QUOTES (or ANSI): `"` quotes identifiers, not strings.
    pub ansi_quotes: bool,
}

impl Default for TextMode {
    fn default() -> Self {
        TextMode {
            client: Charset::Utf8mb4,
            no_backslash_escapes: false,
            ansi_quotes: false,
        }
    }
}

impl TextMode {
    /// The mode for a session whose `sql_mode` is `sql_mode`.
    pub fn new(client: Charset, sql_mode: &str) -> TextMode {
        let has = |flag: &str| {
            sql_mode
                .split(',')
                .any(|m| m.trim().eq_ignore_ascii_case(flag))
        };
        TextMode {
            client,
            no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"),
            ansi_quotes: has("ANSI_QUOTES") || has("ANSI"),
        }
    }
}

/// The statement text `bytes` as UTF-8 for the parser (see the module doc).
pub fn to_utf8(bytes: &[u8], mode: TextMode) -> Result<Cow<'_, str>, SqlError> {
    // Fast path: no introducer can start without `_`, and a plain literal is rewritten only
    // when the text does not decode.
    if !bytes.contains(&b'_') {
        if let Ok(text) = mode.client.decode(bytes) {
            return Ok(text);
        }
    }
    let mut out = String::new();
    // `bytes[done..]` is not in `out` yet.
    let mut done = 0;
    let mut rewrote = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\'' | b'"' if b == b'\'' || !mode.ansi_quotes => {
                let Some((value, end)) = string_literal(bytes, i, mode) else {
                    break;
                };
                if matches!(mode.client, Charset::Utf8mb4 | Charset::Binary)
                    && std::str::from_utf8(&value).is_err()
                {
                    out.push_str(&mode.client.decode(&bytes[done..i])?);
                    put_hex(&mut out, &value);
                    done = end;
                    rewrote = true;
                }
                i = end;
            }
            b'`' | b'"' => i = quoted_identifier(bytes, i),
            b'#' => i = line_end(bytes, i),
            b'-' if bytes.get(i + 1) == Some(&b'-')
                && bytes.get(i + 2).is_none_or(u8::is_ascii_whitespace) =>
            {
                i = line_end(bytes, i);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*')
                && !matches!(bytes.get(i + 2), Some(b'!' | b'+')) =>
            {
                i = comment_end(bytes, i);
            }
            b'_' if i == 0 || !is_identifier_byte(bytes[i - 1]) => {
                let word_end = identifier_end(bytes, i);
                let introduced = std::str::from_utf8(&bytes[i + 1..word_end])
                    .ok()
                    .and_then(Charset::from_name)
                    .and_then(|charset| {
                        introduced_literal(bytes, word_end, mode).map(|lit| (charset, lit))
                    });
                match introduced {
                    Some((charset, (value, end))) => {
                        out.push_str(&mode.client.decode(&bytes[done..i])?);
                        put_literal(&mut out, charset, &value, mode)?;
                        done = end;
                        rewrote = true;
                        i = end;
                    }
                    None => i = word_end,
                }
            }
            _ if is_identifier_byte(b) => i = identifier_end(bytes, i),
            _ => i += 1,
        }
    }
    if !rewrote {
        return mode.client.decode(bytes);
    }
    out.push_str(&mode.client.decode(&bytes[done..])?);
    Ok(Cow::Owned(out))
}

/// Bytes of an unquoted identifier (MySQL also takes any byte of a multi-byte character).
fn is_identifier_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

fn identifier_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|&b| !is_identifier_byte(b))
        .map_or(bytes.len(), |n| start + n)
}

fn line_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| start + n + 1)
}

fn comment_end(bytes: &[u8], start: usize) -> usize {
    bytes[start + 2..]
        .windows(2)
        .position(|w| w == b"*/")
        .map_or(bytes.len(), |n| start + 2 + n + 2)
}

/// The end of a `` `...` `` (or ANSI `"..."`) identifier; a doubled quote stays inside.
fn quoted_identifier(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

/// The value of the string literal whose opening quote is at `start`, and where it ends;
/// None if it does not end.
fn string_literal(bytes: &[u8], start: usize, mode: TextMode) -> Option<(Vec<u8>, usize)> {
    let quote = bytes[start];
    let mut value = Vec::new();
    let mut i = start + 1;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' && !mode.no_backslash_escapes {
            let escaped = *bytes.get(i + 1)?;
            match escaped {
                b'0' => value.push(0),
                b'b' => value.push(8),
                b'n' => value.push(b'\n'),
                b'r' => value.push(b'\r'),
                b't' => value.push(b'\t'),
                b'Z' => value.push(0x1A),
                b'%' | b'_' => value.extend_from_slice(&[b'\\', escaped]),
                other => value.push(other),
            }
            i += 2;
        } else if b == quote {
            if bytes.get(i + 1) == Some(&quote) {
                value.push(quote);
                i += 2;
            } else {
                return Some((value, i + 1));
            }
        } else {
            value.push(b);
            i += 1;
        }
    }
    None
}

/// A quoted string starting at `start` and the quoted strings right after it (spaces
/// between): MySQL reads `_binary'a' 'b'` as one literal, `'ab'`, and the introducer
/// applies to all of it. Its value and end; None if a string does not end.
fn quoted_run(bytes: &[u8], start: usize, mode: TextMode) -> Option<(Vec<u8>, usize)> {
    let (mut value, mut end) = string_literal(bytes, start, mode)?;
    loop {
        let next = bytes[end..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map_or(bytes.len(), |n| end + n);
        match bytes.get(next) {
            Some(b'\'') => {}
            Some(b'"') if !mode.ansi_quotes => {}
            _ => return Some((value, end)),
        }
        let (joined, joined_end) = string_literal(bytes, next, mode)?;
        value.extend_from_slice(&joined);
        end = joined_end;
    }
}

/// The literal after an introducer that ends at `from` (spaces may come between): a quoted
/// string, `X'hex'` or `0xhex`. Its value and end; None if no literal follows.
fn introduced_literal(bytes: &[u8], from: usize, mode: TextMode) -> Option<(Vec<u8>, usize)> {
    let start = bytes[from..]
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(bytes.len(), |n| from + n);
    match bytes.get(start)? {
        b'\'' => quoted_run(bytes, start, mode),
        b'"' if !mode.ansi_quotes => quoted_run(bytes, start, mode),
        b'x' | b'X' if bytes.get(start + 1) == Some(&b'\'') => {
            let close = bytes[start + 2..].iter().position(|&b| b == b'\'')? + start + 2;
            let digits = &bytes[start + 2..close];
            if !digits.len().is_multiple_of(2) {
                return None;
            }
            Some((decode_hex(digits)?, close + 1))
        }
        b'0' if bytes.get(start + 1) == Some(&b'x') => {
            let end = identifier_end(bytes, start);
            let digits = &bytes[start + 2..end];
            if digits.is_empty() {
                return None;
            }
            // As MySQL does, an odd count of digits has a 0 put before it.
            let padded: Vec<u8> = if digits.len().is_multiple_of(2) {
                digits.to_vec()
            } else {
                std::iter::once(b'0')
                    .chain(digits.iter().copied())
                    .collect()
            };
            Some((decode_hex(&padded)?, end))
        }
        _ => None,
    }
}

fn decode_hex(digits: &[u8]) -> Option<Vec<u8>> {
    let nibble = |b: u8| char::from(b).to_digit(16);
    digits
        .chunks(2)
        .map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8))
        .collect()
}

fn put_hex(out: &mut String, value: &[u8]) {
    out.push_str("X'");
    for b in value {
        let _ = write!(out, "{b:02X}");
    }
    out.push('\'');
}

/// An introduced literal's value as a literal the parser reads (invariant 2).
fn put_literal(
    out: &mut String,
    charset: Charset,
    value: &[u8],
    mode: TextMode,
) -> Result<(), SqlError> {
    if charset == Charset::Binary {
        put_hex(out, value);
        return Ok(());
    }
    let text = charset.decode(value)?;
    // The introducer stays: the literal has its character set's collation (MySQL's
    // "Character Set Introducers"), which the SQL layer gives it.
    out.push('_');
    out.push_str(charset.name());
    out.push('\'');
    for c in text.chars() {
        match c {
            '\'' if mode.no_backslash_escapes => out.push_str("''"),
            _ if mode.no_backslash_escapes => out.push(c),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\0' => out.push_str("\\0"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> String {
        to_utf8(bytes, TextMode::default()).unwrap().into_owned()
    }

    fn read_in(bytes: &[u8], client: Charset, sql_mode: &str) -> Result<String, SqlError> {
        to_utf8(bytes, TextMode::new(client, sql_mode)).map(Cow::into_owned)
    }

    #[test]
    fn binary_literals_become_hex_with_every_byte() {
        let mut sql = b"INSERT INTO t VALUES (_binary'".to_vec();
        let every: Vec<u8> = (0..=255).collect();
        // PyMySQL's escaping: \0 \n \r \Z \' \" \\ and the rest raw.
        for &b in &every {
            match b {
                0 => sql.extend_from_slice(b"\\0"),
                b'\n' => sql.extend_from_slice(b"\\n"),
                b'\r' => sql.extend_from_slice(b"\\r"),
                0x1A => sql.extend_from_slice(b"\\Z"),
                b'\'' | b'"' | b'\\' => sql.extend_from_slice(&[b'\\', b]),
                _ => sql.push(b),
            }
        }
        sql.extend_from_slice(b"')");
        let text = read(&sql);
        let mut hex = String::new();
        for b in &every {
            write!(hex, "{b:02X}").unwrap();
        }
        assert_eq!(text, format!("INSERT INTO t VALUES (X'{hex}')"));
    }

    #[test]
    fn escapes_and_quotes_are_mysqls() {
        assert_eq!(read(br"SELECT _binary'a''b'"), "SELECT X'612762'");
        assert_eq!(read(br"SELECT _binary'it\'s'"), "SELECT X'69742773'");
        assert_eq!(read(br#"SELECT _binary"x""y""#), "SELECT X'782279'");
        assert_eq!(read(br"SELECT _binary'\0\b\t\Z\q'"), "SELECT X'0008091A71'");
        // \% and \_ keep their backslash (LIKE patterns).
        assert_eq!(read(br"SELECT _binary'\%\_'"), "SELECT X'5C255C5F'");
        assert_eq!(read(b"SELECT _binary''"), "SELECT X''");
        // Spaces after the introducer, and any case.
        assert_eq!(read(b"SELECT _BINARY  'A'"), "SELECT X'41'");
    }

    #[test]
    fn no_backslash_escapes_takes_backslashes_literally() {
        let text = read_in(
            br"SELECT _binary'a\'",
            Charset::Utf8mb4,
            "NO_BACKSLASH_ESCAPES",
        )
        .unwrap();
        assert_eq!(text, "SELECT X'615C'");
        let text = read_in(
            br"SELECT _binary'a\''b'",
            Charset::Utf8mb4,
            "STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES",
        )
        .unwrap();
        assert_eq!(text, "SELECT X'615C2762'");
        // A text literal is rewritten for a parser that takes `\` as it is.
        let text = read_in(
            b"SELECT _latin1'\\\xE9''s'",
            Charset::Utf8mb4,
            "NO_BACKSLASH_ESCAPES",
        )
        .unwrap();
        assert_eq!(text, "SELECT _latin1'\\\u{e9}''s'");
    }

    #[test]
    fn only_real_introducers_are_rewritten() {
        // In a string, a comment, a quoted identifier, or part of a longer name.
        for sql in [
            &b"SELECT '_binary''x'''"[..],
            b"SELECT 1 -- _binary'x'\n",
            b"SELECT 1 # _binary'x'",
            b"SELECT 1 /* _binary'x' */",
            b"SELECT `_binary'x'`",
            b"SELECT a_binary 'x'",
            b"SELECT _binary",
            b"SELECT _koi8r'x'",
        ] {
            assert_eq!(read(sql), std::str::from_utf8(sql).unwrap());
        }
        // An executable comment is code.
        assert_eq!(
            read(b"/*!40101 SELECT _binary'x' */"),
            "/*!40101 SELECT X'78' */"
        );
        // Under ANSI_QUOTES "..." is an identifier.
        let text = read_in(br#"SELECT "_binary'x'""#, Charset::Utf8mb4, "ANSI").unwrap();
        assert_eq!(text, r#"SELECT "_binary'x'""#);
    }

    #[test]
    fn adjacent_strings_after_an_introducer_are_one_literal() {
        assert_eq!(
            read(b"SELECT _binary'a' 'b'\n\"c\", 1"),
            "SELECT X'616263', 1"
        );
        assert_eq!(
            read(b"SELECT _latin1'caf' '\xE9'"),
            "SELECT _latin1'caf\u{e9}'"
        );
        // A hex literal is not joined with what follows.
        assert_eq!(read(b"SELECT _binary X'61' AS x"), "SELECT X'61' AS x");
        // Unterminated: left for the parser.
        assert_eq!(read(b"SELECT _binary'a' 'b"), "SELECT _binary'a' 'b");
    }

    #[test]
    fn a_literal_that_does_not_end_is_left_for_the_parser() {
        assert_eq!(read(b"SELECT _binary'abc"), "SELECT _binary'abc");
    }

    #[test]
    fn other_introducers_decode_their_own_charset() {
        // latin1 bytes inside a utf8mb4 statement.
        assert_eq!(
            read(b"SELECT _latin1'caf\xE9 \x80'"),
            "SELECT _latin1'café €'"
        );
        assert_eq!(
            read(b"SELECT _utf8mb4'it''s \\\\ \\0'"),
            "SELECT _utf8mb4'it\\'s \\\\ \\0'"
        );
        assert_eq!(
            read(b"SELECT _utf8mb4 X'C3A9', _binary 0x41, _latin1 0xE9"),
            "SELECT _utf8mb4'é', X'41', _latin1'é'"
        );
        assert_eq!(read(b"SELECT _utf8mb4 0x141"), "SELECT _utf8mb4'\u{1}A'");
        let error = to_utf8(b"SELECT _utf8mb4'\xFF'", TextMode::default()).unwrap_err();
        assert_eq!(error.message, "Invalid utf8mb4 character string: 'FF'");
        let error = to_utf8(b"SELECT _ascii'\xE9'", TextMode::default()).unwrap_err();
        assert_eq!(error.code, 1300);
    }

    #[test]
    fn the_rest_is_in_the_clients_charset() {
        let text = read_in(b"SELECT 'caf\xE9', _binary'\xE9', x_1", Charset::Latin1, "").unwrap();
        assert_eq!(text, "SELECT 'café', X'E9', x_1");
        let text = read_in(b"SELECT '\x80'", Charset::Latin1, "").unwrap();
        assert_eq!(text, "SELECT '€'");
        // Outside literals, bytes that are not characters of the client's set are 1300.
        let error = read_in(b"SELECT \xE9, _binary'x'", Charset::Utf8mb4, "").unwrap_err();
        // The hex stops where the literal with the introducer starts.
        assert_eq!(error.message, "Invalid utf8mb4 character string: 'E92C20'");
        let error = read_in(b"SELECT '\xE9'", Charset::Utf8mb3, "").unwrap_err();
        assert_eq!(error.message, "Invalid utf8mb3 character string: 'E927'");
        // A utf8mb4 client's plain literal that is not UTF-8 is a binary string (PyMySQL's
        // `bytes` parameters without `_binary`).
        let sql = b"SELECT '\xFF\\0''', 'ok', '\xC3\xA9'";
        let text = read_in(sql, Charset::Utf8mb4, "").unwrap();
        assert_eq!(text, "SELECT X'FF0027', 'ok', 'é'");
        // A binary client's literals are binary strings; valid UTF-8 ones stay as they are.
        let text = read_in(b"SELECT '\xFF\\'', 'ok'", Charset::Binary, "").unwrap();
        assert_eq!(text, "SELECT X'FF27', 'ok'");
        assert!(read_in(b"SELECT \xFF", Charset::Binary, "").is_err());
    }
}
