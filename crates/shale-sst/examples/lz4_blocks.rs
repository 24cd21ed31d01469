//! Measures LZ4 decoding and encoding on the data blocks of real tables (branch `miss`,
//! docs/benchmarks.md "Block misses and lz4"), to compare builds of `lz4_flex` with and
//! without its `safe-decode` / `safe-encode` features.
//!
//! Every lz4-compressed data block of the tables given is read as stored (varint32 raw
//! length, then the lz4 block), decoded by [`decode_all`] into a new vector per block as a
//! block-cache miss does, and its contents encoded again by [`encode_all`] into a reused,
//! zero-filled buffer as the table writer does. Each runs `ROUNDS` times (env, default 1).
//! Count their instructions with
//! `valgrind --tool=callgrind --toggle-collect='*lz4_blocks*decode_all*'` (or `encode_all`).
//!
//! Usage: `cargo run --release -p shale-sst --example lz4_blocks -- TABLE.sst...`

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use shale_fs::{FileSystem, OsFs};
use shale_sst::{BlockKind, Compression, Table, TableOpenOptions};

const BLOCK_TRAILER_SIZE: usize = 5;

/// One stored lz4 block: its uncompressed length and the lz4 bytes.
struct StoredLz4 {
    raw_len: usize,
    payload: Vec<u8>,
}

/// Splits a varint32 off the front of `bytes`.
fn split_varint32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let mut value = 0u32;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// Decodes every block into a new vector; returns the bytes decoded.
#[inline(never)]
fn decode_all(blocks: &[StoredLz4]) -> Result<usize, lz4_flex::block::DecompressError> {
    let mut total = 0;
    for block in blocks {
        let raw = lz4_flex::block::decompress(&block.payload, block.raw_len)?;
        total += black_box(raw).len();
    }
    Ok(total)
}

/// Encodes every block into one reused buffer, zero-filled to the codec's bound first as the
/// writer's is; returns the bytes encoded.
#[inline(never)]
fn encode_all(
    raws: &[Vec<u8>],
    out: &mut Vec<u8>,
) -> Result<usize, lz4_flex::block::CompressError> {
    let mut total = 0;
    for raw in raws {
        out.clear();
        out.resize(lz4_flex::block::get_maximum_output_size(raw.len()), 0);
        total += lz4_flex::block::compress_into(raw, out)?;
        black_box(&out);
    }
    Ok(total)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        return Err("usage: lz4_blocks TABLE.sst...".into());
    }
    let rounds: usize = std::env::var("ROUNDS").map_or(Ok(1), |r| r.parse())?;
    let fs = OsFs::new();
    let mut blocks = Vec::new();
    let mut other_blocks = 0;
    for path in &paths {
        let table = Table::open(&fs, path, &TableOpenOptions::default())?;
        let file = fs.open_read(path)?;
        for info in table
            .layout()?
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Data)
        {
            let size = info.handle.size as usize;
            let mut bytes = vec![0; size + BLOCK_TRAILER_SIZE];
            file.read_exact_at(info.handle.offset, &mut bytes)?;
            if bytes[size] != Compression::Lz4.tag() {
                other_blocks += 1;
                continue;
            }
            let (raw_len, payload) = split_varint32(&bytes[..size]).ok_or("bad length prefix")?;
            blocks.push(StoredLz4 {
                raw_len: raw_len as usize,
                payload: payload.to_vec(),
            });
        }
    }
    let raws = blocks
        .iter()
        .map(|b| lz4_flex::block::decompress(&b.payload, b.raw_len))
        .collect::<Result<Vec<_>, _>>()?;
    let raw_bytes: usize = raws.iter().map(Vec::len).sum();
    let stored_bytes: usize = blocks.iter().map(|b| b.payload.len()).sum();
    println!(
        "{} lz4 data blocks ({other_blocks} stored otherwise): {raw_bytes} raw bytes, \
         {stored_bytes} lz4 bytes",
        blocks.len()
    );

    let start = Instant::now();
    for _ in 0..rounds {
        decode_all(&blocks)?;
    }
    let decode = start.elapsed();
    let mut out = Vec::new();
    let start = Instant::now();
    for _ in 0..rounds {
        encode_all(&raws, &mut out)?;
    }
    let encode = start.elapsed();
    let per_block = |d: std::time::Duration| d / (rounds * blocks.len().max(1)) as u32;
    println!(
        "{rounds} rounds: decode {:?} per block, encode {:?} per block",
        per_block(decode),
        per_block(encode)
    );
    Ok(())
}
