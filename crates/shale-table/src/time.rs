//! TIME values: a signed duration of at most 838:59:59 held to the microsecond.
//!
//! Invariants:
//! 1. A [`Time`] is within `-838:59:59.000000 ..= 838:59:59.000000` (MySQL's TIME range)
//!    and its fraction fits its `fsp` (fraction digits shown, 0..=6).
//! 2. Equality and order are those of the signed microsecond count (`fsp` ignored), which
//!    [`Time::key_bits`] preserves: the bits order as the values do.

use std::cmp::Ordering;
use std::fmt;

/// The largest TIME in microseconds: 838:59:59.
pub const TIME_MAX_MICROS: i64 = (838 * 3600 + 59 * 60 + 59) * 1_000_000;

/// Added to the microsecond count for the key form: every TIME maps into `0..2^48`.
const KEY_BIAS: i64 = 1 << 47;

/// A TIME(fsp) value.
#[derive(Clone, Copy)]
pub struct Time {
    micros: i64,
    fsp: u8,
}

/// What a text or number read as a TIME gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeParse {
    /// A value in range.
    Ok(Time),
    /// A well-formed value past the range, clipped to the nearest end (MySQL: 1264 in
    /// non-strict mode, 1292 in strict mode).
    Clipped(Time),
    /// Not a time (MySQL: `00:00:00` with 1265/1292 in non-strict, 1292 in strict mode).
    Invalid,
}

impl Time {
    /// A TIME of `micros` microseconds, shown with `fsp` digits; None out of range or when
    /// the fraction is finer than `fsp`.
    #[must_use]
    pub fn from_micros(micros: i64, fsp: u8) -> Option<Time> {
        let unit = 10i64.pow(6 - u32::from(fsp.min(6)));
        (fsp <= 6 && micros.abs() <= TIME_MAX_MICROS && micros % unit == 0)
            .then_some(Time { micros, fsp })
    }

    /// `micros` rounded half away from zero to `fsp` digits and clipped into the range.
    #[must_use]
    pub fn clipped(micros: i128, fsp: u8) -> TimeParse {
        let fsp = fsp.min(6);
        let unit = 10i128.pow(6 - u32::from(fsp));
        let rest = micros % unit;
        let mut rounded = micros - rest;
        if rest.abs() * 2 >= unit {
            rounded += unit * micros.signum();
        }
        let max = i128::from(TIME_MAX_MICROS);
        if rounded.abs() > max {
            let micros = if rounded < 0 {
                -TIME_MAX_MICROS
            } else {
                TIME_MAX_MICROS
            };
            return TimeParse::Clipped(Time { micros, fsp });
        }
        // In range, so it fits an i64.
        #[allow(clippy::cast_possible_truncation)]
        TimeParse::Ok(Time {
            micros: rounded as i64,
            fsp,
        })
    }

    /// Reads MySQL's TIME forms: `[-][D ]hh:mm[:ss][.ffffff]` (`D` days, 0..=34),
    /// `[-]hhmmss[.ffffff]` without colons (the two rightmost digits are seconds, as
    /// `'1112'` is `00:11:12`), and a datetime `YYYY-MM-DD hh:mm:ss[.f]` (its time). The
    /// fraction is rounded to `fsp` digits.
    #[must_use]
    pub fn parse(text: &str, fsp: u8) -> TimeParse {
        let t = text.trim();
        if let Some(dt) = crate::temporal::DateTime::parse(t, Some(6)) {
            if t.contains([' ', 'T']) && t.contains('-') {
                let (_, _, _, h, m, s, us) = dt.parts();
                let micros = (i128::from(h) * 3600 + i128::from(m) * 60 + i128::from(s))
                    * 1_000_000
                    + i128::from(us);
                return Time::clipped(micros, fsp);
            }
        }
        let (negative, body) = match t.strip_prefix('-') {
            Some(rest) => (true, rest.trim_start()),
            None => (false, t),
        };
        let Some(micros) = parse_unsigned(body) else {
            return TimeParse::Invalid;
        };
        Time::clipped(if negative { -micros } else { micros }, fsp)
    }

