//! A packet capture's TCP connections become sessions of HTTP requests.
//!
//! Per connection (a 4-tuple; a new SYN on it starts a new connection) the
//! client's bytes are reassembled ([`crate::tcp`]) and split into requests
//! ([`crate::http`]); each request is stamped with the capture time of the
//! packet that carried its first byte and handed to the [`Sorter`]. What the
//! server sends is not kept: only its RST, which ends the connection.
//!
//! The watermark given to the sorter is the earliest time any connection may
//! still produce a request at: the first byte of a request not yet complete,
//! the oldest bytes held behind a hole, and the latest packet's time less a
//! slack for timestamps that go slightly backwards (packets taken on
//! different CPUs). Bytes held behind a hole that has not filled after
//! [`HOLE_TIMEOUT_US`] of capture time (or that grow past 64 MiB) are a gap:
//! reported, and the rest of that connection is skipped (a stream cannot be split into requests past
//! missing bytes without guessing).
//!
//! Memory is bounded by the budget given (`--memory`): when the requests in
//! progress hold more than it, the body of the one just fed moves to the
//! spill file ([`crate::held`]); and a connection that has sent no data (a
//! SYN of a scan or a flood, a preconnect) is forgotten after
//! [`QUIET_US`] of capture time, or sooner, oldest first, when more such
//! connections are open than the budget allows ([`QUIET_COST`] each).
//! Forgetting one loses nothing: it has no bytes, and should it send some
//! later, it is read from them as a connection whose SYN was not captured.

mod client;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use foldhash::fast::RandomState;

use crate::error::ImportError;
use crate::flows::{self, key, Segments, Table};
use crate::held::SpillFile;
use crate::http::{self, Framer, Request};
use crate::link;
use crate::order::{Kind, SortError, Sorter};
use crate::pcap::Packet;
use crate::tcp::Reassembler;
use crate::twoway::Counted;
use crate::warnings::Warnings;
use crate::TagBy;

use client::Resync;

/// How far back a packet's time may go without its request being clamped.
pub(crate) const SLACK_US: u64 = 100_000;
/// How long bytes may wait behind a hole before it is declared a gap.
pub(crate) const HOLE_TIMEOUT_US: u64 = 10_000_000;
/// Bytes a connection may hold behind a hole before it is declared a gap
/// (TCP's window keeps a real one far below; a corrupt capture need not).
const MAX_HELD: usize = 64 << 20;
/// How often (capture time) the watermark is moved and holes are checked.
const TICK_US: u64 = 10_000;
/// How long a connection that has sent no data is kept (capture time).
pub(crate) const QUIET_US: u64 = 10_000_000;
/// Memory budgeted per connection that has sent no data: its entry, flow and
/// stream state (about 0.5 KB) with room for the tables' growth.
pub(crate) const QUIET_COST: usize = 2048;

/// One connection.
struct Flow {
    client: SocketAddr,
    server: SocketAddr,
    session: u64,
    /// The client's SYN sequence number, when it was captured.
    isn: Option<u32>,
    /// The client's stream (from its SYN, or from its first data seen).
    stream: Option<Reassembler>,
    framer: Framer,
    /// Stream position of the client's FIN, once seen, and its sequence number.
    fin_at: Option<u64>,
    fin_seq: Option<u32>,
    /// Not reading this flow (another port, or after non-HTTP bytes or a
    /// truncated packet).
    skipped: bool,
    /// After a gap: skipping bytes up to a segment that starts a request line.
    resync: Option<Resync>,
    /// Its ends were guessed (no SYN or SYN-ACK captured, no `--server-port`).
    guessed: bool,
    /// The end taken for the server has sent bytes (so a later segment of
    /// it starting a request line is inside its reply, not a request).
    server_spoke: bool,
    /// A gap in its bytes has been counted (see [`Lost`]).
    gapped: bool,
    /// Opened by a SYN-ACK (its SYN not captured): forgotten without data,
    /// it is not counted, as it may be a SYN-ACK sent again after its
    /// connection closed.
    by_syn_ack: bool,
    requests: u64,
    last_at_us: u64,
    /// Whether the client has sent any data.
    data: bool,
    /// The request in progress's memory, as last counted in the capture's total.
    accounted: usize,
}

impl Flow {
    fn label(&self) -> String {
        format!("{}→{}", self.client, self.server)
    }

