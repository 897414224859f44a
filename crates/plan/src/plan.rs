//! A queue's plan: stepped from its schedule and ammo, or read from a ready
//! stpd file. Either way, a lazy stream of shots.

use tank_config::{LoadProfile, QueueConfig};

use crate::error::{PlanError, Result};
use crate::planned::PlannedCount;
use crate::schedule::Schedule;
use crate::shard::{Shard, ShardedPlan};
use crate::stepper::{ShotRef, Stepper};
use crate::stpd::StpdReader;

/// The shots of one queue.
pub enum Plan {
    /// Stepped from `rps_schedule` / `instances_schedule` and the ammo.
    Stepped(Box<Stepper>),
    /// Read from `stpd_file`, as written.
    Stpd(StpdReader),
    /// One shard's slice of another plan.
    Sharded(Box<ShardedPlan>),
}

impl Plan {
    /// Build the plan of `queue`: parse its schedule and open its ammo.
    pub fn new(queue: &QueueConfig) -> Result<Self> {
        let schedule = match &queue.load_profile {
            LoadProfile::Rps(text) => Schedule::rps(text)?,
            LoadProfile::Instances(text) => Schedule::instances(text)?,
            LoadProfile::StpdFile(path) => return Ok(Plan::Stpd(StpdReader::open(path)?)),
        };
        let ammo = queue.ammo.as_ref().ok_or_else(|| {
            PlanError::Config(
                "no ammo: expected `ammofile` or `uris` (only `stpd_file` needs neither)".into(),
            )
        })?;
        Ok(Plan::Stepped(Box::new(Stepper::new(
            queue, schedule, ammo,
        )?)))
    }

    /// `shard`'s slice of this plan (the plan itself for the whole).
    pub fn shard(self, shard: Shard) -> Plan {
        if shard.is_whole() {
            self
        } else {
            Plan::Sharded(Box::new(ShardedPlan::new(self, shard)))
        }
    }

    /// The schedule, when the plan is stepped (a shard's is the whole plan's).
    pub fn schedule(&self) -> Option<&Schedule> {
        match self {
            Plan::Stepped(stepper) => Some(stepper.schedule()),
            Plan::Stpd(_) => None,
            Plan::Sharded(sharded) => sharded.inner().schedule(),
        }
    }

    /// The plan's shots as a function of time, when that is known without
    /// walking the plan: an rps schedule over ammo that never runs out (see
    /// [`Stepper::known_len`]). `None` for instances schedules, ready stpd files,
    /// and ammo that a `loop` limit ends.
    pub fn planned_count(&self) -> Option<PlannedCount> {
        match self {
            Plan::Stepped(stepper) => match (stepper.schedule(), stepper.known_len()) {
                (Schedule::Rps(rps), Some(len)) => Some(PlannedCount::new(rps.clone(), len)),
                _ => None,
            },
            Plan::Stpd(_) => None,
            Plan::Sharded(sharded) => sharded
                .inner()
                .planned_count()
                .map(|count| count.sharded(sharded.shard())),
        }
    }

    /// The ammo format being read (`stpd` for a ready stpd file).
    pub fn ammo_format(&self) -> &'static str {
        match self {
            Plan::Stepped(stepper) => stepper.ammo_format(),
            Plan::Stpd(_) => "stpd",
            Plan::Sharded(sharded) => sharded.inner().ammo_format(),
        }
    }

    /// Passes over the ammo finished so far (0 for a ready stpd file).
    pub fn passes(&self) -> u64 {
        match self {
            Plan::Stepped(stepper) => stepper.passes(),
            Plan::Stpd(_) => 0,
            Plan::Sharded(sharded) => sharded.inner().passes(),
        }
    }

    /// The next shot, or `None` at the end.
    pub fn next_shot(&mut self) -> Result<Option<ShotRef<'_>>> {
        match self {
            Plan::Stepped(stepper) => stepper.next_shot(),
            Plan::Stpd(reader) => reader.next_shot(),
            Plan::Sharded(sharded) => sharded.next_shot(),
        }
    }
}
