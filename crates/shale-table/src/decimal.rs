//! Exact decimal numbers (DECIMAL / NUMERIC): an integer coefficient and a scale, `value =
//! coefficient / 10^scale`, as `MySQL` keeps them to 65 digits.
//!
//! The coefficient is a `num_bigint::BigInt` (docs/dependencies.md); everything decimal about
//! it (scale, rounding, text) is here. The SQL rules built on it (result scales, strict-mode
//! storing, coercions) live in shale-sql.
//!
//! Invariants:
//! 1. `scale <= MAX_SCALE`; operations that would exceed it round (division) or are given the
//!    scale to keep by their caller.
//! 2. Equality and order are numeric: `1.5 == 1.50`. [`Decimal::to_string`] keeps the scale
//!    (`1.50` prints as `1.50`, as `MySQL` shows a DECIMAL(p,2) value).
//! 3. Rounding is half away from zero, `MySQL`'s rule for DECIMAL.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, Sign};
use num_traits::{Signed, ToPrimitive, Zero};

/// The most digits a DECIMAL holds.
pub const MAX_PRECISION: u8 = 65;
/// The most digits after the point.
pub const MAX_SCALE: u8 = 30;

/// An exact decimal number.
#[derive(Clone)]
pub struct Decimal {
    coefficient: BigInt,
    scale: u8,
}

fn pow10(n: u32) -> BigInt {
    BigInt::from(10u8).pow(n)
}

impl Decimal {
    /// `coefficient / 10^scale` (scale is capped at [`MAX_SCALE`] by rounding).
    #[must_use]
    pub fn new(coefficient: BigInt, scale: u8) -> Decimal {
        let d = Decimal { coefficient, scale };
        if scale > MAX_SCALE {
            d.round_to(MAX_SCALE)
        } else {
            d
        }
    }

    /// An integer.
    #[must_use]
    pub fn from_i128(v: i128) -> Decimal {
        Decimal {
            coefficient: BigInt::from(v),
            scale: 0,
        }
    }

    #[must_use]
    pub fn zero() -> Decimal {
        Decimal::from_i128(0)
    }

    /// Parses `[+-]digits[.digits][e[+-]exp]` (surrounding spaces allowed) exactly; None when
    /// the text is not such a number or needs more than [`MAX_SCALE`] fraction digits after
    /// removing trailing zeros of the exponent form (those are rounded to `MAX_SCALE`).
    #[must_use]
    pub fn parse(text: &str) -> Option<Decimal> {
        let t = text.trim();
        let (negative, t) = match t.as_bytes().first()? {
            b'-' => (true, &t[1..]),
            b'+' => (false, &t[1..]),
            _ => (false, t),
        };
        let (mantissa, exponent) = match t.find(['e', 'E']) {
            Some(at) => (&t[..at], t[at + 1..].parse::<i32>().ok()?),
            None => (t, 0),
        };
        let (int_part, frac_part) = match mantissa.find('.') {
            Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
            None => (mantissa, ""),
        };
        if int_part.is_empty() && frac_part.is_empty()
            || !int_part.bytes().all(|b| b.is_ascii_digit())
            || !frac_part.bytes().all(|b| b.is_ascii_digit())
            || int_part.len() + frac_part.len() > 200
            || exponent.abs() > 200
        {
            return None;
        }
        let digits = format!("{int_part}{frac_part}");
        let mut coefficient: BigInt = digits.parse().unwrap_or_default();
        let mut scale = i32::try_from(frac_part.len()).ok()? - exponent;
        if scale < 0 {
            coefficient *= pow10(scale.unsigned_abs());
            scale = 0;
        }
        if negative {
            coefficient = -coefficient;
        }
        let scale = u8::try_from(scale).unwrap_or(u8::MAX);
        Some(if scale > MAX_SCALE {
            Decimal {
                coefficient,
                scale: 0,
            }
            .div_pow10_round(u32::from(scale - MAX_SCALE), MAX_SCALE)
        } else {
            Decimal { coefficient, scale }
        })
    }

    /// The nearest decimal to a finite double (its shortest round-trip text), None for NaN
    /// and infinities.
    #[must_use]
    pub fn from_f64(d: f64) -> Option<Decimal> {
        if !d.is_finite() {
            return None;
        }
        Decimal::parse(&format!("{d:e}"))
    }

    #[must_use]
    pub fn coefficient(&self) -> &BigInt {
        &self.coefficient
    }

