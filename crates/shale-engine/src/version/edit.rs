//! [`VersionEdit`]: one change to the shape of the database, and the payload of one MANIFEST
//! record (docs/format/manifest.md, "Version edit encoding").
//!
//! Invariants:
//! 1. Tag and subtag values never change meaning (the tables in the format page); tags with
//!    [`SAFE_TO_IGNORE`] set are skipped by readers that do not know them, other unknown tags
//!    are `NotSupported`.
//! 2. [`VersionEdit::encode`] writes fields in tag order with minimal varints, and
//!    `decode(encode(e)) == e` for every edit.
//! 3. Decoding treats its input as untrusted: every length is checked against the bytes that
//!    remain before anything is allocated, and nothing panics.

use std::fmt;
use std::path::Path;

use shale_sst::{printable, SeqNo};

use super::coding::{put_bytes, put_varint32, put_varint64, utf8, DecodeFailure, Decoded, Reader};
use super::levels::FileMetaData;
use crate::blob::BlobFileMeta;
use crate::error::Result;
use crate::table_cache::PinnedTable;

/// The magic at the start of the `MANIFEST_HEADER` field.
pub const MANIFEST_MAGIC: &[u8; 8] = b"SHALEMAN";

/// The manifest format version this build writes, and the newest it reads.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// Tags and subtags with this bit set may be skipped by a reader that does not know them.
pub const SAFE_TO_IGNORE: u32 = 0x2000;

/// Field tags (docs/format/manifest.md, "Tags"). Never change.
pub(crate) mod tag {
    pub const MANIFEST_HEADER: u32 = 1;
    pub const COMPARATOR: u32 = 2;
    pub const NEXT_FILE_NUMBER: u32 = 3;
    pub const LAST_SEQUENCE: u32 = 4;
    pub const MAX_KEYSPACE_ID: u32 = 5;
    pub const ADD_KEYSPACE: u32 = 6;
    pub const DELETED_FILE: u32 = 7;
    pub const NEW_FILE: u32 = 8;
    pub const LOG_NUMBER: u32 = 9;
    pub const DROP_KEYSPACE: u32 = 10;
    pub const WAL_END: u32 = 11;
    /// Blob files (docs/format/blob.md). Not safe to ignore: a reader that skipped them would
    /// not know the files its tables' references need.
    pub const BLOB_FILE_ADDITION: u32 = 12;
    pub const BLOB_FILE_GARBAGE: u32 = 13;
    pub const BLOB_FILE_DELETION: u32 = 14;
    /// `NEW_FILE` property subtags.
    pub const CREATION_TIME: u32 = 1;
    /// Advisory (it only steers TTL compaction), so older readers may skip it.
    pub const OLDEST_ENTRY_TIME: u32 = super::SAFE_TO_IGNORE | 1;
    pub const GLOBAL_SEQNO: u32 = 2;
    /// Advisory (it only steers the blob garbage-collection picker).
    pub const OLDEST_BLOB_FILE: u32 = super::SAFE_TO_IGNORE | 3;
    /// A marker with an empty body; advisory for readers that do not know it (they only skip
    /// a check), so it may be skipped.
    pub const WALS_TRACKED: u32 = super::SAFE_TO_IGNORE | 0x0c;
    /// A WAL's synced size; advisory for readers that do not know it (they only skip a
    /// check), so it may be skipped.
    pub const WAL_SYNCED: u32 = super::SAFE_TO_IGNORE | 0x0d;
    /// A table a compaction found damaged; advisory (a reader that skips it only forgets the
    /// mark and finds the damage again at the next compaction that reads the table), so it
    /// may be skipped.
    pub const DAMAGED_FILE: u32 = super::SAFE_TO_IGNORE | 0x0e;
}

/// The name of a tag, for tools and error messages.
pub(crate) fn tag_name(tag: u32) -> &'static str {
    match tag {
        tag::MANIFEST_HEADER => "MANIFEST_HEADER",
        tag::COMPARATOR => "COMPARATOR",
        tag::NEXT_FILE_NUMBER => "NEXT_FILE_NUMBER",
        tag::LAST_SEQUENCE => "LAST_SEQUENCE",
        tag::MAX_KEYSPACE_ID => "MAX_KEYSPACE_ID",
        tag::ADD_KEYSPACE => "ADD_KEYSPACE",
        tag::DELETED_FILE => "DELETED_FILE",
        tag::NEW_FILE => "NEW_FILE",
        tag::LOG_NUMBER => "LOG_NUMBER",
        tag::DROP_KEYSPACE => "DROP_KEYSPACE",
        tag::WAL_END => "WAL_END",
        tag::WALS_TRACKED => "WALS_TRACKED",
        tag::WAL_SYNCED => "WAL_SYNCED",
        tag::DAMAGED_FILE => "DAMAGED_FILE",
        tag::BLOB_FILE_ADDITION => "BLOB_FILE_ADDITION",
        tag::BLOB_FILE_GARBAGE => "BLOB_FILE_GARBAGE",
        tag::BLOB_FILE_DELETION => "BLOB_FILE_DELETION",
        _ => "unknown",
    }
}

