//! Decompresses bytes with the codec named by the first byte, with and without a dictionary.
//! A panic, hang or sanitizer report is a bug in shale-sst.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_sst::testing::fuzz_decompress(data);
});
