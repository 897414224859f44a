//! MySQL (`tank_type = mysql`): a replayed session's commands over one
//! logged-in connection, each answered before the next is sent.
//!
//! Its own module, not a member of [`super::wire`], though it shares the
//! wire family's connection (`wire::conn`) and fill rule: a wire protocol says
//! only how a reply is framed, and MySQL needs more of the barrel — a login
//! after connecting (the greeting, TLS started inside the handshake, an auth
//! plugin's exchange), requests rewritten before they go out (a prepared
//! statement is named by the server's id, which a replay's server gives anew),
//! and state kept per session (those ids).
//!
//! What a request is, and what becomes of it (see `tank_mysql::command`):
//! - **`CONNECT`** (the session's first request): the connection and login,
//!   with the schema the captured client used (or `[mysql] database`) and the
//!   captured client's session capabilities (several statements per query,
//!   found rows, …). Its row's connect time is the whole login.
//! - **Any other command**: its payload goes out as packets; a connection is
//!   opened first when there is none (a session captured without its
//!   handshake, or after a failure), its login in the request's connect time —
//!   except for `COM_QUIT`, which then goes nowhere (the session has already
//!   ended): its row is a 200 with no bytes out.
//!   A statement's number in the session is replaced by the id the server gave
//!   the prepare of that number (0, which no statement has, when that prepare
//!   failed: the server answers error 1243).
//!
//! Codes: proto code 200 when the server answered OK or with rows, the
//! server's error number (1064, 1146, …; 1045 for a refused login) when it
//! answered ERR. Net codes as every gun's: the errno, 110 when the budget ran
//! out, 71 when the reply cannot be read — also for a login the gun cannot
//! complete (an auth plugin it does not speak, TLS the server does not offer):
//! the first such problem is kept ([`MysqlGun::problem`]) for the run to say
//! once. A command is never sent twice: a closed connection found while
//! sending one is that command's error, and the next one connects anew.

mod login;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tank_mysql::command::{self, Connect, LAST_PREPARED};
use tank_mysql::reply::{Outcome, Progress, ReplyReader};
use tank_mysql::{packet, Command};
use tank_stats::{micros, Measured, NetCode};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::measure::{fill, Marks, ShotProgress};
use super::wire::budget::Budget;
use super::wire::conn::{Conn, WriteError};
use super::{Barrel, Gun, Placement};
use crate::target::Target;

/// Proto code of a command the server answered with OK or rows.
pub const OK: u16 = 200;

/// Who a replay logs in as (`[mysql]`).
#[derive(Debug, Clone)]
pub struct Credentials {
    /// `user`.
    pub user: String,
    /// The password (from `password` or `password_env`).
    pub password: String,
    /// `database`: every connection's schema (`None`: the captured one).
    pub database: Option<String>,
}

/// A `tank_type = mysql` queue's gun.
pub struct MysqlGun {
    target: Target,
    /// `[mysql] ssl`: TLS after the greeting.
    tls: Option<TlsConnector>,
    credentials: Credentials,
    timeout: Duration,
    sources: Vec<IpAddr>,
    problem: Mutex<Option<String>>,
}

impl MysqlGun {
    /// A gun logging in to `target` as `credentials`, starting TLS in the
    /// handshake when `tls` is set, each command within `timeout`, from
    /// `sources` round-robin (none: the kernel's choice).
    pub fn new(
        target: Target,
        tls: Option<Arc<rustls::ClientConfig>>,
        credentials: Credentials,
        timeout: Duration,
        sources: Vec<IpAddr>,
    ) -> Self {
        MysqlGun {
            target,
            tls: tls.map(TlsConnector::from),
            credentials,
            timeout,
            sources,
            problem: Mutex::new(None),
        }
    }

    /// The endpoint shot at.
    pub fn endpoint(&self) -> SocketAddr {
        self.target.addr
    }

