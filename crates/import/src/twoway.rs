//! A packet capture's connections read both ways, for protocols other than
//! HTTP: each connection's client and server streams are reassembled
//! ([`crate::tcp`]) and handed, in capture order, to a [`Conversation`] of
//! the protocol, which says what the client's requests were. MySQL needs the
//! server's side (the greeting says what the connection agreed; a prepared
//! statement's id is in the server's reply); a framed TCP protocol needs only
//! the client's, and ignores the rest.
//!
//! Why not [`crate::capture`], which reads HTTP: it keeps only the client's
//! bytes, and knows HTTP's framing. The rules here are the same (see
//! docs/replay.md): a connection is a 4-tuple and a new SYN starts a new one;
//! it ends at the client's FIN (once every byte before it has come), at an
//! RST, or at the end of the capture; a client stream with bytes missing is
//! read up to the gap, and the rest of the connection is skipped; a server
//! stream with a gap is read no further, and the conversation is told. The
//! watermark given to the [`Sorter`] is the earliest of what every open
//! conversation may still hand out, the oldest bytes held behind a hole, and
//! the latest packet's time less [`SLACK_US`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;

use foldhash::fast::RandomState;

use crate::capture::{HOLE_TIMEOUT_US, SLACK_US};
use crate::error::ImportError;
use crate::flows::{self, key, Segments, Table};
use crate::link::Segment;
use crate::order::{Item, Kind, SortError, Sorter};
use crate::pcap::Packet;
use crate::tcp::Reassembler;
use crate::warnings::Warnings;

/// Bytes a stream may hold behind a hole before it is declared a gap.
const MAX_HELD: usize = 64 << 20;
/// How often (capture time) the watermark is moved and holes are checked.
const TICK_US: u64 = 10_000;

/// A request a conversation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// When: the capture time of its first byte (or what stands for it).
    pub at_us: u64,
    /// What results group it by.
    pub tag: Vec<u8>,
    /// What the replay sends.
    pub bytes: Vec<u8>,
}

/// What a conversation says back while it reads.
#[derive(Debug, Default)]
pub(crate) struct Said {
    /// Requests found, in order.
    pub requests: Vec<Request>,
    /// Warnings (each names what it is about; the flow adds the connection).
    pub warnings: Vec<String>,
}

/// Why the rest of a connection is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Not this protocol's connection: counted by its server port, no warning.
    NotOurs,
    /// A connection that cannot be read (TLS, compression): counted by kind
    /// and named in a warning; nothing of it is imported.
    Unreadable {
        /// The kind, as the summary counts it (`TLS`, `compressed`).
        kind: &'static str,
        /// Why, for the warning.
        why: String,
    },
    /// The stream stops making sense here: what came before is kept.
    Rest(String),
    /// The server refused the connection (its login, or before its
    /// greeting): counted and named in a warning; nothing of it is imported.
    Refused(String),
}

/// One connection of a protocol, read both ways (see the module docs).
pub(crate) trait Conversation {
    /// Client bytes, in stream order, captured at `at_us`.
    fn client(&mut self, bytes: &[u8], at_us: u64, said: &mut Said) -> Result<(), Skip>;
    /// Server bytes, in stream order, captured at `at_us`.
    fn server(&mut self, bytes: &[u8], at_us: u64, said: &mut Said) -> Result<(), Skip>;
    /// The server's stream has a gap (`why`): it is read no further.
    fn server_lost(&mut self, why: &str, said: &mut Said);
    /// The earliest time of a request it may still hand out.
    fn hold_us(&self) -> Option<u64>;
    /// The connection ended: hand out what can be, say what is lost.
    fn close(&mut self, said: &mut Said);
    /// Its stream stopped making sense here ([`Skip::Rest`]): hand out what
    /// was made before and is still held (a login kept for its outcome).
    fn cut(&mut self, said: &mut Said);
    /// Who the client was, beyond its address (a MySQL user and schema).
    fn who(&self) -> Option<String>;
}

