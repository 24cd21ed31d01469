//! An external sorter of key/value entries in bounded memory, for bulk loads (bulk.rs).
//!
//! Entries go into an in-memory arena; when it exceeds its budget it is sorted and written to a
//! spill run (docs/format/bulk-spill.md) through the database's file system. [`Sorter::merge`]
//! then streams every run and the last in-memory batch in key order.
//!
//! Invariants:
//! 1. Memory held is at most the budget plus one entry (the arena is spilled as soon as it
//!    passes the budget) plus one read buffer per run while merging.
//! 2. Each run is sorted by key; entries with equal keys stay (the merge reports them, it is
//!    how a bulk load finds duplicate keys).
//! 3. A run is read back only by the process that wrote it, in the same load; every block is
//!    checksummed anyway (crc32c), and a damaged or short run fails the load.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale_fs::{FileSystem, RandomAccessFile};

use crate::error::{Error, Result};

/// A spill block holds about this many bytes of records.
const BLOCK_BYTES: usize = 256 * 1024;
/// The largest block a reader accepts (a block may hold one record larger than
/// `BLOCK_BYTES`): bounds the allocation a damaged length could ask for.
const MAX_BLOCK_BYTES: u32 = 512 << 20;
/// Bookkeeping charged per entry against the budget (its offsets).
const ENTRY_OVERHEAD: usize = 12;

/// One index's entries being sorted.
#[derive(Debug)]
pub(crate) struct Sorter {
    fs: Arc<dyn FileSystem>,
    /// Where runs go: `{run_prefix}-{n}.spill`.
    run_prefix: PathBuf,
    budget: usize,
    arena: Vec<u8>,
    /// (start of key in `arena`, key length, value length); the value follows the key.
    entries: Vec<(u32, u32, u32)>,
    runs: Vec<PathBuf>,
    /// Whether every entry so far came in strictly increasing key order (then nothing needs
    /// sorting).
    ascending: bool,
    last_key_end: Option<(u32, u32)>,
}

impl Sorter {
    pub(crate) fn new(fs: Arc<dyn FileSystem>, run_prefix: PathBuf, budget: usize) -> Sorter {
        Sorter {
            fs,
            run_prefix,
            budget: budget.max(64 * 1024),
            arena: Vec::new(),
            entries: Vec::new(),
            runs: Vec::new(),
            ascending: true,
            last_key_end: None,
        }
    }

