//! Where finished seconds go: the one small trait every consumer of results
//! implements, whether it writes a file (`test_data.log`, phout), keeps a
//! series (the report's timeline), judges (autostop), exports (InfluxDB,
//! Prometheus), shows (the console) or tabulates (memcached's mcperf lines).
//!
//! A sink is told, in order: each response as it is counted ([`SecondSink::response`],
//! optional: most sinks want only seconds), each second once it is final
//! ([`SecondSink::second`]), and the run's totals at the end ([`SecondSink::finish`]).
//! The live run, `tank report` and `tank merge` drive the same sinks through
//! [`crate::Pipeline`]; a new consumer (a web dashboard, say) is one more
//! implementation, not a fourth copy of the pipeline.

use std::io;
use std::path::PathBuf;

use tank_stats::phout::Record;
use tank_stats::{Aggregator, Measured, Sample, SecondStats, TotalStats};

/// One response as a source yields it: a live shot's sample, or a row read
/// back from a phout.
#[derive(Debug, Clone, Copy)]
pub enum Response<'a> {
    /// A shot the engine just measured (live): it has its lag and its queue.
    Sample(&'a Sample),
    /// A phout row, with its text (without the `\n`) and the index of the file
    /// it came from among the source's files.
    Row {
        /// The row, parsed.
        record: &'a Record<'a>,
        /// The row as written.
        line: &'a [u8],
        /// Which of the source's files it came from.
        file: usize,
    },
}

impl Response<'_> {
    /// The shot's tag, as written (cut at its last `#` for grouping: `tank_stats::case_of`).
    pub fn tag(&self) -> &[u8] {
        match self {
            Response::Sample(sample) => &sample.tag,
            Response::Row { record, .. } => record.tag,
        }
    }

    /// What was measured.
    pub fn measured(&self) -> &Measured {
        match self {
            Response::Sample(sample) => &sample.measured,
            Response::Row { record, .. } => &record.measured,
        }
    }

    /// When the shot started, µs since the Unix epoch (a phout keeps ms).
    pub fn start_unix_us(&self) -> u64 {
        match self {
            Response::Sample(sample) => sample.start_unix_us,
            Response::Row { record, .. } => record.send_ms.saturating_mul(1000),
        }
    }
}

/// The run so far, for a sink that shows more than the finished second (the
/// console's cumulative tables).
#[derive(Debug, Clone, Copy)]
pub struct SoFar<'a> {
    pub(crate) aggregator: &'a Aggregator,
}

impl SoFar<'_> {
    /// The totals of every second finished so far (and late responses).
    /// Computed on each call: call it once per second at most.
    pub fn totals(&self) -> TotalStats {
        self.aggregator.totals()
    }
}

/// A file a sink could not write.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {error}", file.display())]
pub struct SinkError {
    /// The file.
    pub file: PathBuf,
    /// Why.
    #[source]
    pub error: io::Error,
}

/// A consumer of finished seconds.
///
/// Contract:
/// - [`SecondSink::second`] is called once per finished second, in increasing
///   order of `second.ts`, after the responses counted in it were shown to
///   [`SecondSink::response`] (when the driver shows responses to this sink).
/// - Every method MUST return quickly: it runs on the results thread, and
///   delays the next second's data (never a shot).
/// - A sink that fails returns its error once and then stays quiet (a file
///   sink writes nothing more); the driver reports the error and keeps feeding
///   the other sinks. Only file writes fail: exporters count what they drop.
pub trait SecondSink {
    /// One response, as it is counted (in the source's order). Most sinks do
    /// not look at single responses; the default ignores them.
    fn response(&mut self, response: Response<'_>) {
        let _ = response;
    }

    /// A second became final.
    fn second(&mut self, second: &SecondStats, so_far: SoFar<'_>) -> Result<(), SinkError>;

    /// The source is exhausted and every second was handed out: the totals.
    fn finish(&mut self, totals: &TotalStats) -> Result<(), SinkError> {
        let _ = totals;
        Ok(())
    }
}

/// A sink lent to a driver is a sink.
impl<S: SecondSink + ?Sized> SecondSink for &mut S {
    fn response(&mut self, response: Response<'_>) {
        (**self).response(response);
    }

    fn second(&mut self, second: &SecondStats, so_far: SoFar<'_>) -> Result<(), SinkError> {
        (**self).second(second, so_far)
    }

    fn finish(&mut self, totals: &TotalStats) -> Result<(), SinkError> {
        (**self).finish(totals)
    }
}

/// An optional sink (an exporter not configured, say) is a sink that does nothing.
impl<S: SecondSink> SecondSink for Option<S> {
    fn response(&mut self, response: Response<'_>) {
        if let Some(sink) = self {
            sink.response(response);
        }
    }

    fn second(&mut self, second: &SecondStats, so_far: SoFar<'_>) -> Result<(), SinkError> {
        match self {
            Some(sink) => sink.second(second, so_far),
            None => Ok(()),
        }
    }

    fn finish(&mut self, totals: &TotalStats) -> Result<(), SinkError> {
        match self {
            Some(sink) => sink.finish(totals),
            None => Ok(()),
        }
    }
}
