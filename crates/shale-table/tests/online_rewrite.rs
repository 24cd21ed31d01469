//! The online rewriting ALTER TABLE (shadow.rs): writers go on while the rows are copied and
//! maintain the new definition themselves; every row ends as its expected conversion; an
//! error a writer meets fails the ALTER at its end and leaves the table as it was.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shale_engine::{IsolationLevel, Options, ReadOptions};
use shale_fs::{CrashMode, MemFs};
use shale_table::{
    AlterMethod, Collation, ColumnDef, ColumnSource, ColumnType, ConvertFn, Error, IndexChoice,
    IndexDef, KeyRange, LockMode, Store, StoreOptions, TableChange, TableDef, TxnOptions, Value,
};

const INT: ColumnType = ColumnType::Int { unsigned: false };

fn open(fs: &MemFs) -> Store {
    let options = StoreOptions {
        engine: Options {
            file_system: Arc::new(fs.clone()),
            ..Options::default()
        },
        ..StoreOptions::default()
    };
    Store::open("/db", options).unwrap()
}

fn column(name: &str, ty: ColumnType) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty,
        nullable: true,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    }
}

/// `t (id INT PRIMARY KEY, k INT, c VARCHAR(20), KEY k (k), UNIQUE KEY kc (k, c))` with
/// rows `(id, id % 97, "{id}")` for ids `0..n`; `c` holds decimal digits.
fn setup(store: &Store, n: i64) {
    store.create_database("d").unwrap();
    let varchar = ColumnType::VarChar {
        len: 20,
        collation: Collation::Utf8mb4GeneralCi,
    };
    let index = |name: &str, columns, unique| IndexDef {
        name: name.into(),
        columns,
        unique,
        index_id: 0,
    };
    let t = store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column("id", INT), column("k", INT), column("c", varchar)],
            primary_key: index("PRIMARY", vec![0], true),
            indexes: vec![index("k", vec![1], false), index("kc", vec![1, 2], true)],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..n {
        txn.insert(&t, row(&t, id, id % 97, id)).unwrap();
    }
    txn.commit().unwrap();
}

fn table(store: &Store) -> Arc<TableDef> {
    store.catalog().table("d", "t").unwrap().clone()
}

/// Row `(id, k, c)` shaped for `t` as it is now: `c` text before the ALTER, INT after.
fn row(t: &TableDef, id: i64, k: i64, c: i64) -> Vec<Value> {
    let c = if matches!(t.columns[2].ty, ColumnType::VarChar { .. }) {
        Value::Bytes(c.to_string().into_bytes())
    } else {
        Value::Int(c)
    };
    vec![Value::Int(id), Value::Int(k), c]
}

/// The conversion of MODIFY c INT: digits parse, anything else fails.
fn parse(_: &ColumnDef, _: &ColumnDef, v: Value, row: u64) -> Result<Value, Error> {
    match v {
        Value::Bytes(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .map(Value::Int)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "incorrect integer value '{}' at row {row}",
                    String::from_utf8_lossy(&b)
                ))
            }),
        other => Ok(other),
    }
}

/// ALTER TABLE t MODIFY c INT: a rewrite (c is in `kc`) that keeps the primary key.
fn modify_c(store: &Store, convert: ConvertFn<Error>) -> Result<AlterMethod, Error> {
    let mut def = (*table(store)).clone();
    def.columns[2].ty = INT;
    let sources = (0..3).map(ColumnSource::Stored).collect();
    store
        .alter_table("d", "t", TableChange { def, sources }, convert)
        .map(|(_, method)| method)
}

/// Every row of `t` as `(id, k, c)`, after checking that its indexes agree with them.
fn contents(store: &Store) -> BTreeMap<i64, (i64, i64)> {
    let t = table(store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok(), "indexes disagree with rows: {check:?}");
    let mut cursor = txn
        .scan(
            &t,
            IndexChoice::Primary,
            KeyRange::all(),
            false,
            LockMode::None,
        )
        .unwrap();
    let mut out = BTreeMap::new();
    while let Some(r) = cursor.next_row().unwrap() {
        let int = |v: &Value| match v {
            Value::Int(i) => *i,
            Value::Bytes(b) => std::str::from_utf8(b).unwrap().parse().unwrap(),
            other => panic!("{other:?}"),
        };
        out.insert(int(&r[0]), (int(&r[1]), int(&r[2])));
    }
    out
}

