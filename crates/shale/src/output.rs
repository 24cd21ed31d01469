//! What the commands share for talking to people and scripts: the failure type and its exit
//! codes, the benchmark report (text lines or JSON), byte rendering, and progress bars.
//!
//! Contract of every command:
//! 1. Results go to stdout; progress and errors go to stderr, so `> file` keeps only results.
//! 2. An error prints `error: <message>` on stderr and exits 1; a corruption exits 2, so a
//!    script can tell a damaged file from a wrong argument or a missing file. Usage errors
//!    (bad flags) exit 1 as well.
//! 3. A closed stdout (`| head`) ends the command quietly with exit 0; nothing panics.

use std::fmt::{self, Write as _};
use std::io::{self, Write as _};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Map, Value};

/// Why a command failed; decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// A file's bytes are damaged (exit 2).
    Corruption(String),
    /// Anything else: bad arguments, missing files, I/O errors, wrong results (exit 1).
    Error(String),
    /// stdout was closed by its reader; not an error for the person (exit 0, no message).
    BrokenPipe,
    /// The command printed its own error already, in its own format (`shale sql` prints
    /// MySQL's `ERROR 1146 (42S02) ...` lines): exit 1 with no further message.
    Reported,
}

impl Failure {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Corruption(_) => 2,
            Failure::Error(_) | Failure::Reported => 1,
            Failure::BrokenPipe => 0,
        }
    }

    /// A plain error with `message`.
    pub fn error(message: impl Into<String>) -> Self {
        Failure::Error(message.into())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Corruption(m) | Failure::Error(m) => f.write_str(m),
            Failure::BrokenPipe => f.write_str("stdout closed"),
            Failure::Reported => f.write_str("failed (the error is printed above)"),
        }
    }
}

impl From<shale_sst::Error> for Failure {
    fn from(error: shale_sst::Error) -> Self {
        match error {
            shale_sst::Error::Corruption { .. } => Failure::Corruption(error.to_string()),
            other => Failure::Error(other.to_string()),
        }
    }
}

impl From<shale_engine::Error> for Failure {
    fn from(error: shale_engine::Error) -> Self {
        match error {
            shale_engine::Error::Sst(inner) => Failure::from(inner),
            other if other.is_corruption() => Failure::Corruption(other.to_string()),
            other => Failure::Error(other.to_string()),
        }
    }
}

impl From<shale_fs::Error> for Failure {
    fn from(error: shale_fs::Error) -> Self {
        Failure::Error(error.to_string())
    }
}

/// Errors writing results to stdout.
impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        if error.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Error(format!("writing to stdout failed: {error}"))
        }
    }
}

/// Width of the name column of measurement lines (`db_bench` uses 12; our names are longer).
const NAME_WIDTH: usize = 18;

/// Where a benchmark's results go: text lines as they are measured, or one JSON object at the
/// end.
pub struct Report {
    json: bool,
    fields: Map<String, Value>,
}

impl Report {
    /// A report printing text lines, or JSON when `json`.
    pub fn new(json: bool) -> Self {
        Report {
            json,
            fields: Map::new(),
        }
    }

    /// A line of text (nothing with JSON).
    pub fn line(&self, text: &str) -> Result<(), Failure> {
        if !self.json {
            let mut out = io::stdout().lock();
            writeln!(out, "{text}")?;
            out.flush()?;
        }
        Ok(())
    }

    /// One measurement line: the name in a column, as `db_bench` prints them.
    pub fn measure(&self, name: &str, text: &str) -> Result<(), Failure> {
        self.line(&format!("{name:<NAME_WIDTH$} : {text}"))
    }

    /// Sets a field of the JSON object (ignored for text).
    pub fn set(&mut self, name: &str, value: Value) {
        self.fields.insert(name.to_owned(), value);
    }

    /// Prints the JSON object, when JSON was asked for.
    pub fn finish(self) -> Result<(), Failure> {
        if self.json {
            let mut out = io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &Value::Object(self.fields))
                .map_err(io::Error::from)?;
            writeln!(out)?;
            out.flush()?;
        }
        Ok(())
    }
}

