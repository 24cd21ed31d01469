//! An online rewriting ALTER TABLE that changes the primary key (shadow.rs, "A new primary
//! key"): writers that insert, update (the old key and the new key's columns too) and delete
//! during the copy leave every row as its expected conversion under the new key; a duplicate
//! new primary key, from the copy or from a writer, fails the ALTER at its end with the key's
//! name and leaves the table as it was.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shale_engine::{IsolationLevel, Options, ReadOptions};
use shale_fs::MemFs;
use shale_table::{
    AlterMethod, ColumnDef, ColumnSource, ColumnType, ConvertFn, Error, IndexChoice, IndexDef,
    KeyRange, LockMode, Store, StoreOptions, TableChange, TableDef, TxnOptions, Value,
};

const BIGINT: ColumnType = ColumnType::BigInt { unsigned: false };
const INT: ColumnType = ColumnType::Int { unsigned: false };
/// `c` keeps `c % C_STEP == id % C_STEP` for every row, so it stays unique.
const C_STEP: i64 = 1_000_000_000;

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

fn index(name: &str, columns: Vec<usize>, unique: bool) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns,
        unique,
        index_id: 0,
    }
}

/// `t (id BIGINT PRIMARY KEY, k BIGINT, c BIGINT NOT NULL, KEY k (k))` with rows
/// `(id, id % 97, id)` for ids `0..n`.
fn setup(store: &Store, n: i64) {
    store.create_database("d").unwrap();
    let column = |name: &str| ColumnDef {
        name: name.into(),
        ty: BIGINT,
        nullable: name != "c",
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    let t = store
        .create_table(TableDef {
            database: "d".into(),
            name: "t".into(),
            columns: vec![column("id"), column("k"), column("c")],
            primary_key: index("PRIMARY", vec![0], true),
            indexes: vec![index("k", vec![1], false)],
            schema_version: 0,
            past_versions: Vec::new(),
        })
        .unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in 0..n {
        txn.insert(&t, row(id, id % 97, id)).unwrap();
    }
    txn.commit().unwrap();
}

fn row(id: i64, k: i64, c: i64) -> Vec<Value> {
    vec![Value::Int(id), Value::Int(k), Value::Int(c)]
}

fn table(store: &Store) -> Arc<TableDef> {
    store.catalog().table("d", "t").unwrap().clone()
}

/// The conversion of MODIFY k INT: in range or an error naming the row.
fn narrow(_: &ColumnDef, _: &ColumnDef, v: Value, row: u64) -> Result<Value, Error> {
    match v {
        Value::Int(i) if i32::try_from(i).is_err() => Err(Error::InvalidArgument(format!(
            "out of range value for column 'k' at row {row}"
        ))),
        other => Ok(other),
    }
}

/// `ALTER TABLE t MODIFY k INT, DROP PRIMARY KEY, ADD PRIMARY KEY (pk), ADD UNIQUE KEY
/// uid (id)`: a rewrite under a new primary key, converting `k`.
fn rekey(store: &Store, pk: usize, convert: ConvertFn<Error>) -> Result<AlterMethod, Error> {
    let mut def = (*table(store)).clone();
    def.columns[1].ty = INT;
    def.primary_key.columns = vec![pk];
    def.indexes.push(index("uid", vec![0], true));
    let sources = (0..3).map(ColumnSource::Stored).collect();
    store
        .alter_table("d", "t", TableChange { def, sources }, convert)
        .map(|(_, method)| method)
}

/// Every row of `t` as `id -> (k, c)`, after checking that its indexes agree with them.
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
            other => panic!("{other:?}"),
        };
        assert!(out.insert(int(&r[0]), (int(&r[1]), int(&r[2]))).is_none());
    }
    assert_eq!(out.len() as u64, check.rows);
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

type Model = Mutex<BTreeMap<i64, (i64, i64)>>;

/// The row `(id, _, c)`, locked, by whichever primary key `t` has now.
fn find(
    txn: &mut shale_table::TableTxn,
    t: &TableDef,
    id: i64,
    c: i64,
) -> Result<Option<Vec<Value>>, Error> {
    let key = if t.primary_key.columns == [0] { id } else { c };
    txn.get(t, &[Value::Int(key)], LockMode::Exclusive)
}

