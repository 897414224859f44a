//! One queue: a `[phantom]`-style section, with what it inherits, into a [`QueueConfig`].
//!
//! An extra queue (`[phantom-N]`, YAML `phantom.multi[i]`) starts from every
//! option of `[phantom]` and replaces the ones it sets itself, shallowly as the
//! reference's `dict(main, **extra)` does: setting any spelling of the load
//! profile replaces the whole profile, setting `headers` replaces the list.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::arrivals::{parse_seed, ArrivalProcess, Arrivals};
use crate::bounds::{grouped, MAX_DEPTH, MAX_INSTANCES, MAX_SHOTS, MAX_THREADS};
use crate::convert::{self, Converted};
use crate::error::{ConfigError, OptionPlace, Place};
use crate::model::{
    AmmoSource, AmmoType, Autocases, GrpcConfig, LoadProfile, MemcachedConfig, Places, QueueConfig,
    ReplyLimits, RunOptions, TankType, WriteLog,
};
use crate::options::SCHEDULE_KEYS;
use crate::raw::{RawEntry, RawSection, RawValue};
use crate::units;

mod framing;
mod replay;
mod scenario;

/// The options one queue sees: its own entries over the ones it inherits.
pub(crate) struct Layered<'a> {
    /// The queue's name (its section, or a multi entry's name).
    name: &'a str,
    /// Where the queue's own section starts.
    place: Place,
    /// Each option with the section it was written in.
    entries: Vec<(&'a str, &'a RawEntry)>,
}

/// Options that group together when inherited: any spelling of the load profile.
fn group(key: &str) -> &str {
    if SCHEDULE_KEYS.contains(&key) || key.starts_with("load_profile.") {
        "load_profile"
    } else {
        key
    }
}

impl<'a> Layered<'a> {
    /// The main queue: only its own options.
    pub fn main(section: &'a RawSection) -> Self {
        Layered {
            name: &section.name,
            place: section.place,
            entries: section
                .entries
                .iter()
                .map(|e| (section.name.as_str(), e))
                .collect(),
        }
    }

    /// An extra queue: the main queue's options, shallowly replaced by its own.
    pub fn extra(main: &'a RawSection, extra: &'a RawSection) -> Self {
        let own: Vec<&str> = extra.entries.iter().map(|e| group(&e.key)).collect();
        let inherited = main
            .entries
            .iter()
            .filter(|e| !own.contains(&group(&e.key)))
            .map(|e| (main.name.as_str(), e));
        let entries = inherited
            .chain(extra.entries.iter().map(|e| (extra.name.as_str(), e)))
            .collect();
        Layered {
            name: &extra.name,
            place: extra.place,
            entries,
        }
    }

    fn entry(&self, key: &str) -> Option<(&'a str, &'a RawEntry)> {
        self.entries
            .iter()
            .rev()
            .find(|(_, e)| e.key == key)
            .copied()
    }

    /// Where each option the queue sees was written, in `file`.
    fn places(&self, file: &Path) -> Places {
        Places {
            section: OptionPlace::new(file, self.place, self.name, ""),
            options: self
                .entries
                .iter()
                .map(|(section, entry)| {
                    OptionPlace::new(file, entry.place, section, &entry.key)
                        .noting_comment(&entry.value)
                })
                .collect(),
        }
    }

    /// An error about the queue as a whole.
    fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::new(message)
            .at(self.place)
            .in_section(self.name)
    }

    /// The option `key` read by `convert`; errors name where it was written.
    fn get<T>(
        &self,
        key: &str,
        convert: fn(&RawValue) -> Converted<T>,
    ) -> Result<Option<T>, ConfigError> {
        let Some((section, entry)) = self.entry(key) else {
            return Ok(None);
        };
        convert(&entry.value).map_err(|message| entry_error(section, entry, message))
    }

    /// The option `key` as a string, then checked by `parse`.
    fn parsed<T>(
        &self,
        key: &str,
        default: T,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        let Some((section, entry)) = self.entry(key) else {
            return Ok(default);
        };
        match convert::string(&entry.value) {
            Ok(Some(text)) => parse(&text).map_err(|m| entry_error(section, entry, m)),
            Ok(None) => Ok(default),
            Err(m) => Err(entry_error(section, entry, m)),
        }
    }
}

