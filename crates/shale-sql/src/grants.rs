//! Privileges: what each account may do, kept in three system tables of the `mysql` database
//! (docs/format/privileges.md) and cached in memory for the per-statement checks.
//!
//! - `mysql.global_grants (USER, HOST, PRIV)`: one row per global privilege, `GRANT OPTION`
//!   included (MySQL keeps static ones in `mysql.user` columns; Shale keeps all here).
//! - `mysql.db (Host, Db, User, Db_priv)`: database-level privileges as a comma-separated set
//!   (`Select,Insert,Grant`), the way MySQL's `mysql.tables_priv` spells its set column.
//! - `mysql.tables_priv (Host, Db, User, Table_name, Table_priv)`: table-level privileges.
//!
//! Invariants:
//! 1. The cache ([`Grants`]) is rebuilt from the tables after every committed change, under
//!    the instance's account lock, so it always equals the tables' committed state; sessions
//!    read it at every statement, so a GRANT or REVOKE applies to open sessions at their next
//!    statement.
//! 2. Privileges are keyed by the account (user and the account's host pattern, as in
//!    `mysql.user`), never by the client's address.
//! 3. A row with an empty privilege set is deleted, never stored.

use std::collections::HashMap;
use std::sync::Arc;

use shale_table::{
    Collation, ColumnDef, ColumnType, IndexChoice, IndexDef, KeyRange, LockMode, Store, TableDef,
    TableTxn, Value,
};

use crate::error::SqlError;

/// A set of privileges (bits of [`PRIVILEGES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Privs(pub u32);

/// Where a privilege may be granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// `*.*` only.
    Global,
    /// `*.*` and `db.*` (CREATE TEMPORARY TABLES: 1144 on a table).
    Database,
    /// `*.*`, `db.*` and `db.table`.
    Any,
}

/// One privilege: its bit, its name in GRANT and SHOW GRANTS, its name in the set columns
/// (`Db_priv`, `Table_priv`) and where it may be granted.
pub(crate) struct Privilege {
    pub bit: u32,
    pub name: &'static str,
    pub stored: &'static str,
    pub level: Level,
}

pub(crate) const SELECT: u32 = 1;
pub(crate) const INSERT: u32 = 1 << 1;
pub(crate) const UPDATE: u32 = 1 << 2;
pub(crate) const DELETE: u32 = 1 << 3;
pub(crate) const CREATE: u32 = 1 << 4;
pub(crate) const DROP: u32 = 1 << 5;
pub(crate) const RELOAD: u32 = 1 << 6;
pub(crate) const SHUTDOWN: u32 = 1 << 7;
pub(crate) const PROCESS: u32 = 1 << 8;
pub(crate) const INDEX: u32 = 1 << 9;
pub(crate) const ALTER: u32 = 1 << 10;
pub(crate) const SHOW_DATABASES: u32 = 1 << 11;
pub(crate) const SUPER: u32 = 1 << 12;
pub(crate) const CREATE_USER: u32 = 1 << 13;
pub(crate) const CONNECTION_ADMIN: u32 = 1 << 14;
pub(crate) const SYSTEM_VARIABLES_ADMIN: u32 = 1 << 15;
pub(crate) const GRANT_OPTION: u32 = 1 << 16;
pub(crate) const CREATE_TEMPORARY_TABLES: u32 = 1 << 17;

/// Every privilege Shale knows, in the order SHOW GRANTS lists them (MySQL's order; the
/// dynamic ones, upper-case with underscores, come after the static ones).
pub(crate) const PRIVILEGES: &[Privilege] = &[
    Privilege {
        bit: SELECT,
        name: "SELECT",
        stored: "Select",
        level: Level::Any,
    },
    Privilege {
        bit: INSERT,
        name: "INSERT",
        stored: "Insert",
        level: Level::Any,
    },
    Privilege {
        bit: UPDATE,
        name: "UPDATE",
        stored: "Update",
        level: Level::Any,
    },
    Privilege {
        bit: DELETE,
        name: "DELETE",
        stored: "Delete",
        level: Level::Any,
    },
    Privilege {
        bit: CREATE,
        name: "CREATE",
        stored: "Create",
        level: Level::Any,
    },
    Privilege {
        bit: DROP,
        name: "DROP",
        stored: "Drop",
        level: Level::Any,
    },
    Privilege {
        bit: RELOAD,
        name: "RELOAD",
        stored: "Reload",
        level: Level::Global,
    },
    Privilege {
        bit: SHUTDOWN,
        name: "SHUTDOWN",
        stored: "Shutdown",
        level: Level::Global,
    },
    Privilege {
        bit: PROCESS,
        name: "PROCESS",
        stored: "Process",
        level: Level::Global,
    },
    Privilege {
        bit: INDEX,
        name: "INDEX",
        stored: "Index",
        level: Level::Any,
    },
    Privilege {
        bit: ALTER,
        name: "ALTER",
        stored: "Alter",
        level: Level::Any,
    },
    Privilege {
        bit: SHOW_DATABASES,
        name: "SHOW DATABASES",
        stored: "Show_db",
        level: Level::Global,
    },
    Privilege {
        bit: SUPER,
        name: "SUPER",
        stored: "Super",
        level: Level::Global,
    },
    Privilege {
        bit: CREATE_TEMPORARY_TABLES,
        name: "CREATE TEMPORARY TABLES",
        stored: "Create_tmp_table",
        level: Level::Database,
    },
    Privilege {
        bit: CREATE_USER,
        name: "CREATE USER",
        stored: "Create_user",
        level: Level::Global,
    },
    Privilege {
        bit: CONNECTION_ADMIN,
        name: "CONNECTION_ADMIN",
        stored: "CONNECTION_ADMIN",
        level: Level::Global,
    },
    Privilege {
        bit: SYSTEM_VARIABLES_ADMIN,
        name: "SYSTEM_VARIABLES_ADMIN",
        stored: "SYSTEM_VARIABLES_ADMIN",
        level: Level::Global,
    },
    Privilege {
        bit: GRANT_OPTION,
        name: "GRANT OPTION",
        stored: "Grant",
        level: Level::Any,
    },
];

