//! Writes bytes as the records of a MANIFEST (each a u16 length and its bytes) with valid
//! checksums and recovers a version set from it, so that mutations reach the edits behind the
//! checksums. A panic, hang or sanitizer report is a bug in shale-engine.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_engine::testing::fuzz_manifest_records(data);
});
