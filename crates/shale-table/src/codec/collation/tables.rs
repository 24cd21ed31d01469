//! The weight tables of the collations that are not computed from the code point
//! (docs/format/table-keys.md, "Collation tables"), read once from the `.bin` files beside
//! this module, which `scripts/gen-collation-tables.py` generates.
//!
//! - `uca900.bin`: UCA 9.0.0's DUCET (Unicode's allkeys-9.0.0.txt) for single code points;
//!   [`uca900_elements`] adds the implicit weights of characters it does not list (Han,
//!   Tangut, unassigned) and decomposes Hangul syllables into jamo, as UTS #10 says.
//!   Contractions (a few sequences such as U+0418 U+0306 weighing as one character) are
//!   not applied: each character weighs on its own.
//! - `uca400.bin`: `utf8mb4_unicode_ci`'s primary weights (UCA 4.0.0) of every BMP character.
//! - `general_ci.bin`: `utf8mb3_general_ci`'s weight of every BMP character.
//! - `latin1_swedish_ci.bin`: the weight of each latin1 byte.
//!
//! Invariants:
//! 1. The tables are never edited: their weights are inside keys on disk (a new table needs
//!    a new collation).
//! 2. A malformed table is a build defect, caught by the tests below; lookups never panic on
//!    one (a short table reads as "no weights").

use std::sync::OnceLock;

const UCA900: &[u8] = include_bytes!("uca900.bin");
const UCA400: &[u8] = include_bytes!("uca400.bin");
const GENERAL_CI: &[u8] = include_bytes!("general_ci.bin");
pub(super) const LATIN1_SWEDISH_CI: &[u8; 256] = include_bytes!("latin1_swedish_ci.bin");

/// One collation element of UCA 9.0.0: primary, secondary and tertiary weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Element {
    pub primary: u16,
    pub secondary: u16,
    pub tertiary: u16,
}

/// `uca900.bin` indexed: the BMP by code point, the other planes by binary search.
struct Uca900 {
    /// Per BMP code point: `start << 8 | count` into `elements`, or `u32::MAX` if not listed.
    bmp: Vec<u32>,
    /// Code points above the BMP, sorted, with `start << 8 | count`.
    astral: Vec<(u32, u32)>,
    elements: Vec<Element>,
}

fn uca900() -> &'static Uca900 {
    static TABLE: OnceLock<Uca900> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Uca900 {
            bmp: vec![u32::MAX; 0x10000],
            astral: Vec::new(),
            elements: Vec::new(),
        };
        let mut rest = UCA900;
        // Record: code point (3 bytes LE), count (1 byte), count x (u16 LE, u16 LE, u8).
        while let [a, b, c, count, tail @ ..] = rest {
            let code = u32::from_le_bytes([*a, *b, *c, 0]);
            let count = usize::from(*count);
            let Some((body, tail)) = tail.split_at_checked(count * 5) else {
                break;
            };
            // `elements` stays far below 2^24 entries (about 40,000).
            let slot = (table.elements.len() as u32) << 8 | count as u32;
            for e in body.chunks_exact(5) {
                table.elements.push(Element {
                    primary: u16::from_le_bytes([e[0], e[1]]),
                    secondary: u16::from_le_bytes([e[2], e[3]]),
                    tertiary: u16::from(e[4]),
                });
            }
            match usize::try_from(code) {
                Ok(i) if i < 0x10000 => table.bmp[i] = slot,
                _ => table.astral.push((code, slot)),
            }
            rest = tail;
        }
        table
    })
}

impl Uca900 {
    fn listed(&self, code: u32) -> Option<&[Element]> {
        let slot = if code < 0x10000 {
            *self.bmp.get(code as usize)?
        } else {
            let at = self.astral.binary_search_by_key(&code, |&(c, _)| c).ok()?;
            self.astral.get(at)?.1
        };
        if slot == u32::MAX {
            return None;
        }
        let (start, count) = ((slot >> 8) as usize, (slot & 0xFF) as usize);
        self.elements.get(start..start + count)
    }
}

