//! Execution: planned statements run inside one [`TableTxn`], rows pulled from an access path
//! through filter, grouping, projection, DISTINCT, sort and LIMIT into a [`ResultSink`].
//!
//! A SELECT without grouping, DISTINCT or ORDER BY streams: each row read is filtered,
//! projected and sent before the next is read. The others collect what they need first.
//! UPDATE and DELETE collect the matching rows before writing (a scan's cursor borrows the
//! transaction, and it keeps a statement from seeing its own writes).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Bound;

use shale_table::{
    Collation, ColumnDef, ColumnType, IndexChoice, KeyRange, LockMode, RowCursor, TableDef,
    TableTxn, Value,
};

use crate::bind::{
    AggFunc, AggSpec, BoundDelete, BoundInsert, BoundSelect, BoundUpdate, OnDuplicate, SortKey,
};
use crate::error::SqlError;
use crate::expr::{Env, Expr};
use crate::plan::{Access, Plan, RangeBound};
use crate::result::{ResultSink, StatementStatus};
use crate::types::{int_range, int_value};
use crate::value::{self, sort_compare, str_to_f64, str_to_i128_exact, to_i128};

/// Rows of an access path, pulled one at a time.
// One per statement, on the stack; boxing the cursor would cost a scan an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Source<'t> {
    Empty,
    One(Option<Vec<Value>>),
    Many(std::vec::IntoIter<Vec<Value>>),
    Cursor(RowCursor<'t>),
    /// Several ranges of one index, scanned in turn.
    Ranges(Box<MultiRangeScan<'t>>),
}

/// The state of a multi-range read: the transaction is either free (between ranges) or
/// held by the current range's cursor.
pub(crate) struct MultiRangeScan<'t> {
    state: ScanState<'t>,
    rest: std::vec::IntoIter<KeyRange>,
    table: &'t TableDef,
    index: IndexChoice,
    reverse: bool,
    lock: LockMode,
}

// Lives inside the boxed `MultiRangeScan`; boxing the cursor again would cost each range an
// allocation.
#[allow(clippy::large_enum_variant)]
enum ScanState<'t> {
    Between(&'t mut TableTxn),
    Scanning(RowCursor<'t>),
    /// After an error, or at the end.
    Done,
}

impl MultiRangeScan<'_> {
    fn next_row(&mut self) -> Result<Option<Vec<Value>>, SqlError> {
        loop {
            match std::mem::replace(&mut self.state, ScanState::Done) {
                ScanState::Scanning(mut cursor) => {
                    if let Some(row) = cursor.next_row()? {
                        self.state = ScanState::Scanning(cursor);
                        return Ok(Some(row));
                    }
                    self.state = ScanState::Between(cursor.into_txn());
                }
                ScanState::Between(txn) => {
                    let Some(range) = self.rest.next() else {
                        return Ok(None);
                    };
                    let cursor =
                        txn.scan(self.table, self.index, range, self.reverse, self.lock)?;
                    self.state = ScanState::Scanning(cursor);
                }
                ScanState::Done => return Ok(None),
            }
        }
    }
}

impl Source<'_> {
    /// The next row; every table row read is counted and may stop a killed or timed-out
    /// statement (interrupt.rs).
    pub(crate) fn next_row(&mut self) -> Result<Option<Vec<Value>>, SqlError> {
        let row = match self {
            Source::Empty => None,
            Source::One(row) => row.take(),
            Source::Many(rows) => rows.next(),
            Source::Cursor(c) => c.next_row()?,
            Source::Ranges(r) => r.next_row()?,
        };
        // A SELECT without a table reads one empty row: no table row.
        if row.as_ref().is_some_and(|r| !r.is_empty()) {
            crate::interrupt::row()?;
        }
        Ok(row)
    }
}

/// A key value converted for an index column: exact, widened to a superset, or impossible.
pub(crate) enum KeyValue {
    Exact(Value),
    /// A key value that admits more rows than the comparison (the filter must re-check).
    Widened(Value),
    /// The bound cannot be encoded; scan as if absent (the filter re-checks).
    Unbounded,
    /// No row can match (NULL, or an integer column against a non-integral equality).
    Nothing,
}

/// `v` as a key value of a column of type `ty`; `round_up` picks the side a non-integral
/// number widens to.
pub(crate) fn key_value(ty: &ColumnType, v: Value, round_up: Option<bool>) -> KeyValue {
    if matches!(v, Value::Null) {
        return KeyValue::Nothing;
    }
    if let Some((lo, hi)) = int_range(ty) {
        let exact = match &v {
            Value::Int(i) => Some(i128::from(*i)),
            Value::UInt(u) => Some(i128::from(*u)),
            Value::Bytes(b) => str_to_i128_exact(b),
            Value::Decimal(d) if d.round_to(0) == *d => d.to_i128(),
            Value::Double(_)
            | Value::Decimal(_)
            | Value::DateTime(_)
            | Value::Time(_)
            | Value::Enum(..)
            | Value::Set(..)
            | Value::Null => None,
        };
        let (i, widened) = match exact {
            Some(i) => (i, matches!(v, Value::Bytes(_))),
            None => {
                let d = match &v {
                    Value::Bytes(b) => str_to_f64(b),
                    other => value::to_f64(other).unwrap_or(0.0),
                };
                if !d.is_finite() {
                    return KeyValue::Unbounded;
                }
                let i = match round_up {
                    None if d.fract() != 0.0 => return KeyValue::Nothing,
                    None => d as i128,
                    Some(true) => d.ceil() as i128,
                    Some(false) => d.floor() as i128,
                };
                (i, true)
            }
        };
        if i < lo || i > hi {
            return match round_up {
                None => KeyValue::Nothing,
                Some(_) => KeyValue::Unbounded,
            };
        }
        let v = int_value(ty, i);
        return if widened {
            KeyValue::Widened(v)
        } else {
            KeyValue::Exact(v)
        };
    }
    match (ty, v) {
        (ColumnType::Decimal { .. }, v) => match crate::decimal::exact_decimal(&v) {
            // The key encoding is scale-independent: any exact number is a bound as it is.
            Some(d) if !matches!(v, Value::Bytes(_)) => KeyValue::Exact(Value::Decimal(d)),
            Some(d) => KeyValue::Widened(Value::Decimal(d)),
            None => KeyValue::Unbounded,
        },
        (
            ColumnType::Date | ColumnType::DateTime { .. } | ColumnType::Timestamp { .. },
            Value::DateTime(d),
        ) => KeyValue::Exact(Value::DateTime(d)),
        // A string that reads as a date bounds the range as that instant (the filter
        // re-checks); anything else compares another way: no key range.
        (
            ColumnType::Date | ColumnType::DateTime { .. } | ColumnType::Timestamp { .. },
            Value::Bytes(b),
        ) => match crate::temporal::parse_text(&b) {
            Some(d) => KeyValue::Widened(Value::DateTime(d)),
            None => KeyValue::Unbounded,
        },
        (ColumnType::Date | ColumnType::DateTime { .. } | ColumnType::Timestamp { .. }, _) => {
            KeyValue::Unbounded
        }
        // A TIME, or text or a number that reads as one in range, bounds a TIME key; the
        // filter re-checks what was converted.
        (ColumnType::Time { .. }, Value::Time(t)) => KeyValue::Exact(Value::Time(t)),
        (ColumnType::Time { .. }, v) => match crate::time_type::read(&v, 6) {
            Some(shale_table::TimeParse::Ok(t)) => KeyValue::Widened(Value::Time(t)),
            _ => KeyValue::Unbounded,
        },
        // An ENUM key orders by index: text and numbers bound only an equality, through the
        // member they name (enum_type.rs); a range compares another way.
        (ColumnType::Enum { members, collation }, v) => match (round_up, &v) {
            (_, Value::Enum(..)) if round_up.is_none() => {
                match crate::enum_type::pick(members, *collation, &v) {
                    Some(e) => KeyValue::Exact(e),
                    None => KeyValue::Nothing,
                }
            }
            (None, Value::Bytes(_)) => match crate::enum_type::pick(members, *collation, &v) {
                Some(e) => KeyValue::Widened(e),
                None => KeyValue::Unbounded,
            },
            _ => KeyValue::Unbounded,
        },
        // A SET key orders by mask: an equality names one value, a range compares as text or
        // numbers, not by key.
        (ColumnType::Set { members, collation }, v) if round_up.is_none() => {
            match crate::set_type::pick(members, *collation, &v) {
                Some(s) if matches!(v, Value::Set(..)) => KeyValue::Exact(s),
                Some(s) => KeyValue::Widened(s),
                None => KeyValue::Unbounded,
            }
        }
        (ColumnType::Set { .. }, _) => KeyValue::Unbounded,
        (ColumnType::Float | ColumnType::Double, v) => match value::to_f64(&v) {
            Some(d) if !matches!(v, Value::Bytes(_)) => KeyValue::Widened(Value::Double(d)),
            _ => KeyValue::Unbounded,
        },
        (_, Value::Bytes(b)) => KeyValue::Widened(Value::Bytes(b)),
        // A string column compared with a number compares as numbers: no key range.
        _ => KeyValue::Unbounded,
    }
}

