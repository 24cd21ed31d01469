//! Views in the catalog: their definition, its stored form (docs/format/catalog.md, "Views")
//! and the DDL that writes it.
//!
//! A view is a name and the text of a SELECT; the table layer never parses the text (the SQL
//! layer does, each time a statement reads the view). Views share a database's namespace
//! with its tables.
//!
//! Invariants:
//! 1. No database holds a table and a view whose names are equal ignoring ASCII case: view
//!    DDL checks the tables, and CREATE TABLE, CREATE TABLE ... SELECT and RENAME TABLE check
//!    the views, under the DDL mutex.
//! 2. A view is stored under `00 00 00 01 'W' ++ u8 len(database) ++ database ++ name`; the
//!    key is a function of the names, so CREATE OR REPLACE is one put (and a delete when the
//!    replaced view's name differs in case).
//! 3. Every view DDL is one synced engine write, like table DDL (ARCHITECTURE.md invariant 7);
//!    DROP DATABASE deletes its views' keys in the write that drops its tables.

use std::collections::BTreeMap;
use std::sync::Arc;

use shale_engine::{WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};

use crate::codec::{put_bytes, put_varint, Reader};
use crate::error::{Error, Result};
use crate::schema::Catalog;
use crate::store::{check_name, Store};
use crate::system::SYSTEM_INDEX_ID;

/// The tag of a view's system key.
pub(crate) const TAG_VIEW: u8 = b'W';
/// The version byte that starts a stored view definition without a check option (every
/// view written before check options existed).
const VIEW_DEF_VERSION: u8 = 1;
/// The version byte of a definition that ends with a check option byte. Views without one
/// are still written as version 1, so older builds keep reading them.
const VIEW_DEF_VERSION_CHECK: u8 = 2;

/// `ALGORITHM=` of CREATE VIEW (kept for SHOW CREATE VIEW; every view is read the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewAlgorithm {
    Undefined,
    Merge,
    TempTable,
}

/// `SQL SECURITY` of CREATE VIEW: whose privileges the view's tables are read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewSecurity {
    Definer,
    Invoker,
}

/// `WITH [CASCADED | LOCAL] CHECK OPTION` of CREATE VIEW: which views' WHERE a row written
/// through the view must satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ViewCheckOption {
    #[default]
    None,
    Local,
    Cascaded,
}

/// A view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewDef {
    pub database: String,
    pub name: String,
    /// The column list of `CREATE VIEW v (a, b)`; empty: the SELECT list's names.
    pub columns: Vec<String>,
    /// The SELECT, as SQL text; names in it resolve against `database`.
    pub query: String,
    pub algorithm: ViewAlgorithm,
    pub security: ViewSecurity,
    /// The account, as `user@host` text.
    pub definer: String,
    pub character_set_client: String,
    pub collation_connection: String,
    pub check_option: ViewCheckOption,
}

/// How [`Store::write_view`] treats an existing view of the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewWrite {
    /// CREATE VIEW: the name must be free.
    Create,
    /// CREATE OR REPLACE VIEW: replaces a view of the name, if any.
    CreateOrReplace,
    /// ALTER VIEW: a view of the name must exist.
    Alter,
}