    fn hold(&self) -> Option<u64> {
        if self.skipped || self.resync.is_some() {
            return None;
        }
        let held = self.stream.as_ref().and_then(Reassembler::held_since_us);
        match (self.framer.in_progress_since(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Flow {
    /// Skip the rest of the flow: its held bytes and unfinished request are dropped.
    fn skip_rest(&mut self) {
        self.skipped = true;
        self.resync = None;
        self.framer = Framer::default();
        if let Some(stream) = self.stream.as_mut() {
            stream.drop_held();
        }
    }

    /// Whether the client's bytes are not being read (for now, after a gap).
    fn not_reading(&self) -> bool {
        self.skipped || self.resync.is_some()
    }

    /// The ends were guessed the wrong way round: the "server" began with a
    /// request line (`payload`, its first bytes) while the "client" sent
    /// none. Its first bytes only: a server's reply body may start with a
    /// request line (TRACE, an echo), and that is no reason to turn round.
    fn reversed(&self, from_server: bool, payload: &[u8]) -> bool {
        self.guessed
            && from_server
            && !self.server_spoke
            && self.requests == 0
            && self.framer.still_searching().is_some()
            && http::starts_request(payload)
    }
}

/// Connections whose requests were lost (some or all), by why: for the
/// summary (TLS) and the warning of an import that found none.
#[derive(Debug, Default)]
struct Lost {
    unreadable: BTreeMap<&'static str, u64>,
    not_http: u64,
    truncated: u64,
    gap: u64,
    no_request_line: u64,
    ended_inside: u64,
}

impl Lost {
    fn unreadable(&mut self, kind: &'static str) {
        *self.unreadable.entry(kind).or_default() += 1;
    }
}

/// Turns packets into sorted request items (see the module docs).
pub(crate) struct Capture {
    server_port: Option<u16>,
    tag_by: TagBy,
    table: Table<Flow>,
    syn_ports: HashSet<u16, RandomState>,
    skipped_ports: HashMap<u16, u64, RandomState>,
    next_session: u64,
    latest_us: u64,
    next_tick_us: u64,
    done: Vec<Request>,
    segments: Segments,
    /// Where request bodies spill, and the memory requests in progress may hold.
    spill: Arc<SpillFile>,
    in_progress_budget: usize,
    /// Memory held by requests in progress, all connections.
    in_progress: usize,
    /// Connections without data yet, in the order they opened (time, slot,
    /// session; an entry whose slot holds another session, or one with data, is stale).
    quiet: VecDeque<(u64, usize, u64)>,
    /// How many are open, and the most allowed at once.
    quiet_open: usize,
    quiet_limit: usize,
    /// Connections forgotten without ever sending data.
    forgotten: u64,
    lost: Lost,
}

impl Capture {
    /// Read connections to `server_port` (or, without it, each connection's
    /// server as its SYN says, else a port that received SYNs, else the lower port),
    /// holding at most about `budget` bytes of requests in progress (the rest
    /// goes to `spill`) and of connections without data.
    pub(crate) fn new(
        server_port: Option<u16>,
        tag_by: TagBy,
        budget: usize,
        spill: Arc<SpillFile>,
    ) -> Self {
        Capture {
            server_port,
            tag_by,
            table: Table::default(),
            syn_ports: HashSet::default(),
            skipped_ports: HashMap::default(),
            next_session: 0,
            latest_us: 0,
            next_tick_us: 0,
            done: Vec::new(),
            segments: Segments::default(),
            spill,
            in_progress_budget: budget,
            in_progress: 0,
            quiet: VecDeque::new(),
            quiet_open: 0,
            quiet_limit: (budget / QUIET_COST).max(1024),
            forgotten: 0,
            lost: Lost::default(),
        }
    }

    /// Connections forgotten without ever sending data (see the module docs).
    pub(crate) fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// Take one packet.
    pub(crate) fn packet(
        &mut self,
        packet: Packet<'_>,
        path: &str,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
        out: &mut impl FnMut(crate::order::Item) -> Result<(), SortError>,
    ) -> Result<(), ImportError> {
        self.latest_us = self.latest_us.max(packet.at_us);
        let Some(segment) = self.segments.of(&packet, path, warnings)? else {
            return self.tick(sorter, warnings, out, path);
        };
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
                    self.open(key, &segment)
                } else {
                    slot
                }
            }
            // A SYN-ACK names its connection's server (its sender) even
            // when the SYN was not captured.
            None if segment.syn || !segment.payload.is_empty() || segment.cut => {
                self.open(key, &segment)
            }
            None => return self.tick(sorter, warnings, out, path),
        };
        let Some(flow) = self.table.get_mut(slot) else {
            return self.tick(sorter, warnings, out, path);
        };
        if flow.reversed(segment.src == flow.server, segment.payload) {
            // Guessed the wrong way: the other end is the client.
            std::mem::swap(&mut flow.client, &mut flow.server);
            flow.guessed = false;
            flow.stream = None;
            flow.framer = Framer::mid_stream();
            flow.fin_at = None;
            flow.fin_seq = None;
        }
        let from_client = segment.src == flow.client;
        if !from_client && !segment.payload.is_empty() {
            flow.server_spoke = true;
        }
        let carries = !segment.payload.is_empty() || segment.cut;
        if from_client && carries && !flow.data {
            flow.data = true;
            self.quiet_open -= 1;
        }
        if !from_client {
            if segment.rst {
                self.close(slot, sorter, warnings, path)?;
            }
            return self.tick(sorter, warnings, out, path);
        }
        if flow.skipped {
            if segment.rst || segment.fin {
                self.close(slot, sorter, warnings, path)?;
            }
            return self.tick(sorter, warnings, out, path);
        }
        if opening {
            flow.isn = Some(segment.seq);
            flow.stream
                .get_or_insert_with(|| Reassembler::new(segment.seq.wrapping_add(1)));
        }
        let data_seq = segment.seq.wrapping_add(u32::from(segment.syn));
        if !segment.payload.is_empty() {
            let bytes = client::Segment {
                seq: data_seq,
                payload: segment.payload,
                at_us: packet.at_us,
                packet: packet.number,
            };
            client::bytes(flow, bytes, true, &mut self.done, warnings, &mut self.lost);
            let overfull = flow
                .stream
                .as_ref()
                .is_some_and(|s| !flow.skipped && s.held_bytes() > MAX_HELD);
            if overfull {
                client::gap(flow, false, &mut self.done, warnings, &mut self.lost);
            }
        }
        // Headers captured without all their payload (none, with a snap
        // length that kept only headers): the bytes are lost all the same.
        // Told by the IP header's length, not the frame's: a snap length
        // that cuts only Ethernet padding loses nothing.
        if segment.cut && !flow.not_reading() {
            self.lost.truncated += 1;
            let requests = flow.requests + self.done.len() as u64;
            warnings.warn(format!(
                "packet {}: truncated (captured {} of {} bytes{}): connection {} loses \
                 the rest of it; {} before {} kept, {}the rest of it is skipped",
                packet.number,
                packet.data.len(),
                packet.wire_len,
                if segment.payload.is_empty() {
                    ", none of its TCP payload"
                } else {
                    ""
                },
                flow.label(),
                tank_plan::words::count(requests, "request"),
                if requests == 1 { "is" } else { "are" },
                client::dropped_partial(&flow.framer),
            ));
            flow.skip_rest();
        }
        if segment.fin {
            let fin_seq = data_seq.wrapping_add(segment.payload.len() as u32);
            flow.fin_seq = Some(fin_seq);
            flow.fin_at = flow.stream.as_ref().and_then(|s| s.position_of(fin_seq));
        }
        self.push_done(slot, sorter).map_err(|e| e.at(path))?;
        self.account(slot, path)?;
        let ended = segment.rst
            || self.table.get(slot).is_some_and(|f| {
                matches!((f.fin_at, &f.stream), (Some(fin), Some(s)) if s.delivered() >= fin)
                    || (f.not_reading() && f.fin_at.is_some())
            });
        if ended {
            self.close(slot, sorter, warnings, path)?;
        } else {
            self.update_hold(slot);
        }
        self.tick(sorter, warnings, out, path)
    }

    /// End of capture: close every connection, in the order they were
    /// opened. Returns what was counted: the connections skipped for their
    /// port, by port (port, count), most first; those unreadable (TLS); the
    /// frames skipped; why requests were lost.
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
        let lost = &self.lost;
        Ok(Counted {
            skipped_ports,
            unreadable: lost
                .unreadable
                .iter()
                .map(|(kind, n)| ((*kind).to_owned(), *n))
                .collect(),
            refused: 0,
            skipped_frames,
            lost: vec![
                ("not HTTP/1.x", lost.not_http),
                ("cut by a truncated packet", lost.truncated),
                ("cut by a gap", lost.gap),
                (
                    "captured mid-stream with no request line",
                    lost.no_request_line,
                ),
                ("ended inside their first request", lost.ended_inside),
            ],
            connections: self.next_session,
        })
    }

