//! Shale's SQL layer: MySQL's dialect in, result sets and MySQL errors out.
//!
//! An [`Instance`] is one open database directory shared by every [`Session`]; a session is
//! one client's state (current database, variables, open transaction, prepared statements).
//! Results stream to a [`ResultSink`]: the server turns them into packets, `shale sql` into
//! a printed table.

mod error;
mod instance;
mod result;
mod session;

pub use error::SqlError;
pub use instance::{Instance, InstanceOptions, UserRecord};
pub use result::{ColumnMeta, ColumnTypeCode, ResultSink, StatementStatus};
pub use session::{PreparedInfo, Session};
pub use shale_table::Value;
