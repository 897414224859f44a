//! One direction of a TCP connection put back into its byte stream.
//!
//! Segments arrive retransmitted, out of order, overlapping, or not at all.
//! [`Reassembler`] delivers each stream byte once, in stream order, with the
//! capture time of the packet that carried it: in-order data is passed
//! through without a copy (the common case), data ahead of a hole is copied
//! aside until the hole fills. Where segments overlap, delivered bytes are
//! never changed: each byte comes from the first segment to reach it in
//! stream order.
//!
//! Sequence numbers are 32-bit and wrap; positions here are 64-bit offsets
//! from the stream's first byte, so a long connection never confuses them.

use std::collections::BTreeMap;

/// Bytes held aside waiting for a hole to fill.
#[derive(Debug)]
struct Held {
    data: Vec<u8>,
    at_us: u64,
    /// The number of the packet that carried it.
    packet: u64,
}

/// A segment held behind a hole, taken out of the stream ([`Reassembler::take_held`]).
#[derive(Debug)]
pub(crate) struct HeldSegment {
    /// Its sequence number.
    pub seq: u32,
    /// Its bytes.
    pub data: Vec<u8>,
    /// The capture time of the packet that carried it.
    pub at_us: u64,
    /// The number of that packet.
    pub packet: u64,
}

/// A stream being reassembled (see the module docs).
#[derive(Debug)]
pub(crate) struct Reassembler {
    /// The sequence number of stream position 0.
    base: u32,
    /// Every byte before this position has been delivered.
    next: u64,
    held: BTreeMap<u64, Held>,
    held_bytes: usize,
    /// The oldest capture time among the held bytes (asked every packet, so kept).
    held_since_us: Option<u64>,
}

impl Reassembler {
    /// A stream whose first byte has sequence number `first_seq` (the SYN's
    /// plus one, or the first data seen when the SYN was not captured).
    pub(crate) fn new(first_seq: u32) -> Self {
        Reassembler {
            base: first_seq,
            next: 0,
            held: BTreeMap::new(),
            held_bytes: 0,
            held_since_us: None,
        }
    }

    /// The position of sequence number `seq`, taken to be the one nearest
    /// the delivered end (within 2 GiB either way).
    fn position(&self, seq: u32) -> i128 {
        let here = self.base.wrapping_add(self.next as u32);
        i128::from(self.next) + i128::from(seq.wrapping_sub(here) as i32)
    }

    /// The stream position of sequence number `seq` (`None` before the stream's start).
    pub(crate) fn position_of(&self, seq: u32) -> Option<u64> {
        u64::try_from(self.position(seq)).ok()
    }

    /// The sequence number of position `at` (for messages).
    pub(crate) fn seq_at(&self, at: u64) -> u32 {
        self.base.wrapping_add(at as u32)
    }

    /// Bytes delivered so far.
    pub(crate) fn delivered(&self) -> u64 {
        self.next
    }

    /// Bytes held aside, waiting for a hole to fill.
    pub(crate) fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// The capture time of the oldest bytes held aside: nothing the stream
    /// delivers later can be earlier than it (or than the packets to come).
    pub(crate) fn held_since_us(&self) -> Option<u64> {
        self.held_since_us
    }

    /// The first hole, as positions `[from, to)`: bytes missing before held ones.
    pub(crate) fn hole(&self) -> Option<(u64, u64)> {
        self.held.keys().next().map(|&to| (self.next, to))
    }

    /// The number of the first packet held behind the hole (see [`Reassembler::hole`]).
    pub(crate) fn hole_packet(&self) -> Option<u64> {
        self.held.values().next().map(|h| h.packet)
    }

    /// Take the segments held behind a hole out of the stream, in stream
    /// order (the stream is abandoned past its hole; the caller decides what
    /// of them to read).
    pub(crate) fn take_held(&mut self) -> Vec<HeldSegment> {
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        self.held_since_us = None;
        held.into_iter()
            .map(|(at, h)| HeldSegment {
                seq: self.seq_at(at),
                data: h.data,
                at_us: h.at_us,
                packet: h.packet,
            })
            .collect()
    }

    /// A segment of `data` at sequence number `seq`, captured at `at_us` in
    /// packet number `packet`: calls `deliver` with each run of new stream
    /// bytes that is now contiguous, in stream order, with the time of the
    /// packet that carried it.
    pub(crate) fn segment<E>(
        &mut self,
        seq: u32,
        data: &[u8],
        at_us: u64,
        packet: u64,
        deliver: &mut impl FnMut(&[u8], u64) -> Result<(), E>,
    ) -> Result<(), E> {
        if data.is_empty() {
            return Ok(());
        }
        let start = self.position(seq);
        let end = start + data.len() as i128;
        let next = i128::from(self.next);
        if end <= next {
            return Ok(()); // a retransmission of delivered bytes
        }
        if start <= next {
            let fresh = &data[(next - start) as usize..];
            self.next += fresh.len() as u64;
            deliver(fresh, at_us)?;
            return self.drain(deliver);
        }
        let start = start as u64;
        match self.held.get(&start) {
            Some(held) if held.data.len() >= data.len() => {}
            _ => {
                let data = data.to_vec();
                self.held_bytes += data.len();
                if let Some(old) = self.held.insert(
                    start,
                    Held {
                        data,
                        at_us,
                        packet,
                    },
                ) {
                    self.held_bytes -= old.data.len();
                }
                // A replaced entry may have been the oldest: keeping its time
                // only holds the watermark back a little, until the drain.
                self.held_since_us = Some(self.held_since_us.map_or(at_us, |m| m.min(at_us)));
            }
        }
        Ok(())
    }