/// What `ALL [PRIVILEGES]` means on `db.table`.
pub(crate) const ALL_TABLE: u32 = SELECT | INSERT | UPDATE | DELETE | CREATE | DROP | INDEX | ALTER;
/// What `ALL [PRIVILEGES]` means on `db.*`.
pub(crate) const ALL_DB: u32 = ALL_TABLE | CREATE_TEMPORARY_TABLES;
/// What `ALL [PRIVILEGES]` means on `*.*`: every privilege but GRANT OPTION (the highest
/// bit is the last one added).
pub(crate) const ALL_GLOBAL: u32 = (CREATE_TEMPORARY_TABLES << 1) - 1 - GRANT_OPTION;

impl Privs {
    pub fn has(self, bits: u32) -> bool {
        self.0 & bits == bits
    }

    pub fn any(self, bits: u32) -> bool {
        self.0 & bits != 0
    }

    /// The set column's text: stored names joined by commas, in [`PRIVILEGES`] order.
    pub fn to_set(self) -> String {
        PRIVILEGES
            .iter()
            .filter(|p| self.has(p.bit))
            .map(|p| p.stored)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A set column read back; unknown names are ignored (a newer version's privilege).
    pub fn from_set(text: &str) -> Privs {
        let mut bits = 0;
        for part in text.split(',') {
            if let Some(p) = PRIVILEGES
                .iter()
                .find(|p| p.stored.eq_ignore_ascii_case(part.trim()))
            {
                bits |= p.bit;
            }
        }
        Privs(bits)
    }
}

/// An account: the user name and the account's host pattern (`'app'@'%'`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Account {
    pub user: String,
    pub host: String,
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "'{}'@'{}'", self.user, self.host)
    }
}

/// One account's grants, each level sorted by name.
#[derive(Debug)]
pub(crate) struct AccountGrants {
    pub global: Privs,
    pub dbs: Vec<(String, Privs)>,
    pub tables: Vec<(String, String, Privs)>,
}

/// Every grant, as the checks read them (invariant 1).
#[derive(Debug, Default)]
pub(crate) struct Grants {
    global: HashMap<Account, Privs>,
    db: HashMap<(Account, String), Privs>,
    /// Keyed by the table name in lower case (table names match case-insensitively).
    table: HashMap<(Account, String, String), Privs>,
}

/// Global grants `(account, privileges)` and database grants `(account, db, privileges)`.
pub(crate) type GrantsHolding = (Vec<(Account, Privs)>, Vec<(Account, String, Privs)>);

impl Grants {
    /// The global and database-level grants that include `bit`.
    pub fn holding(&self, bit: u32) -> GrantsHolding {
        let globals = self
            .global
            .iter()
            .filter(|(_, p)| p.has(bit))
            .map(|(a, p)| (a.clone(), *p))
            .collect();
        let dbs = self
            .db
            .iter()
            .filter(|(_, p)| p.has(bit))
            .map(|((a, d), p)| (a.clone(), d.clone(), *p))
            .collect();
        (globals, dbs)
    }

    /// Whether any global or database grant includes `bit`.
    pub fn anyone_holds(&self, bit: u32) -> bool {
        self.global
            .values()
            .chain(self.db.values())
            .any(|p| p.has(bit))
    }

    pub fn global(&self, account: &Account) -> Privs {
        self.global.get(account).copied().unwrap_or_default()
    }

