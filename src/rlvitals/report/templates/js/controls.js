// The toolbar over the charts: find a metric (charts whose keys or names do not match are hidden, and a
// section left without one says so), smoothing, the x axis, undoing the zoom, and each chart's log scale.
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
    view.axis = a === "time" || a === "wall" ? a : "step";
    var pick = document.getElementById("rlv-xaxis");
    if (pick && pick.value !== view.axis) { pick.value = view.axis; }
    view.x = null;  // a range of steps is no range of hours, nor of dates
    Object.keys(drawn).forEach(function (cid) {
      var node = chartEl(cid);
      if (node && node.__rlvFetched) { node.__rlvFetched = null; node.removeAttribute("data-range"); points(cid, null); }
    });
    redrawAll();
  }
