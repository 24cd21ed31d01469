//! Collation coercibility (MySQL "Collation Coercibility in Expressions"): the collation a
//! comparison of strings uses, which one wins when the operands' differ, and when the mix is
//! an error (1267, 1270, 1271); and `x COLLATE name`.
//!
//! Every string operand has a [`Derivation`]: MySQL's name of its collation and a
//! coercibility, lower meaning stronger:
//! 0 EXPLICIT (`x COLLATE c`), 1 NONE (a mix that had no winner, e.g. `CONCAT` of two columns
//! of different collations in MySQL), 2 IMPLICIT (a column, a user variable, a scalar
//! subquery, CAST/CONVERT), 3 SYSCONST (USER(), DATABASE(), VERSION(), `@@var`), 4 COERCIBLE
//! (a literal: its collation is the session's `collation_connection`, or binary for `X'..'`),
//! 5 NUMERIC (numbers and temporal values), 6 IGNORABLE (NULL).
//!
//! Rules, applied pairwise over the operands in order ([`aggregate`]):
//! 1. The same collation: it, with the lower coercibility.
//! 2. One side in the binary character set (`X'..'`, VARBINARY, BLOB): it wins unless the
//!    other side's coercibility is lower.
//! 3. Otherwise the lower coercibility wins.
//! 4. Equal coercibility, different character sets: a Unicode one wins over a non-Unicode
//!    one, utf8mb4 over utf8mb3; anything else is NONE.
//! 5. Equal coercibility, the same character set: both EXPLICIT is an error at once; else a
//!    `_bin` collation wins over a `_ci`/`_cs` one; else NONE.
//! 6. A comparison (`=`, `<`, BETWEEN, IN, LIKE) whose result is NONE is an error: 1267
//!    naming both operands, 1270 naming three, 1271 for more, as MySQL reports them.
//!
//! Shale stores and compares in eight collations (binary, utf8mb4_bin, utf8mb4_general_ci,
//! utf8mb4_0900_ai_ci, utf8mb4_0900_as_cs, utf8mb4_unicode_ci, latin1_swedish_ci,
//! utf8mb3_general_ci), so a derivation also carries the one its strings compare in
//! ([`effective`]): its own, else a `_bin` or `_cs` name compares as utf8mb4_bin (by code
//! point), any other `_ci` name as utf8mb4_general_ci. A column's derivation is named after
//! the collation Shale stored for it (DDL keeps no other name).
//!
//! The derivation of an expression is read from its syntax and bound type ([`derive`]): a
//! function's coercibility is the lowest of its arguments' (a column or COLLATE inside makes
//! it IMPLICIT or EXPLICIT), its collation the bound type's.

use std::borrow::Cow;

use shale_table::{Collation, Value};
use sqlparser::ast;

use crate::bind::Binder;
use crate::error::SqlError;
use crate::expr::{CmpOp, Expr};
use crate::types::SqlType;

/// MySQL's coercibility levels (`COERCIBILITY()` returns the number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Coercibility {
    Explicit = 0,
    None = 1,
    Implicit = 2,
    SysConst = 3,
    Coercible = 4,
    Numeric = 5,
    Ignorable = 6,
}

impl Coercibility {
    /// The word MySQL's "Illegal mix of collations" messages use.
    fn word(self) -> &'static str {
        match self {
            Coercibility::Explicit => "EXPLICIT",
            Coercibility::None => "NONE",
            Coercibility::Implicit => "IMPLICIT",
            Coercibility::SysConst => "SYSCONST",
            Coercibility::Coercible => "COERCIBLE",
            Coercibility::Numeric => "NUMERIC",
            Coercibility::Ignorable => "IGNORABLE",
        }
    }
}

/// A string operand's collation and how strongly it holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Derivation {
    /// MySQL's name of the collation (`COLLATION()`, error messages).
    pub name: Cow<'static, str>,
    pub coercibility: Coercibility,
}

impl Derivation {
    fn new(name: impl Into<Cow<'static, str>>, coercibility: Coercibility) -> Derivation {
        Derivation {
            name: name.into(),
            coercibility,
        }
    }

    /// The character set the collation belongs to (`CHARSET()`).
    pub(crate) fn charset(&self) -> &str {
        charset_of(&self.name)
    }

