//! Commands: what a client sends after the handshake, one per exchange (its
//! first packet has sequence number 0), and how each is answered.
//!
//! A sessions file holds each command's payload verbatim (its first byte is
//! the command), with two changes made by the importer and undone by the gun:
//! - **The connection** is a command of its own, [`Command::Connect`]
//!   (`COM_CONNECT`, which servers keep for themselves and clients never
//!   send): it stands for the handshake, with what the capture's client asked
//!   for that changes how statements behave ([`Connect`]), so a replay
//!   connects when the capture did and with the same session settings.
//! - **Prepared statements** are numbered per session, 1 for the session's
//!   first `COM_STMT_PREPARE`, 2 for its second, … and every command naming a
//!   statement (execute, fetch, reset, close, long data) names it by that
//!   number instead of the id the captured server gave it. A replay's server
//!   gives its own ids; the gun maps the numbers to them.

use crate::flags::{self, Caps};
use crate::packet::Reader;

/// A command, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// `COM_QUIT` (0x01): no reply; the server closes.
    Quit,
    /// `COM_INIT_DB` (0x02): change the default schema.
    InitDb,
    /// `COM_QUERY` (0x03): a statement in text.
    Query,
    /// `COM_FIELD_LIST` (0x04): a table's columns.
    FieldList,
    /// `COM_CREATE_DB` (0x05).
    CreateDb,
    /// `COM_DROP_DB` (0x06).
    DropDb,
    /// `COM_REFRESH` (0x07).
    Refresh,
    /// `COM_STATISTICS` (0x09): a line of server statistics.
    Statistics,
    /// `COM_PROCESS_INFO` (0x0a): the process list as a result set.
    ProcessInfo,
    /// `COM_CONNECT` (0x0b): in a sessions file, the connection (see the module docs).
    Connect,
    /// `COM_PROCESS_KILL` (0x0c).
    ProcessKill,
    /// `COM_DEBUG` (0x0d).
    Debug,
    /// `COM_PING` (0x0e).
    Ping,
    /// `COM_STMT_PREPARE` (0x16).
    StmtPrepare,
    /// `COM_STMT_EXECUTE` (0x17).
    StmtExecute,
    /// `COM_STMT_SEND_LONG_DATA` (0x18): no reply.
    StmtSendLongData,
    /// `COM_STMT_CLOSE` (0x19): no reply.
    StmtClose,
    /// `COM_STMT_RESET` (0x1a).
    StmtReset,
    /// `COM_SET_OPTION` (0x1b).
    SetOption,
    /// `COM_STMT_FETCH` (0x1c): rows of an open cursor.
    StmtFetch,
    /// `COM_RESET_CONNECTION` (0x1f).
    ResetConnection,
    /// MariaDB's `COM_STMT_BULK_EXECUTE` (0xfa).
    StmtBulkExecute,
}

/// How a command is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Not at all.
    Nothing,
    /// By one packet (OK, EOF, ERR, or a line of text).
    OnePacket,
    /// By result sets (or OK, or ERR), one after another while the server
    /// says more follow.
    ResultSets,
    /// By binary rows then their terminator (a cursor's fetch).
    Rows,
    /// By a prepared statement's OK and its parameters' and columns' definitions.
    Prepare,
    /// By column definitions then their terminator.
    FieldList,
    /// By the handshake (a [`Command::Connect`]).
    Handshake,
}

