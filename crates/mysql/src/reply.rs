//! A reply's framing: fed the server's bytes after a command, it says where
//! the reply ends and what it said (OK, or the error's number; a prepared
//! statement's id), reading only the packets' heads (see
//! [`crate::packet::Splitter`]), so a result set of any size streams through.
//!
//! - **One packet** (`COM_PING`, `COM_INIT_DB`, …): OK, EOF, ERR or a line.
//! - **Result sets** (`COM_QUERY`, `COM_STMT_EXECUTE`): OK, ERR, or a column
//!   count, the columns' definitions, an EOF (unless `CLIENT_DEPRECATE_EOF`),
//!   the rows, and a terminator — an EOF packet (`0xFE`, under 9 bytes), or
//!   with `CLIENT_DEPRECATE_EOF` an OK packet headed `0xFE` (under 16 MiB;
//!   a row starting `0xFE` is longer). ERR may end it mid-rows. An OK or a
//!   terminator whose status says more results exist is followed by the next
//!   result. An EOF after the columns whose status says a cursor is open ends
//!   the result (the rows come by `COM_STMT_FETCH`). MariaDB's
//!   `CACHE_METADATA` may leave an execute's column definitions out (a flag
//!   byte after the count says which).
//! - **Rows** (`COM_STMT_FETCH`): rows and a terminator, or ERR.
//! - **A prepared statement** (`COM_STMT_PREPARE`): ERR, or an OK with the
//!   statement's id and its parameter and column counts, then that many
//!   definitions of each, each group followed by an EOF unless
//!   `CLIENT_DEPRECATE_EOF`.
//! - **Column definitions** (`COM_FIELD_LIST`): definitions and a terminator, or ERR.
//!
//! MariaDB's progress reports (an ERR of code 0xFFFF, sent when the client
//! asked for them) are skipped. Every packet's sequence number must follow the
//! one before; a reply that breaks a rule is [`Progress::Broken`], with why.
//! `LOAD DATA LOCAL INFILE` (a `0xFB` answer to a query: the server asks for
//! a file) is followed only when [`Options::local_infile`] says the client
//! may send one (an importer reading both sides); the reply's last packet then
//! comes after the client's file.

use crate::command::{Answer, Command};
use crate::flags::{self, Caps, Status};
use crate::packet::{Head, PacketHead, Reader, Splitter, MAX_CHUNK};

/// MariaDB's progress report: an ERR packet of this code, not an error.
const PROGRESS: u16 = 0xFFFF;

/// What a connection agreed on that changes how replies are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// `CLIENT_DEPRECATE_EOF`: result sets end with an OK packet. `None`
    /// when the handshake was not seen (a connection captured from its
    /// middle): learnt from the first packet that tells (an EOF, or not, after
    /// the columns or parameters), and taken to be `false` where none has yet.
    pub deprecate_eof: Option<bool>,
    /// `MARIADB_CLIENT_CACHE_METADATA`: an execute may omit column definitions.
    pub cache_metadata: bool,
    /// The client may answer `LOAD DATA LOCAL INFILE` (its file is not part of the reply).
    pub local_infile: bool,
}

impl Options {
    /// The framing a connection's agreed capabilities (client's ∩ server's) make.
    pub fn from_caps(agreed: Caps) -> Self {
        Options {
            deprecate_eof: Some(agreed & flags::DEPRECATE_EOF != 0),
            cache_metadata: agreed & flags::MARIADB_CACHE_METADATA != 0,
            local_infile: agreed & flags::LOCAL_FILES != 0,
        }
    }
}

/// A prepared statement, as the server's OK to `COM_STMT_PREPARE` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prepared {
    /// The id the server gave it.
    pub statement: u32,
    /// Its parameters.
    pub params: u16,
    /// Its result's columns.
    pub columns: u16,
}

