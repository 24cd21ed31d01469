//! Collation weights: what a string's key bytes are made of (docs/format/table-keys.md,
//! "Strings").
//!
//! - `Binary`: the bytes themselves, NO PAD (trailing spaces count).
//! - `Utf8mb4Bin`: the UTF-8 bytes (byte order is code point order), PAD SPACE.
//! - `Utf8mb4GeneralCi`: one 16-bit weight per character, PAD SPACE. The weight of U+0000 to
//!   U+00FF is `MySQL`'s `plane00` table (case and Latin-1 accents folded: `'a' = 'A' = 'á'`,
//!   `'ß' = 's'`); above it, the character's simple uppercase mapping when that is one BMP
//!   character, else the character; characters above U+FFFF weigh U+FFFD, as in `MySQL`.
//!   Accent folding of other planes (`'ā' = 'a'` in `MySQL`) is not done: such strings
//!   compare as different here (keys on disk hold these weights, so it stays).
//! - `Utf8mb3GeneralCi`: `MySQL`'s whole `general_ci` table (`'ā' = 'a'` too), PAD SPACE.
//! - `Latin1SwedishCi`: one byte weight per character from `MySQL`'s latin1 sort order; a
//!   character latin1 lacks weighs as `?` (what storing it in latin1 makes of it), PAD SPACE.
//! - `Utf8mb4UnicodeCi`: UCA 4.0.0 primary weights (none, one or several per character)
//!   of the BMP; characters above U+FFFF weigh 0xFFFD, as in `MySQL`. PAD SPACE.
//! - `Utf8mb4Uca900AiCi`: UCA 9.0.0 primary weights, NO PAD (`'a ' > 'a'`).
//! - `Utf8mb4Uca900AsCs`: UCA 9.0.0 primary weights, a 0 separator, the secondary weights,
//!   a 0, the tertiary weights (accents, then case, decide), NO PAD.
//!
//! Weight tables come from [`tables`]. Bytes that are not UTF-8 weigh as U+FFFD each.
//!
//! Invariants:
//! 1. Two strings compare equal under the collation iff their weights, trailing pad weights
//!    removed (PAD SPACE collations), are equal; order is the weights' lexicographic order
//!    with the shorter padded (PAD SPACE) or sorting first (NO PAD).
//! 2. Weights never change once written (they are inside keys on disk).
//! 3. The weights of the NO PAD UCA collations are never 0 within a level, so 0 can separate
//!    levels and end the key.

mod tables;

use std::cmp::Ordering;

use crate::types::Collation;

/// How a collation's weights become key bytes (docs/format/table-keys.md, "Strings").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The bytes, NO PAD.
    Bytes,
    /// Weights in chunks, trailing `pad` weights ignored; `wide` weights take 2 bytes.
    PadSpace { pad: u16, wide: bool },
    /// 16-bit weights ended by a 0 weight, `levels` times 0-terminated (NO PAD).
    NoPad { levels: u8 },
}

/// How `collation`'s weights are shaped.
pub(crate) fn shape(collation: Collation) -> Shape {
    match collation {
        Collation::Binary => Shape::Bytes,
        Collation::Utf8mb4Bin | Collation::Latin1SwedishCi => Shape::PadSpace {
            pad: SPACE,
            wide: false,
        },
        Collation::Utf8mb4GeneralCi | Collation::Utf8mb3GeneralCi => Shape::PadSpace {
            pad: SPACE,
            wide: true,
        },
        Collation::Utf8mb4UnicodeCi => Shape::PadSpace {
            pad: UCA400_SPACE,
            wide: true,
        },
        Collation::Utf8mb4Uca900AiCi => Shape::NoPad { levels: 1 },
        Collation::Utf8mb4Uca900AsCs => Shape::NoPad { levels: 3 },
    }
}

/// The weight of a space in `utf8mb4_unicode_ci`.
const UCA400_SPACE: u16 = 0x0209;

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

/// latin1's characters for its bytes 0x80..=0x9F (`MySQL`'s latin1 is cp1252 with the five
/// bytes cp1252 leaves undefined mapped to the C1 controls; shale-sql's charset.rs converts
/// with the same table).
const LATIN1_HIGH: [char; 32] = [
    '\u{20AC}', '\u{0081}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{008D}', '\u{017D}', '\u{008F}',
    '\u{0090}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}', '\u{0153}', '\u{009D}', '\u{017E}', '\u{0178}',
];

