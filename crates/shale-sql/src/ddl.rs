//! DDL binding: CREATE TABLE and CREATE INDEX turned into shale-table definitions, and
//! SHOW CREATE TABLE's text back from them.
//!
//! Types map as MySQL's do: INT/INTEGER, TINYINT, SMALLINT, MEDIUMINT, BIGINT (UNSIGNED),
//! FLOAT, DOUBLE/REAL, CHAR, VARCHAR, TEXT (all sizes), BINARY, VARBINARY, BLOB. Strings are
//! utf8mb4 with `utf8mb4_general_ci` unless CHARACTER SET or COLLATE says otherwise
//! (coercibility.rs names the collations Shale stores). Any ENGINE
//! is accepted and the table is stored in Shale (warning 1266).

use shale_table::{Collation, ColumnDef, ColumnType, IndexDef, TableDef, Value};
use sqlparser::ast;

use crate::error::SqlError;
use crate::types::store_value;

/// A warning: level, code, message.
pub(crate) type Warning = (&'static str, u16, String);

fn char_len(l: Option<&ast::CharacterLength>, default: u32) -> Result<u32, SqlError> {
    match l {
        None => Ok(default),
        Some(ast::CharacterLength::IntegerLength { length, .. }) => u32::try_from(*length)
            .map_err(|_| SqlError::new(1074, "42000", "Column length too big")),
        Some(ast::CharacterLength::Max) => Ok(65535),
    }
}

/// The column type of a declared data type, with the collation the column options chose.
fn column_type(
    dt: &ast::DataType,
    collation: Collation,
    column: &str,
) -> Result<ColumnType, SqlError> {
    use ast::DataType as D;
    Ok(match dt {
        D::Decimal(info) | D::Dec(info) | D::Numeric(info) => decimal_type(info, column)?,
        D::Date => ColumnType::Date,
        D::Custom(name, modifiers)
            if crate::bind::ident_name(name)
                .join(".")
                .eq_ignore_ascii_case("year") =>
        {
            match modifiers.as_slice() {
                [] => ColumnType::Year,
                [m] if m.to_string() == "4" => ColumnType::Year,
                _ => {
                    return Err(SqlError::new(
                        1818,
                        "HY000",
                        "Supports only YEAR or YEAR(4) column.",
                    ))
                }
            }
        }
        D::Timestamp(fsp, ast::TimezoneInfo::None) => match fsp.unwrap_or(0) {
            f @ 0..=6 => ColumnType::Timestamp { fsp: f as u8 },
            f => {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!("Too big precision {f} specified for '{column}'. Maximum is 6."),
                ))
            }
        },
        D::Set(list) => ColumnType::Set {
            members: crate::set_type::members(list, collation, column)?,
            collation,
        },
        D::Enum(list, None) => ColumnType::Enum {
            members: crate::enum_type::members(list, collation, column)?,
            collation,
        },
        D::Time(fsp, ast::TimezoneInfo::None) => match fsp.unwrap_or(0) {
            f @ 0..=6 => ColumnType::Time { fsp: f as u8 },
            f => {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!("Too big precision {f} specified for '{column}'. Maximum is 6."),
                ))
            }
        },
        D::Datetime(fsp) => match fsp.unwrap_or(0) {
            f @ 0..=6 => ColumnType::DateTime { fsp: f as u8 },
            f => {
                return Err(SqlError::new(
                    1426,
                    "42000",
                    format!("Too big precision {f} specified for '{column}'. Maximum is 6."),
                ))
            }
        },
        D::Bool | D::Boolean | D::TinyInt(_) => ColumnType::TinyInt { unsigned: false },
        D::TinyIntUnsigned(_) => ColumnType::TinyInt { unsigned: true },
        D::SmallInt(_) => ColumnType::SmallInt { unsigned: false },
        D::SmallIntUnsigned(_) => ColumnType::SmallInt { unsigned: true },
        D::MediumInt(_) => ColumnType::MediumInt { unsigned: false },
        D::MediumIntUnsigned(_) => ColumnType::MediumInt { unsigned: true },
        D::Int(_) | D::Integer(_) => ColumnType::Int { unsigned: false },
        D::IntUnsigned(_) | D::IntegerUnsigned(_) => ColumnType::Int { unsigned: true },
        D::BigInt(_) => ColumnType::BigInt { unsigned: false },
        D::BigIntUnsigned(_) => ColumnType::BigInt { unsigned: true },
        D::Float(_) => ColumnType::Float,
        D::Double(_) | D::DoublePrecision | D::Real => ColumnType::Double,
        D::Char(l) | D::Character(l) => ColumnType::Char {
            len: char_len(l.as_ref(), 1)?,
            collation,
        },
        D::Varchar(l) | D::Nvarchar(l) => ColumnType::VarChar {
            len: char_len(l.as_ref(), 255)?,
            collation,
        },
        D::Text | D::TinyText | D::MediumText | D::LongText => ColumnType::Text { collation },
        D::Binary(l) => ColumnType::Char {
            len: l.map_or(1, |l| l.min(255) as u32),
            collation: Collation::Binary,
        },
        D::Varbinary(l) => ColumnType::VarChar {
            len: match l {
                Some(ast::BinaryLength::IntegerLength { length }) => {
                    u32::try_from(*length).unwrap_or(u32::MAX)
                }
                _ => 65535,
            },
            collation: Collation::Binary,
        },
        D::Blob(_) | D::TinyBlob | D::MediumBlob | D::LongBlob | D::Bytea => ColumnType::Text {
            collation: Collation::Binary,
        },
        D::JSON => ColumnType::Json,
        other => return Err(SqlError::unsupported(format!("column type {other}"))),
    })
}

