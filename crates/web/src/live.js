// tank's live dashboard: drawn from the server-sent events of /events (a snapshot, then each
// change) with chart.js's functions. Read-only. When the run ends, or tank exits, the page
// keeps what it has drawn and says so. body[data-status] is "ok" once a snapshot is drawn,
// body[data-seconds] the seconds of the current run drawn so far (the browser test reads both).
  var content = document.getElementById("content");
  var STATE = null;
  var CHARTS = {};
  var TABLES = {};
  var source = null;

  function setStatus(text, kind) {
    var line = document.getElementById("status");
    line.textContent = text;
    line.setAttribute("class", kind || "");
  }

  function column(seconds, key) { return seconds.map(function (s) { return s[key]; }); }
  function answered(seconds, values) {
    return values.map(function (v, n) { return seconds[n].responses > 0 ? v : null; });
  }
  function codeColumns(seconds, key) {
    var codes = {};
    seconds.forEach(function (s) { Object.keys(s[key] || {}).forEach(function (c) { codes[c] = true; }); });
    return Object.keys(codes).sort().map(function (c) {
      return { name: c, values: seconds.map(function (s) { return (s[key] || {})[c] || 0; }) };
    });
  }

  // A chart drawn the first time it has data, then updated in place.
  function chart(name, title, x, series, unit, opts) {
    if (CHARTS[name]) { CHARTS[name].update(x, series); return; }
    var sec = section(title, document.getElementById("charts"));
    CHARTS[name] = lineChart(sec, x, series, unit, undefined, opts);
  }

  // A table redrawn whole (they are small).
  function tableIn(name, title, headers, rows, parent) {
    var sec = TABLES[name];
    if (!sec) {
      sec = TABLES[name] = section(title, parent || document.getElementById("tables"));
      sec.setAttribute("data-table", name);
    }
    sec.firstChild.textContent = title;
    while (sec.childNodes.length > 1) { sec.removeChild(sec.lastChild); }
    table(sec, headers, rows);
    return sec;
  }

  var Q = ["p50", "p75", "p90", "p95", "p99", "max"];

  function drawRun() {
    var run = STATE.run;
    document.body.setAttribute("data-seconds", run ? run.seconds.length : 0);
    if (!run) { setStatus("waiting for the run to start"); return; }
    var s = run.seconds, x = column(s, "t"), last = s[s.length - 1];
    var t = run.totals;
    document.getElementById("run").textContent = run.label + (run.planned_s ? " — schedule " + clock(Math.round(run.planned_s)) : "") +
      (run.dropped ? " — the first " + run.dropped + " seconds are no longer shown" : "");
    if (!run.end && !STATE.over) {
      setStatus(last ? "running: second " + clock(last.t) + " final, " + fmt(t.responses) + " responses so far" : "running: waiting for the first second to be final", "live");
    }
    if (last) {
      var q = last.q || [];
      tableIn("now", "Last finished second (" + clock(last.t) + ") and the run so far", ["", "last second", "so far"], [
        // A scenario plans runs, not requests: its seconds' planned counts say nothing.
        ["planned", run.planned_known === false ? "–" : last.planned, run.planned_known === false ? "–" : t.planned], ["sent", last.sent, t.sent], ["responses", last.responses, t.responses],
        ["errors (net, " + (codeKind() === "HTTP" ? "HTTP 4xx/5xx" : codeKind() + " errors") + ")", Object.keys(last.net).filter(function (c) { return c !== "0"; }).reduce(function (a, c) { return a + last.net[c]; }, 0) +
          Object.keys(last.http).filter(function (c) { return +c >= 400; }).reduce(function (a, c) { return a + last.http[c]; }, 0),
         fmt(t.errors) + " (" + (100 * t.errors / Math.max(t.responses, 1)).toFixed(2) + "%)"],
        ["instances busy", last.instances, "–"],
        ["p50 ms", q[0], t.quantiles_ms[0]], ["p90 ms", q[2], t.quantiles_ms[2]], ["p99 ms", q[4], t.quantiles_ms[4]],
        ["max ms", q[5], t.quantiles_ms[5]], ["lag p99 ms", last.lag_p99, "–"]], document.getElementById("now"));
      tableIn("codes", "Codes so far", ["code", "count", "%"],
        Object.keys(t.http).map(function (c) { return [codeKind() + " " + c, t.http[c], 100 * t.http[c] / Math.max(t.responses, 1)]; })
          .concat(Object.keys(t.net).map(function (c) { return ["net " + c, t.net[c], 100 * t.net[c] / Math.max(t.responses, 1)]; })),
        document.getElementById("now"));
    }
    var rates = [{ name: "responses", values: column(s, "responses") }, { name: "sent", values: column(s, "sent") }];
    if (run.planned_known !== false) { rates.push({ name: "planned", values: column(s, "planned") }); }
    chart("rates", "Requests per second: planned, sent, answered", x, rates, "per second");
    chart("quantiles", "Response time quantiles per second", x, Q.slice().reverse().map(function (name, i) {
      var k = Q.length - 1 - i;
      return { name: name, values: answered(s, s.map(function (sec) { return sec.q ? sec.q[k] : null; })) };
    }), "ms", { log: true });
    chart("lag", "Lag behind the schedule, and latency from the intended start", x, [
      { name: "lag p99", values: column(s, "lag_p99") }, { name: "lag max", values: column(s, "lag_max") },
      { name: "from intended start p99", values: column(s, "intended_p99") }], "ms", { log: true });
    chart("http", STATE.meta.codes + " per second", x, codeColumns(s, "http"), "responses");
    chart("net", "Net codes per second", x, codeColumns(s, "net"), "responses");
    chart("instances", "Active instances", x, [{ name: "instances", values: column(s, "instances") }], "instances");
    var tags = t.tags.map(function (r) { return r[0]; });
    if (tags.length > 1 || (tags.length === 1 && tags[0] !== "")) {
      var tagCol = function (i) {
        return tags.slice(0, 20).map(function (tag) {
          return { name: tag || "(no tag)", values: s.map(function (sec) { var g = sec.tags[tag]; return g ? g[i] : null; }) };
        });
      };
      chart("tag_rps", "Responses per second by tag", x, tagCol(0), "per second");
      chart("tag_p99", "Response time p99 by tag", x, tagCol(3), "ms", { log: true });
      tableIn("tags", "Per tag", ["tag", "responses", "errors", "last p50 ms", "last p99 ms"], t.tags.map(function (r) {
        var g = last && last.tags[r[0]];
        return [r[0] || "(no tag)", r[1], r[2], g ? g[2] : null, g ? g[3] : null];
      }));
    }
    (run.monitoring || []).forEach(function (h) {
      var hx = h.seconds.map(function (m) { return m.ts - Math.floor(run.start_unix_us / 1e6); });
      var names = (h.seconds[h.seconds.length - 1] || { cores: [] }).cores.map(function (c) { return c[0]; });
      var series = names.map(function (name) {
        return { name: name, values: h.seconds.map(function (m) {
          var c = m.cores.filter(function (c) { return c[0] === name; })[0]; return c ? c[1] : null; }) };
      });
      if (series.length) {
        chart("cpu " + h.host, "Monitoring: " + h.host + (h.comment ? " (" + h.comment + ")" : "") + " — CPU per core, busy", hx, series, "%");
      }
    });
    if (run.end) {
      var result = tableIn("end", "The run's end", [""], [], document.getElementById("tables"));
      el("pre", {}, result, run.end.text);
      if (!STATE.over) { setStatus("the run is over" + (run.end.exit_code !== null ? " (exit " + run.end.exit_code + ")" : ""), "over"); }
    }
  }

  function drawSteps() {
    var tb = STATE.table;
    if (tb) { tableIn("steps", tb.title, tb.headers, tb.rows, document.getElementById("now")); }
    if (STATE.ended.length) {
      tableIn("ended", "Runs before this one", ["run", "exit code"], STATE.ended.map(function (r) {
        return [r.label, r.end && r.end.exit_code !== null ? String(r.end.exit_code) : "–"];
      }), document.getElementById("now"));
    }
  }

  // What the proto codes are: "HTTP", "MySQL" or "proto" (the run's protocols).
  function codeKind() {
    return (STATE.meta.codes || "HTTP codes").replace(/ codes$/, "");
  }

  function drawHeader(meta) {
    var job = meta.job || {};
    var title = job.job_name || meta.title;
    document.title = "tank live — " + title;
    document.getElementById("title").textContent = title;
    var facts = [];
    [["ver", "version "], ["component", "component "], ["task", "task "], ["operator", "operator "]].forEach(function (k) {
      if (job[k[0]]) { facts.push(k[1] + job[k[0]]); }
    });
    if (job.job_name && meta.title) { facts.push(meta.title); }
    document.getElementById("facts").textContent = facts.join(" · ");
    document.getElementById("description").textContent = job.job_dsc || "";
  }

  // Everything from scratch: the first snapshot, or a fresh one after falling behind.
  function reset(snapshot) {
    STATE = snapshot;
    (STATE.run ? STATE.run.monitoring = hostsHistory(STATE.run.monitoring) : null);
    ["now", "charts", "tables"].forEach(function (id) {
      var box = document.getElementById(id);
      while (box.firstChild) { box.removeChild(box.firstChild); }
    });
    CHARTS = {}; TABLES = {}; HOVER.length = 0;
    drawHeader(STATE.meta);
    drawSteps();
    drawRun();
    if (STATE.over) { finished(STATE.over); }
    document.body.setAttribute("data-status", "ok");
  }

  // The snapshot gives each host's kept seconds; events add one at a time.
  function hostsHistory(list) {
    return (list || []).map(function (h) { return { host: h.host, comment: h.comment, seconds: h.seconds || [] }; });
  }
  function addMonitoring(hosts) {
    if (!STATE.run) { return; }
    hosts.forEach(function (m) {
      var h = STATE.run.monitoring.filter(function (k) { return k.host === m.host; })[0];
      if (!h) { h = { host: m.host, comment: m.comment, seconds: [] }; STATE.run.monitoring.push(h); }
      h.seconds.push(m);
      if (h.seconds.length > 3600) { h.seconds.shift(); }
    });
  }

  function finished(over) {
    if (source) { source.close(); source = null; }
    setStatus("tank is done: " + over.text + " — this page keeps the results; tank's server may be gone.", "over");
    document.body.setAttribute("data-over", "1");
  }

  function handle(name, data) {
    if (name === "snapshot") { reset(data); return; }
    if (!STATE) { return; }
    if (name === "run") {
      if (STATE.run) { STATE.ended.push({ label: STATE.run.label, end: STATE.run.end }); }
      STATE.run = { label: data.label, start_unix_us: data.start_unix_us, planned_s: data.planned_s,
                    planned_known: data.planned_known, seconds: [],
                    dropped: 0, totals: null, monitoring: [], end: null };
      reset(STATE);
    } else if (name === "second" && STATE.run) {
      STATE.run.seconds.push(data.second);
      if (STATE.run.seconds.length > 3600) { STATE.run.seconds.shift(); STATE.run.dropped++; }
      STATE.run.totals = data.totals;
      drawRun();
    } else if (name === "totals" && STATE.run) {
      STATE.run.totals = data;
      drawRun();
    } else if (name === "monitoring") {
      addMonitoring(data);
      drawRun();
    } else if (name === "end" && STATE.run) {
      STATE.run.end = data;
      drawRun();
    } else if (name === "table") {
      STATE.table = data;
      drawSteps();
    } else if (name === "over") {
      STATE.over = data;
      finished(data);
    }
  }

  function connect() {
    if (!window.EventSource) {
      setStatus("this browser has no EventSource: the dashboard cannot update", "lost");
      return;
    }
    // The token, if the page was opened with one, goes along (the cookie carries it too).
    var m = /[?&]token=([^&]*)/.exec(location.search);
    source = new EventSource("events" + (m ? "?token=" + m[1] : ""));
    ["snapshot", "run", "second", "totals", "monitoring", "end", "table", "over"].forEach(function (name) {
      source.addEventListener(name, function (e) {
        try { handle(name, JSON.parse(e.data)); }
        catch (err) { document.body.setAttribute("data-status", "error: " + err); throw err; }
      });
    });
    source.onerror = function () {
      if (STATE && STATE.over) { return; }
      setStatus("lost the connection to tank (it has exited, or the network dropped): the page shows the results " +
                "as they last were, and reconnects if tank answers again", "lost");
    };
  }

  setStatus("connecting to tank");
  connect();
