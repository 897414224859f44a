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

  function niceMax(v) {
    if (!(v > 0)) { return 1; }
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) { if (steps[i] * p >= v) { return steps[i] * p; } }
    return 10 * p;
  }

  // Every time chart registers here, so hovering one second shows it on all of them.
  var HOVER = [];
  function hoverAll(n) { HOVER.forEach(function (show) { show(n); }); }

  function section(title) {
    var s = el("section", {}, document.getElementById("content"));
    el("h2", {}, s, title);
    return s;
  }

  // series: [{name, values}], x: numbers (seconds from start). Draws polylines with axes,
  // a legend and a hover read-out.
  function lineChart(parent, x, series, unit, xunit) {
    xunit = xunit === undefined ? " s" : xunit;
    var W = 960, H = 260, L = 60, R = 16, T = 12, B = 28;
    var svg = el("svg:svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img" }, parent);
    var xmax = x.length ? Math.max(x[x.length - 1], 1) : 1;
    var ymax = 0;
    series.forEach(function (s) { s.values.forEach(function (v) { if (v !== null && v > ymax) { ymax = v; } }); });
    ymax = niceMax(ymax);
    function sx(v) { return L + (W - L - R) * v / xmax; }
    function sy(v) { return H - B - (H - T - B) * v / ymax; }
    for (var i = 0; i <= 4; i++) {
      var yv = ymax * i / 4;
      el("svg:line", { x1: L, x2: W - R, y1: sy(yv), y2: sy(yv), "class": "grid" }, svg);
      el("svg:text", { x: L - 6, y: sy(yv) + 4, "text-anchor": "end" }, svg, fmt(yv, yv < 10 ? 1 : 0));
    }
    for (var j = 0; j <= 6; j++) {
      var xv = xmax * j / 6;
      el("svg:text", { x: sx(xv), y: H - 8, "text-anchor": "middle" }, svg, Math.round(xv) + xunit);
    }
    el("svg:text", { x: 4, y: 12 }, svg, unit);
    series.forEach(function (s, k) {
      // A missing value (a monitoring gap) breaks the line instead of drawing it at zero.
      var runs = [[]];
      s.values.forEach(function (v, n) {
        if (v === null || v === undefined) { if (runs[runs.length - 1].length) { runs.push([]); } return; }
        runs[runs.length - 1].push(sx(x[n]).toFixed(1) + "," + sy(v).toFixed(1));
      });
      runs.filter(function (r) { return r.length; }).forEach(function (r) {
        el("svg:polyline", { points: r.join(" "), fill: "none", stroke: s.color || COLORS[k % COLORS.length],
                             "stroke-width": 1.5, "class": "series", "data-name": s.name }, svg);
      });
    });
    var legend = el("div", { "class": "legend" }, parent);
    series.forEach(function (s, k) {
      var item = el("span", {}, legend);
      el("i", { style: "background:" + (s.color || COLORS[k % COLORS.length]) }, item);
      item.appendChild(document.createTextNode(s.name));
    });
    var cursor = el("svg:line", { y1: T, y2: H - B, "class": "cursor", visibility: "hidden" }, svg);
    var readout = el("div", { "class": "readout" }, parent, "\u00a0");
    function show(n) {
      if (n >= x.length) { return; }
      cursor.setAttribute("x1", sx(x[n])); cursor.setAttribute("x2", sx(x[n]));
      cursor.setAttribute("visibility", "visible");
      readout.textContent = x[n] + xunit + ": " + series.map(function (s) {
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

  function barChart(parent, labels, values, unit) {
    var W = 960, H = 220, L = 60, B = 40, T = 12;
    var svg = el("svg:svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img" }, parent);
    var ymax = niceMax(Math.max.apply(null, values.concat([0])));
    var bw = (W - L - 10) / Math.max(values.length, 1);
    values.forEach(function (v, i) {
      var h = (H - T - B) * v / ymax;
      var bar = el("svg:rect", { x: L + i * bw + 1, y: H - B - h, width: Math.max(bw - 2, 1), height: h,
                                 fill: COLORS[0], "class": "bar" }, svg);
      el("svg:title", {}, bar, labels[i] + ": " + fmt(v));
      if (values.length <= 40 || i % Math.ceil(values.length / 40) === 0) {
        el("svg:text", { x: L + i * bw + bw / 2, y: H - B + 14, "text-anchor": "middle" }, svg, labels[i]);
      }
    });
    for (var k = 0; k <= 4; k++) {
      var yv = ymax * k / 4, y = H - B - (H - T - B) * k / 4;
      el("svg:text", { x: L - 6, y: y + 4, "text-anchor": "end" }, svg, fmt(yv, 0));
    }
    el("svg:text", { x: W / 2, y: H - 6, "text-anchor": "middle" }, svg, unit);
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

  function report(s, names) {
    var tl = s.timeline, x = offsets(tl.ts);
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
                 ["duration", s.duration_s + " s"], ["responses", fmt(s.shots.responses)],
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
    if (s.exit_code !== null) { facts.push(["exit code", String(s.exit_code)]); }
    table(meta, ["", ""], facts);

    lineChart(section("Response time quantiles per second"), x,
      PICK.map(function (p) { return { name: p[1], values: tl.quantiles_ms[p[0]] || [] }; }), "ms");
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
        { name: "from intended start p99", values: tl.intended_p99_ms },
        { name: "service time p99", values: tl.quantiles_ms[7] || [] }], "ms");
    }
    (s.monitoring || []).forEach(function (h) { monitoringCharts(h, x); });
    lineChart(section("HTTP codes per second"), x, codeSeries(tl.proto_codes), "responses");
    lineChart(section("Net codes per second"), x, codeSeries(tl.net_codes), "responses");
    barChart(section("Response time distribution"),
      s.distribution.map(function (d) { return "≤" + fmt(d[0], d[0] < 10 ? 1 : 0); }),
      s.distribution.map(function (d) { return d[1]; }), "response time, ms (bin upper edge)");

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
    table(section("Per tag"), ["tag", "count", "%", "errors", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms"],
      s.tags.map(function (t) {
        return [t.tag || "(no tag)", t.count, t.percent, t.errors, t.avg_ms,
                t.quantiles_ms[0], t.quantiles_ms[5], t.quantiles_ms[7], t.quantiles_ms[9]];
      }));
    if (s.queues && s.queues.length) {
      table(section("Per queue"), ["queue", "count", "%", "errors", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        s.queues.map(function (q) {
          return [q.queue, q.count, q.percent, q.errors, q.avg_ms,
                  q.quantiles_ms[0], q.quantiles_ms[5], q.quantiles_ms[7], q.quantiles_ms[9]];
        }));
    }
    if (s.probes && s.probes.length) {
      table(section("Measuring probes (measure = 1)"),
        ["probe", "count", "errors", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        s.probes.map(function (q) {
          return [q.queue, q.count, q.errors, q.avg_ms,
                  q.quantiles_ms[0], q.quantiles_ms[5], q.quantiles_ms[7], q.quantiles_ms[9]];
        }));
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
      ["duration s", a.duration_s, b.duration_s], ["responses", a.shots.responses, b.shots.responses],
      ["rps", a.rps.actual, b.rps.actual], ["autostop", a.autostop ? a.autostop.criterion : "–",
       b.autostop ? b.autostop.criterion : "–"]]);
    table(section("Cumulative quantiles, ms"), ["quantile", "A", "B", "Δ", "Δ %"],
      a.quantiles.map(function (r, i) {
        var rb = b.quantiles[i] || {};
        return [r.q + "%", r.service_ms, rb.service_ms].concat(delta(r.service_ms, rb.service_ms));
      }));
    var xa = offsets(a.timeline.ts), xb = offsets(b.timeline.ts);
    var x = xa.length >= xb.length ? xa : xb;
    function pad(v) { var out = v.slice(0, x.length); while (out.length < x.length) { out.push(0); } return out; }
    lineChart(section("Quantiles per second, overlaid (time from each run's start)"), x, [
      { name: "A p50", values: pad(a.timeline.quantiles_ms[0] || []), color: COLORS[0] },
      { name: "A p99", values: pad(a.timeline.quantiles_ms[7] || []), color: COLORS[9] },
      { name: "B p50", values: pad(b.timeline.quantiles_ms[0] || []), color: COLORS[1] },
      { name: "B p99", values: pad(b.timeline.quantiles_ms[7] || []), color: COLORS[3] }], "ms");
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
    if (d.kind === "sweep") {
      var steps = d.steps.slice().sort(byX("concurrency"));
      var n = steps.map(function (s) { return s.concurrency; });
      var thr = [{ name: "achieved rps", values: steps.map(function (s) { return s.achieved_rps; }) }];
      if (d.usl) {
        var u = d.usl;
        thr.push({ name: "USL fit", values: n.map(function (c) {
          return u.gamma * c / (1 + u.sigma * (c - 1) + u.kappa * c * (c - 1)); }) });
      }
      lineChart(section("Throughput by concurrency"), n, thr, "rps", "");
      lineChart(section("Latency by concurrency"), n, [
        { name: "p50", values: steps.map(function (s) { return s.p50_ms; }) },
        { name: "p99", values: steps.map(function (s) { return s.p99_ms; }) },
        { name: "p99.9", values: steps.map(function (s) { return s.p999_ms; }) }], "ms", "");
      var facts = [["knee", d.knee_concurrency === null ? "none" : d.knee_concurrency + " connections"]];
      if (d.usl) {
        facts.push(["USL σ, κ, γ", fmt(d.usl.sigma, 5) + ", " + fmt(d.usl.kappa, 6) + ", " + fmt(d.usl.gamma)]);
        facts.push(["USL R²", fmt(d.usl.r_squared, 3)]);
      }
      table(section("Fit"), ["", ""], facts);
      table(section("Steps"), ["connections", "rps", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "errors %"],
        d.steps.map(function (s) { return [s.concurrency, s.achieved_rps, s.p50_ms, s.p90_ms, s.p99_ms, s.p999_ms, s.error_pct]; }));
      return;
    }
    var probes = d.probes.slice().sort(byX("target_rps"));
    var x = probes.map(function (p) { return p.target_rps; });
    lineChart(section("p" + d.quantile + " by rate (bound " + d.under_ms + " ms)"), x, [
      { name: "p" + d.quantile + " ms", values: probes.map(function (p) { return p.quantile_ms; }) },
      { name: "bound", values: probes.map(function () { return d.under_ms; }) }], "ms", " rps");
    lineChart(section("Achieved by rate"), x, [
      { name: "achieved rps", values: probes.map(function (p) { return p.achieved_rps; }) },
      { name: "target rps", values: x }], "rps", " rps");
    table(section("Probes (limit: " + (d.limit_rps === null ? "none" : d.limit_rps + " rps") + ")"),
      ["rate", "achieved", "p" + d.quantile + " ms", "errors %", "lag p99 ms", "valid", "passed", "why"],
      d.probes.map(function (p) {
        return [p.target_rps, p.achieved_rps, p.quantile_ms, p.error_pct, p.lag_p99_ms,
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