/// DECIMAL(p,s): p defaults to 10 and s to 0; p at most 65, s at most 30 and p.
fn decimal_type(info: &ast::ExactNumberInfo, column: &str) -> Result<ColumnType, SqlError> {
    let (precision, scale) = match *info {
        ast::ExactNumberInfo::None => (10, 0),
        ast::ExactNumberInfo::Precision(p) => (p, 0),
        ast::ExactNumberInfo::PrecisionAndScale(p, s) => (p, u64::try_from(s).unwrap_or(u64::MAX)),
    };
    if precision > u64::from(shale_table::DECIMAL_MAX_PRECISION) {
        return Err(SqlError::new(
            1426,
            "42000",
            format!("Too big precision {precision} specified for '{column}'. Maximum is 65."),
        ));
    }
    if scale > u64::from(shale_table::DECIMAL_MAX_SCALE) {
        return Err(SqlError::new(
            1425,
            "42000",
            format!("Too big scale {scale} specified for '{column}'. Maximum is 30."),
        ));
    }
    if scale > precision {
        return Err(SqlError::new(
            1427,
            "42000",
            format!(
                "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '{column}')."
            ),
        ));
    }
    // A precision of 0 is taken as 1 (docs/sql.md).
    Ok(ColumnType::Decimal {
        precision: precision.max(1) as u8,
        scale: scale as u8,
    })
}

/// The collation a column declared `COLLATE name` stores (coercibility.rs's
/// [`effective`](crate::coercibility::effective) mapping), checked against the character set
/// it declared, if any (1253).
fn collation_named(name: &str, charset: Option<&str>) -> Result<Collation, SqlError> {
    let n = name.trim_matches('`').to_ascii_lowercase();
    let n = match n.strip_prefix("utf8_") {
        Some(rest) => format!("utf8mb3_{rest}"),
        None => n,
    };
    let Some(set) = crate::names::charset_of_collation(&n) else {
        if n.ends_with("_ci") || n.ends_with("_cs") || n.ends_with("_bin") {
            // A collation names.rs does not list: compared as its suffix says.
            return Ok(crate::coercibility::effective(&n));
        }
        return Err(SqlError::new(
            1273,
            "HY000",
            format!("Unknown collation: '{name}'"),
        ));
    };
    if let Some(declared) = charset.filter(|c| *c != set) {
        return Err(SqlError::new(
            1253,
            "42000",
            format!("COLLATION '{n}' is not valid for CHARACTER SET '{declared}'"),
        ));
    }
    Ok(crate::coercibility::effective(&n))
}

