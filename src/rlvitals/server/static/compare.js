// rlvitals serve: comparing runs. On the run list: a filter over the runs (by name, verdict, algorithm,
// in place) and a tick per run, with a Compare button opening /compare?runs=ID,ID. On a comparison page:
// when one of its runs has a newer reading, the page is fetched again and its <main> swapped in (the same
// templates as the first load; the reader's zoom and open layers kept), then the report script runs again.
// Text is set with textContent only.
(function () {
  "use strict";
  var INTERVAL = 1000;

  function span(cls, text) {
    var s = document.createElement("span");
    s.className = cls;
    s.textContent = text;
    if (cls === "l-zh") { s.setAttribute("lang", "zh"); }
    return s;
  }
  function say(node, en, zh) { if (node) { node.replaceChildren(span("l-en", en), span("l-zh", zh)); } }

  // --- the run list: filter and picker. They sit outside <main>, which live.js swaps while the logs grow;
  // the ticks are kept here and put back on the fresh rows
  function picker() {
    var box = document.getElementById("rlv-picker");
    if (!box) { return; }
    var filter = document.getElementById("rlv-filter");
    var button = document.getElementById("rlv-compare");
    var picked = {};  // run id → true, in the order ticked

    function rows() { return Array.prototype.slice.call(document.querySelectorAll("main tr[data-run]")); }

    // a term matches the start of a word of the row (its name's parts, verdict, algorithm, framework): "ok" finds
    // the healthy runs, not "tokenkl"; a term with a separator in it ("kl-0.1") matches anywhere
    var SEP = /[\s\/_.\-@(),:]+/;
    function matches(text, words, term) {
      return SEP.test(term) ? text.indexOf(term) >= 0 : words.some(function (w) { return w.indexOf(term) === 0; });
    }

    function apply() {
      var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      var all = rows(), shown = 0;
      all.forEach(function (tr) {
        var cell = tr.querySelector("[data-search]");
        var text = (cell && cell.getAttribute("data-search")) || "";
        var words = text.split(SEP);
        var show = terms.every(function (t) { return matches(text, words, t); });
        tr.hidden = !show;
        var id = tr.getAttribute("data-run");
        document.querySelectorAll('main tr[data-headline-of="' + CSS.escape(id) + '"]').forEach(function (h) {
          h.hidden = !show;
        });
        var tick = tr.querySelector("input.rlv-pick");
        if (tick) { tick.checked = !!picked[id] && !tick.disabled; }
        if (show) { shown += 1; }
      });
      say(document.getElementById("rlv-filter-count"), terms.length ? shown + " of " + all.length + " shown" : "",
        terms.length ? "显示 " + shown + " / " + all.length : "");
      var ids = chosen();
      document.getElementById("rlv-picked").textContent = String(ids.length);
      button.disabled = ids.length < 2;
    }

    // the ticked runs still on the list, in its order
    function chosen() {
      return rows().map(function (tr) { return tr.getAttribute("data-run"); }).filter(function (id) {
        var tick = document.querySelector('main input.rlv-pick[value="' + CSS.escape(id) + '"]');
        return picked[id] && tick && !tick.disabled;
      });
    }

    filter.addEventListener("input", apply);
    document.addEventListener("change", function (ev) {
      var t = ev.target;
      if (!t || !t.classList || !t.classList.contains("rlv-pick")) { return; }
      if (t.checked) { picked[t.value] = true; } else { delete picked[t.value]; }
      apply();
    });
    button.addEventListener("click", function () {
      var ids = chosen();
      if (ids.length >= 2) { window.location.href = "/compare?runs=" + ids.map(encodeURIComponent).join(","); }
    });
    new MutationObserver(function (changes) {
      var swapped = changes.some(function (c) {
        return Array.prototype.some.call(c.addedNodes, function (n) { return n.tagName === "MAIN"; });
      });
      if (swapped) { apply(); }
    }).observe(document.body, { childList: true });
    apply();
  }

  // --- a comparison page: kept current while its runs' logs grow
  function follow() {
    var bar = document.getElementById("rlv-live");
    if (!bar || !bar.getAttribute("data-runs")) { return; }
    var ids = bar.getAttribute("data-runs").split(",");
    var versions = {};
    var given = (bar.getAttribute("data-versions") || "").split(",");
    ids.forEach(function (id, i) { versions[id] = Number(given[i] || "0"); });
    var seq = 0, script = null;

    function swap(html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var main = doc.querySelector("main"), old = document.querySelector("main");
      var data = doc.getElementById("rlv-data"), here = document.getElementById("rlv-data");
      if (!main || !old || !data || !here) { return; }
      // the reader's zoom (the fresh charts fetch its range from each run again) and open layers, as live.js keeps them
      if (!window.rlvKeep) { window.rlvKeep = window.rlvReport && window.rlvReport.state ? window.rlvReport.state() : null; }
      var open = {};
      old.querySelectorAll("details").forEach(function (d, i) { if (d.open) { open[d.id || ("i" + i)] = true; } });
      var y = window.scrollY;
      old.replaceWith(document.adoptNode(main));
      main.querySelectorAll("details").forEach(function (d, i) { if (open[d.id || ("i" + i)]) { d.open = true; } });
      here.textContent = data.textContent;
      if (script) { script.remove(); }
      script = document.createElement("script");
      script.src = "/static/report.js";
      document.body.appendChild(script);
      window.scrollTo(0, y);
    }

    function handle(ev) {
      if (ev.seq < seq) { seq = 0; return null; }  // the server restarted: ask for every run again
      seq = ev.seq;
      var newer = ev.runs.filter(function (r) {
        return versions.hasOwnProperty(r.id) && r.status === "ready" && r.version > versions[r.id];
      });
      if (!newer.length) { return null; }
      newer.forEach(function (r) { versions[r.id] = r.version; });
      return fetch(window.location.pathname + window.location.search,
        { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
        .then(swap);
    }

    function poll() {
      fetch("/api/events?after=" + seq, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
        .then(handle)
        .then(function () {
          var now = new Date();
          say(document.getElementById("rlv-live-note"), "updated " + now.toLocaleTimeString(),
            "更新于 " + now.toLocaleTimeString("zh-CN"));
          bar.classList.remove("rlv-offline");
        })
        .catch(function (e) {
          say(document.getElementById("rlv-live-note"), "cannot reach the server (" + e.message + "); retrying",
            "无法连接服务器（" + e.message + "），正在重试");
          bar.classList.add("rlv-offline");
        })
        .then(function () { window.setTimeout(poll, INTERVAL); });
    }
    window.rlvCompare = { versions: function () { return versions; } };
    poll();
  }

  picker();
  follow();
})();
