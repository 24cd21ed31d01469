//! One open database directory, shared by every session.

use std::path::Path;
use std::sync::Arc;

use crate::error::SqlError;
use crate::session::Session;

/// How to open an [`Instance`].
#[derive(Debug, Clone, Default)]
pub struct InstanceOptions {
    pub store: shale_table::StoreOptions,
}

/// A user account as authentication needs it (`mysql.user`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub user: String,
    pub host: String,
    /// `mysql_native_password` or `caching_sha2_password`.
    pub plugin: String,
    /// The plugin's stored hash (never the password).
    pub authentication_string: Vec<u8>,
}

/// The shared state of every session: the store, global variables, caches.
#[derive(Debug)]
pub struct Instance {
    _private: (),
}

impl Instance {
    /// Opens (creating if missing) the database directory at `path`.
    pub fn open(
        path: impl AsRef<Path>,
        options: InstanceOptions,
    ) -> Result<Arc<Instance>, SqlError> {
        let _ = (path, options);
        todo!()
    }

    /// A new session (one client connection).
    pub fn session(self: &Arc<Self>) -> Session {
        todo!()
    }

    /// The account `user`@`host`, for authentication.
    pub fn lookup_user(&self, user: &str, host: &str) -> Result<Option<UserRecord>, SqlError> {
        let _ = (user, host);
        todo!()
    }

    /// Creates or replaces an account (server initialization).
    pub fn put_user(&self, record: &UserRecord) -> Result<(), SqlError> {
        let _ = record;
        todo!()
    }

    /// Closes the store cleanly once every session is gone.
    pub fn close(self: Arc<Self>) -> Result<(), SqlError> {
        todo!()
    }
}
