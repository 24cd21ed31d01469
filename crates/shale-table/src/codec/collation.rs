//! Collation weights: what a string's key bytes are made of (docs/format/table-keys.md,
//! "Strings").
//!
//! - `Binary`: the bytes themselves, NO PAD (trailing spaces count).
//! - `Utf8mb4Bin`: the UTF-8 bytes (byte order is code point order), PAD SPACE.
//! - `Utf8mb4GeneralCi`: one 16-bit weight per character, PAD SPACE. The weight of U+0000 to
//!   U+00FF is `MySQL`'s `plane00` table (case and Latin-1 accents folded: `'a' = 'A' = 'á'`,
//!   `'ß' = 's'`); above it, the character's simple uppercase mapping when that is one BMP
//!   character, else the character; characters above U+FFFF weigh U+FFFD, as in `MySQL`.
//!   Accent folding of other planes (`'ā' = 'a'` in `MySQL`) is not done yet: such strings
//!   compare as different here.
//!
//! Invariants:
//! 1. Two strings compare equal under the collation iff their weights, trailing space
//!    weights removed (PAD SPACE collations), are equal.
//! 2. Weights never change once written (they are inside keys on disk).

use crate::types::Collation;

/// The weight of a space; PAD SPACE strips trailing ones and pads with it.
pub(crate) const SPACE: u16 = 0x20;

/// `MySQL`'s `utf8mb4_general_ci` weights of U+0080 to U+00FF (`plane00`); below U+0080 the
/// weight is the ASCII uppercase.
const LATIN1_UPPER: [u16; 128] = {
    let mut table = [0u16; 128];
    let mut i = 0;
    while i < 128 {
        table[i] = 0x80 + i as u16;
        i += 1;
    }
    table[0xB5 - 0x80] = 0x039C;
    let mut c = 0xC0;
    while c <= 0xFF {
        let folded: u16 = match c {
            0xC0..=0xC5 | 0xE0..=0xE5 => 0x41,
            0xC6 | 0xE6 => 0xC6,
            0xC7 | 0xE7 => 0x43,
            0xC8..=0xCB | 0xE8..=0xEB => 0x45,
            0xCC..=0xCF | 0xEC..=0xEF => 0x49,
            0xD0 | 0xF0 => 0xD0,
            0xD1 | 0xF1 => 0x4E,
            0xD2..=0xD6 | 0xD8 | 0xF2..=0xF6 | 0xF8 => 0x4F,
            0xD7 => 0xD7,
            0xF7 => 0xF7,
            0xD9..=0xDC | 0xF9..=0xFC => 0x55,
            0xDD | 0xFD | 0xFF => 0x59,
            0xDE | 0xFE => 0xDE,
            0xDF => 0x53,
            _ => c,
        };
        table[(c - 0x80) as usize] = folded;
        c += 1;
    }
    table
};

/// The `utf8mb4_general_ci` weight of one character.
pub(crate) fn general_ci_weight(c: char) -> u16 {
    let code = c as u32;
    if code < 0x80 {
        return (c.to_ascii_uppercase() as u32) as u16;
    }
    if code <= 0xFF {
        return LATIN1_UPPER[(code - 0x80) as usize];
    }
    if code > 0xFFFF {
        return 0xFFFD;
    }
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) if (u as u32) <= 0xFFFF => u as u32 as u16,
        _ => code as u16,
    }
}

/// The weights of `bytes` under `collation`, one per byte (bin collations) or per character
/// (`general_ci`; bytes that are not UTF-8 weigh U+FFFD each, as the replacement character).
pub(crate) fn weights(collation: Collation, bytes: &[u8], out: &mut Vec<u16>) {
    out.clear();
    match collation {
        Collation::Binary | Collation::Utf8mb4Bin => {
            out.extend(bytes.iter().map(|&b| u16::from(b)));
        }
        Collation::Utf8mb4GeneralCi => {
            for chunk in bytes.utf8_chunks() {
                out.extend(chunk.valid().chars().map(general_ci_weight));
                out.extend(std::iter::repeat_n(0xFFFD, chunk.invalid().len()));
            }
        }
    }
}

/// Whether trailing spaces are ignored in comparisons (`MySQL`'s PAD SPACE attribute).
pub(crate) fn pads_spaces(collation: Collation) -> bool {
    !matches!(collation, Collation::Binary)
}

/// Compares two strings as the collation does (the reference the key encoding is tested
/// against).
#[cfg(test)]
pub(crate) fn compare(collation: Collation, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    weights(collation, a, &mut wa);
    weights(collation, b, &mut wb);
    if !pads_spaces(collation) {
        return wa.cmp(&wb);
    }
    let len = wa.len().max(wb.len());
    let pad = |w: &[u16], i: usize| w.get(i).copied().unwrap_or(SPACE);
    (0..len)
        .map(|i| pad(&wa, i).cmp(&pad(&wb, i)))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn general_ci_folds_case_and_latin1_accents() {
        let ci = Collation::Utf8mb4GeneralCi;
        assert_eq!(compare(ci, b"abc", b"ABC"), Ordering::Equal);
        assert_eq!(compare(ci, "é".as_bytes(), b"E"), Ordering::Equal);
        assert_eq!(compare(ci, "ß".as_bytes(), b"s"), Ordering::Equal);
        assert_eq!(compare(ci, "straße".as_bytes(), b"STRASSE"), Ordering::Less);
        assert_eq!(compare(ci, "ω".as_bytes(), "Ω".as_bytes()), Ordering::Equal);
        assert_eq!(compare(ci, b"a", b"a  "), Ordering::Equal);
        assert_eq!(
            compare(ci, b"a\t", b"a"),
            Ordering::Less,
            "tab sorts below the pad"
        );
        assert_eq!(
            compare(ci, "😀".as_bytes(), "😃".as_bytes()),
            Ordering::Equal
        );
    }

    #[test]
    fn bin_pads_and_binary_does_not() {
        assert_eq!(compare(Collation::Utf8mb4Bin, b"a ", b"a"), Ordering::Equal);
        assert_eq!(
            compare(Collation::Utf8mb4Bin, b"a", b"A"),
            Ordering::Greater
        );
        assert_eq!(compare(Collation::Binary, b"a ", b"a"), Ordering::Greater);
    }
}
