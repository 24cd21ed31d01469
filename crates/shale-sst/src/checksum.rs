//! Block and footer checksums (docs/format/sst.md, "Block trailer" and "Footer").
//!
//! Invariants:
//! 1. A block checksum covers the stored block bytes followed by the one compression byte, in
//!    that order: exactly the bytes before the checksum in the file, which both the writer
//!    and the reader hold as one slice, so it is one pass of the one-shot hash.
//! 2. Stored CRCs are masked (`LevelDB`'s mask), so a CRC over data that itself contains CRCs
//!    does not collide trivially. XXH3 checksums are the low 32 bits of XXH3-64, seed 0.
//! 3. The footer checksum is always masked CRC-32C, whatever the file's checksum type.

use xxhash_rust::xxh3::xxh3_64;

use crate::format::ChecksumType;

/// Added after rotating, as `LevelDB` does.
const CRC_MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC for storage.
fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(CRC_MASK_DELTA)
}

/// The masked CRC-32C of `data`: the footer checksum.
pub(crate) fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc32c::crc32c(data))
}

/// The checksum stored in a block trailer: computed over `stored_and_tag`, the stored block
/// bytes followed by its compression tag, with the file's checksum type.
pub(crate) fn block_checksum(kind: ChecksumType, stored_and_tag: &[u8]) -> u32 {
    match kind {
        ChecksumType::Crc32c => masked_crc32c(stored_and_tag),
        ChecksumType::Xxh3 => xxh3_64(stored_and_tag) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `block` followed by `tag`, as the file holds them.
    fn with_tag(block: &[u8], tag: u8) -> Vec<u8> {
        let mut joined = block.to_vec();
        joined.push(tag);
        joined
    }

    #[test]
    #[allow(clippy::manual_rotate)] // Spelled exactly as the spec writes it.
    fn mask_matches_leveldb_formula() {
        let crc = 0xe306_9283_u32;
        assert_eq!(
            mask(crc),
            ((crc >> 15) | (crc << 17)).wrapping_add(0xa282_ead8)
        );
    }

    #[test]
    fn known_vectors() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(masked_crc32c(b"123456789"), mask(0xe306_9283));
        assert_eq!(masked_crc32c(b""), 0xa282_ead8);
        // The block checksum is exactly the checksum of the block and its tag.
        let crc = block_checksum(ChecksumType::Crc32c, &with_tag(b"12345678", b'9'));
        assert_eq!(crc, masked_crc32c(b"123456789"));
        let xxh = block_checksum(ChecksumType::Xxh3, &with_tag(b"12345678", b'9'));
        assert_eq!(xxh, xxh3_64(b"123456789") as u32);
        // XXH3-64 of the empty input (seed 0) is a published constant.
        assert_eq!(xxh3_64(b""), 0x2d06_8005_38d3_94c2);
    }

    #[test]
    fn every_bit_flip_and_the_tag_are_covered() {
        let block: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        for kind in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
            let good = block_checksum(kind, &with_tag(&block, 4));
            for byte in 0..block.len() {
                for bit in 0..8 {
                    let mut bad = block.clone();
                    bad[byte] ^= 1 << bit;
                    assert_ne!(
                        block_checksum(kind, &with_tag(&bad, 4)),
                        good,
                        "{kind:?} {byte}:{bit}"
                    );
                }
            }
            for tag in (0..=255u8).filter(|&t| t != 4) {
                assert_ne!(
                    block_checksum(kind, &with_tag(&block, tag)),
                    good,
                    "{kind:?} tag {tag}"
                );
            }
        }
    }
}
