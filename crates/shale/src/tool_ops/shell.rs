//! `shale tool shell DIR`: one open database and the `shale tool` commands as lines (`get k`,
//! `put k v`, `scan --limit 10`, `count`, `compact`, `keyspace list` ...), like `RocksDB`'s
//! `ldb` in `--interactive` mode. A line is parsed by the very flags of the command line,
//! with DIR left out; errors are printed and the shell goes on. Line editing and history
//! (`~/.shale_tool_history`) when stdin is a terminal; piped lines are read as they come.
//!
//! Words split at spaces; single or double quotes group a word with spaces and are removed;
//! backslashes are kept, so the escaped keys the tools print (`k\x00`) are typed as printed.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};
use shale_engine::{Db, Options};

use super::{say, OpsCommand};
use crate::output::{Failure, RecoveryArgs};
use crate::tool_db::{
    exec_delete, exec_get, exec_put, exec_scan, DbArgs, DeleteArgs, GetArgs, PutArgs, ScanArgs,
    Target,
};

/// Flags of `shale tool shell`.
#[derive(Debug, clap::Args)]
pub struct ShellArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// Open the database read-only: beside a running writer, and write commands fail.
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
}

/// One line of the shell: a `shale tool` command without `shale tool` (DIR is put in).
#[derive(Debug, Parser)]
#[command(no_binary_name = true, name = "", disable_version_flag = true)]
struct Line {
    #[command(subcommand)]
    command: LineCommand,
}

#[derive(Debug, Subcommand)]
enum LineCommand {
    /// Print a key's value.
    Get(GetArgs),
    /// Write a key.
    Put(PutArgs),
    /// Delete a key.
    Delete(DeleteArgs),
    /// Print keys and values in order.
    Scan(ScanArgs),
    #[command(flatten)]
    Ops(OpsCommand),
}

impl LineCommand {
    fn db_args(&self) -> Option<&DbArgs> {
        match self {
            LineCommand::Get(a) => Some(&a.db),
            LineCommand::Put(a) => Some(&a.db),
            LineCommand::Delete(a) => Some(&a.db),
            LineCommand::Scan(a) => Some(&a.db),
            LineCommand::Ops(command) => command.db_args(),
        }
    }

    fn exec(&self, target: &Target<'_>) -> Result<(), Failure> {
        match self {
            LineCommand::Get(a) => exec_get(target, a),
            LineCommand::Put(a) => exec_put(target, a),
            LineCommand::Delete(a) => exec_delete(target, a),
            LineCommand::Scan(a) => exec_scan(target, a),
            LineCommand::Ops(command) => command.exec(target),
        }
    }
}

/// Splits a line into words (module docs). Fails on an unclosed quote.
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(format!("unclosed {q} quote"));
    }
    if in_word {
        out.push(word);
    }
    Ok(out)
}

/// What one line did.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Continue,
    Quit,
}

/// Runs one line on `db` in `dir`: prints the result, or the error.
fn run_line(db: &Db, dir: &Path, line: &str) -> Outcome {
    let words = match words(line) {
        Ok(words) => words,
        Err(e) => {
            eprintln!("error: {e}");
            return Outcome::Continue;
        }
    };
    let Some(first) = words.first() else {
        return Outcome::Continue;
    };
    match first.as_str() {
        "quit" | "exit" => return Outcome::Quit,
        "help" | "?" => {
            let help = Line::command()
                .override_usage("COMMAND [ARGS]   (the database is the shell's; no DIR)")
                .render_help();
            let _ = say(format!(
                "{help}\nquit or exit leaves; COMMAND --help shows a command's flags."
            ));
            return Outcome::Continue;
        }
        _ => {}
    }
    // The database directory goes where the command line has it: right after the command
    // (`keyspace DIR list`).
    let mut line_words = vec![first.clone(), dir.display().to_string()];
    line_words.extend(words[1..].iter().cloned());
    let parsed = match Line::try_parse_from(&line_words) {
        Ok(parsed) => parsed,
        Err(e) => {
            let _ = e.print();
            return Outcome::Continue;
        }
    };
    let result = match parsed.command.db_args() {
        Some(args) => Target::keyspace(db, &args.keyspace, dir)
            .and_then(|target| parsed.command.exec(&target)),
        None => match &parsed.command {
            LineCommand::Ops(command @ OpsCommand::WriteSst(_)) => command.exec_without_db(),
            _ => Err(Failure::error("the shell is already running")),
        },
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
    }
    let _ = std::io::stdout().flush();
    Outcome::Continue
}

/// Runs `shale tool shell`.
pub fn run(args: &ShellArgs) -> Result<(), Failure> {
    if !args
        .dir
        .join(shale_engine::inspect::CURRENT_FILE_NAME)
        .exists()
    {
        return Err(crate::output::missing_current(&args.dir));
    }
    let options = Options {
        create_if_missing: false,
        wal_recovery_mode: args.recovery.wal_recovery_mode,
        ..Options::default()
    };
    let db = if args.read_only {
        Db::open_read_only(&args.dir, options)
    } else {
        Db::open(&args.dir, options)
    }
    .map_err(|e| match e {
        shale_engine::Error::Io(shale_fs::Error::Locked { .. }) => Failure::error(format!(
            "{} is in use by another process (its LOCK is held); `shale tool shell --read-only \
             {}` reads beside it",
            args.dir.display(),
            args.dir.display()
        )),
        other => Failure::from(other),
    })?;
    let result = if std::io::stdin().is_terminal() {
        interactive(&db, &args.dir)
    } else {
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            if run_line(&db, &args.dir, &line) == Outcome::Quit {
                break;
            }
        }
        Ok(())
    };
    db.close()?;
    result
}

fn interactive(db: &Db, dir: &Path) -> Result<(), Failure> {
    let mut editor = rustyline::DefaultEditor::new()
        .map_err(|e| Failure::error(format!("cannot start line editing: {e}")))?;
    let history =
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".shale_tool_history"));
    if let Some(history) = &history {
        let _ = editor.load_history(history);
    }
    say(format!(
        "shale tool shell on {}: get, put, delete, scan, count, compact, flush, keyspace, ... \
         ('help' lists them, 'quit' leaves)",
        dir.display()
    ))?;
    loop {
        match editor.readline("shale-tool> ") {
            Ok(line) => {
                let _ = editor.add_history_entry(line.as_str());
                if run_line(db, dir, &line) == Outcome::Quit {
                    break;
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => {}
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(error) => return Err(Failure::error(format!("cannot read input: {error}"))),
        }
    }
    if let Some(history) = &history {
        let _ = editor.save_history(history);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn splits_words_keeping_backslashes() {
        assert_eq!(
            words(r#"put "a key" 'v 1' k\x00"#).unwrap(),
            ["put", "a key", "v 1", r"k\x00"]
        );
        assert_eq!(words("  get   k  ").unwrap(), ["get", "k"]);
        assert_eq!(words(r#"put "" x"#).unwrap(), ["put", "", "x"]);
        assert!(words(r#"get "k"#).is_err());
    }
}
