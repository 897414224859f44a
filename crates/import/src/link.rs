//! From a captured frame to its TCP segment: the link layer (Ethernet with
//! 802.1Q VLAN tags, Linux cooked v1 and v2, raw IP, BSD loopback/null), then
//! IPv4 or IPv6 (extension headers included), then TCP.
//!
//! Header slicing is etherparse's lax mode: zero-copy, and a frame cut short
//! by the snap length still yields the headers and the payload bytes it has.
//! Linux cooked v2 (SLL2), which etherparse does not know, is unwrapped here:
//! it is a fixed 20-byte header whose first field is the EtherType.
//!
//! MPLS (EtherType 0x8847, 0x8848) is unwrapped here too: its label stack is
//! 4 bytes a label down to the one marked bottom of stack, and what follows is
//! IPv4 or IPv6 as its first nibble says (anything else, an Ethernet
//! pseudowire, is not read). Other encapsulations are not read, but are told
//! apart ([`Encap`]) so the capture can count the frames it skipped for them:
//! a frame that could carry a request is never skipped without a word.

use std::net::{IpAddr, SocketAddr};

use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TransportSlice};

/// pcap link types (LINKTYPE_*) this module reads.
pub(crate) mod linktype {
    /// BSD loopback: a 4-byte address family in the writer's byte order.
    pub(crate) const NULL: u32 = 0;
    /// Ethernet II (VLAN tags included).
    pub(crate) const ETHERNET: u32 = 1;
    /// Raw IP (the value some BSDs write).
    pub(crate) const RAW_BSD: u32 = 12;
    /// Raw IP (the value some BSDs write).
    pub(crate) const RAW_BSD2: u32 = 14;
    /// Raw IPv4 or IPv6.
    pub(crate) const RAW: u32 = 101;
    /// OpenBSD loopback: a 4-byte address family in network byte order.
    pub(crate) const LOOP: u32 = 108;
    /// Linux cooked capture v1 (`tcpdump -i any`).
    pub(crate) const LINUX_SLL: u32 = 113;
    /// Raw IPv4.
    pub(crate) const IPV4: u32 = 228;
    /// Raw IPv6.
    pub(crate) const IPV6: u32 = 229;
    /// Linux cooked capture v2 (`tcpdump -i any` since libpcap 1.10).
    pub(crate) const LINUX_SLL2: u32 = 276;
}

/// A TCP segment of a frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment<'a> {
    /// Sender.
    pub src: SocketAddr,
    /// Receiver.
    pub dst: SocketAddr,
    /// Sequence number of the first payload byte (or of the SYN).
    pub seq: u32,
    /// SYN flag.
    pub syn: bool,
    /// ACK flag.
    pub ack: bool,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// The payload bytes captured (fewer than sent when the frame was truncated).
    pub payload: &'a [u8],
    /// The IP header says more payload than was captured: bytes were carried
    /// that the capture does not have (a snap length that kept only headers).
    pub cut: bool,
}

/// An encapsulation a frame is skipped for (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Encap {
    /// MPLS whose payload is not IP (a pseudowire).
    Mpls,
    /// PPPoE session frames.
    Pppoe,
    /// GRE (IP protocol 47).
    Gre,
    /// IP in IP (IP protocol 4 or 41).
    IpInIp,
    /// VXLAN (UDP port 4789).
    Vxlan,
    /// Geneve (UDP port 6081).
    Geneve,
    /// Another EtherType that may carry IP.
    EtherType(u16),
}

impl std::fmt::Display for Encap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Encap::Mpls => f.write_str("MPLS (not IP)"),
            Encap::Pppoe => f.write_str("PPPoE"),
            Encap::Gre => f.write_str("GRE"),
            Encap::IpInIp => f.write_str("IP in IP"),
            Encap::Vxlan => f.write_str("VXLAN (UDP 4789)"),
            Encap::Geneve => f.write_str("Geneve (UDP 6081)"),
            Encap::EtherType(t) => write!(f, "EtherType 0x{t:04x}"),
        }
    }
}

/// Why a frame yields no TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotTcp {
    /// Not IP, or IP carrying something else (ARP, UDP, ICMP, ...): not counted as a problem.
    Other,
    /// An encapsulation that is not read (counted, see [`Encap`]).
    Encapsulated(Encap),
    /// A fragment of an IP datagram (fragments are not reassembled).
    Fragment,
    /// The headers are cut short or malformed.
    Malformed,
    /// A link type this module does not read.
    UnknownLink,
}

