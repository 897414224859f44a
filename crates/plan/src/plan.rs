//! A queue's plan: stepped from its schedule and ammo, or read from a ready
//! stpd file. Either way, a lazy stream of shots, and a statement of how they
//! are to be fired ([`Model`]), so no later stage re-derives it.

use std::time::Duration;

use tank_config::{Autocases, LoadProfile, Places, QueueConfig, ReplayConnections};

use crate::error::{PlanError, Result};
use crate::planned::PlannedCount;
use crate::replay::{CaptureStats, FirstPass, ReplaySettings, Step};
use crate::schedule::Schedule;
use crate::shard::Shard;
use crate::stepper::{ShotRef, Stepper};
use crate::stpd::StpdReader;

/// How a queue's shots are fired.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// Open (`rps_schedule`): every shot is due at its time and goes to
    /// whichever of `instances` is free; when all are busy, shots go late.
    /// The queue ends at `deadline`: shots not started by then are unsent.
    Open {
        /// The instance pool (`instances`).
        instances: usize,
        /// The schedule's end, from the start.
        deadline: Duration,
        /// The planned count in closed form, when the ammo cannot end the plan first.
        planned: Option<PlannedCount>,
    },
    /// Closed (`instances_schedule`): instances start at the schedule's times
    /// (the first `starts` shots are due then) and fire back to back after.
    Closed {
        /// The instances running at the end of the schedule.
        instances: usize,
        /// How many shots are instance starts.
        starts: u64,
    },
    /// A ready stpd file: due times as written, fired as phantom fires them
    /// (each instance takes the next shot at once and holds it until due); a
    /// 0 after a later time means "at once" (a closed model written out).
    Stpd {
        /// The instance pool (`instances`).
        instances: usize,
    },
    /// A replay of a sessions file (`ammo_type = sessions`): each session on
    /// a connection of its own, its requests in order, each at its due time
    /// once the one before has its reply; a session waits for a free
    /// instance of the pool. See [`crate::replay`].
    Sessions {
        /// The session pool: `instances` when written, else the most sessions
        /// of the plan open at once (with `per_request`, `instances`).
        pool: usize,
        /// `replay_speed`.
        speed: f64,
        /// `replay_connections`.
        connections: ReplayConnections,
    },
}

impl Model {
    /// The instances the queue runs.
    pub fn instances(&self) -> usize {
        match self {
            Model::Open { instances, .. }
            | Model::Closed { instances, .. }
            | Model::Stpd { instances } => *instances,
            Model::Sessions { pool, .. } => *pool,
        }
    }

    /// When the queue ends, from the start: the open model's deadline.
    pub fn deadline(&self) -> Option<Duration> {
        match self {
            Model::Open { deadline, .. } => Some(*deadline),
            _ => None,
        }
    }
}

enum Source {
    Stepped(Box<Stepper>),
    Stpd(StpdReader),
    Sessions(Box<Sessions>),
}

/// A replay's stream and what was learnt of its capture.
struct Sessions {
    path: std::path::PathBuf,
    settings: ReplaySettings,
    /// The pool the config sets (`instances`, written or under
    /// `per_request`), for the whole plan; `None`: the capture's peak.
    instances: Option<usize>,
    stats: CaptureStats,
    /// The stream; an error when [`Plan::shard`] could not read the file again.
    stream: std::result::Result<crate::replay::ReplayStream, Option<PlanError>>,
}

/// The shots of one queue.
pub struct Plan {
    source: Source,
    model: Model,
    /// Which shots have a due time (see [`Timing`]).
    timing: Timing,
    /// Where the queue's options were written, for errors met while streaming.
    places: Places,
    /// The option the shots' bytes come from (`ammofile`, `uris`, `stpd_file`).
    ammo_key: &'static str,
    /// The slice of the plan this process fires (the whole plan unless sharded).
    shard: Shard,
    /// The whole plan's index of the next shot the source gives.
    next_seq: u64,
    /// A replay's walked count (other plans' is their model's).
    planned: Option<PlannedCount>,
}

/// Which shots have a due time. An rps plan's all do; an instances schedule's
/// only up to its last start time (then every shot is due "at once"); in a
/// ready stpd file, a 0 after a later time means the same.
enum Timing {
    All,
    UpTo(u64),
    StpdZeros { latest_ms: i64 },
}

