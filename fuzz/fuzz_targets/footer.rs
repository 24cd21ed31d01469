//! Decodes bytes as a table footer.
//! A panic, hang or sanitizer report is a bug in shale-sst.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_sst::testing::fuzz_footer(data);
});