/// Whether a code point is a `Unified_Ideograph` of Unicode 9.0, and which implicit base it
/// takes (UTS #10 section 10.1.3): 0xFB40 for the core blocks, 0xFB80 for the extensions.
fn han_base(code: u32) -> Option<u16> {
    const CORE_COMPAT: [u32; 12] = [
        0xFA0E, 0xFA0F, 0xFA11, 0xFA13, 0xFA14, 0xFA1F, 0xFA21, 0xFA23, 0xFA24, 0xFA27, 0xFA28,
        0xFA29,
    ];
    match code {
        0x4E00..=0x9FD5 => Some(0xFB40),
        _ if CORE_COMPAT.contains(&code) => Some(0xFB40),
        0x3400..=0x4DB5
        | 0x20000..=0x2A6D6
        | 0x2A700..=0x2B734
        | 0x2B740..=0x2B81D
        | 0x2B820..=0x2CEA1 => Some(0xFB80),
        _ => None,
    }
}

/// The collation elements of one character under UCA 9.0.0, appended to `out`.
pub(super) fn uca900_elements(c: char, out: &mut Vec<Element>) {
    let code = u32::from(c);
    let table = uca900();
    if let Some(listed) = table.listed(code) {
        out.extend_from_slice(listed);
        return;
    }
    // Hangul syllables: the elements of their jamo (UTS #10 section 10.1.5, via the
    // canonical decomposition of Unicode 3.12).
    if (0xAC00..=0xD7A3).contains(&code) {
        let index = code - 0xAC00;
        let (l, v, t) = (index / 588, (index % 588) / 28, index % 28);
        let mut jamo = vec![0x1100 + l, 0x1161 + v];
        if t != 0 {
            jamo.push(0x11A7 + t);
        }
        for j in jamo {
            if let Some(listed) = table.listed(j) {
                out.extend_from_slice(listed);
            }
        }
        return;
    }
    // Implicit weights: [.AAAA.0020.0002][.BBBB.0000.0000].
    let (first, second) = if (0x17000..=0x18AFF).contains(&code) {
        (0xFB00, (code - 0x17000) | 0x8000)
    } else {
        let base = han_base(code).unwrap_or(0xFBC0);
        // `code >> 15` is at most 0x21, so the sum stays in 16 bits.
        (base + (code >> 15) as u16, (code & 0x7FFF) | 0x8000)
    };
    out.push(Element {
        primary: first,
        secondary: 0x20,
        tertiary: 0x02,
    });
    out.push(Element {
        // `second` is at most 0xFFFF by the mask.
        primary: second as u16,
        secondary: 0,
        tertiary: 0,
    });
}

/// `uca400.bin` indexed: per BMP code point, the range of its weights.
fn uca400() -> &'static (Vec<u32>, Vec<u16>) {
    static TABLE: OnceLock<(Vec<u32>, Vec<u16>)> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut index = Vec::with_capacity(0x10000);
        let mut weights = Vec::new();
        let mut rest = UCA400;
        // Per BMP code point in order: count (1 byte), count x u16 LE.
        while let [count, tail @ ..] = rest {
            let count = usize::from(*count);
            let Some((body, tail)) = tail.split_at_checked(count * 2) else {
                break;
            };
            index.push((weights.len() as u32) << 8 | count as u32);
            weights.extend(
                body.chunks_exact(2)
                    .map(|w| u16::from_le_bytes([w[0], w[1]])),
            );
            rest = tail;
        }
        (index, weights)
    })
}

/// `utf8mb4_unicode_ci`'s primary weights of one BMP character (none for an ignorable one).
pub(super) fn uca400_weights(code: u16) -> &'static [u16] {
    let (index, weights) = uca400();
    let Some(&slot) = index.get(usize::from(code)) else {
        return &[];
    };
    let (start, count) = ((slot >> 8) as usize, (slot & 0xFF) as usize);
    weights.get(start..start + count).unwrap_or_default()
}

