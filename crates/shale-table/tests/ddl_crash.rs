//! DDL is atomic across crashes (ARCHITECTURE.md invariant 7): a crash image taken at every
//! sync point during CREATE INDEX, DROP INDEX, TRUNCATE, DROP TABLE, DROP DATABASE, ALTER TABLE
//! (instant and rewriting), RENAME TABLE and CREATE TABLE ... AS SELECT's fill reopens
//! to a catalog and data that match one definition: every index in the catalog agrees with its
//! rows (CHECK TABLE) and no key remains under an index id the catalog no longer has.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shale_engine::{Options, ReadOptions};
use shale_fs::{CrashMode, MemFs};
use shale_table::{
    Collation, ColumnDef, ColumnType, IndexDef, Store, StoreOptions, TableDef, TxnOptions, Value,
};

/// One DDL (or DML) step of the test.
type Step = Box<dyn Fn(&Store)>;

fn open(fs: &MemFs) -> Store {
    Store::open(
        "/db",
        StoreOptions {
            engine: Options {
                file_system: Arc::new(fs.clone()),
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    )
    .unwrap()
}

fn table(database: &str, name: &str) -> TableDef {
    let column = |name: &str, ty| ColumnDef {
        name: name.into(),
        ty,
        nullable: false,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    };
    TableDef {
        database: database.into(),
        name: name.into(),
        columns: vec![
            column("id", ColumnType::Int { unsigned: false }),
            column("k", ColumnType::Int { unsigned: false }),
            column(
                "c",
                ColumnType::VarChar {
                    len: 30,
                    collation: Collation::Utf8mb4GeneralCi,
                },
            ),
        ],
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: vec![0],
            unique: true,
            index_id: 0,
        },
        indexes: vec![IndexDef {
            name: "k_1".into(),
            columns: vec![1],
            unique: false,
            index_id: 0,
        }],
        schema_version: 0,
        past_versions: Vec::new(),
    }
}

fn fill(store: &Store, database: &str, name: &str, ids: std::ops::Range<i64>) {
    let t = store.catalog().table(database, name).unwrap().clone();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for id in ids {
        txn.insert(
            &t,
            vec![
                Value::Int(id),
                Value::Int(id % 7),
                Value::Bytes(format!("row {id}").into_bytes()),
            ],
        )
        .unwrap();
    }
    txn.commit().unwrap();
}

/// Checks one reopened image; returns the row counts of (a.t, b.keep) or None when absent.
fn check_image(image: &MemFs, label: &str) -> (Option<u64>, Option<u64>) {
    let store = open(image);
    let catalog = store.catalog();
    // Index id 1 holds the catalog itself (docs/format/catalog.md).
    let mut live_ids = BTreeSet::from([1]);
    let mut counts = [None, None];
    for (slot, (database, name)) in [("a", "t"), ("b", "keep")].into_iter().enumerate() {
        let Some(t) = catalog.table(database, name) else {
            continue;
        };
        live_ids.insert(t.primary_key.index_id);
        live_ids.extend(t.indexes.iter().map(|i| i.index_id));
        let mut txn = store.begin(TxnOptions::default()).unwrap();
        let check = txn.check_table(t).unwrap();
        assert!(
            check.is_ok(),
            "{label}: {database}.{name} disagrees with its indexes: {check:?}"
        );
        counts[slot] = Some(check.rows);
    }
    let mut iter = store
        .engine()
        .db()
        .iterator(ReadOptions::default())
        .unwrap();
    iter.seek_to_first();
    while iter.valid() {
        let id = u32::from_be_bytes(iter.key()[..4].try_into().unwrap());
        assert!(
            live_ids.contains(&id),
            "{label}: a key of index id {id}, which the catalog does not have"
        );
        iter.next();
    }
    (counts[0], counts[1])
}

#[test]
fn ddl_survives_a_crash_at_every_sync_point() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("a").unwrap();
    store.create_database("b").unwrap();
    store.create_table(table("a", "t")).unwrap();
    store.create_table(table("b", "keep")).unwrap();
    fill(&store, "a", "t", 0..150);
    fill(&store, "b", "keep", 0..20);
    store.engine().db().flush().unwrap();
    fill(&store, "a", "t", 150..200); // some rows in table files, some in the memtable

    let step = Arc::new(AtomicUsize::new(0));
    let images: Arc<Mutex<Vec<(usize, u64, MemFs)>>> = Arc::default();
    {
        let (hook_fs, step, images) = (fs.clone(), step.clone(), images.clone());
        fs.set_sync_hook(Some(Arc::new(move |point| {
            let taken = [
                hook_fs.crash_image(CrashMode::DropUnsynced),
                hook_fs.crash_image(CrashMode::Torn { seed: point }),
            ];
            let step = step.load(Ordering::SeqCst);
            images
                .lock()
                .unwrap()
                .extend(taken.into_iter().map(|image| (step, point, image)));
        })));
    }
    let steps: Vec<Step> = vec![
        Box::new(|s| {
            let index = IndexDef {
                name: "c_1".into(),
                columns: vec![2, 1],
                unique: true,
                index_id: 0,
            };
            s.create_index("a", "t", index).unwrap();
        }),
        Box::new(|s| s.drop_index("a", "t", "k_1").unwrap()),
        Box::new(|s| s.truncate_table("a", "t").unwrap()),
        Box::new(|s| fill(s, "a", "t", 0..10)),
        Box::new(|s| s.drop_table("a", "t").unwrap()),
        Box::new(|s| s.drop_database("a").unwrap()),
    ];
    for (i, run) in steps.iter().enumerate() {
        step.store(i + 1, Ordering::SeqCst);
        run(&store);
        let image = fs.crash_image(CrashMode::DropUnsynced);
        images.lock().unwrap().push((i + 1, u64::MAX, image));
    }
    fs.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(
        images.len() >= steps.len() * 2,
        "too few sync points imaged: {}",
        images.len()
    );
    for (step, point, image) in images {
        let label = format!("step {step}, sync point {point}");
        let (t_rows, keep_rows) = check_image(&image, &label);
        assert_eq!(keep_rows, Some(20), "{label}: the untouched table changed");
        // Each step is durable once it returned: the image after step n shows n's result
        // (or, during step n, n-1's or n's).
        let allowed: &[Option<u64>] = match step {
            1 | 2 => &[Some(200)],
            3 => &[Some(200), Some(0)],
            4 => &[Some(0), Some(10)],
            _ => &[Some(10), None],
        };
        assert!(
            allowed.contains(&t_rows),
            "{label}: a.t has {t_rows:?} rows"
        );
    }
}

