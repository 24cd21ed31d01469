//! [`LogReader`]: reads the logical records of one WAL file back, judging damage by the
//! [`RecoveryMode`] (docs/format/wal.md, "Reader" and "Recovery modes").
//!
//! The reader walks the file block by block with positional reads. A physical record is
//! *valid* when its header fits the block and the file, its checksum matches, its type is
//! known and (format version 1) its log number is this log's. Anything else at a record
//! position is *damage*, except a checksum-valid version 1 record of another log number, which
//! is the stale contents of a recycled file and ends the log cleanly. The file header at
//! offset 0 is read in the version 1 layout (every version writes it so); the records after it
//! in the layout of the version it names.
//!
//! Invariants:
//! 1. Damage is classified by one scan: is there a valid record of this log at any byte offset
//!    after it? No: a torn tail (or a zero-filled tail when every byte from the damage to the
//!    end of the file is zero). Yes: corruption in the middle of the log.
//! 2. `SkipAnyCorruptedRecords` resumes only at positions the writer is known to have started
//!    a record at: the end the damaged record's own header claims (when a valid record starts
//!    there) or the next block boundary (format invariant 1). It never resumes at an offset
//!    found by the byte scan, which could lie inside a damaged record's payload.
//! 3. After `read_record` returns `Ok(None)` it keeps returning `Ok(None)`; after it returns an
//!    error it keeps returning that error.
//! 4. Allocation is bounded by the file: a logical record is assembled from fragments that
//!    were each read from the file.
//! 5. Until the file header has named the version, the layout is unknown: a scan after damage
//!    there looks for valid records of either layout, and reading goes on (skip mode) in the
//!    layout of the record it found.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_fs::RandomAccessFile;

use super::format::{
    decode_file_header, log_number_low, record_checksum, FileHeaderPayload, Header, Layout,
    RecordType, BLOCK_SIZE, FILE_HEADER_PAYLOAD_SIZE, FORMAT_VERSION, OLDEST_FORMAT_VERSION,
};
use crate::error::{Error, Result};

/// `BLOCK_SIZE` as a file offset.
const BLOCK: u64 = BLOCK_SIZE as u64;

/// What a damaged record means during recovery (the `WALRecoveryMode` of `RocksDB`). The exact
/// guarantee of each mode is written in docs/format/wal.md, "Recovery modes".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RecoveryMode {
    /// A torn or damaged tail (damage after which no valid record of the log follows) is
    /// dropped; damage followed by valid records is an error.
    #[default]
    TolerateCorruptedTailRecords,
    /// Any damage is an error, even at the tail; only a tail of zero bytes (preallocated
    /// space) or the stale records of a recycled file may follow the last record.
    AbsoluteConsistency,
    /// Recovery stops at the first damage anywhere, without an error, keeping every record
    /// before it; the engine then replays no later log either.
    PointInTime,
    /// Damaged records are skipped and reading goes on; counts are reported.
    SkipAnyCorruptedRecords,
}

impl RecoveryMode {
    /// The mode's name as options files and tools spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::TolerateCorruptedTailRecords => "tolerate-corrupted-tail-records",
            Self::AbsoluteConsistency => "absolute-consistency",
            Self::PointInTime => "point-in-time",
            Self::SkipAnyCorruptedRecords => "skip-any-corrupted-records",
        }
    }
}

/// Why a log ended (what [`LogReader::end`] reports once `read_record` returned `Ok(None)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// The file ended after a complete record (or inside block padding).
    EndOfFile {
        /// The file size.
        offset: u64,
    },
    /// Every byte from `offset` to the end of the file is zero: preallocated space.
    ZeroTail {
        /// Where the zeros start.
        offset: u64,
    },
    /// A checksum-valid record of another log starts at `offset`: the stale contents of a
    /// recycled file.
    StaleRecord {
        /// Where the stale record starts.
        offset: u64,
        /// The low 32 bits of the log number it carries.
        log_number_low: u32,
    },
    /// An incomplete or damaged record starts at `offset` and no valid record of this log
    /// follows it: a torn write. `bytes` (to the end of the file) were dropped.
    TornTail {
        /// Start of the first record not recovered.
        offset: u64,
        /// Bytes from `offset` to the end of the file.
        bytes: u64,
    },
    /// `PointInTime` only: damage at `offset` that valid records of this log follow; those
    /// records were not read.
    Corruption {
        /// Where the damage was found.
        offset: u64,
        /// What was wrong.
        detail: String,
    },
}

