//! Reading the packets of a pcap or pcapng file, streaming.
//!
//! pcap-parser (rusticata) does the container: the classic format in either
//! byte order with µs or ns timestamps, and pcapng's sections, interfaces
//! (each with its link type and timestamp resolution) and enhanced or simple
//! packet blocks. It parses in place from a refilled buffer, so memory is one
//! buffer however large the file. This module turns its blocks into
//! [`Packet`]s with a number (1-based, as Wireshark counts) and an absolute
//! time in µs, and its errors into ones that name the byte offset.

use std::io::Read;

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{PcapBlockOwned, PcapError};

use crate::error::ImportError;
use crate::span::Span;
use crate::warnings::Warnings;

/// The reader's buffer to start with; it grows for a larger packet.
const BUFFER: usize = 1 << 20;
/// The largest block accepted: a larger length means the file is corrupt.
const MAX_BLOCK: usize = 256 << 20;

/// A captured packet, borrowed until the next.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packet<'a> {
    /// Its number in the file, from 1.
    pub number: u64,
    /// Capture time, µs since the Unix epoch.
    pub at_us: u64,
    /// Its link type (LINKTYPE_*).
    pub link: u32,
    /// The bytes captured.
    pub data: &'a [u8],
    /// The frame's length on the wire (more than `data` when truncated).
    pub wire_len: u32,
}

/// One pcapng interface: its link type, ticks per second and time offset (s).
#[derive(Debug, Clone, Copy)]
struct Interface {
    link: u32,
    ticks_per_second: u64,
    offset_s: i64,
}

/// Read every packet of `input` (named `path` in errors) into `each`, in
/// file order. A file cut inside its last packet is a warning, not an error.
pub(crate) fn read(
    input: impl Read + Send,
    path: &str,
    warnings: &mut Warnings,
    mut each: impl FnMut(Packet<'_>, &mut Warnings) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut reader = pcap_parser::create_reader(BUFFER, input)
        .map_err(|e| container_error(path, 0, &e, "a pcap or pcapng file header"))?;
    let mut legacy: Option<(u32, bool)> = None;
    let mut interfaces: Vec<Interface> = Vec::new();
    let mut number = 0u64;
    let mut capacity = BUFFER;
    let mut span = Span::new();
    // A simple packet block has no time: the packet before's is the best there is.
    let last_us = std::cell::Cell::new(0);
    loop {
        let at = reader.consumed() as u64;
        // Every packet's time is checked against the others' before it is used.
        let mut each = |packet: Packet<'_>, warnings: &mut Warnings| {
            span.check(packet.at_us, &PacketNo(packet.number))
                .map_err(|why| {
                    ImportError::format(
                        path,
                        at,
                        &format!("packet {}: {why}; {}", packet.number, split_hint(path)),
                    )
                })?;
            last_us.set(packet.at_us);
            each(packet, warnings)
        };
        match reader.next() {
            Ok((used, block)) => {
                match block {
                    PcapBlockOwned::LegacyHeader(header) => {
                        legacy = Some((header.network.0 as u32, header.is_nanosecond_precision()));
                    }
                    PcapBlockOwned::Legacy(frame) => {
                        number += 1;
                        let (link, nanos) = legacy.ok_or_else(|| {
                            ImportError::format(path, at, "a pcap file header before packets")
                        })?;
                        let frac = if nanos {
                            u64::from(frame.ts_usec) / 1000
                        } else {
                            u64::from(frame.ts_usec)
                        };
                        each(
                            Packet {
                                number,
                                at_us: u64::from(frame.ts_sec) * 1_000_000 + frac,
                                link,
                                data: frame.data,
                                wire_len: frame.origlen,
                            },
                            warnings,
                        )?;
                    }
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => interfaces.clear(),
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        interfaces.push(Interface {
                            link: idb.linktype.0 as u32,
                            ticks_per_second: idb.ts_resolution().unwrap_or(1_000_000),
                            offset_s: idb.ts_offset(),
                        })
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        number += 1;
                        let interface = interfaces.get(epb.if_id as usize).ok_or_else(|| {
                            ImportError::format(
                                path,
                                at,
                                &format!(
                                    "an interface description for interface {} before its packets",
                                    epb.if_id
                                ),
                            )
                        })?;
                        let ticks = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                        each(
                            Packet {
                                number,
                                at_us: interface.micros(ticks),
                                link: interface.link,
                                data: epb.data,
                                wire_len: epb.origlen,
                            },
                            warnings,
                        )?;
                    }
                    PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                        // No timestamp: the previous packet's time is the best there is.
                        number += 1;
                        let interface = interfaces.first().ok_or_else(|| {
                            ImportError::format(
                                path,
                                at,
                                "an interface description before a simple packet block",
                            )
                        })?;
                        warnings.warn(format!(
                            "packet {number}: a simple packet block has no timestamp (taken \
                             as the packet before's)"
                        ));
                        each(
                            Packet {
                                number,
                                at_us: last_us.get(),
                                link: interface.link,
                                data: spb.data,
                                wire_len: spb.origlen,
                            },
                            warnings,
                        )?;
                    }
                    PcapBlockOwned::NG(_) => {}
                }
                // Not `consume`, which moves the rest of the buffer to its front
                // whenever half of it is read (a copy of half the file in all):
                // `refill` moves only the partial block left when it needs room.
                reader.consume_noshift(used);
            }
            Err(PcapError::Eof) => return Ok(()),
            Err(PcapError::Incomplete(_)) => refill(&mut reader, path, at)?,
            Err(PcapError::BufferTooSmall) => {
                capacity *= 2;
                if capacity > MAX_BLOCK || !reader.grow(capacity) {
                    return Err(ImportError::format(
                        path,
                        at,
                        &format!(
                            "a block of at most {MAX_BLOCK} bytes (the length field is corrupt)"
                        ),
                    ));
                }
                refill(&mut reader, path, at)?;
            }
            Err(PcapError::UnexpectedEof) => {
                warnings.warn(format!(
                    "the capture ends inside packet {} (byte {at}; {} bytes left unread): \
                     that packet is lost",
                    number + 1,
                    reader.data().len()
                ));
                return Ok(());
            }
            Err(e) => {
                let expected = if number == 0 && interfaces.is_empty() && legacy.is_none() {
                    "a pcap or pcapng file header"
                } else {
                    "a packet record"
                };
                return Err(container_error(path, at, &e, expected));
            }
        }
    }
}

