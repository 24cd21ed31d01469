//! ALTER TABLE on columns and RENAME TABLE: a new definition for a table, applied instantly
//! (only the catalog changes) where every row still decodes, else by a rewrite of every row
//! and index entry under new index ids (docs/format/catalog.md, "ALTER TABLE").
//!
//! Instant: ADD COLUMN anywhere (old rows read the value the column was added with), DROP
//! COLUMN of a column in no index that keeps its shape, RENAME COLUMN, a changed DEFAULT,
//! NOT NULL -> NULL and lossless type widenings ([`widens_losslessly`]) of columns no index
//! keys on (strings grow in place even when indexed). The old column list is kept as a
//! [`PastVersion`]; rows are never touched.
//!
//! Rewrite: everything else (a type change that converts values, NULL -> NOT NULL, an index
//! that loses or gains columns, a new primary key, more than [`MAX_PAST_VERSIONS`] past
//! versions). The rows are converted by the caller's function (the SQL layer applies
//! `MySQL`'s conversion rules and strict-mode errors) and written with all their index
//! entries under freshly allocated ids; then one synced batch swaps the definition to the
//! new ids and range-deletes the old ones. A failure or a crash before that batch leaves the
//! old table whole (the new ids' keys are deleted on failure, or swept at the next open,
//! build.rs invariant 2).
//!
//! A rewrite runs online (shadow.rs): writers go on during the copy and maintain the new
//! definition themselves; they wait at the table's fence (fence.rs) only for the switch. A
//! rewrite that changes the primary key's bytes does so through claims on the new keys
//! (shadow.rs, "a new primary key"). Only dropping the primary key of a table that has one
//! (its rows need fresh hidden row ids) holds writers at the fence for the whole copy, which
//! is then chunked plain writes.
//!
//! Invariants:
//! 1. Every DDL here changes the catalog with one synced engine write, after which the new
//!    definition describes every row (instant: through its past versions; rewrite: all rows
//!    are at the new version).
//! 2. A past version maps each current column to a stored column whose type
//!    [`widens_losslessly`] into the current one, or to a fill value that fits it.
//! 3. An index keeps its id only when its entries' bytes are unchanged: the same columns in
//!    the same order, each with a key encoding unchanged ([`same_key_encoding`]).

use std::ops::Bound;
use std::sync::Arc;

use shale_engine::{ReadOptions, WriteBatch, WriteOptions, DEFAULT_KEYSPACE_ID};

use crate::build::delete_index_range;
use crate::codec::key::range_bounds;
use crate::codec::row::{decode_row, encode_row};
use crate::error::{Error, Result};
use crate::fill::{discard, RowWriter};
use crate::index::table_id;
use crate::metadata_lock::ExclusiveLock;
use crate::schema::{Catalog, ColumnDef, ColumnSource, IndexDef, PastVersion, TableDef};
use crate::shadow::{self, Convert, Failure, Shadow, SharedConvert};
use crate::store::{
    assign_index_ids, normalize_primary_key, persist_next_index_id, table_of, validate_table, Store,
};
use crate::system::{self, TAG_AUTO_INCREMENT, TAG_ROW_ID, TAG_TABLE};
use crate::types::{ColumnType, Kind};
use crate::value::Value;

/// At most this many past versions are kept; an ALTER that would keep more rewrites.
pub const MAX_PAST_VERSIONS: usize = 64;

/// A new definition for a table, with where each of its columns comes from.
#[derive(Debug, Clone)]
pub struct TableChange {
    /// The new definition. Its `database`/`name` may differ (a rename). An index keeps its
    /// entries when it keeps its old `index_id` and its key is unchanged; `index_id` 0 (or
    /// an index whose key changed) makes the change a rewrite. `schema_version` and
    /// `past_versions` are the store's to set.
    pub def: TableDef,
    /// One per column of `def.columns`: `Stored(p)` is the old definition's column `p`,
    /// `Fill(v)` a new column whose value in existing rows is `v`.
    pub sources: Vec<ColumnSource>,
}

