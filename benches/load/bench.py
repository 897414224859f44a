#!/usr/bin/env python3
"""The load benchmark's runner: tank and its peers, scenario by scenario, on 127.0.0.1.

benches/load/run.sh builds tank and calls this; see benches/README.md, section "load".

Each run of a tool is wrapped in /usr/bin/time (the tool's CPU seconds and peak RSS),
and the target's CPU seconds are read from /proc/<pid>/stat before and after. Rates,
latency quantiles and errors are what each tool itself reports; for tank they come from
the run's summary.json and phout.log. Runs of one scenario alternate between the tools,
so that a disturbance of the shared machine does not land on one tool only.

Scenarios (durations in full mode; --quick shortens them):
  A  closed model: 64 keep-alive connections, 15 s, GET /small from nginx
  B  open model: const(10000, 15s), up to 256 connections
  C  open model: line(1, 20000, 20s) (tank only: no peer here has a ramp)
  D  open model: const(30000, 15s), and const at 80% of wrk's median in A
  E  many connections to a target that answers in 1 s (tank origin): 20,000 on one port,
     and 50,000 over 3 ports (tank only; both capped by the open-files limit)
  F  tank plan --stpd vs yandex-tank's stepper, and tank report over a large phout

Every process this starts is stopped on exit (normal, error, Ctrl-C or SIGTERM).

While it runs, this holds the CPUs awake for every tool (a zero-latency PM QoS request on
/dev/cpu_dma_latency, when it may), as tank does for itself by default: the peers then run
on the same machine as tank, and a target that wakes sooner does not favour tank alone.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLK_TCK = os.sysconf("SC_CLK_TCK")
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
PEERS = ["wrk", "oha", "vegeta", "pandora"]
SLOW_PORTS = 3  # E50k: 50,000 connections need more than one target port
IDLE_RSS = {}  # tool -> peak RSS MiB of a one-connection run, measured once for E and E50k

started = []  # every long-lived process this runner started: stopped by cleanup()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cleanup():
    for proc in reversed(started):
        if proc.poll() is None:
            proc.terminate()
    for proc in reversed(started):
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    started.clear()


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)


# --------------------------------------------------------------------------- targets


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, what):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{what}: nothing listens on 127.0.0.1:{port}")


class Target:
    """A server under load: its address and the pids whose CPU time counts as its own."""

    def __init__(self, name, addr, pids):
        self.name, self.addr, self._pids = name, addr, pids

    def pids(self):
        return self._pids()

    def cpu_s(self):
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
            except (OSError, IndexError):
                pass
        return total / CLK_TCK


def steal_s():
    """CPU time the hypervisor gave to other guests (all CPUs, /proc/stat), seconds.

    On a shared VM this is the noise no process here controls: while it is stolen, no
    thread runs, so shots go late and replies wait."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
        return int(fields[8]) / CLK_TCK if len(fields) > 8 else 0.0
    except (OSError, ValueError):
        return 0.0


def cpu_busy(window=1.0):
    """The share of the machine's CPU time (all CPUs, /proc/stat) spent busy over `window` s."""
    def sample():
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields), idle
    total0, idle0 = sample()
    time.sleep(window)
    total1, idle1 = sample()
    return 1.0 - (idle1 - idle0) / max(1, total1 - total0)


QUIET_BUSY = 0.10  # a machine more than 10% busy between runs is not quiet
QUIET_WAIT = 120   # how long to wait for it to be, before a run goes ahead anyway


def wait_quiet(name):
    """Wait until the machine is quiet (under QUIET_BUSY busy over a second, the targets
    idle between runs), at most QUIET_WAIT s; return the busy share seen last, which the
    run records, so a result measured on a busy machine says so."""
    waited = time.time()
    busy = cpu_busy()
    while busy > QUIET_BUSY and time.time() - waited < QUIET_WAIT:
        log(f"   {name}: waiting for a quiet machine ({busy:.0%} busy, load {os.getloadavg()[0]:.1f})")
        busy = cpu_busy(2.0)
    if busy > QUIET_BUSY:
        log(f"   {name}: NOT QUIET: {busy:.0%} busy after {QUIET_WAIT} s; measured anyway, and marked")
    return busy