/// How many keys the engine holds under index ids at or above `first`.
fn keys_from(store: &Store, first: u32) -> usize {
    let db = store.engine().db();
    let mut iter = db
        .iterator(ReadOptions {
            lower_bound: Some(first.to_be_bytes().to_vec()),
            ..ReadOptions::default()
        })
        .unwrap();
    iter.seek_to_first();
    let mut n = 0;
    while iter.valid() {
        n += 1;
        iter.next();
    }
    n
}

/// A committed change: the row's id and its `(k, c)` after (None: deleted).
type Change = (i64, Option<(i64, i64)>);

/// Step `step` of writer `w` in its own READ COMMITTED transaction (as an autocommit
/// statement), bound again when the definition changed, and applied to `model` once
/// committed. Step 0 of every four inserts a fresh row, 1 changes `c` of one of the
/// writer's seed rows (ids of its parity), 2 changes its `k`, 3 deletes the fresh row (every
/// fifth is kept).
fn change(store: &Store, w: i64, step: i64, model: &Mutex<BTreeMap<i64, (i64, i64)>>) {
    let fresh = 1_000_000 * (w + 1) + step / 4;
    let seed = ((step / 4) * 2 + w) % 20_000;
    loop {
        let t = table(store);
        let mut txn = store
            .begin(TxnOptions {
                isolation: IsolationLevel::ReadCommitted,
                ..TxnOptions::default()
            })
            .unwrap();
        let result = (|| -> Result<Option<Change>, Error> {
            match step % 4 {
                0 => {
                    txn.insert(&t, row(&t, fresh, 5, fresh))?;
                    Ok(Some((fresh, Some((5, fresh)))))
                }
                kind @ (1 | 2) => {
                    let (k, c) = model.lock().unwrap()[&seed];
                    // k moves past the seed's range, so (k, c) stays unique.
                    let (k, c) = if kind == 1 { (k, c + 1) } else { (k + 1000, c) };
                    let old = txn
                        .get(&t, &[Value::Int(seed)], LockMode::Exclusive)?
                        .expect("the seed row");
                    txn.update(&t, &old, row(&t, seed, k, c))?;
                    Ok(Some((seed, Some((k, c)))))
                }
                _ if (step / 4) % 5 == 0 => Ok(None),
                _ => {
                    let old = txn
                        .get(&t, &[Value::Int(fresh)], LockMode::Exclusive)?
                        .expect("the fresh row");
                    txn.delete(&t, &old)?;
                    Ok(Some((fresh, None)))
                }
            }
        })();
        match result {
            Ok(done) => {
                txn.commit().unwrap();
                let mut model = model.lock().unwrap();
                match done {
                    Some((id, Some(v))) => {
                        model.insert(id, v);
                    }
                    Some((id, None)) => {
                        model.remove(&id);
                    }
                    None => {}
                }
                return;
            }
            Err(Error::TableDefChanged { .. }) => txn.rollback(),
            Err(e) => panic!("writer {w} step {step}: {e}"),
        }
    }
}

