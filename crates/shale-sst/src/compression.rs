//! Per-block compression (docs/format/sst.md, "Compression").
//!
//! [`Compression`] names a codec and owns its on-disk tag. A [`Compressor`] belongs to one
//! table writer and keeps reusable codec contexts; a [`Decompressor`] belongs to one open table
//! and is shared by every thread reading it.
//!
//! Invariants:
//! 1. Tags never change meaning: 0 none, 1 snappy, 2 zlib, 3 lz4, 4 zstd, 5 zstd + dictionary.
//! 2. Tags 2..=5 store `varint32 uncompressed_len` before the codec's bytes; snappy's raw
//!    format carries its own length.
//! 3. A block is stored with tag 0 unless compression saves at least one eighth of it
//!    (`compressed_len > raw_len - raw_len / 8` means "store raw"), where `compressed_len` is
//!    the stored length, prefix included.
//! 4. Decoding treats the stored bytes as untrusted: an uncompressed length above
//!    [`MAX_BLOCK_SIZE`] is refused before anything is allocated, output is written into a
//!    buffer of exactly the stated length, and an output of any other length, trailing input, an
//!    unknown tag or a codec error is a [`DecodeError`], never a panic.

use std::cell::RefCell;
use std::fmt;
use std::io::Cursor;
use std::str::FromStr;

use zstd::zstd_safe;

use crate::coding::{get_varint32, put_varint32};
use crate::error::{DecodeError, Error};
use crate::format::MAX_BLOCK_SIZE;

/// A block compression codec. The default is no compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Blocks are stored as they are.
    #[default]
    None,
    /// Snappy raw format.
    Snappy,
    /// zlib (RFC 1950) at a configurable level.
    Zlib,
    /// LZ4 block format.
    Lz4,
    /// One zstd frame per block, at a configurable level.
    Zstd,
    /// zstd with a dictionary trained for the file and stored in it.
    ZstdDict,
}

impl Compression {
    /// The on-disk tag of blocks compressed with this codec.
    pub fn tag(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Snappy => 1,
            Self::Zlib => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
            Self::ZstdDict => 5,
        }
    }

    /// Decodes an on-disk tag; `None` for a tag this build does not know.
    pub fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            0 => Some(Self::None),
            1 => Some(Self::Snappy),
            2 => Some(Self::Zlib),
            3 => Some(Self::Lz4),
            4 => Some(Self::Zstd),
            5 => Some(Self::ZstdDict),
            _ => None,
        }
    }

    /// The name used in options and in the `shale.compression` property.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Snappy => "snappy",
            Self::Zlib => "zlib",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
            Self::ZstdDict => "zstd-dict",
        }
    }

    /// Parses a name as written by [`Compression::name`] (`zstd_dict` is accepted too).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "snappy" => Some(Self::Snappy),
            "zlib" => Some(Self::Zlib),
            "lz4" => Some(Self::Lz4),
            "zstd" => Some(Self::Zstd),
            "zstd-dict" | "zstd_dict" => Some(Self::ZstdDict),
            _ => None,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::from_name(s).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "unknown compression {s:?}; expected one of none, snappy, zlib, lz4, zstd, \
                 zstd-dict"
            ))
        })
    }
}

/// The level a caller passes to mean "the codec's default".
pub(crate) const DEFAULT_LEVEL: i32 = i32::MIN;
const ZLIB_DEFAULT_LEVEL: i32 = 6;
const ZSTD_DEFAULT_LEVEL: i32 = 3;