def children(pid):
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def start_nginx(work):
    """nginx, one worker, keep-alive, access log off, a 100-byte /small from a file."""
    port = free_port()
    prefix = work / "nginx"
    prefix.mkdir()
    prefix.chmod(0o755)  # the worker runs as another user and reads the body file
    work.chmod(0o755)
    (prefix / "small").write_bytes(b"x" * 100)
    (prefix / "nginx.conf").write_text(f"""
worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 20000; }}
http {{
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 65;
    open_file_cache max=16;
    server {{
        listen 127.0.0.1:{port} backlog=16384;
        location = /small {{ default_type text/plain; alias {prefix}/small; }}
    }}
}}
""")
    proc = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                             "-e", str(prefix / "error.log")], stdout=subprocess.DEVNULL,
                            stderr=open(prefix / "stderr", "w"))
    started.append(proc)
    wait_for_port(port, "nginx")
    # The master only forks; the one worker does the work.
    return Target("nginx (1 worker)", f"127.0.0.1:{port}", lambda: children(proc.pid))


def start_origin(tank, work, name, recipe):
    """`tank origin` with RECIPE on a port it picks; returns when it listens."""
    path = work / f"{name}.json"
    path.write_text(json.dumps(recipe))
    out = work / f"{name}.out"
    proc = subprocess.Popen([tank, "origin", "--listen", "127.0.0.1:0", "--recipe", str(path)],
                            stdout=open(out, "w"), stderr=subprocess.STDOUT)
    started.append(proc)
    for _ in range(100):
        m = re.search(r"listening on http://(127\.0\.0\.1:\d+)", out.read_text())
        if m:
            return Target(f"tank origin ({name})", m.group(1), lambda: [proc.pid])
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"tank origin did not start:\n{out.read_text()}")


# --------------------------------------------------------------------------- tools


def timed(cmd, work, name, timeout, stdin=None):
    """Run CMD under /usr/bin/time; return (exit code, stdout, stderr, cpu_s, rss_mib)."""
    tfile = work / f"{name}.time"
    proc = subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", str(tfile), *cmd],
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
    started.append(proc)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n(killed after {timeout} s)"
    started.remove(proc)
    user, sys_, rss_kb = 0.0, 0.0, 0
    lines = tfile.read_text().splitlines() if tfile.exists() else []
    if lines:  # "Command exited with non-zero status N" may come first
        user, sys_, rss_kb = lines[-1].split()
    return proc.returncode, out, err, float(user) + float(sys_), int(rss_kb) / 1024


def ms(text):
    """wrk's and vegeta's durations: 1.2ms, 850us, 850µs, 1.02s, 1m3s -> milliseconds."""
    total = 0.0
    for num, unit in re.findall(r"([\d.]+)(ns|us|µs|ms|s|m|h)", text):
        total += float(num) * {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1, "s": 1e3,
                               "m": 6e4, "h": 3.6e6}[unit]
    return total


def tank_ini(target, sc, art):
    lines = ["[core]", f"artifacts_dir = {art}", "[phantom]", f"address = {target.addr}",
             "uris = /small", "header_http = 1.1", "headers = [Host: bench]", "timeout = 10s"]
    if sc.get("threads"):
        lines.append(f"threads = {sc['threads']}")
    if sc["model"] == "closed":
        # Instances fire back to back through the ammo; with uris, ammo_limit is
        # len(uris) x loop, so loop is huge and the autostop `limit` ends the run.
        addrs = getattr(target, "addrs", None) if sc["connections"] > 1 else None
        if addrs:
            # One queue per target port (a port takes ~28k connections from one source
            # address): [phantom] and [phantom-N] share the ammo, each has its share.
            shares = [sc["connections"] // len(addrs) + (i < sc["connections"] % len(addrs))
                      for i in range(len(addrs))]
            lines += [f"instances_schedule = const({shares[0]}, {sc['seconds']}s)",
                      "loop = 100000000", f"instances = {shares[0]}"]
            for i, (addr, share) in enumerate(zip(addrs[1:], shares[1:]), 1):
                lines += [f"[phantom-{i}]", f"address = {addr}",
                          f"instances_schedule = const({share}, {sc['seconds']}s)",
                          f"instances = {share}"]
        else:
            lines += [f"instances_schedule = {sc['tank_schedule']}", "loop = 100000000",
                      f"instances = {sc['connections']}"]
        lines += ["[autostop]", f"autostop = limit({sc['seconds']}s)"]
    else:
        lines += [f"rps_schedule = {sc['tank_schedule']}", f"instances = {sc['connections']}"]
    return "\n".join(lines) + "\n"


