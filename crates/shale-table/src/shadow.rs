//! The online rewriting ALTER TABLE: the new definition kept up to date as a *shadow* of the
//! old table while its rows are copied, so writers wait only for the switch.
//!
//! The rewrite runs in four steps (`Store::alter_table`, alter.rs), as online CREATE INDEX
//! does (online.rs):
//! 1. The new definition (under fresh index ids) is registered here as the shadow of the old
//!    table. From then on every write of a row of the old table also writes the row's
//!    converted image and its entries in the new indexes under the new ids, deleting what the
//!    converted old image had there ([`Shadow::write_through`]).
//! 2. The ALTER waits until every write transaction that wrote the table before step 1 has
//!    ended (online.rs).
//! 3. It reads the old table's primary keys from a snapshot taken after the wait and, in small
//!    READ COMMITTED transactions, locks each old row, reads its newest committed image and
//!    writes its converted form under the new ids ([`fill`]); a row deleted meanwhile is
//!    skipped (its writer deleted its shadow too).
//! 4. It takes the table's fence (fence.rs) only for the switch: raise, wait for older
//!    writers (they may still be writing the shadow), write the new definition and
//!    range-delete the old ids, retire the old id.
//!
//! A conversion a writer cannot make (out of range, a duplicate in a new unique index, ...)
//! does not fail the writer's statement: it is recorded here and the ALTER fails at its end
//! with it (`MySQL`'s online ALTER reports such errors at its end too), deleting the new ids.
//!
//! A rewrite that keeps the primary key's bytes (the same key columns, each with an unchanged
//! key encoding, or no primary key before and after) finds a row's shadow under its old key
//! bytes with the new id: the old row's lock also guards its shadow, whose key and
//! non-unique entries are written without locks of their own.
//!
//! A new primary key (other columns, a key column whose key bytes change, a primary key added
//! to a table without one): a row's shadow lives under the key the new definition gives its
//! converted image, which two old rows may share (a duplicate that fails the ALTER). So each
//! shadow row has a *claim*: a key under one more fresh id (`claims`), the shadow's key bytes
//! after their table id, whose value is the old row's key. A claim is locked at its newest
//! version before the shadow under it is written or deleted, and the shadow of an old image
//! is deleted only if its claim names that row ([`Shadow::write_rekeyed`]); a claim naming
//! another row is a duplicate new primary key. The fill claims the key of each row it
//! converts, or finds it claimed by the row itself (a writer got there first) or by another
//! (a duplicate). The claims are range-deleted by the switch, or with the other new ids on
//! failure. Dropping the primary key of a table that has one (rows then need fresh hidden row
//! ids) still holds writers at the fence for the whole copy (alter.rs). Claims would make it
//! online too, the other way round: a claim keyed by the *old* key, naming the hidden row id
//! its shadow got (allocated by whoever claims first, writer or fill), so a writer finds the
//! shadow of the row it changes. Not built yet.
//!
//! Invariants:
//! 1. A shadow is registered before the writer epoch flips (step 2), so every transaction
//!    that first writes the table after the flip maintains it; older ones are waited for
//!    before the snapshot.
//! 2. A shadow row describes the converted newest committed image of its old row, or the image
//!    its lock holder is writing: it is written only under the old row's lock.
//! 3. A unique entry of the shadow is deleted only when it points at the writer's own row, and
//!    another row's entry for a key a row needs is a duplicate that fails the ALTER. It is
//!    read locked at its newest version (`get_for_update_latest`): the fill writes it after
//!    a REPEATABLE READ writer's snapshot, which must not make that a write conflict.
//! 4. A failed rewrite's ids are never published; keys a writer adds under them after the
//!    failure are swept at the next open (build.rs, invariant 2).
//! 5. Under a new primary key, a shadow row exists exactly where a claim names an old row
//!    whose converted image has that key, and is that image: both are written and deleted
//!    together, under the claim's lock and the old row's.