/// The name an error gives an edit decoded outside a file.
const EDIT_PSEUDO_FILE: &str = "(version edit)";

/// A table file leaving a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeletedFile {
    /// The keyspace whose level held the file.
    pub keyspace: u32,
    /// The level that held the file.
    pub level: u32,
    /// The file number.
    pub number: u64,
}

/// A table file joining a level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFile {
    /// The keyspace the file belongs to.
    pub keyspace: u32,
    /// The level it joins.
    pub level: u32,
    /// What the file holds.
    pub meta: FileMetaData,
}

/// A live table file a read found damaged (docs/format/manifest.md, `DAMAGED_FILE`): no
/// background compaction takes it as an input while it is live.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DamagedFile {
    /// The table file's number.
    pub number: u64,
    /// Where in the file the damage was found (0 when the read could not say).
    pub offset: u64,
    /// What is wrong, as the read reported it.
    pub detail: String,
}

/// One atomic change to the database's shape: keyspaces added or dropped, table files added
/// to or deleted from levels, WAL log numbers and counters advanced.
///
/// An edit is applied whole or not at all (docs/format/manifest.md, "Applying an edit", which
/// also gives the order in which its parts apply). Build one with the helpers and hand it to
/// [`crate::VersionSet::log_and_apply`], which fills in the counters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VersionEdit {
    /// The manifest format version; only in the first record of a MANIFEST, which the
    /// version set writes.
    pub manifest_format_version: Option<u32>,
    /// The user comparator's name; only in the first record of a MANIFEST.
    pub comparator: Option<String>,
    /// The next unused file number.
    pub next_file_number: Option<u64>,
    /// The last sequence number in use.
    pub last_sequence: Option<SeqNo>,
    /// The largest keyspace id ever assigned (ids are never reused).
    pub max_keyspace_id: Option<u32>,
    /// Keyspaces created, as (id, name).
    pub added_keyspaces: Vec<(u32, String)>,
    /// Files leaving a level.
    pub deleted_files: Vec<DeletedFile>,
    /// Files joining a level.
    pub new_files: Vec<NewFile>,
    /// Per keyspace: every write of the keyspace in WAL files numbered below this is in tables.
    pub log_numbers: Vec<(u32, u64)>,
    /// Keyspaces dropped, with all their files.
    pub dropped_keyspaces: Vec<u32>,
    /// WAL files replayed at an open, as (log number, offset where their valid data ends): a
    /// later recovery reads each only up to that offset (docs/format/manifest.md, `WAL_END`).
    pub wal_ends: Vec<(u64, u64)>,
    /// From this edit on, every live keyspace's log number names a WAL that stays on disk
    /// until the log number moves past it, so a recovery may treat a missing one as lost
    /// data (docs/format/manifest.md, `WALS_TRACKED`). Set by the open; kept in snapshots.
    pub wals_tracked: bool,
    /// WAL files known synced up to a size, as (log number, synced bytes): a recovery that
    /// finds less valid data there refuses it (docs/format/manifest.md, `WAL_SYNCED`).
    pub wal_synced: Vec<(u64, u64)>,
    /// Live tables marked damaged, at most one mark a file (docs/format/manifest.md,
    /// `DAMAGED_FILE`).
    pub damaged_files: Vec<DamagedFile>,
    /// Blob files added, with their record count and bytes (garbage is always 0 here).
    pub blob_file_additions: Vec<BlobFileMeta>,
    /// Garbage added to blob files, as (file number, records, bytes).
    pub blob_file_garbage: Vec<(u64, u64, u64)>,
    /// Blob files leaving the Version (their garbage reached their total, or a repair).
    pub deleted_blob_files: Vec<u64>,
}

impl VersionEdit {
    /// An empty edit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `meta` to `level` of `keyspace`.
    pub fn add_file(&mut self, keyspace: u32, level: u32, meta: FileMetaData) {
        self.new_files.push(NewFile {
            keyspace,
            level,
            meta,
        });
    }

    /// Deletes file `number` from `level` of `keyspace`.
    pub fn delete_file(&mut self, keyspace: u32, level: u32, number: u64) {
        self.deleted_files.push(DeletedFile {
            keyspace,
            level,
            number,
        });
    }

    /// Records that `keyspace` needs no WAL numbered below `log_number`.
    pub fn set_log_number(&mut self, keyspace: u32, log_number: u64) {
        match self.log_numbers.iter_mut().find(|(k, _)| *k == keyspace) {
            Some(entry) => entry.1 = log_number,
            None => self.log_numbers.push((keyspace, log_number)),
        }
    }

    /// Records that WAL `log_number` holds valid data only up to byte `end`.
    pub fn set_wal_end(&mut self, log_number: u64, end: u64) {
        match self.wal_ends.iter_mut().find(|(l, _)| *l == log_number) {
            Some(entry) => entry.1 = end,
            None => self.wal_ends.push((log_number, end)),
        }
    }

