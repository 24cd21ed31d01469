//! Automatic readahead for sequential table iteration: one iterator's buffer of file bytes
//! ahead of the block it reads, so a scan makes one read per window instead of one per block.
//!
//! The trigger is `RocksDB`'s automatic readahead: the data blocks an iterator loads are
//! tracked, and once [`SEQUENTIAL_LOADS_BEFORE_READAHEAD`] loads in a row were each the block
//! right after the previous one, the next block the cache does not have is read together with
//! the bytes after it: [`INITIAL_READAHEAD_SIZE`] the first time, doubling at every refill up
//! to the iterator's maximum (`ReadOptions::max_readahead_size`). A load that is not the next
//! block (a seek elsewhere) starts the count and the size over. Point lookups never use it, and
//! a short seek reads at most two blocks before the count is met, so neither pays anything.
//!
//! Invariants:
//! 1. `buffer` holds exactly the file's bytes `[start, start + buffer.len())`, all read by one
//!    successful call of [`RandomAccessFile::read_exact_at`]; after a failed read it is empty.
//! 2. A window never runs past the limit the caller gives (the end of the data area), so a
//!    read is never short at the end of the file.
//! 3. The bytes handed out are the file's bytes and nothing else: the caller checks the block's
//!    checksum on them exactly as on a direct read, so readahead cannot hide corruption.

use shale_fs::RandomAccessFile;

use crate::error::Result;
use crate::format::BlockHandle;

/// The default largest readahead window of an iterator (`RocksDB`'s
/// `max_auto_readahead_size`).
pub const DEFAULT_MAX_READAHEAD_SIZE: usize = 256 << 10;

/// The first readahead window (`RocksDB`'s `initial_auto_readahead_size`).
pub const INITIAL_READAHEAD_SIZE: usize = 8 << 10;

/// Sequential block loads seen before readahead starts (`RocksDB`'s
/// `num_file_reads_for_auto_readahead`).
pub const SEQUENTIAL_LOADS_BEFORE_READAHEAD: u32 = 2;

/// `previous_end` before the first load: no block ends there.
const NO_BLOCK: u64 = u64::MAX;

/// One iterator's readahead state: small, so that iterators that never read ahead (point
/// seeks) carry and move only a few words; the buffer is allocated at the first window.
#[derive(Debug)]
pub(crate) struct Readahead {
    /// Where the previously loaded block ended (trailer included), or [`NO_BLOCK`].
    previous_end: u64,
    /// Loads in a row that were each the block after the previous one.
    sequential_loads: u32,
    /// The largest window; 0 turns readahead off.
    max_size: u32,
    window: Option<Box<Window>>,
}

/// The bytes read ahead and the size of the next window.
#[derive(Debug)]
struct Window {
    next_size: usize,
    /// File offset of `buffer[0]` (invariant 1).
    start: u64,
    buffer: Vec<u8>,
}

impl Readahead {
    /// Readahead with windows up to `max_size` bytes (0: never read ahead; sizes above 4 GiB
    /// are taken as 4 GiB).
    pub(crate) fn new(max_size: usize) -> Readahead {
        Readahead {
            previous_end: NO_BLOCK,
            sequential_loads: 0,
            max_size: u32::try_from(max_size).unwrap_or(u32::MAX),
            window: None,
        }
    }

