// tank's report pages (report.html, compare, limit): drawn from the JSON in #tank-data
// with chart.js's functions.
  function offsets(ts) { return ts.map(function (t) { return t - (ts[0] || 0); }); }

  function codeSeries(columns) {
    return Object.keys(columns).map(function (code) { return { name: code, values: columns[code] }; });
  }

  function anyNonZero(values) { return values.some(function (v) { return v > 0; }); }

  var PICK = [[0, "50%"], [1, "75%"], [4, "90%"], [5, "95%"], [7, "99%"], [9, "100%"]];

  // How long a run was, one definition everywhere (as summary.txt and the console
  // say it): from the first shot's start to the last response's end, or the
  // whole seconds for a summary written before tank recorded that.
  function duration(s) { return s.active_s > 0 ? s.active_s : s.duration_s; }

  // A second with no responses has no quantile: null (a gap), not 0 ms.
  function answeredOnly(tl, values) {
    return (values || []).map(function (v, n) { return tl.responses[n] > 0 ? v : null; });
  }

  // Errors as the summary's groups count them: net codes but 0, HTTP codes of 400 and up.
  function errorCount(s) {
    var net = Object.keys(s.net_codes).filter(function (c) { return c !== "0"; })
      .reduce(function (sum, c) { return sum + s.net_codes[c]; }, 0);
    var http = Object.keys(s.proto_codes).filter(function (c) { return +c >= 400; })
      .reduce(function (sum, c) { return sum + s.proto_codes[c]; }, 0);
    return net + http;
  }

  // The numbers a reader wants first: p50/p90/p99 of service time and from the
  // intended start, the error share and the codes.
  function headline(s, names) {
    var sec = section("Results");
    var at = function (q) { return s.quantiles.filter(function (r) { return r.q === q; })[0] || {}; };
    var qs = [50, 90, 99];
    var rows = [["service time ms"].concat(qs.map(function (q) { return at(q).service_ms; }))];
    if (s.quantiles.some(function (r) { return r.intended_ms !== null && r.intended_ms !== undefined; })) {
      rows.push(["from the intended start ms"].concat(qs.map(function (q) { return at(q).intended_ms; })));
    }
    table(sec, ["", "p50", "p90", "p99"], rows);
    var total = s.shots.responses, errors = errorCount(s);
    var codeRows = [
      ["errors (net errors, HTTP 4xx and 5xx)", fmt(errors) + " of " + fmt(total) + " (" +
        (100 * errors / Math.max(total, 1)).toFixed(2) + "%)"],
      [names.proto || "HTTP codes", codesText(s.proto_codes, names.http, total)],
      ["net codes", codesText(s.net_codes, names.net, total)]];
    // A gRPC run's statuses by name (the HTTP codes hold them by Pandora's table).
    if (s.grpc_statuses && Object.keys(s.grpc_statuses).length) {
      codeRows.push(["gRPC statuses", codesText(s.grpc_statuses, {}, total)]);
    }
    table(sec, ["", ""], codeRows);
    el("p", { "class": "note" }, sec, "Drag across any chart over time to select a range of seconds " +
       "(the steady part, say): its quantiles and codes then show below.");
  }

  // Codes with their meaning, count and share of `total`: "200 OK × 1,234 (98.70%) · ...".
  function codesText(counts, meaning, total) {
    var keys = Object.keys(counts).filter(function (c) { return counts[c] > 0; });
    if (!keys.length) { return "–"; }
    return keys.map(function (c) {
      return c + (meaning[c] ? " " + meaning[c] : "") + " × " + fmt(counts[c]) +
        " (" + (100 * counts[c] / Math.max(total, 1)).toFixed(2) + "%)";
    }).join(" · ");
  }

  // The job ([meta]): its name titles the page; its facts lead the test's facts.
  var JOB_LABELS = [["job_name", "job"], ["job_dsc", "description"], ["ver", "version"],
                    ["component", "component"], ["task", "task"], ["operator", "operator"]];
  function jobTitle(meta) { return meta.job && meta.job.job_name ? meta.job.job_name : meta.title; }
  function jobFacts(meta) {
    var job = meta.job || {}, out = [];
    JOB_LABELS.forEach(function (k) { if (job[k[0]]) { out.push([k[1], job[k[0]]]); } });
    Object.keys(job.extra || {}).sort().forEach(function (k) { out.push([k, job.extra[k]]); });
    if (out.length) { out.push(["config", meta.title]); }
    return out;
  }
  function showJob(meta, prefix) {
    var title = jobTitle(meta);
    document.title = prefix + title;
    document.getElementById("title").textContent = title;
    var dsc = meta.job && meta.job.job_dsc;
    if (dsc) { el("p", { "class": "subtitle" }, document.querySelector("header"), dsc); }
  }

  // The quantiles (percent in `qs`) of seconds n0..n1 from their log buckets
  // (timeline.buckets: [first bucket, count, gap, count, ...], 100 buckets a decade, µs),
  // interpolated within the bucket where the quantile falls: within about 1.2%. ms, or null.
  function bucketQuantiles(tl, n0, n1, qs) {
    var counts = {}, total = 0;
    for (var n = n0; n <= n1; n++) {
      var g = (tl.buckets || [])[n] || [], k = 0;
      for (var i = 0; i + 1 < g.length; i += 2) {
        k += g[i];
        counts[k] = (counts[k] || 0) + g[i + 1];
        total += g[i + 1];
      }
    }
    var keys = Object.keys(counts).map(Number).sort(function (a, b) { return a - b; });
    return qs.map(function (q) {
      if (!total) { return null; }
      var want = q / 100 * total, seen = 0;
      for (var j = 0; j < keys.length; j++) {
        var c = counts[keys[j]];
        if (seen + c >= want) {
          return Math.pow(10, (keys[j] + (want - seen) / c) / 100) / 1000;
        }
        seen += c;
      }
      return Math.pow(10, (keys[keys.length - 1] + 1) / 100) / 1000;
    });
  }

  function sumColumns(columns, n0, n1) {
    var out = {};
    Object.keys(columns).forEach(function (code) {
      var sum = 0;
      for (var n = n0; n <= n1; n++) { sum += columns[code][n] || 0; }
      if (sum > 0) { out[code] = sum; }
    });
    return out;
  }

  // The selected range's figures, recomputed from the per-second data: responses, rates,
  // quantiles (from the buckets; the slowest exactly), errors and codes, phase times.
  function selection(s, names, x) {
    var tl = s.timeline;
    var sec = section("Selected range");
    sec.setAttribute("id", "selection");
    sec.setAttribute("hidden", "");
    var body = el("div", {}, sec);
    var clear = el("button", { type: "button" }, sec, "clear the selection");
    clear.addEventListener("click", function () { setRange(null, null); });
    function sum(values, n0, n1) { var t = 0; for (var n = n0; n <= n1; n++) { t += values[n] || 0; } return t; }
    function weighted(values, n0, n1) {
      var t = 0, w = 0;
      for (var n = n0; n <= n1; n++) { t += (values[n] || 0) * tl.responses[n]; w += tl.responses[n]; }
      return w ? t / w : null;
    }
    onRange(function (range) {
      while (body.firstChild) { body.removeChild(body.firstChild); }
      if (!range) {
        sec.setAttribute("hidden", "");
        if (window.history && history.replaceState) { history.replaceState(null, "", location.pathname + location.search); }
        return;
      }
      sec.removeAttribute("hidden");
      if (window.history && history.replaceState) {
        history.replaceState(null, "", "#range=" + range.from + "-" + range.to);
      }
      var n0 = 0, n1 = x.length - 1;
      while (n0 < x.length && x[n0] < range.from) { n0++; }
      while (n1 >= 0 && x[n1] > range.to) { n1--; }
      var seconds = range.to - range.from + 1, responses = sum(tl.responses, n0, n1);
      var proto = sumColumns(tl.proto_codes, n0, n1), net = sumColumns(tl.net_codes, n0, n1);
      var errors = errorCount({ proto_codes: proto, net_codes: net });
      var planned = sum(tl.planned, n0, n1), sent = sum(tl.sent, n0, n1);
      el("p", { "class": "range" }, body, "from " + clock(range.from) + " to " + clock(range.to) +
         " (" + seconds + " s): " + fmt(responses) + " responses, " + fmt(responses / seconds, 1) +
         " per second" + (planned || sent ? " (" + (anyNonZero(tl.planned) ? "planned " + fmt(planned / seconds, 1) + ", " : "") +
         "sent " + fmt(sent / seconds, 1) + ")" : ""));
      var qs = [50, 75, 90, 95, 99, 99.9];
      var values = bucketQuantiles(tl, n0, n1, qs);
      var slowest = null;
      for (var n = n0; n <= n1; n++) {
        if (tl.responses[n] > 0 && (slowest === null || tl.quantiles_ms[9][n] > slowest)) { slowest = tl.quantiles_ms[9][n]; }
      }
      if (tl.buckets && tl.buckets.length) {
        table(body, ["quantile", "service time ms"], qs.map(function (q, i) { return [q + "%", values[i]]; })
          .concat([["100%", slowest]]));
      } else {
        el("p", { "class": "note" }, body, "This summary keeps no per-second distribution (it was " +
           "merged from per-second lines): the range's quantiles cannot be given, only its slowest response, " +
           fmt(slowest) + " ms.");
      }
      var phases = tl.phases_ms || {};
      table(body, ["", ""], [
        ["errors (net errors, HTTP 4xx and 5xx)", fmt(errors) + " of " + fmt(responses) + " (" +
          (100 * errors / Math.max(responses, 1)).toFixed(2) + "%)"],
        [names.proto || "HTTP codes", codesText(proto, names.http, responses)],
        ["net codes", codesText(net, names.net, responses)],
        ["average ms: connect, send, latency, receive", ["connect", "send", "latency", "receive"].map(function (p) {
          return fmt(weighted(phases[p] || [], n0, n1), 3); }).join(", ")]]);
    });
    // A range in the address (#range=30-300) is selected when the page opens.
    var m = /^#range=(\d+)-(\d+)$/.exec(location.hash);
    if (m) { setRange(+m[1], +m[2]); }
  }

  function report(s, names) {
    var tl = s.timeline, x = offsets(tl.ts);
    CURRENT_TS = tl.ts;
    showJob(s.meta, "tank report — ");
    if (s.warnings && s.warnings.length) {
      var warn = section("Warnings");
      warn.setAttribute("class", "warnings");
      var list = el("ul", {}, warn);
      s.warnings.forEach(function (w) { el("li", {}, list, w); });
    }
    var meta = section("Test");
    var facts = jobFacts(s.meta).concat([["generator", s.meta.generator], ["sources", s.meta.sources.join(", ")],
                 ["start", s.start_unix_s === null ? "–" : new Date(s.start_unix_s * 1000).toISOString()],
                 ["duration", fmt(duration(s), 1) + " s"], ["responses", fmt(s.shots.responses)],
                 ["planned shots", fmt(s.shots.planned)], ["sent", fmt(s.shots.sent)],
                 ["unsent", fmt(s.shots.unsent)], ["rps (actual / planned / max)",
                  fmt(s.rps.actual, 1) + " / " + fmt(s.rps.planned, 1) + " / " + fmt(s.rps.max)]]);
    if (s.shots.retries !== undefined && s.shots.retries !== null) {
      facts.push(["retries (requests sent twice)", fmt(s.shots.retries)]);
    }
    s.meta.facts.forEach(function (f) { facts.push(f); });
    if (s.autostop) {
      facts.push(["autostop", s.autostop.criterion + " (exit " + s.autostop.code + "): " + s.autostop.explanation]);
    }
    if (s.influx) {
      facts.push(["influx", fmt(s.influx.written) + " points written, " + fmt(s.influx.dropped) + " dropped" +
        (s.influx.unconfirmed ? ", " + fmt(s.influx.unconfirmed) + " unconfirmed (sent, never answered: InfluxDB may have them)" : "") +
        (s.influx.first_error ? " (first error: " + s.influx.first_error + ")" : "")]);
    }
    if (s.stopped) {
      var causes = { interrupted: "interrupted (Ctrl-C or SIGTERM)", autostop: "by autostop",
                     write_failed: "an artifact could not be written", queue_failed: "a queue failed",
                     shard_lost: "a shard was lost (it died, or had not ended when merged)" };
      var stop = causes[s.stopped.cause] || s.stopped.cause;
      if (s.stopped.after_s !== null) { stop += " after " + fmt(s.stopped.after_s, 1) + " s"; }
      if (s.stopped.due !== null) { stop += "; " + fmt(s.stopped.due) + " shots were due over a second before"; }
      facts.push(["stopped", stop]);
    }
    if (s.exit_code !== null) { facts.push(["exit code", String(s.exit_code)]); }
    table(meta, ["", ""], facts);
    headline(s, names);
    selection(s, names, x);

    lineChart(section("Response time quantiles per second"), x,
      PICK.slice().reverse().map(function (p) { return { name: p[1], values: answeredOnly(tl, tl.quantiles_ms[p[0]]) }; }),
      "ms", undefined, { log: true });
    var rates = [{ name: "responses", values: tl.responses }];
    if (anyNonZero(tl.planned)) { rates.push({ name: "planned", values: tl.planned }); }
    if (anyNonZero(tl.sent)) { rates.push({ name: "sent", values: tl.sent }); }
    lineChart(section("Requests per second: planned vs actual"), x, rates, "per second");
    if (anyNonZero(tl.instances)) {
      lineChart(section("Active instances"), x, [{ name: "instances", values: tl.instances }], "instances");
    }
    if (anyNonZero(tl.lag_max_ms) || anyNonZero(tl.intended_p99_ms)) {
      lineChart(section("Lag behind the schedule, and latency from the intended start"), x, [
        { name: "lag p99", values: tl.lag_p99_ms }, { name: "lag max", values: tl.lag_max_ms },
        { name: "from intended start p99", values: answeredOnly(tl, tl.intended_p99_ms) },
        { name: "service time p99", values: answeredOnly(tl, tl.quantiles_ms[7]) }], "ms", undefined, { log: true });
    }
    (s.monitoring || []).forEach(function (h) { monitoringCharts(h, x); });
    if (tl.phases_ms && anyNonZero(tl.phases_ms.latency)) {
      var ph = tl.phases_ms;
      lineChart(section("Phases per second: where the time went (averages)"), x, [
        { name: "connect", values: answeredOnly(tl, ph.connect) }, { name: "send", values: answeredOnly(tl, ph.send) },
        { name: "latency (to the first byte)", values: answeredOnly(tl, ph.latency) },
        { name: "receive", values: answeredOnly(tl, ph.receive) }], "ms", undefined, { log: true });
    }
    lineChart(section((names.proto || "HTTP codes") + " per second"), x, codeSeries(tl.proto_codes), "responses");
    lineChart(section("Net codes per second"), x, codeSeries(tl.net_codes), "responses");
    histogram(section("Response time distribution"), s.spread || [], s.distribution);

    table(section("Cumulative quantiles"), ["quantile", "service time ms", "from intended start ms", "lag ms"],
      s.quantiles.map(function (r) { return [r.q + "%", r.service_ms, r.intended_ms, r.lag_ms]; }));
    var total = Math.max(s.shots.responses, 1);
    var codes = section("Codes");
    table(codes, [(names.proto || "HTTP codes").replace(/s$/, ""), "meaning", "count", "%"], Object.keys(s.proto_codes).map(function (c) {
      return [c, names.http[c] || "", s.proto_codes[c], 100 * s.proto_codes[c] / total];
    }));
    table(codes, ["net code", "meaning", "count", "%"], Object.keys(s.net_codes).map(function (c) {
      return [c, names.net[c] || "", s.net_codes[c], 100 * s.net_codes[c] / total];
    }));
    groupCharts("tag", tl.tags || {}, s.tags.length);
    table(section("Per tag"), ["tag", "count", "%", "errors", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms"],
      s.tags.map(function (t) {
        return [t.tag || "(no tag)", t.count, t.percent, t.errors, t.avg_ms,
                t.quantiles_ms[0], t.quantiles_ms[5], t.quantiles_ms[7], t.quantiles_ms[9]];
      }));
    tagViews(s, x);
    groupCharts("queue", tl.queues || {}, (s.queues || []).length);
    if (s.queues && s.queues.length) {
      table(section("Per queue"), ["queue", "count", "%", "errors", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        s.queues.map(function (q) {
          return [q.queue, q.count, q.percent, q.errors, q.avg_ms,
                  q.quantiles_ms[0], q.quantiles_ms[5], q.quantiles_ms[7], q.quantiles_ms[9]];
        }));
    }
    if (s.replay) {
      table(section("Replay"),
        ["sessions started", "completed", "most running at once", "session pool",
         "capture rps", "achieved rps"],
        [[s.replay.started, s.replay.completed, s.replay.peak,
          s.replay.pool, s.rps.planned === null ? "unknown" : s.rps.planned, s.rps.actual]]);
    }
    if (s.scenarios) {
      var sc = s.scenarios, runs = section("Scenario runs");
      table(runs, ["planned", "started", "completed", "failed", "ended by the network", "cut short"],
        [[sc.runs_planned === null ? "unknown" : sc.runs_planned, sc.runs_started, sc.runs_completed,
          sc.runs_failed, sc.runs_broken, sc.runs_stopped]]);
      if (sc.failures.length) {
        table(runs, ["queue", "request", "net code", "reason", "runs"], sc.failures.map(function (f) {
          return [f.queue, f.request, f.code + " " + (names.net[String(f.code)] || ""), f.reason, f.count];
        }));
      }
    }
    var measuring = s.measuring || s.probes;
    if (measuring && measuring.length) {
      table(section("Measuring queues (measure = 1)"),
        ["queue", "count", "errors", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        measuring.map(function (q) {
          return [q.queue, q.count, q.errors, q.avg_ms,
                  q.quantiles_ms[0], q.quantiles_ms[5], q.quantiles_ms[7], q.quantiles_ms[9]];
        }));
    }
  }

  // Each tag on its own, as the talk looks at each handler: its quantiles over time as a band
  // (p50 to the slowest) and its latency distribution; one <details> per tag.
  function tagViews(s, x) {
    var tl = s.timeline, tags = Object.keys(tl.tags || {});
    if (!tags.length || (tags.length === 1 && tags[0] === "")) { return; }
    var sec = section("Each tag on its own");
    var spreads = s.tag_spread || {};
    tags.forEach(function (tag, i) {
      var g = tl.tags[tag], row = s.tags.filter(function (t) { return t.tag === tag; })[0];
      var details = el("details", { "class": "tag", "data-tag": tag }, sec);
      if (i === 0) { details.setAttribute("open", ""); }
      el("summary", {}, details, (tag || "(no tag)") + (row ? " — " + fmt(row.count) + " responses, p50 " +
        fmt(row.quantiles_ms[0]) + " ms, p99 " + fmt(row.quantiles_ms[7]) + " ms, " + fmt(row.errors) + " errors" : ""));
      var band = [["max", g.max_ms], ["p99", g.p99_ms], ["p95", g.p95_ms], ["p90", g.p90_ms], ["p50", g.p50_ms]]
        .filter(function (p) { return p[1] && p[1].length; })
        .map(function (p) { return { name: p[0], values: p[1] }; });
      el("h3", {}, details, "Quantiles per second");
      lineChart(details, x, band, "ms", undefined, { log: true });
      if (spreads[tag] && spreads[tag].length) {
        el("h3", {}, details, "Response time distribution");
        histogram(details, spreads[tag], []);
      }
    });
  }

  // Per-tag or per-queue series over time: responses, p99 and errors, one line per group.
  function groupCharts(kind, groups, total) {
    var names = Object.keys(groups);
    if (!names.length || (kind === "tag" && names.length === 1 && names[0] === "")) { return; }
    var x = offsets(CURRENT_TS);
    function label(n) { return n === "" ? "(no tag)" : n; }
    function pick(field) { return names.map(function (n) { return { name: label(n), values: groups[n][field] }; }); }
    var plural = kind === "tag" ? "tags" : "queues";
    lineChart(section("Responses per second by " + kind), x, pick("responses"), "per second");
    lineChart(section("Response time p99 by " + kind), x, pick("p99_ms"), "ms", undefined, { log: true });
    if (names.some(function (n) { return anyNonZero(groups[n].errors); })) {
      lineChart(section("Errors per second by " + kind), x, pick("errors"), "per second");
    }
    if (total > names.length) {
      el("p", { "class": "note" }, document.getElementById("content").lastChild,
         "The first " + names.length + " of " + total + " " + plural + " have series; all are in the table below.");
    }
  }

  // One host's monitoring, on the load's time axis: per-core CPU, CPU total, and the rest by kind.
  function monitoringCharts(h, x) {
    var names = Object.keys(h.metrics);
    var used = {};
    function pick(test) {
      return names.filter(function (n) { return !used[n] && test(n); }).map(function (n) {
        used[n] = true;
        return { name: n.replace(/^custom:/, ""), values: h.metrics[n] };
      });
    }
    var title = "Monitoring: " + h.host + (h.comment ? " (" + h.comment + ")" : "") + " — ";
    var cores = pick(function (n) { return /^custom:cpu-cpu\d+_busy$/.test(n); });
    cores.sort(function (a, b) { return parseInt(a.name.slice(7), 10) - parseInt(b.name.slice(7), 10); });
    var groups = [
      ["CPU per core, busy", "%", cores],
      ["CPU total", "%", pick(function (n) { return /^custom:cpu-cpu-total_usage_(user|system|iowait|steal|idle)$/.test(n); })],
      ["load average", "", pick(function (n) { return /^System_la/.test(n); })],
      ["memory", "bytes", pick(function (n) { return /^(Memory_|custom:mem_)/.test(n); })],
      ["network", "per second", pick(function (n) { return /^custom:net-/.test(n); })],
      ["disks", "per second", pick(function (n) { return /^custom:diskio-/.test(n); })],
      ["kernel and TCP", "per second", pick(function (n) { return /^(System_|Net_|custom:netstat_)/.test(n); })],
      ["processes, CPU", "% of a core", pick(function (n) { return /^custom:proc-.*_cpu$/.test(n); })],
      ["processes, memory", "bytes", pick(function (n) { return /^custom:proc-.*_rss$/.test(n); })],
      ["other metrics", "", pick(function (n) { return !/^custom:cpu-/.test(n); })]
    ];
    groups.forEach(function (g) {
      if (g[2].length) {
        var sec = section(title + g[0]);
        sec.setAttribute("class", "monitoring");
        lineChart(sec, x, g[2], g[1]);
      }
    });
  }

  function delta(a, b) {
    if (a === null || b === null || a === undefined || b === undefined) { return ["–", "–"]; }
    var d = b - a;
    return [(d >= 0 ? "+" : "") + fmt(d), a ? (d >= 0 ? "+" : "") + (100 * d / a).toFixed(1) + "%" : "–"];
  }

  function compare(a, b) {
    document.title = "tank compare — " + jobTitle(a.meta) + " vs " + jobTitle(b.meta);
    document.getElementById("title").textContent = "A: " + jobTitle(a.meta) + "  vs  B: " + jobTitle(b.meta);
    table(section("Runs"), ["", "A", "B"], [
      ["duration s", fmt(duration(a), 1), fmt(duration(b), 1)], ["responses", a.shots.responses, b.shots.responses],
      ["rps", a.rps.actual, b.rps.actual], ["autostop", a.autostop ? a.autostop.criterion : "–",
       b.autostop ? b.autostop.criterion : "–"]]);
    table(section("Cumulative quantiles: service time, ms"), ["quantile", "A", "B", "Δ", "Δ %"],
      a.quantiles.map(function (r, i) {
        var rb = b.quantiles[i] || {};
        return [r.q + "%", r.service_ms, rb.service_ms].concat(delta(r.service_ms, rb.service_ms));
      }));
    var intended = function (s) { return s.quantiles.some(function (r) { return r.intended_ms !== null && r.intended_ms !== undefined; }); };
    if (intended(a) || intended(b)) {
      table(section("Cumulative quantiles: from the intended start, ms"), ["quantile", "A", "B", "Δ", "Δ %"],
        a.quantiles.map(function (r, i) {
          var rb = b.quantiles[i] || {};
          return [r.q + "%", r.intended_ms, rb.intended_ms].concat(delta(r.intended_ms, rb.intended_ms));
        }));
    }
    var xa = offsets(a.timeline.ts), xb = offsets(b.timeline.ts);
    var x = xa.length >= xb.length ? xa : xb;
    // Past a run's end, and in its seconds without responses, it has no value: a gap.
    function pad(v) { var out = v.slice(0, x.length); while (out.length < x.length) { out.push(null); } return out; }
    lineChart(section("Quantiles per second, overlaid (time from each run's start)"), x, [
      { name: "A p50", values: pad(answeredOnly(a.timeline, a.timeline.quantiles_ms[0])), color: COLORS[0] },
      { name: "A p99", values: pad(answeredOnly(a.timeline, a.timeline.quantiles_ms[7])), color: COLORS[9] },
      { name: "B p50", values: pad(answeredOnly(b.timeline, b.timeline.quantiles_ms[0])), color: COLORS[1] },
      { name: "B p99", values: pad(answeredOnly(b.timeline, b.timeline.quantiles_ms[7])), color: COLORS[3] }], "ms");
    lineChart(section("Responses per second, overlaid"), x, [
      { name: "A", values: pad(a.timeline.responses), color: COLORS[0] },
      { name: "B", values: pad(b.timeline.responses), color: COLORS[1] }], "per second");
    function codeRows(ca, cb) {
      var keys = Object.keys(ca).concat(Object.keys(cb)).filter(function (k, i, all) { return all.indexOf(k) === i; });
      return keys.sort().map(function (k) {
        return [k, ca[k] || 0, cb[k] || 0].concat(delta(ca[k] || 0, cb[k] || 0));
      });
    }
    var codes = section("Codes");
    table(codes, ["HTTP code", "A", "B", "Δ", "Δ %"], codeRows(a.proto_codes, b.proto_codes));
    table(codes, ["net code", "A", "B", "Δ", "Δ %"], codeRows(a.net_codes, b.net_codes));
    var tags = {};
    a.tags.forEach(function (t) { tags[t.tag] = [t, null]; });
    b.tags.forEach(function (t) { tags[t.tag] = [(tags[t.tag] || [null])[0], t]; });
    table(section("Per tag"), ["tag", "count A", "count B", "avg ms A", "avg ms B", "Δ avg", "p99 A", "p99 B", "Δ p99"],
      Object.keys(tags).sort().map(function (k) {
        var ta = tags[k][0], tb = tags[k][1];
        var pa = ta ? ta.quantiles_ms[7] : null, pb = tb ? tb.quantiles_ms[7] : null;
        return [k || "(no tag)", ta ? ta.count : null, tb ? tb.count : null, ta ? ta.avg_ms : null,
                tb ? tb.avg_ms : null, delta(ta && ta.avg_ms, tb && tb.avg_ms)[0], pa, pb, delta(pa, pb)[0]];
      }));
    compareTags(a, b, x, pad);
  }

  // Each tag's quantiles over time, A against B (time from each run's start), one <details> each.
  function compareTags(a, b, x, pad) {
    var ta = a.timeline.tags || {}, tb = b.timeline.tags || {};
    var tags = Object.keys(ta).filter(function (t) { return tb[t]; });
    if (!tags.length || (tags.length === 1 && tags[0] === "")) { return; }
    var sec = section("Each tag over time, overlaid");
    tags.sort().forEach(function (tag, i) {
      var details = el("details", { "class": "tag", "data-tag": tag }, sec);
      if (i === 0) { details.setAttribute("open", ""); }
      el("summary", {}, details, tag || "(no tag)");
      lineChart(details, x, [
        { name: "A p50", values: pad(ta[tag].p50_ms), color: COLORS[0] },
        { name: "A p99", values: pad(ta[tag].p99_ms), color: COLORS[9] },
        { name: "B p50", values: pad(tb[tag].p50_ms), color: COLORS[1] },
        { name: "B p99", values: pad(tb[tag].p99_ms), color: COLORS[3] }], "ms", undefined, { log: true });
      lineChart(details, x, [
        { name: "A responses", values: pad(ta[tag].responses), color: COLORS[0] },
        { name: "B responses", values: pad(tb[tag].responses), color: COLORS[1] }], "per second");
    });
  }

  // Two sweeps: good throughput and p99 against concurrency, A over B (the wrk article's
  // configurations compared as curves).
  function compareSweeps(a, b) {
    var title = "A: sweep of " + a.target + "  vs  B: sweep of " + b.target;
    document.title = "tank compare — " + title;
    document.getElementById("title").textContent = title;
    var at = function (s) { var m = {}; s.steps.forEach(function (st) { m[st.concurrency] = st; }); return m; };
    var ma = at(a), mb = at(b);
    var n = Object.keys(ma).concat(Object.keys(mb)).map(Number)
      .filter(function (c, i, all) { return all.indexOf(c) === i; }).sort(function (x, y) { return x - y; });
    function pick(m, key) { return n.map(function (c) { return m[c] ? m[c][key] : null; }); }
    var knee = function (s) { return s.knee_concurrency === null ? "none" : s.knee_concurrency + " connections"; };
    table(section("Sweeps"), ["", "A", "B"], [["target", a.target, b.target], ["knee", knee(a), knee(b)],
      ["steps", a.steps.length, b.steps.length]]);
    lineChart(section("Throughput (good answers) by concurrency, overlaid"), n, [
      { name: "A good rps", values: pick(ma, "achieved_rps"), color: COLORS[0] },
      { name: "B good rps", values: pick(mb, "achieved_rps"), color: COLORS[1] }], "rps", "");
    lineChart(section("p99 by concurrency, overlaid"), n, [
      { name: "A p99", values: pick(ma, "p99_ms"), color: COLORS[0] },
      { name: "B p99", values: pick(mb, "p99_ms"), color: COLORS[1] }], "ms", "", { log: true });
    table(section("Steps"), ["connections", "A rps", "B rps", "Δ rps", "A p99 ms", "B p99 ms", "Δ p99", "A errors %", "B errors %"],
      n.map(function (c) {
        var sa = ma[c] || {}, sb = mb[c] || {};
        return [c, sa.achieved_rps, sb.achieved_rps, delta(sa.achieved_rps, sb.achieved_rps)[0],
                sa.p99_ms, sb.p99_ms, delta(sa.p99_ms, sb.p99_ms)[0], sa.error_pct, sb.error_pct];
      }));
  }

  // A search, scan or sweep: one point per probe or step, in order of rate or concurrency.
  function limit(d) {
    var byX = function (key) { return function (a, b) { return a[key] - b[key]; }; };
    if (d.warnings && d.warnings.length) {
      var warn = section("Warnings");
      warn.setAttribute("class", "warnings");
      var list = el("ul", {}, warn);
      d.warnings.forEach(function (w) { el("li", {}, list, w); });
    }
    if (d.kind === "sweep") {
      var steps = d.steps.slice().sort(byX("concurrency"));
      var n = steps.map(function (s) { return s.concurrency; });
      var thr = [{ name: "good rps", values: steps.map(function (s) { return s.achieved_rps; }) }];
      if (d.usl) {
        var u = d.usl;
        thr.push({ name: "USL fit", values: n.map(function (c) {
          return u.gamma * c / (1 + u.sigma * (c - 1) + u.kappa * c * (c - 1)); }) });
      }
      var facts = [["knee", (d.knee_concurrency === null ? "none" : d.knee_concurrency + " connections") +
                    " (" + d.knee_why + ")"]];
      if (d.usl) {
        facts.push(["USL σ, κ, γ", fmt(d.usl.sigma, 5) + ", " + fmt(d.usl.kappa, 6) + ", " + fmt(d.usl.gamma)]);
        facts.push(["USL R²", fmt(d.usl.r_squared, 3)]);
      } else {
        facts.push(["USL", "withheld: " + d.usl_withheld]);
      }
      table(section("Knee and fit"), ["", ""], facts);
      lineChart(section("Throughput (good answers) by concurrency"), n, thr, "rps", "");
      lineChart(section("Latency by concurrency"), n, [
        { name: "p50", values: steps.map(function (s) { return s.p50_ms; }) },
        { name: "p99", values: steps.map(function (s) { return s.p99_ms; }) },
        { name: "p99.9", values: steps.map(function (s) { return s.p999_ms; }) }], "ms", "", { log: true });
      if (steps.some(function (s) { return s.errors > 0; })) {
        lineChart(section("Errors by concurrency"), n,
          [{ name: "errors %", values: steps.map(function (s) { return s.error_pct; }) }], "%", "");
      }
      table(section("Steps"), ["connections", "good rps", "errors", "errors %", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms"],
        d.steps.map(function (s) {
          return [s.concurrency, s.achieved_rps, s.errors, s.error_pct, s.p50_ms, s.p90_ms, s.p99_ms, s.p999_ms];
        }));
      return;
    }
    // The decisive try of each rate (its first valid one, else its last) for the charts.
    var decisive = {};
    d.probes.forEach(function (p) {
      var seen = decisive[p.target_rps];
      if (!seen || !seen.valid) { decisive[p.target_rps] = p; }
    });
    var probes = Object.keys(decisive).map(function (k) { return decisive[k]; }).sort(byX("target_rps"));
    var x = probes.map(function (p) { return p.target_rps; });
    var invalidCount = d.probes.filter(function (p) { return !p.valid; }).length;
    var verdict;
    if (d.resolved === false) {
      var low = d.passed_rps, high = d.failed_rps;
      verdict = "limit unresolved" + (low !== null && high !== null ? ": between " + low + " and " + high + " rps"
        : low !== null ? ": at least " + low + " rps" : high !== null ? ": below " + high + " rps" : "") +
        "; " + invalidCount + " probes were invalid (" + d.invalid_rps.join(", ") + " rps invalid in " + d.tries +
        " tries each: tank, not the target, fell behind)";
    } else {
      verdict = "limit: " + (d.limit_rps === null ? "none met the bound" : d.limit_rps + " rps") +
        (invalidCount ? " (" + invalidCount + " invalid probes, tried again)" : "");
    }
    var head = section("Result");
    if (d.resolved === false) { head.setAttribute("class", "warnings"); }
    el("p", { "class": "verdict" }, head, verdict);
    lineChart(section("p" + d.quantile + " by rate (bound " + d.under_ms + " ms; invalid rates drawn with their last try)"), x, [
      { name: "p" + d.quantile + " ms", values: probes.map(function (p) { return p.quantile_ms; }) },
      { name: "bound", values: probes.map(function () { return d.under_ms; }) }], "ms", " rps", { log: true });
    lineChart(section("Achieved by rate"), x, [
      { name: "achieved rps", values: probes.map(function (p) { return p.achieved_rps; }) },
      { name: "target rps", values: x }], "rps", " rps");
    table(section("Probes (" + verdict + ")"),
      ["rate", "try", "achieved", "p" + d.quantile + " ms", "errors %", "lag p99 ms", "valid", "passed", "why"],
      d.probes.map(function (p) {
        return [p.target_rps, p.attempt + " of " + d.tries, p.achieved_rps, p.quantile_ms, p.error_pct, p.lag_p99_ms,
                p.valid ? "yes" : "NO", p.passed ? "yes" : "no", p.reasons.join("; ")];
      }));
  }

  var status = "ok";
  try {
    var data = JSON.parse(document.getElementById("tank-data").textContent);
    if (data.kind === "compare") { compare(data.a, data.b); }
    else if (data.kind === "compare_sweeps") { compareSweeps(data.a, data.b); }
    else if (data.kind === "limit") { limit(data.limit); }
    else { report(data.summary, data.names); }
  } catch (e) {
    status = "error: " + e;
    throw e;
  } finally {
    document.body.setAttribute("data-status", status);
  }
