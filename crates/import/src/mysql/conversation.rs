//! One captured MySQL connection, read both ways (see [`super`] for the rules).

use std::collections::{HashMap, VecDeque};

use tank_mysql::command::{self, byte_name, Command, Connect, LAST_PREPARED};
use tank_mysql::flags::{self, Caps};
use tank_mysql::handshake::{AuthStep, Greeting, Response};
use tank_mysql::packet::{Assembler, Packet, MAX_CHUNK};
use tank_mysql::reply::{self, Outcome, Progress, ReplyReader};
use tank_mysql::tag;

use super::attributes;
use crate::twoway::{Conversation, Request, Said, Skip};

/// The largest command read (the protocol's own limit, `max_allowed_packet` at most 1 GiB).
const MAX_COMMAND: usize = 1 << 30;
/// The largest handshake packet read.
const MAX_HANDSHAKE: usize = 64 << 10;
/// Server bytes held while no command awaits them (a reply to a command
/// whose bytes are still behind a hole).
const MAX_UNCLAIMED: usize = 16 << 20;

/// Where the client's side stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAt {
    /// Its handshake response comes next.
    Response,
    /// Authenticating: its packets are the plugin's, until its first command.
    Auth,
    /// Commands (packets of sequence number 0).
    Commands,
    /// Captured from the middle: looking for the first whole command.
    Sync,
}

/// Where the server's side stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerAt {
    /// Its greeting comes next.
    Greeting,
    /// Authenticating, until its OK or ERR.
    Auth,
    /// Replies to commands, in order.
    Replies,
    /// Not read: before a mid-stream connection's first command, after a
    /// gap or a reply that cannot be followed, after a refused login.
    Ignored,
}

/// A command waiting for its reply.
struct Awaiting {
    reader: ReplyReader,
    command: Command,
    /// For a prepare: its number in the session and its statement's tag
    /// (`SELECT items`: its executions' tag).
    prepare: Option<(u32, Vec<u8>)>,
}

/// A command read, not yet handed out (it names a statement whose
/// prepare's reply has not come yet, or one is before it).
struct Pending {
    at_us: u64,
    command: Command,
    payload: Vec<u8>,
    tag: Vec<u8>,
    /// The captured id of the statement it names.
    statement: Option<u32>,
}

/// A statement the captured server prepared.
struct Statement {
    /// Its number in the session.
    number: u32,
    params: u16,
    tag: Vec<u8>,
}

/// One connection (see the module docs).
pub(crate) struct MysqlConversation {
    /// Whether the connection is known to be MySQL's (its port, or a greeting).
    decided: bool,
    client_at: ClientAt,
    server_at: ServerAt,
    client_packets: Assembler,
    /// The capture time of the first byte of the client packet being read.
    packet_at: Option<u64>,
    server_packets: Assembler,
    greeting: Option<(Greeting, u64)>,
    response: Option<Response>,
    /// The `CONNECT`, held until the server says whether the login succeeded
    /// (a login it refused is no session to replay), or the client's first command.
    connect: Option<Request>,
    options: reply::Options,
    query_attributes: bool,
    /// The session's schema as the client last chose it (the login's, a
    /// `COM_INIT_DB`'s or a `USE`'s; empty: none or not seen): a table in it
    /// is tagged without it.
    schema: Vec<u8>,
    awaiting: VecDeque<Awaiting>,
    unclaimed: Vec<u8>,
    pending: VecDeque<Pending>,
    statements: HashMap<u32, Statement>,
    prepares: u32,
    /// Commands left out: naming a statement never seen prepared; carrying attributes.
    unknown_statements: u64,
    with_attributes: u64,
    local_infile_said: bool,
    /// A mid-stream connection's bytes skipped before its first command.
    skipped_bytes: u64,
}

impl MysqlConversation {
    /// A connection whose server port says it is MySQL's (`by_port`) or
    /// not; `syn` says whether its start was captured.
    pub(crate) fn new(by_port: bool, syn: bool) -> Self {
        let mid_stream = !syn;
        MysqlConversation {
            decided: by_port,
            client_at: if mid_stream {
                ClientAt::Sync
            } else {
                ClientAt::Response
            },
            server_at: if mid_stream {
                ServerAt::Ignored
            } else {
                ServerAt::Greeting
            },
            client_packets: Assembler::new(MAX_COMMAND),
            packet_at: None,
            server_packets: Assembler::new(MAX_HANDSHAKE),
            greeting: None,
            response: None,
            connect: None,
            // Unknown without the handshake: learnt from the replies.
            options: reply::Options {
                deprecate_eof: None,
                cache_metadata: false,
                local_infile: true,
            },
            query_attributes: false,
            schema: Vec::new(),
            awaiting: VecDeque::new(),
            unclaimed: Vec::new(),
            pending: VecDeque::new(),
            statements: HashMap::new(),
            prepares: 0,
            unknown_statements: 0,
            with_attributes: 0,
            local_infile_said: false,
            skipped_bytes: 0,
        }
    }

