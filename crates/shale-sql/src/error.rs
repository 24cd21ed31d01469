//! MySQL errors: code, SQLSTATE and message, as clients expect them.
//!
//! Every error the SQL layer returns is built here, so the code, the SQLSTATE and the
//! message's shape stay MySQL's (`include/mysqld_error.h` numbers and texts).

/// An error as a MySQL client sees it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code} ({sqlstate}): {message}")]
pub struct SqlError {
    /// MySQL's error number (1064, 1146, ...).
    pub code: u16,
    /// Five characters (`42000`, `23000`, ...).
    pub sqlstate: &'static str,
    pub message: String,
}

impl SqlError {
    pub fn new(code: u16, sqlstate: &'static str, message: impl Into<String>) -> SqlError {
        SqlError {
            code,
            sqlstate,
            message: message.into(),
        }
    }

    /// 1064: the parser's complaint, pointing at the text from the bad token on.
    pub(crate) fn syntax(near: &str, line: usize) -> SqlError {
        let near: String = near.chars().take(80).collect();
        SqlError::new(
            1064,
            "42000",
            format!(
                "You have an error in your SQL syntax; check the manual that corresponds to your \
                 MySQL server version for the right syntax to use near '{near}' at line {line}"
            ),
        )
    }

    /// 1235: anything this version does not do.
    pub(crate) fn unsupported(what: impl AsRef<str>) -> SqlError {
        SqlError::new(
            1235,
            "42000",
            format!(
                "This version of Shale doesn't yet support '{}'",
                what.as_ref()
            ),
        )
    }

    pub(crate) fn no_database() -> SqlError {
        SqlError::new(1046, "3D000", "No database selected")
    }

    pub(crate) fn unknown_database(name: &str) -> SqlError {
        SqlError::new(1049, "42000", format!("Unknown database '{name}'"))
    }

    pub(crate) fn database_exists(name: &str) -> SqlError {
        SqlError::new(
            1007,
            "HY000",
            format!("Can't create database '{name}'; database exists"),
        )
    }

    pub(crate) fn drop_unknown_database(name: &str) -> SqlError {
        SqlError::new(
            1008,
            "HY000",
            format!("Can't drop database '{name}'; database doesn't exist"),
        )
    }

    pub(crate) fn table_exists(name: &str) -> SqlError {
        SqlError::new(1050, "42S01", format!("Table '{name}' already exists"))
    }

    pub(crate) fn unknown_table_drop(names: &str) -> SqlError {
        SqlError::new(1051, "42S02", format!("Unknown table '{names}'"))
    }

    pub(crate) fn no_such_table(database: &str, table: &str) -> SqlError {
        SqlError::new(
            1146,
            "42S02",
            format!("Table '{database}.{table}' doesn't exist"),
        )
    }

    pub(crate) fn unknown_column(name: &str, clause: &str) -> SqlError {
        SqlError::new(
            1054,
            "42S22",
            format!("Unknown column '{name}' in '{clause}'"),
        )
    }

    pub(crate) fn duplicate_entry(entry: &str, key: &str) -> SqlError {
        SqlError::new(
            1062,
            "23000",
            format!("Duplicate entry '{entry}' for key '{key}'"),
        )
    }

    pub(crate) fn not_null(column: &str) -> SqlError {
        SqlError::new(1048, "23000", format!("Column '{column}' cannot be null"))
    }

    pub(crate) fn column_count(row: usize) -> SqlError {
        SqlError::new(
            1136,
            "21S01",
            format!("Column count doesn't match value count at row {row}"),
        )
    }

    pub(crate) fn out_of_range(column: &str, row: usize) -> SqlError {
        SqlError::new(
            1264,
            "22003",
            format!("Out of range value for column '{column}' at row {row}"),
        )
    }

    pub(crate) fn data_too_long(column: &str, row: usize) -> SqlError {
        SqlError::new(
            1406,
            "22001",
            format!("Data too long for column '{column}' at row {row}"),
        )
    }

    pub(crate) fn incorrect_integer(value: &str, column: &str, row: usize) -> SqlError {
        SqlError::new(
            1366,
            "22007",
            format!("Incorrect integer value: '{value}' for column '{column}' at row {row}"),
        )
    }

