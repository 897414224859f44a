//! Raw form → [`TestConfig`]: section kinds, known keys, types, required options.
//!
//! Checks run section by section, before anything is inherited, so an error
//! names the section and line where the bad value was written. Then the
//! queues are built ([`crate::queue`]) and the run-level sections read.

use std::path::Path;

use crate::convert;
use crate::error::ConfigError;
use crate::export;
use crate::grpc;
use crate::job;
use crate::memcached;
use crate::model::{
    AutostopConfig, ConfigFormat, ConsoleConfig, CoreConfig, RcAssertConfig, RunOptions, TestConfig,
};
use crate::monitoring;
use crate::mysql;
use crate::options::{self, Kind, SCHEDULE_KEYS};
use crate::origin;
use crate::queue::{self, entry_error, Layered};
use crate::raw::{RawConfig, RawEntry, RawSection, RawValue};
use crate::search;
use crate::sections::{self, SectionKind};
use crate::web;

/// Validates `raw` (read from `path` in `format`) into a [`TestConfig`].
pub(crate) fn validate(
    raw: &RawConfig,
    path: &Path,
    format: ConfigFormat,
) -> Result<TestConfig, ConfigError> {
    validate_sections(raw, path, format).map_err(|e| {
        if format == ConfigFormat::Ini {
            with_comment_hint(raw, e)
        } else {
            e
        }
    })
}

/// An INI error about a value that holds what looks like a comment: the
/// comment is why, most often (the tutorials write `rps_schedule = line(1,
/// 10, 1m) ;load scheme`), so say it is part of the value.
fn with_comment_hint(raw: &RawConfig, error: ConfigError) -> ConfigError {
    let (Some(section), Some(key)) = (error.section(), error.key()) else {
        return error;
    };
    if error.message().contains(COMMENT_NOTE) {
        // Said already, where the value was read (an [`OptionPlace`]'s error).
        return error;
    }
    let note = raw
        .sections
        .iter()
        .find(|s| s.name == section)
        .and_then(|s| s.get(key))
        .and_then(|entry| comment_note(&entry.value));
    match note {
        Some(note) => error.with_note(&note),
        None => error,
    }
}

/// The words that say a look-alike comment is part of a value.
const COMMENT_NOTE: &str = "is part of the value";

/// What to add to an error about `value` when it holds what looks like a
/// comment (` ;…`, ` #…`): that the comment is in the value.
pub(crate) fn comment_note(value: &RawValue) -> Option<String> {
    let RawValue::Str(text) = value else {
        return None;
    };
    let at = comment_at(text)?;
    Some(format!(
        " (`{}` {COMMENT_NOTE}: there are no comments after a value (INI) or inside quotes \
         (YAML), in yandex-tank as in tank; \
         a comment goes on a line of its own)",
        text[at..].trim_start()
    ))
}

/// Where a value's look-alike comment starts: a `;` or `#` after a blank.
fn comment_at(text: &str) -> Option<usize> {
    text.as_bytes()
        .windows(2)
        .position(|pair| pair[0].is_ascii_whitespace() && matches!(pair[1], b';' | b'#'))
}