/// An error about one entry: where it was written, its section and key.
pub(crate) fn entry_error(
    section: &str,
    entry: &RawEntry,
    message: impl Into<String>,
) -> ConfigError {
    ConfigError::new(message)
        .at(entry.place)
        .in_section(section)
        .for_key(&entry.key)
}

/// The run-level sections a queue may draw on.
#[derive(Clone, Copy)]
pub(crate) struct Shared<'a> {
    /// `[memcached]`: the workload of memcached queues without ammo.
    pub memcached: Option<&'a MemcachedConfig>,
    /// `[grpc]`: the schema of grpc queues.
    pub grpc: Option<&'a GrpcConfig>,
}

/// Builds and checks one queue of the config read from `file`.
pub(crate) fn build(
    q: &Layered<'_>,
    file: &Path,
    shared: Shared<'_>,
) -> Result<QueueConfig, ConfigError> {
    let address = q.get("address", convert::string)?.unwrap_or_default();
    if address.trim().is_empty() {
        return Err(q.error("`address` is required (host[:port], [ipv6]:port or a host name)"));
    }
    let instances = q.get("instances", convert::integer)?.unwrap_or(1000);
    let instances = bounded_u32(q, "instances", instances, MAX_INSTANCES)?;
    let (load_profile, load_profile_at) = match replay::read(q)? {
        Some(replay) => (LoadProfile::Replay(replay), q.places(file).of("ammo_type")),
        None => load_profile(q, file)?,
    };
    let open_loop = matches!(load_profile, LoadProfile::Rps(_));
    let tank_type = q.parsed("tank_type", TankType::Http, tank_type)?;
    scenario::check(q, &load_profile, tank_type)?;
    // A memcached queue without ammo of its own generates the [memcached] workload.
    let workload = (tank_type == TankType::Memcached).then_some(shared.memcached);
    let ammo = match load_profile {
        // A ready stpd file carries its own requests: an ammo source is optional and unused.
        LoadProfile::StpdFile(_) => ammo(q, workload, tank_type).ok(),
        _ => Some(ammo(q, workload, tank_type)?),
    };
    let grpc = (tank_type == TankType::Grpc).then(|| {
        shared
            .grpc
            .cloned()
            .unwrap_or_else(|| crate::grpc::reflection(file, q.name))
    });
    Ok(QueueConfig {
        name: q.name.to_owned(),
        address,
        port: q.parsed("port", None, port)?,
        load_profile,
        load_profile_at,
        ammo,
        headers: q.get("headers", convert::headers)?.unwrap_or_default(),
        header_http: q
            .get("header_http", convert::string)?
            .unwrap_or_else(|| "1.0".into()),
        autocases: autocases(q)?,
        enum_ammo: q.get("enum_ammo", convert::boolean)?.unwrap_or(false),
        chosen_cases: convert::split_ascii_whitespace(
            &q.get("chosen_cases", convert::string)?.unwrap_or_default(),
        ),
        loop_count: {
            let n = q.get("loop", convert::integer)?.unwrap_or(-1);
            shot_count(q, "loop", n, 0, "a number of passes")?
        },
        ammo_limit: {
            let n = q.get("ammo_limit", convert::integer)?.unwrap_or(-1);
            shot_count(q, "ammo_limit", n, 1, "a number of shots")?
        },
        instances,
        timeout: q.parsed("timeout", Duration::from_secs(11), units::parse_timeout)?,
        ssl: q.get("ssl", convert::boolean)?.unwrap_or(false),
        ssl_verify: q.get("ssl_verify", convert::boolean)?.unwrap_or(false),
        tank_type,
        writelog: writelog(q)?,
        reply_limits: reply_limits(q)?,
        gatling_ip: q.parsed("gatling_ip", Vec::new(), source_addresses)?,
        client_certificate: q.parsed("client_certificate", None, optional_path)?,
        client_key: q.parsed("client_key", None, optional_path)?,
        client_cipher_suites: q
            .get("client_cipher_suites", convert::string)?
            .unwrap_or_default()
            .split(':')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect(),
        places: q.places(file),
        depth: depth(q, tank_type)?,
        measure: measure(q, open_loop)?,
        arrivals: arrivals(q, open_loop)?,
        reply_framing: framing::read(q, tank_type)?,
        // Attached from the [mysql] section once every queue is built.
        mysql: None,
        connections: connections(q, tank_type)?,
        grpc,
    })
}