    /// The client's handshake response: the connection's `CONNECT`.
    fn response(&mut self, packet: &Packet, at_us: u64) -> Result<(), Skip> {
        let response = Response::parse(&packet.payload)
            .map_err(|why| Skip::Rest(format!("its handshake response cannot be read ({why})")))?;
        if response.ssl_request {
            return Err(Skip::Unreadable {
                kind: "TLS",
                why: "the client started TLS (an SSL request after the greeting)".into(),
            });
        }
        let server_caps = self.greeting.as_ref().map_or(!0, |(g, _)| g.caps);
        let agreed: Caps = response.caps & server_caps;
        if agreed & (flags::COMPRESS | flags::ZSTD) != 0 {
            return Err(Skip::Unreadable {
                kind: "compressed",
                why: "the client and the server agreed on compression".into(),
            });
        }
        self.options = reply::Options::from_caps(agreed);
        self.query_attributes = agreed & flags::QUERY_ATTRIBUTES != 0;
        let connect = Connect {
            caps: response.caps,
            collation: response.collation,
            schema: response.schema.clone(),
        };
        self.schema.clone_from(&response.schema);
        self.connect = Some(Request {
            at_us: self.greeting.as_ref().map_or(at_us, |(_, at)| *at),
            tag: Command::Connect.name().as_bytes().to_vec(),
            bytes: connect.encode(),
        });
        self.response = Some(response);
        self.client_at = ClientAt::Auth;
        Ok(())
    }

    /// Hand out the `CONNECT` held for the login's outcome.
    fn connected(&mut self, said: &mut Said) {
        if let Some(connect) = self.connect.take() {
            said.requests.push(connect);
        }
    }

    /// A command (a client packet of sequence number 0).
    fn command(&mut self, payload: Vec<u8>, at_us: u64, said: &mut Said) -> Result<(), Skip> {
        // The login's OK was not captured, but the client goes on.
        self.connected(said);
        let Some(&byte) = payload.first() else {
            return Err(Skip::Rest("an empty command".into()));
        };
        let command = match Command::from_byte(byte) {
            Some(command) if command != Command::Connect => command,
            _ => {
                return Err(Skip::Rest(format!(
                    "command COM_{} (0x{byte:02x}), which a replay cannot follow",
                    byte_name(byte)
                )))
            }
        };
        // The reply's first packet follows the command's own (one per 16 MiB).
        let reply_seq = (payload.len() / MAX_CHUNK + 1) as u8;
        if command.answer() != command::Answer::Nothing {
            let prepare = (command == Command::StmtPrepare).then(|| {
                self.prepares += 1;
                (
                    self.prepares,
                    tag::statement_in(&payload[1..], &self.schema),
                )
            });
            self.awaiting.push_back(Awaiting {
                reader: ReplyReader::new(command, self.options, reply_seq),
                command,
                prepare,
            });
        }
        let payload = match command {
            Command::Query if self.query_attributes => match attributes::plain_query(&payload) {
                Ok(plain) => plain,
                Err(_) => {
                    self.with_attributes += 1;
                    self.drain_unclaimed(said);
                    return Ok(());
                }
            },
            _ => payload,
        };
        let sql = &payload[1..];
        let tag = match command {
            Command::Query => tag::statement_in(sql, &self.schema),
            Command::StmtPrepare => {
                [&b"PREPARE "[..], &tag::statement_in(sql, &self.schema)].concat()
            }
            other => other.name().as_bytes().to_vec(),
        };
        match command {
            Command::InitDb => self.schema = sql.to_vec(),
            Command::Query => {
                if let Some(schema) = tag::used_schema(sql) {
                    self.schema = schema;
                }
            }
            _ => {}
        }
        let statement = command
            .names_statement()
            .then(|| command::statement_id(&payload))
            .flatten();
        self.pending.push_back(Pending {
            at_us,
            command,
            payload,
            tag,
            statement,
        });
        self.drain_unclaimed(said);
        self.release(said);
        Ok(())
    }

