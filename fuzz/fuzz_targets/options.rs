//! Decodes bytes as an OPTIONS file, checks the round trip and reads it into options the
//! way opening a database does.
//! A panic, hang or sanitizer report is a bug in shale-engine.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_engine::testing::fuzz_options(data);
});
