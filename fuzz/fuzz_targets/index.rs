//! Decodes bytes as an index block and each of its block handles.
//! A panic, hang or sanitizer report is a bug in shale-sst.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_sst::testing::fuzz_index(data);
});