    /// The collation Shale compares these strings in (see the module doc).
    pub(crate) fn collation(&self) -> Collation {
        effective(&self.name)
    }
}

/// The character set of a collation name: the names.rs list's, else the name's prefix.
fn charset_of(name: &str) -> &str {
    if let Some(set) = crate::names::charset_of_collation(name) {
        return set;
    }
    name.split('_').next().unwrap_or(name)
}

/// The collation Shale compares a MySQL collation name in: its own where Shale has it
/// (utf8mb3_unicode_ci is utf8mb4_unicode_ci on the BMP, all utf8mb3 holds), else a `_bin`
/// or `_cs` name by code point and a `_ci` one as utf8mb4_general_ci.
pub(crate) fn effective(name: &str) -> Collation {
    match name {
        "binary" => Collation::Binary,
        "utf8mb4_0900_ai_ci" => Collation::Utf8mb4Uca900AiCi,
        "utf8mb4_0900_as_cs" => Collation::Utf8mb4Uca900AsCs,
        "utf8mb4_unicode_ci" | "utf8mb3_unicode_ci" => Collation::Utf8mb4UnicodeCi,
        "latin1_swedish_ci" => Collation::Latin1SwedishCi,
        "utf8mb3_general_ci" => Collation::Utf8mb3GeneralCi,
        _ if name.ends_with("_bin") || name.ends_with("_cs") => Collation::Utf8mb4Bin,
        _ => Collation::Utf8mb4GeneralCi,
    }
}

fn is_unicode(charset: &str) -> bool {
    matches!(charset, "utf8mb4" | "utf8mb3")
}

/// The name Shale reports for a stored collation.
pub(crate) fn stored_name(c: Collation) -> &'static str {
    match c {
        Collation::Binary => "binary",
        Collation::Utf8mb4Bin => "utf8mb4_bin",
        Collation::Utf8mb4GeneralCi => "utf8mb4_general_ci",
        Collation::Utf8mb4Uca900AiCi => "utf8mb4_0900_ai_ci",
        Collation::Utf8mb4Uca900AsCs => "utf8mb4_0900_as_cs",
        Collation::Utf8mb4UnicodeCi => "utf8mb4_unicode_ci",
        Collation::Latin1SwedishCi => "latin1_swedish_ci",
        Collation::Utf8mb3GeneralCi => "utf8mb3_general_ci",
    }
}

