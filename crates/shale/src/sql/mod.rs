//! `shale sql`: an in-process SQL shell over a data directory, like the mysql client or
//! sqlite3 (no server). Statements go to a `shale_sql::Session`; results print as the mysql
//! client prints them: boxed tables on a terminal, tab-separated lines in a pipe.
//!
//! Reads statements from `-e`, from standard input when it is not a terminal (batch mode), or
//! interactively with line editing and history (`~/.shale_sql_history`). Client commands:
//! `source FILE` (`\.`), `quit`/`exit` (`\q`), `help` (`\h`); a statement ends with `;` or `\G`.

pub(crate) mod input;
mod print;

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use shale_sql::{Instance, InstanceOptions, Session, SqlError};

use crate::output::Failure;
use input::{StatementSplitter, Terminator};
use print::{Layout, PrintOptions, Printer};

/// Flags of `shale sql` (named as the mysql client's where it has them).
// Each bool is an independent client flag; clap owns their meaning.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The data directory (the one `shale serve` uses by default).
    #[arg(long, value_name = "DIR", default_value = "shale-data")]
    pub datadir: PathBuf,
    /// Run these statements (separated by `;`) and exit.
    #[arg(short = 'e', long = "execute", value_name = "STATEMENTS")]
    pub execute: Option<String>,
    /// The database to use first.
    #[arg(short = 'D', long = "database", value_name = "NAME")]
    pub database: Option<String>,
    /// Tab-separated output even on a terminal.
    #[arg(short = 'B', long)]
    pub batch: bool,
    /// Boxed tables even in a pipe.
    #[arg(short = 't', long, conflicts_with = "batch")]
    pub table: bool,
    /// Print rows vertically (as `\G` does).
    #[arg(short = 'E', long)]
    pub vertical: bool,
    /// Leave out the column names line.
    #[arg(short = 'N', long)]
    pub skip_column_names: bool,
    /// Keep going after a statement fails (batch mode).
    #[arg(short = 'f', long)]
    pub force: bool,
}

/// Why the shell stopped early.
enum Stop {
    /// A statement failed (printed already) and `--force` was not given.
    Failed,
    /// `quit` or `exit`.
    Quit,
}

struct Shell {
    session: Session,
    options: PrintOptions,
    force: bool,
    /// Errors go to stderr as `ERROR 1146 (42S02) at line 3: ...` in batch mode.
    interactive: bool,
    failed: bool,
}

impl Shell {
    /// Runs one complete statement or client command. `line` is the input line it ended on,
    /// for batch-mode error messages.
    fn run(&mut self, text: &str, terminator: Terminator, line: usize) -> Result<(), Stop> {
        let lowered = text.trim().trim_end_matches(';').trim();
        let word = lowered
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        match word.as_str() {
            "quit" | "exit" | "\\q" => return Err(Stop::Quit),
            "help" | "\\h" | "?" => {
                println!(
                    "Statements end with ; (or \\G for vertical rows). Client commands:\n  \
                     source FILE  run the statements in FILE (also \\. FILE)\n  \
                     quit, exit   leave (also \\q)"
                );
                return Ok(());
            }
            "source" | "\\." => {
                let file = lowered[word.len()..].trim();
                return self.source(Path::new(file));
            }
            _ => {}
        }
        let layout = match (terminator, self.options.layout) {
            (Terminator::Vertical, _) => Layout::Vertical,
            (Terminator::Semicolon, layout) => layout,
        };
        let mut stdout = std::io::stdout().lock();
        let mut printer = Printer::new(&mut stdout, self.options);
        printer.start_statement(layout);
        let result = self.session.execute(text, &mut printer);
        drop(printer);
        let _ = stdout.flush();
        match result {
            Ok(()) => Ok(()),
            Err(error) => {
                self.report(&error, line);
                self.failed = true;
                if self.interactive || self.force {
                    Ok(())
                } else {
                    Err(Stop::Failed)
                }
            }
        }
    }

    fn report(&self, error: &SqlError, line: usize) {
        if self.interactive {
            eprintln!(
                "ERROR {} ({}): {}",
                error.code, error.sqlstate, error.message
            );
        } else {
            eprintln!(
                "ERROR {} ({}) at line {line}: {}",
                error.code, error.sqlstate, error.message
            );
        }
    }

