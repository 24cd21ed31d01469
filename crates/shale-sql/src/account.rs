//! Account statements: CREATE / ALTER / DROP / RENAME USER, SET PASSWORD, GRANT, REVOKE,
//! SHOW GRANTS and FLUSH PRIVILEGES (docs/sql.md "Accounts and privileges").
//!
//! sqlparser does not parse MySQL's forms of these, so a statement text that is exactly one of
//! them is recognized before parsing (account_parse.rs), as CHECK TABLE is. Rules:
//! 1. Each statement commits an open transaction first (MySQL's implicit commit), then makes
//!    its change in one transaction of its own under the instance's account lock, and rebuilds
//!    the grant cache (grants.rs invariant 1) before answering.
//! 2. Who may run them, as MySQL: CREATE/ALTER/DROP/RENAME USER and SET PASSWORD FOR another
//!    account need the CREATE USER privilege (1227); SET PASSWORD for oneself needs nothing;
//!    GRANT and REVOKE need GRANT OPTION and every privilege given at that level (or above);
//!    SHOW GRANTS for another account needs SELECT on the `mysql` database (1044).
//! 3. Passwords are hashed at once (password.rs); the clear text is never stored.

use shale_table::{LockMode, TxnOptions, Value};

use crate::account_lock::Policy;
use crate::account_parse::{AccountStatement, Auth, Name, Target};
use crate::error::SqlError;
use crate::grants::{
    self, Account, Privs, ALL_DB, ALL_GLOBAL, ALL_TABLE, CREATE_USER, GRANT_OPTION,
};
use crate::password;
use crate::result::ResultSink;
use crate::session::{text_column, Session};

fn quoted(account: &Account) -> String {
    format!("`{}`@`{}`", account.user, account.host)
}

fn operation_failed(operation: &str, accounts: &[Account]) -> SqlError {
    let names: Vec<String> = accounts.iter().map(ToString::to_string).collect();
    SqlError::new(
        1396,
        "HY000",
        format!("Operation {operation} failed for {}", names.join(",")),
    )
}