impl Timing {
    fn due(&mut self, seq: u64, due_ms: i64, due_ns: i64) -> Option<Duration> {
        let timed = match self {
            Timing::All => true,
            Timing::UpTo(starts) => seq < *starts,
            Timing::StpdZeros { latest_ms } => {
                let timed = !(due_ms == 0 && *latest_ms > 0);
                *latest_ms = (*latest_ms).max(due_ms);
                timed
            }
        };
        timed.then(|| Duration::from_nanos(u64::try_from(due_ns).unwrap_or(0)))
    }
}

/// One shot of a plan, with its due time as the model has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedShot<'a> {
    /// The shot as stepped (its `due_ms` as written in stpd).
    pub shot: ShotRef<'a>,
    /// When it is due, from the start; `None` for "as soon as an instance is
    /// free" (a closed model's shots after its start times), which neither
    /// waits nor has a lag.
    pub due: Option<Duration>,
}

impl Plan {
    /// Build the plan of `queue`: parse its schedule and open its ammo. Every
    /// error names the config file, line, section and option it comes from.
    pub fn new(queue: &QueueConfig) -> Result<Self> {
        let ammo_key = match (&queue.load_profile, &queue.ammo) {
            (LoadProfile::StpdFile(_), _) => "stpd_file",
            (_, Some(tank_config::AmmoSource::Uris(_))) => "uris",
            _ => "ammofile",
        };
        let locate = |error: PlanError| error.located(queue, ammo_key);
        let instances = queue.instances as usize;
        let schedule = match &queue.load_profile {
            LoadProfile::Rps(text) => Schedule::rps_with(text, &queue.arrivals),
            LoadProfile::Instances(text) => Schedule::instances(text),
            LoadProfile::Replay(_) => return Plan::replay(queue, Shard::WHOLE).map_err(locate),
            LoadProfile::StpdFile(path) => {
                return Ok(Plan {
                    source: Source::Stpd(StpdReader::open(path).map_err(locate)?),
                    model: Model::Stpd { instances },
                    timing: Timing::StpdZeros { latest_ms: 0 },
                    places: queue.places.clone(),
                    ammo_key,
                    shard: Shard::WHOLE,
                    next_seq: 0,
                    planned: None,
                })
            }
        }
        .map_err(locate)?;
        let ammo = queue.ammo.as_ref().ok_or_else(|| {
            locate(PlanError::Config(
                "no ammo: expected `ammofile` or `uris` (only `stpd_file` needs neither)".into(),
            ))
        })?;
        let stepper = Stepper::new(queue, schedule, ammo).map_err(locate)?;
        let (model, timing) = match stepper.schedule() {
            Schedule::Rps(rps) => (
                Model::Open {
                    instances,
                    deadline: Duration::from_millis(u64::try_from(rps.duration_ms()).unwrap_or(0)),
                    planned: stepper
                        .known_len()
                        .map(|len| PlannedCount::new(rps.clone(), len)),
                },
                Timing::All,
            ),
            Schedule::Instances(schedule) => (
                Model::Closed {
                    // A schedule that starts none (a blank rps_schedule) runs the pool.
                    instances: usize::try_from(schedule.instances())
                        .ok()
                        .filter(|n| *n > 0)
                        .unwrap_or(instances),
                    starts: schedule.starts(),
                },
                Timing::UpTo(schedule.starts()),
            ),
        };
        Ok(Plan {
            source: Source::Stepped(Box::new(stepper)),
            model,
            timing,
            places: queue.places.clone(),
            ammo_key,
            shard: Shard::WHOLE,
            next_seq: 0,
            planned: None,
        })
    }