pub(crate) fn index_columns(table: &TableDef, index: IndexChoice) -> &[usize] {
    match index {
        IndexChoice::Primary => &table.primary_key.columns,
        IndexChoice::Secondary(i) => table
            .indexes
            .get(i)
            .map_or(&table.primary_key.columns[..0], |d| &d.columns),
    }
}

/// Opens the rows of `access`; the flag says whether every key value converted exactly (so
/// the plan's residual condition suffices).
pub(crate) fn open_source<'t>(
    txn: &'t mut TableTxn,
    table: Option<&'t TableDef>,
    access: &Access,
    env: &dyn Env,
    lock: LockMode,
    reverse: bool,
) -> Result<(Source<'t>, bool), SqlError> {
    let Some(table) = table else {
        return Ok((Source::One(Some(Vec::new())), true));
    };
    let mut exact = true;
    let source = match access {
        Access::NoTable => Source::One(Some(Vec::new())),
        Access::PointGet(values) => {
            let mut key = Vec::with_capacity(values.len());
            for (e, &c) in values.iter().zip(&table.primary_key.columns) {
                let v = e.eval(&[], env)?;
                match key_value(&table.columns[c].ty, v, None) {
                    KeyValue::Exact(v) => key.push(v),
                    KeyValue::Widened(v) => {
                        exact = false;
                        key.push(v);
                    }
                    KeyValue::Nothing => return Ok((Source::Empty, true)),
                    KeyValue::Unbounded => {
                        let cursor =
                            txn.scan(table, IndexChoice::Primary, KeyRange::all(), reverse, lock)?;
                        return Ok((Source::Cursor(cursor), false));
                    }
                }
            }
            Source::One(txn.get(table, &key, lock)?)
        }
        Access::MultiGet(values) => {
            let Some(&pk) = table.primary_key.columns.first() else {
                return Ok((Source::Empty, true));
            };
            let ty = &table.columns[pk].ty;
            let mut keys = Vec::with_capacity(values.len());
            for e in values {
                match key_value(ty, e.eval(&[], env)?, None) {
                    KeyValue::Exact(v) | KeyValue::Widened(v) => keys.push(v),
                    KeyValue::Nothing => {}
                    KeyValue::Unbounded => {
                        let cursor =
                            txn.scan(table, IndexChoice::Primary, KeyRange::all(), reverse, lock)?;
                        return Ok((Source::Cursor(cursor), false));
                    }
                }
            }
            let collation = crate::types::SqlType::of_column(ty).collation();
            keys.sort_by(|a, b| sort_compare(a, b, collation));
            keys.dedup_by(|a, b| sort_compare(a, b, collation) == Ordering::Equal);
            if reverse {
                keys.reverse();
            }
            let mut rows = Vec::with_capacity(keys.len());
            for k in keys {
                if let Some(row) = txn.get(table, std::slice::from_ref(&k), lock)? {
                    rows.push(row);
                }
            }
            // The plan's residual is the whole WHERE, IN included.
            Source::Many(rows.into_iter())
        }
        Access::Range {
            index,
            eq,
            lower,
            upper,
        } => {
            let cols = index_columns(table, *index);
            let mut prefix = Vec::with_capacity(eq.len() + 1);
            for (e, &c) in eq.iter().zip(cols) {
                match key_value(&table.columns[c].ty, e.eval(&[], env)?, None) {
                    KeyValue::Exact(v) => prefix.push(v),
                    KeyValue::Widened(v) => {
                        exact = false;
                        prefix.push(v);
                    }
                    KeyValue::Nothing => return Ok((Source::Empty, true)),
                    KeyValue::Unbounded => {
                        exact = false;
                        break;
                    }
                }
            }
            let full_prefix = prefix.len() == eq.len();
            let next_ty = cols.get(eq.len()).map(|&c| &table.columns[c].ty);
            let open_end = |prefix: &Vec<Value>| {
                if prefix.is_empty() {
                    Bound::Unbounded
                } else {
                    Bound::Included(prefix.clone())
                }
            };
            let mut bound =
                |b: &Option<RangeBound>, up: bool| -> Result<Option<Bound<Vec<Value>>>, SqlError> {
                    let Some(b) = b else {
                        return Ok(Some(open_end(&prefix)));
                    };
                    let (Some(ty), true) = (next_ty, full_prefix) else {
                        exact = false;
                        return Ok(Some(open_end(&prefix)));
                    };
                    let v = b.value.eval(&[], env)?;
                    // A lower bound widens down, an upper bound up (superset, the filter re-checks).
                    let key = match key_value(ty, v, Some(up)) {
                        KeyValue::Nothing => return Ok(None),
                        KeyValue::Unbounded => {
                            exact = false;
                            return Ok(Some(open_end(&prefix)));
                        }
                        KeyValue::Exact(v) => v,
                        KeyValue::Widened(v) => {
                            exact = false;
                            v
                        }
                    };
                    let mut k = prefix.clone();
                    k.push(key);
                    Ok(Some(if b.inclusive {
                        Bound::Included(k)
                    } else {
                        Bound::Excluded(k)
                    }))
                };
            let lo = bound(lower, false)?;
            let hi = bound(upper, true)?;
            let (Some(lo), Some(hi)) = (lo, hi) else {
                return Ok((Source::Empty, true));
            };
            let range = KeyRange {
                lower: lo,
                upper: hi,
            };
            Source::Cursor(txn.scan(table, *index, range, reverse, lock)?)
        }
        Access::MultiRange { index, ranges } => {
            let Some(&c) = index_columns(table, *index).first() else {
                return Ok((Source::Empty, true));
            };
            let ty = &table.columns[c].ty;
            let collation = crate::types::SqlType::of_column(ty).collation();
            let mut intervals = Vec::with_capacity(ranges.len());
            for r in ranges {
                let side = |b: &Option<RangeBound>, up: bool| -> Result<_, SqlError> {
                    let Some(b) = b else {
                        return Ok(Some(Bound::Unbounded));
                    };
                    // A lower bound widens down, an upper bound up (the filter re-checks).
                    Ok(match key_value(ty, b.value.eval(&[], env)?, Some(up)) {
                        KeyValue::Nothing => None,
                        KeyValue::Unbounded => Some(Bound::Unbounded),
                        KeyValue::Exact(v) | KeyValue::Widened(v) if b.inclusive => {
                            Some(Bound::Included(v))
                        }
                        KeyValue::Exact(v) | KeyValue::Widened(v) => Some(Bound::Excluded(v)),
                    })
                };
                if let (Some(lo), Some(hi)) = (side(&r.lower, false)?, side(&r.upper, true)?) {
                    intervals.push((lo, hi));
                }
            }
            let merged = merge_intervals(intervals, collation);
            let mut key_ranges: Vec<KeyRange> = merged
                .into_iter()
                .map(|(lo, hi)| KeyRange {
                    lower: lo.map(|v| vec![v]),
                    upper: hi.map(|v| vec![v]),
                })
                .collect();
            if reverse {
                key_ranges.reverse();
            }
            // The plan's residual is the whole WHERE.
            Source::Ranges(Box::new(MultiRangeScan {
                state: ScanState::Between(txn),
                rest: key_ranges.into_iter(),
                table,
                index: *index,
                reverse,
                lock,
            }))
        }
        Access::FullScan => {
            Source::Cursor(txn.scan(table, IndexChoice::Primary, KeyRange::all(), reverse, lock)?)
        }
    };
    Ok((source, exact))
}

