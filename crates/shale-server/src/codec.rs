//! Packet framing (MySQL "MySQL Packets"): each packet is `int<3>` payload length,
//! `int<1>` sequence id, then the payload. A payload of 16 MiB - 1 bytes (0xFFFFFF) or more is
//! sent as consecutive full-size packets followed by one shorter packet (possibly empty); the
//! receiver joins them into one logical payload.
//!
//! Invariants:
//! 1. [`read_packet`] checks the declared length against `max_allowed_packet` before it
//!    allocates or reads the body, so a hostile header cannot make the server allocate more.
//! 2. Sequence ids: every chunk of a logical packet carries the next id (mod 256); a command's
//!    first packet from the client is 0 and the server's reply continues from the client's last
//!    id + 1. [`read_packet`] rejects a chunk whose id is not the expected one (except under
//!    the compressed protocol, whose own ids keep the order: compress.rs).
//! 3. [`PacketWriter`] only ever holds whole, correctly framed packets between calls, so any
//!    prefix returned by [`PacketWriter::take`] can be written to the socket as is.

use std::io;

use std::io::Read;

/// The largest payload one physical packet carries; a longer one is split.
pub const MAX_CHUNK: usize = 0xFF_FFFF;

/// Why a packet could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The peer closed the connection between packets.
    #[error("connection closed by the client")]
    Closed,
    #[error("reading from the client: {0}")]
    Io(#[from] io::Error),
    /// The logical payload would exceed `max_allowed_packet`.
    #[error("packet of at least {length} bytes is larger than max_allowed_packet ({max})")]
    TooLarge { length: usize, max: usize },
    #[error("packet out of order: sequence id {got}, expected {expected}")]
    OutOfOrder { got: u8, expected: u8 },
}

/// One logical packet: its payload and the sequence id of its last chunk.
#[derive(Debug)]
pub struct Packet {
    pub payload: Vec<u8>,
    pub last_seq: u8,
}

/// Reads one logical packet whose first chunk must carry `expected_seq`.
pub fn read_packet<R: Read + ?Sized>(
    reader: &mut R,
    expected_seq: u8,
    max_allowed_packet: usize,
) -> Result<Packet, ReadError> {
    read_packet_in_order(reader, Some(expected_seq), max_allowed_packet)
}

/// [`read_packet`], or with `None` a packet whatever its sequence ids (the compressed
/// protocol's inner packets, whose order the compressed packets' ids already keep).
pub fn read_packet_in_order<R: Read + ?Sized>(
    reader: &mut R,
    expected_seq: Option<u8>,
    max_allowed_packet: usize,
) -> Result<Packet, ReadError> {
    let mut payload = Vec::new();
    let mut expected = expected_seq;
    let mut first = true;
    loop {
        let mut header = [0u8; 4];
        if first {
            // A close before the first header byte is a clean end, not an error.
            let n = loop {
                match reader.read(&mut header[..1]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    other => break other?,
                }
            };
            if n == 0 {
                return Err(ReadError::Closed);
            }
            reader.read_exact(&mut header[1..])?;
        } else {
            reader.read_exact(&mut header)?;
        }
        let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let seq = header[3];
        if let Some(expected) = expected.filter(|&e| e != seq) {
            return Err(ReadError::OutOfOrder { got: seq, expected });
        }
        let total = payload.len() + length;
        if total > max_allowed_packet {
            return Err(ReadError::TooLarge {
                length: total,
                max: max_allowed_packet,
            });
        }
        let start = payload.len();
        payload.resize(total, 0);
        reader.read_exact(&mut payload[start..])?;
        first = false;
        if length < MAX_CHUNK {
            return Ok(Packet {
                payload,
                last_seq: seq,
            });
        }
        expected = expected.map(|_| seq.wrapping_add(1));
    }
}

/// Builds framed packets into one buffer, numbering them.
#[derive(Debug, Default)]
pub struct PacketWriter {
    buf: Vec<u8>,
    seq: u8,
}