/// The collation a column declared `CHARACTER SET name` (and no COLLATE) stores: the set's
/// default (Shale's utf8mb4 default is utf8mb4_general_ci; latin1_swedish_ci,
/// utf8mb3_general_ci as MySQL's).
fn charset_default(name: &str) -> Result<Collation, SqlError> {
    match crate::charset::Charset::from_name(name) {
        Some(crate::charset::Charset::Binary) => Ok(Collation::Binary),
        Some(crate::charset::Charset::Latin1) => Ok(Collation::Latin1SwedishCi),
        Some(crate::charset::Charset::Utf8mb3) => Ok(Collation::Utf8mb3GeneralCi),
        Some(_) => Ok(Collation::Utf8mb4GeneralCi),
        None => Err(SqlError::new(
            1115,
            "42000",
            format!("Unknown character set: '{name}'"),
        )),
    }
}

fn index_columns(def: &TableDef, cols: &[ast::IndexColumn]) -> Result<Vec<usize>, SqlError> {
    if cols.is_empty() {
        return Err(SqlError::syntax(")", 1));
    }
    cols.iter()
        .map(|c| {
            let name = match &c.column.expr {
                ast::Expr::Identifier(id) => id.value.clone(),
                other => return Err(SqlError::unsupported(format!("index on {other}"))),
            };
            let pos = def.column_position(&name).ok_or_else(|| {
                SqlError::new(
                    1072,
                    "42000",
                    format!("Key column '{name}' doesn't exist in table"),
                )
            })?;
            crate::json::check_key_column(&def.columns[pos])?;
            Ok(pos)
        })
        .collect()
}

/// A constant DEFAULT expression's value.
pub(crate) fn default_value(e: &ast::Expr) -> Result<Value, SqlError> {
    match e {
        ast::Expr::Value(v) => Ok(match &v.value {
            ast::Value::Number(n, _) => crate::bind::number_value(n)?,
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                Value::Bytes(s.as_bytes().to_vec())
            }
            ast::Value::Null => Value::Null,
            ast::Value::Boolean(b) => Value::Int(i64::from(*b)),
            other => return Err(SqlError::unsupported(format!("DEFAULT {other}"))),
        }),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => crate::value::negate(&default_value(expr)?),
        ast::Expr::Prefixed { prefix, value } => {
            match crate::coercibility::bind_introduced(prefix, value)?.0 {
                crate::expr::Expr::Literal(v) => Ok(v),
                _ => Err(SqlError::unsupported(format!("DEFAULT {e}"))),
            }
        }
        other => Err(SqlError::unsupported(format!("DEFAULT {other}"))),
    }
}

/// One column definition of CREATE TABLE or ALTER TABLE ADD/CHANGE/MODIFY, and whether it
/// declared PRIMARY KEY and UNIQUE.
pub(crate) fn column_def(c: &ast::ColumnDef) -> Result<(ColumnDef, bool, bool), SqlError> {
    let (mut is_pk, mut is_unique) = (false, false);
    let (mut charset, mut collation_name) = (None, None);
    let mut nullable = true;
    let mut default = None;
    let mut auto_increment = false;
    let (mut default_now, mut on_update) = (None, None);
    let mut generated = None;
    for o in &c.options {
        if let Some(g) = crate::gencols::declared(&o.option)? {
            generated = Some(g);
            continue;
        }
        match &o.option {
            ast::ColumnOption::Null => nullable = true,
            ast::ColumnOption::NotNull => nullable = false,
            ast::ColumnOption::Default(e) => match crate::timestamp::current_timestamp_fsp(e) {
                Some(fsp) => default_now = Some(fsp),
                None => default = Some(default_value(e)?),
            },
            ast::ColumnOption::OnUpdate(e) => on_update = Some(e),
            ast::ColumnOption::PrimaryKey(_) => {
                nullable = false;
                is_pk = true;
            }
            ast::ColumnOption::Unique(_) => is_unique = true,
            ast::ColumnOption::DialectSpecific(tokens)
                if tokens
                    .iter()
                    .any(|t| t.to_string().eq_ignore_ascii_case("AUTO_INCREMENT")) =>
            {
                auto_increment = true;
            }
            ast::ColumnOption::Collation(n) => collation_name = Some(n.to_string()),
            ast::ColumnOption::CharacterSet(n) => {
                let name = n.to_string().trim_matches('`').to_ascii_lowercase();
                charset = Some(match name.as_str() {
                    "utf8" => "utf8mb3".to_owned(),
                    _ => name,
                });
            }
            ast::ColumnOption::Comment(_) => {}
            other => return Err(SqlError::unsupported(format!("column option {other}"))),
        }
    }
    let collation = match (&collation_name, &charset) {
        (Some(name), set) => collation_named(name, set.as_deref())?,
        (None, Some(set)) => charset_default(set)?,
        (None, None) => Collation::Utf8mb4GeneralCi,
    };
    let ty = column_type(&c.data_type, collation, &c.name.value)?;
    let mut col = ColumnDef {
        name: c.name.value.clone(),
        ty,
        nullable,
        default: None,
        auto_increment,
        auto_timestamp: shale_table::AutoTimestamp::default(),
        generated,
    };
    crate::timestamp::declare(&mut col, default_now, on_update)?;
    if col.ty == ColumnType::Json {
        crate::json::check_column(&col, is_pk || is_unique, default.as_ref())?;
    }
    if let Some(d) = default {
        let stored = store_value(&col, d, 1).map_err(|_| {
            SqlError::new(
                1067,
                "42000",
                format!("Invalid default value for '{}'", col.name),
            )
        })?;
        col.default = Some(stored);
    }
    Ok((col, is_pk, is_unique))
}

