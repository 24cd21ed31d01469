//! `shale tool dump` and `load`: a keyspace as a portable dump file, streamed in checksummed
//! chunks so any size fits in bounded memory (format: docs/format/dump.md).
//!
//! Invariants:
//! 1. The writer emits records in the order given (a dump is in key order, the iterator's),
//!    in chunks of at most [`CHUNK_TARGET`] payload bytes plus one record.
//! 2. The reader treats the file as untrusted: every length is checked against the bytes
//!    left and [`MAX_PAYLOAD`] before anything is allocated, and a chunk is handed out only
//!    after its CRC-32C matched, so `load` never writes a record of a damaged chunk.
//! 3. `load` writes each chunk as one batch: after a failure the keyspace holds whole chunks
//!    (the error says how many records were loaded), and loading the dump again repairs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde_json::json;
use shale_engine::{ReadOptions, WriteBatch, WriteOptions};
use shale_fs::{FileSystem, OsFs, RandomAccessFile, WritableFile};

use super::say;
use crate::output::{print_json, progress, Failure};
use crate::tool_db::{DbArgs, Target};

/// The first bytes of every dump file.
pub const MAGIC: &[u8; 8] = b"SHALEDMP";
/// The format version after the magic.
pub const FORMAT_VERSION: u32 = 1;
/// A chunk is closed once its payload reaches this many bytes.
const CHUNK_TARGET: usize = 1 << 20;
/// The largest payload a reader accepts (invariant 2): one record of a key and value of up
/// to 512 MiB each, plus a chunk's worth of smaller ones.
const MAX_PAYLOAD: u64 = 1 << 30;
const CHUNK_HEADER: u64 = 8;

/// Flags of `shale tool dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The dump file to write (must not exist).
    pub file: PathBuf,
}

/// Flags of `shale tool load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The dump file to read.
    pub file: PathBuf,
}

/// Writes a dump file (invariant 1).
pub struct DumpWriter {
    out: Box<dyn WritableFile>,
    payload: Vec<u8>,
    records: u32,
    total: u64,
}

impl DumpWriter {
    /// Creates `path` and writes the header naming `keyspace`.
    pub fn create(fs: &dyn FileSystem, path: &Path, keyspace: &str) -> Result<Self, Failure> {
        if fs.exists(path)? {
            return Err(Failure::error(format!(
                "{} exists; dump writes a new file (remove it or choose another name)",
                path.display()
            )));
        }
        let name_len = u16::try_from(keyspace.len())
            .map_err(|_| Failure::error("keyspace name longer than 65535 bytes"))?;
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&name_len.to_le_bytes());
        header.extend_from_slice(keyspace.as_bytes());
        let crc = crc32c::crc32c(&header);
        header.extend_from_slice(&crc.to_le_bytes());
        let mut out = fs.create(path)?;
        out.append(&header)?;
        Ok(DumpWriter {
            out,
            payload: Vec::with_capacity(CHUNK_TARGET + 1024),
            records: 0,
            total: 0,
        })
    }

    /// Adds one record.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<(), Failure> {
        let too_big = || {
            Failure::error(format!(
                "a record of {} bytes is too big",
                key.len() + value.len()
            ))
        };
        let key_len = u32::try_from(key.len()).map_err(|_| too_big())?;
        let value_len = u32::try_from(value.len()).map_err(|_| too_big())?;
        if (key.len() + value.len()) as u64 + 8 > MAX_PAYLOAD - CHUNK_TARGET as u64 {
            return Err(too_big());
        }
        self.payload.extend_from_slice(&key_len.to_le_bytes());
        self.payload.extend_from_slice(&value_len.to_le_bytes());
        self.payload.extend_from_slice(key);
        self.payload.extend_from_slice(value);
        self.records += 1;
        self.total += 1;
        if self.payload.len() >= CHUNK_TARGET {
            self.write_chunk()?;
        }
        Ok(())
    }

    fn write_chunk(&mut self) -> Result<(), Failure> {
        let len = u32::try_from(self.payload.len()).map_err(|_| Failure::error("chunk too big"))?;
        let mut head = len.to_le_bytes().to_vec();
        head.extend_from_slice(&self.records.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&head), &self.payload);
        self.out.append(&head)?;
        self.out.append(&self.payload)?;
        self.out.append(&crc.to_le_bytes())?;
        self.payload.clear();
        self.records = 0;
        Ok(())
    }

    /// Writes the last chunk and the end chunk, and syncs. Returns the records written.
    pub fn finish(mut self) -> Result<u64, Failure> {
        if self.records > 0 {
            self.write_chunk()?;
        }
        self.payload = self.total.to_le_bytes().to_vec();
        self.records = 0;
        self.write_chunk()?;
        self.out.sync_data()?;
        Ok(self.total)
    }
}

/// Reads a dump file chunk by chunk (invariant 2).
pub struct DumpReader {
    file: Arc<dyn RandomAccessFile>,
    size: u64,
    offset: u64,
    /// The keyspace the dump was taken of.
    pub keyspace: String,
    records: u64,
    done: bool,
}

