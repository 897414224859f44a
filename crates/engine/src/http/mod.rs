//! HTTP/1.x for the gun: the reply reader and phantom's limits are
//! tank-http1's (the wire layer tank's crates share); what the gun adds is
//! which requests have bodiless replies and which may be sent again.

use tank_config::ReplyLimits;
pub use tank_http1::{Limits, Reply, ReplyError, ResponseReader};

/// The config's reply limits (read and checked there), as the reader uses them.
pub fn limits(limits: ReplyLimits) -> Limits {
    Limits {
        line: usize::try_from(limits.line).unwrap_or(usize::MAX),
        field: usize::try_from(limits.field).unwrap_or(usize::MAX),
        field_num: limits.field_num as usize,
        entity: limits.entity,
    }
}

/// Whether the raw request starts with `HEAD ` (its reply has no body).
pub fn is_head_request(request: &[u8]) -> bool {
    request.starts_with(b"HEAD ")
}

/// Whether the raw request's method is idempotent (RFC 9110 §9.2.2: GET,
/// HEAD, PUT, DELETE, OPTIONS, TRACE), so that sending it twice means no more
/// than sending it once. Methods are case-sensitive.
pub fn is_idempotent_request(request: &[u8]) -> bool {
    const IDEMPOTENT: [&[u8]; 6] = [
        b"GET ",
        b"HEAD ",
        b"PUT ",
        b"DELETE ",
        b"OPTIONS ",
        b"TRACE ",
    ];
    IDEMPOTENT.iter().any(|method| request.starts_with(method))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configs_default_limits_are_the_readers() {
        assert_eq!(limits(ReplyLimits::default()), Limits::default());
    }

    #[test]
    fn only_rfc_9110_idempotent_methods_are_idempotent() {
        for request in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"HEAD /x HTTP/1.0\r\n\r\n",
            b"PUT /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            b"DELETE /a HTTP/1.1\r\n\r\n",
            b"OPTIONS * HTTP/1.1\r\n\r\n",
            b"TRACE / HTTP/1.1\r\n\r\n",
        ] {
            assert!(is_idempotent_request(request), "{request:?}");
        }
        for request in [
            &b"POST / HTTP/1.1\r\n\r\n"[..],
            b"PATCH / HTTP/1.1\r\n\r\n",
            b"CONNECT host:443 HTTP/1.1\r\n\r\n",
            b"get / HTTP/1.1\r\n\r\n",
            b"GETX / HTTP/1.1\r\n\r\n",
            b"GET",
            b"",
        ] {
            assert!(!is_idempotent_request(request), "{request:?}");
        }
    }
}
