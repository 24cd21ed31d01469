//! The compressed protocol (CLIENT_COMPRESS, zlib, or CLIENT_ZSTD_COMPRESSION_ALGORITHM,
//! zstd; MySQL "Compression"): once a client that set one of them has logged in (the
//! authentication's OK itself is plain), every byte in both directions travels inside
//! compressed packets:
//!
//! ```text
//! int<3> length of the payload below, int<1> compressed sequence id,
//! int<3> length after decompression (0: the payload is not compressed), payload
//! ```
//!
//! The payload is a piece of the ordinary packet stream (packets with their own 4-byte
//! headers): one compressed packet may hold several MySQL packets, and one MySQL packet may
//! span several compressed packets. A compressed payload is one complete zlib stream
//! (RFC 1950), or one zstd frame. [`Compression`] sits between the connection's transport and its packet
//! reader and writer, so the packet code (codec.rs, results.rs) is the same with or without
//! compression.
//!
//! Invariants:
//! 1. Sequence ids: the compressed packets of a command, in both directions, carry 0, 1, 2,
//!    ... (mod 256): the client's first one is 0 ([`Compression::new_command`]), and each
//!    packet read or written takes the next. A compressed packet read out of order is an
//!    error (the connection closes). The inner packets' ids are not checked, as MySQL does
//!    not check them under compression.
//! 2. Each flush of the writer sends what was written since the last one as compressed
//!    packets of at most 16 MiB - 1 uncompressed bytes each; payloads under
//!    [`MIN_COMPRESS_LENGTH`] bytes, and payloads zlib does not shrink, go uncompressed.
//! 3. Reading never allocates more than 16 MiB - 1 bytes for one compressed packet's payload
//!    and as much for its decompressed form, whatever the header says: a payload that
//!    inflates to more or less than its header's length is an error.
//! 4. Buffers grown past [`KEEP_CAPACITY`] by a large packet are given back once drained,
//!    and between commands ([`Compression::new_command`]) the codec states and every buffer
//!    past [`IDLE_CAPACITY`] go too, so an idle compressed connection costs about what a
//!    plain one does (MySQL likewise makes zlib's state per packet). The price is making
//!    the states again for each command that compresses something (about 300 KiB for zlib,
//!    allocated and partly initialized).

use std::io::{self, Read, Write};

use flate2::{Compress, Decompress, FlushCompress, FlushDecompress, Status};

/// The largest payload (and uncompressed length) one compressed packet carries.
pub const MAX_COMPRESSED_CHUNK: usize = 0xFF_FFFF;

/// Payloads shorter than this go uncompressed: zlib would not shrink them (MySQL's
/// `MIN_COMPRESS_LENGTH`, 50).
pub const MIN_COMPRESS_LENGTH: usize = 50;

/// Buffer capacity kept between packets of a command.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Buffer capacity kept while the connection waits for its next command.
const IDLE_CAPACITY: usize = 4 * 1024;

const HEADER: usize = 7;

/// Which compression a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    #[default]
    Zlib,
    /// zstd at this level (1 to 22).
    Zstd(u8),
}

impl Algorithm {
    /// The name MySQL's `Compression_algorithm` status variable shows.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Zlib => "zlib",
            Algorithm::Zstd(_) => "zstd",
        }
    }

    /// The level (`Compression_level`): zlib's is 6, MySQL's default.
    pub fn level(self) -> u8 {
        match self {
            Algorithm::Zlib => 6,
            Algorithm::Zstd(level) => level,
        }
    }
}

/// A connection's compression state: the sequence id, the inflated bytes not yet read, the
/// bytes written since the last flush, and the codec states (made on first use).
#[derive(Default)]
pub struct Compression {
    algorithm: Algorithm,
    seq: u8,
    inbound: Vec<u8>,
    inbound_pos: usize,
    outbound: Vec<u8>,
    /// One compressed packet's payload, read or being written.
    scratch: Vec<u8>,
    deflate: Option<Box<Compress>>,
    inflate: Option<Box<Decompress>>,
    zstd_compress: Option<zstd::bulk::Compressor<'static>>,
    zstd_decompress: Option<zstd::bulk::Decompressor<'static>>,
}