    /// Runs every statement read from `reader`; the unterminated rest runs at the end.
    fn run_lines(&mut self, reader: impl BufRead) -> Result<(), Stop> {
        let mut splitter = StatementSplitter::default();
        let mut number = 0;
        for line in reader.lines() {
            number += 1;
            let line = match line {
                Ok(line) => line,
                Err(error) => {
                    eprintln!("ERROR: cannot read input at line {number}: {error}");
                    return Err(Stop::Failed);
                }
            };
            if !splitter.is_pending() && is_client_command(&line) {
                self.run(&line, Terminator::Semicolon, number)?;
                continue;
            }
            for (statement, terminator) in splitter.push_line(&line) {
                self.run(&statement, terminator, number)?;
            }
        }
        if let Some(rest) = splitter.take_rest() {
            self.run(&rest, Terminator::Semicolon, number)?;
        }
        Ok(())
    }

    fn source(&mut self, path: &Path) -> Result<(), Stop> {
        match std::fs::File::open(path) {
            Ok(file) => self.run_lines(std::io::BufReader::new(file)),
            Err(error) => {
                eprintln!(
                    "ERROR: Failed to open file '{}', error: {error}",
                    path.display()
                );
                self.failed = true;
                if self.interactive || self.force {
                    Ok(())
                } else {
                    Err(Stop::Failed)
                }
            }
        }
    }

    fn interactive(&mut self) -> Result<(), Failure> {
        let mut editor = rustyline::DefaultEditor::new()
            .map_err(|e| Failure::error(format!("cannot start line editing: {e}")))?;
        let history =
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".shale_sql_history"));
        if let Some(history) = &history {
            let _ = editor.load_history(history);
        }
        println!("Shale SQL shell. Statements end with ; or \\G. Type 'help' for help, 'quit' to leave.\n");
        let mut splitter = StatementSplitter::default();
        loop {
            let prompt = if splitter.is_pending() {
                "    -> "
            } else {
                "shale> "
            };
            match editor.readline(prompt) {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    if !splitter.is_pending() && is_client_command(&line) {
                        if let Err(Stop::Quit) = self.run(&line, Terminator::Semicolon, 0) {
                            break;
                        }
                        continue;
                    }
                    let mut quit = false;
                    for (statement, terminator) in splitter.push_line(&line) {
                        if let Err(Stop::Quit) = self.run(&statement, terminator, 0) {
                            quit = true;
                            break;
                        }
                    }
                    if quit {
                        break;
                    }
                }
                // Ctrl-C drops the statement being typed, as the mysql client does.
                Err(rustyline::error::ReadlineError::Interrupted) => {
                    let _ = splitter.take_rest();
                }
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(error) => return Err(Failure::error(format!("cannot read input: {error}"))),
            }
        }
        if let Some(history) = &history {
            let _ = editor.save_history(history);
        }
        println!("Bye");
        Ok(())
    }
}

/// Client commands are whole lines and need no `;`.
fn is_client_command(line: &str) -> bool {
    let word = line
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches(';')
        .to_ascii_lowercase();
    matches!(
        word.as_str(),
        "quit" | "exit" | "\\q" | "help" | "\\h" | "?" | "source" | "\\."
    )
}

/// `shale sql`.
pub fn run(args: &SqlArgs) -> Result<(), Failure> {
    let instance = Instance::open(&args.datadir, InstanceOptions::default()).map_err(|e| {
        Failure::error(format!(
            "cannot open the data directory {}: {} (is `shale serve` running on it? stop it, \
             or connect with the mariadb client instead)",
            args.datadir.display(),
            e.message
        ))
    })?;
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let interactive = args.execute.is_none() && stdin_is_terminal;
    let tty_output = std::io::stdout().is_terminal();
    let layout = if args.vertical {
        Layout::Vertical
    } else if args.table || (tty_output && !args.batch) {
        Layout::Table
    } else {
        Layout::Tab
    };
    // The shell (and its session) ends before the instance closes.
    let (outcome, failed) = {
        let mut shell = Shell {
            session: instance.session(),
            options: PrintOptions {
                layout,
                column_names: !args.skip_column_names,
                summaries: interactive && layout != Layout::Tab,
            },
            force: args.force,
            interactive,
            failed: false,
        };
        if let Some(database) = &args.database {
            shell.session.use_database(database).map_err(|e| {
                Failure::error(format!("ERROR {} ({}): {}", e.code, e.sqlstate, e.message))
            })?;
        }
        let outcome = if let Some(statements) = &args.execute {
            shell.run_lines(std::io::Cursor::new(statements.as_bytes()))
        } else if interactive {
            shell.interactive()?;
            Ok(())
        } else {
            shell.run_lines(std::io::stdin().lock())
        };
        (outcome, shell.failed)
    };
    instance
        .close()
        .map_err(|e| Failure::error(format!("closing the data directory: {}", e.message)))?;
    match outcome {
        Err(Stop::Failed) => Err(Failure::Reported),
        _ if failed && !interactive => Err(Failure::Reported),
        _ => Ok(()),
    }
}
