//! Bound expressions and their evaluation.
//!
//! A bound expression has every name resolved: columns are positions in the row it is
//! evaluated over, `?` placeholders are parameter positions, comparisons carry their collation.
//! Evaluation applies the rules of [`crate::value`] and nothing else.

use std::cmp::Ordering;

use shale_table::{Collation, Value};

use crate::error::SqlError;
use crate::value::{self, ArithOp};

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    /// `<=>`: NULL-safe equality.
    NullSafeEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub(crate) fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }

    fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq | CmpOp::NullSafeEq => o == Ordering::Equal,
            CmpOp::Ne => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ge => o != Ordering::Less,
        }
    }
}

/// Scalar functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Database,
    Version,
    ConnectionId,
    LastInsertId,
    User,
    /// The account whose privileges apply (`user@host-pattern`).
    CurrentUser,
    Concat,
    Length,
    CharLength,
    Upper,
    Lower,
    Abs,
    IfNull,
    Coalesce,
    If,
    /// The functions of builtin.rs.
    Builtin(crate::builtin::Builtin),
}

/// A bound expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Literal(Value),
    /// The n-th `?` (0-based).
    Param(usize),
    /// The n-th value of the row being evaluated.
    Column(usize),
    Neg(Box<Expr>),
    /// `CAST(expr AS target)` (cast.rs).
    Cast(Box<Expr>, crate::cast::CastTarget),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>, Collation),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Xor(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull(Box<Expr>, bool),
    /// `expr IS [NOT] TRUE` (`negated`, `want`).
    IsBool(Box<Expr>, bool, bool),
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
        collation: Collation,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
        collation: Collation,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        escape: char,
        collation: Collation,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
        collation: Collation,
    },
    Func(Func, Vec<Expr>),
    /// A system variable (`@@name`), read from the session when evaluated.
    SysVar(String),
    /// A user variable (`@name`, lower-case), read from the session when evaluated; a
    /// constant for the statement's run.
    UserVar(String),
    /// A user variable the statement itself assigns: read afresh at each evaluation, never
    /// a constant of the statement (user_vars.rs rule 3).
    UserVarPerRow(String),
    /// `@name := value`: sets the variable to the value, which it is (user_vars.rs).
    AssignUserVar(String, Box<Expr>),
    /// A subquery of the statement (subquery.rs), evaluated through [`Env::subquery`].
    Subquery(Box<crate::subquery::SubqueryExpr>),
    /// Inside a correlated subquery: the n-th value it reads from the enclosing query's row.
    OuterRef(usize),
}

/// What an expression can read besides its row: parameters and session state.
pub(crate) trait Env {
    fn param(&self, n: usize) -> Value;
    fn database(&self) -> Option<&str>;
    fn connection_id(&self) -> u64;
    fn last_insert_id(&self) -> u64;
    fn user(&self) -> &str;
    /// `CURRENT_USER()`: the account matched at login (the same as `user()` unless the
    /// session has an account).
    fn current_user(&self) -> String {
        self.user().to_owned()
    }
    fn variable(&self, name: &str) -> Value;
    /// A user variable's value (NULL when never set).
    fn user_variable(&self, name: &str) -> Value;
    /// `@name := value` (user_vars.rs); refused where no session keeps variables.
    fn assign_user_variable(&self, name: &str, value: Value) -> Result<(), SqlError> {
        let _ = value;
        Err(SqlError::unsupported(format!("@{name} := here")))
    }
    /// When the statement started, in microseconds since 1970-01-01 UTC (what NOW() shows).
    fn statement_time(&self) -> i64;
    /// ROW_COUNT() and FOUND_ROWS(): the previous statement's (row_counts.rs).
    fn row_counts(&self) -> (i64, u64);
    /// What the session may see of the instance's sessions (information_schema.PROCESSLIST
    /// and SHALE_TRX); `None` outside a session.
    fn sessions_view(&self) -> Option<crate::info_schema::SessionsView> {
        None
    }
    /// The rows of the statement's subquery `id` run with `outer` as its correlation values
    /// (subquery.rs). Environments that run no subqueries refuse.
    fn subquery(
        &self,
        id: usize,
        outer: &[Value],
    ) -> Result<std::rc::Rc<crate::subquery::SubqueryRows>, SqlError> {
        let _ = outer;
        Err(SqlError::internal(format!("subquery {id} outside a query")))
    }
    /// Inside a correlated subquery: the n-th value of the enclosing row.
    fn outer(&self, n: usize) -> Value {
        let _ = n;
        Value::Null
    }
    /// How the running statement stores values strict mode refuses (lenient_store.rs);
    /// strict unless the environment says otherwise.
    fn store_rules(&self) -> crate::lenient_store::StoreRules {
        crate::lenient_store::StoreRules::default()
    }
    /// A division by zero gave NULL: ERROR_FOR_DIVISION_BY_ZERO's warning or error
    /// (lenient_store.rs rule 4); nothing where no statement rules apply.
    fn division_by_zero(&self) -> Result<(), SqlError> {
        Ok(())
    }
    /// Records a warning of the running statement (a converted value, GROUP_CONCAT's 1260),
    /// which SHOW WARNINGS lists after it; environments that keep none drop it.
    fn warn(&self, code: u16, message: String) {
        let _ = (code, message);
    }
}