    /// Global and database-level privileges on `db`.
    pub fn on_db(&self, account: &Account, db: &str) -> Privs {
        let own = self
            .db
            .get(&(account.clone(), db.to_owned()))
            .copied()
            .unwrap_or_default();
        Privs(self.global(account).0 | own.0)
    }

    /// Every privilege that applies to `db`.`table`.
    pub fn on_table(&self, account: &Account, db: &str, table: &str) -> Privs {
        let own = self
            .table
            .get(&(account.clone(), db.to_owned(), table.to_ascii_lowercase()))
            .copied()
            .unwrap_or_default();
        Privs(self.on_db(account, db).0 | own.0)
    }

    /// Whether the account holds anything in `db` (what USE, SHOW DATABASES and SHOW TABLES
    /// ask): a global or database privilege, or one on any of its tables.
    pub fn sees_db(&self, account: &Account, db: &str) -> bool {
        self.on_db(account, db).any(!GRANT_OPTION)
            || self
                .table
                .iter()
                .any(|((a, d, _), p)| a == account && d == db && p.any(!GRANT_OPTION))
    }

    /// The grants of one account for SHOW GRANTS: global, then databases, then tables, each
    /// sorted by name.
    pub fn of(&self, account: &Account) -> AccountGrants {
        let mut dbs: Vec<_> = self
            .db
            .iter()
            .filter(|((a, _), _)| a == account)
            .map(|((_, d), p)| (d.clone(), *p))
            .collect();
        dbs.sort();
        let mut tables: Vec<_> = self
            .table
            .iter()
            .filter(|((a, _, _), _)| a == account)
            .map(|((_, d, t), p)| (d.clone(), t.clone(), *p))
            .collect();
        tables.sort();
        AccountGrants {
            global: self.global(account),
            dbs,
            tables,
        }
    }
}

fn text_column(name: &str, len: u32) -> ColumnDef {
    ColumnDef {
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
    }
}

fn system_table(name: &str, columns: &[(&str, u32)], key: usize) -> TableDef {
    TableDef {
        database: "mysql".into(),
        name: name.into(),
        columns: columns
            .iter()
            .map(|(n, len)| text_column(n, *len))
            .collect(),
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: (0..key).collect(),
            unique: true,
            index_id: 0,
        },
        indexes: Vec::new(),
        schema_version: 1,
        past_versions: Vec::new(),
    }
}

/// The three tables' definitions (docs/format/privileges.md).
pub(crate) fn table_defs() -> [TableDef; 3] {
    [
        system_table(
            "global_grants",
            &[("USER", 32), ("HOST", 255), ("PRIV", 32)],
            3,
        ),
        system_table(
            "db",
            &[("Host", 255), ("Db", 64), ("User", 32), ("Db_priv", 255)],
            3,
        ),
        system_table(
            "tables_priv",
            &[
                ("Host", 255),
                ("Db", 64),
                ("User", 32),
                ("Table_name", 64),
                ("Table_priv", 255),
            ],
            4,
        ),
    ]
}

fn bytes(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

fn text(row: &[Value], i: usize) -> String {
    match row.get(i) {
        Some(Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
        Some(other) => crate::value::display(other),
        None => String::new(),
    }
}

pub(crate) fn system_def(store: &Store, name: &str) -> Result<Arc<TableDef>, SqlError> {
    store
        .catalog()
        .table("mysql", name)
        .cloned()
        .ok_or_else(|| SqlError::no_such_table("mysql", name))
}

fn all_rows(txn: &mut TableTxn, def: &TableDef) -> Result<Vec<Vec<Value>>, SqlError> {
    let mut cursor = txn.scan(
        def,
        IndexChoice::Primary,
        KeyRange::all(),
        false,
        LockMode::None,
    )?;
    let mut rows = Vec::new();
    while let Some(row) = cursor.next_row()? {
        rows.push(row);
    }
    Ok(rows)
}

/// Reads every grant from the tables (in `txn`'s snapshot).
pub(crate) fn load(store: &Store, txn: &mut TableTxn) -> Result<Grants, SqlError> {
    let mut grants = Grants::default();
    let def = system_def(store, "global_grants")?;
    for row in all_rows(txn, &def)? {
        let account = Account {
            user: text(&row, 0),
            host: text(&row, 1),
        };
        let name = text(&row, 2);
        // Unknown names are ignored (a newer version's privilege).
        let bit = PRIVILEGES
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(&name))
            .map_or(0, |p| p.bit);
        grants.global.entry(account).or_default().0 |= bit;
    }
    let def = system_def(store, "db")?;
    for row in all_rows(txn, &def)? {
        let account = Account {
            user: text(&row, 2),
            host: text(&row, 0),
        };
        grants
            .db
            .insert((account, text(&row, 1)), Privs::from_set(&text(&row, 3)));
    }
    let def = system_def(store, "tables_priv")?;
    for row in all_rows(txn, &def)? {
        let account = Account {
            user: text(&row, 2),
            host: text(&row, 0),
        };
        let table = text(&row, 3).to_ascii_lowercase();
        let privs = Privs::from_set(&text(&row, 4));
        grants
            .table
            .entry((account, text(&row, 1), table))
            .or_default()
            .0 |= privs.0;
    }
    Ok(grants)
}

/// The global privilege names stored in `mysql.global_grants.PRIV`.
fn global_name(bit: u32) -> &'static str {
    PRIVILEGES
        .iter()
        .find(|p| p.bit == bit)
        .map_or("", |p| p.name)
}