/// The reusable state of one codec.
enum Codec {
    None,
    /// Boxed: the encoder carries a 2 KiB hash table.
    Snappy(Box<snap::raw::Encoder>),
    Zlib(flate2::Compress),
    /// The encoder's output buffer, kept at the codec's bound for the largest block seen so
    /// far: zero-filling it once instead of per block (the encoder writes only into an
    /// initialised slice) saves a memset of the bound, about 1.1 times the block, per block.
    Lz4 {
        scratch: Vec<u8>,
    },
    /// Plain zstd, or zstd with the dictionary loaded once into the context.
    Zstd(zstd::bulk::Compressor<'static>),
}

/// Compresses the blocks of one table. Not shared between threads: each writer owns one.
pub(crate) struct Compressor {
    kind: Compression,
    level: i32,
    codec: Codec,
}

impl fmt::Debug for Compressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compressor")
            .field("kind", &self.kind)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// A compressor for `kind`. `level` is used by zlib (clamped to 0..=9, default 6) and zstd
    /// (clamped to zstd's range, default 3) and ignored otherwise; [`DEFAULT_LEVEL`]
    /// (`i32::MIN`) selects the default. `dictionary` is required, and only used, for
    /// [`Compression::ZstdDict`].
    pub(crate) fn new(
        kind: Compression,
        level: i32,
        dictionary: Option<&[u8]>,
    ) -> Result<Compressor, Error> {
        // After this, zlib levels are in 0..=9 (so `unsigned_abs` below is the level itself).
        let level = match kind {
            Compression::None | Compression::Snappy | Compression::Lz4 => 0,
            Compression::Zlib if level == DEFAULT_LEVEL => ZLIB_DEFAULT_LEVEL,
            Compression::Zlib => level.clamp(0, 9),
            Compression::Zstd | Compression::ZstdDict if level == DEFAULT_LEVEL => {
                ZSTD_DEFAULT_LEVEL
            }
            Compression::Zstd | Compression::ZstdDict => {
                let range = zstd::compression_level_range();
                level.clamp(*range.start(), *range.end())
            }
        };
        let zstd_error = |e: std::io::Error| {
            Error::InvalidArgument(format!("cannot set up zstd at level {level}: {e}"))
        };
        let codec = match kind {
            Compression::None => Codec::None,
            Compression::Snappy => Codec::Snappy(Box::new(snap::raw::Encoder::new())),
            Compression::Zlib => Codec::Zlib(flate2::Compress::new(
                flate2::Compression::new(level.unsigned_abs()),
                true,
            )),
            Compression::Lz4 => Codec::Lz4 {
                scratch: Vec::new(),
            },
            Compression::Zstd => {
                Codec::Zstd(zstd::bulk::Compressor::new(level).map_err(zstd_error)?)
            }
            Compression::ZstdDict => {
                let dictionary = dictionary.filter(|d| !d.is_empty()).ok_or_else(|| {
                    Error::InvalidArgument(
                        "zstd-dict compression needs a non-empty dictionary".to_string(),
                    )
                })?;
                // Loading only copies the bytes; zstd digests them at the first frame. Digest
                // them now so that a bad dictionary is reported here instead of silently
                // turning every block into a raw one.
                if zstd_safe::CDict::try_create(dictionary, level).is_none() {
                    return Err(Error::InvalidArgument(format!(
                        "zstd rejected the {}-byte compression dictionary",
                        dictionary.len()
                    )));
                }
                Codec::Zstd(
                    zstd::bulk::Compressor::with_dictionary(level, dictionary)
                        .map_err(zstd_error)?,
                )
            }
        };
        Ok(Compressor { kind, level, codec })
    }

    /// The effective level (after defaults and clamping); 0 for codecs without levels.
    pub(crate) fn level(&self) -> i32 {
        self.level
    }

    /// Replaces `out` with the stored form of `raw` and returns its compression tag: the
    /// codec's tag, or 0 (with `out == raw`) when compression does not save an eighth or the
    /// codec is [`Compression::None`].
    ///
    /// Fails only for a block larger than [`MAX_BLOCK_SIZE`], which no reader would accept.
    pub(crate) fn compress(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<u8, Error> {
        out.clear();
        if raw.len() > MAX_BLOCK_SIZE {
            return Err(oversized_block(raw.len()));
        }
        let raw_len = raw.len() as u32;
        let limit = raw.len() - raw.len() / 8;
        // A codec failure is not an error for the table: storing the block raw is always
        // valid, and compression is only an optimisation.
        let compressed = match &mut self.codec {
            Codec::None => false,
            Codec::Snappy(encoder) => compress_snappy(encoder, raw, out),
            Codec::Zlib(context) => {
                put_varint32(out, raw_len);
                compress_zlib(context, raw, out, limit)
            }
            Codec::Lz4 { scratch } => {
                put_varint32(out, raw_len);
                compress_lz4(raw, scratch, out)
            }
            Codec::Zstd(compressor) => {
                put_varint32(out, raw_len);
                compress_zstd(compressor, raw, out)
            }
        };
        if compressed && out.len() <= limit {
            Ok(self.kind.tag())
        } else {
            out.clear();
            out.extend_from_slice(raw);
            Ok(0)
        }
    }
}

/// Compresses single values one at a time (the engine's blob files), with the same codecs,
/// tags and "store raw unless an eighth is saved" rule as blocks. A value above
/// [`MAX_BLOCK_SIZE`] is stored raw. [`Compression::ZstdDict`] is refused: a value has no
/// file-wide dictionary to refer to.
#[derive(Debug)]
pub struct ValueCompressor(Compressor);

impl ValueCompressor {
    /// A compressor for `kind` at the codec's default level.
    pub fn new(kind: Compression) -> Result<ValueCompressor, Error> {
        if kind == Compression::ZstdDict {
            return Err(Error::InvalidArgument(
                "zstd-dict cannot compress single values; use zstd".to_owned(),
            ));
        }
        Compressor::new(kind, DEFAULT_LEVEL, None).map(ValueCompressor)
    }