    /// Records that WAL `log_number` was synced up to byte `size` (every record before it is
    /// durable).
    pub fn set_wal_synced(&mut self, log_number: u64, size: u64) {
        match self.wal_synced.iter_mut().find(|(l, _)| *l == log_number) {
            Some(entry) => entry.1 = entry.1.max(size),
            None => self.wal_synced.push((log_number, size)),
        }
    }

    /// Marks live table `number` damaged at `offset`, as `detail` says (a second mark of the
    /// file in this edit replaces the first).
    pub fn mark_damaged(&mut self, number: u64, offset: u64, detail: &str) {
        let mark = DamagedFile {
            number,
            offset,
            detail: detail.to_owned(),
        };
        match self.damaged_files.iter_mut().find(|d| d.number == number) {
            Some(entry) => *entry = mark,
            None => self.damaged_files.push(mark),
        }
    }

    /// Adds blob file `meta` (its garbage, if any, goes in a garbage field of the same edit).
    pub fn add_blob_file(&mut self, meta: &BlobFileMeta) {
        self.blob_file_additions.push(BlobFileMeta {
            garbage_count: 0,
            garbage_bytes: 0,
            ..meta.clone()
        });
        if meta.garbage_count > 0 || meta.garbage_bytes > 0 {
            self.add_blob_garbage(meta.number, meta.garbage_count, meta.garbage_bytes);
        }
    }

    /// Adds `count` records of `bytes` to the garbage of blob file `number`.
    pub fn add_blob_garbage(&mut self, number: u64, count: u64, bytes: u64) {
        match self
            .blob_file_garbage
            .iter_mut()
            .find(|(n, _, _)| *n == number)
        {
            Some(entry) => {
                entry.1 += count;
                entry.2 += bytes;
            }
            None => self.blob_file_garbage.push((number, count, bytes)),
        }
    }

    /// Deletes blob file `number` from the Version.
    pub fn delete_blob_file(&mut self, number: u64) {
        if !self.deleted_blob_files.contains(&number) {
            self.deleted_blob_files.push(number);
        }
    }

    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The encoding (docs/format/manifest.md): fields in tag order.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(&mut out);
        out
    }

    /// Appends the encoding to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        let mut body = Vec::new();
        if let Some(version) = self.manifest_format_version {
            body.extend_from_slice(MANIFEST_MAGIC);
            body.extend_from_slice(&version.to_le_bytes());
            put_field(out, tag::MANIFEST_HEADER, &mut body);
        }
        if let Some(name) = &self.comparator {
            body.extend_from_slice(name.as_bytes());
            put_field(out, tag::COMPARATOR, &mut body);
        }
        if let Some(n) = self.next_file_number {
            put_varint64(&mut body, n);
            put_field(out, tag::NEXT_FILE_NUMBER, &mut body);
        }
        if let Some(n) = self.last_sequence {
            put_varint64(&mut body, n);
            put_field(out, tag::LAST_SEQUENCE, &mut body);
        }
        if let Some(n) = self.max_keyspace_id {
            put_varint32(&mut body, n);
            put_field(out, tag::MAX_KEYSPACE_ID, &mut body);
        }
        for (id, name) in &self.added_keyspaces {
            put_varint32(&mut body, *id);
            body.extend_from_slice(name.as_bytes());
            put_field(out, tag::ADD_KEYSPACE, &mut body);
        }
        for d in &self.deleted_files {
            put_varint32(&mut body, d.keyspace);
            put_varint32(&mut body, d.level);
            put_varint64(&mut body, d.number);
            put_field(out, tag::DELETED_FILE, &mut body);
        }
        for f in &self.new_files {
            encode_new_file(&mut body, f);
            put_field(out, tag::NEW_FILE, &mut body);
        }
        for (keyspace, log_number) in &self.log_numbers {
            put_varint32(&mut body, *keyspace);
            put_varint64(&mut body, *log_number);
            put_field(out, tag::LOG_NUMBER, &mut body);
        }
        for id in &self.dropped_keyspaces {
            put_varint32(&mut body, *id);
            put_field(out, tag::DROP_KEYSPACE, &mut body);
        }
        for (log_number, end) in &self.wal_ends {
            put_varint64(&mut body, *log_number);
            put_varint64(&mut body, *end);
            put_field(out, tag::WAL_END, &mut body);
        }
        if self.wals_tracked {
            put_field(out, tag::WALS_TRACKED, &mut body);
        }
        for (log_number, size) in &self.wal_synced {
            put_varint64(&mut body, *log_number);
            put_varint64(&mut body, *size);
            put_field(out, tag::WAL_SYNCED, &mut body);
        }
        for d in &self.damaged_files {
            put_varint64(&mut body, d.number);
            put_varint64(&mut body, d.offset);
            body.extend_from_slice(d.detail.as_bytes());
            put_field(out, tag::DAMAGED_FILE, &mut body);
        }
        for b in &self.blob_file_additions {
            put_varint32(&mut body, b.keyspace);
            put_varint64(&mut body, b.number);
            put_varint64(&mut body, b.total_count);
            put_varint64(&mut body, b.total_bytes);
            put_field(out, tag::BLOB_FILE_ADDITION, &mut body);
        }
        for (number, count, bytes) in &self.blob_file_garbage {
            put_varint64(&mut body, *number);
            put_varint64(&mut body, *count);
            put_varint64(&mut body, *bytes);
            put_field(out, tag::BLOB_FILE_GARBAGE, &mut body);
        }
        for number in &self.deleted_blob_files {
            put_varint64(&mut body, *number);
            put_field(out, tag::BLOB_FILE_DELETION, &mut body);
        }
    }

    /// Decodes an edit from untrusted bytes. Damage is [`Error::Corruption`] naming the byte
    /// offset inside the encoding; a tag from a newer Shale is [`Error::NotSupported`].
    pub fn decode(data: &[u8]) -> Result<VersionEdit> {
        decode(data).map_err(|e| e.into_error(Path::new(EDIT_PSEUDO_FILE), None))
    }

    /// [`Self::decode`] for the MANIFEST record at `record_offset` of `file`: errors name the
    /// file and the record's offset, and the byte inside the record in the detail.
    pub fn decode_record(data: &[u8], file: &Path, record_offset: u64) -> Result<VersionEdit> {
        decode(data).map_err(|e| e.into_error(file, Some(record_offset)))
    }
}

