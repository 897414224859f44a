//! A connection's client bytes, from a segment to requests, and what is said
//! when they stop making sense: bytes that are not HTTP/1.x (TLS counted by
//! name), and gaps — bytes never captured.
//!
//! After a gap the stream cannot be split into requests from where it was
//! (the missing bytes may end the request they were in, or hold several), so
//! reading resumes, as for a connection captured without its SYN, at a
//! request line; but only at one that starts a segment, as a client starts
//! each request on a new write, so a line inside a body is taken for one
//! only if it begins a segment of its own (a body that holds requests, cut
//! there by the client's writes). The segments held behind the gap are
//! looked at first; while none
//! starts a request line, later segments are skipped (and counted) until one
//! does.

use super::{Flow, Lost};
use crate::http::{self, FrameError, Framer, Request};
use crate::tcp::Reassembler;
use crate::warnings::Warnings;

/// A connection skipping its bytes after a gap, up to a segment that starts
/// a request line.
#[derive(Debug, Clone, Copy)]
pub(super) struct Resync {
    /// The position (in the abandoned stream) just past the gap: a segment
    /// before it is an old one retransmitted.
    from: u64,
    /// Bytes skipped since the gap, past it.
    skipped: u64,
}

/// A segment's client bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment<'a> {
    /// The sequence number of its first byte.
    pub seq: u32,
    /// Its bytes.
    pub payload: &'a [u8],
    /// The capture time of the packet that carried it.
    pub at_us: u64,
    /// The number of that packet.
    pub packet: u64,
}

/// A client segment's bytes: fed to the flow's stream and framer (complete
/// requests go to `done`), or while it resyncs after a gap, skipped unless
/// the segment starts a request line, where reading resumes (said when
/// `announce`; the gap's warning may have said it already).
pub(super) fn bytes(
    flow: &mut Flow,
    segment: Segment<'_>,
    announce: bool,
    done: &mut Vec<Request>,
    warnings: &mut Warnings,
    lost: &mut Lost,
) {
    let Segment {
        seq,
        payload,
        at_us,
        packet,
    } = segment;
    if let Some(resync) = flow.resync.as_mut() {
        let past_gap = flow
            .stream
            .as_ref()
            .and_then(|s| s.position_of(seq))
            .is_none_or(|at| at >= resync.from);
        if !past_gap {
            return;
        }
        if !http::starts_request(payload) {
            resync.skipped += payload.len() as u64;
            return;
        }
        let skipped = resync.skipped;
        if announce {
            warnings.warn(format!(
                "connection {}: packet {packet} starts a request line: reading resumes there \
                 ({} after the gap skipped)",
                flow.label(),
                tank_plan::words::count(skipped, "byte"),
            ));
        }
        flow.resync = None;
        let stream = Reassembler::new(seq);
        flow.fin_at = flow.fin_seq.and_then(|fin| stream.position_of(fin));
        flow.stream = Some(stream);
        flow.framer = Framer::default();
    }
    let stream = flow.stream.get_or_insert_with(|| Reassembler::new(seq));
    let framer = &mut flow.framer;
    let fed = stream.segment(seq, payload, at_us, packet, &mut |bytes, at| {
        framer.feed(bytes, at, &mut |request| done.push(request))
    });
    if let Err(error) = fed {
        let requests = flow.requests + done.len() as u64;
        match error.unreadable {
            Some(kind) => lost.unreadable(kind),
            None => lost.not_http += 1,
        }
        warnings.warn(not_http(flow, packet, &error, requests));
        flow.skip_rest();
        return;
    }
    if let Some(skipped) = flow.framer.take_skipped() {
        warnings.warn(format!(
            "connection {}: captured from its middle (no SYN): its first {skipped} \
             bytes, before its first request line, are skipped",
            flow.label()
        ));
    }
}

/// The flow's stream has a gap (bytes never captured): say so, and resync
/// (see the module docs), first on the segments held behind it. `ended`:
/// the connection is over, so no later segment can come.
pub(super) fn gap(
    flow: &mut Flow,
    ended: bool,
    done: &mut Vec<Request>,
    warnings: &mut Warnings,
    lost: &mut Lost,
) {
    let Some(stream) = flow.stream.as_mut() else {
        return;
    };
    let Some((from, to)) = stream.hole() else {
        return;
    };
    let after = stream.hole_packet().unwrap_or_default();
    let seq = (stream.seq_at(from), stream.seq_at(to));
    let held = stream.take_held();
    let resumes = held
        .iter()
        .find(|h| http::starts_request(&h.data))
        .map(|h| h.packet);
    // Connections are counted, not gaps: a connection may have several.
    if !flow.gapped {
        flow.gapped = true;
        lost.gap += 1;
    }
    let requests = flow.requests + done.len() as u64;
    let next = match (resumes, ended) {
        (Some(packet), _) => {
            let skipped: u64 = held
                .iter()
                .take_while(|h| h.packet != packet)
                .map(|h| h.data.len() as u64)
                .sum();
            match skipped {
                0 => format!(
                    "reading resumes at packet {packet}, right after the gap, which starts \
                     a request line"
                ),
                _ => format!(
                    "reading resumes at packet {packet}, the first segment after the gap \
                     that starts a request line ({} after the gap skipped)",
                    tank_plan::words::count(skipped, "byte")
                ),
            }
        }
        (None, true) => "the rest of it is skipped (no segment after the gap starts a \
                         request line)"
            .to_owned(),
        (None, false) => "the rest of it is skipped up to a segment that starts a request \
                          line, if one comes"
            .to_owned(),
    };
    warnings.warn(format!(
        "connection {}: bytes at seq {}..{} ({}, before packet {after}) were never \
         captured; {} before the gap {} kept, {}{next}",
        flow.label(),
        seq.0,
        seq.1,
        tank_plan::words::count(to - from, "byte"),
        tank_plan::words::count(requests, "request"),
        if requests == 1 { "is" } else { "are" },
        dropped_partial(&flow.framer),
    ));
    flow.framer = Framer::default();
    flow.resync = Some(Resync {
        from: to,
        skipped: 0,
    });
    for held in held {
        // The resumption at a held segment is said with the gap.
        let announce = resumes.is_none();
        let segment = Segment {
            seq: held.seq,
            payload: &held.data,
            at_us: held.at_us,
            packet: held.packet,
        };
        bytes(flow, segment, announce, done, warnings, lost);
        if flow.skipped {
            return;
        }
    }
}

pub(super) fn dropped_partial(framer: &Framer) -> String {
    match framer.partial_len() {
        0 => String::new(),
        n => format!("the request it was in ({n} bytes so far) is dropped and "),
    }
}

fn not_http(flow: &Flow, packet: u64, error: &FrameError, requests: u64) -> String {
    let kept = match requests {
        0 => "none of it is imported".to_owned(),
        1 => "its 1 request before is kept, the rest of it is skipped".to_owned(),
        n => format!("its {n} requests before are kept, the rest of it is skipped"),
    };
    match error.unreadable {
        Some(_) => format!(
            "connection {}: packet {packet}: stream byte {}: {}: it cannot be read; {kept}",
            flow.label(),
            error.at,
            error.message,
        ),
        None => format!(
            "connection {}: packet {packet}: stream byte {} is not an HTTP/1.x request ({}); \
             {kept}",
            flow.label(),
            error.at,
            error.message,
        ),
    }
}
