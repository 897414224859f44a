//! The options each understood section accepts, with their value kinds.
//!
//! Every option yandex-tank's Phantom schema knows is accepted, including the
//! ones tank does not act on (they still get their type checked, as the
//! reference's converter would), so a yandex-tank config loads unchanged and a
//! typo is caught with a suggestion instead of being silently ignored.

/// How an option's value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Any string (numbers are taken as their text).
    Str,
    /// An integer (Python `int()` for strings).
    Int,
    /// A boolean (yandex-tank's `to_bool` for strings).
    Bool,
    /// A list (whitespace-split for strings).
    List,
    /// `headers`: `[...]` groups for strings.
    Headers,
    /// `autocases`: an integer, `uri` or `uniq`.
    Autocases,
    /// `rps_schedule` / `instances_schedule` / `stpd_file` / `load_profile.*`.
    LoadProfile,
    /// Accepted and not read (`package`, `multi` handled elsewhere, nullable strings...).
    Any,
}

/// `[phantom]` options (yandex-tank's Phantom schema, the INI schedule
/// shorthands, `load_profile.*`, and the plugin meta keys).
pub(crate) const PHANTOM: &[(&str, Kind)] = &[
    ("additional_libs", Kind::List),
    ("address", Kind::Str),
    ("affinity", Kind::Str),
    ("ammo_limit", Kind::Int),
    ("ammo_type", Kind::Str),
    ("ammofile", Kind::Str),
    // tank's own: how an rps_schedule spaces its shots (mcperf's --iadist), and the seed.
    ("arrivals", Kind::Str),
    ("arrivals_seed", Kind::Str),
    ("autocases", Kind::Autocases),
    ("buffered_seconds", Kind::Int),
    ("cache_dir", Kind::Any),
    ("chosen_cases", Kind::Str),
    ("client_certificate", Kind::Str),
    ("client_cipher_suites", Kind::Str),
    ("client_key", Kind::Str),
    ("config", Kind::Str),
    ("connection_test", Kind::Bool),
    // tank's own: HTTP/2 connections the streams are multiplexed over.
    ("connections", Kind::Int),
    // tank's own: requests in flight per connection (memcached only).
    ("depth", Kind::Int),
    ("enabled", Kind::Bool),
    ("enum_ammo", Kind::Bool),
    ("file_cache", Kind::Int),
    ("force_stepping", Kind::Int),
    ("gatling_ip", Kind::Str),
    ("header_http", Kind::Str),
    ("headers", Kind::Headers),
    ("instances", Kind::Int),
    ("instances_schedule", Kind::LoadProfile),
    ("load_profile.load_type", Kind::LoadProfile),
    ("load_profile.schedule", Kind::LoadProfile),
    ("loop", Kind::Int),
    // tank's own: a low-rate open-loop probe whose latency is reported on its own.
    ("measure", Kind::Bool),
    ("method_options", Kind::Str),
    ("method_prefix", Kind::Str),
    ("multi", Kind::Any),
    ("name", Kind::Str),
    ("package", Kind::Any),
    ("phantom_http_entity", Kind::Str),
    ("phantom_http_field", Kind::Str),
    ("phantom_http_field_num", Kind::Int),
    ("phantom_http_line", Kind::Str),
    ("phantom_modules_path", Kind::Str),
    ("phantom_path", Kind::Str),
    ("phout_file", Kind::Str),
    ("port", Kind::Str),
    // tank's own: replaying a sessions file (`ammo_type = sessions`).
    ("replay_connections", Kind::Str),
    ("replay_offset", Kind::Int),
    ("replay_skip", Kind::Int),
    ("replay_speed", Kind::Str),
    // tank's own: where a plain TCP reply ends (`tank_type = none`).
    ("reply_delimiter", Kind::Str),
    ("reply_length_prefix", Kind::Str),
    ("rps_schedule", Kind::LoadProfile),
    ("source_log_prefix", Kind::Str),
    ("ssl", Kind::Bool),
    // tank's own: verify the server certificate (phantom never does).
    ("ssl_verify", Kind::Bool),
    ("stpd_file", Kind::LoadProfile),
    ("tank_type", Kind::Str),
    ("threads", Kind::Int),
    ("timeout", Kind::Str),
    ("uris", Kind::List),
    ("use_caching", Kind::Bool),
    ("writelog", Kind::Any),
];

