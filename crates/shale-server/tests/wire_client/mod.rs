//! A byte-level client for the protocol tests: the handshake as root, commands, and packets
//! read back, plain or in the compressed protocol (recording each compressed header).

// Packet and flag names as the protocol documentation spells them (lib.rs says why).
#![allow(clippy::doc_markdown)]
#![allow(dead_code)] // each test binary uses its own part of this module

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use shale_server::native_scramble_response;

pub const COMPRESS: u32 = 1 << 5;
pub const ZSTD: u32 = 1 << 26;
pub const PROTOCOL_41: u32 = 1 << 9;
pub const SECURE_CONNECTION: u32 = 1 << 15;
pub const MULTI_RESULTS: u32 = 1 << 17;
pub const PLUGIN_AUTH: u32 = 1 << 19;
pub const DEPRECATE_EOF: u32 = 1 << 24;
pub const MAX_CHUNK: usize = 0xFF_FFFF;

/// A client that records every compressed header it reads (with CLIENT_COMPRESS), or reads
/// plain packets (without).
pub struct Client {
    pub stream: TcpStream,
    compress: bool,
    /// zstd instead of zlib (CLIENT_ZSTD_COMPRESSION_ALGORITHM, level 3).
    zstd: bool,
    /// The compressed sequence id the next compressed packet (either way) carries.
    pub seq: u8,
    inbound: Vec<u8>,
    pos: usize,
    /// (payload length, sequence id, inflated length) of each compressed packet read.
    pub headers: Vec<(usize, u8, usize)>,
    /// The handshake's nonce (COM_CHANGE_USER authenticates against it again).
    pub scramble: Vec<u8>,
}