/// A protocol: which connections are its, and their conversations.
pub(crate) trait Protocol {
    /// One connection's reader.
    type Conversation: Conversation;
    /// Whether connections to `port` are this protocol's by the port alone
    /// (`Some(false)`: not read; `None`: the conversation tells).
    fn serves(&self, port: u16) -> Option<bool>;
    /// A new connection; `syn` says whether its start was captured.
    fn open(&mut self, server_port: u16, syn: bool) -> Self::Conversation;
}

/// One connection.
struct Flow<C> {
    client: SocketAddr,
    server: SocketAddr,
    session: u64,
    /// The client's SYN sequence number, when captured.
    isn: Option<u32>,
    client_stream: Option<Reassembler>,
    server_stream: Option<Reassembler>,
    /// Not reading the server's stream any more (after a gap).
    server_gone: bool,
    conversation: C,
    /// Stream position of the client's FIN, once seen.
    fin_at: Option<u64>,
    skipped: bool,
    requests: u64,
    last_at_us: u64,
}

impl<C: Conversation> Flow<C> {
    fn label(&self) -> String {
        let mut label = format!("{}→{}", self.client, self.server);
        if let Some(who) = self.conversation.who() {
            label.push(' ');
            label.push_str(&who);
        }
        label
    }

    fn hold(&self) -> Option<u64> {
        if self.skipped {
            return None;
        }
        let held = |s: &Option<Reassembler>| s.as_ref().and_then(Reassembler::held_since_us);
        [
            self.conversation.hold_us(),
            held(&self.client_stream),
            if self.server_gone {
                None
            } else {
                held(&self.server_stream)
            },
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// What a two-way capture counted, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Counted {
    /// Connections not of the protocol, by server port (port, count), most first.
    pub skipped_ports: Vec<(u16, u64)>,
    /// Connections that could not be read, by kind (`TLS`, `compressed`).
    pub unreadable: Vec<(String, u64)>,
    /// Connections the server refused (MySQL: a login refused), left out.
    pub refused: u64,
    /// Frames skipped for what they are (IP fragments, an encapsulation not read), by kind.
    pub skipped_frames: Vec<(String, u64)>,
    /// Connections whose requests were lost (some or all), by why, for the
    /// warning of an import that found no request.
    pub lost: Vec<(&'static str, u64)>,
    /// Connections seen (with a SYN or data).
    pub connections: u64,
}

/// Turns packets into sorted request items (see the module docs).
pub(crate) struct Capture<P: Protocol> {
    protocol: P,
    table: Table<Flow<P::Conversation>>,
    syn_ports: HashSet<u16, RandomState>,
    skipped_ports: HashMap<u16, u64, RandomState>,
    unreadable: BTreeMap<&'static str, u64>,
    refused: u64,
    /// Connections cut short by a gap, a truncated packet or bytes that make no sense.
    cut_short: u64,
    next_session: u64,
    latest_us: u64,
    next_tick_us: u64,
    segments: Segments,
}

impl<P: Protocol> Capture<P> {
    pub(crate) fn new(protocol: P) -> Self {
        Capture {
            protocol,
            table: Table::default(),
            syn_ports: HashSet::default(),
            skipped_ports: HashMap::default(),
            unreadable: BTreeMap::new(),
            refused: 0,
            cut_short: 0,
            next_session: 0,
            latest_us: 0,
            next_tick_us: 0,
            segments: Segments::default(),
        }
    }

    /// Take one packet.
    pub(crate) fn packet(
        &mut self,
        packet: Packet<'_>,
        path: &str,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
        out: &mut impl FnMut(Item) -> Result<(), SortError>,
    ) -> Result<(), ImportError> {
        self.latest_us = self.latest_us.max(packet.at_us);
        if let Some(segment) = self.segments.of(&packet, path, warnings)? {
            self.take(&packet, &segment, path, sorter, warnings)?;
        }
        self.tick(sorter, warnings, out, path)
    }

    /// A segment of a connection.
    fn take(
        &mut self,
        packet: &Packet<'_>,
        segment: &Segment<'_>,
        path: &str,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
    ) -> Result<(), ImportError> {
        let opening = segment.syn && !segment.ack;
        if opening {
            self.syn_ports.insert(segment.dst.port());
        }
        let key = key(segment.src, segment.dst);
        let slot = match self.table.find(&key) {
            Some(slot) => {
                let new_connection = opening
                    && self
                        .table
                        .get(slot)
                        .is_some_and(|f| f.isn != Some(segment.seq));
                if new_connection {
                    self.close(slot, sorter, warnings, path)?;
                    self.open(key, segment)
                } else {
                    slot
                }
            }
            None if segment.syn || !segment.payload.is_empty() || segment.cut => {
                self.open(key, segment)
            }
            None => return Ok(()),
        };
        let Some(flow) = self.table.get_mut(slot) else {
            return Ok(());
        };
        if flow.skipped {
            if segment.rst || (segment.fin && segment.src == flow.client) {
                self.close(slot, sorter, warnings, path)?;
            }
            return Ok(());
        }
        let from_client = segment.src == flow.client;
        let data_seq = segment.seq.wrapping_add(u32::from(segment.syn));
        if segment.syn {
            if from_client {
                flow.isn = Some(segment.seq);
            }
            let stream = if from_client {
                &mut flow.client_stream
            } else {
                &mut flow.server_stream
            };
            stream.get_or_insert_with(|| Reassembler::new(data_seq));
        }
        let mut said = Said::default();
        let mut skip = None;
        // A packet captured with its headers but not all its payload (none,
        // with a snap length that kept only headers) lost bytes all the same.
        if !segment.payload.is_empty() || segment.cut {
            // Told by the IP header's length: cut Ethernet padding loses nothing.
            if segment.cut {
                skip = Some(Skip::Rest(format!(
                    "packet {}: truncated (captured {} of {} bytes)",
                    packet.number,
                    packet.data.len(),
                    packet.wire_len
                )));
            } else if from_client || !flow.server_gone {
                skip = feed(
                    flow,
                    from_client,
                    data_seq,
                    segment.payload,
                    (packet.at_us, packet.number),
                    &mut said,
                )
                .err();
            }
        }
        if skip.is_none() {
            skip = overfull(flow, &mut said);
        }
        if segment.fin && from_client {
            let fin_seq = data_seq.wrapping_add(segment.payload.len() as u32);
            flow.fin_at = flow
                .client_stream
                .as_ref()
                .and_then(|s| s.position_of(fin_seq));
        }
        self.settle(slot, said, skip, sorter, warnings, path)?;
        let ended = segment.rst
            || self.table.get(slot).is_some_and(|f| {
                f.skipped && f.fin_at.is_some()
                    || matches!((f.fin_at, &f.client_stream), (Some(fin), Some(s)) if s.delivered() >= fin)
            });
        if ended {
            self.close(slot, sorter, warnings, path)?;
        } else {
            self.update_hold(slot);
        }
        Ok(())
    }

    /// Hand what a conversation said to the sorter and the warnings; skip the
    /// rest of the flow if asked.
    fn settle(
        &mut self,
        slot: usize,
        said: Said,
        skip: Option<Skip>,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
        path: &str,
    ) -> Result<(), ImportError> {
        let Some(flow) = self.table.get_mut(slot) else {
            return Ok(());
        };
        let mut said = said;
        if matches!(skip, Some(Skip::Rest(_))) {
            flow.conversation.cut(&mut said);
        }
        for warning in said.warnings {
            warnings.warn(format!("connection {}: {warning}", flow.label()));
        }
        for request in said.requests {
            // A session's requests never go back in time, whatever the clocks did.
            let at_us = request.at_us.max(flow.last_at_us);
            let label = (flow.requests == 0).then(|| flow.label());
            flow.requests += 1;
            flow.last_at_us = at_us;
            let kind = Kind::Request {
                label,
                tag: request.tag,
                bytes: request.bytes.into(),
            };
            sorter
                .push(at_us, flow.session, kind)
                .map_err(|e| e.at(path))?;
        }
        match skip {
            None => {}
            Some(Skip::NotOurs) => {
                *self.skipped_ports.entry(flow.server.port()).or_default() += 1;
                skip_rest(flow);
            }
            Some(Skip::Unreadable { kind, why }) => {
                *self.unreadable.entry(kind).or_default() += 1;
                warnings.warn(format!(
                    "connection {}: {why}: it cannot be read, so none of it is imported",
                    flow.label()
                ));
                skip_rest(flow);
            }
            Some(Skip::Refused(why)) => {
                self.refused += 1;
                warnings.warn(format!(
                    "connection {}: {why}; none of it is imported",
                    flow.label()
                ));
                skip_rest(flow);
            }
            Some(Skip::Rest(why)) => {
                self.cut_short += 1;
                let kept = match flow.requests {
                    0 => "none of it is imported".to_owned(),
                    1 => "its 1 request before is kept, the rest of it is skipped".to_owned(),
                    n => format!("its {n} requests before are kept, the rest of it is skipped"),
                };
                warnings.warn(format!("connection {}: {why}; {kept}", flow.label()));
                skip_rest(flow);
            }
        }
        Ok(())
    }

    /// End of capture: close every connection, in the order they were opened.
    pub(crate) fn finish(
        mut self,
        path: &str,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
    ) -> Result<Counted, ImportError> {
        for slot in self.table.open_by(|f| f.session) {
            self.close(slot, sorter, warnings, path)?;
        }
        let skipped_frames = self.segments.finish(warnings);
        let mut skipped_ports: Vec<(u16, u64)> = self.skipped_ports.into_iter().collect();
        skipped_ports.sort_unstable_by_key(|&(port, n)| (std::cmp::Reverse(n), port));
        Ok(Counted {
            skipped_ports,
            unreadable: self
                .unreadable
                .into_iter()
                .map(|(kind, n)| (kind.to_owned(), n))
                .collect(),
            refused: self.refused,
            skipped_frames,
            lost: vec![("cut short", self.cut_short)],
            connections: self.next_session,
        })
    }

    fn open(&mut self, key: flows::Key, segment: &Segment<'_>) -> usize {
        let (client, server) = flows::ends(segment, |port| {
            self.protocol
                .serves(port)
                .unwrap_or_else(|| self.syn_ports.contains(&port))
        });
        let ours = self.protocol.serves(server.port()) != Some(false);
        if !ours {
            *self.skipped_ports.entry(server.port()).or_default() += 1;
        }
        let flow = Flow {
            client,
            server,
            session: self.next_session,
            isn: None,
            client_stream: None,
            server_stream: None,
            server_gone: false,
            conversation: self.protocol.open(server.port(), segment.syn),
            fin_at: None,
            skipped: !ours,
            requests: 0,
            last_at_us: 0,
        };
        self.next_session += 1;
        self.table.insert(key, flow)
    }

    fn update_hold(&mut self, slot: usize) {
        if let Some(hold) = self.table.get(slot).map(Flow::hold) {
            self.table.set_hold(slot, hold);
        }
    }

    /// The connection ends: its conversation hands out what it can, its session ends.
    fn close(
        &mut self,
        slot: usize,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
        path: &str,
    ) -> Result<(), ImportError> {
        let mut said = Said::default();
        let mut gap = None;
        if let Some(flow) = self.table.get_mut(slot).filter(|f| !f.skipped) {
            if let Some((from, to)) = flow.client_stream.as_ref().and_then(Reassembler::hole) {
                gap = Some(gap_message("client", flow.client_stream.as_ref(), from, to));
            }
            flow.conversation.close(&mut said);
        }
        self.settle(slot, said, gap.map(Skip::Rest), sorter, warnings, path)?;
        let Some(key) = self.table.get(slot).map(|f| key(f.client, f.server)) else {
            return Ok(());
        };
        let Some(flow) = self.table.remove_if(slot, &key, |_| true) else {
            return Ok(());
        };
        if flow.requests > 0 {
            sorter
                .push(flow.last_at_us, flow.session, Kind::End)
                .map_err(|e| e.at(path))?;
        }
        Ok(())
    }

    /// Every [`TICK_US`] of capture time: declare stale holes, move the watermark.
    fn tick(
        &mut self,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
        out: &mut impl FnMut(Item) -> Result<(), SortError>,
        path: &str,
    ) -> Result<(), ImportError> {
        if self.latest_us < self.next_tick_us {
            return Ok(());
        }
        self.next_tick_us = self.latest_us + TICK_US;
        let stale_before = self.latest_us.saturating_sub(HOLE_TIMEOUT_US);
        for slot in self.table.held_before(stale_before) {
            let Some(flow) = self.table.get_mut(slot) else {
                continue;
            };
            let mut said = Said::default();
            let skip = stale_gap(flow, stale_before, &mut said);
            self.settle(slot, said, skip, sorter, warnings, path)?;
            self.update_hold(slot);
        }
        let watermark = self
            .table
            .earliest_hold()
            .unwrap_or(u64::MAX)
            .min(self.latest_us.saturating_sub(SLACK_US));
        sorter.release(watermark, out).map_err(|e| e.at(path))
    }
}

/// Feed a segment's payload to its stream, and what the stream delivers to
/// the conversation.
fn feed<C: Conversation>(
    flow: &mut Flow<C>,
    from_client: bool,
    seq: u32,
    payload: &[u8],
    (at_us, number): (u64, u64),
    said: &mut Said,
) -> Result<(), Skip> {
    let (stream, conversation) = if from_client {
        (&mut flow.client_stream, &mut flow.conversation)
    } else {
        (&mut flow.server_stream, &mut flow.conversation)
    };
    let stream = stream.get_or_insert_with(|| Reassembler::new(seq));
    stream.segment(seq, payload, at_us, number, &mut |bytes, at| {
        if from_client {
            conversation.client(bytes, at, said)
        } else {
            conversation.server(bytes, at, said)
        }
    })
}

/// A stream holding too much behind a hole has a gap.
fn overfull<C: Conversation>(flow: &mut Flow<C>, said: &mut Said) -> Option<Skip> {
    let over = |s: &Option<Reassembler>| {
        s.as_ref()
            .filter(|s| s.held_bytes() > MAX_HELD)
            .and_then(Reassembler::hole)
    };
    if let Some((from, to)) = over(&flow.client_stream) {
        return Some(Skip::Rest(gap_message(
            "client",
            flow.client_stream.as_ref(),
            from,
            to,
        )));
    }
    if let Some((from, to)) = over(&flow.server_stream).filter(|_| !flow.server_gone) {
        let why = gap_message("server", flow.server_stream.as_ref(), from, to);
        lose_server(flow, &why, said);
    }
    None
}

/// Holes older than `stale_before`: a client gap skips the rest, a server gap its stream.
fn stale_gap<C: Conversation>(
    flow: &mut Flow<C>,
    stale_before: u64,
    said: &mut Said,
) -> Option<Skip> {
    if flow.skipped {
        return None;
    }
    let stale = |s: &Option<Reassembler>| {
        s.as_ref()
            .filter(|s| s.held_since_us().is_some_and(|at| at < stale_before))
            .and_then(Reassembler::hole)
    };
    if let Some((from, to)) = stale(&flow.client_stream) {
        return Some(Skip::Rest(gap_message(
            "client",
            flow.client_stream.as_ref(),
            from,
            to,
        )));
    }
    if let Some((from, to)) = stale(&flow.server_stream).filter(|_| !flow.server_gone) {
        let why = gap_message("server", flow.server_stream.as_ref(), from, to);
        lose_server(flow, &why, said);
    }
    None
}

fn lose_server<C: Conversation>(flow: &mut Flow<C>, why: &str, said: &mut Said) {
    flow.server_gone = true;
    if let Some(stream) = flow.server_stream.as_mut() {
        stream.drop_held();
    }
    flow.conversation.server_lost(why, said);
}

fn gap_message(side: &str, stream: Option<&Reassembler>, from: u64, to: u64) -> String {
    let seq = |at| stream.map_or(0, |s| s.seq_at(at));
    format!(
        "the {side}'s bytes at seq {}..{} were never captured",
        seq(from),
        seq(to)
    )
}

/// Skip the rest of the flow: its held bytes are dropped.
fn skip_rest<C>(flow: &mut Flow<C>) {
    flow.skipped = true;
    for stream in [&mut flow.client_stream, &mut flow.server_stream]
        .into_iter()
        .flatten()
    {
        stream.drop_held();
    }
}
