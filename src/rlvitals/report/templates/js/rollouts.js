// The rollout browser: the groups of one step, fetched from the server when served.
  function groupNode(g) {
    var d = el("details", "rlv-group");
    d.setAttribute("data-group", g.group);
    var s = el("summary");
    s.appendChild(el("b", null, g.group));
    s.appendChild(el("span", "rlv-dim", "  n=" + g.n + "  mean=" + num(g.mean) + "  std=" + num(g.std)));
    d.appendChild(s);
    if (g.prompt !== null) { d.appendChild(el("pre", "rlv-text rlv-prompt", g.prompt)); }
    var table = el("table", "rlv-rollouts");
    var head = el("tr");
    [["#", "#"], ["score", "得分"], ["correct", "正确"], ["length", "长度"], ["answer", "答案"], ["response", "回答"]]
      .forEach(function (h) { var th = el("th"); th.appendChild(both(h[0], h[1])); head.appendChild(th); });
    table.appendChild(head);
    g.rollouts.forEach(function (r) {
      var tr = el("tr");
      [r.sample, num(r.score), r.correct === null || r.correct === undefined ? "" : (r.correct ? "✓" : "✗"),
        num(r.length), r.answer]
        .forEach(function (v) { tr.appendChild(el("td", null, v)); });
      var td = el("td");
      td.appendChild(el("pre", "rlv-text rlv-response", r.response));
      tr.appendChild(td);
      table.appendChild(tr);
    });
    d.appendChild(table);
    return d;
  }

  var rollouts = (function () {
    var info = data.rollouts;
    var current = { run: null, step: null };
    var asked = 0;

    function runInfo(rid) {
      var found = null;
      (info ? info.runs : []).forEach(function (r) { if (r.run === rid) { found = r; } });
      return found;
    }

    function shown(n, total) {
      var box = document.getElementById("rlv-shown");
      if (!box) { return; }
      box.replaceChildren();
      box.setAttribute("data-shown", n + "/" + total);
      box.appendChild(both(n + " of " + total + " groups shown" + (n < total ? " (those whose rewards stray " +
        "furthest from the step's mean)" : ""), "显示 " + n + " / " + total + " 个组" + (n < total ?
        "（奖励偏离该步均值最远的组）" : "")));
    }

    function render(groups, total) {
      var box = document.getElementById("rlv-groups");
      box.replaceChildren();
      groups.forEach(function (g, i) {
        var node = groupNode(g);
        if (i === 0) { node.open = true; }
        box.appendChild(node);
      });
      shown(groups.length, total);
    }

    function fill(rid) {
      var select = document.getElementById("rlv-step");
      var r = runInfo(rid);
      select.replaceChildren();
      if (!r) { return; }
      (api ? r.available : r.steps).forEach(function (s) {
        var o = el("option", null, s);
        o.value = String(s);
        select.appendChild(o);
      });
      var note = document.getElementById("rlv-steps-note");
      if (note) {
        note.replaceChildren();
        if (api) {
          note.appendChild(both("Every step with rollouts can be browsed (" + r.available.length + " steps).",
            "每个有 rollout 的步都可以浏览（共 " + r.available.length + " 步）。"));
        } else if (r.steps.length < r.available.length) {
          note.appendChild(both("This file holds the texts of " + r.steps.length + " of the " + r.available.length +
            " steps with rollouts: the onset steps of findings and steps spread over the run. `rlvitals serve` " +
            "browses every step.", "本文件包含 " + r.available.length + " 个有 rollout 的步中 " + r.steps.length +
            " 步的文本：各发现的起始步和均匀分布的若干步。`rlvitals serve` 可以浏览每一步。"));
        }
      }
    }

    function show(step, rid) {
      var select = document.getElementById("rlv-step");
      if (!select || !info || !info.runs.length) { return; }
      rid = rid || current.run || info.runs[0].run;
      if (rid !== current.run) {
        current.run = rid;
        var pick = document.getElementById("rlv-run");
        if (pick) { pick.value = rid; }
        fill(rid);
      }
      current.step = Number(step);
      select.value = String(step);
      var r = runInfo(rid);
      var groups = info.groups.filter(function (g) { return g.step === Number(step) && (!g.run || g.run === rid); });
      var mine = ++asked;
      if (groups.length || !api) {
        render(groups, r && r.totals[String(step)] !== undefined ? r.totals[String(step)] : groups.length);
        return Promise.resolve();
      }
      return fetch(api + "/rollouts?step=" + encodeURIComponent(step), { credentials: "same-origin" })
        .then(function (resp) { if (!resp.ok) { throw new Error("HTTP " + resp.status); } return resp.json(); })
        .then(function (j) { if (mine === asked) { render(j.groups, j.total); } })
        .catch(function (e) {
          if (mine !== asked) { return; }
          var box = document.getElementById("rlv-groups");
          box.replaceChildren(el("p", "rlv-bad", "step " + step + ": " + e.message));
        });
    }

    function start() {
      var select = document.getElementById("rlv-step");
      if (!select || !info || !info.runs.length) { return; }
      select.addEventListener("change", function () { show(select.value); });
      var pick = document.getElementById("rlv-run");
      if (pick) {
        pick.addEventListener("change", function () {
          var r = runInfo(pick.value);
          show(r && r.steps.length ? r.steps[0] : 0, pick.value);
        });
      }
      var r0 = runInfo(keep.run) || info.runs[0];
      var list = api ? r0.available : r0.steps;
      var first = keep.step !== null && keep.step !== undefined && list.indexOf(keep.step) >= 0 ? keep.step : list[0];
      if (list.length) { show(first, r0.run); }
      document.querySelectorAll("a.rlv-goto-rollouts[data-step]").forEach(function (a) {
        a.addEventListener("click", function (ev) {
          ev.preventDefault();
          show(a.getAttribute("data-step"), a.getAttribute("data-run"));
          document.getElementById("rlv-browser").scrollIntoView();
        });
      });
    }

    return { start: start, show: show, state: function () { return current; } };
  })();

