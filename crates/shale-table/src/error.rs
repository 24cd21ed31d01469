//! The table layer's errors. Each variant maps to one `MySQL` error code in the SQL layer.

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
    /// `entry` is the key's values as `MySQL` prints them (`'1-a'`), `key` the index name.
    #[error("duplicate entry '{entry}' for key '{table}.{key}'")]
    DuplicateKey {
        table: String,
        key: String,
        entry: String,
    },
    /// A bulk load's primary keys fall in a range that holds rows already (`MyRocks`' rule).
    #[error("rows inserted during bulk load into '{table}' must not overlap existing rows")]
    BulkLoadOverlap { table: String },
    #[error("lock wait timeout exceeded; try restarting transaction")]
    LockWaitTimeout,
    /// A wait for a metadata lock was ended by the caller's
    /// [`LockWaiter`](crate::LockWaiter) (`MySQL`'s KILL QUERY).
    #[error("interrupted while waiting for a metadata lock")]
    Interrupted,
    #[error("deadlock found when trying to get lock; try restarting transaction")]
    Deadlock,
    /// A TIMESTAMP value outside '1970-01-01 00:00:01'..'2038-01-19 03:14:07' UTC; `value` is
    /// as given, in the transaction's time zone.
    #[error("TIMESTAMP value '{value}' for column '{column}' is out of range")]
    TimestampOutOfRange { column: String, value: String },
    /// A statement bound to a definition that a rewriting ALTER TABLE has since replaced
    /// (fence.rs); binding it again reaches the new definition.
    #[error("table definition of '{table}' has changed, please retry transaction")]
    TableDefChanged { table: String },
    /// A write to a table the session holds with LOCK TABLES ... READ (`MySQL`'s 1099).
    #[error("table '{table}' was locked with a READ lock and can't be updated")]
    TableLockedForRead { table: String },
    /// A table the session did not name in its LOCK TABLES while it holds table locks
    /// (`MySQL`'s 1100).
    #[error("table '{table}' was not locked with LOCK TABLES")]
    TableNotLocked { table: String },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("corruption: {0}")]
    Corruption(String),
    #[error(transparent)]
    Engine(shale_engine::Error),
}

impl From<shale_engine::Error> for Error {
    /// Lock timeouts and deadlocks become `MySQL`'s errors; a REPEATABLE READ write conflict
    /// (the row changed after the snapshot) is reported as a deadlock, as `MyRocks` does:
    /// the transaction is rolled back and should be retried.
    fn from(error: shale_engine::Error) -> Self {
        use shale_engine::TransactionError as T;
        match error {
            shale_engine::Error::Transaction(T::LockTimeout { .. }) => Error::LockWaitTimeout,
            shale_engine::Error::Transaction(T::Deadlock { .. } | T::SnapshotConflict { .. }) => {
                Error::Deadlock
            }
            other => Error::Engine(other),
        }
    }
}

impl From<shale_fs::Error> for Error {
    /// File errors of the table layer's own files (bulk loads' spill runs): as the engine's.
    fn from(error: shale_fs::Error) -> Self {
        Error::Engine(shale_engine::Error::Io(error))
    }
}

/// The table layer's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
