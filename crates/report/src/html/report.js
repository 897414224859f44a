// tank's report pages: draws SVG charts and tables from the JSON in #tank-data.
// Self-contained on purpose: no libraries, no network, works from a file:// URL.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

  function el(tag, attrs, parent, text) {
    var node = tag.indexOf("svg:") === 0
      ? document.createElementNS(SVG, tag.slice(4))
      : document.createElement(tag);
    for (var k in attrs || {}) { node.setAttribute(k, attrs[k]); }
    if (text !== undefined) { node.textContent = text; }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function fmt(v, digits) {
    if (v === null || v === undefined) { return "–"; }
    if (typeof v !== "number") { return String(v); }
    if (Number.isInteger(v)) { return v.toLocaleString("en-US"); }
    return v.toFixed(digits === undefined ? 2 : digits);
  }

  // Round tick values: steps of 1, 2 or 5 × 10^k, about `want` of them from 0 to past `max`.
  function ticks(max, want) {
    if (!(max > 0)) { max = 1; }
    var raw = max / (want || 4), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * p; }).filter(function (v) { return v >= raw; })[0];
    var out = [];
    for (var v = 0; v <= max + step * 1e-9; v += step) { out.push(+v.toPrecision(12)); }
    if (out[out.length - 1] < max) { out.push(+(out[out.length - 1] + step).toPrecision(12)); }
    return out;
  }

  // Log-axis ticks: 1, 2, 5 × 10^k between lo and hi.
  function logTicks(lo, hi) {
    var out = [];
    for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      [1, 2, 5].forEach(function (m) { var v = m * Math.pow(10, e); if (v >= lo * 0.999 && v <= hi * 1.001) { out.push(+v.toPrecision(6)); } });
    }
    return out;
  }

  // A tick label short enough not to collide: 1.5k, 2M, 1.5 GiB, 2 s (ms ≥ 1000).
  function short(v, unit) {
    if (v === 0) { return "0"; }
    var a = Math.abs(v);
    if (unit === "bytes") {
      var k = Math.min(Math.floor(Math.log(a) / Math.log(1024)), 4);
      return k > 0 ? +(v / Math.pow(1024, k)).toPrecision(3) + " " + ["", "KiB", "MiB", "GiB", "TiB"][k] : String(+v.toPrecision(3));
    }
    if (unit === "ms" && a >= 1000) { return +(v / 1000).toPrecision(3) + " s"; }
    if (a >= 1e9) { return +(v / 1e9).toPrecision(3) + "G"; }
    if (a >= 1e6) { return +(v / 1e6).toPrecision(3) + "M"; }
    if (a >= 1e4) { return +(v / 1e3).toPrecision(3) + "k"; }
    return String(+v.toPrecision(3));
  }

  // Time-axis ticks in round steps (1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1 h ...).
  function timeTicks(max) {
    var steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400];
    var step = steps.filter(function (s) { return max / s <= 8; })[0] || 86400;
    var out = [];
    for (var v = 0; v <= max; v += step) { out.push(v); }
    return out;
  }
  function clock(v) {
    if (v < 120) { return v + " s"; }
    var h = Math.floor(v / 3600), m = Math.floor(v % 3600 / 60), sec = v % 60;
    var mm = (h && m < 10 ? "0" : "") + m, ss = (sec < 10 ? "0" : "") + sec;
    return h ? h + ":" + mm + ":" + ss : mm + ":" + ss;
  }

  // Every time chart registers here, so hovering one second shows it on all of them.
  var HOVER = [];
  var CURRENT_TS = [];
  function hoverAll(n) { HOVER.forEach(function (show) { show(n); }); }

  function section(title) {
    var s = el("section", {}, document.getElementById("content"));
    el("h2", {}, s, title);
    return s;
  }

  // Lines that coincide must stay visible: each series has its own dash, and earlier ones are
  // drawn wider under later ones.
  var DASHES = ["", "7 3", "2 2", "10 3 2 3", "4 4"];

  // series: [{name, values}], x: numbers (seconds from start, or a rate). Draws polylines with
  // axes, a legend whose items toggle their series, and a hover read-out shared by all time
  // charts. opts.log offers a log-scale switch (for quantiles).
  function lineChart(parent, x, series, unit, xunit, opts) {
    opts = opts || {};
    var timeAxis = xunit === undefined;
    xunit = timeAxis ? " s" : xunit;
    var W = 960, H = 260, L = 64, R = 16, T = 22, B = 28;
    var svg = el("svg:svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img" }, parent);
    var xmax = x.length ? Math.max(x[x.length - 1], 1) : 1;
    var hidden = {}, log = false;
    var cursor, sx, controls = el("div", { "class": "controls" }, parent);
    function color(s, k) { return s.color || COLORS[k % COLORS.length]; }
    function render() {
      while (svg.firstChild) { svg.removeChild(svg.firstChild); }
      var shown = series.filter(function (s) { return !hidden[s.name]; });
      var ymax = 0, ymin = Infinity;
      shown.forEach(function (s) { s.values.forEach(function (v) {
        if (v !== null && v !== undefined) { if (v > ymax) { ymax = v; } if (v > 0 && v < ymin) { ymin = v; } } }); });
      var yt, sy;
      sx = function (v) { return L + (W - L - R) * v / xmax; };
      if (log && ymax > 0) {
        var lo = Math.pow(10, Math.floor(Math.log10(ymin))), hi = Math.pow(10, Math.ceil(Math.log10(ymax)));
        if (hi <= lo) { hi = lo * 10; }
        sy = function (v) { return H - B - (H - T - B) * (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)); };
        yt = logTicks(lo, hi);
      } else {
        yt = ticks(ymax, 4);
        var top = yt[yt.length - 1];
        sy = function (v) { return H - B - (H - T - B) * v / top; };
      }
      yt.forEach(function (yv) {
        el("svg:line", { x1: L, x2: W - R, y1: sy(yv), y2: sy(yv), "class": "grid" }, svg);
        el("svg:text", { x: L - 6, y: sy(yv) + 4, "text-anchor": "end", "class": "tick" }, svg, short(yv, unit));
      });
      (timeAxis ? timeTicks(xmax) : ticks(xmax, 6)).forEach(function (xv) {
        if (xv > xmax) { return; }
        el("svg:text", { x: sx(xv), y: H - 8, "text-anchor": "middle", "class": "tick" }, svg,
           timeAxis ? clock(xv) : short(xv) + xunit);
      });
      el("svg:text", { x: 4, y: 12, "class": "unit" }, svg, unit + (log ? " (log scale)" : ""));
      series.forEach(function (s, k) {
        if (hidden[s.name]) { return; }
        // A missing value (a gap) breaks the line instead of drawing it at zero.
        var runs = [[]];
        s.values.forEach(function (v, n) {
          if (v === null || v === undefined || n >= x.length) { if (runs[runs.length - 1].length) { runs.push([]); } return; }
          runs[runs.length - 1].push(sx(x[n]).toFixed(1) + "," + sy(v).toFixed(1));
        });
        runs.filter(function (r) { return r.length; }).forEach(function (r) {
          var attrs = { points: r.join(" "), fill: "none", stroke: color(s, k),
                        "stroke-width": Math.max(1.25, 3 - 0.5 * k), "class": "series", "data-name": s.name };
          if (DASHES[k % DASHES.length]) { attrs["stroke-dasharray"] = DASHES[k % DASHES.length]; }
          el("svg:polyline", attrs, svg);
        });
      });
      cursor = el("svg:line", { y1: T, y2: H - B, "class": "cursor", visibility: "hidden" }, svg);
    }
    render();
    var legend = el("div", { "class": "legend" }, controls);
    series.forEach(function (s, k) {
      var item = el("span", { "class": "toggle", title: "show or hide" }, legend);
      var sw = el("svg:svg", { width: 22, height: 10 }, item);
      var line = { x1: 0, x2: 22, y1: 5, y2: 5, stroke: color(s, k), "stroke-width": 2.5 };
      if (DASHES[k % DASHES.length]) { line["stroke-dasharray"] = DASHES[k % DASHES.length]; }
      el("svg:line", line, sw);
      item.appendChild(document.createTextNode(s.name));
      item.addEventListener("click", function () {
        hidden[s.name] = !hidden[s.name];
        item.classList.toggle("off", !!hidden[s.name]);
        render();
      });
    });
    if (opts.log) {
      var label = el("label", { "class": "log" }, controls);
      var box = el("input", { type: "checkbox" }, label);
      label.appendChild(document.createTextNode(" log scale"));
      box.addEventListener("change", function () { log = box.checked; render(); });
    }
    var readout = el("div", { "class": "readout" }, parent, "\u00a0");
    function show(n) {
      if (n >= x.length) { return; }
      cursor.setAttribute("x1", sx(x[n])); cursor.setAttribute("x2", sx(x[n]));
      cursor.setAttribute("visibility", "visible");
      readout.textContent = (timeAxis ? clock(x[n]) : x[n] + xunit) + ": " + series.map(function (s) {
        return s.name + " " + fmt(s.values[n]);
      }).join(" · ");
    }
    HOVER.push(show);
    svg.addEventListener("mousemove", function (e) {
      var box = svg.getBoundingClientRect();
      var xv = ((e.clientX - box.left) * W / box.width - L) / (W - L - R) * xmax;
      var n = 0;
      while (n + 1 < x.length && Math.abs(x[n + 1] - xv) < Math.abs(x[n] - xv)) { n++; }
      if (!x.length) { return; }
      hoverAll(n);
    });
    return svg;
  }

  // The response-time histogram: bins log-spaced over the data's own range (summary.spread),
  // drawn on a log time axis so equal-width bars are equal ratios; older summaries have only
  // yandex-tank's fixed bins, drawn as before.
  function histogram(parent, spread, fixed) {
    var W = 960, H = 240, L = 64, R = 16, B = 44, T = 22;
    var svg = el("svg:svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img" }, parent);
    var bins = spread.length ? spread : fixed.map(function (d, i) {
      return { from_ms: i ? fixed[i - 1][0] : 0, to_ms: d[0], count: d[1] };
    });
    if (!bins.length) { return svg; }
    var counts = bins.map(function (b) { return b.count; });
    var yt = ticks(Math.max.apply(null, counts), 4), top = yt[yt.length - 1];
    function sy(v) { return H - B - (H - T - B) * v / top; }
    yt.forEach(function (v) {
      el("svg:line", { x1: L, x2: W - R, y1: sy(v), y2: sy(v), "class": "grid" }, svg);
      el("svg:text", { x: L - 6, y: sy(v) + 4, "text-anchor": "end", "class": "tick" }, svg, short(v));
    });
    el("svg:text", { x: 4, y: 12, "class": "unit" }, svg, "responses");
    var bw = (W - L - R) / bins.length;
    bins.forEach(function (b, i) {
      var h = (H - T - B) * b.count / top;
      var bar = el("svg:rect", { x: L + i * bw + 0.5, y: H - B - h, width: Math.max(bw - 1, 1), height: h,
                                 fill: COLORS[0], "class": "bar" }, svg);
      el("svg:title", {}, bar, fmt(b.from_ms, 3) + "–" + fmt(b.to_ms, 3) + " ms: " + fmt(b.count));
    });
    if (spread.length) {
      // Round values placed on the log axis the bins share.
      var lo = bins[0].from_ms, hi = bins[bins.length - 1].to_ms;
      var span = Math.log(hi / lo) || 1, lastX = -Infinity;
      logTicks(lo, hi).forEach(function (v) {
        var xx = L + (W - L - R) * Math.log(v / lo) / span;
        if (xx - lastX < 48) { return; }
        lastX = xx;
        el("svg:line", { x1: xx, x2: xx, y1: H - B, y2: H - B + 4, stroke: "#999" }, svg);
        el("svg:text", { x: xx, y: H - B + 16, "text-anchor": "middle", "class": "tick" }, svg, short(v, "ms") + (v < 1000 ? " ms" : ""));
      });
      el("svg:text", { x: (W + L) / 2, y: H - 6, "text-anchor": "middle", "class": "unit" }, svg,
         "response time (log scale, " + bins.length + " bins from the fastest to the slowest response)");
    } else {
      var every = Math.ceil(bins.length / 16);
      bins.forEach(function (b, i) {
        if (i % every === 0) {
          el("svg:text", { x: L + i * bw + bw / 2, y: H - B + 16, "text-anchor": "middle", "class": "tick" }, svg, "≤" + short(b.to_ms, "ms"));
        }
      });
      el("svg:text", { x: (W + L) / 2, y: H - 6, "text-anchor": "middle", "class": "unit" }, svg, "response time, ms (bin upper edge)");
    }
    return svg;
  }

  function table(parent, headers, rows) {
    var t = el("table", {}, parent);
    var tr = el("tr", {}, el("thead", {}, t));
    headers.forEach(function (h) { el("th", {}, tr, h); });
    var body = el("tbody", {}, t);
    rows.forEach(function (r) {
      var row = el("tr", {}, body);
      r.forEach(function (c) { el("td", {}, row, typeof c === "number" ? fmt(c) : (c === null ? "–" : c)); });
    });
    return t;
  }

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
    function codes(counts, meaning) {
      var keys = Object.keys(counts);
      if (!keys.length) { return "–"; }
      return keys.map(function (c) {
        return c + (meaning[c] ? " " + meaning[c] : "") + " × " + fmt(counts[c]) +
          " (" + (100 * counts[c] / Math.max(total, 1)).toFixed(2) + "%)";
      }).join(" · ");
    }
    var rows = [
      ["errors (net errors, HTTP 4xx and 5xx)", fmt(errors) + " of " + fmt(total) + " (" +
        (100 * errors / Math.max(total, 1)).toFixed(2) + "%)"],
      ["HTTP codes", codes(s.proto_codes, names.http)],
      ["net codes", codes(s.net_codes, names.net)]];
    // A gRPC run's statuses by name (the HTTP codes hold them by Pandora's table).
    if (s.grpc_statuses && Object.keys(s.grpc_statuses).length) {
      rows.push(["gRPC statuses", codes(s.grpc_statuses, {})]);
    }
    table(sec, ["", ""], rows);
  }

  function report(s, names) {
    var tl = s.timeline, x = offsets(tl.ts);
    CURRENT_TS = tl.ts;
    document.title = "tank report — " + s.meta.title;
    document.getElementById("title").textContent = s.meta.title;
    if (s.warnings && s.warnings.length) {
      var warn = section("Warnings");
      warn.setAttribute("class", "warnings");
      var list = el("ul", {}, warn);
      s.warnings.forEach(function (w) { el("li", {}, list, w); });
    }
    var meta = section("Test");
    var facts = [["generator", s.meta.generator], ["sources", s.meta.sources.join(", ")],
                 ["start", s.start_unix_s === null ? "–" : new Date(s.start_unix_s * 1000).toISOString()],
                 ["duration", fmt(duration(s), 1) + " s"], ["responses", fmt(s.shots.responses)],
                 ["planned shots", fmt(s.shots.planned)], ["sent", fmt(s.shots.sent)],
                 ["unsent", fmt(s.shots.unsent)], ["rps (actual / planned / max)",
                  fmt(s.rps.actual, 1) + " / " + fmt(s.rps.planned, 1) + " / " + fmt(s.rps.max)]];
    if (s.shots.retries !== undefined && s.shots.retries !== null) {
      facts.push(["retries (requests sent twice)", fmt(s.shots.retries)]);
    }
    s.meta.facts.forEach(function (f) { facts.push(f); });
    if (s.autostop) {
      facts.push(["autostop", s.autostop.criterion + " (exit " + s.autostop.code + "): " + s.autostop.explanation]);
    }
    if (s.influx) {
      facts.push(["influx", fmt(s.influx.written) + " points written, " + fmt(s.influx.dropped) + " dropped" +
        (s.influx.first_error ? " (first error: " + s.influx.first_error + ")" : "")]);
    }
    if (s.stopped) {
      var causes = { interrupted: "interrupted (Ctrl-C or SIGTERM)", autostop: "by autostop",
                     write_failed: "an artifact could not be written", queue_failed: "a queue failed",
                     shard_lost: "a shard died" };
      var stop = causes[s.stopped.cause] || s.stopped.cause;
      if (s.stopped.after_s !== null) { stop += " after " + fmt(s.stopped.after_s, 1) + " s"; }
      if (s.stopped.due !== null) { stop += "; " + fmt(s.stopped.due) + " shots were due over a second before"; }
      facts.push(["stopped", stop]);
    }
    if (s.exit_code !== null) { facts.push(["exit code", String(s.exit_code)]); }
    table(meta, ["", ""], facts);
    headline(s, names);

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
    lineChart(section("HTTP codes per second"), x, codeSeries(tl.proto_codes), "responses");
    lineChart(section("Net codes per second"), x, codeSeries(tl.net_codes), "responses");
    histogram(section("Response time distribution"), s.spread || [], s.distribution);

    table(section("Cumulative quantiles"), ["quantile", "service time ms", "from intended start ms", "lag ms"],
      s.quantiles.map(function (r) { return [r.q + "%", r.service_ms, r.intended_ms, r.lag_ms]; }));
    var total = Math.max(s.shots.responses, 1);
    var codes = section("Codes");
    table(codes, ["HTTP code", "meaning", "count", "%"], Object.keys(s.proto_codes).map(function (c) {
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
    document.title = "tank compare — " + a.meta.title + " vs " + b.meta.title;
    document.getElementById("title").textContent = "A: " + a.meta.title + "  vs  B: " + b.meta.title;
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
    else if (data.kind === "limit") { limit(data.limit); }
    else { report(data.summary, data.names); }
  } catch (e) {
    status = "error: " + e;
    throw e;
  } finally {
    document.body.setAttribute("data-status", status);
  }
})();
