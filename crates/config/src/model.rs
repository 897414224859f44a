//! The validated config model: what every spelling (INI, TOML, YAML) turns into.
//!
//! Values keep the reference's raw meaning where the stepper interprets them
//! (`loop`, `ammo_limit`, schedule strings, header strings): the plan crate owns
//! those semantics, so the config crate only checks types and presence.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::OptionPlace;

/// Which spelling a config file used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// yandex-tank's `load.ini` (Python ConfigParser rules).
    Ini,
    /// The same sections and keys in TOML.
    Toml,
    /// yandex-tank 2's `load.yaml`.
    Yaml,
}

/// A whole test: every queue plus the run-level sections.
#[derive(Debug, Clone, PartialEq)]
pub struct TestConfig {
    /// The file it was read from (as given on the command line).
    pub path: PathBuf,
    /// The spelling of that file.
    pub format: ConfigFormat,
    /// `[phantom]` first, then each `[phantom-*]` (YAML: `phantom.multi[i]`) in file order.
    /// Every extra queue already inherits the `[phantom]` options it does not set.
    pub queues: Vec<QueueConfig>,
    /// `[autostop]`.
    pub autostop: AutostopConfig,
    /// `[tank]` / `core:`.
    pub core: CoreConfig,
    /// `[rcassert]`.
    pub rcassert: RcAssertConfig,
    /// `[console]`.
    pub console: ConsoleConfig,
    /// `[origin]`: the origin simulator to start before shooting, if any.
    pub origin: Option<OriginConfig>,
    /// `[memcached]`: the workload of queues with `tank_type = memcached` and no ammo of their own.
    pub memcached: Option<MemcachedConfig>,
    /// `[mysql]`: the credentials of queues with `tank_type = mysql`.
    pub mysql: Option<MysqlConfig>,
    /// `[grpc]`: the schema of queues with `tank_type = grpc` (each such queue
    /// also carries it, in [`QueueConfig::grpc`]).
    pub grpc: Option<GrpcConfig>,
    /// `[search]`: the settings of `tank search` and `tank scan` (flags override them).
    pub search: crate::search::SearchConfig,
    /// What the config asks for that tank does not do: sections of yandex-tank
    /// plugins it does not implement, options it does not act on. Each names
    /// the file, line and section; `tank plan` and `tank -c` print them.
    pub warnings: Vec<String>,
    /// `[telegraf]` / `[monitoring]`: what to watch on the target while shooting.
    pub monitoring: Option<MonitoringConfig>,
    /// `[influx]`: where to send each finished second (InfluxDB line protocol).
    pub influx: Option<InfluxConfig>,
    /// `[prometheus]`: serve `/metrics` while the test runs.
    pub prometheus: Option<PrometheusConfig>,
    /// `[web]`: serve the live dashboard while the test runs.
    pub web: Option<crate::web::WebConfig>,
    /// `[meta]` (`[overload]`, `uploader:`): the job's name and description.
    pub job: crate::job::Job,
    /// The options written in `[phantom]` that hold for the whole run.
    pub run: RunOptions,
}

/// Options written in `[phantom]` (as yandex-tank reads them there) that hold
/// for the whole run, not for a queue: read from `[phantom]` only; an extra
/// queue that writes its own gets a warning that it is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// `threads`: how many I/O threads fire the test's shots, at most
    /// [`crate::bounds::MAX_THREADS`] (`None`: the default, as phantom's,
    /// cores/2 + 1).
    pub threads: Option<u32>,
    /// `buffered_seconds`: how long a second waits for late replies before it
    /// is final (yandex-tank's default: 2).
    pub buffered_seconds: u32,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            threads: None,
            buffered_seconds: 2,
        }
    }
}

