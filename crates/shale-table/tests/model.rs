//! A model test: random inserts, updates and deletes on two tables against a `BTreeMap`
//! oracle, with commits, rollbacks, clean reopens and crashes (crash images of the in-memory
//! file system; commits are synced, so every committed change must survive), index
//! rebuilds and ALTER TABLEs (an extra column of t1 added and dropped again, instantly or,
//! when `k` widens at the same time, by a rewrite). After every step the rows match the oracle
//! and CHECK TABLE is clean.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::Options;
use shale_fs::{CrashMode, MemFs};
use shale_table::{
    AlterMethod, Collation, ColumnDef, ColumnSource, ColumnType, Durability, Error, IndexChoice,
    IndexDef, KeyRange, LockMode, Store, StoreOptions, TableChange, TableDef, TxnOptions, Value,
};

fn open(fs: &MemFs) -> Store {
    let mut options = StoreOptions {
        engine: Options {
            file_system: Arc::new(fs.clone()),
            ..Options::default()
        },
        ..StoreOptions::default()
    };
    options.engine.durability = Durability::Sync;
    options.engine.default_keyspace.write_buffer_size = 64 << 10; // flushes happen
    Store::open("/db", options).unwrap()
}

fn column(name: &str, ty: ColumnType, nullable: bool) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty,
        nullable,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: None,
    }
}

fn index(name: &str, columns: Vec<usize>, unique: bool) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns,
        unique,
        index_id: 0,
    }
}

/// `t1 (id INT PK, k SMALLINT, u VARCHAR general_ci NULL UNIQUE, KEY (k))` and
/// `t2 (name VARCHAR general_ci, n BIGINT UNSIGNED, score DOUBLE NULL, PK (name, n), KEY (score))`.
fn tables() -> [TableDef; 2] {
    let ci = ColumnType::VarChar {
        len: 16,
        collation: Collation::Utf8mb4GeneralCi,
    };
    [
        TableDef {
            database: "m".into(),
            name: "t1".into(),
            columns: vec![
                column("id", ColumnType::Int { unsigned: false }, false),
                column("k", ColumnType::SmallInt { unsigned: false }, false),
                column("u", ci.clone(), true),
            ],
            primary_key: index("PRIMARY", vec![0], true),
            indexes: vec![index("k", vec![1], false), index("u", vec![2], true)],
            schema_version: 0,
            past_versions: Vec::new(),
        },
        TableDef {
            database: "m".into(),
            name: "t2".into(),
            columns: vec![
                column("name", ci, false),
                column("n", ColumnType::BigInt { unsigned: true }, false),
                column("score", ColumnType::Double, true),
            ],
            primary_key: index("PRIMARY", vec![0, 1], true),
            indexes: vec![index("score", vec![2], false)],
            schema_version: 0,
            past_versions: Vec::new(),
        },
    ]
}

/// The oracle's key of a row: its primary key, strings folded to lowercase (`general_ci`).
fn model_key(table: usize, row: &[Value]) -> String {
    match table {
        0 => format!("{:?}", row[0]),
        _ => match &row[0] {
            Value::Bytes(b) => {
                format!("{}/{:?}", String::from_utf8_lossy(b).to_lowercase(), row[1])
            }
            other => panic!("name is {other:?}"),
        },
    }
}

fn random_row(rng: &mut SmallRng, table: usize) -> Vec<Value> {
    let word = |rng: &mut SmallRng| {
        let w = ["ab", "Ab", "cd", "CD", "ef", "x", "Yz"][rng.gen_range(0..7)];
        Value::Bytes(w.as_bytes().to_vec())
    };
    match table {
        0 => vec![
            Value::Int(rng.gen_range(-30..30)),
            Value::Int(rng.gen_range(-3..3)),
            if rng.gen_bool(0.6) {
                Value::Null
            } else {
                word(rng)
            },
        ],
        _ => vec![
            word(rng),
            Value::UInt(rng.gen_range(0..4) * (u64::MAX / 3)),
            if rng.gen_bool(0.3) {
                Value::Null
            } else {
                Value::Double(f64::from(rng.gen_range(-4i32..4)) / 2.0)
            },
        ],
    }
}

fn u_clash(model: &BTreeMap<String, Vec<Value>>, row: &[Value], own: &str) -> bool {
    let Value::Bytes(u) = &row[2] else {
        return false;
    };
    model
        .iter()
        .any(|(key, r)| key != own && matches!(&r[2], Value::Bytes(b) if b.eq_ignore_ascii_case(u)))
}

fn sorted(mut rows: Vec<Vec<Value>>) -> Vec<String> {
    let mut out: Vec<String> = rows.drain(..).map(|r| format!("{r:?}")).collect();
    out.sort();
    out
}

fn verify(store: &Store, models: &[BTreeMap<String, Vec<Value>>; 2], label: &str) {
    let catalog = store.catalog();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    for (i, model) in models.iter().enumerate() {
        let t = catalog.table("m", &format!("t{}", i + 1)).unwrap();
        let check = txn.check_table(t).unwrap();
        assert!(check.is_ok(), "{label}: t{}: {check:?}", i + 1);
        let mut cursor = txn
            .scan(
                t,
                IndexChoice::Primary,
                KeyRange::all(),
                false,
                LockMode::None,
            )
            .unwrap();
        let mut rows = Vec::new();
        while let Some(row) = cursor.next_row().unwrap() {
            rows.push(row);
        }
        // Exact text comes back (case kept), so compare the rows themselves.
        assert_eq!(
            sorted(rows),
            sorted(model.values().cloned().collect()),
            "{label}: t{}",
            i + 1
        );
    }
}