use std::any::Any;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use shale_engine::{
    Durability, IsolationLevel, ReadOptions, Transaction, TransactionDb, TransactionOptions,
    WriteOptions,
};

use crate::codec::key::range_bounds;
use crate::codec::row::{decode_row, encode_row};
use crate::error::{Error, Result};
use crate::index::{entry_for_row, is_unique_entry, pk_key_of_row, show_entry, table_id};
use crate::schema::{ColumnDef, ColumnSource, TableDef};
use crate::value::Value;

/// Why a rewrite failed: the table layer's error, or the caller's conversion error (kept as
/// the caller's type, to be handed back as it was).
pub(crate) enum Failure {
    Table(Error),
    Caller(Box<dyn Any + Send>),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Table(error)
    }
}

impl From<shale_engine::Error> for Failure {
    fn from(error: shale_engine::Error) -> Self {
        Failure::Table(error.into())
    }
}

impl std::fmt::Debug for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Table(error) => write!(f, "{error:?}"),
            Failure::Caller(_) => f.write_str("a conversion error"),
        }
    }
}

/// A conversion callable from any writer's thread, its error type erased.
pub(crate) type Convert =
    dyn Fn(&ColumnDef, &ColumnDef, Value, u64) -> Result<Value, Failure> + Send + Sync;
pub(crate) type SharedConvert = Arc<Convert>;

/// A converted row and its key under the new ids.
type Image = (Vec<Value>, Vec<u8>);

/// Rows per fill transaction: small, so a writer waiting for one of its locks waits briefly.
const FILL_ROWS: usize = 256;
const FILL_DEADLOCK_RETRIES: u32 = 100;
const FILL_TIMEOUT_RETRIES: u32 = 3;

/// The new definition of a table being rewritten online.
pub(crate) struct Shadow {
    pub(crate) old: Arc<TableDef>,
    pub(crate) new: Arc<TableDef>,
    sources: Vec<ColumnSource>,
    convert: SharedConvert,
    /// Under a new primary key: the index id of the claims (module doc).
    claims: Option<u32>,
    failed: AtomicBool,
    failure: Mutex<Option<Failure>>,
}