/// A CREATE TABLE's definition (index ids are the store's to assign) and its warnings.
pub(crate) fn table_def(
    database: &str,
    name: &str,
    ct: &ast::CreateTable,
) -> Result<(TableDef, Vec<Warning>), SqlError> {
    if ct.query.is_some() || ct.like.is_some() || ct.or_replace || ct.temporary {
        return Err(SqlError::unsupported(format!(
            "this CREATE TABLE form ({name})"
        )));
    }
    let mut warnings = Vec::new();
    let mut def = TableDef {
        database: database.to_string(),
        name: name.to_string(),
        columns: Vec::new(),
        primary_key: IndexDef {
            name: "PRIMARY".into(),
            columns: Vec::new(),
            unique: true,
            index_id: 0,
        },
        indexes: Vec::new(),
        schema_version: 1,
        past_versions: Vec::new(),
    };
    // MySQL's (and the table layer's) limit; without this check the table layer's refusal
    // surfaced as 1105.
    if ct.columns.len() > 4096 {
        return Err(SqlError::new(1117, "42000", "Too many columns"));
    }
    let mut pk_cols: Option<Vec<usize>> = None;
    let mut unique_cols: Vec<usize> = Vec::new();
    for (pos, c) in ct.columns.iter().enumerate() {
        if def.column_position(&c.name.value).is_some() {
            return Err(SqlError::new(
                1060,
                "42S21",
                format!("Duplicate column name '{}'", c.name.value),
            ));
        }
        let (col, is_pk, is_unique) = column_def(c)?;
        if is_pk {
            pk_cols = Some(vec![pos]);
        }
        if is_unique {
            unique_cols.push(pos);
        }
        def.columns.push(col);
    }
    for tc in &ct.constraints {
        match tc {
            ast::TableConstraint::PrimaryKey(pk) => {
                if pk_cols.is_some() {
                    return Err(SqlError::new(1068, "42000", "Multiple primary key defined"));
                }
                pk_cols = Some(index_columns(&def, &pk.columns)?);
            }
            ast::TableConstraint::Unique(u) => {
                let cols = index_columns(&def, &u.columns)?;
                let name = u.index_name.as_ref().or(u.name.as_ref()).map_or_else(
                    || {
                        cols.first()
                            .map_or_else(String::new, |&c| def.columns[c].name.clone())
                    },
                    |n| n.value.clone(),
                );
                def.indexes.push(IndexDef {
                    name,
                    columns: cols,
                    unique: true,
                    index_id: 0,
                });
            }
            ast::TableConstraint::Index(ix) => {
                let cols = index_columns(&def, &ix.columns)?;
                let name = ix.name.as_ref().map_or_else(
                    || {
                        cols.first()
                            .map_or_else(String::new, |&c| def.columns[c].name.clone())
                    },
                    |n| n.value.clone(),
                );
                def.indexes.push(IndexDef {
                    name,
                    columns: cols,
                    unique: false,
                    index_id: 0,
                });
            }
            other => return Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }
    for pos in unique_cols {
        let name = def.columns[pos].name.clone();
        def.indexes.push(IndexDef {
            name,
            columns: vec![pos],
            unique: true,
            index_id: 0,
        });
    }
    if let Some(cols) = pk_cols {
        for &c in &cols {
            def.columns[c].nullable = false;
        }
        def.primary_key.columns = cols;
    }
    if let Some(ai) = def.columns.iter().position(|c| c.auto_increment) {
        let keyed = def.primary_key.columns.first() == Some(&ai)
            || def.indexes.iter().any(|i| i.columns.first() == Some(&ai));
        if !keyed {
            return Err(SqlError::new(
                1075,
                "42000",
                "Incorrect table definition; there can be only one auto column and it must be \
                 defined as a key",
            ));
        }
    }
    let options = match &ct.table_options {
        ast::CreateTableOptions::None => Vec::new(),
        ast::CreateTableOptions::With(o)
        | ast::CreateTableOptions::Options(o)
        | ast::CreateTableOptions::Plain(o)
        | ast::CreateTableOptions::TableProperties(o) => o.clone(),
    };
    for o in &options {
        let text = o.to_string();
        let upper = text.to_ascii_uppercase();
        if upper.starts_with("ENGINE") && !upper.contains("SHALE") {
            warnings.push((
                "Warning",
                1266,
                format!("Using storage engine Shale for table '{name}'"),
            ));
        }
    }
    Ok((def, warnings))
}

/// ALTER TABLE ... ADD {INDEX|KEY|UNIQUE} as an index definition.
pub(crate) fn constraint_index(
    def: &TableDef,
    constraint: &ast::TableConstraint,
) -> Result<IndexDef, SqlError> {
    let (name, columns, unique) = match constraint {
        ast::TableConstraint::Unique(u) => (
            u.index_name.as_ref().or(u.name.as_ref()),
            index_columns(def, &u.columns)?,
            true,
        ),
        ast::TableConstraint::Index(ix) => {
            (ix.name.as_ref(), index_columns(def, &ix.columns)?, false)
        }
        other => return Err(SqlError::unsupported(format!("ALTER TABLE ADD {other}"))),
    };
    let Some(&first) = columns.first() else {
        return Err(SqlError::syntax(&constraint.to_string(), 1));
    };
    let name = name.map_or_else(|| def.columns[first].name.clone(), |n| n.value.clone());
    if def
        .indexes
        .iter()
        .any(|i| i.name.eq_ignore_ascii_case(&name))
    {
        return Err(SqlError::new(
            1061,
            "42000",
            format!("Duplicate key name '{name}'"),
        ));
    }
    Ok(IndexDef {
        name,
        columns,
        unique,
        index_id: 0,
    })
}

/// A CREATE INDEX's definition.
pub(crate) fn index_def(def: &TableDef, ci: &ast::CreateIndex) -> Result<IndexDef, SqlError> {
    let Some(name) = &ci.name else {
        return Err(SqlError::syntax("ON", 1));
    };
    if ci.predicate.is_some() || !ci.include.is_empty() {
        return Err(SqlError::unsupported(ci.to_string()));
    }
    let name = crate::bind::ident_name(name).join(".");
    if def
        .indexes
        .iter()
        .any(|i| i.name.eq_ignore_ascii_case(&name))
    {
        return Err(SqlError::new(
            1061,
            "42000",
            format!("Duplicate key name '{name}'"),
        ));
    }
    Ok(IndexDef {
        name,
        columns: index_columns(def, &ci.columns)?,
        unique: ci.unique,
        index_id: 0,
    })
}

/// A column type as SHOW CREATE TABLE and DESCRIBE print it.
pub(crate) fn type_text(ty: &ColumnType) -> String {
    let int = |name: &str, width: u32, unsigned: bool| {
        if unsigned {
            format!("{name}({width}) unsigned")
        } else {
            format!("{name}({width})")
        }
    };
    match *ty {
        ColumnType::TinyInt { unsigned } => int("tinyint", if unsigned { 3 } else { 4 }, unsigned),
        ColumnType::SmallInt { unsigned } => {
            int("smallint", if unsigned { 5 } else { 6 }, unsigned)
        }
        ColumnType::MediumInt { unsigned } => {
            int("mediumint", if unsigned { 8 } else { 9 }, unsigned)
        }
        ColumnType::Int { unsigned } => int("int", if unsigned { 10 } else { 11 }, unsigned),
        ColumnType::BigInt { unsigned } => int("bigint", 20, unsigned),
        ColumnType::Float => "float".into(),
        ColumnType::Double => "double".into(),
        ColumnType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        ColumnType::Date => "date".into(),
        ColumnType::DateTime { fsp: 0 } => "datetime".into(),
        ColumnType::DateTime { fsp } => format!("datetime({fsp})"),
        ColumnType::Timestamp { fsp: 0 } => "timestamp".into(),
        ColumnType::Timestamp { fsp } => format!("timestamp({fsp})"),
        ColumnType::Year => "year".into(),
        ColumnType::Char { len, collation } => match collation {
            Collation::Binary => format!("binary({len})"),
            _ => format!("char({len})"),
        },
        ColumnType::VarChar { len, collation } => match collation {
            Collation::Binary => format!("varbinary({len})"),
            _ => format!("varchar({len})"),
        },
        ColumnType::Text { collation } => match collation {
            Collation::Binary => "blob".into(),
            _ => "text".into(),
        },
        ColumnType::Json => "json".into(),
        ColumnType::Time { fsp: 0 } => "time".into(),
        ColumnType::Time { fsp } => format!("time({fsp})"),
        ColumnType::Enum { ref members, .. } => crate::enum_type::type_text(members),
        ColumnType::Set { ref members, .. } => crate::set_type::type_text(members),
    }
}

fn quote_value(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        other => format!("'{}'", crate::value::display(other).replace('\'', "''")),
    }
}

