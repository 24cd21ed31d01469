//! The expected state: for every key the stress workload may write, what the database is
//! allowed to hold, kept in memory and (in blackbox mode) in a file that outlives a SIGKILL.
//! The file's layout is specified in docs/format/stress-expected.md.
//!
//! Every operation on a key takes the next value id of that key's slot (ids only grow; id 0
//! is the key's initial absent state). A slot holds:
//! - `latest`: the id of the last acknowledged operation;
//! - `pending`: the id of an operation issued but not yet acknowledged (0 when none), marked
//!   *before* the write is issued, with `pending_delete` telling a delete from a put;
//! - `floor`: the lowest id the database may still show after a crash. Operations with ids in
//!   `floor..=latest` are the acknowledged ones a crash may lose (the bounded suffix of
//!   `Buffered`, or of `Flush` under a power cut); `floor` moves to `latest` when an
//!   operation is known durable (at acknowledgement under the guarantees that cover the crash
//!   being tested, otherwise at the worker's next `Sync` write, its checkpoint);
//! - `last_delete`: the id of the last acknowledged delete (0: the initial absent state).
//!
//! Invariants:
//! 1. `floor <= latest`, `last_delete <= latest`, and `pending` is 0 or `latest + 1`.
//! 2. After a crash the key may hold the value of any id in `floor..=max(latest, pending)`,
//!    or nothing if a delete is among them (`last_delete >= floor`, or a pending delete).
//!    Each worker thread owns its keys, so no other operation can explain another value.
//! 3. The file is written slot by slot with `pwrite` at 32-byte aligned offsets, so a kill
//!    leaves each slot either old or new, never torn (a slot never straddles a page).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use shale_engine::Durability;

const MAGIC: &[u8; 8] = b"SHSTRESS";
const VERSION: u32 = 1;
const HEADER_SIZE: usize = 64;
const SLOT_SIZE: usize = 32;
const PENDING_DELETE: u32 = 1;

/// What the database may hold for one key; see the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    pub latest: u32,
    pub pending: u32,
    pub pending_delete: bool,
    pub floor: u32,
    pub last_delete: u32,
}

impl Slot {
    /// The highest id an operation on this key has used.
    pub fn highest(&self) -> u32 {
        self.latest.max(self.pending)
    }

    /// Whether the latest acknowledged operation is a delete.
    pub fn is_deleted(&self) -> bool {
        self.last_delete == self.latest
    }

    /// Whether the key may hold the value with `found` (`None`: no value) after a crash.
    pub fn allows(&self, found: Option<u32>) -> bool {
        match found {
            Some(id) => {
                id >= self.floor && id <= self.highest() && id != 0 && {
                    // A value id the key's deletes used is not a value.
                    !(id == self.last_delete || (id == self.pending && self.pending_delete))
                }
            }
            None => self.last_delete >= self.floor || (self.pending != 0 && self.pending_delete),
        }
    }

    /// The slot with its pending operation acknowledged; `durable` moves the floor with it.
    pub fn acknowledged(mut self, durable: bool) -> Slot {
        if self.pending != 0 {
            self.latest = self.pending;
            if self.pending_delete {
                self.last_delete = self.pending;
            }
            self.pending = 0;
            self.pending_delete = false;
        }
        if durable {
            self.floor = self.latest;
        }
        self
    }

    /// The slot once the database is known to hold exactly what `latest` says.
    pub fn settled(mut self, latest: u32, deleted: bool) -> Slot {
        self.latest = latest;
        self.pending = 0;
        self.pending_delete = false;
        self.floor = latest;
        if deleted {
            self.last_delete = latest;
        }
        self
    }