impl Client {
    pub fn plain_packet(&mut self) -> (u8, Vec<u8>) {
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header).unwrap();
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let mut payload = vec![0; len];
        self.stream.read_exact(&mut payload).unwrap();
        (header[3], payload)
    }

    /// Logs in as root (password `pw`) with `capabilities`; compressed from then on if they
    /// include CLIENT_COMPRESS.
    pub fn connect(addr: SocketAddr, capabilities: u32) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut c = Client {
            stream,
            compress: capabilities & (COMPRESS | ZSTD) != 0,
            zstd: capabilities & ZSTD != 0,
            seq: 0,
            inbound: Vec::new(),
            pos: 0,
            headers: Vec::new(),
            scramble: Vec::new(),
        };
        let (_, hello) = c.plain_packet();
        let version_end = hello.iter().position(|&b| b == 0).unwrap();
        let caps_low = u16::from_le_bytes([hello[version_end + 14], hello[version_end + 15]]);
        assert_ne!(u32::from(caps_low) & COMPRESS, 0, "CLIENT_COMPRESS offered");
        let mut scramble = hello[version_end + 5..version_end + 13].to_vec();
        let rest = version_end + 13 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
        scramble.extend_from_slice(&hello[rest..rest + 12]);
        let caps = capabilities | PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH;
        let mut p = caps.to_le_bytes().to_vec();
        p.extend_from_slice(&(1u32 << 30).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(b"root\0");
        let auth = native_scramble_response("pw", &scramble);
        c.scramble.clone_from(&scramble);
        p.push(auth.len() as u8);
        p.extend_from_slice(&auth);
        p.extend_from_slice(b"mysql_native_password\0");
        if capabilities & ZSTD != 0 {
            p.push(3);
        }
        let mut out = (p.len() as u32).to_le_bytes()[..3].to_vec();
        out.push(1);
        out.extend_from_slice(&p);
        c.stream.write_all(&out).unwrap();
        // The login's OK is a plain packet, compressed or not.
        let (seq, ok) = c.plain_packet();
        assert_eq!((seq, ok[0]), (2, 0x00), "{ok:?}");
        c
    }

    /// Sends `payload` as a command: inner packets (split at 16 MiB - 1), then compressed
    /// packets of at most 16 MiB - 1 bytes, numbered from 0.
    pub fn command(&mut self, payload: &[u8]) {
        let mut inner = Vec::new();
        let mut rest = payload;
        let mut inner_seq = 0u8;
        loop {
            let n = rest.len().min(MAX_CHUNK);
            inner.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            inner.push(inner_seq);
            inner_seq = inner_seq.wrapping_add(1);
            inner.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if n < MAX_CHUNK {
                break;
            }
        }
        self.seq = 0;
        if self.compress {
            self.send_compressed(&inner);
        } else {
            self.stream.write_all(&inner).unwrap();
        }
    }

    /// Sends one packet inside a command (an authentication answer), with inner id
    /// `inner_seq`, in the next compressed packet.
    pub fn reply(&mut self, inner_seq: u8, payload: &[u8]) {
        let mut inner = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        inner.push(inner_seq);
        inner.extend_from_slice(payload);
        self.send_compressed(&inner);
    }

    pub fn send_compressed(&mut self, bytes: &[u8]) {
        let mut out = Vec::new();
        for chunk in bytes.chunks(MAX_CHUNK) {
            let (body, inflated) = if chunk.len() < 50 {
                (chunk.to_vec(), 0)
            } else if self.zstd {
                (zstd::bulk::compress(chunk, 3).unwrap(), chunk.len())
            } else {
                let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                z.write_all(chunk).unwrap();
                (z.finish().unwrap(), chunk.len())
            };
            out.extend_from_slice(&(body.len() as u32).to_le_bytes()[..3]);
            out.push(self.seq);
            out.extend_from_slice(&(inflated as u32).to_le_bytes()[..3]);
            out.extend_from_slice(&body);
            self.seq = self.seq.wrapping_add(1);
        }
        self.stream.write_all(&out).unwrap();
    }

    /// Reads the next compressed packet (or plain bytes) into `inbound`; false if the server
    /// closed.
    pub fn fill(&mut self) -> bool {
        if !self.compress {
            let mut buf = [0u8; 16 * 1024];
            let n = self.stream.read(&mut buf).unwrap_or(0);
            self.inbound.drain(..self.pos);
            self.pos = 0;
            self.inbound.extend_from_slice(&buf[..n]);
            return n > 0;
        }
        let mut header = [0u8; 7];
        if self.stream.read_exact(&mut header).is_err() {
            return false;
        }
        let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        let inflated = u32::from_le_bytes([header[4], header[5], header[6], 0]) as usize;
        assert_eq!(header[3], self.seq, "compressed sequence id");
        self.seq = self.seq.wrapping_add(1);
        self.headers.push((len, header[3], inflated));
        let mut body = vec![0; len];
        self.stream.read_exact(&mut body).unwrap();
        self.inbound.drain(..self.pos);
        self.pos = 0;
        if inflated == 0 {
            self.inbound.extend_from_slice(&body);
        } else if self.zstd {
            let plain = zstd::bulk::decompress(&body, inflated).unwrap();
            assert_eq!(plain.len(), inflated);
            self.inbound.extend_from_slice(&plain);
        } else {
            let before = self.inbound.len();
            ZlibDecoder::new(&body[..])
                .read_to_end(&mut self.inbound)
                .unwrap();
            assert_eq!(self.inbound.len() - before, inflated);
        }
        true
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        while self.inbound.len() - self.pos < n {
            assert!(self.fill(), "the server closed the connection");
        }
        let out = self.inbound[self.pos..self.pos + n].to_vec();
        self.pos += n;
        out
    }

    /// The next inner packet: (its last chunk's sequence id, the joined payload).
    pub fn packet(&mut self) -> (u8, Vec<u8>) {
        let mut payload = Vec::new();
        loop {
            let header = self.take(4);
            let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
            payload.extend_from_slice(&self.take(len));
            if len < MAX_CHUNK {
                return (header[3], payload);
            }
        }
    }

    pub fn payload(&mut self) -> Vec<u8> {
        self.packet().1
    }

    /// True once the reply was read whole (nothing left over).
    pub fn drained(&self) -> bool {
        self.pos == self.inbound.len()
    }
}
