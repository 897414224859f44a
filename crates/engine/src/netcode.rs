//! Network outcomes as phantom reports them: the OS errno where there is one.

use std::io;

use tank_stats::NetCode;

/// The net code of an I/O error: its errno, or a close match for errors
/// without one (a timeout is 110, anything else 71, EPROTO).
pub fn of_io(error: &io::Error) -> NetCode {
    if let Some(errno) = error.raw_os_error() {
        return NetCode(u16::try_from(errno).unwrap_or(NetCode::PROTOCOL.0));
    }
    match error.kind() {
        io::ErrorKind::TimedOut => NetCode::TIMED_OUT,
        io::ErrorKind::ConnectionRefused => NetCode::REFUSED,
        io::ErrorKind::ConnectionReset => NetCode::RESET,
        io::ErrorKind::BrokenPipe => NetCode::BROKEN_PIPE,
        io::ErrorKind::ConnectionAborted => NetCode(103),
        io::ErrorKind::AddrNotAvailable => NetCode(99),
        _ => NetCode::PROTOCOL,
    }
}

/// Whether a failure on a reused keep-alive connection means the server had
/// already closed it (then the shot is retried once on a new connection).
pub fn is_stale(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_is_kept_and_kinds_map_to_codes() {
        assert_eq!(of_io(&io::Error::from_raw_os_error(111)), NetCode::REFUSED);
        assert_eq!(
            of_io(&io::Error::from(io::ErrorKind::TimedOut)),
            NetCode::TIMED_OUT
        );
        assert_eq!(of_io(&io::Error::other("tls alert")), NetCode::PROTOCOL);
        assert!(is_stale(&io::Error::from_raw_os_error(32)));
    }
}