def run_tank(tank, target, sc, work, name):
    art = work / name
    ini = work / f"{name}.ini"
    ini.write_text(tank_ini(target, sc, art))
    rc, out, err, cpu, rss = timed([tank, "-q", "-c", str(ini)], work, name, sc["seconds"] + 120)
    if rc not in (0, 21) or not (art / "summary.json").exists():  # 21: autostop, expected
        raise SystemExit(f"tank failed (exit {rc}) in {name}:\n{err[-3000:]}")
    return tank_results(art, sc, cpu, rss)


def run_tank_bench(tank, target, sc, work, name):
    """`tank bench URL`, the one-liner, with wrk's flags: -c, -d, and -R in the open model."""
    cmd = [tank, "bench", f"http://{target.addr}/small", "-c", str(sc["connections"]),
           "-d", f"{sc['seconds']}s", "--timeout", "10s", "--artifacts", str(work / name)]
    if sc.get("threads"):
        cmd += ["-t", str(sc["threads"])]
    if sc["model"] == "open":
        cmd += ["-R", str(sc["rate"])]
    rc, out, err, cpu, rss = timed(cmd, work, name, sc["seconds"] + 120)
    found = re.search(r"^artifacts: (\S+)", out, re.M)
    if rc != 0 or "Requests/sec:" not in out or not found:
        raise SystemExit(f"tank bench failed (exit {rc}) in {name}:\n{out[-2000:]}{err[-2000:]}")
    res = tank_results(Path(found.group(1)), sc, cpu, rss)
    shutil.rmtree(work / name)
    return res


def tank_results(art, sc, cpu, rss):
    """A tank run's numbers from its artifacts: summary.json's quantiles, phout's rate and errors."""
    summary = json.loads((art / "summary.json").read_text())
    quant = {q["q"]: q for q in summary["quantiles"]}
    first, last, n, bad = None, 0.0, 0, 0
    with open(art / "phout.log") as f:  # start (s), interval_real (µs), net code, HTTP code
        for line in f:
            col = line.split("\t")
            start, end = float(col[0]), float(col[0]) + int(col[2]) / 1e6
            first = start if first is None else min(first, start)
            last = max(last, end)
            n += 1
            if col[10] != "0" or not 200 <= int(col[11]) < 400:
                bad += 1
    shots = summary["shots"]
    res = dict(requests=n, rps=n / (last - first) if n > 1 else 0.0,
               p50=quant[50.0]["service_ms"], p99=quant[99.0]["service_ms"],
               cpu=cpu, rss=rss, errors=bad)
    if sc["model"] == "open":
        res.update(sent=shots["sent"], scheduled=shots["planned"],
                   lag50=quant[50.0]["lag_ms"], lag99=quant[99.0]["lag_ms"])
    shutil.rmtree(art)  # phout of a 15 s run at 30k rps is ~30 MB
    return res