    /// `shard`'s slice of this plan: its shots `k ≡ I (mod N)`, keeping their
    /// index and due time in the whole plan, with the instances divided among
    /// the shards (at least one each) and the planned count the slice's.
    ///
    /// A replay is split by session, never within one (see [`crate::replay`]):
    /// its file is read again for the shard's pool and count. Should that
    /// fail, the plan keeps the whole capture's pool and reports the error
    /// when streamed; [`Plan::sharded`] reports it at once instead.
    pub fn shard(mut self, shard: Shard) -> Plan {
        if shard.is_whole() {
            return self;
        }
        if let Source::Sessions(sessions) = &mut self.source {
            let settings = ReplaySettings {
                shard,
                ..sessions.settings
            };
            let instances = sessions
                .instances
                .map(|total| usize::try_from(shard.instances(total as u64)).unwrap_or(usize::MAX));
            let speed = settings.replay.speed;
            let resharded = CaptureStats::walk(&sessions.path, settings.selection(), speed)
                .and_then(|walked| {
                    Plan::sessions_source(&sessions.path, settings, instances, walked)
                });
            match resharded {
                Ok((mut resharded, model, planned)) => {
                    resharded.instances = sessions.instances;
                    **sessions = resharded;
                    self.model = model;
                    self.planned = planned;
                }
                Err(error) => sessions.stream = Err(Some(error)),
            }
            return self;
        }
        self.shard = shard;
        let divided =
            |total: usize| usize::try_from(shard.instances(total as u64)).unwrap_or(usize::MAX);
        self.model = match self.model {
            Model::Open {
                instances,
                deadline,
                planned,
            } => Model::Open {
                instances: divided(instances),
                deadline,
                planned: planned.map(|count| count.sharded(shard)),
            },
            Model::Closed { instances, starts } => Model::Closed {
                instances: divided(instances),
                starts,
            },
            Model::Stpd { instances } => Model::Stpd {
                instances: divided(instances),
            },
            sessions @ Model::Sessions { .. } => sessions,
        };
        self
    }

    /// `queue`'s plan, `shard`'s slice of it (see [`Plan::shard`]).
    pub fn sharded(queue: &QueueConfig, shard: Shard) -> Result<Plan> {
        match &queue.load_profile {
            LoadProfile::Replay(_) => {
                Plan::replay(queue, shard).map_err(|error| error.located(queue, "ammofile"))
            }
            _ => Ok(Plan::new(queue)?.shard(shard)),
        }
    }

    /// A replay of `queue`'s sessions file: the capture is read through once
    /// for its statistics, its pool and its first pass's due times (which
    /// also checks every record); only a replay of more than one pass, or one
    /// that `ammo_limit` cuts, is walked once more to count its due times.
    fn replay(queue: &QueueConfig, shard: Shard) -> Result<Plan> {
        let (LoadProfile::Replay(replay), Some(tank_config::AmmoSource::File { path, .. })) =
            (&queue.load_profile, &queue.ammo)
        else {
            return Err(PlanError::Config(
                "`ammo_type = sessions` needs `ammofile` = a sessions file".into(),
            ));
        };
        check_sessions_file(path)?;
        check_protocol(queue, path)?;
        let passes = match queue.loop_count {
            -1 => Some(1),
            0 => None,
            n => Some(n.unsigned_abs()),
        };
        let mut settings = ReplaySettings {
            replay: *replay,
            shard,
            passes,
            limit: u64::try_from(queue.ammo_limit).ok(),
            // Both from the statistics, below.
            period_us: 0,
            per_pass: 0,
            marking: (queue.autocases, queue.enum_ammo),
        };
        // The capture's figures do not depend on the selection; the
        // selection's own (its pool, its requests) come from the same pass.
        let (stats, first) = CaptureStats::walk(path, settings.selection(), replay.speed)?;
        settings.period_us = stats.period_us();
        settings.per_pass = if replay.connections == ReplayConnections::PerRequest {
            stats.requests
        } else {
            stats.sessions
        };
        let per_request = replay.connections == ReplayConnections::PerRequest;
        let instances = (queue.places.is_written("instances") || per_request)
            .then_some(queue.instances as usize);
        let sharded = instances
            .map(|total| usize::try_from(shard.instances(total as u64)).unwrap_or(usize::MAX));
        let (mut sessions, model, planned) =
            Plan::sessions_source(path, settings, sharded, (stats, first))?;
        sessions.instances = instances;
        Ok(Plan {
            source: Source::Sessions(Box::new(sessions)),
            model,
            timing: Timing::All,
            places: queue.places.clone(),
            ammo_key: "ammofile",
            shard: Shard::WHOLE,
            next_seq: 0,
            planned,
        })
    }

