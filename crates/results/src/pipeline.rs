//! The one driver: responses and the generator's counts in, finished seconds
//! out to every sink, in order.
//!
//! A [`Pipeline`] owns the aggregation (tank-stats' [`Aggregator`]); the sinks
//! stay with their owner and are lent to each call, so between calls the owner
//! reads them (has autostop fired? did a file fail?). The live run feeds it from
//! the samples channel and the engine's counters, once a wall-clock second;
//! [`drive`] feeds it from phout files (`tank report`, `tank compare`,
//! `tank merge`).

use tank_stats::{Aggregator, SecondStats, TotalStats};

use crate::planned::Planned;
use crate::sink::{Response, SecondSink, SinkError, SoFar};
use crate::source::{PhoutSource, SourceError};

/// Aggregation, handing finished seconds to sinks.
#[derive(Debug)]
pub struct Pipeline {
    aggregator: Aggregator,
}

impl Pipeline {
    /// A pipeline aggregating with `aggregator` (its `buffered_seconds`, its groups).
    pub fn new(aggregator: Aggregator) -> Pipeline {
        Pipeline { aggregator }
    }

    /// Count one response, and show it to `sinks` (those that look at single
    /// responses). A live sample's lag is noted in the second it started.
    pub fn response(&mut self, response: Response<'_>, sinks: &mut [&mut dyn SecondSink]) {
        match response {
            Response::Sample(sample) => {
                self.aggregator
                    .note_lag(sample.start_unix_us / 1_000_000, sample.lag_us);
                self.aggregator.add_sample(sample);
            }
            Response::Row { record, .. } => self.aggregator.add_record(record),
        }
        for sink in sinks {
            sink.response(response);
        }
    }

    /// The plans had `shots` shots due in unix second `second`.
    pub fn planned(&mut self, second: u64, shots: u64) {
        self.aggregator.note_planned(second, shots);
    }

    /// `shots` shots started in unix second `second`. Give it before the
    /// second is final (see [`Pipeline::advance`]): after, it counts in the totals only.
    pub fn sent(&mut self, second: u64, shots: u64) {
        self.aggregator.note_sent(second, shots);
    }

    /// `instances` instances were busy in unix second `second` (the largest count wins).
    pub fn instances(&mut self, second: u64, instances: u64) {
        self.aggregator.note_instances(second, instances);
    }

    /// The clock is in `now_second`: seconds `buffered_seconds` behind it are final.
    pub fn advance(&mut self, now_second: u64) {
        self.aggregator.advance(now_second);
    }

    /// The run so far.
    pub fn so_far(&self) -> SoFar<'_> {
        SoFar {
            aggregator: &self.aggregator,
        }
    }

    /// Hand every second that became final to each of `sinks`, in order. The
    /// failures, each once (see [`SecondSink`]'s contract); the other sinks go on.
    pub fn publish(&mut self, sinks: &mut [&mut dyn SecondSink]) -> Vec<SinkError> {
        let mut failures = Vec::new();
        while let Some(second) = self.aggregator.pop_ready() {
            hand_out(&second, &self.aggregator, sinks, &mut failures);
        }
        failures
    }

    /// No more input: every open second becomes final (hand them out with
    /// [`Pipeline::publish`], or let [`Pipeline::finish`] do it).
    pub fn close(&mut self) {
        self.aggregator.finish();
    }

    /// No more input: every open second becomes final and is handed out, then
    /// each sink finishes. The run's totals, and the failures. Call it once, last.
    pub fn finish(&mut self, sinks: &mut [&mut dyn SecondSink]) -> (TotalStats, Vec<SinkError>) {
        self.aggregator.finish();
        let mut failures = self.publish(sinks);
        let totals = self.aggregator.totals();
        for sink in sinks.iter_mut() {
            if let Err(error) = sink.finish(&totals) {
                failures.push(error);
            }
        }
        (totals, failures)
    }
}

fn hand_out(
    second: &SecondStats,
    aggregator: &Aggregator,
    sinks: &mut [&mut dyn SecondSink],
    failures: &mut Vec<SinkError>,
) {
    for sink in sinks.iter_mut() {
        if let Err(error) = sink.second(second, SoFar { aggregator }) {
            failures.push(error);
        }
    }
}

/// Why phout files could not be driven through the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// A phout could not be read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A sink could not write its file.
    #[error(transparent)]
    Sink(#[from] SinkError),
}

/// What driving phout files through the pipeline found.
#[derive(Debug)]
pub struct Driven {
    /// The totals.
    pub totals: TotalStats,
    /// Rows read.
    pub rows: u64,
    /// Skipped lines and other notes, for people.
    pub warnings: Vec<String>,
}

