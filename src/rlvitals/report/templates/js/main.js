// Start: the language buttons (once, a live update runs the script again), charts, rollouts.
  function state() {
    var s = rollouts.state();
    return { search: view.search, smooth: view.smooth, axis: view.axis, x: view.x, log: view.log, run: s.run, step: s.step,
      browser: s.browser };
  }

  // once per button: a live update runs this script again, and the newest copy (window.rlvReport) is the
  // one whose charts are on the page
  document.querySelectorAll("[data-set-lang]").forEach(function (b) {
    if (b.__rlvLang) { return; }
    b.__rlvLang = true;
    b.addEventListener("click", function () { window.rlvReport.setLang(b.getAttribute("data-set-lang")); });
  });
  if (!window.__rlvPrint) {  // once: whichever copy of the script is newest draws what is left
    window.__rlvPrint = true;
    window.addEventListener("beforeprint", function () { window.rlvReport.drawAll(); });
  }
  rollouts.start();
  controls();
  lazy();
  window.rlvReport = { draw: draw, drawAll: drawAll, setLang: setLang, showStep: rollouts.show, drawn: drawn,
    state: state, search: search, smooth: setSmooth, axis: setAxis, zoom: function (x) { zoomTo(x, null); },
    view: view };
