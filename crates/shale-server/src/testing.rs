//! Entry points for fuzz targets (feature `testing`): every decoder of client bytes.

use crate::codec::read_packet;
use crate::handshake::parse_handshake_response;
use crate::prepared::Statements;

/// Feeds `data` to the packet reader, the handshake response parser, the multi-statement scan,
/// and COM_STMT_EXECUTE and COM_STMT_SEND_LONG_DATA decoding (the first byte picks the
/// statement's parameter count). Any panic is a bug.
pub fn fuzz_client_packet(data: &[u8]) {
    let _ = parse_handshake_response(data);
    let _ = shale_sql::statement_split::has_several_statements(
        data,
        shale_sql::statement_split::Lexing::default(),
    );
    let params = data.first().map_or(0, |b| usize::from(b % 8));
    let body = data.get(1..).unwrap_or_default();
    let mut statements = Statements::default();
    statements.add(1, params);
    statements.send_long_data(body);
    let _ = statements.decode_execute(body);
    let _ = statements.decode_execute(body);
    let mut reader = body;
    let _ = read_packet(&mut reader, 0, 1 << 20);
}
