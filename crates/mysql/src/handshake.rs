//! The connection phase: the server's greeting (HandshakeV10), the client's
//! answer (HandshakeResponse41, or the short SSL request that precedes TLS),
//! and the server's requests to switch the auth plugin. Both directions are
//! read (an importer reads a captured client's answer) and the client's is
//! written (the gun answers a replay's server).

use crate::flags::{self, Caps};
use crate::packet::Reader;

/// The server's greeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    /// The server's version string.
    pub version: String,
    /// The connection's id on the server.
    pub thread: u32,
    /// What the server can do (MariaDB's extended capabilities above bit 31).
    pub caps: Caps,
    /// The auth plugin's data: the scramble (20 bytes for the usual plugins).
    pub scramble: Vec<u8>,
    /// The auth plugin the server starts with (`mysql_native_password` when unnamed).
    pub plugin: String,
}

impl Greeting {
    /// Read a greeting's payload; `Err` says what is wrong with it.
    pub fn parse(payload: &[u8]) -> Result<Greeting, &'static str> {
        let mut reader = Reader::new(payload);
        match reader.u8() {
            Some(10) => {}
            Some(0xFF) => return Err("the server refused the connection (an ERR packet)"),
            _ => return Err("not a protocol 10 greeting"),
        }
        const SHORT: &str = "a greeting cut short";
        let version = reader.nul_terminated().ok_or(SHORT)?;
        let thread = reader.u32().ok_or(SHORT)?;
        let mut scramble = reader.bytes(8).ok_or(SHORT)?.to_vec();
        reader.u8().ok_or(SHORT)?;
        let mut caps = Caps::from(reader.u16().ok_or(SHORT)?);
        let mut plugin = String::from("mysql_native_password");
        if !reader.rest().is_empty() {
            let _charset = reader.u8().ok_or(SHORT)?;
            let _status = reader.u16().ok_or(SHORT)?;
            caps |= Caps::from(reader.u16().ok_or(SHORT)?) << 16;
            let data_len = usize::from(reader.u8().ok_or(SHORT)?);
            reader.bytes(6).ok_or(SHORT)?;
            let extended = reader.u32().ok_or(SHORT)?;
            if caps & flags::LONG_PASSWORD == 0 {
                caps |= Caps::from(extended) << 32;
            }
            if caps & flags::SECURE_CONNECTION != 0 {
                let rest = data_len.saturating_sub(8).max(13);
                let part = reader.bytes(rest).ok_or(SHORT)?;
                // The part ends with a NUL that is not scramble.
                let part = part.strip_suffix(&[0]).unwrap_or(part);
                scramble.extend_from_slice(part);
            }
            if caps & flags::PLUGIN_AUTH != 0 {
                let name = reader.nul_terminated_or_rest();
                plugin = String::from_utf8_lossy(name).into_owned();
            }
        }
        Ok(Greeting {
            version: String::from_utf8_lossy(version).into_owned(),
            thread,
            caps,
            scramble,
            plugin,
        })
    }
}

/// The client's answer to a greeting, as a captured client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// What the client can do (MariaDB's extended capabilities above bit 31).
    pub caps: Caps,
    /// The collation it asked for.
    pub collation: u8,
    /// The user it logged in as (empty in an SSL request).
    pub user: Vec<u8>,
    /// The schema it connected to (empty: none).
    pub schema: Vec<u8>,
    /// Whether this was the short SSL request: TLS follows.
    pub ssl_request: bool,
}

/// The SSL request's length: capabilities, max packet, collation, filler.
const SSL_REQUEST_LEN: usize = 32;