const TABLE: [(u8, Command, &str); 22] = [
    (0x01, Command::Quit, "QUIT"),
    (0x02, Command::InitDb, "INIT_DB"),
    (0x03, Command::Query, "QUERY"),
    (0x04, Command::FieldList, "FIELD_LIST"),
    (0x05, Command::CreateDb, "CREATE_DB"),
    (0x06, Command::DropDb, "DROP_DB"),
    (0x07, Command::Refresh, "REFRESH"),
    (0x09, Command::Statistics, "STATISTICS"),
    (0x0a, Command::ProcessInfo, "PROCESS_INFO"),
    (0x0b, Command::Connect, "CONNECT"),
    (0x0c, Command::ProcessKill, "PROCESS_KILL"),
    (0x0d, Command::Debug, "DEBUG"),
    (0x0e, Command::Ping, "PING"),
    (0x16, Command::StmtPrepare, "STMT_PREPARE"),
    (0x17, Command::StmtExecute, "STMT_EXECUTE"),
    (0x18, Command::StmtSendLongData, "STMT_SEND_LONG_DATA"),
    (0x19, Command::StmtClose, "STMT_CLOSE"),
    (0x1a, Command::StmtReset, "STMT_RESET"),
    (0x1b, Command::SetOption, "SET_OPTION"),
    (0x1c, Command::StmtFetch, "STMT_FETCH"),
    (0x1f, Command::ResetConnection, "RESET_CONNECTION"),
    (0xfa, Command::StmtBulkExecute, "STMT_BULK_EXECUTE"),
];

/// The name of the command byte `byte` as the protocol's documentation
/// writes it (`COM_` left off), known to tank or not: for messages.
pub fn byte_name(byte: u8) -> &'static str {
    if let Some((_, _, name)) = TABLE.iter().find(|(b, _, _)| *b == byte) {
        return name;
    }
    match byte {
        0x00 => "SLEEP",
        0x08 => "SHUTDOWN",
        0x0f => "TIME",
        0x10 => "DELAYED_INSERT",
        0x11 => "CHANGE_USER",
        0x12 => "BINLOG_DUMP",
        0x13 => "TABLE_DUMP",
        0x14 => "CONNECT_OUT",
        0x15 => "REGISTER_SLAVE",
        0x1d => "DAEMON",
        0x1e => "BINLOG_DUMP_GTID",
        0xfe => "MULTI",
        _ => "unknown",
    }
}

impl Command {
    /// The command a payload's first byte names, when tank can follow its
    /// reply (`None` for the others: `COM_CHANGE_USER`, replication, …).
    pub fn from_byte(byte: u8) -> Option<Command> {
        TABLE
            .iter()
            .find(|(b, _, _)| *b == byte)
            .map(|(_, command, _)| *command)
    }

    /// Its byte.
    pub fn byte(self) -> u8 {
        TABLE
            .iter()
            .find(|(_, c, _)| *c == self)
            .map_or(0, |(b, _, _)| *b)
    }

    /// Its name (`COM_` left off), as tags and messages write it.
    pub fn name(self) -> &'static str {
        byte_name(self.byte())
    }

    /// How it is answered.
    pub fn answer(self) -> Answer {
        match self {
            Command::Quit | Command::StmtSendLongData | Command::StmtClose => Answer::Nothing,
            Command::InitDb
            | Command::CreateDb
            | Command::DropDb
            | Command::Refresh
            | Command::Statistics
            | Command::ProcessKill
            | Command::Debug
            | Command::Ping
            | Command::StmtReset
            | Command::SetOption
            | Command::ResetConnection => Answer::OnePacket,
            Command::Query
            | Command::ProcessInfo
            | Command::StmtExecute
            | Command::StmtBulkExecute => Answer::ResultSets,
            Command::StmtFetch => Answer::Rows,
            Command::StmtPrepare => Answer::Prepare,
            Command::FieldList => Answer::FieldList,
            Command::Connect => Answer::Handshake,
        }
    }

    /// Whether its payload names a prepared statement in bytes 1..5.
    pub fn names_statement(self) -> bool {
        matches!(
            self,
            Command::StmtExecute
                | Command::StmtSendLongData
                | Command::StmtClose
                | Command::StmtReset
                | Command::StmtFetch
                | Command::StmtBulkExecute
        )
    }
}

/// The statement id MariaDB's clients send to mean "the statement prepared
/// last on this connection" (a prepare and its execute sent together).
pub const LAST_PREPARED: u32 = u32::MAX;

