// The toolbar over the charts: find a metric (charts whose keys or names do not match are hidden, and a
// section left without one says so), smoothing, the x axis, undoing the zoom, and each chart's log scale;
// and the layers' folded curves, drawn to their width when opened.
  // a series of fewer than SMOOTH_MIN points is drawn as logged whatever the smoothing: an average over a
  // 6-point validation tail puts the curve where none of its points is, and the raw points are few enough to read
  var SMOOTH_MIN = 50;
  function smoothed(t) { return (t.n || 0) >= SMOOTH_MIN; }

  // a chart of more lines than fit under it (a validation source's best@k, maj@k, worst@k, std …) has its
  // legend beside it, where Plotly scrolls it
  var LEGEND_BELOW = 6;
  function sideLegend(layout) {
    layout.legend = { orientation: "v", x: 1.02, xanchor: "left", y: 1, yanchor: "top", font: { size: 10 } };
    layout.margin.r = 190;
    layout.margin.b = 40;
  }

  // a folded layer's charts were drawn (while idle) in a box of no size: opened, each is drawn to its width
  function opened(box) {
    if (!box || !box.open) { return; }
    box.querySelectorAll(".rlv-chart[data-chart]").forEach(function (node) {
      var cid = node.getAttribute("data-chart");
      if (!drawn[cid]) { draw(cid); } else if (node.layout) { Plotly.Plots.resize(node); }
    });
  }

  // what a link points at is shown: the folded layer holding it opens first (a finding's "on the chart")
  function reveal(hash) {
    var target = null;
    try { target = hash && hash.length > 1 ? document.getElementById(decodeURIComponent(hash.slice(1))) : null; } catch (e) { target = null; }
    for (var box = target && target.closest("details"); box; box = box.parentElement && box.parentElement.closest("details")) {
      if (!box.open) { box.open = true; opened(box); }
    }
  }

  function folds() {
    window.__rlvFolds = { opened: opened, reveal: reveal };  // the newest copy's: its charts are on the page
    if (window.__rlvFoldsBound) { return; }
    window.__rlvFoldsBound = true;
    // a <details> "toggle" does not bubble: heard while it goes down
    document.addEventListener("toggle", function (ev) {
      if (ev.target && ev.target.matches && ev.target.matches("details.rlv-more")) { window.__rlvFolds.opened(ev.target); }
    }, true);
    document.addEventListener("click", function (ev) {
      var a = ev.target && ev.target.closest ? ev.target.closest("a[href^='#']") : null;
      if (a) { window.__rlvFolds.reveal(a.getAttribute("href")); }
    }, true);
    window.addEventListener("hashchange", function () { window.__rlvFolds.reveal(location.hash); });
    // before the charts are fitted to the paper (a listener while going down runs first)
    window.addEventListener("beforeprint", function () {
      document.querySelectorAll("details.rlv-more:not([open])").forEach(function (d) { d.open = true; d.setAttribute("data-printed", "1"); });
    }, true);
    window.addEventListener("afterprint", function () {
      document.querySelectorAll("details.rlv-more[data-printed]").forEach(function (d) { d.open = false; d.removeAttribute("data-printed"); });
    });
  }
  function search(text) {
    view.search = String(text || "");
    var words = String(text || "").toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0, total = 0;
    document.querySelectorAll("figure.rlv-figure[data-search]").forEach(function (f) {
      var hay = f.getAttribute("data-search");
      var hit = words.every(function (w) { return hay.indexOf(w) >= 0; });
      f.hidden = !hit;
      total += 1;
      if (hit) { shown += 1; }
    });
    if (words.length) {  // a match in a folded layer is shown: its layer opens
      document.querySelectorAll("details.rlv-more:not([open])").forEach(function (d) {
        if (d.querySelector("figure.rlv-figure[data-search]:not([hidden])")) { d.open = true; }
      });
    }
    document.querySelectorAll(".rlv-grid").forEach(function (g) {
      var any = Array.prototype.some.call(g.querySelectorAll("figure.rlv-figure"), function (f) { return !f.hidden; });
      var note = g.nextElementSibling && g.nextElementSibling.classList.contains("rlv-no-match") ? g.nextElementSibling : null;
      if (!any && words.length && !note) {
        note = el("p", "rlv-dim rlv-no-match");
        note.appendChild(both("No chart here matches.", "这里没有匹配的图表。"));
        g.parentNode.insertBefore(note, g.nextSibling);
      } else if ((any || !words.length) && note) { note.remove(); }
    });
    var count = document.getElementById("rlv-metric-count");
    if (count) {
      count.replaceChildren();
      if (words.length) { count.appendChild(both(shown + " of " + total + " charts", total + " 个图表中的 " + shown + " 个")); }
      count.setAttribute("data-shown", shown + "/" + total);
    }
    // a chart revealed by the search is drawn (the observer saw it hidden)
    Object.keys(data.charts).forEach(function (cid) {
      var f = document.getElementById("fig-" + cid);
      if (f && !f.hidden && !drawn[cid] && inView(f)) { draw(cid); }
    });
  }

  function toggleLog(button) {
    var cid = button.getAttribute("data-log");
    view.log[cid] = !view.log[cid];
    if (!view.log[cid]) { delete view.log[cid]; }
    button.setAttribute("aria-pressed", view.log[cid] ? "true" : "false");
    redraw(cid);
  }

  function controls() {
    folds();
    if (location.hash) { reveal(location.hash); }
    var box = document.getElementById("rlv-metric-search");
    if (box && !box.__rlvBound) {
      box.__rlvBound = true;
      box.addEventListener("input", function () { window.rlvReport.search(box.value); });
    }
    if (box && view.search) { box.value = view.search; search(view.search); }
    var smooth = document.getElementById("rlv-smooth");
    var shown = document.getElementById("rlv-smooth-value");
    if (smooth) {
      smooth.value = String(view.smooth);
      smooth.title = "A series of fewer than " + SMOOTH_MIN + " points is drawn as logged · 少于 " + SMOOTH_MIN +
        " 个点的序列不做平滑，按记录的值画出";
      if (shown) { shown.textContent = String(view.smooth); }
      if (!smooth.__rlvBound) {
        smooth.__rlvBound = true;
        smooth.addEventListener("input", function () { window.rlvReport.smooth(Number(smooth.value)); });
      }
    }
    var axis = document.getElementById("rlv-xaxis");
    if (axis) {
      axis.value = view.axis;
      if (!axis.__rlvBound) {
        axis.__rlvBound = true;
        axis.addEventListener("change", function () { window.rlvReport.axis(axis.value); });
      }
    }
    var reset = document.getElementById("rlv-reset-zoom");
    if (reset && !reset.__rlvBound) {
      reset.__rlvBound = true;
      reset.addEventListener("click", function () { window.rlvReport.zoom(null); });
    }
    // the buttons are inside <main>, which a live update replaces: bind the new ones every time
    document.querySelectorAll("button.rlv-log[data-log]").forEach(function (b) {
      b.setAttribute("aria-pressed", view.log[b.getAttribute("data-log")] ? "true" : "false");
      b.addEventListener("click", function () { toggleLog(b); });
    });
  }

  function setSmooth(w) {
    view.smooth = Math.max(0, Math.min(0.99, Number(w) || 0));
    var shown = document.getElementById("rlv-smooth-value");
    if (shown) { shown.textContent = String(view.smooth); }
    var slider = document.getElementById("rlv-smooth");
    if (slider && Number(slider.value) !== view.smooth) { slider.value = String(view.smooth); }
    redrawAll();
  }

  function setAxis(a) {
    view.axis = a === "time" || a === "wall" || a === "tokens" ? a : "step";
    var pick = document.getElementById("rlv-xaxis");
    if (pick && pick.value !== view.axis) { pick.value = view.axis; }
    view.x = null;  // a range of steps is no range of hours, nor of dates, nor of tokens
    Object.keys(drawn).forEach(function (cid) {
      var node = chartEl(cid);
      if (node && node.__rlvFetched) { node.__rlvFetched = null; node.removeAttribute("data-range"); points(cid, null); }
    });
    redrawAll();
  }
