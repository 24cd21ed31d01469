//! Streaming a command's reply from the session thread to the socket: [`Output`] frames packets
//! and hands them to the connection's I/O task in chunks of about [`FLUSH_AT`] bytes over a
//! bounded channel, and [`ResultWriter`] is the [`ResultSink`] that turns a statement's results
//! into a text or binary result set (MySQL "Text Resultset", "Binary Protocol Resultset").
//!
//! Invariants:
//! 1. Memory per connection stays bounded while rows stream: at most [`CHANNEL_CHUNKS`] chunks
//!    wait in the channel; when it is full the session thread blocks until the socket drains.
//! 2. A result set ends with an EOF_Packet, or with an OK_Packet headed `0xFE` when the client
//!    set `CLIENT_DEPRECATE_EOF`; the column definitions are followed by an EOF_Packet only
//!    without `CLIENT_DEPRECATE_EOF`.
//! 3. Every reply ends with exactly one terminal packet whose status lacks
//!    `SERVER_MORE_RESULTS_EXISTS` (or an ERR_Packet); [`ResultWriter::finish`] adds an OK if
//!    the SQL layer sent none, so a client can never wait forever.

use shale_sql::{ColumnMeta, ColumnTypeCode, ResultSink, SqlError, StatementStatus, Value};
use tokio::sync::mpsc;

use crate::binary::put_binary_row;
use crate::codec::PacketWriter;
use crate::protocol::{capability, errors, put_eof, put_err, put_ok, status, OkPacket};
use crate::text::{put_column_definition, put_text_row};
use crate::wire::put_lenenc_int;

/// Buffered reply bytes that trigger a hand-off to the socket.
pub const FLUSH_AT: usize = 32 * 1024;
/// Chunks that may wait for the socket before the session thread blocks.
pub const CHANNEL_CHUNKS: usize = 4;

/// A piece of a reply, from the session thread to the connection's I/O task.
#[derive(Debug)]
pub enum Reply {
    /// More bytes of the reply; the command is still running.
    Partial(Vec<u8>),
    /// The last bytes of the reply (maybe none); `close` asks to end the connection after them.
    Done { bytes: Vec<u8>, close: bool },
    /// LOAD DATA LOCAL: `bytes` end with the request for a file (0xFB and its name); the I/O
    /// task reads the client's packets from sequence id `next_seq` up to the empty one and
    /// sends the file back through `file` (`None`: the connection failed).
    LocalInfile {
        bytes: Vec<u8>,
        next_seq: u8,
        file: std::sync::mpsc::SyncSender<Option<LocalFile>>,
    },
}

/// A file a client sent for LOAD DATA LOCAL.
#[derive(Debug)]
pub struct LocalFile {
    pub data: Vec<u8>,
    /// The sequence id the statement's reply starts at (after the client's empty packet).
    pub next_seq: u8,
}

/// The reply being built for one command.
#[derive(Debug)]
pub struct Output {
    pub writer: PacketWriter,
    replies: mpsc::Sender<Reply>,
    /// The I/O task went away (the client disconnected).
    broken: bool,
}

impl Output {
    pub fn new(replies: mpsc::Sender<Reply>) -> Self {
        Output {
            writer: PacketWriter::new(0),
            replies,
            broken: false,
        }
    }

    /// Hands the buffered bytes over if there are enough of them.
    pub fn maybe_flush(&mut self) -> Result<(), SqlError> {
        if self.writer.len() < FLUSH_AT {
            return Ok(());
        }
        let bytes = self.writer.take();
        if self.broken || self.replies.blocking_send(Reply::Partial(bytes)).is_err() {
            self.broken = true;
            return Err(errors::write_failed());
        }
        Ok(())
    }

    /// Ends the reply; false when the I/O task is gone.
    pub fn done(&mut self, close: bool) -> bool {
        let bytes = self.writer.take();
        !self.broken
            && self
                .replies
                .blocking_send(Reply::Done { bytes, close })
                .is_ok()
    }

    /// Asks the client for the file `name` (LOCAL INFILE Request) and waits for its content.
    pub fn request_local_file(&mut self, name: &str) -> Result<Vec<u8>, SqlError> {
        self.writer.packet(|out| {
            out.push(0xFB);
            out.extend_from_slice(name.as_bytes());
        });
        let bytes = self.writer.take();
        let next_seq = self.writer.seq();
        let (file, received) = std::sync::mpsc::sync_channel(1);
        let request = Reply::LocalInfile {
            bytes,
            next_seq,
            file,
        };
        if self.broken || self.replies.blocking_send(request).is_err() {
            self.broken = true;
            return Err(errors::write_failed());
        }
        if let Ok(Some(file)) = received.recv() {
            self.writer.set_seq(file.next_seq);
            Ok(file.data)
        } else {
            self.broken = true;
            Err(errors::write_failed())
        }
    }

