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

use std::cmp::Ordering;

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

/// Weights of `bytes` one at a time, as [`weights`] produces them.
fn weight_iter(collation: Collation, bytes: &[u8]) -> impl Iterator<Item = u16> + '_ {
    let general_ci = collation == Collation::Utf8mb4GeneralCi;
    let bin = bytes
        .iter()
        .filter(move |_| !general_ci)
        .map(|&b| u16::from(b));
    let ci = bytes
        .utf8_chunks()
        .filter(move |_| general_ci)
        .flat_map(|chunk| {
            chunk
                .valid()
                .chars()
                .map(general_ci_weight)
                .chain(std::iter::repeat_n(0xFFFD, chunk.invalid().len()))
        });
    bin.chain(ci)
}

/// Compares two strings as the collation does: their weights, the shorter padded with space
/// weights under PAD SPACE (so trailing spaces are ignored, and `'a\t' < 'a'`). Keys encode
/// exactly this order (invariant 1).
pub(crate) fn compare(collation: Collation, a: &[u8], b: &[u8]) -> Ordering {
    if !pads_spaces(collation) {
        return a.cmp(b);
    }
    // The common ASCII prefix without UTF-8 decoding (sorts and DISTINCT compare strings
    // many times each): an ASCII byte is a whole character, whose weight is the byte itself
    // or, under general_ci, its uppercase. The rest goes through the weights.
    let fold = collation == Collation::Utf8mb4GeneralCi;
    let mut prefix = 0;
    for (&left, &right) in a.iter().zip(b) {
        if !left.is_ascii() || !right.is_ascii() {
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
        prefix += 1;
    }
    compare_weights(collation, &a[prefix..], &b[prefix..])
}

/// [`compare`] weight by weight.
fn compare_weights(collation: Collation, a: &[u8], b: &[u8]) -> Ordering {
    let (mut wa, mut wb) = (weight_iter(collation, a), weight_iter(collation, b));
    loop {
        match (wa.next(), wb.next()) {
            (None, None) => return Ordering::Equal,
            (left, right) => match left.unwrap_or(SPACE).cmp(&right.unwrap_or(SPACE)) {
                Ordering::Equal => {}
                o => return o,
            },
        }
    }
}

impl Collation {
    /// Compares two strings under this collation, in the order index keys sort them (PAD
    /// SPACE for the utf8mb4 collations, NO PAD for `Binary`). The one rule the SQL layer's
    /// comparisons use, so a comparison and an index range always agree.
    #[must_use]
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        compare(self, a, b)
    }

    /// Whether `a` and `b` are equal under this collation.
    #[must_use]
    pub fn equal(self, a: &[u8], b: &[u8]) -> bool {
        compare(self, a, b) == Ordering::Equal
    }

    /// The weights of `bytes` with trailing space weights removed under PAD SPACE: two
    /// strings are equal under the collation iff these are equal (GROUP BY keys).
    pub fn equality_weights(self, bytes: &[u8], out: &mut Vec<u16>) {
        weights(self, bytes, out);
        if pads_spaces(self) {
            while out.last() == Some(&SPACE) {
                out.pop();
            }
        }
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
