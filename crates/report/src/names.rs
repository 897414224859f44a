//! Names of codes, for people: `503` → `Service Unavailable`, net `110` → `timed out`.

use tank_config::TankType;
use tank_stats::NetCode;

/// The reason phrase of an HTTP status (empty for unusual ones; `0` means no
/// HTTP response). A proto code from 1000 up is no HTTP status but a MySQL
/// server's error number (`tank_type = mysql`): its name, when tank has one.
pub fn http_reason(code: u16) -> &'static str {
    if code >= 1000 {
        return tank_mysql::errors::name(code);
    }
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

/// What a run's proto codes are, told from the codes themselves: a phout does
/// not record the protocol, and the summary is built from the same counts for
/// a run and for a phout. MySQL's are 200 (OK) and the server's error numbers
/// (1000 and up, which no HTTP status reaches); a protocol without codes
/// (`tank_type = none`, framed TCP) writes 0 for a reply, which HTTP writes only
/// after a net error. A MySQL run whose every command succeeded has only 200s,
/// and reads as HTTP: a run's summary therefore keeps the kind its queues'
/// protocols give ([`ProtoCodes::of_protocols`]), and the codes are read only
/// for a phout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtoCodes {
    /// HTTP statuses (and the HTTP-shaped codes of gRPC and memcached).
    Http,
    /// 200 and MySQL servers' error numbers (`tank_type = mysql`).
    Mysql,
    /// None: each reply's code is 0 (`tank_type = none`).
    Codeless,
    /// Several of these, in a run of queues of different protocols.
    Mixed,
}

impl ProtoCodes {
    /// The kind of a run's codes from its queues' protocols (`None` for no queue).
    pub fn of_protocols(protocols: impl IntoIterator<Item = TankType>) -> Option<ProtoCodes> {
        protocols
            .into_iter()
            .map(|protocol| match protocol {
                TankType::Http | TankType::Http2 | TankType::Grpc | TankType::Memcached => {
                    ProtoCodes::Http
                }
                TankType::Mysql => ProtoCodes::Mysql,
                TankType::None => ProtoCodes::Codeless,
            })
            .reduce(|a, b| if a == b { a } else { ProtoCodes::Mixed })
    }

    /// The kind of `proto` (code → count), with `net` (code → count) telling
    /// the 0s of failed shots from those of replies.
    pub fn of(
        proto: &std::collections::BTreeMap<String, u64>,
        net: &std::collections::BTreeMap<String, u64>,
    ) -> ProtoCodes {
        let code = |c: &String| c.parse::<u32>().ok();
        let mysql = proto.keys().any(|c| code(c).is_some_and(|c| c >= 1000));
        let http = proto
            .keys()
            .any(|c| code(c).is_some_and(|c| c != 0 && c != 200 && c < 1000));
        let failed: u64 = net.iter().filter(|(c, _)| *c != "0").map(|(_, n)| n).sum();
        // More 0s than failed shots: some replies had no code.
        let codeless = proto.get("0").is_some_and(|&zeros| zeros > failed);
        let ok = proto.contains_key("200");
        match (http, mysql, codeless) {
            (false, true, false) => ProtoCodes::Mysql,
            (false, false, true) if !ok => ProtoCodes::Codeless,
            (_, false, false) => ProtoCodes::Http,
            _ => ProtoCodes::Mixed,
        }
    }

    /// The heading of the code table.
    pub fn heading(self) -> &'static str {
        match self {
            ProtoCodes::Http => "HTTP codes",
            ProtoCodes::Mysql => "MySQL codes (200: OK; else the server's error number)",
            ProtoCodes::Codeless => "proto codes (the protocol has none: 0 for every reply)",
            ProtoCodes::Mixed => "proto codes (HTTP statuses; from 1000, MySQL error numbers)",
        }
    }

    /// The heading in short, for a chart or a column (`MySQL codes`).
    pub fn short(self) -> &'static str {
        match self {
            ProtoCodes::Http => "HTTP codes",
            ProtoCodes::Mysql => "MySQL codes",
            ProtoCodes::Codeless | ProtoCodes::Mixed => "proto codes",
        }
    }

    /// What `code` means.
    pub fn reason(self, code: u16) -> &'static str {
        match (self, code) {
            (ProtoCodes::Codeless, 0) => "no code",
            (ProtoCodes::Mysql, 0) => "no reply",
            (ProtoCodes::Mysql, 200) => "OK",
            _ => http_reason(code),
        }
    }

    /// What an error status is, for a warning that every response was one.
    pub fn error(self) -> &'static str {
        match self {
            ProtoCodes::Http | ProtoCodes::Codeless => "an HTTP error (4xx or 5xx)",
            ProtoCodes::Mysql => "a MySQL error (the server's error number)",
            ProtoCodes::Mixed => "an error status (HTTP 4xx or 5xx, or a MySQL error number)",
        }
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
        assert_eq!(http_reason(1146), "no such table");
        assert_eq!(net_reason(110), "timed out");
        assert_eq!(net_reason(104), "connection reset by peer");
    }

    fn counts(pairs: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
        pairs.iter().map(|(c, n)| (c.to_string(), *n)).collect()
    }

    #[test]
    fn proto_codes_are_told_by_the_codes_themselves() {
        let kind = |proto: &[(&str, u64)], net: &[(&str, u64)]| {
            ProtoCodes::of(&counts(proto), &counts(net))
        };
        assert_eq!(
            kind(&[("200", 9), ("404", 1)], &[("0", 10)]),
            ProtoCodes::Http
        );
        // HTTP's 0 after a timeout is no reply without a code.
        assert_eq!(
            kind(&[("200", 9), ("0", 1)], &[("0", 9), ("110", 1)]),
            ProtoCodes::Http
        );
        assert_eq!(kind(&[("1045", 23)], &[("0", 23)]), ProtoCodes::Mysql);
        assert_eq!(
            kind(&[("200", 5), ("1146", 1)], &[("0", 6)]),
            ProtoCodes::Mysql
        );
        assert_eq!(kind(&[("0", 10)], &[("0", 10)]), ProtoCodes::Codeless);
        assert_eq!(
            kind(&[("404", 1), ("1146", 1)], &[("0", 2)]),
            ProtoCodes::Mixed
        );
        assert_eq!(
            kind(&[("200", 1), ("0", 1)], &[("0", 2)]),
            ProtoCodes::Mixed
        );
        assert_eq!(ProtoCodes::Codeless.reason(0), "no code");
        assert_eq!(ProtoCodes::Mysql.reason(1045), "access denied");
    }

    #[test]
    fn a_runs_protocols_say_what_its_codes_are() {
        use TankType::*;
        let kind = |types: &[TankType]| ProtoCodes::of_protocols(types.iter().copied());
        assert_eq!(kind(&[]), Option::None);
        assert_eq!(kind(&[Mysql]), Some(ProtoCodes::Mysql));
        assert_eq!(kind(&[Mysql, Mysql]), Some(ProtoCodes::Mysql));
        // gRPC's statuses and memcached's replies are written as HTTP codes.
        assert_eq!(
            kind(&[Http, Http2, Grpc, Memcached]),
            Some(ProtoCodes::Http)
        );
        assert_eq!(kind(&[None]), Some(ProtoCodes::Codeless));
        assert_eq!(kind(&[Http, Mysql]), Some(ProtoCodes::Mixed));
    }
}