#[test]
fn a_crash_in_the_middle_of_a_long_index_build_leaves_no_entries_behind() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("a").unwrap();
    store.create_database("b").unwrap();
    store.create_table(table("a", "t")).unwrap();
    store.create_table(table("b", "keep")).unwrap();
    fill(&store, "b", "keep", 0..20);
    for chunk in 0..8 {
        fill(&store, "a", "t", chunk * 5_000..(chunk + 1) * 5_000);
    }
    let images: Arc<Mutex<Vec<(u64, MemFs)>>> = Arc::default();
    {
        let (hook_fs, images) = (fs.clone(), images.clone());
        fs.set_sync_hook(Some(Arc::new(move |point| {
            images
                .lock()
                .unwrap()
                .push((point, hook_fs.crash_image(CrashMode::DropUnsynced)));
        })));
    }
    let index = IndexDef {
        name: "c_1".into(),
        columns: vec![2],
        unique: false,
        index_id: 0,
    };
    // The fill's own commits are not synced (the synced definition after it makes them
    // durable), so flushes on another thread put sync points in the middle of the build.
    let store = Arc::new(store);
    let building = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flush_thread = {
        let (store, building) = (store.clone(), building.clone());
        std::thread::spawn(move || {
            let mut flushes = 0;
            while building.load(std::sync::atomic::Ordering::Relaxed) {
                store.engine().db().flush().unwrap();
                flushes += 1;
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            flushes
        })
    };
    store.create_index("a", "t", index).unwrap();
    building.store(false, std::sync::atomic::Ordering::Relaxed);
    let flushes = flush_thread.join().unwrap();
    fs.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(
        images.len() >= 3,
        "the build ({flushes} flushes beside it): {} sync points",
        images.len()
    );
    let mut built = 0;
    for (point, image) in images {
        let (rows, keep) = check_image(&image, &format!("index build, sync point {point}"));
        assert_eq!((rows, keep), (Some(40_000), Some(20)));
        let store = open(&image);
        built += usize::from(store.catalog().table("a", "t").unwrap().indexes.len() == 2);
    }
    assert!(built >= 1, "the last image has the index");

    // A unique build that fails half-way deletes what it wrote.
    let unique = IndexDef {
        name: "k_u".into(),
        columns: vec![1],
        unique: true,
        index_id: 0,
    };
    assert!(matches!(
        store.create_index("a", "t", unique),
        Err(shale_table::Error::DuplicateKey { .. })
    ));
    drop(store);
    check_image(
        &fs.crash_image(CrashMode::DropUnsynced),
        "after the failed unique build",
    );
}

