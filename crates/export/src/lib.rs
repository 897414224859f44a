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

#![warn(missing_docs)]

pub mod influx;
pub mod line;
pub mod prometheus;
mod sinks;