def run_wrk(target, sc, work, name):
    threads = str(sc.get("threads") or min(2, sc["connections"]))  # wrk needs connections >= threads
    cmd = ["wrk", "-c", str(sc["connections"]), "-t", threads, "-d", f"{sc['seconds']}s",
           "--latency", "--timeout", "10s", f"http://{target.addr}/small"]
    rc, out, err, cpu, rss = timed(cmd, work, name, sc["seconds"] + 60)
    if rc != 0 or "Requests/sec" not in out:
        raise SystemExit(f"wrk failed (exit {rc}) in {name}:\n{out}{err}")
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = sum(map(int, socket_errors.groups())) if socket_errors else 0
    errors += int(non2xx.group(1)) if non2xx else 0
    quantile = lambda q: ms(m.group(1)) if (m := re.search(q + r"%\s+(\S+)", out)) else None  # noqa: E731
    return dict(requests=int(re.search(r"(\d+) requests in", out).group(1)),
                rps=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
                p50=quantile("50"), p99=quantile("99"), cpu=cpu, rss=rss, errors=errors)


def run_oha(target, sc, work, name):
    cmd = ["oha", "-c", str(sc["connections"]), "-z", f"{sc['seconds']}s", "--no-tui",
           "--output-format", "json", "-t", "10s"]
    if sc["model"] == "open":
        cmd += ["-q", str(sc["rate"])]
    rc, out, err, cpu, rss = timed(cmd + [f"http://{target.addr}/small"], work, name, sc["seconds"] + 60)
    try:
        report = json.loads(out)
    except ValueError:
        raise SystemExit(f"oha failed (exit {rc}) in {name}:\n{out[-2000:]}{err[-2000:]}")
    codes = report.get("statusCodeDistribution", {})
    ok = sum(v for k, v in codes.items() if 200 <= int(k) < 400)
    # With -z, the requests in flight at the deadline are "aborted due to deadline":
    # the end of the run, not an error (wrk and tank do not count them either).
    errors = sum(codes.values()) - ok + sum(
        n for what, n in report.get("errorDistribution", {}).items() if what != "aborted due to deadline")
    pct = report["latencyPercentiles"]
    res = dict(requests=sum(codes.values()), rps=report["summary"]["requestsPerSec"],
               p50=pct["p50"] * 1000, p99=pct["p99"] * 1000, cpu=cpu, rss=rss, errors=errors)
    if sc["model"] == "open":
        res.update(sent=sum(codes.values()), scheduled=sc["rate"] * sc["seconds"])
    return res


def run_vegeta(target, sc, work, name):
    cmd = ["vegeta", "attack", f"-duration={sc['seconds']}s", "-keepalive=true", "-timeout=10s",
           f"-workers={min(sc['connections'], 64)}", f"-max-workers={sc['connections']}",
           f"-connections={sc['connections']}", f"-max-connections={sc['connections']}",
           f"-output={work / name}.bin"]
    cmd.append(f"-rate={sc['rate']}/s" if sc["model"] == "open" else "-rate=0")
    rc, out, err, cpu, rss = timed(cmd, work, name, sc["seconds"] + 60,
                                   stdin=f"GET http://{target.addr}/small\n")
    if rc != 0:
        raise SystemExit(f"vegeta failed (exit {rc}) in {name}:\n{err[-2000:]}")
    report = json.loads(subprocess.run(["vegeta", "report", "-type=json", f"{work / name}.bin"],
                                       capture_output=True, text=True, check=True).stdout)
    os.remove(f"{work / name}.bin")
    codes = report.get("status_codes", {})
    errors = sum(v for k, v in codes.items() if not 200 <= int(k) < 400)
    res = dict(requests=report["requests"], rps=report["throughput"],
               p50=report["latencies"]["50th"] / 1e6, p99=report["latencies"]["99th"] / 1e6,
               cpu=cpu, rss=rss, errors=errors)
    if sc["model"] == "open":
        res.update(sent=report["requests"], scheduled=sc["rate"] * sc["seconds"])
    return res


# --------------------------------------------------------------------------- scenarios