impl LogEnd {
    /// Whether the log ended at damage (a torn tail or corruption) rather than cleanly. In
    /// `PointInTime` mode the engine stops replaying later logs when this is true.
    pub fn is_damage(&self) -> bool {
        matches!(self, LogEnd::TornTail { .. } | LogEnd::Corruption { .. })
    }
}

/// Reads one WAL file's logical records in order.
#[derive(Debug)]
pub struct LogReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    log_number: u64,
    log_low: u32,
    /// The format version the file header named; `None` until it did (or when it was damaged).
    format_version: Option<u32>,
    /// The layout of the records after the file header; `None` until the header named it
    /// (invariant 5).
    layout: Option<Layout>,
    mode: RecoveryMode,
    file_size: u64,
    /// The bytes of block `block_index` (shorter than a block only for the file's last one).
    block: Vec<u8>,
    block_index: Option<u64>,
    /// File offset of the next record header to look at.
    pos: u64,
    state: State,
    last_record_end: u64,
    skipped_corruptions: u64,
    skipped_bytes: u64,
}

#[derive(Debug)]
enum State {
    Reading,
    Ended(LogEnd),
    Failed(Error),
}

/// What the reader found at a record position.
enum Physical {
    Record {
        offset: u64,
        kind: RecordType,
        payload: Range<usize>,
    },
    /// A checksum-valid record with an unknown type byte and this log's number.
    UnknownType {
        offset: u64,
        type_byte: u8,
    },
    Stale {
        offset: u64,
        log_low: u32,
        kind: Option<RecordType>,
        payload: Range<usize>,
    },
    Eof,
    Damaged(Damage),
}

/// A record position that does not hold a valid record.
struct Damage {
    offset: u64,
    detail: String,
    /// The end the record's header claims, when the header was plausible but the checksum
    /// failed (a resync candidate for `SkipAnyCorruptedRecords`).
    claimed_end: Option<u64>,
}

/// What reading does after damage or a misplaced record.
enum Flow {
    Continue,
    End,
}

/// The result of scanning the rest of the file after damage (invariant 1).
struct Scan {
    /// The first valid record after the damage, and its layout.
    valid_at: Option<(u64, Layout)>,
    all_zero: bool,
}

impl LogReader {
    /// Opens log `log_number` in `file` and checks its file header: a newer format version is
    /// [`Error::NotSupported`]; a header naming another log number (a stale file, or a
    /// recycled one whose new header was never written) is [`Error::Corruption`]. A damaged
    /// header is judged by `mode` like any damaged record.
    pub fn new(
        file: Arc<dyn RandomAccessFile>,
        log_number: u64,
        mode: RecoveryMode,
    ) -> Result<LogReader> {
        Self::with_end(file, log_number, mode, None)
    }

    /// [`Self::new`] for a log whose valid data is known to end at byte `end` (an open
    /// recorded it in the MANIFEST, docs/format/wal.md "Recorded ends"): the reader sees the
    /// file as if it ended there and never looks at the bytes after it. `None` reads the
    /// whole file.
    pub fn with_end(
        file: Arc<dyn RandomAccessFile>,
        log_number: u64,
        mode: RecoveryMode,
        end: Option<u64>,
    ) -> Result<LogReader> {
        let path = file.path().to_path_buf();
        let file_size = file.size()?.min(end.unwrap_or(u64::MAX));
        let mut reader = LogReader {
            file,
            path,
            log_number,
            log_low: log_number_low(log_number),
            format_version: None,
            layout: None,
            mode,
            file_size,
            block: Vec::new(),
            block_index: None,
            pos: 0,
            state: State::Reading,
            last_record_end: 0,
            skipped_corruptions: 0,
            skipped_bytes: 0,
        };
        reader.read_file_header()?;
        Ok(reader)
    }

    /// The next logical record and the file offset of its first fragment, or `None` at the
    /// end of the log (see [`Self::end`] for why it ended).
    pub fn read_record(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        match &self.state {
            State::Reading => {}
            State::Ended(_) => return Ok(None),
            State::Failed(e) => return Err(e.duplicate()),
        }
        match self.next_record() {
            Ok(Some(record)) => {
                self.last_record_end = self.pos;
                Ok(Some(record))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.state = State::Failed(e.duplicate());
                Err(e)
            }
        }
    }

