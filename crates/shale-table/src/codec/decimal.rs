//! DECIMAL's key and row encodings (docs/format/table-keys.md "DECIMAL", docs/format/rows.md).
//!
//! Key: independent of the scale, so `1.5` and `1.50` encode alike and a bound of any scale
//! orders against a column's values:
//! ```text
//! zero:     0x02
//! positive: 0x03 | exponent + 64 (u8) | base-100 digits, each 2*d+1 except the last, 2*d
//! negative: 0x01 | !(exponent + 64)   | the same digit bytes, each inverted
//! ```
//! `|value| = 0.D1 D2 ... Dn * 100^exponent` with `D1 != 0` and `Dn != 0` (trailing zero pairs
//! dropped). The last digit byte is even and every other one odd, so the encoding ends itself,
//! and a shorter digit string sorts below a longer one with the same start (inverted for
//! negatives).
//!
//! Row: `len: u8 | coefficient at the column's scale, two's complement little-endian (len bytes)`.

use num_bigint::BigInt;

use super::Reader;
use crate::decimal::{Decimal, MAX_PRECISION};
use crate::error::Result;

pub(crate) const NEGATIVE: u8 = 0x01;
pub(crate) const ZERO: u8 = 0x02;
pub(crate) const POSITIVE: u8 = 0x03;
/// Added to the base-100 exponent so it fits a byte: exponents run from -15 (`1e-30`) to 33.
const EXPONENT_BIAS: i32 = 64;

/// Appends the memcomparable encoding of `value`.
pub(crate) fn encode_key(out: &mut Vec<u8>, value: &Decimal) {
    let Some((digits, point)) = value.normalized_digits() else {
        out.push(ZERO);
        return;
    };
    // Pad on the left so the point falls between digit pairs, then on the right to pairs.
    let pad_left = usize::from(point.rem_euclid(2) == 1);
    let exponent = (point + 1).div_euclid(2);
    let mut padded = "0".repeat(pad_left);
    padded.push_str(&digits);
    if padded.len() % 2 == 1 {
        padded.push('0');
    }
    let pairs: Vec<u8> = padded
        .as_bytes()
        .chunks(2)
        .map(|p| (p[0] - b'0') * 10 + (p[1] - b'0'))
        .collect();
    let negative = value.is_negative();
    let flip = |b: u8| if negative { !b } else { b };
    out.push(if negative { NEGATIVE } else { POSITIVE });
    // Exponents of values that fit 65 digits and 30 decimals are within -15..=33.
    out.push(flip(
        u8::try_from(exponent + EXPONENT_BIAS).unwrap_or(u8::MAX),
    ));
    let last = pairs.len() - 1;
    for (i, &pair) in pairs.iter().enumerate() {
        let byte = if i == last { 2 * pair } else { 2 * pair + 1 };
        out.push(flip(byte));
    }
}

/// Advances past one encoded decimal.
pub(crate) fn skip_key(reader: &mut Reader<'_>) -> Result<()> {
    let negative = match reader.u8()? {
        ZERO => return Ok(()),
        NEGATIVE => true,
        POSITIVE => false,
        _ => return Err(reader.corruption("bad decimal sign byte")),
    };
    reader.u8()?;
    // At most 34 base-100 digits (65 decimal digits, padded on both sides).
    for _ in 0..40 {
        let byte = reader.u8()?;
        let byte = if negative { !byte } else { byte };
        if byte > 199 {
            return Err(reader.corruption("bad decimal digit byte"));
        }
        if byte % 2 == 0 {
            return Ok(());
        }
    }
    Err(reader.corruption("decimal key longer than 65 digits"))
}

/// Appends the row encoding of `value`, already at the column's scale.
pub(crate) fn encode_row(out: &mut Vec<u8>, value: &Decimal) {
    let bytes = value.coefficient().to_signed_bytes_le();
    out.push(bytes.len() as u8);
    out.extend_from_slice(&bytes);
}

