//! A scenario queue's options (`ammo_type = scenario`): its requests are built
//! from the scenario file (as HTTP/1.1 requests, which `tank_type = http2`
//! sends as HTTP/2 ones), so the options that shape other
//! ammo's requests or tags either apply as documented or are an error here;
//! none is silently ignored.

use crate::error::ConfigError;
use crate::model::{AmmoType, LoadProfile, TankType};

use super::{entry_error, Layered};

/// Check the options of a queue whose `ammo_type` is `scenario`; other queues pass.
pub(super) fn check(
    q: &Layered<'_>,
    load_profile: &LoadProfile,
    tank_type: TankType,
) -> Result<(), ConfigError> {
    let ammo_type = q.parsed("ammo_type", AmmoType::Phantom, super::ammo_type)?;
    if ammo_type != AmmoType::Scenario {
        return Ok(());
    }
    let at = |key: &str, message: &str| match q.entry(key) {
        Some((section, entry)) => entry_error(section, entry, message),
        None => q.error(message),
    };
    if q.entry("uris").is_some() || q.entry("ammofile").is_none() {
        return Err(q.error(
            "`ammo_type = scenario` needs `ammofile` = a scenario file (.hcl, .yaml or .json; \
             no `uris`)",
        ));
    }
    if !matches!(tank_type, TankType::Http | TankType::Http2) {
        return Err(at(
            "tank_type",
            "a scenario's requests are HTTP: expected `tank_type = http` or `http2` with \
             `ammo_type = scenario`",
        ));
    }
    if matches!(load_profile, LoadProfile::StpdFile(_)) {
        return Err(at(
            "stpd_file",
            "a ready stpd file holds fixed requests: a scenario needs an rps_schedule \
             (scenario starts per second) or an instances_schedule (users running it back to back)",
        ));
    }
    if q.entry("header_http").is_some() {
        return Err(at(
            "header_http",
            "a scenario's requests are HTTP/1.1 (they keep the connection and the run's cookies): \
             `header_http` cannot be set with `ammo_type = scenario`",
        ));
    }
    if q.entry("enum_ammo").is_some() {
        return Err(at(
            "enum_ammo",
            "`enum_ammo` numbers each shot's tag; a scenario's rows are tagged by their \
             request (its `tag`, or its name): remove `enum_ammo`",
        ));
    }
    Ok(())
}
