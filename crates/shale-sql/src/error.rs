//! MySQL errors: code, SQLSTATE and message, as clients expect them.

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