/// Reads a row-encoded decimal of a DECIMAL(`precision`, `scale`) column.
pub(crate) fn decode_row(reader: &mut Reader<'_>, precision: u8, scale: u8) -> Result<Decimal> {
    let len = reader.u8()?;
    if len > 32 {
        return Err(reader.corruption("decimal longer than 32 bytes"));
    }
    let coefficient = BigInt::from_signed_bytes_le(reader.take(usize::from(len))?);
    let value = Decimal::new(coefficient, scale);
    if value.digits() > u32::from(precision.min(MAX_PRECISION)) {
        return Err(reader.corruption("decimal has more digits than its column"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn random_decimal(rng: &mut SmallRng) -> Decimal {
        let digits = rng.gen_range(1..=65usize);
        let text: String = (0..digits)
            .map(|_| char::from(b'0' + rng.gen_range(0..10u8)))
            .collect();
        let scale = rng.gen_range(0..=30u8.min(digits as u8));
        let sign = if rng.gen_bool(0.5) { "-" } else { "" };
        let (int, frac) = text.split_at(digits - usize::from(scale));
        let int = if int.is_empty() { "0" } else { int };
        Decimal::parse(&format!("{sign}{int}.{frac}")).unwrap()
    }

    fn key(d: &Decimal) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(&mut out, d);
        out
    }

    #[test]
    fn key_order_is_numeric_order() {
        let mut rng = SmallRng::seed_from_u64(21);
        let mut values: Vec<Decimal> = (0..3000).map(|_| random_decimal(&mut rng)).collect();
        for s in [
            "0", "0.00", "-0.5", "0.5", "1", "1.0", "10", "-10", "0.01", "-0.01", "99.99",
        ] {
            values.push(Decimal::parse(s).unwrap());
        }
        // Values close to each other: the same digits at other scales and neighbours.
        for i in 0..values.len().min(500) {
            let v = values[i].clone();
            values.push(v.round_to(v.scale().saturating_sub(1)));
            values.push(v.round_to((v.scale() + 2).min(30)));
        }
        for pair in values.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(key(a).cmp(&key(b)), a.cmp(b), "{a} vs {b}");
        }
        let mut sorted = values.clone();
        sorted.sort();
        let keys: Vec<Vec<u8>> = sorted.iter().map(key).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        for d in &values {
            let k = key(d);
            let mut reader = Reader::new(&k, "test");
            skip_key(&mut reader).unwrap();
            assert!(reader.is_empty(), "{d}");
            // A key with another column after it still ends in the right place.
            let mut longer = k.clone();
            longer.extend_from_slice(&[0x00, 0xFF, 0x07]);
            let mut reader = Reader::new(&longer, "test");
            skip_key(&mut reader).unwrap();
            assert_eq!(reader.rest(), &[0x00, 0xFF, 0x07]);
        }
    }

    #[test]
    fn examples_of_docs_format_table_keys() {
        for (value, bytes) in [
            ("0.00", &[0x02][..]),
            ("1", &[0x03, 0x41, 0x02]),
            ("10", &[0x03, 0x41, 0x14]),
            ("123.45", &[0x03, 0x42, 0x03, 0x2f, 0x5a]),
            ("0.05", &[0x03, 0x40, 0x0a]),
            ("-1", &[0x01, 0xbe, 0xfd]),
        ] {
            assert_eq!(key(&Decimal::parse(value).unwrap()), bytes, "{value}");
        }
    }

    #[test]
    fn rows_round_trip_and_bad_bytes_fail() {
        let mut rng = SmallRng::seed_from_u64(22);
        for _ in 0..2000 {
            let d = random_decimal(&mut rng);
            let mut out = Vec::new();
            encode_row(&mut out, &d);
            let back = decode_row(&mut Reader::new(&out, "t"), 65, d.scale()).unwrap();
            assert_eq!(back.to_string(), d.to_string());
            for len in 0..out.len() {
                assert!(decode_row(&mut Reader::new(&out[..len], "t"), 65, d.scale()).is_err());
            }
            let k = key(&d);
            for len in 0..k.len() {
                assert!(skip_key(&mut Reader::new(&k[..len], "t")).is_err());
            }
        }
        let mut out = Vec::new();
        encode_row(&mut out, &Decimal::parse("12345").unwrap());
        assert!(decode_row(&mut Reader::new(&out, "t"), 4, 0).is_err());
        assert!(skip_key(&mut Reader::new(&[0x07], "t")).is_err());
    }
}