/// `connections`: 1 to [`MAX_INSTANCES`], for the HTTP/2 guns only.
fn connections(q: &Layered<'_>, tank_type: TankType) -> Result<Option<u32>, ConfigError> {
    let Some(n) = q.get("connections", convert::integer)? else {
        return Ok(None);
    };
    let connections = bounded_u32(q, "connections", n, MAX_INSTANCES)?;
    if !tank_type.is_http2() {
        let message = "`connections` sets how many HTTP/2 connections the streams share: \
                       only `tank_type = http2` or `grpc` has them (an HTTP/1 instance \
                       holds a connection of its own)";
        return Err(match q.entry("connections") {
            Some((section, entry)) => entry_error(section, entry, message),
            None => q.error(message),
        });
    }
    Ok(Some(connections))
}

/// The run-wide options `[phantom]` holds (see [`RunOptions`]).
pub(crate) fn run_options(main: &Layered<'_>) -> Result<RunOptions, ConfigError> {
    let defaults = RunOptions::default();
    Ok(RunOptions {
        threads: main
            .get("threads", convert::integer)?
            .map(|n| bounded_u32(main, "threads", n, MAX_THREADS))
            .transpose()?,
        buffered_seconds: match main.get("buffered_seconds", convert::integer)? {
            Some(n) => non_negative(main, "buffered_seconds", n)?,
            None => defaults.buffered_seconds,
        },
    })
}

/// Warnings for the run-wide options an extra queue writes in its own
/// section: they are read from `[phantom]` only.
pub(crate) fn unused_run_options(extra: &RawSection) -> Vec<ConfigError> {
    ["threads", "buffered_seconds"]
        .into_iter()
        .filter_map(|key| extra.get(key))
        .map(|entry| {
            entry_error(
                &extra.name,
                entry,
                format!(
                    "`{}` holds for the whole run and is read from [phantom] only, as \
                     yandex-tank reads it: this value is not used",
                    entry.key
                ),
            )
        })
        .collect()
}

/// `arrivals` and `arrivals_seed`: drawn gaps space an rps schedule's shots only.
fn arrivals(q: &Layered<'_>, open_loop: bool) -> Result<Arrivals, ConfigError> {
    let mut arrivals = Arrivals {
        process: q.parsed("arrivals", ArrivalProcess::Uniform, ArrivalProcess::parse)?,
        ..Arrivals::default()
    };
    if let Some(seed) = q.parsed("arrivals_seed", None, |text| parse_seed(text).map(Some))? {
        arrivals.seed = seed;
        arrivals.seed_chosen = false;
    }
    if !arrivals.process.is_uniform() && !open_loop {
        let message = "`arrivals` spaces the shots of an rps_schedule: expected `uniform` \
                       (or no `arrivals`) with an instances_schedule or a stpd_file";
        return Err(match q.entry("arrivals") {
            Some((section, entry)) => entry_error(section, entry, message),
            None => q.error(message),
        });
    }
    Ok(arrivals)
}

/// `measure`: a probe must be open-loop, its rate its own, whatever the server does.
fn measure(q: &Layered<'_>, open_loop: bool) -> Result<bool, ConfigError> {
    let measure = q.get("measure", convert::boolean)?.unwrap_or(false);
    if measure && !open_loop {
        let message = "`measure = 1` makes the queue an open-loop probe: it needs an \
                       rps_schedule (not an instances_schedule or a stpd_file)";
        return Err(match q.entry("measure") {
            Some((section, entry)) => entry_error(section, entry, message),
            None => q.error(message),
        });
    }
    Ok(measure)
}