    fn encode(&self) -> [u8; SLOT_SIZE] {
        let mut bytes = [0; SLOT_SIZE];
        let fields = [
            self.latest,
            self.pending,
            if self.pending_delete {
                PENDING_DELETE
            } else {
                0
            },
            self.floor,
            self.last_delete,
        ];
        for (i, field) in fields.iter().enumerate() {
            bytes[i * 4..i * 4 + 4].copy_from_slice(&field.to_le_bytes());
        }
        let crc = crc32c::crc32c(&bytes[..SLOT_SIZE - 4]);
        bytes[SLOT_SIZE - 4..].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    fn decode(bytes: &[u8]) -> Result<Slot, String> {
        let field = |i: usize| {
            let mut word = [0; 4];
            word.copy_from_slice(&bytes[i * 4..i * 4 + 4]);
            u32::from_le_bytes(word)
        };
        if crc32c::crc32c(&bytes[..SLOT_SIZE - 4]) != field(7) {
            return Err("slot checksum mismatch".into());
        }
        if field(2) & !PENDING_DELETE != 0 || field(5) != 0 || field(6) != 0 {
            return Err("unknown flag or reserved bits set".into());
        }
        let slot = Slot {
            latest: field(0),
            pending: field(1),
            pending_delete: field(2) == PENDING_DELETE,
            floor: field(3),
            last_delete: field(4),
        };
        if slot.floor > slot.latest
            || slot.last_delete > slot.latest
            || (slot.pending != 0 && slot.pending != slot.latest.wrapping_add(1))
        {
            return Err(format!("inconsistent slot {slot}"));
        }
        Ok(slot)
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_deleted() { "delete" } else { "put" };
        write!(f, "latest id {} ({kind})", self.latest)?;
        if self.pending != 0 {
            let kind = if self.pending_delete { "delete" } else { "put" };
            write!(f, ", pending id {} ({kind})", self.pending)?;
        }
        write!(
            f,
            ", floor id {}, last delete id {}",
            self.floor, self.last_delete
        )
    }
}

/// The shape of the key space and the seed of the run, kept in the file's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub seed: u64,
    pub threads: usize,
    pub keys_per_thread: usize,
    pub keyspaces: usize,
    /// The durability the run forces; `None` keeps the one its seed draws.
    pub durability: Option<Durability>,
}

impl Shape {
    /// Slots in all: one per thread, keyspace and key.
    pub fn slots(&self) -> usize {
        self.threads * self.keyspaces * self.keys_per_thread
    }

    /// The slot index of `key` (a global key number) in `keyspace`, and its owning thread.
    pub fn slot_of(&self, keyspace: usize, key: usize) -> (usize, usize) {
        let thread = key / self.keys_per_thread;
        let index = (thread * self.keyspaces + keyspace) * self.keys_per_thread
            + key % self.keys_per_thread;
        (thread, index)
    }

    /// The first global key number of `thread`.
    pub fn first_key(&self, thread: usize) -> usize {
        thread * self.keys_per_thread
    }
}

/// The expected state of every slot: one lock per worker thread (a thread only touches its
/// own slots), plus the backing file when there is one.
pub struct ExpectedState {
    shape: Shape,
    threads: Vec<Mutex<Vec<Slot>>>,
    file: Option<(File, PathBuf)>,
    sync_pending: bool,
}

impl ExpectedState {
    /// A fresh state in memory only (crash-image mode).
    pub fn in_memory(shape: Shape) -> ExpectedState {
        ExpectedState {
            shape,
            threads: (0..shape.threads)
                .map(|_| {
                    Mutex::new(vec![
                        Slot::default();
                        shape.keyspaces * shape.keys_per_thread
                    ])
                })
                .collect(),
            file: None,
            sync_pending: false,
        }
    }

