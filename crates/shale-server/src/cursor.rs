//! Server-side cursors of prepared statements (MySQL "COM_STMT_EXECUTE" with a cursor flag,
//! "COM_STMT_FETCH"). A COM_STMT_EXECUTE whose flags ask for a read-only cursor runs the
//! statement to its end into a [`Materialized`] result: the rows are kept, already encoded as
//! binary rows, and the reply is only the column count, the column definitions and one
//! EOF_Packet (an `0xFE` OK_Packet under CLIENT_DEPRECATE_EOF) whose status carries
//! SERVER_STATUS_CURSOR_EXISTS. Each COM_STMT_FETCH(statement, n) then sends up to n of the
//! rows and the same terminator, with SERVER_STATUS_LAST_ROW_SENT once the last row went
//! out (the cursor is then closed).
//!
//! Why materialized: the SQL layer pushes a statement's rows into a sink and holds its
//! transaction snapshot only while it runs, so a cursor that pulls rows later would need the
//! executor to be suspended between commands. The cost is memory: a cursor holds its whole
//! result (as binary rows, about its size on the wire) until it is fetched to the end, the
//! statement is executed again, reset or closed, or the connection ends. That memory counts
//! against the session's `shale_query_memory`, as a query's other collections do: the
//! encoded rows' bytes plus 8 a row. Past it the execution fails with 3170 and what the
//! result held is freed (MySQL would spill the rows to a temporary table on disk instead).
//!
//! Invariants:
//! 1. A statement has at most one open cursor; COM_STMT_EXECUTE, COM_STMT_RESET and
//!    COM_STMT_CLOSE of the statement close it (prepared.rs keeps it with the statement).
//! 2. A statement that returns no result set opens no cursor: its OK goes out as usual.
//! 3. Every row of the result is sent exactly once, in order, over the fetches.

use shale_sql::{ColumnMeta, ColumnTypeCode, ResultSink, SqlError, StatementStatus, Value};

use crate::binary::put_binary_row;
use crate::protocol::status;
use crate::results::{put_end, Output};
use crate::results_charset::{converted_row, is_text};
use crate::text::put_column_definition;
use crate::wire::put_lenenc_int;
use shale_sql::Charset;

/// COM_STMT_EXECUTE's flag for a read-only cursor (`CURSOR_TYPE_READ_ONLY`).
pub const CURSOR_TYPE_READ_ONLY: u8 = 1;

/// The bytes each row costs besides its encoding (where it ends in the buffer).
const ROW_OVERHEAD: usize = std::mem::size_of::<usize>();

/// A statement's result, kept whole: what the session sent into it.
#[derive(Debug)]
pub struct Materialized {
    columns: Option<Vec<ColumnMeta>>,
    types: Vec<ColumnTypeCode>,
    /// Which columns are text, when `target` is set (results_charset.rs).
    text_columns: Vec<bool>,
    /// What text values are converted into (`character_set_results`), if anything.
    target: Option<Charset>,
    /// `shale_query_memory`: the most bytes the kept rows may take.
    limit: usize,
    rows: Vec<u8>,
    /// Where each row's payload ends in `rows`.
    ends: Vec<usize>,
    /// The OK of a statement without a result set.
    ok: Option<StatementStatus>,
    warnings: u16,
}

impl ResultSink for Materialized {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.ok = Some(status.clone());
        Ok(())
    }

    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.types = columns.iter().map(|c| c.type_code).collect();
        if self.target.is_some() {
            self.text_columns = columns.iter().map(is_text).collect();
        }
        self.columns = Some(columns.to_vec());
        Ok(())
    }

    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        let row = match self.target {
            Some(target) => converted_row(row, &self.text_columns, target),
            None => row.into(),
        };
        put_binary_row(&mut self.rows, &self.types, &row);
        self.ends.push(self.rows.len());
        let used = self.rows.len() + self.ends.len() * ROW_OVERHEAD;
        if used > self.limit {
            self.rows = Vec::new();
            self.ends = Vec::new();
            return Err(SqlError {
                code: 3170,
                sqlstate: "HY000",
                message: format!(
                    "Memory capacity of {} bytes for 'shale_query_memory' exceeded by the \
                     cursor's rows; Shale does not spill to disk: raise shale_query_memory \
                     or fetch without a cursor",
                    self.limit
                ),
            });
        }
        Ok(())
    }

    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.warnings = status.warnings;
        Ok(())
    }
}

/// An open cursor: the rows not fetched yet.
#[derive(Debug)]
pub struct Cursor {
    rows: Vec<u8>,
    ends: Vec<usize>,
    /// The next row to send.
    next: usize,
}

/// What a cursor-flagged execution came to.
#[derive(Debug)]
pub enum Opened {
    /// The statement returned rows: a cursor over them (the reply is written).
    Cursor(Cursor),
    /// The statement returned no result set: its OK, for the caller to send.
    NoResultSet(StatementStatus),
}

impl Materialized {
    /// An empty result whose text values go out in `target` and whose rows may take at most
    /// `limit` bytes.
    pub fn new(target: Option<Charset>, limit: usize) -> Materialized {
        Materialized {
            columns: None,
            types: Vec::new(),
            text_columns: Vec::new(),
            target,
            limit,
            rows: Vec::new(),
            ends: Vec::new(),
            ok: None,
            warnings: 0,
        }
    }

    /// Writes the reply that opens the cursor (column count, definitions, terminator with
    /// SERVER_STATUS_CURSOR_EXISTS) and returns the cursor; or the statement's OK.
    pub fn open(self, output: &mut Output, capabilities: u32, status_flags: u16) -> Opened {
        let Some(columns) = self.columns else {
            return Opened::NoResultSet(self.ok.unwrap_or_default());
        };
        output
            .writer
            .packet(|out| put_lenenc_int(out, columns.len() as u64));
        for column in &columns {
            output
                .writer
                .packet(|out| put_column_definition(out, column, false, self.target));
        }
        put_end(
            output,
            capabilities,
            self.warnings,
            status_flags | status::CURSOR_EXISTS,
        );
        Opened::Cursor(Cursor {
            rows: self.rows,
            ends: self.ends,
            next: 0,
        })
    }
}

impl Cursor {
    /// COM_STMT_FETCH: writes up to `n` rows and the terminator; true when the last row was
    /// sent (the caller then closes the cursor).
    pub fn fetch(&mut self, n: u32, output: &mut Output, capabilities: u32, flags: u16) -> bool {
        let end = self.next.saturating_add(n as usize).min(self.ends.len());
        for i in self.next..end {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            let row = &self.rows[start..self.ends[i]];
            output.writer.packet(|out| out.extend_from_slice(row));
            // A write error marks the output broken; the reply's end reports it.
            let _ = output.maybe_flush();
        }
        self.next = end;
        let done = self.next == self.ends.len();
        let mut flags = flags | status::CURSOR_EXISTS;
        if done {
            flags |= status::LAST_ROW_SENT;
        }
        put_end(output, capabilities, 0, flags);
        done
    }
}

/// Whether COM_STMT_EXECUTE's `flags` ask for a cursor: the read-only bit, the only one
/// MySQL looks at (FOR UPDATE, 2, and SCROLLABLE, 4, are not implemented there either).
pub fn wants_cursor(flags: u8) -> bool {
    flags & CURSOR_TYPE_READ_ONLY != 0
}