    /// The stream of `path` under `settings`, its model (the pool: the
    /// selection's peak of open sessions) and its walked count.
    fn sessions_source(
        path: &std::path::Path,
        settings: ReplaySettings,
        instances: Option<usize>,
        (stats, first): (CaptureStats, FirstPass),
    ) -> Result<(Sessions, Model, Option<PlannedCount>)> {
        settings.check_fires(path, &stats)?;
        let peak = usize::try_from(stats.peak_selected.max(1)).unwrap_or(usize::MAX);
        let model = Model::Sessions {
            pool: instances.unwrap_or(peak),
            speed: settings.replay.speed,
            connections: settings.replay.connections,
        };
        let uncut = settings
            .limit
            .is_none_or(|limit| limit >= first.kept_requests);
        let planned = match settings.passes {
            None => None,
            Some(1) if uncut => first.due.map(|due| due.finish().into_count()),
            Some(_) => {
                let mut walk = crate::replay::ReplayStream::open(path, settings)?;
                let mut histogram = crate::planned::DueHistogram::default();
                let mut within = Some(());
                while let Some(step) = walk.next_step()? {
                    if let Step::Request { due, .. } = step {
                        let ms = u64::try_from(due.as_millis()).unwrap_or(u64::MAX);
                        within = histogram.add(ms);
                        if within.is_none() {
                            break;
                        }
                    }
                }
                within.map(|()| histogram.finish().into_count())
            }
        };
        let stream = crate::replay::ReplayStream::open(path, settings)?;
        let sessions = Sessions {
            path: path.to_path_buf(),
            settings,
            instances,
            stats,
            stream: Ok(stream),
        };
        Ok((sessions, model, planned))
    }

    /// A replay's capture: what it holds (`None` for other plans). Its
    /// `peak_selected` is this plan's (the shard's, after skip and offset).
    pub fn capture(&self) -> Option<&CaptureStats> {
        match &self.source {
            Source::Sessions(sessions) => Some(&sessions.stats),
            _ => None,
        }
    }