/// A column's ` [CHARACTER SET cs] COLLATE name` in SHOW CREATE TABLE, as MySQL writes it
/// for a collation other than the table's default (empty for that and for binary strings).
fn collation_clause(ty: &ColumnType) -> String {
    let collation = match ty {
        ColumnType::Char { collation, .. }
        | ColumnType::VarChar { collation, .. }
        | ColumnType::Text { collation }
        | ColumnType::Enum { collation, .. }
        | ColumnType::Set { collation, .. } => *collation,
        _ => return String::new(),
    };
    if matches!(collation, Collation::Binary | Collation::Utf8mb4GeneralCi) {
        return String::new();
    }
    let name = crate::coercibility::stored_name(collation);
    match crate::names::charset_of_collation(name) {
        Some(set) if set != "utf8mb4" => format!(" CHARACTER SET {set} COLLATE {name}"),
        _ => format!(" COLLATE {name}"),
    }
}

/// SHOW CREATE TABLE's text.
pub(crate) fn show_create(def: &TableDef) -> String {
    let mut lines = Vec::new();
    for c in &def.columns {
        let mut l = format!("  `{}` {}", c.name, type_text(&c.ty));
        let generated = crate::gencols::show_clause(c);
        l.push_str(&collation_clause(&c.ty));
        if let Some(clause) = generated {
            l.push_str(&clause);
            if !c.nullable {
                l.push_str(" NOT NULL");
            }
            lines.push(l);
            continue;
        }
        if !c.nullable {
            l.push_str(" NOT NULL");
        } else if matches!(c.ty, ColumnType::Timestamp { .. }) {
            // MySQL spells out NULL for a nullable TIMESTAMP.
            l.push_str(" NULL");
        }
        if let Some(clauses) = crate::timestamp::show_clauses(c) {
            l.push_str(&clauses);
        } else if c.auto_increment {
            l.push_str(" AUTO_INCREMENT");
        } else if let Some(d) = &c.default {
            l.push_str(" DEFAULT ");
            l.push_str(&quote_value(d));
        } else if c.nullable {
            l.push_str(" DEFAULT NULL");
        }
        lines.push(l);
    }
    let cols = |ix: &[usize]| -> String {
        ix.iter()
            .map(|&i| format!("`{}`", def.columns[i].name))
            .collect::<Vec<_>>()
            .join(",")
    };
    if !def.primary_key.columns.is_empty() {
        lines.push(format!(
            "  PRIMARY KEY ({})",
            cols(&def.primary_key.columns)
        ));
    }
    for ix in &def.indexes {
        let kind = if ix.unique { "UNIQUE KEY" } else { "KEY" };
        lines.push(format!("  {kind} `{}` ({})", ix.name, cols(&ix.columns)));
    }
    format!(
        "CREATE TABLE `{}` (\n{}\n) ENGINE=Shale DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
        def.name,
        lines.join(",\n")
    )
}
