// The page data, the reader's kept state across a live update, and the small helpers every part uses:
// the language, words, and nodes built with textContent only (text from logs is never parsed as HTML).
  var data = JSON.parse(document.getElementById("rlv-data").textContent);
  var COLOR = { fail: "#c62828", warn: "#e67e00", note: "#1565c0" };
  var POINTS_SHOWN = 8;  // steps of point events written out before "… N more" (as the terminal does)
  var WORDS = { step: ["step", "步"], hours: ["elapsed time (h)", "已用时间（小时）"],
    wall: ["wall-clock time (UTC)", "实际时间（UTC）"], tokens: ["tokens trained on", "已训练 token 数"] };
  // a run's colour when a page compares runs: its lines and its findings' markers
  var RUN_COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  var keep = window.rlvKeep || {};
  window.rlvKeep = null;
  var drawn = {};
  // how the reader looks at the charts, kept across a live update: smoothing (EMA weight), the x axis
  // (steps, elapsed hours or wall-clock time), the x range every chart shares (null: the whole run), and log-scaled charts
  var view = { smooth: keep.smooth || 0, axis: keep.axis || "step", x: keep.x || null, log: keep.log || {},
    search: keep.search || "" };
  var live = document.getElementById("rlv-live");
  var api = live && live.getAttribute("data-run") ? "/api/runs/" + live.getAttribute("data-run") : null;

  function lang() { return document.documentElement.getAttribute("data-lang") === "zh" ? 1 : 0; }
  function word(name) { return WORDS[name][lang()]; }
  function clean(text) { return String(text).replace(/[<>&]/g, ""); }  // Plotly labels accept a little markup

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