fn encode_new_file(out: &mut Vec<u8>, f: &NewFile) {
    let m = &f.meta;
    put_varint32(out, f.keyspace);
    put_varint32(out, f.level);
    put_varint64(out, m.number);
    put_varint64(out, m.size);
    put_bytes(out, m.smallest.encoded());
    put_bytes(out, m.largest.encoded());
    put_varint64(out, m.smallest_seqno);
    put_varint64(out, m.largest_seqno);
    put_varint64(out, m.num_entries);
    put_varint64(out, m.num_deletions);
    if let Some(time) = m.creation_time {
        let mut body = Vec::new();
        put_varint64(&mut body, time);
        put_field(out, tag::CREATION_TIME, &mut body);
    }
    if let Some(time) = m.oldest_entry_time {
        let mut body = Vec::new();
        put_varint64(&mut body, time);
        put_field(out, tag::OLDEST_ENTRY_TIME, &mut body);
    }
    if let Some(seqno) = m.global_seqno {
        let mut body = Vec::new();
        put_varint64(&mut body, seqno);
        put_field(out, tag::GLOBAL_SEQNO, &mut body);
    }
    if let Some(number) = m.oldest_blob_file {
        let mut body = Vec::new();
        put_varint64(&mut body, number);
        put_field(out, tag::OLDEST_BLOB_FILE, &mut body);
    }
}

/// Appends `tag | length | body` and clears `body` for the next field.
fn put_field(out: &mut Vec<u8>, tag: u32, body: &mut Vec<u8>) {
    put_varint32(out, tag);
    put_bytes(out, body);
    body.clear();
}