/// The way on for a capture whose clocks are too far apart (a merge of
/// captures taken years apart, or one clock wrong): import a part of it.
fn split_hint(path: &str) -> String {
    format!(
        "to import the rest, keep one time range or the connections wanted first \
         (`editcap -A START -B STOP {path} part.pcap`, or `tcpdump -r {path} -w - 'port 80' | \
         tank import - …`)"
    )
}

/// A packet's number, as the span check names it.
#[derive(Debug, Clone, Copy)]
struct PacketNo(u64);

impl std::fmt::Display for PacketNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "packet {}", self.0)
    }
}

impl Interface {
    fn micros(&self, ticks: u64) -> u64 {
        let micros = u128::from(ticks) * 1_000_000 / u128::from(self.ticks_per_second.max(1));
        let micros =
            i128::try_from(micros).unwrap_or(i128::MAX) + i128::from(self.offset_s) * 1_000_000;
        u64::try_from(micros.max(0)).unwrap_or(u64::MAX)
    }
}

fn refill(
    reader: &mut Box<dyn PcapReaderIterator + Send + '_>,
    path: &str,
    at: u64,
) -> Result<(), ImportError> {
    reader
        .refill()
        .map_err(|e| container_error(path, at, &e, "more bytes"))
}

/// pcap-parser's error, said in the user's terms (never its type names).
fn container_error(path: &str, at: u64, error: &PcapError<&[u8]>, expected: &str) -> ImportError {
    let what = match error {
        PcapError::HeaderNotRecognized => "no pcap or pcapng magic number",
        PcapError::ReadError => "the file could not be read",
        PcapError::Incomplete(_) | PcapError::Eof | PcapError::UnexpectedEof => {
            "the file is cut short here"
        }
        PcapError::NomError(..) | PcapError::OwnedNomError(..) | PcapError::BufferTooSmall => {
            "a block whose length, type or byte order does not fit together"
        }
    };
    ImportError::format(path, at, &format!("{what}; expected {expected}"))
}