fn validate_sections(
    raw: &RawConfig,
    path: &Path,
    format: ConfigFormat,
) -> Result<TestConfig, ConfigError> {
    let mut kinds = Vec::with_capacity(raw.sections.len());
    let mut warnings = raw.notes.clone();
    for section in &raw.sections {
        let kind = section_kind(section)?;
        check_keys(section, kind, &mut warnings)?;
        if format == ConfigFormat::Ini {
            inline_comments(section, &mut warnings);
        }
        if matches!(kind, SectionKind::Phantom | SectionKind::ExtraQueue) {
            crate::reference_validator::check(section, format, &mut warnings);
        }
        kinds.push(kind);
    }
    let disabled = disabled_by_core(raw, &kinds);
    let enabled = |section: &RawSection| -> Result<bool, ConfigError> {
        if disabled.contains(&section.name) {
            return Ok(false);
        }
        match section.get("enabled") {
            Some(entry) => Ok(convert::boolean(&entry.value)
                .map_err(|m| entry_error(&section.name, entry, m))?
                .unwrap_or(true)),
            None => Ok(true),
        }
    };

    let mut main = None;
    let mut extras = Vec::new();
    let mut monitoring_sections = Vec::new();
    let mut config = TestConfig {
        path: path.to_path_buf(),
        format,
        queues: Vec::new(),
        autostop: AutostopConfig {
            criteria: Vec::new(),
            criteria_at: None,
            report_file: "autostop_report.txt".into(),
        },
        core: CoreConfig {
            artifacts_base_dir: "logs".into(),
            artifacts_dir: None,
            keep_cpus_awake: true,
            fail_on_warnings: false,
        },
        rcassert: RcAssertConfig {
            pass: Vec::new(),
            fail_code: 10,
        },
        console: ConsoleConfig::default(),
        origin: None,
        memcached: None,
        mysql: None,
        grpc: None,
        search: Default::default(),
        warnings: Vec::new(),
        monitoring: None,
        influx: None,
        prometheus: None,
        web: None,
        job: crate::job::Job::default(),
        run: RunOptions::default(),
    };
    for (section, kind) in raw.sections.iter().zip(&kinds) {
        match kind {
            SectionKind::Phantom => {
                if !enabled(section)? {
                    let message = format!(
                        "phantom is disabled: nothing to run{}",
                        other_generator(raw, &kinds, &enabled)
                    );
                    return Err(ConfigError::new(message)
                        .at(section.place)
                        .in_section(&section.name));
                }
                main = Some(section);
            }
            SectionKind::ExtraQueue if enabled(section)? => extras.push(section),
            SectionKind::Core => read_core(section, &mut config.core)?,
            SectionKind::Autostop if enabled(section)? => {
                read_autostop(section, &mut config.autostop, path)?
            }
            SectionKind::RcAssert if enabled(section)? => {
                read_rcassert(section, &mut config.rcassert)?
            }
            SectionKind::Console if enabled(section)? => {
                read_console(section, &mut config.console)?
            }
            SectionKind::Origin if enabled(section)? => {
                config.origin = Some(origin::read(section)?);
            }
            SectionKind::Memcached if enabled(section)? => {
                config.memcached = Some(memcached::read(section)?);
            }
            SectionKind::Mysql if enabled(section)? => {
                config.mysql = Some(mysql::read(section, path)?);
            }
            SectionKind::Grpc if enabled(section)? => {
                config.grpc = Some(grpc::read(section, path)?);
            }
            SectionKind::Ignored if enabled(section)? => {
                if let Some(plugin) = sections::unimplemented_plugin(&section.name.to_lowercase()) {
                    warnings.push(
                        ConfigError::new(format!(
                            "yandex-tank's {plugin} plugin, which tank does not implement: \
                             the section is ignored"
                        ))
                        .at(section.place)
                        .in_section(&section.name),
                    );
                }
            }
            SectionKind::Monitoring if enabled(section)? => {
                monitoring_sections.push(section);
            }
            SectionKind::Influx if enabled(section)? => {
                config.influx = Some(export::read_influx(section)?);
            }
            SectionKind::Prometheus if enabled(section)? => {
                config.prometheus = Some(export::read_prometheus(section)?);
            }
            SectionKind::Search if enabled(section)? => {
                config.search = search::read(section)?;
            }
            SectionKind::Meta if enabled(section)? => job::read(section, &mut config.job)?,
            SectionKind::Web if enabled(section)? => config.web = Some(web::read(section)?),
            _ => {}
        }
    }
    config.warnings = warnings
        .into_iter()
        .map(|w| w.in_file(path).to_string())
        .collect();

    let Some(main) = main else {
        return Err(match extras.first() {
            Some(extra) => ConfigError::new(
                "extra queue without a [phantom] section: extra queues inherit their \
                 options from [phantom], so it must be there",
            )
            .at(extra.place)
            .in_section(&extra.name),
            None => ConfigError::new(format!(
                "no [phantom] section (YAML: phantom:): nothing to run{}",
                other_generator(raw, &kinds, &enabled)
            )),
        });
    };
    let shared = queue::Shared {
        memcached: config.memcached.as_ref(),
        grpc: config.grpc.as_ref(),
    };
    config
        .queues
        .push(queue::build(&Layered::main(main), path, shared)?);
    config.run = queue::run_options(&Layered::main(main))?;
    for extra in extras {
        config.warnings.extend(
            queue::unused_run_options(extra)
                .into_iter()
                .map(|w| w.in_file(path).to_string()),
        );
        config
            .queues
            .push(queue::build(&Layered::extra(main, extra), path, shared)?);
    }
    origin::check_queue_addresses(raw, &config)?;
    config.monitoring = monitoring::read(&monitoring_sections, &config.queues[0], path)?;
    memcached::check_used(raw, &config)?;
    mysql::attach(raw, &mut config)?;
    grpc::check_used(raw, &config)?;
    Ok(config)
}

