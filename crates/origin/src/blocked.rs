//! Addresses an `origin` fetch never connects to: link-local ranges and cloud metadata services.
//!
//! A simulator on a cloud machine that fetched `http://169.254.169.254/` for
//! whoever posted a recipe would hand out the machine's credentials. The
//! check is made on every address the host name resolves to (so a DNS name
//! pointing there is refused too), after IPv4-mapped and NAT64 forms are
//! reduced to the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Metadata services outside the link-local ranges.
const METADATA_V4: [Ipv4Addr; 3] = [
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
    Ipv4Addr::new(192, 0, 0, 192),     // Oracle Cloud
    Ipv4Addr::new(168, 63, 129, 16),   // Azure's WireServer
];

/// AWS's instance metadata service over IPv6.
const METADATA_V6: [Ipv6Addr; 1] = [Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)];

/// The well-known NAT64 prefix, `64:ff9b::/96`, whose last 32 bits are an IPv4 address.
const NAT64: [u16; 6] = [0x0064, 0xff9b, 0, 0, 0, 0];

/// Whether a fetch must not connect to `ip`: link-local (169.254.0.0/16,
/// fe80::/10, which hold most clouds' metadata services) or a known metadata address.
pub(crate) fn is_blocked(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            if segments[..6] == NAT64 {
                let [_, _, _, _, _, _, high, low] = segments;
                let [a, b] = high.to_be_bytes();
                let [c, d] = low.to_be_bytes();
                return blocked_v4(Ipv4Addr::new(a, b, c, d));
            }
            v6.is_unicast_link_local() || METADATA_V6.contains(&v6)
        }
    }
}

fn blocked_v4(ip: Ipv4Addr) -> bool {
    ip.is_link_local() || METADATA_V4.contains(&ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(text: &str) -> bool {
        is_blocked(text.parse().expect("a test address"))
    }

    #[test]
    fn link_local_and_metadata_addresses_are_blocked() {
        for address in [
            "169.254.169.254",
            "169.254.0.1",
            "169.254.255.255",
            "100.100.100.200",
            "192.0.0.192",
            "168.63.129.16",
            "fe80::1",
            "febf:ffff::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(blocked(address), "{address}");
        }
    }

    #[test]
    fn ordinary_addresses_are_not() {
        for address in [
            "127.0.0.1",
            "10.0.0.1",
            "192.168.1.1",
            "169.253.255.255",
            "169.255.0.0",
            "100.100.100.201",
            "8.8.8.8",
            "::1",
            "fec0::1",
            "fd00:ec2::253",
            "::ffff:127.0.0.1",
            "64:ff9b::808:808",
        ] {
            assert!(!blocked(address), "{address}");
        }
    }
}
