//! zstd-compressed files in a backup directory (docs/format/backup.md, "Compressed files"):
//! a header (magic, format version), then the original bytes in chunks of at most
//! [`CHUNK`] bytes, each compressed on its own so memory stays bounded whatever the file's
//! size. The meta's size and CRC-32C cover the original bytes, so every read decompresses the
//! whole file and checks them; decoding treats the bytes as untrusted.

use std::path::Path;

use shale_fs::{FileSystem, RandomAccessFile};

use crate::error::{Error, Result};

/// The first bytes of every compressed file.
pub(crate) const MAGIC: &[u8; 4] = b"SHBZ";
/// The format version after the magic (u32 little-endian).
pub(crate) const FORMAT_VERSION: u32 = 1;
/// Original bytes per chunk, at most.
pub(crate) const CHUNK: usize = 1 << 20;
/// The zstd level when none is given (zstd's own default).
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

const HEADER_LEN: u64 = 8;
const CHUNK_HEADER_LEN: u64 = 8;

/// Writes the first `len` bytes of `from` compressed to `to` (synced). Returns the CRC-32C of
/// the original bytes; `progress` gets each chunk's original size.
pub(crate) fn write_compressed(
    source: &dyn RandomAccessFile,
    fs: &dyn FileSystem,
    to: &Path,
    len: u64,
    level: i32,
    progress: &mut dyn FnMut(u64),
) -> Result<u32> {
    let from = source.path();
    let available = source.size()?;
    if available < len {
        return Err(Error::Corruption {
            file: from.to_path_buf(),
            offset: available,
            detail: format!("file is {available} bytes, expected at least {len}"),
        });
    }
    let mut out = fs.create(to)?;
    let mut header = MAGIC.to_vec();
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.append(&header)?;
    let mut crc = 0u32;
    let mut buf = vec![0u8; CHUNK];
    let mut offset = 0u64;
    while offset < len {
        let n = usize::try_from((len - offset).min(CHUNK as u64)).unwrap_or(CHUNK);
        source.read_exact_at(offset, &mut buf[..n])?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        let compressed = zstd::bulk::compress(&buf[..n], level).map_err(|e| {
            Error::InvalidArgument(format!(
                "zstd level {level} cannot compress {}: {e}",
                from.display()
            ))
        })?;
        let mut chunk = Vec::with_capacity(compressed.len() + 8);
        chunk.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
        chunk.extend_from_slice(
            &u32::try_from(compressed.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        chunk.extend_from_slice(&compressed);
        out.append(&chunk)?;
        offset += n as u64;
        progress(n as u64);
    }
    out.sync_data()?;
    Ok(crc)
}

/// Decompresses `path`, which must hold exactly `size` original bytes, handing them to
/// `sink` in order. Returns their CRC-32C (the caller compares it with the meta's).
pub(crate) fn read_compressed(
    fs: &dyn FileSystem,
    path: &Path,
    size: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<u32> {
    let bad = |offset: u64, detail: String| Error::Corruption {
        file: path.to_path_buf(),
        offset,
        detail,
    };
    let file = fs.open_read(path)?;
    let stored = file.size()?;
    let mut header = [0u8; 8];
    if stored < HEADER_LEN {
        return Err(bad(
            0,
            "compressed backup file is shorter than its header".into(),
        ));
    }
    file.read_exact_at(0, &mut header)?;
    if &header[..4] != MAGIC {
        return Err(bad(0, "not a compressed backup file (bad magic)".into()));
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if version != FORMAT_VERSION {
        return Err(bad(
            4,
            format!(
                "compressed backup file format version {version} is not supported (this build \
                 reads {FORMAT_VERSION})"
            ),
        ));
    }
    let mut crc = 0u32;
    let mut offset = HEADER_LEN;
    let mut original = 0u64;
    let mut compressed = Vec::new();
    while offset < stored {
        if stored - offset < CHUNK_HEADER_LEN {
            return Err(bad(offset, "truncated chunk header".into()));
        }
        let mut lens = [0u8; 8];
        file.read_exact_at(offset, &mut lens)?;
        let raw_len = u32::from_le_bytes([lens[0], lens[1], lens[2], lens[3]]) as usize;
        let compressed_len = u64::from(u32::from_le_bytes([lens[4], lens[5], lens[6], lens[7]]));
        if raw_len == 0 || raw_len > CHUNK {
            return Err(bad(offset, format!("chunk of {raw_len} original bytes")));
        }
        if compressed_len > stored - offset - CHUNK_HEADER_LEN {
            return Err(bad(
                offset,
                format!("chunk of {compressed_len} bytes runs past the end of the file"),
            ));
        }
        compressed.resize(usize::try_from(compressed_len).unwrap_or(0), 0);
        file.read_exact_at(offset + CHUNK_HEADER_LEN, &mut compressed)?;
        let raw = zstd::bulk::decompress(&compressed, raw_len)
            .map_err(|e| bad(offset, format!("chunk does not decompress: {e}")))?;
        if raw.len() != raw_len {
            return Err(bad(
                offset,
                format!(
                    "chunk decompresses to {} bytes, its header says {raw_len}",
                    raw.len()
                ),
            ));
        }
        original += raw.len() as u64;
        if original > size {
            return Err(bad(
                offset,
                format!("holds more than the {size} bytes the backup meta says"),
            ));
        }
        crc = crc32c::crc32c_append(crc, &raw);
        sink(&raw)?;
        offset += CHUNK_HEADER_LEN + compressed_len;
    }
    if original != size {
        return Err(bad(
            offset,
            format!("decompresses to {original} bytes, the backup meta says {size}"),
        ));
    }
    Ok(crc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_fs::MemFs;

    #[test]
    fn round_trips_and_prints_its_layout() {
        let fs = MemFs::new();
        let data: Vec<u8> = (0..CHUNK + 1000).map(|i| (i % 7) as u8).collect();
        let mut source = fs.create(Path::new("/a")).unwrap();
        source.append(&data).unwrap();
        source.sync_data().unwrap();
        let len = data.len() as u64;
        let crc = write_compressed(
            &*fs.open_read(Path::new("/a")).unwrap(),
            &fs,
            Path::new("/a.zst"),
            len,
            3,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(crc, crc32c::crc32c(&data));
        let stored = fs.open_read(Path::new("/a.zst")).unwrap();
        let mut header = [0u8; 16];
        stored.read_exact_at(0, &mut header).unwrap();
        // Magic, version 1, then the first chunk: 1 MiB original, its compressed length.
        assert_eq!(&header[..8], b"SHBZ\x01\x00\x00\x00");
        assert_eq!(&header[8..12], &(CHUNK as u32).to_le_bytes());
        assert!(stored.size().unwrap() < len / 10);
        let mut back = Vec::new();
        let read = read_compressed(&fs, Path::new("/a.zst"), len, &mut |b| {
            back.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!((read, back), (crc, data));
        // The wrong size is refused.
        let err = read_compressed(&fs, Path::new("/a.zst"), len + 1, &mut |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("decompresses to"), "{err}");
    }
}
