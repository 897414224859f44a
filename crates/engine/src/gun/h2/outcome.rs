//! How an HTTP/2 stream's end is classified: the status (or, for gRPC,
//! `grpc-status` by Pandora's table) as the proto code, the connection's
//! failures as net codes.

use tank_grpc::Status;
use tank_h2::{Closed, Failure};
use tank_stats::NetCode;

use crate::netcode;

/// What a gun's replies mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTTP: the status is the proto code.
    Http,
    /// gRPC: `grpc-status` (in the trailers, or in the head of a reply that
    /// has no body) by Pandora's table; a reply without one has the HTTP
    /// status when that is not 200, else UNKNOWN's 500.
    Grpc,
}

/// The net code of a stream's failure: the server's reset or GOAWAY with
/// its reason; the kernel's errno; the connection gone without either; 71
/// for a reply that broke the protocol or the limits.
pub(super) fn net_code(failure: Failure) -> NetCode {
    match failure {
        Failure::Reset(reason) => NetCode::h2(NetCode::H2_RESET, reason),
        Failure::Closed(closed) | Failure::NotSent(closed) => closed_code(closed),
        Failure::Malformed(_) => NetCode::PROTOCOL,
    }
}

/// The net code of a connection's end.
fn closed_code(closed: Closed) -> NetCode {
    match closed {
        Closed::GoAway(reason) => NetCode::h2(NetCode::H2_GOAWAY, reason),
        Closed::Io(errno) => netcode::of_io(&std::io::Error::from_raw_os_error(errno)),
        Closed::Lost => NetCode::H2_CONNECTION_LOST,
        Closed::Protocol => NetCode::PROTOCOL,
        Closed::NotHttp2 => NetCode::H2_NOT_OFFERED,
    }
}

/// Where a reply stands once it ended, or broke.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    /// The proto code (0 before the head).
    pub code: u16,
    /// gRPC's status, once read.
    pub grpc: Option<Status>,
}

/// The outcome of a reply with `status` (0: no head) and `grpc_status`
/// (from its trailers or head); `whole` when the reply ended whole.
pub(super) fn classify(
    kind: Kind,
    status: u16,
    grpc_status: Option<&[u8]>,
    whole: bool,
) -> Outcome {
    let mut outcome = Outcome {
        code: status,
        grpc: None,
    };
    if kind == Kind::Grpc && whole {
        match grpc_status.and_then(Status::parse) {
            Some(status) => {
                outcome.grpc = Some(status);
                outcome.code = status.http_code();
            }
            None if status == 200 => {
                outcome.grpc = Some(Status::UNKNOWN);
                outcome.code = Status::UNKNOWN.http_code();
            }
            // A proxy's error page, say: its status tells more than UNKNOWN.
            None => {}
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_status_becomes_the_proto_code_and_its_absence_is_unknown() {
        let ok = classify(Kind::Grpc, 200, Some(b"0"), true);
        assert_eq!(
            ok,
            Outcome {
                code: 200,
                grpc: Some(Status::OK)
            }
        );
        let unavailable = classify(Kind::Grpc, 200, Some(b"14"), true);
        assert_eq!(unavailable.code, Status(14).http_code());
        let missing = classify(Kind::Grpc, 200, None, true);
        assert_eq!(missing.grpc, Some(Status::UNKNOWN));
        let proxy = classify(Kind::Grpc, 502, None, true);
        assert_eq!(
            proxy,
            Outcome {
                code: 502,
                grpc: None
            }
        );
        assert_eq!(classify(Kind::Http, 404, Some(b"5"), true).code, 404);
        // A reply cut short has no gRPC status of its own.
        assert_eq!(classify(Kind::Grpc, 200, None, false).grpc, None);
    }

    #[test]
    fn failures_keep_their_reason_and_errno() {
        assert_eq!(net_code(Failure::Reset(7)), NetCode(1007));
        assert_eq!(net_code(Failure::Closed(Closed::GoAway(0))), NetCode(1100));
        assert_eq!(net_code(Failure::Closed(Closed::Io(104))), NetCode::RESET);
        assert_eq!(
            net_code(Failure::Closed(Closed::Lost)),
            NetCode::H2_CONNECTION_LOST
        );
        assert_eq!(
            net_code(Failure::Malformed("a head without :status")),
            NetCode::PROTOCOL
        );
        assert_eq!(
            net_code(Failure::NotSent(Closed::NotHttp2)),
            NetCode::H2_NOT_OFFERED
        );
        assert_eq!(
            net_code(Failure::NotSent(Closed::Protocol)),
            NetCode::PROTOCOL
        );
    }
}
