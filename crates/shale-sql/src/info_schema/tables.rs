//! The tables of `information_schema` and their columns (MySQL 8's names and order for
//! MySQL's tables; Shale's own views are named `SHALE_*`, as MyRocks names its `ROCKSDB_*`).

use shale_table::Collation;

use crate::types::SqlType;

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    NullText,
    /// An unsigned integer (MySQL's `bigint unsigned`).
    UInt,
    NullUInt,
    /// A signed integer that may be NULL.
    NullInt,
    NullDateTime,
    Double,
    /// A signed integer, never NULL.
    Int,
}

impl Kind {
    pub(crate) fn sql_type(self) -> SqlType {
        match self {
            Kind::Text | Kind::NullText => SqlType::Str {
                collation: Collation::Utf8mb4GeneralCi,
                len: 64,
            },
            Kind::UInt | Kind::NullUInt => SqlType::Int {
                unsigned: true,
                len: 21,
            },
            Kind::NullInt | Kind::Int => SqlType::Int {
                unsigned: false,
                len: 21,
            },
            Kind::NullDateTime => SqlType::DateTime { fsp: Some(0) },
            Kind::Double => SqlType::Double,
        }
    }

    pub(crate) fn nullable(self) -> bool {
        matches!(
            self,
            Kind::NullText | Kind::NullUInt | Kind::NullInt | Kind::NullDateTime
        )
    }
}

/// One column.
#[derive(Debug)]
pub(crate) struct Col {
    pub name: &'static str,
    pub kind: Kind,
}

const fn c(name: &'static str, kind: Kind) -> Col {
    Col { name, kind }
}

use Kind::{Double, Int, NullDateTime, NullInt, NullText, NullUInt, Text, UInt};

/// The tables of `information_schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InfoTable {
    Schemata,
    Tables,
    Columns,
    Statistics,
    KeyColumnUsage,
    /// Each table's PRIMARY KEY and UNIQUE keys.
    TableConstraints,
    /// Always empty: Shale has no foreign keys (ORMs read it to learn a schema).
    ReferentialConstraints,
    Engines,
    Collations,
    CharacterSets,
    /// VIEWS lists the views (views.rs); the others are always empty: Shale has no routines,
    /// triggers, tablespace files or partitions
    /// (tools query them, so they exist).
    Views,
    Routines,
    Triggers,
    Files,
    Partitions,
    /// Index ids per table and index (MyRocks' `ROCKSDB_DDL`).
    ShaleDdl,
    /// Each keyspace's options (MyRocks' `ROCKSDB_CF_OPTIONS`).
    ShaleKeyspaces,
    /// The compaction stats table by level (MyRocks' `ROCKSDB_COMPACTION_STATS`).
    ShaleCompactionStats,
    /// The sessions (SHOW FULL PROCESSLIST's rows).
    ProcessList,
    /// Open transactions (MyRocks' `ROCKSDB_TRX`).
    ShaleTrx,
    /// Row locks held and waited for (MyRocks' `ROCKSDB_LOCKS`).
    ShaleLocks,
    /// The last deadlocks (MyRocks' `ROCKSDB_DEADLOCK`).
    ShaleDeadlocks,
    /// Every live table file with its level and damage mark (MyRocks' `ROCKSDB_SST_PROPS`).
    ShaleTableFiles,
}

/// Every table, in `SHOW TABLES` order.
pub(crate) const ALL: [InfoTable; 23] = [
    InfoTable::CharacterSets,
    InfoTable::Collations,
    InfoTable::Columns,
    InfoTable::Engines,
    InfoTable::Files,
    InfoTable::KeyColumnUsage,
    InfoTable::Partitions,
    InfoTable::ProcessList,
    InfoTable::ReferentialConstraints,
    InfoTable::Routines,
    InfoTable::Schemata,
    InfoTable::ShaleCompactionStats,
    InfoTable::ShaleDdl,
    InfoTable::ShaleDeadlocks,
    InfoTable::ShaleKeyspaces,
    InfoTable::ShaleLocks,
    InfoTable::ShaleTableFiles,
    InfoTable::ShaleTrx,
    InfoTable::Statistics,
    InfoTable::TableConstraints,
    InfoTable::Tables,
    InfoTable::Triggers,
    InfoTable::Views,
];

