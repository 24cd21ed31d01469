//! Binding of the JSON functions and operators (json_funcs.rs's rules): names, argument
//! counts, which arguments are documents and which SQL values, result types; and the
//! places where a JSON-typed operand changes an operator's meaning (comparison, arithmetic,
//! ORDER BY, `->`/`->>` and their precedence).

use shale_table::Collation;
use sqlparser::ast;

use crate::bind::Binder;
use crate::builtin::Builtin;
use crate::cast::CastTarget;
use crate::error::SqlError;
use crate::expr::{CmpOp, Expr, Func};
use crate::json_funcs::{JsonFunc, Returning};
use crate::json_path::Write;
use crate::types::SqlType;

fn json_type() -> SqlType {
    SqlType::Json
}

fn int_type() -> SqlType {
    SqlType::Int {
        unsigned: false,
        len: 21,
    }
}

fn text_type(len: u32) -> SqlType {
    SqlType::Str {
        collation: Collation::Utf8mb4Bin,
        len,
    }
}

fn call(f: JsonFunc, args: Vec<Expr>) -> Expr {
    Expr::Func(Func::Builtin(Builtin::Json(f)), args)
}

/// Rule 1: an argument in a value position.
fn as_json_value(e: Expr, t: &SqlType) -> Expr {
    if *t == SqlType::Json {
        e
    } else if is_truth_value(&e) {
        call(JsonFunc::FromBool, vec![e])
    } else {
        call(JsonFunc::FromSql, vec![e])
    }
}

/// Rule 1 for an aggregate's argument `arg`, bound to `e` of type `t` (agg_collect.rs).
pub(crate) fn as_json_argument(arg: &ast::Expr, e: Expr, t: &SqlType) -> Expr {
    as_json_value(mark_literal_bools(arg, e), t)
}

/// Whether MySQL would see a boolean: a comparison or logical operator, or (marked by
/// [`mark_literal_bools`]) the literal TRUE or FALSE.
fn is_truth_value(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Cmp(..)
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::Xor(..)
            | Expr::Not(_)
            | Expr::IsNull(..)
            | Expr::IsBool(..)
            | Expr::InList { .. }
            | Expr::Between { .. }
            | Expr::Like { .. }
            | Expr::Func(Func::Builtin(Builtin::Json(JsonFunc::Compare(_))), _)
    )
}

/// TRUE and FALSE bind to the integers 1 and 0; in a JSON value position they are
/// booleans, so such an argument is wrapped in a no-op `IS TRUE` that [`is_truth_value`]
/// recognizes.
fn mark_literal_bools(arg: &ast::Expr, e: Expr) -> Expr {
    match arg {
        ast::Expr::Value(v) if matches!(v.value, ast::Value::Boolean(_)) => {
            Expr::IsBool(e.boxed(), false, true)
        }
        _ => e,
    }
}

/// Rule 2's type check of a document argument (`arg` 1-based).
pub(crate) fn check_document(t: &SqlType, arg: usize, function: &str) -> Result<(), SqlError> {
    match t {
        SqlType::Json | SqlType::Str { .. } | SqlType::Null => Ok(()),
        _ => Err(SqlError::new(
            3146,
            "22032",
            format!(
                "Invalid data type for JSON data in argument {arg} to function {}; a JSON \
                 string or JSON type is required.",
                function.to_ascii_lowercase()
            ),
        )),
    }
}

fn wrong_count(name: &str) -> SqlError {
    SqlError::new(
        1582,
        "42000",
        format!("Incorrect parameter count in the call to native function '{name}'"),
    )
}

/// Argument counts; None for a name that is not a JSON function.
fn arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "JSON_EXTRACT"
        | "JSON_REMOVE"
        | "JSON_MERGE_PRESERVE"
        | "JSON_MERGE"
        | "JSON_MERGE_PATCH" => (2, usize::MAX),
        "JSON_UNQUOTE" | "JSON_VALID" | "JSON_TYPE" | "JSON_DEPTH" | "JSON_QUOTE" => (1, 1),
        "JSON_OBJECT" | "JSON_ARRAY" => (0, usize::MAX),
        "JSON_CONTAINS" => (2, 3),
        "JSON_OVERLAPS" | "JSON_VALUE" => (2, 2),
        "JSON_LENGTH" | "JSON_KEYS" => (1, 2),
        "JSON_SET" | "JSON_INSERT" | "JSON_REPLACE" | "JSON_CONTAINS_PATH"
        | "JSON_ARRAY_APPEND" => (3, usize::MAX),
        _ => return None,
    })
}

/// Binds a JSON function call; None when `name` is none.
pub(crate) fn bind(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
) -> Option<Result<(Expr, SqlType), SqlError>> {
    let (min, max) = arity(name)?;
    Some(bind_known(binder, name, args, min, max, Returning::Text))
}