impl Expr {
    pub(crate) fn boxed(self) -> Box<Expr> {
        Box::new(self)
    }

    /// Whether the expression reads no row column (a constant for the statement's run).
    pub(crate) fn is_row_independent(&self) -> bool {
        match self {
            Expr::Column(_) | Expr::UserVarPerRow(_) | Expr::AssignUserVar(..) => false,
            Expr::Literal(_)
            | Expr::Param(_)
            | Expr::SysVar(_)
            | Expr::UserVar(_)
            | Expr::OuterRef(_) => true,
            Expr::Subquery(s) => s.is_row_independent(),
            Expr::Neg(e)
            | Expr::Cast(e, _)
            | Expr::Not(e)
            | Expr::IsNull(e, _)
            | Expr::IsBool(e, _, _) => e.is_row_independent(),
            Expr::Arith(_, a, b)
            | Expr::Cmp(_, a, b, _)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Xor(a, b) => a.is_row_independent() && b.is_row_independent(),
            Expr::InList { expr, list, .. } => {
                expr.is_row_independent() && list.iter().all(Expr::is_row_independent)
            }
            Expr::Between {
                expr, low, high, ..
            } => expr.is_row_independent() && low.is_row_independent() && high.is_row_independent(),
            Expr::Like { expr, pattern, .. } => {
                expr.is_row_independent() && pattern.is_row_independent()
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                operand.as_ref().is_none_or(|e| e.is_row_independent())
                    && whens
                        .iter()
                        .all(|(w, t)| w.is_row_independent() && t.is_row_independent())
                    && otherwise.as_ref().is_none_or(|e| e.is_row_independent())
            }
            Expr::Func(f, args) => {
                *f != Func::LastInsertId
                    && !matches!(f, Func::Builtin(b) if b.is_volatile())
                    && args.iter().all(Expr::is_row_independent)
            }
        }
    }