/// One request queue: a `[phantom]`-style section.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    /// Section name as written (`phantom`, `phantom-1`; YAML `phantom.multi[0]` or its `name`).
    pub name: String,
    /// `address`: `host[:port]`, `[ipv6]:port`, or a host name. Required.
    pub address: String,
    /// `port`: overrides the port in `address` when set (digits only).
    pub port: Option<u16>,
    /// `rps_schedule` / `instances_schedule` / `stpd_file` (YAML `load_profile`).
    pub load_profile: LoadProfile,
    /// Where the load profile was written, for errors the plan finds in the schedule.
    pub load_profile_at: OptionPlace,
    /// `ammofile` (+ `ammo_type`) or `uris`: exactly one of them. `None` only
    /// for a `stpd_file` queue that names neither (its stpd holds the requests).
    pub ammo: Option<AmmoSource>,
    /// `headers`: each item as `Name: value`, with `[` / `]` stripped from both ends.
    pub headers: Vec<String>,
    /// `header_http`: the HTTP version written in built requests (default `1.0`).
    pub header_http: String,
    /// `autocases`.
    pub autocases: Autocases,
    /// `enum_ammo`.
    pub enum_ammo: bool,
    /// `chosen_cases`, split on ASCII whitespace.
    pub chosen_cases: Vec<Vec<u8>>,
    /// `loop` as written (`-1` = not set; `0`, as in the reference, no limit either;
    /// at most [`crate::bounds::MAX_SHOTS`]). The plan applies the reference's rules.
    pub loop_count: i64,
    /// `ammo_limit` as written (`-1` = not set; else 1 to [`crate::bounds::MAX_SHOTS`]).
    /// The plan applies the reference's rules.
    pub ammo_limit: i64,
    /// `instances`: the instance pool size (default 1000, at most [`crate::bounds::MAX_INSTANCES`]).
    pub instances: u32,
    /// `timeout`: each shot's budget (stepper duration syntax plus `ms`; default 11 s).
    pub timeout: Duration,
    /// `ssl`.
    pub ssl: bool,
    /// `ssl_verify` (tank's own option): verify the server's certificate
    /// against the Mozilla roots. Off by default, as phantom never verifies.
    pub ssl_verify: bool,
    /// `tank_type`.
    pub tank_type: TankType,
    /// `writelog`.
    pub writelog: WriteLog,
    /// phantom's limits on a reply: `phantom_http_line`, `_field`, `_field_num`, `_entity`.
    pub reply_limits: ReplyLimits,
    /// `gatling_ip`: source addresses to connect from, round-robin (empty: the kernel's choice).
    pub gatling_ip: Vec<IpAddr>,
    /// `client_certificate`: a PEM file to present to the server (`None`: none).
    pub client_certificate: Option<PathBuf>,
    /// `client_key`: the certificate's PEM key (`None`: none).
    pub client_key: Option<PathBuf>,
    /// `client_cipher_suites`, split on `:` (empty: the TLS library's defaults).
    pub client_cipher_suites: Vec<String>,
    /// Where each option the queue sees was written, for errors a later stage
    /// finds in a value (a certificate file that cannot be read, say).
    pub places: Places,
    /// `depth` (tank's own): requests in flight per connection, 1 to
    /// [`crate::bounds::MAX_DEPTH`] (default 1); above 1 only for
    /// `tank_type = memcached` over plain TCP.
    pub depth: u32,
    /// `measure` (tank's own): this queue is a measuring probe, a low-rate
    /// open-loop schedule whose latency is reported on its own, beside the
    /// load queues' (mcperf's measuring master). Only with an `rps_schedule`.
    pub measure: bool,
    /// `arrivals` and `arrivals_seed` (tank's own): how an `rps_schedule`
    /// spaces its shots, and the seed of its draws (and of `random(...)` steps).
    pub arrivals: crate::arrivals::Arrivals,
    /// `connections` (tank's own): how many HTTP/2 connections the queue's
    /// streams are multiplexed over, 1 to [`crate::limits::MAX_INSTANCES`]
    /// (`None`: as few as the concurrency needs). Only for `tank_type =
    /// http2` and `grpc`.
    pub connections: Option<u32>,
    /// The `[grpc]` schema, for a `tank_type = grpc` queue (`None` for others).
    pub grpc: Option<GrpcConfig>,
    /// `reply_delimiter` / `reply_length_prefix` (tank's own): where a reply
    /// ends for `tank_type = none` (default: at the server's close).
    pub reply_framing: ReplyFraming,
    /// The `[mysql]` section, for a `tank_type = mysql` queue (`None` otherwise).
    pub mysql: Option<MysqlConfig>,
}