type Interval = (Bound<Value>, Bound<Value>);

/// Orders two lower bounds (an open end first; at one value, included first).
fn cmp_lower(a: &Bound<Value>, b: &Bound<Value>, collation: Collation) -> Ordering {
    match (a, b) {
        (Bound::Unbounded, Bound::Unbounded) => Ordering::Equal,
        (Bound::Unbounded, _) => Ordering::Less,
        (_, Bound::Unbounded) => Ordering::Greater,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            sort_compare(x, y, collation)
                .then_with(|| matches!(a, Bound::Excluded(_)).cmp(&matches!(b, Bound::Excluded(_))))
        }
    }
}

/// Whether an interval holds no value (its lower bound above its upper, or one value with an
/// excluded end).
fn is_empty(lo: &Bound<Value>, hi: &Bound<Value>, collation: Collation) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(h)) => sort_compare(l, h, collation).is_gt(),
        (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => {
            sort_compare(l, h, collation).is_ge()
        }
        _ => false,
    }
}

/// Whether an interval ending at `hi` overlaps or touches one starting at `lo` (which does
/// not start before it).
fn touches(hi: &Bound<Value>, lo: &Bound<Value>, collation: Collation) -> bool {
    match (hi, lo) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(h) | Bound::Excluded(h), Bound::Included(l) | Bound::Excluded(l)) => {
            match sort_compare(l, h, collation) {
                Ordering::Less => true,
                Ordering::Equal => {
                    matches!(hi, Bound::Included(_)) || matches!(lo, Bound::Included(_))
                }
                Ordering::Greater => false,
            }
        }
    }
}

/// The higher of two upper bounds.
fn max_upper(a: Bound<Value>, b: Bound<Value>, collation: Collation) -> Bound<Value> {
    match (&a, &b) {
        (Bound::Unbounded, _) => a,
        (_, Bound::Unbounded) => b,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            let a_wins = match sort_compare(x, y, collation) {
                Ordering::Greater => true,
                Ordering::Equal => matches!(a, Bound::Included(_)),
                Ordering::Less => false,
            };
            if a_wins {
                a
            } else {
                b
            }
        }
    }
}

/// Drops empty intervals, sorts the rest by lower bound and merges those that overlap or
/// touch: disjoint intervals in ascending order.
fn merge_intervals(mut intervals: Vec<Interval>, collation: Collation) -> Vec<Interval> {
    intervals.retain(|(lo, hi)| !is_empty(lo, hi, collation));
    intervals.sort_by(|a, b| cmp_lower(&a.0, &b.0, collation));
    let mut out: Vec<Interval> = Vec::with_capacity(intervals.len());
    for (lo, hi) in intervals {
        match out.last_mut() {
            Some(last) if touches(&last.1, &lo, collation) => {
                let upper = std::mem::replace(&mut last.1, Bound::Unbounded);
                last.1 = max_upper(upper, hi, collation);
            }
            _ => out.push((lo, hi)),
        }
    }
    out
}

pub(crate) fn passes(
    filter: Option<&Expr>,
    row: &[Value],
    env: &dyn Env,
) -> Result<bool, SqlError> {
    // Every row a join or filter looks at passes here: the place a long join is stopped.
    crate::interrupt::tick()?;
    match filter {
        None => Ok(true),
        Some(f) => Ok(value::truth(&f.eval(row, env)?) == Some(true)),
    }
}

/// A LIMIT or OFFSET's value (negative or NULL: 0 rows skipped/taken as MySQL rejects them).
pub(crate) fn count_value(e: Option<&Expr>, env: &dyn Env, default: u64) -> Result<u64, SqlError> {
    match e {
        None => Ok(default),
        Some(e) => {
            let v = e.eval(&[], env)?;
            Ok(to_i128(&v).map_or(default, |i| i.clamp(0, i128::from(u64::MAX)) as u64))
        }
    }
}

fn collation_of_charset(charset: u16) -> Collation {
    crate::types::collation_of_id(charset)
}