/// `[phantom]` options of yandex-tank's schema that tank accepts (their type is
/// still checked) but does not act on: each one set gets a warning, so that no
/// option is silently ignored. Most belong to the phantom binary itself.
pub(crate) const PHANTOM_NOT_ACTED_ON: &[&str] = &[
    "additional_libs",
    "affinity",
    "cache_dir",
    "config",
    "connection_test",
    "file_cache",
    "force_stepping",
    "method_options",
    "method_prefix",
    "phantom_modules_path",
    "phantom_path",
    "phout_file",
    "source_log_prefix",
    "use_caching",
];

/// `[memcached]` options (tank's own section: mcperf's workload model).
pub(crate) const MEMCACHED: &[(&str, Kind)] = &[
    ("enabled", Kind::Bool),
    ("getq_freq", Kind::Str),
    ("getq_size", Kind::Str),
    ("keyorder", Kind::Str),
    ("keysize", Kind::Str),
    ("package", Kind::Any),
    ("preload", Kind::Bool),
    ("records", Kind::Str),
    ("seed", Kind::Str),
    ("update", Kind::Str),
    ("valuesize", Kind::Str),
];

/// `[mysql]` options (tank's own section: who `tank_type = mysql` logs in as).
pub(crate) const MYSQL: &[(&str, Kind)] = &[
    ("database", Kind::Str),
    ("enabled", Kind::Bool),
    ("package", Kind::Any),
    ("password", Kind::Str),
    ("password_env", Kind::Str),
    ("ssl", Kind::Bool),
    ("user", Kind::Str),
];

/// `[grpc]` options (tank's own section: the schema of `tank_type = grpc` queues).
pub(crate) const GRPC: &[(&str, Kind)] = &[
    ("authority", Kind::Str),
    ("enabled", Kind::Bool),
    ("import_paths", Kind::List),
    ("package", Kind::Any),
    ("proto", Kind::List),
];

/// `[search]` options (tank's own section: `tank search` and `tank scan`).
pub(crate) const SEARCH: &[(&str, Kind)] = &[
    ("arrivals", Kind::Str),
    ("enabled", Kind::Bool),
    ("from", Kind::Str),
    ("instances", Kind::Str),
    ("max_errors", Kind::Str),
    ("max_lag", Kind::Str),
    ("peak_connections", Kind::Str),
    ("precision", Kind::Str),
    ("probe", Kind::Str),
    ("quantile", Kind::Str),
    ("rate", Kind::Str),
    ("to", Kind::Str),
    ("under", Kind::Str),
    ("warmup", Kind::Str),
];

/// `[tank]` / `core:` options that would change how the load is generated, which
/// tank does not act on (the rest of the core schema is bookkeeping).
pub(crate) const CORE_NOT_ACTED_ON: &[&str] = &["affinity", "taskset_path"];

/// The INI shorthands for `load_profile`; at most one per section.
pub(crate) const SCHEDULE_KEYS: &[&str] = &["rps_schedule", "instances_schedule", "stpd_file"];

/// `[autostop]` options.
pub(crate) const AUTOSTOP: &[(&str, Kind)] = &[
    ("autostop", Kind::Any),
    ("enabled", Kind::Bool),
    ("package", Kind::Any),
    ("report_file", Kind::Str),
];

/// `[rcassert]` options.
pub(crate) const RCASSERT: &[(&str, Kind)] = &[
    ("enabled", Kind::Bool),
    ("fail_code", Kind::Int),
    ("package", Kind::Any),
    ("pass", Kind::Any),
];

/// `[console]` options (yandex-tank's Console plugin; tank reads `short_only`).
pub(crate) const CONSOLE: &[(&str, Kind)] = &[
    ("cases_max_spark", Kind::Any),
    ("cases_sort_by", Kind::Any),
    ("colors", Kind::Any),
    ("disable_all_colors", Kind::Any),
    ("disable_colors", Kind::Any),
    ("enabled", Kind::Bool),
    ("info_panel_width", Kind::Any),
    ("max_case_len", Kind::Any),
    ("package", Kind::Any),
    ("short_only", Kind::Bool),
    ("sizes_max_spark", Kind::Any),
    ("times_max_spark", Kind::Any),
];

/// `[origin]` options (tank's own section: the in-process origin simulator).
pub(crate) const ORIGIN: &[(&str, Kind)] = &[
    ("allow_fetch", Kind::Bool),
    ("body_budget", Kind::Str),
    ("enabled", Kind::Bool),
    ("listen", Kind::Str),
    ("package", Kind::Any),
    ("recipe", Kind::Str),
    ("recipe_json", Kind::Str),
];