    /// The spill runs written so far.
    pub(crate) fn runs(&self) -> &[PathBuf] {
        &self.runs
    }

    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let (Ok(klen), Ok(vlen)) = (u32::try_from(key.len()), u32::try_from(value.len())) else {
            return Err(Error::InvalidArgument(
                "bulk load: an entry over 4 GiB".into(),
            ));
        };
        if self.arena.len() + key.len() + value.len() > u32::MAX as usize {
            self.spill()?;
        }
        let start = self.arena.len() as u32;
        if let Some((s, l)) = self.last_key_end {
            let previous = &self.arena[s as usize..(s + l) as usize];
            if previous >= key {
                self.ascending = false;
            }
        }
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(value);
        self.entries.push((start, klen, vlen));
        self.last_key_end = Some((start, klen));
        if self.arena.len() + self.entries.len() * ENTRY_OVERHEAD > self.budget {
            self.spill()?;
        }
        Ok(())
    }

    fn key(&self, e: (u32, u32, u32)) -> &[u8] {
        &self.arena[e.0 as usize..(e.0 + e.1) as usize]
    }

    fn sort_entries(&mut self) {
        if self.ascending {
            return;
        }
        let mut entries = std::mem::take(&mut self.entries);
        // Stable, so equal keys keep their arrival order (the error names the later one).
        entries.sort_by(|&a, &b| self.key(a).cmp(self.key(b)));
        self.entries = entries;
    }

    /// Sorts the arena and writes it as a run (invariant 1).
    fn spill(&mut self) -> Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        self.sort_entries();
        let path = PathBuf::from(format!(
            "{}-{}.spill",
            self.run_prefix.display(),
            self.runs.len()
        ));
        let mut file = self.fs.create(&path)?;
        self.runs.push(path);
        let mut block = Vec::with_capacity(BLOCK_BYTES + 1024);
        for &(start, klen, vlen) in &self.entries {
            let end = (start + klen + vlen) as usize;
            block.extend_from_slice(&klen.to_le_bytes());
            block.extend_from_slice(&vlen.to_le_bytes());
            block.extend_from_slice(&self.arena[start as usize..end]);
            if block.len() >= BLOCK_BYTES {
                write_block(&mut *file, &block)?;
                block.clear();
            }
        }
        if !block.is_empty() {
            write_block(&mut *file, &block)?;
        }
        // Runs are not synced: they are read back by this process only, and a crash
        // abandons the load (the next open deletes what is left).
        file.flush()?;
        self.arena.clear();
        self.entries.clear();
        self.ascending = true;
        self.last_key_end = None;
        Ok(())
    }

    /// Every entry in key order (equal keys adjacent), calling `each(key, value)`.
    pub(crate) fn merge(&mut self, mut each: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        self.sort_entries();
        if self.runs.is_empty() {
            for &(start, klen, vlen) in &self.entries {
                let (s, k) = (start as usize, klen as usize);
                each(
                    &self.arena[s..s + k],
                    &self.arena[s + k..s + k + vlen as usize],
                )?;
            }
            return Ok(());
        }
        let mut runs = Vec::with_capacity(self.runs.len());
        for path in &self.runs {
            runs.push(RunReader::open(&*self.fs, path)?);
        }
        let mut memory = 0usize;
        loop {
            // The smallest current key among the runs and the arena; ties go to the earlier
            // run, so equal keys come out in the order they were added.
            let mut best: Option<usize> = None;
            for (i, run) in runs.iter().enumerate() {
                if let Some((key, _)) = run.current() {
                    let better = match best {
                        Some(b) => runs[b].current().is_some_and(|(bk, _)| key < bk),
                        None => true,
                    };
                    if better {
                        best = Some(i);
                    }
                }
            }
            let arena_entry = self.entries.get(memory).copied();
            let take_arena = match (arena_entry, best) {
                (Some(e), Some(b)) => runs[b]
                    .current()
                    .is_some_and(|(bk, _)| self.key(e).cmp(bk) == Ordering::Less),
                (Some(_), None) => true,
                (None, _) => false,
            };
            if take_arena {
                let (start, klen, vlen) = arena_entry.unwrap_or_default();
                let (s, k) = (start as usize, klen as usize);
                each(
                    &self.arena[s..s + k],
                    &self.arena[s + k..s + k + vlen as usize],
                )?;
                memory += 1;
            } else if let Some(b) = best {
                if let Some((key, value)) = runs[b].current() {
                    each(key, value)?;
                }
                runs[b].advance()?;
            } else {
                return Ok(());
            }
        }
    }

    /// Deletes the runs (best effort: the next open sweeps what is left).
    pub(crate) fn remove_runs(&mut self) {
        for path in self.runs.drain(..) {
            let _ = self.fs.remove(&path);
        }
    }
}

/// `[u32 payload length][u32 crc32c of payload][payload]`, little-endian
/// (docs/format/bulk-spill.md).
fn write_block(file: &mut dyn shale_fs::WritableFile, payload: &[u8]) -> Result<()> {
    let len = u32::try_from(payload.len())
        .map_err(|_| Error::InvalidArgument("bulk load: a spill block over 4 GiB".into()))?;
    let mut header = [0u8; 8];
    header[..4].copy_from_slice(&len.to_le_bytes());
    header[4..].copy_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    file.append(&header)?;
    file.append(payload)?;
    Ok(())
}

/// Reads one run block by block.
struct RunReader {
    file: Arc<dyn RandomAccessFile>,
    size: u64,
    /// Offset of the next block in the file.
    next_block: u64,
    block: Vec<u8>,
    /// Where the current record's key starts in `block`, and its key and value lengths.
    current: Option<(usize, usize, usize)>,
}

impl RunReader {
    fn open(fs: &dyn FileSystem, path: &Path) -> Result<RunReader> {
        let file = fs.open_read(path)?;
        let size = file.size()?;
        let mut reader = RunReader {
            file,
            size,
            next_block: 0,
            block: Vec::new(),
            current: None,
        };
        reader.advance_from(0)?;
        Ok(reader)
    }

