// The charts: each one's traces, finding markers and layout, drawn with Plotly when it scrolls into
// view. A zoom is remembered (a live update keeps it) and, when served, fetches its step range at full
// resolution from the server's API.
  function shapes(chart) {
    var out = [];
    chart.markers.forEach(function (m) {
      var color = COLOR[m.status] || "#888";
      var pts = pointsOf(m);
      if (pts) {  // point events: a line at each step, no band over the quiet steps between them
        pts.forEach(function (p) {
          out.push({ type: "line", xref: "x", yref: "paper", x0: p, x1: p, y0: 0, y1: 1,
            line: { color: color, width: 2, dash: "dot" }, name: m.finding });
        });
        return;
      }
      if (m.span && m.span[1] > m.span[0]) {
        out.push({ type: "rect", xref: "x", yref: "paper", x0: m.span[0], x1: m.span[1], y0: 0, y1: 1,
          fillcolor: color, opacity: 0.12, line: { width: 0 }, layer: "below", name: m.finding });
      }
      out.push({ type: "line", xref: "x", yref: "paper", x0: m.onset, x1: m.onset, y0: 0, y1: 1,
        line: { color: color, width: 2, dash: "dash" }, name: m.finding });
    });
    return out;
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
      // below the top edge, where the onset triangles and the nan/inf crosses sit
      return { x: first, xref: "x", y: 0.92 - 0.13 * (i % 4), yref: "paper", xanchor: "left",
        yanchor: "top", text: clean(short + " · " + at),
        showarrow: false, font: { size: 10, color: COLOR[m.status] || "#555" }, bgcolor: "rgba(255,255,255,0.85)",
        bordercolor: COLOR[m.status] || "#888", borderwidth: 1, borderpad: 2, captureevents: true,
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
        x.push(p);
        text.push(words);
        color.push(COLOR[m.status] || "#888");
      });
    });
    return { type: "scatter", mode: "markers", yaxis: "y2", showlegend: false, name: "", x: x,
      y: x.map(function () { return 0.995; }), text: text, hovertemplate: "%{text}<extra></extra>",
      cliponaxis: false, marker: { symbol: "triangle-down", size: 11, color: color } };
  }

  function traces(chart) {
    var out = [];
    var index = [];  // data index of each of chart.traces
    chart.traces.forEach(function (t) {
      var tr = { type: "scatter", mode: t.x.length > 60 ? "lines" : "lines+markers", name: t.name, x: t.x, y: t.y,
        connectgaps: false, hovertemplate: "%{x}: %{y}<extra>" + clean(t.key) + "</extra>" };
      if (chart.kind === "stack") {
        tr.stackgroup = "one";
        tr.groupnorm = "percent";
        tr.mode = "lines";
        tr.hovertemplate = "%{x}: %{y:.1f}%<extra>" + clean(t.key) + "</extra>";
      }
      index.push(out.length);
      out.push(tr);
      if (t.bad.length) {
        out.push({ type: "scatter", mode: "markers", name: t.name + " (nan/inf)", yaxis: "y2",
          x: t.bad.map(function (b) { return b[0]; }), y: t.bad.map(function () { return 0.97; }),
          text: t.bad.map(function (b) { return b[1]; }), hovertemplate: "%{x}: %{text}<extra></extra>",
          marker: { symbol: "x", size: 9, color: COLOR.fail } });
      }
    });
    var m = markerTrace(chart);
    if (m) { out.push(m); }
    return { data: out, index: index };
  }

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

  function layoutOf(chart) {
    var fixed = constantRange(chart);
    var yaxis = chart.kind === "stack" ? { ticksuffix: "%" } : {};
    if (fixed) { yaxis = { range: fixed, autorange: false, exponentformat: "e" }; }
    var layout = {
      margin: { l: 60, r: 12, t: 8, b: 32 }, height: 260, showlegend: chart.traces.length > 1,
      legend: { orientation: "h", y: -0.18, font: { size: 10 } }, xaxis: { title: { text: word("step") } },
      yaxis: yaxis, yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true },
      shapes: shapes(chart), annotations: annotations(chart), hovermode: "closest"
    };
    if (chart.traces.length > 1) { layout.height = 300; layout.margin.b = 70; layout.xaxis = {}; }
    var z = zoom[sig(chart)];
    if (z) {
      layout.xaxis.range = z.x.slice();
      layout.xaxis.autorange = false;
      if (z.y) { layout.yaxis.range = z.y.slice(); layout.yaxis.autorange = false; }
    }
    return layout;
  }

  // --- zoom: remember it (a live update keeps it) and, when served, fetch the range at full resolution
  function onRelayout(cid, el, ev) {
    var chart = data.charts[cid];
    if (ev["xaxis.autorange"]) {
      delete zoom[sig(chart)];
      if (el.__rlvZoomed) { restore(cid, el); }
      return;
    }
    var x0 = ev["xaxis.range[0]"], x1 = ev["xaxis.range[1]"];
    if (x0 === undefined && ev["xaxis.range"]) { x0 = ev["xaxis.range"][0]; x1 = ev["xaxis.range"][1]; }
    if (x0 === undefined) { return; }
    var y = el.layout.yaxis && el.layout.yaxis.autorange === false ? el.layout.yaxis.range.slice() : null;
    zoom[sig(chart)] = { x: [x0, x1], y: y };
    fetchRange(cid, el, x0, x1);
  }

  // the caption under a chart: how many points it shows (restored when the zoom is undone)
  function points(cid, node) {
    var box = document.querySelector("#fig-" + cid + " .rlv-points");
    if (!box) { return; }
    if (!box.__rlvFirst) { box.__rlvFirst = Array.prototype.slice.call(box.childNodes); }
    box.replaceChildren.apply(box, node ? [node] : box.__rlvFirst);
  }

  function restore(cid, el) {
    var chart = data.charts[cid];
    el.__rlvZoomed = false;
    el.removeAttribute("data-range");
    points(cid, null);
    Plotly.restyle(el, { x: chart.traces.map(function (t) { return t.x; }),
      y: chart.traces.map(function (t) { return t.y; }) }, el.__rlvIndex);
  }

  function fetchRange(cid, el, x0, x1) {
    var chart = data.charts[cid];
    if (!api || chart.kind === "stack") { return; }
    var start = Math.floor(Math.min(x0, x1)), end = Math.ceil(Math.max(x0, x1));
    var buckets = Math.max(50, Math.round((el.clientWidth || 600) / 2));
    var asked = (el.__rlvAsk || 0) + 1;
    el.__rlvAsk = asked;
    Promise.all(chart.traces.map(function (t) {
      var q = "?key=" + encodeURIComponent(t.key) + "&start=" + start + "&end=" + end + "&buckets=" + buckets;
      return fetch(api + "/series" + q, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); });
    })).then(function (got) {
      if (el.__rlvAsk !== asked) { return; }  // a later zoom has been asked for
      el.__rlvZoomed = true;
      el.setAttribute("data-range", start + "-" + end);
      var n = got.reduce(function (a, s) { return a + s.x.length; }, 0);
      points(cid, both(n + " points of steps " + start + "–" + end + " (fetched for this zoom)",
        "第 " + start + "–" + end + " 步的 " + n + " 个点（为此缩放获取）"));
      Plotly.restyle(el, { x: got.map(function (s) { return s.x; }), y: got.map(function (s) { return s.y; }) },
        el.__rlvIndex);
    }).catch(function () { /* the downsampled curve stays: zooming still works on it */ });
  }

  function draw(cid) {
    if (drawn[cid]) { return; }
    var el = document.getElementById(cid);
    var chart = data.charts[cid];
    if (!el || !chart) { return; }
    drawn[cid] = true;
    var tr = traces(chart);
    var layout = layoutOf(chart);
    el.__rlvIndex = tr.index;
    Plotly.newPlot(el, tr.data, layout, { responsive: true, displaylogo: false }).then(function () {
      el.on("plotly_relayout", function (ev) { onRelayout(cid, el, ev); });
      var z = zoom[sig(chart)];
      if (z) { fetchRange(cid, el, z.x[0], z.x[1]); }
    });
  }

  function drawAll() { Object.keys(data.charts).forEach(draw); }

  function lazy() {
    var nodes = document.querySelectorAll(".rlv-chart[data-chart]");
    if (!("IntersectionObserver" in window)) { drawAll(); return; }
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { draw(e.target.getAttribute("data-chart")); io.unobserve(e.target); }
      });
    }, { rootMargin: "300px 0px" });
    nodes.forEach(function (n) { io.observe(n); });
  }