impl Catalog {
    /// The view `database.name` (the exact name first, then ignoring ASCII case).
    pub fn view(&self, database: &str, name: &str) -> Option<&Arc<ViewDef>> {
        let views = self.views.get(database)?;
        views.get(name).or_else(|| {
            views
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
    }
}

pub(crate) fn view_key(database: &str, name: &str) -> Vec<u8> {
    let mut key = SYSTEM_INDEX_ID.to_be_bytes().to_vec();
    key.push(TAG_VIEW);
    // Database names are at most 64 bytes (check_name), so the length fits a byte.
    key.push(u8::try_from(database.len()).unwrap_or(u8::MAX));
    key.extend_from_slice(database.as_bytes());
    key.extend_from_slice(name.as_bytes());
    key
}

fn algorithm_tag(a: ViewAlgorithm) -> u8 {
    match a {
        ViewAlgorithm::Undefined => 0,
        ViewAlgorithm::Merge => 1,
        ViewAlgorithm::TempTable => 2,
    }
}

fn security_tag(s: ViewSecurity) -> u8 {
    match s {
        ViewSecurity::Definer => 0,
        ViewSecurity::Invoker => 1,
    }
}

fn check_option_tag(c: ViewCheckOption) -> u8 {
    match c {
        ViewCheckOption::None => 0,
        ViewCheckOption::Local => 1,
        ViewCheckOption::Cascaded => 2,
    }
}

/// The stored form of a view definition.
pub(crate) fn encode_view(def: &ViewDef) -> Vec<u8> {
    let version = if def.check_option == ViewCheckOption::None {
        VIEW_DEF_VERSION
    } else {
        VIEW_DEF_VERSION_CHECK
    };
    let mut out = vec![version];
    put_bytes(&mut out, def.database.as_bytes());
    put_bytes(&mut out, def.name.as_bytes());
    put_varint(&mut out, def.columns.len() as u64);
    for c in &def.columns {
        put_bytes(&mut out, c.as_bytes());
    }
    put_bytes(&mut out, def.query.as_bytes());
    out.push(algorithm_tag(def.algorithm));
    out.push(security_tag(def.security));
    put_bytes(&mut out, def.definer.as_bytes());
    put_bytes(&mut out, def.character_set_client.as_bytes());
    put_bytes(&mut out, def.collation_connection.as_bytes());
    if version == VIEW_DEF_VERSION_CHECK {
        out.push(check_option_tag(def.check_option));
    }
    out
}

/// Decodes a stored view definition (untrusted bytes).
pub(crate) fn decode_view(bytes: &[u8]) -> Result<ViewDef> {
    let mut reader = Reader::new(bytes, "view definition");
    let version = reader.u8()?;
    if version != VIEW_DEF_VERSION && version != VIEW_DEF_VERSION_CHECK {
        return Err(Error::Corruption(format!(
            "view definition version {version}; this build reads {VIEW_DEF_VERSION} and \
             {VIEW_DEF_VERSION_CHECK}"
        )));
    }
    let database = reader.string()?;
    let name = reader.string()?;
    let count = reader.varint()?;
    let mut columns = Vec::new();
    for _ in 0..count {
        columns.push(reader.string()?);
    }
    let query = reader.string()?;
    let algorithm = match reader.u8()? {
        0 => ViewAlgorithm::Undefined,
        1 => ViewAlgorithm::Merge,
        2 => ViewAlgorithm::TempTable,
        tag => return Err(reader.corruption(&format!("unknown view algorithm {tag}"))),
    };
    let security = match reader.u8()? {
        0 => ViewSecurity::Definer,
        1 => ViewSecurity::Invoker,
        tag => return Err(reader.corruption(&format!("unknown view security {tag}"))),
    };
    let definer = reader.string()?;
    let character_set_client = reader.string()?;
    let collation_connection = reader.string()?;
    let check_option = if version == VIEW_DEF_VERSION_CHECK {
        match reader.u8()? {
            1 => ViewCheckOption::Local,
            2 => ViewCheckOption::Cascaded,
            tag => return Err(reader.corruption(&format!("unknown view check option {tag}"))),
        }
    } else {
        ViewCheckOption::None
    };
    if !reader.is_empty() {
        return Err(reader.corruption("bytes after the view definition"));
    }
    Ok(ViewDef {
        database,
        name,
        columns,
        query,
        algorithm,
        security,
        definer,
        character_set_client,
        collation_connection,
        check_option,
    })
}

/// Adds a loaded view to `catalog`, checking that its key names it (invariant 2) and that
/// its database exists.
pub(crate) fn load_view(catalog: &mut Catalog, key: &[u8], value: &[u8]) -> Result<()> {
    let def = decode_view(value)?;
    if key != view_key(&def.database, &def.name).as_slice() {
        return Err(Error::Corruption(format!(
            "view '{}.{}' is stored under the wrong key",
            def.database, def.name
        )));
    }
    if !catalog.databases.contains_key(&def.database) {
        return Err(Error::Corruption(format!(
            "view '{}.{}' belongs to no database",
            def.database, def.name
        )));
    }
    catalog
        .views
        .entry(def.database.clone())
        .or_default()
        .insert(def.name.clone(), Arc::new(def));
    Ok(())
}

/// Deletes every view of `database` in `batch` and from `catalog` (DROP DATABASE).
pub(crate) fn drop_database_views(
    batch: &mut WriteBatch,
    catalog: &Catalog,
    database: &str,
) -> Result<()> {
    for name in catalog
        .views
        .get(database)
        .into_iter()
        .flat_map(BTreeMap::keys)
    {
        batch.delete(DEFAULT_KEYSPACE_ID, &view_key(database, name))?;
    }
    Ok(())
}

impl Store {
    /// Creates, replaces or alters a view, as `mode` says: one synced write.
    /// [`Error::TableExists`] when the name is a table's (or a view's, for
    /// [`ViewWrite::Create`]), [`Error::NoSuchTable`] when ALTER finds no view.
    pub fn write_view(&self, def: ViewDef, mode: ViewWrite) -> Result<Arc<ViewDef>> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let Some(tables) = catalog.databases.get(&def.database) else {
            return Err(Error::NoSuchDatabase(def.database));
        };
        check_name("view", &def.name)?;
        let exists = || Error::TableExists {
            database: def.database.clone(),
            table: def.name.clone(),
        };
        if tables.keys().any(|k| k.eq_ignore_ascii_case(&def.name)) {
            return Err(exists());
        }
        let old = catalog.view(&def.database, &def.name).cloned();
        match (mode, &old) {
            (ViewWrite::Create, Some(_)) => return Err(exists()),
            (ViewWrite::Alter, None) => {
                return Err(Error::NoSuchTable {
                    database: def.database,
                    table: def.name,
                })
            }
            _ => {}
        }
        // ALTER keeps the view's name as created.
        let mut def = def;
        if let (ViewWrite::Alter, Some(old)) = (mode, &old) {
            def.name.clone_from(&old.name);
        }
        let mut batch = WriteBatch::new();
        if let Some(old) = &old {
            batch.delete(DEFAULT_KEYSPACE_ID, &view_key(&old.database, &old.name))?;
        }
        batch.put(
            DEFAULT_KEYSPACE_ID,
            &view_key(&def.database, &def.name),
            &encode_view(&def),
        )?;
        self.inner.tdb.db().write(batch, &WriteOptions::sync())?;
        let def = Arc::new(def);
        let mut new = (*catalog).clone();
        let views = new.views.entry(def.database.clone()).or_default();
        if let Some(old) = &old {
            views.remove(&old.name);
        }
        views.insert(def.name.clone(), def.clone());
        self.inner.install(new);
        Ok(def)
    }

    /// Renames views, `(database, old name, new name)` applied in order (so `a -> tmp,
    /// b -> a, tmp -> b` swaps), within their databases, in one synced write, or none:
    /// [`Error::NoSuchTable`] for a name that is no view at its turn,
    /// [`Error::TableExists`] for a new name a table or view has.
    pub fn rename_views(&self, renames: &[(String, String, String)]) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let mut new = (*catalog).clone();
        let mut batch = WriteBatch::new();
        for (database, old_name, new_name) in renames {
            check_name("view", new_name)?;
            let def = new
                .view(database, old_name)
                .cloned()
                .ok_or_else(|| Error::NoSuchTable {
                    database: database.clone(),
                    table: old_name.clone(),
                })?;
            let taken = new
                .databases
                .get(database)
                .is_some_and(|t| t.keys().any(|k| k.eq_ignore_ascii_case(new_name)))
                || new.view(database, new_name).is_some();
            if taken {
                return Err(Error::TableExists {
                    database: database.clone(),
                    table: new_name.clone(),
                });
            }
            let mut moved = (*def).clone();
            moved.name.clone_from(new_name);
            batch.delete(DEFAULT_KEYSPACE_ID, &view_key(&def.database, &def.name))?;
            batch.put(
                DEFAULT_KEYSPACE_ID,
                &view_key(&moved.database, &moved.name),
                &encode_view(&moved),
            )?;
            let views = new.views.entry(def.database.clone()).or_default();
            views.remove(&def.name);
            views.insert(moved.name.clone(), Arc::new(moved));
        }
        // A batch applies in order: a key deleted and put again later (a swap) ends put.
        self.inner.tdb.db().write(batch, &WriteOptions::sync())?;
        self.inner.install(new);
        Ok(())
    }