impl DumpReader {
    /// Opens `path` and checks its header.
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<Self, Failure> {
        let file = fs.open_read(path)?;
        let size = file.size()?;
        let bad = |detail: String| Failure::Corruption(format!("{}: {detail}", path.display()));
        if size < 18 {
            return Err(bad(format!("{size} bytes is too short for a dump header")));
        }
        let mut fixed = [0u8; 14];
        file.read_exact_at(0, &mut fixed)?;
        if &fixed[..8] != MAGIC {
            return Err(bad("not a shale dump file (wrong magic)".into()));
        }
        let version = u32::from_le_bytes([fixed[8], fixed[9], fixed[10], fixed[11]]);
        if version != FORMAT_VERSION {
            return Err(Failure::error(format!(
                "{}: dump format version {version}; this shale reads version {FORMAT_VERSION}",
                path.display()
            )));
        }
        let name_len = u64::from(u16::from_le_bytes([fixed[12], fixed[13]]));
        if 14 + name_len + 4 > size {
            return Err(bad("the header runs past the end of the file".into()));
        }
        let mut rest = vec![0u8; usize::try_from(name_len + 4).unwrap_or(0)];
        file.read_exact_at(14, &mut rest)?;
        let (name, crc) = rest.split_at(rest.len() - 4);
        let want = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32c::crc32c_append(crc32c::crc32c(&fixed), name) != want {
            return Err(bad("header checksum mismatch".into()));
        }
        let keyspace = String::from_utf8(name.to_vec())
            .map_err(|_| bad("the keyspace name is not UTF-8".into()))?;
        Ok(DumpReader {
            file,
            size,
            offset: 14 + name_len + 4,
            keyspace,
            records: 0,
            done: false,
        })
    }

    /// Bytes read so far.
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The next chunk's records, or `None` after the end chunk (checked: the record count
    /// matches and nothing follows it).
    #[allow(clippy::type_complexity)] // (key, value) pairs
    pub fn next_chunk(&mut self) -> Result<Option<Vec<(Vec<u8>, Vec<u8>)>>, Failure> {
        if self.done {
            return Ok(None);
        }
        let at = self.offset;
        let bad = |detail: String| {
            Failure::Corruption(format!(
                "{}: chunk at offset {at}: {detail}",
                self.file.path().display()
            ))
        };
        if self.size - at < CHUNK_HEADER + 4 {
            return Err(bad(
                "the file ends before the end chunk (truncated dump)".into()
            ));
        }
        let mut head = [0u8; 8];
        self.file.read_exact_at(at, &mut head)?;
        let len = u64::from(u32::from_le_bytes([head[0], head[1], head[2], head[3]]));
        let count = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len > MAX_PAYLOAD || len + CHUNK_HEADER + 4 > self.size - at {
            return Err(bad(format!(
                "a {len}-byte payload runs past the end of the file"
            )));
        }
        let mut payload = vec![0u8; usize::try_from(len + 4).unwrap_or(0)];
        self.file.read_exact_at(at + CHUNK_HEADER, &mut payload)?;
        let crc_bytes = payload.split_off(payload.len() - 4);
        let want = u32::from_le_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
        if crc32c::crc32c_append(crc32c::crc32c(&head), &payload) != want {
            return Err(bad("checksum mismatch".into()));
        }
        self.offset = at + CHUNK_HEADER + len + 4;
        if count == 0 {
            let total = <[u8; 8]>::try_from(payload.as_slice())
                .map(u64::from_le_bytes)
                .map_err(|_| bad(format!("the end chunk has {len} bytes, not 8")))?;
            if total != self.records {
                return Err(bad(format!(
                    "the end chunk counts {total} records, the chunks hold {}",
                    self.records
                )));
            }
            if self.offset != self.size {
                return Err(bad(format!(
                    "{} bytes follow the end chunk",
                    self.size - self.offset
                )));
            }
            self.done = true;
            return Ok(None);
        }
        let mut records = Vec::with_capacity(count.min(1 << 16) as usize);
        let mut rest = payload.as_slice();
        for n in 0..count {
            let short = || bad(format!("record {n} runs past the payload"));
            if rest.len() < 8 {
                return Err(short());
            }
            let key_len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let value_len = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
            rest = &rest[8..];
            if rest.len() < key_len.saturating_add(value_len) {
                return Err(short());
            }
            let (key, tail) = rest.split_at(key_len);
            let (value, tail) = tail.split_at(value_len);
            records.push((key.to_vec(), value.to_vec()));
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(bad(format!("{} bytes after record {count}", rest.len())));
        }
        self.records += u64::from(count);
        Ok(Some(records))
    }
}

