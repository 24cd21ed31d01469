//! One open database directory, shared by every session: the store, the DDL generation that
//! invalidates prepared plans, connection ids, the `mysql.user` accounts and the privilege
//! cache (grants.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use shale_table::{
    Collation, ColumnDef, ColumnType, IndexDef, IsolationLevel, LockMode, Store, TableDef,
    TxnOptions, Value,
};

use crate::error::SqlError;
use crate::session::Session;

/// The version string (`@@version`, `VERSION()`).
pub const SERVER_VERSION: &str = "8.0.36-Shale";

/// How to open an [`Instance`].
#[derive(Debug, Clone, Default)]
pub struct InstanceOptions {
    pub store: shale_table::StoreOptions,
    /// The isolation level new sessions start with (MySQL's `--transaction-isolation`;
    /// REPEATABLE READ by default). `SET GLOBAL transaction_isolation` changes it later.
    pub transaction_isolation: IsolationLevel,
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
    pub(crate) store: Store,
    /// Raised by every DDL; a prepared statement planned under an older one is re-planned.
    generation: AtomicU64,
    next_connection_id: AtomicU64,
    /// Global values of system variables (`SET GLOBAL`): what new sessions start from.
    pub(crate) globals: Arc<Mutex<BTreeMap<String, Value>>>,
    /// Raised after every change to `globals`, so a reader that caches a value (the server's
    /// per-command timeouts) takes the mutex only when something changed.
    globals_version: AtomicU64,
    /// Every live session (SHOW PROCESSLIST, KILL).
    pub(crate) processes: Arc<crate::processlist::ProcessList>,
    /// The GLOBAL status counters (SHOW GLOBAL STATUS).
    pub(crate) counters: Arc<crate::status::StatusCounters>,
    /// When the instance opened (`Uptime`).
    pub(crate) started: std::time::Instant,
    /// The data directory and its file system (SET PERSIST's file).
    pub(crate) dir: std::path::PathBuf,
    pub(crate) fs: Arc<dyn shale_fs::FileSystem>,
    /// The general and slow-query logs, once opened (querylog.rs).
    pub(crate) logs: std::sync::OnceLock<crate::querylog::QueryLogs>,
    /// Every grant, rebuilt after each account statement (grants.rs invariant 1).
    grants: Mutex<Arc<crate::grants::Grants>>,
    /// Held by each account statement (CREATE USER, GRANT, ...) from its reads to the cache
    /// rebuild, so two of them never interleave.
    pub(crate) account_lock: Mutex<()>,
    /// Failed-login counts and temporary account locks (account_lock.rs).
    pub(crate) login_locks: crate::account_lock::LoginLocks,
    /// The only directory LOAD DATA INFILE reads server files from (`--secure-file-priv`);
    /// `None` (the default) refuses every server file, as MySQL's NULL does.
    secure_file_priv: Mutex<Option<PathBuf>>,
}

fn user_table() -> TableDef {
    let text = |name: &str, len: u32| ColumnDef {
        name: name.into(),
        ty: ColumnType::VarChar {
            len,
            collation: Collation::Utf8mb4Bin,
        },
        nullable: false,
        default: Some(Value::Bytes(Vec::new())),
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    TableDef {
        database: "mysql".into(),
        name: "user".into(),
        columns: vec![
            text("Host", 255),
            text("User", 128),
            text("plugin", 64),
            ColumnDef {
                name: "authentication_string".into(),
                ty: ColumnType::Text {
                    collation: Collation::Binary,
                },
                nullable: false,
                default: None,
                auto_increment: false,
                auto_timestamp: shale_table::AutoTimestamp::default(),
                generated: None,
            },
        ]
        .into_iter()
        .chain(crate::account_lock::user_columns())
        .collect(),
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: vec![0, 1],
            unique: true,
            index_id: 0,
        },
        indexes: Vec::new(),
        schema_version: 1,
        past_versions: Vec::new(),
    }
}

