//! Criterion bench of `tank report`'s hot path: phout lines parsed and aggregated per
//! second (one reused line buffer, as the streaming reader does), and the whole path
//! from a file through tank-results' pipeline (`drive`).
//!
//! Run: `cargo bench --bench report`. The whole command over a multi-GB file, with peak
//! RSS, is in benches/README.md ("report").

use std::hint::black_box;
use std::io::BufRead;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tank_results::{drive, JsonLines, PhoutSource, Pipeline, Timeline};
use tank_stats::phout::parse_line;
use tank_stats::Aggregator;

const LINES: u64 = 200_000;

/// A phout of `LINES` lines at ~20k rps over 5 tags, with a few errors.
fn phout() -> Vec<u8> {
    let mut out = Vec::new();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let tags = ["search#1", "search#2", "cart", "", "api"];
    for i in 0..LINES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let interval = 200 + state % 20_000;
        let proto = if state % 100 == 0 { 503 } else { 200 };
        let ms = 1_700_000_000_000 + i / 20;
        out.extend_from_slice(
            format!(
                "{}.{:03}\t{}\t{interval}\t0\t12\t{}\t30\t{interval}\t80\t{}\t0\t{proto}\n",
                ms / 1000,
                ms % 1000,
                tags[(state % 5) as usize],
                interval - 42,
                state % 4000
            )
            .as_bytes(),
        );
    }
    out
}

fn parse_and_aggregate(c: &mut Criterion) {
    let data = phout();
    let mut group = c.benchmark_group("report");
    group.throughput(Throughput::Elements(LINES));
    group.bench_function("parse", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                n += parse_line(line).map_or(0, |r| r.measured.interval_real_us);
            }
            black_box(n)
        })
    });
    group.bench_function("parse_and_aggregate", |b| {
        b.iter(|| {
            let mut aggregator = Aggregator::new(2);
            let mut reader = &data[..];
            let mut line = Vec::with_capacity(256);
            let mut seconds = 0;
            while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                if let Ok(record) = parse_line(line.strip_suffix(b"\n").unwrap_or(&line)) {
                    aggregator.add_record(&record);
                }
                line.clear();
                while aggregator.pop_ready().is_some() {
                    seconds += 1;
                }
            }
            aggregator.finish();
            black_box(seconds)
        })
    });
    // The whole `tank report` path from a file: the starts counted ahead, the
    // merge's parse, the pipeline, and the timeline and test_data.log sinks.
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("phout.log");
    std::fs::write(&path, &data).expect("write the phout");
    let out = dir.path().join("test_data.log");
    group.bench_function("drive", |b| {
        b.iter(|| {
            let source = PhoutSource::open(std::slice::from_ref(&path)).expect("open");
            let mut timeline = Timeline::default();
            let mut json = JsonLines::create(&out).expect("create");
            let driven = drive(
                source,
                Pipeline::new(Aggregator::new(2)),
                None,
                &mut [&mut timeline, &mut json],
            )
            .expect("drive");
            black_box(driven.rows)
        })
    });
    group.finish();
}

criterion_group!(benches, parse_and_aggregate);
criterion_main!(benches);