pub(super) fn dump(opened: &Target<'_>, args: &DumpArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    let version = opened.db.current_version();
    let estimate: u64 = (0..version.num_levels())
        .flat_map(|level| version.files(opened.keyspace.id(), level))
        .map(|f| f.num_entries)
        .sum();
    let mut writer = DumpWriter::create(&fs, &args.file, opened.keyspace.name())?;
    let bar = progress(estimate, "dump");
    let written = (|| {
        let mut iter = opened.keyspace.iterator(ReadOptions {
            skip_cache_fill: true,
            ..ReadOptions::default()
        })?;
        iter.seek_to_first();
        let mut n = 0u64;
        while iter.valid() {
            writer.add(iter.key(), iter.value())?;
            n += 1;
            if n.is_multiple_of(4096) {
                bar.set_position(n);
            }
            iter.next();
        }
        iter.status()?;
        writer.finish()
    })();
    bar.finish_and_clear();
    let records = match written {
        Ok(records) => records,
        Err(e) => {
            // A partial dump is not a dump: leave no file that looks like one.
            let _ = fs.remove(&args.file);
            return Err(e);
        }
    };
    let bytes = fs.size(&args.file)?;
    if args.db.json {
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "file": args.file.display().to_string(),
            "records": records,
            "bytes": bytes,
        }));
    }
    say(format!(
        "dumped {records} records of keyspace {:?} to {} ({bytes} bytes)",
        args.db.keyspace,
        args.file.display()
    ))?;
    Ok(())
}

pub(super) fn load(opened: &Target<'_>, args: &LoadArgs) -> Result<(), Failure> {
    let fs = OsFs::new();
    let mut reader = DumpReader::open(&fs, &args.file)?;
    let bar = progress(reader.size(), "load");
    let mut loaded = 0u64;
    let result = (|| {
        while let Some(records) = reader.next_chunk()? {
            let mut batch = WriteBatch::new();
            for (key, value) in &records {
                batch.put(opened.keyspace.id(), key, value)?;
            }
            opened.db.write(batch, &WriteOptions::default())?;
            loaded += records.len() as u64;
            bar.set_position(reader.position());
        }
        Ok::<(), Failure>(())
    })();
    bar.finish_and_clear();
    if let Err(e) = result {
        let note = format!(
            "\n{loaded} records were loaded before this (whole chunks: loading a good dump \
             again overwrites them)"
        );
        return Err(match e {
            Failure::Corruption(message) => Failure::Corruption(message + &note),
            other => Failure::error(format!("{other}{note}")),
        });
    }
    if args.db.json {
        return print_json(&json!({
            "keyspace": args.db.keyspace,
            "dumped_keyspace": reader.keyspace,
            "file": args.file.display().to_string(),
            "records": loaded,
        }));
    }
    say(format!(
        "loaded {loaded} records (dumped from keyspace {:?}) into keyspace {:?}",
        reader.keyspace, args.db.keyspace
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use shale_fs::{FileSystem, MemFs};

    use super::{DumpReader, DumpWriter};
    use crate::output::Failure;

    type Records = Vec<(Vec<u8>, Vec<u8>)>;

    /// Every record `path` yields, or the error that stopped the reader.
    fn read_all(fs: &MemFs, path: &Path) -> (Records, Option<Failure>) {
        let mut reader = match DumpReader::open(fs, path) {
            Ok(reader) => reader,
            Err(e) => return (Vec::new(), Some(e)),
        };
        let mut out = Vec::new();
        loop {
            match reader.next_chunk() {
                Ok(Some(chunk)) => out.extend(chunk),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    fn write_bytes(fs: &MemFs, path: &Path, bytes: &[u8]) {
        let mut file = fs.create(path).unwrap();
        file.append(bytes).unwrap();
        file.sync_data().unwrap();
    }

    #[test]
    fn every_truncation_and_flipped_byte_is_refused_without_a_wrong_record() {
        let fs = MemFs::new();
        let path = Path::new("/d");
        let records: Records = (0..40u32)
            .map(|i| {
                (
                    format!("key{i:03}").into_bytes(),
                    vec![b'v'; (i * 7) as usize],
                )
            })
            .collect();
        let mut writer = DumpWriter::create(&fs, path, "ks").unwrap();
        for (key, value) in &records {
            writer.add(key, value).unwrap();
        }
        assert_eq!(writer.finish().unwrap(), 40);
        let (read, error) = read_all(&fs, path);
        assert!(error.is_none());
        assert_eq!(read, records);
        let file = fs.open_read(path).unwrap();
        let mut bytes = vec![0u8; usize::try_from(file.size().unwrap()).unwrap()];
        file.read_exact_at(0, &mut bytes).unwrap();
        let damaged = Path::new("/damaged");
        for cut in 0..bytes.len() {
            write_bytes(&fs, damaged, &bytes[..cut]);
            let (read, error) = read_all(&fs, damaged);
            assert!(error.is_some(), "a dump cut at {cut} is refused");
            assert!(records.starts_with(&read), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x10;
            write_bytes(&fs, damaged, &flipped);
            let (read, error) = read_all(&fs, damaged);
            assert!(error.is_some(), "a flip at {at} is refused");
            assert!(records.starts_with(&read), "flip at {at}");
        }
    }
}