/// `depth`: 1 to [`MAX_DEPTH`]; pipelining is for memcached over plain TCP.
fn depth(q: &Layered<'_>, tank_type: TankType) -> Result<u32, ConfigError> {
    let Some(n) = q.get("depth", convert::integer)? else {
        return Ok(1);
    };
    let depth = bounded_u32(q, "depth", n, MAX_DEPTH)?;
    let ssl = q.get("ssl", convert::boolean)?.unwrap_or(false);
    if depth > 1 && (tank_type != TankType::Memcached || ssl) {
        let message = "depth above 1 pipelines requests: only `tank_type = memcached` \
                       without `ssl` does";
        return Err(match q.entry("depth") {
            Some((section, entry)) => entry_error(section, entry, message),
            None => q.error(message),
        });
    }
    Ok(depth)
}

/// phantom's reply limits: three sizes and a count.
fn reply_limits(q: &Layered<'_>) -> Result<ReplyLimits, ConfigError> {
    let defaults = ReplyLimits::default();
    Ok(ReplyLimits {
        line: q.parsed("phantom_http_line", defaults.line, units::parse_size)?,
        field: q.parsed("phantom_http_field", defaults.field, units::parse_size)?,
        field_num: {
            let n = q
                .get("phantom_http_field_num", convert::integer)?
                .unwrap_or(i64::from(defaults.field_num));
            non_negative(q, "phantom_http_field_num", n)?
        },
        entity: q.parsed("phantom_http_entity", defaults.entity, units::parse_size)?,
    })
}

/// `gatling_ip`: IP addresses separated by whitespace.
fn source_addresses(text: &str) -> Result<Vec<IpAddr>, String> {
    text.split_whitespace()
        .map(|ip| {
            ip.parse::<IpAddr>()
                .map_err(|_| format!("`{ip}` is not an IP address"))
        })
        .collect()
}

/// A file path; empty means none.
fn optional_path(text: &str) -> Result<Option<PathBuf>, String> {
    let text = text.trim();
    Ok((!text.is_empty()).then(|| PathBuf::from(text)))
}

fn range_error(q: &Layered<'_>, key: &str, value: i64, expected: &str) -> ConfigError {
    match q.entry(key) {
        Some((section, entry)) => entry_error(
            section,
            entry,
            format!("{value} is out of range; expected {expected}"),
        ),
        None => q.error(format!("{key}: {value} is out of range")),
    }
}

/// A count from 1 to `max`.
fn bounded_u32(q: &Layered<'_>, key: &str, value: i64, max: u32) -> Result<u32, ConfigError> {
    u32::try_from(value)
        .ok()
        .filter(|&n| (1..=max).contains(&n))
        .ok_or_else(|| {
            let expected = format!("an integer from 1 to {}", grouped(u64::from(max)));
            range_error(q, key, value, &expected)
        })
}

/// `loop` or `ammo_limit`: -1 (not set), or `least` to [`MAX_SHOTS`] (`loop = 0`
/// is the reference's other way to say "no limit"). Any more passes or shots
/// than that could not be fired, and a plan that long would never end.
fn shot_count(
    q: &Layered<'_>,
    key: &str,
    value: i64,
    least: i64,
    what: &str,
) -> Result<i64, ConfigError> {
    let fits = value == -1 || u64::try_from(value).is_ok_and(|n| n <= MAX_SHOTS);
    if fits && (value == -1 || value >= least) {
        return Ok(value);
    }
    let expected = format!(
        "-1 for no limit, or {what} from {least} to {}",
        grouped(MAX_SHOTS)
    );
    Err(range_error(q, key, value, &expected))
}

fn non_negative(q: &Layered<'_>, key: &str, value: i64) -> Result<u32, ConfigError> {
    u32::try_from(value).map_err(|_| range_error(q, key, value, "an integer from 0 to 4294967295"))
}

fn port(text: &str) -> Result<Option<u16>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "expected a port number (digits only), found `{text}`"
        ));
    }
    text.parse::<u16>()
        .map(Some)
        .map_err(|_| format!("port {text} is out of range; expected 0 to 65535"))
}