def scenarios(quick, hard_nofile):
    s = 4 if quick else 15
    many = min(20000, hard_nofile - 100)
    most = min(50000, hard_nofile - 100)
    e_s = 5 if quick else 15
    return [
        dict(key="A", title=f"closed model, max throughput: 64 keep-alive connections, {s} s, GET /small",
             target="nginx", model="closed", connections=64, seconds=s,
             tank_schedule=f"const(64, {s}s)"),
        dict(key="A1", title=f"closed model, one thread: 64 keep-alive connections, {s} s, GET /small "
                            "(tank threads = 1, wrk -t 1)",
             target="nginx", model="closed", connections=64, seconds=s, threads=1,
             tank_schedule=f"const(64, {s}s)"),
        dict(key="B", title=f"open model: const(10000, {s}s), up to 256 connections",
             target="nginx", model="open", connections=256, seconds=s, rate=10000,
             tank_schedule=f"const(10000, {s}s)"),
        dict(key="C", title=f"open model: line(1, 20000, {s + 5}s), up to 256 connections",
             target="nginx", model="open", connections=256, seconds=s + 5, rate=None,
             tank_schedule=f"line(1, 20000, {s + 5}s)", tools_note="no peer here has a ramp"),
        dict(key="D30k", title=f"open model, high rate: const(30000, {s}s), up to 256 connections",
             target="nginx", model="open", connections=256, seconds=s, rate=30000,
             tank_schedule=f"const(30000, {s}s)"),
        dict(key="D80", title="open model: const at 80% of wrk's median rate in A", target="nginx",
             model="open", connections=256, seconds=s, rate=None, tank_schedule=None),
        dict(key="E", title=f"many connections: {many} to a target that answers in 1 s "
                            f"(tank: const({many}, {e_s}s), all at once as the peers open them), {e_s} s",
             target="slow", model="closed", connections=many, seconds=e_s,
             tank_schedule=f"const({many}, {e_s}s)"),
        dict(key="E50k", title=f"many connections over {SLOW_PORTS} target ports: {most} "
                               f"(50,000 where the open-files limit allows) to targets that answer "
                               f"in 1 s, {e_s} s (tank: one queue per port)",
             target="slow_ports", model="closed", connections=most, seconds=e_s,
             tank_schedule=f"const({most}, {e_s}s)"),
    ]


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x, digits=1):
    if x is None:
        return "–"
    if isinstance(x, int) or (abs(x) >= 1000):
        return f"{x:,.0f}"
    return f"{x:.{digits}f}" if abs(x) >= 0.1 or x == 0 else f"{x:.3f}"