impl std::fmt::Debug for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compression")
            .field("seq", &self.seq)
            .field("inbound", &(self.inbound.len() - self.inbound_pos))
            .field("outbound", &self.outbound.len())
            .finish_non_exhaustive()
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("compressed protocol: {what}"),
    )
}

fn u24(v: usize) -> [u8; 3] {
    debug_assert!(v <= MAX_COMPRESSED_CHUNK);
    let b = (v as u32).to_le_bytes();
    [b[0], b[1], b[2]]
}

fn shrink(buf: &mut Vec<u8>) {
    if buf.capacity() > KEEP_CAPACITY {
        *buf = Vec::new();
    }
}

impl Compression {
    pub fn new(algorithm: Algorithm) -> Self {
        Compression {
            algorithm,
            ..Compression::default()
        }
    }

    /// A command starts: the client's next compressed packet carries sequence id 0. The
    /// connection may now wait a long time, so it lets go of its codec states and large
    /// buffers (invariant 4).
    pub fn new_command(&mut self) {
        self.seq = 0;
        self.deflate = None;
        self.inflate = None;
        self.zstd_compress = None;
        self.zstd_decompress = None;
        for buf in [&mut self.outbound, &mut self.scratch] {
            if buf.capacity() > IDLE_CAPACITY {
                *buf = Vec::new();
            }
        }
        if self.inbound_pos == self.inbound.len() && self.inbound.capacity() > IDLE_CAPACITY {
            self.inbound = Vec::new();
            self.inbound_pos = 0;
        }
    }

    /// Reads inflated bytes into `buf`, reading and inflating the next compressed packet
    /// from `inner` when none are left; 0 at the end of the stream between packets.
    pub fn read<R: Read + ?Sized>(&mut self, inner: &mut R, buf: &mut [u8]) -> io::Result<usize> {
        while self.inbound_pos == self.inbound.len() {
            shrink(&mut self.inbound);
            self.inbound.clear();
            self.inbound_pos = 0;
            if !self.read_packet(inner)? {
                return Ok(0);
            }
        }
        let available = &self.inbound[self.inbound_pos..];
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.inbound_pos += n;
        Ok(n)
    }

    /// Reads one compressed packet into `inbound`; false at a clean end of stream.
    fn read_packet<R: Read + ?Sized>(&mut self, inner: &mut R) -> io::Result<bool> {
        let mut header = [0u8; HEADER];
        let n = loop {
            match inner.read(&mut header[..1]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other?,
            }
        };
        if n == 0 {
            return Ok(false);
        }
        inner.read_exact(&mut header[1..])?;
        let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let inflated = u32::from_le_bytes([header[4], header[5], header[6], 0]) as usize;
        if header[3] != self.seq {
            return Err(invalid(&format!(
                "packet out of order: sequence id {}, expected {}",
                header[3], self.seq
            )));
        }
        self.seq = self.seq.wrapping_add(1);
        if inflated == 0 {
            self.inbound.resize(length, 0);
            inner.read_exact(&mut self.inbound)?;
            return Ok(true);
        }
        self.scratch.clear();
        self.scratch.resize(length, 0);
        inner.read_exact(&mut self.scratch)?;
        self.inbound.reserve_exact(inflated);
        let whole = match self.algorithm {
            Algorithm::Zlib => self.inflate_zlib(length, inflated)?,
            Algorithm::Zstd(_) => self.inflate_zstd(inflated)?,
        };
        if !whole {
            return Err(invalid(&format!(
                "a payload of {length} bytes does not inflate to the {inflated} bytes its \
                 header says"
            )));
        }
        shrink(&mut self.scratch);
        Ok(true)
    }