/// Where a plain TCP reply ends (`tank_type = none`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ReplyFraming {
    /// When the server closes the connection: one request per connection.
    #[default]
    Close,
    /// After these bytes (`reply_delimiter`, 1 to [`MAX_DELIMITER`] of them).
    Delimiter(Vec<u8>),
    /// After a big-endian length prefix of this many bytes (1, 2, 4 or 8;
    /// `reply_length_prefix`) and as many bytes as it says follow it.
    LengthPrefix(u8),
}

/// The longest `reply_delimiter`.
pub const MAX_DELIMITER: usize = 8;

/// `[mysql]`: who a `tank_type = mysql` queue logs in as (tank's own section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlConfig {
    /// `user`.
    pub user: String,
    /// `password` or `password_env`.
    pub password: Password,
    /// `database`: the schema each connection uses (`None`: the one each
    /// captured connection used).
    pub database: Option<String>,
    /// `ssl`: TLS, started inside the handshake (the queue's `ssl_verify`
    /// and client certificate apply).
    pub ssl: bool,
}

/// Where a password is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Password {
    /// Written in the config (`password`; empty when neither is written).
    Literal(String),
    /// In the environment variable `name` (`password_env`), read when the
    /// gun is set up; `place` is where the option was written, for errors.
    Env {
        /// The variable.
        name: String,
        /// Where `password_env` was written.
        place: OptionPlace,
    },
}

/// phantom's limits on a reply, in bytes (`phantom_http_field_num`: a count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// `phantom_http_line` (default 1K): the status line and each header line.
    pub line: u64,
    /// `phantom_http_field` (default 8K): all header lines together.
    pub field: u64,
    /// `phantom_http_field_num` (default 128): header lines.
    pub field_num: u32,
    /// `phantom_http_entity` (default 8M): the body.
    pub entity: u64,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        ReplyLimits {
            line: 1 << 10,
            field: 8 << 10,
            field_num: 128,
            entity: 8 << 20,
        }
    }
}

/// Where a queue's options were written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The queue's own section, for options it does not set.
    pub(crate) section: OptionPlace,
    /// Each option the queue sees, its own or inherited.
    pub(crate) options: Vec<OptionPlace>,
}

impl Places {
    /// An error about the queue as a whole, located at its section.
    pub fn error(&self, message: impl Into<String>) -> crate::ConfigError {
        self.section.section_error(message)
    }

    /// Whether the queue sees `key` written (its own or inherited), as opposed
    /// to taking its default.
    pub fn is_written(&self, key: &str) -> bool {
        self.options.iter().any(|place| place.key() == key)
    }

    /// Where `key` was written, or the queue's section when it was not set.
    pub fn of(&self, key: &str) -> OptionPlace {
        self.options
            .iter()
            .rev()
            .find(|place| place.key() == key)
            .cloned()
            .unwrap_or_else(|| self.section.with_key(key))
    }
}

/// How a queue's shots are timed.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadProfile {
    /// Open model: `rps_schedule`, the schedule string as written.
    Rps(String),
    /// Closed model: `instances_schedule`, the schedule string as written.
    Instances(String),
    /// A ready stpd file (`stpd_file`), resolved against the working directory.
    StpdFile(PathBuf),
    /// A replay (`ammo_type = sessions`): the capture's own timing, scaled.
    /// It has no schedule option; the ammo is the sessions file.
    Replay(Replay),
}

/// How a sessions file is replayed (`ammo_type = sessions`; tank's own options).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replay {
    /// `replay_speed`: the time scale, finite and above 0 (default 1; 2 =
    /// twice as fast: each offset is divided by it).
    pub speed: f64,
    /// `replay_connections`.
    pub connections: ReplayConnections,
    /// `replay_skip` = N (default 1) and `replay_offset` = K (default 0):
    /// fire one session in every N, starting at the K-th; K is below N.
    pub skip: u64,
    /// See `skip`.
    pub offset: u64,
}

