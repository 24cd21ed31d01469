//! Runs the `shale_table::testing::fuzz_*` entry points (the bodies of the cargo-fuzz targets
//! `table_row` and `table_definition` in fuzz/) on a fixed, seeded set of inputs: valid
//! encodings, those mutated by byte changes, truncations and insertions, and random bytes.
//! Nothing may panic; the entry points assert their round trips.
//!
//! `SHALE_FUZZ_SEEDS=<dir>` also writes the valid inputs to `<dir>/<target>/` as a seed corpus
//! (fuzz/README.md, scripts/fuzz-seeds.sh): the rows, and the definitions the catalog encodes.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::Path;

use shale_fs::{FileSystem, OsFs};
use shale_table::testing::{
    encode_row, encode_table_definition, fuzz_row, fuzz_table, fuzz_table_definition,
    sysbench_table,
};
use shale_table::Value;

fn mutations(rng: &mut SmallRng, valid: &[u8], out: &mut Vec<Vec<u8>>) {
    out.push(valid.to_vec());
    for _ in 0..3000 {
        let mut bytes = valid.to_vec();
        match rng.gen_range(0..3) {
            0 if !bytes.is_empty() => {
                let at = rng.gen_range(0..bytes.len());
                bytes[at] = rng.gen();
            }
            1 => bytes.truncate(rng.gen_range(0..=bytes.len())),
            _ => {
                let at = rng.gen_range(0..=bytes.len());
                bytes.insert(at, rng.gen());
            }
        }
        out.push(bytes);
    }
    for _ in 0..100 {
        let len = rng.gen_range(0..64);
        out.push((0..len).map(|_| rng.gen()).collect());
    }
}

#[test]
fn fuzz_entry_points_survive_mutated_and_random_inputs() {
    let mut rng = SmallRng::seed_from_u64(17);
    let table = fuzz_table();
    let rows = [
        vec![
            Value::Int(-7),
            Value::Bytes("Ärger ".into()),
            Value::Null,
            Value::UInt(5),
            Value::UInt(u64::MAX),
            Value::Double(-0.25),
            Value::Bytes(vec![0, 0xFF, 0]),
            Value::Bytes(b"a\tb".to_vec()),
            Value::Int(-32768),
        ],
        vec![
            Value::Int(i64::from(i32::MAX)),
            Value::Bytes(Vec::new()),
            Value::Int(-128),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ],
    ];
    let mut inputs = Vec::new();
    let mut row_seeds = Vec::new();
    for row in &rows {
        let encoded = encode_row(&table, row).unwrap();
        mutations(&mut rng, &encoded, &mut inputs);
        row_seeds.push(encoded);
    }
    for input in &inputs {
        fuzz_row(input);
    }
    let mut definitions = Vec::new();
    // The stored definition of the golden test's table, from its fixture.
    let golden = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/testdata/golden_table.txt"
    ))
    .unwrap();
    let definition_hex = golden
        .lines()
        .skip_while(|l| !l.contains("key   00 00 00 01 54"))
        .nth(1)
        .and_then(|l| l.trim().strip_prefix("value "))
        .expect("the golden fixture holds a table definition");
    let definition: Vec<u8> = definition_hex
        .split(' ')
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect();
    mutations(&mut rng, &definition, &mut definitions);
    // Definitions as the catalog writes them: every column type, and sysbench's table.
    let mut definition_seeds = vec![definition];
    for def in [fuzz_table(), sysbench_table(true), sysbench_table(false)] {
        let encoded = encode_table_definition(&def);
        mutations(&mut rng, &encoded, &mut definitions);
        definition_seeds.push(encoded);
    }
    for input in &definitions {
        fuzz_table_definition(input);
    }
    if let Ok(dir) = std::env::var("SHALE_FUZZ_SEEDS") {
        write_seeds(Path::new(&dir), "table_row", &row_seeds);
        write_seeds(Path::new(&dir), "table_definition", &definition_seeds);
    }
}

/// Writes `seeds` to `<dir>/<target>/seed-NNNN`.
fn write_seeds(dir: &Path, target: &str, seeds: &[Vec<u8>]) {
    let fs = OsFs::new();
    let target_dir = dir.join(target);
    fs.create_dir_all(&target_dir).unwrap();
    for (i, seed) in seeds.iter().enumerate() {
        let mut file = fs.create(&target_dir.join(format!("seed-{i:04}"))).unwrap();
        file.append(seed).unwrap();
        file.sync_data().unwrap();
    }
}
