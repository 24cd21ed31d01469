//! The `RocksDB` `ldb` commands that work on one open database: `shale tool compact | flush |
//! keyspace | count | approx-size | property | delete-range | batch-put | dump | load`
//! (docs/operations.md "Everyday commands"). `get`, `put`, `delete` and `scan` are in
//! `tool_db`; the interactive `shell` (`shell`) runs all of them as lines over one open
//! database.
//!
//! Every command is split in two: the flags (a clap `Args`, the database directory first) and
//! an `exec` that runs on an already-open database, so the shell parses a line into the very
//! same flags and runs it without reopening.

mod admin;
pub mod dump;
mod property;
pub mod shell;
mod write_sst;

use std::io::Write as _;

use clap::Subcommand;

use crate::output::Failure;
use crate::tool_db::{open, Access, DbArgs, Target};

pub use admin::{
    BatchPutArgs, CompactArgs, DeleteRangeArgs, FlushArgs, KeyspaceAction, KeyspaceArgs, RangeArgs,
};
pub use dump::{DumpArgs, LoadArgs};
pub use property::PropertyArgs;
pub use write_sst::WriteSstArgs;

/// `shale tool ...`: the commands of this module.
#[derive(Debug, Subcommand)]
pub enum OpsCommand {
    /// Compact a key range of a keyspace (default: all of it) to the bottom of the tree.
    Compact(CompactArgs),
    /// Write every keyspace's memtable out as table files.
    Flush(FlushArgs),
    /// List, create or drop keyspaces.
    Keyspace(KeyspaceArgs),
    /// Count the keys in a range of a keyspace.
    Count(RangeArgs),
    /// About how many bytes of table data a key range holds (memtables not counted).
    ApproxSize(RangeArgs),
    /// Print a named statistic of the database (`--list` names them).
    Property(PropertyArgs),
    /// Delete every key in [FROM, TO) with one range tombstone.
    DeleteRange(DeleteRangeArgs),
    /// Put several keys in one atomic batch: KEY VALUE [KEY VALUE ...].
    BatchPut(BatchPutArgs),
    /// Write a keyspace to a portable dump file (docs/format/dump.md).
    Dump(DumpArgs),
    /// Load a dump file (from `dump`) into a keyspace.
    Load(LoadArgs),
    /// Build an external table file from a dump or a CSV file, for `shale tool ingest`.
    WriteSst(WriteSstArgs),
    /// An interactive shell over one open database: get, put, delete, scan and the
    /// commands that work on a database (count, compact, keyspace, dump ...), as lines.
    Shell(shell::ShellArgs),
}

impl OpsCommand {
    /// The database flags of a command that opens one (all but `write-sst` and `shell`).
    pub(crate) fn db_args(&self) -> Option<&DbArgs> {
        match self {
            OpsCommand::Compact(a) => Some(&a.db),
            OpsCommand::Flush(a) => Some(&a.db),
            OpsCommand::Keyspace(a) => Some(&a.db),
            OpsCommand::Count(a) | OpsCommand::ApproxSize(a) => Some(&a.db),
            OpsCommand::Property(a) => Some(&a.db),
            OpsCommand::DeleteRange(a) => Some(&a.db),
            OpsCommand::BatchPut(a) => Some(&a.db),
            OpsCommand::Dump(a) => Some(&a.db),
            OpsCommand::Load(a) => Some(&a.db),
            OpsCommand::WriteSst(_) | OpsCommand::Shell(_) => None,
        }
    }

    /// Whether the command changes the database (it then opens it normally, taking its LOCK).
    fn access(&self) -> Access {
        match self {
            OpsCommand::Count(_)
            | OpsCommand::ApproxSize(_)
            | OpsCommand::Property(_)
            | OpsCommand::Dump(_) => Access::ReadOnly,
            OpsCommand::Keyspace(a) if matches!(a.action, KeyspaceAction::List) => Access::ReadOnly,
            _ => Access::ReadWrite,
        }
    }

    /// Runs the command on the open database (the shell's path; `shell` itself is refused).
    pub(crate) fn exec(&self, opened: &Target<'_>) -> Result<(), Failure> {
        match self {
            OpsCommand::Compact(a) => admin::compact(opened, a),
            OpsCommand::Flush(a) => admin::flush(opened, a),
            OpsCommand::Keyspace(a) => admin::keyspace(opened, a),
            OpsCommand::Count(a) => admin::count(opened, a),
            OpsCommand::ApproxSize(a) => admin::approx_size(opened, a),
            OpsCommand::Property(a) => property::run(opened, a),
            OpsCommand::DeleteRange(a) => admin::delete_range(opened, a),
            OpsCommand::BatchPut(a) => admin::batch_put(opened, a),
            OpsCommand::Dump(a) => dump::dump(opened, a),
            OpsCommand::Load(a) => dump::load(opened, a),
            OpsCommand::WriteSst(a) => write_sst::run(a),
            OpsCommand::Shell(_) => Err(Failure::error("the shell is already running")),
        }
    }
}

/// Prints `text` and a newline on stdout; a closed stdout (`| head`) is
/// [`Failure::BrokenPipe`], which ends the command quietly.
pub(crate) fn say(text: impl std::fmt::Display) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// Runs `shale tool <command>` for a command of this module.
pub fn run(command: &OpsCommand) -> Result<(), Failure> {
    if let OpsCommand::Shell(args) = command {
        return shell::run(args);
    }
    let Some(db) = command.db_args() else {
        return command.exec_without_db();
    };
    let opened = open(db, command.access())?;
    let result = command.exec(&opened.target());
    let closed = opened.close();
    result?;
    closed
}

impl OpsCommand {
    pub(crate) fn exec_without_db(&self) -> Result<(), Failure> {
        match self {
            OpsCommand::WriteSst(a) => write_sst::run(a),
            _ => Err(Failure::error("this command needs a database")),
        }
    }
}