    /// Deliver the held bytes the stream has reached.
    fn drain<E>(&mut self, deliver: &mut impl FnMut(&[u8], u64) -> Result<(), E>) -> Result<(), E> {
        let mut removed = false;
        let mut result = Ok(());
        while let Some(entry) = self.held.first_entry() {
            if *entry.key() > self.next {
                break;
            }
            removed = true;
            let start = *entry.key();
            let held = entry.remove();
            self.held_bytes -= held.data.len();
            let end = start + held.data.len() as u64;
            if end > self.next {
                let fresh = &held.data[(self.next - start) as usize..];
                self.next = end;
                result = deliver(fresh, held.at_us);
                if result.is_err() {
                    break;
                }
            }
        }
        if removed {
            self.held_since_us = self.held.values().map(|h| h.at_us).min();
        }
        result
    }

    /// Forget the held bytes (the stream is abandoned after a hole).
    pub(crate) fn drop_held(&mut self) {
        self.held.clear();
        self.held_bytes = 0;
        self.held_since_us = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed(r: &mut Reassembler, segments: &[(u32, &[u8], u64)]) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::new();
        for &(seq, data, at) in segments {
            r.segment::<()>(seq, data, at, 0, &mut |bytes, at| {
                out.push((bytes.to_vec(), at));
                Ok(())
            })
            .unwrap();
        }
        out
    }

    #[test]
    fn out_of_order_bytes_wait_and_keep_their_packets_time() {
        let mut r = Reassembler::new(100);
        let out = feed(&mut r, &[(103, b"def", 2), (100, b"abc", 3)]);
        assert_eq!(out, [(b"abc".to_vec(), 3), (b"def".to_vec(), 2)]);
        assert_eq!(r.held_bytes(), 0);
    }

    #[test]
    fn retransmissions_and_overlaps_deliver_each_byte_once() {
        let mut r = Reassembler::new(0);
        let out = feed(
            &mut r,
            &[
                (0, b"abc", 1),
                (0, b"abc", 2),
                (1, b"XcdZ", 3),
                (6, b"g", 4),
                (4, b"YYY", 5),
            ],
        );
        let bytes: Vec<u8> = out.iter().flat_map(|(b, _)| b.clone()).collect();
        assert_eq!(bytes, b"abcdZYY");
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut r = Reassembler::new(u32::MAX - 1);
        let out = feed(&mut r, &[(0, b"cd", 2), (u32::MAX - 1, b"ab", 1)]);
        let bytes: Vec<u8> = out.iter().flat_map(|(b, _)| b.clone()).collect();
        assert_eq!(bytes, b"abcd");
    }

    #[test]
    fn a_hole_is_reported_by_position() {
        let mut r = Reassembler::new(1000);
        feed(&mut r, &[(1000, b"ab", 1), (1005, b"x", 2)]);
        assert_eq!(r.hole(), Some((2, 5)));
        assert_eq!(r.seq_at(2), 1002);
        assert_eq!(r.held_since_us(), Some(2));
    }

    #[test]
    fn segments_held_behind_a_hole_are_taken_out_in_stream_order_with_their_packets() {
        let mut r = Reassembler::new(1000);
        r.segment::<()>(1000, b"ab", 1, 1, &mut |_, _| Ok(()))
            .unwrap();
        r.segment::<()>(1009, b"yz", 3, 3, &mut |_, _| Ok(()))
            .unwrap();
        r.segment::<()>(1005, b"x", 2, 2, &mut |_, _| Ok(()))
            .unwrap();
        assert_eq!(r.hole_packet(), Some(2));
        let held: Vec<(u32, Vec<u8>, u64)> = r
            .take_held()
            .into_iter()
            .map(|h| (h.seq, h.data, h.packet))
            .collect();
        assert_eq!(held, [(1005, b"x".to_vec(), 2), (1009, b"yz".to_vec(), 3)]);
        assert_eq!(
            (r.hole(), r.held_bytes(), r.held_since_us()),
            (None, 0, None)
        );
    }

    proptest! {
        #[test]
        fn any_segmentation_reordering_duplication_and_overlap_gives_the_stream(
            stream in proptest::collection::vec(any::<u8>(), 1..400),
            cuts in proptest::collection::vec((0usize..400, 1usize..60), 1..60),
            order in proptest::collection::vec(any::<u32>(), 60),
            isn in any::<u32>(),
        ) {
            // Segments from the cuts, plus a full cover so no hole stays open.
            let mut segments: Vec<(usize, usize)> = cuts
                .iter()
                .map(|&(at, len)| (at % stream.len(), (at % stream.len() + len).min(stream.len())))
                .collect();
            let mut at = 0;
            while at < stream.len() {
                let end = (at + 1 + (order[at % order.len()] as usize % 40)).min(stream.len());
                segments.push((at, end));
                at = end;
            }
            let n = segments.len();
            let mut keyed: Vec<(u32, (usize, usize))> =
                segments.into_iter().enumerate().map(|(i, s)| (order[i % 60] ^ i as u32, s)).collect();
            keyed.sort();
            let mut r = Reassembler::new(isn);
            let mut out = Vec::new();
            for (_, (from, to)) in keyed {
                r.segment::<()>(isn.wrapping_add(from as u32), &stream[from..to], 0, 0, &mut |b, _| {
                    out.extend_from_slice(b);
                    Ok(())
                }).unwrap();
            }
            prop_assert_eq!(out, stream, "{} segments", n);
            prop_assert_eq!(r.held_bytes(), 0);
        }
    }
}
