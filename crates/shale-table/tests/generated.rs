//! Generated columns in the table layer (generated.rs): VIRTUAL values come from the
//! installed evaluator on every decode and write, never from the row's bytes or the caller;
//! STORED values are kept as given; index entries and CHECK TABLE follow the computed values.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use shale_engine::Options;
use shale_fs::MemFs;
use shale_table::{
    ColumnDef, ColumnType, Generated, IndexChoice, IndexDef, KeyRange, LockMode, Store,
    StoreOptions, TableDef, TxnOptions, Value,
};

/// Computes every generated column as `k * FACTOR`.
struct TimesK;

static FACTOR: AtomicI64 = AtomicI64::new(2);

impl shale_table::VirtualColumns for TimesK {
    fn compute(
        &self,
        table: &TableDef,
        row: &mut [Value],
        stored: bool,
    ) -> shale_table::Result<()> {
        let k = match table.column_position("k").and_then(|p| row.get(p)) {
            Some(Value::Int(k)) => Some(*k),
            _ => None,
        };
        let factor = FACTOR.load(Ordering::SeqCst);
        for (i, column) in table.columns.iter().enumerate() {
            if column
                .generated
                .as_ref()
                .is_some_and(|g| stored || !g.stored)
            {
                row[i] = k.map_or(Value::Null, |k| Value::Int(k * factor));
            }
        }
        Ok(())
    }
}

fn column(name: &str, generated: Option<bool>) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty: ColumnType::BigInt { unsigned: false },
        nullable: true,
        default: None,
        auto_increment: false,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated: generated.map(|stored| Generated {
            expression: "k * 2".into(),
            stored,
        }),
    }
}

fn index(name: &str, columns: Vec<usize>) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns,
        unique: false,
        index_id: 0,
    }
}

fn ids_where_v(txn: &mut shale_table::TableTxn, t: &TableDef, v: i64) -> Vec<Value> {
    let mut cursor = txn
        .scan(
            t,
            IndexChoice::Secondary(0),
            KeyRange::prefix(vec![Value::Int(v)]),
            false,
            LockMode::None,
        )
        .unwrap();
    let mut ids = Vec::new();
    while let Some(row) = cursor.next_row().unwrap() {
        ids.push(row[0].clone());
    }
    ids
}

#[test]
fn virtual_values_are_computed_on_decode_and_write_and_indexed() {
    shale_table::install_virtual_columns(Arc::new(TimesK));
    let fs = MemFs::new();
    let store = Store::open(
        "/db",
        StoreOptions {
            engine: Options {
                file_system: Arc::new(fs),
                ..Options::default()
            },
            ..StoreOptions::default()
        },
    )
    .unwrap();
    store.create_database("d").unwrap();
    let mut pk = index("PRIMARY", vec![0]);
    pk.unique = true;
    let mut def = TableDef {
        database: "d".into(),
        name: "t".into(),
        columns: vec![
            column("id", None),
            column("k", None),
            column("v", Some(false)),
            column("s", Some(true)),
        ],
        primary_key: pk.clone(),
        indexes: vec![index("v_1", vec![2])],
        schema_version: 0,
        past_versions: Vec::new(),
    };
    // A virtual column cannot be in the primary key.
    def.primary_key.columns = vec![2];
    assert!(store.create_table(def.clone()).is_err());
    def.primary_key = pk;
    let t = store.create_table(def).unwrap();

    let mut txn = store.begin(TxnOptions::default()).unwrap();
    // The caller's virtual value is replaced; the stored one is kept as given.
    let given = |id, k| {
        vec![
            Value::Int(id),
            Value::Int(k),
            Value::Int(999),
            Value::Int(7),
        ]
    };
    txn.insert(&t, given(1, 5)).unwrap();
    txn.insert(&t, given(2, 6)).unwrap();
    let got = txn.get(&t, &[Value::Int(1)], LockMode::None).unwrap();
    assert_eq!(
        got,
        Some(vec![
            Value::Int(1),
            Value::Int(5),
            Value::Int(10),
            Value::Int(7)
        ])
    );
    assert_eq!(ids_where_v(&mut txn, &t, 10), vec![Value::Int(1)]);
    assert!(ids_where_v(&mut txn, &t, 999).is_empty());
    // An update moves the entry from the value of the stored image to the new one.
    let old = got.unwrap();
    txn.update(&t, &old, given(1, 8)).unwrap();
    assert!(ids_where_v(&mut txn, &t, 10).is_empty());
    assert_eq!(ids_where_v(&mut txn, &t, 16), vec![Value::Int(1)]);
    txn.commit().unwrap();

    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert!(check.is_ok() && check.rows == 2, "{check:?}");
    let row2 = txn
        .get(&t, &[Value::Int(2)], LockMode::None)
        .unwrap()
        .unwrap();
    txn.delete_index_entry_only(&t, 0, &row2).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert_eq!(check.rows_without_entries.len(), 1, "{check:?}");
    txn.commit().unwrap();
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let check = txn.check_table(&t).unwrap();
    assert_eq!(check.rows_without_entries.len(), 1, "again {check:?}");
    drop(txn);

    // The row holds no virtual value: a different expression reads differently, and CHECK
    // TABLE finds every entry stale. The stored column keeps its value.
    FACTOR.store(3, Ordering::SeqCst);
    let mut txn = store.begin(TxnOptions::default()).unwrap();
    let got = txn.get(&t, &[Value::Int(1)], LockMode::None).unwrap();
    assert_eq!(
        got,
        Some(vec![
            Value::Int(1),
            Value::Int(8),
            Value::Int(24),
            Value::Int(7)
        ])
    );
    let check = txn.check_table(&t).unwrap();
    assert_eq!(check.entries_without_rows.len(), 1, "{check:?}");
    assert_eq!(check.rows_without_entries.len(), 2, "{check:?}");
    FACTOR.store(2, Ordering::SeqCst);
}