/// When phantom does not run, the section of another of yandex-tank's load
/// generators that holds the test, said so that a config written for it is
/// not taken for a misspelt phantom ("" when there is none).
fn other_generator(
    raw: &RawConfig,
    kinds: &[SectionKind],
    enabled: &dyn Fn(&RawSection) -> Result<bool, ConfigError>,
) -> String {
    raw.sections
        .iter()
        .zip(kinds)
        .filter(|(section, kind)| {
            **kind == SectionKind::Ignored && enabled(section).unwrap_or(false)
        })
        .find_map(|(section, _)| {
            let plugin = sections::load_generator(&section.name)?;
            let line = match section.place {
                crate::error::Place::Line(line) => format!(" (line {line})"),
                _ => String::new(),
            };
            Some(format!(
                ". The test here is [{}]'s{line}, for yandex-tank's {plugin}, which tank does not \
                 run: tank fires phantom's queues ([phantom], phantom-*, phantom.multi; a Pandora \
                 scenario file is phantom ammo with ammo_type = scenario)",
                section.name
            ))
        })
        .unwrap_or_default()
}

fn section_kind(section: &RawSection) -> Result<SectionKind, ConfigError> {
    if section.multi_index.is_some() {
        return Ok(SectionKind::ExtraQueue);
    }
    if let Some(kind) = sections::classify(&section.name) {
        return Ok(kind);
    }
    if let Some(kind) = kind_from_package(section)? {
        return Ok(kind);
    }
    let close = options::suggest(
        &section.name,
        [
            "phantom",
            "autostop",
            "rcassert",
            "console",
            "origin",
            "memcached",
            "grpc",
            "tank",
            "core",
        ],
    );
    let hint = close.map_or(String::new(), |c| format!("did you mean [{c}]? "));
    let message = format!(
        "unrecognized section ({hint}tank knows: {})",
        sections::KNOWN
    );
    Err(ConfigError::new(message)
        .at(section.place)
        .in_section(&section.name))
}

/// A yandex-tank 2 section with a custom name is identified by its `package`
/// (`yandextank.plugins.DataUploader`): other plugins' sections are ignored;
/// the plugins tank runs itself must use their own section names.
fn kind_from_package(section: &RawSection) -> Result<Option<SectionKind>, ConfigError> {
    let Some(entry) = section.get("package") else {
        return Ok(None);
    };
    let RawValue::Str(package) = &entry.value else {
        return Ok(None);
    };
    let plugin = package.rsplit('.').next().unwrap_or_default();
    let own_name = match plugin {
        "Phantom" => "phantom (extra queues go in phantom.multi)",
        "Autostop" => "autostop",
        "RCAssert" => "rcassert",
        "Console" => "console",
        // Whatever its name, the uploader's section holds the job's facts.
        "DataUploader" => return Ok(Some(SectionKind::Meta)),
        _ => return Ok(Some(SectionKind::Ignored)),
    };
    let message = format!("tank reads the {plugin} plugin only from the section named {own_name}");
    Err(entry_error(&section.name, entry, message))
}

/// Every key of `section` must be known for its kind and hold a value of its type.
/// Check `section`'s keys and their types; the options tank accepts but does
/// not act on become `warnings`.
/// INI has no inline comments: a `;` or `#` after a value is part of it, as
/// in yandex-tank's ConfigParser, and a boolean or a duration may read such a
/// value without an error (`ssl = 1 ; TLS` is false, as `int()` fails on it).
/// Where a value holds what looks like one, say what was read.
fn inline_comments(section: &RawSection, warnings: &mut Vec<ConfigError>) {
    for entry in &section.entries {
        let RawValue::Str(text) = &entry.value else {
            continue;
        };
        if let Some(at) = comment_at(text) {
            warnings.push(entry_error(
                &section.name,
                entry,
                format!(
                    "the value read is `{text}`: INI has no comments after a value (yandex-tank \
                     reads them as part of it, and so does tank), so `{}` is in it; a comment \
                     goes on a line of its own",
                    text[at..].trim_start()
                ),
            ));
        }
    }
}