/// A rewrite's value conversion: `(old column, new column, stored value, row from 1)` to the
/// value to store, or the error that fails the ALTER. Shared: during an online rewrite every
/// writer of the table converts the rows it writes (shadow.rs).
pub type ConvertFn<E> =
    Arc<dyn Fn(&ColumnDef, &ColumnDef, Value, u64) -> Result<Value, E> + Send + Sync>;

/// How an ALTER TABLE was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterMethod {
    /// Only the catalog changed.
    Instant,
    /// Every row was rewritten; the count of rows.
    Rewrite { rows: u64 },
}

/// Whether a value stored as `from` reads as the same value of type `to` without any
/// conversion (row bytes and decoded [`Value`] alike).
pub fn widens_losslessly(from: &ColumnType, to: &ColumnType) -> bool {
    use ColumnType as T;
    if from == to {
        return true;
    }
    match (from.kind(), to.kind()) {
        (
            Kind::Int {
                width: a,
                unsigned: ua,
            },
            Kind::Int {
                width: b,
                unsigned: ub,
            },
        ) => ua == ub && b >= a,
        _ => match (from, to) {
            (T::Float, T::Double) => true,
            // Members appended to an ENUM or a SET: every stored index or bit means the same
            // member, and the key width is unchanged.
            (
                T::Enum {
                    members: a,
                    collation: ca,
                },
                T::Enum {
                    members: b,
                    collation: cb,
                },
            )
            | (
                T::Set {
                    members: a,
                    collation: ca,
                },
                T::Set {
                    members: b,
                    collation: cb,
                },
            ) => ca == cb && b.starts_with(a) && from.kind() == to.kind(),
            (
                T::Char {
                    len: a,
                    collation: ca,
                },
                T::Char {
                    len: b,
                    collation: cb,
                },
            )
            | (
                T::VarChar {
                    len: a,
                    collation: ca,
                },
                T::VarChar {
                    len: b,
                    collation: cb,
                },
            ) => ca == cb && b >= a,
            (T::VarChar { collation: ca, .. }, T::Text { collation: cb }) => ca == cb,
            (
                T::Decimal {
                    precision: pa,
                    scale: sa,
                },
                T::Decimal {
                    precision: pb,
                    scale: sb,
                },
            ) => sa == sb && pb >= pa,
            _ => false,
        },
    }
}

/// Whether a key column's encoding is the same for both column definitions (invariant 3):
/// the key bytes of integers depend on their width, of every column on its nullability.
fn same_key_encoding(from: &ColumnDef, to: &ColumnDef) -> bool {
    if from.nullable != to.nullable {
        return false;
    }
    match (&from.ty, &to.ty) {
        (a, b) if a == b => true,
        // Strings' keys depend on the collation only, not the declared length.
        (ColumnType::Char { collation: ca, .. }, ColumnType::Char { collation: cb, .. })
        | (ColumnType::VarChar { collation: ca, .. }, ColumnType::VarChar { collation: cb, .. }) => {
            ca == cb
        }
        _ => false,
    }
}

