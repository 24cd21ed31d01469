//! `shale import`: loads a mysqldump file (its statements run through shale-sql, as `shale
//! sql` would run them) or a CSV file into a data directory, with a progress bar.
//!
//! Rules:
//! 1. A dump runs with the session's bulk mode on (`SET shale_bulk_load = 1`): each table's
//!    INSERTs go into one bulk load, finished when the dump moves on to another table and at
//!    the end. mysqldump recreates each table (DROP, CREATE) before its rows, so each load goes
//!    into an empty table. `--no-bulk-load` runs the INSERTs as plain transactions instead.
//! 2. mysqldump's statements that mean nothing here are skipped: `LOCK TABLES`, `UNLOCK
//!    TABLES`, `ALTER TABLE ... DISABLE KEYS` / `ENABLE KEYS` (inside `/*!40000 ... */`), and a
//!    `SET` that names a system variable Shale does not have (error 1193: mysqldump's
//!    `/*!40101 SET @OLD_X = @@X */` preamble and its restoring postamble).
//! 3. A CSV file goes through `LOAD DATA INFILE` (`FIELDS TERMINATED BY ',' OPTIONALLY
//!    ENCLOSED BY '"'`, `--header` skips the first line), which bulk-loads into an empty
//!    table and inserts transactionally otherwise (docs/sql.md, "Bulk loads").
//! 4. The first failing statement stops the import with its error and line; what ran before
//!    it stays (as `mysql < dump.sql` leaves it).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use shale_sql::{
    ColumnMeta, Instance, InstanceOptions, ResultSink, Session, SqlError, StatementStatus, Value,
};

use crate::output::Failure;
use crate::sql::input::StatementSplitter;

/// `shale import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The data directory (not one a running `shale serve` holds).
    #[arg(long, value_name = "DIR")]
    pub datadir: PathBuf,
    /// The file to load.
    pub file: PathBuf,
    /// What the file holds.
    #[arg(long, value_enum, default_value_t = Format::Dump)]
    pub format: Format,
    /// The table a CSV file goes into (`db.table`, or `table` with --database).
    #[arg(long, value_name = "TABLE")]
    pub table: Option<String>,
    /// The database statements run in (a dump usually says `USE` itself).
    #[arg(long, short = 'D', value_name = "DB")]
    pub database: Option<String>,
    /// The CSV file's first line is a header.
    #[arg(long)]
    pub header: bool,
    /// Insert a dump's rows in transactions instead of bulk loads.
    #[arg(long)]
    pub no_bulk_load: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A mysqldump file (SQL statements).
    Dump,
    /// Comma-separated values, fields optionally enclosed in double quotes.
    Csv,
}

/// Discards results; counts rows affected.
#[derive(Default)]
struct Counter {
    affected: u64,
}