    /// Inflates `scratch` (a zlib stream) into `inbound`; false unless it is exactly
    /// `inflated` bytes.
    fn inflate_zlib(&mut self, length: usize, inflated: usize) -> io::Result<bool> {
        let inflate = self
            .inflate
            .get_or_insert_with(|| Box::new(Decompress::new(true)));
        inflate.reset(true);
        let status = inflate
            .decompress_vec(&self.scratch, &mut self.inbound, FlushDecompress::Finish)
            .map_err(|e| invalid(&format!("bad zlib data: {e}")))?;
        // Room for exactly `inflated` bytes was reserved, so more output stops short of the
        // stream's end; `total_in` catches bytes after it.
        Ok(status == Status::StreamEnd
            && self.inbound.len() == inflated
            && inflate.total_in() == length as u64)
    }

    /// Inflates `scratch` (a zstd frame) into `inbound`, which is empty (zstd writes a Vec
    /// from its start); false unless it is exactly `inflated` bytes (zstd refuses to write
    /// past the room reserved for them).
    fn inflate_zstd(&mut self, inflated: usize) -> io::Result<bool> {
        if self.zstd_decompress.is_none() {
            self.zstd_decompress = Some(zstd::bulk::Decompressor::new()?);
        }
        let Some(decompress) = self.zstd_decompress.as_mut() else {
            return Ok(false);
        };
        debug_assert!(self.inbound.is_empty());
        let n = decompress
            .decompress_to_buffer(&self.scratch, &mut self.inbound)
            .map_err(|e| invalid(&format!("bad zstd data: {e}")))?;
        Ok(n == inflated && self.inbound.len() == inflated)
    }

    /// Takes bytes to send at the next flush.
    pub fn write(&mut self, buf: &[u8]) {
        self.outbound.extend_from_slice(buf);
    }

    /// Sends what was written since the last flush as compressed packets to `inner`.
    pub fn flush<W: Write + ?Sized>(&mut self, inner: &mut W) -> io::Result<()> {
        if self.outbound.is_empty() {
            return inner.flush();
        }
        let mut framed = std::mem::take(&mut self.scratch);
        framed.clear();
        let outbound = std::mem::take(&mut self.outbound);
        for chunk in outbound.chunks(MAX_COMPRESSED_CHUNK) {
            self.frame(chunk, &mut framed);
        }
        let written = inner.write_all(&framed).and_then(|()| inner.flush());
        self.outbound = outbound;
        self.outbound.clear();
        shrink(&mut self.outbound);
        self.scratch = framed;
        shrink(&mut self.scratch);
        written
    }