fn check_keys(
    section: &RawSection,
    kind: SectionKind,
    warnings: &mut Vec<ConfigError>,
) -> Result<(), ConfigError> {
    let (not_acted_on, why) = match kind {
        SectionKind::Phantom | SectionKind::ExtraQueue => (
            options::PHANTOM_NOT_ACTED_ON,
            "an option tank does not act on (phantom's own, or yandex-tank's): it is ignored",
        ),
        SectionKind::Core => (
            options::CORE_NOT_ACTED_ON,
            "an option tank does not act on (phantom's own, or yandex-tank's): it is ignored",
        ),
        _ => (&[][..], ""),
    };
    for entry in &section.entries {
        if not_acted_on.contains(&entry.key.as_str()) {
            warnings.push(entry_error(&section.name, entry, why));
        }
    }
    match kind {
        SectionKind::Core => core_bookkeeping(section, warnings),
        SectionKind::Ignored if section.name == "aggregator" => {
            for entry in section.entries.iter().filter(|e| !is_plugin_key(&e.key)) {
                warnings.push(entry_error(
                    &section.name,
                    entry,
                    "tank aggregates with its own fixed settings (its quantiles, its time \
                     buckets, per second): yandex-tank's aggregator options are ignored",
                ));
            }
        }
        _ => {}
    }
    if kind == SectionKind::Meta {
        return job::check_keys(section, warnings);
    }
    let table = match kind {
        SectionKind::Phantom | SectionKind::ExtraQueue => options::PHANTOM,
        SectionKind::Core => options::CORE,
        SectionKind::Autostop => options::AUTOSTOP,
        SectionKind::RcAssert => options::RCASSERT,
        SectionKind::Console => options::CONSOLE,
        SectionKind::Origin => options::ORIGIN,
        SectionKind::Monitoring => options::MONITORING,
        SectionKind::Influx => options::INFLUX,
        SectionKind::Prometheus => options::PROMETHEUS,
        SectionKind::Memcached => options::MEMCACHED,
        SectionKind::Mysql => options::MYSQL,
        SectionKind::Search => options::SEARCH,
        SectionKind::Meta => return Ok(()),
        SectionKind::Web => options::WEB,
        SectionKind::Grpc => options::GRPC,
        SectionKind::Ignored => return Ok(()),
    };
    for entry in &section.entries {
        let known = options::kind_of(table, &entry.key);
        let kind_of_key = match known {
            Some(k) => k,
            None if kind == SectionKind::Core && entry.key.starts_with("plugin_") => Kind::Any,
            // A YAML/TOML `custom_tags` map, flattened into `custom_tags.NAME`.
            None if kind == SectionKind::Influx && entry.key.starts_with("custom_tags.") => {
                Kind::Str
            }
            None => {
                let message = options::unknown_option_message(&entry.key, table);
                return Err(entry_error(&section.name, entry, message));
            }
        };
        check_type(section, entry, kind_of_key)?;
        if kind_of_key == Kind::Bool {
            unusual_boolean(section, entry, warnings);
        }
    }
    if matches!(kind, SectionKind::Phantom | SectionKind::ExtraQueue) {
        check_schedule_conflict(section)?;
    }
    Ok(())
}

/// `package` and `enabled`: which plugin a section is for, and whether it runs.
fn is_plugin_key(key: &str) -> bool {
    matches!(key, "package" | "enabled")
}

/// The yandex-tank plugins whose work tank does itself, under their own
/// sections, by the module a `plugin_*` line loads (`yandextank.plugins.X`,
/// or yandex-tank 1's `Tank/Plugins/X.py`), lower-cased.
const PLUGINS_TANK_DOES: &[&str] = &[
    "phantom",
    "autostop",
    "console",
    "rcassert",
    "dataupload",
    "datauploader",
    "overload",
    "telegraf",
    "monitoring",
    "influxuploader",
    "aggregator",
    "jsonreport",
    "tips",
];