impl ResultSink for Counter {
    fn ok(&mut self, status: &StatementStatus) -> Result<(), SqlError> {
        self.affected += status.affected_rows;
        Ok(())
    }
    fn columns(&mut self, _: &[ColumnMeta]) -> Result<(), SqlError> {
        Ok(())
    }
    fn row(&mut self, _: &[Value]) -> Result<(), SqlError> {
        Ok(())
    }
    fn end(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
}

/// Whether mysqldump's `statement` is one rule 2 skips before running it.
fn skipped(statement: &str) -> bool {
    let text = statement
        .trim()
        .trim_start_matches("/*!")
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start()
        .to_ascii_uppercase();
    text.starts_with("LOCK TABLES")
        || text.starts_with("UNLOCK TABLES")
        || (text.starts_with("ALTER TABLE")
            && (text.contains("DISABLE KEYS") || text.contains("ENABLE KEYS")))
}

fn sql_error(error: &SqlError, line: usize) -> Failure {
    Failure::error(format!(
        "ERROR {} ({}) at line {line}: {}",
        error.code, error.sqlstate, error.message
    ))
}

/// Counts bytes read, for the progress bar.
struct Counted<R> {
    inner: R,
    bar: indicatif::ProgressBar,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

fn run_dump(session: &mut Session, args: &ImportArgs) -> Result<u64, Failure> {
    let file = std::fs::File::open(&args.file)
        .map_err(|e| Failure::error(format!("cannot open {}: {e}", args.file.display())))?;
    let size = file.metadata().map_or(0, |m| m.len());
    let bar = crate::output::progress(size, "importing");
    let reader = BufReader::new(Counted {
        inner: file,
        bar: bar.clone(),
    });
    let mut counter = Counter::default();
    let bulk = !args.no_bulk_load;
    if bulk {
        session
            .execute("SET shale_bulk_load = 1", &mut counter)
            .map_err(|e| sql_error(&e, 0))?;
    }
    let mut splitter = StatementSplitter::default();
    let mut run = |session: &mut Session, statement: &str, line: usize| -> Result<(), Failure> {
        if skipped(statement) {
            return Ok(());
        }
        let before = counter.affected;
        match session.execute(statement, &mut counter) {
            Ok(()) => {
                // Rows are what INSERTs add; CREATE DATABASE's "1 row affected" is not one.
                if !first_word_is(statement, "INSERT") {
                    counter.affected = before;
                }
                Ok(())
            }
            Err(e) if e.code == 1193 && first_word_is_set(statement) => Ok(()),
            Err(e) => Err(sql_error(&e, line)),
        }
    };
    let mut number = 0;
    for line in reader.lines() {
        number += 1;
        let line = line.map_err(|e| {
            Failure::error(format!(
                "cannot read {} at line {number}: {e}",
                args.file.display()
            ))
        })?;
        for (statement, _) in splitter.push_line(&line) {
            run(session, &statement, number)?;
        }
    }
    if let Some(rest) = splitter.take_rest() {
        run(session, &rest, number)?;
    }
    if bulk {
        // Finishes the last table's load: its errors (a duplicate key) are the import's.
        session
            .execute("SET shale_bulk_load = 0", &mut counter)
            .map_err(|e| sql_error(&e, number))?;
    }
    bar.finish_and_clear();
    Ok(counter.affected)
}

fn first_word_is_set(statement: &str) -> bool {
    let text = statement
        .trim()
        .trim_start_matches("/*!")
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    text.get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("SET "))
}

fn run_csv(instance: &Instance, session: &mut Session, args: &ImportArgs) -> Result<u64, Failure> {
    let table = args
        .table
        .as_deref()
        .ok_or_else(|| Failure::error("--format csv needs --table".to_owned()))?;
    let absolute = std::path::absolute(&args.file)
        .map_err(|e| Failure::error(format!("{}: {e}", args.file.display())))?;
    let (Some(dir), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Err(Failure::error(format!(
            "{}: not a file",
            args.file.display()
        )));
    };
    // LOAD DATA reads server files only inside secure_file_priv: here, the file's folder.
    instance.set_secure_file_priv(Some(dir.to_path_buf()));
    let quote = |s: &str| format!("`{}`", s.replace('`', "``"));
    let target = match table.split_once('.') {
        Some((db, t)) => format!("{}.{}", quote(db), quote(t)),
        None => quote(table),
    };
    let statement = format!(
        "LOAD DATA INFILE '{}' INTO TABLE {target} FIELDS TERMINATED BY ',' OPTIONALLY \
         ENCLOSED BY '\"'{}",
        name.to_string_lossy()
            .replace('\\', "\\\\")
            .replace('\'', "''"),
        if args.header { " IGNORE 1 LINES" } else { "" }
    );
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(format!("loading {}", args.file.display()));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let mut counter = Counter::default();
    let result = session.execute(&statement, &mut counter);
    bar.finish_and_clear();
    result.map_err(|e| sql_error(&e, 1))?;
    Ok(counter.affected)
}

/// `shale import`.
pub fn run(args: &ImportArgs) -> Result<(), Failure> {
    let instance = open(&args.datadir)?;
    let started = std::time::Instant::now();
    let outcome = {
        let mut session = instance.session();
        if let Some(db) = &args.database {
            session.use_database(db).map_err(|e| sql_error(&e, 0))?;
        }
        match args.format {
            Format::Dump => run_dump(&mut session, args),
            Format::Csv => run_csv(&instance, &mut session, args),
        }
    };
    instance
        .close()
        .map_err(|e| Failure::error(format!("closing the data directory: {}", e.message)))?;
    let rows = outcome?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "imported {rows} rows from {} in {seconds:.1} s ({:.0} rows/s)",
        args.file.display(),
        rows as f64 / seconds.max(1e-9)
    );
    Ok(())
}

fn open(datadir: &Path) -> Result<std::sync::Arc<Instance>, Failure> {
    Instance::open(datadir, InstanceOptions::default()).map_err(|e| {
        Failure::error(format!(
            "cannot open the data directory {}: {} (is `shale serve` running on it? stop it \
             first)",
            datadir.display(),
            e.message
        ))
    })
}

/// Whether `statement` (maybe inside `/*!NNNNN ... */`) starts with `word`.
fn first_word_is(statement: &str, word: &str) -> bool {
    let text = statement
        .trim()
        .trim_start_matches("/*!")
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    text.get(..word.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysqldump_statements_that_mean_nothing_here_are_skipped() {
        assert!(skipped("LOCK TABLES `sbtest1` WRITE"));
        assert!(skipped("UNLOCK TABLES"));
        assert!(skipped("/*!40000 ALTER TABLE `sbtest1` DISABLE KEYS */"));
        assert!(skipped("/*!40000 ALTER TABLE `sbtest1` ENABLE KEYS */"));
        assert!(!skipped("ALTER TABLE t ADD INDEX k (k)"));
        assert!(!skipped("INSERT INTO `sbtest1` VALUES (1,2,'a','b')"));
        assert!(first_word_is_set(
            "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE */"
        ));
        assert!(!first_word_is_set("SELECT 1"));
    }
}
