//! Row reads and writes inside one engine transaction (docs/format/table-keys.md for the keys
//! it writes).
//!
//! Invariants:
//! 1. Every write call (`insert`, `update`, `delete`) is atomic: it runs inside an engine
//!    savepoint and undoes its own partial writes when it fails.
//! 2. Uniqueness is checked by a locking read (`get_for_update`) of the primary key and of
//!    every unique entry's key before writing, so two transactions can never both insert the
//!    same key: the second waits for the first's commit and then sees its row, or, under
//!    REPEATABLE READ, fails with a snapshot conflict (reported as [`Error::Deadlock`]).
//! 3. `update` and `delete` maintain the indexes from the row as stored (read with a lock),
//!    not from the caller's copy, so a row changed by a commit after the caller's read (READ
//!    COMMITTED) cannot leave a stale index entry behind.
//! 4. A row's index entries are written only after its primary key is locked by this
//!    transaction (`locate`'s or the insert's `get_for_update`, or the hidden-key insert's
//!    `put`), so a non-unique entry, which ends in that primary key, needs no lock of its own
//!    and is written untracked (`put_entry`).
//! 5. After [`Error::Deadlock`] the transaction has been rolled back whole and goes on as a
//!    new, empty one (`MySQL` too ends the transaction on a deadlock).
//! 6. Every write call registers the transaction as a writer of its table first (online.rs,
//!    invariant 1) and maintains, besides the caller's definition's indexes, the indexes
//!    added online that the definition does not list yet ([`OnlineIndexes::added_for`]).
//! 7. Every write call passes the table's fence first, and every read checks it once read
//!    (fence.rs), so nothing is written or read under ids a rewriting ALTER replaced.
//! 8. Every write call of a table being rewritten online also writes the row's converted
//!    image under the new definition's ids, while it holds the row's lock (shadow.rs).
//! 9. Every read and write call takes the table's metadata lock shared first, and the
//!    transaction holds it until it ends (`metadata_lock.rs`), so DDL waits for it.

use std::borrow::Cow;
use std::ops::Bound;
use std::sync::Arc;

use shale_engine::{
    ReadOptions, Transaction, TransactionIterator, TransactionOptions, WriteOptions,
};

use crate::codec::key::range_bounds;
use crate::codec::row::{decode_projected, decode_row, encode_row};
use crate::cursor::{engine_range, IndexChoice, KeyRange, RowCursor};
use crate::error::{Error, Result};
use crate::index::{
    entry_for_row, is_hidden_pk, is_unique_entry, pk_key_from_values, pk_key_of_row, show_entry,
    table_id,
};
use crate::metadata_lock::SharedLocks;
use crate::online::{AddedIndex, OnlineIndexes, WriterSlot};
use crate::schema::TableDef;
use crate::store::StoreInner;
use crate::system::{TAG_AUTO_INCREMENT, TAG_ROW_ID};
use crate::value::Value;
use crate::zone;
use shale_engine::{Durability, IsolationLevel};

/// How a transaction reads and commits.
#[derive(Debug, Clone)]
pub struct TxnOptions {
    /// REPEATABLE READ by default: every read sees the snapshot taken when the transaction
    /// began, and writing or locking a row changed since fails with [`Error::Deadlock`]
    /// (`MyRocks`' behaviour; the transaction is then rolled back).
    pub isolation: IsolationLevel,
    /// None: the store's durability.
    pub durability: Option<Durability>,
    /// None: the store's lock wait timeout ([`StoreOptions::transactions`](crate::StoreOptions)).
    pub lock_wait_timeout: Option<std::time::Duration>,
}

impl Default for TxnOptions {
    fn default() -> Self {
        TxnOptions {
            isolation: IsolationLevel::RepeatableRead,
            durability: None,
            lock_wait_timeout: None,
        }
    }
}

/// What a read locks (FOR UPDATE, FOR SHARE, or a plain consistent read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    None,
    Shared,
    Exclusive,
}