impl Response {
    /// Read a client's answer; `Err` says what is wrong with it.
    pub fn parse(payload: &[u8]) -> Result<Response, &'static str> {
        const SHORT: &str = "a handshake response cut short";
        let mut reader = Reader::new(payload);
        let mut caps = Caps::from(reader.u32().ok_or(SHORT)?);
        if caps & flags::PROTOCOL_41 == 0 {
            return Err("a pre-4.1 handshake response, which tank does not read");
        }
        let _max_packet = reader.u32().ok_or(SHORT)?;
        let collation = reader.u8().ok_or(SHORT)?;
        let filler = reader.bytes(23).ok_or(SHORT)?;
        if caps & flags::LONG_PASSWORD == 0 {
            let extended = Reader::new(&filler[19..]).u32().unwrap_or(0);
            caps |= Caps::from(extended) << 32;
        }
        if payload.len() == SSL_REQUEST_LEN && caps & flags::SSL != 0 {
            return Ok(Response {
                caps,
                collation,
                user: Vec::new(),
                schema: Vec::new(),
                ssl_request: true,
            });
        }
        let user = reader.nul_terminated().ok_or(SHORT)?.to_vec();
        if caps & flags::PLUGIN_AUTH_LENENC != 0 {
            reader.lenenc_bytes().ok_or(SHORT)?;
        } else if caps & flags::SECURE_CONNECTION != 0 {
            let len = usize::from(reader.u8().ok_or(SHORT)?);
            reader.bytes(len).ok_or(SHORT)?;
        } else {
            reader.nul_terminated().ok_or(SHORT)?;
        }
        let schema = if caps & flags::CONNECT_WITH_DB != 0 {
            reader.nul_terminated_or_rest().to_vec()
        } else {
            Vec::new()
        };
        Ok(Response {
            caps,
            collation,
            user,
            schema,
            ssl_request: false,
        })
    }
}

/// What the gun answers a greeting with.
#[derive(Debug, Clone, Copy)]
pub struct Login<'a> {
    /// The capabilities asked for (already within the server's).
    pub caps: Caps,
    /// The collation.
    pub collation: u8,
    /// The user.
    pub user: &'a [u8],
    /// The auth plugin's response (the scrambled password).
    pub auth: &'a [u8],
    /// The schema (empty: none; sent when `caps` has `CONNECT_WITH_DB`).
    pub schema: &'a [u8],
    /// The auth plugin the response is for.
    pub plugin: &'a str,
}

/// The largest packet the gun asks the server to send (1 GiB, the protocol's most).
const MAX_PACKET: u32 = 1 << 30;

impl Login<'_> {
    /// The short SSL request, sent before TLS starts.
    pub fn ssl_request(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SSL_REQUEST_LEN);
        self.head(&mut out, self.caps | flags::SSL);
        out
    }

    /// The handshake response.
    pub fn response(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.user.len() + self.schema.len());
        self.head(&mut out, self.caps);
        out.extend_from_slice(self.user);
        out.push(0);
        crate::packet::put_lenenc(&mut out, self.auth.len() as u64);
        out.extend_from_slice(self.auth);
        if self.caps & flags::CONNECT_WITH_DB != 0 {
            out.extend_from_slice(self.schema);
            out.push(0);
        }
        out.extend_from_slice(self.plugin.as_bytes());
        out.push(0);
        out
    }

    fn head(&self, out: &mut Vec<u8>, caps: Caps) {
        out.extend_from_slice(&(caps as u32).to_le_bytes());
        out.extend_from_slice(&MAX_PACKET.to_le_bytes());
        out.push(self.collation);
        out.extend_from_slice(&[0; 23]);
    }
}

/// A server's packet during authentication, after the client's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthStep {
    /// Authenticated (an OK packet).
    Ok,
    /// Refused: the error's number and message.
    Err(u16, String),
    /// Switch to `plugin`, answering its `data` (`0xFE`).
    Switch {
        /// The plugin's name.
        plugin: String,
        /// Its data (a new scramble).
        data: Vec<u8>,
    },
    /// More data for the plugin (`0x01`): caching_sha2_password's fast-auth
    /// result (3) or its request for the full password (4).
    More(Vec<u8>),
}

