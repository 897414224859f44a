//! The prepare stage: every check a run makes on its input, and nothing else.
//!
//! [`Prepared::new`] reads and checks everything a run will use — the
//! captures a replay names (imported into temporary sessions files), each
//! queue's plan and ammo, its gun's options (address form, TLS files and
//! suites), the `[origin]` recipe and body budget, the autostop criteria, the
//! shard and seed rules, a common start in the past — and creates no
//! artifact, thread or socket. So `tank plan` (which is `Prepared::new` plus
//! printing) and `tank -c` refuse the same configs with the same located
//! errors, and a run whose input is bad leaves nothing behind: that holds by
//! construction, because the phases that write (`Prepared::start` on) take a
//! `Prepared`.
//!
//! One check needs the network: a host name is looked up when the run starts.
//! Here it is only tried ([`Prepared::unresolved_targets`]): a config is often
//! planned on a machine other than the one that fires it. One input comes
//! over the network: a `tank_type = grpc` queue without `[grpc] proto` has
//! its schema from the server's reflection service, asked here (its ammo
//! cannot be checked without it).

use std::net::SocketAddr;
use std::time::Duration;

use tank_config::{ConfigError, OriginConfig, OriginRecipe, TestConfig};
use tank_engine::{CheckedQueue, EngineError};
use tank_plan::Plan;
use tank_stats::autostop::Autostop;

use crate::captures::{import_captures, Captures};
use crate::observer::Notice;
use crate::{start, RunError, Spec};

/// Something the prepare stage found worth saying before the run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A warning about the input; the run goes on.
    Warning(String),
    /// A fact to show before the run (an import's summary, a drawn plan's seed).
    Info(String),
}

impl Note {
    /// As an observer's notice.
    pub fn notice(&self) -> Notice<'_> {
        match self {
            Note::Warning(text) => Notice::Warning(text),
            Note::Info(text) => Notice::Info(text),
        }
    }
}

/// The `[origin]` simulator as its section asks for it, checked, not started.
pub(crate) struct OriginSetup {
    pub listen: SocketAddr,
    pub recipes: Vec<tank_origin::Recipe>,
    pub options: tank_origin::Options,
}

/// A run whose input is checked; see the module docs.
pub struct Prepared {
    /// The spec as run: a replay's captures replaced by their sessions files.
    pub(crate) spec: Spec,
    /// The imported sessions files, removed when the run is over.
    pub(crate) captures: Option<Captures>,
    pub(crate) queues: Vec<CheckedQueue>,
    pub(crate) autostop: Autostop,
    pub(crate) origin: Option<OriginSetup>,
    notes: Vec<Note>,
}

impl Prepared {
    /// Check `spec`'s input; see the module docs. Errors name the file, line,
    /// section and option at fault.
    pub fn new(spec: &Spec) -> Result<Prepared, RunError> {
        Prepared::stoppable(spec, &crate::Handle::default())
    }

    /// [`Prepared::new`], whose waits on a server (a gRPC schema asked by
    /// reflection) `handle`'s stop ends at once.
    pub fn stoppable(spec: &Spec, handle: &crate::Handle) -> Result<Prepared, RunError> {
        let mut notes = Vec::new();
        let captures = import_captures(&spec.config, &mut |notice| match notice {
            Notice::Warning(text) => notes.push(Note::Warning(text.to_owned())),
            Notice::Info(text) => notes.push(Note::Info(text.to_owned())),
            // An import tells nothing else.
            Notice::Autostop(_) | Notice::WriteFailed { .. } => {}
        })?;
        let spec = match &captures {
            Some(captures) => Spec {
                config: captures.config().clone(),
                ..spec.clone()
            },
            None => spec.clone(),
        };
        // A gRPC queue without `proto` learns its schema from the server first.
        let spec = match tank_engine::reflect_schemas(&spec.config, None, &handle.control.stop)? {
            Some(config) => Spec { config, ..spec },
            None => spec,
        };
        if let Some(at) = spec.start_at {
            start::check_ahead(at, Duration::ZERO)?;
        }
        let config = &spec.config;
        notes.extend(config.warnings.iter().cloned().map(Note::Warning));
        plan_notes(&spec, &mut notes)?;
        let origin = config.origin.as_ref().map(check_origin).transpose()?;
        let queues = config
            .queues
            .iter()
            .map(|queue| {
                let checked = CheckedQueue::check(queue, origin.is_some(), spec.shard)?;
                // Bad ammo found mid-run would stop a test already under way. (A
                // scenario file and a sessions file are checked whole when their
                // plan opens them: above.)
                let plan = checked.plan();
                if plan.scenarios().is_none() && !plan.ammo_checked() {
                    Plan::check_ammo(queue).map_err(EngineError::Plan)?;
                }
                if let Some(warning) = tank_plan::ammo::bom_notice(queue) {
                    notes.push(Note::Warning(warning));
                }
                if let Some(warning) = tank_engine::check_http2_ammo(queue)? {
                    notes.push(Note::Warning(warning));
                }
                Ok(checked)
            })
            .collect::<Result<Vec<_>, RunError>>()?;
        let instances: usize = queues.iter().map(|q| q.plan().model().instances()).sum();
        let autostop = autostop_for(config, instances as u64).map_err(RunError::Autostop)?;
        Ok(Prepared {
            spec,
            captures,
            queues,
            autostop,
            origin,
            notes,
        })
    }

