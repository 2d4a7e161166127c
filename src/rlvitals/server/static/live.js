// rlvitals serve: keeps a page current while its logs grow. It polls /api/events; when a run it shows
// has a newer version it fetches the page again and swaps <main> in (same templates as the first
// load), then runs the report script again so the charts are drawn from the new data. Text from the
// server is set with textContent; fetched HTML is parsed by DOMParser, which runs no script.
(function () {
  "use strict";
  var INTERVAL = 1000;
  var live = document.getElementById("rlv-live");
  if (!live) { return; }
  var mine = live.getAttribute("data-run");
  var version = Number(live.getAttribute("data-version") || "0");
  var known = {};
  var errors = {};  // what the run list says each run's newest reading failed on ("" for none)
  var seq = 0;
  var reportScript = null;

  document.querySelectorAll("tr[data-run]").forEach(function (tr) {
    known[tr.getAttribute("data-run")] = Number(tr.getAttribute("data-version"));
    var cell = tr.querySelector("[data-error]");
    errors[tr.getAttribute("data-run")] = (cell && cell.getAttribute("data-error")) || "";
  });

  function span(cls, text) {
    var s = document.createElement("span");
    s.className = cls;
    s.textContent = text;
    if (cls === "l-zh") { s.setAttribute("lang", "zh"); }
    return s;
  }

  function note(en, zh, offline) {
    var n = document.getElementById("rlv-live-note");
    if (n) { n.replaceChildren(span("l-en", en), span("l-zh", zh)); }
    live.classList.toggle("rlv-offline", !!offline);
  }

  // the language switch of a page without the report's script (the run list): the same switch, and the
  // same cookie, which the server reads to render the next page in the chosen language
  function setLang(l) {
    document.documentElement.setAttribute("data-lang", l);
    document.documentElement.setAttribute("lang", l);
    document.querySelectorAll("[data-set-lang]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-set-lang") === l ? "true" : "false");
    });
    document.cookie = "rlvitals_lang=" + l + "; path=/; max-age=31536000; SameSite=Strict";
  }

  if (!window.rlvReport) {
    document.querySelectorAll("[data-set-lang]").forEach(function (b) {
      b.addEventListener("click", function () { setLang(b.getAttribute("data-set-lang")); });
    });
  }

  function setStatus(r) {
    var step = document.getElementById("rlv-live-step");
    if (step) { step.textContent = String(r.last_step); }
    var v = document.getElementById("rlv-live-version");
    if (v) { v.textContent = String(r.version); }
    var box = document.getElementById("rlv-live-verdict");
    var badge = box && box.querySelector(".rlv-status");
    if (badge) {
      badge.className = "rlv-status s-" + r.verdict;
      badge.querySelectorAll("span").forEach(function (s) { s.textContent = String(r.verdict).toUpperCase(); });
    }
    live.setAttribute("data-version", String(r.version));
  }

  // a run whose newest reading failed (its log deleted, emptied, rewritten) keeps its last good reading:
  // the bar says why it is stale, and stops saying it once a reading succeeds again
  function setStale(r) {
    var box = document.getElementById("rlv-live-stale");
    if (!box) { return; }
    box.hidden = !r.error;
    var en = box.querySelector("code .l-en"), zh = box.querySelector("code .l-zh");
    if (en) { en.textContent = r.error || ""; }
    if (zh) { zh.textContent = r.error_zh || r.error || ""; }
  }

  // the reader's zoom, rollout step and rollout browser, handed to the fresh copy of the report script (it
  // reads window.rlvKeep once): asked before <main> is swapped, while the page is the one the reader set.
  // A copy that has not run yet (a second update came first) has not taken it: that is still the one to hand on
  function keepState() {
    if (window.rlvKeep) { return; }
    window.rlvKeep = window.rlvReport && window.rlvReport.state ? window.rlvReport.state() : null;
  }

  function rerunReport() {
    // the report script reads the page data once; a fresh copy draws the swapped-in charts
    if (reportScript) { reportScript.remove(); }
    reportScript = document.createElement("script");
    reportScript.src = "/static/report.js";
    document.body.appendChild(reportScript);
  }

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var main = doc.querySelector("main");
    var old = document.querySelector("main");
    if (!main || !old) { return; }
    var open = {};
    old.querySelectorAll("details[open]").forEach(function (d, i) { open[d.id || ("i" + i)] = true; });
    var y = window.scrollY;
    var data = doc.getElementById("rlv-data");
    var here = document.getElementById("rlv-data");
    if (data && here) { keepState(); }
    old.replaceWith(document.adoptNode(main));
    main.querySelectorAll("details").forEach(function (d, i) { if (open[d.id || ("i" + i)]) { d.open = true; } });
    if (data && here) {
      here.textContent = data.textContent;
      rerunReport();
    }
    window.scrollTo(0, y);
  }

  function reload() {
    // with the query: the run list keeps the order it was opened in (?sort=name)
    return fetch(window.location.pathname + window.location.search,
      { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(swap);
  }

  function handle(ev) {
    if (ev.seq < seq) { seq = 0; return null; }  // the server restarted: ask for every run again
    if (mine && ev.moved && ev.moved[mine]) {  // read with its training folder now: that run's page
      window.location.replace("/runs/" + encodeURIComponent(ev.moved[mine]));
      return null;
    }
    seq = ev.seq;
    var changed = false;
    ev.runs.forEach(function (r) {
      if (mine) {
        if (r.id === mine) { setStale(r); }
        if (r.id === mine && r.status === "ready" && r.version > version) {
          if (live.hasAttribute("data-loading")) { window.location.reload(); return; }
          version = r.version;
          setStatus(r);
          changed = true;
        }
      } else if (known[r.id] !== r.version || (errors[r.id] || "") !== (r.error || "")) {
        known[r.id] = r.version;
        errors[r.id] = r.error || "";
        changed = true;
      }
    });
    return changed ? reload() : null;
  }

  function poll() {
    fetch("/api/events?after=" + seq, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(handle)
      .then(function () {
        var now = new Date();
        note("updated " + now.toLocaleTimeString(), "更新于 " + now.toLocaleTimeString("zh-CN"), false);
      })
      .catch(function (e) {
        note("cannot reach the server (" + e.message + "); retrying", "无法连接服务器（" + e.message + "），正在重试",
          true);
      })
      .then(function () { window.setTimeout(poll, INTERVAL); });
  }

  window.rlvLive = { version: function () { return version; }, seq: function () { return seq; } };
  poll();
})();