    /// Creates the file at `path` holding a fresh state, and syncs it.
    pub fn create(path: &Path, shape: Shape) -> Result<ExpectedState, String> {
        let io =
            |e: std::io::Error| format!("creating expected-state file {}: {e}", path.display());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io)?;
        let mut bytes = header(&shape).to_vec();
        let empty = Slot::default().encode();
        for _ in 0..shape.slots() {
            bytes.extend_from_slice(&empty);
        }
        file.write_all_at(&bytes, 0).map_err(io)?;
        file.sync_all().map_err(io)?;
        let mut state = ExpectedState::in_memory(shape);
        state.file = Some((file, path.to_path_buf()));
        Ok(state)
    }

    /// Opens the file at `path`, checking its header and every slot.
    pub fn open(path: &Path) -> Result<ExpectedState, String> {
        let what = path.display();
        let bytes = std::fs::read(path).map_err(|e| format!("reading {what}: {e}"))?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("opening {what}: {e}"))?;
        if bytes.len() < HEADER_SIZE || &bytes[..8] != MAGIC {
            return Err(format!("{what} is not a stress expected-state file"));
        }
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        if crc32c::crc32c(&bytes[..36]) != word(36) {
            return Err(format!("{what}: header checksum mismatch at offset 36"));
        }
        if word(8) != VERSION {
            return Err(format!(
                "{what}: format version {} is not the supported {VERSION}",
                word(8)
            ));
        }
        let mut seed = [0; 8];
        seed.copy_from_slice(&bytes[24..32]);
        let shape = Shape {
            threads: word(12) as usize,
            keyspaces: word(16) as usize,
            keys_per_thread: word(20) as usize,
            seed: u64::from_le_bytes(seed),
            durability: match word(32) {
                0 => None,
                1 => Some(Durability::Sync),
                2 => Some(Durability::Flush),
                3 => Some(Durability::Buffered),
                code => {
                    return Err(format!(
                        "{what}: unknown durability code {code} at offset 32"
                    ))
                }
            },
        };
        if shape.threads == 0 || shape.keys_per_thread == 0 || shape.keyspaces == 0 {
            return Err(format!("{what}: header has an empty shape {shape:?}"));
        }
        if bytes.len() != HEADER_SIZE + shape.slots() * SLOT_SIZE {
            return Err(format!(
                "{what}: {} bytes, but its header ({shape:?}) needs {}",
                bytes.len(),
                HEADER_SIZE + shape.slots() * SLOT_SIZE
            ));
        }
        let mut state = ExpectedState::in_memory(shape);
        let per_thread = shape.keyspaces * shape.keys_per_thread;
        for (thread, slots) in state.threads.iter_mut().enumerate() {
            let slots = slots.get_mut().unwrap_or_else(PoisonError::into_inner);
            for (i, slot) in slots.iter_mut().enumerate() {
                let offset = HEADER_SIZE + (thread * per_thread + i) * SLOT_SIZE;
                *slot = Slot::decode(&bytes[offset..offset + SLOT_SIZE])
                    .map_err(|e| format!("{what}: slot at offset {offset}: {e}"))?;
            }
        }
        state.file = Some((file, path.to_path_buf()));
        Ok(state)
    }

    /// Makes every pending marker durable (fdatasync) before its write is issued.
    pub fn set_sync_pending(&mut self, sync: bool) {
        self.sync_pending = sync;
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The slots of `thread`, locked.
    pub fn lock(&self, thread: usize) -> ThreadSlots<'_> {
        ThreadSlots {
            state: self,
            thread,
            slots: self.threads[thread]
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// A copy of every slot, thread by thread (each thread's slots as of one instant).
    pub fn snapshot(&self) -> Vec<Slot> {
        let mut all = Vec::with_capacity(self.shape.slots());
        for thread in 0..self.shape.threads {
            all.extend_from_slice(&self.lock(thread).slots);
        }
        all
    }

    fn write_slots(&self, first: usize, slots: &[Slot], sync: bool) -> Result<(), String> {
        let Some((file, path)) = &self.file else {
            return Ok(());
        };
        let mut bytes = Vec::with_capacity(slots.len() * SLOT_SIZE);
        for slot in slots {
            bytes.extend_from_slice(&slot.encode());
        }
        let offset = (HEADER_SIZE + first * SLOT_SIZE) as u64;
        file.write_all_at(&bytes, offset)
            .and_then(|()| if sync { file.sync_data() } else { Ok(()) })
            .map_err(|e| format!("writing expected-state file {}: {e}", path.display()))
    }
}

/// One thread's slots, locked; every change is written through to the file.
pub struct ThreadSlots<'a> {
    state: &'a ExpectedState,
    thread: usize,
    slots: MutexGuard<'a, Vec<Slot>>,
}

impl ThreadSlots<'_> {
    fn local(&self, index: usize) -> usize {
        index - self.thread * self.slots.len()
    }

    /// The slot with global index `index` (which this thread owns).
    pub fn get(&self, index: usize) -> Slot {
        self.slots[self.local(index)]
    }

    /// Sets slot `index`, writing it through; `pending_marker` syncs it when the state syncs
    /// pending markers.
    pub fn set(&mut self, index: usize, slot: Slot, pending_marker: bool) -> Result<(), String> {
        let local = self.local(index);
        self.slots[local] = slot;
        self.state
            .write_slots(index, &[slot], pending_marker && self.state.sync_pending)
    }

    /// Marks the operation on every slot of `indexes` pending (deletes per `deletes`) and
    /// returns the value id each one takes.
    pub fn begin(&mut self, indexes: &[usize], deletes: &[bool]) -> Result<Vec<u32>, String> {
        let mut ids = Vec::with_capacity(indexes.len());
        for (&index, &delete) in indexes.iter().zip(deletes) {
            let mut slot = self.get(index);
            slot.pending = slot.highest() + 1;
            slot.pending_delete = delete;
            ids.push(slot.pending);
            let local = self.local(index);
            self.slots[local] = slot;
            self.state.write_slots(index, &[slot], false)?;
        }
        if self.state.sync_pending {
            if let Some((file, path)) = &self.state.file {
                file.sync_data()
                    .map_err(|e| format!("syncing expected-state file {}: {e}", path.display()))?;
            }
        }
        Ok(ids)
    }

    /// Acknowledges the pending operations of `indexes`.
    pub fn acknowledge(&mut self, indexes: &[usize], durable: bool) -> Result<(), String> {
        for &index in indexes {
            let slot = self.get(index).acknowledged(durable);
            self.set(index, slot, false)?;
        }
        Ok(())
    }

    /// Moves every floor of this thread to its latest id (a checkpoint: all of this thread's
    /// acknowledged writes are durable).
    pub fn checkpoint(&mut self) -> Result<(), String> {
        for slot in self.slots.iter_mut() {
            slot.floor = slot.latest;
        }
        let first = self.thread * self.slots.len();
        self.state.write_slots(first, &self.slots, false)
    }
}