    /// The config as it will run (a replay's captures as their sessions files).
    pub fn config(&self) -> &TestConfig {
        &self.spec.config
    }

    /// What the checks found worth saying, in the order found.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// Each queue's plan, unwalked, beside its config (in config order): for
    /// `tank plan` to walk. A queue walked here is not fired.
    pub fn plans_mut(&mut self) -> impl Iterator<Item = (&tank_config::QueueConfig, &mut Plan)> {
        self.spec.config.queues.iter().zip(
            self.queues
                .iter_mut()
                .map(tank_engine::CheckedQueue::plan_mut),
        )
    }

    /// The targets that do not resolve from this machine, each a message that
    /// names the host and where it was written. A run fails on them when it
    /// starts; `tank plan` only warns (the config may be fired elsewhere).
    pub fn unresolved_targets(&self) -> Vec<String> {
        // The simulator is not running here: any loopback port stands in for it.
        let stand_in = self
            .origin
            .as_ref()
            .map(|_| SocketAddr::from(([127, 0, 0, 1], 0)));
        self.queues
            .iter()
            .filter_map(|queue| queue.resolve_target(stand_in).err())
            .map(|error| error.to_string())
            .collect()
    }

    /// What the guns read from the environment when the run starts (a MySQL
    /// `password_env`) and is not in this one, each a message naming the
    /// option. A run fails on it; `tank plan` only warns (the config may be
    /// fired elsewhere).
    pub fn missing_environment(&self) -> Vec<String> {
        self.queues
            .iter()
            .filter_map(|queue| queue.check_environment().err())
            .map(|error| error.to_string())
            .collect()
    }
}

/// The plan facts said before a run: a closed model only its ammo ends, and
/// the seed of a drawn plan (which the shards of a test must share).
fn plan_notes(spec: &Spec, notes: &mut Vec<Note>) -> Result<(), RunError> {
    let config = &spec.config;
    for queue in config
        .queues
        .iter()
        .filter(|q| q.loop_count == -1 && q.ammo_limit == -1)
    {
        if let Some(end) = Plan::closed_model_end(queue) {
            notes.push(Note::Warning(format!("[{}] the test {end}", queue.name)));
        }
    }
    for queue in &config.queues {
        let Some(note) = Plan::seed_note(queue) else {
            continue;
        };
        if !spec.shard.is_whole() && queue.arrivals.seed_chosen {
            return Err(RunError::Shard(format!(
                "[{}] the plan is drawn ({note}), and each shard would draw its own: \
                 expected `arrivals_seed` set, so every shard plans the same shots",
                queue.name
            )));
        }
        notes.push(Note::Info(format!("[{}] {note}", queue.name)));
    }
    Ok(())
}

/// The `[origin]` section checked: its recipe read and parsed, its body budget
/// and admin token read; errors name the recipe.
fn check_origin(origin: &OriginConfig) -> Result<OriginSetup, RunError> {
    let (text, source) = match &origin.recipe {
        OriginRecipe::File(path) => (
            std::fs::read_to_string(path).map_err(|e| {
                RunError::Origin(format!("recipe: cannot read {}: {e}", path.display()))
            })?,
            path.display().to_string(),
        ),
        OriginRecipe::Json(json) => (json.clone(), "recipe_json".to_string()),
    };
    let recipes = tank_origin::Recipe::from_json(&text)
        .map_err(|e| RunError::Origin(format!("{source}: {e}")))?;
    let body_budget = match &origin.body_budget {
        Some(text) => tank_origin::parse_body_budget(text)
            .map_err(|e| RunError::Origin(format!("body_budget: {e}")))?,
        None => tank_origin::DEFAULT_BODY_BUDGET,
    };
    Ok(OriginSetup {
        listen: origin.listen,
        recipes,
        options: tank_origin::Options {
            allow_fetch: origin.allow_fetch,
            admin_token: tank_origin::AdminToken::from_env(tank_origin::TOKEN_ENV)
                .map_err(RunError::Origin)?,
            body_budget,
        },
    })
}

/// The `[autostop]` criteria of `config`, checked; errors name where they were written.
pub(crate) fn autostop_for(
    config: &TestConfig,
    instances_limit: u64,
) -> Result<Autostop, ConfigError> {
    let at = || match &config.autostop.criteria_at {
        Some(place) => place.clone(),
        None => tank_config::OptionPlace::unwritten(&config.path, "autostop", "autostop"),
    };
    let autostop = Autostop::new(&config.autostop.criteria, instances_limit)
        .map_err(|e| at().error(e.to_string()))?;
    if autostop.watches_monitoring() && config.monitoring.is_none() {
        return Err(at().error(
            "metric_higher / metric_lower judge monitoring, which is off: add a \
             [telegraf] section naming the hosts to watch",
        ));
    }
    Ok(autostop)
}
