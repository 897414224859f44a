//! What the capture readers share — HTTP's ([`crate::capture`]) and the other
//! protocols' ([`crate::twoway`]): a packet's TCP segment (a packet that is
//! none is said, or refused for an unknown link), the table of open
//! connections (slots reused, found by either end, ordered by the earliest
//! time each may still hand out a request), and which end of a connection is
//! its server.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;

use foldhash::fast::RandomState;

use crate::error::ImportError;
use crate::link::{self, Encap, NotTcp, Segment};
use crate::pcap::Packet;
use crate::warnings::Warnings;

/// The two ends of a connection, in a canonical order (either direction finds it).
pub(crate) type Key = (SocketAddr, SocketAddr);

/// The key of the connection between `a` and `b`.
pub(crate) fn key(a: SocketAddr, b: SocketAddr) -> Key {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Packets to TCP segments, counting the IP fragments and the frames of
/// encapsulations not read that were skipped.
#[derive(Debug, Default)]
pub(crate) struct Segments {
    fragments: u64,
    /// Frames whose headers are cut short or malformed.
    malformed: u64,
    /// Frames skipped for their encapsulation, by kind, in the order first seen.
    encapsulated: Vec<(Encap, u64)>,
}

impl Segments {
    /// The packet's TCP segment; `None` for a packet that carries none (an
    /// IP fragment is said once, a malformed packet each time); an error for
    /// a link type that is not read.
    pub(crate) fn of<'a>(
        &mut self,
        packet: &Packet<'a>,
        path: &str,
        warnings: &mut Warnings,
    ) -> Result<Option<Segment<'a>>, ImportError> {
        match link::segment(packet.link, packet.data) {
            Ok(segment) => Ok(Some(segment)),
            Err(NotTcp::Other) => Ok(None),
            Err(NotTcp::Encapsulated(encap)) => {
                match self.encapsulated.iter_mut().find(|(e, _)| *e == encap) {
                    Some((_, n)) => *n += 1,
                    None => {
                        self.encapsulated.push((encap, 1));
                        warnings.warn(format!(
                            "packet {}: a frame in {encap}, which is not read; such frames \
                             are skipped (counted in the summary)",
                            packet.number
                        ));
                    }
                }
                Ok(None)
            }
            Err(NotTcp::Fragment) => {
                self.fragments += 1;
                if self.fragments == 1 {
                    warnings.warn(format!(
                        "packet {}: an IP fragment; fragments are not reassembled (all are skipped)",
                        packet.number
                    ));
                }
                Ok(None)
            }
            Err(NotTcp::Malformed) => {
                self.malformed += 1;
                warnings.warn(format!(
                    "packet {}: its headers are cut short or malformed; skipped",
                    packet.number
                ));
                Ok(None)
            }
            Err(NotTcp::UnknownLink) => Err(ImportError::input(
                path,
                format!(
                    "packet {} has link type {}; expected Ethernet, Linux cooked (v1, v2), \
                     raw IP or loopback frames",
                    packet.number, packet.link
                ),
            )),
        }
    }

    /// The capture ended: the fragments skipped in all, when more than the
    /// one said (past the warnings' limit too). Returns the frames skipped,
    /// by kind, for the summary.
    pub(crate) fn finish(&self, warnings: &mut Warnings) -> Vec<(String, u64)> {
        if self.fragments > 1 {
            warnings.always(format!(
                "{} IP fragments skipped in all (fragments are not reassembled)",
                self.fragments
            ));
        }
        let fragments = (self.fragments > 0).then(|| ("IP fragment".to_owned(), self.fragments));
        let malformed = (self.malformed > 0)
            .then(|| ("headers cut short or malformed".to_owned(), self.malformed));
        fragments
            .into_iter()
            .chain(malformed)
            .chain(self.encapsulated.iter().map(|(e, n)| (e.to_string(), *n)))
            .collect()
    }
}

/// The client and the server of the connection `segment` opens: as its SYN
/// (or SYN-ACK, whose sender is the server) says, else the end whose port
/// `serves`, else the lower port.
pub(crate) fn ends(
    segment: &Segment<'_>,
    serves: impl Fn(u16) -> bool,
) -> (SocketAddr, SocketAddr) {
    if segment.syn {
        return if segment.ack {
            (segment.dst, segment.src)
        } else {
            (segment.src, segment.dst)
        };
    }
    match (serves(segment.src.port()), serves(segment.dst.port())) {
        (true, false) => (segment.dst, segment.src),
        (false, true) => (segment.src, segment.dst),
        _ if segment.src.port() < segment.dst.port() => (segment.dst, segment.src),
        _ => (segment.src, segment.dst),
    }
}