/// The `latin1_swedish_ci` weight of one character: its latin1 byte's, `?`'s if latin1
/// lacks it.
fn latin1_weight(c: char) -> u16 {
    let byte = match u32::from(c) {
        // `as u8` is exact in these ranges.
        n @ (0..=0x7F | 0xA0..=0xFF) => n as u8,
        _ => LATIN1_HIGH
            .iter()
            .position(|&known| known == c)
            .map_or(b'?', |i| 0x80 + i as u8),
    };
    u16::from(tables::LATIN1_SWEDISH_CI[usize::from(byte)])
}

/// Appends the weights of one character under a collation that weighs characters (not
/// `Binary`, `Utf8mb4Bin` or the UCA 9.0.0 ones, which [`weights`] handles).
fn char_weights(collation: Collation, c: char, out: &mut Vec<u16>) {
    let code = u32::from(c);
    match collation {
        Collation::Utf8mb4GeneralCi => out.push(general_ci_weight(c)),
        Collation::Utf8mb3GeneralCi => out.push(match u16::try_from(code) {
            Ok(bmp) => tables::general_ci_bmp_weight(bmp),
            Err(_) => 0xFFFD,
        }),
        Collation::Latin1SwedishCi => out.push(latin1_weight(c)),
        Collation::Utf8mb4UnicodeCi => match u16::try_from(code) {
            Ok(bmp) => out.extend_from_slice(tables::uca400_weights(bmp)),
            Err(_) => out.push(0xFFFD),
        },
        _ => out.push(u16::try_from(code).unwrap_or(0xFFFD)),
    }
}

/// The characters of `bytes`, a byte that is not UTF-8 read as U+FFFD.
fn chars_of(bytes: &[u8]) -> impl Iterator<Item = char> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        chunk
            .valid()
            .chars()
            .chain(std::iter::repeat_n('\u{FFFD}', chunk.invalid().len()))
    })
}

/// The weights of `bytes` under `collation` (the module doc): one per byte for `Binary` and
/// `Utf8mb4Bin`, per character otherwise; for the UCA 9.0.0 collations the whole sort key,
/// levels separated by 0 (invariant 3) but without the final 0.
pub(crate) fn weights(collation: Collation, bytes: &[u8], out: &mut Vec<u16>) {
    out.clear();
    match collation {
        Collation::Binary | Collation::Utf8mb4Bin => {
            out.extend(bytes.iter().map(|&b| u16::from(b)));
        }
        Collation::Utf8mb4Uca900AiCi | Collation::Utf8mb4Uca900AsCs => {
            let mut elements = Vec::new();
            for c in chars_of(bytes) {
                tables::uca900_elements(c, &mut elements);
            }
            out.extend(elements.iter().map(|e| e.primary).filter(|&w| w != 0));
            if collation == Collation::Utf8mb4Uca900AsCs {
                out.push(0);
                out.extend(elements.iter().map(|e| e.secondary).filter(|&w| w != 0));
                out.push(0);
                out.extend(elements.iter().map(|e| e.tertiary).filter(|&w| w != 0));
            }
        }
        _ => {
            for c in chars_of(bytes) {
                char_weights(collation, c, out);
            }
        }
    }
}

/// Whether trailing spaces are ignored in comparisons (`MySQL`'s PAD SPACE attribute).
pub(crate) fn pads_spaces(collation: Collation) -> bool {
    matches!(shape(collation), Shape::PadSpace { .. })
}

/// The weight trailing spaces have and shorter strings are padded with (PAD SPACE).
pub(crate) fn pad_weight(collation: Collation) -> u16 {
    match shape(collation) {
        Shape::PadSpace { pad, .. } => pad,
        _ => SPACE,
    }
}

/// Compares two strings as the collation does (invariant 1). Keys encode exactly this order.
pub(crate) fn compare(collation: Collation, a: &[u8], b: &[u8]) -> Ordering {
    if collation == Collation::Binary {
        return a.cmp(b);
    }
    // The common ASCII prefix without UTF-8 decoding (sorts and DISTINCT compare strings
    // many times each): an ASCII byte is a whole character with weights of its own (no
    // contractions), so equal leading characters can be set aside in every collation, and
    // under bin and general_ci an ASCII byte's weight is the byte or its uppercase.
    let simple = matches!(
        collation,
        Collation::Utf8mb4Bin | Collation::Utf8mb4GeneralCi
    );
    let fold = collation == Collation::Utf8mb4GeneralCi;
    let mut prefix = 0;
    for (&left, &right) in a.iter().zip(b) {
        if !left.is_ascii() || !right.is_ascii() {
            break;
        }
        if left != right {
            if !simple {
                break;
            }
            let (left, right) = if fold {
                (left.to_ascii_uppercase(), right.to_ascii_uppercase())
            } else {
                (left, right)
            };
            if left != right {
                return left.cmp(&right);
            }
        }
        prefix += 1;
    }
    let (a, b) = (&a[prefix..], &b[prefix..]);
    if let Shape::PadSpace { pad, .. } = shape(collation) {
        return compare_padded(collation, pad, a, b);
    }
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    weights(collation, a, &mut wa);
    weights(collation, b, &mut wb);
    // Level separators are 0, below every weight: a shorter level sorts first.
    wa.cmp(&wb)
}