    /// The per-command budget.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The first login problem, for the run to say once: one no server
    /// reply explains (an auth plugin tank does not speak, TLS not offered, …;
    /// its rows have net code 71), or the server's refusal in its own words
    /// (its rows have only its number, 1045).
    pub fn problem(&self) -> Option<String> {
        self.problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn note_problem(&self, problem: String) {
        let mut slot = self.problem.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(problem);
        }
    }

    /// An instance's barrel; `index` picks its source address round-robin.
    pub fn instance(self: &Arc<Self>, index: usize) -> MysqlBarrel {
        let source = (!self.sources.is_empty()).then(|| self.sources[index % self.sources.len()]);
        MysqlBarrel {
            gun: Arc::clone(self),
            source,
            session: None,
            statements: Vec::new(),
            connect: None,
            out: Vec::new(),
            budget: None,
            progress: Arc::default(),
        }
    }
}

impl Gun for MysqlGun {
    type Barrel = MysqlBarrel;

    fn barrel(self: &Arc<Self>, index: usize, _placement: Placement) -> MysqlBarrel {
        self.instance(index)
    }
}

/// A logged-in connection.
struct Session {
    conn: Conn,
    /// How its replies are framed (what the login agreed).
    options: tank_mysql::reply::Options,
}

/// Why a command failed.
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// A network error, or a reply that cannot be read (71).
    Net(NetCode),
    /// The budget ran out.
    Timeout,
}

/// One instance's connection and the session it replays.
pub struct MysqlBarrel {
    gun: Arc<MysqlGun>,
    source: Option<IpAddr>,
    session: Option<Session>,
    /// The server's id of each statement this session prepared, by its
    /// number in the session (from 1): `None` where the prepare failed, or
    /// was made on a connection since lost.
    statements: Vec<Option<u32>>,
    /// The session's `CONNECT`: what a reconnect logs in with.
    connect: Option<Connect>,
    /// The packets of the request being sent, its statement named by the server's id.
    out: Vec<u8>,
    /// The commands' timer (see `wire::budget`): one for the barrel's life,
    /// not one per wait.
    budget: Option<Budget>,
    /// The command in flight's marks, for its row if it is abandoned.
    progress: Arc<ShotProgress>,
}

impl MysqlBarrel {
    /// Fire `request` (a command's payload), which started at `start`.
    /// `capture`, when given, collects the reply's bytes (up to its capacity).
    pub async fn fire(
        &mut self,
        request: &[u8],
        start: Instant,
        mut capture: Option<&mut Vec<u8>>,
    ) -> Measured {
        let mut budget = Budget::take(&mut self.budget, start + self.gun.timeout);
        let mut measured = Measured::default();
        let mut marks = Marks::default();
        if let Some(capture) = capture.as_deref_mut() {
            capture.clear();
        }
        let result = self
            .attempt(
                request,
                start,
                &mut budget,
                &mut marks,
                &mut measured,
                capture,
            )
            .await;
        self.budget = Some(budget);
        measured.sends = u8::from(measured.size_out > 0);
        let end_us = match result {
            Ok((code, end_us)) => {
                measured.proto_code = code;
                measured.net_code = NetCode::OK;
                end_us
            }
            Err(failure) => {
                self.lose_connection();
                measured.net_code = match failure {
                    Failure::Net(code) => code,
                    Failure::Timeout => NetCode::TIMED_OUT,
                };
                micros(start.elapsed())
            }
        };
        fill(&mut measured, &marks, end_us, micros(self.gun.timeout));
        measured
    }

    /// Close the connection (the session ended): the next session starts afresh.
    pub fn hang_up(&mut self) {
        self.session = None;
        self.statements.clear();
        self.connect = None;
    }

    /// The connection is gone mid-session: its statements with it.
    fn lose_connection(&mut self) {
        self.session = None;
        self.statements.iter_mut().for_each(|id| *id = None);
    }

