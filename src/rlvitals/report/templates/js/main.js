// Start: the language buttons (once, a live update runs the script again), charts, rollouts.
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