    /// A replay's next step (`None` at its end, and for other plans). Each
    /// request it gives is also a shot of [`Plan::next_timed`]; use one or
    /// the other.
    pub fn next_step(&mut self) -> Result<Option<Step<'_>>> {
        let Source::Sessions(sessions) = &mut self.source else {
            return Ok(None);
        };
        let (places, key) = (&self.places, self.ammo_key);
        match &mut sessions.stream {
            Ok(stream) => stream
                .next_step()
                .map_err(|error| error.located_in(places, key)),
            Err(error) => match error.take() {
                Some(error) => Err(error.located_in(places, key)),
                None => Ok(None),
            },
        }
    }

    /// Skip the whole plan's shots that are not this shard's; `false` at the plan's end.
    fn skip_to_own(&mut self) -> Result<bool> {
        while !self.shard.owns(self.next_seq) {
            let read = match &mut self.source {
                Source::Stepped(stepper) => stepper.next_shot().map(|s| s.is_some()),
                Source::Stpd(reader) => reader.next_shot().map(|s| s.is_some()),
                // A replay's stream is already its shard's.
                Source::Sessions(_) => Ok(true),
            };
            match read {
                Ok(true) => self.next_seq += 1,
                Ok(false) => return Ok(false),
                Err(error) => return Err(error.located_in(&self.places, self.ammo_key)),
            }
        }
        self.next_seq += 1;
        Ok(true)
    }

    /// How a closed model ends, for the user to read before it starts: it has
    /// no end of its own, so its ammo's end ends it (`None` for other models).
    pub fn closed_model_end(queue: &QueueConfig) -> Option<String> {
        if !matches!(queue.load_profile, LoadProfile::Instances(_)) {
            return None;
        }
        Some(match (queue.loop_count, queue.ammo_limit) {
            (_, limit) if limit > 0 => format!("ends after {limit} shots (ammo_limit)"),
            (1, _) => "ends after one pass over its ammo (loop = 1)".to_string(),
            (passes, _) if passes > 1 => format!("ends after {passes} passes over its ammo (loop)"),
            _ => "ends after one pass over its ammo, as yandex-tank's does; \
                  set `loop` = N passes or `ammo_limit` = N shots for more"
                .to_string(),
        })
    }

    /// What `queue`'s plan draws from, for the user to note so that a run can
    /// be repeated: `arrivals poisson, seed 42`, when the plan depends on the
    /// seed (drawn arrivals, a `random(...)` step without a seed of its own,
    /// or a scenario file's draw of scenarios); `None` otherwise, and for a
    /// schedule that does not parse (the plan itself reports that).
    pub fn seed_note(queue: &QueueConfig) -> Option<String> {
        let arrivals = match &queue.load_profile {
            LoadProfile::Rps(text) => match Schedule::rps_with(text, &queue.arrivals) {
                Ok(Schedule::Rps(rps)) if rps.uses_seed() => {
                    Some(format!("arrivals {}", queue.arrivals.describe()))
                }
                _ => None,
            },
            _ => None,
        };
        // A scenario file's draw (which scenario each run is) uses the seed too.
        let scenario = matches!(
            &queue.ammo,
            Some(tank_config::AmmoSource::File {
                ammo_type: tank_config::AmmoType::Scenario,
                ..
            })
        );
        match (arrivals, scenario) {
            (Some(arrivals), true) => {
                Some(format!("{arrivals}; scenarios drawn with the same seed"))
            }
            (None, true) => {
                let chosen = if queue.arrivals.seed_chosen {
                    " (chosen by tank: set `arrivals_seed` to repeat it)"
                } else {
                    ""
                };
                Some(format!(
                    "scenarios drawn with seed {}{chosen}",
                    queue.arrivals.seed
                ))
            }
            (arrivals, false) => arrivals,
        }
    }

    /// Read `queue`'s ammo through once (a ready stpd file to its end) and
    /// report the first error, as the run would meet it mid-way: so that bad
    /// ammo stops a test before its first shot, not after its start. The
    /// shots are not kept; memory does not grow with the ammo.
    ///
    /// Not needed for a plan whose making read all of its ammo already
    /// ([`Plan::ammo_checked`]).
    pub fn check_ammo(queue: &QueueConfig) -> Result<()> {
        let mut plan = Plan::new(queue)?;
        while plan.passes() == 0 && plan.next_shot()?.is_some() {}
        Ok(())
    }

    /// Whether making the plan read and checked every record of its ammo
    /// (a replay's sessions file, walked whole for its statistics), so that
    /// [`Plan::check_ammo`] would only read it again.
    pub fn ammo_checked(&self) -> bool {
        matches!(self.source, Source::Sessions(_))
    }

    /// How the shots are to be fired.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The schedule, when the plan is stepped.
    pub fn schedule(&self) -> Option<&Schedule> {
        match &self.source {
            Source::Stepped(stepper) => Some(stepper.schedule()),
            Source::Stpd(_) | Source::Sessions(_) => None,
        }
    }

    /// The plan's shots as a function of time, when that is known without
    /// walking the plan: an rps schedule over ammo that never runs out (see
    /// [`Stepper::known_len`]). `None` for instances schedules, ready stpd files,
    /// and ammo that a `loop` limit ends.
    pub fn planned_count(&self) -> Option<&PlannedCount> {
        match &self.model {
            Model::Open { planned, .. } => planned.as_ref(),
            Model::Sessions { .. } => self.planned.as_ref(),
            _ => None,
        }
    }

    /// A scenario file's compiled book (`ammo_type = scenario`; `None` for
    /// other plans): each of this plan's shots is a run of one of its
    /// scenarios, named by the shot's bytes.
    pub fn scenarios(&self) -> Option<&std::sync::Arc<tank_scenario::Book>> {
        match &self.source {
            Source::Stepped(stepper) => stepper.scenarios(),
            Source::Stpd(_) | Source::Sessions(_) => None,
        }
    }

    /// The ammo format being read (`stpd` for a ready stpd file).
    pub fn ammo_format(&self) -> &'static str {
        match &self.source {
            Source::Stepped(stepper) => stepper.ammo_format(),
            Source::Stpd(_) => "stpd",
            Source::Sessions(_) => "sessions",
        }
    }

    /// Passes over the ammo finished so far (0 for a ready stpd file).
    pub fn passes(&self) -> u64 {
        match &self.source {
            Source::Stepped(stepper) => stepper.passes(),
            Source::Stpd(_) => 0,
            Source::Sessions(sessions) => sessions.stream.as_ref().map_or(0, |s| s.passes()),
        }
    }

    /// The next shot, or `None` at the end. An error names the config option
    /// the bytes come from, then the file and byte offset.
    pub fn next_shot(&mut self) -> Result<Option<ShotRef<'_>>> {
        Ok(self.next_timed()?.map(|timed| timed.shot))
    }

    /// The next shot with its due time as the model has it.
    pub fn next_timed(&mut self) -> Result<Option<TimedShot<'_>>> {
        if let Source::Sessions(_) = self.source {
            return self.next_replayed();
        }
        if !self.skip_to_own()? {
            return Ok(None);
        }
        let (places, key) = (&self.places, self.ammo_key);
        let next = match &mut self.source {
            Source::Stepped(stepper) => stepper.next_shot(),
            Source::Stpd(reader) => reader.next_shot(),
            // Returned above.
            Source::Sessions(_) => Ok(None),
        };
        let timing = &mut self.timing;
        next.map(|shot| {
            shot.map(|shot| TimedShot {
                due: timing.due(shot.seq, shot.due_ms, shot.due_ns),
                shot,
            })
        })
        .map_err(|error| error.located_in(places, key))
    }
}

