//! The exporters as sinks of the results pipeline: each finished second goes
//! out as it is handed over. Neither fails the run: each counts what it could
//! not send (its report says how many), so a sink's error never comes from them.

use tank_results::{SecondSink, SinkError, SoFar};
use tank_stats::SecondStats;

use crate::influx::Influx;
use crate::prometheus::Endpoint;

impl SecondSink for Influx {
    fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        Influx::second(self, second);
        Ok(())
    }
}

impl SecondSink for Endpoint {
    fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        Endpoint::second(self, second);
        Ok(())
    }
}