/// `utf8mb3_general_ci`'s weight of one BMP character.
pub(super) fn general_ci_bmp_weight(code: u16) -> u16 {
    let at = usize::from(code) * 2;
    match GENERAL_CI.get(at..at + 2) {
        Some(w) => u16::from_le_bytes([w[0], w[1]]),
        None => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements(c: char) -> Vec<Element> {
        let mut out = Vec::new();
        uca900_elements(c, &mut out);
        out
    }

    #[test]
    fn tables_are_whole() {
        assert_eq!(uca400().0.len(), 0x10000, "one entry per BMP code point");
        assert_eq!(GENERAL_CI.len(), 0x20000);
        let table = uca900();
        assert!(table.elements.len() > 30_000);
        assert!(table.astral.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn uca900_weights_are_the_ducets() {
        // allkeys-9.0.0.txt: 0061 ; [.1C47.0020.0002], 0041 ; [.1C47.0020.0008].
        let a = elements('a');
        assert_eq!(
            a,
            [Element {
                primary: 0x1C47,
                secondary: 0x20,
                tertiary: 0x02
            }]
        );
        assert_eq!(elements('A')[0].tertiary, 0x08);
        // Space is variable, weighed as non-ignorable (MySQL's 0900 collations).
        assert_eq!(elements(' ')[0].primary, 0x0209);
        // A control character is completely ignorable.
        assert_eq!(elements('\u{1}')[0].primary, 0);
        // 'ß' expands to two 's' (with a secondary-only element between).
        let s = elements('s')[0].primary;
        let sharp: Vec<u16> = elements('ß')
            .iter()
            .map(|e| e.primary)
            .filter(|&p| p != 0)
            .collect();
        assert_eq!(sharp, [s, s]);
    }

    #[test]
    fn implicit_weights_follow_uts10() {
        // U+4E00 is core Han: [.FB40.0020.0002][.CE00.0000.0000].
        let han = elements('\u{4E00}');
        assert_eq!((han[0].primary, han[1].primary), (0xFB40, 0xCE00));
        // U+3400 is extension A.
        assert_eq!(elements('\u{3400}')[0].primary, 0xFB80);
        // An unassigned code point.
        let none = elements('\u{E0FFF}');
        assert_eq!((none[0].primary, none[1].primary), (0xFBC0 + 0x1C, 0x8FFF));
        // Hangul: U+AC00 is U+1100 U+1161.
        let syllable: Vec<u16> = elements('\u{AC00}').iter().map(|e| e.primary).collect();
        let jamo: Vec<u16> = ['\u{1100}', '\u{1161}']
            .iter()
            .flat_map(|&c| elements(c))
            .map(|e| e.primary)
            .collect();
        assert_eq!(syllable, jamo);
    }

    #[test]
    fn mysql_tables_hold_known_weights() {
        // WEIGHT_STRING('a' COLLATE utf8mb4_unicode_ci) = 0x0E33; ' ' = 0x0209.
        assert_eq!(uca400_weights(u16::from(b'a')), [0x0E33]);
        assert_eq!(uca400_weights(u16::from(b'A')), [0x0E33]);
        assert_eq!(uca400_weights(0x20), [0x0209]);
        assert_eq!(uca400_weights(0xDF), [0x0FEA, 0x0FEA]);
        assert_eq!(uca400_weights(0x01), [] as [u16; 0]);
        // utf8mb3_general_ci folds accents beyond Latin-1: 'ā' = 'A'.
        assert_eq!(general_ci_bmp_weight(0x101), 0x41);
        // latin1_swedish_ci: 'é' (0xE9) = 'E'; 'ä' (0xE4) sorts after 'Z' apart from 'A'.
        assert_eq!(LATIN1_SWEDISH_CI[0xE9], b'E');
        assert!(LATIN1_SWEDISH_CI[0xE4] > b'Z');
    }
}
