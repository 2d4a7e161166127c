// The charts: each one's lines, finding markers and layout, built from the page data and the reader's
// view (smoothing, x axis, shared zoom, log scale), drawn with Plotly when it scrolls into view and the
// rest while the page is idle, so a printed or saved page has every chart. Served, a zoom fetches its
// step range at full resolution from the server's API (on a comparison, each line from its own run).
  var RUN_INDEX = {};
  data.runs.forEach(function (r, i) { RUN_INDEX[r.id] = i; });
  var MANY = data.runs.length > 1;
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf"];  // Plotly's own colours, fixed per line
  var DASH = { fail: "solid", warn: "dash", note: "dot" };  // a marker's status, when its colour is its run's

  // --- the theme: Plotly paints its own backgrounds, axes and words, so they take the page's colours here
  // (theme.js sets html[data-theme]); a printed page is light whatever the screen shows, and its charts fit
  // the paper (A4 or Letter, portrait, 12 mm margins: 186 mm is 703 CSS px)
  var THEMES = {
    light: { paper: "#fff", font: "#444", grid: "#eee", zero: "#444", dim: "#999", label: "rgba(255,255,255,0.85)",
      ceiling: "#555", status: COLOR },
    dark: { paper: "#1b1e23", font: "#c9cdd3", grid: "#30353d", zero: "#6b727c", dim: "#8a9099",
      label: "rgba(27,30,35,0.85)", ceiling: "#a0a6ae", status: { fail: "#f28b82", warn: "#fdb863", note: "#8ab4f8" } }
  };
  var PRINT_WIDTH = 680;
  var printing = false;
  function theme() {
    var t = document.documentElement.getAttribute("data-theme");
    if (!t && window.matchMedia) { t = window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"; }
    return THEMES[printing || t !== "dark" ? "light" : "dark"];
  }
  function themed(layout, cid) {
    var t = theme();
    layout.paper_bgcolor = t.paper;
    layout.plot_bgcolor = t.paper;
    layout.font = { color: t.font };
    layout.modebar = { bgcolor: "rgba(0,0,0,0)", color: t.dim, activecolor: t.font };
    [layout.xaxis, layout.yaxis].forEach(function (a) { a.gridcolor = t.grid; a.zerolinecolor = t.zero; a.linecolor = t.zero; });
    var node = chartEl(cid);
    if (printing && node && node.clientWidth) { layout.width = Math.min(node.clientWidth, PRINT_WIDTH); }
    return layout;
  }
  // the newest copy of this script (a live update runs it again) is the one whose charts are on the page
  // back from paper, a chart takes its box's width again (Plotly keeps the width it was given until resized)
  function unprint() {
    printing = false;
    redrawAll();
    Object.keys(drawn).forEach(function (cid) { var n = chartEl(cid); if (n && n.layout) { Plotly.Plots.resize(n); } });
  }
  window.rlvCharts = { relayout: function () { redrawAll(); },
    print: function (on) { if (on) { printing = true; redrawAll(); } else { unprint(); } } };
  if (!window.__rlvChartTheme) {
    window.__rlvChartTheme = true;
    document.addEventListener("rlv-theme", function () { window.rlvCharts.relayout(); });
    window.addEventListener("beforeprint", function () { window.rlvCharts.print(true); });
    window.addEventListener("afterprint", function () { window.rlvCharts.print(false); });
  }

  function runColor(rid) { return RUN_COLORS[(RUN_INDEX[rid] || 0) % RUN_COLORS.length]; }
  function markColor(m) { return MANY ? runColor(m.run) : (theme().status[m.status] || "#888"); }

  // --- x: steps, or the hours elapsed at each step by the run's clock (straight lines between its knots)
  function hours(rid, x) {
    var c = data.clocks && data.clocks[rid];
    if (!c || x === null || x === undefined) { return null; }
    var s = c.steps, t = c.seconds, lo = 0, hi = s.length - 1;
    if (x <= s[0]) { return t[0] * x / Math.max(s[0], 1) / 3600; }
    if (x >= s[hi]) { return t[hi] / 3600; }
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (s[mid] <= x) { lo = mid; } else { hi = mid; } }
    return (t[lo] + (t[hi] - t[lo]) * (x - s[lo]) / (s[hi] - s[lo])) / 3600;
  }
  // the step a run's clock had reached at x on the axis (the inverse of xAt; the clock never runs back)
  function stepAt(rid, x) {
    if (counted()) { return stepAtTokens(rid, x); }
    var c = data.clocks && data.clocks[rid];
    if (!c || x === null || x === undefined) { return null; }
    var v = view.axis === "wall" ? wallMs(x) / 1000 - c.start : x * 3600;
    if (!isFinite(v)) { return null; }
    var s = c.steps, t = c.seconds, lo = 0, hi = s.length - 1;
    if (v <= t[0]) { return t[0] > 0 ? Math.max(v, 0) * Math.max(s[0], 1) / t[0] : s[0]; }
    if (v >= t[hi]) { return s[hi]; }
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (t[mid] <= v) { lo = mid; } else { hi = mid; } }
    return t[hi] === t[lo] ? s[lo] : s[lo] + (s[hi] - s[lo]) * (v - t[lo]) / (t[hi] - t[lo]);
  }
  // a date axis reports its range as UTC date strings ("2026-12-01 10:00:00.5"): milliseconds again
  function wallMs(x) {
    if (typeof x === "number") { return x; }
    var m = /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2})(?::(\d{2}))?(?::(\d{2}))?(\.\d{1,3})?\d*)?$/.exec(String(x));
    if (!m) { return NaN; }
    return Date.parse(m[1] + "T" + (m[2] || "00") + ":" + (m[3] || "00") + ":" + (m[4] || "00") + (m[5] || "") + "Z");
  }
  // wall-clock time: every run's clock says when it started (a tracker's timestamps)
  function walled() {
    var ids = data.clocks ? Object.keys(data.clocks) : [];
    return ids.length > 0 && ids.every(function (r) { return typeof data.clocks[r].start === "number"; });
  }
  // --- or the tokens trained on by each step (runs lined up by work done: data.tokens, report/tokens.py)
  function tokensAt(rid, x) {
    var c = data.tokens && data.tokens[rid];
    if (!c || x === null || x === undefined) { return null; }
    var s = c.steps, t = c.tokens, lo = 0, hi = s.length - 1;
    if (x <= s[0]) { return t[0] * x / Math.max(s[0], 1); }
    if (x >= s[hi]) { return t[hi]; }
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (s[mid] <= x) { lo = mid; } else { hi = mid; } }
    return t[lo] + (t[hi] - t[lo]) * (x - s[lo]) / (s[hi] - s[lo]);
  }
  function stepAtTokens(rid, v) {
    var c = data.tokens && data.tokens[rid];
    if (!c || v === null || v === undefined || !isFinite(v)) { return null; }
    var s = c.steps, t = c.tokens, lo = 0, hi = s.length - 1;
    if (v <= t[0]) { return t[0] > 0 ? Math.max(v, 0) * Math.max(s[0], 1) / t[0] : s[0]; }
    if (v >= t[hi]) { return s[hi]; }
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (t[mid] <= v) { lo = mid; } else { hi = mid; } }
    return t[hi] === t[lo] ? s[lo] : s[lo] + (s[hi] - s[lo]) * (v - t[lo]) / (t[hi] - t[lo]);
  }
  function counted() { return view.axis === "tokens" && !!data.tokens && Object.keys(data.tokens).length > 0; }
  function timed() {
    if (view.axis === "tokens") { return counted(); }
    var clocks = data.clocks && Object.keys(data.clocks).length > 0;
    return view.axis !== "step" && clocks && (view.axis !== "wall" || walled());
  }
  function xAt(rid, step) {
    if (!timed()) { return step; }
    if (counted()) { return tokensAt(rid, step); }
    var h = hours(rid, step);
    if (view.axis !== "wall" || h === null) { return h; }
    return (data.clocks[rid].start + h * 3600) * 1000;
  }
  function xs(rid, x) { return timed() ? x.map(function (v) { return xAt(rid, v); }) : x; }
  function axisTitle() { return word(!timed() ? "step" : counted() ? "tokens" : view.axis === "wall" ? "wall" : "hours"); }

  // TensorBoard's smoothing: an exponential moving average, debiased so the first points are not pulled
  // to zero; a gap (null) stays a gap and does not reset it
  function ema(y, w) {
    if (!w) { return y; }
    var last = 0, n = 0;
    return y.map(function (v) {
      if (v === null || typeof v !== "number" || !isFinite(v)) { return null; }
      last = last * w + (1 - w) * v;
      n += 1;
      return last / (1 - Math.pow(w, n));
    });
  }

  function shapes(chart) {
    var out = [];
    chart.markers.forEach(function (m) {
      var color = markColor(m);
      var pts = pointsOf(m);
      if (pts) {  // point events: a line at each step, no band over the quiet steps between them
        pts.forEach(function (p) {
          var x = xAt(m.run, p);
          out.push({ type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1,
            line: { color: color, width: 2, dash: "dot" }, name: m.finding });
        });
        return;
      }
      if (m.span && m.span[1] > m.span[0]) {
        out.push({ type: "rect", xref: "x", yref: "paper", x0: xAt(m.run, m.span[0]), x1: xAt(m.run, m.span[1]),
          y0: 0, y1: 1, fillcolor: color, opacity: 0.12, line: { width: 0 }, layer: "below", name: m.finding });
      }
      var x0 = xAt(m.run, m.onset);
      out.push({ type: "line", xref: "x", yref: "paper", x0: x0, x1: x0, y0: 0, y1: 1,
        line: { color: color, width: 2, dash: MANY ? DASH[m.status] || "dash" : "dash" }, name: m.finding });
    });
    return out;
  }

  // a finding's title alone (the colour says whose it is when runs are compared)
  function shortTitle(m) {
    var title = m.title ? (lang() === 1 ? m.title.zh : m.title.en) : m.check;
    return title.length > 42 ? title.slice(0, 40) + "…" : title;
  }

  // a label at the top of each onset line (the line itself can hide behind the spike it marks)
  function annotations(chart) {
    return chart.markers.map(function (m, i) {
      var title = markerTitle(m);
      var short = title.length > 42 ? title.slice(0, 40) + "…" : title;
      var pts = pointsOf(m);
      var first = pts ? pts[0] : m.onset;
      var at = pts && pts.length > 1 ? (lang() === 1 ? "第 " + stepList(pts, 3) + " 步" : "steps " + stepList(pts, 3))
        : (lang() === 1 ? "第 " + first + " 步" : word("step") + " " + first);
      var color = markColor(m);
      // below the top edge, where the onset triangles and the nan/inf crosses sit
      return { x: xAt(m.run, first), xref: "x", y: 0.92 - 0.13 * (i % 4), yref: "paper", xanchor: "left",
        yanchor: "top", text: clean((MANY ? m.status.toUpperCase() + " " + shortTitle(m) : short) + " · " + at),
        showarrow: false, font: { size: 10, color: color }, bgcolor: theme().label,
        bordercolor: color, borderwidth: 1, borderpad: 2, captureevents: true,
        hovertext: clean(m.status.toUpperCase() + " " + title + " — " + stepWords(m)), name: m.finding };
    });
  }

  // a triangle at the top of each onset, or of each step of a point event
  function markerTrace(chart) {
    if (!chart.markers.length) { return null; }
    var x = [], text = [], color = [];
    chart.markers.forEach(function (m) {
      var words = clean(m.status.toUpperCase() + " " + markerTitle(m) + " — " + stepWords(m));
      (pointsOf(m) || [m.onset]).forEach(function (p) {
        x.push(xAt(m.run, p));
        text.push(words);
        color.push(markColor(m));
      });
    });
    return { type: "scatter", mode: "markers", yaxis: "y2", showlegend: false, name: "", x: x,
      y: x.map(function () { return 0.995; }), text: text, hovertemplate: "%{text}<extra></extra>",
      cliponaxis: false, marker: { symbol: "triangle-down", size: 11, color: color } };
  }

  // the points a chart's lines show: the page's downsampled ones, or a zoom's fetched at full resolution
  function sourceOf(cid) {
    var el = document.getElementById(cid);
    return (el && el.__rlvFetched) || data.charts[cid].traces;
  }

  // a forecast chart's lines by their role: the logged points, the law over them, the forecast ahead, and
  // its 95 % band (the upper edge drawn unseen, the lower one filled up to it)
  var ROLE = { observed: { mode: "markers", color: PALETTE[0] }, fitted: { mode: "lines", color: PALETTE[1] },
    future: { mode: "lines", color: PALETTE[1], dash: "dash" }, hi: { mode: "lines", color: "rgba(0,0,0,0)" },
    lo: { mode: "lines", color: "rgba(0,0,0,0)", fill: "tonexty" } };
  function forecastLine(t, src) {
    var r = ROLE[t.role] || ROLE.observed;
    var tr = { type: "scatter", mode: r.mode, name: lang() === 1 && t.name_zh ? t.name_zh : t.name,
      x: xs(t.run, src.x), y: src.y, customdata: src.x, line: { color: r.color, dash: r.dash || "solid" },
      marker: { color: r.color, size: 6 }, hovertemplate: "%{x}: %{y}<extra>" + clean(t.role) + "</extra>" };
    if (t.role === "hi") { tr.showlegend = false; tr.hoverinfo = "skip"; tr.hovertemplate = undefined; }
    if (t.role === "lo") { tr.fill = "tonexty"; tr.fillcolor = "rgba(255,127,14,0.15)"; }
    return tr;
  }

  function lineOf(chart, t, src, k) {
    if (chart.kind === "forecast") { return forecastLine(t, src); }
    var hover = !timed() ? "%{x}: %{y}" : counted() ? "%{x:.4s} tokens: %{y}" :
      view.axis === "wall" ? "%{x|%Y-%m-%d %H:%M:%S}: %{y}" : "%{x:.2f} h: %{y}";
    var tr = { type: "scatter", mode: src.x.length > 60 ? "lines" : "lines+markers", name: t.name, x: xs(t.run, src.x),
      y: src.y, connectgaps: false, hovertemplate: hover + "<extra>" + clean(t.key) + "</extra>",
      customdata: src.x };
    if (MANY) {  // a run's colour; its metrics on one chart told apart by the dash
      var mine = chart.traces.filter(function (o) { return o.run === t.run; });
      tr.line = { color: runColor(t.run), dash: ["solid", "dash", "dot", "dashdot"][mine.indexOf(t) % 4] };
      tr.marker = { color: runColor(t.run) };
    } else {  // a fixed colour per line, so its smoothed line and its faint raw curve match
      var color = PALETTE[chart.traces.indexOf(t) % PALETTE.length];
      tr.line = { color: color };
      tr.marker = { color: color };
    }
    if (chart.kind === "stack") {
      tr.stackgroup = "one";
      tr.groupnorm = "percent";
      tr.mode = "lines";
      tr.hovertemplate = "%{x}: %{y:.1f}%<extra>" + clean(t.key) + "</extra>";
      tr.line = undefined;
    } else if (k === "raw" && view.smooth > 0 && smoothed(t)) {  // the raw curve, faint behind its smoothed line
      tr.opacity = 0.25;
      tr.showlegend = false;
      tr.hoverinfo = "skip";
      tr.hovertemplate = undefined;
    } else if (k === "smooth") {
      tr.y = ema(src.y, view.smooth);
      tr.mode = "lines";
      tr.legendgroup = tr.name;
    }
    if (t.hidden) { tr.visible = "legendonly"; tr.legendgroup = tr.name; }  // in the legend, drawn on a click
    return tr;
  }

  function traces(cid) {
    var chart = data.charts[cid];
    var source = sourceOf(cid);
    var out = [];
    chart.traces.forEach(function (t, i) {
      var src = source[i] || t;
      out.push(lineOf(chart, t, src, "raw"));
      if (chart.kind === "line" && view.smooth > 0 && smoothed(t)) { out.push(lineOf(chart, t, src, "smooth")); }
      if (t.bad.length && !(chartEl(cid) && chartEl(cid).__rlvFetched)) {
        out.push({ type: "scatter", mode: "markers", name: t.name + " (nan/inf)", yaxis: "y2",
          x: t.bad.map(function (b) { return xAt(t.run, b[0]); }), y: t.bad.map(function () { return 0.97; }),
          text: t.bad.map(function (b) { return b[1]; }), hovertemplate: "%{x}: %{text}<extra></extra>",
          marker: { symbol: "x", size: 9, color: theme().status.fail } });
      }
    });
    var m = markerTrace(chart);
    if (m) { out.push(m); }
    return out;
  }

  function chartEl(cid) { return document.getElementById(cid); }

  // Plotly's autorange of a constant series is value ± 1: a learning rate of 1e-6 would read as 0
  function constantRange(chart) {
    if (chart.kind === "stack") { return null; }
    var lo = Infinity, hi = -Infinity;
    chart.traces.forEach(function (t) {
      t.y.forEach(function (v) { if (typeof v === "number" && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    });
    if (lo !== hi || !isFinite(lo)) { return null; }
    var pad = lo === 0 ? 1 : Math.abs(lo) * 0.5;
    return [lo - pad, hi + pad];
  }

  // a forecast's ceiling: a dotted line across the chart with its 95 % interval as a band
  function ceilingShapes(chart) {
    var c = chart.ceiling;
    if (!c || c.value === null) { return []; }
    var out = [{ type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: c.value, y1: c.value,
      line: { color: theme().ceiling, width: 1.5, dash: "dot" }, name: "ceiling" }];
    if (c.lo !== null && c.hi !== null) {
      out.push({ type: "rect", xref: "paper", yref: "y", x0: 0, x1: 1, y0: c.lo, y1: c.hi, fillcolor: theme().ceiling,
        opacity: 0.08, line: { width: 0 }, layer: "below", name: "ceiling interval" });
    }
    return out;
  }
  function ceilingNote(chart) {
    var c = chart.ceiling;
    if (!c || c.value === null) { return []; }
    return [{ x: 0.01, xref: "paper", y: c.value, yref: "y", xanchor: "left", yanchor: "bottom", showarrow: false,
      text: (lang() === 1 ? "天花板 " : "ceiling ") + Number(c.value.toPrecision(3)), font: { size: 10, color: theme().ceiling },
      name: "ceiling" }];
  }

  function layoutOf(cid) {
    var chart = data.charts[cid];
    var fixed = constantRange(chart);
    var yaxis = chart.kind === "stack" ? { ticksuffix: "%" } : {};
    if (fixed && !view.log[cid]) { yaxis = { range: fixed, autorange: false, exponentformat: "e" }; }
    if (view.log[cid]) { yaxis = { type: "log", exponentformat: "e" }; }
    var layout = {
      margin: { l: 60, r: 12, t: 8, b: 32 }, height: 260, showlegend: chart.traces.length > 1,
      legend: { orientation: "h", y: -0.18, font: { size: 10 } }, xaxis: { title: { text: axisTitle() } },
      yaxis: yaxis, yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true },
      shapes: shapes(chart).concat(ceilingShapes(chart)), annotations: annotations(chart).concat(ceilingNote(chart)),
      hovermode: "x"
    };
    if (chart.traces.length > 1) { layout.height = 300; layout.margin.b = 70; layout.xaxis = {}; }
    if (chart.traces.length > LEGEND_BELOW) { sideLegend(layout); }
    if (timed() && view.axis === "wall") { layout.xaxis.type = "date"; } else if (timed() && !counted()) { layout.xaxis.ticksuffix = " h"; }
    if (view.x) { layout.xaxis.range = view.x.slice(); layout.xaxis.autorange = false; }
    return themed(layout, cid);
  }

  // --- zoom: one x range for every chart (the reader compares curves at the same steps); served, each
  // zoomed chart fetches its range at full resolution
  var syncing = false;

  // Plotly reports a relayout after its promise settles: the charts this page moved report the range it
  // gave them, which is already the view's, and must not start another round
  function onRelayout(cid, ev) {
    if (syncing) { return; }
    if (ev["xaxis.autorange"]) { if (view.x) { zoomTo(null, cid); } return; }
    var x0 = ev["xaxis.range[0]"], x1 = ev["xaxis.range[1]"];
    if (x0 === undefined && ev["xaxis.range"]) { x0 = ev["xaxis.range"][0]; x1 = ev["xaxis.range"][1]; }
    if (x0 === undefined || (view.x && view.x[0] === x0 && view.x[1] === x1)) { return; }
    zoomTo([x0, x1], cid);
  }

  // every drawn chart to the range x (null: the whole run); `from` already shows it
  function zoomTo(x, from) {
    view.x = x;
    syncing = true;
    Object.keys(drawn).forEach(function (cid) {
      var node = chartEl(cid);
      if (!node || !node.layout) { return; }
      if (cid !== from) {
        Plotly.relayout(node, x ? { "xaxis.range": x.slice(), "xaxis.autorange": false } : { "xaxis.autorange": true });
      }
      if (x) { fetchRange(cid, x[0], x[1]); } else if (node.__rlvFetched) { restore(cid); }
    });
    syncing = false;
  }

  // --- hover: the point under the pointer, and the same x on every other chart in view (W&B's and
  // TensorBoard's linked cursor). A hover this page makes (Plotly.Fx.hover with a list of points) carries
  // no mouse event, so it never starts another round.
  function nearest(x, v) {
    var best = -1, gap = Infinity;
    for (var i = 0; i < x.length; i++) {
      if (x[i] === null || x[i] === undefined) { continue; }
      var d = Math.abs(x[i] - v);
      if (d < gap) { gap = d; best = i; }
    }
    return best;
  }

  function hoverable(tr) {
    return tr.hoverinfo !== "skip" && tr.yaxis !== "y2" && tr.customdata && tr.x && tr.x.length;
  }

  function linked(node) {
    var f = node.closest("figure");
    return node.data && node.layout && !(f && f.hidden) && inView(node);
  }

  function onHover(cid, ev) {
    if (!ev || !ev.event || ev.event.clientX === undefined || !ev.points || !ev.points.length) { return; }
    var p = ev.points[0];
    var x = p.data && p.data.x ? p.data.x[p.pointIndex] : p.x;  // the value given, not a date axis' string
    if (typeof x !== "number") { return; }
    Object.keys(drawn).forEach(function (other) {
      var node = chartEl(other);
      if (other === cid || !node || !linked(node)) { return; }
      var pts = [];
      node.data.forEach(function (tr, i) {
        if (!hoverable(tr)) { return; }
        var j = nearest(tr.x, x);
        if (j >= 0 && tr.y[j] !== null && tr.y[j] !== undefined) { pts.push({ curveNumber: i, pointNumber: j }); }
      });
      if (pts.length) { Plotly.Fx.hover(node, pts); } else { Plotly.Fx.unhover(node); }
    });
  }

  function onUnhover(cid, ev) {
    if (!ev || !ev.event || ev.event.clientX === undefined) { return; }
    Object.keys(drawn).forEach(function (other) {
      var node = chartEl(other);
      if (other !== cid && node && node.data) { Plotly.Fx.unhover(node); }
    });
  }

  // the caption under a chart: how many points it shows (restored when the zoom is undone)
  function points(cid, node) {
    var box = document.querySelector("#fig-" + cid + " .rlv-points");
    if (!box) { return; }
    if (!box.__rlvFirst) { box.__rlvFirst = Array.prototype.slice.call(box.childNodes); }
    box.replaceChildren.apply(box, node ? [node] : box.__rlvFirst);
  }

  function restore(cid) {
    var node = chartEl(cid);
    node.__rlvFetched = null;
    node.removeAttribute("data-range");
    points(cid, null);
    redraw(cid);
  }

  // the steps of run rid a range of the x axis covers: itself on the step axis; on the time axis, the
  // steps the run's clock had reached at each end (null: the run has no clock)
  function stepRange(rid, x0, x1) {
    var a = Math.min(x0, x1), b = Math.max(x0, x1);
    if (timed()) {
      a = stepAt(rid, a);
      b = stepAt(rid, b);
      if (a === null || b === null) { return null; }
    }
    return [Math.floor(a), Math.ceil(b)];
  }

  // where a trace's run is served: on a comparison each run has its own path (the page data's runs[].api), on
  // a run page the page's; a static report has none and fetches nothing
  function apiOf(rid) {
    var r = data.runs[RUN_INDEX[rid]];
    return (r && r.api) || api;
  }

  function fetchOne(t, r, buckets) {
    var base = apiOf(t.run);
    if (!r || !base) { return null; }  // not served, or a run without a clock on the time axis: its points stay
    var q = "?key=" + encodeURIComponent(t.key) + "&start=" + r[0] + "&end=" + r[1] + "&buckets=" + buckets;
    return fetch(base + "/series" + q, { credentials: "same-origin" })
      .then(function (res) { if (!res.ok) { throw new Error("HTTP " + res.status); } return res.json(); })
      .catch(function () { return null; });  // this line keeps its downsampled points; the others are still fetched
  }

  function fetchRange(cid, x0, x1) {
    var chart = data.charts[cid];
    var node = chartEl(cid);
    if (chart.kind !== "line") { return; }  // a stack shares, a forecast was fitted: no series to fetch
    var ranges = chart.traces.map(function (t) { return apiOf(t.run) ? stepRange(t.run, x0, x1) : null; });
    var found = ranges.filter(Boolean);
    if (!found.length) { return; }
    var lo = Math.min.apply(null, found.map(function (r) { return r[0]; }));
    var hi = Math.max.apply(null, found.map(function (r) { return r[1]; }));
    var buckets = Math.max(50, Math.round((node.clientWidth || 600) / 2));
    var asked = (node.__rlvAsk || 0) + 1;
    node.__rlvAsk = asked;
    Promise.all(chart.traces.map(function (t, i) { return fetchOne(t, ranges[i], buckets); })).then(function (got) {
      if (node.__rlvAsk !== asked || !view.x || !got.some(Boolean)) { return; }  // zoomed again, undone, or none came
      node.__rlvFetched = got;
      node.setAttribute("data-range", lo + "-" + hi);
      var n = got.reduce(function (a, s) { return a + (s ? s.x.length : 0); }, 0);
      var runs = {};
      chart.traces.forEach(function (t, i) { if (got[i]) { runs[t.run] = true; } });
      var k = Object.keys(runs).length, span = lo + "–" + hi;
      points(cid, MANY ? both(n + " points of steps " + span + " from " + k + " runs (fetched for this zoom)",
        "来自 " + k + " 个训练、第 " + span + " 步的 " + n + " 个点（为此缩放获取）")
        : both(n + " points of steps " + span + " (fetched for this zoom)",
          "第 " + span + " 步的 " + n + " 个点（为此缩放获取）"));
      redraw(cid);
    });
  }

  function inView(node) {
    var r = node.getBoundingClientRect();
    return r.bottom > 0 && r.top < (window.innerHeight || 800);
  }

  function redraw(cid) {
    var node = chartEl(cid);
    if (!node || !node.layout) { return; }
    Plotly.react(node, traces(cid), layoutOf(cid), { responsive: true, displaylogo: false });
  }

  function redrawAll() { Object.keys(drawn).forEach(redraw); }

  function draw(cid) {
    if (drawn[cid]) { return; }
    var node = chartEl(cid);
    if (!node || !data.charts[cid]) { return; }
    drawn[cid] = true;
    Plotly.newPlot(node, traces(cid), layoutOf(cid), { responsive: true, displaylogo: false }).then(function () {
      node.setAttribute("data-drawn", "1");
      node.on("plotly_relayout", function (ev) { onRelayout(cid, ev); });
      node.on("plotly_hover", function (ev) { onHover(cid, ev); });
      node.on("plotly_unhover", function (ev) { onUnhover(cid, ev); });
      if (view.x) { fetchRange(cid, view.x[0], view.x[1]); }
    });
  }

  function drawAll() { Object.keys(data.charts).forEach(draw); }

  // the charts in view first; the others one at a time while the browser is idle, so that a page
  // printed or saved as PDF has every chart (printing does not scroll the charts into view)
  function lazy() {
    var nodes = document.querySelectorAll(".rlv-chart[data-chart]");
    if (!("IntersectionObserver" in window)) { drawAll(); return; }
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { draw(e.target.getAttribute("data-chart")); io.unobserve(e.target); }
      });
    }, { rootMargin: "300px 0px" });
    nodes.forEach(function (n) { io.observe(n); });
    var rest = Array.prototype.map.call(nodes, function (n) { return n.getAttribute("data-chart"); });
    var later = window.requestIdleCallback || function (f) { return setTimeout(f, 50); };
    function next() {
      while (rest.length && drawn[rest[0]]) { rest.shift(); }
      if (!rest.length) { document.documentElement.setAttribute("data-charts", "drawn"); return; }
      draw(rest.shift());
      later(next);
    }
    later(next);
  }