impl Store {
    /// Replaces `database.name`'s definition with `change.def` (see the module doc for when
    /// that is instant and when every row is rewritten). In a rewrite, `convert(old, new,
    /// value, row)` turns each stored value of a column whose type or nullability changed
    /// into its new value (`row` counts the rows from 1, for messages; a row a concurrent
    /// writer converts is row 1), or fails the whole ALTER (the table is left as it was).
    /// The caller must not hold an open write transaction (the rewrite waits for it).
    pub fn alter_table<E: From<Error> + Send + 'static>(
        &self,
        database: &str,
        name: &str,
        change: TableChange,
        convert: ConvertFn<E>,
    ) -> Result<(Arc<TableDef>, AlterMethod), E> {
        let mut next_id = self.inner.lock_ddl();
        let catalog = self.inner.catalog();
        let old = table_of(&catalog, database, name)?;
        let TableChange { mut def, sources } = change;
        check_target(&catalog, &old, &def)?;
        check_sources(&old, &def, &sources)?;
        normalize_primary_key(&mut def);
        def.past_versions = Vec::new();
        validate_table(&def)?;
        if instant_possible(&old, &def, &sources) {
            let _table = self.inner.lock_tables(&[table_id(&old)])?;
            let def = self.alter_instant(&catalog, &old, def, sources)?;
            return Ok((def, AlterMethod::Instant));
        }
        let first = *next_id;
        let mut after = assign_index_ids(&mut def, first)?;
        def.schema_version = old.schema_version + 1;
        let keeps_key = shadow::keeps_primary_key(&old, &def, &sources, same_key_encoding);
        // A new primary key with columns is online with claims under one more id; a dropped
        // one is not (module doc).
        let claims = if !keeps_key && !def.primary_key.columns.is_empty() {
            let claims = after;
            after = after
                .checked_add(1)
                .ok_or_else(|| Error::InvalidArgument("index ids exhausted".into()))?;
            Some(claims)
        } else {
            None
        };
        let db = self.inner.tdb.db();
        // The ids are used from here on, whatever happens (build.rs, invariant 1).
        persist_next_index_id(db, after)?;
        *next_id = after;
        let shared: SharedConvert = Arc::new(move |was, column, value, row| {
            convert(was, column, value, row).map_err(|e| Failure::Caller(Box::new(e)))
        });
        let old_id = table_id(&old);
        let (fences, shadows) = (&self.inner.fences, &self.inner.shadows);
        let def = Arc::new(def);
        let copied = if keeps_key || claims.is_some() {
            self.rewrite_online(&old, &def, sources, shared, claims)
        } else {
            self.rewrite_fenced(&old, &def, &sources, &*shared)
        };
        let (rows, _table) = match copied {
            Ok(copied) => copied,
            Err(failure) => {
                shadows.remove(old_id);
                fences.lower(old_id);
                discard(db, first..after);
                return Err(caller_error(failure));
            }
        };
        // Writers are held at the fence and the older ones have ended: the new ids hold
        // every row.
        fences.switching(old_id);
        if let Err(e) = self.swap_rewritten(&old, &def, claims) {
            // The new ids are not discarded: a failed synced write may still be durable, and
            // then the next open finds the new definition (as before this fence existed).
            shadows.remove(old_id);
            fences.lower(old_id);
            return Err(e.into());
        }
        // Every snapshot from before the switch is older than this (fence.rs, invariant 4).
        fences.born(table_id(&def), db.latest_seqno());
        self.inner.forget_sequences(old_id);
        self.inner.install(replaced(&catalog, &old, def.clone()));
        self.inner
            .metadata
            .move_session_locks(old_id, table_id(&def));
        fences.retire(old_id);
        shadows.remove(old_id);
        Ok((def, AlterMethod::Rewrite { rows }))
    }

    /// An online rewrite's copy (shadow.rs steps 1 to 3), then the table's metadata lock
    /// taken (every transaction that used it has ended), the fence raised for the switch and
    /// the writers still maintaining the shadow waited for (step 4). Returns the rows the
    /// fill wrote and the lock, held until the switch is done.
    fn rewrite_online(
        &self,
        old: &Arc<TableDef>,
        def: &Arc<TableDef>,
        sources: Vec<ColumnSource>,
        convert: SharedConvert,
        claims: Option<u32>,
    ) -> Result<(u64, ExclusiveLock<'_>), Failure> {
        let (fences, online) = (&self.inner.fences, &self.inner.online);
        let timeout = self.inner.ddl_wait();
        let shadow = Arc::new(Shadow::new(
            old.clone(),
            def.clone(),
            sources,
            convert,
            claims,
        ));
        self.inner.shadows.register(shadow.clone());
        let ids = [table_id(old)];
        online.wait_for_older_writers(&ids, timeout)?;
        let rows = shadow::fill(&self.inner.tdb, &shadow)?;
        // Taken before the fence: a transaction it waits for may still write the table.
        let table = self.inner.lock_tables(&ids)?;
        fences.raise(table_id(old), online.current_epoch() + 1);
        online.wait_for_older_writers(&ids, timeout)?;
        shadow.check()?;
        Ok((rows, table))
    }

    /// A rewrite that cannot run online: the table's metadata lock is taken and writers are
    /// kept off the table from the start (fence.rs), those that may have written it already
    /// are waited for, and the rows are copied from one snapshot. Returns the rows copied and
    /// the lock.
    fn rewrite_fenced(
        &self,
        old: &TableDef,
        def: &TableDef,
        sources: &[ColumnSource],
        convert: &Convert,
    ) -> Result<(u64, ExclusiveLock<'_>), Failure> {
        let (fences, online) = (&self.inner.fences, &self.inner.online);
        let table = self.inner.lock_tables(&[table_id(old)])?;
        fences.raise(table_id(old), online.current_epoch() + 1);
        online.wait_for_older_writers(&[table_id(old)], self.inner.ddl_wait())?;
        let rows = self.rewrite_rows(old, def, sources, convert)?;
        Ok((rows, table))
    }

    /// The one synced write that makes a rewritten table current (invariant 1), deleting
    /// the online rewrite's `claims` too.
    fn swap_rewritten(&self, old: &TableDef, def: &TableDef, claims: Option<u32>) -> Result<()> {
        let db = self.inner.tdb.db();
        let (old_id, new_id) = (table_id(old), table_id(def));
        let sys = DEFAULT_KEYSPACE_ID;
        let mut batch = WriteBatch::new();
        batch.delete(sys, &system::table_key(TAG_TABLE, old_id))?;
        batch.put(
            sys,
            &system::table_key(TAG_TABLE, new_id),
            &system::encode_table(def),
        )?;
        delete_index_range(&mut batch, old_id)?;
        for index in &old.indexes {
            delete_index_range(&mut batch, index.index_id)?;
        }
        if let Some(claims) = claims {
            delete_index_range(&mut batch, claims)?;
        }
        // The AUTO_INCREMENT reservation moves with the table, so no value is handed out
        // twice; a hidden row id counter recovers from the rows' largest id.
        let reserved = match self.inner.loaded_next(TAG_AUTO_INCREMENT, old_id) {
            Some(next) => Some(next.to_le_bytes().to_vec()),
            None => db.get(&system::table_key(TAG_AUTO_INCREMENT, old_id))?,
        };
        if let Some(reserved) = reserved {
            batch.put(
                sys,
                &system::table_key(TAG_AUTO_INCREMENT, new_id),
                &reserved,
            )?;
        }
        batch.delete(sys, &system::table_key(TAG_AUTO_INCREMENT, old_id))?;
        batch.delete(sys, &system::table_key(TAG_ROW_ID, old_id))?;
        db.write(batch, &WriteOptions::sync())?;
        Ok(())
    }

    fn alter_instant(
        &self,
        catalog: &Catalog,
        old: &TableDef,
        mut def: TableDef,
        sources: Vec<ColumnSource>,
    ) -> Result<Arc<TableDef>> {
        def.primary_key.index_id = table_id(old);
        let unchanged_rows = sources.len() == old.columns.len()
            && sources.iter().enumerate().all(|(i, s)| {
                matches!(s, ColumnSource::Stored(p) if *p == i)
                    && old.columns[i].ty == def.columns[i].ty
                    && old.columns[i].nullable == def.columns[i].nullable
            });
        if unchanged_rows {
            // Names, defaults, indexes dropped or the table renamed: rows decode as before.
            def.schema_version = old.schema_version;
            def.past_versions.clone_from(&old.past_versions);
        } else {
            def.schema_version = old
                .schema_version
                .checked_add(1)
                .ok_or_else(|| Error::InvalidArgument("schema versions exhausted".into()))?;
            def.past_versions = old
                .past_versions
                .iter()
                .map(|past| PastVersion {
                    schema_version: past.schema_version,
                    columns: past.columns.clone(),
                    current: sources
                        .iter()
                        .map(|s| match s {
                            ColumnSource::Stored(p) => past.current[*p].clone(),
                            ColumnSource::Fill(v) => ColumnSource::Fill(v.clone()),
                        })
                        .collect(),
                })
                .collect();
            def.past_versions.push(PastVersion {
                schema_version: old.schema_version,
                columns: old.columns.clone(),
                current: sources,
            });
        }
        let sys = DEFAULT_KEYSPACE_ID;
        let mut batch = WriteBatch::new();
        batch.put(
            sys,
            &system::table_key(TAG_TABLE, table_id(old)),
            &system::encode_table(&def),
        )?;
        for index in &old.indexes {
            if !def.indexes.iter().any(|i| i.index_id == index.index_id) {
                delete_index_range(&mut batch, index.index_id)?;
            }
        }
        self.inner.tdb.db().write(batch, &WriteOptions::sync())?;
        self.inner.forget_sequences(table_id(old));
        let def = Arc::new(def);
        self.inner.install(replaced(catalog, old, def.clone()));
        Ok(def)
    }

    /// Writes every row of `old`, converted, with its index entries under `def`'s (new)
    /// ids, from one snapshot; returns the row count.
    pub(crate) fn rewrite_rows(
        &self,
        old: &TableDef,
        def: &TableDef,
        sources: &[ColumnSource],
        convert: &Convert,
    ) -> Result<u64, Failure> {
        let db = self.inner.tdb.db();
        let (lower, upper) = range_bounds(table_id(old), Bound::Unbounded, Bound::Unbounded);
        let mut iter = db
            .iterator(ReadOptions {
                snapshot: Some(db.snapshot()),
                lower_bound: Some(lower),
                upper_bound: upper,
                skip_cache_fill: true,
                ..ReadOptions::default()
            })
            .map_err(Error::from)?;
        let mut writer = RowWriter::new(db, def);
        iter.seek_to_first();
        while iter.valid() {
            let old_row = decode_row(old, iter.value())?;
            let row_number = writer.rows() + 1;
            let row = shadow::convert_row(old, def, sources, convert, &old_row, row_number)?;
            // A table without primary key keeps its row ids; one that loses its primary key
            // numbers its rows from 1.
            let row_id = if def.primary_key.columns.is_empty() {
                Some(
                    match iter.key().get(4..12).and_then(|b| b.try_into().ok()) {
                        Some(id) if old.primary_key.columns.is_empty() => u64::from_be_bytes(id),
                        _ => row_number,
                    },
                )
            } else {
                None
            };
            writer.put(&row, row_id)?;
            iter.next();
        }
        iter.status().map_err(Error::from)?;
        let rows = writer.finish()?;
        Ok(rows)
    }

    /// Renames tables, in order (so `a TO tmp, b TO a, tmp TO b` swaps two), atomically:
    /// all or none, in one synced write. Each is `(database, name, new database, new name)`.
    pub fn rename_tables(&self, renames: &[(&str, &str, &str, &str)]) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let mut catalog = (*self.inner.catalog()).clone();
        let ids: Vec<u32> = renames
            .iter()
            .filter_map(|&(database, name, _, _)| {
                catalog.table(database, name).map(|d| table_id(d))
            })
            .collect();
        let _tables = self.inner.lock_tables(&ids)?;
        let mut changed: Vec<Arc<TableDef>> = Vec::new();
        for &(database, name, to_database, to_name) in renames {
            let old = table_of(&catalog, database, name)?;
            let mut def = (*old).clone();
            to_database.clone_into(&mut def.database);
            to_name.clone_into(&mut def.name);
            check_target(&catalog, &old, &def)?;
            let def = Arc::new(def);
            catalog = replaced(&catalog, &old, def.clone());
            changed.retain(|d| table_id(d) != table_id(&def));
            changed.push(def);
        }
        let mut batch = WriteBatch::new();
        for def in &changed {
            batch.put(
                DEFAULT_KEYSPACE_ID,
                &system::table_key(TAG_TABLE, table_id(def)),
                &system::encode_table(def),
            )?;
        }
        self.inner.tdb.db().write(batch, &WriteOptions::sync())?;
        self.inner.install(catalog);
        Ok(())
    }
}