    fn open(&mut self, key: flows::Key, segment: &link::Segment<'_>) -> usize {
        let (client, server) = flows::ends(segment, |port| match self.server_port {
            Some(ours) => port == ours,
            None => self.syn_ports.contains(&port),
        });
        let skipped = self.server_port.is_some_and(|port| server.port() != port);
        let guessed = !segment.syn && self.server_port.is_none();
        if skipped {
            *self.skipped_ports.entry(server.port()).or_default() += 1;
        }
        let flow = Flow {
            client,
            server,
            session: self.next_session,
            isn: None,
            stream: None,
            // Without its SYN the capture may begin inside a request.
            framer: if segment.syn {
                Framer::default()
            } else {
                Framer::mid_stream()
            },
            fin_at: None,
            fin_seq: None,
            skipped,
            resync: None,
            guessed,
            server_spoke: false,
            gapped: false,
            by_syn_ack: segment.syn && segment.ack,
            requests: 0,
            last_at_us: 0,
            data: false,
            accounted: 0,
        };
        self.next_session += 1;
        let slot = self.table.insert(key, flow);
        self.quiet
            .push_back((self.latest_us, slot, self.next_session - 1));
        self.quiet_open += 1;
        slot
    }

    /// Count the flow's request in progress in the total; over the budget,
    /// move its body to the spill file.
    fn account(&mut self, slot: usize, path: &str) -> Result<(), ImportError> {
        let Some(flow) = self.table.get_mut(slot) else {
            return Ok(());
        };
        let others = self.in_progress - flow.accounted;
        if others + flow.framer.held() > self.in_progress_budget {
            flow.framer
                .spill(&self.spill)
                .map_err(|e| SortError::Temp(e).at(path))?;
        }
        flow.accounted = flow.framer.held();
        self.in_progress = others + flow.accounted;
        Ok(())
    }

