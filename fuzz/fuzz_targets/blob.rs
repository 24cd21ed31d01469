//! Reads bytes as a blob file (and as a blob reference), resolving every record found.
//! A panic, hang or sanitizer report is a bug in shale-engine.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_engine::testing::fuzz_blob_file(data);
});