    /// A number read as `[-]hhmmss[.ffffff]` (`123456` is 12:34:56, `12.5` 00:00:12.5).
    #[must_use]
    pub fn from_number(integer: i128, fraction_micros: u32, negative: bool, fsp: u8) -> TimeParse {
        let abs = integer.abs();
        let (h, m, s) = (abs / 10_000, abs / 100 % 100, abs % 100);
        if m >= 60 || s >= 60 || fraction_micros >= 1_000_000 {
            return TimeParse::Invalid;
        }
        let micros = (h * 3600 + m * 60 + s) * 1_000_000 + i128::from(fraction_micros);
        Time::clipped(if negative { -micros } else { micros }, fsp)
    }

    /// Signed microseconds.
    #[must_use]
    pub fn micros(&self) -> i64 {
        self.micros
    }

    /// Fraction digits shown.
    #[must_use]
    pub fn fsp(&self) -> u8 {
        self.fsp
    }

    /// The same value shown with `fsp` digits, rounded (and clipped) to them.
    #[must_use]
    pub fn round_to(self, fsp: u8) -> Time {
        match Time::clipped(i128::from(self.micros), fsp) {
            TimeParse::Ok(t) | TimeParse::Clipped(t) => t,
            TimeParse::Invalid => self,
        }
    }

    /// `(negative, hours, minutes, seconds, microseconds)`; hours go up to 838.
    #[must_use]
    pub fn parts(&self) -> (bool, u32, u8, u8, u32) {
        let abs = self.micros.unsigned_abs();
        let seconds = abs / 1_000_000;
        // Every part is below its unit by the range invariant.
        #[allow(clippy::cast_possible_truncation)]
        (
            self.micros < 0,
            (seconds / 3600) as u32,
            (seconds / 60 % 60) as u8,
            (seconds % 60) as u8,
            (abs % 1_000_000) as u32,
        )
    }

    /// The key form: `micros + 2^47`, which orders as the values and fits 6 bytes.
    #[must_use]
    pub fn key_bits(&self) -> u64 {
        (self.micros + KEY_BIAS).cast_unsigned()
    }

    /// The value of [`Time::key_bits`] bits; None when they are not a TIME(fsp).
    #[must_use]
    pub fn from_key_bits(bits: u64, fsp: u8) -> Option<Time> {
        Time::from_micros(i64::try_from(bits).ok()? - KEY_BIAS, fsp)
    }

    /// The value as the number MySQL reads it as (`hhmmss[.ffffff]`, `-123456` for
    /// `-12:34:56`).
    #[must_use]
    pub fn to_f64(&self) -> f64 {
        let (negative, h, m, s, us) = self.parts();
        let v = f64::from(h) * 10_000.0 + f64::from(m) * 100.0 + f64::from(s) + f64::from(us) / 1e6;
        if negative {
            -v
        } else {
            v
        }
    }
}