    #[must_use]
    pub fn scale(&self) -> u8 {
        self.scale
    }

    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.coefficient.is_zero()
    }

    #[must_use]
    pub fn is_negative(&self) -> bool {
        self.coefficient.sign() == Sign::Minus
    }

    /// Digits of the coefficient (0 has one).
    #[must_use]
    pub fn digits(&self) -> u32 {
        let n = self.coefficient.magnitude().to_string().len();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Digits before the point (0 for `0.5`).
    #[must_use]
    pub fn integer_digits(&self) -> u32 {
        if self.is_zero() {
            return 0;
        }
        self.digits().saturating_sub(u32::from(self.scale))
    }

    /// Whether the value, as it is, fits DECIMAL(`precision`, `scale`) without rounding its
    /// integer part away.
    #[must_use]
    pub fn fits(&self, precision: u8, scale: u8) -> bool {
        self.integer_digits() <= u32::from(precision.saturating_sub(scale))
    }

    /// `coefficient / 10^shift`, rounded half away from zero, given scale `scale`.
    fn div_pow10_round(&self, shift: u32, scale: u8) -> Decimal {
        let divisor = pow10(shift);
        let (q, r) = (&self.coefficient / &divisor, &self.coefficient % &divisor);
        let twice = r.abs() * 2u8;
        let q = if twice >= divisor {
            if self.is_negative() {
                q - 1
            } else {
                q + 1
            }
        } else {
            q
        };
        Decimal {
            coefficient: q,
            scale,
        }
    }

    /// The value with exactly `scale` fraction digits, rounded half away from zero.
    #[must_use]
    pub fn round_to(&self, scale: u8) -> Decimal {
        match scale.cmp(&self.scale) {
            Ordering::Equal => self.clone(),
            Ordering::Greater => Decimal {
                coefficient: &self.coefficient * pow10(u32::from(scale - self.scale)),
                scale,
            },
            Ordering::Less => self.div_pow10_round(u32::from(self.scale - scale), scale),
        }
    }

    /// The value with `scale` fraction digits, rounded toward zero (or padded).
    #[must_use]
    pub fn truncate_to(&self, scale: u8) -> Decimal {
        if scale >= self.scale {
            return self.round_to(scale);
        }
        Decimal {
            coefficient: &self.coefficient / pow10(u32::from(self.scale - scale)),
            scale,
        }
    }

    /// The integer at or below the value.
    #[must_use]
    pub fn floor(&self) -> Decimal {
        let t = self.truncate_to(0);
        if self.is_negative() && t != *self {
            t.sub(&Decimal::from_i128(1))
        } else {
            t
        }
    }

    /// The integer at or above the value.
    #[must_use]
    pub fn ceil(&self) -> Decimal {
        let t = self.truncate_to(0);
        if !self.is_negative() && t != *self {
            t.add(&Decimal::from_i128(1))
        } else {
            t
        }
    }

    /// The value rounded to an integer, if it fits i128.
    #[must_use]
    pub fn to_i128(&self) -> Option<i128> {
        self.round_to(0).coefficient.to_i128()
    }

    /// The nearest double.
    #[must_use]
    pub fn to_f64(&self) -> f64 {
        self.to_string().parse().unwrap_or(0.0)
    }

    fn aligned(&self, other: &Decimal) -> (BigInt, BigInt, u8) {
        let scale = self.scale.max(other.scale);
        (
            self.round_to(scale).coefficient,
            other.round_to(scale).coefficient,
            scale,
        )
    }

    /// `self + other`, exact (scale: the larger one).
    #[must_use]
    pub fn add(&self, other: &Decimal) -> Decimal {
        let (a, b, scale) = self.aligned(other);
        Decimal {
            coefficient: a + b,
            scale,
        }
    }

    /// `self - other`, exact.
    #[must_use]
    pub fn sub(&self, other: &Decimal) -> Decimal {
        let (a, b, scale) = self.aligned(other);
        Decimal {
            coefficient: a - b,
            scale,
        }
    }

    /// `self * other`, exact when the scales add up to at most [`MAX_SCALE`], else rounded.
    #[must_use]
    pub fn mul(&self, other: &Decimal) -> Decimal {
        let scale = u16::from(self.scale) + u16::from(other.scale);
        let product = &self.coefficient * &other.coefficient;
        if scale > u16::from(MAX_SCALE) {
            Decimal {
                coefficient: product,
                scale: 0,
            }
            .div_pow10_round(u32::from(scale - u16::from(MAX_SCALE)), MAX_SCALE)
        } else {
            Decimal {
                coefficient: product,
                scale: scale as u8,
            }
        }
    }

    /// `self / other` rounded half away from zero to `scale` digits; None when `other` is 0.
    #[must_use]
    pub fn div(&self, other: &Decimal, scale: u8) -> Option<Decimal> {
        if other.is_zero() {
            return None;
        }
        let scale = scale.min(MAX_SCALE);
        // self/other * 10^(scale+1) as an integer, then one more digit rounded off.
        let shift = i32::from(scale) + 1 + i32::from(other.scale) - i32::from(self.scale);
        let (num, den) = if shift >= 0 {
            (
                &self.coefficient * pow10(shift.unsigned_abs()),
                other.coefficient.clone(),
            )
        } else {
            (
                self.coefficient.clone(),
                &other.coefficient * pow10(shift.unsigned_abs()),
            )
        };
        let q = num / den;
        Some(
            Decimal {
                coefficient: q,
                scale: 0,
            }
            .div_pow10_round(1, scale),
        )
    }

    /// `self % other` (the sign of `self`, `MySQL`'s rule); None when `other` is 0.
    #[must_use]
    pub fn rem(&self, other: &Decimal) -> Option<Decimal> {
        if other.is_zero() {
            return None;
        }
        let (a, b, scale) = self.aligned(other);
        Some(Decimal {
            coefficient: a % b,
            scale,
        })
    }

    #[must_use]
    pub fn neg(&self) -> Decimal {
        Decimal {
            coefficient: -&self.coefficient,
            scale: self.scale,
        }
    }

    #[must_use]
    pub fn abs(&self) -> Decimal {
        Decimal {
            coefficient: self.coefficient.abs(),
            scale: self.scale,
        }
    }

    /// The digits of `|value|` without trailing fraction zeros, and the position of the point
    /// in them: `123.4500` -> ("12345", 3); `0.05` -> ("5", -1). None for zero.
    pub(crate) fn normalized_digits(&self) -> Option<(String, i32)> {
        if self.is_zero() {
            return None;
        }
        let digits = self.coefficient.magnitude().to_string();
        let point = i32::try_from(digits.len()).unwrap_or(i32::MAX) - i32::from(self.scale);
        let trimmed = digits.trim_end_matches('0');
        Some((trimmed.to_string(), point))
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b, _) = self.aligned(other);
        a.cmp(&b)
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.coefficient.magnitude().to_string();
        let scale = usize::from(self.scale);
        let digits = if digits.len() <= scale {
            format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
        } else {
            digits
        };
        if self.is_negative() {
            f.write_str("-")?;
        }
        let (int, frac) = digits.split_at(digits.len() - scale);
        f.write_str(int)?;
        if scale > 0 {
            f.write_str(".")?;
            f.write_str(frac)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Decimal({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap_or_else(|| panic!("{s}"))
    }

    #[test]
    fn parse_and_print() {
        for (text, shown) in [
            ("1.50", "1.50"),
            ("-0.05", "-0.05"),
            (".5", "0.5"),
            ("5.", "5"),
            ("+12", "12"),
            ("1.5e2", "150"),
            ("1.5e-2", "0.015"),
            (" 7 ", "7"),
            ("0.000", "0.000"),
        ] {
            assert_eq!(d(text).to_string(), shown, "{text}");
        }
        for bad in ["", ".", "-", "1.2.3", "abc", "1e", "--1", "1 2"] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
        let big = "9".repeat(65);
        assert_eq!(d(&big).to_string(), big);
        assert_eq!(d(&big).digits(), 65);
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        for (v, scale, want) in [
            ("1.25", 1, "1.3"),
            ("-1.25", 1, "-1.3"),
            ("1.24", 1, "1.2"),
            ("-0.5", 0, "-1"),
            ("0.49", 0, "0"),
            ("2", 2, "2.00"),
            ("9.995", 2, "10.00"),
        ] {
            assert_eq!(d(v).round_to(scale).to_string(), want, "{v} to {scale}");
        }
        assert_eq!(d("-1.7").truncate_to(0).to_string(), "-1");
        assert_eq!(d("-1.2").floor().to_string(), "-2");
        assert_eq!(d("1.2").ceil().to_string(), "2");
        assert_eq!(d("-1.2").ceil().to_string(), "-1");
    }

    #[test]
    fn arithmetic_is_exact() {
        assert_eq!(d("0.1").add(&d("0.2")).to_string(), "0.3");
        assert_eq!(d("1.10").sub(&d("2.005")).to_string(), "-0.905");
        assert_eq!(d("1.5").mul(&d("-2.25")).to_string(), "-3.375");
        assert_eq!(d("1").div(&d("3"), 4).unwrap().to_string(), "0.3333");
        assert_eq!(d("2").div(&d("3"), 4).unwrap().to_string(), "0.6667");
        assert_eq!(d("-2").div(&d("3"), 4).unwrap().to_string(), "-0.6667");
        assert_eq!(d("1.00").div(&d("0.5"), 6).unwrap().to_string(), "2.000000");
        assert!(d("1").div(&d("0.00"), 4).is_none());
        assert_eq!(d("7.5").rem(&d("2")).unwrap().to_string(), "1.5");
        assert_eq!(d("-7.5").rem(&d("2")).unwrap().to_string(), "-1.5");
        let big = d(&"9".repeat(65));
        assert_eq!(big.add(&d("1")).digits(), 66);
    }

    #[test]
    fn order_is_numeric() {
        assert_eq!(d("1.5"), d("1.500"));
        assert!(d("-1.5") < d("-1.49"));
        assert!(d("0.001") > d("0"));
        assert!(d("10") > d("9.999"));
        assert_eq!(d("1.5").to_f64().to_bits(), 1.5f64.to_bits());
        assert_eq!(Decimal::from_f64(0.1).unwrap().to_string(), "0.1");
        assert_eq!(
            Decimal::from_f64(1e20).unwrap().to_string(),
            "100000000000000000000"
        );
        assert_eq!(d("1.5").to_i128(), Some(2));
        assert!(d("12.345").fits(5, 3) && !d("123.4").fits(5, 3));
    }
}