    pub(crate) fn no_default(column: &str) -> SqlError {
        SqlError::new(
            1364,
            "HY000",
            format!("Field '{column}' doesn't have a default value"),
        )
    }

    pub(crate) fn unknown_system_variable(name: &str) -> SqlError {
        SqlError::new(1193, "HY000", format!("Unknown system variable '{name}'"))
    }

    pub(crate) fn wrong_param_count() -> SqlError {
        SqlError::new(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute")
    }

    pub(crate) fn unknown_prepared(id: u32) -> SqlError {
        SqlError::new(
            1243,
            "HY000",
            format!("Unknown prepared statement handler ({id}) given to mysqld_stmt_execute"),
        )
    }

    pub(crate) fn invalid_group() -> SqlError {
        SqlError::new(1111, "HY000", "Invalid use of group function")
    }

    pub(crate) fn lock_wait_timeout() -> SqlError {
        SqlError::new(
            1205,
            "HY000",
            "Lock wait timeout exceeded; try restarting transaction",
        )
    }

    pub(crate) fn deadlock() -> SqlError {
        SqlError::new(
            1213,
            "40001",
            "Deadlock found when trying to get lock; try restarting transaction",
        )
    }

    /// 1265 `Data truncated for column 'c' at row N`.
    pub(crate) fn data_truncated(column: &str, row: impl std::fmt::Display) -> SqlError {
        SqlError::new(
            1265,
            "01000",
            format!("Data truncated for column '{column}' at row {row}"),
        )
    }

    /// A statement bound to a definition a rewriting ALTER TABLE replaced (shale-table's
    /// fence.rs); `MySQL` says the same when a snapshot predates a table's definition.
    pub(crate) fn table_definition_changed() -> SqlError {
        SqlError::new(
            1412,
            "HY000",
            "Table definition has changed, please retry transaction",
        )
    }

    pub(crate) fn internal(detail: impl std::fmt::Display) -> SqlError {
        SqlError::new(1105, "HY000", format!("Unknown error: {detail}"))
    }

    /// Whether MySQL rolls back the whole transaction after this error (a deadlock victim).
    pub(crate) fn rolls_back_transaction(&self) -> bool {
        self.code == 1213 || self.code == 1205
    }
}

impl From<shale_table::Error> for SqlError {
    fn from(e: shale_table::Error) -> SqlError {
        use shale_table::Error as E;
        match e {
            E::NoSuchDatabase(db) => SqlError::unknown_database(&db),
            E::DatabaseExists(db) => SqlError::database_exists(&db),
            E::NoSuchTable { database, table } => SqlError::no_such_table(&database, &table),
            E::TableExists { table, .. } => SqlError::table_exists(&table),
            E::DuplicateKey { key, entry, .. } => SqlError::duplicate_entry(&entry, &key),
            E::BulkLoadOverlap { .. } => SqlError::new(
                1105,
                "HY000",
                "Rows inserted during bulk load must not overlap existing rows",
            ),
            // The SQL layer checks the range first, with the row number (timestamp.rs).
            E::TimestampOutOfRange { column, value } => SqlError::new(
                1292,
                "22007",
                format!("Incorrect datetime value: '{value}' for column '{column}' at row 1"),
            ),
            E::LockWaitTimeout => SqlError::lock_wait_timeout(),
            E::Interrupted => crate::interrupt::interrupted(),
            E::Deadlock => SqlError::deadlock(),
            E::TableDefChanged { .. } => SqlError::table_definition_changed(),
            E::TableLockedForRead { table } => SqlError::new(
                1099,
                "HY000",
                format!("Table '{table}' was locked with a READ lock and can't be updated"),
            ),
            E::TableNotLocked { table } => SqlError::new(
                1100,
                "HY000",
                format!("Table '{table}' was not locked with LOCK TABLES"),
            ),
            E::Engine(engine) => crate::storage_error::storage_error(&engine)
                .unwrap_or_else(|| SqlError::internal(engine)),
            other => SqlError::internal(other),
        }
    }
}
