//! Views in the catalog (view.rs): they survive a reopen, share the table namespace, and each
//! view DDL is atomic across crashes: a crash image taken at every sync point during CREATE,
//! CREATE OR REPLACE, ALTER, DROP VIEW, RENAME and DROP DATABASE reopens to the view as it
//! was before the statement or after it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shale_engine::Options;
use shale_fs::{CrashMode, MemFs};
use shale_table::{
    Collation, ColumnDef, ColumnType, Error, IndexDef, Store, StoreOptions, TableDef,
    ViewAlgorithm, ViewDef, ViewSecurity, ViewWrite,
};

/// One DDL step of the crash test.
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

fn view(database: &str, name: &str, query: &str) -> ViewDef {
    ViewDef {
        database: database.into(),
        name: name.into(),
        columns: Vec::new(),
        query: query.into(),
        algorithm: ViewAlgorithm::Undefined,
        security: ViewSecurity::Definer,
        definer: "root@localhost".into(),
        character_set_client: "utf8mb4".into(),
        collation_connection: "utf8mb4_general_ci".into(),
        check_option: shale_table::ViewCheckOption::None,
    }
}

fn table(database: &str, name: &str) -> TableDef {
    TableDef {
        database: database.into(),
        name: name.into(),
        columns: vec![ColumnDef {
            name: "c".into(),
            ty: ColumnType::VarChar {
                len: 10,
                collation: Collation::Utf8mb4GeneralCi,
            },
            nullable: true,
            default: None,
            auto_increment: false,
            auto_timestamp: shale_table::AutoTimestamp::default(),
            generated: None,
        }],
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: Vec::new(),
            unique: true,
            index_id: 0,
        },
        indexes: Vec::new(),
        schema_version: 0,
        past_versions: Vec::new(),
    }
}

/// The query of view `a.v` in the store at `fs` (None: no such view), after a reopen.
fn query_after_reopen(fs: &MemFs, database: &str, name: &str) -> Option<String> {
    let store = open(fs);
    let q = store
        .catalog()
        .view(database, name)
        .map(|v| v.query.clone());
    store.close().unwrap();
    q
}

#[test]
fn views_survive_reopen_and_share_the_table_namespace() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("a").unwrap();
    store.create_table(table("a", "t")).unwrap();
    let mut v = view("a", "v", "SELECT c FROM t");
    v.columns = vec!["x".into()];
    v.algorithm = ViewAlgorithm::TempTable;
    v.security = ViewSecurity::Invoker;
    store.write_view(v.clone(), ViewWrite::Create).unwrap();
    // A view may not take a table's name, nor a table a view's (in any case).
    assert!(matches!(
        store.write_view(view("a", "T", "SELECT 1"), ViewWrite::CreateOrReplace),
        Err(Error::TableExists { .. })
    ));
    assert!(matches!(
        store.create_table(table("a", "V")),
        Err(Error::TableExists { .. })
    ));
    assert!(matches!(
        store.write_view(view("a", "v", "SELECT 2"), ViewWrite::Create),
        Err(Error::TableExists { .. })
    ));
    assert!(matches!(
        store.write_view(view("a", "w", "SELECT 2"), ViewWrite::Alter),
        Err(Error::NoSuchTable { .. })
    ));
    assert!(matches!(
        store.write_view(view("nodb", "w", "SELECT 2"), ViewWrite::Create),
        Err(Error::NoSuchDatabase(_))
    ));
    store
        .write_view(view("a", "w", "SELECT 1"), ViewWrite::Create)
        .unwrap();
    store.close().unwrap();

    let store = open(&fs);
    let catalog = store.catalog();
    assert_eq!(catalog.view("a", "v").map(|d| (**d).clone()), Some(v));
    assert_eq!(catalog.view("a", "W").unwrap().query, "SELECT 1");
    // ALTER keeps the name as created, whatever case it is given in.
    store
        .write_view(view("a", "W", "SELECT 3"), ViewWrite::Alter)
        .unwrap();
    assert_eq!(store.catalog().view("a", "w").unwrap().name, "w");
    // RENAME: applied in order (a swap), all or nothing, never onto a table's name.
    store
        .write_view(view("a", "x", "SELECT 'x'"), ViewWrite::Create)
        .unwrap();
    let rename = |a: &str, b: &str| ("a".to_string(), a.to_string(), b.to_string());
    store
        .rename_views(&[rename("w", "tmp"), rename("x", "w"), rename("tmp", "x")])
        .unwrap();
    assert!(store
        .rename_views(&[rename("w", "y"), rename("x", "t")])
        .is_err());
    store.close().unwrap();
    let store = open(&fs);
    let catalog = store.catalog();
    assert_eq!(catalog.view("a", "w").unwrap().query, "SELECT 'x'");
    assert_eq!(catalog.view("a", "x").unwrap().query, "SELECT 3");
    assert!(catalog.view("a", "y").is_none() && catalog.view("a", "tmp").is_none());
    store.drop_views(&[("a".into(), "x".into())]).unwrap();
    // DROP VIEW of several is all or nothing.
    assert!(store
        .drop_views(&[("a".into(), "v".into()), ("a".into(), "nope".into())])
        .is_err());
    assert!(store.catalog().view("a", "v").is_some());
    store.drop_views(&[("a".into(), "v".into())]).unwrap();
    store.drop_database("a").unwrap();
    store.create_database("a").unwrap();
    assert!(store.catalog().view("a", "w").is_none());
    store.close().unwrap();
    assert_eq!(query_after_reopen(&fs, "a", "w"), None);
}

