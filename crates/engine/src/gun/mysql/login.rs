//! Connecting and logging in: TCP, the server's greeting, TLS when `[mysql]
//! ssl` asks (an SSL request, then TLS on the same connection), the handshake
//! response, and the auth plugin's exchange until the server's OK or ERR.
//!
//! The plugins spoken: `mysql_native_password`, `caching_sha2_password`
//! (its fast path anywhere; its full path, which sends the password, only
//! over TLS: over plain TCP it needs the server's RSA key, which tank does not
//! do), and `mysql_clear_password` and `sha256_password` over TLS. A server
//! asking for another is a problem the run reports, not a row's mystery.

use std::net::IpAddr;

use tank_mysql::command::{Connect, SESSION_CAPS};
use tank_mysql::flags::{self, Caps};
use tank_mysql::handshake::{AuthStep, Greeting, Login as Response};
use tank_mysql::packet::{self, Assembler, Packet};
use tank_mysql::{auth, reply};
use tank_stats::{Measured, NetCode};

use super::{Failure, MysqlGun};
use crate::gun::wire::budget::Budget;
use crate::gun::wire::conn::{self, Conn, WriteError};

/// The largest handshake packet read (a greeting is about a hundred bytes).
const MAX_HANDSHAKE: usize = 64 << 10;
/// The collation asked for when the capture does not say: utf8mb4_general_ci,
/// which MySQL and MariaDB both know.
const DEFAULT_COLLATION: u8 = 45;
/// What the gun asks of every server (within what it offers).
const BASE_CAPS: Caps = flags::LONG_PASSWORD
    | flags::LONG_FLAG
    | flags::PROTOCOL_41
    | flags::TRANSACTIONS
    | flags::SECURE_CONNECTION
    | flags::MULTI_RESULTS
    | flags::PS_MULTI_RESULTS
    | flags::PLUGIN_AUTH
    | flags::PLUGIN_AUTH_LENENC
    | flags::DEPRECATE_EOF;
/// What a server must offer for the gun to log in.
const REQUIRED_CAPS: Caps = flags::PROTOCOL_41 | flags::SECURE_CONNECTION | flags::PLUGIN_AUTH;

/// How a login ended, when the server answered.
pub(super) enum Logged {
    /// Logged in: the connection, and how its replies are framed.
    In(Conn, reply::Options),
    /// Refused with this error number and message (the connection is closed).
    Refused(u16, String),
}

/// Why a login did not end with the server's answer.
pub(super) enum LoginError {
    /// The network, the budget, or bytes that are no handshake.
    Failure(Failure),
    /// Something the gun cannot do (see the module docs): said once by the run.
    Problem(String),
}

impl From<Failure> for LoginError {
    fn from(failure: Failure) -> Self {
        LoginError::Failure(failure)
    }
}

/// One login's inputs.
pub(super) struct Login<'a> {
    pub gun: &'a MysqlGun,
    pub source: Option<IpAddr>,
    /// The session's `CONNECT` (`None` for a session captured without one).
    pub connect: Option<&'a Connect>,
}

/// The server's side of the handshake, packet by packet.
struct Packets {
    assembler: Assembler,
    /// Bytes read past the last packet handed out.
    pending: Vec<u8>,
}

impl Packets {
    /// The next packet, reading as needed.
    async fn next(
        &mut self,
        conn: &mut Conn,
        budget: &mut Budget,
        measured: &mut Measured,
    ) -> Result<Packet, LoginError> {
        loop {
            if !self.pending.is_empty() {
                let (used, packet) = self
                    .assembler
                    .next(&self.pending)
                    .map_err(|_| Failure::Net(NetCode::PROTOCOL))?;
                self.pending.drain(..used);
                if let Some(packet) = packet {
                    return Ok(packet);
                }
            }
            let read = conn
                .read(budget, |data| {
                    self.pending.extend_from_slice(data);
                    data.len()
                })
                .await;
            match read {
                Ok(Some(bytes)) => measured.size_in += bytes as u64,
                Ok(None) => return Err(Failure::Net(NetCode::PROTOCOL).into()),
                Err(Some(code)) => return Err(Failure::Net(code).into()),
                Err(None) => return Err(Failure::Timeout.into()),
            }
        }
    }
}

