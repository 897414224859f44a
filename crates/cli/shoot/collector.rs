//! The results thread: takes samples off the shooters, writes phout through
//! a big buffer, and keeps the totals for the end-of-run summary (histograms,
//! not samples, so memory stays flat however long the run).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use hdrhistogram::Histogram;
use tank_stats::{phout, NetCode, Sample};

const PHOUT_BUFFER: usize = 1 << 20;

/// What the run measured, in total.
pub struct Totals {
    /// Shots logged.
    pub responses: u64,
    /// interval_real, µs.
    pub interval_real: Histogram<u64>,
    /// Lag (start − due), µs.
    pub lag: Histogram<u64>,
    /// Responses per HTTP status.
    pub proto_codes: BTreeMap<u16, u64>,
    /// Responses per net code.
    pub net_codes: BTreeMap<NetCode, u64>,
    /// Bytes out and in.
    pub bytes: (u64, u64),
    /// Earliest start and latest end, µs since the epoch.
    pub span_us: Option<(u64, u64)>,
}

impl Totals {
    fn new() -> Self {
        // 1 µs to 1 hour at 3 significant digits: a few hundred KiB, whatever the run length.
        let histogram =
            || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant, valid bounds");
        Totals {
            responses: 0,
            interval_real: histogram(),
            lag: histogram(),
            proto_codes: BTreeMap::new(),
            net_codes: BTreeMap::new(),
            bytes: (0, 0),
            span_us: None,
        }
    }

    fn add(&mut self, sample: &Sample) {
        self.responses += 1;
        self.interval_real
            .saturating_record(sample.interval_real_us.max(1));
        self.lag.saturating_record(sample.lag_us.max(1));
        *self.proto_codes.entry(sample.proto_code).or_default() += 1;
        *self.net_codes.entry(sample.net_code).or_default() += 1;
        self.bytes.0 += sample.size_out;
        self.bytes.1 += sample.size_in;
        let end = sample.end_unix_us();
        self.span_us = Some(match self.span_us {
            None => (sample.start_unix_us, end),
            Some((first, last)) => (first.min(sample.start_unix_us), last.max(end)),
        });
    }
}

/// Start the results thread writing phout to `phout`.
pub fn spawn(
    samples: Receiver<Sample>,
    phout: File,
) -> std::io::Result<JoinHandle<std::io::Result<Totals>>> {
    std::thread::Builder::new()
        .name("results".into())
        .spawn(move || {
            let mut out = BufWriter::with_capacity(PHOUT_BUFFER, phout);
            let mut line = Vec::with_capacity(256);
            let mut totals = Totals::new();
            for sample in samples {
                line.clear();
                phout::push_line(&mut line, &sample);
                out.write_all(&line)?;
                totals.add(&sample);
            }
            out.flush()?;
            Ok(totals)
        })
}