    /// Hand out the pending commands, in order, as far as their statements are known.
    fn release(&mut self, said: &mut Said) {
        while let Some(front) = self.pending.front_mut() {
            let Some(id) = front.statement.filter(|&id| id != LAST_PREPARED) else {
                if front.statement == Some(LAST_PREPARED) && front.command == Command::StmtExecute {
                    // The statement prepared last: the newest prepare's tag.
                    if let Some(newest) = self.statements.values().max_by_key(|s| s.number) {
                        front.tag = newest.tag.clone();
                    }
                }
                self.hand_out(said);
                continue;
            };
            let Some(statement) = self.statements.get(&id) else {
                if self.awaiting.iter().any(|a| a.prepare.is_some()) {
                    // Its prepare's reply may still say.
                    return;
                }
                self.unknown_statements += 1;
                self.pending.pop_front();
                continue;
            };
            command::set_statement_id(&mut front.payload, statement.number);
            if front.command == Command::StmtExecute {
                front.tag = statement.tag.clone();
                if self.query_attributes {
                    match attributes::plain_execute(&front.payload, statement.params) {
                        Ok(plain) => front.payload = plain,
                        Err(_) => {
                            self.with_attributes += 1;
                            self.pending.pop_front();
                            continue;
                        }
                    }
                }
            }
            self.hand_out(said);
        }
    }

    fn hand_out(&mut self, said: &mut Said) {
        if let Some(pending) = self.pending.pop_front() {
            said.requests.push(Request {
                at_us: pending.at_us,
                tag: pending.tag,
                bytes: pending.payload,
            });
        }
    }

    /// The server's replies to the awaiting commands.
    fn replies(&mut self, bytes: &[u8], said: &mut Said) {
        let mut rest = bytes;
        while !rest.is_empty() && self.server_at == ServerAt::Replies {
            let Some(front) = self.awaiting.front_mut() else {
                if self.unclaimed.len() + rest.len() > MAX_UNCLAIMED {
                    self.server_lost("the server sent bytes no command awaits", said);
                } else {
                    self.unclaimed.extend_from_slice(rest);
                }
                return;
            };
            let (used, progress) = front.reader.feed(rest);
            rest = &rest[used..];
            match progress {
                Progress::More => {}
                Progress::Whole(outcome) => {
                    if let Some(awaiting) = self.awaiting.pop_front() {
                        self.replied(awaiting, &outcome, said);
                    }
                }
                Progress::Broken(why) => {
                    let command = front.command.name();
                    self.server_lost(&format!("the server's reply to a {command} ({why})"), said);
                }
            }
        }
    }

    /// Server bytes that came before the command they answer.
    fn drain_unclaimed(&mut self, said: &mut Said) {
        if !self.unclaimed.is_empty() {
            let unclaimed = std::mem::take(&mut self.unclaimed);
            self.replies(&unclaimed, said);
        }
    }

    fn replied(&mut self, awaiting: Awaiting, outcome: &Outcome, said: &mut Said) {
        if outcome.deprecate_eof.is_some() {
            self.options.deprecate_eof = outcome.deprecate_eof;
        }
        if outcome.local_infile && !self.local_infile_said {
            self.local_infile_said = true;
            said.warnings.push(
                "LOAD DATA LOCAL INFILE: the file the client sent is not imported, so a \
                 replay's server refuses the command (the gun offers no local files)"
                    .into(),
            );
        }
        if let (Some((number, tag)), Some(prepared)) = (awaiting.prepare, outcome.prepared) {
            self.statements.insert(
                prepared.statement,
                Statement {
                    number,
                    params: prepared.params,
                    tag,
                },
            );
        }
        self.release(said);
    }