/// Runs an account statement for `session`.
pub(crate) fn run(
    session: &mut Session,
    statement: &AccountStatement,
    sink: &mut dyn ResultSink,
) -> Result<(), SqlError> {
    session.ddl_prelude()?;
    let instance = std::sync::Arc::clone(session.instance());
    let _guard = instance
        .account_lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let me = session.state().account.clone();
    let resolve = |name: &Name| -> Account {
        match name {
            Name::Account(a) => a.clone(),
            Name::Current => me.clone().unwrap_or_else(|| Account {
                user: "root".into(),
                host: "localhost".into(),
            }),
        }
    };
    let need_create_user = |session: &Session| {
        session.authorize(&[crate::privilege::Need::Global {
            any_of: CREATE_USER,
        }])
    };
    let grants = instance.grants();
    let store = &instance.store;
    let users_def = instance.users()?;
    let mut txn = store.begin(TxnOptions::default())?;
    let key = |a: &Account| [bytes(&a.host), bytes(&a.user)];
    let mut warnings = Vec::new();
    // Accounts whose temporary lock ends once the statement commits (account_lock.rs rule 2).
    let mut unlock = Vec::new();
    match statement {
        AccountStatement::CreateUser {
            if_not_exists,
            users,
            options,
        } => {
            need_create_user(session)?;
            let mut failed = Vec::new();
            for (name, auth) in users {
                let account = resolve(name);
                if txn
                    .get(&users_def, &key(&account), LockMode::Exclusive)?
                    .is_some()
                {
                    if *if_not_exists {
                        warnings.push((
                            "Note",
                            3163,
                            format!("Authorization ID {account} already exists."),
                        ));
                    } else {
                        failed.push(account);
                    }
                    continue;
                }
                let (plugin, stored) = stored_auth(auth.as_ref(), None)?;
                let policy = Policy::default().with(options);
                txn.insert(&users_def, user_row(&account, &plugin, stored, policy))?;
            }
            if !failed.is_empty() {
                txn.rollback();
                return Err(operation_failed("CREATE USER", &failed));
            }
        }
        AccountStatement::AlterUser {
            if_exists,
            users,
            options,
        } => {
            let mut failed = Vec::new();
            for (name, auth) in users {
                let account = resolve(name);
                // Only one's own password may be changed without CREATE USER.
                if !matches!(name, Name::Current)
                    || me.is_none()
                    || *options != crate::account_lock::LockOptions::default()
                {
                    need_create_user(session)?;
                }
                let Some(old) = txn.get(&users_def, &key(&account), LockMode::Exclusive)? else {
                    if *if_exists {
                        warnings.push((
                            "Note",
                            3162,
                            format!("Authorization ID {account} does not exist."),
                        ));
                    } else {
                        failed.push(account);
                    }
                    continue;
                };
                let policy = Policy::of_row(&old).with(options);
                let (plugin, stored) = match auth {
                    Some(auth) => stored_auth(Some(auth), Some(&text(&old, 2)))?,
                    None => (text(&old, 2), bytes_at(&old, 3)),
                };
                txn.update(
                    &users_def,
                    &old,
                    user_row(&account, &plugin, stored, policy),
                )?;
                if options.lock == Some(false) || options.changes_tracking() {
                    unlock.push(account);
                }
            }
            if !failed.is_empty() {
                txn.rollback();
                return Err(operation_failed("ALTER USER", &failed));
            }
        }
        AccountStatement::DropUser { if_exists, users } => {
            need_create_user(session)?;
            let mut failed = Vec::new();
            for name in users {
                let account = resolve(name);
                let Some(old) = txn.get(&users_def, &key(&account), LockMode::Exclusive)? else {
                    if *if_exists {
                        warnings.push((
                            "Note",
                            3162,
                            format!("Authorization ID {account} does not exist."),
                        ));
                    } else {
                        failed.push(account);
                    }
                    continue;
                };
                txn.delete(&users_def, &old)?;
                grants::move_all(store, &mut txn, &grants, &account, None)?;
            }
            if !failed.is_empty() {
                txn.rollback();
                return Err(operation_failed("DROP USER", &failed));
            }
        }
        AccountStatement::RenameUser(pairs) => {
            need_create_user(session)?;
            for (from, to) in pairs {
                let (from, to) = (resolve(from), resolve(to));
                let old = txn.get(&users_def, &key(&from), LockMode::Exclusive)?;
                let taken = txn
                    .get(&users_def, &key(&to), LockMode::Exclusive)?
                    .is_some();
                let Some(old) = old.filter(|_| !taken) else {
                    txn.rollback();
                    return Err(operation_failed("RENAME USER", &[from]));
                };
                let mut row = old.clone();
                row[0] = bytes(&to.host);
                row[1] = bytes(&to.user);
                txn.delete(&users_def, &old)?;
                txn.insert(&users_def, row)?;
                grants::move_all(store, &mut txn, &grants, &from, Some(&to))?;
            }
        }
        AccountStatement::SetPassword { user, password } => {
            let account = match user {
                Some(name) => resolve(name),
                None => resolve(&Name::Current),
            };
            if me.as_ref() != Some(&account) {
                need_create_user(session)?;
            }
            let Some(old) = txn.get(&users_def, &key(&account), LockMode::Exclusive)? else {
                txn.rollback();
                return Err(SqlError::new(
                    1133,
                    "42000",
                    "Can't find any matching row in the user table",
                ));
            };
            let plugin = text(&old, 2);
            let stored = password::hash_password(&plugin, password);
            let policy = Policy::of_row(&old);
            txn.update(
                &users_def,
                &old,
                user_row(&account, &plugin, stored, policy),
            )?;
        }
        AccountStatement::Grant {
            privs,
            target,
            users,
        }
        | AccountStatement::Revoke {
            privs,
            target,
            users,
        } => {
            let grant = matches!(statement, AccountStatement::Grant { .. });
            let target = match target {
                Target::Db(d) if d.is_empty() => Target::Db(session.current_db()?),
                Target::Table(d, t) if d.is_empty() => {
                    Target::Table(session.current_db()?, t.clone())
                }
                other => other.clone(),
            };
            may_grant(session, &grants, *privs, &target)?;
            if let Target::Table(db, t) = &target {
                let catalog = store.catalog();
                let exists = crate::bind::lookup_table(&catalog, db, t).is_some()
                    || catalog.view(db, t).is_some();
                if !exists && grant {
                    txn.rollback();
                    return Err(SqlError::no_such_table(db, t));
                }
            }
            for name in users {
                let account = resolve(name);
                if txn
                    .get(&users_def, &key(&account), LockMode::None)?
                    .is_none()
                {
                    txn.rollback();
                    return Err(if grant {
                        SqlError::new(
                            1410,
                            "42000",
                            "You are not allowed to create a user with GRANT",
                        )
                    } else {
                        no_such_grant(&account, None)
                    });
                }
                let grants::AccountGrants {
                    global,
                    dbs,
                    tables,
                } = grants.of(&account);
                match &target {
                    Target::Global => {
                        let new = if grant {
                            global.0 | privs.0
                        } else {
                            global.0 & !privs.0
                        };
                        grants::write_global(store, &mut txn, &account, global, Privs(new))?;
                    }
                    Target::Db(db) => {
                        let old = dbs.iter().find(|(d, _)| d == db).map(|(_, p)| *p);
                        if !grant && old.is_none() {
                            txn.rollback();
                            return Err(no_such_grant(&account, None));
                        }
                        let old = old.unwrap_or_default();
                        let new = if grant {
                            old.0 | privs.0
                        } else {
                            old.0 & !privs.0
                        };
                        grants::write_db(store, &mut txn, &account, db, Privs(new))?;
                    }
                    Target::Table(db, t) => {
                        let lower = t.to_ascii_lowercase();
                        let old = tables
                            .iter()
                            .find(|(d, tt, _)| d == db && *tt == lower)
                            .map(|(_, _, p)| *p);
                        if !grant && old.is_none() {
                            txn.rollback();
                            return Err(no_such_grant(&account, Some(t)));
                        }
                        let old = old.unwrap_or_default();
                        let new = if grant {
                            old.0 | privs.0
                        } else {
                            old.0 & !privs.0
                        };
                        grants::write_table(store, &mut txn, &account, db, t, Privs(new))?;
                    }
                }
            }
        }
        AccountStatement::ShowGrants(user) => {
            txn.rollback();
            let account = resolve(user.as_ref().unwrap_or(&Name::Current));
            if me.is_some() && me.as_ref() != Some(&account) {
                session.authorize(&[crate::privilege::Need::Db {
                    privs: grants::SELECT,
                    db: "mysql".into(),
                }])?;
            }
            if !instance.account_exists(&account)? {
                return Err(no_such_grant(&account, None));
            }
            let lines = show_grants(&grants, &account);
            let rows: Vec<Vec<Value>> = lines.iter().map(|l| vec![bytes(l)]).collect();
            let column = text_column(&format!("Grants for {}@{}", account.user, account.host));
            return session.text_rows(sink, &[column], &rows);
        }
        AccountStatement::ShowCreateUser(user) => {
            let account = resolve(user);
            if me.is_some() && me.as_ref() != Some(&account) {
                session.authorize(&[crate::privilege::Need::Db {
                    privs: grants::SELECT,
                    db: "mysql".into(),
                }])?;
            }
            let row = txn.get(&users_def, &key(&account), LockMode::None)?;
            txn.rollback();
            let Some(row) = row else {
                return Err(operation_failed("SHOW CREATE USER", &[account]));
            };
            let line = Policy::of_row(&row).show_create_user(
                &quoted(&account),
                &text(&row, 2),
                &bytes_at(&row, 3),
            );
            let column = text_column(&format!(
                "CREATE USER for {}@{}",
                account.user, account.host
            ));
            return session.text_rows(sink, &[column], &[vec![bytes(&line)]]);
        }
        AccountStatement::FlushPrivileges => {
            session.authorize(&[crate::privilege::Need::Global {
                any_of: grants::RELOAD,
            }])?;
            instance.login_locks.clear();
        }
    }
    txn.commit()?;
    for account in unlock {
        instance.login_locks.unlock(&account.user, &account.host);
    }
    instance.reload_grants()?;
    session.state_mut().warnings = warnings;
    let status = session.state().status(session.in_transaction());
    sink.ok(&status)
}

