//! System variables: the ones clients and connectors read (`@@version_comment`,
//! `@@max_allowed_packet`, ...) with their defaults, and a session's overrides.

use std::collections::BTreeMap;

use shale_table::Value;

use crate::instance::SERVER_VERSION;

fn text(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

/// Every known variable and its default value.
pub(crate) fn defaults() -> BTreeMap<&'static str, Value> {
    let mut m = BTreeMap::new();
    m.insert("version", text(SERVER_VERSION));
    m.insert("version_comment", text("Shale"));
    m.insert("version_compile_os", text("Linux"));
    m.insert("version_compile_machine", text("x86_64"));
    m.insert("autocommit", Value::Int(1));
    // Bulk loads (bulk_insert.rs): the session's bulk mode, and whether LOAD DATA LOCAL is
    // allowed (OFF by default, as in MySQL 8).
    m.insert("shale_bulk_load", Value::Int(0));
    m.insert("rocksdb_bulk_load", Value::Int(0));
    m.insert("local_infile", Value::Int(0));
    m.insert("max_allowed_packet", Value::Int(67_108_864));
    m.insert("net_buffer_length", Value::Int(16384));
    m.insert("transaction_isolation", text("REPEATABLE-READ"));
    m.insert("tx_isolation", text("REPEATABLE-READ"));
    m.insert("transaction_read_only", Value::Int(0));
    m.insert("tx_read_only", Value::Int(0));
    m.insert("character_set_client", text("utf8mb4"));
    m.insert("character_set_connection", text("utf8mb4"));
    m.insert("character_set_results", text("utf8mb4"));
    m.insert("character_set_server", text("utf8mb4"));
    m.insert("character_set_database", text("utf8mb4"));
    m.insert("collation_connection", text("utf8mb4_general_ci"));
    m.insert("collation_server", text("utf8mb4_general_ci"));
    m.insert("collation_database", text("utf8mb4_general_ci"));
    m.insert("sql_mode", crate::sql_mode::SqlMode::DEFAULT.value());
    m.insert("time_zone", text("SYSTEM"));
    m.insert("system_time_zone", text("UTC"));
    m.insert("lower_case_table_names", Value::Int(0));
    m.insert("wait_timeout", Value::Int(28800));
    m.insert("net_write_timeout", Value::Int(60));
    m.insert("net_read_timeout", Value::Int(30));
    m.insert("connect_timeout", Value::Int(10));
    m.insert("character_set_system", text("utf8mb3"));
    m.insert("character_set_filesystem", text("binary"));
    m.insert("explicit_defaults_for_timestamp", Value::Int(1));
    m.insert("max_connections", Value::Int(151));
    m.insert("sort_buffer_size", Value::Int(262_144));
    // Shale's own: the bytes one hash table, materialized subquery or join result may hold
    // (query.rs); nothing spills to disk yet.
    m.insert("shale_query_memory", Value::Int(268_435_456));
    m.insert("read_only", Value::Int(0));
    m.insert("super_read_only", Value::Int(0));
    m.insert("default_week_format", Value::Int(0));
    m.insert("div_precision_increment", Value::Int(4));
    m.insert("group_concat_max_len", Value::Int(1024));
    m.insert("block_encryption_mode", text("aes-128-ecb"));
    m.insert("version_ssl_library", text(""));
    m.insert("interactive_timeout", Value::Int(28800));
    m.insert("sql_auto_is_null", Value::Int(0));
    m.insert("sql_select_limit", Value::UInt(u64::MAX));
    m.insert("auto_increment_increment", Value::Int(1));
    m.insert("auto_increment_offset", Value::Int(1));
    m.insert("default_storage_engine", text("Shale"));
    m.insert("storage_engine", text("Shale"));
    m.insert("have_ssl", text("DISABLED"));
    m.insert("license", text("Apache-2.0"));
    m.insert("init_connect", text(""));
    m.insert("performance_schema", Value::Int(0));
    m.insert("query_cache_size", Value::Int(0));
    m.insert("query_cache_type", text("OFF"));
    m.insert("lock_wait_timeout", Value::Int(31_536_000));
    m.insert("innodb_lock_wait_timeout", Value::Int(50));
    m.insert("warning_count", Value::Int(0));
    m.insert("error_count", Value::Int(0));
    m.insert("port", Value::Int(3306));
    m.insert("hostname", text("localhost"));
    m.insert("server_id", Value::Int(1));
    m.insert("socket", text(""));
    m.insert("datadir", text(""));
    m.insert("protocol_version", Value::Int(10));
    m.insert("last_insert_id", Value::Int(0));
    m.insert("identity", Value::Int(0));
    m.insert("foreign_key_checks", Value::Int(1));
    m.insert("unique_checks", Value::Int(1));
    m.insert("sql_notes", Value::Int(1));
    m.insert("names", text("utf8mb4"));
    m.insert("session_track_schema", Value::Int(1));
    m.insert("max_execution_time", Value::Int(0));
    // Seconds after which a statement counts in Slow_queries (MySQL's default, 10).
    m.insert("long_query_time", Value::Double(10.0));
    // The engine's commit durability with innodb_flush_log_at_trx_commit's numbers, and its
    // block cache size: read-only while running (`shale serve` sets the global values it
    // started with; SET PERSIST_ONLY changes them for the next start).
    m.insert("shale_flush_log_at_trx_commit", Value::Int(1));
    // Whether `shale serve` writes the general and slow-query logs (set at start).
    m.insert("general_log", Value::Int(0));
    m.insert("slow_query_log", Value::Int(0));
    // Whether the engine reads / writes table files with O_DIRECT (set at start).
    m.insert("shale_use_direct_reads", Value::Int(0));
    // Table files the engine keeps open (-1: all, pinned); `shale serve --max-open-files`.
    m.insert("shale_max_open_files", Value::Int(1000));
    m.insert(
        "shale_use_direct_io_for_flush_and_compaction",
        Value::Int(0),
    );
    m.insert("shale_block_cache_size", Value::Int(64 << 20));
    // The engine's other live options (engine_settings.rs; the instance publishes the values
    // it opened with as the global ones, these only list them).
    for name in [
        "shale_rate_limiter_bytes_per_sec",
        "shale_write_buffer_size",
        "shale_level0_slowdown_writes_trigger",
        "shale_level0_stop_writes_trigger",
        "shale_soft_pending_compaction_bytes_limit",
        "shale_hard_pending_compaction_bytes_limit",
        "shale_max_background_jobs",
    ] {
        m.insert(name, Value::Null);
    }
    // SET GLOBAL shale_create_checkpoint = 'DIR' makes a checkpoint; it always reads ''.
    m.insert("shale_create_checkpoint", text(""));
    m.insert("cte_max_recursion_depth", Value::Int(1000));
    m.insert("sql_safe_updates", Value::Int(0));
    // Whether text INSERTs run kept plans by shape (session/statement_cache.rs).
    m.insert("shale_statement_cache", Value::Int(1));
    // Index statistics estimated again after a tenth of a table changed (settings.rs).
    m.insert("shale_stats_auto_recalc", Value::Int(1));
    m
}

/// The isolation level names MySQL uses in variables.
pub(crate) fn isolation_name(level: shale_table::IsolationLevel) -> &'static str {
    match level {
        shale_table::IsolationLevel::ReadCommitted => "READ-COMMITTED",
        shale_table::IsolationLevel::RepeatableRead => "REPEATABLE-READ",
    }
}
