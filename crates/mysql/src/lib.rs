//! tank-mysql: the MySQL client/server protocol as tank needs it, byte by
//! byte, with no I/O: the importer reads captured conversations with it and
//! the gun speaks to a replay's server with it.
//!
//! Why a codec of our own rather than a client library: a replay must send
//! each captured command's bytes as they were, at its time, and measure the
//! reply packet by packet; `mysql_async` and `sqlx` own the connection, the
//! statements and their timing, and `mysql_common` (their packet types) has
//! no reply framing, which is most of what tank needs. What tank needs is
//! small: the packet layer ([`packet`]), the handshake ([`handshake`]) and the
//! two scramble plugins ([`auth`]), how each command is answered
//! ([`command`], [`reply`]), and statement tags ([`tag`]).
//!
//! Everything here reads untrusted bytes: every parser returns an error or
//! `None` rather than panicking, and the framing state machines are property
//! tested against the writers in [`build`].

#![warn(missing_docs)]

pub mod auth;
pub mod build;
pub mod command;
pub mod errors;
pub mod flags;
pub mod handshake;
pub mod packet;
pub mod reply;
pub mod tag;

pub use command::{Command, Connect};
pub use reply::{Outcome, Progress, ReplyReader};