    fn corruption(&self, detail: &str) -> Error {
        Error::Corruption(format!(
            "bulk load spill run {} at offset {}: {detail}",
            self.file.path().display(),
            self.next_block
        ))
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        let (at, k, v) = self.current?;
        Some((
            self.block.get(at..at + k)?,
            self.block.get(at + k..at + k + v)?,
        ))
    }

    fn advance(&mut self) -> Result<()> {
        let next = match self.current {
            Some((at, k, v)) => at + k + v,
            None => return Ok(()),
        };
        self.advance_from(next)
    }

    /// Makes the record at `at` of the block current, loading the next block at its end.
    fn advance_from(&mut self, mut at: usize) -> Result<()> {
        if at >= self.block.len() {
            if self.next_block >= self.size {
                self.current = None;
                return Ok(());
            }
            self.load_block()?;
            at = 0;
        }
        let header = self
            .block
            .get(at..at + 8)
            .ok_or_else(|| self.corruption("record header cut short"))?;
        let klen = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let vlen = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        if at + 8 + klen + vlen > self.block.len() {
            return Err(self.corruption("record runs past its block"));
        }
        self.current = Some((at + 8, klen, vlen));
        Ok(())
    }

    fn load_block(&mut self) -> Result<()> {
        let mut header = [0u8; 8];
        if self.next_block + 8 > self.size {
            return Err(self.corruption("block header cut short"));
        }
        self.file.read_exact_at(self.next_block, &mut header)?;
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if len > MAX_BLOCK_BYTES || self.next_block + 8 + u64::from(len) > self.size {
            return Err(self.corruption("block length past the end of the run"));
        }
        self.block.resize(len as usize, 0);
        self.file
            .read_exact_at(self.next_block + 8, &mut self.block)?;
        if crc32c::crc32c(&self.block) != crc {
            return Err(self.corruption("block checksum mismatch"));
        }
        self.next_block += 8 + u64::from(len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale_fs::MemFs;

    fn collect(sorter: &mut Sorter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        sorter
            .merge(|k, v| {
                out.push((k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn unsorted_input_comes_out_sorted_across_spill_runs() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/t")).unwrap();
        // A budget of 64 KiB with ~40-byte entries: several runs.
        let mut sorter = Sorter::new(fs.clone(), "/t/run".into(), 0);
        let mut expected = Vec::new();
        for i in 0..20_000u32 {
            let k = (i.wrapping_mul(2_654_435_761) % 1_000_003).to_be_bytes();
            let v = format!("value-{i:08}-padding-padding");
            sorter.add(&k, v.as_bytes()).unwrap();
            expected.push((k.to_vec(), v.into_bytes()));
        }
        assert!(sorter.runs().len() > 3, "{} runs", sorter.runs().len());
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(collect(&mut sorter), expected);
        let runs = sorter.runs().to_vec();
        sorter.remove_runs();
        for run in runs {
            assert!(!fs.exists(&run).unwrap());
        }
    }

    #[test]
    fn equal_keys_stay_adjacent() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/t")).unwrap();
        let mut sorter = Sorter::new(fs, "/t/run".into(), 0);
        for i in 0..5000u32 {
            sorter.add(&(i % 2500).to_be_bytes(), &[1; 30]).unwrap();
        }
        let out = collect(&mut sorter);
        assert_eq!(out.len(), 5000);
        assert!(out.chunks(2).all(|pair| pair[0].0 == pair[1].0));
    }

    #[test]
    fn a_damaged_run_fails_the_merge() {
        let mem = Arc::new(MemFs::new());
        let fs: Arc<dyn FileSystem> = mem.clone();
        fs.create_dir_all(Path::new("/t")).unwrap();
        let mut sorter = Sorter::new(fs, "/t/run".into(), 0);
        for i in 0..5000u32 {
            sorter.add(&i.to_be_bytes(), &[7; 30]).unwrap();
        }
        let run = sorter.runs()[0].clone();
        let mut bytes = mem.file_contents(&run).unwrap();
        bytes[100] ^= 1;
        mem.write_file_for_test(&run, &bytes).unwrap();
        let err = sorter.merge(|_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
    }
}