impl std::fmt::Debug for Shadow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow")
            .field("old", &self.old.name)
            .field("new_id", &table_id(&self.new))
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl Shadow {
    pub(crate) fn new(
        old: Arc<TableDef>,
        new: Arc<TableDef>,
        sources: Vec<ColumnSource>,
        convert: SharedConvert,
        claims: Option<u32>,
    ) -> Shadow {
        Shadow {
            old,
            new,
            sources,
            convert,
            claims,
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// Records why the rewrite must fail (the first reason is kept).
    fn fail(&self, failure: Failure) {
        let mut slot = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(failure);
        }
        self.failed.store(true, Ordering::Release);
    }

    /// Fails with the reason a writer recorded, if any (taken, once).
    pub(crate) fn check(&self) -> Result<(), Failure> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(self
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| Error::InvalidArgument("the rewrite failed".into()).into()))
    }

    /// `old_row` (a stored row of the old definition) converted to the new definition;
    /// `row` counts rows from 1, for messages.
    pub(crate) fn convert_row(&self, old_row: &[Value], row: u64) -> Result<Vec<Value>, Failure> {
        convert_row(
            &self.old,
            &self.new,
            &self.sources,
            &*self.convert,
            old_row,
            row,
        )
    }

    /// The key of an old row's shadow: the same key bytes under the new table id.
    fn shadow_key(&self, old_key: &[u8]) -> Vec<u8> {
        let mut key = table_id(&self.new).to_be_bytes().to_vec();
        key.extend_from_slice(old_key.get(4..).unwrap_or_default());
        key
    }

    /// A writer's half of step 1: the row that was `old` (stored image, key under the old id)
    /// is now `new` (image and key; None: deleted); make the shadow match, in the writer's
    /// transaction `txn`, which holds the old row's lock (and the new key's). A conversion
    /// or duplicate that fails is recorded for the ALTER, not returned.
    pub(crate) fn write_through(
        &self,
        txn: &mut Transaction<'_>,
        old: Option<(&[Value], &[u8])>,
        new: Option<(&[Value], &[u8])>,
        scratch: &mut Vec<u16>,
    ) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Ok(()); // the ALTER fails; its ids are discarded
        }
        if let Some(claims) = self.claims {
            return self.write_rekeyed(txn, claims, old, new, scratch);
        }
        let new = match new {
            Some((row, key)) => match self.convert_row(row, 1) {
                Ok(converted) => Some((converted, self.shadow_key(key))),
                Err(failure) => {
                    self.fail(failure);
                    return Ok(());
                }
            },
            None => None,
        };
        // An old image that does not convert never had a shadow (neither the fill nor a
        // writer could write one); only its key may need deleting.
        let mut old_image = None;
        if let Some((row, key)) = old {
            let key = self.shadow_key(key);
            if let Ok(converted) = self.convert_row(row, 1) {
                old_image = Some((converted, key));
            } else if new.as_ref().is_none_or(|(_, k)| *k != key) {
                txn.delete_untracked(&key)?;
            }
        }
        let old = old_image;
        let written = self.rewrite(txn, old.as_ref(), new.as_ref(), scratch);
        if let Err(Error::DuplicateKey { table, key, entry }) = written {
            self.fail(Error::DuplicateKey { table, key, entry }.into());
            return Ok(());
        }
        written
    }

    /// `old_row` converted (`row` as [`convert_row`](Self::convert_row)'s) and its key under
    /// the new primary key.
    fn rekeyed(
        &self,
        old_row: &[Value],
        row: u64,
        scratch: &mut Vec<u16>,
    ) -> Result<Image, Failure> {
        let converted = self.convert_row(old_row, row)?;
        let mut key = Vec::with_capacity(16);
        pk_key_of_row(&mut key, &self.new, &converted, None, scratch)?;
        Ok((converted, key))
    }

    /// [`write_through`](Self::write_through) under a new primary key (module doc,
    /// invariant 5): the old image's shadow is deleted if its claim names this row, the new
    /// image's key is claimed for it, or found another row's (a duplicate, recorded).
    fn write_rekeyed(
        &self,
        txn: &mut Transaction<'_>,
        claims: u32,
        old: Option<(&[Value], &[u8])>,
        new: Option<(&[Value], &[u8])>,
        scratch: &mut Vec<u16>,
    ) -> Result<()> {
        let new = match new {
            Some((row, key)) => match self.rekeyed(row, 1, scratch) {
                Ok(image) => Some((image, key)),
                Err(failure) => {
                    self.fail(failure);
                    return Ok(());
                }
            },
            None => None,
        };
        // An old image that does not convert has no shadow; one whose claim is missing (not
        // filled yet) or another row's (a duplicate, recorded by whoever met it) has none
        // of its own.
        let mut held = None;
        if let Some((row, key)) = old {
            if let Ok(image) = self.rekeyed(row, 1, scratch) {
                let claim = claim_key(claims, &image.1);
                if txn.get_for_update_latest(&claim)?.as_deref() == Some(key) {
                    held = Some((image, claim));
                }
            }
        }
        let mut new_claim = None;
        if let Some(((row, shadow_key), key)) = &new {
            let claim = claim_key(claims, shadow_key);
            let owner = match &held {
                Some((_, old_claim)) if *old_claim == claim => None,
                _ => txn.get_for_update_latest(&claim)?,
            };
            if owner.is_some_and(|owner| owner != *key) {
                self.fail(duplicate_primary(&self.new, row).into());
                return Ok(());
            }
            new_claim = Some((claim, *key));
        }
        if let Some((_, claim)) = &held {
            if new_claim.as_ref().is_none_or(|(c, _)| c != claim) {
                txn.delete(claim)?;
            }
        }
        if let Some((claim, key)) = &new_claim {
            txn.put(claim, key)?;
        }
        let old = held.map(|(image, _)| image);
        let new = new.map(|(image, _)| image);
        let written = self.rewrite(txn, old.as_ref(), new.as_ref(), scratch);
        if let Err(Error::DuplicateKey { table, key, entry }) = written {
            self.fail(Error::DuplicateKey { table, key, entry }.into());
            return Ok(());
        }
        written
    }

    /// The fill's half under a new primary key, for the old row `key` whose newest image is
    /// `old_row` (locked): claims the converted image's key and writes it, unless the row
    /// claimed it already (a writer wrote its shadow after the fill's snapshot).
    fn fill_rekeyed(
        &self,
        txn: &mut Transaction<'_>,
        claims: u32,
        key: &[u8],
        old_row: &[Value],
        row: u64,
        scratch: &mut Vec<u16>,
    ) -> Result<(), Failure> {
        let image = self.rekeyed(old_row, row, scratch)?;
        let claim = claim_key(claims, &image.1);
        match txn.get_for_update_latest(&claim).map_err(Error::from)? {
            None => {
                txn.put(&claim, key).map_err(Error::from)?;
                Ok(self.rewrite(txn, None, Some(&image), scratch)?)
            }
            Some(owner) if owner == key => Ok(()),
            Some(_) => Err(duplicate_primary(&self.new, &image.0).into()),
        }
    }

    /// Replaces the shadow of `old` (converted image, shadow key) with `new`'s.
    fn rewrite(
        &self,
        txn: &mut Transaction<'_>,
        old: Option<&Image>,
        new: Option<&Image>,
        scratch: &mut Vec<u16>,
    ) -> Result<()> {
        let def = &*self.new;
        let mut old_entries = Vec::new();
        if let Some((row, key)) = old {
            for index in &def.indexes {
                old_entries.push(entry_for_row(def, index, row, key, scratch)?);
            }
        }
        let mut new_entries = Vec::new();
        if let Some((row, key)) = new {
            for index in &def.indexes {
                new_entries.push(entry_for_row(def, index, row, key, scratch)?);
            }
        }
        // Entries of the old image that the new one does not have.
        for (key, value) in &old_entries {
            if new_entries.iter().any(|(k, v)| k == key && v == value) {
                continue;
            }
            if !is_unique_entry(value) {
                txn.delete_untracked(key)?;
            } else if txn.get_for_update_latest(key)?.as_deref() == Some(&value[..]) {
                txn.delete(key)?;
            }
        }
        match (old, new) {
            (Some((_, old_key)), Some((_, new_key))) if old_key == new_key => {}
            (Some((_, old_key)), _) => txn.delete_untracked(old_key)?,
            _ => {}
        }
        let Some((row, key)) = new else {
            return Ok(());
        };
        let mut value = Vec::with_capacity(64);
        encode_row(&mut value, def, row)?;
        txn.put_untracked(key, &value)?;
        put_entries(txn, def, row, &new_entries, &old_entries)
    }
}