    /// Hand the flow's completed requests to the sorter.
    fn push_done(&mut self, slot: usize, sorter: &mut Sorter) -> Result<(), SortError> {
        let Some(flow) = self.table.get_mut(slot) else {
            return Ok(());
        };
        Self::push(&mut self.done, self.tag_by, flow, sorter)
    }

    /// Hand the completed requests of `flow` (out of the table) to the sorter.
    fn requests_of(&mut self, flow: &mut Flow, sorter: &mut Sorter) -> Result<(), SortError> {
        Self::push(&mut self.done, self.tag_by, flow, sorter)
    }

    fn push(
        done: &mut Vec<Request>,
        tag_by: TagBy,
        flow: &mut Flow,
        sorter: &mut Sorter,
    ) -> Result<(), SortError> {
        for request in done.drain(..) {
            // A session's requests never go back in time, whatever the clocks did.
            let at_us = request.at_us.max(flow.last_at_us);
            let label = (flow.requests == 0).then(|| flow.label());
            flow.requests += 1;
            flow.last_at_us = at_us;
            let tag = crate::tag(tag_by, &request.bytes.head);
            sorter.push(
                at_us,
                flow.session,
                Kind::Request {
                    label,
                    tag,
                    bytes: request.bytes,
                },
            )?;
        }
        Ok(())
    }

    fn update_hold(&mut self, slot: usize) {
        if let Some(hold) = self.table.get(slot).map(Flow::hold) {
            self.table.set_hold(slot, hold);
        }
    }