const SCHEMATA: &[Col] = &[
    c("CATALOG_NAME", Text),
    c("SCHEMA_NAME", Text),
    c("DEFAULT_CHARACTER_SET_NAME", Text),
    c("DEFAULT_COLLATION_NAME", Text),
    c("SQL_PATH", NullText),
    c("DEFAULT_ENCRYPTION", Text),
];

const TABLES: &[Col] = &[
    c("TABLE_CATALOG", Text),
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("TABLE_TYPE", Text),
    c("ENGINE", NullText),
    c("VERSION", NullInt),
    c("ROW_FORMAT", NullText),
    c("TABLE_ROWS", NullUInt),
    c("AVG_ROW_LENGTH", NullUInt),
    c("DATA_LENGTH", NullUInt),
    c("MAX_DATA_LENGTH", NullUInt),
    c("INDEX_LENGTH", NullUInt),
    c("DATA_FREE", NullUInt),
    c("AUTO_INCREMENT", NullUInt),
    c("CREATE_TIME", NullDateTime),
    c("UPDATE_TIME", NullDateTime),
    c("CHECK_TIME", NullDateTime),
    c("TABLE_COLLATION", NullText),
    c("CHECKSUM", NullInt),
    c("CREATE_OPTIONS", NullText),
    c("TABLE_COMMENT", NullText),
];

const COLUMNS: &[Col] = &[
    c("TABLE_CATALOG", Text),
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("COLUMN_NAME", Text),
    c("ORDINAL_POSITION", UInt),
    c("COLUMN_DEFAULT", NullText),
    c("IS_NULLABLE", Text),
    c("DATA_TYPE", Text),
    c("CHARACTER_MAXIMUM_LENGTH", NullInt),
    c("CHARACTER_OCTET_LENGTH", NullInt),
    c("NUMERIC_PRECISION", NullUInt),
    c("NUMERIC_SCALE", NullUInt),
    c("DATETIME_PRECISION", NullUInt),
    c("CHARACTER_SET_NAME", NullText),
    c("COLLATION_NAME", NullText),
    c("COLUMN_TYPE", Text),
    c("COLUMN_KEY", Text),
    c("EXTRA", Text),
    c("PRIVILEGES", Text),
    c("COLUMN_COMMENT", Text),
    c("GENERATION_EXPRESSION", Text),
    c("SRS_ID", NullUInt),
];

const STATISTICS: &[Col] = &[
    c("TABLE_CATALOG", Text),
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("NON_UNIQUE", UInt),
    c("INDEX_SCHEMA", Text),
    c("INDEX_NAME", Text),
    c("SEQ_IN_INDEX", UInt),
    c("COLUMN_NAME", Text),
    c("COLLATION", NullText),
    c("CARDINALITY", NullInt),
    c("SUB_PART", NullInt),
    c("PACKED", NullText),
    c("NULLABLE", Text),
    c("INDEX_TYPE", Text),
    c("COMMENT", Text),
    c("INDEX_COMMENT", Text),
    c("IS_VISIBLE", Text),
    c("EXPRESSION", NullText),
];

const KEY_COLUMN_USAGE: &[Col] = &[
    c("CONSTRAINT_CATALOG", Text),
    c("CONSTRAINT_SCHEMA", Text),
    c("CONSTRAINT_NAME", Text),
    c("TABLE_CATALOG", Text),
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("COLUMN_NAME", Text),
    c("ORDINAL_POSITION", UInt),
    c("POSITION_IN_UNIQUE_CONSTRAINT", NullUInt),
    c("REFERENCED_TABLE_SCHEMA", NullText),
    c("REFERENCED_TABLE_NAME", NullText),
    c("REFERENCED_COLUMN_NAME", NullText),
];

const TABLE_CONSTRAINTS: &[Col] = &[
    c("CONSTRAINT_CATALOG", Text),
    c("CONSTRAINT_SCHEMA", Text),
    c("CONSTRAINT_NAME", Text),
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("CONSTRAINT_TYPE", Text),
    c("ENFORCED", Text),
];