/// A text key under which equal values (in `collation`) collide: GROUP BY and DISTINCT.
pub(crate) fn group_key(values: &[Value], collations: &[Collation], out: &mut String) {
    out.clear();
    for (i, v) in values.iter().enumerate() {
        match v {
            Value::Null => out.push('\u{0}'),
            Value::Bytes(b) => {
                let collation = collations.get(i).copied().unwrap_or(Collation::Binary);
                let folded = value::sort_key(b, collation);
                // Length-prefixed, so no value's text can imitate a column boundary.
                let _ = write!(out, "s{}:", folded.len());
                out.push_str(&folded);
            }
            other => {
                let text = value::display(other);
                let _ = write!(out, "n{}:", text.len());
                out.push_str(&text);
            }
        }
    }
}

/// A group: its first row, its aggregates' states, and each DISTINCT aggregate's seen values.
type Group = (
    Vec<Value>,
    Vec<AggState>,
    Vec<Option<std::collections::HashSet<String>>>,
);

/// Where a group of a ROLLUP sits (rollup.rs): its keys and how many of them it keeps.
struct RollupPlace {
    keys: Vec<Value>,
    level: usize,
}

/// One aggregate's running state.
#[derive(Debug, Clone)]
pub(crate) enum AggState {
    Count(i64),
    Sum {
        int: i128,
        /// The exact sum's decimal part (DECIMAL arguments); `int` holds the integers'.
        decimal: shale_table::Decimal,
        double: f64,
        is_int: bool,
        count: i64,
    },
    Extreme(Option<Value>),
    Collected(Box<crate::agg_collect::Collected>),
    /// The bit and statistical aggregates (stat_aggs.rs).
    Stat(crate::stat_aggs::StatState),
}

pub(crate) fn new_state(spec: &AggSpec) -> AggState {
    match spec.func {
        AggFunc::CountStar | AggFunc::Count => AggState::Count(0),
        AggFunc::Sum | AggFunc::Avg => AggState::Sum {
            int: 0,
            decimal: shale_table::Decimal::zero(),
            double: 0.0,
            is_int: matches!(
                spec.arg_type,
                crate::types::SqlType::Int { .. } | crate::types::SqlType::Decimal { .. }
            ),
            count: 0,
        },
        AggFunc::Min | AggFunc::Max => AggState::Extreme(None),
        AggFunc::GroupConcat | AggFunc::JsonArrayAgg | AggFunc::JsonObjectAgg => {
            AggState::Collected(Box::new(crate::agg_collect::Collected::new()))
        }
        other => AggState::Stat(crate::stat_aggs::StatState::new(other)),
    }
}

pub(crate) fn accumulate(
    spec: &AggSpec,
    state: &mut AggState,
    seen: &mut Option<std::collections::HashSet<String>>,
    row: &[Value],
    env: &dyn Env,
) -> Result<(), SqlError> {
    if let (Some(collect), AggState::Collected(collected)) = (&spec.collect, &mut *state) {
        return crate::agg_collect::accumulate(spec, collect, collected, row, env);
    }
    let v = match &spec.arg {
        None => Value::Int(1),
        Some(e) => e.eval(row, env)?,
    };
    if matches!(v, Value::Null) {
        return Ok(());
    }
    if spec.distinct {
        let mut k = String::new();
        group_key(
            std::slice::from_ref(&v),
            &[spec.arg_type.collation()],
            &mut k,
        );
        let set = seen.get_or_insert_with(Default::default);
        if !set.insert(k) {
            return Ok(());
        }
    }
    match state {
        AggState::Count(n) => *n += 1,
        AggState::Sum {
            int,
            decimal,
            double,
            is_int,
            count,
        } => {
            *count += 1;
            if *is_int {
                match &v {
                    Value::Int(_) | Value::UInt(_) => *int += to_i128(&v).unwrap_or(0),
                    Value::Decimal(d) => *decimal = decimal.add(d),
                    _ => {
                        *is_int = false;
                        *double = *int as f64 + decimal.to_f64() + value::to_f64(&v).unwrap_or(0.0);
                    }
                }
            } else {
                *double += value::to_f64(&v).unwrap_or(0.0);
            }
        }
        AggState::Extreme(cur) => {
            let coll = spec.arg_type.collation();
            let replace = match cur {
                None => true,
                Some(c) => {
                    let o = sort_compare(&v, c, coll);
                    if spec.func == AggFunc::Min {
                        o == Ordering::Less
                    } else {
                        o == Ordering::Greater
                    }
                }
            };
            if replace {
                *cur = Some(v);
            }
        }
        // Handled at the top (agg_collect.rs); a spec without `collect` never makes one.
        AggState::Collected(_) => {}
        AggState::Stat(s) => s.add(spec.func, &v),
    }
    Ok(())
}

pub(crate) fn finish(spec: &AggSpec, state: AggState, env: &dyn Env) -> Result<Value, SqlError> {
    Ok(match state {
        AggState::Count(n) => Value::Int(n),
        AggState::Sum { count: 0, .. } => Value::Null,
        AggState::Sum {
            int,
            decimal,
            double,
            is_int,
            count,
        } => {
            let exact = || shale_table::Decimal::from_i128(int).add(&decimal);
            if spec.func == AggFunc::Sum {
                if is_int {
                    Value::Decimal(exact())
                } else {
                    Value::Double(double)
                }
            } else if is_int {
                let scale = decimal.scale() + crate::decimal::DIV_PRECISION_INCREMENT;
                let count = shale_table::Decimal::from_i128(i128::from(count));
                exact()
                    .div(&count, scale)
                    .map_or(Value::Null, Value::Decimal)
            } else {
                Value::Double(double / count as f64)
            }
        }
        AggState::Extreme(v) => v.unwrap_or(Value::Null),
        AggState::Collected(collected) => match &spec.collect {
            Some(collect) => crate::agg_collect::finish(spec, collect, *collected, env)?,
            None => Value::Null,
        },
        AggState::Stat(s) => s.finish(spec.func),
    })
}