/// Stores a singular field, refusing a second one.
fn set_once<T>(slot: &mut Option<T>, value: T, tag: u32, at: usize) -> Decoded<()> {
    if slot.is_some() {
        return Err(DecodeFailure::corrupt(
            at,
            format!("a second {} field in one edit", tag_name(tag)),
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn unknown_tag(tag: u32, at: usize, what: &str) -> DecodeFailure {
    DecodeFailure {
        offset: at,
        detail: format!(
            "{what} {tag} is unknown and not marked safe to ignore: written by a newer Shale?"
        ),
        unsupported: true,
    }
}

fn decode(data: &[u8]) -> Decoded<VersionEdit> {
    let mut edit = VersionEdit::default();
    let mut input = Reader::new(data, 0);
    while !input.is_empty() {
        let field_at = input.at();
        let tag = input.varint32("field tag")?;
        if tag == 0 {
            return Err(DecodeFailure::corrupt(
                field_at,
                "field tag 0 is never valid (zero bytes where an edit field should be?)",
            ));
        }
        if tag == tag::MANIFEST_HEADER && field_at != 0 {
            return Err(DecodeFailure::corrupt(
                field_at,
                "MANIFEST_HEADER is only valid as the first field of an edit",
            ));
        }
        let body = input.bytes("field body")?;
        let mut r = Reader::new(body, input.at() - body.len());
        decode_field(&mut edit, tag, &mut r, field_at)?;
        r.finish(tag_name(tag))?;
    }
    Ok(edit)
}

/// Decodes the body of one field (in `r`) with `tag`, which starts at `field_at`, into `edit`.
#[allow(clippy::too_many_lines)] // one short arm per tag
fn decode_field(
    edit: &mut VersionEdit,
    tag: u32,
    r: &mut Reader<'_>,
    field_at: usize,
) -> Decoded<()> {
    let body_at = r.at();
    match tag {
        tag::MANIFEST_HEADER => {
            let rest = r.rest();
            let (Some(magic), Some(version), 12) = (rest.get(..8), rest.get(8..12), rest.len())
            else {
                return Err(DecodeFailure::corrupt(
                    body_at,
                    format!("MANIFEST_HEADER body of {} bytes (12 expected)", rest.len()),
                ));
            };
            if magic != MANIFEST_MAGIC {
                return Err(DecodeFailure::corrupt(
                    body_at,
                    format!(
                        "manifest magic is {}, not {}",
                        printable(magic),
                        printable(MANIFEST_MAGIC)
                    ),
                ));
            }
            let version = u32::from_le_bytes([version[0], version[1], version[2], version[3]]);
            edit.manifest_format_version = Some(version);
        }
        tag::COMPARATOR => {
            let name = utf8(r.rest(), body_at, "comparator name")?;
            set_once(&mut edit.comparator, name, tag, field_at)?;
        }
        tag::NEXT_FILE_NUMBER => {
            let n = r.varint64("next file number")?;
            set_once(&mut edit.next_file_number, n, tag, field_at)?;
        }
        tag::LAST_SEQUENCE => {
            let n = r.seqno("last sequence")?;
            set_once(&mut edit.last_sequence, n, tag, field_at)?;
        }
        tag::MAX_KEYSPACE_ID => {
            let n = r.varint32("max keyspace id")?;
            set_once(&mut edit.max_keyspace_id, n, tag, field_at)?;
        }
        tag::ADD_KEYSPACE => {
            let id = r.varint32("keyspace id")?;
            let name_at = r.at();
            let name = utf8(r.rest(), name_at, "keyspace name")?;
            edit.added_keyspaces.push((id, name));
        }
        tag::DELETED_FILE => {
            let keyspace = r.varint32("keyspace id")?;
            let level = r.varint32("level")?;
            let number = r.varint64("file number")?;
            edit.deleted_files.push(DeletedFile {
                keyspace,
                level,
                number,
            });
        }
        tag::NEW_FILE => edit.new_files.push(decode_new_file(r)?),
        tag::LOG_NUMBER => {
            let keyspace = r.varint32("keyspace id")?;
            let log_number = r.varint64("log number")?;
            if edit.log_numbers.iter().any(|(k, _)| *k == keyspace) {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    format!("a second LOG_NUMBER field for keyspace {keyspace}"),
                ));
            }
            edit.log_numbers.push((keyspace, log_number));
        }
        tag::DROP_KEYSPACE => {
            let id = r.varint32("keyspace id")?;
            edit.dropped_keyspaces.push(id);
        }
        tag::WAL_END => {
            let log_number = r.varint64("log number")?;
            let end = r.varint64("WAL end offset")?;
            if edit.wal_ends.iter().any(|(l, _)| *l == log_number) {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    format!("a second WAL_END field for log {log_number}"),
                ));
            }
            edit.wal_ends.push((log_number, end));
        }
        tag::WALS_TRACKED => {
            if edit.wals_tracked {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    "a second WALS_TRACKED field in one edit",
                ));
            }
            edit.wals_tracked = true;
        }
        tag::WAL_SYNCED => {
            let log_number = r.varint64("log number")?;
            let size = r.varint64("WAL synced size")?;
            if edit.wal_synced.iter().any(|(l, _)| *l == log_number) {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    format!("a second WAL_SYNCED field for log {log_number}"),
                ));
            }
            edit.wal_synced.push((log_number, size));
        }
        tag::DAMAGED_FILE => {
            let number = r.varint64("file number")?;
            let offset = r.varint64("damage offset")?;
            let detail_at = r.at();
            let detail = utf8(r.rest(), detail_at, "damage detail")?;
            if edit.damaged_files.iter().any(|d| d.number == number) {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    format!("a second DAMAGED_FILE field for file {number}"),
                ));
            }
            edit.damaged_files.push(DamagedFile {
                number,
                offset,
                detail,
            });
        }
        tag::BLOB_FILE_ADDITION | tag::BLOB_FILE_GARBAGE | tag::BLOB_FILE_DELETION => {
            return decode_blob_field(edit, tag, r, field_at);
        }
        unknown if unknown & SAFE_TO_IGNORE != 0 => {
            r.rest();
        }
        unknown => return Err(unknown_tag(unknown, field_at, "field tag")),
    }
    Ok(())
}

/// Decodes the body of a blob-file field (tags 12 to 14).
fn decode_blob_field(
    edit: &mut VersionEdit,
    tag: u32,
    r: &mut Reader<'_>,
    field_at: usize,
) -> Decoded<()> {
    match tag {
        tag::BLOB_FILE_ADDITION => {
            let keyspace = r.varint32("keyspace id")?;
            let number = r.varint64("blob file number")?;
            let total_count = r.varint64("blob record count")?;
            let total_bytes = r.varint64("blob record bytes")?;
            if edit.blob_file_additions.iter().any(|b| b.number == number) {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    format!("a second BLOB_FILE_ADDITION of blob file {number}"),
                ));
            }
            edit.blob_file_additions.push(BlobFileMeta {
                number,
                keyspace,
                total_count,
                total_bytes,
                garbage_count: 0,
                garbage_bytes: 0,
            });
        }
        tag::BLOB_FILE_GARBAGE => {
            let number = r.varint64("blob file number")?;
            let count = r.varint64("garbage record count")?;
            let bytes = r.varint64("garbage bytes")?;
            if edit.blob_file_garbage.iter().any(|(n, _, _)| *n == number) {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    format!("a second BLOB_FILE_GARBAGE of blob file {number}"),
                ));
            }
            edit.blob_file_garbage.push((number, count, bytes));
        }
        _ => {
            let number = r.varint64("blob file number")?;
            if edit.deleted_blob_files.contains(&number) {
                return Err(DecodeFailure::corrupt(
                    field_at,
                    format!("a second BLOB_FILE_DELETION of blob file {number}"),
                ));
            }
            edit.deleted_blob_files.push(number);
        }
    }
    Ok(())
}