    /// Why the log ended; `None` until `read_record` has returned `Ok(None)`.
    pub fn end(&self) -> Option<&LogEnd> {
        match &self.state {
            State::Ended(end) => Some(end),
            _ => None,
        }
    }

    /// Bytes dropped as a torn tail (0 unless the log ended with [`LogEnd::TornTail`]).
    pub fn dropped_tail_bytes(&self) -> u64 {
        match &self.state {
            State::Ended(LogEnd::TornTail { bytes, .. }) => *bytes,
            _ => 0,
        }
    }

    /// `SkipAnyCorruptedRecords`: damaged regions and misplaced fragments skipped so far (a
    /// region may have held several records).
    pub fn skipped_corruptions(&self) -> u64 {
        self.skipped_corruptions
    }

    /// The size of the file as this reader sees it: the file's size, or its recorded end
    /// when that is smaller ([`LogReader::with_end`]).
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// `SkipAnyCorruptedRecords`: bytes skipped so far, not counting a dropped tail.
    pub fn skipped_bytes(&self) -> u64 {
        self.skipped_bytes
    }

    /// The file offset just past the last record returned (past the file header before
    /// the first): where the recovered data ends.
    pub fn last_record_end(&self) -> u64 {
        self.last_record_end
    }

    /// The format version of the records read so far, which decides how a record's payload
    /// decodes ([`crate::WriteBatch::from_wal_record`]): the version the file header names. When
    /// the header was damaged or missing and `SkipAnyCorruptedRecords` read on, it is 1 if the
    /// records have version 1's layout and `None` if they have the layout versions 2 to 4
    /// share (and before any record was found).
    pub fn format_version(&self) -> Option<u32> {
        self.format_version.or(match self.layout {
            Some(Layout::WithLogNumber) => Some(1),
            Some(Layout::Compact) | None => None,
        })
    }

    /// The log number the reader expects.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// The recovery mode.
    pub fn mode(&self) -> RecoveryMode {
        self.mode
    }

    /// The file's path, as the file reports it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What a user can do about damage that is not a torn tail: for a WAL, the recovery modes
    /// that open past it, spelled as they are set; for a MANIFEST (replayed in one fixed
    /// mode), repair.
    fn damage_advice(&self) -> String {
        let is_wal = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(super::format::parse_log_file_name)
            .is_some();
        if is_wal {
            format!(
                "to open the database anyway, recover with {} to keep the records before it, \
                 or {} to skip it: `--wal_recovery_mode {}` on the shale tools, \
                 Options::wal_recovery_mode in a program",
                RecoveryMode::PointInTime.name(),
                RecoveryMode::SkipAnyCorruptedRecords.name(),
                RecoveryMode::PointInTime.name()
            )
        } else {
            "`shale tool repair` rebuilds the MANIFEST from the tables and WALs".to_owned()
        }
    }

    fn corruption(&self, offset: u64, detail: impl Into<String>) -> Error {
        Error::Corruption {
            file: self.path.clone(),
            offset,
            detail: detail.into(),
        }
    }

    fn read_file_header(&mut self) -> Result<()> {
        if self.file_size == 0 {
            self.state = State::Ended(LogEnd::EndOfFile { offset: 0 });
            return Ok(());
        }
        match self.read_physical()? {
            Physical::Record {
                kind: RecordType::FileHeader,
                payload,
                ..
            } => {
                self.check_file_header(payload)?;
                self.last_record_end = self.pos;
                Ok(())
            }
            Physical::Record { kind, .. } => {
                let detail = format!(
                    "the log starts with a {} record instead of a file header",
                    kind.name()
                );
                // Skip mode reads the record as data: it is valid, only the header is missing.
                // It carries this log's number, so the file has the version 1 layout.
                self.layout = Some(Layout::WithLogNumber);
                self.pos = 0;
                self.misplaced(0, 0, detail).map(|_| ())
            }
            Physical::UnknownType { type_byte, .. } => {
                let detail = format!("the log starts with a record of unknown type {type_byte}");
                self.layout = Some(Layout::WithLogNumber);
                self.misplaced(0, self.pos, detail).map(|_| ())
            }
            Physical::Stale {
                log_low,
                kind,
                payload,
                ..
            } => {
                let named = match kind {
                    Some(RecordType::FileHeader) => {
                        match decode_file_header(&self.block[payload]) {
                            FileHeaderPayload::Version {
                                log_number: Some(n),
                                ..
                            } => format!("log {n}"),
                            _ => format!("a log numbered {log_low} in its low 32 bits"),
                        }
                    }
                    _ => format!("a log numbered {log_low} in its low 32 bits"),
                };
                Err(self.stale_file_error(&named))
            }
            Physical::Eof => {
                self.state = State::Ended(LogEnd::EndOfFile { offset: 0 });
                Ok(())
            }
            Physical::Damaged(damage) => self.on_damage(None, damage).map(|_| ()),
        }
    }

