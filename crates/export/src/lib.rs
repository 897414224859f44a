//! tank-export: the finished seconds, sent where dashboards read them.
//!
//! * [`influx`]: InfluxDB line protocol with yandex-tank's InfluxUploader names
//!   (`overall_quantiles`, `overall_meta`, `net_codes`, `proto_codes`,
//!   `histograms`, `monitoring`; tags `tank`, `uuid`, `label`), to 1.x `/write`
//!   or 2.x `/api/v2/write`;
//! * [`prometheus`]: a `/metrics` page served while the test runs.
//!
//! Both take the seconds the run's results thread has already finished and
//! never sit on the shooting path: the InfluxDB writer has its own thread
//! behind a bounded queue and a bounded retry buffer (beyond them it drops and
//! counts), the `/metrics` server its own thread reading the last page.

//!
//! Both say which run they are of the same way ([`RunTags`]): its shard
//! (`0/1` for a whole test), so the shards of one test on several machines add
//! up in one dashboard, and the job's facts (`[meta]`). And both give each
//! queue of a run with several its own points, under the group
//! [`QUEUE_GROUP`] with a `queue` tag, beside the whole test's (`__OVERALL__`)
//! and each tag's, so that dashboards filtering `__OVERALL__` (yandex-tank's)
//! count every response once.

#![warn(missing_docs)]

pub mod influx;
pub mod line;
pub mod prometheus;
mod sinks;

/// The group (`label` in InfluxDB, `tag` in Prometheus) of a queue's own
/// points; the queue is in the `queue` tag (label).
pub const QUEUE_GROUP: &str = "__QUEUE__";

/// What every point of a run says about it, besides its group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunTags {
    /// The run's shard, `I/N` (`0/1`: the whole test).
    pub shard: String,
    /// The job's facts (`[meta]`: job_name, ver, component, task, operator,
    /// meta.*), as (name, value); the description is left out (free text has
    /// no place in an index).
    pub job: Vec<(String, String)>,
}
