//! Seeds tank draws for configs that name none (`[memcached] seed`,
//! `arrivals_seed`): different in every run, and printed so that a run can be
//! repeated by setting them.

/// A seed: the clock's nanoseconds and the process id, mixed (SplitMix64's
/// finalizer), so two runs, or two queues of one run, differ.
pub(crate) fn chosen_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = nanos ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
