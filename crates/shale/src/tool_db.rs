//! `shale tool get | put | delete | scan DIR`: quick reads and writes through the engine, like
//! `ldb get/put/delete/scan` of `RocksDB`.
//!
//! `get` and `scan` open it read-only (`Db::open_read_only`): they work beside a running
//! writer, see its state as of their open, and never change a file. `put` and `delete` open it
//! normally (recovery included), so they refuse while another process holds its LOCK, and say
//! so. None creates a database: a directory without `CURRENT` is an error. Keys and values are given and shown escaped like `tool sst` (`\xNN`), or as hex
//! with `--hex`.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{json, Value};
use shale_engine::inspect::{CURRENT_FILE_NAME, LOCK_FILE_NAME};
use shale_engine::{Db, DbIterator, Keyspace, Options, ReadOptions, DEFAULT_KEYSPACE};

use crate::output::{print_json, Failure, Render};

/// What every one of these tools takes.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The database directory.
    pub dir: PathBuf,
    /// The keyspace to use.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_KEYSPACE, global = true)]
    pub keyspace: String,
    /// Give and show keys and values as hex.
    #[arg(long, global = true)]
    pub hex: bool,
    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Create the database if the directory holds none (commands that write only), like
    /// ldb's flag of the same name.
    #[arg(long = "create_if_missing", global = true)]
    pub create_if_missing: bool,
    #[command(flatten)]
    pub recovery: crate::output::RecoveryArgs,
}

/// Flags of `shale tool get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The key (escaped, or hex with --hex).
    pub key: String,
}

/// Flags of `shale tool put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The key (escaped, or hex with --hex).
    pub key: String,
    /// The value (escaped, or hex with --hex).
    pub value: String,
}

/// Flags of `shale tool delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The key (escaped, or hex with --hex).
    pub key: String,
}

/// Flags of `shale tool scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// First key (inclusive).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// Key to stop before (exclusive).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
    /// Print at most N entries.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Walk from the last key backwards.
    #[arg(long)]
    pub reverse: bool,
}

/// An open database and the keyspace the command works on.
pub(crate) struct Opened {
    pub(crate) db: Db,
    pub(crate) keyspace: Keyspace,
}

/// What a command runs on: an open database and the keyspace its `--keyspace` names (one
/// open database serves many of these in `shale tool shell`).
pub(crate) struct Target<'a> {
    pub(crate) db: &'a Db,
    pub(crate) keyspace: Keyspace,
}

impl Target<'_> {
    /// `db`'s keyspace `name`, or an error listing the keyspaces it has.
    pub(crate) fn keyspace<'a>(db: &'a Db, name: &str, dir: &Path) -> Result<Target<'a>, Failure> {
        match db.keyspace(name) {
            Some(keyspace) => Ok(Target { db, keyspace }),
            None => Err(Failure::error(format!(
                "no keyspace {name:?} in {}; it has: {}",
                dir.display(),
                db.keyspace_names().join(", ")
            ))),
        }
    }
}

impl Opened {
    pub(crate) fn target(&self) -> Target<'_> {
        Target {
            db: &self.db,
            keyspace: self.keyspace.clone(),
        }
    }

    pub(crate) fn close(self) -> Result<(), Failure> {
        drop(self.keyspace);
        Ok(self.db.close()?)
    }
}

/// The message for a database whose LOCK another process holds.
fn locked_message(dir: &Path) -> String {
    format!(
        "{} is in use: another process holds the database (its {LOCK_FILE_NAME} file is \
         locked). Stop that process first, or use the tools that only read: \
         `shale tool get`, `scan`, `lsm`, `manifest`, `wal`, `verify`",
        dir.display()
    )
}

/// Whether a tool writes (opens the database normally) or only reads (opens it read-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    ReadOnly,
    ReadWrite,
}

/// Opens the database in `args.dir`, and finds the keyspace. Creates the database only for a
/// writing command given `--create_if_missing`.
pub(crate) fn open(args: &DbArgs, access: Access) -> Result<Opened, Failure> {
    let create = args.create_if_missing && access == Access::ReadWrite;
    if !create && !args.dir.join(CURRENT_FILE_NAME).exists() {
        return Err(crate::output::missing_current(&args.dir));
    }
    let options = Options {
        create_if_missing: create,
        wal_recovery_mode: args.recovery.wal_recovery_mode,
        ..Options::default()
    };
    let db = match access {
        Access::ReadOnly => Db::open_read_only(&args.dir, options),
        Access::ReadWrite => Db::open(&args.dir, options),
    }
    .map_err(|e| match e {
        shale_engine::Error::Io(shale_fs::Error::Locked { .. }) => {
            Failure::error(locked_message(&args.dir))
        }
        other => Failure::from(other),
    })?;
    let Some(keyspace) = db.keyspace(&args.keyspace) else {
        let names = db.keyspace_names().join(", ");
        let _ = db.close();
        return Err(Failure::error(format!(
            "no keyspace {:?} in {}; it has: {names}",
            args.keyspace,
            args.dir.display()
        )));
    };
    Ok(Opened { db, keyspace })
}

/// Runs `shale tool get`: prints the value, or fails (exit 1) when the key is absent.
pub fn run_get(args: &GetArgs) -> Result<(), Failure> {
    let opened = open(&args.db, Access::ReadOnly)?;
    let result = exec_get(&opened.target(), args);
    opened.close()?;
    result
}