/// The session's `collation_connection`, which string literals take.
fn connection(binder: &Binder<'_>) -> Cow<'static, str> {
    match binder.ctx.collation_connection {
        "" => Cow::Borrowed("utf8mb4_general_ci"),
        name => Cow::Owned(name.to_owned()),
    }
}

const SYSTEM_CONSTANTS: [&str; 8] = [
    "USER",
    "CURRENT_USER",
    "SESSION_USER",
    "SYSTEM_USER",
    "DATABASE",
    "SCHEMA",
    "VERSION",
    "CURRENT_ROLE",
];

/// The derivation of `e`, bound to type `t`.
pub(crate) fn derive(binder: &Binder<'_>, e: &ast::Expr, t: &SqlType) -> Derivation {
    let of_type = |coercibility| match t {
        SqlType::Str { collation, .. } => Derivation::new(stored_name(*collation), coercibility),
        _ => Derivation::new("utf8mb4_bin", coercibility),
    };
    match e {
        ast::Expr::Nested(inner) => return derive(binder, inner, t),
        ast::Expr::Collate { collation, .. } => {
            return Derivation::new(normalize(&collation.to_string()), Coercibility::Explicit)
        }
        ast::Expr::Value(v) if matches!(v.value, ast::Value::Null) => {
            return Derivation::new("binary", Coercibility::Ignorable)
        }
        _ => {}
    }
    if matches!(t, SqlType::Null) {
        return Derivation::new("binary", Coercibility::Ignorable);
    }
    if !matches!(t, SqlType::Str { .. } | SqlType::Json) {
        return Derivation::new("binary", Coercibility::Numeric);
    }
    match e {
        ast::Expr::Value(v) => match v.value {
            ast::Value::HexStringLiteral(_) => Derivation::new("binary", Coercibility::Coercible),
            _ => Derivation::new(connection(binder), Coercibility::Coercible),
        },
        ast::Expr::Identifier(id) if id.value.starts_with("@@") => {
            Derivation::new("utf8mb3_general_ci", Coercibility::SysConst)
        }
        ast::Expr::Identifier(_)
        | ast::Expr::CompoundIdentifier(_)
        | ast::Expr::Subquery(_)
        | ast::Expr::Cast { .. }
        | ast::Expr::Convert { .. } => of_type(Coercibility::Implicit),
        ast::Expr::Function(f)
            if SYSTEM_CONSTANTS.contains(&f.name.to_string().to_ascii_uppercase().as_str()) =>
        {
            Derivation::new("utf8mb3_general_ci", Coercibility::SysConst)
        }
        other => match weakest_inside(other) {
            // Only literals inside: text in the connection's collation (a binary string,
            // CHAR(77) or UNHEX('61'), stays binary).
            Coercibility::Coercible if t.collation() != Collation::Binary => {
                Derivation::new(connection(binder), Coercibility::Coercible)
            }
            level => of_type(level),
        },
    }
}

/// The lowest coercibility of the strings an expression is made of, read from its syntax
/// alone: COLLATE 0, a name 2, anything else counts as a literal (4).
fn weakest_inside(e: &ast::Expr) -> Coercibility {
    let mut lowest = Coercibility::Coercible;
    let _ = ast::visit_expressions(e, |x| {
        let level = match x {
            ast::Expr::Collate { .. } => Coercibility::Explicit,
            ast::Expr::Identifier(id) if !id.value.starts_with("@@") => Coercibility::Implicit,
            ast::Expr::CompoundIdentifier(_) | ast::Expr::Subquery(_) => Coercibility::Implicit,
            _ => Coercibility::Coercible,
        };
        lowest = lowest.min(level);
        std::ops::ControlFlow::<()>::Continue(())
    });
    lowest
}

/// A collation name as MySQL 8 reports it: lowercase, `utf8_` as `utf8mb3_`.
fn normalize(name: &str) -> String {
    let lower = name.trim_matches('`').to_ascii_lowercase();
    match lower.strip_prefix("utf8_") {
        Some(rest) => format!("utf8mb3_{rest}"),
        None => lower,
    }
}

/// Binds `x COLLATE name`: the value of `x`, compared in `name`'s collation. The name must
/// be a collation of `x`'s character set (1273 unknown, 1253 another set's).
pub(crate) fn bind_collate(
    binder: &mut Binder<'_>,
    inner: &ast::Expr,
    name: &ast::ObjectName,
) -> Result<(Expr, SqlType), SqlError> {
    let (x, t) = binder.expr(inner)?;
    let written = name.to_string();
    let wanted = normalize(&written);
    let Some(set) = crate::names::charset_of_collation(&wanted) else {
        return Err(SqlError::new(
            1273,
            "HY000",
            format!("Unknown collation: '{}'", written.trim_matches('`')),
        ));
    };
    let of = derive(binder, inner, &t);
    let own = match of.coercibility {
        // NULL takes any collation.
        Coercibility::Ignorable => set.to_owned(),
        Coercibility::Numeric => crate::names::charset_of_collation(&connection(binder))
            .unwrap_or("utf8mb4")
            .to_owned(),
        _ => of.charset().to_owned(),
    };
    if own != set {
        return Err(SqlError::new(
            1253,
            "42000",
            format!("COLLATION '{wanted}' is not valid for CHARACTER SET '{own}'"),
        ));
    }
    let collation = effective(&wanted);
    // A number keeps its type (MySQL returns it as it is, and compares it as a number).
    let t = match t {
        SqlType::Str { len, .. } => SqlType::Str { collation, len },
        other => other,
    };
    Ok((x, t))
}

/// Rules 1-5: the derivation of a mix of two.
fn merge(a: Derivation, b: Derivation) -> Result<Derivation, ()> {
    if a.name == b.name {
        let coercibility = a.coercibility.min(b.coercibility);
        return Ok(Derivation { coercibility, ..a });
    }
    let (set_a, set_b) = (a.charset().to_owned(), b.charset().to_owned());
    if set_a != set_b {
        if set_a == "binary" {
            return Ok(if a.coercibility <= b.coercibility {
                a
            } else {
                b
            });
        }
        if set_b == "binary" {
            return Ok(if b.coercibility <= a.coercibility {
                b
            } else {
                a
            });
        }
    }
    if a.coercibility != b.coercibility {
        return Ok(if a.coercibility < b.coercibility {
            a
        } else {
            b
        });
    }
    if set_a != set_b {
        let rank = |s: &str| match s {
            "utf8mb4" => 2,
            "utf8mb3" => 1,
            _ => 0,
        };
        return match rank(&set_a).cmp(&rank(&set_b)) {
            std::cmp::Ordering::Greater if is_unicode(&set_a) => Ok(a),
            std::cmp::Ordering::Less if is_unicode(&set_b) => Ok(b),
            _ => Ok(Derivation::new(format!("{set_a}_bin"), Coercibility::None)),
        };
    }
    if a.coercibility == Coercibility::Explicit {
        return Err(());
    }
    if a.name.ends_with("_bin") {
        return Ok(a);
    }
    if b.name.ends_with("_bin") {
        return Ok(b);
    }
    Ok(Derivation::new(format!("{set_a}_bin"), Coercibility::None))
}

/// Rule 6: the collation a comparison of `operands` uses, `op` naming it in errors
/// (MySQL's names: `=`, `<>`, `between`, `in`, `like`, ...). Operands that are not strings
/// (numbers, NULL) take no part: with fewer than two strings there is nothing to mix.
pub(crate) fn for_comparison(
    binder: &Binder<'_>,
    operands: &[(&ast::Expr, &SqlType)],
    op: &str,
) -> Result<Collation, SqlError> {
    let derived: Vec<Derivation> = operands.iter().map(|(e, t)| derive(binder, e, t)).collect();
    let strings: Vec<&Derivation> = derived
        .iter()
        .filter(|d| d.coercibility < Coercibility::Numeric)
        .collect();
    if strings.len() < 2 {
        // The old rule for what does not mix: a string operand's own collation.
        let types: Vec<&SqlType> = operands.iter().map(|(_, t)| *t).collect();
        return Ok(match strings.first() {
            Some(d) => d.collation(),
            None => crate::bind::pick_collation(&types),
        });
    }
    let mut acc = strings[0].clone();
    for d in &strings[1..] {
        acc = match merge(acc, (*d).clone()) {
            Ok(next) if next.coercibility != Coercibility::None => next,
            _ => return Err(illegal_mix(&derived, op)),
        };
    }
    Ok(acc.collation())
}

/// A comparison operator as MySQL's messages name it.
pub(crate) fn cmp_name(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::NullSafeEq => "<=>",
        CmpOp::Ne => "<>",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

/// MySQL's "Illegal mix of collations" for `op` over these operands.
fn illegal_mix(operands: &[Derivation], op: &str) -> SqlError {
    let one = |d: &Derivation| format!("({},{})", d.name, d.coercibility.word());
    match operands {
        [a, b] => SqlError::new(
            1267,
            "HY000",
            format!(
                "Illegal mix of collations {} and {} for operation '{op}'",
                one(a),
                one(b)
            ),
        ),
        [a, b, c] => SqlError::new(
            1270,
            "HY000",
            format!(
                "Illegal mix of collations {}, {}, {} for operation '{op}'",
                one(a),
                one(b),
                one(c)
            ),
        ),
        _ => SqlError::new(
            1271,
            "HY000",
            format!("Illegal mix of collations for operation '{op}'"),
        ),
    }
}

/// `CHARSET(x)`, `COLLATION(x)` and `COERCIBILITY(x)` of an argument.
pub(crate) fn describe(binder: &Binder<'_>, what: &str, e: &ast::Expr, t: &SqlType) -> Value {
    let d = derive(binder, e, t);
    let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
    match what {
        "CHARSET" => text(d.charset()),
        "COLLATION" => text(&d.name),
        _ => Value::Int(d.coercibility as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &'static str, c: Coercibility) -> Derivation {
        Derivation::new(name, c)
    }

    #[test]
    fn mixes_resolve_as_mysql_rules_say() {
        use Coercibility::{Coercible, Explicit, Implicit, None as NoneLevel};
        let cases = [
            // Rule 3: the lower coercibility wins.
            (
                d("utf8mb4_general_ci", Implicit),
                d("utf8mb4_bin", Coercible),
                Ok(d("utf8mb4_general_ci", Implicit)),
            ),
            (
                d("utf8mb4_bin", Explicit),
                d("utf8mb4_general_ci", Implicit),
                Ok(d("utf8mb4_bin", Explicit)),
            ),
            // Rule 5: _bin wins at the same level; two _ci are NONE; two EXPLICIT fail.
            (
                d("utf8mb4_general_ci", Implicit),
                d("utf8mb4_bin", Implicit),
                Ok(d("utf8mb4_bin", Implicit)),
            ),
            (
                d("utf8mb4_general_ci", Implicit),
                d("utf8mb4_unicode_ci", Implicit),
                Ok(d("utf8mb4_bin", NoneLevel)),
            ),
            (
                d("utf8mb4_bin", Explicit),
                d("utf8mb4_general_ci", Explicit),
                Err(()),
            ),
            // Rule 2: binary wins unless the other side is stronger.
            (
                d("utf8mb4_general_ci", Coercible),
                d("binary", Coercible),
                Ok(d("binary", Coercible)),
            ),
            (
                d("utf8mb4_general_ci", Implicit),
                d("binary", Coercible),
                Ok(d("utf8mb4_general_ci", Implicit)),
            ),
            // Rule 4: Unicode wins over latin1 at the same level.
            (
                d("latin1_swedish_ci", Coercible),
                d("utf8mb4_0900_ai_ci", Coercible),
                Ok(d("utf8mb4_0900_ai_ci", Coercible)),
            ),
            (
                d("latin1_swedish_ci", Implicit),
                d("ascii_general_ci", Implicit),
                Ok(d("latin1_bin", NoneLevel)),
            ),
        ];
        for (a, b, want) in cases {
            assert_eq!(merge(a.clone(), b.clone()), want, "{a:?} {b:?}");
        }
    }

    #[test]
    fn error_shapes_follow_the_operand_count() {
        let a = d("utf8mb4_bin", Coercibility::Explicit);
        let b = d("utf8mb4_general_ci", Coercibility::Explicit);
        let two = illegal_mix(&[a.clone(), b.clone()], "=");
        assert_eq!(two.code, 1267);
        assert_eq!(
            two.message,
            "Illegal mix of collations (utf8mb4_bin,EXPLICIT) and (utf8mb4_general_ci,EXPLICIT) \
             for operation '='"
        );
        assert_eq!(
            illegal_mix(&[a.clone(), b.clone(), a.clone()], "between").code,
            1270
        );
        assert_eq!(illegal_mix(&[a.clone(), b.clone(), a, b], "in").code, 1271);
    }

    #[test]
    fn names_map_to_the_collations_shale_compares_in() {
        assert_eq!(
            effective("utf8mb4_0900_as_cs"),
            Collation::Utf8mb4Uca900AsCs
        );
        assert_eq!(effective("latin1_bin"), Collation::Utf8mb4Bin);
        assert_eq!(
            effective("utf8mb4_0900_ai_ci"),
            Collation::Utf8mb4Uca900AiCi
        );
        assert_eq!(effective("utf8mb3_unicode_ci"), Collation::Utf8mb4UnicodeCi);
        assert_eq!(effective("latin1_swedish_ci"), Collation::Latin1SwedishCi);
        assert_eq!(effective("ascii_general_ci"), Collation::Utf8mb4GeneralCi);
        for c in [
            Collation::Binary,
            Collation::Utf8mb4Bin,
            Collation::Utf8mb4GeneralCi,
            Collation::Utf8mb4Uca900AiCi,
            Collation::Utf8mb4Uca900AsCs,
            Collation::Utf8mb4UnicodeCi,
            Collation::Latin1SwedishCi,
            Collation::Utf8mb3GeneralCi,
        ] {
            assert_eq!(effective(stored_name(c)), c, "names round-trip");
        }
        assert_eq!(effective("binary"), Collation::Binary);
        assert_eq!(normalize("UTF8_BIN"), "utf8mb3_bin");
    }
}