impl Plan {
    /// A replay's next request as a shot (its `due_ms` the due time's whole ms).
    fn next_replayed(&mut self) -> Result<Option<TimedShot<'_>>> {
        // Steps that are not requests are skipped; the borrow checker wants
        // the request found first and lent out after the loop.
        loop {
            match self.next_step()? {
                None => return Ok(None),
                Some(Step::Request { .. }) => break,
                Some(_) => {}
            }
        }
        let Source::Sessions(sessions) = &self.source else {
            return Ok(None);
        };
        let Ok(stream) = &sessions.stream else {
            return Ok(None);
        };
        Ok(stream
            .last_request()
            .map(|(seq, due, tag, bytes)| TimedShot {
                shot: ShotRef {
                    seq,
                    due_ms: i64::try_from(due.as_millis()).unwrap_or(i64::MAX),
                    due_ns: i64::try_from(due.as_nanos()).unwrap_or(i64::MAX),
                    marker: tag,
                    missile: bytes,
                },
                due: Some(due),
            }))
    }
}

/// Fail early, and helpfully, on an `ammofile` that is not a sessions file.
fn check_sessions_file(path: &std::path::Path) -> Result<()> {
    if crate::sessions::is_sessions_file(path)? {
        return Ok(());
    }
    Err(PlanError::Ammo {
        path: path.to_path_buf(),
        offset: 0,
        message: format!(
            "not a sessions file (its first line is not `{}`): a capture (pcap, access \
             log, HAR) is replayed from the sessions file `tank import {} -o sessions.txt` \
             makes of it, with `ammofile = sessions.txt`",
            crate::sessions::MAGIC,
            path.display()
        ),
    })
}