const REFERENTIAL_CONSTRAINTS: &[Col] = &[
    c("CONSTRAINT_CATALOG", Text),
    c("CONSTRAINT_SCHEMA", Text),
    c("CONSTRAINT_NAME", Text),
    c("UNIQUE_CONSTRAINT_CATALOG", Text),
    c("UNIQUE_CONSTRAINT_SCHEMA", Text),
    c("UNIQUE_CONSTRAINT_NAME", NullText),
    c("MATCH_OPTION", Text),
    c("UPDATE_RULE", Text),
    c("DELETE_RULE", Text),
    c("TABLE_NAME", Text),
    c("REFERENCED_TABLE_NAME", Text),
];

const ENGINES: &[Col] = &[
    c("ENGINE", Text),
    c("SUPPORT", Text),
    c("COMMENT", Text),
    c("TRANSACTIONS", NullText),
    c("XA", NullText),
    c("SAVEPOINTS", NullText),
];

const COLLATIONS: &[Col] = &[
    c("COLLATION_NAME", Text),
    c("CHARACTER_SET_NAME", Text),
    c("ID", UInt),
    c("IS_DEFAULT", Text),
    c("IS_COMPILED", Text),
    c("SORTLEN", UInt),
    c("PAD_ATTRIBUTE", Text),
];

const CHARACTER_SETS: &[Col] = &[
    c("CHARACTER_SET_NAME", Text),
    c("DEFAULT_COLLATE_NAME", Text),
    c("DESCRIPTION", Text),
    c("MAXLEN", UInt),
];

const VIEWS: &[Col] = &[
    c("TABLE_CATALOG", Text),
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("VIEW_DEFINITION", NullText),
    c("CHECK_OPTION", NullText),
    c("IS_UPDATABLE", NullText),
    c("DEFINER", NullText),
    c("SECURITY_TYPE", NullText),
    c("CHARACTER_SET_CLIENT", Text),
    c("COLLATION_CONNECTION", Text),
];

const ROUTINES: &[Col] = &[
    c("SPECIFIC_NAME", Text),
    c("ROUTINE_CATALOG", Text),
    c("ROUTINE_SCHEMA", Text),
    c("ROUTINE_NAME", Text),
    c("ROUTINE_TYPE", Text),
    c("DATA_TYPE", Text),
    c("ROUTINE_BODY", Text),
    c("ROUTINE_DEFINITION", NullText),
    c("EXTERNAL_NAME", NullText),
    c("EXTERNAL_LANGUAGE", Text),
    c("PARAMETER_STYLE", Text),
    c("IS_DETERMINISTIC", Text),
    c("SQL_DATA_ACCESS", Text),
    c("SQL_PATH", NullText),
    c("SECURITY_TYPE", Text),
    c("CREATED", NullDateTime),
    c("LAST_ALTERED", NullDateTime),
    c("SQL_MODE", Text),
    c("ROUTINE_COMMENT", Text),
    c("DEFINER", Text),
];

const TRIGGERS: &[Col] = &[
    c("TRIGGER_CATALOG", Text),
    c("TRIGGER_SCHEMA", Text),
    c("TRIGGER_NAME", Text),
    c("EVENT_MANIPULATION", Text),
    c("EVENT_OBJECT_CATALOG", Text),
    c("EVENT_OBJECT_SCHEMA", Text),
    c("EVENT_OBJECT_TABLE", Text),
    c("ACTION_ORDER", UInt),
    c("ACTION_STATEMENT", Text),
    c("ACTION_TIMING", Text),
    c("CREATED", NullDateTime),
    c("SQL_MODE", Text),
    c("DEFINER", Text),
];

const FILES: &[Col] = &[
    c("FILE_ID", NullInt),
    c("FILE_NAME", NullText),
    c("FILE_TYPE", NullText),
    c("TABLESPACE_NAME", NullText),
    c("TABLE_CATALOG", NullText),
    c("TABLE_SCHEMA", NullText),
    c("TABLE_NAME", NullText),
    c("LOGFILE_GROUP_NAME", NullText),
    c("LOGFILE_GROUP_NUMBER", NullInt),
    c("ENGINE", NullText),
    c("FULLTEXT_KEYS", NullText),
    c("DELETED_ROWS", NullInt),
    c("UPDATE_COUNT", NullInt),
    c("FREE_EXTENTS", NullInt),
    c("TOTAL_EXTENTS", NullInt),
    c("EXTENT_SIZE", NullInt),
    c("INITIAL_SIZE", NullUInt),
    c("MAXIMUM_SIZE", NullUInt),
    c("AUTOEXTEND_SIZE", NullUInt),
    c("CREATION_TIME", NullDateTime),
    c("LAST_UPDATE_TIME", NullDateTime),
    c("LAST_ACCESS_TIME", NullDateTime),
    c("STATUS", NullText),
    c("EXTRA", NullText),
];

