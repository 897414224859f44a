//! The protocol's bit flags: what a client and a server can do (capabilities,
//! agreed in the handshake) and what a reply says of the session (status).
//! Only the flags tank reads or sets are named.

/// Capability flags (the handshake's 32-bit field; MariaDB's extended ones
/// are above bit 31, see [`MARIADB_CACHE_METADATA`]).
pub type Caps = u64;

/// `CLIENT_LONG_PASSWORD` (MariaDB: `CLIENT_MYSQL`, clear when the extended
/// capabilities are in use).
pub const LONG_PASSWORD: Caps = 1;
/// `CLIENT_FOUND_ROWS`: affected rows count matched rows, not changed ones.
pub const FOUND_ROWS: Caps = 1 << 1;
/// `CLIENT_LONG_FLAG`.
pub const LONG_FLAG: Caps = 1 << 2;
/// `CLIENT_CONNECT_WITH_DB`: the handshake response names a schema.
pub const CONNECT_WITH_DB: Caps = 1 << 3;
/// `CLIENT_COMPRESS`: after authentication, packets are compressed.
pub const COMPRESS: Caps = 1 << 5;
/// `CLIENT_LOCAL_FILES`: `LOAD DATA LOCAL INFILE` may ask for a file.
pub const LOCAL_FILES: Caps = 1 << 7;
/// `CLIENT_IGNORE_SPACE`: function names may be followed by a space.
pub const IGNORE_SPACE: Caps = 1 << 8;
/// `CLIENT_PROTOCOL_41`.
pub const PROTOCOL_41: Caps = 1 << 9;
/// `CLIENT_INTERACTIVE`: `interactive_timeout` instead of `wait_timeout`.
pub const INTERACTIVE: Caps = 1 << 10;
/// `CLIENT_SSL`: the client switches to TLS after its SSL request.
pub const SSL: Caps = 1 << 11;
/// `CLIENT_TRANSACTIONS`.
pub const TRANSACTIONS: Caps = 1 << 13;
/// `CLIENT_SECURE_CONNECTION`: the auth response is length-prefixed.
pub const SECURE_CONNECTION: Caps = 1 << 15;
/// `CLIENT_MULTI_STATEMENTS`: a query may hold several statements.
pub const MULTI_STATEMENTS: Caps = 1 << 16;
/// `CLIENT_MULTI_RESULTS`.
pub const MULTI_RESULTS: Caps = 1 << 17;
/// `CLIENT_PS_MULTI_RESULTS`.
pub const PS_MULTI_RESULTS: Caps = 1 << 18;
/// `CLIENT_PLUGIN_AUTH`: the handshake names the auth plugin.
pub const PLUGIN_AUTH: Caps = 1 << 19;
/// `CLIENT_CONNECT_ATTRS`: the handshake response carries attributes.
pub const CONNECT_ATTRS: Caps = 1 << 20;
/// `CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA`: the auth response is a lenenc string.
pub const PLUGIN_AUTH_LENENC: Caps = 1 << 21;
/// `CLIENT_DEPRECATE_EOF`: result sets end with an OK packet, not an EOF.
pub const DEPRECATE_EOF: Caps = 1 << 24;
/// `CLIENT_ZSTD_COMPRESSION_ALGORITHM`: compressed with zstd (MySQL 8).
pub const ZSTD: Caps = 1 << 26;
/// `CLIENT_QUERY_ATTRIBUTES` (MySQL 8): queries carry attributes.
pub const QUERY_ATTRIBUTES: Caps = 1 << 27;
/// `MARIADB_CLIENT_PROGRESS`: progress reports, as error packets of code 0xFFFF.
pub const MARIADB_PROGRESS: Caps = 1 << 32;
/// `MARIADB_CLIENT_CACHE_METADATA`: an execute's result set may omit its columns.
pub const MARIADB_CACHE_METADATA: Caps = 1 << 36;

/// Status flags (in OK and EOF packets).
pub type Status = u16;

/// `SERVER_MORE_RESULTS_EXISTS`: another result follows this one.
pub const MORE_RESULTS_EXISTS: Status = 1 << 3;
/// `SERVER_STATUS_CURSOR_EXISTS`: an execute opened a cursor; rows come by fetch.
pub const CURSOR_EXISTS: Status = 1 << 6;
