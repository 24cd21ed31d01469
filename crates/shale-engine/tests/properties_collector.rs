//! `KeyspaceOptions::table_properties_collector`: every table file the engine writes for the
//! keyspace (flush, compaction, `TableFileWriter` for ingestion) carries the collector's
//! properties, read back through `inspect::read_table_properties`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale_engine::inspect::{read_table_properties, table_file_name, TableProperties};
use shale_engine::{
    Db, IngestArg, IngestOptions, KeyspaceOptions, Options, TableFileContext, TableFileWriter,
    TablePropertiesCollector, TablePropertiesCollectorFactory,
};
use shale_fs::{FileSystem, MemFs};
use shale_sst::ValueKind;

/// Records the number of point entries, the deletions among them, and the first and last
/// user key, as a table-layer collector would track its index ids.
#[derive(Debug)]
struct KeyRange;

#[derive(Debug, Default)]
struct KeyRangeCollector {
    entries: u64,
    deletions: u64,
    first: Option<Vec<u8>>,
    last: Vec<u8>,
    external: bool,
}

impl TablePropertiesCollectorFactory for KeyRange {
    fn name(&self) -> &'static str {
        "test.key_range"
    }

    fn create_collector(&self, context: TableFileContext<'_>) -> Box<dyn TablePropertiesCollector> {
        Box::new(KeyRangeCollector {
            external: context.external_file,
            ..KeyRangeCollector::default()
        })
    }
}

impl TablePropertiesCollector for KeyRangeCollector {
    fn add(&mut self, user_key: &[u8], kind: ValueKind, _value: &[u8]) {
        assert!(
            self.first.is_none() || self.last.as_slice() < user_key,
            "keys out of order"
        );
        self.entries += 1;
        if kind == ValueKind::Deletion {
            self.deletions += 1;
        }
        self.first.get_or_insert_with(|| user_key.to_vec());
        self.last = user_key.to_vec();
    }

    fn finish(&mut self) -> BTreeMap<String, Vec<u8>> {
        BTreeMap::from([
            ("test.entries".into(), self.entries.to_string().into_bytes()),
            (
                "test.deletions".into(),
                self.deletions.to_string().into_bytes(),
            ),
            ("test.first".into(), self.first.clone().unwrap_or_default()),
            ("test.last".into(), self.last.clone()),
            ("test.external".into(), vec![u8::from(self.external)]),
        ])
    }
}

fn options(fs: &Arc<dyn FileSystem>) -> Options {
    Options {
        file_system: fs.clone(),
        default_keyspace: KeyspaceOptions {
            table_properties_collector: Some(Arc::new(KeyRange)),
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    }
}

/// The properties of every live table of the default keyspace, by level.
fn live_tables(db: &Db, fs: &Arc<dyn FileSystem>) -> Vec<(usize, TableProperties)> {
    let version = db.current_version();
    version
        .all_files()
        .map(|(_, level, file)| {
            let path = table_file_name(Path::new("/db"), file.number);
            (level, read_table_properties(&**fs, &path).unwrap())
        })
        .collect()
}

fn user<'a>(props: &'a TableProperties, name: &str) -> &'a [u8] {
    props
        .user
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", props.user))
}

#[test]
fn flush_and_compaction_outputs_carry_the_collectors_properties() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    for round in 0..3u32 {
        for i in 0..10u32 {
            db.put(format!("k{:02}", i * 3 + round).as_bytes(), b"v")
                .unwrap();
        }
        db.delete(format!("z{round}").as_bytes()).unwrap();
        db.flush().unwrap();
    }
    let flushed = live_tables(&db, &fs);
    assert_eq!(flushed.len(), 3, "{flushed:?}");
    for (level, props) in &flushed {
        assert_eq!(*level, 0);
        assert_eq!(user(props, "test.entries"), b"11");
        assert_eq!(user(props, "test.deletions"), b"1");
        assert_eq!(user(props, "test.external"), [0]);
        // The engine's own property is still there, beside the collector's.
        assert_eq!(user(props, "keyspace_name"), b"default");
    }

    let ks = db.default_keyspace();
    db.compact_range(&ks, None, None).unwrap();
    let compacted = live_tables(&db, &fs);
    assert_eq!(compacted.len(), 1, "{compacted:?}");
    let (level, props) = &compacted[0];
    assert!(*level > 0);
    // The bottom level drops the deletions: 30 puts remain.
    assert_eq!(user(props, "test.entries"), b"30");
    assert_eq!(user(props, "test.deletions"), b"0");
    assert_eq!(user(props, "test.first"), b"k00");
    assert_eq!(user(props, "test.last"), b"k29");
    db.close().unwrap();
}

#[test]
fn external_files_carry_the_collectors_properties_into_the_database() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let options = options(&fs);
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut writer =
        TableFileWriter::create("/ext/a.sst", &options, &options.default_keyspace).unwrap();
    writer.put(b"a", b"1").unwrap();
    writer.delete(b"b").unwrap();
    writer.put(b"c", b"3").unwrap();
    writer.finish().unwrap();
    let written = read_table_properties(&*fs, Path::new("/ext/a.sst")).unwrap();
    assert_eq!(user(&written, "test.entries"), b"3");
    assert_eq!(user(&written, "test.deletions"), b"1");
    assert_eq!(user(&written, "test.external"), [1]);
    // An external file names no keyspace.
    assert!(!written.user.contains_key("keyspace_id"));

    let db = Db::open("/db", options).unwrap();
    db.ingest(
        &[IngestArg {
            keyspace: db.default_keyspace(),
            files: vec!["/ext/a.sst".into()],
        }],
        IngestOptions {
            move_files: true,
            ..IngestOptions::default()
        },
    )
    .unwrap();
    let live = live_tables(&db, &fs);
    assert_eq!(live.len(), 1);
    assert_eq!(user(&live[0].1, "test.first"), b"a");
    assert_eq!(user(&live[0].1, "test.last"), b"c");
    db.close().unwrap();
}

#[test]
fn the_collectors_name_is_recorded_in_the_options() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    let pairs = db.keyspace_option_pairs(&db.default_keyspace()).unwrap();
    assert!(
        pairs.contains(&(
            "table_properties_collector".to_owned(),
            "test.key_range".to_owned()
        )),
        "{pairs:?}"
    );
    db.close().unwrap();
}