fn tank_type(text: &str) -> Result<TankType, String> {
    match text {
        "http" => Ok(TankType::Http),
        // `tcp`: Apiary's name for it, and what a framed TCP sessions file says it holds.
        "none" | "tcp" => Ok(TankType::None),
        "memcached" => Ok(TankType::Memcached),
        "mysql" => Ok(TankType::Mysql),
        "http2" => Ok(TankType::Http2),
        "grpc" => Ok(TankType::Grpc),
        other => Err(format!(
            "expected `http`, `http2`, `grpc`, `none` (or `tcp`), `memcached` or `mysql`, found `{other}`"
        )),
    }
}

fn ammo_type(text: &str) -> Result<AmmoType, String> {
    match text {
        "phantom" => Ok(AmmoType::Phantom),
        "uri" => Ok(AmmoType::Uri),
        "uripost" => Ok(AmmoType::UriPost),
        "access" => Ok(AmmoType::Access),
        "sessions" => Ok(AmmoType::Sessions),
        "scenario" => Ok(AmmoType::Scenario),
        "grpc/json" => Ok(AmmoType::GrpcJson),
        other => Err(format!(
            "expected one of `phantom`, `uri`, `uripost`, `access`, `sessions`, `scenario`, `grpc/json`, \
             found `{other}`"
        )),
    }
}

fn writelog(q: &Layered<'_>) -> Result<WriteLog, ConfigError> {
    let Some((section, entry)) = q.entry("writelog") else {
        return Ok(WriteLog::Off);
    };
    let text = match &entry.value {
        RawValue::Bool(b) => return Ok(if *b { WriteLog::All } else { WriteLog::Off }),
        RawValue::Null => return Ok(WriteLog::Off),
        other => convert::string(other)
            .map_err(|m| entry_error(section, entry, m))?
            .unwrap_or_default(),
    };
    match text.trim().to_lowercase().as_str() {
        "" | "0" | "false" => Ok(WriteLog::Off),
        "1" | "true" | "all" => Ok(WriteLog::All),
        "proto_warning" => Ok(WriteLog::ProtoWarning),
        "proto_error" => Ok(WriteLog::ProtoError),
        _ => Err(entry_error(
            section,
            entry,
            format!("expected one of `0`, `all`, `proto_warning`, `proto_error`, found `{text}`"),
        )),
    }
}

/// `autocases` from an entry: an integer (0 = off), `uri` or `uniq`.
pub(crate) fn autocases_value(value: &RawValue) -> Converted<Autocases> {
    let depth = |n: i64| {
        if n == 0 {
            Autocases::Off
        } else {
            Autocases::Depth(n)
        }
    };
    match value {
        RawValue::Int(n) => Ok(Some(depth(*n))),
        RawValue::Str(s) if s.trim() == "uri" => Ok(Some(Autocases::Uri)),
        RawValue::Str(s) if s.trim() == "uniq" => Ok(Some(Autocases::Uniq)),
        RawValue::Str(s) => match convert::python_int(s) {
            Some(n) => Ok(Some(depth(n))),
            None => Err(format!("expected an integer, `uri` or `uniq`, found `{s}`")),
        },
        RawValue::Null => Ok(None),
        other => Err(format!(
            "expected an integer, `uri` or `uniq`, found {}",
            other.type_name()
        )),
    }
}

fn autocases(q: &Layered<'_>) -> Result<Autocases, ConfigError> {
    Ok(q.get("autocases", autocases_value)?
        .unwrap_or(Autocases::Off))
}