impl Default for Replay {
    fn default() -> Self {
        Replay {
            speed: 1.0,
            connections: ReplayConnections::Captured,
            skip: 1,
            offset: 0,
        }
    }
}

/// `replay_connections`: which requests share a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayConnections {
    /// `captured` (default): each captured session on its own connection, its
    /// requests over it in order.
    Captured,
    /// `per_request`: every request on a new connection (Apiary's
    /// genjobs-http-individual): each request is a session of its own.
    PerRequest,
}

/// Where requests come from.
#[derive(Debug, Clone, PartialEq)]
pub enum AmmoSource {
    /// `ammofile`, read in `ammo_type` format (gzip is detected by content).
    File {
        /// The path, `~` expanded, relative to the working directory.
        path: PathBuf,
        /// `ammo_type`.
        ammo_type: AmmoType,
    },
    /// `uris`: GET requests cycled in order (never empty).
    Uris(Vec<String>),
    /// The `[memcached]` workload: requests generated from mcperf's model
    /// (a `tank_type = memcached` queue with neither `ammofile` nor `uris`).
    Memcached(Box<MemcachedConfig>),
}

/// `ammo_type` values the reference accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmmoType {
    /// Request-style: `<size> [tag]` then raw bytes (sniffed as `uri` when not starting with a digit).
    Phantom,
    /// One URI per line, `[Header: value]` lines.
    Uri,
    /// `<size> <uri> [tag]` then a POST body.
    UriPost,
    /// A web server's access log (GET lines only).
    Access,
    /// A sessions file (tank's own; see `docs/replay.md`): captured requests
    /// with their offsets and sessions, replayed with the capture's timing.
    Sessions,
    /// A scenario file in Pandora's format (`.hcl`, `.yaml`, `.json`; see
    /// `docs/scenarios.md`): each shot is one run of a scenario, its requests
    /// built from templates, variables and sources as it goes.
    Scenario,
    /// Pandora's `grpc/json`: one JSON object a line, `{"tag", "call",
    /// "metadata", "payload"}`, for `tank_type = grpc` (its default there).
    GrpcJson,
}

/// `autocases`: how untagged missiles get a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Autocases {
    /// `0`: empty marker.
    Off,
    /// `N`: the first N+1 `/`-pieces of the URI path joined with `_` (Python slice rules for odd N).
    Depth(i64),
    /// `uri`: all pieces of the URI path joined with `_`.
    Uri,
    /// `uniq`: a random 32-hex uuid per missile.
    Uniq,
}

/// `tank_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TankType {
    /// HTTP/1.x gun (responses parsed).
    Http,
    /// Plain TCP (`none`): bytes out, bytes in, no parsing.
    None,
    /// memcached's ASCII protocol (`memcached`, tank's own).
    Memcached,
    /// MySQL's client protocol (`mysql`, tank's own): replays of captured MySQL sessions.
    Mysql,
    /// HTTP/2 (`http2`, tank's own): the HTTP/1 ammo sent as HTTP/2 requests,
    /// multiplexed over few connections (h2 with ALPN over TLS, h2c with
    /// prior knowledge without).
    Http2,
    /// gRPC over HTTP/2 (`grpc`, tank's own): Pandora's `grpc/json` ammo,
    /// encoded by the `[grpc]` schema.
    Grpc,
}

impl TankType {
    /// Whether the gun speaks HTTP/2 (so `connections` applies).
    pub fn is_http2(self) -> bool {
        matches!(self, TankType::Http2 | TankType::Grpc)
    }
}

/// `writelog`: which shots get their request and response written to the answers log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteLog {
    /// `0` / `false`: none.
    Off,
    /// `all` / `1` / `true`.
    All,
    /// `proto_warning`: 4xx, 5xx and network errors.
    ProtoWarning,
    /// `proto_error`: 5xx and network errors.
    ProtoError,
}

/// `[autostop]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AutostopConfig {
    /// Criteria as written, one `name(params)` each.
    pub criteria: Vec<String>,
    /// Where they were written, for errors about them (`None`: none were).
    pub criteria_at: Option<OptionPlace>,
    /// `report_file` (default `autostop_report.txt`).
    pub report_file: String,
}