    /// Appends `chunk` as one zlib stream to `out` (within its spare capacity); false if it
    /// did not fit.
    fn deflate_zlib(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> bool {
        let deflate = self
            .deflate
            .get_or_insert_with(|| Box::new(Compress::new(flate2::Compression::default(), true)));
        deflate.reset();
        matches!(
            deflate.compress_vec(chunk, out, FlushCompress::Finish),
            Ok(Status::StreamEnd)
        )
    }

    /// Appends `chunk` as one zstd frame to `out` (within its spare capacity); false if it
    /// did not fit or zstd failed.
    fn deflate_zstd(&mut self, level: u8, chunk: &[u8], out: &mut Vec<u8>) -> bool {
        if self.zstd_compress.is_none() {
            self.zstd_compress = zstd::bulk::Compressor::new(i32::from(level)).ok();
        }
        let Some(compress) = self.zstd_compress.as_mut() else {
            return false;
        };
        // zstd writes a Vec from its start, so it gets the slice after what `out` holds.
        let start = out.len();
        out.resize(start + chunk.len(), 0);
        if let Ok(n) = compress.compress_to_buffer(chunk, &mut out[start..]) {
            out.truncate(start + n);
            true
        } else {
            out.truncate(start);
            false
        }
    }

    /// Appends one compressed packet carrying `chunk` to `out`.
    fn frame(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; HEADER]);
        let mut inflated = 0;
        if chunk.len() >= MIN_COMPRESS_LENGTH {
            // Room for no more than the chunk itself: output that would not be smaller is
            // not worth sending compressed.
            out.reserve_exact(chunk.len());
            let limit = out.len() + chunk.len();
            let done = match self.algorithm {
                Algorithm::Zlib => self.deflate_zlib(chunk, out),
                Algorithm::Zstd(level) => self.deflate_zstd(level, chunk, out),
            };
            if done && out.len() < limit {
                inflated = chunk.len();
            } else {
                out.truncate(start + HEADER);
            }
        }
        if inflated == 0 {
            out.extend_from_slice(chunk);
        }
        let length = out.len() - start - HEADER;
        let header = &mut out[start..start + HEADER];
        header[..3].copy_from_slice(&u24(length));
        header[3] = self.seq;
        header[4..].copy_from_slice(&u24(inflated));
        self.seq = self.seq.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compressed packets of `data` written in `writes` pieces, one flush each.
    fn send(c: &mut Compression, writes: &[&[u8]]) -> Vec<u8> {
        let mut wire = Vec::new();
        for piece in writes {
            c.write(piece);
            c.flush(&mut wire).unwrap();
        }
        wire
    }

