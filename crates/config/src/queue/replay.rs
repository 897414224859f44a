//! A replay queue's options (`ammo_type = sessions`): the capture's timing is
//! the schedule, so a schedule option is an error there, and the `replay_*`
//! options are an error anywhere else; neither is silently ignored.

use crate::convert;
use crate::error::ConfigError;
use crate::model::{AmmoType, Replay, ReplayConnections};
use crate::options::SCHEDULE_KEYS;
use crate::pynum::py_float;

use super::{entry_error, Layered};

/// The options only a replay reads.
pub(crate) const REPLAY_KEYS: &[&str] = &[
    "replay_connections",
    "replay_offset",
    "replay_skip",
    "replay_speed",
];

/// `Some` replay options when the queue replays a sessions file, else `None`
/// after checking that no `replay_*` option is set. A replay with a schedule
/// (any spelling) is an error at the schedule option.
pub(super) fn read(q: &Layered<'_>) -> Result<Option<Replay>, ConfigError> {
    let ammo_type = q.parsed("ammo_type", AmmoType::Phantom, super::ammo_type)?;
    if ammo_type != AmmoType::Sessions {
        if let Some((section, entry)) = REPLAY_KEYS.iter().find_map(|key| q.entry(key)) {
            return Err(entry_error(
                section,
                entry,
                "a replay option: it applies only to `ammo_type = sessions` \
                 (a queue replaying a sessions file)",
            ));
        }
        return Ok(None);
    }
    let schedule = SCHEDULE_KEYS
        .iter()
        .chain(&["load_profile.load_type", "load_profile.schedule"])
        .find_map(|key| q.entry(key));
    if let Some((section, entry)) = schedule {
        return Err(entry_error(
            section,
            entry,
            "`ammo_type = sessions` replays the capture with its own timing: a schedule \
             cannot be set with it (scale the capture's timing with `replay_speed`)",
        ));
    }
    if q.entry("uris").is_some() || q.entry("ammofile").is_none() {
        return Err(
            q.error("`ammo_type = sessions` needs `ammofile` = a sessions file (and no `uris`)")
        );
    }
    if let Some((section, entry)) = q.entry("chosen_cases") {
        return Err(entry_error(
            section,
            entry,
            "`chosen_cases` would drop requests from the captured sessions: a replay fires \
             whole sessions (choose them with `replay_skip` and `replay_offset`)",
        ));
    }
    if let Some((section, entry)) = q.entry("depth") {
        if q.get("depth", convert::integer)?
            .is_some_and(|depth| depth > 1)
        {
            return Err(entry_error(
                section,
                entry,
                "a replay keeps each session on a connection of its own: \
                 `depth` above 1 (pipelining) cannot be set with `ammo_type = sessions`",
            ));
        }
    }
    let defaults = Replay::default();
    let skip = match q.get("replay_skip", convert::integer)? {
        None => defaults.skip,
        Some(n) => u64::try_from(n)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| super::range_error(q, "replay_skip", n, "an integer of at least 1"))?,
    };
    let offset = match q.get("replay_offset", convert::integer)? {
        None => defaults.offset,
        Some(k) => u64::try_from(k).ok().filter(|k| *k < skip).ok_or_else(|| {
            let expected = format!(
                "an integer from 0 to {} (below `replay_skip` = {skip})",
                skip - 1
            );
            super::range_error(q, "replay_offset", k, &expected)
        })?,
    };
    Ok(Some(Replay {
        speed: q.parsed("replay_speed", defaults.speed, speed)?,
        connections: q.parsed("replay_connections", defaults.connections, connections)?,
        skip,
        offset,
    }))
}

/// `replay_speed`: a number above 0 (2 = twice as fast).
fn speed(text: &str) -> Result<f64, String> {
    py_float(text.trim())
        .filter(|speed| speed.is_finite() && *speed > 0.0)
        .ok_or_else(|| {
            format!("expected a number above 0 (2 = twice as fast, 0.5 = half), found `{text}`")
        })
}

fn connections(text: &str) -> Result<ReplayConnections, String> {
    match text.trim() {
        "captured" => Ok(ReplayConnections::Captured),
        "per_request" => Ok(ReplayConnections::PerRequest),
        other => Err(format!(
            "expected `captured` or `per_request`, found `{other}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_is_a_positive_finite_number() {
        assert_eq!(speed("2"), Ok(2.0));
        assert_eq!(speed(" 0.5 "), Ok(0.5));
        for bad in ["0", "-1", "inf", "nan", "fast", ""] {
            assert!(speed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn connections_are_captured_or_per_request() {
        assert_eq!(connections("captured"), Ok(ReplayConnections::Captured));
        assert_eq!(
            connections("per_request"),
            Ok(ReplayConnections::PerRequest)
        );
        assert!(connections("pooled").is_err());
    }
}