impl Login<'_> {
    /// Connect and log in, every wait within `budget`.
    pub(super) async fn run(
        &self,
        budget: &mut Budget,
        measured: &mut Measured,
    ) -> Result<Logged, LoginError> {
        let gun = self.gun;
        let connecting = conn::connect(&gun.target, self.source, None, b"");
        let mut conn = match budget.within(connecting).await {
            None => return Err(Failure::Timeout.into()),
            Some(Err(code)) => return Err(Failure::Net(code).into()),
            Some(Ok(conn)) => conn,
        };
        let mut packets = Packets {
            assembler: Assembler::new(MAX_HANDSHAKE),
            pending: Vec::new(),
        };
        let first = packets.next(&mut conn, budget, measured).await?;
        if first.payload.first() == Some(&0xFF) {
            // Refused before the greeting: too many connections, a blocked host.
            return match AuthStep::parse(&first.payload) {
                Ok(AuthStep::Err(code, message)) => Ok(Logged::Refused(code, message)),
                _ => Err(Failure::Net(NetCode::PROTOCOL).into()),
            };
        }
        let greeting = Greeting::parse(&first.payload)
            .map_err(|why| LoginError::Problem(format!("the server's greeting: {why}")))?;
        if greeting.caps & REQUIRED_CAPS != REQUIRED_CAPS {
            return Err(LoginError::Problem(format!(
                "the server ({}) does not speak protocol 4.1 with auth plugins, which tank needs",
                greeting.version
            )));
        }
        let schema = match (&gun.credentials.database, self.connect) {
            (Some(database), _) => database.as_bytes(),
            (None, Some(connect)) => &connect.schema[..],
            (None, None) => b"",
        };
        let mut caps = BASE_CAPS | self.connect.map_or(0, |c| c.caps & SESSION_CAPS);
        if !schema.is_empty() {
            caps |= flags::CONNECT_WITH_DB;
        }
        caps &= greeting.caps & 0xFFFF_FFFF;
        let mut seq = first.seq.wrapping_add(1);
        let tls = gun.tls.is_some();
        let response = |plugin: &str, auth: &[u8]| {
            Response {
                caps,
                collation: self.connect.map_or(DEFAULT_COLLATION, |c| c.collation),
                user: gun.credentials.user.as_bytes(),
                auth,
                schema,
                plugin,
            }
            .response()
        };
        let mut out = Vec::new();
        if let Some(connector) = &gun.tls {
            if greeting.caps & flags::SSL == 0 {
                return Err(LoginError::Problem(format!(
                    "[mysql] ssl = 1, and the server ({}) does not offer TLS",
                    greeting.version
                )));
            }
            let request = Response {
                caps,
                collation: DEFAULT_COLLATION,
                user: b"",
                auth: b"",
                schema: b"",
                plugin: "",
            }
            .ssl_request();
            seq = packet::write(&mut out, seq, &request);
            self.send(&mut conn, &out, budget, measured).await?;
            if !packets.pending.is_empty() {
                return Err(Failure::Net(NetCode::PROTOCOL).into());
            }
            conn = budget
                .within(conn.start_tls(connector, &gun.target.host))
                .await
                .ok_or(Failure::Timeout)?
                .map_err(Failure::Net)?;
        }
        let password = gun.credentials.password.as_bytes();
        let (plugin, auth) = match answer(&greeting.plugin, password, &greeting.scramble, tls) {
            Some(Ok(auth)) => (greeting.plugin.as_str(), auth),
            // Not one tank starts with: answer as native and let the server switch.
            _ => (
                "mysql_native_password",
                auth::native_password(password, &greeting.scramble),
            ),
        };
        out.clear();
        packet::write(&mut out, seq, &response(plugin, &auth));
        self.send(&mut conn, &out, budget, measured).await?;
        loop {
            let packet = packets.next(&mut conn, budget, measured).await?;
            seq = packet.seq.wrapping_add(1);
            let step = AuthStep::parse(&packet.payload)
                .map_err(|why| LoginError::Problem(format!("logging in: {why}")))?;
            let reply = match step {
                AuthStep::Ok if packets.pending.is_empty() => {
                    return Ok(Logged::In(conn, reply::Options::from_caps(caps)))
                }
                AuthStep::Ok => return Err(Failure::Net(NetCode::PROTOCOL).into()),
                AuthStep::Err(code, message) => return Ok(Logged::Refused(code, message)),
                AuthStep::Switch { plugin, data } => match answer(&plugin, password, &data, tls) {
                    Some(answer) => answer.map_err(LoginError::Problem)?,
                    None => {
                        return Err(LoginError::Problem(format!(
                            "the server asks for the auth plugin `{plugin}`, which tank does \
                             not speak (it speaks mysql_native_password, caching_sha2_password, \
                             and mysql_clear_password and sha256_password over TLS)"
                        )))
                    }
                },
                // caching_sha2_password: the fast path passed; its OK follows.
                AuthStep::More(data) if data == [3] => continue,
                AuthStep::More(data) if data == [4] && tls => {
                    let mut clear = password.to_vec();
                    clear.push(0);
                    clear
                }
                AuthStep::More(_) => {
                    return Err(LoginError::Problem(
                        "caching_sha2_password asks for the full password (the server has not \
                         cached this user's yet), which over plain TCP needs its RSA key: set \
                         [mysql] ssl = 1, or log in once with a client to fill the cache"
                            .into(),
                    ))
                }
            };
            out.clear();
            packet::write(&mut out, seq, &reply);
            self.send(&mut conn, &out, budget, measured).await?;
        }
    }

    async fn send(
        &self,
        conn: &mut Conn,
        bytes: &[u8],
        budget: &mut Budget,
        measured: &mut Measured,
    ) -> Result<(), LoginError> {
        let mut written = 0;
        let result = conn.write_all(bytes, budget, &mut written).await;
        measured.size_out += written;
        match result {
            Ok(()) => Ok(()),
            Err(WriteError::Timeout) => Err(Failure::Timeout.into()),
            Err(WriteError::Net { code, .. }) => Err(Failure::Net(code).into()),
        }
    }
}

/// `plugin`'s answer to `scramble`: `None` for a plugin tank does not speak,
/// an error for one it speaks only over TLS.
fn answer(
    plugin: &str,
    password: &[u8],
    scramble: &[u8],
    tls: bool,
) -> Option<Result<Vec<u8>, String>> {
    Some(match plugin {
        "mysql_native_password" => Ok(auth::native_password(password, scramble)),
        "caching_sha2_password" => Ok(auth::caching_sha2(password, scramble)),
        "mysql_clear_password" | "sha256_password" if tls => {
            let mut clear = password.to_vec();
            clear.push(0);
            Ok(clear)
        }
        "mysql_clear_password" | "sha256_password" => Err(format!(
            "the server asks for the auth plugin `{plugin}`, which sends the password itself: \
             tank does so only over TLS ([mysql] ssl = 1)"
        )),
        _ => return None,
    })
}