/// Writes `entries` of `row` (skipping those already in `had`); a unique entry is checked
/// free or already this row's (invariant 3).
fn put_entries(
    txn: &mut Transaction<'_>,
    def: &TableDef,
    row: &[Value],
    entries: &[(Vec<u8>, Vec<u8>)],
    had: &[(Vec<u8>, Vec<u8>)],
) -> Result<()> {
    for (i, (key, value)) in entries.iter().enumerate() {
        if had.iter().any(|(k, v)| k == key && v == value) {
            continue;
        }
        if !is_unique_entry(value) {
            txn.put_untracked(key, value)?;
            continue;
        }
        match txn.get_for_update_latest(key)? {
            Some(other) if other != *value => {
                let index = &def.indexes[i];
                return Err(Error::DuplicateKey {
                    table: def.name.clone(),
                    key: index.name.clone(),
                    entry: show_entry(row, &index.columns),
                });
            }
            Some(_) => {}
            None => txn.put(key, value)?,
        }
    }
    Ok(())
}

/// The claim on the new row key `key` (module doc): under the claims' id, the key's bytes
/// after its table id.
fn claim_key(claims: u32, key: &[u8]) -> Vec<u8> {
    let mut claim = claims.to_be_bytes().to_vec();
    claim.extend_from_slice(key.get(4..).unwrap_or_default());
    claim
}

