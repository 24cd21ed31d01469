//! Decodes bytes as a bloom filter block and probes it.
//! A panic, hang or sanitizer report is a bug in shale-sst.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_sst::testing::fuzz_filter(data);
});
