//! Recovers a version set from bytes written as a whole MANIFEST beside a CURRENT naming
//! it, and checks that the MANIFEST recovery writes recovers to the same state.
//! A panic, hang or sanitizer report is a bug in shale-engine.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_engine::testing::fuzz_manifest(data);
});
