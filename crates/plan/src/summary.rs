//! What a plan amounts to — shots, time span, bytes, tags — gathered while
//! streaming it, in memory bounded by [`MAX_TAGS`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::stepper::ShotRef;

/// Distinct tags counted one by one; the rest are counted together.
pub(crate) const MAX_TAGS: usize = 1000;

/// Totals of a streamed plan (what `tank plan` prints; not to be confused with
/// a run's summary, `tank_report::Summary`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanTotals {
    /// Number of shots.
    pub shots: u64,
    /// Due time of the first shot, ms.
    pub first_due_ms: Option<i64>,
    /// Largest due time, ms.
    pub last_due_ms: Option<i64>,
    /// Request bytes over all shots.
    pub bytes: u64,
    /// Shots per tag, for the distinct tags after the first 16 (see [`Self::tags_by_count`]).
    tags: HashMap<Vec<u8>, u64, BuildHasherDefault<Fnv1a>>,
    /// Shots whose tag did not fit in `tags`.
    pub other_tags: u64,
    /// The first [`FEW_TAGS`] tags, counted here before `tags` is used.
    few: Vec<(u64, Vec<u8>, u64)>,
    /// Index in `few` of the previous shot's tag.
    last_few: usize,
}

const FEW_TAGS: usize = 16;

impl PlanTotals {
    /// Count one shot.
    pub fn observe(&mut self, shot: &ShotRef<'_>) {
        self.shots += 1;
        self.bytes += shot.missile.len() as u64;
        self.first_due_ms.get_or_insert(shot.due_ms);
        self.last_due_ms = Some(
            self.last_due_ms
                .map_or(shot.due_ms, |last| last.max(shot.due_ms)),
        );
        // Most plans have a handful of tags: a short scan beats hashing every shot.
        // Ammo repeats tags in runs or in file order: try the previous tag, the
        // one after it and the first (where a pass starts over) before scanning.
        let near = [self.last_few, self.last_few + 1, 0];
        if let Some(at) = near.into_iter().find(|at| {
            self.few
                .get(*at)
                .is_some_and(|(_, tag, _)| same(tag, shot.marker))
        }) {
            self.few[at].2 += 1;
            self.last_few = at;
            return;
        }
        let print = fingerprint(shot.marker);
        if let Some(at) = self
            .few
            .iter()
            .position(|(p, tag, _)| *p == print && same(tag, shot.marker))
        {
            self.few[at].2 += 1;
            self.last_few = at;
        } else if self.few.len() < FEW_TAGS && self.tags.is_empty() {
            self.few.push((print, shot.marker.to_vec(), 1));
            self.last_few = self.few.len() - 1;
        } else if let Some(count) = self.tags.get_mut(shot.marker) {
            *count += 1;
        } else if self.few.len() + self.tags.len() < MAX_TAGS {
            self.tags.insert(shot.marker.to_vec(), 1);
        } else {
            self.other_tags += 1;
        }
    }

    /// Number of distinct tags counted one by one.
    pub fn distinct_tags(&self) -> usize {
        self.few.len() + self.tags.len()
    }

    /// Tags by falling count, then by name.
    pub fn tags_by_count(&self) -> Vec<(&[u8], u64)> {
        let few = self.few.iter().map(|(_, tag, n)| (tag.as_slice(), *n));
        let rest = self.tags.iter().map(|(tag, n)| (tag.as_slice(), *n));
        let mut tags: Vec<(&[u8], u64)> = few.chain(rest).collect();
        tags.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        tags
    }
}

/// Tag equality without a library call for the usual few-byte tags.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

fn fingerprint(tag: &[u8]) -> u64 {
    let mut hasher = Fnv1a::default();
    hasher.write(tag);
    hasher.finish()
}

/// FNV-1a: tags are short, and this map is looked up once per shot, where
/// SipHash's setup cost dominated the whole plan (a profile showed 17%).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shot(marker: &[u8]) -> ShotRef<'_> {
        ShotRef {
            seq: 0,
            due_ms: 5,
            due_ns: 5_000_000,
            marker,
            missile: b"abc",
        }
    }

    #[test]
    fn counts_tags_past_the_short_list_and_caps_them() {
        let mut summary = PlanTotals::default();
        let names: Vec<Vec<u8>> = (0..MAX_TAGS + 10)
            .map(|i| format!("t{i}").into_bytes())
            .collect();
        for name in &names {
            summary.observe(&shot(name));
        }
        summary.observe(&shot(b"t0"));
        summary.observe(&shot(b"t20"));
        assert_eq!(summary.distinct_tags(), MAX_TAGS);
        assert_eq!(summary.other_tags, 10);
        assert_eq!(summary.shots, MAX_TAGS as u64 + 12);
        assert_eq!(summary.bytes, 3 * summary.shots);
        let top = summary.tags_by_count();
        assert_eq!(&top[..2], [(&b"t0"[..], 2), (&b"t20"[..], 2)]);
    }
}
