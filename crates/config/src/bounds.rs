//! The largest numbers tank accepts in a config.
//!
//! yandex-tank takes any number it can parse, so a typo (`const(5,4294967296s)`,
//! `const(-9999999999,1s)` read as ten billion a second) becomes a plan that never
//! ends, or a flood Ctrl-C cannot stop. tank refuses such configs before anything
//! starts. The bounds sit far above any real test and well inside the integer
//! arithmetic, so every plan tank accepts ends, and says so in the error when it
//! would not. `docs/departures.md` lists them with the other departures from the
//! reference.
//!
//! The config crate checks the integer options (`instances`, `loop`, `ammo_limit`,
//! `threads`); the plan crate checks the schedules against the same bounds.

/// The highest rate of one queue, shots per second (any `const`, `line` or `step` rate).
pub const MAX_RPS: f64 = 10_000_000.0;

/// The longest schedule, and so the longest step, in ms: 30 days.
pub const MAX_DURATION_MS: i64 = 30 * 24 * 3600 * 1000;

/// The most shots one queue may plan: 10^11 (30 days at 38,580 a second, or a
/// day at 1.16 million a second). It bounds an rps schedule's shot count,
/// `ammo_limit`, `loop`, and the shots of any plan, whose ammo decides its length.
pub const MAX_SHOTS: u64 = 100_000_000_000;

/// The most steps one rps schedule may have, a `step(...)` stairway counting
/// one step per stair (each step is kept in memory).
pub const MAX_STEPS: usize = 100_000;

/// The most instances: the `instances` option, and the instances an
/// `instances_schedule` starts (each is a connection).
pub const MAX_INSTANCES: u32 = 1_000_000;

/// The most I/O threads (`threads`).
pub const MAX_THREADS: u32 = 4096;

// Rate × duration stays far inside an i64 of shots, and shot counts stay exact as floats.
const _: () = assert!(MAX_RPS * (MAX_DURATION_MS as f64) < 4.0e18);
const _: () = assert!(MAX_SHOTS < 1 << 53);

/// `n` with thousands separators (`100,000,000,000`), for messages that state a bound.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The most requests `depth` lets one connection have in flight.
pub const MAX_DEPTH: u32 = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_puts_a_comma_every_three_digits() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(MAX_SHOTS), "100,000,000,000");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
    }
}
