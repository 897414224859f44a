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

/// Whether a failure on a reused keep-alive connection, before any reply byte,
/// means the server had already closed it (EPIPE, ECONNRESET, ECONNABORTED).
pub fn means_closed(code: NetCode) -> bool {
    matches!(code, NetCode::BROKEN_PIPE | NetCode::RESET | NetCode(103))
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
        assert!(means_closed(of_io(&io::Error::from_raw_os_error(32))));
        assert!(means_closed(of_io(&io::Error::from(
            io::ErrorKind::ConnectionReset
        ))));
        assert!(!means_closed(NetCode::TIMED_OUT));
    }
}