def table(sc, results, tools, skipped, target_name):
    """Markdown for one scenario: one row per tool, then the ratios tank ÷ peer."""
    out = [f"### {sc['key']}: {sc['title']}", "", f"Target: {target_name}. "
           f"Runs: {max((len(r) for r in results.values()), default=0)} per tool; "
           "rps min and median over runs, every other column the median.", ""]
    open_model = sc["model"] == "open"
    head = ["tool", "rps min", "rps median", "p50 ms", "p99 ms", "CPU s", "CPU µs/req",
            "RSS MiB", "target CPU s", "steal s", "errors"]
    if open_model:
        head += ["sent / scheduled", "lag p50 ms", "lag p99 ms"]
    if sc["key"].startswith("E"):
        head += ["KiB per connection"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    summary = {}
    for tool in tools:
        runs = results.get(tool, [])
        if not runs:
            continue
        col = lambda k: [r[k] for r in runs if r.get(k) is not None]  # noqa: E731
        row = dict(rps_min=min(col("rps")), rps=median(col("rps")), p50=median(col("p50")),
                   p99=median(col("p99")), cpu=median(col("cpu")), rss=median(col("rss")),
                   tcpu=median(col("target_cpu")), steal=median(col("steal")), errors=sum(col("errors")),
                   cpu_per_req=median([r["cpu"] / r["requests"] * 1e6 for r in runs if r["requests"]]))
        cells = [tool, fmt(row["rps_min"]), fmt(row["rps"]), fmt(row["p50"], 2), fmt(row["p99"], 2),
                 fmt(row["cpu"], 2), fmt(row["cpu_per_req"], 2), fmt(row["rss"]), fmt(row["tcpu"], 2),
                 fmt(row["steal"], 2), str(row["errors"])]
        if open_model:
            sent, sched = median(col("sent")), median(col("scheduled"))
            cells += [f"{fmt(sent)} / {fmt(sched)}" if sent is not None else "–",
                      fmt(median(col("lag50")), 3), fmt(median(col("lag99")), 2)]
        if sc["key"].startswith("E"):
            base = runs[0].get("idle_rss")
            cells.append(fmt((row["rss"] - base) * 1024 / sc["connections"], 1) if base else "–")
        out.append("| " + " | ".join(cells) + " |")
        summary[tool] = row
    if skipped:
        out += [""] + [f"Skipped: {tool}: {why}." for tool, why in skipped]
    ours = [t for t in ("tank", "tank-bench") if t in summary]
    peers = [t for t in summary if t not in ours]
    if ours and peers:
        out += ["", "tank ÷ peer, per pair of runs made one after the other (run i of each tool), "
                "as the median and the spread (min–max) of the pairs' ratios. rps and requests per "
                "CPU-second above 1: tank does more; p99 above 1: tank's is higher.", "",
                "| tank ÷ peer | pairs | rps | requests per CPU-s | p99 |", "|---|---|---|---|---|"]
        for me in ours:
            for p in peers:
                pairs = list(zip(results.get(me, []), results.get(p, [])))
                cells = [pair_ratio(pairs, k) for k in ("rps", "per_cpu_s", "p99")]
                out.append(f"| {me} ÷ {p} | {len(pairs)} | " + " | ".join(cells) + " |")
    busiest = max((r.get("busy_before", 0) for runs in results.values() for r in runs), default=0)
    out += ["", f"Machine before each run: at most {busiest:.0%} busy "
            f"({'quiet' if busiest <= QUIET_BUSY else 'NOT QUIET: these numbers are not comparable'})."]
    return "\n".join(out) + "\n", summary


def per_cpu_s(run):
    return run["requests"] / run["cpu"] if run.get("cpu") else None


def pair_ratio(pairs, key):
    """The median and spread of tank ÷ peer over pairs of runs, for `key`."""
    get = (lambda r: per_cpu_s(r)) if key == "per_cpu_s" else (lambda r: r.get(key))  # noqa: E731
    ratios = sorted(get(t) / get(q) for t, q in pairs if get(t) and get(q))
    if not ratios:
        return "–"
    return f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}–{ratios[-1]:.2f})"


def run_scenario(sc, args, tools, targets, work, all_runs):
    target = targets[sc["target"]]
    runnable, skipped = [], []
    for tool in tools:
        if tool == "tank-bench" and sc["key"] not in ("A", "A1", "B", "D30k", "D80"):
            skipped.append((tool, "the one-liner has no flags for this scenario's shape"))
        elif tool == "pandora":
            skipped.append((tool, "found, but this benchmark does not drive pandora yet"))
        elif sc["key"] == "C" and tool != "tank":
            skipped.append((tool, "no rate ramp (line) in its command line"))
        elif sc["key"] == "E50k" and tool != "tank":
            skipped.append((tool, "one target URL per process: it would take a process per port"))
        elif sc["model"] == "open" and tool == "wrk":
            skipped.append((tool, "no rate control (open model): wrk2 would be the peer"))
        else:
            runnable.append(tool)
    log(f"== {sc['key']}: {sc['title']} ({', '.join(runnable)})")
    results = {t: [] for t in runnable}
    idle = IDLE_RSS
    if sc["key"].startswith("E"):  # each tool's RSS with one connection: the base of KiB per connection
        one = dict(sc, connections=1, seconds=2,
                   tank_schedule="const(1, 2s)")
        for tool in runnable:
            if tool not in idle:
                idle[tool] = run_tool(tool, args, target, one, work, f"E-idle-{tool}")["rss"]
    for i in range(args.runs):
        for tool in runnable:
            name = f"{sc['key']}-{tool}-{i + 1}"
            busy = wait_quiet(name)
            cpu0, steal0 = target.cpu_s(), steal_s()
            res = run_tool(tool, args, target, sc, work, name)
            res["target_cpu"] = target.cpu_s() - cpu0
            res["steal"] = steal_s() - steal0
            res["idle_rss"] = idle.get(tool)
            res["busy_before"] = busy
            log(f"   {name}: {res['rps']:,.0f} rps, {res['requests']:,} requests, p50 {fmt(res['p50'], 2)} ms, "
                f"p99 {fmt(res['p99'], 2)} ms, CPU {res['cpu']:.1f} s, RSS {res['rss']:.0f} MiB, "
                f"errors {res['errors']}, steal {res['steal']:.2f} s, machine {busy:.0%} busy before")
            results[tool].append(res)
            all_runs.append(dict(scenario=sc["key"], tool=tool, run=i + 1, **res))
            # Let the kernel and the target settle: after E, the target still holds the
            # last run's connections and requests in flight for a few seconds.
            time.sleep((5 if sc["key"].startswith("E") else 1) * (0.4 if args.quick else 1))
    return table(sc, results, runnable, skipped, target.name)