fn decode_new_file(r: &mut Reader<'_>) -> Decoded<NewFile> {
    let keyspace = r.varint32("keyspace id")?;
    let level = r.varint32("level")?;
    let number = r.varint64("file number")?;
    let size = r.varint64("file size")?;
    let smallest = r.internal_key("smallest key")?;
    let largest = r.internal_key("largest key")?;
    let seqnos_at = r.at();
    let smallest_seqno = r.seqno("smallest seqno")?;
    let largest_seqno = r.seqno("largest seqno")?;
    if smallest_seqno > largest_seqno {
        return Err(DecodeFailure::corrupt(
            seqnos_at,
            format!("smallest seqno {smallest_seqno} is above largest seqno {largest_seqno}"),
        ));
    }
    let num_entries = r.varint64("number of entries")?;
    let num_deletions = r.varint64("number of deletions")?;
    let mut creation_time = None;
    let mut oldest_entry_time = None;
    let mut global_seqno = None;
    let mut oldest_blob_file = None;
    while !r.is_empty() {
        let property_at = r.at();
        let subtag = r.varint32("file property tag")?;
        let body = r.bytes("file property body")?;
        let mut p = Reader::new(body, r.at() - body.len());
        match subtag {
            tag::CREATION_TIME => {
                let time = p.varint64("creation time")?;
                if creation_time.is_some() {
                    return Err(DecodeFailure::corrupt(
                        property_at,
                        "a second CREATION_TIME property in one NEW_FILE",
                    ));
                }
                creation_time = Some(time);
            }
            tag::OLDEST_ENTRY_TIME => {
                let time = p.varint64("oldest entry time")?;
                if oldest_entry_time.is_some() {
                    return Err(DecodeFailure::corrupt(
                        property_at,
                        "a second OLDEST_ENTRY_TIME property in one NEW_FILE",
                    ));
                }
                oldest_entry_time = Some(time);
            }
            tag::GLOBAL_SEQNO => {
                let seqno = p.seqno("global seqno")?;
                if global_seqno.is_some() {
                    return Err(DecodeFailure::corrupt(
                        property_at,
                        "a second GLOBAL_SEQNO property in one NEW_FILE",
                    ));
                }
                global_seqno = Some(seqno);
            }
            tag::OLDEST_BLOB_FILE => {
                let number = p.varint64("oldest blob file")?;
                if oldest_blob_file.is_some() {
                    return Err(DecodeFailure::corrupt(
                        property_at,
                        "a second OLDEST_BLOB_FILE property in one NEW_FILE",
                    ));
                }
                oldest_blob_file = Some(number);
            }
            unknown if unknown & SAFE_TO_IGNORE != 0 => {
                p.rest();
            }
            unknown => return Err(unknown_tag(unknown, property_at, "NEW_FILE property tag")),
        }
        p.finish("NEW_FILE property")?;
    }
    Ok(NewFile {
        keyspace,
        level,
        meta: FileMetaData {
            number,
            size,
            smallest,
            largest,
            smallest_seqno,
            largest_seqno,
            num_entries,
            num_deletions,
            creation_time,
            oldest_entry_time,
            global_seqno,
            oldest_blob_file,
            pinned_table: PinnedTable::default(),
        },
    })
}

impl fmt::Display for DeletedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "keyspace {} L{} {:06}",
            self.keyspace, self.level, self.number
        )
    }
}

impl fmt::Display for DamagedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:06}.sst at offset {}: {}",
            self.number, self.offset, self.detail
        )
    }
}

impl fmt::Display for NewFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "keyspace {} L{} {}",
            self.keyspace, self.level, self.meta
        )
    }
}