#[test]
fn view_ddl_survives_a_crash_at_every_sync_point() {
    let fs = MemFs::new();
    let store = open(&fs);
    store.create_database("a").unwrap();
    let step = Arc::new(AtomicUsize::new(0));
    let images: Arc<Mutex<Vec<(usize, MemFs)>>> = Arc::default();
    {
        let (hook_fs, step, images) = (fs.clone(), step.clone(), images.clone());
        fs.set_sync_hook(Some(Arc::new(move |point| {
            let step = step.load(Ordering::SeqCst);
            let mut images = images.lock().unwrap();
            images.push((step, hook_fs.crash_image(CrashMode::DropUnsynced)));
            images.push((step, hook_fs.crash_image(CrashMode::Torn { seed: point })));
        })));
    }
    let steps: Vec<Step> = vec![
        Box::new(|s| {
            s.write_view(view("a", "v", "SELECT 1"), ViewWrite::Create)
                .unwrap();
        }),
        Box::new(|s| {
            s.write_view(view("a", "v", "SELECT 2"), ViewWrite::CreateOrReplace)
                .unwrap();
        }),
        Box::new(|s| {
            s.write_view(view("a", "V", "SELECT 3"), ViewWrite::Alter)
                .unwrap();
        }),
        Box::new(|s| s.drop_views(&[("a".into(), "v".into())]).unwrap()),
        Box::new(|s| {
            s.write_view(view("a", "v", "SELECT 4"), ViewWrite::Create)
                .unwrap();
        }),
        Box::new(|s| {
            s.rename_views(&[("a".into(), "v".into(), "w".into())])
                .unwrap();
        }),
        Box::new(|s| {
            s.rename_views(&[("a".into(), "w".into(), "v".into())])
                .unwrap();
        }),
        Box::new(|s| s.drop_database("a").unwrap()),
    ];
    for (i, run) in steps.iter().enumerate() {
        step.store(i + 1, Ordering::SeqCst);
        run(&store);
        images
            .lock()
            .unwrap()
            .push((i + 1, fs.crash_image(CrashMode::DropUnsynced)));
    }
    fs.set_sync_hook(None);
    let images = std::mem::take(&mut *images.lock().unwrap());
    assert!(images.len() >= steps.len() * 2, "{} images", images.len());
    // The view's query after each step (None: no view).
    let after = [
        None,
        Some("SELECT 1"),
        Some("SELECT 2"),
        Some("SELECT 3"),
        None,
        Some("SELECT 4"),
        None,
        Some("SELECT 4"),
        None,
    ];
    for (step, image) in images {
        let got = query_after_reopen(&image, "a", "v");
        assert!(
            got.as_deref() == after[step - 1] || got.as_deref() == after[step],
            "step {step}: view a.v is {got:?}"
        );
    }
}
