//! Reads bytes as a whole WAL file in every recovery mode (and as another log's file),
//! decoding each record as a write batch.
//! A panic, hang or sanitizer report is a bug in shale-engine.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_engine::testing::fuzz_wal(data);
});
