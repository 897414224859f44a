//! Which network interfaces and disks a host's metrics include.

use tank_config::MetricGroups;

/// Whether interface `name` is reported: the listed ones, or every one but `lo`.
pub fn interface(groups: &MetricGroups, name: &str) -> bool {
    if groups.interfaces.is_empty() {
        name != "lo"
    } else {
        groups.interfaces.iter().any(|i| i == name)
    }
}

/// Whether disk `name` is reported: the listed ones, or every one but loop and ram devices.
pub fn device(groups: &MetricGroups, name: &str) -> bool {
    if groups.devices.is_empty() {
        !name.starts_with("loop") && !name.starts_with("ram")
    } else {
        groups.devices.iter().any(|d| d == name)
    }
}