/// The caller's error for a failed rewrite: its own conversion error as it gave it, or the
/// table layer's error converted.
pub(crate) fn caller_error<E: From<Error> + 'static>(failure: Failure) -> E {
    match failure {
        Failure::Table(error) => E::from(error),
        Failure::Caller(error) => match error.downcast::<E>() {
            Ok(error) => *error,
            Err(_) => E::from(Error::InvalidArgument("a conversion failed".into())),
        },
    }
}

/// `catalog` with `old` replaced by `new` (which may have another name or database).
fn replaced(catalog: &Catalog, old: &TableDef, new: Arc<TableDef>) -> Catalog {
    let mut out = catalog.clone();
    if let Some(tables) = out.databases.get_mut(&old.database) {
        tables.remove(&old.name);
    }
    if let Some(tables) = out.databases.get_mut(&new.database) {
        tables.insert(new.name.clone(), new);
    }
    out
}

/// A renamed table's new name must be free and its database exist.
fn check_target(catalog: &Catalog, old: &TableDef, def: &TableDef) -> Result<()> {
    if def.database == old.database && def.name == old.name {
        return Ok(());
    }
    let Some(tables) = catalog.databases.get(&def.database) else {
        return Err(Error::NoSuchDatabase(def.database.clone()));
    };
    if tables.contains_key(&def.name) || catalog.view(&def.database, &def.name).is_some() {
        return Err(Error::TableExists {
            database: def.database.clone(),
            table: def.name.clone(),
        });
    }
    if def.name.is_empty() || def.name.len() > 64 {
        return Err(Error::InvalidArgument(format!(
            "table name '{}' must be 1 to 64 bytes",
            def.name
        )));
    }
    Ok(())
}