/// `[tank]` / `core:` options that only yandex-tank's machinery reads: a
/// lock tank does not take, and plugins it does not load. Said, not silent.
fn core_bookkeeping(section: &RawSection, warnings: &mut Vec<ConfigError>) {
    for entry in &section.entries {
        if matches!(
            entry.key.as_str(),
            "lock_dir" | "ignore_lock" | "ignore_locks"
        ) {
            warnings.push(entry_error(
                &section.name,
                entry,
                "tank takes no lock (it does not check for another test running on this \
                 machine): the option is ignored",
            ));
            continue;
        }
        if !entry.key.starts_with("plugin_") {
            continue;
        }
        let RawValue::Str(package) = &entry.value else {
            continue;
        };
        // yandex-tank 1 wrote `plugin_x = Tank/Plugins/X.py`; 2 writes
        // `yandextank.plugins.X`, optionally followed by the section's name.
        let module = package.split_whitespace().next().unwrap_or_default();
        if module.is_empty() {
            continue;
        }
        let name = module
            .trim_end_matches(".py")
            .rsplit(['.', '/'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !PLUGINS_TANK_DOES.contains(&name.as_str()) {
            warnings.push(entry_error(
                &section.name,
                entry,
                format!(
                    "tank loads no yandex-tank plugins: `{module}` is not run (tank acts on the \
                     sections it knows, whatever plugins are listed)"
                ),
            ));
        }
    }
}

/// yandex-tank reads a boolean as an integer, else `true` in any case, and
/// anything else as false, so `yes` and `on` are false: said, not silent.
/// (A value with what looks like a comment in it is said by [`inline_comments`].)
fn unusual_boolean(section: &RawSection, entry: &RawEntry, warnings: &mut Vec<ConfigError>) {
    let RawValue::Str(text) = &entry.value else {
        return;
    };
    let usual = convert::python_int(text).is_some()
        || text.eq_ignore_ascii_case("true")
        || text.eq_ignore_ascii_case("false");
    let commented = text.contains([';', '#']);
    if !usual && !commented && !text.is_empty() {
        warnings.push(entry_error(
            &section.name,
            entry,
            format!(
                "`{text}` reads as false, as yandex-tank reads it (a boolean is an integer, \
                 or true or false in any case)"
            ),
        ));
    }
}

fn check_type(section: &RawSection, entry: &RawEntry, kind: Kind) -> Result<(), ConfigError> {
    let result = match kind {
        Kind::Str => convert::string(&entry.value).map(drop),
        Kind::Int => convert::integer(&entry.value).map(drop),
        Kind::Bool => convert::boolean(&entry.value).map(drop),
        Kind::List => convert::list(&entry.value).map(drop),
        Kind::Headers => convert::headers(&entry.value).map(drop),
        Kind::Autocases => queue::autocases_value(&entry.value).map(drop),
        Kind::LoadProfile | Kind::Any => Ok(()),
    };
    result.map_err(|m| entry_error(&section.name, entry, m))
}

/// At most one spelling of the load profile per section.
fn check_schedule_conflict(section: &RawSection) -> Result<(), ConfigError> {
    let mut found: Vec<&RawEntry> = Vec::new();
    for key in SCHEDULE_KEYS {
        found.extend(section.get(key));
    }
    let dotted = section
        .entries
        .iter()
        .find(|e| e.key.starts_with("load_profile."));
    if found.len() > 1 || (!found.is_empty() && dotted.is_some()) {
        let mut names: Vec<&str> = found.iter().map(|e| e.key.as_str()).collect();
        if dotted.is_some() {
            names.push("load_profile");
        }
        let last = found.last().copied().or(dotted);
        let message = format!(
            "conflicting options: {} (set only one load profile)",
            names.join(", ")
        );
        let error = match last {
            Some(entry) => entry_error(&section.name, entry, message),
            None => ConfigError::new(message).in_section(&section.name),
        };
        return Err(error);
    }
    Ok(())
}

/// Sections switched off by an empty `plugin_<name> =` in `[tank]`, as yandex-tank does.
fn disabled_by_core(raw: &RawConfig, kinds: &[SectionKind]) -> Vec<String> {
    let mut disabled = Vec::new();
    for (section, kind) in raw.sections.iter().zip(kinds) {
        if *kind != SectionKind::Core {
            continue;
        }
        for entry in &section.entries {
            let Some(rest) = entry.key.strip_prefix("plugin_") else {
                continue;
            };
            let is_empty = matches!(&entry.value, RawValue::Str(s) if s.trim().is_empty())
                || entry.value == RawValue::Null;
            if is_empty {
                let name = rest.split('_').next().unwrap_or(rest);
                disabled.push(name.to_owned());
            }
        }
    }
    disabled
}

fn read_core(section: &RawSection, core: &mut CoreConfig) -> Result<(), ConfigError> {
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match section.get(key) {
            Some(entry) => {
                convert::string(&entry.value).map_err(|m| entry_error(&section.name, entry, m))
            }
            None => Ok(None),
        }
    };
    if let Some(dir) = string("artifacts_base_dir")?.filter(|d| !d.is_empty()) {
        core.artifacts_base_dir = dir;
    }
    if let Some(dir) = string("artifacts_dir")? {
        core.artifacts_dir = Some(dir).filter(|d| !d.is_empty());
    }
    if let Some(entry) = section.get("keep_cpus_awake") {
        if let Some(keep) =
            convert::boolean(&entry.value).map_err(|m| entry_error(&section.name, entry, m))?
        {
            core.keep_cpus_awake = keep;
        }
    }
    if let Some(entry) = section.get("fail_on_warnings") {
        if let Some(fail) =
            convert::boolean(&entry.value).map_err(|m| entry_error(&section.name, entry, m))?
        {
            core.fail_on_warnings = fail;
        }
    }
    Ok(())
}

fn read_autostop(
    section: &RawSection,
    autostop: &mut AutostopConfig,
    path: &Path,
) -> Result<(), ConfigError> {
    if let Some(entry) = section.get("autostop") {
        let criteria =
            convert::criteria(&entry.value).map_err(|m| entry_error(&section.name, entry, m))?;
        autostop.criteria = criteria.unwrap_or_default();
        autostop.criteria_at = Some(crate::error::OptionPlace::new(
            path,
            entry.place,
            &section.name,
            &entry.key,
        ));
    }
    if let Some(entry) = section.get("report_file") {
        if let Some(file) =
            convert::string(&entry.value).map_err(|m| entry_error(&section.name, entry, m))?
        {
            autostop.report_file = file;
        }
    }
    Ok(())
}

fn read_rcassert(section: &RawSection, rcassert: &mut RcAssertConfig) -> Result<(), ConfigError> {
    if let Some(entry) = section.get("pass") {
        let codes = match &entry.value {
            RawValue::Int(code) => vec![code.to_string()],
            RawValue::Null => Vec::new(),
            other => convert::list(other)
                .map_err(|m| entry_error(&section.name, entry, m))?
                .unwrap_or_default(),
        };
        rcassert.pass = codes
            .iter()
            .map(|code| exit_code(code).map_err(|m| entry_error(&section.name, entry, m)))
            .collect::<Result<_, _>>()?;
    }
    if let Some(entry) = section.get("fail_code") {
        if let Some(code) =
            convert::integer(&entry.value).map_err(|m| entry_error(&section.name, entry, m))?
        {
            rcassert.fail_code = i32::try_from(code).map_err(|_| {
                entry_error(
                    &section.name,
                    entry,
                    format!("exit code {code} is out of range"),
                )
            })?;
        }
    }
    Ok(())
}

fn exit_code(text: &str) -> Result<i32, String> {
    convert::python_int(text)
        .and_then(|code| i32::try_from(code).ok())
        .ok_or_else(|| format!("expected exit codes separated by spaces, found `{text}`"))
}

fn read_console(section: &RawSection, console: &mut ConsoleConfig) -> Result<(), ConfigError> {
    if let Some(entry) = section.get("short_only") {
        let short =
            convert::boolean(&entry.value).map_err(|m| entry_error(&section.name, entry, m))?;
        console.short_only = short.unwrap_or(false);
    }
    Ok(())
}
