//! SplitMix64, written out: the generator behind the plan's own draws
//! (the `[memcached]` workload's keys, drawn arrivals, `random(...)` rates).
//!
//! It is a counter through a finalizer, so a draw can be keyed (record `i`,
//! block `b` of step `s`) rather than walked to, and it is fixed here rather
//! than taken from `rand`, whose generators may change between versions: a
//! seed plans the same shots in every tank build.

/// SplitMix64's increment (2^64 / φ): `mix(seed + k·GAMMA)` for k = 0, 1, …
/// is SplitMix64's stream from `seed`.
pub(crate) const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's step and finalizer: a key to well-mixed bits.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A u64 as a uniform in (0, 1].
pub(crate) fn unit(bits: u64) -> f64 {
    ((bits >> 11) + 1) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64s() {
        // SplitMix64 from seed 0: its published first outputs.
        assert_eq!(mix(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(mix(GAMMA), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(unit(0), 1.0 / (1u64 << 53) as f64);
        assert_eq!(unit(u64::MAX), 1.0);
    }
}