#[test]
fn writers_go_on_during_the_copy_and_every_row_is_its_conversion() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    setup(&store, 20_000);
    let model: Arc<Mutex<BTreeMap<i64, (i64, i64)>>> = Arc::new(Mutex::new(
        (0..20_000).map(|id| (id, (id % 97, id))).collect(),
    ));
    let altering = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let ops_during = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (store, model, stop) = (store.clone(), model.clone(), stop.clone());
            let (altering, during) = (altering.clone(), ops_during.clone());
            std::thread::spawn(move || {
                let mut next = 0;
                while !stop.load(Ordering::SeqCst) {
                    change(&store, w, next, &model);
                    if altering.load(Ordering::SeqCst) {
                        during.fetch_add(1, Ordering::SeqCst);
                    }
                    next += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    altering.store(true, Ordering::SeqCst);
    let method = modify_c(&store, Arc::new(parse)).unwrap();
    altering.store(false, Ordering::SeqCst);
    assert!(matches!(method, AlterMethod::Rewrite { .. }), "{method:?}");
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.join().unwrap();
    }
    assert!(
        ops_during.load(Ordering::SeqCst) > 10,
        "the writers did not go on during the ALTER"
    );
    assert_eq!(table(&store).columns[2].ty, INT);
    let expected = model.lock().unwrap().clone();
    assert_eq!(contents(&store), expected);
    drop(store);
    assert_eq!(contents(&open(&fs)), expected);
}

#[test]
fn a_conversion_a_writer_cannot_make_fails_the_alter_at_its_end() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    setup(&store, 2_000);
    let first_new_id = table(&store).indexes[1].index_id + 1;
    // The fill pauses at its 500th row until the writer below has written.
    let (reached, resume) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let convert: ConvertFn<Error> = {
        let (reached, resume) = (reached.clone(), resume.clone());
        Arc::new(move |was, column, v, row| {
            if row == 500 {
                reached.store(true, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(30);
                while !resume.load(Ordering::SeqCst) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            parse(was, column, v, row)
        })
    };
    let altering = {
        let store = store.clone();
        std::thread::spawn(move || modify_c(&store, convert))
    };
    while !reached.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // A row whose c is no number: the writer's statement succeeds.
    let t = table(&store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let mut bad = row(&t, 5_000, 1, 0);
    bad[2] = Value::Bytes(b"x1".to_vec());
    txn.insert(&t, bad).unwrap();
    txn.commit().unwrap();
    resume.store(true, Ordering::SeqCst);
    let error = altering.join().unwrap().unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument(m) if m == "incorrect integer value 'x1' at row 1"),
        "{error:?}"
    );
    // The table is as it was, with the writer's row; the new ids hold nothing.
    assert_eq!(table(&store), t);
    let got = contents_raw(&store);
    assert_eq!(got.len(), 2_001);
    assert_eq!(got[&5_000], b"x1".to_vec());
    assert_eq!(keys_from(&store, first_new_id), 0);
}

/// `id -> c` as stored (text).
fn contents_raw(store: &Store) -> BTreeMap<i64, Vec<u8>> {
    let t = table(store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    assert!(txn.check_table(&t).unwrap().is_ok());
    let mut cursor = txn
        .scan(
            &t,
            IndexChoice::Primary,
            KeyRange::all(),
            false,
            LockMode::None,
        )
        .unwrap();
    let mut out = BTreeMap::new();
    while let Some(r) = cursor.next_row().unwrap() {
        let (Value::Int(id), Value::Bytes(c)) = (&r[0], &r[2]) else {
            panic!("{r:?}")
        };
        out.insert(*id, c.clone());
    }
    out
}

#[test]
fn a_duplicate_a_writer_makes_in_a_new_unique_index_fails_the_alter() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    setup(&store, 2_000);
    let before = table(&store);
    let (reached, resume) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // MODIFY c INT and make `k` unique: first make k unique over the seed rows.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..2_000 {
        let old = row(&before, id, id % 97, id);
        txn.update(&before, &old, row(&before, id, id, id)).unwrap();
    }
    txn.commit().unwrap();
    let alter = {
        let (store, reached, resume) = (store.clone(), reached.clone(), resume.clone());
        std::thread::spawn(move || {
            let mut def = (*table(&store)).clone();
            def.columns[2].ty = INT;
            def.indexes[0].unique = true;
            let sources = (0..3).map(ColumnSource::Stored).collect();
            let convert: ConvertFn<Error> = Arc::new(move |was, column, v, row| {
                if row == 500 {
                    reached.store(true, Ordering::SeqCst);
                    while !resume.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                parse(was, column, v, row)
            });
            store.alter_table("d", "t", TableChange { def, sources }, convert)
        })
    };
    while !reached.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // k = 7 is row 7's: a duplicate in the new unique index, not in the old table.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.insert(&before, row(&before, 5_000, 7, 1)).unwrap();
    txn.commit().unwrap();
    resume.store(true, Ordering::SeqCst);
    let error = alter.join().unwrap().unwrap_err();
    assert!(
        matches!(&error, Error::DuplicateKey { key, entry, .. } if key == "k" && entry == "7"),
        "{error:?}"
    );
    assert_eq!(table(&store), before);
    assert_eq!(contents(&store).len(), 2_001);
}

#[test]
fn a_transaction_open_across_the_alter_is_waited_for_only_at_the_switch() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    setup(&store, 5_000);
    let t = table(&store);
    // Open before the ALTER; it reads, then writes the table while the rows are copied.
    let mut open_txn = store.begin(TxnOptions::default()).unwrap();
    assert!(open_txn
        .get(&t, &[Value::Int(3)], LockMode::None)
        .unwrap()
        .is_some());
    let done = Arc::new(AtomicBool::new(false));
    let alter = {
        let (store, done) = (store.clone(), done.clone());
        std::thread::spawn(move || {
            let method = modify_c(&store, Arc::new(parse));
            done.store(true, Ordering::SeqCst);
            method
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    open_txn.insert(&t, row(&t, 9_000, 1, 9_000)).unwrap();
    let old = row(&t, 3, 3, 3);
    open_txn.update(&t, &old, row(&t, 3, 4, 33)).unwrap();
    open_txn.delete(&t, &row(&t, 4, 4, 4)).unwrap();
    // Another writer, in its own transactions, is not held while the rows are copied.
    let mut other = store.begin(TxnOptions::default()).unwrap();
    other.insert(&t, row(&t, 9_001, 2, 9_001)).unwrap();
    other.commit().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !done.load(Ordering::SeqCst),
        "the ALTER switched while a transaction that wrote the shadow was open"
    );
    open_txn.commit().unwrap();
    assert!(matches!(
        alter.join().unwrap().unwrap(),
        AlterMethod::Rewrite { .. }
    ));
    let got = contents(&store);
    assert_eq!(got.len(), 5_001);
    assert_eq!(got[&3], (4, 33));
    assert_eq!(got[&9_000], (1, 9_000));
    assert_eq!(got[&9_001], (2, 9_001));
    assert!(!got.contains_key(&4));
}

/// Crash safety (ARCHITECTURE.md invariant 7) with a writer maintaining the shadow: a crash
/// image at every sync point of the ALTER (among them the writer's synced commit in the
/// middle of the copy) reopens to one definition, old or new, that holds every row the
/// image committed, CHECK TABLE passes, and no key remains under an id the catalog lacks.
#[test]
fn a_crash_at_any_sync_point_of_an_online_rewrite_with_a_writer_leaves_one_whole_table() {
    crash_during(modify_c);
}

/// ALTER TABLE t MODIFY c INT, DROP PRIMARY KEY, ADD PRIMARY KEY (c): an online rewrite
/// under a new primary key (c equals id in every row).
fn modify_c_to_primary_key(store: &Store, convert: ConvertFn<Error>) -> Result<AlterMethod, Error> {
    let mut def = (*table(store)).clone();
    def.columns[2].ty = INT;
    def.primary_key.columns = vec![2];
    let sources = (0..3).map(ColumnSource::Stored).collect();
    store
        .alter_table("d", "t", TableChange { def, sources }, convert)
        .map(|(_, method)| method)
}

/// The same under a new primary key: its claims (shadow.rs) leave no key behind either.
#[test]
fn a_crash_at_any_sync_point_of_an_online_primary_key_change_with_a_writer_leaves_one_whole_table()
{
    crash_during(modify_c_to_primary_key);
}

/// Runs `alter` (which makes `c` an INT) with a writer inserting during its fill, taking a
/// crash image at every sync point: each reopens to the old table or the new, whole, with no
/// key under an id no definition has.
fn crash_during(alter: fn(&Store, ConvertFn<Error>) -> Result<AlterMethod, Error>) {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    setup(&store, 600);
    let images: Arc<Mutex<Vec<(u64, MemFs)>>> = Arc::default();
    {
        let (hook_fs, images) = (fs.clone(), images.clone());
        fs.set_sync_hook(Some(Arc::new(move |point| {
            let image = hook_fs.crash_image(CrashMode::DropUnsynced);
            images.lock().unwrap().push((point, image));
        })));
    }
    // At the fill's 300th row a writer commits three new rows, which it writes to the shadow.
    let convert: ConvertFn<Error> = {
        let store = Arc::downgrade(&store);
        Arc::new(move |was, column, v, n| {
            if n == 300 {
                let store = store.upgrade().expect("the store");
                let t = table(&store);
                let mut txn = store
                    .begin(TxnOptions {
                        isolation: IsolationLevel::ReadCommitted,
                        ..TxnOptions::default()
                    })
                    .unwrap();
                for id in 10_000..10_003 {
                    txn.insert(&t, row(&t, id, 1, id)).unwrap();
                }
                txn.commit().unwrap();
            }
            parse(was, column, v, n)
        })
    };
    assert!(matches!(
        alter(&store, convert).unwrap(),
        AlterMethod::Rewrite { .. }
    ));
    fs.set_sync_hook(None);
    let mut images = std::mem::take(&mut *images.lock().unwrap());
    images.push((u64::MAX, fs.crash_image(CrashMode::DropUnsynced)));
    assert!(images.len() >= 3, "{} images", images.len());
    let (mut old, mut new) = (0, 0);
    for (point, image) in images {
        let reopened = open(&image);
        let rows = contents(&reopened);
        assert!(
            rows.len() == 600 || rows.len() == 603,
            "sync point {point}: {} rows",
            rows.len()
        );
        assert!(
            rows.iter().all(|(id, (_, c))| id == c),
            "sync point {point}"
        );
        if matches!(table(&reopened).columns[2].ty, ColumnType::VarChar { .. }) {
            old += 1;
        } else {
            assert_eq!(rows.len(), 603, "sync point {point}: the switched table");
            new += 1;
        }
        let catalog = reopened.catalog();
        let live: Vec<u32> = catalog
            .databases
            .values()
            .flat_map(|tables| tables.values())
            .flat_map(|t| std::iter::once(&t.primary_key).chain(&t.indexes))
            .map(|i| i.index_id)
            .collect();
        let last = live.iter().max().copied().unwrap();
        assert_eq!(
            keys_from(&reopened, last + 1),
            0,
            "sync point {point}: keys under an id no definition has"
        );
    }
    assert!(old > 0 && new > 0, "old {old}, new {new}");
}

/// A table without primary key keeps its hidden row ids through an online rewrite: rows a
/// writer inserts, updates and deletes during the copy end converted under the same ids.
#[test]
fn a_table_without_primary_key_is_rewritten_online_with_its_row_ids() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    store.create_database("d").unwrap();
    let varchar = ColumnType::VarChar {
        len: 20,
        collation: Collation::Utf8mb4GeneralCi,
    };
    let t = store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column("id", INT), column("k", INT), column("c", varchar)],
            primary_key: IndexDef {
                name: "PRIMARY".into(),
                columns: Vec::new(),
                unique: true,
                index_id: 0,
            },
            indexes: vec![IndexDef {
                name: "c".into(),
                columns: vec![2],
                unique: false,
                index_id: 0,
            }],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..1_000 {
        txn.insert(&t, row(&t, id, id, id)).unwrap();
    }
    txn.commit().unwrap();
    let (reached, resume) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let convert: ConvertFn<Error> = {
        let (reached, resume) = (reached.clone(), resume.clone());
        Arc::new(move |was, column, v, n| {
            if n == 300 {
                reached.store(true, Ordering::SeqCst);
                while !resume.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            parse(was, column, v, n)
        })
    };
    let altering = {
        let store = store.clone();
        std::thread::spawn(move || modify_c(&store, convert))
    };
    while !reached.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Rows the copy has passed (10, 20) and not reached yet (900, 910), and a new one.
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    txn.update(&t, &row(&t, 10, 10, 10), row(&t, 10, 10, 1010))
        .unwrap();
    txn.update(&t, &row(&t, 900, 900, 900), row(&t, 900, 900, 1900))
        .unwrap();
    txn.delete(&t, &row(&t, 20, 20, 20)).unwrap();
    txn.delete(&t, &row(&t, 910, 910, 910)).unwrap();
    txn.insert(&t, row(&t, 5_000, 1, 5_000)).unwrap();
    txn.commit().unwrap();
    resume.store(true, Ordering::SeqCst);
    assert!(matches!(
        altering.join().unwrap().unwrap(),
        AlterMethod::Rewrite { .. }
    ));
    let got = contents(&store);
    assert_eq!(got.len(), 999);
    assert_eq!(got[&10], (10, 1010));
    assert_eq!(got[&900], (900, 1900));
    assert_eq!(got[&5_000], (1, 5_000));
    assert!(!got.contains_key(&20) && !got.contains_key(&910));
    assert!(got
        .iter()
        .all(|(id, (k, c))| [10, 900, 5_000].contains(id) || (id == k && id == c)));
}

/// A REPEATABLE READ transaction whose snapshot is older than a rewrite cannot read the
/// rewritten table (its rows were copied after the snapshot): it is told the definition
/// changed (`MySQL`'s 1412), rather than shown an empty table. (Its snapshot is taken by a
/// read of another table: one that read this table holds its metadata lock, and the ALTER
/// waits for it to end.)
#[test]
fn a_snapshot_older_than_the_rewrite_cannot_read_the_new_table() {
    let fs = MemFs::new();
    let store = open(&fs);
    setup(&store, 100);
    let mut other = (*table(&store)).clone();
    "other".clone_into(&mut other.name);
    let other = store.create_table(other).unwrap();
    let mut old_snapshot = store.begin(TxnOptions::default()).unwrap();
    assert!(old_snapshot
        .get(&other, &[Value::Int(3)], LockMode::None)
        .unwrap()
        .is_none());
    modify_c(&store, Arc::new(parse)).unwrap();
    let new = table(&store);
    assert!(matches!(
        old_snapshot.get(&new, &[Value::Int(3)], LockMode::None),
        Err(Error::TableDefChanged { .. })
    ));
    let scan = old_snapshot.scan(
        &new,
        IndexChoice::Primary,
        KeyRange::all(),
        false,
        LockMode::None,
    );
    assert!(matches!(scan.err(), Some(Error::TableDefChanged { .. })));
    // A transaction that begins after the switch reads it.
    let mut fresh = store.begin(TxnOptions::default()).unwrap();
    assert_eq!(
        fresh.get(&new, &[Value::Int(3)], LockMode::None).unwrap(),
        Some(vec![Value::Int(3), Value::Int(3), Value::Int(3)])
    );
}
