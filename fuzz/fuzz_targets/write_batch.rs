//! Decodes bytes as a write batch, walks its entries and checks that re-encoding gives
//! the same bytes.
//! A panic, hang or sanitizer report is a bug in shale-engine.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_engine::testing::fuzz_write_batch(data);
});