/// What a whole reply said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The error's number, when the server answered ERR.
    pub error: Option<u16>,
    /// The statement prepared, for `COM_STMT_PREPARE`'s OK.
    pub prepared: Option<Prepared>,
    /// The server asked for a local file (`LOAD DATA LOCAL INFILE`).
    pub local_infile: bool,
    /// `CLIENT_DEPRECATE_EOF` as known at the reply's end (learnt, when the
    /// reader was not told).
    pub deprecate_eof: Option<bool>,
}

/// Where a reply stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More is to come.
    More,
    /// The reply is whole.
    Whole(Outcome),
    /// The bytes are not such a reply: why.
    Broken(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A result's first packet (or a one-packet reply).
    First,
    /// Column definitions of a result set: this many left.
    Columns { left: u64 },
    /// The EOF after a result set's columns.
    ColumnsEof,
    /// After a result set's columns, not knowing whether an EOF follows.
    ColumnsEofOrRows,
    /// Rows, until their terminator.
    Rows,
    /// The last packet of a `LOAD DATA LOCAL` exchange (after the client's file).
    InfileEnd,
    /// A prepared statement's parameter definitions, then `columns`.
    Params { left: u16, columns: u16 },
    /// The EOF after its parameters.
    ParamsEof { columns: u16 },
    /// After its parameters, not knowing whether an EOF follows.
    ParamsEofOrColumns { columns: u16 },
    /// Its column definitions.
    PreparedColumns { left: u16 },
    /// The EOF after them.
    PreparedColumnsEof,
    /// `COM_FIELD_LIST`'s definitions, until their terminator.
    FieldList,
    /// Whole.
    Done,
}

/// One reply being read (see the module docs).
#[derive(Debug, Clone)]
pub struct ReplyReader {
    command: Command,
    options: Options,
    state: State,
    splitter: Splitter,
    /// The next packet's sequence number (`None`: any, after a client's file).
    seq: Option<u8>,
    outcome: Outcome,
}

impl ReplyReader {
    /// The reply to `command` under `options`; its first packet has
    /// sequence number `first_seq` (1 after a one-packet command).
    pub fn new(command: Command, options: Options, first_seq: u8) -> Self {
        let state = match command.answer() {
            Answer::Prepare | Answer::FieldList | Answer::OnePacket | Answer::ResultSets => {
                State::First
            }
            Answer::Rows => State::Rows,
            Answer::Nothing | Answer::Handshake => State::Done,
        };
        ReplyReader {
            command,
            options,
            state,
            splitter: Splitter::default(),
            seq: Some(first_seq),
            outcome: Outcome::default(),
        }
    }

    /// Whole before any byte is read: the command has no reply.
    pub fn whole_unread(&self) -> Option<Outcome> {
        (self.state == State::Done).then_some(self.outcome)
    }

    /// Feed the server's bytes up to the reply's end: the bytes taken (the
    /// rest belong to what follows), and where the reply stands.
    pub fn feed(&mut self, data: &[u8]) -> (usize, Progress) {
        let mut used = 0;
        while self.state != State::Done {
            if used == data.len() {
                return (used, Progress::More);
            }
            let rest = &data[used..];
            let gathered: PacketHead;
            // A packet whole in this read (a small reply's usually are) is
            // read in place; the splitter gathers one the read cut.
            let packet = match Head::whole(rest).filter(|_| self.splitter.between_packets()) {
                Some((took, head)) => {
                    used += took;
                    head
                }
                None => {
                    let (took, packet) = self.splitter.next(rest);
                    used += took;
                    let Some(packet) = packet else {
                        continue;
                    };
                    gathered = packet;
                    gathered.view()
                }
            };
            if let Some(expected) = self.seq {
                if packet.seq != expected {
                    return (used, Progress::Broken("a packet out of sequence"));
                }
            }
            self.seq = Some(packet.seq.wrapping_add(1));
            if let Err(why) = self.packet(&packet) {
                return (used, Progress::Broken(why));
            }
        }
        self.outcome.deprecate_eof = self.options.deprecate_eof;
        (used, Progress::Whole(self.outcome))
    }