/// The open connections: each in a slot (reused once free), found by its
/// key, and its hold — the earliest time it may still hand out a request —
/// kept in order, so the watermark is the first and stale ones come first.
pub(crate) struct Table<F> {
    flows: HashMap<Key, usize, RandomState>,
    slab: Vec<Option<F>>,
    /// Each slot's hold, as in `holds`.
    hold_of: Vec<Option<u64>>,
    free: Vec<usize>,
    holds: BTreeSet<(u64, usize)>,
}

impl<F> Default for Table<F> {
    fn default() -> Self {
        Table {
            flows: HashMap::default(),
            slab: Vec::new(),
            hold_of: Vec::new(),
            free: Vec::new(),
            holds: BTreeSet::new(),
        }
    }
}

impl<F> Table<F> {
    /// The slot of the connection `key`, if open.
    pub(crate) fn find(&self, key: &Key) -> Option<usize> {
        self.flows.get(key).copied()
    }

    /// The connection in `slot`.
    pub(crate) fn get(&self, slot: usize) -> Option<&F> {
        self.slab.get(slot).and_then(Option::as_ref)
    }

    /// The connection in `slot`, to change.
    pub(crate) fn get_mut(&mut self, slot: usize) -> Option<&mut F> {
        self.slab.get_mut(slot).and_then(Option::as_mut)
    }

    /// Open `flow` under `key`; its slot.
    pub(crate) fn insert(&mut self, key: Key, flow: F) -> usize {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot] = Some(flow);
                slot
            }
            None => {
                self.slab.push(Some(flow));
                self.hold_of.push(None);
                self.slab.len() - 1
            }
        };
        self.flows.insert(key, slot);
        slot
    }

    /// Close the connection `key` in `slot` when `close` says so of it; the connection.
    pub(crate) fn remove_if(
        &mut self,
        slot: usize,
        key: &Key,
        close: impl FnOnce(&F) -> bool,
    ) -> Option<F> {
        let flow = self.slab.get_mut(slot)?.take_if(|f| close(f))?;
        self.set_hold(slot, None);
        self.flows.remove(key);
        self.free.push(slot);
        Some(flow)
    }

    /// The connection in `slot` may hand out nothing before `hold` (`None`: nothing held).
    pub(crate) fn set_hold(&mut self, slot: usize, hold: Option<u64>) {
        let Some(old) = self.hold_of.get_mut(slot) else {
            return;
        };
        if *old == hold {
            return;
        }
        if let Some(old) = old.take() {
            self.holds.remove(&(old, slot));
        }
        if let Some(new) = hold {
            self.holds.insert((new, slot));
        }
        *old = hold;
    }

    /// The earliest hold of all (`None`: nothing is held).
    pub(crate) fn earliest_hold(&self) -> Option<u64> {
        self.holds.first().map(|&(at, _)| at)
    }

    /// The slots whose hold is before `before`, earliest first.
    pub(crate) fn held_before(&self, before: u64) -> Vec<usize> {
        self.holds
            .iter()
            .take_while(|(at, _)| *at < before)
            .map(|&(_, slot)| slot)
            .collect()
    }

    /// The open connections' slots, in the order `rank` gives them.
    pub(crate) fn open_by(&self, rank: impl Fn(&F) -> u64) -> Vec<usize> {
        let mut open: Vec<(u64, usize)> = self
            .slab
            .iter()
            .enumerate()
            .filter_map(|(slot, f)| f.as_ref().map(|f| (rank(f), slot)))
            .collect();
        open.sort_unstable();
        open.into_iter().map(|(_, slot)| slot).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn holds_stay_in_order_and_slots_are_reused() {
        let mut table: Table<&str> = Table::default();
        let a = table.insert(key(addr(1), addr(80)), "a");
        let b = table.insert(key(addr(2), addr(80)), "b");
        table.set_hold(a, Some(30));
        table.set_hold(b, Some(10));
        assert_eq!(table.earliest_hold(), Some(10));
        assert_eq!(table.held_before(20), [b]);
        table.set_hold(b, Some(40));
        assert_eq!(table.earliest_hold(), Some(30));
        assert_eq!(table.remove_if(a, &key(addr(80), addr(1)), |_| false), None);
        assert_eq!(
            table.remove_if(a, &key(addr(80), addr(1)), |_| true),
            Some("a")
        );
        assert_eq!(table.earliest_hold(), Some(40));
        assert_eq!(table.find(&key(addr(1), addr(80))), None);
        let c = table.insert(key(addr(3), addr(80)), "c");
        assert_eq!(c, a, "the free slot is reused");
        assert_eq!(table.open_by(|f| u64::from(f.as_bytes()[0])), [b, c]);
    }
}
