//! A properties collector sees every point entry in order and its properties land in the file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use shale_fs::MemFs;
use shale_sst::{
    Table, TableFileContext, TableOpenOptions, TablePropertiesCollector,
    TablePropertiesCollectorFactory, TableWriter, ValueKind, WriterOptions,
};

/// The entries a collector saw: (user key, kind, value).
type Seen = Arc<Mutex<Vec<(Vec<u8>, ValueKind, Vec<u8>)>>>;

/// Records what it saw, and returns the entry count and the kinds seen as properties.
#[derive(Debug, Default)]
struct Recorder {
    seen: Seen,
    contexts: Arc<Mutex<Vec<(String, bool)>>>,
}

#[derive(Debug)]
struct RecordingCollector {
    seen: Seen,
    count: u64,
}

impl TablePropertiesCollectorFactory for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn create_collector(&self, context: TableFileContext<'_>) -> Box<dyn TablePropertiesCollector> {
        self.contexts
            .lock()
            .unwrap()
            .push((context.path.display().to_string(), context.external_file));
        Box::new(RecordingCollector {
            seen: self.seen.clone(),
            count: 0,
        })
    }
}

impl TablePropertiesCollector for RecordingCollector {
    fn add(&mut self, user_key: &[u8], kind: ValueKind, value: &[u8]) {
        self.count += 1;
        self.seen
            .lock()
            .unwrap()
            .push((user_key.to_vec(), kind, value.to_vec()));
    }

    fn finish(&mut self) -> BTreeMap<String, Vec<u8>> {
        BTreeMap::from([
            ("count".to_owned(), self.count.to_string().into_bytes()),
            // The writer's own value for this name must win.
            ("keyspace_id".to_owned(), b"collector".to_vec()),
        ])
    }
}

#[test]
fn collector_sees_point_entries_in_order_and_adds_properties() {
    let fs = MemFs::new();
    let path = Path::new("/t.sst");
    let recorder = Arc::new(Recorder::default());
    let options = WriterOptions {
        properties_collector: Some(recorder.clone()),
        user_properties: BTreeMap::from([("keyspace_id".to_owned(), b"7".to_vec())]),
        external_file: true,
        ..WriterOptions::default()
    };
    let mut writer = TableWriter::create(&fs, path, options).unwrap();
    writer.add_entry(b"a", 0, ValueKind::Value, b"1").unwrap();
    writer.add_range_deletion(b"b", b"c", 0).unwrap();
    writer.add_entry(b"d", 0, ValueKind::Deletion, b"").unwrap();
    writer.add_entry(b"e", 0, ValueKind::Value, b"5").unwrap();
    writer.finish().unwrap();

    let seen = recorder.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (b"a".to_vec(), ValueKind::Value, b"1".to_vec()),
            (b"d".to_vec(), ValueKind::Deletion, Vec::new()),
            (b"e".to_vec(), ValueKind::Value, b"5".to_vec()),
        ]
    );
    assert_eq!(
        *recorder.contexts.lock().unwrap(),
        vec![("/t.sst".to_owned(), true)]
    );
    let table = Table::open(&fs, path, &TableOpenOptions::default()).unwrap();
    let user = &table.properties().user;
    assert_eq!(user.get("count").map(Vec::as_slice), Some(&b"3"[..]));
    assert_eq!(user.get("keyspace_id").map(Vec::as_slice), Some(&b"7"[..]));
}

#[test]
fn without_a_collector_only_the_writers_properties_are_stored() {
    let fs = MemFs::new();
    let path = Path::new("/plain.sst");
    let mut writer = TableWriter::create(&fs, path, WriterOptions::default()).unwrap();
    writer.add_entry(b"a", 1, ValueKind::Value, b"1").unwrap();
    writer.finish().unwrap();
    let table = Table::open(&fs, path, &TableOpenOptions::default()).unwrap();
    assert!(table.properties().user.is_empty());
}
