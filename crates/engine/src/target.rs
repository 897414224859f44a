//! Where a queue shoots: `address` (`host[:port]`, `[ipv6]:port`, an IP, or a
//! host name resolved once at start) and `port`, which overrides the port in
//! the address. Without a port: 443 with `ssl`, else 80.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// A resolved target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The address connections go to.
    pub addr: SocketAddr,
    /// The host as written (a name or an IP), for TLS server names and messages.
    pub host: String,
}

/// Split `address` into host and optional port, the ways yandex-tank accepts it.
pub fn split_address(address: &str) -> Result<(String, Option<u16>), String> {
    let address = address.trim();
    let bad_port =
        |p: &str| format!("address `{address}`: port `{p}` is not a number from 1 to 65535");
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad_port(p))
    };
    if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("address `{address}`: expected `[ipv6]` or `[ipv6]:port`"))?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host.to_string(), Some(port(p)?))),
            None if after.is_empty() => Ok((host.to_string(), None)),
            None => Err(format!("address `{address}`: expected `:port` after `]`")),
        };
    }
    if address.parse::<IpAddr>().is_ok() {
        // A bare IPv6 address has colons of its own.
        return Ok((address.to_string(), None));
    }
    match address.rsplit_once(':') {
        Some((host, p)) if !host.contains(':') => Ok((host.to_string(), Some(port(p)?))),
        Some(_) => Err(format!(
            "address `{address}`: write an IPv6 address with a port as `[ipv6]:port`"
        )),
        None if address.is_empty() => Err("address is empty: expected host[:port]".into()),
        None => Ok((address.to_string(), None)),
    }
}

/// Resolve a queue's target once.
pub fn resolve(address: &str, port: Option<u16>, ssl: bool) -> Result<Target, String> {
    let (host, address_port) = split_address(address)?;
    let port = port.or(address_port).unwrap_or(if ssl { 443 } else { 80 });
    let addr = match host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port),
        Err(_) => (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
            .next()
            .ok_or_else(|| format!("`{host}` resolves to no address"))?,
    };
    Ok(Target { addr, host })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_forms() {
        assert_eq!(
            split_address("127.0.0.1:8080"),
            Ok(("127.0.0.1".into(), Some(8080)))
        );
        assert_eq!(split_address("[::1]:81"), Ok(("::1".into(), Some(81))));
        assert_eq!(split_address("[::1]"), Ok(("::1".into(), None)));
        assert_eq!(split_address("::1"), Ok(("::1".into(), None)));
        assert_eq!(
            split_address("example.org"),
            Ok(("example.org".into(), None))
        );
        assert!(split_address("host:0").is_err());
        assert!(split_address("host:http").is_err());
        assert!(split_address("").is_err());
    }

    #[test]
    fn port_option_overrides_and_defaults_follow_ssl() {
        assert_eq!(
            resolve("127.0.0.1:8080", Some(9000), false)
                .unwrap()
                .addr
                .port(),
            9000
        );
        assert_eq!(resolve("127.0.0.1", None, false).unwrap().addr.port(), 80);
        assert_eq!(resolve("127.0.0.1", None, true).unwrap().addr.port(), 443);
        assert_eq!(
            resolve("localhost:1234", None, false).unwrap().addr.port(),
            1234
        );
    }
}