/// A sessions file is replayed only by the gun of its protocol, and only
/// with the options that mean something for it.
fn check_protocol(queue: &QueueConfig, path: &std::path::Path) -> Result<()> {
    use crate::sessions::Protocol;
    use tank_config::{ReplyFraming, TankType};
    let protocol = crate::sessions::SessionsReader::open(path)?.protocol();
    let (fits, guns) = match protocol {
        Protocol::Http => (
            matches!(queue.tank_type, TankType::Http | TankType::Http2),
            "`tank_type = http` (or `http2`)",
        ),
        Protocol::Mysql => (queue.tank_type == TankType::Mysql, "`tank_type = mysql`"),
        Protocol::Tcp => (queue.tank_type == TankType::None, "`tank_type = none`"),
    };
    let at = |key: &str, message: String| {
        Err(PlanError::Located(Box::new(
            queue.places.of(key).error(message),
        )))
    };
    if !fits {
        return at(
            "tank_type",
            format!(
                "{} holds {} sessions (its first line says so), which {guns} replays; \
                 this queue's gun speaks another protocol",
                path.display(),
                protocol.name(),
            ),
        );
    }
    if protocol != Protocol::Http && (queue.autocases != Autocases::Off || queue.enum_ammo) {
        let key = if queue.enum_ammo {
            "enum_ammo"
        } else {
            "autocases"
        };
        return at(
            key,
            format!(
                "`{key}` makes tags of HTTP requests; {} sessions are replayed with the tags \
                 the import gave them",
                protocol.name()
            ),
        );
    }
    let per_request = matches!(
        &queue.load_profile,
        LoadProfile::Replay(replay) if replay.connections == ReplayConnections::PerRequest
    );
    if protocol == Protocol::Tcp && queue.reply_framing == ReplyFraming::Close && !per_request {
        return at(
            "tank_type",
            format!(
                "{} holds TCP sessions, whose requests go over one kept connection: the gun \
                 must know where each reply ends (`reply_delimiter` or `reply_length_prefix`), \
                 or each request must have a connection of its own (`replay_connections = \
                 per_request`)",
                path.display()
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of a replay queue written as `options`, of a sessions file
    /// whose first line is `first_line`.
    fn replay_plan(first_line: &str, options: &str) -> Result<Plan> {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("s.txt");
        std::fs::write(
            &sessions,
            format!("{first_line}\nS 0 0 c\nR 1 0 0 t\n\x0e\nE 0 0\n"),
        )
        .unwrap();
        let text = format!(
            "[phantom]\naddress = 127.0.0.1:1\nammo_type = sessions\nammofile = {}\n{options}",
            sessions.display()
        );
        let config = tank_config::load_str(
            &text,
            tank_config::ConfigFormat::Ini,
            std::path::Path::new("load.ini"),
            &[],
        )
        .unwrap();
        Plan::sharded(&config.queues[0], Shard::WHOLE)
    }

    #[test]
    fn a_sessions_file_is_replayed_only_by_its_protocols_gun() {
        let mysql = "tank-sessions 1 mysql";
        let with_user = "[mysql]\nuser = u\n";
        assert!(replay_plan(mysql, &format!("tank_type = mysql\n{with_user}")).is_ok());
        let cases = [
            (
                mysql,
                String::new(),
                "[phantom] tank_type: ",
                "holds mysql sessions",
            ),
            (
                "tank-sessions 1",
                format!("tank_type = mysql\n{with_user}"),
                "tank_type",
                "holds http sessions",
            ),
            (
                mysql,
                format!("tank_type = mysql\nautocases = 1\n{with_user}"),
                "autocases",
                "makes tags of HTTP",
            ),
            (
                "tank-sessions 1 tcp",
                "tank_type = none\n".into(),
                "tank_type",
                "where each reply ends",
            ),
        ];
        for (first_line, options, key, expected) in cases {
            let error = replay_plan(first_line, &options).err().unwrap().to_string();
            assert!(
                error.contains(key) && error.contains(expected),
                "{first_line} {options}: {error}"
            );
        }
        assert!(replay_plan(
            "tank-sessions 1 tcp",
            "tank_type = none\nreply_delimiter = \\n\n"
        )
        .is_ok());
        assert!(replay_plan(
            "tank-sessions 1 tcp",
            "tank_type = none\nreplay_connections = per_request\n"
        )
        .is_ok());
    }

    #[test]
    fn an_instances_schedule_times_only_its_starts() {
        let mut timing = Timing::UpTo(2);
        assert_eq!(timing.due(0, 0, 0), Some(Duration::ZERO));
        assert_eq!(
            timing.due(1, 500, 500_000_000),
            Some(Duration::from_millis(500))
        );
        assert_eq!(timing.due(2, 0, 0), None);
    }

    #[test]
    fn a_zero_after_a_later_time_in_stpd_means_at_once() {
        let mut timing = Timing::StpdZeros { latest_ms: 0 };
        let ms = |ms: i64| (ms, ms * 1_000_000);
        let mut due = |seq, (ms, ns)| timing.due(seq, ms, ns);
        assert_eq!(due(0, ms(0)), Some(Duration::ZERO));
        assert_eq!(due(1, ms(100)), Some(Duration::from_millis(100)));
        assert_eq!(due(2, ms(0)), None);
        assert_eq!(due(3, ms(200)), Some(Duration::from_millis(200)));
    }
}