/// `[tank]` / `core:` options (yandex-tank's core schema); `plugin_*` keys are also accepted.
pub(crate) const CORE: &[(&str, Kind)] = &[
    ("affinity", Kind::Any),
    ("aggregator_max_termination_timeout", Kind::Any),
    ("aggregator_max_wait", Kind::Any),
    ("api_jobno", Kind::Any),
    ("artifacts_base_dir", Kind::Str),
    ("artifacts_dir", Kind::Str),
    ("cmdline", Kind::Any),
    ("debug", Kind::Any),
    ("exitcode", Kind::Any),
    // tank's own: exit with a code of its own when the run ends with warnings.
    ("fail_on_warnings", Kind::Bool),
    ("flush_config_to", Kind::Any),
    ("ignore_lock", Kind::Any),
    ("ignore_locks", Kind::Any),
    // tank's own: hold the CPUs out of slow idle states while shooting.
    ("keep_cpus_awake", Kind::Bool),
    ("lock_dir", Kind::Any),
    ("message", Kind::Any),
    ("operator", Kind::Any),
    ("pid", Kind::Any),
    ("skip_generator_check", Kind::Any),
    ("taskset_path", Kind::Any),
    ("uuid", Kind::Any),
];

/// `[telegraf]` / `[monitoring]` options (yandex-tank's Telegraf schema; the
/// SSH ones are accepted and warned about).
pub(crate) const MONITORING: &[(&str, Kind)] = &[
    ("config", Kind::Any),
    ("config_contents", Kind::Any),
    ("default_target", Kind::Str),
    ("disguise_hostnames", Kind::Bool),
    ("enabled", Kind::Bool),
    ("kill_old", Kind::Bool),
    ("package", Kind::Any),
    ("ssh_key_path", Kind::Str),
    ("ssh_timeout", Kind::Str),
];

/// `[influx]` options (yandex-tank's InfluxUploader schema, plus tank's own
/// `api_version`, `org`, `bucket`, `token` for InfluxDB 2.x).
pub(crate) const INFLUX: &[(&str, Kind)] = &[
    ("address", Kind::Str),
    ("api_version", Kind::Int),
    ("bucket", Kind::Str),
    ("chunk_size", Kind::Int),
    ("custom_tags", Kind::Any),
    ("database", Kind::Str),
    ("enabled", Kind::Bool),
    ("histograms", Kind::Bool),
    ("labeled", Kind::Bool),
    ("org", Kind::Str),
    ("package", Kind::Any),
    ("password", Kind::Str),
    ("port", Kind::Int),
    ("prefix_measurement", Kind::Str),
    ("tank_tag", Kind::Str),
    ("token", Kind::Str),
    ("username", Kind::Str),
];

/// `[web]` options (tank's own section: the live dashboard).
pub(crate) const WEB: &[(&str, Kind)] = &[
    ("enabled", Kind::Bool),
    ("linger", Kind::Str),
    ("listen", Kind::Str),
];

/// `[prometheus]` options (tank's own section).
pub(crate) const PROMETHEUS: &[(&str, Kind)] = &[
    ("enabled", Kind::Bool),
    ("listen", Kind::Str),
    ("linger", Kind::Str),
];

/// The kind of `key` in `table`, if it is known.
pub(crate) fn kind_of(table: &[(&str, Kind)], key: &str) -> Option<Kind> {
    table
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, kind)| *kind)
}

/// The known name closest to `unknown`, if one is close enough to be a likely typo.
pub(crate) fn suggest<'a>(
    unknown: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    known
        .into_iter()
        .map(|name| (strsim::jaro_winkler(unknown, name), name))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

/// "unknown option" with a suggestion when one is close.
pub(crate) fn unknown_option_message(key: &str, table: &[(&str, Kind)]) -> String {
    match suggest(key, table.iter().map(|(name, _)| *name)) {
        Some(name) => format!("unknown option (did you mean `{name}`?)"),
        None => {
            let names: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
            format!("unknown option (expected one of: {})", names.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_closest_option() {
        let names = PHANTOM.iter().map(|(n, _)| *n);
        assert_eq!(suggest("rps_schedul", names.clone()), Some("rps_schedule"));
        assert_eq!(suggest("ammo_file", names.clone()), Some("ammofile"));
        assert_eq!(suggest("instance", names.clone()), Some("instances"));
        assert_eq!(suggest("zzzz", names), None);
    }

    #[test]
    fn unknown_option_message_lists_options_when_nothing_is_close() {
        let message = unknown_option_message("zzzz", RCASSERT);
        assert_eq!(
            message,
            "unknown option (expected one of: enabled, fail_code, package, pass)"
        );
    }

    #[test]
    fn tables_are_sorted_and_unique() {
        for table in [
            PHANTOM, AUTOSTOP, RCASSERT, CONSOLE, ORIGIN, MEMCACHED, GRPC, CORE,
        ] {
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(names, sorted);
        }
    }
}