    /// Whether `CLIENT_DEPRECATE_EOF` is known to be on.
    fn deprecate_eof(&self) -> bool {
        self.options.deprecate_eof == Some(true)
    }

    /// The error number read so far (kept when the reply breaks later).
    pub fn error_so_far(&self) -> Option<u16> {
        self.outcome.error
    }

    fn packet(&mut self, packet: &Head<'_>) -> Result<(), &'static str> {
        let first = packet.first();
        // No definition or row starts 0xFF (a lenenc never does; binary rows start 0x00).
        if first == Some(0xFF) {
            let code = Reader::new(&packet.head()[1..])
                .u16()
                .ok_or("an ERR packet too short for its code")?;
            if code != PROGRESS {
                self.outcome.error = Some(code);
                self.state = State::Done;
            }
            return Ok(());
        }
        self.state = match self.state {
            State::First => self.first(packet)?,
            State::Columns { left } => match left {
                0 | 1 => self.after_columns(),
                _ => State::Columns { left: left - 1 },
            },
            State::ColumnsEof => {
                let status = eof_status(packet).ok_or("expected an EOF after the columns")?;
                self.after_columns_eof(status)
            }
            State::ColumnsEofOrRows => match eof_status(packet) {
                Some(status) => {
                    self.options.deprecate_eof = Some(false);
                    self.after_columns_eof(status)
                }
                None => {
                    self.options.deprecate_eof = Some(true);
                    self.state = State::Rows;
                    return self.packet(packet);
                }
            },
            State::Rows | State::FieldList => match self.terminator_status(packet) {
                Some(status) => self.next_result(status),
                None if self.state == State::FieldList && first != Some(0x03) => {
                    return Err("expected a column definition or the terminator")
                }
                None => self.state,
            },
            State::InfileEnd => match first {
                Some(0x00) => self.next_result(ok_status(packet).ok_or("a short OK packet")?),
                _ => return Err("expected OK or ERR after the client's file"),
            },
            State::Params { left, columns } => match left {
                1 if self.deprecate_eof() => prepared_columns(columns),
                1 if self.options.deprecate_eof.is_none() && columns > 0 => {
                    State::ParamsEofOrColumns { columns }
                }
                1 => State::ParamsEof { columns },
                _ => State::Params {
                    left: left - 1,
                    columns,
                },
            },
            State::ParamsEof { columns } => {
                eof_status(packet).ok_or("expected an EOF after the parameters")?;
                prepared_columns(columns)
            }
            State::ParamsEofOrColumns { columns } => match eof_status(packet) {
                Some(_) => {
                    self.options.deprecate_eof = Some(false);
                    prepared_columns(columns)
                }
                // The first column's definition: no EOF came.
                None => {
                    self.options.deprecate_eof = Some(true);
                    match columns {
                        0 | 1 => State::Done,
                        _ => State::PreparedColumns { left: columns - 1 },
                    }
                }
            },
            State::PreparedColumns { left } => match left {
                1 if self.deprecate_eof() => State::Done,
                1 => State::PreparedColumnsEof,
                _ => State::PreparedColumns { left: left - 1 },
            },
            State::PreparedColumnsEof => {
                eof_status(packet).ok_or("expected an EOF after the columns")?;
                State::Done
            }
            State::Done => State::Done,
        };
        Ok(())
    }

    /// A result's first packet.
    fn first(&mut self, packet: &Head<'_>) -> Result<State, &'static str> {
        let answer = self.command.answer();
        if answer == Answer::OnePacket {
            return Ok(State::Done);
        }
        match (answer, packet.first()) {
            (Answer::Prepare, Some(0x00)) => {
                let mut reader = Reader::new(&packet.head()[1..]);
                let statement = reader.u32().ok_or("a short prepared statement OK")?;
                let columns = reader.u16().ok_or("a short prepared statement OK")?;
                let params = reader.u16().ok_or("a short prepared statement OK")?;
                self.outcome.prepared = Some(Prepared {
                    statement,
                    params,
                    columns,
                });
                Ok(match params {
                    0 => prepared_columns(columns),
                    _ => State::Params {
                        left: params,
                        columns,
                    },
                })
            }
            (Answer::Prepare, _) => Err("expected the prepared statement's OK or ERR"),
            (Answer::FieldList, Some(0x03)) => Ok(State::FieldList),
            (Answer::FieldList, _) => Ok(match self.terminator_status(packet) {
                Some(status) => self.next_result(status),
                None => return Err("expected a column definition or the terminator"),
            }),
            (_, Some(0x00)) => Ok(self.next_result(ok_status(packet).ok_or("a short OK packet")?)),
            (_, Some(0xFB)) if self.options.local_infile => {
                self.outcome.local_infile = true;
                // The client's file comes between: its packets continue the sequence.
                self.seq = None;
                Ok(State::InfileEnd)
            }
            (_, Some(0xFB)) => Err("the server asked for a local file, which was not offered"),
            (_, _) => {
                let mut reader = Reader::new(packet.head());
                let columns = reader.lenenc().ok_or("expected a column count")?;
                if columns == 0 {
                    return Err("a result set of no columns");
                }
                let binary = matches!(
                    self.command,
                    Command::StmtExecute | Command::StmtBulkExecute
                );
                let metadata = !(binary && self.options.cache_metadata) || reader.u8() != Some(0);
                Ok(if metadata {
                    State::Columns { left: columns }
                } else {
                    self.after_columns()
                })
            }
        }
    }

    fn after_columns(&self) -> State {
        match self.options.deprecate_eof {
            Some(true) => State::Rows,
            Some(false) => State::ColumnsEof,
            None => State::ColumnsEofOrRows,
        }
    }

    /// The EOF after a result set's columns said `status`: the rows, or (a
    /// cursor was opened) the result's end.
    fn after_columns_eof(&self, status: Status) -> State {
        if status & flags::CURSOR_EXISTS != 0 {
            self.next_result(status)
        } else {
            State::Rows
        }
    }

    /// The result ended with `status`: the next one, or the reply's end.
    fn next_result(&self, status: Status) -> State {
        if status & flags::MORE_RESULTS_EXISTS != 0 && self.command.answer() == Answer::ResultSets {
            State::First
        } else {
            State::Done
        }
    }

    /// The status of a rows' terminator, `None` for a row.
    fn terminator_status(&self, packet: &Head<'_>) -> Option<Status> {
        if packet.first() != Some(0xFE) {
            return None;
        }
        if packet.len < 9 {
            if let Some(status) = eof_status(packet) {
                return Some(status);
            }
        }
        if self.options.deprecate_eof != Some(false) && packet.len < MAX_CHUNK {
            return ok_status(packet);
        }
        None
    }
}

/// After a prepared statement's parameters: its columns, or the end.
fn prepared_columns(columns: u16) -> State {
    match columns {
        0 => State::Done,
        left => State::PreparedColumns { left },
    }
}

/// An EOF packet's status (`0xFE`, warnings, status: 5 bytes).
fn eof_status(packet: &Head<'_>) -> Option<Status> {
    if packet.first() != Some(0xFE) || packet.len != 5 {
        return None;
    }
    let mut reader = Reader::new(&packet.head()[3..]);
    reader.u16()
}

/// An OK packet's status (its header, affected rows, last insert id, status).
fn ok_status(packet: &Head<'_>) -> Option<Status> {
    let mut reader = Reader::new(packet.head().get(1..)?);
    reader.lenenc()?;
    reader.lenenc()?;
    reader.u16()
}

#[cfg(test)]
mod tests;
