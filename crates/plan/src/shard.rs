//! One shard's slice of a plan: shard `I` of `N` fires the shots `k ≡ I (mod N)`
//! of every queue's plan.
//!
//! Slicing by shot index rather than by time or by rate keeps every shard's load
//! shape the whole plan's at 1/N of the rate, needs no coordination beyond a
//! common start, and makes the union of the shards exactly the unsharded plan:
//! the same due times, the same ammo in the same order. Each shard still walks
//! the whole plan (stepping is cheap next to firing) and keeps its own shots.

use std::fmt;

/// Which slice of a plan a process fires: shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u64,
    count: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl Shard {
    /// The whole plan: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`: `count` at least 1 and `index` below it.
    pub fn new(index: u64, count: u64) -> std::result::Result<Shard, String> {
        if count == 0 {
            return Err("0 shards: expected at least 1".into());
        }
        if index >= count {
            return Err(format!(
                "shard {index} of {count}: expected an index from 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// `I/N`, as `--shard` takes it.
    pub fn parse(text: &str) -> std::result::Result<Shard, String> {
        let expected = || format!("`{text}` is not a shard: expected I/N, like 0/3");
        let (index, count) = text.trim().split_once('/').ok_or_else(expected)?;
        let number = |s: &str| s.trim().parse::<u64>().map_err(|_| expected());
        Shard::new(number(index)?, number(count)?)
    }

    /// This shard's index, from 0.
    pub fn index(self) -> u64 {
        self.index
    }

    /// How many shards share the plan.
    pub fn count(self) -> u64 {
        self.count
    }

    /// Whether this is the whole plan (one shard).
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether the plan's shot `seq` is this shard's.
    pub fn owns(self, seq: u64) -> bool {
        seq % self.count == self.index
    }

    /// How many of the plan's first `prefix` shots are this shard's.
    pub(crate) fn in_prefix(self, prefix: u64) -> u64 {
        // ceil((prefix − index) / count) for prefix > index, else 0.
        prefix
            .checked_sub(self.index)
            .map_or(0, |rest| rest.div_ceil(self.count))
    }

    /// The plan's index of this shard's `nth` shot (from 0).
    pub fn nth(self, nth: u64) -> u64 {
        nth.saturating_mul(self.count).saturating_add(self.index)
    }

    /// This shard's part of `total` instances: those of index `k ≡ I (mod N)`
    /// below `total`, and at least one, so that every shard can fire its shots.
    pub fn instances(self, total: u64) -> u64 {
        self.in_prefix(total).max(1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_index_slash_count() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(Shard::parse(" 0/1 "), Ok(Shard::WHOLE));
        assert_eq!(
            Shard::parse("3/3").unwrap_err(),
            "shard 3 of 3: expected an index from 0 to 2"
        );
        assert_eq!(
            Shard::parse("0/0").unwrap_err(),
            "0 shards: expected at least 1"
        );
        for bad in ["", "1", "a/3", "1/b", "-1/3", "1/3/4"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Shard::parse("1/4").unwrap().to_string(), "1/4");
    }

    #[test]
    fn instances_are_divided_and_every_shard_gets_one() {
        let shards = |total| {
            (0..3)
                .map(|i| Shard::new(i, 3).unwrap().instances(total))
                .collect::<Vec<_>>()
        };
        assert_eq!(shards(10), vec![4, 3, 3]);
        assert_eq!(shards(1), vec![1, 1, 1]);
    }

    proptest! {
        /// A shard's count of any prefix is the count of its indices in it, and
        /// the shards' counts add up to the prefix.
        #[test]
        fn prefix_counts_partition_the_plan(count in 1u64..40, prefix in 0u64..500) {
            let mut sum = 0;
            for index in 0..count {
                let shard = Shard::new(index, count).unwrap();
                let walked = (0..prefix).filter(|k| shard.owns(*k)).count() as u64;
                prop_assert_eq!(shard.in_prefix(prefix), walked);
                if walked > 0 {
                    prop_assert!(shard.owns(shard.nth(walked - 1)));
                    prop_assert!(shard.nth(walked - 1) < prefix);
                }
                sum += walked;
            }
            prop_assert_eq!(sum, prefix);
        }
    }
}