const PARTITIONS: &[Col] = &[
    c("TABLE_CATALOG", Text),
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("PARTITION_NAME", NullText),
    c("SUBPARTITION_NAME", NullText),
    c("PARTITION_ORDINAL_POSITION", NullUInt),
    c("PARTITION_METHOD", NullText),
    c("PARTITION_EXPRESSION", NullText),
    c("TABLE_ROWS", UInt),
    c("DATA_LENGTH", UInt),
];

const SHALE_DDL: &[Col] = &[
    c("TABLE_SCHEMA", Text),
    c("TABLE_NAME", Text),
    c("INDEX_NAME", Text),
    c("INDEX_TYPE", Text),
    c("INDEX_ID", UInt),
    c("KEYSPACE", Text),
];

const SHALE_KEYSPACES: &[Col] = &[
    c("KEYSPACE_ID", UInt),
    c("KEYSPACE_NAME", Text),
    c("OPTION_NAME", Text),
    c("VALUE", Text),
];

const SHALE_COMPACTION_STATS: &[Col] = &[
    c("LEVEL", Text),
    c("FILES", UInt),
    c("SIZE_BYTES", UInt),
    c("SCORE", Double),
    c("READ_BYTES", UInt),
    c("READ_UPPER_BYTES", UInt),
    c("READ_OUTPUT_BYTES", UInt),
    c("WRITTEN_BYTES", UInt),
    c("MOVED_BYTES", UInt),
    c("WRITE_AMP", Double),
    c("COMPACTION_SECONDS", Double),
    c("COMPACTIONS", UInt),
];

const SHALE_TABLE_FILES: &[Col] = &[
    c("FILE_NAME", Text),
    c("KEYSPACE_ID", UInt),
    c("KEYSPACE_NAME", Text),
    c("LEVEL", UInt),
    c("SIZE_BYTES", UInt),
    c("ENTRIES", UInt),
    c("DELETIONS", UInt),
    c("SMALLEST_SEQNO", UInt),
    c("LARGEST_SEQNO", UInt),
    c("DAMAGE", NullText),
];

const PROCESSLIST: &[Col] = &[
    c("ID", UInt),
    c("USER", Text),
    c("HOST", Text),
    c("DB", NullText),
    c("COMMAND", Text),
    c("TIME", Int),
    c("STATE", Text),
    c("INFO", NullText),
];

const SHALE_TRX: &[Col] = &[
    c("TRANSACTION_ID", UInt),
    c("STATE", Text),
    c("NAME", NullText),
    c("WRITE_COUNT", UInt),
    c("LOCK_COUNT", UInt),
    c("WAITING_KEY", NullText),
    c("WAITING_KEYSPACE_ID", NullUInt),
    c("WAITING_TABLE_SCHEMA", NullText),
    c("WAITING_TABLE_NAME", NullText),
    c("WAITING_INDEX_NAME", NullText),
    c("WAITING_MODE", NullText),
    c("WAITING_FOR", NullText),
    c("WAIT_SECONDS", NullUInt),
    c("ISOLATION_LEVEL", Text),
    c("OPTIMISTIC", UInt),
    c("SNAPSHOT_SEQNO", NullUInt),
    c("STARTED", NullDateTime),
    c("TIME", UInt),
    c("THREAD_ID", NullUInt),
    c("QUERY", NullText),
    c("WAITING_KEY_DATA", NullText),
];

const SHALE_LOCKS: &[Col] = &[
    c("KEYSPACE_ID", UInt),
    c("TRANSACTION_ID", UInt),
    c("MODE", Text),
    c("LOCK_STATUS", Text),
    c("KEY", Text),
    c("TABLE_SCHEMA", NullText),
    c("TABLE_NAME", NullText),
    c("INDEX_NAME", NullText),
    c("LOCK_DATA", NullText),
];