    fn stale_file_error(&self, named: &str) -> Error {
        self.corruption(
            0,
            format!(
                "the file header belongs to {named}, not log {}: a stale file, or a recycled \
                 one whose new header never reached the disk; it holds no data of this log",
                self.log_number
            ),
        )
    }

    /// Checks the file header payload and adopts the layout of the version it names.
    fn check_file_header(&mut self, payload: Range<usize>) -> Result<()> {
        match decode_file_header(&self.block[payload]) {
            FileHeaderPayload::NotAWal => Err(self.corruption(
                0,
                "the file header's magic is not SHALEWAL: not a Shale write-ahead log",
            )),
            FileHeaderPayload::Version { version, .. } if version > FORMAT_VERSION => {
                Err(Error::NotSupported(format!(
                    "{} is WAL format version {version}, written by a newer Shale; this build \
                     reads versions up to {FORMAT_VERSION}",
                    self.path.display()
                )))
            }
            FileHeaderPayload::Version {
                version,
                log_number,
                len,
            } => {
                let layout = Layout::of_version(version);
                let Some(layout) = layout.filter(|_| len == FILE_HEADER_PAYLOAD_SIZE) else {
                    return Err(self.corruption(
                        0,
                        format!(
                            "invalid file header: format version {version}, {len} payload \
                             bytes (versions {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION} have \
                             {FILE_HEADER_PAYLOAD_SIZE})"
                        ),
                    ));
                };
                match log_number {
                    Some(n) if n == self.log_number => {
                        self.format_version = Some(version);
                        self.layout = Some(layout);
                        Ok(())
                    }
                    Some(n) => Err(self.stale_file_error(&format!("log {n}"))),
                    None => Err(self.corruption(0, "file header without a log number")),
                }
            }
        }
    }

    fn next_record(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        // The logical record being assembled: its start offset and the payload so far.
        let mut partial: Option<(u64, Vec<u8>)> = None;
        loop {
            match self.read_physical()? {
                Physical::Record {
                    offset,
                    kind,
                    payload,
                } => {
                    let bytes = &self.block[payload];
                    match (kind, partial.take()) {
                        (RecordType::Full, None) => return Ok(Some((bytes.to_vec(), offset))),
                        (RecordType::First, None) => partial = Some((offset, bytes.to_vec())),
                        (RecordType::Middle, Some((start, mut data))) => {
                            data.extend_from_slice(bytes);
                            partial = Some((start, data));
                        }
                        (RecordType::Last, Some((start, mut data))) => {
                            data.extend_from_slice(bytes);
                            return Ok(Some((data, start)));
                        }
                        (kind, Some((start, _))) => {
                            // A FULL, FIRST or FILE_HEADER where the fragmented record that
                            // started at `start` should continue.
                            let detail = format!(
                                "a {} record where the fragmented record starting at offset \
                                 {start} should continue",
                                kind.name()
                            );
                            if let Flow::End = self.misplaced(offset, offset - start, detail)? {
                                return Ok(None);
                            }
                            match kind {
                                RecordType::Full => {
                                    let data = self.block[self.payload_of(offset)].to_vec();
                                    return Ok(Some((data, offset)));
                                }
                                RecordType::First => {
                                    let data = self.block[self.payload_of(offset)].to_vec();
                                    partial = Some((offset, data));
                                }
                                _ => self.count_skip(self.pos - offset),
                            }
                        }
                        (kind, None) => {
                            let detail = match kind {
                                RecordType::FileHeader => {
                                    "a file header after the start of the log".to_owned()
                                }
                                _ => {
                                    format!("a {} fragment without a FIRST before it", kind.name())
                                }
                            };
                            if let Flow::End = self.misplaced(offset, self.pos - offset, detail)? {
                                return Ok(None);
                            }
                        }
                    }
                }
                Physical::UnknownType { offset, type_byte } => {
                    let skipped = self.pos - partial.take().map_or(offset, |(start, _)| start);
                    let detail = format!("checksum-valid record of unknown type {type_byte}");
                    if let Flow::End = self.misplaced(offset, skipped, detail)? {
                        return Ok(None);
                    }
                }
                Physical::Eof => {
                    let end = LogEnd::EndOfFile {
                        offset: self.file_size,
                    };
                    return self.end_at(partial.map(|p| p.0), end, "the file ends");
                }
                Physical::Stale {
                    offset, log_low, ..
                } => {
                    let end = LogEnd::StaleRecord {
                        offset,
                        log_number_low: log_low,
                    };
                    let why = "a record of another log (recycled file) follows";
                    return self.end_at(partial.map(|p| p.0), end, why);
                }
                Physical::Damaged(damage) => {
                    match self.on_damage(partial.take().map(|p| p.0), damage)? {
                        Flow::Continue => {}
                        Flow::End => return Ok(None),
                    }
                }
            }
        }
    }

