//! Names of codes, for people: `503` → `Service Unavailable`, net `110` → `timed out`.

use tank_stats::NetCode;

/// The reason phrase of an HTTP status (empty for unusual ones; `0` means no HTTP response).
pub fn http_reason(code: u16) -> &'static str {
    match code {
        0 => "no response",
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        // nginx's, and gRPC's CANCELLED by Pandora's table.
        499 => "Client Closed Request",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// What a net code means (`0` → `ok`, `110` → `timed out`).
pub fn net_reason(code: u16) -> &'static str {
    NetCode(code).describe()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_names() {
        assert_eq!(http_reason(404), "Not Found");
        assert_eq!(http_reason(299), "");
        assert_eq!(net_reason(110), "timed out");
        assert_eq!(net_reason(104), "connection reset by peer");
    }
}