    /// Replaces `out` with the stored form of `raw` and returns its compression tag (0: raw).
    pub fn compress(&mut self, raw: &[u8], out: &mut Vec<u8>) -> u8 {
        if raw.len() > MAX_BLOCK_SIZE {
            out.clear();
            out.extend_from_slice(raw);
            return 0;
        }
        // Below the size limit the block compressor cannot fail.
        self.0.compress(raw, out).unwrap_or_else(|_| {
            out.clear();
            out.extend_from_slice(raw);
            0
        })
    }
}

/// The value stored with compression tag `tag` by a [`ValueCompressor`]: the same checks as a
/// block's (invariant 4), so untrusted bytes give a [`DecodeError`], never a panic.
pub fn decompress_value(tag: u8, stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
    if tag == Compression::ZstdDict.tag() {
        return Err(DecodeError::new(
            "a value compressed with zstd-dict: values never use a dictionary",
        ));
    }
    Decompressor::new(None)?.decompress(tag, stored)
}

fn oversized_block(len: usize) -> Error {
    Error::InvalidArgument(format!(
        "a block of {len} bytes exceeds the {} MiB block limit; no reader would accept it",
        MAX_BLOCK_SIZE >> 20
    ))
}

/// Appends `raw` in snappy raw format to `out`; false if the codec failed.
fn compress_snappy(encoder: &mut snap::raw::Encoder, raw: &[u8], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    out.resize(start + snap::raw::max_compress_len(raw.len()), 0);
    match encoder.compress(raw, &mut out[start..]) {
        Ok(n) => {
            out.truncate(start + n);
            true
        }
        Err(_) => false,
    }
}

/// The largest LZ4 scratch buffer a compressor keeps between blocks; a larger block (a large
/// blob value) gets a buffer of its own, so one outsized value does not pin its size.
const MAX_KEPT_LZ4_SCRATCH: usize = 1 << 20;

/// Appends `raw` as an LZ4 block to `out`, encoding into `scratch` (grown to the codec's
/// bound when too small, never shrunk, at most [`MAX_KEPT_LZ4_SCRATCH`]); false if the codec
/// failed.
fn compress_lz4(raw: &[u8], scratch: &mut Vec<u8>, out: &mut Vec<u8>) -> bool {
    let bound = lz4_flex::block::get_maximum_output_size(raw.len());
    let mut own = Vec::new();
    let buffer = if bound <= MAX_KEPT_LZ4_SCRATCH {
        if scratch.len() < bound {
            scratch.resize(bound, 0);
        }
        scratch
    } else {
        own.resize(bound, 0);
        &mut own
    };
    match lz4_flex::block::compress_into(raw, buffer) {
        Ok(n) => buffer.get(..n).is_some_and(|encoded| {
            out.extend_from_slice(encoded);
            true
        }),
        Err(_) => false,
    }
}

/// Appends `raw` as one zstd frame to `out`; false if the codec failed.
fn compress_zstd(
    compressor: &mut zstd::bulk::Compressor<'static>,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let start = out.len();
    out.reserve(zstd_safe::compress_bound(raw.len()));
    let mut cursor = Cursor::new(&mut *out);
    cursor.set_position(start as u64);
    compressor.compress_to_buffer(raw, &mut cursor).is_ok()
}

/// Appends `raw` as a zlib stream to `out`; false if the codec failed or the output grew past
/// `limit` (the block will be stored raw, so finishing the stream would be wasted work).
fn compress_zlib(
    context: &mut flate2::Compress,
    raw: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> bool {
    context.reset();
    // zlib's compressBound: enough for one call in practice; the loop covers the rest.
    out.reserve(raw.len() + (raw.len() >> 12) + (raw.len() >> 14) + 32);
    loop {
        let consumed = context.total_in() as usize;
        let Some(input) = raw.get(consumed..) else {
            return false;
        };
        let before = (context.total_in(), out.len());
        match context.compress_vec(input, out, flate2::FlushCompress::Finish) {
            Ok(flate2::Status::StreamEnd) => return true,
            Ok(flate2::Status::Ok | flate2::Status::BufError) => {}
            Err(_) => return false,
        }
        if out.len() > limit {
            return false;
        }
        if (context.total_in(), out.len()) == before && out.len() < out.capacity() {
            // No progress with room to spare: the codec is stuck.
            return false;
        }
        out.reserve(4096);
    }
}

thread_local! {
    /// One zstd decompression context per thread, reused by every table the thread reads.
    /// A context is about 94 KiB; creating one per 4 KiB block measured 16.7 us against 3.4 us
    /// with reuse.
    static ZSTD_CONTEXT: RefCell<Option<zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
    /// One inflate state per thread, for the same reason (a smaller saving: about 1.5 us of
    /// 11 us per 4 KiB block).
    static ZLIB_CONTEXT: RefCell<Option<flate2::Decompress>> = const { RefCell::new(None) };
}

/// Decompresses the blocks of one table. Shared by every thread reading the table: it holds only
/// the file's prepared zstd dictionary (if any); codec contexts are per thread.
pub(crate) struct Decompressor {
    dictionary: Option<zstd_safe::DDict<'static>>,
}

impl fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decompressor")
            .field("has_dictionary", &self.dictionary.is_some())
            .finish()
    }
}