pub(crate) fn check_sources(
    old: &TableDef,
    def: &TableDef,
    sources: &[ColumnSource],
) -> Result<()> {
    if sources.len() != def.columns.len() {
        return Err(Error::InvalidArgument(format!(
            "{} column sources for {} columns",
            sources.len(),
            def.columns.len()
        )));
    }
    for (source, column) in sources.iter().zip(&def.columns) {
        match source {
            ColumnSource::Stored(p) if *p >= old.columns.len() => {
                return Err(Error::InvalidArgument(format!(
                    "column '{}' comes from column #{p} of {}",
                    column.name,
                    old.columns.len()
                )));
            }
            // A generated column's fill is never read: virtual ones are computed when
            // decoded, stored ones force a rewrite (generated.rs invariants 1 and 2).
            ColumnSource::Stored(_) | ColumnSource::Fill(_) if column.generated.is_some() => {}
            ColumnSource::Stored(_) => {}
            ColumnSource::Fill(value) => {
                // The fill must be a value the column accepts (invariant 2).
                let mut probe = def.clone();
                probe.columns = vec![column.clone()];
                encode_row(&mut Vec::new(), &probe, std::slice::from_ref(value))?;
            }
        }
    }
    Ok(())
}

/// Whether `def` describes `old`'s rows and index entries as they are (with a new past
/// version), so no row needs rewriting.
fn instant_possible(old: &TableDef, def: &TableDef, sources: &[ColumnSource]) -> bool {
    let source_column = |position: usize| match sources.get(position) {
        Some(ColumnSource::Stored(p)) => old.columns.get(*p).map(|c| (*p, c)),
        _ => None,
    };
    for (i, column) in def.columns.iter().enumerate() {
        if column.generated.as_ref().is_some_and(|g| g.stored) {
            // A STORED column's values must be computed (generated.rs invariant 2).
            match &sources[i] {
                ColumnSource::Stored(p) if old.columns[*p].generated == column.generated => {}
                _ => return false,
            }
        }
        if let ColumnSource::Stored(p) = &sources[i] {
            let was = &old.columns[*p];
            if !widens_losslessly(&was.ty, &column.ty) || (was.nullable && !column.nullable) {
                return false;
            }
        }
    }
    let same_index = |old_index: &IndexDef, index: &IndexDef| {
        old_index.unique == index.unique
            && old_index.columns.len() == index.columns.len()
            && old_index
                .columns
                .iter()
                .zip(&index.columns)
                .all(|(&o, &n)| {
                    source_column(n).is_some_and(|(p, was)| {
                        p == o
                            && def
                                .columns
                                .get(n)
                                .is_some_and(|c| same_key_encoding(was, c))
                    })
                })
    };
    if !same_index(&old.primary_key, &def.primary_key) {
        return false;
    }
    for index in &def.indexes {
        match old.indexes.iter().find(|o| o.index_id == index.index_id) {
            Some(old_index) if index.index_id != 0 && same_index(old_index, index) => {}
            _ => return false,
        }
    }
    let adds_version = sources.len() != old.columns.len()
        || sources
            .iter()
            .enumerate()
            .any(|(i, s)| !matches!(s, ColumnSource::Stored(p) if *p == i));
    !(adds_version && old.past_versions.len() >= MAX_PAST_VERSIONS)
}