/// ALTER TABLE (instant ADD/DROP COLUMN, a rewrite that widens an indexed column) and
/// RENAME TABLE: every crash image reopens to one definition whose rows all decode (CHECK
/// TABLE), and a row reads as it did before the step or after it.
#[test]
#[allow(clippy::too_many_lines)] // four DDL steps and the checks of every image
fn alter_table_survives_a_crash_at_every_sync_point() {
    use shale_table::{ColumnSource, LockMode, TableChange};
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("a").unwrap();
    store.create_database("b").unwrap();
    store.create_table(table("a", "t")).unwrap();
    store.create_table(table("b", "keep")).unwrap();
    fill(&store, "a", "t", 0..150);
    fill(&store, "b", "keep", 0..20);
    store.engine().db().flush().unwrap();
    fill(&store, "a", "t", 150..200);

    let step = Arc::new(AtomicUsize::new(0));
    let images: Arc<Mutex<Vec<(usize, u64, MemFs)>>> = Arc::default();
    {
        let (hook_fs, step, images) = (fs.clone(), step.clone(), images.clone());
        fs.set_sync_hook(Some(Arc::new(move |point| {
            let image = hook_fs.crash_image(CrashMode::DropUnsynced);
            let step = step.load(Ordering::SeqCst);
            images.lock().unwrap().push((step, point, image));
        })));
    }
    let alter = |s: &Store, f: &dyn Fn(&mut TableDef) -> Vec<ColumnSource>| {
        let mut def = (**s.catalog().table("a", "t").unwrap()).clone();
        let sources = f(&mut def);
        s.alter_table(
            "a",
            "t",
            TableChange { def, sources },
            Arc::new(
                |_: &ColumnDef, _: &ColumnDef, v: Value, _: u64| -> shale_table::Result<Value> {
                    Ok(v)
                },
            ),
        )
        .unwrap()
    };
    let steps: Vec<Step> = vec![
        // ADD COLUMN d INT NOT NULL DEFAULT 5 AFTER k: instant.
        Box::new(move |s| {
            let (_, method) = alter(s, &|def| {
                def.columns.insert(
                    2,
                    ColumnDef {
                        name: "d".into(),
                        ty: ColumnType::Int { unsigned: false },
                        nullable: false,
                        default: Some(Value::Int(5)),
                        auto_increment: false,
                        auto_timestamp: shale_table::AutoTimestamp::default(),
                        generated: None,
                    },
                );
                def.indexes[0].columns = vec![1];
                vec![
                    ColumnSource::Stored(0),
                    ColumnSource::Stored(1),
                    ColumnSource::Fill(Value::Int(5)),
                    ColumnSource::Stored(2),
                ]
            });
            assert_eq!(method, shale_table::AlterMethod::Instant);
        }),
        // MODIFY k BIGINT: k is indexed, so every row and entry is rewritten.
        Box::new(move |s| {
            let (_, method) = alter(s, &|def| {
                def.columns[1].ty = ColumnType::BigInt { unsigned: false };
                (0..4).map(ColumnSource::Stored).collect()
            });
            assert_eq!(method, shale_table::AlterMethod::Rewrite { rows: 200 });
        }),
        // DROP COLUMN c: instant.
        Box::new(move |s| {
            let (_, method) = alter(s, &|def| {
                def.columns.pop();
                (0..3).map(ColumnSource::Stored).collect()
            });
            assert_eq!(method, shale_table::AlterMethod::Instant);
        }),
        Box::new(|s| s.rename_tables(&[("a", "t", "a", "t2")]).unwrap()),
        // CREATE TABLE a.c AS SELECT (9,000 rows: more than one chunk of writes).
        Box::new(|s| {
            let mut def = table("a", "c");
            def.indexes[0].unique = false;
            let mut rows = (0..9_000).map(|id| {
                Ok::<_, shale_table::Error>(vec![
                    Value::Int(id),
                    Value::Int(id % 7),
                    Value::Bytes(format!("row {id}").into_bytes()),
                ])
            });
            let (_, count) = s.create_table_with_rows(def, &mut rows).unwrap();
            assert_eq!(count, 9_000);
        }),
    ];
    for (i, run) in steps.iter().enumerate() {
        step.store(i + 1, Ordering::SeqCst);
        run(&store);
        let image = fs.crash_image(CrashMode::DropUnsynced);
        images.lock().unwrap().push((i + 1, u64::MAX, image));
    }
    fs.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() >= steps.len() * 2, "{} images", images.len());
    let row = |values: &[i64], c: bool| {
        let mut row: Vec<Value> = values.iter().map(|&v| Value::Int(v)).collect();
        if c {
            row.push(Value::Bytes(b"row 3".to_vec()));
        }
        row
    };
    // Row id 3 as each step leaves it.
    let states = [
        (row(&[3, 3], true), "t"),
        (row(&[3, 3, 5], true), "t"),
        (row(&[3, 3, 5], true), "t"),
        (row(&[3, 3, 5], false), "t"),
        (row(&[3, 3, 5], false), "t2"),
        (row(&[3, 3, 5], false), "t2"),
    ];
    for (step, point, image) in images {
        let label = format!("alter step {step}, sync point {point}");
        let reopened = open(&image);
        let catalog = reopened.catalog();
        let (t, name) = match catalog.table("a", "t") {
            Some(t) => (t.clone(), "t"),
            None => (catalog.table("a", "t2").expect(&label).clone(), "t2"),
        };
        let mut txn = reopened.begin(TxnOptions::default()).unwrap();
        let check = txn.check_table(&t).unwrap();
        assert!(check.is_ok() && check.rows == 200, "{label}: {check:?}");
        let got = txn.get(&t, &[Value::Int(3)], LockMode::None).unwrap();
        let ok = [step - 1, step].iter().any(|&s| {
            let (want, want_name) = &states[s];
            got.as_ref() == Some(want) && name == *want_name
        });
        assert!(ok, "{label}: row 3 of a.{name} is {got:?}");
        // The table made with its rows exists whole or not at all.
        if let Some(c) = catalog.table("a", "c") {
            let check = txn.check_table(c).unwrap();
            assert!(
                check.is_ok() && check.rows == 9_000,
                "{label}: a.c {check:?}"
            );
        } else {
            assert!(step <= 5, "{label}: a.c is missing");
        }
        drop(txn);
        drop(reopened);
        check_image_ids(&image, &label);
    }
}

