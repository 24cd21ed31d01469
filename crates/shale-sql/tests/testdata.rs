//! The expected-result files in testdata/ (format in tests/common/mod.rs).

mod common;

#[test]
fn sysbench() {
    common::run_file("sysbench");
}

#[test]
fn client() {
    common::run_file("client");
}

#[test]
fn select() {
    common::run_file("select");
}

#[test]
fn dml() {
    common::run_file("dml");
}

#[test]
fn derived_pushdown() {
    common::run_file("derived_pushdown");
}

#[test]
fn insert_select() {
    common::run_file("insert_select");
}

#[test]
fn errors() {
    common::run_file("errors");
}

#[test]
fn transactions() {
    common::run_file("transactions");
}

#[test]
fn plan() {
    common::run_file("plan");
}

#[test]
fn show() {
    common::run_file("show");
}

#[test]
fn ops() {
    common::run_file("ops");
}

#[test]
fn ranges() {
    common::run_file("ranges");
}

#[test]
fn decimal() {
    common::run_file("decimal");
}

#[test]
fn join() {
    common::run_file("join");
}

#[test]
fn subquery() {
    common::run_file("subquery");
}

#[test]
fn union() {
    common::run_file("union");
}

#[test]
fn check_table() {
    common::run_file("check_table");
}

#[test]
fn temporal() {
    common::run_file("temporal");
}

#[test]
fn datetime_funcs() {
    common::run_file("datetime_funcs");
}

#[test]
fn string_funcs() {
    common::run_file("string_funcs");
}

#[test]
fn year() {
    common::run_file("year");
}

#[test]
fn info_schema() {
    common::run_file("info_schema");
}

#[test]
fn alter() {
    common::run_file("alter");
}

#[test]
fn privileges() {
    common::run_file("privileges");
}

#[test]
fn window() {
    common::run_file("window");
}

#[test]
fn prepare() {
    common::run_file("prepare");
}

#[test]
fn recursive() {
    common::run_file("recursive");
}

#[test]
fn multi_dml() {
    common::run_file("multi_dml");
}

#[test]
fn bulk_load() {
    common::run_file("bulk_load");
}

#[test]
fn views() {
    common::run_file("views");
}

#[test]
fn timestamp() {
    common::run_file("timestamp");
}

#[test]
fn live_settings() {
    common::run_file("live_settings");
}

#[test]
fn json() {
    common::run_file("json");
}

#[test]
fn group_concat() {
    common::run_file("group_concat");
}

#[test]
fn found_rows() {
    common::run_file("found_rows");
}

#[test]
fn row_constructors() {
    common::run_file("row_constructors");
}

#[test]
fn account_locks() {
    common::run_file("account_locks");
}

#[test]
fn names() {
    common::run_file("names");
}

#[test]
fn generated_columns() {
    common::run_file("generated_columns");
}

#[test]
fn time() {
    common::run_file("time");
}

#[test]
fn enums() {
    common::run_file("enum");
}

#[test]
fn sets() {
    common::run_file("set");
}

#[test]
fn dba_views() {
    common::run_file("dba_views");
}

#[test]
fn functions2() {
    common::run_file("functions2");
}

#[test]
fn statement_cache() {
    common::run_file("statement_cache");
}

#[test]
fn cardinality() {
    common::run_file("cardinality");
}

#[test]
fn functions3() {
    common::run_file("functions3");
}

#[test]
fn gencol_index_match() {
    common::run_file("gencol_index_match");
}

#[test]
fn updatable_views() {
    common::run_file("updatable_views");
}

#[test]
fn self_join_dml() {
    common::run_file("self_join_dml");
}

#[test]
fn lateral() {
    common::run_file("lateral");
}

#[test]
fn sql_mode() {
    common::run_file("sql_mode");
}

#[test]
fn bit_ops() {
    common::run_file("bit_ops");
}

#[test]
fn plan_stats() {
    common::run_file("plan_stats");
}

#[test]
fn json_table() {
    common::run_file("json_table");
}

#[test]
fn syntax_modes() {
    common::run_file("syntax_modes");
}

#[test]
fn bit_bytes() {
    common::run_file("bit_bytes");
}

#[test]
fn collations() {
    common::run_file("collations");
}

#[test]
fn group_by_names() {
    common::run_file("group_by_names");
}

#[test]
fn full_group_by() {
    common::run_file("full_group_by");
}

#[test]
fn last_counts() {
    common::run_file("last_counts");
}

#[test]
fn update_comma() {
    common::run_file("update_comma");
}

#[test]
fn set_subquery() {
    common::run_file("set_subquery");
}

#[test]
fn multi_statement() {
    common::run_file("multi_statement");
}

#[test]
fn join_views() {
    common::run_file("join_views");
}

#[test]
fn view_multi_dml() {
    common::run_file("view_multi_dml");
}

#[test]
fn group_derived() {
    common::run_file("group_derived");
}

#[test]
fn plan_stats_prepared() {
    common::run_file("plan_stats_prepared");
}

#[test]
fn stats_variables() {
    common::run_file("stats_variables");
}

#[test]
fn uca_collations() {
    common::run_file("uca_collations");
}

#[test]
fn update_ignore() {
    common::run_file("update_ignore");
}

#[test]
fn cast_float() {
    common::run_file("cast_float");
}

#[test]
fn select_into() {
    common::run_file("select_into");
}

#[test]
fn insert_set() {
    common::run_file("insert_set");
}

#[test]
fn rollup() {
    common::run_file("rollup");
}

#[test]
fn select_into_trailing() {
    common::run_file("select_into_trailing");
}

#[test]
fn user_var_assign() {
    common::run_file("user_var_assign");
}

#[test]
fn show_where() {
    common::run_file("show_where");
}

#[test]
fn temp_tables() {
    common::run_file("temp_tables");
}

#[test]
fn backslash_escapes() {
    common::run_file("backslash_escapes");
}

#[test]
fn temp_alter() {
    common::run_file("temp_alter");
}

#[test]
fn collation_mixing() {
    common::run_file("collation_mixing");
}