    pub fn ok(&mut self, ok: &OkPacket<'_>) {
        self.writer.packet(|out| put_ok(out, 0x00, ok));
    }

    pub fn err(&mut self, error: &SqlError) {
        self.writer
            .packet(|out| put_err(out, error.code, error.sqlstate, &error.message));
    }
}

/// The status flags a statement's end reports.
pub fn status_flags(status: &StatementStatus) -> u16 {
    let mut flags = 0;
    if status.in_transaction {
        flags |= status::IN_TRANS;
    }
    if status.autocommit {
        flags |= status::AUTOCOMMIT;
    }
    if status.more_results {
        flags |= status::MORE_RESULTS_EXISTS;
    }
    flags
}

/// Writes column definitions, followed by an EOF_Packet unless the client deprecated it.
pub fn put_columns(output: &mut Output, capabilities: u32, columns: &[ColumnMeta], status: u16) {
    for column in columns {
        output
            .writer
            .packet(|out| put_column_definition(out, column, false));
    }
    if capabilities & capability::DEPRECATE_EOF == 0 {
        output.writer.packet(|out| put_eof(out, 0, status));
    }
}

/// Ends a result set (rows, field list, set-option): EOF_Packet or `0xFE` OK_Packet.
pub fn put_end(output: &mut Output, capabilities: u32, warnings: u16, status: u16) {
    if capabilities & capability::DEPRECATE_EOF == 0 {
        output.writer.packet(|out| put_eof(out, warnings, status));
    } else {
        let ok = OkPacket {
            status,
            warnings,
            ..OkPacket::default()
        };
        output.writer.packet(|out| put_ok(out, 0xFE, &ok));
    }
}

/// A [`ResultSink`] that encodes results as packets into an [`Output`].
#[derive(Debug)]
pub struct ResultWriter<'a> {
    output: &'a mut Output,
    capabilities: u32,
    binary: bool,
    /// The current result set's column types (kept without the names: no per-query copies).
    types: Vec<ColumnTypeCode>,
    /// A terminal packet without MORE_RESULTS_EXISTS was written.
    finished: bool,
}

impl<'a> ResultWriter<'a> {
    pub fn new(output: &'a mut Output, capabilities: u32, binary: bool) -> Self {
        ResultWriter {
            output,
            capabilities,
            binary,
            types: Vec::new(),
            finished: false,
        }
    }

    /// Ends the reply after the session returned: its error, or an OK if nothing ended it.
    pub fn finish(self, result: Result<(), SqlError>, status: u16) {
        match result {
            Err(error) => self.output.err(&error),
            Ok(()) if !self.finished => self.output.ok(&OkPacket {
                status,
                ..OkPacket::default()
            }),
            Ok(()) => {}
        }
    }
}

impl ResultSink for ResultWriter<'_> {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        let ok = OkPacket {
            affected_rows: status.affected_rows,
            last_insert_id: status.last_insert_id,
            status: status_flags(status),
            warnings: status.warnings,
            info: &status.info,
        };
        self.output.ok(&ok);
        self.finished = !status.more_results;
        self.output.maybe_flush()
    }

    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.finished = false;
        self.output
            .writer
            .packet(|out| put_lenenc_int(out, columns.len() as u64));
        put_columns(self.output, self.capabilities, columns, 0);
        self.types.clear();
        self.types.extend(columns.iter().map(|c| c.type_code));
        self.output.maybe_flush()
    }

    /// Only when the client said it sends files (CLIENT_LOCAL_FILES); else the SQL layer
    /// refuses the statement (3948).
    fn local_infile(&mut self, name: &str) -> Result<Option<Vec<u8>>, SqlError> {
        if self.capabilities & capability::LOCAL_FILES == 0 {
            return Ok(None);
        }
        self.output.request_local_file(name).map(Some)
    }

    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        let types = &self.types;
        if self.binary {
            self.output
                .writer
                .packet(|out| put_binary_row(out, types, row));
        } else {
            self.output
                .writer
                .packet(|out| put_text_row(out, types, row));
        }
        self.output.maybe_flush()
    }

    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        put_end(
            self.output,
            self.capabilities,
            status.warnings,
            status_flags(status),
        );
        self.finished = !status.more_results;
        self.output.maybe_flush()
    }
}
