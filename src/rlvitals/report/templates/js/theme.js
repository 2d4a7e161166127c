// The colour theme: light, dark, or the system's (prefers-color-scheme), the reader's choice remembered
// in localStorage. It runs in <head>, before the first paint, so a page never flashes the other theme;
// html[data-theme] holds the theme in force, html[data-theme-choice] the choice, and a change is told
// to the charts by the "rlv-theme" event on document (charts.js lays them out again in its colours).
(function () {
  "use strict";
  if (window.rlvTheme) { return; }  // the run page's live update runs its scripts again, not this one
  var KEY = "rlvitals-theme";
  var root = document.documentElement;
  var system = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  // storage can be refused (a browser's privacy setting): the choice then lasts as long as the page
  function stored() {
    try {
      var v = window.localStorage.getItem(KEY);
      return v === "light" || v === "dark" ? v : "system";
    } catch (e) { return "system"; }
  }
  function store(choice) {
    try {
      if (choice === "system") { window.localStorage.removeItem(KEY); } else { window.localStorage.setItem(KEY, choice); }
    } catch (e) { /* kept on the page only */ }
  }

  var choice = stored();
  function theme() { return choice === "system" ? (system && system.matches ? "dark" : "light") : choice; }

  function mark() {
    document.querySelectorAll("[data-set-theme]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-set-theme") === choice ? "true" : "false");
    });
  }

  function apply() {
    var before = root.getAttribute("data-theme");
    root.setAttribute("data-theme", theme());
    root.setAttribute("data-theme-choice", choice);
    mark();
    if (before && before !== theme()) {
      document.dispatchEvent(new CustomEvent("rlv-theme", { detail: { theme: theme() } }));
    }
  }

  function set(c) {
    choice = c === "light" || c === "dark" ? c : "system";
    store(choice);
    apply();
  }

  apply();
  if (system) {
    var follow = function () { if (choice === "system") { apply(); } };
    if (system.addEventListener) { system.addEventListener("change", follow); } else { system.addListener(follow); }
  }
  // another tab of the same page set it
  window.addEventListener("storage", function (e) { if (e.key === KEY || e.key === null) { choice = stored(); apply(); } });
  // one listener for every switch on the page, the ones a live update puts there too
  document.addEventListener("click", function (e) {
    var b = e.target && e.target.closest ? e.target.closest("[data-set-theme]") : null;
    if (b) { set(b.getAttribute("data-set-theme")); }
  });
  document.addEventListener("DOMContentLoaded", mark);
  window.rlvTheme = { set: set, theme: theme, choice: function () { return choice; } };
})();