/// How keys and values are shown: escaped like [`shale_sst::printable`] (quoted, `\xNN` for
/// bytes that are not printable ASCII), or hex with `--hex`. Keys given on the command line
/// are read back the same way.
#[derive(Clone, Copy)]
pub struct Render {
    /// Hex instead of the escaped form.
    pub hex: bool,
}

impl Render {
    /// `bytes` for a text line.
    pub fn bytes(self, bytes: &[u8]) -> String {
        if self.hex {
            hex(bytes)
        } else {
            shale_sst::printable(bytes)
        }
    }

    /// As [`Self::bytes`], without the quotes around the escaped form (JSON has its own).
    pub fn bytes_unquoted(self, bytes: &[u8]) -> String {
        let shown = self.bytes(bytes);
        match shown.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            Some(inner) if !self.hex => inner.to_owned(),
            _ => shown,
        }
    }

    /// An internal key as `user@seqno:kind`, the user key rendered as [`Self::bytes`].
    pub fn internal_key(self, key: &[u8]) -> String {
        if !self.hex {
            return shale_sst::describe_internal_key(key);
        }
        match shale_sst::ParsedInternalKey::parse(key) {
            Ok(p) => format!("{}@{}:{}", hex(p.user_key), p.seqno, p.kind.name()),
            Err(_) if key.is_empty() => "(none)".to_owned(),
            Err(_) => format!("(raw {})", hex(key)),
        }
    }

    /// A key or value given on the command line as `flag`: escaped, or hex with `--hex`.
    pub fn parse_key(self, text: &str, flag: &str) -> Result<Vec<u8>, Failure> {
        let parsed = if self.hex {
            parse_hex(text)
        } else {
            parse_escaped(text)
        };
        parsed.map_err(|e| Failure::error(format!("{flag}: {e}")))
    }
}

/// `--wal_recovery_mode`, on every tool that opens a database: how the open judges a damaged
/// WAL record (docs/format/wal.md "Recovery modes"; the engine's errors name the mode to use).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct RecoveryArgs {
    /// How opening treats damaged WAL records: tolerate-corrupted-tail-records (the default),
    /// absolute-consistency, point-in-time (keep the records before the first damage, drop the
    /// rest) or skip-any-corrupted-records. Copy the directory before opening it with a mode
    /// that drops records: a write tool records the result.
    #[arg(
        long = "wal_recovery_mode",
        value_name = "MODE",
        default_value = "tolerate-corrupted-tail-records",
        value_parser = parse_recovery_mode
    )]
    pub wal_recovery_mode: shale_engine::inspect::wal::RecoveryMode,
}

fn parse_recovery_mode(text: &str) -> Result<shale_engine::inspect::wal::RecoveryMode, String> {
    use shale_engine::inspect::wal::RecoveryMode;
    let modes = [
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::PointInTime,
        RecoveryMode::SkipAnyCorruptedRecords,
    ];
    let wanted = text.replace('_', "-").to_ascii_lowercase();
    modes
        .into_iter()
        .find(|m| m.name() == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = modes.iter().map(|m| m.name()).collect();
            format!("not a recovery mode; use one of {}", names.join(", "))
        })
}

/// The failure for a database directory without `CURRENT`: when the database's files are
/// still there it is damaged, and the engine's error says what is missing and points at
/// `shale tool repair`; otherwise there is no database.
pub fn missing_current(dir: &std::path::Path) -> Failure {
    match shale_engine::inspect::live_manifest(&shale_fs::OsFs::new(), dir) {
        Err(e) if e.is_corruption() => Failure::from(e),
        _ => Failure::error(format!(
            "no database in {}: CURRENT is missing",
            dir.display()
        )),
    }
}

/// Prints `value` as pretty JSON and a newline.
pub fn print_json(value: &Value) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).map_err(io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Lower-case hex of `bytes`, no separators.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Decodes hex (an optional `0x` prefix, upper or lower case, no separators).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if !digits.len().is_multiple_of(2) {
        return Err(format!("{text:?} has an odd number of hex digits"));
    }
    digits
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
                .ok_or_else(|| format!("{text:?} is not hex"))
        })
        .collect()
}