impl Instance {
    /// Opens (creating if missing) the database directory at `path`.
    pub fn open(
        path: impl AsRef<Path>,
        options: InstanceOptions,
    ) -> Result<Arc<Instance>, SqlError> {
        let isolation = options.transaction_isolation;
        let dir = path.as_ref().to_path_buf();
        let fs = Arc::clone(&options.store.engine.file_system);
        let max_open_files = options.store.engine.max_open_files;
        shale_table::install_virtual_columns(Arc::new(crate::gencols::Evaluator));
        let store = Store::open(path, options.store)?;
        let catalog = store.catalog();
        if !catalog.databases.contains_key("mysql") {
            store.create_database("mysql")?;
        }
        if catalog.table("mysql", "user").is_none() {
            store.create_table(user_table())?;
        }
        crate::account_lock::upgrade_user_table(&store)?;
        // A data directory from before privileges existed: its accounts keep full access.
        let upgrading = catalog.table("mysql", "global_grants").is_none();
        for def in crate::grants::table_defs() {
            if catalog.table("mysql", &def.name).is_none() {
                store.create_table(def)?;
            }
        }
        let mut globals = BTreeMap::new();
        globals.insert(
            "transaction_isolation".to_string(),
            Value::Bytes(
                crate::variables::isolation_name(isolation)
                    .as_bytes()
                    .to_vec(),
            ),
        );
        let instance = Arc::new(Instance {
            store,
            generation: AtomicU64::new(1),
            next_connection_id: AtomicU64::new(1),
            globals: Arc::new(Mutex::new(globals)),
            globals_version: AtomicU64::new(1),
            processes: Arc::default(),
            counters: Arc::default(),
            started: std::time::Instant::now(),
            dir,
            fs,
            logs: std::sync::OnceLock::new(),
            secure_file_priv: Mutex::new(None),
            grants: Mutex::new(Arc::default()),
            account_lock: Mutex::new(()),
            login_locks: crate::account_lock::LoginLocks::default(),
        });
        if upgrading {
            for account in instance.accounts()? {
                instance.grant_all(&account.user, &account.host)?;
            }
        }
        instance.reload_grants()?;
        instance.upgrade_temporary_table_grants()?;
        crate::engine_settings::publish(&instance);
        // Fixed at open (read-only): -1 for no limit, as `rocksdb_max_open_files` shows it.
        let open_files = if max_open_files == shale_engine::UNLIMITED_OPEN_FILES {
            -1
        } else {
            i64::try_from(max_open_files).unwrap_or(-1)
        };
        instance.set_global("shale_max_open_files", Value::Int(open_files));
        Ok(instance)
    }

    /// Whether `account` is in `mysql.user` exactly (no `%` fallback).
    pub(crate) fn account_exists(
        &self,
        account: &crate::grants::Account,
    ) -> Result<bool, SqlError> {
        let table = self.users()?;
        let mut txn = self.store.begin(TxnOptions::default())?;
        let key = [
            Value::Bytes(account.host.as_bytes().to_vec()),
            Value::Bytes(account.user.as_bytes().to_vec()),
        ];
        Ok(txn.get(&table, &key, LockMode::None)?.is_some())
    }