    fn receive(wire: &[u8]) -> io::Result<Vec<u8>> {
        let mut c = Compression::default();
        let mut reader = wire;
        let mut out = Vec::new();
        let mut buf = [0u8; 1000];
        loop {
            let n = c.read(&mut reader, &mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// (length, seq, inflated length) of each compressed packet on `wire`.
    fn headers(mut wire: &[u8]) -> Vec<(usize, u8, usize)> {
        let mut out = Vec::new();
        while !wire.is_empty() {
            let length = u32::from_le_bytes([wire[0], wire[1], wire[2], 0]) as usize;
            let inflated = u32::from_le_bytes([wire[4], wire[5], wire[6], 0]) as usize;
            out.push((length, wire[3], inflated));
            wire = &wire[HEADER + length..];
        }
        out
    }

    #[test]
    fn short_payloads_go_uncompressed_and_long_ones_compressed() {
        let mut c = Compression::default();
        let long = vec![b'x'; 1000];
        let wire = send(&mut c, &[b"\x01\x00\x00\x00\x0e", &long]);
        assert_eq!(headers(&wire), [(5, 0, 0), (headers(&wire)[1].0, 1, 1000)]);
        assert!(headers(&wire)[1].0 < 100, "1000 equal bytes compress well");
        assert_eq!(&wire[HEADER..HEADER + 5], b"\x01\x00\x00\x00\x0e");
        let mut expected = b"\x01\x00\x00\x00\x0e".to_vec();
        expected.extend_from_slice(&long);
        assert_eq!(receive(&wire).unwrap(), expected);
    }

    #[test]
    fn a_new_command_lets_go_of_codec_states_and_large_buffers() {
        let mut c = Compression::default();
        let wire = send(&mut c, &[&vec![b'q'; 200_000]]);
        assert!(c.deflate.is_some());
        c.seq = 0;
        let mut reader = &wire[..];
        let mut buf = vec![0u8; 300_000];
        assert!(c.read(&mut reader, &mut buf).unwrap() > 0);
        assert!(c.inflate.is_some());
        c.new_command();
        assert!(c.deflate.is_none() && c.inflate.is_none());
        assert!(c.outbound.capacity() <= IDLE_CAPACITY && c.scratch.capacity() <= IDLE_CAPACITY);
        assert!(c.inbound.capacity() <= IDLE_CAPACITY);
        assert_eq!(c.seq, 0);
    }

    #[test]
    fn incompressible_payloads_go_uncompressed() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let noise: Vec<u8> = (0..4000).map(|_| rng.gen()).collect();
        let wire = send(&mut Compression::default(), &[&noise]);
        assert_eq!(headers(&wire), [(4000, 0, 0)]);
        assert_eq!(receive(&wire).unwrap(), noise);
    }

    #[test]
    fn a_flush_past_16_mib_spans_packets_and_ids_wrap() {
        let data: Vec<u8> = (0..MAX_COMPRESSED_CHUNK + 10)
            .map(|i| (i % 7) as u8)
            .collect();
        let mut c = Compression {
            seq: 255,
            ..Compression::default()
        };
        let wire = send(&mut c, &[&data]);
        let h = headers(&wire);
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].1, h[0].2), (255, MAX_COMPRESSED_CHUNK));
        assert_eq!(h[1], (10, 0, 0), "10 bytes: too short to compress");
        let mut r = Compression {
            seq: 255,
            ..Compression::default()
        };
        let mut reader = &wire[..];
        let mut out = vec![0; data.len()];
        let mut filled = 0;
        while filled < out.len() {
            filled += r.read(&mut reader, &mut out[filled..]).unwrap();
        }
        assert!(out == data);
        assert_eq!(r.seq, 1);
    }

    #[test]
    fn zstd_packets_round_trip_and_bad_ones_are_errors() {
        let mut c = Compression::new(Algorithm::Zstd(3));
        let long: Vec<u8> = (0..100_000u32).map(|i| (i % 17) as u8).collect();
        let wire = send(&mut c, &[b"short", &long]);
        let h = headers(&wire);
        assert_eq!(h[0], (5, 0, 0));
        assert_eq!((h[1].1, h[1].2), (1, 100_000));
        assert!(h[1].0 < 1000, "{h:?}");
        let mut r = Compression::new(Algorithm::Zstd(3));
        let mut reader = &wire[..];
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = r.read(&mut reader, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(&out[..5], b"short");
        assert!(out[5..] == long[..]);
        // Wrong inflated lengths, and zlib data read as zstd.
        let second = &wire[HEADER + 5..];
        for claimed in [99_999usize, 100_001] {
            let mut bad = second.to_vec();
            bad[3] = 0;
            bad[4..7].copy_from_slice(&(claimed as u32).to_le_bytes()[..3]);
            let mut r = Compression::new(Algorithm::Zstd(3));
            assert!(r.read(&mut &bad[..], &mut buf).is_err(), "{claimed}");
        }
        let zlib = send(&mut Compression::default(), &[&long]);
        let mut r = Compression::new(Algorithm::Zstd(3));
        assert!(r.read(&mut &zlib[..], &mut buf).is_err());
    }

    #[test]
    fn bad_packets_are_errors_not_panics_or_big_allocations() {
        let mut c = Compression::default();
        let wire = send(&mut c, &[&[7u8; 200], &[8u8; 200]]);
        // Out of order: the second packet alone.
        let second = HEADER + headers(&wire)[0].0;
        assert!(receive(&wire[second..]).is_err());
        // A header claiming more (or less) than the payload inflates to.
        for claimed in [199usize, 201, MAX_COMPRESSED_CHUNK] {
            let mut bad = wire[..second].to_vec();
            bad[4..7].copy_from_slice(&(claimed as u32).to_le_bytes()[..3]);
            assert!(receive(&bad).is_err(), "{claimed}");
        }
        // Garbage that is not zlib, and a truncated packet.
        let mut garbage = vec![20, 0, 0, 0, 100, 0, 0];
        garbage.extend_from_slice(&[0xAB; 20]);
        assert!(receive(&garbage).is_err());
        assert!(receive(&wire[..second - 1]).is_err());
        // Empty packets are skipped, not taken for the end of the stream.
        let mut empties = vec![0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 1, 0, 0, 0];
        empties.extend_from_slice(b"abc");
        assert_eq!(receive(&empties).unwrap(), b"abc");
    }
}