fn bind_known(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[&ast::Expr],
    min: usize,
    max: usize,
    returning: Returning,
) -> Result<(Expr, SqlType), SqlError> {
    if args.len() < min || args.len() > max {
        return Err(wrong_count(name));
    }
    let mut bound = Vec::with_capacity(args.len());
    let mut types = Vec::with_capacity(args.len());
    for a in args {
        let (e, t) = binder.expr(a)?;
        bound.push(mark_literal_bools(a, e));
        types.push(t);
    }
    let documents = match name {
        "JSON_CONTAINS" | "JSON_OVERLAPS" => 2,
        "JSON_EXTRACT" | "JSON_CONTAINS_PATH" | "JSON_VALUE" | "JSON_LENGTH" | "JSON_DEPTH"
        | "JSON_KEYS" | "JSON_SET" | "JSON_INSERT" | "JSON_REPLACE" | "JSON_REMOVE"
        | "JSON_TYPE" | "JSON_ARRAY_APPEND" => 1,
        "JSON_MERGE_PRESERVE" | "JSON_MERGE" | "JSON_MERGE_PATCH" => types.len(),
        _ => 0,
    };
    for (i, t) in types.iter().enumerate().take(documents) {
        check_document(t, i + 1, name)?;
    }
    let (f, t) = match name {
        "JSON_EXTRACT" => (JsonFunc::Extract, json_type()),
        "JSON_UNQUOTE" => (JsonFunc::Unquote, text_type(65_535)),
        "JSON_OBJECT" => {
            if bound.len() % 2 == 1 {
                return Err(wrong_count(name));
            }
            bound = bound
                .into_iter()
                .zip(&types)
                .enumerate()
                .map(|(i, (e, t))| if i % 2 == 1 { as_json_value(e, t) } else { e })
                .collect();
            (JsonFunc::Object, json_type())
        }
        "JSON_ARRAY" => {
            bound = bound
                .into_iter()
                .zip(&types)
                .map(|(e, t)| as_json_value(e, t))
                .collect();
            (JsonFunc::Array, json_type())
        }
        "JSON_CONTAINS" => (JsonFunc::Contains, int_type()),
        "JSON_OVERLAPS" => (JsonFunc::Overlaps, int_type()),
        "JSON_CONTAINS_PATH" => (JsonFunc::ContainsPath, int_type()),
        "JSON_VALUE" => {
            let t = match returning {
                Returning::Text => text_type(512),
                Returning::Double => SqlType::Double,
                Returning::Json => json_type(),
                Returning::Cast(c) => c.result_type(),
            };
            (JsonFunc::Value(returning), t)
        }
        "JSON_VALID" => (JsonFunc::Valid, int_type()),
        "JSON_TYPE" => (JsonFunc::Type, text_type(16)),
        "JSON_LENGTH" => (JsonFunc::Length, int_type()),
        "JSON_DEPTH" => (JsonFunc::Depth, int_type()),
        "JSON_KEYS" => (JsonFunc::Keys, json_type()),
        "JSON_MERGE_PRESERVE" | "JSON_MERGE" => (JsonFunc::MergePreserve, json_type()),
        "JSON_MERGE_PATCH" => (JsonFunc::MergePatch, json_type()),
        "JSON_SET" | "JSON_INSERT" | "JSON_REPLACE" | "JSON_ARRAY_APPEND" => {
            if bound.len() % 2 == 0 {
                return Err(wrong_count(name));
            }
            bound = bound
                .into_iter()
                .zip(&types)
                .enumerate()
                .map(|(i, (e, t))| {
                    if i > 0 && i % 2 == 0 {
                        as_json_value(e, t)
                    } else {
                        e
                    }
                })
                .collect();
            let mode = match name {
                "JSON_SET" => Write::Set,
                "JSON_INSERT" => Write::Insert,
                "JSON_ARRAY_APPEND" => Write::Append,
                _ => Write::Replace,
            };
            (JsonFunc::Write(mode), json_type())
        }
        "JSON_REMOVE" => (JsonFunc::Remove, json_type()),
        "JSON_QUOTE" => {
            if !matches!(types[0], SqlType::Str { .. } | SqlType::Null) {
                return Err(SqlError::new(
                    3064,
                    "HY000",
                    "Incorrect type for argument 1 in function json_quote.",
                ));
            }
            (JsonFunc::Quote, text_type(65_535))
        }
        _ => return Err(SqlError::internal(format!("json function {name}"))),
    };
    Ok((call(f, bound), t))
}

/// `JSON_VALUE(doc, path RETURNING type)`: the function call whose argument list carries the
/// RETURNING clause sqlparser parses.
pub(crate) fn bind_json_value(
    binder: &mut Binder<'_>,
    f: &ast::Function,
) -> Result<(Expr, SqlType), SqlError> {
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(wrong_count("JSON_VALUE"));
    };
    let mut returning = Returning::Text;
    for clause in &list.clauses {
        match clause {
            ast::FunctionArgumentClause::JsonReturningClause(r) => {
                returning = match &r.data_type {
                    ast::DataType::JSON => Returning::Json,
                    ast::DataType::Double(_)
                    | ast::DataType::DoublePrecision
                    | ast::DataType::Float(_)
                    | ast::DataType::Real => Returning::Double,
                    other => Returning::Cast(CastTarget::of(other)?),
                };
            }
            other => return Err(SqlError::unsupported(format!("JSON_VALUE ... {other}"))),
        }
    }
    let mut args = Vec::new();
    for a in &list.args {
        match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
            _ => return Err(SqlError::unsupported(f.to_string())),
        }
    }
    bind_known(binder, "JSON_VALUE", &args, 2, 2, returning)
}

