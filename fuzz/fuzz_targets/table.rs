//! Opens bytes as a whole table file, verifies it and reads it every way.
//! A panic, hang or sanitizer report is a bug in shale-sst.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_sst::testing::fuzz_table(data);
});