/// Sets the account's global privileges to `privs` (rows added and removed).
pub(crate) fn write_global(
    store: &Store,
    txn: &mut TableTxn,
    account: &Account,
    old: Privs,
    new: Privs,
) -> Result<(), SqlError> {
    let def = system_def(store, "global_grants")?;
    for p in PRIVILEGES {
        let row = vec![
            bytes(&account.user),
            bytes(&account.host),
            bytes(global_name(p.bit)),
        ];
        match (old.has(p.bit), new.has(p.bit)) {
            (false, true) => txn.insert(&def, row)?,
            (true, false) => txn.delete(&def, &row)?,
            _ => {}
        }
    }
    Ok(())
}

/// Sets the account's privileges on `db`.* (deleting the row when empty, invariant 3).
pub(crate) fn write_db(
    store: &Store,
    txn: &mut TableTxn,
    account: &Account,
    db: &str,
    privs: Privs,
) -> Result<(), SqlError> {
    let def = system_def(store, "db")?;
    let key = [bytes(&account.host), bytes(db), bytes(&account.user)];
    let old = txn.get(&def, &key, LockMode::Exclusive)?;
    let mut row = key.to_vec();
    row.push(bytes(&privs.to_set()));
    match (old, privs.0 == 0) {
        (Some(old), true) => txn.delete(&def, &old)?,
        (Some(old), false) => txn.update(&def, &old, row)?,
        (None, false) => txn.insert(&def, row)?,
        (None, true) => {}
    }
    Ok(())
}

/// Sets the account's privileges on `db`.`table`.
pub(crate) fn write_table(
    store: &Store,
    txn: &mut TableTxn,
    account: &Account,
    db: &str,
    table: &str,
    privs: Privs,
) -> Result<(), SqlError> {
    let def = system_def(store, "tables_priv")?;
    let key = [
        bytes(&account.host),
        bytes(db),
        bytes(&account.user),
        bytes(&table.to_ascii_lowercase()),
    ];
    let old = txn.get(&def, &key, LockMode::Exclusive)?;
    let mut row = key.to_vec();
    row.push(bytes(&privs.to_set()));
    match (old, privs.0 == 0) {
        (Some(old), true) => txn.delete(&def, &old)?,
        (Some(old), false) => txn.update(&def, &old, row)?,
        (None, false) => txn.insert(&def, row)?,
        (None, true) => {}
    }
    Ok(())
}

/// Removes every grant of `account`; with `to`, writes them again for that account
/// (RENAME USER).
pub(crate) fn move_all(
    store: &Store,
    txn: &mut TableTxn,
    grants: &Grants,
    account: &Account,
    to: Option<&Account>,
) -> Result<(), SqlError> {
    let AccountGrants {
        global,
        dbs,
        tables,
    } = grants.of(account);
    write_global(store, txn, account, global, Privs(0))?;
    for (db, _) in &dbs {
        write_db(store, txn, account, db, Privs(0))?;
    }
    for (db, table, _) in &tables {
        write_table(store, txn, account, db, table, Privs(0))?;
    }
    if let Some(to) = to {
        write_global(store, txn, to, Privs(0), global)?;
        for (db, p) in &dbs {
            write_db(store, txn, to, db, *p)?;
        }
        for (db, table, p) in &tables {
            write_table(store, txn, to, db, table, *p)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_text_round_trips_and_all_global_excludes_grant_option() {
        let p = Privs(SELECT | INSERT | GRANT_OPTION);
        assert_eq!(p.to_set(), "Select,Insert,Grant");
        assert_eq!(Privs::from_set("Select,Insert,Grant"), p);
        assert_eq!(Privs::from_set("select, Bogus"), Privs(SELECT));
        assert!(!Privs(ALL_GLOBAL).any(GRANT_OPTION));
        assert!(Privs(ALL_GLOBAL).has(ALL_DB | SUPER | CREATE_USER | SYSTEM_VARIABLES_ADMIN));
        // Every bit of ALL_GLOBAL names a privilege, so it holds no stray bit.
        let named = PRIVILEGES.iter().fold(0, |acc, p| acc | p.bit);
        assert_eq!(named, ALL_GLOBAL | GRANT_OPTION);
    }
}
