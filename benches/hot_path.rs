//! Criterion benches of the per-shot hot path, each piece on its own:
//! reply parsing, phout formatting, per-second aggregation, the samples
//! channel, and the gun's whole write/read loop over loopback against a plain
//! blocking client doing the same exchange (the peer: the floor a gun can reach).
//!
//! Run: `cargo bench --bench hot_path`. The whole engine under load is measured by
//! benches/load/run.sh.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tank_engine::gun::{Protocol, WireGun};
use tank_engine::http::{Limits, ResponseReader};
use tank_engine::target::Target;
use tank_stats::{phout, Aggregator, Measured, NetCode, Sample};

/// What nginx answers for a 100-byte static file.
const NGINX_REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 21 Nov 2026 21:47:51 GMT\r\n\
Content-Type: text/plain\r\nContent-Length: 100\r\nLast-Modified: Sat, 21 Nov 2026 21:40:00 GMT\r\n\
Connection: keep-alive\r\nETag: \"6560d2c0-64\"\r\nAccept-Ranges: bytes\r\n\r\n\
xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

const CHUNKED_REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
10\r\n0123456789abcdef\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";

const REQUEST: &[u8] = b"GET /small HTTP/1.1\r\nHost: bench\r\n\r\n";

fn parse(reply: &[u8], reads: usize) -> u16 {
    let mut reader = ResponseReader::new(Limits::default(), false);
    let step = reply.len().div_ceil(reads);
    for part in reply.chunks(step) {
        if let Ok(Some(_)) = reader.feed(part) {
            break;
        }
    }
    reader.reply().map_or(0, |reply| reply.status)
}

fn reply_parsing(c: &mut Criterion) {
    let mut group = c.benchmark_group("reply");
    group.throughput(Throughput::Elements(1));
    group.bench_function("nginx_one_read", |b| {
        b.iter(|| parse(black_box(NGINX_REPLY), 1))
    });
    group.bench_function("nginx_three_reads", |b| {
        b.iter(|| parse(black_box(NGINX_REPLY), 3))
    });
    group.bench_function("chunked", |b| b.iter(|| parse(black_box(CHUNKED_REPLY), 1)));
    group.finish();
}

fn sample(i: u64, tag: &Arc<[u8]>) -> Sample {
    Sample {
        start_unix_us: 1_700_000_000_000_000 + i * 37,
        lag_us: i % 300,
        tag: Arc::clone(tag),
        measured: Measured {
            interval_real_us: 180 + i % 5000,
            connect_us: 0,
            send_us: 12,
            latency_us: 150 + i % 4900,
            receive_us: 18,
            interval_event_us: 180 + i % 5000,
            size_out: 37,
            size_in: 340,
            net_code: NetCode::OK,
            proto_code: 200,
            sends: 1,
            queue: 0,
        },
    }
}

fn results(c: &mut Criterion) {
    let tag: Arc<[u8]> = Arc::from(&b"search"[..]);
    let samples: Vec<Sample> = (0..10_000).map(|i| sample(i, &tag)).collect();
    let mut group = c.benchmark_group("results");
    group.throughput(Throughput::Elements(samples.len() as u64));
    group.bench_function("phout_line", |b| {
        let mut out = Vec::with_capacity(1 << 20);
        b.iter(|| {
            out.clear();
            for sample in &samples {
                phout::push_line(&mut out, sample);
            }
            out.len()
        })
    });
    group.bench_function("aggregate", |b| {
        b.iter(|| {
            let mut aggregator = Aggregator::new(2);
            for sample in &samples {
                aggregator.add_sample(sample);
            }
            aggregator.finish();
            aggregator.totals().sent
        })
    });
    group.bench_function("samples_channel", |b| {
        b.iter(|| {
            let (sink, rx) = tank_engine::SampleSink::new(samples.len());
            for sample in &samples {
                sink.send(sample.clone());
            }
            rx.try_iter().count()
        })
    });
    group.finish();
}

/// A server that answers every request it reads with `NGINX_REPLY`, one
/// thread per connection, until the client goes away.
fn reply_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut buffer = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buffer) {
                    if n == 0 || stream.write_all(NGINX_REPLY).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn gun_loop(c: &mut Criterion) {
    let addr = reply_server();
    let mut group = c.benchmark_group("gun");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));
    // The peer: a blocking client writing the request and reading the reply whole.
    group.bench_function("blocking_std_client", |b| {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let mut buffer = [0u8; 4096];
        b.iter(|| {
            stream.write_all(REQUEST).expect("write");
            let mut got = 0;
            while got < NGINX_REPLY.len() {
                got += stream.read(&mut buffer).expect("read");
            }
            got
        })
    });
    group.bench_function("tank_fire", |b| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let gun = Arc::new(WireGun::new(
            Target {
                addr,
                host: addr.ip().to_string(),
            },
            None,
            Protocol::Http(Limits::default()),
            Duration::from_secs(5),
            Vec::new(),
        ));
        let mut barrel = gun.instance(0);
        b.iter(|| {
            runtime.block_on(async {
                let measured = barrel
                    .fire(REQUEST, tokio::time::Instant::now(), None)
                    .await;
                assert_eq!(measured.proto_code, 200);
                measured.size_in
            })
        })
    });
    group.finish();
}

criterion_group!(benches, reply_parsing, results, gun_loop);
criterion_main!(benches);
