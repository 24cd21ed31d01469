//! CAST(x AS type) and typed literals (`DATE '2024-01-02'`, `TIMESTAMP '...'`), with MySQL's
//! conversions: numbers to DECIMAL round half away from zero and clamp to the type's largest
//! value; text that is not a date casts to NULL; SIGNED/UNSIGNED round and wrap to 64 bits as
//! MySQL's integer casts do; CHAR gives the value's text.
//!
//! Floating point (MySQL 8.0.17+): DOUBLE, DOUBLE PRECISION and REAL give a DOUBLE (REAL a
//! FLOAT under REAL_AS_FLOAT, syntax_mode.rs rule 4); FLOAT gives a single-precision FLOAT,
//! and FLOAT(p) one for p <= 24, a DOUBLE for 25 <= p <= 53, error 1426 past 53. A value
//! past FLOAT's range is error 1690, as MySQL's (which names the expression; Shale names
//! the value).

use shale_table::{DateTime, Decimal, Value, DECIMAL_MAX_PRECISION};
use sqlparser::ast;

use crate::error::SqlError;
use crate::types::SqlType;
use crate::value::{display, to_i128};

/// What a CAST converts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CastTarget {
    Decimal {
        precision: u8,
        scale: u8,
    },
    /// DATE (`fsp` None) or DATETIME(fsp).
    DateTime {
        fsp: Option<u8>,
    },
    Signed,
    Unsigned,
    Char,
    /// TIME(fsp).
    Time {
        fsp: u8,
    },
    /// DOUBLE, and REAL unless `sql_mode` has REAL_AS_FLOAT (syntax_mode.rs rule 4).
    Double,
    /// FLOAT, FLOAT(p) for p <= 24, and REAL under REAL_AS_FLOAT.
    Float,
}

/// FLOAT(p) is single precision up to this many bits of mantissa, DOUBLE up to
/// [`DOUBLE_PRECISION_BITS`] (MySQL's PRECISION_FOR_FLOAT and PRECISION_FOR_DOUBLE).
const FLOAT_PRECISION_BITS: u64 = 24;
const DOUBLE_PRECISION_BITS: u64 = 53;

impl CastTarget {
    /// The target of `CAST(... AS data_type)`; 1235 for types CAST does not support here.
    pub(crate) fn of(data_type: &ast::DataType) -> Result<CastTarget, SqlError> {
        use ast::DataType as D;
        Ok(match data_type {
            D::Decimal(info) | D::Dec(info) | D::Numeric(info) => {
                let (precision, scale) = match *info {
                    ast::ExactNumberInfo::None => (10, 0),
                    ast::ExactNumberInfo::Precision(p) => (p, 0),
                    ast::ExactNumberInfo::PrecisionAndScale(p, s) => {
                        (p, u64::try_from(s).unwrap_or(u64::MAX))
                    }
                };
                if precision > u64::from(DECIMAL_MAX_PRECISION) || scale > 30 || scale > precision {
                    return Err(SqlError::new(
                        1427,
                        "42000",
                        "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '')."
                            .to_string(),
                    ));
                }
                CastTarget::Decimal {
                    precision: precision.max(1) as u8,
                    scale: scale as u8,
                }
            }
            D::Date => CastTarget::DateTime { fsp: None },
            D::Datetime(fsp) => CastTarget::DateTime {
                fsp: Some(fsp.unwrap_or(0).min(6) as u8),
            },
            D::Time(fsp, ast::TimezoneInfo::None) => CastTarget::Time {
                fsp: fsp.unwrap_or(0).min(6) as u8,
            },
            D::Double(ast::ExactNumberInfo::None) | D::DoublePrecision | D::Real => {
                CastTarget::Double
            }
            D::Float(ast::ExactNumberInfo::None) => CastTarget::Float,
            D::Float(ast::ExactNumberInfo::Precision(p)) if *p <= FLOAT_PRECISION_BITS => {
                CastTarget::Float
            }
            D::Float(ast::ExactNumberInfo::Precision(p)) if *p <= DOUBLE_PRECISION_BITS => {
                CastTarget::Double
            }
            D::Float(ast::ExactNumberInfo::Precision(p)) => {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!(
                        "Too-big precision {p} specified for 'CAST'. Maximum is \
                         {DOUBLE_PRECISION_BITS}."
                    ),
                ))
            }
            // MySQL's CAST takes no FLOAT(M,D): a syntax error at the comma.
            D::Float(ast::ExactNumberInfo::PrecisionAndScale(_, scale)) => {
                return Err(SqlError::syntax(&format!(",{scale})"), 1))
            }
            D::Signed | D::SignedInteger => CastTarget::Signed,
            D::Unsigned | D::UnsignedInteger => CastTarget::Unsigned,
            D::Char(_) | D::Character(_) | D::Varchar(_) | D::Nvarchar(_) | D::Binary(_) => {
                CastTarget::Char
            }
            other => return Err(SqlError::unsupported(format!("CAST AS {other}"))),
        })
    }

    pub(crate) fn result_type(self) -> SqlType {
        match self {
            CastTarget::Decimal { precision, scale } => SqlType::Decimal { precision, scale },
            CastTarget::DateTime { fsp } => SqlType::DateTime { fsp },
            CastTarget::Time { fsp } => SqlType::Time { fsp },
            CastTarget::Signed => SqlType::Int {
                unsigned: false,
                len: 21,
            },
            CastTarget::Unsigned => SqlType::Int {
                unsigned: true,
                len: 21,
            },
            CastTarget::Char => SqlType::Str {
                collation: shale_table::Collation::Utf8mb4GeneralCi,
                len: 255,
            },
            CastTarget::Double => SqlType::Double,
            CastTarget::Float => SqlType::Float,
        }
    }
}

