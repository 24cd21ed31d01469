//! The table layer's errors. Each variant maps to one MySQL error code in the SQL layer.

/// A table-layer error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown database '{0}'")]
    NoSuchDatabase(String),
    #[error("database '{0}' exists")]
    DatabaseExists(String),
    #[error("table '{database}.{table}' doesn't exist")]
    NoSuchTable { database: String, table: String },
    #[error("table '{database}.{table}' already exists")]
    TableExists { database: String, table: String },
    /// `entry` is the key's values as MySQL prints them (`'1-a'`), `key` the index name.
    #[error("duplicate entry '{entry}' for key '{table}.{key}'")]
    DuplicateKey {
        table: String,
        key: String,
        entry: String,
    },
    #[error("lock wait timeout exceeded; try restarting transaction")]
    LockWaitTimeout,
    #[error("deadlock found when trying to get lock; try restarting transaction")]
    Deadlock,
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("corruption: {0}")]
    Corruption(String),
    #[error(transparent)]
    Engine(#[from] shale_engine::Error),
}

/// The table layer's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
