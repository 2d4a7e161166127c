// Switching the language without a reload: the page's words by CSS, the words inside charts here.
  function setLang(l) {
    document.documentElement.setAttribute("data-lang", l);
    document.documentElement.setAttribute("lang", l === "zh" ? "zh" : "en");
    document.querySelectorAll("[data-set-lang]").forEach(function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-set-lang") === l ? "true" : "false");
    });
    // served: remembered for the server, which renders the next page (the run list too) in it
    if (live) { document.cookie = "rlvitals_lang=" + l + "; path=/; max-age=31536000; SameSite=Strict"; }
    // an <option> holds text only: its words in each language are its attributes
    document.querySelectorAll("option[data-en]").forEach(function (o) {
      o.textContent = o.getAttribute(l === "zh" ? "data-zh" : "data-en");
    });
    Object.keys(drawn).forEach(function (cid) {  // the words drawn inside the charts
      var el = document.getElementById(cid);
      var chart = data.charts[cid];
      if (!el || !el.layout) { return; }
      var change = { annotations: annotations(chart).concat(ceilingNote(chart)) };
      if (chart.traces.length === 1) { change["xaxis.title.text"] = axisTitle(); }
      Plotly.relayout(el, change);
      var m = markerTrace(chart);
      if (m) { Plotly.restyle(el, { text: [m.text] }, [el.data.length - 1]); }
      if (chart.kind === "forecast") {  // its lines' names are words too (one line per trace, in order)
        Plotly.restyle(el, { name: chart.traces.map(function (t) { return l === "zh" && t.name_zh ? t.name_zh : t.name; }) },
          chart.traces.map(function (t, i) { return i; }));
      }
    });
  }
