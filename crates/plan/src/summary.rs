//! What a plan amounts to — shots, time span, bytes, tags — gathered while
//! streaming it, in memory bounded by [`MAX_TAGS`].

use std::collections::HashMap;

use crate::stepper::ShotRef;

/// Distinct tags counted one by one; the rest are counted together.
pub const MAX_TAGS: usize = 1000;

/// Totals of a streamed plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Number of shots.
    pub shots: u64,
    /// Due time of the first shot, ms.
    pub first_due_ms: Option<i64>,
    /// Largest due time, ms.
    pub last_due_ms: Option<i64>,
    /// Request bytes over all shots.
    pub bytes: u64,
    /// Shots per tag, for the first [`MAX_TAGS`] distinct tags.
    pub tags: HashMap<Vec<u8>, u64>,
    /// Shots whose tag did not fit in `tags`.
    pub other_tags: u64,
}

impl Summary {
    /// Count one shot.
    pub fn observe(&mut self, shot: &ShotRef<'_>) {
        self.shots += 1;
        self.bytes += shot.missile.len() as u64;
        self.first_due_ms.get_or_insert(shot.due_ms);
        self.last_due_ms = Some(
            self.last_due_ms
                .map_or(shot.due_ms, |last| last.max(shot.due_ms)),
        );
        if let Some(count) = self.tags.get_mut(shot.marker) {
            *count += 1;
        } else if self.tags.len() < MAX_TAGS {
            self.tags.insert(shot.marker.to_vec(), 1);
        } else {
            self.other_tags += 1;
        }
    }

    /// Tags by falling count, then by name.
    pub fn tags_by_count(&self) -> Vec<(&[u8], u64)> {
        let mut tags: Vec<(&[u8], u64)> =
            self.tags.iter().map(|(t, n)| (t.as_slice(), *n)).collect();
        tags.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        tags
    }
}