impl AuthStep {
    /// Read a server's packet during authentication.
    pub fn parse(payload: &[u8]) -> Result<AuthStep, &'static str> {
        let mut reader = Reader::new(payload);
        match reader.u8() {
            Some(0x00) => Ok(AuthStep::Ok),
            Some(0xFF) => {
                let code = reader.u16().ok_or("an ERR packet cut short")?;
                let mut rest = reader.rest();
                if rest.first() == Some(&b'#') {
                    rest = rest.get(6..).unwrap_or_default();
                }
                Ok(AuthStep::Err(
                    code,
                    String::from_utf8_lossy(rest).into_owned(),
                ))
            }
            Some(0xFE) => {
                let plugin = reader.nul_terminated_or_rest();
                let data = reader.rest();
                let data = data.strip_suffix(&[0]).unwrap_or(data);
                Ok(AuthStep::Switch {
                    plugin: String::from_utf8_lossy(plugin).into_owned(),
                    data: data.to_vec(),
                })
            }
            Some(0x01) => Ok(AuthStep::More(reader.rest().to_vec())),
            _ => Err("expected OK, ERR, an auth switch or more auth data"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use proptest::prelude::*;

    const SCRAMBLE: [u8; 20] = *b"abcdefghijklmnopqrst";

    #[test]
    fn a_mariadb_greeting_gives_its_caps_scramble_and_plugin() {
        let caps = flags::PROTOCOL_41
            | flags::SECURE_CONNECTION
            | flags::PLUGIN_AUTH
            | flags::DEPRECATE_EOF
            | flags::MARIADB_CACHE_METADATA;
        let payload = build::greeting(
            "5.5.5-10.11.6-MariaDB",
            42,
            caps,
            &SCRAMBLE,
            "mysql_native_password",
        );
        let greeting = Greeting::parse(&payload).unwrap();
        assert_eq!(greeting.version, "5.5.5-10.11.6-MariaDB");
        assert_eq!(greeting.thread, 42);
        assert_eq!(greeting.caps, caps);
        assert_eq!(greeting.scramble, SCRAMBLE);
        assert_eq!(greeting.plugin, "mysql_native_password");
        assert_eq!(
            Greeting::parse(&build::err(1040, b"08004", "Too many connections")),
            Err("the server refused the connection (an ERR packet)")
        );
    }

    #[test]
    fn a_response_written_by_the_gun_reads_back() {
        let login = Login {
            caps: flags::PROTOCOL_41
                | flags::SECURE_CONNECTION
                | flags::PLUGIN_AUTH
                | flags::PLUGIN_AUTH_LENENC
                | flags::CONNECT_WITH_DB
                | flags::LONG_PASSWORD,
            collation: 45,
            user: b"tank",
            auth: &[1; 20],
            schema: b"shop",
            plugin: "mysql_native_password",
        };
        let response = Response::parse(&login.response()).unwrap();
        assert_eq!(response.user, b"tank");
        assert_eq!(response.schema, b"shop");
        assert_eq!(response.collation, 45);
        assert!(!response.ssl_request);
        let ssl = Response::parse(&login.ssl_request()).unwrap();
        assert!(ssl.ssl_request);
        assert_eq!(ssl.caps & flags::SSL, flags::SSL);
    }

    #[test]
    fn auth_steps_are_told_apart() {
        assert_eq!(AuthStep::parse(&build::ok(0, 0, 2)), Ok(AuthStep::Ok));
        assert_eq!(
            AuthStep::parse(&build::err(1045, b"28000", "Access denied")),
            Ok(AuthStep::Err(1045, "Access denied".into()))
        );
        assert_eq!(
            AuthStep::parse(b"\xfemysql_native_password\0abcdefghijklmnopqrst\0"),
            Ok(AuthStep::Switch {
                plugin: "mysql_native_password".into(),
                data: SCRAMBLE.to_vec()
            })
        );
        assert_eq!(AuthStep::parse(b"\x01\x03"), Ok(AuthStep::More(vec![3])));
    }

    proptest! {
        #[test]
        fn any_bytes_parse_or_say_why(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = Greeting::parse(&bytes);
            let _ = Response::parse(&bytes);
            let _ = AuthStep::parse(&bytes);
        }
    }
}
