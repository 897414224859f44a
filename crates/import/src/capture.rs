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

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use foldhash::fast::RandomState;

use crate::error::ImportError;
use crate::held::SpillFile;
use crate::http::{FrameError, Framer, Request};
use crate::link::{self, NotTcp};
use crate::order::{Kind, SortError, Sorter};
use crate::pcap::Packet;
use crate::tcp::Reassembler;
use crate::warnings::Warnings;
use crate::TagBy;

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

/// The two ends of a connection, in a canonical order (either direction finds it).
type Key = (SocketAddr, SocketAddr);

fn key(a: SocketAddr, b: SocketAddr) -> Key {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

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
    /// Stream position of the client's FIN, once seen.
    fin_at: Option<u64>,
    /// Not reading this flow (another port, or after a gap or non-HTTP bytes).
    skipped: bool,
    requests: u64,
    last_at_us: u64,
    hold_us: Option<u64>,
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
        if self.skipped {
            return None;
        }
        let held = self.stream.as_ref().and_then(Reassembler::held_since_us);
        match (self.framer.in_progress_since(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Turns packets into sorted request items (see the module docs).
pub(crate) struct Capture {
    server_port: Option<u16>,
    tag_by: TagBy,
    flows: HashMap<Key, usize, RandomState>,
    slab: Vec<Option<Flow>>,
    free: Vec<usize>,
    holds: BTreeSet<(u64, usize)>,
    syn_ports: HashSet<u16, RandomState>,
    skipped_ports: HashMap<u16, u64, RandomState>,
    next_session: u64,
    latest_us: u64,
    next_tick_us: u64,
    done: Vec<Request>,
    fragments: u64,
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
            flows: HashMap::default(),
            slab: Vec::new(),
            free: Vec::new(),
            holds: BTreeSet::new(),
            syn_ports: HashSet::default(),
            skipped_ports: HashMap::default(),
            next_session: 0,
            latest_us: 0,
            next_tick_us: 0,
            done: Vec::new(),
            fragments: 0,
            spill,
            in_progress_budget: budget,
            in_progress: 0,
            quiet: VecDeque::new(),
            quiet_open: 0,
            quiet_limit: (budget / QUIET_COST).max(1024),
            forgotten: 0,
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
        let segment = match link::segment(packet.link, packet.data) {
            Ok(segment) => segment,
            Err(NotTcp::Other) => return self.tick(sorter, warnings, out, path),
            Err(NotTcp::Fragment) => {
                self.fragments += 1;
                if self.fragments == 1 {
                    warnings.warn(format!(
                        "packet {}: an IP fragment; fragments are not reassembled (all are skipped)",
                        packet.number
                    ));
                }
                return self.tick(sorter, warnings, out, path);
            }
            Err(NotTcp::Malformed) => {
                warnings.warn(format!(
                    "packet {}: its headers are cut short or malformed; skipped",
                    packet.number
                ));
                return self.tick(sorter, warnings, out, path);
            }
            Err(NotTcp::UnknownLink) => {
                return Err(ImportError::input(
                    path,
                    format!(
                        "packet {} has link type {}; expected Ethernet, Linux cooked (v1, v2), \
                         raw IP or loopback frames",
                        packet.number, packet.link
                    ),
                ))
            }
        };
        let opening = segment.syn && !segment.ack;
        if opening {
            self.syn_ports.insert(segment.dst.port());
        }
        let key = key(segment.src, segment.dst);
        let slot = match self.flows.get(&key) {
            Some(&slot) => {
                let new_connection = opening
                    && self.slab[slot]
                        .as_ref()
                        .is_some_and(|f| f.isn != Some(segment.seq));
                if new_connection {
                    self.close(slot, sorter, warnings, path)?;
                    self.open(key, &segment)
                } else {
                    slot
                }
            }
            None if opening || !segment.payload.is_empty() => self.open(key, &segment),
            None => return self.tick(sorter, warnings, out, path),
        };
        let Some(flow) = self.slab[slot].as_mut() else {
            return self.tick(sorter, warnings, out, path);
        };
        let from_client = segment.src == flow.client;
        if from_client && !segment.payload.is_empty() && !flow.data {
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
            let stream = flow
                .stream
                .get_or_insert_with(|| Reassembler::new(data_seq));
            let framer = &mut flow.framer;
            let done = &mut self.done;
            let fed = stream.segment(data_seq, segment.payload, packet.at_us, &mut |bytes, at| {
                framer.feed(bytes, at, &mut |request| done.push(request))
            });
            if let Err(error) = fed {
                let message = not_http(flow, packet.number, &error, self.done.len());
                warnings.warn(message);
                skip_rest(flow);
            }
            if let Some(skipped) = flow.framer.take_skipped() {
                warnings.warn(format!(
                    "connection {}: captured from its middle (no SYN): its first {skipped} \
                     bytes, before its first request line, are skipped",
                    flow.label()
                ));
            }
            let overfull = flow
                .stream
                .as_ref()
                .filter(|s| !flow.skipped && s.held_bytes() > MAX_HELD);
            if let Some((stream, (from, to))) = overfull.and_then(|s| Some((s, s.hole()?))) {
                warnings.warn(gap(flow, stream, from, to));
                skip_rest(flow);
            }
            let truncated = packet.data.len() < packet.wire_len as usize;
            if truncated && !flow.skipped {
                warnings.warn(format!(
                    "packet {}: truncated (captured {} of {} bytes): connection {} loses \
                     the rest of it; its {} requests before are kept, {}the rest of it is skipped",
                    packet.number,
                    packet.data.len(),
                    packet.wire_len,
                    flow.label(),
                    flow.requests + self.done.len() as u64,
                    dropped_partial(&flow.framer),
                ));
                skip_rest(flow);
            }
        }
        if segment.fin {
            let fin_seq = data_seq.wrapping_add(segment.payload.len() as u32);
            flow.fin_at = flow.stream.as_ref().and_then(|s| s.position_of(fin_seq));
        }
        self.push_done(slot, sorter).map_err(|e| e.at(path))?;
        self.account(slot, path)?;
        let ended = segment.rst
            || self.slab[slot].as_ref().is_some_and(|f| {
                matches!((f.fin_at, &f.stream), (Some(fin), Some(s)) if s.delivered() >= fin)
                    || (f.skipped && f.fin_at.is_some())
            });
        if ended {
            self.close(slot, sorter, warnings, path)?;
        } else {
            self.update_hold(slot);
        }
        self.tick(sorter, warnings, out, path)
    }

    /// End of capture: close every connection, in the order they were
    /// opened. Returns the connections skipped for their port, by port
    /// (port, count), most first.
    pub(crate) fn finish(
        mut self,
        path: &str,
        sorter: &mut Sorter,
        warnings: &mut Warnings,
    ) -> Result<Vec<(u16, u64)>, ImportError> {
        let mut open: Vec<(u64, usize)> = self
            .slab
            .iter()
            .enumerate()
            .filter_map(|(slot, f)| f.as_ref().map(|f| (f.session, slot)))
            .collect();
        open.sort_unstable();
        for (_, slot) in open {
            self.close(slot, sorter, warnings, path)?;
        }
        if self.fragments > 1 {
            warnings.warn(format!(
                "{} IP fragments skipped in all (fragments are not reassembled)",
                self.fragments
            ));
        }
        let mut skipped_ports: Vec<(u16, u64)> = self.skipped_ports.into_iter().collect();
        skipped_ports.sort_unstable_by_key(|&(port, n)| (std::cmp::Reverse(n), port));
        Ok(skipped_ports)
    }

    fn open(&mut self, key: Key, segment: &link::Segment<'_>) -> usize {
        let (client, server) = if segment.syn {
            if segment.ack {
                (segment.dst, segment.src)
            } else {
                (segment.src, segment.dst)
            }
        } else {
            let serves = |a: SocketAddr| match self.server_port {
                Some(port) => a.port() == port,
                None => self.syn_ports.contains(&a.port()),
            };
            match (serves(segment.src), serves(segment.dst)) {
                (true, false) => (segment.dst, segment.src),
                (false, true) => (segment.src, segment.dst),
                _ if segment.src.port() < segment.dst.port() => (segment.dst, segment.src),
                _ => (segment.src, segment.dst),
            }
        };
        let skipped = self.server_port.is_some_and(|port| server.port() != port);
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
            skipped,
            requests: 0,
            last_at_us: 0,
            hold_us: None,
            data: false,
            accounted: 0,
        };
        self.next_session += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot] = Some(flow);
                slot
            }
            None => {
                self.slab.push(Some(flow));
                self.slab.len() - 1
            }
        };
        self.flows.insert(key, slot);
        self.quiet
            .push_back((self.latest_us, slot, self.next_session - 1));
        self.quiet_open += 1;
        slot
    }

    /// Count the flow's request in progress in the total; over the budget,
    /// move its body to the spill file.
    fn account(&mut self, slot: usize, path: &str) -> Result<(), ImportError> {
        let Some(flow) = self.slab[slot].as_mut() else {
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
        let Some(flow) = self.slab[slot].as_mut() else {
            return Ok(());
        };
        for request in self.done.drain(..) {
            // A session's requests never go back in time, whatever the clocks did.
            let at_us = request.at_us.max(flow.last_at_us);
            let label = (flow.requests == 0).then(|| flow.label());
            flow.requests += 1;
            flow.last_at_us = at_us;
            let tag = crate::tag(self.tag_by, &request.bytes.head);
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
        let Some(flow) = self.slab[slot].as_mut() else {
            return;
        };
        let hold = flow.hold();
        if hold != flow.hold_us {
            if let Some(old) = flow.hold_us {
                self.holds.remove(&(old, slot));
            }
            if let Some(new) = hold {
                self.holds.insert((new, slot));
            }
            flow.hold_us = hold;
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
        let Some(mut flow) = self.slab[slot].take() else {
            return Ok(());
        };
        self.free.push(slot);
        if let Some(hold) = flow.hold_us {
            self.holds.remove(&(hold, slot));
        }
        self.flows.remove(&key(flow.client, flow.server));
        self.in_progress -= flow.accounted;
        if !flow.data {
            self.quiet_open -= 1;
        }
        if !flow.skipped {
            if let Some(stream) = &flow.stream {
                if let Some((from, to)) = stream.hole() {
                    warnings.warn(gap(&flow, stream, from, to));
                } else if let Some(skipped) = flow.framer.still_searching().filter(|n| *n > 0) {
                    warnings.warn(format!(
                        "connection {}: captured from its middle (no SYN), and none of its \
                         {skipped} bytes starts a request line: skipped",
                        flow.label()
                    ));
                } else if flow.framer.partial_len() > 0 {
                    warnings.warn(format!(
                        "connection {}: ends inside a request ({} bytes from stream byte {}); \
                         that request is dropped",
                        flow.label(),
                        flow.framer.partial_len(),
                        flow.framer.offset() - flow.framer.partial_len() as u64,
                    ));
                }
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
            let quiet = self.slab[slot]
                .as_ref()
                .is_some_and(|f| f.session == session && !f.data);
            if quiet && opened_us >= stale_before && self.quiet_open <= self.quiet_limit {
                break;
            }
            self.quiet.pop_front();
            if let Some(flow) = self.slab[slot].take_if(|_| quiet) {
                self.flows.remove(&key(flow.client, flow.server));
                self.free.push(slot);
                self.quiet_open -= 1;
                self.forgotten += 1;
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
        let stale: Vec<usize> = self
            .holds
            .iter()
            .take_while(|(at, _)| *at < stale_before)
            .map(|&(_, slot)| slot)
            .collect();
        for slot in stale {
            let Some(flow) = self.slab[slot].as_mut() else {
                continue;
            };
            let Some(stream) = &flow.stream else { continue };
            if stream.held_since_us().is_some_and(|at| at < stale_before) {
                if let Some((from, to)) = stream.hole() {
                    warnings.warn(gap(flow, stream, from, to));
                }
                skip_rest(flow);
                self.update_hold(slot);
            }
        }
        let watermark = self
            .holds
            .first()
            .map_or(u64::MAX, |&(at, _)| at)
            .min(self.latest_us.saturating_sub(SLACK_US));
        sorter.release(watermark, out).map_err(|e| e.at(path))
    }
}

/// Skip the rest of the flow: its held bytes and unfinished request are dropped.
fn skip_rest(flow: &mut Flow) {
    flow.skipped = true;
    flow.framer = Framer::default();
    if let Some(stream) = flow.stream.as_mut() {
        stream.drop_held();
    }
}

fn dropped_partial(framer: &Framer) -> String {
    match framer.partial_len() {
        0 => String::new(),
        n => format!("the request it was in ({n} bytes so far) is dropped and "),
    }
}

fn gap(flow: &Flow, stream: &Reassembler, from: u64, to: u64) -> String {
    format!(
        "connection {}: bytes at seq {}..{} were never captured; its {} requests before \
         the gap are kept, {}the rest of it is skipped",
        flow.label(),
        stream.seq_at(from),
        stream.seq_at(to),
        flow.requests,
        dropped_partial(&flow.framer),
    )
}

fn not_http(flow: &Flow, packet: u64, error: &FrameError, done: usize) -> String {
    format!(
        "connection {}: packet {packet}: stream byte {} is not an HTTP/1.x request ({}); \
         its {} requests before are kept, the rest of it is skipped",
        flow.label(),
        error.at,
        error.message,
        flow.requests + done as u64,
    )
}