/// No key remains under an index id the reopened catalog does not have.
fn check_image_ids(image: &MemFs, label: &str) {
    let store = open(image);
    let catalog = store.catalog();
    let live: BTreeSet<u32> = catalog
        .databases
        .values()
        .flat_map(|tables| tables.values())
        .flat_map(|t| std::iter::once(&t.primary_key).chain(&t.indexes))
        .map(|i| i.index_id)
        .chain([1])
        .collect();
    let mut iter = store
        .engine()
        .db()
        .iterator(ReadOptions::default())
        .unwrap();
    iter.seek_to_first();
    while iter.valid() {
        let id = u32::from_be_bytes(iter.key()[..4].try_into().unwrap());
        assert!(
            live.contains(&id),
            "{label}: a key of dropped index id {id}"
        );
        iter.next();
    }
}

/// The evaluator of these tests' generated columns: each is `k * 2` whatever its text.
struct DoubleK;

impl shale_table::VirtualColumns for DoubleK {
    fn compute(
        &self,
        table: &TableDef,
        row: &mut [Value],
        stored: bool,
    ) -> shale_table::Result<()> {
        let k = table.column_position("k").and_then(|p| row.get(p).cloned());
        for (i, column) in table.columns.iter().enumerate() {
            if column
                .generated
                .as_ref()
                .is_some_and(|g| stored || !g.stored)
            {
                row[i] = match &k {
                    Some(Value::Int(k)) => Value::Int(k * 2),
                    _ => Value::Null,
                };
            }
        }
        Ok(())
    }
}