/// Decodes the escaped form [`shale_sst::printable`] prints, so a key copied from the tool's
/// output can be passed back: `\xNN`, `\\` and `\"` escapes; optional surrounding quotes; any
/// other character stands for its UTF-8 bytes.
pub fn parse_escaped(text: &str) -> Result<Vec<u8>, String> {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    let mut out = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some(e @ ('\\' | '"')) => out.push(e as u8),
            Some('x') => {
                let digits: String = chars.by_ref().take(2).collect();
                let byte = (digits.len() == 2)
                    .then(|| u8::from_str_radix(&digits, 16).ok())
                    .flatten()
                    .ok_or_else(|| format!("{text:?}: \\x needs two hex digits"))?;
                out.push(byte);
            }
            Some(other) => return Err(format!("{text:?}: unknown escape \\{other}")),
            None => return Err(format!("{text:?} ends with a lone backslash")),
        }
    }
    Ok(out)
}

/// A progress bar on stderr over `total` steps; hidden when stderr is not a terminal.
pub fn progress(total: u64, message: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template("{msg:<24} [{bar:40}] {pos}/{len} ({eta})")
        .map_or_else(
            |_| ProgressStyle::default_bar(),
            |s| s.progress_chars("=> "),
        );
    bar.set_style(style);
    bar.set_message(message.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// A spinner on stderr for a step of unknown length; hidden when stderr is not a terminal.
pub fn spinner(message: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_message(message.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0xab, 0xff, b'a'];
        assert_eq!(hex(&bytes), "0001abff61");
        assert_eq!(parse_hex("0001abff61").unwrap(), bytes);
        assert_eq!(parse_hex("0x0001ABFF61").unwrap(), bytes);
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
        assert!(parse_hex("é1").is_err());
    }

    #[test]
    fn escaped_round_trips_printable() {
        let bytes = b"\x00\x01ab\"c\\d\x7f 0".to_vec();
        let shown = shale_sst::printable(&bytes);
        assert_eq!(parse_escaped(&shown).unwrap(), bytes);
        assert_eq!(parse_escaped("plain").unwrap(), b"plain");
        assert!(parse_escaped("\\x0").is_err());
        assert!(parse_escaped("\\q").is_err());
        assert!(parse_escaped("end\\").is_err());
    }

    #[test]
    fn corruption_exits_2_and_the_rest_1() {
        let corrupt = shale_sst::Error::Corruption {
            file: "/x/1.sst".into(),
            offset: 42,
            detail: "bad".into(),
        };
        let failure = Failure::from(corrupt);
        assert_eq!(failure.exit_code(), 2);
        assert!(failure.to_string().contains("offset 42"));
        let invalid = Failure::from(shale_sst::Error::InvalidArgument("x".into()));
        assert_eq!(invalid.exit_code(), 1);
        let pipe = Failure::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(pipe.exit_code(), 0);
    }
}

/// `secs` since the Unix epoch as an ISO 8601 UTC time, `2026-11-27T01:02:03Z`.
pub fn utc_iso8601(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = date_of_day(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian (year, month, day) of day `days` after 1970-01-01: whole 400-year
/// eras (146,097 days each) first, then the year in the era counted from March 1 so that the
/// leap day falls at the end.
fn date_of_day(days: u64) -> (u64, u64, u64) {
    // 1970-01-01 is day 719,468 counted from 0000-03-01.
    let since_march_0000 = days + 719_468;
    let era = since_march_0000 / 146_097;
    let day_of_era = since_march_0000 % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod time_tests {
    use super::utc_iso8601;

    #[test]
    fn prints_utc_dates() {
        assert_eq!(utc_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_iso8601(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(utc_iso8601(1_798_761_599), "2026-12-31T23:59:59Z");
        assert_eq!(utc_iso8601(4_107_542_400), "2100-03-01T00:00:00Z");
    }
}