    /// Whether readahead can ever happen.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.max_size > 0
    }

    fn initial_size(&self) -> usize {
        INITIAL_READAHEAD_SIZE.min(self.max_size as usize)
    }

    /// Records that the iterator loads the data block `handle` (from the cache or not).
    #[inline]
    pub(crate) fn note_load(&mut self, handle: BlockHandle) {
        if self.previous_end == handle.offset {
            self.sequential_loads = self.sequential_loads.saturating_add(1);
        } else {
            self.sequential_loads = 0;
            let initial = self.initial_size();
            if let Some(window) = &mut self.window {
                window.next_size = initial;
            }
        }
        self.previous_end = handle.end_with_trailer();
    }

    /// The stored bytes and trailer of block `handle` (which the caller has checked ends at or
    /// before `limit`), from the buffer or from a new window read now; `None` when readahead is
    /// not warranted for it (not sequential yet, off, or the block alone is larger than a
    /// window), and the caller reads the block by itself.
    pub(crate) fn block_bytes(
        &mut self,
        file: &dyn RandomAccessFile,
        handle: BlockHandle,
        limit: u64,
    ) -> Result<Option<&[u8]>> {
        let end = handle.end_with_trailer();
        let len = (end - handle.offset) as usize;
        let in_window = self
            .window
            .as_ref()
            .is_some_and(|w| handle.offset >= w.start && end <= w.start + w.buffer.len() as u64);
        if !in_window
            && (self.sequential_loads < SEQUENTIAL_LOADS_BEFORE_READAHEAD
                || len > self.max_size as usize)
        {
            return Ok(None);
        }
        let initial = self.initial_size();
        let max_size = self.max_size as usize;
        let window = self.window.get_or_insert_with(|| {
            Box::new(Window {
                next_size: initial,
                start: 0,
                buffer: Vec::new(),
            })
        });
        if !in_window {
            let size = window.next_size.max(len) as u64;
            let window_end = handle.offset.saturating_add(size).min(limit).max(end);
            window.next_size = window.next_size.saturating_mul(2).min(max_size);
            window
                .buffer
                .resize((window_end - handle.offset) as usize, 0);
            if let Err(e) = file.read_exact_at(handle.offset, &mut window.buffer) {
                window.buffer.clear();
                return Err(e.into());
            }
            window.start = handle.offset;
        }
        let from = (handle.offset - window.start) as usize;
        Ok(window.buffer.get(from..from + len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_fs::{FaultFs, FileSystem, MemFs, OpKind};
    use std::path::Path;
    use std::sync::Arc;

    fn file_of(bytes: &[u8]) -> (FaultFs, Arc<dyn RandomAccessFile>) {
        let mem = MemFs::new();
        let mut writer = mem.create(Path::new("/f")).unwrap();
        writer.append(bytes).unwrap();
        writer.sync_data().unwrap();
        let fs = FaultFs::new(Arc::new(mem));
        let file = fs.open_read(Path::new("/f")).unwrap();
        (fs, file)
    }

    /// Blocks of `size` bytes (trailer included) laid back to back.
    fn handle(index: u64, size: u64) -> BlockHandle {
        BlockHandle {
            offset: index * size,
            size: size - crate::format::BLOCK_TRAILER_SIZE as u64,
        }
    }

    #[test]
    fn starts_after_two_sequential_loads_and_doubles_to_the_maximum() {
        let bytes: Vec<u8> = (0u32..1 << 20).map(|i| (i * 7 + i / 251) as u8).collect();
        let (fs, file) = file_of(&bytes);
        let mut readahead = Readahead::new(32 << 10);
        let block = 1024;
        let mut windows = Vec::new();
        for i in 0..100 {
            let h = handle(i, block);
            readahead.note_load(h);
            let reads = fs.op_count(OpKind::Read);
            let got = readahead
                .block_bytes(&*file, h, bytes.len() as u64)
                .unwrap()
                .map(<[u8]>::to_vec);
            if i < 2 {
                assert_eq!(got, None, "block {i} comes before the trigger");
                continue;
            }
            let range = h.offset as usize..h.end_with_trailer() as usize;
            assert_eq!(got.as_deref(), Some(&bytes[range]), "block {i}");
            if fs.op_count(OpKind::Read) > reads {
                windows.push(readahead.window.as_ref().map_or(0, |w| w.buffer.len()));
            }
        }
        // 98 blocks of 1 KiB in five reads instead of 98.
        assert_eq!(windows, [8 << 10, 16 << 10, 32 << 10, 32 << 10, 32 << 10]);
    }

    #[test]
    fn a_jump_starts_over_and_off_never_reads() {
        let bytes = vec![5u8; 64 << 10];
        let (fs, file) = file_of(&bytes);
        let mut readahead = Readahead::new(DEFAULT_MAX_READAHEAD_SIZE);
        for i in [0, 1, 5, 6] {
            readahead.note_load(handle(i, 512));
            let got = readahead.block_bytes(&*file, handle(i, 512), 64 << 10);
            assert!(got.unwrap().is_none(), "block {i}");
        }
        readahead.note_load(handle(7, 512));
        assert!(readahead
            .block_bytes(&*file, handle(7, 512), 64 << 10)
            .unwrap()
            .is_some());
        let mut off = Readahead::new(0);
        assert!(!off.enabled());
        for i in 0..10 {
            off.note_load(handle(i, 512));
            assert!(off
                .block_bytes(&*file, handle(i, 512), 64 << 10)
                .unwrap()
                .is_none());
        }
        assert_eq!(fs.op_count(OpKind::Read), 1);
    }

    #[test]
    fn a_window_stops_at_the_limit() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let (_fs, file) = file_of(&bytes);
        let mut readahead = Readahead::new(DEFAULT_MAX_READAHEAD_SIZE);
        for i in 0..3 {
            readahead.note_load(handle(i, 3000));
        }
        let got = readahead
            .block_bytes(&*file, handle(2, 3000), 9500)
            .unwrap()
            .map(<[u8]>::to_vec);
        assert_eq!(got.as_deref(), Some(&bytes[6000..9000]));
        assert_eq!(readahead.window.map(|w| w.buffer.len()), Some(3500));
    }
}
