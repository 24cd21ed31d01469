//! Protocol constants (capability flags, status flags, command bytes) and the generic response
//! packets every command may send: OK_Packet, ERR_Packet and EOF_Packet (MySQL "Generic
//! Response Packets", protocol 4.1 layout only).

use crate::wire::{put_lenenc_int, put_u16};

/// Capability flags (MySQL `CLIENT_*`).
pub mod capability {
    /// Also MariaDB's `CLIENT_MYSQL`: a server that sets it is a MySQL server, so MariaDB
    /// clients do not expect MariaDB's extended capabilities in the handshake's filler.
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 1 << 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const NO_SCHEMA: u32 = 1 << 4;
    pub const ODBC: u32 = 1 << 6;
    pub const IGNORE_SPACE: u32 = 1 << 8;
    pub const PROTOCOL_41: u32 = 1 << 9;
    pub const INTERACTIVE: u32 = 1 << 10;
    pub const SSL: u32 = 1 << 11;
    pub const IGNORE_SIGPIPE: u32 = 1 << 12;
    pub const TRANSACTIONS: u32 = 1 << 13;
    pub const RESERVED: u32 = 1 << 14;
    pub const SECURE_CONNECTION: u32 = 1 << 15;
    pub const MULTI_STATEMENTS: u32 = 1 << 16;
    pub const MULTI_RESULTS: u32 = 1 << 17;
    pub const PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const PLUGIN_AUTH: u32 = 1 << 19;
    pub const CONNECT_ATTRS: u32 = 1 << 20;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    /// The client may send files for LOAD DATA LOCAL (results.rs, `Output::request_local_file`).
    pub const LOCAL_FILES: u32 = 1 << 7;
    pub const DEPRECATE_EOF: u32 = 1 << 24;
    /// The compressed protocol, zlib (compress.rs), from the first command on.
    pub const COMPRESS: u32 = 1 << 5;
    /// The compressed protocol with zstd instead (MySQL 8.0.18+ clients); the handshake
    /// response then ends with the zstd level.
    pub const ZSTD_COMPRESSION_ALGORITHM: u32 = 1 << 26;

    /// Everything this server offers (and SSL when TLS is configured). Not offered:
    /// SESSION_TRACK and MariaDB's extended capabilities. LOCAL_FILES is offered; whether a
    /// LOAD DATA LOCAL runs is the global `local_infile`'s call.
    pub const SERVER: u32 = LONG_PASSWORD
        | LOCAL_FILES
        | FOUND_ROWS
        | LONG_FLAG
        | CONNECT_WITH_DB
        | NO_SCHEMA
        | COMPRESS
        | ZSTD_COMPRESSION_ALGORITHM
        | ODBC
        | IGNORE_SPACE
        | PROTOCOL_41
        | INTERACTIVE
        | IGNORE_SIGPIPE
        | TRANSACTIONS
        | RESERVED
        | SECURE_CONNECTION
        | MULTI_STATEMENTS
        | MULTI_RESULTS
        | PS_MULTI_RESULTS
        | PLUGIN_AUTH
        | CONNECT_ATTRS
        | PLUGIN_AUTH_LENENC_CLIENT_DATA
        | DEPRECATE_EOF;
}

/// Server status flags (`SERVER_STATUS_*`, `SERVER_MORE_RESULTS_EXISTS`).
pub mod status {
    pub const IN_TRANS: u16 = 1;
    pub const AUTOCOMMIT: u16 = 2;
    pub const MORE_RESULTS_EXISTS: u16 = 8;
    /// A COM_STMT_EXECUTE opened a cursor: rows come with COM_STMT_FETCH (cursor.rs).
    pub const CURSOR_EXISTS: u16 = 64;
    /// A COM_STMT_FETCH sent the cursor's last row.
    pub const LAST_ROW_SENT: u16 = 128;
}

/// Command bytes (`COM_*`), the first byte of every command packet.
pub mod command {
    pub const QUIT: u8 = 0x01;
    pub const INIT_DB: u8 = 0x02;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const CHANGE_USER: u8 = 0x11;
    pub const STATISTICS: u8 = 0x09;
    pub const PING: u8 = 0x0E;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_RESET: u8 = 0x1A;
    pub const SET_OPTION: u8 = 0x1B;
    pub const STMT_FETCH: u8 = 0x1C;
    /// Deprecated since MySQL 5.7.11 (clients send the KILL statement), still served.
    pub const PROCESS_KILL: u8 = 0x0C;
    pub const RESET_CONNECTION: u8 = 0x1F;
}

/// The fields of an OK_Packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OkPacket<'a> {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
    pub info: &'a str,
}

