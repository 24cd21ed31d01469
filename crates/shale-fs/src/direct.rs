//! `O_DIRECT` I/O for [`crate::OsFs`] ([`crate::IoMode::Direct`]): aligned reads, and a
//! writable file that writes whole aligned chunks from an aligned buffer.
//!
//! `O_DIRECT` needs the buffer address, the file offset and the length of every read and write
//! to be multiples of the device's logical block size. Linux has no portable way to ask a
//! *file* for it (`BLKSSZGET` is for block devices; `statx`'s `STATX_DIOALIGN` is recent and
//! not answered by every file system), so everything here aligns to [`DIRECT_ALIGN`] = 4096,
//! which is a multiple of every logical block size in use (512 and 4096) and so always valid.
//!
//! Invariants:
//! 1. Every read of an `O_DIRECT` file covers `[offset, offset + len)` rounded out to
//!    [`DIRECT_ALIGN`], into a [`DIRECT_ALIGN`]-aligned buffer; the caller's bytes are copied
//!    out of it.
//! 2. A [`DirectWritableFile`] in direct mode writes only whole [`DIRECT_ALIGN`] chunks at
//!    aligned offsets from an aligned buffer, so the bytes on disk are always exactly the
//!    appended bytes up to `written` (never padding).
//! 3. The last partial chunk is written when the file must hold every byte (`flush`,
//!    `sync_data`, drop):
//!    the descriptor's `O_DIRECT` flag is cleared (`fcntl(F_SETFL)`) and the tail written
//!    buffered. From then on the file is an ordinary buffered file (`direct` is false). We chose
//!    this over a padded direct write and `ftruncate`, because the file's size is right at every
//!    moment: a crash between the padded write and the truncate cannot leave zeros where a
//!    table's footer is looked for.
//! 4. `start_writeback` (the table writer's `bytes_per_sync`, called all along) in direct mode
//!    writes every whole chunk and keeps the partial tail (under 4 KiB) in user space; a direct
//!    write has already gone to the device, so there is nothing more to start. `flush` keeps
//!    the trait's contract (every appended byte handed to the OS), so it writes the tail too.
//! 5. After any error the buffer is discarded and the file's contents are unknown (os.rs
//!    invariant 2).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::{Error, Op, Result, WritableFile};

/// Alignment of `O_DIRECT` I/O: buffer address, file offset and length.
pub(crate) const DIRECT_ALIGN: usize = 4096;

/// Bytes a [`DirectWritableFile`] buffers: each direct write waits for the device, so fewer,
/// larger ones (`RocksDB`'s `writable_file_max_buffer_size` default, 1 MiB).
const DIRECT_WRITE_BUFFER_SIZE: usize = 1 << 20;

/// A heap buffer whose usable part starts at a [`DIRECT_ALIGN`]-aligned address.
#[derive(Debug)]
struct AlignedBuffer {
    /// One alignment unit more than `capacity`; the usable part starts at `shift`.
    storage: Vec<u8>,
    shift: usize,
    capacity: usize,
}

impl AlignedBuffer {
    fn new(capacity: usize) -> io::Result<Self> {
        let storage = vec![0u8; capacity + DIRECT_ALIGN];
        let shift = storage.as_ptr().align_offset(DIRECT_ALIGN);
        if shift >= DIRECT_ALIGN {
            return Err(io::Error::other("cannot align an O_DIRECT buffer"));
        }
        Ok(Self {
            storage,
            shift,
            capacity,
        })
    }

    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.shift..self.shift + self.capacity]
    }

    fn as_slice(&self) -> &[u8] {
        &self.storage[self.shift..self.shift + self.capacity]
    }
}

/// Reads `buf.len()` bytes at `offset` using only [`DIRECT_ALIGN`]-aligned offsets, lengths
/// and buffer addresses, as `O_DIRECT` requires (invariant 1). Fails with `UnexpectedEof` if
/// the file ends first. Works on any file; only `O_DIRECT` ones need it.
pub(crate) fn read_aligned(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let align = DIRECT_ALIGN as u64;
    let start = offset - offset % align;
    let end = offset
        .checked_add(buf.len() as u64)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "read past u64::MAX"))?;
    let end = end.div_ceil(align) * align;
    let span = usize::try_from(end - start)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read too large"))?;
    let mut storage = AlignedBuffer::new(span)?;
    let aligned = storage.as_mut();
    let mut filled = 0;
    while filled < span {
        let n = match file.read_at(&mut aligned[filled..], start + filled as u64) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        filled += n;
        // A short read that breaks alignment only happens at end of file; reading on from an
        // unaligned offset would fail with EINVAL under O_DIRECT.
        if n == 0 || n % DIRECT_ALIGN != 0 {
            break;
        }
    }
    let skip = usize::try_from(offset - start).unwrap_or(usize::MAX);
    if filled < skip.saturating_add(buf.len()) {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    buf.copy_from_slice(&aligned[skip..skip + buf.len()]);
    Ok(())
}

/// A file from `OsFs::create_with(path, IoMode::Direct)`: appends collect in an aligned
/// buffer written in whole chunks (invariants 2-4).
#[derive(Debug)]
pub(crate) struct DirectWritableFile {
    file: File,
    path: PathBuf,
    buffer: AlignedBuffer,
    /// Bytes of `buffer` holding appended data not yet written.
    buffered: usize,
    /// Bytes written to the file (a multiple of [`DIRECT_ALIGN`] while `direct`).
    written: u64,
    /// Whether the descriptor still has `O_DIRECT` (false once the tail was written).
    direct: bool,
}