impl PacketWriter {
    pub fn new(seq: u8) -> Self {
        PacketWriter {
            buf: Vec::with_capacity(256),
            seq,
        }
    }

    /// The sequence id the next packet gets.
    pub fn seq(&self) -> u8 {
        self.seq
    }

    pub fn set_seq(&mut self, seq: u8) {
        self.seq = seq;
    }

    /// Appends one packet whose payload `fill` writes.
    pub fn packet(&mut self, fill: impl FnOnce(&mut Vec<u8>)) {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0, 0, 0, 0]);
        fill(&mut self.buf);
        let length = self.buf.len() - start - 4;
        if length < MAX_CHUNK {
            self.buf[start..start + 3].copy_from_slice(&(length as u32).to_le_bytes()[..3]);
            self.buf[start + 3] = self.seq;
            self.seq = self.seq.wrapping_add(1);
            return;
        }
        // Rare: re-frame the payload as full chunks and a final shorter (maybe empty) one.
        let payload = self.buf.split_off(start + 4);
        self.buf.truncate(start);
        let mut rest = &payload[..];
        loop {
            let n = rest.len().min(MAX_CHUNK);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            self.buf.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if n < MAX_CHUNK {
                break;
            }
        }
    }

    /// Bytes buffered so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Takes the framed bytes, leaving the writer empty (the sequence id carries on).
    pub fn take(&mut self) -> Vec<u8> {
        // A small reply (an OK, one row) then fits without regrowing from zero.
        std::mem::replace(&mut self.buf, Vec::with_capacity(256))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8], max: usize) -> Result<Packet, ReadError> {
        let mut reader = bytes;
        read_packet(&mut reader, 0, max)
    }

    #[test]
    fn small_packet_round_trips() {
        let mut w = PacketWriter::new(0);
        w.packet(|out| out.extend_from_slice(b"\x03SELECT 1"));
        let bytes = w.take();
        assert_eq!(&bytes[..4], &[9, 0, 0, 0]);
        let p = read_all(&bytes, 1 << 20).unwrap();
        assert_eq!(p.payload, b"\x03SELECT 1");
        assert_eq!(p.last_seq, 0);
        assert_eq!(w.seq(), 1);
    }

    #[test]
    fn payloads_at_and_above_16mib_split_and_join() {
        for len in [MAX_CHUNK - 1, MAX_CHUNK, MAX_CHUNK + 5, 2 * MAX_CHUNK] {
            let mut w = PacketWriter::new(0);
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            w.packet(|out| out.extend_from_slice(&data));
            let bytes = w.take();
            let chunks = len / MAX_CHUNK + 1;
            assert_eq!(bytes.len(), len + 4 * chunks, "len {len}");
            assert_eq!(w.seq() as usize, chunks);
            let p = read_all(&bytes, 64 << 20).unwrap();
            assert_eq!(p.payload.len(), len);
            assert!(p.payload == data);
            assert_eq!(p.last_seq as usize, chunks - 1);
        }
    }

    #[test]
    fn oversized_and_out_of_order_packets_are_rejected() {
        let mut w = PacketWriter::new(0);
        w.packet(|out| out.extend_from_slice(&[0u8; 100]));
        let bytes = w.take();
        assert!(matches!(
            read_all(&bytes, 99),
            Err(ReadError::TooLarge {
                length: 100,
                max: 99
            })
        ));
        let mut w = PacketWriter::new(3);
        w.packet(|out| out.push(1));
        assert!(matches!(
            read_all(&w.take(), 99),
            Err(ReadError::OutOfOrder {
                got: 3,
                expected: 0
            })
        ));
        assert!(matches!(read_all(&[], 99), Err(ReadError::Closed)));
        assert!(matches!(
            read_all(&[5, 0, 0, 0, 1], 99),
            Err(ReadError::Io(_))
        ));
    }
}