/// The largest DECIMAL(p,s) value (`999.99` for (5,2)).
fn decimal_max(precision: u8, scale: u8) -> Decimal {
    let digits = "9".repeat(usize::from(precision));
    let text = if scale == 0 {
        digits
    } else {
        let (int, frac) = digits.split_at(usize::from(precision - scale));
        format!("{}.{frac}", if int.is_empty() { "0" } else { int })
    };
    Decimal::parse(&text).unwrap_or_else(Decimal::zero)
}

/// `CAST(value AS target)`; only a FLOAT past its range fails (1690).
pub(crate) fn cast(value: &Value, target: CastTarget) -> Result<Value, SqlError> {
    if matches!(value, Value::Null) {
        return Ok(Value::Null);
    }
    Ok(match target {
        CastTarget::Decimal { precision, scale } => {
            let Some(d) = crate::decimal::to_decimal(value) else {
                return Ok(Value::Null);
            };
            let d = d.round_to(scale);
            if d.fits(precision, scale) {
                Value::Decimal(d)
            } else if d.is_negative() {
                Value::Decimal(decimal_max(precision, scale).neg())
            } else {
                Value::Decimal(decimal_max(precision, scale))
            }
        }
        CastTarget::DateTime { fsp } => {
            let parsed = match value {
                Value::DateTime(d) => Some(d.round_to(fsp)),
                Value::Bytes(b) => std::str::from_utf8(b)
                    .ok()
                    .and_then(|s| DateTime::parse(s, fsp)),
                _ => None,
            };
            parsed.map_or(Value::Null, Value::DateTime)
        }
        CastTarget::Time { fsp } => {
            crate::time_type::to_time(value, fsp).map_or(Value::Null, Value::Time)
        }
        CastTarget::Signed => Value::Int(to_i128(value).unwrap_or(0) as i64),
        CastTarget::Unsigned => Value::UInt(to_i128(value).unwrap_or(0) as u64),
        CastTarget::Char => Value::Bytes(display(value).into_bytes()),
        CastTarget::Double => crate::value::to_f64(value).map_or(Value::Null, Value::Double),
        CastTarget::Float => match crate::value::to_f64(value) {
            None => Value::Null,
            Some(d) if d.abs() > f64::from(f32::MAX) => {
                // The value as a client prints it (`1e39`, not its 40 digits).
                let mut shown = String::new();
                crate::result::write_text(&mut shown, value, false);
                return Err(SqlError::new(
                    1690,
                    "22003",
                    format!("FLOAT value is out of range in 'cast({shown} as float)'"),
                ));
            }
            // Rounded to the nearest f32: what a FLOAT holds.
            #[allow(clippy::cast_possible_truncation)]
            Some(d) => Value::Double(f64::from(d as f32)),
        },
    })
}