/// [`compare`] for PAD SPACE collations, the shorter string padded with `pad`.
fn compare_padded(collation: Collation, pad: u16, a: &[u8], b: &[u8]) -> Ordering {
    let (mut wa, mut wb) = (Vec::new(), Vec::new());
    weights(collation, a, &mut wa);
    weights(collation, b, &mut wb);
    let (mut ia, mut ib) = (wa.iter(), wb.iter());
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => return Ordering::Equal,
            (left, right) => match left.unwrap_or(&pad).cmp(right.unwrap_or(&pad)) {
                Ordering::Equal => {}
                o => return o,
            },
        }
    }
}

impl Collation {
    /// Compares two strings under this collation, in the order index keys sort them (PAD
    /// SPACE or NO PAD as the collation is). The one rule the SQL layer's comparisons use,
    /// so a comparison and an index range always agree.
    #[must_use]
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        compare(self, a, b)
    }

    /// Whether `a` and `b` are equal under this collation.
    #[must_use]
    pub fn equal(self, a: &[u8], b: &[u8]) -> bool {
        compare(self, a, b) == Ordering::Equal
    }

    /// The weights of `bytes` with trailing pad weights removed under PAD SPACE: two
    /// strings are equal under the collation iff these are equal (GROUP BY keys).
    pub fn equality_weights(self, bytes: &[u8], out: &mut Vec<u16>) {
        weights(self, bytes, out);
        if pads_spaces(self) {
            let pad = pad_weight(self);
            while out.last() == Some(&pad) {
                out.pop();
            }
        }
    }

    /// The weights one character has on its own, in the order [`compare`] looks at them
    /// (for character-wise matching such as LIKE: two characters match iff these are
    /// equal). A character that weighs nothing (ignorable) gives none.
    pub fn char_weights(self, c: char, out: &mut Vec<u16>) {
        let mut buf = [0; 4];
        weights(self, c.encode_utf8(&mut buf).as_bytes(), out);
    }

    /// Whether trailing spaces are ignored (`MySQL`'s PAD SPACE attribute).
    #[must_use]
    pub fn pads_spaces(self) -> bool {
        pads_spaces(self)
    }

    /// The `utf8mb4_general_ci` weight of one character (case and Latin-1 accents folded), for
    /// character-wise matching such as LIKE.
    #[must_use]
    pub fn general_ci_weight(c: char) -> u16 {
        general_ci_weight(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Comparisons whose results MySQL documents or returns (`unicode_ci`, `general_ci` checked
    /// on MariaDB 10.11, which shares those tables; 0900 from allkeys-9.0.0.txt).
    #[test]
    fn collations_compare_as_mysql_does() {
        use Ordering::{Equal as E, Greater as G, Less as L};
        let ai = Collation::Utf8mb4Uca900AiCi;
        let cs = Collation::Utf8mb4Uca900AsCs;
        let uni = Collation::Utf8mb4UnicodeCi;
        let sv = Collation::Latin1SwedishCi;
        let mb3 = Collation::Utf8mb3GeneralCi;
        let cases: &[(Collation, &str, &str, Ordering)] = &[
            (ai, "abc", "ÁBC", E),
            (ai, "a", "a ", L),
            (ai, "ß", "ss", E),
            (ai, "æ", "ae", E),
            (ai, "a\u{1}", "a", E),
            (ai, "a-b", "ab", L),
            (ai, "Zebra", "apple", G),
            (ai, "\u{4E00}", "z", G),
            (cs, "a", "A", L),
            (cs, "a", "á", L),
            (cs, "Aa", "ab", L),
            (cs, "résumé", "resume", G),
            (cs, "abc", "abc", E),
            (uni, "a", "A ", E),
            (uni, "ß", "ss", E),
            (uni, "æ", "ae", G),
            (uni, "a\t", "a", L),
            (uni, "a-b", "ab", L),
            (uni, "Å", "A", E),
            (uni, "😀", "😃", E),
            (uni, "a\0", "a", E),
            (mb3, "ā", "A", E),
            (mb3, "ȁ", "a", E),
            (sv, "é", "E", E),
            (sv, "ä", "z", G),
            (sv, "ä", "æ", E),
            (sv, "Ü", "y", E),
            (sv, "ж", "?", E),
            (sv, "a  ", "A", E),
        ];
        for &(collation, a, b, want) in cases {
            assert_eq!(
                compare(collation, a.as_bytes(), b.as_bytes()),
                want,
                "{collation:?} {a:?} {b:?}"
            );
        }
    }

    #[test]
    fn as_cs_weights_are_three_levels() {
        // docs/format/table-keys.md's example.
        let mut w = Vec::new();
        weights(Collation::Utf8mb4Uca900AsCs, b"Ab", &mut w);
        assert_eq!(w, [0x1C47, 0x1C60, 0, 0x20, 0x20, 0, 0x08, 0x02]);
        weights(Collation::Utf8mb4Uca900AiCi, b"Ab", &mut w);
        assert_eq!(w, [0x1C47, 0x1C60]);
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

/// The public comparison against the key encoding: the SQL layer compares with
/// [`Collation::compare`] and ranges scan in key byte order, so the two must agree on every
/// pair of strings.
#[cfg(test)]
mod agrees_with_keys {
    use super::*;
    use crate::codec::key::encode_column;
    use crate::{ColumnDef, ColumnType, Value};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Pieces that exercise folding, padding, bytes below the space, NUL, other planes and
    /// invalid UTF-8.
    const PIECES: &[&[u8]] = &[
        b"a",
        b"A",
        b"b",
        b"z",
        b" ",
        b"  ",
        b"\t",
        b"\0",
        b"~",
        "á".as_bytes(),
        "Ä".as_bytes(),
        "ß".as_bytes(),
        "s".as_bytes(),
        "Ω".as_bytes(),
        "ω".as_bytes(),
        "µ".as_bytes(),
        "😀".as_bytes(),
        "😃".as_bytes(),
        b"\xff",
        b"\xc3",
        "×".as_bytes(),
        "e".as_bytes(),
        "é".as_bytes(),
        "E".as_bytes(),
        "ā".as_bytes(),
        "Æ".as_bytes(),
        "\u{0301}".as_bytes(),
        "\u{0001}".as_bytes(),
        "€".as_bytes(),
        "\u{4E00}".as_bytes(),
        "가".as_bytes(),
        "-".as_bytes(),
    ];

    fn random_string(rng: &mut SmallRng) -> Vec<u8> {
        let mut s = Vec::new();
        for _ in 0..rng.gen_range(0..14) {
            s.extend_from_slice(PIECES[rng.gen_range(0..PIECES.len())]);
        }
        s
    }

    fn key(column: &ColumnDef, s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_column(&mut out, column, &Value::Bytes(s.to_vec()), &mut Vec::new())
            .expect("a string encodes");
        out
    }

    #[test]
    fn compare_is_key_byte_order() {
        let mut rng = SmallRng::seed_from_u64(0x5ba1e);
        for collation in [
            Collation::Binary,
            Collation::Utf8mb4Bin,
            Collation::Utf8mb4GeneralCi,
            Collation::Utf8mb4Uca900AiCi,
            Collation::Utf8mb4Uca900AsCs,
            Collation::Utf8mb4UnicodeCi,
            Collation::Latin1SwedishCi,
            Collation::Utf8mb3GeneralCi,
        ] {
            let column = ColumnDef {
                name: "c".into(),
                ty: ColumnType::VarChar {
                    len: 200,
                    collation,
                },
                nullable: false,
                default: None,
                auto_increment: false,
                auto_timestamp: crate::schema::AutoTimestamp::default(),
                generated: None,
            };
            for round in 0..20_000 {
                let (mut a, mut b) = (random_string(&mut rng), random_string(&mut rng));
                if round % 2 == 1 {
                    // A shared ASCII prefix in different case: compare's fast path takes it,
                    // the weights decide the rest.
                    a.splice(0..0, b"sBtest c-".iter().copied());
                    b.splice(0..0, b"SbTEST C-".iter().copied());
                }
                let want = key(&column, &a).cmp(&key(&column, &b));
                assert_eq!(collation.compare(&a, &b), want, "{collation:?} {a:?} {b:?}");
                assert_eq!(collation.equal(&a, &b), want.is_eq());
                let (mut wa, mut wb) = (Vec::new(), Vec::new());
                collation.equality_weights(&a, &mut wa);
                collation.equality_weights(&b, &mut wb);
                assert_eq!(wa == wb, want.is_eq(), "{collation:?} {a:?} {b:?}");
            }
        }
    }
}