    /// The layout to read the record position `self.pos` in: the file header's (version 1)
    /// until the header named another (invariant 5).
    fn current_layout(&self) -> Layout {
        self.layout.unwrap_or(Layout::WithLogNumber)
    }

    /// The layouts a valid record after damage may have (invariant 5).
    fn possible_layouts(&self) -> &'static [Layout] {
        match self.layout {
            Some(Layout::WithLogNumber) => &[Layout::WithLogNumber],
            Some(Layout::Compact) => &[Layout::Compact],
            None => &[Layout::WithLogNumber, Layout::Compact],
        }
    }

    /// The payload range of the valid record at `offset` (just read, so `self.pos` is its
    /// end), which is in the loaded block.
    fn payload_of(&self, offset: u64) -> Range<usize> {
        let header_size = self.current_layout().header_size();
        let in_block = (offset % BLOCK) as usize + header_size;
        in_block..(in_block + (self.pos - offset) as usize - header_size)
    }

    fn count_skip(&mut self, bytes: u64) {
        self.skipped_bytes += bytes;
    }

    /// The data ends cleanly with `end`, unless a fragmented record starting at
    /// `pending_start` is unfinished: then that record is a torn tail.
    fn end_at(
        &mut self,
        pending_start: Option<u64>,
        end: LogEnd,
        why: &str,
    ) -> Result<Option<(Vec<u8>, u64)>> {
        match pending_start {
            None => self.state = State::Ended(end),
            Some(start) => {
                let detail = format!("{why} inside the fragmented record starting here");
                self.torn_tail(start, &detail)?;
            }
        }
        Ok(None)
    }

    /// A checksum-valid record out of place at `offset`: valid data follows by definition, so
    /// this is never a torn tail. In `SkipAnyCorruptedRecords` mode `skipped` bytes are
    /// counted and reading continues.
    fn misplaced(&mut self, offset: u64, skipped: u64, detail: String) -> Result<Flow> {
        match self.mode {
            RecoveryMode::TolerateCorruptedTailRecords | RecoveryMode::AbsoluteConsistency => {
                Err(self.corruption(offset, format!("{detail} ({})", self.damage_advice())))
            }
            RecoveryMode::PointInTime => {
                self.state = State::Ended(LogEnd::Corruption { offset, detail });
                Ok(Flow::End)
            }
            RecoveryMode::SkipAnyCorruptedRecords => {
                self.skipped_corruptions += 1;
                self.count_skip(skipped);
                Ok(Flow::Continue)
            }
        }
    }

    /// A torn tail starting at `start` (the first byte not recovered).
    fn torn_tail(&mut self, start: u64, detail: &str) -> Result<()> {
        let bytes = self.file_size - start;
        if self.mode == RecoveryMode::AbsoluteConsistency {
            return Err(self.corruption(
                start,
                format!(
                    "{detail}: an incomplete or damaged record at the end of the log (a torn \
                     write); AbsoluteConsistency does not drop it (TolerateCorruptedTailRecords \
                     would drop these {bytes} bytes)"
                ),
            ));
        }
        self.state = State::Ended(LogEnd::TornTail {
            offset: start,
            bytes,
        });
        Ok(())
    }

    /// Judges damage by the mode (invariant 1). `pending_start` is the start of an unfinished
    /// fragmented record the damage interrupts.
    fn on_damage(&mut self, pending_start: Option<u64>, damage: Damage) -> Result<Flow> {
        let scan = self.scan_after(damage.offset)?;
        let Some((valid_at, layout)) = scan.valid_at else {
            if pending_start.is_none() && scan.all_zero {
                self.state = State::Ended(LogEnd::ZeroTail {
                    offset: damage.offset,
                });
            } else {
                let start = pending_start.unwrap_or(damage.offset);
                let detail = if start == damage.offset {
                    damage.detail
                } else {
                    format!(
                        "the fragmented record starting here is damaged at offset {}: {}",
                        damage.offset, damage.detail
                    )
                };
                self.torn_tail(start, &detail)?;
            }
            return Ok(Flow::End);
        };
        let detail = match pending_start {
            Some(start) => format!(
                "{} (inside the fragmented record starting at offset {start})",
                damage.detail
            ),
            None => damage.detail,
        };
        match self.mode {
            RecoveryMode::TolerateCorruptedTailRecords | RecoveryMode::AbsoluteConsistency => {
                Err(self.corruption(
                    damage.offset,
                    format!(
                        "{detail}; a valid record of this log follows at offset {valid_at}, so \
                         this is not a torn tail ({})",
                        self.damage_advice()
                    ),
                ))
            }
            RecoveryMode::PointInTime => {
                self.state = State::Ended(LogEnd::Corruption {
                    offset: damage.offset,
                    detail,
                });
                Ok(Flow::End)
            }
            RecoveryMode::SkipAnyCorruptedRecords => {
                // Invariant 5: a damaged file header leaves the layout to the records found.
                self.layout.get_or_insert(layout);
                // Invariant 2: resume where the writer certainly started a record.
                let next_block = (damage.offset / BLOCK + 1) * BLOCK;
                let resume = match damage.claimed_end {
                    Some(end) if self.valid_record_at(end)? => end,
                    _ => next_block,
                };
                self.skipped_corruptions += 1;
                self.count_skip(
                    resume.min(self.file_size) - pending_start.unwrap_or(damage.offset),
                );
                self.pos = resume;
                Ok(Flow::Continue)
            }
        }
    }

    /// Loads block `index` into `self.block` unless it is there already.
    fn load_block(&mut self, index: u64) -> Result<()> {
        if self.block_index == Some(index) {
            return Ok(());
        }
        let start = index * BLOCK;
        let len = (self.file_size - start).min(BLOCK) as usize;
        self.block.resize(len, 0);
        self.block_index = None;
        self.file.read_exact_at(start, &mut self.block)?;
        self.block_index = Some(index);
        Ok(())
    }

    /// Examines the record position `self.pos`, skipping block padding. Advances `self.pos`
    /// past a valid or stale record; leaves it at damage.
    fn read_physical(&mut self) -> Result<Physical> {
        loop {
            let pos = self.pos;
            if pos >= self.file_size {
                return Ok(Physical::Eof);
            }
            let index = pos / BLOCK;
            let in_block = (pos % BLOCK) as usize;
            let layout = self.current_layout();
            let header_size = layout.header_size();
            if BLOCK_SIZE - in_block < header_size {
                // Block padding: its contents are ignored (no checksum covers them).
                self.pos = (index + 1) * BLOCK;
                continue;
            }
            self.load_block(index)?;
            let damaged = |detail: String, claimed_end: Option<u64>| {
                Ok(Physical::Damaged(Damage {
                    offset: pos,
                    detail,
                    claimed_end,
                }))
            };
            let available = self.block.len() - in_block;
            let Some(header) = Header::decode(&self.block[in_block..], layout) else {
                return damaged(
                    format!(
                        "incomplete record header: the file ends {available} bytes after it \
                         starts ({header_size} needed)"
                    ),
                    None,
                );
            };
            if header.type_byte == 0 {
                return damaged(
                    "type 0 (zero bytes) where a record header should be".to_owned(),
                    None,
                );
            }
            let end_in_block = in_block + header_size + header.length;
            if end_in_block > BLOCK_SIZE {
                return damaged(
                    format!(
                        "a record of {} bytes runs past the end of its {BLOCK_SIZE}-byte block",
                        header.length
                    ),
                    None,
                );
            }
            if end_in_block > self.block.len() {
                return damaged(
                    format!(
                        "a record of {} bytes runs past the end of the file ({} bytes)",
                        header.length, self.file_size
                    ),
                    None,
                );
            }
            let payload = in_block + header_size..end_in_block;
            let computed = record_checksum(
                &self.block[in_block + 4..in_block + header_size],
                &self.block[payload.clone()],
            );
            let next = pos + (header_size + header.length) as u64;
            if computed != header.checksum {
                return damaged(
                    format!(
                        "checksum mismatch in a record of type {} and {} bytes (stored {:#010x}, \
                         computed {computed:#010x})",
                        header.type_byte, header.length, header.checksum
                    ),
                    Some(next),
                );
            }
            let kind = RecordType::from_byte(header.type_byte);
            self.pos = next;
            if let Some(log_low) = header.log_low.filter(|&low| low != self.log_low) {
                return Ok(Physical::Stale {
                    offset: pos,
                    log_low,
                    kind,
                    payload,
                });
            }
            return Ok(match kind {
                Some(kind) => Physical::Record {
                    offset: pos,
                    kind,
                    payload,
                },
                None => Physical::UnknownType {
                    offset: pos,
                    type_byte: header.type_byte,
                },
            });
        }
    }

    /// Whether a valid record of this log, in the current layout, starts at `offset`.
    fn valid_record_at(&mut self, offset: u64) -> Result<bool> {
        let in_block = (offset % BLOCK) as usize;
        let layout = self.current_layout();
        if offset >= self.file_size || BLOCK_SIZE - in_block < layout.header_size() {
            return Ok(false);
        }
        self.load_block(offset / BLOCK)?;
        Ok(is_valid_record(&self.block, in_block, layout, self.log_low))
    }

    /// Looks for a valid record of this log at every byte offset after `damage`, and checks
    /// whether every byte from `damage` to the end of the file is zero (invariant 1).
    fn scan_after(&mut self, damage: u64) -> Result<Scan> {
        let mut all_zero = true;
        let first = damage / BLOCK;
        let last = self.file_size.saturating_sub(1) / BLOCK;
        for index in first..=last {
            self.load_block(index)?;
            let base = index * BLOCK;
            let from = if index == first {
                (damage - base) as usize
            } else {
                0
            };
            if all_zero {
                all_zero = self
                    .block
                    .get(from..)
                    .unwrap_or(&[])
                    .iter()
                    .all(|&b| b == 0);
            }
            let candidates = if index == first { from + 1 } else { 0 };
            let found = self
                .possible_layouts()
                .iter()
                .filter_map(|&layout| {
                    find_valid_record(&self.block, candidates, layout, self.log_low)
                        .map(|offset| (offset, layout))
                })
                .min_by_key(|&(offset, _)| offset);
            if let Some((offset, layout)) = found {
                return Ok(Scan {
                    valid_at: Some((base + offset as u64, layout)),
                    all_zero: false,
                });
            }
        }
        Ok(Scan {
            valid_at: None,
            all_zero,
        })
    }
}