/// One field a line, in tag order, as `shale tool manifest` prints an edit.
impl fmt::Display for VersionEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines: Vec<String> = Vec::new();
        if let Some(v) = self.manifest_format_version {
            lines.push(format!("manifest format version {v}"));
        }
        if let Some(name) = &self.comparator {
            lines.push(format!("comparator {}", printable(name.as_bytes())));
        }
        if let Some(n) = self.next_file_number {
            lines.push(format!("next file number {n}"));
        }
        if let Some(n) = self.last_sequence {
            lines.push(format!("last sequence {n}"));
        }
        if let Some(n) = self.max_keyspace_id {
            lines.push(format!("max keyspace id {n}"));
        }
        for (id, name) in &self.added_keyspaces {
            lines.push(format!("add keyspace {id} {}", printable(name.as_bytes())));
        }
        for d in &self.deleted_files {
            lines.push(format!("delete file {d}"));
        }
        for n in &self.new_files {
            lines.push(format!("new file {n}"));
        }
        for (keyspace, log_number) in &self.log_numbers {
            lines.push(format!("log number keyspace {keyspace}: {log_number}"));
        }
        for id in &self.dropped_keyspaces {
            lines.push(format!("drop keyspace {id}"));
        }
        for (log_number, end) in &self.wal_ends {
            lines.push(format!("wal end {log_number:06}.wal: {end}"));
        }
        if self.wals_tracked {
            lines.push("wals tracked".to_owned());
        }
        for (log_number, size) in &self.wal_synced {
            lines.push(format!("wal synced {log_number:06}.wal: {size}"));
        }
        for d in &self.damaged_files {
            lines.push(format!("damaged file {d}"));
        }
        for b in &self.blob_file_additions {
            lines.push(format!(
                "add blob file {:06} keyspace {} records {} bytes {}",
                b.number, b.keyspace, b.total_count, b.total_bytes
            ));
        }
        for (number, count, bytes) in &self.blob_file_garbage {
            lines.push(format!(
                "blob file garbage {number:06} +{count} records +{bytes} bytes"
            ));
        }
        for number in &self.deleted_blob_files {
            lines.push(format!("delete blob file {number:06}"));
        }
        if lines.is_empty() {
            return f.write_str("(empty edit)");
        }
        f.write_str(&lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use shale_sst::{InternalKey, ValueKind};

    fn meta(number: u64) -> FileMetaData {
        FileMetaData {
            number,
            size: 4096,
            smallest: InternalKey::new(b"a", 1, ValueKind::Value),
            largest: InternalKey::new(b"z", 9, ValueKind::Deletion),
            smallest_seqno: 1,
            largest_seqno: 9,
            num_entries: 10,
            num_deletions: 2,
            creation_time: Some(1_700_000_000),
            oldest_entry_time: Some(1_699_999_000),
            global_seqno: None,
            oldest_blob_file: Some(5),
            pinned_table: PinnedTable::default(),
        }
    }

    #[test]
    fn blob_fields_round_trip_and_print() {
        let mut edit = VersionEdit::default();
        edit.add_file(0, 1, meta(12));
        edit.add_blob_file(&BlobFileMeta {
            number: 11,
            keyspace: 0,
            total_count: 100,
            total_bytes: 500_000,
            garbage_count: 10,
            garbage_bytes: 50_000,
        });
        edit.add_blob_garbage(11, 5, 100);
        edit.add_blob_garbage(9, 1, 7);
        edit.delete_blob_file(8);
        assert_eq!(edit.blob_file_garbage, [(11, 15, 50_100), (9, 1, 7)]);
        let decoded = VersionEdit::decode(&edit.encode()).unwrap();
        assert_eq!(decoded, edit);
        assert_eq!(decoded.new_files[0].meta.oldest_blob_file, Some(5));
        let text = decoded.to_string();
        assert!(text.contains("add blob file 000011 keyspace 0 records 100 bytes 500000"));
        assert!(text.contains("blob file garbage 000011 +15 records +50100 bytes"));
        assert!(text.contains("delete blob file 000008"));
        assert!(text.contains("oldest-blob 000005"));
    }

    #[test]
    fn unknown_tags_skip_or_refuse() {
        let mut data = VersionEdit {
            next_file_number: Some(7),
            ..VersionEdit::default()
        }
        .encode();
        let mut ignorable = Vec::new();
        put_varint32(&mut ignorable, SAFE_TO_IGNORE | 5);
        put_bytes(&mut ignorable, b"future");
        data.extend_from_slice(&ignorable);
        let edit = VersionEdit::decode(&data).unwrap();
        assert_eq!(edit.next_file_number, Some(7));

        let mut refused = Vec::new();
        put_varint32(&mut refused, 99);
        put_bytes(&mut refused, b"");
        let err = VersionEdit::decode(&refused).unwrap_err();
        assert!(matches!(err, Error::NotSupported(_)), "{err}");
        assert!(err.to_string().contains("newer Shale"), "{err}");
    }

    #[test]
    fn duplicates_and_leftovers_are_corruption() {
        let one = VersionEdit {
            last_sequence: Some(3),
            ..VersionEdit::default()
        }
        .encode();
        let twice = [one.clone(), one].concat();
        let err = VersionEdit::decode(&twice).unwrap_err();
        assert!(err.is_corruption(), "{err}");

        let mut leftover = Vec::new();
        put_varint32(&mut leftover, tag::DROP_KEYSPACE);
        put_bytes(&mut leftover, &[1, 2]);
        let err = VersionEdit::decode(&leftover).unwrap_err();
        assert!(err.to_string().contains("left over"), "{err}");
    }

    #[test]
    fn header_only_first() {
        let header = VersionEdit {
            manifest_format_version: Some(1),
            ..VersionEdit::default()
        }
        .encode();
        let data = [
            VersionEdit {
                last_sequence: Some(1),
                ..VersionEdit::default()
            }
            .encode(),
            header,
        ]
        .concat();
        assert!(VersionEdit::decode(&data).unwrap_err().is_corruption());
    }

    #[test]
    fn new_file_round_trip_with_and_without_properties() {
        let mut edit = VersionEdit::new();
        edit.add_file(3, 2, meta(12));
        let mut plain = meta(13);
        plain.creation_time = None;
        plain.oldest_entry_time = None;
        edit.add_file(0, 0, plain);
        assert_eq!(VersionEdit::decode(&edit.encode()).unwrap(), edit);
        let text = edit.to_string();
        assert!(text.contains("new file keyspace 3 L2 000012"), "{text}");
    }

    #[test]
    fn wal_ends_round_trip_once_per_log() {
        let mut edit = VersionEdit::new();
        edit.set_wal_end(12, 4096);
        edit.set_wal_end(13, 0);
        edit.set_wal_end(12, 5000);
        assert_eq!(edit.wal_ends, [(12, 5000), (13, 0)]);
        let data = edit.encode();
        assert_eq!(VersionEdit::decode(&data).unwrap(), edit);
        assert!(edit.to_string().contains("wal end 000012.wal: 5000"));
        let mut twice = VersionEdit::new();
        twice.set_wal_end(12, 1);
        let twice = [twice.encode(), twice.encode()].concat();
        let err = VersionEdit::decode(&twice).unwrap_err();
        assert!(
            err.is_corruption() && err.to_string().contains("WAL_END"),
            "{err}"
        );
    }

    #[test]
    fn wal_synced_round_trips_once_per_log_and_keeps_the_largest() {
        let mut edit = VersionEdit::new();
        edit.set_wal_synced(12, 4096);
        edit.set_wal_synced(13, 31);
        edit.set_wal_synced(12, 100);
        assert_eq!(edit.wal_synced, [(12, 4096), (13, 31)]);
        assert_eq!(VersionEdit::decode(&edit.encode()).unwrap(), edit);
        assert!(edit.to_string().contains("wal synced 000012.wal: 4096"));
        assert_ne!(tag::WAL_SYNCED & SAFE_TO_IGNORE, 0);
        let mut again = VersionEdit::new();
        again.set_wal_synced(12, 1);
        let twice = [again.encode(), again.encode()].concat();
        let err = VersionEdit::decode(&twice).unwrap_err();
        assert!(
            err.is_corruption() && err.to_string().contains("WAL_SYNCED"),
            "{err}"
        );
    }

    #[test]
    fn wals_tracked_round_trips_and_is_skipped_as_unknown() {
        let edit = VersionEdit {
            wals_tracked: true,
            ..VersionEdit::new()
        };
        let data = edit.encode();
        assert_eq!(VersionEdit::decode(&data).unwrap(), edit);
        assert!(edit.to_string().contains("wals tracked"));
        // An older reader sees an unknown tag marked safe to ignore.
        assert_ne!(tag::WALS_TRACKED & SAFE_TO_IGNORE, 0);
        let err = VersionEdit::decode(&[data.clone(), data].concat()).unwrap_err();
        assert!(err.to_string().contains("WALS_TRACKED"), "{err}");
    }

    #[test]
    fn damaged_files_round_trip_once_per_file_and_are_skipped_as_unknown() {
        let mut edit = VersionEdit::new();
        edit.mark_damaged(12, 4096, "block checksum mismatch");
        edit.mark_damaged(13, 0, "bad footer");
        edit.mark_damaged(12, 100, "checksum mismatch");
        assert_eq!(edit.damaged_files.len(), 2);
        assert_eq!(edit.damaged_files[0].offset, 100);
        let data = edit.encode();
        assert_eq!(VersionEdit::decode(&data).unwrap(), edit);
        assert!(
            edit.to_string()
                .contains("damaged file 000012.sst at offset 100: checksum mismatch"),
            "{edit}"
        );
        // An older reader sees an unknown tag marked safe to ignore.
        assert_eq!(tag::DAMAGED_FILE, 8206);
        assert_ne!(tag::DAMAGED_FILE & SAFE_TO_IGNORE, 0);
        let mut once = VersionEdit::new();
        once.mark_damaged(12, 1, "x");
        let twice = [once.encode(), once.encode()].concat();
        let err = VersionEdit::decode(&twice).unwrap_err();
        assert!(
            err.is_corruption() && err.to_string().contains("DAMAGED_FILE"),
            "{err}"
        );
        let mut not_utf8 = Vec::new();
        put_varint32(&mut not_utf8, tag::DAMAGED_FILE);
        put_bytes(&mut not_utf8, &[12, 0, 0xff]);
        assert!(VersionEdit::decode(&not_utf8).unwrap_err().is_corruption());
    }

    #[test]
    fn record_errors_name_file_and_record() {
        let err =
            VersionEdit::decode_record(&[0], Path::new("/db/MANIFEST-000003"), 4096).unwrap_err();
        match err {
            Error::Corruption {
                file,
                offset,
                detail,
            } => {
                assert_eq!(file, Path::new("/db/MANIFEST-000003"));
                assert_eq!(offset, 4096);
                assert!(detail.contains("edit byte 0"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }
}