/// The statement a payload names (bytes 1..5, little-endian), for the
/// commands that name one.
pub fn statement_id(payload: &[u8]) -> Option<u32> {
    let command = Command::from_byte(*payload.first()?)?;
    if !command.names_statement() {
        return None;
    }
    Reader::new(payload.get(1..)?).u32()
}

/// Replace the statement a payload names with `id` (no change for a
/// payload that names none).
pub fn set_statement_id(payload: &mut [u8], id: u32) {
    if statement_id(payload).is_some() {
        payload[1..5].copy_from_slice(&id.to_le_bytes());
    }
}

/// The capabilities a replay takes from the captured client, because they
/// change what statements do or how the server counts: several statements
/// per query, affected rows as found rows, spaces after function names, the
/// interactive timeout.
pub const SESSION_CAPS: Caps =
    flags::MULTI_STATEMENTS | flags::FOUND_ROWS | flags::IGNORE_SPACE | flags::INTERACTIVE;

/// What a [`Command::Connect`] carries: what the captured client asked of
/// its session. Encoded as the command byte, the capabilities (4 bytes,
/// little-endian, only [`SESSION_CAPS`] kept), the collation (1 byte: the
/// character set statements were sent in) and the schema (the rest; empty
/// for none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    /// The client's capabilities among [`SESSION_CAPS`].
    pub caps: Caps,
    /// The collation id it asked for.
    pub collation: u8,
    /// The schema it connected to (empty: none).
    pub schema: Vec<u8>,
}

impl Connect {
    /// The payload of this connection's command.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(6 + self.schema.len());
        out.push(Command::Connect.byte());
        out.extend_from_slice(&((self.caps & SESSION_CAPS) as u32).to_le_bytes());
        out.push(self.collation);
        out.extend_from_slice(&self.schema);
        out
    }

    /// Read a connection's command; `None` when `payload` is not one.
    pub fn decode(payload: &[u8]) -> Option<Connect> {
        let mut reader = Reader::new(payload);
        if reader.u8()? != Command::Connect.byte() {
            return None;
        }
        let caps = Caps::from(reader.u32()?) & SESSION_CAPS;
        let collation = reader.u8()?;
        Some(Connect {
            caps,
            collation,
            schema: reader.rest().to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_one_byte_and_a_name() {
        for (byte, command, name) in TABLE {
            assert_eq!(Command::from_byte(byte), Some(command));
            assert_eq!(command.byte(), byte);
            assert_eq!(command.name(), name);
        }
        assert_eq!(Command::from_byte(0x11), None);
        assert_eq!(byte_name(0x11), "CHANGE_USER");
    }

    #[test]
    fn statement_ids_are_read_and_replaced_only_where_named() {
        let mut execute = b"\x17\x05\x00\x00\x00\x00\x01\x00\x00\x00".to_vec();
        assert_eq!(statement_id(&execute), Some(5));
        set_statement_id(&mut execute, 2);
        assert_eq!(&execute[..5], b"\x17\x02\x00\x00\x00");
        let mut query = b"\x03SELECT 1".to_vec();
        assert_eq!(statement_id(&query), None);
        set_statement_id(&mut query, 9);
        assert_eq!(query, b"\x03SELECT 1");
        assert_eq!(statement_id(b"\x19\x01"), None);
    }

    #[test]
    fn a_connection_round_trips_keeping_only_session_caps() {
        let connect = Connect {
            caps: flags::MULTI_STATEMENTS | flags::COMPRESS,
            collation: 45,
            schema: b"shop".to_vec(),
        };
        let payload = connect.encode();
        assert_eq!(payload, b"\x0b\x00\x00\x01\x00\x2dshop");
        let back = Connect::decode(&payload).unwrap();
        assert_eq!(back.caps, flags::MULTI_STATEMENTS);
        assert_eq!(back.schema, b"shop");
        assert_eq!(Connect::decode(b"\x0b\x00"), None);
        assert_eq!(Connect::decode(b"\x03SELECT"), None);
    }
}