    /// Every account in `mysql.user`.
    pub(crate) fn accounts(&self) -> Result<Vec<crate::grants::Account>, SqlError> {
        let table = self.users()?;
        let mut txn = self.store.begin(TxnOptions::default())?;
        let mut cursor = txn.scan(
            &table,
            shale_table::IndexChoice::Primary,
            shale_table::KeyRange::all(),
            false,
            LockMode::None,
        )?;
        let mut out = Vec::new();
        while let Some(row) = cursor.next_row()? {
            let text = |i: usize| match row.get(i) {
                Some(Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
                _ => String::new(),
            };
            out.push(crate::grants::Account {
                user: text(1),
                host: text(0),
            });
        }
        Ok(out)
    }

    /// Grants `user`@`host` every privilege with GRANT OPTION (what root@localhost gets at
    /// initialization).
    pub fn grant_all(&self, user: &str, host: &str) -> Result<(), SqlError> {
        let _guard = self
            .account_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let account = crate::grants::Account {
            user: user.to_owned(),
            host: host.to_owned(),
        };
        let old = self.grants().global(&account);
        let mut txn = self.store.begin(TxnOptions::default())?;
        let all = crate::grants::Privs(crate::grants::ALL_GLOBAL | crate::grants::GRANT_OPTION);
        crate::grants::write_global(&self.store, &mut txn, &account, old, all)?;
        txn.commit()?;
        self.reload_grants()
    }

    /// A data directory from before the CREATE TEMPORARY TABLES privilege (no grant holds it
    /// anywhere): every global or database grant of CREATE gains it, as MySQL's upgrade sets
    /// `Create_tmp_table_priv` from `Create_priv`, so accounts (root among them) keep making
    /// temporary tables. A directory made since has it in root's grants, so this runs once.
    fn upgrade_temporary_table_grants(&self) -> Result<(), SqlError> {
        use crate::grants::{Privs, CREATE, CREATE_TEMPORARY_TABLES};
        let grants = self.grants();
        let (globals, dbs) = grants.holding(CREATE);
        if grants.anyone_holds(CREATE_TEMPORARY_TABLES) || (globals.is_empty() && dbs.is_empty()) {
            return Ok(());
        }
        {
            let _guard = self
                .account_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut txn = self.store.begin(TxnOptions::default())?;
            for (account, old) in globals {
                let new = Privs(old.0 | CREATE_TEMPORARY_TABLES);
                crate::grants::write_global(&self.store, &mut txn, &account, old, new)?;
            }
            for (account, db, old) in dbs {
                let new = Privs(old.0 | CREATE_TEMPORARY_TABLES);
                crate::grants::write_db(&self.store, &mut txn, &account, &db, new)?;
            }
            txn.commit()?;
        }
        self.reload_grants()
    }

    /// The grants as of the last account statement.
    pub(crate) fn grants(&self) -> Arc<crate::grants::Grants> {
        Arc::clone(
            &self
                .grants
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Rebuilds the grant cache from the tables (FLUSH PRIVILEGES, and after every change).
    pub(crate) fn reload_grants(&self) -> Result<(), SqlError> {
        let mut txn = self.store.begin(TxnOptions::default())?;
        let fresh = crate::grants::load(&self.store, &mut txn)?;
        txn.rollback();
        *self
            .grants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(fresh);
        Ok(())
    }

    /// Sets the directory LOAD DATA INFILE may read server files from (MySQL's read-only
    /// `secure_file_priv`, set at startup); `None` refuses them all.
    pub fn set_secure_file_priv(&self, dir: Option<PathBuf>) {
        *self
            .secure_file_priv
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = dir;
    }

    pub(crate) fn secure_file_priv(&self) -> Option<PathBuf> {
        self.secure_file_priv
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Sets the global `local_infile` (`shale serve --local-infile`).
    pub fn set_local_infile(&self, on: bool) {
        self.globals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert("local_infile".into(), Value::Int(i64::from(on)));
        self.globals_changed();
    }

    /// Whether LOAD DATA LOCAL is allowed: the global `local_infile` (OFF by default, as in
    /// MySQL 8; `SET GLOBAL local_infile = 1`).
    pub(crate) fn local_infile(&self) -> bool {
        self.globals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get("local_infile")
            .is_some_and(|v| match v {
                Value::Bytes(b) => {
                    let text = String::from_utf8_lossy(b);
                    ["on", "true", "1"]
                        .iter()
                        .any(|w| text.eq_ignore_ascii_case(w))
                }
                other => crate::value::truth(other).unwrap_or(false),
            })
    }

    /// A new session (one client connection), with the next connection id.
    pub fn session(self: &Arc<Self>) -> Session {
        let id = self.next_connection_id.fetch_add(1, Ordering::Relaxed);
        Session::new(Arc::clone(self), id)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn bump_generation(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn users(&self) -> Result<Arc<TableDef>, SqlError> {
        self.store
            .catalog()
            .table("mysql", "user")
            .cloned()
            .ok_or_else(|| SqlError::no_such_table("mysql", "user"))
    }

    /// The account `user`@`host` (falling back to `user`@`%`), for authentication.
    pub fn lookup_user(&self, user: &str, host: &str) -> Result<Option<UserRecord>, SqlError> {
        let table = self.users()?;
        let mut txn = self.store.begin(TxnOptions::default())?;
        for h in [host, "%"] {
            let key = [
                Value::Bytes(h.as_bytes().to_vec()),
                Value::Bytes(user.as_bytes().to_vec()),
            ];
            if let Some(row) = txn.get(&table, &key, LockMode::None)? {
                // The table is SQL-visible: read it defensively (someone may have changed it).
                let text = |i: usize| match row.get(i) {
                    Some(Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
                    Some(other) => crate::value::display(other),
                    None => String::new(),
                };
                return Ok(Some(UserRecord {
                    host: text(0),
                    user: text(1),
                    plugin: text(2),
                    authentication_string: match row.get(3) {
                        Some(Value::Bytes(b)) => b.clone(),
                        _ => Vec::new(),
                    },
                }));
            }
        }
        Ok(None)
    }

    /// The answer to a login of `user`@`account_host` (the matched account) from
    /// `client_host` whose password check came out `verified`: `Ok` to let it in (or, for a
    /// wrong password, to send the usual 1045), else the error to send instead: 3955 for an
    /// account temporarily locked by failed logins, 3118 for one locked with ACCOUNT LOCK
    /// (account_lock.rs).
    pub fn check_login(
        &self,
        user: &str,
        account_host: &str,
        client_host: &str,
        verified: bool,
    ) -> Result<(), SqlError> {
        let table = self.users()?;
        let mut txn = self.store.begin(TxnOptions::default())?;
        let key = [
            Value::Bytes(account_host.as_bytes().to_vec()),
            Value::Bytes(user.as_bytes().to_vec()),
        ];
        let policy = txn
            .get(&table, &key, LockMode::None)?
            .as_deref()
            .map(crate::account_lock::Policy::of_row)
            .unwrap_or_default();
        self.login_locks.after_check(
            (user, account_host),
            client_host,
            policy,
            verified,
            std::time::Instant::now(),
        )
    }

    /// Whether `user`@`account_host` holds SUPER or CONNECTION_ADMIN globally: MySQL's test
    /// for the one connection allowed past `max_connections`.
    pub fn is_connection_admin(&self, user: &str, account_host: &str) -> bool {
        let account = crate::grants::Account {
            user: user.to_owned(),
            host: account_host.to_owned(),
        };
        self.grants()
            .global(&account)
            .any(crate::grants::SUPER | crate::grants::CONNECTION_ADMIN)
    }

    /// Creates or replaces an account (server initialization).
    pub fn put_user(&self, record: &UserRecord) -> Result<(), SqlError> {
        let table = self.users()?;
        let mut txn = self.store.begin(TxnOptions::default())?;
        let mut row = vec![
            Value::Bytes(record.host.as_bytes().to_vec()),
            Value::Bytes(record.user.as_bytes().to_vec()),
            Value::Bytes(record.plugin.as_bytes().to_vec()),
            Value::Bytes(record.authentication_string.clone()),
        ];
        // The account's locking settings stay as they were.
        let old = txn.get(&table, &row[..2], LockMode::Exclusive)?;
        let policy = old
            .as_deref()
            .map(crate::account_lock::Policy::of_row)
            .unwrap_or_default();
        row.extend(policy.stored());
        match old {
            Some(old) => txn.update(&table, &old, row)?,
            None => txn.insert(&table, row)?,
        }
        txn.commit()?;
        Ok(())
    }

    /// The GLOBAL status counters, which the server adds its own figures to (connections,
    /// bytes on the wire).
    pub fn status_counters(&self) -> &Arc<crate::status::StatusCounters> {
        &self.counters
    }

    /// A global variable's value as a whole number: what `SET GLOBAL` or
    /// [`Instance::set_global`] stored (None when neither did).
    pub fn global_number(&self, name: &str) -> Option<u64> {
        let globals = self
            .globals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        globals.get(name).and_then(crate::settings::as_u64)
    }

    /// Sets a global variable's value (the server's startup settings, so that
    /// `@@global.max_connections` shows what the server uses).
    pub fn set_global(&self, name: &str, value: Value) {
        self.globals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), value);
        self.globals_changed();
    }

    /// Switches the background re-estimate of index statistics on or off and shows it as
    /// `@@global.shale_stats_auto_recalc` (settings.rs); what SET GLOBAL of it does.
    pub fn set_stats_auto_recalc(&self, on: bool) {
        self.store.set_stats_auto_recalc(on);
        self.set_global(
            crate::settings::STATS_AUTO_RECALC,
            Value::Int(i64::from(on)),
        );
    }

    /// Marks the global variables changed (after the change is made).
    pub(crate) fn globals_changed(&self) {
        self.globals_version.fetch_add(1, Ordering::Release);
    }

    /// A number that changes whenever a global variable does: a cached value read with
    /// [`global_number`](Self::global_number) under an equal version is still current.
    pub fn globals_version(&self) -> u64 {
        self.globals_version.load(Ordering::Acquire)
    }

    /// Every GLOBAL status variable now, by name (SHOW GLOBAL STATUS, the server's /metrics).
    pub fn global_status(&self) -> Vec<(String, String)> {
        crate::status::global_variables(self)
    }

    /// Closes the store cleanly once every session is gone (fails if one is still open).
    pub fn close(self: Arc<Self>) -> Result<(), SqlError> {
        match Arc::try_unwrap(self) {
            Ok(instance) => Ok(instance.store.close()?),
            Err(_) => Err(SqlError::new(
                1105,
                "HY000",
                "Cannot close the instance while sessions are open",
            )),
        }
    }
}