    /// Drops the views `names` (database, name) in one synced write, or none of them:
    /// [`Error::NoSuchTable`] names the first that is not a view.
    pub fn drop_views(&self, names: &[(String, String)]) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let mut batch = WriteBatch::new();
        let mut dropped = Vec::new();
        for (database, name) in names {
            let def = catalog
                .view(database, name)
                .ok_or_else(|| Error::NoSuchTable {
                    database: database.clone(),
                    table: name.clone(),
                })?;
            batch.delete(DEFAULT_KEYSPACE_ID, &view_key(&def.database, &def.name))?;
            dropped.push(def.clone());
        }
        self.inner.tdb.db().write(batch, &WriteOptions::sync())?;
        let mut new = (*catalog).clone();
        for def in dropped {
            if let Some(views) = new.views.get_mut(&def.database) {
                views.remove(&def.name);
            }
        }
        self.inner.install(new);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn sample() -> ViewDef {
        ViewDef {
            database: "app".into(),
            name: "v1".into(),
            columns: vec!["x".into(), "y".into()],
            query: "SELECT a, b FROM t WHERE a > 1".into(),
            algorithm: ViewAlgorithm::TempTable,
            security: ViewSecurity::Invoker,
            definer: "root@localhost".into(),
            character_set_client: "utf8mb4".into(),
            collation_connection: "utf8mb4_general_ci".into(),
            check_option: ViewCheckOption::None,
        }
    }

