//! Measures what the 8-byte internal key trailer ((seqno << 8) | kind, u64 LE) costs the data
//! blocks of real tables, and what candidate compact encodings of it would save (branch
//! `bytes`, docs/benchmarks.md "Write batch and data block bytes").
//!
//! For each table given, every data block is rebuilt from its entries (the block boundaries
//! of the file, restart interval 16) in each encoding below, compressed with lz4 exactly as
//! the writer does (varint32 raw length, lz4 block, stored raw unless an eighth is saved) and
//! counted with its 5-byte block trailer:
//!
//! - `current`: the format as written (should equal the file's data bytes);
//! - `varint-trailer`: keys are user keys; the trailer follows the three entry varints as a
//!   varint64;
//! - `base+delta`: keys are user keys; the block stores its smallest seqno once (varint64), each
//!   entry `((seqno - base) << 8) | kind` as a varint64;
//! - `zero-flag`: `current`, except that a block whose entries all have seqno 0 and kind value
//!   drops their trailers (one flag byte per block); other blocks unchanged.
//!
//! Usage: `cargo run --release -p shale-sst --example trailer_bytes -- TABLE.sst...`

use std::path::PathBuf;

use shale_fs::OsFs;
use shale_sst::{BlockKind, ReadOptions, Table, TableOpenOptions};

const RESTART_INTERVAL: usize = 16;
const BLOCK_TRAILER_SIZE: usize = 5;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// One entry: the user key, the trailer, the value.
struct Entry {
    user_key: Vec<u8>,
    trailer: u64,
    value: Vec<u8>,
}

#[derive(Clone, Copy)]
enum Encoding {
    Current,
    VarintTrailer,
    BaseDelta,
    ZeroFlag,
}

impl Encoding {
    const ALL: [Encoding; 4] = [
        Encoding::Current,
        Encoding::VarintTrailer,
        Encoding::BaseDelta,
        Encoding::ZeroFlag,
    ];

    fn name(self) -> &'static str {
        match self {
            Encoding::Current => "current",
            Encoding::VarintTrailer => "varint-trailer",
            Encoding::BaseDelta => "base+delta",
            Encoding::ZeroFlag => "zero-flag",
        }
    }
}

/// The block contents of `entries` in `encoding` (entries, restart array, restart count).
fn encode_block(entries: &[Entry], encoding: Encoding) -> Vec<u8> {
    let mut out = Vec::new();
    let all_zero = entries.iter().all(|e| e.trailer == 1);
    let base = entries.iter().map(|e| e.trailer >> 8).min().unwrap_or(0);
    match encoding {
        Encoding::BaseDelta => put_varint(&mut out, base),
        Encoding::ZeroFlag => out.push(u8::from(all_zero)),
        _ => {}
    }
    let mut restarts = Vec::new();
    let mut last_key: Vec<u8> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let key: Vec<u8> = match encoding {
            Encoding::Current => [&e.user_key[..], &e.trailer.to_le_bytes()].concat(),
            Encoding::ZeroFlag if !all_zero => [&e.user_key[..], &e.trailer.to_le_bytes()].concat(),
            _ => e.user_key.clone(),
        };
        let shared = if i % RESTART_INTERVAL == 0 {
            restarts.push(out.len() as u32);
            0
        } else {
            shared_prefix(&last_key, &key)
        };
        put_varint(&mut out, shared as u64);
        put_varint(&mut out, (key.len() - shared) as u64);
        put_varint(&mut out, e.value.len() as u64);
        match encoding {
            Encoding::VarintTrailer => put_varint(&mut out, e.trailer),
            Encoding::BaseDelta => put_varint(
                &mut out,
                (((e.trailer >> 8) - base) << 8) | (e.trailer & 0xff),
            ),
            _ => {}
        }
        out.extend_from_slice(&key[shared..]);
        out.extend_from_slice(&e.value);
        last_key = key;
    }
    for r in &restarts {
        out.extend_from_slice(&r.to_le_bytes());
    }
    out.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
    out
}

/// The stored size of `raw` as the writer stores it with lz4, trailer included.
fn stored_size(raw: &[u8]) -> usize {
    let mut prefix = Vec::new();
    put_varint(&mut prefix, raw.len() as u64);
    let compressed = prefix.len() + lz4_flex::block::compress(raw).len();
    let limit = raw.len() - raw.len() / 8;
    let body = if compressed <= limit {
        compressed
    } else {
        raw.len()
    };
    body + BLOCK_TRAILER_SIZE
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        return Err("usage: trailer_bytes TABLE.sst...".into());
    }
    for path in paths {
        let table = Table::open(&OsFs::new(), &path, &TableOpenOptions::default())?;
        let layout = table.layout()?;
        let data_blocks: Vec<_> = layout
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Data)
            .collect();
        let file_data_bytes: u64 = data_blocks
            .iter()
            .map(|b| b.handle.size + BLOCK_TRAILER_SIZE as u64)
            .sum();
        let mut iter = table.iter(ReadOptions::default());
        iter.seek_to_first();
        let mut totals = [0usize; Encoding::ALL.len()];
        let mut zero_blocks = 0;
        let mut entries_total = 0u64;
        for block in &data_blocks {
            let mut entries = Vec::new();
            for _ in 0..block.entries {
                if !iter.valid() {
                    return Err(format!("{}: fewer entries than its blocks", path.display()).into());
                }
                let key = iter.key();
                let (user_key, trailer) = key.split_at(key.len() - 8);
                entries.push(Entry {
                    user_key: user_key.to_vec(),
                    trailer: u64::from_le_bytes(trailer.try_into()?),
                    value: iter.value().to_vec(),
                });
                iter.next();
            }
            iter.status()?;
            entries_total += entries.len() as u64;
            if entries.iter().all(|e| e.trailer == 1) {
                zero_blocks += 1;
            }
            for (total, encoding) in totals.iter_mut().zip(Encoding::ALL) {
                *total += stored_size(&encode_block(&entries, encoding));
            }
        }
        println!(
            "{}: {} bytes, {} data blocks ({} with every seqno 0), {} entries, \
             data bytes in the file {}",
            path.display(),
            layout.file_size,
            data_blocks.len(),
            zero_blocks,
            entries_total,
            file_data_bytes
        );
        let current = totals[0] as f64;
        for (total, encoding) in totals.iter().zip(Encoding::ALL) {
            println!(
                "  {:<15} {:>12}  {:+.3}% of data  {:+.3}% of the table  {:.2} B/entry",
                encoding.name(),
                total,
                100.0 * (*total as f64 - current) / current,
                100.0 * (*total as f64 - current) / layout.file_size as f64,
                *total as f64 / entries_total as f64
            );
        }
    }
    Ok(())
}