/// Step `step` of writer `w` in its own transaction (READ COMMITTED for writer 0,
/// REPEATABLE READ for writer 1), bound again when the definition changed, applied to
/// `model` once committed. Of every four steps: 0 inserts a fresh row; 1 moves a seed row's
/// `c` (the new primary key) and `k`; 2 moves the fresh row's `id` (the old primary key);
/// 3 deletes the moved row (every fifth is kept).
fn change(store: &Store, w: i64, step: i64, model: &Model) {
    let fresh = 1_000_000 * (w + 1) + step / 4;
    let moved = fresh + 500_000;
    let seed = ((step / 4) * 2 + w) % 20_000;
    let isolation = if w == 0 {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::RepeatableRead
    };
    loop {
        let t = table(store);
        let mut txn = store
            .begin(TxnOptions {
                isolation,
                ..TxnOptions::default()
            })
            .unwrap();
        let mut done: Vec<(i64, Option<(i64, i64)>)> = Vec::new();
        let result = (|| -> Result<(), Error> {
            match step % 4 {
                0 => {
                    txn.insert(&t, row(fresh, 5, fresh))?;
                    done.push((fresh, Some((5, fresh))));
                }
                1 => {
                    let (k, c) = model.lock().unwrap()[&seed];
                    let (k, c) = (k + 1, c + C_STEP);
                    let old = find(&mut txn, &t, seed, c - C_STEP)?.expect("the seed row");
                    txn.update(&t, &old, row(seed, k, c))?;
                    done.push((seed, Some((k, c))));
                }
                2 => {
                    let old = find(&mut txn, &t, fresh, fresh)?.expect("the fresh row");
                    txn.update(&t, &old, row(moved, 5, fresh))?;
                    done.extend([(fresh, None), (moved, Some((5, fresh)))]);
                }
                _ if (step / 4) % 5 == 0 => {}
                _ => {
                    let old = find(&mut txn, &t, moved, fresh)?.expect("the moved row");
                    txn.delete(&t, &old)?;
                    done.push((moved, None));
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                txn.commit().unwrap();
                let mut model = model.lock().unwrap();
                for (id, value) in done {
                    match value {
                        Some(v) => model.insert(id, v),
                        None => model.remove(&id),
                    };
                }
                return;
            }
            Err(Error::TableDefChanged { .. }) => txn.rollback(),
            Err(e) => panic!("writer {w} step {step}: {e}"),
        }
    }
}

#[test]
fn writers_go_on_during_a_primary_key_change_and_every_row_is_its_conversion() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    setup(&store, 20_000);
    let model: Arc<Model> = Arc::new(Mutex::new(
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
    let method = rekey(&store, 2, Arc::new(narrow)).unwrap();
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
    let t = table(&store);
    assert_eq!(
        (t.primary_key.columns.clone(), t.columns[1].ty.clone()),
        (vec![2], INT)
    );
    let expected = model.lock().unwrap().clone();
    assert_eq!(contents(&store), expected);
    drop(store);
    assert_eq!(contents(&open(&fs)), expected);
}

#[test]
fn a_duplicate_new_primary_key_in_the_rows_fails_the_alter_and_leaves_the_table() {
    let fs = MemFs::new();
    let store = open(&fs);
    setup(&store, 500);
    let before = table(&store);
    let first_new_id = before.indexes[0].index_id + 1;
    let rows = contents(&store);
    // k repeats every 97 rows.
    let error = rekey(&store, 1, Arc::new(narrow)).unwrap_err();
    assert!(
        matches!(&error, Error::DuplicateKey { key, entry, .. } if key == "PRIMARY" && entry == "0"),
        "{error:?}"
    );
    assert_eq!(table(&store), before);
    assert_eq!(contents(&store), rows);
    assert_eq!(keys_from(&store, first_new_id), 0);
}

/// A writer's row whose new primary key another row has: its statement succeeds, the ALTER
/// fails at its end. `taken` is the row whose `c` the writer copies: one the fill has
/// converted already (the writer finds its claim) or one it has not reached (the fill finds
/// the writer's).
#[test]
fn a_duplicate_new_primary_key_from_a_writer_fails_the_alter_at_its_end() {
    for taken in [10, 1_500] {
        let fs = MemFs::new();
        let store = Arc::new(open(&fs));
        setup(&store, 2_000);
        let before = table(&store);
        let first_new_id = before.indexes[0].index_id + 1;
        let (reached, resume) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        // The fill pauses at its 500th row until the writer below has committed.
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
                narrow(was, column, v, row)
            })
        };
        let altering = {
            let store = store.clone();
            std::thread::spawn(move || rekey(&store, 2, convert))
        };
        while !reached.load(Ordering::SeqCst) {
            assert!(
                !altering.is_finished(),
                "the copy ended before its 500th row"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        txn.insert(&before, row(5_000, 1, taken)).unwrap();
        txn.commit().unwrap();
        resume.store(true, Ordering::SeqCst);
        let error = altering.join().unwrap().unwrap_err();
        let entry = taken.to_string();
        assert!(
            matches!(&error, Error::DuplicateKey { key, entry: e, .. } if key == "PRIMARY" && *e == entry),
            "taken {taken}: {error:?}"
        );
        assert_eq!(table(&store), before);
        let rows = contents(&store);
        assert_eq!(rows.len(), 2_001);
        assert_eq!(rows[&5_000], (1, taken));
        assert_eq!(keys_from(&store, first_new_id), 0, "taken {taken}");
    }
}

/// A row that a writer deletes during the copy, before the fill reaches it, stays deleted;
/// one whose new primary key a writer moves away from a row the fill converted frees it.
#[test]
fn the_fill_does_not_bring_back_a_row_deleted_during_the_copy() {
    let fs = MemFs::new();
    let store = Arc::new(open(&fs));
    setup(&store, 2_000);
    let before = table(&store);
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
            narrow(was, column, v, row)
        })
    };
    let altering = {
        let store = store.clone();
        std::thread::spawn(move || rekey(&store, 2, convert))
    };
    while !reached.load(Ordering::SeqCst) {
        assert!(
            !altering.is_finished(),
            "the copy ended before its 500th row"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut model = contents(&store);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    // Row 1,500: not filled yet, deleted. Row 10: filled, its new key 10 moved to 20,000,
    // then a new row takes c = 10.
    let old = txn.get(&before, &[Value::Int(1_500)], LockMode::Exclusive);
    txn.delete(&before, &old.unwrap().unwrap()).unwrap();
    model.remove(&1_500);
    let old = txn.get(&before, &[Value::Int(10)], LockMode::Exclusive);
    txn.update(&before, &old.unwrap().unwrap(), row(10, 10, 20_000))
        .unwrap();
    model.insert(10, (10, 20_000));
    txn.insert(&before, row(7_000, 3, 10)).unwrap();
    model.insert(7_000, (3, 10));
    txn.commit().unwrap();
    resume.store(true, Ordering::SeqCst);
    assert!(matches!(
        altering.join().unwrap().unwrap(),
        AlterMethod::Rewrite { .. }
    ));
    assert_eq!(table(&store).primary_key.columns, vec![2]);
    assert_eq!(contents(&store), model);
}
