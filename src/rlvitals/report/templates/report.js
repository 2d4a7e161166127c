// rlvitals report: draws the charts of the embedded page data with Plotly when they scroll into view,
// switches the language without a reload, and lists rollout groups. Text from logs and rollouts is
// put into the page with textContent only, never parsed as HTML. Served by `rlvitals serve` (a live
// bar names the run) the same script also asks the server's API: a zoomed chart fetches its step
// range at full resolution, and the rollout browser fetches any step. A live update runs this script
// again over the new data; window.rlvKeep then carries the reader's zoom and rollout step across.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rlv-data").textContent);
  var COLOR = { fail: "#c62828", warn: "#e67e00", note: "#1565c0" };
  var POINTS_SHOWN = 8;  // steps of point events written out before "… N more" (as the terminal does)
  var WORDS = { step: ["step", "步"] };
  var keep = window.rlvKeep || {};
  window.rlvKeep = null;
  var drawn = {};
  var zoom = keep.zoom || {};  // chart signature -> {x: [a, b], y: [c, d] | null}
  var live = document.getElementById("rlv-live");
  var api = live && live.getAttribute("data-run") ? "/api/runs/" + live.getAttribute("data-run") : null;

  function lang() { return document.documentElement.getAttribute("data-lang") === "zh" ? 1 : 0; }
  function word(name) { return WORDS[name][lang()]; }
  function clean(text) { return String(text).replace(/[<>&]/g, ""); }  // Plotly labels accept a little markup
  function sig(chart) { return chart.kind + "|" + chart.keys.join(",") + "|" + (chart.title ? chart.title.en : ""); }

  // the steps of a finding's point events, the first `cap` of them: "95, 140, 210 … 2 more"
  function stepList(points, cap) {
    var zh = lang() === 1;
    var head = points.slice(0, cap).join(zh ? "、" : ", ");
    var more = points.length - cap;
    return more > 0 ? head + (zh ? "…（另 " + more + " 处）" : " … " + more + " more") : head;
  }

  function pointsOf(m) { return m.points && m.points.length ? m.points : null; }

  function stepWords(m) {
    var zh = lang() === 1;
    var pts = pointsOf(m);
    if (pts && pts.length > 1) {
      return zh ? "第 " + stepList(pts, POINTS_SHOWN) + " 步" : "at steps " + stepList(pts, POINTS_SHOWN);
    }
    if (pts) { return zh ? "第 " + pts[0] + " 步" : "at step " + pts[0]; }
    if (m.span && m.span[1] > m.span[0]) {
      return zh ? "自第 " + m.onset + " 步（" + m.span[0] + "–" + m.span[1] + "）" : "since step " + m.onset +
        " (steps " + m.span[0] + "–" + m.span[1] + ")";
    }
    return zh ? "第 " + m.onset + " 步" : "at step " + m.onset;
  }

  var RUNS = {};
  data.runs.forEach(function (r) { RUNS[r.id] = r.label; });

  // a marker's words: its finding's title, and whose finding it is when the page compares runs
  function markerTitle(m) {
    var title = m.title ? (lang() === 1 ? m.title.zh : m.title.en) : m.check;
    return data.runs.length > 1 && RUNS[m.run] ? RUNS[m.run] + ": " + title : title;
  }

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

  function setLang(l) {
    document.documentElement.setAttribute("data-lang", l);
    document.documentElement.setAttribute("lang", l === "zh" ? "zh" : "en");
    document.querySelectorAll("[data-set-lang]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-set-lang") === l ? "true" : "false");
    });
    // served: remembered for the server, which renders the next page (the run list too) in it
    if (live) { document.cookie = "rlvitals_lang=" + l + "; path=/; max-age=31536000; SameSite=Strict"; }
    Object.keys(drawn).forEach(function (cid) {  // the words drawn inside the charts
      var el = document.getElementById(cid);
      var chart = data.charts[cid];
      if (!el || !el.layout) { return; }
      var change = { annotations: annotations(chart) };
      if (chart.traces.length === 1) { change["xaxis.title.text"] = word("step"); }
      Plotly.relayout(el, change);
      var m = markerTrace(chart);
      if (m) { Plotly.restyle(el, { text: [m.text] }, [el.data.length - 1]); }
    });
  }

  // --- rollouts: everything below builds nodes and sets textContent; no HTML string is ever parsed
  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) { n.className = cls; }
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    return n;
  }

  function both(en, zh) {
    var s = el("span");
    s.appendChild(el("span", "l-en", en));
    var z = el("span", "l-zh", zh);
    z.setAttribute("lang", "zh");
    s.appendChild(z);
    return s;
  }

  function num(v) { return typeof v === "number" ? (Math.round(v * 1000) / 1000).toString() : (v === null ? "" : String(v)); }

  function groupNode(g) {
    var d = el("details", "rlv-group");
    d.setAttribute("data-group", g.group);
    var s = el("summary");
    s.appendChild(el("b", null, g.group));
    s.appendChild(el("span", "rlv-dim", "  n=" + g.n + "  mean=" + num(g.mean) + "  std=" + num(g.std)));
    d.appendChild(s);
    if (g.prompt !== null) { d.appendChild(el("pre", "rlv-text rlv-prompt", g.prompt)); }
    var table = el("table", "rlv-rollouts");
    var head = el("tr");
    [["#", "#"], ["score", "得分"], ["correct", "正确"], ["length", "长度"], ["answer", "答案"], ["response", "回答"]]
      .forEach(function (h) { var th = el("th"); th.appendChild(both(h[0], h[1])); head.appendChild(th); });
    table.appendChild(head);
    g.rollouts.forEach(function (r) {
      var tr = el("tr");
      [r.sample, num(r.score), r.correct === null || r.correct === undefined ? "" : (r.correct ? "✓" : "✗"),
        num(r.length), r.answer]
        .forEach(function (v) { tr.appendChild(el("td", null, v)); });
      var td = el("td");
      td.appendChild(el("pre", "rlv-text rlv-response", r.response));
      tr.appendChild(td);
      table.appendChild(tr);
    });
    d.appendChild(table);
    return d;
  }

  var rollouts = (function () {
    var info = data.rollouts;
    var current = { run: null, step: null };
    var asked = 0;

    function runInfo(rid) {
      var found = null;
      (info ? info.runs : []).forEach(function (r) { if (r.run === rid) { found = r; } });
      return found;
    }

    function shown(n, total) {
      var box = document.getElementById("rlv-shown");
      if (!box) { return; }
      box.replaceChildren();
      box.setAttribute("data-shown", n + "/" + total);
      box.appendChild(both(n + " of " + total + " groups shown" + (n < total ? " (those whose rewards stray " +
        "furthest from the step's mean)" : ""), "显示 " + n + " / " + total + " 个组" + (n < total ?
        "（奖励偏离该步均值最远的组）" : "")));
    }

    function render(groups, total) {
      var box = document.getElementById("rlv-groups");
      box.replaceChildren();
      groups.forEach(function (g, i) {
        var node = groupNode(g);
        if (i === 0) { node.open = true; }
        box.appendChild(node);
      });
      shown(groups.length, total);
    }

    function fill(rid) {
      var select = document.getElementById("rlv-step");
      var r = runInfo(rid);
      select.replaceChildren();
      if (!r) { return; }
      (api ? r.available : r.steps).forEach(function (s) {
        var o = el("option", null, s);
        o.value = String(s);
        select.appendChild(o);
      });
      var note = document.getElementById("rlv-steps-note");
      if (note) {
        note.replaceChildren();
        if (api) {
          note.appendChild(both("Every step with rollouts can be browsed (" + r.available.length + " steps).",
            "每个有 rollout 的步都可以浏览（共 " + r.available.length + " 步）。"));
        } else if (r.steps.length < r.available.length) {
          note.appendChild(both("This file holds the texts of " + r.steps.length + " of the " + r.available.length +
            " steps with rollouts: the onset steps of findings and steps spread over the run. `rlvitals serve` " +
            "browses every step.", "本文件包含 " + r.available.length + " 个有 rollout 的步中 " + r.steps.length +
            " 步的文本：各发现的起始步和均匀分布的若干步。`rlvitals serve` 可以浏览每一步。"));
        }
      }
    }

    function show(step, rid) {
      var select = document.getElementById("rlv-step");
      if (!select || !info || !info.runs.length) { return; }
      rid = rid || current.run || info.runs[0].run;
      if (rid !== current.run) {
        current.run = rid;
        var pick = document.getElementById("rlv-run");
        if (pick) { pick.value = rid; }
        fill(rid);
      }
      current.step = Number(step);
      select.value = String(step);
      var r = runInfo(rid);
      var groups = info.groups.filter(function (g) { return g.step === Number(step) && (!g.run || g.run === rid); });
      var mine = ++asked;
      if (groups.length || !api) {
        render(groups, r && r.totals[String(step)] !== undefined ? r.totals[String(step)] : groups.length);
        return Promise.resolve();
      }
      return fetch(api + "/rollouts?step=" + encodeURIComponent(step), { credentials: "same-origin" })
        .then(function (resp) { if (!resp.ok) { throw new Error("HTTP " + resp.status); } return resp.json(); })
        .then(function (j) { if (mine === asked) { render(j.groups, j.total); } })
        .catch(function (e) {
          if (mine !== asked) { return; }
          var box = document.getElementById("rlv-groups");
          box.replaceChildren(el("p", "rlv-bad", "step " + step + ": " + e.message));
        });
    }

    function start() {
      var select = document.getElementById("rlv-step");
      if (!select || !info || !info.runs.length) { return; }
      select.addEventListener("change", function () { show(select.value); });
      var pick = document.getElementById("rlv-run");
      if (pick) {
        pick.addEventListener("change", function () {
          var r = runInfo(pick.value);
          show(r && r.steps.length ? r.steps[0] : 0, pick.value);
        });
      }
      var r0 = runInfo(keep.run) || info.runs[0];
      var list = api ? r0.available : r0.steps;
      var first = keep.step !== null && keep.step !== undefined && list.indexOf(keep.step) >= 0 ? keep.step : list[0];
      if (list.length) { show(first, r0.run); }
      document.querySelectorAll("a.rlv-goto-rollouts[data-step]").forEach(function (a) {
        a.addEventListener("click", function (ev) {
          ev.preventDefault();
          show(a.getAttribute("data-step"), a.getAttribute("data-run"));
          document.getElementById("rlv-browser").scrollIntoView();
        });
      });
    }

    return { start: start, show: show, state: function () { return current; } };
  })();

  function state() {
    var s = rollouts.state();
    return { zoom: zoom, run: s.run, step: s.step };
  }

  // once per button: a live update runs this script again, and the newest copy (window.rlvReport) is the
  // one whose charts are on the page
  document.querySelectorAll("[data-set-lang]").forEach(function (b) {
    if (b.__rlvLang) { return; }
    b.__rlvLang = true;
    b.addEventListener("click", function () { window.rlvReport.setLang(b.getAttribute("data-set-lang")); });
  });
  window.addEventListener("beforeprint", drawAll);
  rollouts.start();
  lazy();
  window.rlvReport = { draw: draw, drawAll: drawAll, setLang: setLang, showStep: rollouts.show, drawn: drawn,
    state: state };
})();
