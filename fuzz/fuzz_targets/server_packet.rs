//! Decodes bytes as client packets: framing, handshake response, COM_STMT_EXECUTE and
//! COM_STMT_SEND_LONG_DATA. A panic, hang or sanitizer report is a bug in shale-server.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    shale_server::testing::fuzz_client_packet(data);
});