/// The error for a second row with `row`'s new primary key.
fn duplicate_primary(def: &TableDef, row: &[Value]) -> Error {
    Error::DuplicateKey {
        table: def.name.clone(),
        key: "PRIMARY".into(),
        entry: show_entry(row, &def.primary_key.columns),
    }
}

/// `old_row` of `old` converted to `new`: each column from its source, a stored value through
/// `convert` unless it reads the same in the new type; then the generated columns.
pub(crate) fn convert_row(
    old: &TableDef,
    new: &TableDef,
    sources: &[ColumnSource],
    convert: &Convert,
    old_row: &[Value],
    row_number: u64,
) -> Result<Vec<Value>, Failure> {
    let mut row = Vec::with_capacity(new.columns.len());
    for (column, source) in new.columns.iter().zip(sources) {
        row.push(match source {
            ColumnSource::Fill(v) => v.clone(),
            ColumnSource::Stored(p) => {
                let was = &old.columns[*p];
                let v = old_row[*p].clone();
                if crate::alter::widens_losslessly(&was.ty, &column.ty)
                    && (column.nullable || !matches!(v, Value::Null))
                {
                    v
                } else {
                    convert(was, column, v, row_number)?
                }
            }
        });
    }
    crate::generated::recompute_all(new, &mut row)?;
    if new.has_virtual_columns() {
        crate::generated::complete(new, &mut row)?;
    }
    Ok(row)
}

/// Step 3: writes the converted image of every row of the snapshot that still exists, each
/// under its old row's lock (invariant 2). Returns the rows written.
pub(crate) fn fill(tdb: &Arc<TransactionDb>, shadow: &Shadow) -> Result<u64, Failure> {
    let db = tdb.db();
    let (lower, upper) = range_bounds(table_id(&shadow.old), Bound::Unbounded, Bound::Unbounded);
    let mut iter = db.iterator(ReadOptions {
        snapshot: Some(db.snapshot()),
        lower_bound: Some(lower),
        upper_bound: upper,
        skip_cache_fill: true,
        ..ReadOptions::default()
    })?;
    iter.seek_to_first();
    let mut keys = Vec::with_capacity(FILL_ROWS);
    let mut rows = 0;
    loop {
        keys.clear();
        while iter.valid() && keys.len() < FILL_ROWS {
            keys.push(iter.key().to_vec());
            iter.next();
        }
        iter.status()?;
        if keys.is_empty() {
            shadow.check()?;
            return Ok(rows);
        }
        rows += fill_retrying(tdb, shadow, &keys, rows)?;
    }
}