/// `[tank]` / `core:`: run-level options.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CoreConfig {
    /// `artifacts_base_dir` (default `logs`).
    pub artifacts_base_dir: String,
    /// `artifacts_dir`: a fixed directory instead of a new one per run.
    pub artifacts_dir: Option<String>,
    /// `keep_cpus_awake` (tank's own, default on): while the test runs, ask the
    /// kernel to keep every CPU out of idle states that are slow to wake from,
    /// so shots are not late because a CPU was asleep at their due time.
    pub keep_cpus_awake: bool,
    /// `fail_on_warnings` (tank's own, default off): a run that ends with
    /// warnings (every shot failed, shots unsent, samples dropped, ...) exits with
    /// its own code instead of 0, so CI can fail on it.
    pub fail_on_warnings: bool,
}

/// `[rcassert]`: exit code remapping.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RcAssertConfig {
    /// `pass`: codes that become 0.
    pub pass: Vec<i32>,
    /// `fail_code`: replaces any other non-zero code when `pass` is set (default 10).
    pub fail_code: i32,
}

/// `[console]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsoleConfig {
    /// `short_only`: one plain line per second instead of the full screen.
    pub short_only: bool,
}

/// `[origin]`: tank's own section (yandex-tank has none). tank starts the
/// origin simulator in-process with this recipe before shooting, and queues
/// with `address = origin` shoot at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginConfig {
    /// `recipe` (a JSON file) or `recipe_json` (the JSON itself): exactly one.
    pub recipe: OriginRecipe,
    /// `listen`: where the simulator listens (default `127.0.0.1:0`, a free port).
    pub listen: SocketAddr,
    /// `allow_fetch`: whether recipes POSTed to its admin API may fetch an
    /// `origin` (default no; the section's own recipe always may).
    pub allow_fetch: bool,
    /// `body_budget` as written (`512mb`): the most bytes all routes' bodies
    /// may declare. The origin crate parses it; `None` keeps its default.
    pub body_budget: Option<String>,
}

/// Where the `[origin]` recipe comes from. The config crate does not parse
/// it: the engine hands it to `tank_origin::Recipe::from_json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginRecipe {
    /// `recipe`: a JSON file, `~` expanded, relative to the working directory.
    File(PathBuf),
    /// `recipe_json`: the recipe text itself.
    Json(String),
}

/// The `address` value that points a queue at the `[origin]` simulator.
pub const ORIGIN_ADDRESS: &str = "origin";

/// `[telegraf]` / `[monitoring]`: yandex-tank's monitoring host list, collected
/// without an agent (node_exporter, /proc, Prometheus endpoints, local commands).
#[derive(Debug, Clone, PartialEq)]
pub struct MonitoringConfig {
    /// The section it was read from (`telegraf` or `monitoring`).
    pub section: String,
    /// The hosts to watch, in file order.
    pub hosts: Vec<MonitoredHost>,
    /// What the config asks for that tank cannot do (SSH-only options), one line each.
    pub warnings: Vec<String>,
    /// The file the host list was read from (`config = mon.xml`, as written:
    /// relative to the working directory), when it was one.
    pub file: Option<PathBuf>,
}

/// One `<Host>` of the monitoring config.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitoredHost {
    /// The host name as written (`[target]` resolved), lower-cased as yandex-tank does.
    pub address: String,
    /// Where the host's system metrics come from.
    pub source: HostSource,
    /// `interval`: how often to collect (default 1 s).
    pub interval_ms: u64,
    /// `comment`, written beside the metrics in `monitoring.log`.
    pub comment: String,
    /// Which metric groups to report.
    pub groups: MetricGroups,
    /// `<Custom>`: commands run on this machine, one number each.
    pub custom: Vec<CustomCommand>,
    /// `<Process>`: processes of this machine to watch (local hosts only).
    pub processes: Vec<ProcessSelector>,
    /// `<Prometheus>`: endpoints to scrape for chosen metrics.
    pub prometheus: Vec<PrometheusScrape>,
}