impl Decompressor {
    /// A decompressor for a file with the given compression dictionary block, if any. The
    /// dictionary comes from the file, so a dictionary zstd cannot load is corruption.
    pub(crate) fn new(dictionary: Option<&[u8]>) -> Result<Decompressor, DecodeError> {
        let dictionary = match dictionary {
            None => None,
            Some([]) => {
                return Err(DecodeError::new(
                    "the compression dictionary block is empty",
                ));
            }
            Some(bytes) => Some(zstd_safe::DDict::try_create(bytes).ok_or_else(|| {
                DecodeError::new(format!(
                    "zstd cannot load the {}-byte compression dictionary",
                    bytes.len()
                ))
            })?),
        };
        Ok(Decompressor { dictionary })
    }

    /// Returns the block contents of a stored block with compression tag `tag`.
    pub(crate) fn decompress(&self, tag: u8, stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let kind = Compression::from_tag(tag)
            .ok_or_else(|| DecodeError::new(format!("unknown compression tag {tag}")))?;
        match kind {
            Compression::None => Ok(stored.to_vec()),
            Compression::Snappy => decompress_snappy(stored),
            Compression::Zlib => {
                let (len, payload) = split_length(kind, stored)?;
                decompress_zlib(len, payload)
            }
            Compression::Lz4 => {
                let (len, payload) = split_length(kind, stored)?;
                decompress_lz4(len, payload)
            }
            Compression::Zstd => {
                let (len, payload) = split_length(kind, stored)?;
                decompress_zstd(kind, len, payload, None)
            }
            Compression::ZstdDict => {
                let (len, payload) = split_length(kind, stored)?;
                let dictionary = self.dictionary.as_ref().ok_or_else(|| {
                    DecodeError::new("block compressed with a dictionary but the file has none")
                })?;
                decompress_zstd(kind, len, payload, Some(dictionary))
            }
        }
    }
}

/// Splits `varint32 uncompressed_len` off a stored block and checks it against the limit.
fn split_length(kind: Compression, stored: &[u8]) -> Result<(usize, &[u8]), DecodeError> {
    let (len, used) = get_varint32(stored)
        .map_err(|e| DecodeError::new(format!("{kind} block length prefix: {e}")))?;
    let len = len as usize;
    if len > MAX_BLOCK_SIZE {
        return Err(DecodeError::new(format!(
            "{kind} block states an uncompressed length of {len} bytes, above the {} MiB limit",
            MAX_BLOCK_SIZE >> 20
        )));
    }
    Ok((len, stored.get(used..).unwrap_or_default()))
}

fn codec_error(kind: Compression, error: &dyn fmt::Display) -> DecodeError {
    DecodeError::new(format!("{kind} block does not decompress: {error}"))
}

fn check_length(kind: Compression, stated: usize, actual: usize) -> Result<(), DecodeError> {
    if stated == actual {
        Ok(())
    } else {
        Err(DecodeError::new(format!(
            "{kind} block states {stated} uncompressed bytes but holds {actual}"
        )))
    }
}

/// The `len` bytes an LZ4 block `payload` holds. The crate's safe decoder (feature
/// `safe-decode`, no unsafe code on untrusted bytes) writes into a slice of exactly `len` bytes
/// and refuses input that would write past it, read past the payload or refer before the
/// output's start (matches refer to bytes it wrote, never to what the slice held before). The
/// slice is a recycled block buffer (`crate::buffer_pool`), so a miss neither allocates nor
/// zero-fills; whatever it held is overwritten, as a result is accepted only when the decoder
/// wrote all `len` bytes. Its other decoder skips the zero fill but took more instructions on
/// our blocks (docs/dependencies.md).
fn decompress_lz4(len: usize, payload: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let kind = Compression::Lz4;
    let mut out = crate::buffer_pool::take(len);
    let checked = lz4_flex::block::decompress_into(payload, &mut out)
        .map_err(|e| codec_error(kind, &e))
        .and_then(|written| check_length(kind, len, written));
    match checked {
        Ok(()) => Ok(out),
        Err(e) => {
            crate::buffer_pool::recycle(out);
            Err(e)
        }
    }
}

fn decompress_snappy(stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let kind = Compression::Snappy;
    let len = snap::raw::decompress_len(stored).map_err(|e| codec_error(kind, &e))?;
    if len > MAX_BLOCK_SIZE {
        return Err(DecodeError::new(format!(
            "snappy block states an uncompressed length of {len} bytes, above the {} MiB limit",
            MAX_BLOCK_SIZE >> 20
        )));
    }
    let mut out = vec![0; len];
    let n = snap::raw::Decoder::new()
        .decompress(stored, &mut out)
        .map_err(|e| codec_error(kind, &e))?;
    check_length(kind, len, n)?;
    Ok(out)
}

