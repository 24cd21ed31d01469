//! Constants and fixed structures of the table format: block handles, the block trailer and
//! the footer. The specification is docs/format/sst.md; every tag and name here is part of
//! it and never changes meaning.

use crate::checksum;
use crate::coding::{get_u32, get_u64, get_varint64, put_u32, put_u64, put_varint64};
use crate::error::DecodeError;

/// The newest table format this build writes and reads.
pub const FORMAT_VERSION: u32 = 2;
/// The last 8 bytes of every table file.
pub const MAGIC: [u8; 8] = *b"SHALESST";
/// The footer's fixed size in bytes.
pub const FOOTER_SIZE: usize = 52;
/// Compression tag (u8) plus checksum (u32) after every block.
pub const BLOCK_TRAILER_SIZE: usize = 5;
/// Largest block (stored or decompressed) a reader accepts; bounds allocations on bad input.
pub const MAX_BLOCK_SIZE: usize = 64 << 20;

/// Meta block names in the metaindex.
pub const META_COMPRESSION_DICT: &str = "shale.compression_dict";
/// Full-file bloom filter over user keys.
pub const META_FILTER: &str = "shale.filter";
/// Bloom filter over extracted prefixes.
pub const META_PREFIX_FILTER: &str = "shale.prefix_filter";
/// Table properties (required).
pub const META_PROPERTIES: &str = "shale.properties";
/// Range tombstones.
pub const META_RANGE_DEL: &str = "shale.range_del";

/// Which checksum protects the blocks of a file (stored in the footer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum ChecksumType {
    /// CRC-32C, masked.
    Crc32c = 1,
    /// Low 32 bits of XXH3-64; the default because it is several times faster.
    #[default]
    Xxh3 = 2,
}

impl ChecksumType {
    /// The on-disk tag.
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// Decodes an on-disk tag.
    pub fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            1 => Some(Self::Crc32c),
            2 => Some(Self::Xxh3),
            _ => None,
        }
    }

    /// A short lowercase name for tools.
    pub fn name(self) -> &'static str {
        match self {
            Self::Crc32c => "crc32c",
            Self::Xxh3 => "xxh3",
        }
    }
}

/// Where a block lives: its offset and stored size, excluding the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BlockHandle {
    /// File offset of the block's first byte.
    pub offset: u64,
    /// Stored (possibly compressed) length, excluding the 5-byte trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the varint encoding used inside blocks.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
    }

    /// Decodes the varint encoding; returns the handle and bytes consumed.
    pub fn decode_from(input: &[u8]) -> Result<(Self, usize), DecodeError> {
        let (offset, a) = get_varint64(input)?;
        let (size, b) = get_varint64(&input[a..])?;
        Ok((BlockHandle { offset, size }, a + b))
    }

    /// Decodes a handle that must fill `input` exactly (an index or metaindex value).
    pub fn decode_exact(input: &[u8]) -> Result<Self, DecodeError> {
        let (handle, used) = Self::decode_from(input)?;
        if used != input.len() {
            return Err(DecodeError::new(format!(
                "block handle has {} trailing bytes",
                input.len() - used
            )));
        }
        Ok(handle)
    }

    /// The offset just past this block's trailer.
    pub fn end_with_trailer(&self) -> u64 {
        self.offset
            .saturating_add(self.size)
            .saturating_add(BLOCK_TRAILER_SIZE as u64)
    }
}

/// The fixed-size structure at the end of every table file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The metaindex block.
    pub metaindex: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// Checksum type of every block in the file.
    pub checksum_type: ChecksumType,
    /// Format version the file was written with.
    pub format_version: u32,
}

impl Footer {
    /// Encodes the footer (exactly [`FOOTER_SIZE`] bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_SIZE);
        put_u64(&mut out, self.metaindex.offset);
        put_u64(&mut out, self.metaindex.size);
        put_u64(&mut out, self.index.offset);
        put_u64(&mut out, self.index.size);
        out.push(self.checksum_type.tag());
        out.extend_from_slice(&[0, 0, 0]);
        put_u32(&mut out, self.format_version);
        let crc = checksum::masked_crc32c(&out);
        put_u32(&mut out, crc);
        out.extend_from_slice(&MAGIC);
        debug_assert_eq!(out.len(), FOOTER_SIZE);
        out
    }

    /// Decodes and checks a footer. Version support is checked by the caller, which can name
    /// the file in a [`crate::Error::NotSupported`].
    pub fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        if input.len() != FOOTER_SIZE {
            return Err(DecodeError::new(format!(
                "footer is {} bytes, expected {FOOTER_SIZE}",
                input.len()
            )));
        }
        if input[44..52] != MAGIC {
            return Err(DecodeError::new(format!(
                "bad magic {:02x?}: not a Shale table file",
                &input[44..52]
            )));
        }
        let stored = get_u32(input, 40)?;
        let actual = checksum::masked_crc32c(&input[..40]);
        if stored != actual {
            return Err(DecodeError::new(format!(
                "footer checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
            )));
        }
        if input[33..36] != [0, 0, 0] {
            return Err(DecodeError::new("footer reserved bytes are not zero"));
        }
        let checksum_type = ChecksumType::from_tag(input[32])
            .ok_or_else(|| DecodeError::new(format!("unknown checksum type {}", input[32])))?;
        Ok(Footer {
            metaindex: BlockHandle {
                offset: get_u64(input, 0)?,
                size: get_u64(input, 8)?,
            },
            index: BlockHandle {
                offset: get_u64(input, 16)?,
                size: get_u64(input, 24)?,
            },
            checksum_type,
            format_version: get_u32(input, 36)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trip_and_every_byte_checked() {
        let footer = Footer {
            metaindex: BlockHandle {
                offset: 1000,
                size: 40,
            },
            index: BlockHandle {
                offset: 900,
                size: 95,
            },
            checksum_type: ChecksumType::Crc32c,
            format_version: FORMAT_VERSION,
        };
        let bytes = footer.encode();
        assert_eq!(bytes.len(), FOOTER_SIZE);
        assert_eq!(Footer::decode(&bytes).unwrap(), footer);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(Footer::decode(&bad).is_err(), "flip at {i} not detected");
        }
        assert!(Footer::decode(&bytes[1..]).is_err());
    }

    #[test]
    fn handle_round_trip() {
        let h = BlockHandle {
            offset: 1 << 40,
            size: 4096,
        };
        let mut buf = Vec::new();
        h.encode_to(&mut buf);
        assert_eq!(BlockHandle::decode_exact(&buf).unwrap(), h);
        buf.push(0);
        assert!(BlockHandle::decode_exact(&buf).is_err());
        assert!(BlockHandle::decode_exact(&buf[..1]).is_err());
    }
}