#[test]
fn random_operations_with_reopens_and_crashes_match_the_model() {
    // Instant ALTERs and rewrites run.
    let mut alters = [0, 0];
    for seed in 0..5u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut fs = MemFs::new();
        let mut store = open(&fs);
        store.create_database("m").unwrap();
        for def in tables() {
            store.create_table(def).unwrap();
        }
        let mut models: [BTreeMap<String, Vec<Value>>; 2] = Default::default();
        // Whether t1 has its fourth column `e` (added by ALTER TABLE) now.
        let mut extra = false;
        for round in 0..60 {
            let catalog = store.catalog();
            let defs = [
                catalog.table("m", "t1").unwrap().clone(),
                catalog.table("m", "t2").unwrap().clone(),
            ];
            let mut pending = models.clone();
            let mut txn = store.begin(TxnOptions::default()).unwrap();
            for _ in 0..rng.gen_range(1..40) {
                let table = rng.gen_range(0..2);
                let (t, model) = (&defs[table], &mut pending[table]);
                let mut new = random_row(&mut rng, table);
                if table == 0 && extra {
                    new.push(Value::Int(rng.gen_range(-5..5)));
                }
                let key = model_key(table, &new);
                let clash = table == 0 && u_clash(model, &new, &key);
                match model.get(&key).cloned() {
                    None => match txn.insert(t, new.clone()) {
                        Ok(()) if !clash => {
                            model.insert(key, new);
                        }
                        Err(Error::DuplicateKey { .. }) if clash => {}
                        other => panic!("seed {seed} round {round}: insert {new:?}: {other:?}"),
                    },
                    Some(old) if rng.gen_bool(0.3) => {
                        txn.delete(t, &old).unwrap();
                        model.remove(&key);
                    }
                    Some(old) => {
                        // Keep the primary key (as stored), change the rest.
                        let mut changed = new.clone();
                        changed[0] = old[0].clone();
                        if table == 1 {
                            changed[1] = old[1].clone();
                        }
                        let clash = table == 0 && u_clash(model, &changed, &key);
                        match txn.update(t, &old, changed.clone()) {
                            Ok(()) if !clash => {
                                model.insert(key, changed);
                            }
                            Err(Error::DuplicateKey { .. }) if clash => {}
                            other => panic!("seed {seed} round {round}: update {old:?}: {other:?}"),
                        }
                    }
                }
            }
            if rng.gen_bool(0.8) {
                txn.commit().unwrap();
                models = pending;
            } else {
                txn.rollback();
            }
            let label = format!("seed {seed} round {round}");
            match rng.gen_range(0..7) {
                0 => {
                    store.close().unwrap();
                    store = open(&fs);
                }
                3 => {
                    // Rebuild t2's index (DROP INDEX, then CREATE INDEX over the rows).
                    store.drop_index("m", "t2", "score").unwrap();
                    store
                        .create_index("m", "t2", index("score", vec![2], false))
                        .unwrap();
                }
                4 => {
                    let widen = rng.gen_bool(0.3);
                    match alter_t1(&store, &mut models[0], &mut extra, widen, &label) {
                        AlterMethod::Instant => alters[0] += 1,
                        AlterMethod::Rewrite { .. } => alters[1] += 1,
                    }
                }
                1 | 2 => {
                    let mode = if rng.gen_bool(0.5) {
                        CrashMode::DropUnsynced
                    } else {
                        CrashMode::Torn { seed: rng.gen() }
                    };
                    let image = fs.crash_image(mode);
                    drop(store);
                    fs = image;
                    store = open(&fs);
                }
                _ => {}
            }
            verify(&store, &models, &label);
        }
    }
    assert!(alters[0] > 0 && alters[1] > 0, "ALTERs run: {alters:?}");
}

/// Adds t1's column `e INT NOT NULL DEFAULT 7` at the end, or drops it again; with `widen`,
/// `k` (indexed) becomes INT in the same statement, which makes it a rewrite.
fn alter_t1(
    store: &Store,
    model: &mut BTreeMap<String, Vec<Value>>,
    extra: &mut bool,
    widen: bool,
    label: &str,
) -> AlterMethod {
    let mut def = (**store.catalog().table("m", "t1").unwrap()).clone();
    let widen = widen && def.columns[1].ty != ColumnType::Int { unsigned: false };
    let mut sources: Vec<ColumnSource> = (0..3).map(ColumnSource::Stored).collect();
    if *extra {
        def.columns.pop();
    } else {
        let mut e = column("e", ColumnType::Int { unsigned: false }, false);
        e.default = Some(Value::Int(7));
        def.columns.push(e);
        sources.push(ColumnSource::Fill(Value::Int(7)));
    }
    if widen {
        def.columns[1].ty = ColumnType::Int { unsigned: false };
    }
    let (_, method) = store
        .alter_table(
            "m",
            "t1",
            TableChange { def, sources },
            Arc::new(
                |_: &ColumnDef, _: &ColumnDef, v: Value, _: u64| -> Result<Value, Error> { Ok(v) },
            ),
        )
        .unwrap();
    assert_eq!(
        method == AlterMethod::Instant,
        !widen,
        "{label}: {method:?}"
    );
    for row in model.values_mut() {
        if *extra {
            row.pop();
        } else {
            row.push(Value::Int(7));
        }
    }
    *extra = !*extra;
    method
}