/// The first offset at or after `from` in `block` where a valid record in `layout` (of the
/// log with `log_low`, in the version 1 layout) starts. Candidates are found by one byte: the
/// first byte of the log number (version 1) or a known type byte (version 2), so scanning
/// garbage costs about one comparison a byte plus a checksum per version 2 candidate whose
/// length fits the block.
fn find_valid_record(block: &[u8], from: usize, layout: Layout, log_low: u32) -> Option<usize> {
    const TYPE_AT: usize = 6;
    const LOG_AT: usize = 7;
    let first_log_byte = log_low.to_le_bytes()[0];
    let (key_at, is_candidate): (usize, &dyn Fn(u8) -> bool) = match layout {
        Layout::WithLogNumber => (LOG_AT, &|b| b == first_log_byte),
        Layout::Compact => (TYPE_AT, &|b| (1..=5).contains(&b)),
    };
    let last_start = block.len().checked_sub(layout.header_size())?;
    let mut at = from;
    while at <= last_start {
        let window = block.get(at + key_at..=last_start + key_at)?;
        at += window.iter().position(|&b| is_candidate(b))?;
        if is_valid_record(block, at, layout, log_low) {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// Whether a valid record in `layout` starts at `at` of `block`: its header and payload fit
/// the block, the type is known, the checksum matches and (version 1) the log number is
/// `log_low`. The cheap tests come first, so scanning garbage costs a few comparisons a byte.
fn is_valid_record(block: &[u8], at: usize, layout: Layout, log_low: u32) -> bool {
    let header_size = layout.header_size();
    let Some(header) = block.get(at..at + header_size) else {
        return false;
    };
    if !(1..=5).contains(&header[6]) {
        return false;
    }
    if layout == Layout::WithLogNumber && header[7..11] != log_low.to_le_bytes() {
        return false;
    }
    let length = u16::from_le_bytes([header[4], header[5]]) as usize;
    let stored = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    block
        .get(at + header_size..at + header_size + length)
        .is_some_and(|payload| record_checksum(&header[4..], payload) == stored)
}

#[cfg(test)]
mod tests {
    use super::super::format::{put_record, HEADER_SIZE, V1_HEADER_SIZE};
    use super::*;

    fn block_with(layout: Layout, records: &[(usize, u32, &[u8])], len: usize) -> Vec<u8> {
        let mut block: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        for &(at, log_low, payload) in records {
            let mut encoded = Vec::new();
            put_record(&mut encoded, layout, RecordType::Full, log_low, payload);
            block[at..at + encoded.len()].copy_from_slice(&encoded);
        }
        block
    }

    #[test]
    fn scan_finds_the_first_valid_record_of_the_log_only() {
        let v1 = Layout::WithLogNumber;
        let block = block_with(
            v1,
            &[(100, 9, b"other log"), (300, 7, b"mine"), (400, 7, b"")],
            500,
        );
        assert_eq!(find_valid_record(&block, 0, v1, 7), Some(300));
        assert_eq!(find_valid_record(&block, 301, v1, 7), Some(400));
        assert_eq!(find_valid_record(&block, 401, v1, 7), None);
        assert_eq!(find_valid_record(&block, 0, v1, 9), Some(100));
        assert_eq!(find_valid_record(&block, 0, v1, 8), None);
        // Version 1 records are not version 2 records, whatever the log number.
        assert_eq!(find_valid_record(&block, 0, Layout::Compact, 7), None);
    }

    #[test]
    fn scan_finds_version_2_records_by_checksum_alone() {
        let v2 = Layout::Compact;
        let block = block_with(v2, &[(100, 9, b"first"), (300, 7, b"")], 500);
        assert_eq!(find_valid_record(&block, 0, v2, 7), Some(100));
        assert_eq!(find_valid_record(&block, 101, v2, 1), Some(300));
        assert_eq!(find_valid_record(&block, 301, v2, 7), None);
        assert_eq!(find_valid_record(&block, 0, Layout::WithLogNumber, 7), None);
    }

    #[test]
    fn scan_reaches_a_record_that_ends_the_block_and_no_further() {
        let len = 200;
        for (layout, header_size) in [
            (Layout::WithLogNumber, V1_HEADER_SIZE),
            (Layout::Compact, HEADER_SIZE),
        ] {
            let block = block_with(layout, &[(len - header_size, 0x0101_0101, b"")], len);
            assert_eq!(
                find_valid_record(&block, 0, layout, 0x0101_0101),
                Some(len - header_size)
            );
            assert_eq!(
                find_valid_record(&block[..len - 1], 0, layout, 0x0101_0101),
                None
            );
            assert_eq!(find_valid_record(&[], 0, layout, 1), None);
            assert_eq!(find_valid_record(&block, len, layout, 1), None);
        }
    }

    #[test]
    fn zero_bytes_are_never_a_record_even_for_log_zero() {
        let zeros = vec![0u8; 4096];
        assert_eq!(find_valid_record(&zeros, 0, Layout::WithLogNumber, 0), None);
        assert_eq!(find_valid_record(&zeros, 0, Layout::Compact, 0), None);
    }
}