/// The TCP segment in `frame`, captured with link type `link`.
pub(crate) fn segment(link: u32, frame: &[u8]) -> Result<Segment<'_>, NotTcp> {
    let packet = match link {
        linktype::ETHERNET => {
            LaxSlicedPacket::from_ethernet(frame).map_err(|_| NotTcp::Malformed)?
        }
        linktype::RAW
        | linktype::RAW_BSD
        | linktype::RAW_BSD2
        | linktype::IPV4
        | linktype::IPV6 => LaxSlicedPacket::from_ip(frame).map_err(|_| NotTcp::Malformed)?,
        linktype::NULL | linktype::LOOP => {
            let family = frame.get(..4).ok_or(NotTcp::Malformed)?;
            // Either byte order: the families are small numbers.
            let family = u32::from_le_bytes([family[0], family[1], family[2], family[3]]).min(
                u32::from_be_bytes([family[0], family[1], family[2], family[3]]),
            );
            match family {
                2 | 24 | 28 | 30 => {
                    LaxSlicedPacket::from_ip(&frame[4..]).map_err(|_| NotTcp::Malformed)?
                }
                _ => return Err(NotTcp::Other),
            }
        }
        linktype::LINUX_SLL => cooked(frame, 16, 14)?,
        linktype::LINUX_SLL2 => cooked(frame, 20, 0)?,
        _ => return Err(NotTcp::UnknownLink),
    };
    // Only a frame etherparse read no IP in is looked at again (MPLS, or
    // counted). Borrowed, not moved: a sliced packet is large, and moving it
    // costs a copy per packet.
    let unwrapped;
    let packet = match packet
        .net
        .is_none()
        .then(|| packet.ether_payload())
        .flatten()
    {
        Some(ether) => {
            unwrapped = not_ip(ether.ether_type.0, ether.payload)?;
            &unwrapped
        }
        None => &packet,
    };
    let (src_ip, dst_ip, fragmented): (IpAddr, IpAddr, bool) = match &packet.net {
        Some(LaxNetSlice::Ipv4(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
            ip.is_payload_fragmented(),
        ),
        Some(LaxNetSlice::Ipv6(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
            ip.is_payload_fragmented(),
        ),
        _ => return Err(NotTcp::Other),
    };
    if fragmented {
        return Err(NotTcp::Fragment);
    }
    let cut = packet.ip_payload().is_some_and(|p| p.incomplete);
    match &packet.transport {
        Some(TransportSlice::Tcp(tcp)) => Ok(Segment {
            src: SocketAddr::new(src_ip, tcp.source_port()),
            dst: SocketAddr::new(dst_ip, tcp.destination_port()),
            seq: tcp.sequence_number(),
            syn: tcp.syn(),
            ack: tcp.ack(),
            fin: tcp.fin(),
            rst: tcp.rst(),
            payload: tcp.payload(),
            cut,
        }),
        Some(TransportSlice::Udp(udp)) => match udp.destination_port() {
            4789 => Err(NotTcp::Encapsulated(Encap::Vxlan)),
            6081 => Err(NotTcp::Encapsulated(Encap::Geneve)),
            _ => Err(NotTcp::Other),
        },
        Some(_) => Err(NotTcp::Other),
        None => match packet.ip_payload().map(|p| p.ip_number.0) {
            Some(47) => Err(NotTcp::Encapsulated(Encap::Gre)),
            Some(4 | 41) => Err(NotTcp::Encapsulated(Encap::IpInIp)),
            _ if packet.stop_err.is_some() => Err(NotTcp::Malformed),
            _ => Err(NotTcp::Other),
        },
    }
}

/// A frame whose link layer ends in `ether_type` that etherparse did not
/// read as IP: MPLS is unwrapped (see the module docs); an EtherType that
/// cannot carry IP is [`NotTcp::Other`], any other is counted.
fn not_ip(ether_type: u16, payload: &[u8]) -> Result<LaxSlicedPacket<'_>, NotTcp> {
    match ether_type {
        0x8847 | 0x8848 => {
            let mut rest = payload;
            loop {
                let [_, _, bottom, _, after @ ..] = rest else {
                    return Err(NotTcp::Malformed);
                };
                rest = after;
                if bottom & 1 == 1 {
                    break;
                }
            }
            match rest.first().map(|b| b >> 4) {
                Some(4 | 6) => LaxSlicedPacket::from_ip(rest).map_err(|_| NotTcp::Malformed),
                _ => Err(NotTcp::Encapsulated(Encap::Mpls)),
            }
        }
        0x8863 | 0x8864 => Err(NotTcp::Encapsulated(Encap::Pppoe)),
        // Ethernet lengths (802.3 with LLC), and EtherTypes that carry no IP:
        // ARP, RARP, slow protocols (LACP), EAPOL, LLDP, PTP, loopback.
        ..0x0600 | 0x0806 | 0x8035 | 0x8809 | 0x888e | 0x88cc | 0x88f7 | 0x9000 => {
            Err(NotTcp::Other)
        }
        // IPv4 or IPv6 that etherparse could not read.
        0x0800 | 0x86dd => Err(NotTcp::Malformed),
        other => Err(NotTcp::Encapsulated(Encap::EtherType(other))),
    }
}

/// A Linux cooked header of `len` bytes with the EtherType at `protocol`.
fn cooked(frame: &[u8], len: usize, protocol: usize) -> Result<LaxSlicedPacket<'_>, NotTcp> {
    let ether_type = frame.get(protocol..protocol + 2).ok_or(NotTcp::Malformed)?;
    let rest = frame.get(len..).ok_or(NotTcp::Malformed)?;
    Ok(LaxSlicedPacket::from_ether_type(
        EtherType(u16::from_be_bytes([ether_type[0], ether_type[1]])),
        rest,
    ))
}