fn no_such_grant(account: &Account, table: Option<&str>) -> SqlError {
    match table {
        None => SqlError::new(
            1141,
            "42000",
            format!(
                "There is no such grant defined for user '{}' on host '{}'",
                account.user, account.host
            ),
        ),
        Some(t) => SqlError::new(
            1147,
            "42000",
            format!(
                "There is no such grant defined for user '{}' on host '{}' on table '{t}'",
                account.user, account.host
            ),
        ),
    }
}

/// Rule 2 for GRANT and REVOKE: GRANT OPTION and the privileges themselves at `target`.
fn may_grant(
    session: &Session,
    grants: &grants::Grants,
    privs: Privs,
    target: &Target,
) -> Result<(), SqlError> {
    let Some(account) = &session.state().account else {
        return Ok(());
    };
    let held = match target {
        Target::Global => grants.global(account),
        Target::Db(db) => grants.on_db(account, db),
        Target::Table(db, t) => grants.on_table(account, db, t),
    };
    if held.has(privs.0 | GRANT_OPTION) {
        return Ok(());
    }
    Err(match target {
        Target::Global => crate::privilege::global_denied(GRANT_OPTION),
        Target::Db(db) => {
            let (user, host) = session.state().user.rsplit_once('@').unwrap_or(("", ""));
            crate::privilege::db_denied(
                &crate::privilege::Asker {
                    account,
                    user,
                    client_host: host,
                },
                db,
            )
        }
        Target::Table(_, t) => {
            let (user, host) = session.state().user.rsplit_once('@').unwrap_or(("", ""));
            crate::privilege::table_denied(
                "GRANT",
                &crate::privilege::Asker {
                    account,
                    user,
                    client_host: host,
                },
                t,
            )
        }
    })
}