    /// A server packet of the handshake.
    fn handshake(&mut self, packet: Packet, at_us: u64, said: &mut Said) -> Result<(), Skip> {
        match self.server_at {
            ServerAt::Greeting => {
                if packet.payload.first() == Some(&0xFF) {
                    let code = match AuthStep::parse(&packet.payload) {
                        Ok(AuthStep::Err(code, _)) => code,
                        _ => 0,
                    };
                    return Err(Skip::Refused(format!(
                        "the server refused it before its greeting (error {code})"
                    )));
                }
                let greeting = Greeting::parse(&packet.payload).map_err(|why| {
                    if self.decided {
                        Skip::Rest(format!("its greeting cannot be read ({why})"))
                    } else {
                        Skip::NotOurs
                    }
                })?;
                self.decided = true;
                self.greeting = Some((greeting, at_us));
                self.server_at = ServerAt::Auth;
            }
            ServerAt::Auth => match AuthStep::parse(&packet.payload) {
                Ok(AuthStep::Ok) => {
                    self.server_at = ServerAt::Replies;
                    self.connected(said);
                }
                // The login failed: a replay would log in (as [mysql] user)
                // where the capture did not, so the connection is left out.
                Ok(AuthStep::Err(code, message)) => {
                    self.server_at = ServerAt::Ignored;
                    self.connect = None;
                    let message: String = message
                        .chars()
                        .take(80)
                        .map(|c| if c.is_control() { '_' } else { c })
                        .collect();
                    return Err(Skip::Refused(format!(
                        "the server refused its login (error {code}: {message})"
                    )));
                }
                Ok(AuthStep::Switch { .. } | AuthStep::More(_)) => {}
                Err(why) => {
                    return Err(Skip::Rest(format!(
                        "its authentication cannot be followed ({why})"
                    )))
                }
            },
            ServerAt::Replies | ServerAt::Ignored => {}
        }
        Ok(())
    }

    /// A mid-stream connection: whether `bytes` (a run of the client's
    /// stream) starts with a whole command, at a packet's start.
    fn starts_command(bytes: &[u8]) -> bool {
        let Some(header) = bytes.get(..5) else {
            return false;
        };
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        let known = Command::from_byte(header[4]).is_some_and(|c| c != Command::Connect);
        if header[3] != 0 || len == 0 || !known {
            return false;
        }
        // Another command right after it must look like one too.
        match bytes.get(4 + len..) {
            None | Some([]) => true,
            Some(next) => next.len() >= 4 && next[3] == 0,
        }
    }
}

/// `1 command carried`, `2 commands carried`.
fn commands_that(n: u64, verb: &str) -> String {
    format!("{} {verb}", tank_plan::words::count(n, "command"))
}

/// `it is`, `they are`.
fn they(n: u64) -> &'static str {
    if n == 1 {
        "it is"
    } else {
        "they are"
    }
}

/// Whether `header` may start a handshake response: the packet after the
/// greeting (sequence number 1), of a handshake packet's size.
fn is_response_header(header: &[u8]) -> bool {
    let len = header
        .iter()
        .take(3)
        .rev()
        .fold(0usize, |len, &b| len << 8 | usize::from(b));
    header.get(3) == Some(&1) && len > 0 && len <= MAX_HANDSHAKE
}

impl Conversation for MysqlConversation {
    fn client(&mut self, bytes: &[u8], at_us: u64, said: &mut Said) -> Result<(), Skip> {
        if !self.decided {
            // The client spoke first: not MySQL, whose server greets first.
            return Err(Skip::NotOurs);
        }
        if self.client_at == ClientAt::Response
            && self.greeting.is_none()
            && self.client_packets.partial_len() == 0
            && bytes.get(..4).is_some_and(|h| !is_response_header(h))
        {
            // On the MySQL port all the same: said, not read as a handshake.
            // (A response whose greeting was not captured is still read.)
            return Err(Skip::Rest(
                "the client spoke first, and not a handshake response: not MySQL, whose \
                 server greets first"
                    .into(),
            ));
        }
        let mut rest = bytes;
        if self.client_at == ClientAt::Sync {
            if !Self::starts_command(bytes) {
                self.skipped_bytes += bytes.len() as u64;
                return Ok(());
            }
            let skipped = match self.skipped_bytes {
                0 => "it starts at a whole command".to_owned(),
                1 => "its first byte, before its first whole command, is skipped".to_owned(),
                n => format!("its first {n} bytes, before its first whole command, are skipped"),
            };
            said.warnings.push(format!(
                "captured from its middle (no handshake): {skipped}; it replays with [mysql] \
                 database for its schema, and without the statements it prepared before"
            ));
            self.client_at = ClientAt::Commands;
            self.server_at = ServerAt::Replies;
        }
        while !rest.is_empty() {
            if self.client_packets.partial_len() == 0 {
                self.packet_at = Some(at_us);
            }
            let (used, packet) = self.client_packets.next(rest).map_err(|too_large| {
                Skip::Rest(format!(
                    "a client packet of {} bytes or more, above the protocol's 1 GiB",
                    too_large.len
                ))
            })?;
            rest = &rest[used..];
            let Some(packet) = packet else { continue };
            let at_us = self.packet_at.take().unwrap_or(at_us);
            match self.client_at {
                ClientAt::Response => self.response(&packet, at_us)?,
                ClientAt::Auth | ClientAt::Commands if packet.seq == 0 => {
                    self.client_at = ClientAt::Commands;
                    self.command(packet.payload, at_us, said)?;
                }
                // The auth plugin's data, or a local file's: not commands.
                ClientAt::Auth | ClientAt::Commands | ClientAt::Sync => {}
            }
        }
        Ok(())
    }