/// Where a host's system metrics come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSource {
    /// A Prometheus node_exporter: `http://ADDRESS:9100/metrics`, or `metrics_url`.
    NodeExporter {
        /// The page to scrape.
        url: String,
    },
    /// This machine's /proc (`address` is `localhost`, `127.0.0.1`, `::1` or `local`).
    Local,
    /// No system metrics (`metrics_url="none"`): only custom commands, processes and endpoints.
    None,
}

/// The metric groups of a host (yandex-tank's `<CPU/>`, `<Memory/>`, ...).
/// A host that names none gets yandex-tank's default set: CPU, Memory, Disk, Net, System, Kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricGroups {
    /// `<CPU>`: CPU time shares, total.
    pub cpu: bool,
    /// `<CPU percpu=...>`: also per core (tank's default: yes).
    pub percpu: bool,
    /// `<Memory>`.
    pub memory: bool,
    /// `<Disk>`: I/O per device.
    pub disk: bool,
    /// `<Disk devices=...>`: only these devices (empty: every disk but loop/ram devices).
    pub devices: Vec<String>,
    /// `<Net>`: bytes, packets and errors per interface.
    pub net: bool,
    /// `<Net interfaces=...>`: only these (empty: every interface but `lo`).
    pub interfaces: Vec<String>,
    /// `<Netstat>`: TCP connections by state.
    pub netstat: bool,
    /// `<Nstat>`: TCP retransmits.
    pub nstat: bool,
    /// `<System>`: load average.
    pub system: bool,
    /// `<Kernel>`: context switches, interrupts, forks.
    pub kernel: bool,
}

/// A `<Custom>` command: run with `sh -c` on this machine each interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// The command (the element's text).
    pub command: String,
    /// `label`: the metric is `custom:<label>_exec_value`, as yandex-tank names it.
    pub label: String,
    /// `diff`: report the change per second instead of the value.
    pub diff: bool,
}

/// A `<Process>` to watch: CPU share and resident memory from /proc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessSelector {
    /// `pid="1234"`.
    Pid(u32),
    /// `name="nginx"`: every process whose command name is this (summed).
    Name(String),
}

/// A `<Prometheus url=... metrics=...>` endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusScrape {
    /// The page to scrape.
    pub url: String,
    /// The metric names to keep (each summed over its series; counters become rates).
    pub metrics: Vec<String>,
}

/// `[influx]`: yandex-tank's InfluxUploader options, plus tank's own for InfluxDB 2.x.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfluxConfig {
    /// `address` (default `localhost`).
    pub address: String,
    /// `port` (default 8086).
    pub port: u16,
    /// `database` (default `mydb`; 1.x).
    pub database: String,
    /// `username` (default `root`; 1.x).
    pub username: String,
    /// `password` (default `root`; 1.x).
    pub password: String,
    /// `tank_tag` (default `unknown`).
    pub tank_tag: String,
    /// `labeled`: also one set of points per tag.
    pub labeled: bool,
    /// `histograms`: also the `histograms` measurement.
    pub histograms: bool,
    /// `prefix_measurement`: prepended to the aggregate measurements' names.
    pub prefix_measurement: String,
    /// `custom_tags`: tags added to every point.
    pub custom_tags: Vec<(String, String)>,
    /// `chunk_size`: the most bytes one write sends (default 500000).
    pub chunk_size: usize,
    /// tank's own `api_version` (1 or 2) and its 2.x options.
    pub api: InfluxApi,
}

/// Which InfluxDB write API `[influx]` speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InfluxApi {
    /// 1.x: `POST /write?db=DATABASE&precision=s` with `u`/`p`.
    V1,
    /// 2.x: `POST /api/v2/write?org=ORG&bucket=BUCKET&precision=s` with `Authorization: Token`.
    V2 {
        /// `org`.
        org: String,
        /// `bucket` (default: `database`).
        bucket: String,
        /// `token`.
        token: String,
    },
}

/// `[prometheus]`: tank's own section; tank serves `/metrics` while the test runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusConfig {
    /// `listen` (default `127.0.0.1:9464`).
    pub listen: SocketAddr,
    /// `linger`: how long `/metrics` keeps serving the run's final totals
    /// after its end, for a scraper's last look (default none: it closes with
    /// the run, and a scraper misses what came after its last scrape).
    pub linger: Option<std::time::Duration>,
}

