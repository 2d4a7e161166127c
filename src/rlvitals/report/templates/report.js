// rlvitals report: draws the charts of the embedded page data with Plotly when they scroll into view,
// switches the language without a reload, and lists rollout groups. Text from logs and rollouts is
// put into the page with textContent only, never parsed as HTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rlv-data").textContent);
  var COLOR = { fail: "#c62828", warn: "#e67e00" };
  var drawn = {};

  function shapes(chart) {
    var out = [];
    chart.markers.forEach(function (m) {
      var color = COLOR[m.status] || "#888";
      if (m.span && m.span[1] > m.span[0]) {
        out.push({ type: "rect", xref: "x", yref: "paper", x0: m.span[0], x1: m.span[1], y0: 0, y1: 1,
          fillcolor: color, opacity: 0.12, line: { width: 0 }, layer: "below", name: m.finding });
      }
      out.push({ type: "line", xref: "x", yref: "paper", x0: m.onset, x1: m.onset, y0: 0, y1: 1,
        line: { color: color, width: 2, dash: "dash" }, name: m.finding });
    });
    return out;
  }

  function traces(chart) {
    var out = [];
    chart.traces.forEach(function (t) {
      var tr = { type: "scatter", mode: t.x.length > 60 ? "lines" : "lines+markers", name: t.name, x: t.x, y: t.y,
        connectgaps: false, hovertemplate: "%{x}: %{y}<extra>" + t.key.replace(/[<>&]/g, "") + "</extra>" };
      if (chart.kind === "stack") {
        tr.stackgroup = "one";
        tr.groupnorm = "percent";
        tr.mode = "lines";
        tr.hovertemplate = "%{x}: %{y:.1f}%<extra>" + t.key.replace(/[<>&]/g, "") + "</extra>";
      }
      out.push(tr);
      if (t.bad.length) {
        out.push({ type: "scatter", mode: "markers", name: t.name + " (nan/inf)", yaxis: "y2",
          x: t.bad.map(function (b) { return b[0]; }), y: t.bad.map(function () { return 0.97; }),
          text: t.bad.map(function (b) { return b[1]; }), hovertemplate: "%{x}: %{text}<extra></extra>",
          marker: { symbol: "x", size: 9, color: COLOR.fail } });
      }
    });
    return out;
  }

  function draw(cid) {
    if (drawn[cid]) { return; }
    var el = document.getElementById(cid);
    var chart = data.charts[cid];
    if (!el || !chart) { return; }
    drawn[cid] = true;
    var tr = traces(chart);
    var layout = {
      margin: { l: 55, r: 12, t: 8, b: 32 }, height: 260, showlegend: chart.traces.length > 1,
      legend: { orientation: "h", y: -0.18, font: { size: 10 } }, xaxis: { title: { text: "step" } },
      yaxis: chart.kind === "stack" ? { ticksuffix: "%" } : {},
      yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true },
      shapes: shapes(chart), hovermode: "closest"
    };
    if (chart.traces.length > 1) { layout.height = 300; layout.margin.b = 70; layout.xaxis = {}; }
    Plotly.newPlot(el, tr, layout, { responsive: true, displaylogo: false });
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

  function setLang(lang) {
    document.documentElement.setAttribute("data-lang", lang);
    document.documentElement.setAttribute("lang", lang === "zh" ? "zh" : "en");
    document.querySelectorAll("[data-set-lang]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-set-lang") === lang ? "true" : "false");
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
      [r.sample, num(r.score), r.correct === null ? "" : String(r.correct), num(r.length), r.answer]
        .forEach(function (v) { tr.appendChild(el("td", null, v)); });
      var td = el("td");
      td.appendChild(el("pre", "rlv-text rlv-response", r.response));
      tr.appendChild(td);
      table.appendChild(tr);
    });
    d.appendChild(table);
    return d;
  }

  function showStep(step) {
    var box = document.getElementById("rlv-groups");
    var select = document.getElementById("rlv-step");
    if (!box || !data.rollouts) { return; }
    select.value = String(step);
    var groups = data.rollouts.groups.filter(function (g) { return g.step === Number(step); });
    box.replaceChildren();
    groups.forEach(function (g, i) {
      var node = groupNode(g);
      if (i === 0) { node.open = true; }
      box.appendChild(node);
    });
  }

  function rollouts() {
    var select = document.getElementById("rlv-step");
    if (!select || !data.rollouts) { return; }
    data.rollouts.steps.forEach(function (s) {
      var o = el("option", null, s);
      o.value = String(s);
      select.appendChild(o);
    });
    select.addEventListener("change", function () { showStep(select.value); });
    if (data.rollouts.steps.length) { showStep(data.rollouts.steps[0]); }
    document.querySelectorAll("a.rlv-goto-rollouts[data-step]").forEach(function (a) {
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        showStep(a.getAttribute("data-step"));
        document.getElementById("rlv-browser").scrollIntoView();
      });
    });
  }

  document.querySelectorAll("[data-set-lang]").forEach(function (b) {
    b.addEventListener("click", function () { setLang(b.getAttribute("data-set-lang")); });
  });
  window.addEventListener("beforeprint", drawAll);
  rollouts();
  lazy();
  window.rlvReport = { draw: draw, drawAll: drawAll, setLang: setLang, showStep: showStep, drawn: drawn };
})();
