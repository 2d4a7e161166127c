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
  var seq = 0;
  var reportScript = null;

  document.querySelectorAll("tr[data-run]").forEach(function (tr) {
    known[tr.getAttribute("data-run")] = Number(tr.getAttribute("data-version"));
  });

  function note(text, offline) {
    var n = document.getElementById("rlv-live-note");
    if (n) { n.textContent = text; }
    live.classList.toggle("rlv-offline", !!offline);
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

  function rerunReport() {
    // the report script reads the page data once; a fresh copy draws the swapped-in charts
    // the reader's zoom and rollout step, handed to the fresh copy (it reads window.rlvKeep once)
    window.rlvKeep = window.rlvReport && window.rlvReport.state ? window.rlvReport.state() : null;
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
    old.replaceWith(document.adoptNode(main));
    main.querySelectorAll("details").forEach(function (d, i) { if (open[d.id || ("i" + i)]) { d.open = true; } });
    var data = doc.getElementById("rlv-data");
    var here = document.getElementById("rlv-data");
    if (data && here) {
      here.textContent = data.textContent;
      rerunReport();
    }
    window.scrollTo(0, y);
  }

  function reload() {
    return fetch(window.location.pathname, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(swap);
  }

  function handle(ev) {
    if (ev.seq < seq) { seq = 0; return null; }  // the server restarted: ask for every run again
    seq = ev.seq;
    var changed = false;
    ev.runs.forEach(function (r) {
      if (mine) {
        if (r.id === mine && r.status === "ready" && r.version > version) {
          if (live.hasAttribute("data-loading")) { window.location.reload(); return; }
          version = r.version;
          setStatus(r);
          changed = true;
        }
      } else if (known[r.id] !== r.version) {
        known[r.id] = r.version;
        changed = true;
      }
    });
    return changed ? reload() : null;
  }

  function poll() {
    fetch("/api/events?after=" + seq, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(handle)
      .then(function () { note("updated " + new Date().toLocaleTimeString(), false); })
      .catch(function (e) { note("cannot reach the server (" + e.message + "); retrying", true); })
      .then(function () { window.setTimeout(poll, INTERVAL); });
  }

  window.rlvLive = { version: function () { return version; }, seq: function () { return seq; } };
  poll();
})();