    /// The connection ends: report what it leaves unfinished, end its session.
    fn close(
        &mut self,
        slot: usize,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
        path: &str,
    ) -> Result<(), ImportError> {
        let Some(key) = self.table.get(slot).map(|f| key(f.client, f.server)) else {
            return Ok(());
        };
        let Some(mut flow) = self.table.remove_if(slot, &key, |_| true) else {
            return Ok(());
        };
        self.in_progress -= flow.accounted;
        if !flow.data {
            self.quiet_open -= 1;
        }
        if !flow.skipped {
            // Each gap resyncs past it (on the segments held behind it) or ends the reading.
            while flow.stream.as_ref().and_then(Reassembler::hole).is_some() && !flow.skipped {
                client::gap(&mut flow, true, &mut self.done, warnings, &mut self.lost);
            }
            self.requests_of(&mut flow, sorter)
                .map_err(|e| e.at(path))?;
        }
        if !flow.not_reading() && flow.stream.is_some() {
            if let Some(skipped) = flow.framer.still_searching().filter(|n| *n > 0) {
                self.lost.no_request_line += 1;
                warnings.warn(format!(
                    "connection {}: captured from its middle (no SYN), and none of its \
                     {skipped} bytes starts a request line: skipped",
                    flow.label()
                ));
            } else if flow.framer.partial_len() > 0 && flow.framer.partial_has_request_line() {
                self.lost.ended_inside += u64::from(flow.requests == 0);
                warnings.warn(format!(
                    "connection {}: ends inside a request ({} from stream byte {}); \
                     that request is dropped",
                    flow.label(),
                    tank_plan::words::count(flow.framer.partial_len() as u64, "byte"),
                    flow.framer.offset() - flow.framer.partial_len() as u64,
                ));
            } else if flow.framer.partial_len() > 0 {
                self.lost.not_http += u64::from(flow.requests == 0);
                warnings.warn(format!(
                    "connection {}: ends with {} (from stream byte {}) that never made \
                     a whole request line; dropped",
                    flow.label(),
                    tank_plan::words::count(flow.framer.partial_len() as u64, "byte"),
                    flow.framer.offset() - flow.framer.partial_len() as u64,
                ));
            }
        }
        if flow.requests > 0 {
            sorter
                .push(flow.last_at_us, flow.session, Kind::End)
                .map_err(|e| e.at(path))?;
        }
        flow.stream = None;
        Ok(())
    }

    /// Forget connections without data past [`QUIET_US`], or past the
    /// most allowed at once (oldest first).
    fn forget_quiet(&mut self) {
        let stale_before = self.latest_us.saturating_sub(QUIET_US);
        while let Some(&(opened_us, slot, session)) = self.quiet.front() {
            let quiet = self
                .table
                .get(slot)
                .filter(|f| f.session == session && !f.data)
                .map(|f| (key(f.client, f.server), f.by_syn_ack));
            if quiet.is_some() && opened_us >= stale_before && self.quiet_open <= self.quiet_limit {
                break;
            }
            self.quiet.pop_front();
            if let Some((key, by_syn_ack)) = quiet {
                self.table.remove_if(slot, &key, |_| true);
                self.quiet_open -= 1;
                self.forgotten += u64::from(!by_syn_ack);
            }
        }
    }

    /// Every [`TICK_US`] of capture time: forget quiet connections, declare
    /// stale holes, move the watermark.
    fn tick(
        &mut self,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
        out: &mut impl FnMut(crate::order::Item) -> Result<(), SortError>,
        path: &str,
    ) -> Result<(), ImportError> {
        if self.quiet_open > self.quiet_limit {
            self.forget_quiet();
        }
        if self.latest_us < self.next_tick_us {
            return Ok(());
        }
        self.forget_quiet();
        self.next_tick_us = self.latest_us + TICK_US;
        let stale_before = self.latest_us.saturating_sub(HOLE_TIMEOUT_US);
        for slot in self.table.held_before(stale_before) {
            let Some(flow) = self.table.get_mut(slot) else {
                continue;
            };
            let stale = flow
                .stream
                .as_ref()
                .and_then(Reassembler::held_since_us)
                .is_some_and(|at| at < stale_before);
            if stale && !flow.not_reading() {
                client::gap(flow, false, &mut self.done, warnings, &mut self.lost);
                self.push_done(slot, sorter).map_err(|e| e.at(path))?;
                self.account(slot, path)?;
                self.update_hold(slot);
            }
        }
        let watermark = self
            .table
            .earliest_hold()
            .unwrap_or(u64::MAX)
            .min(self.latest_us.saturating_sub(SLACK_US));
        sorter.release(watermark, out).map_err(|e| e.at(path))
    }
}
