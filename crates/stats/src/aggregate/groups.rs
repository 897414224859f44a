//! The groups a response is counted in besides the overall one: its case (the
//! tag cut at its last `#`) and, in a run of several queues, its queue.

// Looked up for every sample (twice): foldhash costs a fraction of SipHash, and tags
// come from the user's own ammo, so hash flooding is not a concern.
use foldhash::HashMap;

use std::collections::BTreeMap;

use crate::group::{GroupAcc, GroupStats};
use crate::sample::{Measured, QueueIndex};

/// Accumulators per case and per queue.
#[derive(Debug, Default)]
pub(super) struct Groups {
    tagged: HashMap<Box<[u8]>, GroupAcc>,
    /// Indexed by queue; empty when responses are not counted per queue.
    queues: Vec<GroupAcc>,
}

impl Groups {
    /// Count `measured` in its case's group and, when `queue` is given, its queue's.
    #[inline]
    pub fn add(&mut self, case: &[u8], queue: Option<QueueIndex>, measured: &Measured) {
        match self.tagged.get_mut(case) {
            Some(group) => group.add(measured),
            None => {
                let mut group = GroupAcc::new();
                group.add(measured);
                self.tagged.insert(case.into(), group);
            }
        }
        if let Some(queue) = queue {
            self.queue(usize::from(queue)).add(measured);
        }
    }

    /// Add everything `other` counted.
    pub fn merge(&mut self, other: &Groups) {
        for (case, group) in &other.tagged {
            match self.tagged.get_mut(case) {
                Some(mine) => mine.merge(group),
                None => {
                    self.tagged.insert(case.clone(), group.clone());
                }
            }
        }
        for (index, group) in other.queues.iter().enumerate() {
            self.queue(index).merge(group);
        }
    }

    /// All responses: the case groups merged (every response is in exactly one).
    pub fn overall(&self) -> GroupAcc {
        let mut groups = self.tagged.values();
        match groups.next() {
            None => GroupAcc::new(),
            Some(first) => groups.fold(first.clone(), |mut all, group| {
                all.merge(group);
                all
            }),
        }
    }

    /// The finished case groups, by case.
    pub fn tag_stats(&self) -> BTreeMap<String, GroupStats> {
        self.tagged
            .iter()
            .map(|(tag, group)| (String::from_utf8_lossy(tag).into_owned(), group.stats()))
            .collect()
    }

    /// Log-spaced bins ([`GroupAcc::log_bins`]) of the `most` tags with the most responses.
    pub fn tag_spreads(&self, most: usize, bins: usize) -> BTreeMap<String, Vec<(u64, u64, u64)>> {
        let mut by_count: Vec<_> = self.tagged.iter().collect();
        by_count.sort_by_key(|(_, group)| std::cmp::Reverse(group.len()));
        by_count
            .into_iter()
            .take(most)
            .map(|(tag, group)| {
                (
                    String::from_utf8_lossy(tag).into_owned(),
                    group.log_bins(bins),
                )
            })
            .collect()
    }

    /// The finished queue groups, in queue order, each named from `names` (every
    /// queue named there is listed, also one without responses).
    pub fn queue_stats(&self, names: &[String]) -> Vec<(String, GroupStats)> {
        let count = names.len().max(self.queues.len());
        (0..count)
            .map(|index| {
                let name = names
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| format!("queue {index}"));
                let stats = self.queues.get(index).map(GroupAcc::stats);
                (name, stats.unwrap_or_default())
            })
            .collect()
    }

    fn queue(&mut self, index: usize) -> &mut GroupAcc {
        if self.queues.len() <= index {
            self.queues.resize_with(index + 1, GroupAcc::new);
        }
        &mut self.queues[index]
    }
}
