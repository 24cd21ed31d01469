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
//! Rules, applied pairwise over the string operands in order ([`merge`], as MySQL's
//! DTCollation::aggregate):
//! 1. The same collation: it, with the lower coercibility.
//! 2. One side in the binary character set (`X'..'`, VARBINARY, BLOB): it wins unless the
//!    other side's coercibility is lower.
//! 3. Other character sets: the side the other converts to without loss wins (a Unicode set
//!    held at least as strongly, at the same level over a non-Unicode one, utf8mb4 over
//!    utf8mb3; any set over ascii); else the stronger side when the weaker is only a literal
//!    or system constant (3 or more); else the mix is an error (`_latin1'a' COLLATE
//!    latin1_bin = utf8mb4_column`).
//! 4. The same character set: the lower coercibility wins.
//! 5. The same set and level: both EXPLICIT is an error; else a `_bin` collation wins over a
//!    `_ci`/`_cs` one; else the set's `_bin` with coercibility NONE.
//! 6. A comparison (`=`, `<`, BETWEEN, IN, LIKE, `CASE x WHEN`, NULLIF) whose mix ends NONE is
//!    an error; so is a UNION column's (1271 'UNION'). Errors are 1267 naming both operands,
//!    1270 naming three, 1271 for more, as MySQL reports them.
//!
//! A string result mixes the operands it may come from ([`for_result`]): CASE, COALESCE,
//! IF, IFNULL (their result arms), CONCAT, CONCAT_WS, GREATEST, LEAST; NONE is allowed
//! there (`CONCAT(a, b)` of two `_ci` columns), but not when the result is compared. A UNION
//! column mixes the parts' ([`for_union`]). An introduced literal (`_latin1'a'`) has its
//! character set's default collation, MySQL 8's (utf8mb4_0900_ai_ci for `_utf8mb4`).
//!
//! Shale stores and compares in eight collations (binary, utf8mb4_bin, utf8mb4_general_ci,
//! utf8mb4_0900_ai_ci, utf8mb4_0900_as_cs, utf8mb4_unicode_ci, latin1_swedish_ci,
//! utf8mb3_general_ci), so a derivation also carries the one its strings compare in
//! ([`effective`]): its own, else a `_bin` or `_cs` name compares as utf8mb4_bin (by code
//! point), any other `_ci` name as utf8mb4_general_ci. A column's derivation is named after
//! the collation Shale stored for it (DDL keeps no other name).
//!
//! The derivation of an expression is read from its syntax and bound type ([`derive`]): a
//! mixed result's is recorded when it is bound ([`Derivations`]); any other function's
//! coercibility is the lowest of its arguments' (a column or COLLATE inside makes it
//! IMPLICIT or EXPLICIT), its collation the bound type's.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

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
    if let Some(mixed) = binder.derivations.get(e) {
        return mixed;
    }
    match e {
        ast::Expr::Prefixed { prefix, .. } => {
            let name = introducer_charset(prefix)
                .and_then(crate::names::default_collation)
                .map_or("binary", |(_, collation)| collation);
            Derivation::new(name, Coercibility::Coercible)
        }
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

/// Whether strings in `wide`'s character set can hold `narrow`'s, so that a mix converts
/// `narrow` to `wide` (MySQL converts to Unicode, utf8mb3 to utf8mb4, and from ASCII):
/// `wide` must hold its collation at least as strongly, and at the same level the conversion
/// must widen.
fn converts_to(wide: &Derivation, narrow: &Derivation) -> bool {
    let (w, n) = (wide.charset(), narrow.charset());
    let stronger = wide.coercibility < narrow.coercibility;
    let level = wide.coercibility == narrow.coercibility;
    (is_unicode(w) && (stronger || level && (!is_unicode(n) || w == "utf8mb4" && n == "utf8mb3")))
        || (n == "ascii" && (stronger || level && w != "ascii"))
}

/// Rules 1-5: the derivation of a mix of two; Err when they do not mix at all.
fn merge(a: Derivation, b: Derivation) -> Result<Derivation, ()> {
    if a.name == b.name {
        let coercibility = a.coercibility.min(b.coercibility);
        return Ok(Derivation { coercibility, ..a });
    }
    let (set_a, set_b) = (a.charset().to_owned(), b.charset().to_owned());
    if set_a != set_b {
        // Rules 2 and 4 (MySQL's DTCollation::aggregate): a binary string, else a
        // conversion that loses nothing, else the side that holds its collation more
        // strongly when the other is only a literal or system constant.
        return if set_a == "binary" {
            Ok(if a.coercibility <= b.coercibility {
                a
            } else {
                b
            })
        } else if set_b == "binary" {
            Ok(if b.coercibility <= a.coercibility {
                b
            } else {
                a
            })
        } else if converts_to(&a, &b) {
            Ok(a)
        } else if converts_to(&b, &a) {
            Ok(b)
        } else if a.coercibility < b.coercibility && b.coercibility >= Coercibility::SysConst {
            Ok(a)
        } else if b.coercibility < a.coercibility && a.coercibility >= Coercibility::SysConst {
            Ok(b)
        } else {
            Err(())
        };
    }
    if a.coercibility != b.coercibility {
        return Ok(if a.coercibility < b.coercibility {
            a
        } else {
            b
        });
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

/// The mix of the strings among `operands` (numbers and NULL take no part; None without a
/// string), as MySQL aggregates them for `op`; with `compares`, a mix that ends with no
/// winner (NONE) is an error too, as a comparison needs one collation.
fn mix(
    binder: &Binder<'_>,
    operands: &[(&ast::Expr, &SqlType)],
    op: &str,
    compares: bool,
) -> Result<Option<Derivation>, SqlError> {
    let derived: Vec<Derivation> = operands.iter().map(|(e, t)| derive(binder, e, t)).collect();
    let mut acc: Option<Derivation> = None;
    for d in derived
        .iter()
        .filter(|d| d.coercibility < Coercibility::Numeric)
    {
        acc = Some(match acc {
            None => d.clone(),
            Some(so_far) => merge(so_far, d.clone()).map_err(|()| illegal_mix(&derived, op))?,
        });
    }
    if compares
        && acc
            .as_ref()
            .is_some_and(|d| d.coercibility == Coercibility::None)
    {
        return Err(illegal_mix(&derived, op));
    }
    Ok(acc)
}

/// The derivations of bound expressions whose collation is a mix of their operands' (CASE,
/// COALESCE, IF, IFNULL, NULLIF, GREATEST, LEAST, CONCAT, CONCAT_WS), recorded when each is
/// bound and read by [`derive`]. A CASE is keyed by the address of its syntax node, a call by
/// that of its first argument's (the binder of a call sees its arguments, not the call).
/// Sound because `derive` is only asked about nodes of the statement being bound, after they
/// were bound, and binding such a node always records (or clears) its entry, so an entry is
/// never read for another node that reuses a dropped node's address. Shared by a
/// statement's binders.
#[derive(Debug, Clone, Default)]
pub(crate) struct Derivations(Rc<RefCell<HashMap<MixedKey, Option<Derivation>>>>);

/// A [`Mixed`] node's key: whether it is a CASE, and its address.
type MixedKey = (bool, usize);

/// What a mixed result is recorded under: a CASE, or a call by its first argument.
#[derive(Clone, Copy)]
pub(crate) enum Mixed<'x> {
    Case(&'x ast::Expr),
    Call(&'x ast::Expr),
}

impl Mixed<'_> {
    fn key(self) -> MixedKey {
        match self {
            Mixed::Case(e) => (true, std::ptr::from_ref(e) as usize),
            Mixed::Call(first) => (false, std::ptr::from_ref(first) as usize),
        }
    }

    /// The key `e` is recorded under, if it is of a kind that records.
    fn of(e: &ast::Expr) -> Option<Mixed<'_>> {
        match e {
            ast::Expr::Case { .. } => Some(Mixed::Case(e)),
            ast::Expr::Function(f) => match &f.args {
                ast::FunctionArguments::List(list) => match list.args.first()? {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(first)) => {
                        Some(Mixed::Call(first))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }
}

impl Derivations {
    fn get(&self, e: &ast::Expr) -> Option<Derivation> {
        let key = Mixed::of(e)?.key();
        self.0.borrow().get(&key).cloned().flatten()
    }

    fn record(&self, node: Mixed<'_>, d: Option<Derivation>) {
        self.0.borrow_mut().insert(node.key(), d);
    }
}

/// The collation of a string result made of `operands` (the result arms of CASE, COALESCE,
/// IF, IFNULL; all arguments of NULLIF, GREATEST, LEAST, CONCAT, CONCAT_WS), recorded under
/// `node` for [`derive`]; `op` names it in errors as MySQL does (`case`, `coalesce`,
/// `concat`, ...), `compares` for the functions that compare their arguments (NULLIF,
/// GREATEST, LEAST). None without a string operand.
pub(crate) fn for_result(
    binder: &Binder<'_>,
    node: Mixed<'_>,
    operands: &[(&ast::Expr, &SqlType)],
    op: &str,
    compares: bool,
) -> Result<Option<Collation>, SqlError> {
    let mixed = mix(binder, operands, op, compares)?;
    let collation = mixed.as_ref().map(Derivation::collation);
    binder.derivations.record(node, mixed);
    Ok(collation)
}

/// The collation of each UNION (INTERSECT, EXCEPT) result column: the mix of the parts'
/// columns, each given by its select-list expression where known (None: a column of a part
/// whose list has `*`, or a parenthesized part). MySQL's messages: 1267 naming the two that
/// do not mix, 1271 `Illegal mix of collations for operation 'UNION'` when the mix has no
/// winner (NONE), as a DISTINCT needs one collation to compare rows in.
pub(crate) fn for_union(
    binder: &Binder<'_>,
    parts: &[Vec<(Option<&ast::Expr>, &SqlType)>],
    width: usize,
) -> Result<Vec<Option<Collation>>, SqlError> {
    let column = |e: Option<&ast::Expr>, t: &SqlType| match (e, t) {
        (Some(e), t) => derive(binder, e, t),
        (None, SqlType::Str { collation, .. }) => {
            Derivation::new(stored_name(*collation), Coercibility::Implicit)
        }
        (None, SqlType::Null) => Derivation::new("binary", Coercibility::Ignorable),
        (None, _) => Derivation::new("binary", Coercibility::Numeric),
    };
    (0..width)
        .map(|i| {
            let mut acc: Option<Derivation> = None;
            for part in parts {
                let Some((e, t)) = part.get(i) else { continue };
                let d = column(*e, t);
                if d.coercibility >= Coercibility::Numeric {
                    continue;
                }
                acc = Some(match acc {
                    None => d,
                    Some(so_far) => merge(so_far.clone(), d.clone())
                        .map_err(|()| illegal_mix(&[so_far, d], "UNION"))?,
                });
            }
            if acc
                .as_ref()
                .is_some_and(|d| d.coercibility == Coercibility::None)
            {
                return Err(illegal_mix(&[], "UNION"));
            }
            Ok(acc.map(|d| d.collation()))
        })
        .collect()
}

/// `t` with collation `c` when it is a string type (the type of a mixed result).
pub(crate) fn with_collation(t: SqlType, c: Option<Collation>) -> SqlType {
    match (t, c) {
        (SqlType::Str { len, .. }, Some(collation)) => SqlType::Str { collation, len },
        (t, _) => t,
    }
}

/// The character set an introducer (`_latin1`) names, if Shale knows it.
fn introducer_charset(prefix: &ast::Ident) -> Option<&str> {
    let name = prefix.value.strip_prefix('_')?;
    crate::names::default_collation(name).map(|(set, _)| set)
}

/// Binds `_charset'text'` (and `_charset X'hex'`): a literal in the character set's
/// default collation, coercible (MySQL's "Character Set Introducers"). `_binary` is a
/// binary string. Quoted text is UTF-8 already (the server decoded the client's bytes for
/// the introducer's character set); it must be characters of that set (1300). Hex digits
/// are the set's bytes.
pub(crate) fn bind_introduced(
    prefix: &ast::Ident,
    value: &ast::Expr,
) -> Result<(Expr, SqlType), SqlError> {
    let Some(set) = introducer_charset(prefix) else {
        // Not a character set Shale knows: MySQL reads such a word as a column name.
        return Err(SqlError::unknown_column(&prefix.value, "field list"));
    };
    let charset = crate::Charset::from_name(set)
        .ok_or_else(|| SqlError::unsupported(format!("character set {set}")))?;
    let (text, hex) = match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                (s.as_bytes().to_vec(), false)
            }
            ast::Value::HexStringLiteral(h) => (
                crate::bind::decode_hex(h)
                    .ok_or_else(|| SqlError::syntax(&format!("x'{h}'"), 1))?,
                true,
            ),
            other => return Err(SqlError::unsupported(format!("{prefix}{other}"))),
        },
        other => return Err(SqlError::unsupported(format!("{prefix} {other}"))),
    };
    if charset == crate::Charset::Binary {
        let len = text.len() as u32;
        let t = SqlType::Str {
            collation: Collation::Binary,
            len,
        };
        return Ok((Expr::Literal(Value::Bytes(text)), t));
    }
    let text = if hex {
        charset.decode(&text)?.into_owned()
    } else {
        // latin1 takes any text here (its columns keep what latin1 lacks); the others must
        // hold every character.
        let utf8 = String::from_utf8(text).map_err(|e| SqlError::internal(e.to_string()))?;
        if charset != crate::Charset::Latin1 {
            charset.decode(utf8.as_bytes())?;
        }
        utf8
    };
    let (_, default) = crate::names::default_collation(set).unwrap_or(("utf8mb4", "binary"));
    let t = SqlType::Str {
        collation: effective(default),
        len: text.chars().count() as u32,
    };
    Ok((Expr::Literal(Value::Bytes(text.into_bytes())), t))
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
    let mixed = mix(binder, operands, op, true)?;
    Ok(mixed.map_or(Collation::Utf8mb4GeneralCi, |d| d.collation()))
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
            // ASCII converts to latin1; latin1 EXPLICIT does not to a utf8mb4 column.
            (
                d("latin1_swedish_ci", Implicit),
                d("ascii_general_ci", Implicit),
                Ok(d("latin1_swedish_ci", Implicit)),
            ),
            (
                d("latin1_bin", Explicit),
                d("utf8mb4_general_ci", Implicit),
                Err(()),
            ),
            // A literal converts to a column's character set.
            (
                d("latin1_swedish_ci", Implicit),
                d("utf8mb4_0900_ai_ci", Coercible),
                Ok(d("latin1_swedish_ci", Implicit)),
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
