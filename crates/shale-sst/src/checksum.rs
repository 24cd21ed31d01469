//! Block and footer checksums (docs/format/sst.md, "Block trailer" and "Footer").
//!
//! Invariants:
//! 1. A block checksum covers the stored block bytes followed by the one compression byte, in
//!    that order; it is computed in place, never over a copy.
//! 2. Stored CRCs are masked (`LevelDB`'s mask), so a CRC over data that itself contains CRCs
//!    does not collide trivially. XXH3 checksums are the low 32 bits of XXH3-64, seed 0.
//! 3. The footer checksum is always masked CRC-32C, whatever the file's checksum type.

use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

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

/// The checksum stored in a block trailer: `block` followed by `compression_tag`, computed
/// with the file's checksum type.
pub(crate) fn block_checksum(kind: ChecksumType, block: &[u8], compression_tag: u8) -> u32 {
    match kind {
        ChecksumType::Crc32c => mask(crc32c::crc32c_append(
            crc32c::crc32c(block),
            &[compression_tag],
        )),
        ChecksumType::Xxh3 => {
            let mut hasher = Xxh3Default::new();
            hasher.update(block);
            hasher.update(&[compression_tag]);
            hasher.digest() as u32
        }
    }
}

/// [`block_checksum`] of a block read with its trailer: `block_and_tag` is the stored block
/// followed by its compression byte, as they lie in the file, so the checksum is one pass
/// over contiguous bytes (one-shot XXH3 rather than the streaming state).
pub(crate) fn stored_block_checksum(kind: ChecksumType, block_and_tag: &[u8]) -> u32 {
    match kind {
        ChecksumType::Crc32c => masked_crc32c(block_and_tag),
        ChecksumType::Xxh3 => xxh3_64(block_and_tag) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // The block checksum is exactly the checksum of the concatenation.
        let crc = block_checksum(ChecksumType::Crc32c, b"12345678", b'9');
        assert_eq!(crc, masked_crc32c(b"123456789"));
        let xxh = block_checksum(ChecksumType::Xxh3, b"12345678", b'9');
        assert_eq!(xxh, xxhash_rust::xxh3::xxh3_64(b"123456789") as u32);
        // XXH3-64 of the empty input (seed 0) is a published constant.
        assert_eq!(xxhash_rust::xxh3::xxh3_64(b""), 0x2d06_8005_38d3_94c2);
    }

    #[test]
    fn streaming_xxh3_matches_one_shot_at_every_size_class() {
        // XXH3 has separate code paths for <=16, <=128, <=240 bytes and long inputs.
        for len in [
            0usize, 1, 3, 15, 16, 17, 127, 128, 200, 239, 240, 241, 1023, 4096, 70_000,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
            let mut joined = data.clone();
            joined.push(3);
            assert_eq!(
                block_checksum(ChecksumType::Xxh3, &data, 3),
                xxhash_rust::xxh3::xxh3_64(&joined) as u32,
                "len {len}"
            );
            assert_eq!(
                block_checksum(ChecksumType::Crc32c, &data, 3),
                masked_crc32c(&joined),
                "len {len}"
            );
            for kind in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
                assert_eq!(
                    stored_block_checksum(kind, &joined),
                    block_checksum(kind, &data, 3),
                    "{kind:?} len {len}"
                );
            }
        }
    }

    #[test]
    fn every_bit_flip_and_the_tag_are_covered() {
        let block: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        for kind in [ChecksumType::Crc32c, ChecksumType::Xxh3] {
            let good = block_checksum(kind, &block, 4);
            for byte in 0..block.len() {
                for bit in 0..8 {
                    let mut bad = block.clone();
                    bad[byte] ^= 1 << bit;
                    assert_ne!(block_checksum(kind, &bad, 4), good, "{kind:?} {byte}:{bit}");
                }
            }
            for tag in (0..=255u8).filter(|&t| t != 4) {
                assert_ne!(
                    block_checksum(kind, &block, tag),
                    good,
                    "{kind:?} tag {tag}"
                );
            }
            // Moving the last block byte into the tag position is a different input too.
            let (head, last) = block.split_at(block.len() - 1);
            assert_ne!(block_checksum(kind, head, last[0]), good);
        }
    }
}