/// The queue's ammo; `workload` is `Some` for a memcached queue, holding the
/// `[memcached]` section if there is one.
fn ammo(
    q: &Layered<'_>,
    workload: Option<Option<&MemcachedConfig>>,
    tank_type: TankType,
) -> Result<AmmoSource, ConfigError> {
    let uris: Vec<String> = q
        .get("uris", convert::list)?
        .unwrap_or_default()
        .into_iter()
        .filter(|u| !u.is_empty())
        .collect();
    let ammofile = q.get("ammofile", convert::string)?.unwrap_or_default();
    let grpc = tank_type == TankType::Grpc;
    let default_type = if grpc {
        AmmoType::GrpcJson
    } else {
        AmmoType::Phantom
    };
    let ammo_type = q.parsed("ammo_type", default_type, ammo_type)?;
    if grpc != (ammo_type == AmmoType::GrpcJson) || (grpc && !uris.is_empty()) {
        let message = if grpc {
            "a `tank_type = grpc` queue reads Pandora's `grpc/json` ammo: expected \
             `ammofile` with `ammo_type = grpc/json` (its default there)"
        } else {
            "`grpc/json` ammo holds gRPC calls: expected `tank_type = grpc`"
        };
        return Err(match q.entry("ammo_type").or_else(|| q.entry("uris")) {
            Some((section, entry)) => entry_error(section, entry, message),
            None => q.error(message),
        });
    }
    match (uris.is_empty(), ammofile.is_empty()) {
        (true, true) if workload.is_some_and(|w| w.is_some()) => Ok(AmmoSource::Memcached(
            Box::new(workload.flatten().cloned().unwrap_or_default()),
        )),
        (false, true) => Ok(AmmoSource::Uris(uris)),
        (true, false) => Ok(AmmoSource::File {
            path: convert::expand_user(&ammofile),
            ammo_type,
        }),
        (no_uris, _) => {
            let found = if no_uris { "neither" } else { "both" };
            let hint = if workload.is_some() {
                "; a `tank_type = memcached` queue may set neither and use a [memcached] section"
            } else {
                ""
            };
            Err(q.error(format!(
                "exactly one of `uris` and `ammofile` must be set (found: {found}){hint}"
            )))
        }
    }
}

/// The load profile, and where its schedule (or stpd path) was written.
fn load_profile(q: &Layered<'_>, file: &Path) -> Result<(LoadProfile, OptionPlace), ConfigError> {
    let place = |section: &str, entry: &RawEntry| {
        OptionPlace::new(file, entry.place, section, &entry.key).noting_comment(&entry.value)
    };
    for key in SCHEDULE_KEYS {
        if let Some((section, entry)) = q.entry(key) {
            let schedule = schedule_text(section, entry, *key != "stpd_file")?;
            let profile = match *key {
                "rps_schedule" => LoadProfile::Rps(schedule),
                "instances_schedule" => LoadProfile::Instances(schedule),
                _ => LoadProfile::StpdFile(convert::expand_user(&schedule)),
            };
            return Ok((profile, place(section, entry)));
        }
    }
    let load_type = q.entry("load_profile.load_type");
    let schedule = q.entry("load_profile.schedule");
    let (Some((type_section, type_entry)), Some((section, entry))) = (load_type, schedule) else {
        let message = match (load_type, schedule) {
            (None, None) => {
                "no load profile: set rps_schedule, instances_schedule or stpd_file \
                             (YAML: load_profile: {load_type: rps, schedule: ...})"
            }
            (Some(_), None) => "load_profile has a load_type but no schedule",
            _ => "load_profile has a schedule but no load_type (rps, instances or stpd_file)",
        };
        return Err(q.error(message));
    };
    let load_type = convert::string(&type_entry.value)
        .map_err(|m| entry_error(type_section, type_entry, m))?
        .unwrap_or_default();
    let schedule = schedule_text(section, entry, load_type != "stpd_file")?;
    let profile = match load_type.as_str() {
        "rps" => LoadProfile::Rps(schedule),
        "instances" => LoadProfile::Instances(schedule),
        "stpd_file" => LoadProfile::StpdFile(convert::expand_user(&schedule)),
        other => {
            return Err(entry_error(
                type_section,
                type_entry,
                format!("expected `rps`, `instances` or `stpd_file`, found `{other}`"),
            ))
        }
    };
    Ok((profile, place(section, entry)))
}

/// The schedule string. A blank schedule is allowed where `blank_ok` (rps and
/// instances: the reference stepper then fires every shot at 0, and the plan
/// warns); a blank stpd path is an error.
fn schedule_text(section: &str, entry: &RawEntry, blank_ok: bool) -> Result<String, ConfigError> {
    match &entry.value {
        RawValue::Str(s) if blank_ok || !s.trim().is_empty() => Ok(s.clone()),
        RawValue::Str(_) | RawValue::Null => Err(entry_error(
            section,
            entry,
            "empty schedule; expected e.g. line(1,10,10s) or a path to an stpd file",
        )),
        other => Err(entry_error(
            section,
            entry,
            format!("expected a schedule string, found {}", other.type_name()),
        )),
    }
}