/// One transaction over tables. Dropping it rolls it back. `Send`: a server session may keep
/// it between commands.
#[derive(Debug)]
pub struct TableTxn {
    txn: Transaction<'static>,
    /// Set by the first write; dropped after `txn` commits or rolls back (invariant 6).
    writer: Option<WriterSlot>,
    store: Arc<StoreInner>,
    options: TransactionOptions,
    /// Reused key buffer and collation scratch, so the hot paths allocate little.
    key: Vec<u8>,
    scratch: Vec<u16>,
    /// The UTC offset TIMESTAMP values cross the API at, in microseconds (zone.rs).
    zone_offset: i64,
    /// Rows written per table id, added to the store's counts at commit (`auto_recalc.rs`).
    changed: Vec<(u32, u64)>,
    /// The tables this transaction used, locked shared until it ends (invariant 9). The
    /// last field: released after `txn` is committed or rolled back.
    metadata: SharedLocks,
}

/// An index entry to write: (key, value).
type Entry = (Vec<u8>, Vec<u8>);

/// Which row an update or delete means: the row as read, or a hidden row id.
#[derive(Debug, Clone, Copy)]
enum Target<'r> {
    Row(&'r [Value]),
    RowId(u64),
}

impl TableTxn {
    /// The store this transaction belongs to (for catalog and statistics reads that run
    /// beside the transaction, as `information_schema` does).
    pub fn store(&self) -> crate::store::Store {
        crate::store::Store::from_inner(Arc::clone(&self.store))
    }

    pub(crate) fn begin(store: Arc<StoreInner>, options: &TxnOptions) -> Result<TableTxn> {
        let options = TransactionOptions {
            isolation: options.isolation,
            lock_wait_timeout: options.lock_wait_timeout,
            write_options: WriteOptions {
                durability: options.durability,
            },
            ..TransactionOptions::default()
        };
        let txn = store.tdb.begin_shared(options.clone())?;
        let metadata = SharedLocks::new(Arc::clone(&store.metadata));
        Ok(TableTxn {
            txn,
            writer: None,
            metadata,
            store,
            options,
            key: Vec::new(),
            scratch: Vec::new(),
            zone_offset: 0,
            changed: Vec::new(),
        })
    }

    /// From now on TIMESTAMP values go in and come out as wall-clock times `seconds` east of
    /// UTC (the session's `time_zone`; 0, UTC, by default). They are stored in UTC (zone.rs).
    pub fn set_time_zone_offset(&mut self, seconds: i32) {
        self.zone_offset = i64::from(seconds) * 1_000_000;
    }

    /// The UTC offset TIMESTAMP values are given in, in microseconds.
    pub(crate) fn zone_offset(&self) -> i64 {
        self.zone_offset
    }

    /// `row` as stored: TIMESTAMPs in UTC and in range (zone.rs invariant 2).
    fn row_to_utc(&self, table: &TableDef, mut row: Vec<Value>) -> Result<Vec<Value>> {
        if zone::has_timestamp(table) {
            zone::row_to_utc(table, &mut row, self.zone_offset)?;
        }
        if row.len() == table.columns.len() {
            crate::generated::complete(table, &mut row)?;
        }
        Ok(row)
    }