fn decompress_zstd(
    kind: Compression,
    len: usize,
    payload: &[u8],
    dictionary: Option<&zstd_safe::DDict<'static>>,
) -> Result<Vec<u8>, DecodeError> {
    // Exactly the stated capacity: a frame holding more fails with "destination too small".
    let mut out = Vec::with_capacity(len);
    let result = ZSTD_CONTEXT.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = zstd_safe::DCtx::try_create();
        }
        let Some(context) = slot.as_mut() else {
            return Err("cannot allocate a zstd context".to_string());
        };
        let result = match dictionary {
            Some(dictionary) => context.decompress_using_ddict(&mut out, payload, dictionary),
            None => context.decompress(&mut out, payload),
        };
        result.map_err(|code| zstd_safe::get_error_name(code).to_string())
    });
    let n = result.map_err(|e| codec_error(kind, &e))?;
    check_length(kind, len, n)?;
    check_length(kind, len, out.len())?;
    Ok(out)
}

fn decompress_zlib(len: usize, payload: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let kind = Compression::Zlib;
    // Exactly the stated capacity: the stream must end within it, so a stream holding more
    // never reaches its end and is reported below.
    let mut out = Vec::with_capacity(len);
    let status = ZLIB_CONTEXT.with(|cell| {
        let mut slot = cell.borrow_mut();
        let context = slot.get_or_insert_with(|| flate2::Decompress::new(true));
        context.reset(true);
        let status = context.decompress_vec(payload, &mut out, flate2::FlushDecompress::Finish);
        status.map(|s| (s, context.total_in()))
    });
    match status {
        Ok((flate2::Status::StreamEnd, consumed)) => {
            if consumed != payload.len() as u64 {
                return Err(DecodeError::new(format!(
                    "zlib block has {} bytes after the end of its stream",
                    payload.len() as u64 - consumed
                )));
            }
            check_length(kind, len, out.len())?;
            Ok(out)
        }
        Ok(_) if out.len() == len => Err(DecodeError::new(format!(
            "zlib block holds more than the {len} uncompressed bytes it states"
        ))),
        Ok(_) => Err(DecodeError::new(format!(
            "zlib block is truncated: its stream ends after {} of {len} bytes",
            out.len()
        ))),
        Err(e) => Err(codec_error(kind, &e)),
    }
}

