// tank's charts and tables: SVG drawn in the browser, shared by report.html, the
// comparison and limit pages, and the live web dashboard. Self-contained on
// purpose: no libraries, no network, works from a file:// URL. The Rust side
// wraps this file and a page's script in one function, so these names are the
// page's own and nothing leaks into the window.
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

  // A range of seconds (offsets from the start) selected on any time chart, shown shaded on
  // all of them; listeners are told the range, or null when it is cleared.
  var RANGE = { from: null, to: null, shades: [], listeners: [] };
  function setRange(from, to) {
    if (from === null || to === null || to < from) { RANGE.from = null; RANGE.to = null; }
    else { RANGE.from = from; RANGE.to = to; }
    RANGE.shades.forEach(function (shade) { shade(); });
    var range = RANGE.from === null ? null : { from: RANGE.from, to: RANGE.to };
    RANGE.listeners.forEach(function (listener) { listener(range); });
  }
  function onRange(listener) { RANGE.listeners.push(listener); }

  function section(title, parent) {
    var s = el("section", {}, parent || document.getElementById("content"));
    el("h2", {}, s, title);
    return s;
  }

  // Lines that coincide must stay visible: each series has its own dash, and earlier ones are
  // drawn wider under later ones.
  var DASHES = ["", "7 3", "2 2", "10 3 2 3", "4 4"];

  // series: [{name, values, color?}], x: numbers (seconds from start, or a rate). Draws
  // polylines with axes, a legend whose items toggle their series, and a hover read-out shared
  // by all time charts. On a time axis, dragging across the chart selects a range of seconds
  // (setRange). opts.log offers a log-scale switch (for quantiles). Returns { svg, update }:
  // update(x, series) redraws with new data (the live dashboard), keeping what is hidden.
  function lineChart(parent, x, series, unit, xunit, opts) {
    opts = opts || {};
    var timeAxis = xunit === undefined;
    xunit = timeAxis ? " s" : xunit;
    var W = 960, H = 260, L = 64, R = 16, T = 22, B = 28;
    var svg = el("svg:svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img" }, parent);
    var hidden = {}, log = false, xmax = 1;
    var cursor, shade, sx = function () { return L; }, controls = el("div", { "class": "controls" }, parent);
    var legend = el("div", { "class": "legend" }, controls);
    function color(s, k) { return s.color || COLORS[k % COLORS.length]; }
    function drawShade(from, to) {
      if (!shade) { return; }
      if (from === null || from === undefined) { shade.setAttribute("visibility", "hidden"); return; }
      var a = sx(Math.min(from, to)), b = sx(Math.max(from, to));
      shade.setAttribute("x", a);
      shade.setAttribute("width", Math.max(b - a, 1));
      shade.setAttribute("visibility", "visible");
    }
    function render() {
      while (svg.firstChild) { svg.removeChild(svg.firstChild); }
      xmax = x.length ? Math.max(x[x.length - 1], 1) : 1;
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
      if (timeAxis) {
        shade = el("svg:rect", { y: T, height: H - T - B, "class": "selection", visibility: "hidden" }, svg);
        drawShade(RANGE.from, RANGE.to);
      }
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
    function drawLegend() {
      while (legend.firstChild) { legend.removeChild(legend.firstChild); }
      series.forEach(function (s, k) {
        var item = el("span", { "class": "toggle" + (hidden[s.name] ? " off" : ""), title: "show or hide" }, legend);
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
    }
    render();
    drawLegend();
    if (opts.log) {
      var label = el("label", { "class": "log" }, controls);
      var box = el("input", { type: "checkbox" }, label);
      label.appendChild(document.createTextNode(" log scale"));
      box.addEventListener("change", function () { log = box.checked; render(); });
    }
    var readout = el("div", { "class": "readout" }, parent, "\u00a0");
    function show(n) {
      if (n >= x.length || !cursor) { return; }
      cursor.setAttribute("x1", sx(x[n])); cursor.setAttribute("x2", sx(x[n]));
      cursor.setAttribute("visibility", "visible");
      readout.textContent = (timeAxis ? clock(x[n]) : x[n] + xunit) + ": " + series.map(function (s) {
        return s.name + " " + fmt(s.values[n]);
      }).join(" · ");
    }
    HOVER.push(show);
    // The x value (seconds, or the chart's unit) under the pointer.
    function xAt(e) {
      var box = svg.getBoundingClientRect();
      return ((e.clientX - box.left) * W / box.width - L) / (W - L - R) * xmax;
    }
    var dragFrom = null;
    svg.addEventListener("mousemove", function (e) {
      if (!x.length) { return; }
      var xv = xAt(e), n = 0;
      while (n + 1 < x.length && Math.abs(x[n + 1] - xv) < Math.abs(x[n] - xv)) { n++; }
      hoverAll(n);
      if (dragFrom !== null) { drawShade(dragFrom, Math.max(0, Math.min(xmax, Math.round(xv)))); }
    });
    if (timeAxis) {
      RANGE.shades.push(function () { drawShade(RANGE.from, RANGE.to); });
      svg.addEventListener("mousedown", function (e) {
        // Only where a range means something (report.html's "Selected range").
        if (!x.length || !RANGE.listeners.length) { return; }
        e.preventDefault();
        dragFrom = Math.max(0, Math.min(xmax, Math.round(xAt(e))));
      });
      var finish = function (e) {
        if (dragFrom === null) { return; }
        var to = Math.max(0, Math.min(xmax, Math.round(xAt(e)))), from = dragFrom;
        dragFrom = null;
        // A click (no drag) keeps the selection as it was.
        if (Math.abs(to - from) >= 1) { setRange(Math.min(from, to), Math.max(from, to)); }
        else { drawShade(RANGE.from, RANGE.to); }
      };
      svg.addEventListener("mouseup", finish);
      svg.addEventListener("mouseleave", function (e) { if (dragFrom !== null) { finish(e); } });
    }
    return {
      svg: svg,
      update: function (newX, newSeries) {
        var names = newSeries.map(function (s) { return s.name; }).join("\u0000");
        var same = names === series.map(function (s) { return s.name; }).join("\u0000");
        x = newX;
        series = newSeries;
        render();
        if (!same) { drawLegend(); }
      }
    };
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