fn fill_retrying(
    tdb: &Arc<TransactionDb>,
    shadow: &Shadow,
    keys: &[Vec<u8>],
    before: u64,
) -> Result<u64, Failure> {
    let (mut deadlocks, mut timeouts) = (0, 0);
    loop {
        shadow.check()?;
        match fill_rows(tdb, shadow, keys, before) {
            Err(Failure::Table(Error::Deadlock)) if deadlocks < FILL_DEADLOCK_RETRIES => {
                deadlocks += 1;
            }
            Err(Failure::Table(Error::LockWaitTimeout)) if timeouts < FILL_TIMEOUT_RETRIES => {
                timeouts += 1;
            }
            other => return other,
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One fill transaction over `keys` (old row keys); `before` rows were written before them.
/// Not synced: the synced switch makes it durable, and a crash before it sweeps it.
fn fill_rows(
    tdb: &Arc<TransactionDb>,
    shadow: &Shadow,
    keys: &[Vec<u8>],
    before: u64,
) -> Result<u64, Failure> {
    let mut txn = tdb.begin(TransactionOptions {
        isolation: IsolationLevel::ReadCommitted,
        write_options: WriteOptions {
            durability: Some(Durability::Buffered),
        },
        ..TransactionOptions::default()
    })?;
    let mut scratch = Vec::new();
    let mut rows = 0;
    for key in keys {
        let Some(bytes) = txn.get_for_update(key).map_err(Error::from)? else {
            continue; // deleted since the snapshot, with its shadow
        };
        let old_row = decode_row(&shadow.old, &bytes)?;
        let number = before + rows + 1;
        if let Some(claims) = shadow.claims {
            shadow.fill_rekeyed(&mut txn, claims, key, &old_row, number, &mut scratch)?;
        } else {
            let row = shadow.convert_row(&old_row, number)?;
            let new = (row, shadow.shadow_key(key));
            shadow.rewrite(&mut txn, None, Some(&new), &mut scratch)?;
        }
        rows += 1;
    }
    txn.commit().map_err(Error::from)?;
    Ok(rows)
}

/// The tables being rewritten online, by old table id.
#[derive(Debug, Default)]
pub(crate) struct Shadows {
    /// Whether `map` holds anything: the writers' fast path reads only this.
    any: AtomicBool,
    map: RwLock<HashMap<u32, Arc<Shadow>>>,
}

impl Shadows {
    /// Registers `shadow` (step 1; invariant 1: before the epoch flips).
    pub(crate) fn register(&self, shadow: Arc<Shadow>) {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        map.insert(table_id(&shadow.old), shadow);
        self.any.store(true, Ordering::SeqCst);
    }

    pub(crate) fn remove(&self, old_table_id: u32) {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        map.remove(&old_table_id);
        self.any.store(!map.is_empty(), Ordering::SeqCst);
    }

    /// The shadow a writer of `table` must maintain, if its table is being rewritten.
    pub(crate) fn for_table(&self, table: &TableDef) -> Option<Arc<Shadow>> {
        if !self.any.load(Ordering::SeqCst) {
            return None;
        }
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&table_id(table))
            .cloned()
    }
}

/// Whether `def` keeps `old`'s primary key bytes (module doc), given where its columns come
/// from: then a row's shadow is under its old key bytes, and no claims are needed.
pub(crate) fn keeps_primary_key(
    old: &TableDef,
    def: &TableDef,
    sources: &[ColumnSource],
    same_key_encoding: impl Fn(&ColumnDef, &ColumnDef) -> bool,
) -> bool {
    let (from, to) = (&old.primary_key.columns, &def.primary_key.columns);
    from.len() == to.len()
        && from.iter().zip(to).all(|(&o, &n)| {
            matches!(sources.get(n), Some(ColumnSource::Stored(p)) if *p == o)
                && def
                    .columns
                    .get(n)
                    .is_some_and(|c| same_key_encoding(&old.columns[o], c))
        })
}

/// Whether a writer bound to `table` (a definition with the shadow's old id) can maintain
/// the shadow: it must place the columns as the old definition does.
pub(crate) fn writer_matches(shadow: &Shadow, table: &TableDef) -> bool {
    table.schema_version == shadow.old.schema_version
        && table.columns.len() == shadow.old.columns.len()
}

/// The error a writer bound to another version of the table records: its rows cannot be
/// converted with the shadow's column sources.
pub(crate) fn stale_writer(table: &TableDef) -> Failure {
    Error::TableDefChanged {
        table: table.name.clone(),
    }
    .into()
}

impl Shadow {
    /// A writer's entry point: [`write_through`](Self::write_through) for a writer bound to
    /// `table`, or a recorded failure if it is bound to another version of the table.
    pub(crate) fn write_for(
        &self,
        table: &TableDef,
        txn: &mut Transaction<'_>,
        old: Option<(&[Value], &[u8])>,
        new: Option<(&[Value], &[u8])>,
        scratch: &mut Vec<u16>,
    ) -> Result<()> {
        if !writer_matches(self, table) {
            self.fail(stale_writer(table));
            return Ok(());
        }
        self.write_through(txn, old, new, scratch)
    }
}