/// Trains a zstd dictionary of at most `max_size` bytes on sample block contents.
pub fn train_zstd_dictionary(samples: &[&[u8]], max_size: usize) -> Result<Vec<u8>, Error> {
    zstd::dict::from_samples(samples, max_size).map_err(|e| {
        Error::InvalidArgument(format!(
            "cannot train a zstd dictionary from {} samples: {e}",
            samples.len()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const ALL: [Compression; 6] = [
        Compression::None,
        Compression::Snappy,
        Compression::Zlib,
        Compression::Lz4,
        Compression::Zstd,
        Compression::ZstdDict,
    ];

    /// JSON-like records: similar structure, varying values.
    fn record(rng: &mut StdRng, i: usize) -> String {
        let names = ["alice", "bob", "carol", "dave", "erin", "frank", "grace"];
        let cities = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Accra"];
        format!(
            r#"{{"id":{i},"user":"{}","email":"{}{}@example.com","city":"{}","active":{},"score":{},"tags":["t{}","t{}"]}}"#,
            names[rng.gen_range(0..names.len())],
            names[rng.gen_range(0..names.len())],
            rng.gen_range(0..1000),
            cities[rng.gen_range(0..cities.len())],
            rng.gen_bool(0.5),
            rng.gen_range(0..100_000),
            rng.gen_range(0..20),
            rng.gen_range(0..20),
        )
    }

    fn dictionary() -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(7);
        let samples: Vec<String> = (0..2000).map(|i| record(&mut rng, i)).collect();
        let refs: Vec<&[u8]> = samples.iter().map(String::as_bytes).collect();
        train_zstd_dictionary(&refs, 8 << 10).unwrap()
    }

    fn compressible(len: usize) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(len as u64);
        let mut out = Vec::with_capacity(len + 200);
        let mut i = 0;
        while out.len() < len {
            out.extend_from_slice(record(&mut rng, i).as_bytes());
            i += 1;
        }
        out.truncate(len);
        out
    }

    fn random(len: usize) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(99);
        (0..len).map(|_| rng.gen()).collect()
    }

    fn setup(kind: Compression, dict: &[u8]) -> (Compressor, Decompressor) {
        let with_dict = kind == Compression::ZstdDict;
        let compressor = Compressor::new(kind, DEFAULT_LEVEL, with_dict.then_some(dict)).unwrap();
        let decompressor = Decompressor::new(with_dict.then_some(dict)).unwrap();
        (compressor, decompressor)
    }

    #[test]
    fn names_and_tags_round_trip() {
        for (i, kind) in ALL.into_iter().enumerate() {
            assert_eq!(kind.tag() as usize, i);
            assert_eq!(Compression::from_tag(kind.tag()), Some(kind));
            assert_eq!(Compression::from_name(kind.name()), Some(kind));
            assert_eq!(kind.to_string().parse::<Compression>().unwrap(), kind);
        }
        assert_eq!(
            Compression::from_name("zstd_dict"),
            Some(Compression::ZstdDict)
        );
        assert_eq!(Compression::from_tag(6), None);
        assert!("gzip".parse::<Compression>().is_err());
        assert_eq!(Compression::default(), Compression::None);
    }

    #[test]
    fn levels_are_defaulted_and_clamped() {
        let level =
            |kind, level| Compressor::new(kind, level, Some(b"dict".as_slice())).map(|c| c.level());
        assert_eq!(level(Compression::Zlib, DEFAULT_LEVEL).unwrap(), 6);
        assert_eq!(level(Compression::Zlib, 42).unwrap(), 9);
        assert_eq!(level(Compression::Zlib, -3).unwrap(), 0);
        assert_eq!(level(Compression::Zstd, DEFAULT_LEVEL).unwrap(), 3);
        assert_eq!(
            level(Compression::Zstd, 1000).unwrap(),
            *zstd::compression_level_range().end()
        );
        assert_eq!(level(Compression::Lz4, 12).unwrap(), 0);
        assert!(Compressor::new(Compression::ZstdDict, 3, None).is_err());
        assert!(Compressor::new(Compression::ZstdDict, 3, Some(&[])).is_err());
    }

    #[test]
    fn every_codec_round_trips() {
        let dict = dictionary();
        let mut out = Vec::new();
        for kind in ALL {
            let (mut compressor, decompressor) = setup(kind, &dict);
            for len in [1usize, 7, 100, 1000, 4096, 4097, 65_536, 1 << 20] {
                let raw = compressible(len);
                let tag = compressor.compress(&raw, &mut out).unwrap();
                if kind == Compression::None || len < 8 {
                    assert_eq!(tag, 0, "{kind} len {len}");
                } else if len >= 1000 {
                    assert_eq!(tag, kind.tag(), "{kind} len {len}");
                } else {
                    // Below a few records, whether an eighth is saved depends on the codec.
                    assert!(tag == 0 || tag == kind.tag(), "{kind} len {len}");
                }
                if tag != 0 {
                    assert!(out.len() <= raw.len() - raw.len() / 8);
                }
                if tag == 0 {
                    assert_eq!(out, raw);
                }
                assert_eq!(
                    decompressor.decompress(tag, &out).unwrap(),
                    raw,
                    "{kind} len {len}"
                );
            }
        }
    }

    #[test]
    fn incompressible_and_empty_input_are_stored_raw() {
        let dict = dictionary();
        let mut out = vec![1, 2, 3];
        for kind in ALL {
            let (mut compressor, decompressor) = setup(kind, &dict);
            for raw in [random(4096), random(100), Vec::new()] {
                assert_eq!(compressor.compress(&raw, &mut out).unwrap(), 0, "{kind}");
                assert_eq!(out, raw);
                assert_eq!(decompressor.decompress(0, &out).unwrap(), raw);
            }
        }
    }

    #[test]
    fn one_eighth_rule_boundary() {
        // A block of 8 random bytes then zeros: find, for lz4, a size where the result lands
        // exactly on the limit and one where it is one byte over, and check both decisions.
        let mut compressor = Compressor::new(Compression::Lz4, DEFAULT_LEVEL, None).unwrap();
        let mut out = Vec::new();
        let (mut at_limit, mut over_limit) = (false, false);
        for len in 8..400 {
            let mut raw = random(len);
            for b in raw.iter_mut().skip(len * 3 / 4) {
                *b = 0;
            }
            let mut stored = Vec::new();
            put_varint32(&mut stored, len as u32);
            stored.extend_from_slice(&lz4_flex::block::compress(&raw));
            let limit = len - len / 8;
            let tag = compressor.compress(&raw, &mut out).unwrap();
            if stored.len() == limit {
                at_limit = true;
                assert_eq!(tag, 3, "len {len}: exactly an eighth saved must compress");
                assert_eq!(out, stored);
            } else if stored.len() == limit + 1 {
                over_limit = true;
                assert_eq!(
                    tag, 0,
                    "len {len}: one byte short of an eighth must store raw"
                );
            } else {
                assert_eq!(tag == 3, stored.len() <= limit, "len {len}");
            }
        }
        assert!(at_limit && over_limit, "boundary cases not reached");
    }

    #[test]
    fn corrupted_blocks_are_errors_for_every_tag() {
        let dict = dictionary();
        let raw = compressible(4096);
        let mut out = Vec::new();
        let mut rng = StdRng::seed_from_u64(1);
        for kind in ALL.into_iter().skip(1) {
            let (mut compressor, decompressor) = setup(kind, &dict);
            let tag = compressor.compress(&raw, &mut out).unwrap();
            assert_eq!(tag, kind.tag());
            // Every truncation is an error (none of them can yield exactly `raw`).
            for cut in 0..out.len() {
                assert!(
                    decompressor.decompress(tag, &out[..cut]).is_err(),
                    "{kind} cut {cut}"
                );
            }
            // A byte of trailing garbage.
            let mut longer = out.clone();
            longer.push(0);
            assert!(
                decompressor.decompress(tag, &longer).is_err(),
                "{kind} trailing byte"
            );
            // Random byte flips: never a panic, and never a silent wrong length.
            for _ in 0..2000 {
                let mut bad = out.clone();
                for _ in 0..rng.gen_range(1..4) {
                    let at = rng.gen_range(0..bad.len());
                    bad[at] ^= rng.gen_range(1..=255u8);
                }
                if let Ok(result) = decompressor.decompress(tag, &bad) {
                    assert_eq!(result.len(), raw.len(), "{kind}");
                }
            }
            // Stated lengths above the limit, or off by one, are refused.
            let payload_start = if kind == Compression::Snappy {
                snap_header_len(&out)
            } else {
                get_varint32(&out).unwrap().1
            };
            for stated in [
                raw.len() as u32 - 1,
                raw.len() as u32 + 1,
                (MAX_BLOCK_SIZE + 1) as u32,
                u32::MAX,
            ] {
                let mut bad = Vec::new();
                put_varint32(&mut bad, stated);
                bad.extend_from_slice(&out[payload_start..]);
                let err = decompressor.decompress(tag, &bad).unwrap_err();
                assert!(!err.0.is_empty(), "{kind} stated {stated}");
            }
        }
        assert!(Decompressor::new(None)
            .unwrap()
            .decompress(9, b"abc")
            .is_err());
    }

    /// Payloads that pass the block checksum but are not valid LZ4 for their stated length:
    /// each must be a decompression error (never a panic, never a block of another length).
    #[test]
    fn garbage_lz4_payloads_are_errors() {
        // Enough trailing bytes that the decoder takes its fast path for the first sequence.
        let padded = |head: &[u8]| {
            let mut payload = head.to_vec();
            payload.resize(head.len() + 40, 0);
            payload
        };
        let crafted: [(&str, usize, Vec<u8>); 10] = [
            ("empty payload", 10, Vec::new()),
            ("literals past the input", 10, vec![0x50, b'a', b'b']),
            (
                "literal length bytes past the input",
                300,
                vec![0xf0, 255, 255],
            ),
            (
                "literals past the stated length",
                2,
                vec![0x50, b'a', b'b', b'c', b'd', b'e'],
            ),
            ("match offset zero", 100, padded(&[0x10, b'a', 0, 0])),
            (
                "match offset before the output",
                100,
                padded(&[0x10, b'a', 5, 0]),
            ),
            (
                "match offset zero, last sequence",
                10,
                vec![0x10, b'a', 0, 0],
            ),
            ("match offset cut short", 10, vec![0x10, b'a', 1]),
            // 'a', then a match of 4 + 15 + 255 bytes: more than the 30 stated.
            (
                "match past the stated length",
                30,
                vec![0x1f, b'a', 1, 0, 255, 0, 0x00],
            ),
            ("match with no last literals", 5, vec![0x10, b'a', 1, 0]),
        ];
        for (what, len, payload) in &crafted {
            let result = decompress_lz4(*len, payload);
            assert!(result.is_err(), "{what}: {result:?}");
        }

        let raw = compressible(4096);
        let stored = lz4_flex::block::compress(&raw);
        assert_eq!(decompress_lz4(raw.len(), &stored).unwrap(), raw);
        // Stated lengths other than the real one.
        for len in [0, 1, raw.len() - 1, raw.len() + 1, 2 * raw.len()] {
            assert!(decompress_lz4(len, &stored).is_err(), "stated {len}");
        }
        // Every truncation of a valid block.
        for cut in 0..stored.len() {
            assert!(
                decompress_lz4(raw.len(), &stored[..cut]).is_err(),
                "cut {cut}"
            );
        }
        // Random bytes, and a valid block with a random tail, at random stated lengths: an
        // error, or exactly the stated number of bytes.
        let mut rng = StdRng::seed_from_u64(7);
        for round in 0..20_000 {
            let mut payload: Vec<u8> = if round % 2 == 0 {
                (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect()
            } else {
                stored[..rng.gen_range(0..stored.len())].to_vec()
            };
            payload.extend((0..rng.gen_range(0..64)).map(|_| rng.gen::<u8>()));
            let len = rng.gen_range(0..8192);
            if let Ok(out) = decompress_lz4(len, &payload) {
                assert_eq!(out.len(), len, "round {round}");
            }
        }
    }

    /// A block decoded into a recycled buffer holds only its own bytes, whatever the buffer
    /// held before, and a failed decode hands back no buffer contents.
    #[test]
    fn recycled_buffers_do_not_leak_into_lz4_blocks() {
        let raw = compressible(4096);
        let stored = lz4_flex::block::compress(&raw);
        for _ in 0..4 {
            crate::buffer_pool::recycle(vec![0xee; 8192]);
        }
        for len in [raw.len(), 100] {
            let result = decompress_lz4(len, &stored);
            if len == raw.len() {
                assert_eq!(result.unwrap(), raw);
            } else {
                assert!(result.is_err());
            }
        }
        // Short output: the stated length is longer than what the payload writes.
        crate::buffer_pool::recycle(vec![0xee; 8192]);
        assert!(decompress_lz4(raw.len() + 7, &stored).is_err());
        let small = compressible(300);
        let out = decompress_lz4(small.len(), &lz4_flex::block::compress(&small)).unwrap();
        assert_eq!(out, small);
    }

    fn snap_header_len(stored: &[u8]) -> usize {
        get_varint32(stored).unwrap().1
    }

    #[test]
    fn dictionary_block_without_dictionary_is_an_error() {
        let dict = dictionary();
        let (mut compressor, _) = setup(Compression::ZstdDict, &dict);
        let raw = compressible(4096);
        let mut out = Vec::new();
        assert_eq!(compressor.compress(&raw, &mut out).unwrap(), 5);
        let plain = Decompressor::new(None).unwrap();
        let err = plain.decompress(5, &out).unwrap_err();
        assert!(err.0.contains("dictionary but the file has none"), "{err}");
        // Decoding a dictionary frame as plain zstd fails too (the frame names its dictionary).
        assert!(plain.decompress(4, &out).is_err());
        assert!(Decompressor::new(Some(&[])).is_err());
    }

    #[test]
    fn dictionary_shrinks_small_similar_records() {
        let dict = dictionary();
        let mut rng = StdRng::seed_from_u64(12_345);
        let (mut with_dict, decompressor) = setup(Compression::ZstdDict, &dict);
        let mut plain = Compressor::new(Compression::Zstd, DEFAULT_LEVEL, None).unwrap();
        let (mut dict_total, mut plain_total, mut raw_total) = (0, 0, 0);
        let mut out = Vec::new();
        for i in 0..500 {
            // Small blocks of two records each, as with tiny block sizes or hot data.
            let raw = format!(
                "{}{}",
                record(&mut rng, 10_000 + i),
                record(&mut rng, 20_000 + i)
            );
            let tag = with_dict.compress(raw.as_bytes(), &mut out).unwrap();
            assert_eq!(decompressor.decompress(tag, &out).unwrap(), raw.as_bytes());
            dict_total += out.len();
            plain.compress(raw.as_bytes(), &mut out).unwrap();
            plain_total += out.len();
            raw_total += raw.len();
        }
        println!("raw {raw_total} B, zstd {plain_total} B, zstd-dict {dict_total} B");
        assert!(
            dict_total * 10 < plain_total * 7,
            "dictionary saved too little: {dict_total} vs {plain_total}"
        );
    }

    #[test]
    fn decompressor_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Decompressor>();
        let dict = dictionary();
        let (mut compressor, decompressor) = setup(Compression::ZstdDict, &dict);
        let raw = compressible(4096);
        let mut out = Vec::new();
        let tag = compressor.compress(&raw, &mut out).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..200 {
                        assert_eq!(decompressor.decompress(tag, &out).unwrap(), raw);
                    }
                });
            }
        });
    }

    #[test]
    fn oversized_blocks_are_refused() {
        let mut compressor = Compressor::new(Compression::Lz4, DEFAULT_LEVEL, None).unwrap();
        let raw = vec![0u8; MAX_BLOCK_SIZE + 1];
        assert!(matches!(
            compressor.compress(&raw, &mut Vec::new()),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    #[ignore = "timing; run with --ignored --nocapture in release"]
    fn decompression_speed() {
        let dict = dictionary();
        let raw = compressible(4096);
        let mut out = Vec::new();
        for kind in ALL {
            let (mut compressor, decompressor) = setup(kind, &dict);
            let tag = compressor.compress(&raw, &mut out).unwrap();
            let rounds = 20_000;
            let start = std::time::Instant::now();
            for _ in 0..rounds {
                std::hint::black_box(decompressor.decompress(tag, &out).unwrap());
            }
            let decode = start.elapsed() / rounds;
            let start = std::time::Instant::now();
            let mut scratch = Vec::new();
            for _ in 0..rounds {
                std::hint::black_box(compressor.compress(&raw, &mut scratch).unwrap());
            }
            let encode = start.elapsed() / rounds;
            println!(
                "{kind:>9}: 4 KiB -> {:>4} B, compress {encode:?}, decompress {decode:?}",
                out.len()
            );
        }
    }
}
