//! The info LOG: a human-readable account of what the database did, in a file named `LOG`
//! in its directory (docs/operations.md, "The info LOG"): the options at open, recovery,
//! every flush and compaction, stalls, background errors and, periodically, the compaction
//! stats table. A DBA reads it first when something went wrong.
//!
//! Callers format a line and hand it over a bounded channel to one writer thread, which
//! appends it through the file system seam, flushes after each batch of lines, and rotates by
//! size: `LOG` becomes `LOG.old.1`, which becomes `LOG.old.2`, and so on up to the keep count.
//! An existing `LOG` is rotated at open.
//!
//! Invariants:
//! 1. No engine thread does LOG I/O or waits for it: [`InfoLog::log`] only formats and
//!    `try_send`s; a full channel drops the line and counts it (the count is written with
//!    the next line that gets through).
//! 2. A LOG failure never fails or delays a database operation: the writer drops the file and
//!    tries a fresh `LOG` at the next line.
//! 3. A read-only open has no LOG ([`InfoLog::disabled`]): it never writes the directory.
//! 4. Every LOG file starts with [`LOG_HEADER`], which is how the tools tell Shale's LOG from
//!    another program's.

use std::fmt;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use shale_fs::{FileSystem, WritableFile};

/// The LOG's file name.
pub const LOG_FILE_NAME: &str = "LOG";

/// The first line's text after its timestamp.
pub const LOG_HEADER: &str = "Shale info LOG";

/// Lines waiting for the writer at most.
const CHANNEL_LINES: usize = 4096;

/// The name of the `n`th rotated LOG (`LOG.old.1` is the newest).
pub(crate) fn old_log_file_name(n: usize) -> String {
    format!("{LOG_FILE_NAME}.old.{n}")
}

/// Whether `name` is the LOG or a rotated one.
pub(crate) fn is_log_file_name(name: &str) -> bool {
    name == LOG_FILE_NAME
        || name
            .strip_prefix("LOG.old.")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The database's info LOG (see the module docs).
pub(crate) struct InfoLog {
    sender: Mutex<Option<SyncSender<String>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    dropped: AtomicU64,
}

impl fmt::Debug for InfoLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InfoLog")
            .field("dropped", &self.dropped.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl InfoLog {
    /// A LOG that writes nothing (read-only opens, `Options::info_log` off).
    pub(crate) fn disabled() -> Self {
        InfoLog {
            sender: Mutex::new(None),
            writer: Mutex::new(None),
            dropped: AtomicU64::new(0),
        }
    }

    /// Starts the writer thread for `dir`'s LOG, rotating an existing one first. Never fails:
    /// if the thread cannot start, the LOG is disabled.
    pub(crate) fn open(fs: Arc<dyn FileSystem>, dir: &Path, max_size: u64, keep: usize) -> Self {
        let (sender, receiver) = sync_channel(CHANNEL_LINES);
        let dir = dir.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("shale-info-log".into())
            .spawn(move || {
                LogFileWriter {
                    fs,
                    dir,
                    max_size: max_size.max(1),
                    keep,
                    file: None,
                    size: 0,
                }
                .run(&receiver);
            });
        match writer {
            Ok(writer) => InfoLog {
                sender: Mutex::new(Some(sender)),
                writer: Mutex::new(Some(writer)),
                dropped: AtomicU64::new(0),
            },
            Err(_) => Self::disabled(),
        }
    }

    /// Writes one line (a timestamp is put in front). Never blocks on I/O (invariant 1).
    pub(crate) fn log(&self, text: impl fmt::Display) {
        let guard = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(sender) = guard.as_ref() else {
            return;
        };
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        let mut line = String::new();
        if dropped > 0 {
            line = format!(
                "{} ({dropped} lines dropped: the LOG writer fell behind)\n",
                timestamp()
            );
        }
        let _ = writeln!(line, "{} {text}", timestamp());
        if sender.try_send(line).is_err() {
            self.dropped.fetch_add(dropped + 1, Ordering::Relaxed);
        }
    }

    /// Writes what is queued and stops the writer (at close).
    pub(crate) fn close(&self) {
        self.sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(writer) = writer {
            let _ = writer.join();
        }
    }
}

/// The writer thread's side.
struct LogFileWriter {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    max_size: u64,
    keep: usize,
    file: Option<Box<dyn WritableFile>>,
    size: u64,
}

impl LogFileWriter {
    fn run(mut self, receiver: &Receiver<String>) {
        while let Ok(line) = receiver.recv() {
            self.write(&line);
            // Whatever else is queued goes out with the same flush.
            while let Ok(line) = receiver.try_recv() {
                self.write(&line);
            }
            if let Some(file) = &mut self.file {
                if file.flush().is_err() {
                    self.file = None; // invariant 2: a fresh LOG at the next line
                }
            }
        }
    }

    fn write(&mut self, line: &str) {
        let len = line.len() as u64;
        if self.file.is_none() || self.size + len > self.max_size {
            self.start_file();
        }
        if let Some(file) = &mut self.file {
            if file.append(line.as_bytes()).is_ok() {
                self.size += len;
            } else {
                self.file = None;
            }
        }
    }

    /// Rotates the current `LOG` away (if any) and starts a new one with its header line.
    fn start_file(&mut self) {
        if let Some(mut file) = self.file.take() {
            let _ = file.flush();
        }
        self.size = 0;
        if self.rotate().is_err() {
            return;
        }
        let Ok(mut file) = self.fs.create(&self.dir.join(LOG_FILE_NAME)) else {
            return;
        };
        let header = format!("{} {LOG_HEADER}\n", timestamp());
        if file.append(header.as_bytes()).is_ok() {
            self.size = header.len() as u64;
            self.file = Some(file);
        }
    }

    /// `LOG.old.i` -> `LOG.old.i+1` from the oldest kept down, dropping the one past the keep
    /// count, then `LOG` -> `LOG.old.1`.
    fn rotate(&self) -> shale_fs::Result<()> {
        let path = |name: &str| self.dir.join(name);
        if !self.fs.exists(&path(LOG_FILE_NAME))? {
            return Ok(());
        }
        if self.keep == 0 {
            return self.fs.remove(&path(LOG_FILE_NAME));
        }
        let oldest = path(&old_log_file_name(self.keep));
        if self.fs.exists(&oldest)? {
            self.fs.remove(&oldest)?;
        }
        for n in (1..self.keep).rev() {
            let from = path(&old_log_file_name(n));
            if self.fs.exists(&from)? {
                self.fs.rename(&from, &path(&old_log_file_name(n + 1)))?;
            }
        }
        self.fs
            .rename(&path(LOG_FILE_NAME), &path(&old_log_file_name(1)))
    }
}

/// `2026/11/27-01:46:00.123456` in UTC.
fn timestamp() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}/{month:02}/{day:02}-{:02}:{:02}:{:02}.{:06}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_micros()
    )
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_784), (2026, 11, 27));
    }

    #[test]
    fn log_file_names() {
        assert!(is_log_file_name("LOG"));
        assert!(is_log_file_name("LOG.old.12"));
        assert!(!is_log_file_name("LOG.old."));
        assert!(!is_log_file_name("LOG.old.1x"));
        assert_eq!(old_log_file_name(3), "LOG.old.3");
    }
}
