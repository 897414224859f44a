//! Criterion benches of the stepper: schedule offsets per second (evenly spaced
//! and drawn arrivals), ammo parsing throughput per format, and whole plans
//! written as stpd.
//!
//! Run: `cargo bench --bench plan`. The side-by-side comparison with
//! yandex-tank's stepper is `benches/stepper_vs_reference.sh`.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tank_config::{load_str, ArrivalProcess, Arrivals, ConfigFormat, QueueConfig};
use tank_plan::schedule::Cursor;
use tank_plan::{stpd, Plan, Schedule};

const OFFSETS: u64 = 100_000;

fn schedules(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_offsets");
    group.throughput(Throughput::Elements(OFFSETS));
    for (name, text) in [
        ("const", "const(100000, 10m)"),
        ("line", "line(1, 200000, 10m)"),
        (
            "composite",
            "line(1,1000,1m) const(1000,1m) step(1000,5000,500,10s) const(5000,1h)",
        ),
    ] {
        let schedule = Schedule::rps(text).expect("valid schedule");
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut sum = 0i64;
                for i in 0..OFFSETS {
                    sum = sum.wrapping_add(schedule.offset_ms(i).unwrap_or(0));
                }
                black_box(sum)
            })
        });
    }
    group.finish();
}

/// Walking a schedule's shots in order, as the stepper does: evenly spaced
/// beside drawn arrivals (two draws a shot), so the ratio is the cost of the draws.
fn drawn_arrivals(c: &mut Criterion) {
    let mut group = c.benchmark_group("arrivals_walk");
    group.throughput(Throughput::Elements(OFFSETS));
    for process in ["uniform", "poisson", "fb_ia", "normal(1,0.2)"] {
        let arrivals = Arrivals {
            process: ArrivalProcess::parse(process).expect("valid arrivals"),
            seed: 1,
            seed_chosen: false,
        };
        let schedule =
            Schedule::rps_with("line(1, 200000, 10m)", &arrivals).expect("valid schedule");
        group.bench_function(process, |b| {
            b.iter(|| {
                let mut cursor = Cursor::default();
                let mut sum = 0i64;
                for i in 0..OFFSETS {
                    sum = sum.wrapping_add(schedule.offset_ns_near(i, &mut cursor).unwrap_or(0));
                }
                black_box(sum)
            })
        });
    }
    group.finish();
}

/// Example ammo in every format, about 1 MB each.
fn write_ammo(dir: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
    let request = b"GET /api/v1/items/12345?fields=all HTTP/1.1\r\nHost: example.org\r\nUser-Agent: tank\r\nAccept: */*\r\n\r\n";
    let mut phantom = Vec::new();
    let mut uri = b"[Host: example.org]\n[User-Agent: tank]\n".to_vec();
    let mut uripost = b"[Host: example.org]\n[Content-Type: application/json]\n".to_vec();
    let mut access = Vec::new();
    for i in 0..10_000 {
        phantom.extend_from_slice(format!("{} tag{}\n", request.len(), i % 7).as_bytes());
        phantom.extend_from_slice(request);
        phantom.push(b'\n');
        uri.extend_from_slice(format!("/api/v1/items/{i}?fields=all tag{}\n", i % 7).as_bytes());
        let body = format!("{{\"id\":{i},\"name\":\"item\"}}");
        uripost.extend_from_slice(
            format!("{} /api/v1/items tag{}\n{body}\n", body.len(), i % 7).as_bytes(),
        );
        access.extend_from_slice(
            format!("10.0.0.1 - - [21/Nov/2026:10:00:00 +0000] \"GET /api/v1/items/{i} HTTP/1.1\" 200 512 \"-\" \"curl/8\"\n").as_bytes(),
        );
    }
    let mut files = Vec::new();
    for (name, bytes) in [
        ("phantom", phantom),
        ("uri", uri),
        ("uripost", uripost),
        ("access", access),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write ammo");
        files.push((name, path));
    }
    files
}

fn queue(ammo: &Path, ammo_type: &str, extra: &str) -> QueueConfig {
    let text = format!(
        "[phantom]\naddress = 127.0.0.1:80\nrps_schedule = const(100000, 1h)\nammofile = {}\nammo_type = {ammo_type}\n{extra}\n",
        ammo.display()
    );
    let config =
        load_str(&text, ConfigFormat::Ini, Path::new("bench.ini"), &[]).expect("valid config");
    config.queues.into_iter().next().expect("a queue")
}

fn ammo_formats(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("ammo_parse");
    for (name, path) in write_ammo(dir.path()) {
        let bytes = std::fs::metadata(&path).expect("ammo file").len();
        group.throughput(Throughput::Bytes(bytes));
        let queue = queue(&path, name, "loop = 1");
        group.bench_with_input(BenchmarkId::from_parameter(name), &queue, |b, queue| {
            b.iter(|| {
                let mut plan = Plan::new(queue).expect("plan");
                let mut total = 0usize;
                while let Some(shot) = plan.next_shot().expect("shot") {
                    total += shot.missile.len();
                }
                black_box(total)
            })
        });
    }
    group.finish();
}

fn stpd_writing(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = write_ammo(dir.path());
    let mut group = c.benchmark_group("stpd_write");
    const SHOTS: u64 = 100_000;
    group.throughput(Throughput::Elements(SHOTS));
    for (name, path) in files.iter().filter(|(n, _)| *n == "phantom" || *n == "uri") {
        let queue = queue(path, name, &format!("ammo_limit = {SHOTS}\nautocases = 2"));
        group.bench_with_input(BenchmarkId::from_parameter(name), &queue, |b, queue| {
            b.iter(|| {
                let mut plan = Plan::new(queue).expect("plan");
                let mut out = Vec::with_capacity(1 << 21);
                while let Some(shot) = plan.next_shot().expect("shot") {
                    stpd::push_record(&mut out, shot.due_ms, shot.marker, shot.missile);
                    if out.len() >= 1 << 20 {
                        black_box(&out);
                        out.clear();
                    }
                }
                black_box(out);
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    schedules,
    drawn_arrivals,
    ammo_formats,
    stpd_writing
);
criterion_main!(benches);
