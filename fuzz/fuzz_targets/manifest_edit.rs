//! Decodes bytes as one MANIFEST record (a version edit) and checks that encoding and
//! decoding it again gives the same edit.
//! A panic, hang or sanitizer report is a bug in shale-engine.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_engine::testing::fuzz_manifest_edit(data);
});