/// SHOW GRANTS' lines, MySQL's shapes: the global line (USAGE when empty) first.
fn show_grants(grants: &grants::Grants, account: &Account) -> Vec<String> {
    let names = |p: Privs, all_bits: u32| -> String {
        if p.has(all_bits) && all_bits != ALL_GLOBAL {
            return "ALL PRIVILEGES".into();
        }
        let list: Vec<&str> = grants::PRIVILEGES
            .iter()
            .filter(|x| x.bit != GRANT_OPTION && p.has(x.bit))
            .map(|x| x.name)
            .collect();
        if list.is_empty() {
            "USAGE".into()
        } else {
            list.join(", ")
        }
    };
    let with = |p: Privs| {
        if p.has(GRANT_OPTION) {
            " WITH GRANT OPTION"
        } else {
            ""
        }
    };
    let grants::AccountGrants {
        global,
        dbs,
        tables,
    } = grants.of(account);
    let to = quoted(account);
    let mut lines = vec![format!(
        "GRANT {} ON *.* TO {to}{}",
        names(global, ALL_GLOBAL),
        with(global)
    )];
    for (db, p) in dbs {
        lines.push(format!(
            "GRANT {} ON `{db}`.* TO {to}{}",
            names(p, ALL_DB),
            with(p)
        ));
    }
    for (db, t, p) in tables {
        lines.push(format!(
            "GRANT {} ON `{db}`.`{t}` TO {to}{}",
            names(p, ALL_TABLE),
            with(p)
        ));
    }
    lines
}

fn bytes(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

fn text(row: &[Value], i: usize) -> String {
    match row.get(i) {
        Some(Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

fn bytes_at(row: &[Value], i: usize) -> Vec<u8> {
    match row.get(i) {
        Some(Value::Bytes(b)) => b.clone(),
        _ => Vec::new(),
    }
}

fn user_row(account: &Account, plugin: &str, stored: Vec<u8>, policy: Policy) -> Vec<Value> {
    let mut row = vec![
        bytes(&account.host),
        bytes(&account.user),
        bytes(plugin),
        Value::Bytes(stored),
    ];
    row.extend(policy.stored());
    row
}

/// The plugin and stored string for `auth` (the default plugin, or the account's current one
/// when ALTER USER names none).
fn stored_auth(auth: Option<&Auth>, current: Option<&str>) -> Result<(String, Vec<u8>), SqlError> {
    let plugin = auth
        .and_then(|a| a.plugin.clone())
        .or_else(|| current.map(str::to_owned))
        .unwrap_or_else(|| password::DEFAULT_PLUGIN.to_owned());
    let stored = match auth {
        Some(Auth {
            hash: Some(hash), ..
        }) => {
            if !password::is_valid_stored(&plugin, hash) {
                return Err(SqlError::new(
                    1827,
                    "HY000",
                    "The password hash doesn't have the expected format.",
                ));
            }
            hash.clone()
        }
        Some(Auth {
            password: Some(pw), ..
        }) => password::hash_password(&plugin, pw),
        _ => Vec::new(),
    };
    Ok((plugin, stored))
}