/// OK_Packet: `0x00` header, or `0xFE` when it ends a result set under `CLIENT_DEPRECATE_EOF`.
/// The info (`Records: 3  Duplicates: 0  Warnings: 0`) is a `string<lenenc>`, as MySQL's
/// `net_send_ok` writes it and libmariadb reads it, though the protocol pages say
/// `string<EOF>`; an empty info is left out.
pub fn put_ok(out: &mut Vec<u8>, header: u8, ok: &OkPacket<'_>) {
    out.push(header);
    put_lenenc_int(out, ok.affected_rows);
    put_lenenc_int(out, ok.last_insert_id);
    put_u16(out, ok.status);
    put_u16(out, ok.warnings);
    if !ok.info.is_empty() {
        crate::wire::put_lenenc_bytes(out, ok.info.as_bytes());
    }
}

/// ERR_Packet: `0xFF`, code, `#`, five-character SQLSTATE, message.
pub fn put_err(out: &mut Vec<u8>, code: u16, sqlstate: &str, message: &[u8]) {
    out.push(0xFF);
    put_u16(out, code);
    out.push(b'#');
    let state = sqlstate.as_bytes();
    for i in 0..5 {
        out.push(state.get(i).copied().unwrap_or(b'0'));
    }
    out.extend_from_slice(message);
}

/// ERR_Packet before the client said it speaks protocol 4.1 (nothing read from it yet):
/// code and message without the `#` SQL state marker, as MySQL sends 1040 there. Clients
/// then show SQLSTATE HY000 (`ERROR 1040 (HY000): Too many connections`); one that reads the
/// 4.0 format (the `mysql` crate) would take a marker for part of the message.
pub fn put_err_before_handshake(out: &mut Vec<u8>, code: u16, message: &str) {
    out.push(0xFF);
    put_u16(out, code);
    out.extend_from_slice(message.as_bytes());
}

/// EOF_Packet (protocol 4.1): `0xFE`, warnings, status.
pub fn put_eof(out: &mut Vec<u8>, warnings: u16, status: u16) {
    out.push(0xFE);
    put_u16(out, warnings);
    put_u16(out, status);
}

/// Errors the protocol layer raises itself (the SQL layer raises the rest).
pub mod errors {
    use shale_sql::SqlError;

    fn error(code: u16, sqlstate: &'static str, message: String) -> SqlError {
        SqlError {
            code,
            sqlstate,
            message,
        }
    }

    pub fn access_denied(user: &str, host: &str, password: bool) -> SqlError {
        let using = if password { "YES" } else { "NO" };
        error(
            1045,
            "28000",
            format!("Access denied for user '{user}'@'{host}' (using password: {using})"),
        )
    }

    pub fn unknown_command(byte: u8) -> SqlError {
        error(1047, "08S01", format!("Unknown command (0x{byte:02x})"))
    }

    pub fn packet_too_large() -> SqlError {
        error(
            1153,
            "08S01",
            "Got a packet bigger than 'max_allowed_packet' bytes".into(),
        )
    }

    pub fn out_of_order() -> SqlError {
        error(1156, "08S01", "Got packets out of order".into())
    }

    pub fn malformed(detail: &str) -> SqlError {
        error(
            1835,
            "HY000",
            format!("Malformed communication packet ({detail})"),
        )
    }

    pub fn bad_handshake() -> SqlError {
        error(1043, "08S01", "Bad handshake".into())
    }

    pub fn unknown_statement(id: u32, command: &str) -> SqlError {
        error(
            1243,
            "HY000",
            format!("Unknown prepared statement handler ({id}) given to {command}"),
        )
    }

    pub fn wrong_arguments(command: &str) -> SqlError {
        error(1210, "HY000", format!("Incorrect arguments to {command}"))
    }

    pub fn write_failed() -> SqlError {
        error(
            1160,
            "08S01",
            "Got an error writing communication packets".into(),
        )
    }

    pub fn insecure_transport() -> SqlError {
        error(
            3159,
            "HY000",
            "Connections using insecure transport are prohibited while \
             --require_secure_transport=ON."
                .into(),
        )
    }

    pub fn too_many_connections() -> SqlError {
        error(1040, "08004", "Too many connections".into())
    }

    pub fn multi_statements_off() -> SqlError {
        error(
            1064,
            "42000",
            "You have an error in your SQL syntax: several statements in one query need \
             CLIENT_MULTI_STATEMENTS (the client's multi-statements option)"
                .into(),
        )
    }

    pub fn no_open_cursor(id: u32) -> SqlError {
        error(
            1421,
            "HY000",
            format!("The statement ({id}) has no open cursor."),
        )
    }
}
