//! Prints results as the mysql client does: boxed tables (interactive, or `--table`),
//! tab-separated lines (batch: a pipe, or `--batch`), or `\G`'s vertical records, with the
//! client's "Query OK" and "N rows in set" lines in interactive mode.

use std::fmt::Write as _;
use std::io::Write;
use std::time::Instant;

use shale_sql::{
    write_text, ColumnMeta, ColumnTypeCode, ResultSink, SqlError, StatementStatus, Value,
};

/// How result sets are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Table,
    Tab,
    Vertical,
}

/// Options that stay fixed for the whole shell run.
#[derive(Debug, Clone, Copy)]
pub struct PrintOptions {
    pub layout: Layout,
    pub column_names: bool,
    /// Print "Query OK" lines and timings (interactive mode).
    pub summaries: bool,
}

/// A [`ResultSink`] that prints each statement's result to `out` as it ends.
pub struct Printer<'w> {
    out: &'w mut dyn Write,
    options: PrintOptions,
    started: Instant,
    columns: Vec<ColumnMeta>,
    rows: Vec<Vec<Option<String>>>,
}

impl std::fmt::Debug for Printer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn io_error(error: &std::io::Error) -> SqlError {
    SqlError {
        code: 2000,
        sqlstate: "HY000",
        message: format!("cannot write the result: {error}"),
    }
}

/// A value as the server's text protocol (and so the mysql client) shows it; None for NULL.
fn text_value(value: &Value, column: &ColumnMeta) -> Option<String> {
    if matches!(value, Value::Null) {
        return None;
    }
    let mut text = String::new();
    write_text(&mut text, value, column.type_code == ColumnTypeCode::Float);
    Some(text)
}

fn is_numeric(column: &ColumnMeta) -> bool {
    matches!(
        column.type_code,
        ColumnTypeCode::Decimal
            | ColumnTypeCode::NewDecimal
            | ColumnTypeCode::Tiny
            | ColumnTypeCode::Short
            | ColumnTypeCode::Long
            | ColumnTypeCode::Int24
            | ColumnTypeCode::LongLong
            | ColumnTypeCode::Float
            | ColumnTypeCode::Double
            | ColumnTypeCode::Year
    )
}

/// The batch format's escapes (mysql's `--batch`): backslash, tab, newline and NUL.
fn escape_tab(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\0' => out.push_str("\\0"),
            _ => out.push(c),
        }
    }
    out
}

impl<'w> Printer<'w> {
    pub fn new(out: &'w mut dyn Write, options: PrintOptions) -> Self {
        Printer {
            out,
            options,
            started: Instant::now(),
            columns: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Restarts the statement clock (the interactive timings) and sets the layout of the next
    /// statement (`\G` asks for vertical output).
    pub fn start_statement(&mut self, layout: Layout) {
        self.started = Instant::now();
        self.options.layout = layout;
    }

    fn seconds(&self) -> String {
        format!("({:.2} sec)", self.started.elapsed().as_secs_f64())
    }

    fn print_table(&mut self) -> std::io::Result<()> {
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                self.rows
                    .iter()
                    .map(|row| row[i].as_deref().unwrap_or("NULL").chars().count())
                    .chain([column.name.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut rule = String::new();
        for w in &widths {
            rule.push('+');
            rule.push_str(&"-".repeat(w + 2));
        }
        rule.push('+');
        writeln!(self.out, "{rule}")?;
        if self.options.column_names {
            let mut header = String::new();
            for (column, &w) in self.columns.iter().zip(&widths) {
                let _ = write!(header, "| {:<w$} ", column.name);
            }
            writeln!(self.out, "{header}|")?;
            writeln!(self.out, "{rule}")?;
        }
        for row in &self.rows {
            let mut line = String::new();
            for ((cell, column), &w) in row.iter().zip(&self.columns).zip(&widths) {
                let text = cell.as_deref().unwrap_or("NULL");
                let _ = if is_numeric(column) {
                    write!(line, "| {text:>w$} ")
                } else {
                    write!(line, "| {text:<w$} ")
                };
            }
            writeln!(self.out, "{line}|")?;
        }
        writeln!(self.out, "{rule}")
    }

    fn print_vertical(&mut self) -> std::io::Result<()> {
        let width = self
            .columns
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0);
        for (n, row) in self.rows.iter().enumerate() {
            writeln!(
                self.out,
                "*************************** {}. row ***************************",
                n + 1
            )?;
            for (cell, column) in row.iter().zip(&self.columns) {
                writeln!(
                    self.out,
                    "{:>width$}: {}",
                    column.name,
                    cell.as_deref().unwrap_or("NULL")
                )?;
            }
        }
        Ok(())
    }
}

impl ResultSink for Printer<'_> {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        if !self.options.summaries {
            return Ok(());
        }
        let rows = status.affected_rows;
        let plural = if rows == 1 { "row" } else { "rows" };
        let seconds = self.seconds();
        (|| {
            writeln!(self.out, "Query OK, {rows} {plural} affected {seconds}")?;
            if !status.info.is_empty() {
                writeln!(self.out, "{}", status.info)?;
            }
            writeln!(self.out)
        })()
        .map_err(|e| io_error(&e))
    }

    fn columns(&mut self, columns: &[ColumnMeta]) -> Result<(), SqlError> {
        self.columns = columns.to_vec();
        self.rows.clear();
        if self.options.layout == Layout::Tab && self.options.column_names {
            let header: Vec<String> = columns.iter().map(|c| escape_tab(&c.name)).collect();
            writeln!(self.out, "{}", header.join("\t")).map_err(|e| io_error(&e))?;
        }
        Ok(())
    }

    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        let cells: Vec<Option<String>> = row
            .iter()
            .zip(&self.columns)
            .map(|(value, column)| text_value(value, column))
            .collect();
        if self.options.layout == Layout::Tab {
            // Batch output streams: nothing to align, so nothing to keep.
            let line: Vec<String> = cells
                .iter()
                .map(|c| c.as_deref().map_or_else(|| "NULL".to_owned(), escape_tab))
                .collect();
            return writeln!(self.out, "{}", line.join("\t")).map_err(|e| io_error(&e));
        }
        self.rows.push(cells);
        Ok(())
    }

    fn end(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        let printed = match self.options.layout {
            // Batch rows were written as they came.
            Layout::Tab => Ok(()),
            Layout::Table if self.rows.is_empty() => Ok(()),
            Layout::Table => self.print_table(),
            Layout::Vertical => self.print_vertical(),
        };
        printed.map_err(|e| io_error(&e))?;
        let count = self.rows.len();
        if self.options.summaries {
            let seconds = self.seconds();
            let warnings = match status.warnings {
                0 => String::new(),
                1 => ", 1 warning".to_owned(),
                n => format!(", {n} warnings"),
            };
            let line = match count {
                0 => format!("Empty set{warnings} {seconds}"),
                1 => format!("1 row in set{warnings} {seconds}"),
                n => format!("{n} rows in set{warnings} {seconds}"),
            };
            writeln!(self.out, "{line}\n").map_err(|e| io_error(&e))?;
        }
        self.rows.clear();
        Ok(())
    }
}