/// `get` on an open database.
pub(crate) fn exec_get(target: &Target<'_>, args: &GetArgs) -> Result<(), Failure> {
    let render = Render { hex: args.db.hex };
    let key = render.parse_key(&args.key, "KEY")?;
    let value = target.keyspace.get(&key)?;
    if args.db.json {
        print_json(&json!({
            "keyspace": args.db.keyspace,
            "key": render.bytes_unquoted(&key),
            "found": value.is_some(),
            "value": value.as_deref().map(|v| render.bytes_unquoted(v)),
        }))?;
    } else if let Some(v) = &value {
        let mut out = io::stdout().lock();
        writeln!(out, "{}", render.bytes(v))?;
        out.flush()?;
    }
    if value.is_none() {
        return Err(Failure::error(format!(
            "key {} not found in keyspace {:?}",
            render.bytes(&key),
            args.db.keyspace
        )));
    }
    Ok(())
}

/// Runs `shale tool put`.
pub fn run_put(args: &PutArgs) -> Result<(), Failure> {
    let opened = open(&args.db, Access::ReadWrite)?;
    let result = exec_put(&opened.target(), args);
    opened.close()?;
    result
}

/// `put` on an open database.
pub(crate) fn exec_put(target: &Target<'_>, args: &PutArgs) -> Result<(), Failure> {
    let render = Render { hex: args.db.hex };
    let key = render.parse_key(&args.key, "KEY")?;
    let value = render.parse_key(&args.value, "VALUE")?;
    target.keyspace.put(&key, &value)?;
    let seqno = target.keyspace.latest_seqno();
    report_write(&args.db, "put", &key, Some(&value), seqno)
}

/// Runs `shale tool delete`.
pub fn run_delete(args: &DeleteArgs) -> Result<(), Failure> {
    let opened = open(&args.db, Access::ReadWrite)?;
    let result = exec_delete(&opened.target(), args);
    opened.close()?;
    result
}

/// `delete` on an open database.
pub(crate) fn exec_delete(target: &Target<'_>, args: &DeleteArgs) -> Result<(), Failure> {
    let render = Render { hex: args.db.hex };
    let key = render.parse_key(&args.key, "KEY")?;
    target.keyspace.delete(&key)?;
    let seqno = target.keyspace.latest_seqno();
    report_write(&args.db, "delete", &key, None, seqno)
}

fn report_write(
    args: &DbArgs,
    op: &str,
    key: &[u8],
    value: Option<&[u8]>,
    seqno: u64,
) -> Result<(), Failure> {
    let render = Render { hex: args.hex };
    if args.json {
        return print_json(&json!({
            "op": op,
            "keyspace": args.keyspace,
            "key": render.bytes_unquoted(key),
            "value": value.map(|v| render.bytes_unquoted(v)),
            "seqno": seqno,
        }));
    }
    let mut out = io::stdout().lock();
    match value {
        Some(v) => writeln!(
            out,
            "{op} {} => {} in keyspace {:?} at seqno {seqno}",
            render.bytes(key),
            render.bytes(v),
            args.keyspace
        )?,
        None => writeln!(
            out,
            "{op} {} in keyspace {:?} at seqno {seqno}",
            render.bytes(key),
            args.keyspace
        )?,
    }
    out.flush()?;
    Ok(())
}

/// Runs `shale tool scan`.
pub fn run_scan(args: &ScanArgs) -> Result<(), Failure> {
    let opened = open(&args.db, Access::ReadOnly)?;
    let result = exec_scan(&opened.target(), args);
    opened.close()?;
    result
}

/// `scan` on an open database.
pub(crate) fn exec_scan(target: &Target<'_>, args: &ScanArgs) -> Result<(), Failure> {
    let render = Render { hex: args.db.hex };
    let parse = |text: &Option<String>, flag| text.as_deref().map(|t| render.parse_key(t, flag));
    let lower = parse(&args.from, "--from").transpose()?;
    let upper = parse(&args.to, "--to").transpose()?;
    let iter = target.keyspace.iterator(ReadOptions {
        lower_bound: lower,
        upper_bound: upper,
        skip_cache_fill: true,
        ..ReadOptions::default()
    })?;
    scan(iter, args, render)
}

fn scan(mut iter: DbIterator, args: &ScanArgs, render: Render) -> Result<(), Failure> {
    let mut out = BufWriter::new(io::stdout().lock());
    let mut entries: Vec<Value> = Vec::new();
    let mut count = 0u64;
    if args.reverse {
        iter.seek_to_last();
    } else {
        iter.seek_to_first();
    }
    while iter.valid() && args.limit.is_none_or(|l| count < l) {
        if args.db.json {
            entries.push(json!({
                "key": render.bytes_unquoted(iter.key()),
                "value": render.bytes_unquoted(iter.value()),
            }));
        } else {
            writeln!(
                out,
                "{} => {}",
                render.bytes(iter.key()),
                render.bytes(iter.value())
            )?;
        }
        count += 1;
        if args.reverse {
            iter.prev();
        } else {
            iter.next();
        }
    }
    iter.status()?;
    if args.db.json {
        out.flush()?;
        drop(out);
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "count": count,
            "entries": entries,
        }));
    }
    out.flush()?;
    Ok(())
}