/// `value MEMBER OF(json_array)`: the value is a JSON value (rule 1: a string is a JSON
/// string), the array a document (rule 2).
pub(crate) fn bind_member_of(
    binder: &mut Binder<'_>,
    value: &ast::Expr,
    array: &ast::Expr,
) -> Result<(Expr, SqlType), SqlError> {
    let (v, tv) = binder.expr(value)?;
    let v = as_json_value(mark_literal_bools(value, v), &tv);
    let (a, ta) = binder.expr(array)?;
    check_document(&ta, 2, "member of")?;
    Ok((call(JsonFunc::MemberOf, vec![v, a]), int_type()))
}

/// `CAST(x AS JSON)`.
pub(crate) fn bind_cast(
    binder: &mut Binder<'_>,
    x: &ast::Expr,
) -> Result<(Expr, SqlType), SqlError> {
    let (e, t) = binder.expr(x)?;
    let e = mark_literal_bools(x, e);
    let e = match t {
        SqlType::Json => e,
        SqlType::Str { .. } | SqlType::Null => call(JsonFunc::Cast, vec![e]),
        other => as_json_value(e, &other),
    };
    Ok((e, json_type()))
}

/// `left -> path` and `left ->> path` (rule 4).
pub(crate) fn bind_arrow(
    left: Expr,
    left_type: &SqlType,
    path: Expr,
    unquote: bool,
) -> Result<(Expr, SqlType), SqlError> {
    check_document(left_type, 1, "json_extract")?;
    let extract = call(JsonFunc::Extract, vec![left, path]);
    Ok(if unquote {
        (call(JsonFunc::Unquote, vec![extract]), text_type(65_535))
    } else {
        (extract, json_type())
    })
}

/// sqlparser gives `->`/`->>` a precedence below arithmetic, so `j->'$.n' + 1` arrives as
/// `j -> ('$.n' + 1)`; MySQL's `->` takes only the path literal. This regroups such a tree
/// along the right operand's left spine into `(j -> '$.n') + 1`; None when there is
/// nothing to regroup.
pub(crate) fn regroup_arrow(
    left: &ast::Expr,
    op: &ast::BinaryOperator,
    right: &ast::Expr,
) -> Option<ast::Expr> {
    fn rotate(left: &ast::Expr, op: &ast::BinaryOperator, right: &ast::Expr) -> ast::Expr {
        match right {
            ast::Expr::BinaryOp {
                left: inner,
                op: inner_op,
                right: rest,
            } => ast::Expr::BinaryOp {
                left: Box::new(rotate(left, op, inner)),
                op: inner_op.clone(),
                right: rest.clone(),
            },
            leaf => ast::Expr::BinaryOp {
                left: Box::new(left.clone()),
                op: op.clone(),
                right: Box::new(leaf.clone()),
            },
        }
    }
    let arrow = matches!(
        op,
        ast::BinaryOperator::Arrow | ast::BinaryOperator::LongArrow
    );
    (arrow && matches!(right, ast::Expr::BinaryOp { .. })).then(|| rotate(left, op, right))
}

/// A comparison where either operand is JSON-typed (rule 5); None when neither is.
pub(crate) fn bind_compare(
    op: CmpOp,
    (l, tl): (&Expr, &SqlType),
    (r, tr): (&Expr, &SqlType),
) -> Option<(Expr, SqlType)> {
    if *tl != SqlType::Json && *tr != SqlType::Json {
        return None;
    }
    let args = vec![as_json_value(l.clone(), tl), as_json_value(r.clone(), tr)];
    Some((
        call(JsonFunc::Compare(op), args),
        SqlType::Int {
            unsigned: false,
            len: 1,
        },
    ))
}

/// An ORDER BY key: a JSON-typed one sorts by its [`crate::json::sort_key`] bytes (rule 5);
/// any other stays as it is.
pub(crate) fn sort_key(e: Expr, t: SqlType) -> (Expr, SqlType) {
    if t == SqlType::Json {
        (
            call(JsonFunc::SortKey, vec![e]),
            SqlType::Str {
                collation: Collation::Binary,
                len: 65_535,
            },
        )
    } else {
        (e, t)
    }
}

/// An operand of `+ - * / DIV %`: a JSON-typed one becomes its number (MySQL reads the
/// scalar: `j->'$.n' + 1` is 8 for 7, not 8.0); any other stays as it is.
pub(crate) fn arith_operand(e: Expr, t: SqlType) -> (Expr, SqlType) {
    if t == SqlType::Json {
        (call(JsonFunc::ToNumber, vec![e]), SqlType::Double)
    } else {
        (e, t)
    }
}