fn header(shape: &Shape) -> [u8; HEADER_SIZE] {
    let mut bytes = [0; HEADER_SIZE];
    bytes[..8].copy_from_slice(MAGIC);
    for (at, value) in [
        (8, VERSION),
        (12, shape.threads as u32),
        (16, shape.keyspaces as u32),
        (20, shape.keys_per_thread as u32),
        (
            32,
            match shape.durability {
                None => 0,
                Some(Durability::Sync) => 1,
                Some(Durability::Flush) => 2,
                Some(Durability::Buffered) => 3,
            },
        ),
    ] {
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }
    bytes[24..32].copy_from_slice(&shape.seed.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..36]);
    bytes[36..40].copy_from_slice(&crc.to_le_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_allows_exactly_its_window() {
        // Put 1, put 2 (acknowledged, not yet durable), delete 3 pending.
        let slot = Slot {
            latest: 2,
            pending: 3,
            pending_delete: true,
            floor: 1,
            last_delete: 0,
        };
        assert!(slot.allows(Some(1)) && slot.allows(Some(2)) && slot.allows(None));
        assert!(!slot.allows(Some(3)), "a delete's id is no value");
        assert!(!slot.allows(Some(4)), "an invented id");
        let durable = slot.acknowledged(true);
        assert!(
            durable.allows(None) && !durable.allows(Some(2)),
            "a resurrected value"
        );
        let put = Slot {
            latest: 5,
            floor: 5,
            last_delete: 4,
            ..Slot::default()
        };
        assert!(!put.allows(None), "a lost durable put");
        assert!(Slot::default().allows(None));
        assert!(!Slot::default().allows(Some(0)));
    }

    /// The layout of docs/format/stress-expected.md, byte by byte.
    #[test]
    fn slot_and_header_bytes_match_the_format_page() {
        let slot = Slot {
            latest: 0x0102_0304,
            pending: 0x0102_0305,
            pending_delete: true,
            floor: 7,
            last_delete: 6,
        };
        let bytes = slot.encode();
        assert_eq!(
            &bytes[..20],
            &[4, 3, 2, 1, 5, 3, 2, 1, 1, 0, 0, 0, 7, 0, 0, 0, 6, 0, 0, 0]
        );
        assert_eq!(&bytes[20..28], &[0; 8]);
        assert_eq!(bytes[28..], crc32c::crc32c(&bytes[..28]).to_le_bytes());
        assert_eq!(Slot::decode(&bytes), Ok(slot));
        let shape = Shape {
            seed: 0x1122_3344_5566_7788,
            threads: 2,
            keys_per_thread: 5,
            keyspaces: 3,
            durability: Some(Durability::Buffered),
        };
        let header = header(&shape);
        assert_eq!(&header[..8], b"SHSTRESS");
        assert_eq!(
            &header[8..24],
            &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0]
        );
        assert_eq!(
            &header[24..36],
            &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 3, 0, 0, 0]
        );
        assert_eq!(header[36..40], crc32c::crc32c(&header[..36]).to_le_bytes());
        assert_eq!(&header[40..], &[0; 24]);
        assert_eq!(shape.slot_of(2, 7), (1, (3 + 2) * 5 + 2));
    }

    #[test]
    fn the_file_round_trips_and_detects_damage() {
        let dir = std::env::temp_dir().join(format!("shale-expected-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let shape = Shape {
            seed: 7,
            threads: 2,
            keys_per_thread: 3,
            keyspaces: 2,
            durability: Some(Durability::Flush),
        };
        let state = ExpectedState::create(&dir, shape).unwrap();
        let (thread, index) = shape.slot_of(1, 4);
        assert_eq!(thread, 1);
        {
            let mut slots = state.lock(thread);
            slots.begin(&[index], &[false]).unwrap();
            slots.acknowledge(&[index], true).unwrap();
        }
        let reopened = ExpectedState::open(&dir).unwrap();
        assert_eq!(reopened.shape(), shape);
        assert_eq!(reopened.lock(thread).get(index).latest, 1);
        let mut bytes = std::fs::read(&dir).unwrap();
        bytes[HEADER_SIZE + index * SLOT_SIZE] ^= 1;
        std::fs::write(&dir, &bytes).unwrap();
        let error = ExpectedState::open(&dir).err().unwrap();
        assert!(error.contains("checksum"), "{error}");
        std::fs::remove_file(&dir).unwrap();
    }
}
