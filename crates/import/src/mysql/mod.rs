//! MySQL captures: each connection's commands, read from both directions of
//! a pcap (see docs/replay.md, "MySQL").
//!
//! - **Which connections.** Those to the MySQL port (3306, or `--mysql-port`),
//!   and any other whose server speaks first with a MySQL greeting (a client
//!   that speaks first is not MySQL's: counted by its port, skipped; on the
//!   MySQL port, a warning names it, unless what it sent is a handshake
//!   response, whose greeting the capture lost).
//! - **The handshake** gives the connection's `CONNECT` (at the greeting's
//!   capture time): the captured client's schema, collation and session
//!   capabilities; its user names the session. A client that starts TLS, or
//!   agrees on compression, cannot be read: the connection is counted and
//!   named, and none of it is imported.
//! - **Commands** are the client's packets of sequence number 0, each at
//!   the capture time of its first byte; the client's other packets (the
//!   auth plugin's, a local file's) are not commands.
//! - **Replies** are followed only to know what each command's reply said
//!   where it matters: a prepared statement's id. Statements are numbered in
//!   the session in the order of their prepares, and each command naming one
//!   names its number instead of the captured id; a command naming a
//!   statement whose prepare was not captured is left out, and counted.
//! - **A connection captured from its middle** (no handshake) starts at the
//!   first client segment that begins with a whole command; it has no
//!   `CONNECT` (a replay logs in with `[mysql] database`), and its replies are
//!   framed in the EOF mode the first result set shows.
//!
//! Tags: `CONNECT`; a query's kind and first table (`SELECT items`,
//! `tank_mysql::tag`); `PREPARE SELECT items`; an execute takes its
//! statement's tag (`SELECT items`); other commands their name (`PING`).

mod attributes;
mod conversation;
pub(crate) mod slowlog;

use conversation::MysqlConversation;

use crate::twoway::Protocol;

/// MySQL's port.
pub(crate) const PORT: u16 = 3306;

/// Which connections are MySQL's: see the module docs.
pub(crate) struct Mysql {
    /// The MySQL server's port.
    pub port: u16,
}

impl Protocol for Mysql {
    type Conversation = MysqlConversation;

    fn serves(&self, port: u16) -> Option<bool> {
        (port == self.port).then_some(true)
    }

    fn open(&mut self, server_port: u16, syn: bool) -> MysqlConversation {
        MysqlConversation::new(server_port == self.port, syn)
    }
}

/// Whether a capture starting with `head` holds MySQL traffic: its first TCP
/// segment that tells is to or from the MySQL port, or a server's greeting
/// (an HTTP request line first says it is not). For `tank import` without
/// `--protocol`; a capture of several protocols is told by its first.
pub(crate) fn in_capture(head: &[u8]) -> bool {
    let mut quiet = crate::Warnings::new(0, Box::new(|_| {}));
    let mut found = None;
    let _ = crate::pcap::read(std::io::Cursor::new(head), "", &mut quiet, |packet, _| {
        if found.is_some() {
            return Ok(());
        }
        let Ok(segment) = crate::link::segment(packet.link, packet.data) else {
            return Ok(());
        };
        let ours = segment.src.port() == PORT || segment.dst.port() == PORT;
        if ours || is_greeting(segment.payload) {
            found = Some(true);
        } else if !segment.payload.is_empty() {
            found = Some(false);
        }
        Ok(())
    });
    found == Some(true)
}

/// Whether `payload` is a whole greeting packet (protocol 10).
fn is_greeting(payload: &[u8]) -> bool {
    let Some(header) = payload.get(..5) else {
        return false;
    };
    let len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
    header[3] == 0 && header[4] == 10 && len + 4 == payload.len()
}
