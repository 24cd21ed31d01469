//! Table sizes with and without a trained zstd dictionary at the bottommost level
//! (`zstd_max_dict_bytes`, docs/compaction.md "Dictionary compression").
//!
//! ```text
//! cargo run --release -p shale --example dict_compression -- [--rows 500000] [--dicts 0,16384,65536]
//! ```
//!
//! For each data set and each dictionary size, a fresh database on `MemFs` (sizes do not
//! depend on the file system; 4 MiB memtables) takes the rows in a scattered order (so the L0 tables overlap and
//! are merged, not moved down), then `compact_range` brings everything to the bottommost level,
//! written with zstd (level 3, 4 KiB blocks, 64 MiB tables). Printed: the rows' raw bytes (keys
//! and values), the bottommost tables' bytes and their ratio to raw, the number of tables, how
//! many carry a dictionary, and the seconds from the first put to the end of `compact_range`
//! (the background compactions during the fill already write the bottommost level).
//!
//! Data sets:
//! - `json`: 16-byte keys, JSON documents of about 250 bytes with the same field names in every
//!   row and varied values (names, numbers, dates).
//! - `dbbench`: 16-byte keys, 100-byte values of compression ratio 0.5 generated exactly as
//!   `db_bench --compression_ratio=0.5` does (crates/shale/src/keygen.rs).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use shale_engine::{Db, KeyspaceOptions, Options};
use shale_fs::{FileSystem, MemFs};
use shale_sst::{Compression, Table, TableOpenOptions};

#[allow(dead_code)]
#[path = "../src/keygen.rs"]
mod keygen;

const DIR: &str = "/db";

fn json_row(rng: &mut SmallRng, id: u64) -> Vec<u8> {
    const NAMES: [&str; 8] = [
        "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
    ];
    const CITIES: [&str; 6] = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Accra"];
    const PLANS: [&str; 3] = ["free", "pro", "enterprise"];
    format!(
        r#"{{"id":{id},"name":"{} {}","email":"{}{}@example.com","address":{{"street":"{} Main St","city":"{}","zip":"{:05}"}},"plan":"{}","active":{},"balance":{}.{:02},"logins":{},"tags":["t{}","t{}"],"created_at":"20{:02}-{:02}-{:02}T{:02}:{:02}:{:02}Z"}}"#,
        NAMES[rng.gen_range(0..NAMES.len())],
        NAMES[rng.gen_range(0..NAMES.len())],
        NAMES[rng.gen_range(0..NAMES.len())],
        rng.gen_range(0..100_000),
        rng.gen_range(1..2000),
        CITIES[rng.gen_range(0..CITIES.len())],
        rng.gen_range(0..100_000),
        PLANS[rng.gen_range(0..PLANS.len())],
        rng.gen_bool(0.5),
        rng.gen_range(0..1_000_000),
        rng.gen_range(0..100),
        rng.gen_range(0..10_000),
        rng.gen_range(0..50),
        rng.gen_range(0..50),
        rng.gen_range(10..25),
        rng.gen_range(1..=12),
        rng.gen_range(1..=28),
        rng.gen_range(0..24),
        rng.gen_range(0..60),
        rng.gen_range(0..60),
    )
    .into_bytes()
}

fn data_set(name: &str, rows: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let keys = keygen::KeyGenerator::new(16);
    let key = |i: u64| {
        let mut out = Vec::new();
        keys.key_into(i, &mut out);
        out
    };
    if name == "json" {
        let mut rng = SmallRng::seed_from_u64(42);
        (0..rows).map(|i| (key(i), json_row(&mut rng, i))).collect()
    } else {
        let values = keygen::ValueGenerator::new(100, 0.5);
        (0..rows)
            .map(|i| (key(i), values.value(i).to_vec()))
            .collect()
    }
}

struct Measured {
    bytes: u64,
    tables: usize,
    with_dictionary: usize,
    compact_seconds: f64,
}

fn measure(rows: &[(Vec<u8>, Vec<u8>)], max_dict_bytes: usize) -> Measured {
    let fs = Arc::new(MemFs::new());
    let options = Options {
        file_system: fs.clone(),
        default_keyspace: KeyspaceOptions {
            // Small memtables: several overlapping L0 tables, merged by compaction.
            write_buffer_size: 4 << 20,
            bottommost_compression: Some(Compression::Zstd),
            zstd_max_dict_bytes: max_dict_bytes,
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(DIR, options).expect("open");
    // A stride coprime to the row count visits every row once, scattered.
    let n = rows.len() as u64;
    let stride = (7919..7919 + n).find(|s| gcd(*s, n) == 1).unwrap_or(1);
    let start = Instant::now();
    for k in 0..n {
        let (key, value) = &rows[usize::try_from(k * stride % n).unwrap_or(0)];
        db.put(key, value).expect("put");
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .expect("compact");
    let compact_seconds = start.elapsed().as_secs_f64();
    let version = db.current_version();
    let last = version.num_levels() - 1;
    let files = version.files(0, last);
    let mut with_dictionary = 0;
    for file in files {
        let path = Path::new(DIR).join(format!("{:06}.sst", file.number));
        let table = Table::open(&*fs as &dyn FileSystem, &path, &TableOpenOptions::default())
            .expect("open table");
        if table.properties().compression == "zstd-dict" {
            with_dictionary += 1;
        }
    }
    let measured = Measured {
        bytes: files.iter().map(|f| f.size).sum(),
        tables: files.len(),
        with_dictionary,
        compact_seconds,
    };
    db.close().expect("close");
    measured
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn main() {
    let mut rows: u64 = 500_000;
    let mut dicts: Vec<usize> = vec![0, 16 << 10, 64 << 10];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--rows" => rows = value.parse().expect("--rows takes a number"),
            "--dicts" => {
                dicts = value
                    .split(',')
                    .map(|d| d.parse().expect("--dicts takes sizes in bytes"))
                    .collect();
            }
            _ => panic!("unknown argument {arg}; see the module doc"),
        }
    }
    println!(
        "{:<8} {:>10} {:>12} {:>12} {:>7} {:>7} {:>6} {:>10}",
        "data", "dict B", "raw B", "table B", "ratio", "tables", "dict", "seconds"
    );
    for name in ["json", "dbbench"] {
        let data = data_set(name, rows);
        let raw: u64 = data.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        for &dict in &dicts {
            let m = measure(&data, dict);
            println!(
                "{name:<8} {dict:>10} {raw:>12} {:>12} {:>7.3} {:>7} {:>6} {:>10.2}",
                m.bytes,
                m.bytes as f64 / raw as f64,
                m.tables,
                m.with_dictionary,
                m.compact_seconds
            );
        }
    }
}
