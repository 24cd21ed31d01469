//! Writing a command's reply to the client: [`Output`] frames packets and writes them to the
//! connection in chunks of about [`FLUSH_AT`] bytes, and [`ResultWriter`] is the
//! [`ResultSink`] that turns a statement's results into a text or binary result set (MySQL
//! "Text Resultset", "Binary Protocol Resultset").
//!
//! Invariants:
//! 1. Memory per connection stays bounded while rows stream: at most about [`FLUSH_AT`] bytes
//!    wait in the buffer; past that the connection's thread writes them out, blocking while
//!    the client reads slowly.
//! 2. A result set ends with an EOF_Packet, or with an OK_Packet headed `0xFE` when the client
//!    set `CLIENT_DEPRECATE_EOF`; the column definitions are followed by an EOF_Packet only
//!    without `CLIENT_DEPRECATE_EOF`.
//! 3. Every reply ends with exactly one terminal packet whose status lacks
//!    `SERVER_MORE_RESULTS_EXISTS` (or an ERR_Packet); [`ResultWriter::finish`] adds an OK if
//!    the SQL layer sent none, so a client can never wait forever.

use std::io::Write as _;
use std::sync::Arc;

use shale_sql::{
    ColumnMeta, ColumnTypeCode, Counter, ResultSink, SqlError, StatementStatus, Value,
};

use crate::binary::put_binary_row;
use crate::codec::{Packet, PacketWriter, ReadError};
use crate::protocol::{capability, errors, put_eof, put_err, put_ok, status, OkPacket};
use crate::results_charset::{converted_row, is_text};
use crate::server::Shared;
use crate::stream::{read_packet, Conn};
use crate::text::{put_column_definition, put_text_row};
use crate::wire::put_lenenc_int;
use shale_sql::Charset;

/// Buffered reply bytes that are written out before the reply is complete.
pub const FLUSH_AT: usize = 32 * 1024;

/// A connection's stream and the reply being built for its current command.
#[derive(Debug)]
pub struct Output {
    pub writer: PacketWriter,
    conn: Conn,
    shared: Arc<Shared>,
    /// A write failed (the client disconnected); nothing more is sent.
    broken: bool,
    /// The largest packet this connection accepts (fixed when it logs in).
    max_allowed_packet: usize,
    /// What text results and error messages are converted into (`character_set_results`
    /// when it converts; results_charset.rs), as of the current command.
    results_charset: Option<Charset>,
}

impl Output {
    /// The reply side of `conn`; packets larger than `max_allowed_packet` are refused.
    pub fn new(conn: Conn, shared: Arc<Shared>, max_allowed_packet: usize) -> Self {
        Output {
            writer: PacketWriter::new(0),
            conn,
            shared,
            broken: false,
            max_allowed_packet,
            results_charset: None,
        }
    }

    /// The largest packet this connection accepts.
    pub fn max_allowed_packet(&self) -> usize {
        self.max_allowed_packet
    }

    /// Sets what the current command's text results and errors are converted into.
    pub fn set_results_charset(&mut self, target: Option<Charset>) {
        self.results_charset = target;
    }

    /// What text results and errors are converted into (None: nothing is converted).
    pub fn results_charset(&self) -> Option<Charset> {
        self.results_charset
    }

    /// The connection's stream (to read a packet, set a timeout or close it).
    pub fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    /// Reads the client's next packet, whose first chunk must carry `seq`.
    pub fn read_packet(&mut self, seq: u8) -> Result<Packet, ReadError> {
        read_packet(&mut self.conn, seq, self.max_allowed_packet)
    }

    fn write_out(&mut self, bytes: &[u8]) -> bool {
        if self.broken {
            return false;
        }
        self.shared.count(Counter::BytesSent, bytes.len() as u64);
        let stream = self.conn.get_mut();
        if stream
            .write_all(bytes)
            .and_then(|()| stream.flush())
            .is_err()
        {
            self.broken = true;
        }
        !self.broken
    }

    /// Writes the buffered bytes out if there are enough of them.
    pub fn maybe_flush(&mut self) -> Result<(), SqlError> {
        if self.writer.len() < FLUSH_AT {
            return Ok(());
        }
        let bytes = self.writer.take();
        if self.write_out(&bytes) {
            Ok(())
        } else {
            Err(errors::write_failed())
        }
    }

    /// Ends the reply: writes what is buffered; false when the client is gone.
    pub fn flush_reply(&mut self) -> bool {
        let bytes = self.writer.take();
        if bytes.is_empty() {
            return !self.broken;
        }
        self.write_out(&bytes)
    }

    /// Asks the client for the file `name` (LOCAL INFILE Request) and reads its content: the
    /// client's packets of at most `max_allowed_packet` bytes each, up to an empty one.
    pub fn request_local_file(&mut self, name: &str) -> Result<Vec<u8>, SqlError> {
        self.writer.packet(|out| {
            out.push(0xFB);
            out.extend_from_slice(name.as_bytes());
        });
        let mut seq = self.writer.seq();
        if !self.flush_reply() {
            return Err(errors::write_failed());
        }
        let mut data = Vec::new();
        loop {
            let Ok(packet) = self.read_packet(seq) else {
                self.broken = true;
                return Err(errors::write_failed());
            };
            seq = packet.last_seq.wrapping_add(1);
            if packet.payload.is_empty() {
                self.writer.set_seq(seq);
                return Ok(data);
            }
            data.extend_from_slice(&packet.payload);
        }
    }

    pub fn ok(&mut self, ok: &OkPacket<'_>) {
        self.writer.packet(|out| put_ok(out, 0x00, ok));
    }

    /// An ERR_Packet, its message in `character_set_results` as MySQL sends it.
    pub fn err(&mut self, error: &SqlError) {
        let message = error.message.as_bytes();
        let message = self
            .results_charset
            .map_or(message.into(), |target| target.encode(message));
        self.writer
            .packet(|out| put_err(out, error.code, error.sqlstate, &message));
    }

    /// Ends the connection: TLS's close_notify and the socket's write side.
    pub fn close(mut self) {
        self.conn.get_mut().close();
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
    let target = output.results_charset();
    for column in columns {
        output
            .writer
            .packet(|out| put_column_definition(out, column, false, target));
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
    /// Which of its columns are text, when `character_set_results` converts (else empty).
    text_columns: Vec<bool>,
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
            text_columns: Vec::new(),
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
        self.text_columns.clear();
        if self.output.results_charset().is_some() {
            self.text_columns.extend(columns.iter().map(is_text));
        }
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
        let row = match self.output.results_charset() {
            Some(target) => converted_row(row, &self.text_columns, target),
            None => row.into(),
        };
        let row = row.as_ref();
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
