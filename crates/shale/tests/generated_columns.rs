//! Generated columns through the mariadb client against `shale serve`: a JSON path indexed
//! through a virtual column, looked up by that index (EXPLAIN names it), MySQL's errors for
//! a value given to a generated column, and the definition and index surviving a restart.
//!
//! A test whose client is missing prints SKIPPED and passes, except under CI=true.

mod support;

use support::{have, scratch, start_shale};

#[test]
fn mariadb_client_indexes_a_json_path_through_a_virtual_column() {
    if !have("mariadb", &["--version"]) {
        return;
    }
    let dir = scratch("generated-columns");
    let mut server = start_shale(&dir);
    server
        .query(
            None,
            "CREATE DATABASE g; USE g; \
             CREATE TABLE people (id INT PRIMARY KEY, j JSON, \
               name VARCHAR(40) AS (j->>'$.name'), \
               age INT GENERATED ALWAYS AS (j->'$.age') STORED, KEY (name)); \
             INSERT INTO people (id, j) VALUES (1, '{\"name\": \"ann\", \"age\": 41}'), \
               (2, '{\"name\": \"bob\", \"age\": 7}'), (3, '{\"age\": 5}')",
        )
        .unwrap();
    let lookup = "SELECT id, name, age FROM people WHERE name = 'bob'";
    assert_eq!(server.query(Some("g"), lookup).unwrap(), "2\tbob\t7\n");
    let explain = server
        .query(Some("g"), &format!("EXPLAIN {lookup}"))
        .unwrap();
    // Shale's plan line: access, table.index, the key range.
    assert!(
        explain.starts_with("range people.name (name = 'bob')"),
        "{explain}"
    );
    assert_eq!(
        server
            .query(
                Some("g"),
                "SELECT EXTRA, GENERATION_EXPRESSION FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = 'g' AND COLUMN_NAME IN ('name', 'age') \
                 ORDER BY ORDINAL_POSITION"
            )
            .unwrap(),
        "VIRTUAL GENERATED\tj ->> '$.name'\nSTORED GENERATED\tj -> '$.age'\n"
    );
    let err = server
        .query(Some("g"), "INSERT INTO people VALUES (4, '{}', 'x', 1)")
        .unwrap_err();
    assert!(
        err.contains("ERROR 3105 (HY000)")
            && err.contains(
                "The value specified for generated column 'name' in table 'people' is not \
                 allowed."
            ),
        "{err}"
    );
    let err = server
        .query(Some("g"), "CREATE TABLE bad (a INT, b DATETIME AS (NOW()))")
        .unwrap_err();
    assert!(
        err.contains("ERROR 3102 (HY000)")
            && err.contains("Expression of generated column 'b' contains a disallowed function."),
        "{err}"
    );
    server
        .query(
            Some("g"),
            "UPDATE people SET j = '{\"name\": \"cy\", \"age\": 8}' WHERE id = 2",
        )
        .unwrap();
    server.stop();

    // The catalog keeps the expressions; the index still answers after a restart.
    let server = start_shale(&dir);
    assert_eq!(server.query(Some("g"), lookup).unwrap(), "");
    assert_eq!(
        server
            .query(
                Some("g"),
                "SELECT id, name, age FROM people WHERE name = 'cy'"
            )
            .unwrap(),
        "2\tcy\t8\n"
    );
    assert_eq!(
        server.query(Some("g"), "CHECK TABLE people").unwrap(),
        "g.people\tcheck\tstatus\tOK\n"
    );
}