    fn server(&mut self, bytes: &[u8], at_us: u64, said: &mut Said) -> Result<(), Skip> {
        let mut rest = bytes;
        while !rest.is_empty() {
            match self.server_at {
                ServerAt::Greeting | ServerAt::Auth => {
                    let (used, packet) = self.server_packets.next(rest).map_err(|_| {
                        if self.decided {
                            Skip::Rest("a handshake packet over 64 KiB".into())
                        } else {
                            Skip::NotOurs
                        }
                    })?;
                    rest = &rest[used..];
                    if let Some(packet) = packet {
                        self.handshake(packet, at_us, said)?;
                    }
                }
                ServerAt::Replies => {
                    self.replies(rest, said);
                    return Ok(());
                }
                ServerAt::Ignored => return Ok(()),
            }
        }
        Ok(())
    }

    fn server_lost(&mut self, why: &str, said: &mut Said) {
        if self.server_at == ServerAt::Ignored {
            return;
        }
        self.server_at = ServerAt::Ignored;
        self.unclaimed.clear();
        // Whether the login succeeded will not be known: taken as it was made.
        self.connected(said);
        if self.awaiting.iter().any(|a| a.prepare.is_some()) || self.prepares > 0 {
            said.warnings.push(format!(
                "{why}: its replies are read no further, so the statements it prepares from \
                 here on cannot be mapped"
            ));
        }
        self.awaiting.clear();
        self.release(said);
    }

    fn hold_us(&self) -> Option<u64> {
        let connect = match (self.client_at, &self.greeting, &self.connect) {
            (_, _, Some(connect)) => Some(connect.at_us),
            (ClientAt::Response, Some((_, at)), _) => Some(*at),
            _ => None,
        };
        let reading = (self.client_packets.partial_len() > 0)
            .then_some(self.packet_at)
            .flatten();
        [connect, reading, self.pending.front().map(|p| p.at_us)]
            .into_iter()
            .flatten()
            .min()
    }

    fn cut(&mut self, said: &mut Said) {
        // Whether the login succeeded will not be known: taken as it was made.
        self.connected(said);
    }

    fn close(&mut self, said: &mut Said) {
        // The login's outcome was not captured: taken as it was made.
        self.connected(said);
        // No more replies: what waits for one waits for nothing.
        self.awaiting.clear();
        self.release(said);
        if !self.decided {
            return;
        }
        if self.client_at == ClientAt::Sync && self.skipped_bytes > 0 {
            said.warnings.push(format!(
                "captured from its middle (no handshake), and none of its {} bytes starts a \
                 whole command: skipped",
                self.skipped_bytes
            ));
        }
        if self.client_packets.partial_len() > 0 {
            said.warnings.push(format!(
                "ends inside a command ({} bytes); that command is dropped",
                self.client_packets.partial_len()
            ));
        }
        if self.unknown_statements > 0 {
            said.warnings.push(format!(
                "{} a prepared statement whose prepare was not captured (before the \
                 capture began, or its reply was lost): {} left out",
                commands_that(self.unknown_statements, "named"),
                they(self.unknown_statements),
            ));
        }
        if self.with_attributes > 0 {
            said.warnings.push(format!(
                "{} query attributes, which a replay does not send: {} left out",
                commands_that(self.with_attributes, "carried"),
                they(self.with_attributes),
            ));
        }
    }

    fn who(&self) -> Option<String> {
        let response = self.response.as_ref()?;
        let clean = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .chars()
                .map(|c| if c.is_control() { '_' } else { c })
                .collect::<String>()
        };
        let mut who = clean(&response.user);
        if !response.schema.is_empty() {
            who.push('@');
            who.push_str(&clean(&response.schema));
        }
        Some(who)
    }
}