pub(crate) fn sort_rows(rows: &mut [(Vec<Value>, Vec<Value>)], keys: &[SortKey]) {
    rows.sort_by(|a, b| {
        for (i, k) in keys.iter().enumerate() {
            let o = sort_compare(&a.0[i], &b.0[i], k.collation);
            let o = if k.desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
}

/// Runs a SELECT: `columns`, rows, `end`.
pub(crate) fn select(
    txn: &mut TableTxn,
    s: &BoundSelect,
    plan: &Plan,
    env: &dyn Env,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
) -> Result<(), SqlError> {
    let table = s.table.as_ref().map(|t| &*t.def);
    let reverse = plan.ordered == Some(true);
    let (src, exact) = open_source(txn, table, &plan.access, env, s.lock, reverse)?;
    let filter = if exact {
        plan.residual.as_ref()
    } else {
        s.filter.as_ref()
    };
    select_rows(src, filter, s, plan.ordered.is_some(), env, sink, status)
}

/// The rest of a SELECT over the rows of `src` (checked against `filter`): `columns`,
/// grouping, projection, DISTINCT, sort, LIMIT, rows, `end`. `ordered`: the rows already
/// come in ORDER BY's order.
pub(crate) fn select_rows(
    mut src: Source<'_>,
    filter: Option<&Expr>,
    s: &BoundSelect,
    ordered: bool,
    env: &dyn Env,
    sink: &mut dyn ResultSink,
    status: &StatementStatus,
) -> Result<(), SqlError> {
    let offset = count_value(s.offset.as_ref(), env, 0)?;
    let limit = count_value(s.limit.as_ref(), env, u64::MAX)?;
    sink.columns(&s.columns)?;
    let simple =
        !s.grouped && !s.distinct && s.windows.is_empty() && (s.order_by.is_empty() || ordered);
    if simple {
        let (mut skipped, mut sent) = (0u64, 0u64);
        let mut out = Vec::with_capacity(s.projection.len());
        // Plain distinct columns are moved out of the row read instead of copied.
        let moves: Option<Vec<usize>> = s
            .projection
            .iter()
            .enumerate()
            .map(|(i, e)| match e {
                Expr::Column(c) if !s.projection[..i].contains(e) => Some(*c),
                _ => None,
            })
            .collect();
        while sent < limit {
            let Some(mut row) = src.next_row()? else {
                break;
            };
            if !passes(filter, &row, env)? {
                continue;
            }
            if skipped < offset {
                skipped += 1;
                continue;
            }
            out.clear();
            match &moves {
                Some(columns) => {
                    for &c in columns {
                        out.push(
                            row.get_mut(c)
                                .map_or(Value::Null, |v| std::mem::replace(v, Value::Null)),
                        );
                    }
                }
                None => {
                    for e in &s.projection {
                        out.push(e.eval(&row, env)?);
                    }
                }
            }
            sink.row(&out)?;
            sent += 1;
        }
        return sink.end(status);
    }
    // Rows after filtering (and grouping): what projection and sort keys are evaluated over.
    let mut rows: Vec<Vec<Value>> = Vec::new();
    if s.grouped {
        let collations = &s.group_collations;
        let mut groups: Vec<Group> = Vec::new();
        let mut places: Vec<RollupPlace> = Vec::new();
        // The levels each row is grouped at: all keys, and with ROLLUP every shorter prefix.
        let nkeys = s.group_by.len();
        let lowest = if s.rollup { 0 } else { nkeys };
        // Per level, the groups by key.
        let mut index: Vec<HashMap<String, usize>> = vec![HashMap::new(); nkeys + 1];
        let mut key = String::new();
        let mut kv = Vec::new();
        while let Some(row) = src.next_row()? {
            if !passes(filter, &row, env)? {
                continue;
            }
            kv.clear();
            for g in &s.group_by {
                kv.push(g.eval(&row, env)?);
            }
            for level in (lowest..=nkeys).rev() {
                group_key(&kv[..level], collations, &mut key);
                let gi = match index[level].get(&key) {
                    Some(&i) => i,
                    None => {
                        index[level].insert(key.clone(), groups.len());
                        groups.push((
                            row.clone(),
                            s.aggs.iter().map(new_state).collect(),
                            vec![None; s.aggs.len()],
                        ));
                        if s.rollup {
                            places.push(RollupPlace {
                                keys: kv.clone(),
                                level,
                            });
                        }
                        groups.len() - 1
                    }
                };
                let (_, states, seen) = &mut groups[gi];
                for ((spec, st), seen) in s.aggs.iter().zip(states.iter_mut()).zip(seen.iter_mut())
                {
                    accumulate(spec, st, seen, &row, env)?;
                }
            }
        }
        drop(index);
        if groups.is_empty() && s.group_by.is_empty() {
            let ncols = s.width();
            groups.push((
                vec![Value::Null; ncols],
                s.aggs.iter().map(new_state).collect(),
                vec![None; s.aggs.len()],
            ));
        }
        let mut order: Vec<usize> = (0..groups.len()).collect();
        if s.rollup {
            order.sort_by(|&a, &b| {
                let (a, b) = (&places[a], &places[b]);
                crate::rollup::compare((&a.keys, a.level), (&b.keys, b.level), collations)
            });
        }
        let mut groups: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
        for gi in order {
            let Some((first, states, _)) = groups[gi].take() else {
                continue;
            };
            let mut row = first;
            if let Some(place) = places.get(gi) {
                crate::rollup::columns(&place.keys, place.level, &mut row);
            }
            for (spec, st) in s.aggs.iter().zip(states) {
                row.push(finish(spec, st, env)?);
            }
            if passes(s.having.as_ref(), &row, env)? {
                rows.push(row);
            }
        }
    } else {
        while let Some(row) = src.next_row()? {
            if passes(filter, &row, env)? && passes(s.having.as_ref(), &row, env)? {
                rows.push(row);
            }
        }
    }
    drop(src);
    crate::window::compute(&mut rows, &s.windows, env)?;
    // A sort key that is a select-list expression takes the value the select list computed
    // (user_vars.rs rule 2: an assignment runs once per row).
    let key_sources: Vec<Option<usize>> = s
        .order_by
        .iter()
        .map(|k| s.projection.iter().position(|e| *e == k.expr))
        .collect();
    let assigns = crate::user_vars::assigns;
    // A select list that assigns runs in the order the rows are sent, unless a sort key
    // needs what it assigns (rule 2).
    let project_after_sort = !s.order_by.is_empty()
        && s.projection.iter().any(assigns)
        && s.order_by.iter().zip(&key_sources).all(|(k, source)| {
            !assigns(&k.expr) && source.is_none_or(|i| !assigns(&s.projection[i]))
        });
    let mut out: Vec<(Vec<Value>, Vec<Value>)> = Vec::with_capacity(rows.len());
    if project_after_sort {
        let mut keyed = Vec::with_capacity(rows.len());
        for row in rows {
            let mut keys = Vec::with_capacity(s.order_by.len());
            for k in &s.order_by {
                keys.push(k.expr.eval(&row, env)?);
            }
            keyed.push((keys, row));
        }
        sort_rows(&mut keyed, &s.order_by);
        for (keys, row) in keyed {
            let mut vals = Vec::with_capacity(s.projection.len());
            for e in &s.projection {
                vals.push(e.eval(&row, env)?);
            }
            out.push((keys, vals));
        }
    } else {
        for row in &rows {
            let mut vals = Vec::with_capacity(s.projection.len());
            for e in &s.projection {
                vals.push(e.eval(row, env)?);
            }
            let mut keys = Vec::with_capacity(s.order_by.len());
            for (k, source) in s.order_by.iter().zip(&key_sources) {
                keys.push(match source {
                    Some(i) => vals[*i].clone(),
                    None => k.expr.eval(row, env)?,
                });
            }
            out.push((keys, vals));
        }
    }
    if s.distinct {
        let collations: Vec<Collation> = s
            .columns
            .iter()
            .map(|c| collation_of_charset(c.charset))
            .collect();
        let mut seen = std::collections::HashSet::new();
        let mut key = String::new();
        out.retain(|(_, vals)| {
            group_key(vals, &collations, &mut key);
            seen.insert(key.clone())
        });
    }
    if !s.order_by.is_empty() && !project_after_sort {
        sort_rows(&mut out, &s.order_by);
    }
    for (_, vals) in out
        .iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
    {
        sink.row(vals)?;
    }
    sink.end(status)
}

/// Reads the rows an UPDATE or DELETE changes, in the order and number it changes them.
fn matching_rows(
    txn: &mut TableTxn,
    table: &TableDef,
    plan: &Plan,
    filter: Option<&Expr>,
    order_by: &[SortKey],
    limit: Option<&Expr>,
    env: &dyn Env,
) -> Result<Vec<Vec<Value>>, SqlError> {
    let limit = count_value(limit, env, u64::MAX)?;
    let (mut src, exact) = open_source(
        txn,
        Some(table),
        &plan.access,
        env,
        LockMode::Exclusive,
        false,
    )?;
    let filter = if exact {
        plan.residual.as_ref()
    } else {
        filter
    };
    let mut rows = Vec::new();
    while let Some(row) = src.next_row()? {
        if passes(filter, &row, env)? {
            rows.push(row);
            if order_by.is_empty() && rows.len() as u64 >= limit {
                break;
            }
        }
    }
    drop(src);
    if !order_by.is_empty() {
        let mut keyed = Vec::with_capacity(rows.len());
        for row in rows {
            let mut keys = Vec::with_capacity(order_by.len());
            for k in order_by {
                keys.push(k.expr.eval(&row, env)?);
            }
            keyed.push((keys, row));
        }
        sort_rows(&mut keyed, order_by);
        rows = keyed
            .into_iter()
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|(_, r)| r)
            .collect();
    }
    Ok(rows)
}

/// Runs an UPDATE; returns (matched, changed).
pub(crate) fn update(
    txn: &mut TableTxn,
    u: &BoundUpdate,
    plan: &Plan,
    env: &dyn Env,
) -> Result<(u64, u64), SqlError> {
    let table = &*u.table.def;
    let rows = matching_rows(
        txn,
        table,
        plan,
        u.filter.as_ref(),
        &u.order_by,
        u.limit.as_ref(),
        env,
    )?;
    let (mut matched, mut changed) = (0u64, 0u64);
    for old in rows {
        matched += 1;
        let mut new = old.clone();
        for (pos, e) in &u.assignments {
            let v = e.eval(&new, env)?;
            let (Some(col), Some(slot)) = (table.columns.get(*pos), new.get_mut(*pos)) else {
                return Err(SqlError::internal("row shorter than its table definition"));
            };
            *slot = crate::timestamp::store(col, v, matched as usize, env)?;
        }
        crate::timestamp::touch(
            table,
            &old,
            &mut new,
            |p| u.assignments.iter().any(|(a, _)| *a == p),
            env,
        )?;
        crate::gencols::fill(table, &mut new, matched as usize)?;
        if new != old {
            let check = u.view_check.as_ref();
            if update_row(txn, table, &old, new, check, u.ignore, env)? {
                changed += 1;
            }
        }
    }
    Ok((matched, changed))
}

/// Writes one row of an UPDATE; false when IGNORE skipped it: under IGNORE, a row a unique
/// key (1062) or the view's CHECK OPTION (1369) refuses stays as it was, with the error as a
/// warning, as MySQL's UPDATE IGNORE. A refused write leaves nothing of itself behind:
/// `TableTxn::update` undoes the index writes it made before the one that failed.
pub(crate) fn update_row(
    txn: &mut TableTxn,
    table: &TableDef,
    old: &[Value],
    new: Vec<Value>,
    check: Option<&crate::view_dml::ViewCheck>,
    ignore: bool,
    env: &dyn Env,
) -> Result<bool, SqlError> {
    let written = match check.map_or(Ok(()), |c| c.verify(&new, env)) {
        Ok(()) => txn.update(table, old, new).map_err(SqlError::from),
        Err(e) => Err(e),
    };
    match written {
        Ok(()) => Ok(true),
        Err(e) if ignore && matches!(e.code, 1062 | 1369) => {
            env.warn(e.code, e.message);
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Runs a DELETE; returns the rows deleted.
pub(crate) fn delete(
    txn: &mut TableTxn,
    d: &BoundDelete,
    plan: &Plan,
    env: &dyn Env,
) -> Result<u64, SqlError> {
    let table = &*d.table.def;
    let rows = matching_rows(
        txn,
        table,
        plan,
        d.filter.as_ref(),
        &d.order_by,
        d.limit.as_ref(),
        env,
    )?;
    for row in &rows {
        txn.delete(table, row)?;
    }
    Ok(rows.len() as u64)
}

/// Runs an INSERT; returns (rows inserted, first generated AUTO_INCREMENT value or 0).
/// What an INSERT did.
#[derive(Debug, Default)]
pub(crate) struct InsertOutcome {
    /// MySQL's affected rows: 1 per row inserted, 2 per row ON DUPLICATE KEY UPDATE changed,
    /// 1 more per row REPLACE deleted.
    pub affected: u64,
    /// The first AUTO_INCREMENT value generated, or 0.
    pub first_id: u64,
    /// Rows that met an existing key.
    pub duplicates: u64,
    /// Rows the statement offered (VALUES rows or the SELECT's rows).
    pub records: u64,
    pub warnings: Vec<(&'static str, u16, String)>,
}

/// The row whose `key` (an index name, or PRIMARY) holds the same values as `row`.
fn conflicting_row(
    txn: &mut TableTxn,
    table: &TableDef,
    key: &str,
    row: &[Value],
) -> Result<Option<Vec<Value>>, SqlError> {
    let pick = |cols: &[usize]| -> Vec<Value> {
        cols.iter()
            .map(|&c| row.get(c).cloned().unwrap_or(Value::Null))
            .collect()
    };
    if key.eq_ignore_ascii_case("PRIMARY") {
        let pk = pick(&table.primary_key.columns);
        return Ok(txn.get(table, &pk, LockMode::Exclusive)?);
    }
    let Some(i) = table.indexes.iter().position(|ix| ix.name == key) else {
        return Ok(None);
    };
    let prefix = pick(&table.indexes[i].columns);
    let mut cursor = txn.scan(
        table,
        IndexChoice::Secondary(i),
        KeyRange::prefix(prefix),
        false,
        LockMode::Exclusive,
    )?;
    Ok(cursor.next_row()?)
}

/// Inserts one row under IGNORE, REPLACE or ON DUPLICATE KEY UPDATE, each attempt under a
/// savepoint so a duplicate leaves nothing of the attempt behind.
fn insert_on_duplicate(
    txn: &mut TableTxn,
    ins: &BoundInsert,
    row: &[Value],
    row_number: usize,
    env: &dyn Env,
    out: &mut InsertOutcome,
) -> Result<(), SqlError> {
    let (table, on_duplicate, check) =
        (&*ins.table.def, &ins.on_duplicate, ins.view_check.as_ref());
    // REPLACE may have to delete one row per unique key before the insert fits.
    for _ in 0..=table.indexes.len() + 1 {
        txn.set_savepoint();
        let (key, entry) = match txn.insert(table, row.to_vec()) {
            Ok(()) => {
                txn.release_savepoint()?;
                out.affected += 1;
                return Ok(());
            }
            Err(shale_table::Error::DuplicateKey { key, entry, .. }) => {
                txn.rollback_to_savepoint()?;
                (key, entry)
            }
            Err(e) => {
                let _ = txn.rollback_to_savepoint();
                return Err(e.into());
            }
        };
        out.duplicates += 1;
        match on_duplicate {
            OnDuplicate::Error => return Err(SqlError::duplicate_entry(&entry, &key)),
            OnDuplicate::Ignore => {
                out.warnings.push((
                    "Warning",
                    1062,
                    format!("Duplicate entry '{entry}' for key '{key}'"),
                ));
                return Ok(());
            }
            OnDuplicate::Replace => {
                out.duplicates -= 1;
                let Some(old) = conflicting_row(txn, table, &key, row)? else {
                    return Err(SqlError::duplicate_entry(&entry, &key));
                };
                txn.delete(table, &old)?;
                out.affected += 1;
            }
            OnDuplicate::Update(assignments) => {
                let Some(old) = conflicting_row(txn, table, &key, row)? else {
                    return Err(SqlError::duplicate_entry(&entry, &key));
                };
                // Assignments read the existing row, then VALUES(c) the proposed one.
                let mut scope = old.clone();
                scope.extend(row.iter().cloned());
                for (pos, e) in assignments {
                    let v = e.eval(&scope, env)?;
                    let Some(col) = table.columns.get(*pos) else {
                        return Err(SqlError::internal("assignment past the row"));
                    };
                    scope[*pos] = crate::timestamp::store(col, v, row_number, env)?;
                }
                scope.truncate(old.len());
                let assigned = |p: usize| assignments.iter().any(|(a, _)| *a == p);
                crate::timestamp::touch(table, &old, &mut scope, assigned, env)?;
                crate::gencols::fill(table, &mut scope, row_number)?;
                if scope != old {
                    if let Some(check) = check {
                        check.verify(&scope, env)?;
                    }
                    txn.update(table, &old, scope)?;
                    out.affected += 2;
                }
                return Ok(());
            }
        }
    }
    Err(SqlError::internal("REPLACE did not converge"))
}

/// Collects a result set (the SELECT of INSERT ... SELECT).
#[derive(Default)]
struct Collect {
    rows: Vec<Vec<Value>>,
}

impl ResultSink for Collect {
    fn ok(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
    fn columns(&mut self, _: &[crate::result::ColumnMeta]) -> Result<(), SqlError> {
        Ok(())
    }
    fn row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.rows.push(row.to_vec());
        Ok(())
    }
    fn end(&mut self, _: &StatementStatus) -> Result<(), SqlError> {
        Ok(())
    }
}

/// The SELECT rows of INSERT ... SELECT as rows of the table: each value at the column
/// `targets` names, None (the default) elsewhere.
fn spread(rows: Vec<Vec<Value>>, targets: &[usize], ncols: usize) -> Vec<Vec<Option<Value>>> {
    rows.into_iter()
        .map(|r| {
            let mut row = vec![None; ncols];
            for (v, &pos) in r.into_iter().zip(targets) {
                row[pos] = Some(v);
            }
            row
        })
        .collect()
}

pub(crate) fn insert(
    txn: &mut TableTxn,
    ins: &BoundInsert,
    select_plan: Option<&Plan>,
    env: &dyn Env,
) -> Result<InsertOutcome, SqlError> {
    let table = &*ins.table.def;
    let ncols = table.columns.len();
    // The rows to insert, one optional value per column (None: the column's default). The
    // SELECT of INSERT ... SELECT is read completely before the first write.
    let source: Vec<Vec<Option<Value>>> = match (&ins.select, select_plan, &ins.query) {
        (Some((select, targets)), Some(plan), _) => {
            let mut collect = Collect::default();
            self::select(
                txn,
                select,
                plan,
                env,
                &mut collect,
                &StatementStatus::default(),
            )?;
            spread(collect.rows, targets, ncols)
        }
        (_, _, Some((query, targets))) => {
            let mut collect = Collect::default();
            let status = StatementStatus::default();
            crate::query::run_statement(txn, query, env, &mut collect, &status)?;
            spread(collect.rows, targets, ncols)
        }
        _ => {
            let mut rows = Vec::with_capacity(ins.rows.len());
            for (i, exprs) in ins.rows.iter().enumerate() {
                rows.push(values_row(
                    table,
                    exprs,
                    ins.value_order.as_deref(),
                    i + 1,
                    env,
                )?);
            }
            rows
        }
    };
    // Every row is converted and checked before the first is written, so a bad value in row
    // 900 of a bulk insert leaves nothing behind even inside a transaction.
    let records = source.len() as u64;
    let mut prepared: Vec<Vec<Value>> = Vec::with_capacity(source.len());
    let mut needs_id: Vec<Option<usize>> = Vec::with_capacity(source.len());
    for (i, row) in source.into_iter().enumerate() {
        let (values, auto) = row_values(table, row, i + 1, env)?;
        prepared.push(values);
        needs_id.push(auto);
    }
    let mut out = InsertOutcome {
        records,
        ..InsertOutcome::default()
    };
    for (i, (mut row, auto)) in prepared.into_iter().zip(needs_id).enumerate() {
        if let Some(pos) = auto {
            let id = txn.next_auto_increment(table)?;
            if out.first_id == 0 {
                out.first_id = id;
            }
            row[pos] = int_value(&table.columns[pos].ty, i128::from(id));
        }
        if let Some(check) = &ins.view_check {
            match check.verify(&row, env) {
                Ok(()) => {}
                // INSERT IGNORE skips a row the CHECK OPTION refuses, as MySQL, which does
                // not count it in Records either.
                Err(e) if matches!(ins.on_duplicate, OnDuplicate::Ignore) => {
                    out.warnings.push(("Warning", e.code, e.message));
                    out.records -= 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        if matches!(ins.on_duplicate, OnDuplicate::Error) {
            txn.insert(table, row)?;
            out.affected += 1;
        } else {
            insert_on_duplicate(txn, ins, &row, i + 1, env, &mut out)?;
        }
    }
    Ok(out)
}

/// The values of one VALUES row, one optional value per column (`None`: its default).
///
/// With `order` (the columns in list order; bind.rs sets it when a value reads a column of
/// the row) the values are evaluated in that order over the row as built so far, as MySQL
/// does: a column listed earlier reads as its new value, stored (converted to the column's
/// type), any other as its default. Such a value is handed on stored; storing it again in
/// `row_values` changes nothing.
pub(crate) fn values_row(
    table: &TableDef,
    exprs: &[Option<Expr>],
    order: Option<&[usize]>,
    row_number: usize,
    env: &dyn Env,
) -> Result<Vec<Option<Value>>, SqlError> {
    let Some(order) = order else {
        let mut row = Vec::with_capacity(exprs.len());
        for e in exprs {
            row.push(match e {
                Some(e) => Some(e.eval(&[], env)?),
                None => None,
            });
        }
        return Ok(row);
    };
    let mut scope = table
        .columns
        .iter()
        .map(|col| default_before_insert(col, env))
        .collect::<Result<Vec<_>, _>>()?;
    let mut given = vec![None; exprs.len()];
    for &pos in order {
        let (Some(Some(e)), Some(col)) = (exprs.get(pos), table.columns.get(pos)) else {
            continue; // DEFAULT: the column keeps its default
        };
        let v = e.eval(&scope, env)?;
        let zero_generates = !env.store_rules().zero_is_value && to_i128(&v) == Some(0);
        if col.generated.is_some() {
            // Refused by row_values (3105), which names the column.
            given[pos] = Some(v);
        } else if col.auto_increment && (matches!(v, Value::Null) || zero_generates) {
            // Generated when the row is written; until then it reads as 0, as in MySQL.
            scope[pos] = int_value(&col.ty, 0);
            given[pos] = Some(v);
        } else {
            let stored = crate::timestamp::store(col, v, row_number, env)?;
            scope[pos] = stored.clone();
            given[pos] = Some(stored);
        }
    }
    Ok(given)
}

/// What a column of a row being inserted reads as before a value is given to it: its
/// default, or, without one, NULL if it may be NULL and else its type's zero value (0, '',
/// the zero date), as MySQL's record starts out.
fn default_before_insert(col: &ColumnDef, env: &dyn Env) -> Result<Value, SqlError> {
    if col.auto_timestamp.on_insert {
        return crate::timestamp::now(col, env);
    }
    Ok(match &col.default {
        Some(d) => d.clone(),
        None if col.nullable || col.generated.is_some() => Value::Null,
        None if col.auto_increment => int_value(&col.ty, 0),
        None => crate::lenient_store::implicit_default(col).unwrap_or(Value::Null),
    })
}

/// A row as INSERT stores it: one optional value per column (`None`: its default) converted
/// (rule 1); and the position of an `AUTO_INCREMENT` column left to generate.
pub(crate) fn row_values(
    table: &TableDef,
    given: Vec<Option<Value>>,
    row_number: usize,
    env: &dyn Env,
) -> Result<(Vec<Value>, Option<usize>), SqlError> {
    let mut values = Vec::with_capacity(table.columns.len());
    let mut auto = None;
    for (pos, (col, given)) in table.columns.iter().zip(given).enumerate() {
        if col.generated.is_some() {
            if given.is_some() {
                return Err(crate::gencols::value_not_allowed(&col.name, &table.name));
            }
            values.push(Value::Null); // computed below, once every other value is final
            continue;
        }
        let v = match given {
            Some(v) => v,
            None if col.auto_timestamp.on_insert => crate::timestamp::now(col, env)?,
            None => match &col.default {
                Some(d) => d.clone(),
                None if col.auto_increment || col.nullable => Value::Null,
                // Outside strict mode: the implicit default, with the error as a warning.
                None => match crate::lenient_store::implicit_default(col) {
                    Some(d) if env.store_rules().lenient => {
                        env.warn(1364, SqlError::no_default(&col.name).message);
                        d
                    }
                    _ => return Err(SqlError::no_default(&col.name)),
                },
            },
        };
        // 0 generates a value too, unless NO_AUTO_VALUE_ON_ZERO (lenient_store.rs).
        if col.auto_increment
            && (matches!(v, Value::Null)
                || (!env.store_rules().zero_is_value && to_i128(&v) == Some(0)))
        {
            auto = Some(pos);
            values.push(Value::Null);
            continue;
        }
        values.push(crate::timestamp::store(col, v, row_number, env)?);
    }
    crate::gencols::fill(table, &mut values, row_number)?;
    Ok((values, auto))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_in_order() {
        use Bound::{Excluded as E, Included as I, Unbounded as U};
        let v = Value::Int;
        let c = Collation::Binary;
        let cases: Vec<(Vec<Interval>, Vec<Interval>)> = vec![
            // Overlapping, contained and disjoint, out of order.
            (
                vec![(I(v(10)), I(v(15))), (I(v(1)), I(v(5))), (I(v(3)), I(v(8)))],
                vec![(I(v(1)), I(v(8))), (I(v(10)), I(v(15)))],
            ),
            (
                vec![(I(v(1)), I(v(9))), (I(v(2)), I(v(3)))],
                vec![(I(v(1)), I(v(9)))],
            ),
            // Empty: low above high, or one value with an open end.
            (
                vec![(I(v(5)), I(v(1))), (E(v(3)), I(v(3))), (I(v(4)), I(v(4)))],
                vec![(I(v(4)), I(v(4)))],
            ),
            // Touching at an included end merges; two excluded ends leave a gap.
            (
                vec![(I(v(1)), I(v(5))), (I(v(5)), E(v(7)))],
                vec![(I(v(1)), E(v(7)))],
            ),
            (
                vec![(U, E(v(5))), (E(v(5)), U)],
                vec![(U, E(v(5))), (E(v(5)), U)],
            ),
            (vec![(U, I(v(5))), (I(v(2)), U)], vec![(U, U)]),
            (
                vec![(I(v(2)), I(v(2))), (I(v(2)), I(v(2)))],
                vec![(I(v(2)), I(v(2)))],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(merge_intervals(input.clone(), c), want, "{input:?}");
        }
        // Strings merge under the column's collation, as the keys order them.
        let s = |x: &str| Value::Bytes(x.as_bytes().to_vec());
        assert_eq!(
            merge_intervals(
                vec![(I(s("a")), I(s("c"))), (I(s("C ")), I(s("d")))],
                Collation::Utf8mb4GeneralCi
            ),
            vec![(I(s("a")), I(s("d")))]
        );
    }

    #[test]
    fn key_values_widen_or_vanish() {
        let int = ColumnType::Int { unsigned: false };
        assert!(matches!(
            key_value(&int, Value::Bytes(b"5".to_vec()), None),
            KeyValue::Widened(Value::Int(5))
        ));
        assert!(matches!(
            key_value(&int, Value::Double(2.5), None),
            KeyValue::Nothing
        ));
        assert!(matches!(
            key_value(&int, Value::Double(2.5), Some(true)),
            KeyValue::Widened(Value::Int(3))
        ));
        assert!(matches!(
            key_value(&int, Value::Double(2.5), Some(false)),
            KeyValue::Widened(Value::Int(2))
        ));
        assert!(matches!(
            key_value(&int, Value::Null, None),
            KeyValue::Nothing
        ));
        assert!(matches!(
            key_value(&int, Value::Int(1 << 40), None),
            KeyValue::Nothing
        ));
        let uint = ColumnType::BigInt { unsigned: true };
        assert!(matches!(
            key_value(&uint, Value::Int(7), None),
            KeyValue::Exact(Value::UInt(7))
        ));
    }
}