    /// A row as read, handed back to find its stored image: TIMESTAMPs in UTC.
    fn read_row_to_utc<'r>(&self, table: &TableDef, row: &'r [Value]) -> Cow<'r, [Value]> {
        if self.zone_offset == 0 || !zone::has_timestamp(table) {
            return Cow::Borrowed(row);
        }
        let mut utc = row.to_vec();
        zone::key_to_utc(table.columns.iter(), &mut utc, self.zone_offset);
        Cow::Owned(utc)
    }

    /// Primary key values as given, TIMESTAMPs moved to UTC.
    fn pk_to_utc<'r>(&self, table: &TableDef, pk: &'r [Value]) -> Cow<'r, [Value]> {
        if self.zone_offset == 0 || !zone::has_timestamp(table) {
            return Cow::Borrowed(pk);
        }
        let mut utc = pk.to_vec();
        let columns = table.primary_key.columns.iter();
        zone::key_to_utc(
            columns.filter_map(|&c| table.columns.get(c)),
            &mut utc,
            self.zone_offset,
        );
        Cow::Owned(utc)
    }

    /// Tags the engine transaction with its owner's number (the SQL layer's connection id),
    /// which `TransactionDb::transactions` shows; a restart after a deadlock keeps it.
    pub fn set_owner(&self, owner: u64) {
        self.txn.set_owner(owner);
    }

    pub(crate) fn engine(&mut self) -> &mut Transaction<'static> {
        &mut self.txn
    }

    /// Invariant 4: after a deadlock, start over as a fresh transaction.
    pub(crate) fn after<T>(&mut self, result: Result<T>) -> Result<T> {
        if matches!(result, Err(Error::Deadlock)) {
            self.metadata.release_all();
            self.changed.clear();
            if let Ok(fresh) = self.store.tdb.begin_shared(self.options.clone()) {
                fresh.set_owner(self.txn.owner());
                std::mem::replace(&mut self.txn, fresh).rollback();
            }
        }
        result
    }

    /// Takes the names of the views `views` (database, name) a statement reads shared until
    /// the transaction ends, as `MySQL` locks a view's name (`name_lock.rs`), so DROP and ALTER
    /// VIEW wait for it. After a wait for a DDL statement on one of them the statement was
    /// bound to a definition that may be gone: [`Error::TableDefChanged`] names the view
    /// (bind it again); [`Error::Deadlock`] rolls the transaction back (invariant 4).
    pub fn lock_view_names(&mut self, views: &[(String, String)]) -> Result<()> {
        for (database, name) in views {
            let first = self.metadata.is_empty();
            let key = crate::name_lock::name_key(database, name);
            let locked = self.metadata.lock_name(key, self.store.ddl_wait_timeout);
            if self.after(locked)? {
                if first {
                    self.txn.refresh_unused_snapshot();
                }
                return Err(Error::TableDefChanged {
                    table: name.clone(),
                });
            }
        }
        Ok(())
    }

    /// Takes `table`'s metadata lock shared, marked a writer's if `write`, unless this
    /// transaction holds it so (invariant 9).
    /// A transaction that had to wait for a DDL statement and finds its definition no longer
    /// usable fails as a read of a retired definition does ([`Error::TableDefChanged`] when
    /// the table was rewritten or an index dropped, [`Error::NoSuchTable`] when it was
    /// dropped or renamed).
    fn use_table(&mut self, table: &TableDef, write: bool) -> Result<()> {
        let id = table_id(table);
        // Only its session uses a temporary table (temporary.rs invariant 4).
        if self.metadata.holds(id, write) || self.store.temporary.contains(id) {
            return Ok(());
        }
        let first = self.metadata.is_empty();
        let locked = self
            .metadata
            .lock(id, &table.name, write, self.store.ddl_wait_timeout);
        if !self.after(locked)? {
            return Ok(());
        }
        if first {
            // Nothing read yet: the snapshot is taken after the DDL waited for, as the first
            // read of a `MySQL` transaction takes it after its metadata lock.
            self.txn.refresh_unused_snapshot();
        }
        check_still_usable(&self.store.catalog(), table)
    }

    /// Runs `body`, a write call to `table`, as one atomic statement (invariants 1, 6, 7
    /// and 9).
    fn statement<T>(
        &mut self,
        table: &TableDef,
        body: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        self.use_table(table, true)?;
        let epoch = self
            .writer
            .get_or_insert_with(|| OnlineIndexes::register_writer(&self.store.online))
            .writes(table_id(table));
        self.store.fences.before_write(
            table_id(table),
            &table.name,
            epoch,
            self.store.ddl_wait(),
        )?;
        self.txn.set_savepoint();
        let result = body(self);
        if result.is_ok() {
            let _ = self.txn.pop_savepoint();
            self.count_change(table_id(table));
        } else {
            let _ = self.txn.rollback_to_savepoint();
        }
        self.after(result)
    }

    pub(crate) fn read(&mut self, key: &[u8], lock: LockMode) -> Result<Option<Vec<u8>>> {
        Ok(match lock {
            LockMode::None => self.txn.get(key)?,
            LockMode::Shared => self.txn.get_for_share(key)?,
            LockMode::Exclusive => self.txn.get_for_update(key)?,
        })
    }

    /// Inserts a full row (one value per column); fails with `DuplicateKey` on a primary or
    /// unique key that exists. A table without primary key gets a fresh hidden row id.
    #[allow(clippy::needless_pass_by_value)] // the signature the SQL layer codes against
    pub fn insert(&mut self, table: &TableDef, row: Vec<Value>) -> Result<()> {
        let row = self.row_to_utc(table, row)?;
        self.statement(table, |t| t.insert_row(table, &row))
    }

    fn insert_row(&mut self, table: &TableDef, row: &[Value]) -> Result<()> {
        let mut value = Vec::with_capacity(64);
        encode_row(&mut value, table, row)?;
        self.note_auto_increment(table, row)?;
        let row_id = if is_hidden_pk(table) {
            Some(self.store.next_sequence(TAG_ROW_ID, table)?)
        } else {
            None
        };
        let mut pk_key = Vec::with_capacity(16);
        pk_key_of_row(&mut pk_key, table, row, row_id, &mut self.scratch)?;
        // A fresh hidden row id needs no check.
        if !is_hidden_pk(table) && self.txn.get_for_update(&pk_key)?.is_some() {
            return Err(Error::DuplicateKey {
                table: table.name.clone(),
                key: "PRIMARY".into(),
                entry: show_entry(row, &table.primary_key.columns),
            });
        }
        let entries = self.entries_checked(table, row, &pk_key, None)?;
        self.txn.put(&pk_key, &value)?;
        for (key, value) in entries {
            self.put_entry(&key, &value)?;
        }
        self.change_all_added(table, None, Some(row), &pk_key)?;
        self.write_shadow(table, None, Some((row, &pk_key)))
    }

    /// Invariant 8: keeps the shadow of a table being rewritten online in step with this
    /// write of a row (`old`: stored image and key before, `new`: after; None: no row).
    fn write_shadow(
        &mut self,
        table: &TableDef,
        old: Option<(&[Value], &[u8])>,
        new: Option<(&[Value], &[u8])>,
    ) -> Result<()> {
        match self.store.shadows.for_table(table) {
            Some(shadow) => shadow.write_for(table, &mut self.txn, old, new, &mut self.scratch),
            None => Ok(()),
        }
    }

    /// Moves a row's entry in an index added online from what the stored image `old` (under
    /// its row key) had to what `new` (under `new_key`) has; None: no row on that side.
    /// Unique entries are compared by value, not trusted by key (online.rs): one is deleted
    /// only if it points at this row, and another row's entry for the new key is a duplicate,
    /// which fails a published index's write and a building index's build. They are read
    /// locked at their newest version (online.rs, invariant 5): the fill writes them after a
    /// REPEATABLE READ writer's snapshot, which must not make that a write conflict.
    fn change_added(
        &mut self,
        table: &TableDef,
        added: &AddedIndex,
        old: Option<(&[Value], &[u8])>,
        new: Option<&[Value]>,
        new_key: &[u8],
    ) -> Result<()> {
        let index = added.index();
        let old_entry = old
            .map(|(row, key)| entry_for_row(table, index, row, key, &mut self.scratch))
            .transpose()?;
        let new_entry = new
            .map(|row| entry_for_row(table, index, row, new_key, &mut self.scratch))
            .transpose()?;
        if old_entry == new_entry {
            return Ok(());
        }
        if let Some((key, value)) = &old_entry {
            if !is_unique_entry(value) {
                self.txn.delete_untracked(key)?;
            } else if self.txn.get_for_update_latest(key)?.as_deref() == Some(&value[..]) {
                self.txn.delete(key)?;
            }
        }
        let (Some((key, value)), Some(row)) = (new_entry, new) else {
            return Ok(());
        };
        if !is_unique_entry(&value) {
            self.txn.put_untracked(&key, &value)?;
            return Ok(());
        }
        match self.txn.get_for_update_latest(&key)? {
            Some(other) if other != value => {
                let duplicate = Error::DuplicateKey {
                    table: table.name.clone(),
                    key: index.name.clone(),
                    entry: show_entry(row, &index.columns),
                };
                if added.is_published() {
                    return Err(duplicate);
                }
                added.fail(duplicate);
            }
            _ => self.txn.put(&key, &value)?,
        }
        Ok(())
    }

    /// Writes an index entry. A non-unique entry ends in the primary key of a row whose key
    /// this transaction has locked (and, under REPEATABLE READ, validated) before touching
    /// its entries, so nobody else can write that entry meanwhile: it is written blind,
    /// without a lock or conflict check of its own. A unique entry's key is locked.
    fn put_entry(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if is_unique_entry(value) {
            self.txn.put(key, value)?;
        } else {
            self.txn.put_untracked(key, value)?;
        }
        Ok(())
    }

    /// Deletes an index entry; locked or blind as [`put_entry`](Self::put_entry) says.
    fn delete_entry(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if is_unique_entry(value) {
            self.txn.delete(key)?;
        } else {
            self.txn.delete_untracked(key)?;
        }
        Ok(())
    }

    /// The entries of `row` in every secondary index, each unique one checked free (except
    /// where it equals the entry in `skip`, the row's own old entries).
    fn entries_checked(
        &mut self,
        table: &TableDef,
        row: &[Value],
        pk_key: &[u8],
        skip: Option<&[Entry]>,
    ) -> Result<Vec<Entry>> {
        let mut entries = Vec::with_capacity(table.indexes.len());
        for (i, index) in table.indexes.iter().enumerate() {
            let entry = entry_for_row(table, index, row, pk_key, &mut self.scratch)?;
            let unchanged = skip
                .and_then(|old| old.get(i))
                .is_some_and(|old| old.0 == entry.0);
            if index.unique
                && is_unique_entry(&entry.1)
                && !unchanged
                && self.txn.get_for_update(&entry.0)?.is_some()
            {
                return Err(Error::DuplicateKey {
                    table: table.name.clone(),
                    key: index.name.clone(),
                    entry: show_entry(row, &index.columns),
                });
            }
            entries.push(entry);
        }
        Ok(entries)
    }

    fn note_auto_increment(&mut self, table: &TableDef, row: &[Value]) -> Result<()> {
        if let Some(position) = table.columns.iter().position(|c| c.auto_increment) {
            let explicit = match row.get(position) {
                Some(Value::Int(v)) => u64::try_from(*v).ok(),
                Some(Value::UInt(v)) => Some(*v),
                _ => None,
            };
            if let Some(v) = explicit.filter(|&v| v > 0) {
                self.store.note_auto_increment(table, v)?;
            }
        }
        Ok(())
    }

    /// The row whose primary key is `pk` (for a table without primary key: its row id).
    pub fn get(
        &mut self,
        table: &TableDef,
        pk: &[Value],
        lock: LockMode,
    ) -> Result<Option<Vec<Value>>> {
        self.use_table(table, false)?;
        let pk = self.pk_to_utc(table, pk);
        let mut key = std::mem::take(&mut self.key);
        let result = pk_key_from_values(&mut key, table, &pk, &mut self.scratch)
            .and_then(|()| self.read(&key, lock))
            .and_then(|bytes| bytes.map(|b| decode_row(table, &b)).transpose())
            .and_then(|row| {
                self.store
                    .fences
                    .after_read(table_id(table), &table.name, self.txn.snapshot_seqno())
                    .map(|()| row)
            });
        self.key = key;
        let mut result = self.after(result);
        if let Ok(Some(row)) = &mut result {
            zone::values_to_local(table.columns.iter(), row, self.zone_offset);
        }
        result
    }

    /// Only the columns at `columns` (in that order) of the row whose primary key is `pk`:
    /// the hot path of `SELECT c FROM t WHERE id = ?`, which copies no other string.
    pub fn get_projected(
        &mut self,
        table: &TableDef,
        pk: &[Value],
        lock: LockMode,
        columns: &[usize],
    ) -> Result<Option<Vec<Value>>> {
        self.use_table(table, false)?;
        let pk = self.pk_to_utc(table, pk);
        let mut key = std::mem::take(&mut self.key);
        let result = pk_key_from_values(&mut key, table, &pk, &mut self.scratch)
            .and_then(|()| self.read(&key, lock))
            .and_then(|bytes| {
                bytes
                    .map(|b| decode_projected(table, &b, columns))
                    .transpose()
            })
            .and_then(|row| {
                self.store
                    .fences
                    .after_read(table_id(table), &table.name, self.txn.snapshot_seqno())
                    .map(|()| row)
            });
        self.key = key;
        let mut result = self.after(result);
        if let Ok(Some(row)) = &mut result {
            let projected = columns.iter().filter_map(|&c| table.columns.get(c));
            zone::values_to_local(projected, row, self.zone_offset);
        }
        result
    }

    /// The rows of several primary keys, in order (None where absent): an IN list. One
    /// engine get per key for now (the engine's transactions have no multi-get yet).
    pub fn get_many(
        &mut self,
        table: &TableDef,
        pks: &[Vec<Value>],
        lock: LockMode,
    ) -> Result<Vec<Option<Vec<Value>>>> {
        pks.iter().map(|pk| self.get(table, pk, lock)).collect()
    }

    /// Rows of `table` in `index` order within `range` (descending if `reverse`). With a lock
    /// mode, each row returned is locked (no gap locks yet) and read as of the newest commit.
    pub fn scan(
        &mut self,
        table: &TableDef,
        index: IndexChoice,
        range: KeyRange,
        reverse: bool,
        lock: LockMode,
    ) -> Result<RowCursor<'_>> {
        self.use_table(table, false)?;
        let range = crate::cursor::range_to_utc(table, index, range, self.zone_offset);
        let result = self.open_cursor(table, index, range);
        let (def, iter, secondary) = self.after(result)?;
        Ok(RowCursor::new(self, def, secondary, iter, reverse, lock))
    }

    fn open_cursor(
        &mut self,
        table: &TableDef,
        index: IndexChoice,
        range: KeyRange,
    ) -> Result<(Arc<TableDef>, TransactionIterator, Option<usize>)> {
        let def = self.store.shared_def(table);
        let (lower, upper) = engine_range(&def, index, range, &mut self.scratch)?;
        let iter = self.txn.iterator(ReadOptions {
            lower_bound: Some(lower),
            upper_bound: upper,
            ..ReadOptions::default()
        })?;
        self.store
            .fences
            .after_read(table_id(table), &table.name, self.txn.snapshot_seqno())?;
        let secondary = match index {
            IndexChoice::Primary => None,
            IndexChoice::Secondary(i) => Some(i),
        };
        Ok((def, iter, secondary))
    }

    /// Replaces `old` (as read) with `new`, maintaining every index. The row is found by
    /// `old`'s primary key and its stored image is what the old index entries are computed
    /// from (invariant 3); if it no longer exists nothing happens. In a table without primary
    /// key the first stored row equal to `old` is replaced (a scan).
    #[allow(clippy::needless_pass_by_value)] // the signature the SQL layer codes against
    pub fn update(&mut self, table: &TableDef, old: &[Value], new: Vec<Value>) -> Result<()> {
        let new = self.row_to_utc(table, new)?;
        let old = self.read_row_to_utc(table, old);
        self.statement(table, |t| t.update_locked(table, Target::Row(&old), &new))
    }

    /// [`update`](Self::update) of a row of a table without primary key, found by its hidden
    /// row id ([`RowCursor::row_id`]) instead of a scan.
    #[allow(clippy::needless_pass_by_value)] // as `update`
    pub fn update_by_row_id(
        &mut self,
        table: &TableDef,
        row_id: u64,
        new: Vec<Value>,
    ) -> Result<()> {
        let new = self.row_to_utc(table, new)?;
        self.statement(table, |t| {
            t.update_locked(table, Target::RowId(row_id), &new)
        })
    }

    fn update_locked(&mut self, table: &TableDef, old: Target<'_>, new: &[Value]) -> Result<()> {
        let Some((old_key, stored)) = self.locate(table, old)? else {
            return Ok(());
        };
        let mut value = Vec::with_capacity(64);
        encode_row(&mut value, table, new)?;
        self.note_auto_increment(table, new)?;
        let row_id = if is_hidden_pk(table) {
            old_key
                .get(4..)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
        } else {
            None
        };
        let mut new_key = Vec::with_capacity(old_key.len());
        pk_key_of_row(&mut new_key, table, new, row_id, &mut self.scratch)?;
        let old_entries = table
            .indexes
            .iter()
            .map(|index| entry_for_row(table, index, &stored, &old_key, &mut self.scratch))
            .collect::<Result<Vec<_>>>()?;
        if new_key != old_key {
            if self.txn.get_for_update(&new_key)?.is_some() {
                return Err(Error::DuplicateKey {
                    table: table.name.clone(),
                    key: "PRIMARY".into(),
                    entry: show_entry(new, &table.primary_key.columns),
                });
            }
            self.txn.delete(&old_key)?;
            for (key, value) in &old_entries {
                self.delete_entry(key, value)?;
            }
            let entries = self.entries_checked(table, new, &new_key, None)?;
            self.txn.put(&new_key, &value)?;
            for (key, value) in entries {
                self.put_entry(&key, &value)?;
            }
            self.change_all_added(table, Some((&stored, &old_key)), Some(new), &new_key)?;
            return self.write_shadow(table, Some((&stored, &old_key)), Some((new, &new_key)));
        }
        let new_entries = self.entries_checked(table, new, &new_key, Some(&old_entries))?;
        self.txn.put(&new_key, &value)?;
        for (old_entry, new_entry) in old_entries.iter().zip(&new_entries) {
            if old_entry == new_entry {
                continue;
            }
            if old_entry.0 != new_entry.0 {
                self.delete_entry(&old_entry.0, &old_entry.1)?;
            }
            self.put_entry(&new_entry.0, &new_entry.1)?;
        }
        self.change_all_added(table, Some((&stored, &old_key)), Some(new), &new_key)?;
        self.write_shadow(table, Some((&stored, &old_key)), Some((new, &new_key)))
    }

    /// [`change_added`](Self::change_added) for every index added online that `table` lacks.
    fn change_all_added(
        &mut self,
        table: &TableDef,
        old: Option<(&[Value], &[u8])>,
        new: Option<&[Value]>,
        new_key: &[u8],
    ) -> Result<()> {
        if let Some(added) = self.store.online.added_for(table) {
            for index in &added {
                self.change_added(table, index, old, new, new_key)?;
            }
        }
        Ok(())
    }

    /// The key and stored image of the row `row` (as read), locked; None if it is gone.
    fn locate(
        &mut self,
        table: &TableDef,
        target: Target<'_>,
    ) -> Result<Option<(Vec<u8>, Vec<Value>)>> {
        let row = match target {
            Target::RowId(id) => {
                let mut key = Vec::with_capacity(12);
                pk_key_from_values(&mut key, table, &[Value::UInt(id)], &mut self.scratch)?;
                return match self.txn.get_for_update(&key)? {
                    Some(bytes) => Ok(Some((key, decode_row(table, &bytes)?))),
                    None => Ok(None),
                };
            }
            Target::Row(row) => row,
        };
        if row.len() != table.columns.len() {
            return Err(Error::InvalidArgument(format!(
                "row of {} values for table '{}' of {} columns",
                row.len(),
                table.name,
                table.columns.len()
            )));
        }
        if is_hidden_pk(table) {
            return self.locate_hidden(table, row);
        }
        let mut key = Vec::with_capacity(16);
        pk_key_of_row(&mut key, table, row, None, &mut self.scratch)?;
        match self.txn.get_for_update(&key)? {
            Some(bytes) => Ok(Some((key, decode_row(table, &bytes)?))),
            None => Ok(None),
        }
    }

    fn locate_hidden(
        &mut self,
        table: &TableDef,
        row: &[Value],
    ) -> Result<Option<(Vec<u8>, Vec<Value>)>> {
        let (lower, upper) = range_bounds(table_id(table), Bound::Unbounded, Bound::Unbounded);
        let mut iter = self.txn.iterator(ReadOptions {
            lower_bound: Some(lower),
            upper_bound: upper,
            ..ReadOptions::default()
        })?;
        iter.seek_to_first();
        while iter.valid() {
            if decode_row(table, iter.value())? == row {
                let key = iter.key().to_vec();
                return Ok(self
                    .txn
                    .get_for_update(&key)?
                    .map(|b| decode_row(table, &b))
                    .transpose()?
                    .map(|r| (key, r)));
            }
            iter.next();
        }
        iter.status()?;
        Ok(None)
    }

    /// Deletes `row` (as read) and its index entries (the entries of the row as stored,
    /// invariant 3; nothing happens if the row is gone). In a table without primary key the
    /// first stored row equal to `row` is deleted (a scan).
    pub fn delete(&mut self, table: &TableDef, row: &[Value]) -> Result<()> {
        let row = self.read_row_to_utc(table, row);
        self.statement(table, |t| t.delete_locked(table, Target::Row(&row)))
    }

    /// [`delete`](Self::delete) of a row of a table without primary key, found by its hidden
    /// row id ([`RowCursor::row_id`]) instead of a scan.
    pub fn delete_by_row_id(&mut self, table: &TableDef, row_id: u64) -> Result<()> {
        self.statement(table, |t| t.delete_locked(table, Target::RowId(row_id)))
    }

    fn delete_locked(&mut self, table: &TableDef, target: Target<'_>) -> Result<()> {
        let Some((key, stored)) = self.locate(table, target)? else {
            return Ok(());
        };
        self.txn.delete(&key)?;
        for index in &table.indexes {
            let (entry, value) = entry_for_row(table, index, &stored, &key, &mut self.scratch)?;
            self.delete_entry(&entry, &value)?;
        }
        self.change_all_added(table, Some((&stored, &key)), None, &key)?;
        self.write_shadow(table, Some((&stored, &key)), None)
    }

    /// The next `AUTO_INCREMENT` value of `table`, never handed out twice, even across restarts.
    /// Values are taken from an in-memory counter outside the transaction (a rolled-back
    /// insert leaves a gap, as in `InnoDB`); the counter's reservation is persisted ahead of
    /// use, 1024 values at a time. An insert with an explicit larger value moves it past.
    pub fn next_auto_increment(&mut self, table: &TableDef) -> Result<u64> {
        if !table.columns.iter().any(|c| c.auto_increment) {
            return Err(Error::InvalidArgument(format!(
                "table '{}' has no AUTO_INCREMENT column",
                table.name
            )));
        }
        self.store.next_sequence(TAG_AUTO_INCREMENT, table)
    }

    /// Marks a savepoint (`SAVEPOINT`, or the start of a multi-row statement); savepoints nest.
    pub fn set_savepoint(&mut self) {
        self.txn.set_savepoint();
    }

    /// Undoes every change since the newest savepoint and removes it (locks stay held).
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let result = self.txn.rollback_to_savepoint().map_err(Error::from);
        self.after(result)
    }

    /// Removes the newest savepoint, keeping the changes.
    pub fn release_savepoint(&mut self) -> Result<()> {
        let result = self.txn.pop_savepoint().map_err(Error::from);
        self.after(result)
    }

    /// Whether the transaction has written anything (a read-only transaction's commit costs
    /// nothing).
    pub fn has_writes(&self) -> bool {
        self.txn.pending_rows() > 0
    }

    pub fn commit(self) -> Result<()> {
        self.txn.commit()?;
        for (table, rows) in self.changed {
            self.store.auto_recalc.note_changes(table, rows);
        }
        Ok(())
    }

    /// Counts one row written to `table` (`auto_recalc.rs`): a transaction writes few tables.
    fn count_change(&mut self, table: u32) {
        match self.changed.iter_mut().find(|(id, _)| *id == table) {
            Some((_, rows)) => *rows += 1,
            None => self.changed.push((table, 1)),
        }
    }

    pub fn rollback(self) {
        self.txn.rollback();
    }
}

/// Fails when `bound`, a definition a statement was bound to before it waited for a DDL
/// statement, is no longer usable in `catalog` ([`Error::NoSuchTable`] when the table was
/// dropped or renamed, [`Error::TableDefChanged`] when it was rewritten or lost an index).
pub(crate) fn check_still_usable(catalog: &crate::schema::Catalog, bound: &TableDef) -> Result<()> {
    match catalog.table(&bound.database, &bound.name) {
        None => Err(Error::NoSuchTable {
            database: bound.database.clone(),
            table: bound.name.clone(),
        }),
        Some(current) if still_usable(current, bound) => Ok(()),
        Some(_) => Err(Error::TableDefChanged {
            table: bound.name.clone(),
        }),
    }
}

/// Whether `bound`, a definition a statement was bound to before it waited for a DDL
/// statement, may still be used now that `current` is the catalog's: the same table id
/// (not rewritten) and none of its indexes dropped. Indexes added since are maintained
/// anyway (online.rs), and rows of an older schema version stay readable.
fn still_usable(current: &TableDef, bound: &TableDef) -> bool {
    table_id(current) == table_id(bound)
        && bound
            .indexes
            .iter()
            .all(|b| current.indexes.iter().any(|c| c.index_id == b.index_id))
}