    /// One command: its proto code and when it ended (µs from `start`), or
    /// why it failed (`measured.proto_code` then holds the error number read
    /// before it broke, if any).
    ///
    /// The clock is read once per mark: after the write, and at each read
    /// that brings bytes (the first is the first byte's mark, the one that
    /// makes the reply whole its end).
    async fn attempt(
        &mut self,
        request: &[u8],
        start: Instant,
        budget: &mut Budget,
        marks: &mut Marks,
        measured: &mut Measured,
        capture: Option<&mut Vec<u8>>,
    ) -> Result<(u16, u64), Failure> {
        let Some(command) = request.first().copied().and_then(Command::from_byte) else {
            // The plan checks every request; a stray one is a reply never read.
            return Err(Failure::Net(NetCode::PROTOCOL));
        };
        if command == Command::Connect {
            self.hang_up();
            self.connect = Some(Connect::decode(request).ok_or(Failure::Net(NetCode::PROTOCOL))?);
            let refused = self.open(start, budget, marks, measured).await?;
            let connected = marks.connected;
            (marks.sent, marks.first_byte) = (connected, connected);
            return Ok((refused.unwrap_or(OK), connected.unwrap_or(0)));
        }
        if self.session.is_none() && command == Command::Quit {
            // The session already ended (a failure closed its connection):
            // logging in only to say goodbye would be a command the capture
            // never made. Nothing goes out; the quit's end is had.
            *marks = Marks {
                connected: Some(0),
                sent: Some(0),
                first_byte: Some(0),
            };
            return Ok((OK, 0));
        }
        if self.session.is_none() {
            if let Some(code) = self.open(start, budget, marks, measured).await? {
                return Ok((code, marks.connected.unwrap_or(0)));
            }
        } else {
            marks.connected = Some(0);
        }
        self.progress.connected(marks.connected.unwrap_or(0));
        self.out.clear();
        let next_seq = packet::write(&mut self.out, 0, request);
        self.name_statement(command, request);
        let Some(session) = self.session.as_mut() else {
            return Err(Failure::Net(NetCode::PROTOCOL));
        };
        let mut written = 0;
        let sent = session
            .conn
            .write_all(&self.out, budget, &mut written)
            .await;
        measured.size_out += written;
        match sent {
            Ok(()) => {}
            Err(WriteError::Timeout) => return Err(Failure::Timeout),
            Err(WriteError::Net { code, .. }) => return Err(Failure::Net(code)),
        }
        let sent_us = micros(start.elapsed());
        marks.sent = Some(sent_us);
        self.progress.sent(sent_us, measured.size_out);
        let mut reply = ReplyReader::new(command, session.options, next_seq);
        let (outcome, end_us) = match reply.whole_unread() {
            Some(outcome) => (outcome, sent_us),
            None => {
                let read = read_reply(
                    &mut session.conn,
                    &mut reply,
                    start,
                    budget,
                    (marks, &self.progress),
                    measured,
                    capture,
                )
                .await;
                if read.is_err() {
                    measured.proto_code = reply.error_so_far().unwrap_or(0);
                    if command == Command::StmtPrepare {
                        self.statements.push(None);
                    }
                }
                read?
            }
        };
        if command == Command::StmtPrepare {
            self.statements
                .push(outcome.prepared.map(|prepared| prepared.statement));
        }
        if command == Command::Quit {
            // The server closes after a quit.
            self.session = None;
        }
        Ok((proto_code(&outcome), end_us))
    }