const SHALE_DEADLOCKS: &[Col] = &[
    c("DEADLOCK_ID", UInt),
    c("TIMESTAMP", NullDateTime),
    c("TRANSACTION_ID", UInt),
    c("KEYSPACE_ID", UInt),
    c("WAITING_KEY", Text),
    c("LOCK_TYPE", Text),
    c("TABLE_SCHEMA", NullText),
    c("TABLE_NAME", NullText),
    c("INDEX_NAME", NullText),
    c("WAITING_FOR", Text),
    c("ROLLED_BACK", UInt),
    c("WAITING_KEY_DATA", NullText),
];

impl InfoTable {
    /// The name as MySQL spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            InfoTable::Schemata => "SCHEMATA",
            InfoTable::Tables => "TABLES",
            InfoTable::Columns => "COLUMNS",
            InfoTable::Statistics => "STATISTICS",
            InfoTable::KeyColumnUsage => "KEY_COLUMN_USAGE",
            InfoTable::TableConstraints => "TABLE_CONSTRAINTS",
            InfoTable::ReferentialConstraints => "REFERENTIAL_CONSTRAINTS",
            InfoTable::Engines => "ENGINES",
            InfoTable::Collations => "COLLATIONS",
            InfoTable::CharacterSets => "CHARACTER_SETS",
            InfoTable::Views => "VIEWS",
            InfoTable::Routines => "ROUTINES",
            InfoTable::Triggers => "TRIGGERS",
            InfoTable::Files => "FILES",
            InfoTable::Partitions => "PARTITIONS",
            InfoTable::ShaleDdl => "SHALE_DDL",
            InfoTable::ShaleKeyspaces => "SHALE_KEYSPACES",
            InfoTable::ShaleCompactionStats => "SHALE_COMPACTION_STATS",
            InfoTable::ProcessList => "PROCESSLIST",
            InfoTable::ShaleTrx => "SHALE_TRX",
            InfoTable::ShaleLocks => "SHALE_LOCKS",
            InfoTable::ShaleDeadlocks => "SHALE_DEADLOCKS",
            InfoTable::ShaleTableFiles => "SHALE_TABLE_FILES",
        }
    }

    /// The table called `name` (case-insensitive).
    pub(crate) fn named(name: &str) -> Option<InfoTable> {
        ALL.into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    pub(crate) fn columns(self) -> &'static [Col] {
        match self {
            InfoTable::Schemata => SCHEMATA,
            InfoTable::Tables => TABLES,
            InfoTable::Columns => COLUMNS,
            InfoTable::Statistics => STATISTICS,
            InfoTable::KeyColumnUsage => KEY_COLUMN_USAGE,
            InfoTable::TableConstraints => TABLE_CONSTRAINTS,
            InfoTable::ReferentialConstraints => REFERENTIAL_CONSTRAINTS,
            InfoTable::Engines => ENGINES,
            InfoTable::Collations => COLLATIONS,
            InfoTable::CharacterSets => CHARACTER_SETS,
            InfoTable::Views => VIEWS,
            InfoTable::Routines => ROUTINES,
            InfoTable::Triggers => TRIGGERS,
            InfoTable::Files => FILES,
            InfoTable::Partitions => PARTITIONS,
            InfoTable::ShaleDdl => SHALE_DDL,
            InfoTable::ShaleKeyspaces => SHALE_KEYSPACES,
            InfoTable::ShaleCompactionStats => SHALE_COMPACTION_STATS,
            InfoTable::ProcessList => PROCESSLIST,
            InfoTable::ShaleTrx => SHALE_TRX,
            InfoTable::ShaleLocks => SHALE_LOCKS,
            InfoTable::ShaleDeadlocks => SHALE_DEADLOCKS,
            InfoTable::ShaleTableFiles => SHALE_TABLE_FILES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_columns_are_unique() {
        for t in ALL {
            assert_eq!(InfoTable::named(&t.name().to_ascii_lowercase()), Some(t));
            let cols = t.columns();
            for (i, a) in cols.iter().enumerate() {
                assert!(
                    cols[i + 1..].iter().all(|b| b.name != a.name),
                    "{} repeats {}",
                    t.name(),
                    a.name
                );
            }
        }
        assert_eq!(InfoTable::named("nope"), None);
    }
}
