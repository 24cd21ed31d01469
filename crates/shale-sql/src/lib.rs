//! Shale's SQL layer: MySQL's dialect in, result sets and MySQL errors out.
//!
//! An [`Instance`] is one open database directory shared by every [`Session`]; a session is
//! one client's state (current database, variables, open transaction, prepared statements).
//! Results stream to a [`ResultSink`]: the server turns them into packets, `shale sql` into
//! a printed table.
//!
//! A statement goes through phases, each a module with its own types (docs/sql.md):
//! `parse` (sqlparser's AST, MySQL pre-pass) -> `bind` (names resolved, types fixed; `ddl`
//! for CREATE) -> `plan` (access path, from the definition, the condition and kept statistics) -> `exec` (operators pulling rows
//! from a `TableTxn` into the sink). `value` and `types` hold MySQL's value semantics;
//! `session` runs transactions and session commands; `show` answers SHOW/DESCRIBE/EXPLAIN.
//! What a DBA sees and changes of running sessions goes through `ops`: `processlist` (SHOW
//! PROCESSLIST, KILL), `interrupt` (the kill/timeout checks in row loops), `status` (SHOW
//! STATUS counters), `settings` (which variables SET may change), `persist` (SET PERSIST) and
//! `querylog` (the general and slow-query logs).

// Binding and DDL match over sqlparser's large AST enums: one arm per syntax form reads better
// than the same match split across helpers.
#![allow(clippy::too_many_lines)]
// MySQL, SQLSTATE and SQL keywords (GROUP BY, ONLY_FULL_GROUP_BY) fill the docs; backticks
// around each would bury the text.
#![allow(clippy::doc_markdown)]
// Value semantics are written as math over operands `a`, `b`, `x`, `y`.
#![allow(clippy::many_single_char_names, clippy::similar_names)]
// `match` with a fallback arm that computes reads better than `if let ... else` chains here.
#![allow(clippy::single_match_else)]
// SQL compares doubles exactly (1.0 = 1 is true, 0.1 + 0.2 = 0.3 is false), as MySQL does.
#![allow(clippy::float_cmp)]
// Integer conversions are range-checked (or clamped) right before the cast.
#![allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)]

mod account;
mod account_lock;
mod account_parse;
mod aes_funcs;
mod agg_collect;
mod alter;
mod bind;
mod bit_bytes;
mod bit_ops;
mod builtin;
mod builtin_eval;
mod bulk_insert;
mod calendar_funcs;
mod cast;
mod charset;
mod check_table;
mod coercibility;
mod column_name;
mod compress_funcs;
mod date_format;
mod datetime_funcs;
mod ddl;
mod decimal;
mod derived_pushdown;
mod dml_modifiers;
mod engine_settings;
mod enum_type;
mod error;
mod exec;
mod expr;
mod found_rows;
mod from;
mod from_dual;
mod func_syntax;
mod gencol_match;
mod gencols;
mod grants;
mod group_check;
mod hash_funcs;
mod inet_funcs;
mod info_schema;
mod insert_set;
mod instance;
mod interrupt;
mod join;
mod join_exec;
mod json;
mod json_bind;
mod json_extra;
mod json_funcs;
mod json_path;
mod json_table;
mod last_counts;
mod lenient_store;
mod list_funcs;
mod load_data;
mod multi_dml;
mod names;
mod numeric_funcs;
mod ops;
mod parse;
mod password;
mod persist;
mod placeholders;
mod plan;
mod plan_stats;
mod privilege;
mod processlist;
mod query;
mod querylog;
mod recursive;
mod result;
mod rollup;
mod row_compare;
mod row_counts;
mod select_into;
mod session;
mod set_assign;
mod set_ops;
mod set_type;
mod settings;
mod show;
mod show_where;
mod sql_mode;
mod stat_aggs;
pub mod statement_split;
mod status;
mod storage_error;
mod string_funcs;
mod subquery;
mod syntax_mode;
mod table_locks;
mod table_maintenance;
mod temp_tables;
mod temporal;
mod text_funcs;
mod time_type;
mod timestamp;
mod trig_funcs;
mod types;
mod update_tables;
mod user_locks;
mod user_vars;
mod value;
mod variables;
mod view_dml;
mod view_merge;
mod view_resolve;
mod views;
mod walk;
mod window;

pub use charset::Charset;
pub use error::SqlError;
pub use instance::{Instance, InstanceOptions, UserRecord, SERVER_VERSION};
pub use password::{
    hash_password, sha2_double_hash, sha2_password_matches, CACHING_SHA2, DEFAULT_PLUGIN,
    NATIVE_PASSWORD,
};
pub use persist::{parse_file as parse_persisted_settings, PERSIST_FILE};
pub use processlist::KillHook;
pub use querylog::{GENERAL_LOG_FILE, SLOW_LOG_FILE};
pub use result::{
    write_text, ColumnMeta, ColumnTypeCode, MoreResults, ResultSink, StatementStatus,
};
pub use session::{PreparedInfo, Session};
pub use shale_table::{DateTime, Decimal, IsolationLevel, Value};
pub use sql_mode::SqlMode;
pub use status::{Counter, StatusCounters};