/// Generated columns: ADD COLUMN ... VIRTUAL (instant), CREATE INDEX on it (filled from the
/// computed values) and ADD COLUMN ... STORED (a rewrite that computes it): every crash image
/// reopens to one definition whose index entries match the recomputed values (CHECK TABLE)
/// and whose row reads as before the step or after it.
#[test]
#[allow(clippy::too_many_lines)] // three DDL steps and the checks of every image
fn generated_columns_survive_a_crash_at_every_sync_point() {
    use shale_table::{ColumnSource, Generated, LockMode, TableChange};
    shale_table::install_virtual_columns(Arc::new(DoubleK));
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("a").unwrap();
    store.create_table(table("a", "t")).unwrap();
    fill(&store, "a", "t", 0..200);

    let step = Arc::new(AtomicUsize::new(0));
    let images: Arc<Mutex<Vec<(usize, u64, MemFs)>>> = Arc::default();
    {
        let (hook_fs, step, images) = (fs.clone(), step.clone(), images.clone());
        fs.set_sync_hook(Some(Arc::new(move |point| {
            let image = hook_fs.crash_image(CrashMode::DropUnsynced);
            let step = step.load(Ordering::SeqCst);
            images.lock().unwrap().push((step, point, image));
        })));
    }
    let add = |s: &Store, name: &str, stored: bool| {
        let mut def = (**s.catalog().table("a", "t").unwrap()).clone();
        let mut sources: Vec<ColumnSource> =
            (0..def.columns.len()).map(ColumnSource::Stored).collect();
        def.columns.push(ColumnDef {
            name: name.into(),
            ty: ColumnType::BigInt { unsigned: false },
            nullable: true,
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: Some(Generated {
                expression: "k * 2".into(),
                stored,
            }),
        });
        sources.push(ColumnSource::Fill(Value::Null));
        s.alter_table(
            "a",
            "t",
            TableChange { def, sources },
            Arc::new(
                |_: &ColumnDef, _: &ColumnDef, v: Value, _: u64| -> shale_table::Result<Value> {
                    Ok(v)
                },
            ),
        )
        .unwrap()
        .1
    };
    let steps: Vec<Step> = vec![
        Box::new(move |s| {
            assert_eq!(add(s, "v", false), shale_table::AlterMethod::Instant);
        }),
        Box::new(|s| {
            let index = IndexDef {
                name: "v_1".into(),
                columns: vec![3],
                unique: false,
                index_id: 0,
            };
            s.create_index("a", "t", index).unwrap();
        }),
        Box::new(move |s| {
            let method = add(s, "s", true);
            assert_eq!(method, shale_table::AlterMethod::Rewrite { rows: 200 });
        }),
    ];
    for (i, run) in steps.iter().enumerate() {
        step.store(i + 1, Ordering::SeqCst);
        run(&store);
        let image = fs.crash_image(CrashMode::DropUnsynced);
        images.lock().unwrap().push((i + 1, u64::MAX, image));
    }
    fs.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() >= steps.len() * 2, "{} images", images.len());
    let base = vec![
        Value::Int(3),
        Value::Int(3),
        Value::Bytes(b"row 3".to_vec()),
    ];
    let with = |extra: &[i64]| {
        let mut row = base.clone();
        row.extend(extra.iter().map(|&v| Value::Int(v)));
        row
    };
    // Row 3 and the secondary index count as each step leaves them.
    let states = [
        (base.clone(), 1),
        (with(&[6]), 1),
        (with(&[6]), 2),
        (with(&[6, 6]), 2),
    ];
    for (step, point, image) in images {
        let label = format!("generated step {step}, sync point {point}");
        let reopened = open(&image);
        let t = reopened.catalog().table("a", "t").expect(&label).clone();
        let mut txn = reopened.begin(TxnOptions::default()).unwrap();
        let check = txn.check_table(&t).unwrap();
        assert!(check.is_ok() && check.rows == 200, "{label}: {check:?}");
        let got = txn.get(&t, &[Value::Int(3)], LockMode::None).unwrap();
        let ok = [step - 1, step].iter().any(|&s| {
            let (want, indexes) = &states[s];
            got.as_ref() == Some(want) && t.indexes.len() == *indexes
        });
        assert!(ok, "{label}: row 3 is {got:?}, {} indexes", t.indexes.len());
        drop(txn);
        drop(reopened);
        check_image_ids(&image, &label);
    }
}