/// `[memcached]`: mcperf's workload model (tank's own section).
#[derive(Debug, Clone, PartialEq)]
pub struct MemcachedConfig {
    /// `records`: how many keys the workload uses (default 10000).
    pub records: u64,
    /// `keysize`: key lengths, one per record (default 30).
    pub keysize: Distribution,
    /// `valuesize`: the sizes of stored values (default 200).
    pub valuesize: Distribution,
    /// `update`: the share of requests that are sets, 0 to 1 (default 0).
    pub update: f64,
    /// `keyorder`: which record each request is about (default random).
    pub keyorder: KeyOrder,
    /// `getq_size`: keys per multiget (default 100).
    pub getq_size: u32,
    /// `getq_freq`: the percentage of gets that are multigets, 0 to 100 (default 0).
    pub getq_freq: f64,
    /// `seed`: the generator's seed; when not set, one tank chose when it
    /// read the config (see `seed_chosen`), printed so the run can be repeated.
    pub seed: u64,
    /// Whether tank chose `seed` (it was not set).
    pub seed_chosen: bool,
    /// `preload`: set every record before the measured run (default off).
    pub preload: bool,
}

/// A distribution in mcperf's spelling (see its `--keysize`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// `[fixed:]V`: always V.
    Fixed(f64),
    /// `uniform:MAX`: uniform on [0, MAX).
    Uniform {
        /// The upper end.
        max: f64,
    },
    /// `normal:MEAN,SD`.
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation.
        sd: f64,
    },
    /// `exponential:LAMBDA`: mean 1/LAMBDA.
    Exponential {
        /// The rate.
        lambda: f64,
    },
    /// `pareto:LOC,SCALE,SHAPE`: the generalized Pareto distribution.
    Pareto {
        /// The location.
        loc: f64,
        /// The scale.
        scale: f64,
        /// The shape (ξ).
        shape: f64,
    },
    /// `gev:LOC,SCALE,SHAPE`: the generalized extreme value distribution.
    Gev {
        /// The location.
        loc: f64,
        /// The scale.
        scale: f64,
        /// The shape (ξ).
        shape: f64,
    },
    /// `fb_key`: Facebook ETC's key sizes, `gev:30.7984,8.20449,0.078688`.
    FbKey,
    /// `fb_value`: Facebook ETC's value sizes, a discrete head and a
    /// generalized Pareto tail.
    FbValue,
}

/// `keyorder`: how requests pick their record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyOrder {
    /// `random` (mcperf's `none`): uniform over the records.
    Random,
    /// `sequential`: record 0, 1, 2, ... and round again.
    Sequential,
    /// A distribution: each sample, rounded down, modulo `records`, is the record.
    Distribution(Distribution),
}

/// `[grpc]` (tank's own section): where the schema of `tank_type = grpc`
/// queues comes from, and the calls' `:authority`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcConfig {
    /// Where the messages' descriptions come from.
    pub schema: GrpcSchema,
    /// `authority`: the `:authority` of every call (`None`: the target's
    /// `host:port` as written in `address`).
    pub authority: Option<String>,
    /// Where the section was written (or the queue's section when there is
    /// none), for errors a later stage finds in the schema.
    pub place: OptionPlace,
}

/// Where a gRPC schema comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum GrpcSchema {
    /// `proto = a.proto b.proto` with `import_paths = dir1 dir2`: compiled
    /// in-process (no protoc), each file found in the import paths (the
    /// file's own directory, then the working directory, when none is given).
    Protos {
        /// The `.proto` files, as written.
        files: Vec<PathBuf>,
        /// `import_paths`, as written.
        import_paths: Vec<PathBuf>,
    },
    /// No `proto`: the server's reflection service (v1, else v1alpha) is
    /// asked before the first shot.
    #[default]
    Reflection,
    /// A serialized `google.protobuf.FileDescriptorSet`: what reflection
    /// answered, filled in by the stage that asked it.
    Descriptors(std::sync::Arc<[u8]>),
}