/// A typed literal: `DATE '...'`, `TIMESTAMP '...'` / `DATETIME '...'` (the fraction digits
/// written set the precision). A text that is not such a value fails with 1525, as MySQL.
pub(crate) fn typed_literal(
    data_type: &ast::DataType,
    text: &str,
) -> Result<(Value, SqlType), SqlError> {
    use ast::DataType as D;
    let (fsp, kind) = match data_type {
        D::Date => (None, "DATE"),
        D::Timestamp(..) | D::Datetime(_) => {
            let digits = text
                .trim()
                .rsplit_once('.')
                .map_or(0, |(_, f)| f.len().min(6));
            (Some(digits as u8), "DATETIME")
        }
        D::Time(..) => {
            let digits = text
                .trim()
                .rsplit_once('.')
                .map_or(0, |(_, f)| f.len().min(6));
            let fsp = digits as u8;
            return match shale_table::Time::parse(text, fsp) {
                shale_table::TimeParse::Ok(t) => Ok((Value::Time(t), SqlType::Time { fsp })),
                _ => Err(SqlError::new(
                    1525,
                    "HY000",
                    format!("Incorrect TIME value: '{text}'"),
                )),
            };
        }
        other => return Err(SqlError::unsupported(format!("{other} literal"))),
    };
    let value = DateTime::parse(text, fsp)
        .filter(|_| fsp.is_some() || !text.trim().contains([' ', 'T']))
        .ok_or_else(|| SqlError::new(1525, "HY000", format!("Incorrect {kind} value: '{text}'")))?;
    Ok((Value::DateTime(value), SqlType::DateTime { fsp }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn float_targets_follow_the_precision() {
        use ast::ExactNumberInfo::{None as Plain, Precision, PrecisionAndScale};
        let of = |info| CastTarget::of(&ast::DataType::Float(info));
        assert_eq!(of(Plain).unwrap(), CastTarget::Float);
        assert_eq!(of(Precision(0)).unwrap(), CastTarget::Float);
        assert_eq!(of(Precision(24)).unwrap(), CastTarget::Float);
        assert_eq!(of(Precision(25)).unwrap(), CastTarget::Double);
        assert_eq!(of(Precision(53)).unwrap(), CastTarget::Double);
        let e = of(Precision(54)).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                1426,
                "Too-big precision 54 specified for 'CAST'. Maximum is 53."
            )
        );
        assert_eq!(of(PrecisionAndScale(5, 2)).unwrap_err().code, 1064);
        let meta = CastTarget::Float.result_type().meta("f", true);
        assert_eq!(
            (meta.type_code, meta.length),
            (crate::result::ColumnTypeCode::Float, 12)
        );
    }

    #[test]
    fn float_casts_round_to_single_precision() {
        let float = |v: Value| cast(&v, CastTarget::Float);
        assert_eq!(
            float(Value::Double(0.1)).unwrap(),
            Value::Double(f64::from(0.1f32))
        );
        assert_eq!(float(b("2.5abc")).unwrap(), Value::Double(2.5));
        assert_eq!(
            float(Value::Int(16_777_217)).unwrap(),
            Value::Double(16_777_216.0)
        );
        assert_eq!(float(Value::Null).unwrap(), Value::Null);
        let max = f64::from(f32::MAX);
        assert_eq!(float(Value::Double(-max)).unwrap(), Value::Double(-max));
        let e = float(Value::Double(1e39)).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (1690, "FLOAT value is out of range in 'cast(1e39 as float)'")
        );
        assert_eq!(float(b("1e39")).unwrap_err().code, 1690);
        assert_eq!(float(Value::Double(-1e300)).unwrap_err().code, 1690);
    }

    #[test]
    fn casts() {
        let dec = CastTarget::Decimal {
            precision: 5,
            scale: 2,
        };
        let cases = [
            (b("1.005"), dec, "1.01"),
            (Value::Int(123_456), dec, "999.99"),
            (Value::Int(-123_456), dec, "-999.99"),
            (Value::Double(0.1), dec, "0.10"),
            (
                b("2024-01-02 03:04:05"),
                CastTarget::DateTime { fsp: None },
                "2024-01-02",
            ),
            (
                b("2024-01-02"),
                CastTarget::DateTime { fsp: Some(0) },
                "2024-01-02 00:00:00",
            ),
            (b("2024-02-30"), CastTarget::DateTime { fsp: None }, "NULL"),
            (b("-7.5"), CastTarget::Signed, "-8"),
            (Value::Int(-1), CastTarget::Unsigned, "18446744073709551615"),
            (
                Value::Decimal(Decimal::parse("1.50").unwrap()),
                CastTarget::Char,
                "1.50",
            ),
            (Value::Null, CastTarget::Signed, "NULL"),
        ];
        for (v, target, want) in cases {
            assert_eq!(
                display(&cast(&v, target).unwrap()),
                want,
                "{v:?} as {target:?}"
            );
        }
        assert_eq!(decimal_max(3, 3).to_string(), "0.999");
    }

    #[test]
    fn typed_literals() {
        let (v, t) = typed_literal(&ast::DataType::Date, "2024-01-02").unwrap();
        assert_eq!(
            (display(&v), t),
            ("2024-01-02".into(), SqlType::DateTime { fsp: None })
        );
        let ts = ast::DataType::Timestamp(None, ast::TimezoneInfo::None);
        let (v, t) = typed_literal(&ts, "2024-01-02 03:04:05.12").unwrap();
        assert_eq!(display(&v), "2024-01-02 03:04:05.12");
        assert_eq!(t, SqlType::DateTime { fsp: Some(2) });
        assert_eq!(
            typed_literal(&ast::DataType::Date, "2024-02-30")
                .unwrap_err()
                .code,
            1525
        );
    }
}
