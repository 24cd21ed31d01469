//! The protocol's primitive types (MySQL "Basic Data Types"): `int<1|2|3|4|8>` little-endian,
//! `int<lenenc>`, `string<lenenc>`, `string<NUL>` and `string<EOF>`.
//!
//! Invariants:
//! 1. [`Reader`] never panics and never reads past its slice: every accessor returns
//!    [`Malformed`] when the bytes run out, so a hostile packet costs an error, not a crash.
//! 2. The `put_*` writers append to a `Vec<u8>` and cannot fail.

/// A packet ended early or held an impossible value; the text says which field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed packet: {0}")]
pub struct Malformed(pub &'static str);

/// A checked cursor over one packet's payload.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Malformed> {
        let end = self.pos.checked_add(n).ok_or(Malformed(what))?;
        let out = self.bytes.get(self.pos..end).ok_or(Malformed(what))?;
        self.pos = end;
        Ok(out)
    }

    /// Everything left (`string<EOF>`).
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.bytes[self.pos..];
        self.pos = self.bytes.len();
        out
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, Malformed> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16, Malformed> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u24(&mut self, what: &'static str) -> Result<u32, Malformed> {
        let b = self.take(3, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], 0]))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, Malformed> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, Malformed> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// `int<lenenc>`: 0xFB (NULL) and 0xFF are not integers and are rejected.
    pub fn lenenc_int(&mut self, what: &'static str) -> Result<u64, Malformed> {
        match self.u8(what)? {
            b @ 0..=0xFA => Ok(u64::from(b)),
            0xFC => Ok(u64::from(self.u16(what)?)),
            0xFD => Ok(u64::from(self.u24(what)?)),
            0xFE => self.u64(what),
            _ => Err(Malformed(what)),
        }
    }

    /// `string<lenenc>`.
    pub fn lenenc_bytes(&mut self, what: &'static str) -> Result<&'a [u8], Malformed> {
        let n = self.lenenc_int(what)?;
        let n = usize::try_from(n).map_err(|_| Malformed(what))?;
        self.take(n, what)
    }

    /// `string<NUL>`: the bytes before the next 0x00, which is consumed. A missing terminator
    /// at the end of the packet is accepted (some clients omit the last one).
    pub fn nul_bytes(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.pos..];
        if let Some(i) = rest.iter().position(|&b| b == 0) {
            self.pos += i + 1;
            &rest[..i]
        } else {
            self.pos = self.bytes.len();
            rest
        }
    }
}

pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// `int<lenenc>`.
pub fn put_lenenc_int(out: &mut Vec<u8>, v: u64) {
    if v < 0xFB {
        out.push(v as u8);
    } else if v <= 0xFFFF {
        out.push(0xFC);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v <= 0xFF_FFFF {
        out.push(0xFD);
        out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xFE);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// `string<lenenc>`.
pub fn put_lenenc_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_lenenc_int(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// `string<NUL>`; the caller guarantees `bytes` holds no 0x00.
pub fn put_nul_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
    out.push(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips_at_every_width_boundary() {
        for v in [
            0,
            250,
            251,
            0xFFFF,
            0x1_0000,
            0xFF_FFFF,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc_int(&mut out, v);
            let mut r = Reader::new(&out);
            assert_eq!(r.lenenc_int("v"), Ok(v));
            assert!(r.is_empty());
        }
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut r = Reader::new(&[0xFE, 1, 2]);
        assert!(r.lenenc_int("x").is_err());
        let mut r = Reader::new(&[5, b'a']);
        assert!(r.lenenc_bytes("x").is_err());
        let mut r = Reader::new(&[0xFF]);
        assert!(r.lenenc_int("x").is_err());
        let mut r = Reader::new(&[]);
        assert!(r.u32("x").is_err());
        assert_eq!(r.nul_bytes(), b"");
    }
}