    /// Evaluates over `row`.
    pub(crate) fn eval(&self, row: &[Value], env: &dyn Env) -> Result<Value, SqlError> {
        Ok(match self {
            Expr::Literal(v) => v.clone(),
            Expr::Param(n) => env.param(*n),
            Expr::Column(i) => row.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Neg(e) => value::negate(&e.eval(row, env)?)?,
            Expr::Cast(e, target) => crate::cast::cast(&e.eval(row, env)?, *target)?,
            Expr::Arith(op, a, b) => {
                let (x, y) = (a.eval(row, env)?, b.eval(row, env)?);
                let r = value::arith(*op, &x, &y)?;
                // NULL from two non-NULL operands: a division by zero (lenient_store.rs
                // rule 4).
                if matches!(r, Value::Null)
                    && matches!(op, ArithOp::Div | ArithOp::IntDiv | ArithOp::Mod)
                    && !matches!(x, Value::Null)
                    && !matches!(y, Value::Null)
                {
                    env.division_by_zero()?;
                }
                r
            }
            Expr::Cmp(op, a, b, coll) => {
                let (x, y) = (a.eval(row, env)?, b.eval(row, env)?);
                if *op == CmpOp::NullSafeEq {
                    let eq = match (&x, &y) {
                        (Value::Null, Value::Null) => true,
                        (Value::Null, _) | (_, Value::Null) => false,
                        _ => value::compare(&x, &y, *coll) == Some(Ordering::Equal),
                    };
                    value::from_bool(Some(eq))
                } else {
                    value::from_bool(value::compare(&x, &y, *coll).map(|o| op.holds(o)))
                }
            }
            Expr::And(a, b) => {
                let x = value::truth(&a.eval(row, env)?);
                if x == Some(false) {
                    return Ok(Value::Int(0));
                }
                let y = value::truth(&b.eval(row, env)?);
                value::from_bool(match (x, y) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Expr::Or(a, b) => {
                let x = value::truth(&a.eval(row, env)?);
                if x == Some(true) {
                    return Ok(Value::Int(1));
                }
                let y = value::truth(&b.eval(row, env)?);
                value::from_bool(match (x, y) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
            Expr::Xor(a, b) => {
                let x = value::truth(&a.eval(row, env)?);
                let y = value::truth(&b.eval(row, env)?);
                value::from_bool(x.zip(y).map(|(x, y)| x != y))
            }
            Expr::Not(e) => value::from_bool(value::truth(&e.eval(row, env)?).map(|b| !b)),
            Expr::IsNull(e, negated) => {
                let null = matches!(e.eval(row, env)?, Value::Null);
                value::from_bool(Some(null != *negated))
            }
            Expr::IsBool(e, negated, want) => {
                let t = value::truth(&e.eval(row, env)?);
                value::from_bool(Some((t == Some(*want)) != *negated))
            }
            Expr::InList {
                expr,
                list,
                negated,
                collation,
            } => {
                let x = expr.eval(row, env)?;
                if matches!(x, Value::Null) {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                let mut found = false;
                for item in list {
                    match value::compare(&x, &item.eval(row, env)?, *collation) {
                        Some(Ordering::Equal) => {
                            found = true;
                            break;
                        }
                        None => saw_null = true,
                        Some(_) => {}
                    }
                }
                if found {
                    value::from_bool(Some(!*negated))
                } else if saw_null {
                    Value::Null
                } else {
                    value::from_bool(Some(*negated))
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
                collation,
            } => {
                let x = expr.eval(row, env)?;
                let lo = value::compare(&x, &low.eval(row, env)?, *collation)
                    .map(|o| o != Ordering::Less);
                let hi = value::compare(&x, &high.eval(row, env)?, *collation)
                    .map(|o| o != Ordering::Greater);
                let r = match (lo, hi) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                value::from_bool(r.map(|b| b != *negated))
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                escape,
                collation,
            } => {
                let r = value::like(
                    &expr.eval(row, env)?,
                    &pattern.eval(row, env)?,
                    *escape,
                    *collation,
                );
                if *negated {
                    value::from_bool(value::truth(&r).map(|b| !b))
                } else {
                    r
                }
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
                collation,
            } => {
                let op = match operand {
                    Some(o) => Some(o.eval(row, env)?),
                    None => None,
                };
                for (when, then) in whens {
                    let w = when.eval(row, env)?;
                    let hit = match &op {
                        Some(o) => value::compare(o, &w, *collation) == Some(Ordering::Equal),
                        None => value::truth(&w) == Some(true),
                    };
                    if hit {
                        return then.eval(row, env);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, env)?,
                    None => Value::Null,
                }
            }
            Expr::Func(f, args) => {
                let value = eval_func(*f, args, row, env)?;
                if let Value::Bytes(b) = &value {
                    // A long value built for one row is work KILL must see (interrupt.rs).
                    let units = b.len() as u64 / crate::interrupt::BYTES_PER_UNIT;
                    if units > 0 {
                        crate::interrupt::work(units)?;
                    }
                }
                value
            }
            Expr::SysVar(name) => env.variable(name),
            Expr::UserVar(name) | Expr::UserVarPerRow(name) => env.user_variable(name),
            Expr::AssignUserVar(name, value) => {
                let v = value.eval(row, env)?;
                env.assign_user_variable(name, v.clone())?;
                v
            }
            Expr::Subquery(s) => s.eval(row, env)?,
            Expr::OuterRef(n) => env.outer(*n),
        })
    }
}

fn text(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

fn eval_func(f: Func, args: &[Expr], row: &[Value], env: &dyn Env) -> Result<Value, SqlError> {
    let arg = |i: usize| -> Result<Value, SqlError> {
        args.get(i).map_or(Ok(Value::Null), |a| a.eval(row, env))
    };
    Ok(match f {
        Func::Database => env.database().map_or(Value::Null, text),
        Func::Version => env.variable("version"),
        Func::ConnectionId => Value::UInt(env.connection_id()),
        Func::LastInsertId => Value::UInt(env.last_insert_id()),
        Func::User => text(env.user()),
        Func::CurrentUser => text(&env.current_user()),
        Func::Concat => {
            let mut out = Vec::new();
            for a in args {
                match a.eval(row, env)? {
                    Value::Null => return Ok(Value::Null),
                    Value::Bytes(b) => out.extend_from_slice(&b),
                    v => out.extend_from_slice(value::display(&v).as_bytes()),
                }
            }
            Value::Bytes(out)
        }
        // Bytes, not the text's: a binary string need not be UTF-8 (LENGTH(UNHEX('FF')) is 1).
        Func::Length => match crate::string_funcs::as_bytes(&arg(0)?) {
            None => Value::Null,
            Some(b) => Value::Int(b.len() as i64),
        },
        Func::CharLength => match value::as_text(&arg(0)?) {
            None => Value::Null,
            Some(s) => Value::Int(s.chars().count() as i64),
        },
        Func::Upper => value::as_text(&arg(0)?).map_or(Value::Null, |s| text(&s.to_uppercase())),
        Func::Lower => value::as_text(&arg(0)?).map_or(Value::Null, |s| text(&s.to_lowercase())),
        Func::Abs => match arg(0)? {
            Value::Null => Value::Null,
            Value::Int(i) => match i.checked_abs() {
                Some(a) => Value::Int(a),
                None => Value::UInt(i.unsigned_abs()),
            },
            Value::UInt(u) => Value::UInt(u),
            v => Value::Double(value::to_f64(&v).unwrap_or(0.0).abs()),
        },
        Func::IfNull | Func::Coalesce => {
            for a in args {
                let v = a.eval(row, env)?;
                if !matches!(v, Value::Null) {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Func::Builtin(b) => crate::builtin_eval::eval(b, args, row, env)?,
        Func::If => {
            if value::truth(&arg(0)?) == Some(true) {
                arg(1)?
            } else {
                arg(2)?
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoEnv;
    impl Env for NoEnv {
        fn param(&self, _: usize) -> Value {
            Value::Int(7)
        }
        fn database(&self) -> Option<&str> {
            None
        }
        fn connection_id(&self) -> u64 {
            3
        }
        fn last_insert_id(&self) -> u64 {
            0
        }
        fn user(&self) -> &'static str {
            "root@localhost"
        }
        fn variable(&self, _: &str) -> Value {
            Value::Null
        }
        fn user_variable(&self, _: &str) -> Value {
            Value::Null
        }
        fn statement_time(&self) -> i64 {
            0
        }
        fn row_counts(&self) -> (i64, u64) {
            (-1, 0)
        }
    }

    #[allow(clippy::unnecessary_box_returns)] // builds the Box<Expr> fields directly
    fn lit(v: Value) -> Box<Expr> {
        Expr::Literal(v).boxed()
    }

    #[test]
    fn three_valued_logic() {
        let t = Value::Int(1);
        let f = Value::Int(0);
        let n = Value::Null;
        let cases = [
            (Expr::And(lit(f.clone()), lit(n.clone())), f.clone()),
            (Expr::And(lit(n.clone()), lit(f.clone())), f.clone()),
            (Expr::And(lit(t.clone()), lit(n.clone())), n.clone()),
            (Expr::Or(lit(t.clone()), lit(n.clone())), t.clone()),
            (Expr::Or(lit(n.clone()), lit(t.clone())), t.clone()),
            (Expr::Or(lit(f.clone()), lit(n.clone())), n.clone()),
            (Expr::Not(lit(n.clone())), n.clone()),
            (Expr::IsNull(lit(n.clone()), false), t.clone()),
            (
                Expr::InList {
                    expr: lit(Value::Int(1)),
                    list: vec![Expr::Literal(Value::Int(2)), Expr::Literal(Value::Null)],
                    negated: false,
                    collation: Collation::Binary,
                },
                n.clone(),
            ),
            (
                Expr::Between {
                    expr: Expr::Param(0).boxed(),
                    low: lit(Value::Int(1)),
                    high: lit(Value::Int(7)),
                    negated: false,
                    collation: Collation::Binary,
                },
                t.clone(),
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.eval(&[], &NoEnv).unwrap(), want, "{e:?}");
        }
    }
}