/// `[D ]hh:mm[:ss][.f]` or `hhmmss[.f]` without a sign, in microseconds (unclipped).
fn parse_unsigned(body: &str) -> Option<i128> {
    let (main, fraction) = match body.find('.') {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let micros_of_fraction = match fraction {
        None => 0,
        Some(f) => {
            if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Seven digits, the seventh rounding; the caller rounds again to its fsp.
            let mut digits: String = f.chars().take(7).collect();
            while digits.len() < 7 {
                digits.push('0');
            }
            let seven: i128 = digits.parse().ok()?;
            seven / 10 + i128::from(seven % 10 >= 5)
        }
    };
    let number = |s: &str| -> Option<i128> {
        (!s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (days, clock) = match main.split_once(' ') {
        Some((d, rest)) => (Some(number(d)?), rest.trim_start()),
        None => (None, main),
    };
    let (h, m, s) = if clock.contains(':') {
        let mut parts = clock.split(':');
        let h = number(parts.next()?)?;
        let m = number(parts.next()?)?;
        let s = match parts.next() {
            Some(s) => number(s)?,
            None => 0,
        };
        if parts.next().is_some() || (fraction.is_some() && clock.matches(':').count() < 2) {
            return None;
        }
        (h, m, s)
    } else if days.is_some() {
        // `D hh`: hours only.
        (number(clock)?, 0, 0)
    } else {
        let n = number(clock)?;
        (n / 10_000, n / 100 % 100, n % 100)
    };
    if m >= 60 || s >= 60 || days.is_some_and(|d| d > 34) {
        return None;
    }
    let hours = days.unwrap_or(0) * 24 + h;
    Some((hours * 3600 + m * 60 + s) * 1_000_000 + micros_of_fraction)
}

impl PartialEq for Time {
    fn eq(&self, other: &Self) -> bool {
        self.micros == other.micros
    }
}

impl Eq for Time {}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Time {
    fn cmp(&self, other: &Self) -> Ordering {
        self.micros.cmp(&other.micros)
    }
}

impl fmt::Display for Time {
    /// `[-]hh:mm:ss[.f]`: at least two hour digits, `fsp` fraction digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (negative, h, m, s, us) = self.parts();
        let sign = if negative { "-" } else { "" };
        write!(f, "{sign}{h:02}:{m:02}:{s:02}")?;
        if self.fsp > 0 {
            let digits = format!("{us:06}");
            write!(f, ".{}", &digits[..usize::from(self.fsp)])?;
        }
        Ok(())
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Time({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str, fsp: u8) -> String {
        match Time::parse(text, fsp) {
            TimeParse::Ok(t) => t.to_string(),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn parses_mysql_forms() {
        assert_eq!(ok("12:34:56", 0), "12:34:56");
        assert_eq!(ok("1 02:00:00", 0), "26:00:00");
        assert_eq!(ok("-00:00:01", 0), "-00:00:01");
        assert_eq!(ok("11:12", 0), "11:12:00");
        assert_eq!(ok("1112", 0), "00:11:12");
        assert_eq!(ok("12", 0), "00:00:12");
        assert_eq!(ok("123456.5", 1), "12:34:56.5");
        assert_eq!(ok("838:59:59", 0), "838:59:59");
        assert_eq!(ok("2 3", 0), "51:00:00");
        assert_eq!(ok("00:00:01.23456", 3), "00:00:01.235");
        assert_eq!(ok("-00:00:00.5", 0), "-00:00:01");
        assert_eq!(ok("2024-01-02 03:04:05.25", 2), "03:04:05.25");
        assert_eq!(ok("12.3456", 3), "00:00:12.346");
        for bad in [
            "abc",
            "12:60:00",
            "1:2:3:4",
            "",
            "35 00:00:00",
            "12:3x",
            "-",
        ] {
            assert_eq!(Time::parse(bad, 0), TimeParse::Invalid, "{bad}");
        }
        let TimeParse::Clipped(t) = Time::parse("-850:00:00", 6) else {
            panic!()
        };
        assert_eq!(t.to_string(), "-838:59:59.000000");
        assert!(matches!(
            Time::parse("838:59:59.5", 0),
            TimeParse::Clipped(_)
        ));
    }

    #[test]
    fn numbers_and_parts() {
        let TimeParse::Ok(t) = Time::from_number(123_456, 500_000, true, 1) else {
            panic!()
        };
        assert_eq!(t.to_string(), "-12:34:56.5");
        assert_eq!(t.parts(), (true, 12, 34, 56, 500_000));
        assert!((t.to_f64() + 123_456.5).abs() < 1e-9);
        assert_eq!(Time::from_number(160, 0, false, 0), TimeParse::Invalid);
    }

    #[test]
    fn key_bits_order_and_round_trip() {
        let values = [-TIME_MAX_MICROS, -1, 0, 1, 999_999, TIME_MAX_MICROS];
        for w in values.windows(2) {
            let a = Time::from_micros(w[0], 6).unwrap();
            let b = Time::from_micros(w[1], 6).unwrap();
            assert!(a.key_bits() < b.key_bits());
            assert!(a.key_bits() < 1 << 48);
            assert_eq!(Time::from_key_bits(a.key_bits(), 6), Some(a));
        }
        assert_eq!(Time::from_key_bits(1 << 47 | 1, 0), None);
        assert_eq!(Time::from_micros(TIME_MAX_MICROS + 1, 6), None);
    }
}