impl DirectWritableFile {
    /// Wraps `file`, opened empty with `O_DIRECT`.
    pub(crate) fn new(file: File, path: PathBuf) -> Result<Self> {
        let buffer = AlignedBuffer::new(DIRECT_WRITE_BUFFER_SIZE)
            .map_err(|e| Error::io(Op::Create, &path, e))?;
        Ok(Self {
            file,
            path,
            buffer,
            buffered: 0,
            written: 0,
            direct: true,
        })
    }

    /// Writes the buffer's whole chunks (all of it once not `direct`, or with `all`), keeping
    /// the partial tail at the buffer's start.
    fn write_out(&mut self, op: Op, all: bool) -> Result<()> {
        if all && self.direct && !self.buffered.is_multiple_of(DIRECT_ALIGN) {
            self.write_whole_chunks(op)?;
            self.leave_direct_mode(op)?;
        }
        if self.direct {
            self.write_whole_chunks(op)
        } else {
            let n = self.buffered;
            self.write_prefix(op, n)
        }
    }

    fn write_whole_chunks(&mut self, op: Op) -> Result<()> {
        let whole = self.buffered / DIRECT_ALIGN * DIRECT_ALIGN;
        self.write_prefix(op, whole)
    }

    /// Writes `buffer[..n]` at `written` and moves what follows to the buffer's start.
    fn write_prefix(&mut self, op: Op, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let result = self
            .file
            .write_all_at(&self.buffer.as_slice()[..n], self.written);
        if let Err(e) = result {
            // Invariant 5: these bytes must never be written twice.
            self.buffered = 0;
            return Err(Error::io(op, &self.path, e));
        }
        self.written += n as u64;
        let rest = self.buffered - n;
        self.buffer.as_mut().copy_within(n..n + rest, 0);
        self.buffered = rest;
        Ok(())
    }

    /// Clears `O_DIRECT` on the descriptor so the unaligned tail can be written (invariant 3).
    fn leave_direct_mode(&mut self, op: Op) -> Result<()> {
        let fd = self.file.as_raw_fd();
        // SAFETY: fcntl on this open file's descriptor; no memory of ours is passed.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0 {
            self.buffered = 0;
            return Err(Error::io(op, &self.path, io::Error::last_os_error()));
        }
        self.direct = false;
        Ok(())
    }
}

impl WritableFile for DirectWritableFile {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            if self.buffered == DIRECT_WRITE_BUFFER_SIZE {
                self.write_out(Op::Append, false)?;
            }
            let take = data.len().min(DIRECT_WRITE_BUFFER_SIZE - self.buffered);
            self.buffer.as_mut()[self.buffered..self.buffered + take]
                .copy_from_slice(&data[..take]);
            self.buffered += take;
            data = &data[take..];
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_out(Op::Flush, true)
    }

    fn start_writeback(&mut self) -> Result<()> {
        self.write_out(Op::Flush, false)
    }

    fn sync_data(&mut self) -> Result<()> {
        self.write_out(Op::SyncData, true)?;
        self.file
            .sync_data()
            .map_err(|e| Error::io(Op::SyncData, &self.path, e))
    }

    fn len(&self) -> u64 {
        self.written + self.buffered as u64
    }
}

impl Drop for DirectWritableFile {
    fn drop(&mut self) {
        // Best effort, as os.rs's buffered file: a caller that cares has synced already.
        let _ = self.write_out(Op::Flush, true);
    }
}

/// Whether the open error `source` of an `O_DIRECT` open means the file system refuses
/// direct I/O, turned into the error to report.
pub(crate) fn open_error(op: Op, path: &Path, source: io::Error) -> Error {
    if source.raw_os_error() == Some(libc::EINVAL) {
        Error::DirectIoUnsupported {
            op,
            path: path.to_path_buf(),
            source,
        }
    } else {
        Error::io(op, path, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn einval_at_open_is_reported_as_unsupported_direct_io() {
        let err = open_error(
            Op::OpenRead,
            Path::new("/shm/000007.sst"),
            io::Error::from_raw_os_error(libc::EINVAL),
        );
        assert!(err.is_direct_io_unsupported(), "{err}");
        let text = err.to_string();
        assert!(text.contains("/shm/000007.sst"), "{text}");
        assert!(text.contains("O_DIRECT"), "{text}");
        assert!(err.duplicate().is_direct_io_unsupported());
        let other = open_error(
            Op::Create,
            Path::new("/x"),
            io::Error::from_raw_os_error(libc::EACCES),
        );
        assert!(!other.is_direct_io_unsupported(), "{other}");
    }

    #[test]
    fn aligned_buffers_start_at_aligned_addresses() {
        for capacity in [DIRECT_ALIGN, 3 * DIRECT_ALIGN, DIRECT_WRITE_BUFFER_SIZE] {
            let mut buffer = AlignedBuffer::new(capacity).expect("buffer");
            assert_eq!(buffer.as_mut().len(), capacity);
            assert_eq!(buffer.as_slice().as_ptr() as usize % DIRECT_ALIGN, 0);
        }
    }
}