    #[test]
    fn view_definitions_round_trip_and_truncations_fail() {
        let mut with_check = sample();
        with_check.check_option = ViewCheckOption::Local;
        // Without a check option the stored form is version 1, as before check options.
        assert_eq!(encode_view(&sample())[0], 1);
        assert_eq!(encode_view(&with_check)[0], 2);
        for def in [sample(), with_check] {
            round_trip(&def);
        }
    }

    fn round_trip(def: &ViewDef) {
        let def = def.clone();
        let bytes = encode_view(&def);
        assert_eq!(decode_view(&bytes).unwrap(), def);
        for len in 0..bytes.len() {
            assert!(decode_view(&bytes[..len]).is_err(), "prefix of {len} bytes");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_view(&longer).is_err());
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..10_000 {
            let mut mutated = bytes.clone();
            let at = rng.gen_range(0..mutated.len());
            mutated[at] = rng.gen();
            let _ = decode_view(&mutated);
        }
    }

    #[test]
    fn view_keys_separate_database_and_name() {
        // "ab"."c" and "a"."bc" must not share a key.
        assert_ne!(view_key("ab", "c"), view_key("a", "bc"));
        assert_eq!(
            view_key("db", "v"),
            [0, 0, 0, 1, b'W', 2, b'd', b'b', b'v'].to_vec()
        );
    }
}