    /// In the packets of `request` to send, name its statement by the
    /// server's id (its number sits in the first packet, after the header).
    fn name_statement(&mut self, command: Command, request: &[u8]) {
        if !command.names_statement() {
            return;
        }
        let Some(number) = command::statement_id(request) else {
            return;
        };
        if number == LAST_PREPARED {
            return;
        }
        let id = usize::try_from(number)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|index| self.statements.get(index).copied().flatten())
            .unwrap_or(0);
        if let Some(payload) = self.out.get_mut(packet::HEADER..) {
            command::set_statement_id(payload, id);
        }
    }

    /// Connect and log in: `Some(error number)` when the server refused the login.
    async fn open(
        &mut self,
        start: Instant,
        budget: &mut Budget,
        marks: &mut Marks,
        measured: &mut Measured,
    ) -> Result<Option<u16>, Failure> {
        self.lose_connection();
        let gun = Arc::clone(&self.gun);
        let login = login::Login {
            gun: &gun,
            source: self.source,
            connect: self.connect.as_ref(),
        };
        let result = login.run(budget, measured).await;
        marks.connected = Some(micros(start.elapsed()));
        match result {
            Ok(login::Logged::In(conn, options)) => {
                self.session = Some(Session { conn, options });
                Ok(None)
            }
            Ok(login::Logged::Refused(code, message)) => {
                // The server's words, bounded and on one line.
                let message: String = message
                    .chars()
                    .take(200)
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                gun.note_problem(format!(
                    "the server refused the login as `{}`: {code} {} (the next command logs in \
                     again; the requests that met it have proto code {code})",
                    gun.credentials.user,
                    message.trim()
                ));
                Ok(Some(code))
            }
            Err(login::LoginError::Failure(failure)) => Err(failure),
            Err(login::LoginError::Problem(problem)) => {
                gun.note_problem(format!(
                    "{problem}: the requests that met it have net code 71"
                ));
                Err(Failure::Net(NetCode::PROTOCOL))
            }
        }
    }
}

/// Read `reply` off `conn` to its end: what it said, and when it was whole
/// (µs from `start`); each read marked in `marks` and its barrel's progress.
async fn read_reply(
    conn: &mut Conn,
    reply: &mut ReplyReader,
    start: Instant,
    budget: &mut Budget,
    (marks, progress): (&mut Marks, &ShotProgress),
    measured: &mut Measured,
    mut capture: Option<&mut Vec<u8>>,
) -> Result<(Outcome, u64), Failure> {
    loop {
        let read = conn
            .read(budget, |data| {
                if let Some(capture) = capture.as_deref_mut() {
                    let room = capture
                        .capacity()
                        .saturating_sub(capture.len())
                        .min(data.len());
                    capture.extend_from_slice(&data[..room]);
                }
                let (used, fed) = reply.feed(data);
                (data.len(), used, fed)
            })
            .await;
        let (bytes, used, fed) = match read {
            Ok(Some(read)) => read,
            // Closed before the reply's end.
            Ok(None) => return Err(Failure::Net(NetCode::PROTOCOL)),
            Err(Some(code)) => return Err(Failure::Net(code)),
            Err(None) => return Err(Failure::Timeout),
        };
        // A read returns at least one byte.
        let now_us = micros(start.elapsed());
        marks.first_byte.get_or_insert(now_us);
        measured.size_in += bytes as u64;
        progress.received(now_us, measured.size_in);
        match fed {
            Progress::More => continue,
            Progress::Broken(_) => return Err(Failure::Net(NetCode::PROTOCOL)),
            // Bytes past the reply's end belong to no command.
            Progress::Whole(_) if used < bytes => return Err(Failure::Net(NetCode::PROTOCOL)),
            Progress::Whole(outcome) => return Ok((outcome, now_us)),
        }
    }
}

/// A whole reply's proto code.
fn proto_code(outcome: &Outcome) -> u16 {
    outcome.error.unwrap_or(OK)
}

impl Barrel for MysqlBarrel {
    fn fire<'a>(
        &'a mut self,
        request: &'a [u8],
        start: Instant,
        reply: Option<&'a mut Vec<u8>>,
    ) -> impl std::future::Future<Output = Measured> + Send + 'a {
        MysqlBarrel::fire(self, request, start, reply)
    }

    fn hang_up(&mut self) {
        MysqlBarrel::hang_up(self);
    }

    fn progress(&self) -> Arc<ShotProgress> {
        Arc::clone(&self.progress)
    }
}

#[cfg(test)]
mod tests;