/// Read `source` to its end through `pipeline` into `sinks`; with `planned`,
/// each second's planned count comes from those plans. Every sink is shown
/// every row and every second. The first failure of a file stops the drive.
pub fn drive(
    mut source: PhoutSource,
    mut pipeline: Pipeline,
    mut planned: Option<Planned>,
    sinks: &mut [&mut dyn SecondSink],
) -> Result<Driven, DriveError> {
    let mut rows = 0;
    let mut counted = source.take_sent_counts();
    while let Some(row) = source.next_row()? {
        let sent = row.record.send_ms / 1000;
        // The generator's counts of every second up to this row's start, before
        // the row moves the clock there (and makes earlier seconds final).
        if let Some(planned) = planned.as_mut() {
            for (second, shots) in planned.take_until(sent) {
                pipeline.planned(second, shots);
            }
        }
        match counted.as_mut() {
            Some(counted) => {
                for (second, shots) in counted.take_until(sent) {
                    pipeline.sent(second, shots);
                }
            }
            None => pipeline.sent(sent, 1),
        }
        let response = Response::Row {
            record: &row.record,
            line: row.line,
            file: row.file,
        };
        pipeline.response(response, sinks);
        rows += 1;
        if let Some(error) = pipeline.publish(sinks).into_iter().next() {
            return Err(error.into());
        }
    }
    if let Some(planned) = planned.as_mut() {
        for (second, shots) in planned.take_until(u64::MAX) {
            pipeline.planned(second, shots);
        }
    }
    for (second, shots) in counted
        .as_mut()
        .map(|c| c.take_until(u64::MAX))
        .unwrap_or_default()
    {
        pipeline.sent(second, shots);
    }
    let (totals, failures) = pipeline.finish(sinks);
    if let Some(error) = failures.into_iter().next() {
        return Err(error.into());
    }
    Ok(Driven {
        totals,
        rows,
        warnings: source.warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use crate::timeline::Timeline;

    fn line(send_ms: u64, real_us: u64) -> String {
        format!(
            "{}.{:03}\t\t{real_us}\t0\t0\t0\t0\t0\t0\t0\t0\t200\n",
            send_ms / 1000,
            send_ms % 1000
        )
    }

    fn write(dir: &std::path::Path, name: &str, rows: &[(u64, u64)]) -> PathBuf {
        let path = dir.join(name);
        let text: String = rows.iter().map(|(ms, us)| line(*ms, *us)).collect();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Records the order of the seconds it is given.
    #[derive(Default)]
    struct Seen(Vec<u64>);

    impl SecondSink for Seen {
        fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
            self.0.push(second.ts);
            Ok(())
        }
    }

    #[test]
    fn a_reply_later_than_the_buffer_still_counts_as_sent_in_its_second() {
        let dir = tempfile::tempdir().unwrap();
        // 20 shots a second for 3 s, each answered after 4 s (in order of response).
        let rows: Vec<(u64, u64)> = (0..60).map(|i| (10_000 + i * 50, 4_000_000)).collect();
        let path = write(dir.path(), "phout", &rows);
        let mut timeline = Timeline::default();
        let mut seen = Seen::default();
        let source = PhoutSource::open(&[path]).unwrap();
        let driven = drive(
            source,
            Pipeline::new(Aggregator::new(2)),
            None,
            &mut [&mut timeline, &mut seen],
        )
        .unwrap();
        assert_eq!(driven.rows, 60);
        let sent: BTreeMap<u64, u64> = timeline.ts.iter().copied().zip(timeline.sent).collect();
        assert_eq!(sent.get(&10), Some(&20));
        assert_eq!(sent.get(&11), Some(&20));
        assert_eq!(sent.get(&12), Some(&20));
        assert_eq!(driven.totals.sent, 60);
        assert!(seen.0.windows(2).all(|w| w[0] < w[1]), "{:?}", seen.0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the reply times, each second's sent count is its rows'
        /// starts, and every row is a response in exactly one second.
        #[test]
        fn sent_is_by_start_and_responses_by_end(
            rows in prop::collection::vec((0u64..20_000, 0u64..8_000_000), 1..200),
            buffered in 0u32..3,
        ) {
            let mut rows = rows;
            rows.sort_by_key(|(ms, us)| ms * 1000 + us);
            let dir = tempfile::tempdir().unwrap();
            let path = write(dir.path(), "phout", &rows);
            let mut timeline = Timeline::default();
            let source = PhoutSource::open(&[path]).unwrap();
            let driven = drive(source, Pipeline::new(Aggregator::new(buffered)), None, &mut [&mut timeline]).unwrap();
            let mut expected = BTreeMap::<u64, u64>::new();
            for (ms, _) in &rows {
                *expected.entry(ms / 1000).or_default() += 1;
            }
            let got: BTreeMap<u64, u64> = timeline
                .ts
                .iter()
                .copied()
                .zip(timeline.sent.iter().copied())
                .filter(|(_, n)| *n > 0)
                .collect();
            prop_assert_eq!(got, expected);
            prop_assert_eq!(
                timeline.responses.iter().sum::<u64>() + driven.totals.late,
                rows.len() as u64
            );
        }
    }
}