def run_tool(tool, args, target, sc, work, name):
    if tool == "tank":
        return run_tank(args.tank, target, sc, work, name)
    if tool == "tank-bench":
        return run_tank_bench(args.tank, target, sc, work, name)
    return {"wrk": run_wrk, "oha": run_oha, "vegeta": run_vegeta}[tool](target, sc, work, name)


# --------------------------------------------------------------------------- F: plan, report


def scenario_f(args, work):
    shots, runs = (100_000, 1) if args.quick else (1_000_000, args.runs)
    lines = 1_000_000 if args.quick else 10_000_000
    out = [f"### F: tank plan --stpd vs yandex-tank's stepper ({shots:,} shots), tank report over a phout", ""]
    log(f"== F: benches/stepper_vs_reference.sh {shots} {runs}")
    step = subprocess.run([str(ROOT / "benches/stepper_vs_reference.sh"), str(shots), str(runs)],
                          capture_output=True, text=True)
    if step.returncode == 0:
        out += ["`benches/stepper_vs_reference.sh " + f"{shots} {runs}` (best of {runs}):", "", step.stdout.strip(), ""]
    else:
        out += [f"stepper_vs_reference.sh failed (exit {step.returncode}), skipped:", "", "```",
                (step.stdout + step.stderr).strip()[-1500:], "```", ""]
        log(f"   stepper comparison failed: {(step.stdout + step.stderr)[-500:]}")
    log(f"== F: tank report over {lines:,} generated phout lines")
    phout = work / "big.phout"
    with open(phout, "w") as f:
        subprocess.run([sys.executable, str(ROOT / "benches/gen_phout.py"), str(lines)], stdout=f, check=True)
    size_mb = phout.stat().st_size / 1e6
    best = None
    for i in range(runs):
        report_dir = work / f"report-{i}"
        t0 = time.monotonic()
        rc, _, err, cpu, rss = timed([args.tank, "report", str(phout), "--out", str(report_dir)],
                                     work, f"report-{i}", 600)
        wall = time.monotonic() - t0
        if rc != 0:
            raise SystemExit(f"tank report failed (exit {rc}):\n{err[-2000:]}")
        shutil.rmtree(report_dir)
        log(f"   run {i + 1}: {wall:.2f} s, {lines / wall / 1e6:.2f}M lines/s, peak RSS {rss:.1f} MiB")
        if best is None or wall < best[0]:
            best = (wall, cpu, rss)
    phout.unlink()
    wall, cpu, rss = best
    out += [f"`tank report` over {lines:,} phout lines ({size_mb:,.0f} MB, benches/gen_phout.py), best of {runs}:",
            "", "| lines | wall s | CPU s | lines/s | peak RSS MiB |", "|---|---|---|---|---|",
            f"| {lines:,} | {wall:.2f} | {cpu:.2f} | {lines / wall:,.0f} | {rss:.1f} |", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------- main


def keep_cpus_awake():
    """Hold a zero wake-up latency request for the rest of this process, so that idle CPUs
    poll instead of halting during every tool's runs; says whether it was granted."""
    global CPU_LATENCY_REQUEST
    try:
        CPU_LATENCY_REQUEST = open("/dev/cpu_dma_latency", "wb", buffering=0)
        CPU_LATENCY_REQUEST.write((0).to_bytes(4, sys.byteorder, signed=True))
    except OSError as error:
        log(f"CPUs not kept awake for the peers ({error}); tank still asks for itself")
        return f"no ({error.strerror})"
    return "yes"


CPU_LATENCY_REQUEST = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tank", required=True)
    ap.add_argument("--quick", action="store_true", help="every scenario once, shortened (< 2 min)")
    ap.add_argument("--runs", type=int, help="runs per tool and scenario (default 3, 1 with --quick)")
    ap.add_argument("--only", help="comma-separated scenarios: A,B,C,D,E,F")
    ap.add_argument("--out", default=str(ROOT / "target/load-bench/results.md"))
    ap.add_argument("--with-bench", action="store_true",
                    help="also run `tank bench URL` (the one-liner) where a scenario has wrk's flags "
                         "(A: -c 64; A1: -t 1 -c 64; B, D: -R RATE)")
    args = ap.parse_args()
    args.tank = str(Path(args.tank).resolve())
    args.runs = args.runs or (1 if args.quick else 3)
    only = set(args.only.upper().split(",")) if args.only else set("ABCDEF")
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)

    if not NGINX:
        raise SystemExit("nginx not found (Debian: apt-get install -y nginx-light)")
    if not os.access("/usr/bin/time", os.X_OK):
        raise SystemExit("/usr/bin/time not found (Debian: apt-get install -y time)")
    tools = ["tank", "tank-bench"] if args.with_bench else ["tank"]
    for peer in PEERS:
        if shutil.which(peer):
            tools.append(peer)
        else:
            log(f"{peer}: not on PATH, skipped")
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cpus_awake = keep_cpus_awake()

    work = Path(tempfile.mkdtemp(prefix="tank-load-"))
    all_runs, sections = [], []
    try:
        targets = {"nginx": start_nginx(work)}
        if "E" in only:
            slow = {"random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": "1s"}]}
            ports = [start_origin(args.tank, work, f"slow{i}", slow) for i in range(SLOW_PORTS)]
            targets["slow"] = ports[0]
            targets["slow_ports"] = Target(f"{SLOW_PORTS} × tank origin (slow)", ports[0].addr,
                                           lambda: [pid for t in ports for pid in t.pids()])
            targets["slow_ports"].addrs = [t.addr for t in ports]
        wrk_a, summary_a = None, {}
        for sc in scenarios(args.quick, hard):
            if sc["key"][0] not in only:
                continue
            if sc["key"] == "D80":
                base = wrk_a or summary_a.get("tank", {}).get("rps")
                if not base:
                    log("== D80: skipped (needs scenario A)")
                    continue
                rate = int(base * 0.8)
                who = "wrk's" if wrk_a else "tank's (no wrk)"
                sc.update(rate=rate, tank_schedule=f"const({rate}, {sc['seconds']}s)",
                          title=f"open model: const({rate}, {sc['seconds']}s) = 80% of {who} median in A, "
                                "up to 256 connections")
            text, summary = run_scenario(sc, args, tools, targets, work, all_runs)
            if sc["key"] == "A":
                summary_a = summary
                wrk_a = summary.get("wrk", {}).get("rps")
            sections.append(text)
            print(text, flush=True)
        if "F" in only:
            text = scenario_f(args, work)
            sections.append(text)
            print(text, flush=True)
    finally:
        cleanup()
        shutil.rmtree(work, ignore_errors=True)

    load = os.getloadavg()
    head = (f"## Load benchmark, {time.strftime('%Y-%m-%d %H:%M %Z')}\n\n"
            f"{'quick mode, ' if args.quick else ''}{args.runs} run(s) per tool and scenario; "
            f"{os.cpu_count()} cores, load average at the end {load[0]:.1f}; open-files limit {soft}/{hard}; "
            f"CPUs kept awake for every tool: {cpus_awake}; tools: {', '.join(tools)}.\n\n")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(head + "\n".join(sections))
    out.with_suffix(".json").write_text(json.dumps(all_runs, indent=1))
    log(f"written: {out} (raw runs: {out.with_suffix('.json')})")


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
