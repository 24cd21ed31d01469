//! Decodes bytes as a stored table definition and as index entries.
//! A panic, hang or sanitizer report is a bug in shale-table.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_table::testing::fuzz_table_definition(data);
});
