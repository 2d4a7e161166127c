// The rollout browser: the groups of one step (fetched from the server when served), narrowed by
// filters and a text search, sorted, each rollout beside its ground truth when the dump has one.
  // a filter keeps a rollout when its test passes; the filters ticked combine (all must pass)
  var ROLLOUT_FILTERS = [
    { id: "correct", en: "correct", zh: "正确", known: function (r) { return typeof r.correct === "boolean"; },
      test: function (r) { return r.correct === true; } },
    { id: "wrong", en: "wrong", zh: "错误", known: function (r) { return typeof r.correct === "boolean"; },
      test: function (r) { return r.correct === false; } },
    { id: "truncated", en: "truncated (hit the length limit)", zh: "被截断（达到长度上限）",
      known: function (r) { return typeof r.truncated === "boolean"; }, test: function (r) { return r.truncated === true; } },
    { id: "zero", en: "zero-variance group (every rollout got the same reward)", zh: "零方差组（组内奖励全部相同）",
      known: function (r, g) { return typeof g.zero_variance === "boolean"; },
      test: function (r, g) { return g.zero_variance === true; } }
  ];
  function byNumber(get, sign) {  // numbers first (high first when sign is -1), the missing ones last
    return function (a, b) {
      var x = get(a), y = get(b);
      if (typeof x !== "number" || isNaN(x)) { return typeof y !== "number" || isNaN(y) ? 0 : 1; }
      if (typeof y !== "number" || isNaN(y)) { return -1; }
      return sign * (x - y);
    };
  }
  function meanLength(g) {
    var got = g.rollouts.filter(function (r) { return typeof r.length === "number"; });
    return got.length ? got.reduce(function (s, r) { return s + r.length; }, 0) / got.length : null;
  }
  function mean(g) { return g.mean; }
  function score(r) { return r.score; }
  function length(r) { return r.length; }
  // [value, English, Chinese, compare]; the first is the order the groups come in (and the rollouts')
  var GROUP_SORTS = [
    ["spread", "reward spread (furthest from the step's mean first)", "奖励偏离度（偏离该步均值最远的在前）", null],
    ["mean-desc", "mean reward, highest first", "平均奖励，从高到低", byNumber(mean, -1)],
    ["mean-asc", "mean reward, lowest first", "平均奖励，从低到高", byNumber(mean, 1)],
    ["length-desc", "mean length, longest first", "平均长度，从长到短", byNumber(meanLength, -1)],
    ["length-asc", "mean length, shortest first", "平均长度，从短到长", byNumber(meanLength, 1)]
  ];
  var ROLLOUT_SORTS = [
    ["sample", "sample #", "样本序号", null],
    ["score-desc", "score, highest first", "得分，从高到低", byNumber(score, -1)],
    ["score-asc", "score, lowest first", "得分，从低到高", byNumber(score, 1)],
    ["length-desc", "length, longest first", "长度，从长到短", byNumber(length, -1)],
    ["length-asc", "length, shortest first", "长度，从短到长", byNumber(length, 1)]
  ];

  // `text` as nodes, each case-insensitive match of `find` (a global RegExp, or null) in a <mark>
  function marked(text, find) {
    var frag = document.createDocumentFragment();
    if (text === null || text === undefined) { return frag; }
    text = String(text);
    var at = 0, m;
    if (find) {
      find.lastIndex = 0;
      while ((m = find.exec(text)) !== null) {
        if (!m[0].length) { find.lastIndex += 1; continue; }
        if (m.index > at) { frag.appendChild(document.createTextNode(text.slice(at, m.index))); }
        frag.appendChild(el("mark", "rlv-hit", m[0]));
        at = m.index + m[0].length;
      }
    }
    if (at < text.length) { frag.appendChild(document.createTextNode(text.slice(at))); }
    return frag;
  }

  function cellOf(tag, cls, text, find) {
    var n = el(tag, cls);
    n.appendChild(marked(text, find));
    return n;
  }

  function headRow(withTarget) {
    var head = el("tr");
    [["#", "#"], ["score", "得分"], ["correct", "正确"], ["length", "长度"], ["answer", "答案"]]
      .concat(withTarget ? [["expected", "参考答案"]] : []).concat([["response", "回答"]])
      .forEach(function (h) { var th = el("th"); th.appendChild(both(h[0], h[1])); head.appendChild(th); });
    return head;
  }

  function rolloutRow(r, withTarget, find) {
    var tr = el("tr");
    tr.setAttribute("data-sample", r.sample);
    [r.sample, num(r.score), r.correct === null || r.correct === undefined ? "" : (r.correct ? "✓" : "✗")]
      .forEach(function (v) { tr.appendChild(el("td", null, v)); });
    var len = el("td", "rlv-length", num(r.length));
    if (r.truncated === true) {
      len.appendChild(el("br"));
      len.appendChild(both("truncated", "被截断")).className = "rlv-cut";
    }
    tr.appendChild(len);
    tr.appendChild(cellOf("td", "rlv-answer", r.answer, find));
    if (withTarget) { tr.appendChild(cellOf("td", "rlv-target", r.target, find)); }
    var td = el("td");
    td.appendChild(cellOf("pre", "rlv-text rlv-response", r.response, find));
    tr.appendChild(td);
    return tr;
  }

  // one group: `rows` are the rollouts kept, in the order chosen
  function groupNode(g, rows, withTarget, find) {
    var d = el("details", "rlv-group");
    d.setAttribute("data-group", g.group);
    var s = el("summary");
    s.appendChild(el("b", null, g.group));
    s.appendChild(el("span", "rlv-dim", "  n=" + g.n + "  mean=" + num(g.mean) + "  std=" + num(g.std)));
    if (g.zero_variance === true) {
      s.appendChild(document.createTextNode("  "));
      s.appendChild(both("zero variance", "零方差")).className = "rlv-zero";
    }
    if (rows.length < g.rollouts.length) {
      s.appendChild(document.createTextNode("  "));
      s.appendChild(both(rows.length + " of " + g.rollouts.length + " rollouts match",
        g.rollouts.length + " 条中 " + rows.length + " 条符合")).className = "rlv-dim";
    }
    d.appendChild(s);
    if (g.prompt !== null && g.prompt !== undefined) { d.appendChild(cellOf("pre", "rlv-text rlv-prompt", g.prompt, find)); }
    var table = el("table", "rlv-rollouts");
    table.appendChild(headRow(withTarget));
    rows.forEach(function (r) { table.appendChild(rolloutRow(r, withTarget, find)); });
    d.appendChild(table);
    return d;
  }

  var rollouts = (function () {
    var info = data.rollouts;
    var current = { run: null, step: null };
    var loaded = { groups: [], total: 0 };
    var asked = 0;
    // the browser as the reader left it before a live update (filters, search, orders; the groups open
    // and the one at the top of the window, for the same run and step): applied to the first step shown
    var before = keep.browser || null;
    var built = null;  // the search box this copy built: while it is in the page, the page is this copy's
    var last = null;  // the browser's state when last asked, while the page was this copy's

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

    // what the reader chose: the ticked filters, the search (a RegExp, or null) and the two orders
    function choices() {
      var ticked = ROLLOUT_FILTERS.filter(function (f) {
        var box = document.getElementById("rlv-filter-" + f.id);
        return box && box.checked;
      });
      var q = document.getElementById("rlv-search");
      var text = q ? q.value : "";
      var pattern = text ? text.replace(/[.*+?^${}()|[\]\\\/]/g, "\\$&") : null;
      function pick(id, sorts) {
        var s = document.getElementById(id);
        var found = sorts[0];
        sorts.forEach(function (o) { if (s && o[0] === s.value) { found = o; } });
        return found[3];
      }
      return { filters: ticked, find: pattern ? new RegExp(pattern, "giu") : null,
        has: pattern ? new RegExp(pattern, "iu") : null,
        groupOrder: pick("rlv-sort-groups", GROUP_SORTS), rolloutOrder: pick("rlv-sort-rollouts", ROLLOUT_SORTS) };
    }

    function matches(r, g, c) {
      if (!c.filters.every(function (f) { return f.test(r, g); })) { return false; }
      if (!c.has) { return true; }
      return [g.prompt, r.response, r.answer, r.target].some(function (t) {
        return t !== null && t !== undefined && c.has.test(String(t));
      });
    }

    // each filter's count over the step's rollouts on the page, alone; "–" where no rollout says
    function filterCounts(groups) {
      ROLLOUT_FILTERS.forEach(function (f) {
        var known = 0, hit = 0;
        groups.forEach(function (g) {
          g.rollouts.forEach(function (r) { if (f.known(r, g)) { known += 1; if (f.test(r, g)) { hit += 1; } } });
        });
        var box = document.getElementById("rlv-filter-" + f.id);
        var n = document.getElementById("rlv-filter-n-" + f.id);
        if (box) { box.disabled = known === 0; }
        if (n) { n.textContent = known ? " (" + hit + ")" : " (–)"; }
      });
    }

    function counted(rows, all, groupsHit, groupsAll, narrowed) {
      var box = document.getElementById("rlv-count");
      if (!box) { return; }
      box.replaceChildren();
      box.setAttribute("data-count", rows + "/" + all + " " + groupsHit + "/" + groupsAll);
      if (!narrowed) {
        box.appendChild(both(all + " rollouts in " + groupsAll + " groups", "共 " + groupsAll + " 个组、" + all +
          " 条 rollout"));
      } else if (!rows) {
        box.appendChild(both("No rollout of the " + groupsAll + " groups here matches the filters and search: " +
          "untick a filter or change the search.", "这 " + groupsAll + " 个组里没有符合筛选条件和搜索词的 rollout，" +
          "可以去掉某个筛选条件或换个搜索词。"));
      } else {
        box.appendChild(both(rows + " of " + all + " rollouts in " + groupsHit + " of " + groupsAll + " groups",
          "符合条件的 rollout：" + all + " 条中的 " + rows + " 条，分属 " + groupsAll + " 个组中的 " + groupsHit + " 个"));
      }
      box.className = narrowed && !rows ? "rlv-count rlv-empty" : "rlv-count rlv-dim";
    }

    // what the reader has chosen and opened, and the first group in the window with its place there
    function browserState() {
      var got = { run: current.run, step: current.step, filters: [], search: "", groups: "", rollouts: "",
        open: [], shown: [], top: null };
      ROLLOUT_FILTERS.forEach(function (f) {
        var b = document.getElementById("rlv-filter-" + f.id);
        if (b && b.checked) { got.filters.push(f.id); }
      });
      var q = document.getElementById("rlv-search");
      got.search = q ? q.value : "";
      // typing in the search when the update came: the caret stays in the box, where it was
      got.typing = q !== null && document.activeElement === q ? [q.selectionStart, q.selectionEnd] : null;
      var sg = document.getElementById("rlv-sort-groups"), sr = document.getElementById("rlv-sort-rollouts");
      got.groups = sg ? sg.value : "";
      got.rollouts = sr ? sr.value : "";
      document.querySelectorAll("#rlv-groups details.rlv-group").forEach(function (d) {
        var id = d.getAttribute("data-group");
        got.shown.push(id);
        if (d.open) { got.open.push(id); }
        var at = d.getBoundingClientRect();
        if (got.top === null && at.bottom > 0 && at.top < window.innerHeight) { got.top = { group: id, y: at.top }; }
      });
      return got;
    }

    // the state to hand to the next copy of the script. A second update may come before that copy ran: this
    // copy's page is gone then, and what it saw last is handed on; a step not drawn yet keeps what it was given
    function snapshot() {
      if (built !== null && document.getElementById("rlv-search") === built) {
        last = browserState();
        if (before) { last.open = before.open; last.shown = before.shown; last.top = before.top; }
      }
      return last || before;
    }

    // the reader's filters, search and orders from before a live update, into the new tools
    function restoreTools(b) {
      ROLLOUT_FILTERS.forEach(function (f) {
        var box = document.getElementById("rlv-filter-" + f.id);
        if (box) { box.checked = b.filters.indexOf(f.id) >= 0; }
      });
      var q = document.getElementById("rlv-search");
      if (q) { q.value = b.search || ""; }
      if (q && b.typing) {
        q.focus({ preventScroll: true });
        q.setSelectionRange(b.typing[0], b.typing[1]);
      }
      [["rlv-sort-groups", GROUP_SORTS, b.groups], ["rlv-sort-rollouts", ROLLOUT_SORTS, b.rollouts]].forEach(function (p) {
        var sel = document.getElementById(p[0]);
        if (sel && p[1].some(function (o) { return o[0] === p[2]; })) { sel.value = p[2]; }
      });
    }

    // after the first step shown since a live update: the groups open as they were and the group that was at
    // the top of the window back at its place (a group new to the list opens as any would)
    function restoreView(box, b) {
      var top = null;
      box.querySelectorAll("details.rlv-group").forEach(function (d) {
        var id = d.getAttribute("data-group");
        if (b.shown.indexOf(id) >= 0) { d.open = b.open.indexOf(id) >= 0; }
        if (b.top && b.top.group === id) { top = d; }
      });
      if (top) { window.scrollBy(0, top.getBoundingClientRect().top - b.top.y); }
    }

    function redraw() {
      var box = document.getElementById("rlv-groups");
      if (!box) { return; }
      var c = choices();
      var groups = loaded.groups.slice();
      if (c.groupOrder) { groups.sort(c.groupOrder); }  // sort is stable: equal groups keep the spread order
      var withTarget = groups.some(function (g) {
        return g.rollouts.some(function (r) { return r.target !== null && r.target !== undefined; });
      });
      var narrowed = c.filters.length > 0 || c.has !== null;
      var rows = 0, all = 0, hit = 0;
      box.replaceChildren();
      groups.forEach(function (g) {
        var kept = g.rollouts.filter(function (r) { return matches(r, g, c); });
        all += g.rollouts.length;
        if (!kept.length) { return; }
        if (c.rolloutOrder) { kept.sort(c.rolloutOrder); }
        rows += kept.length;
        hit += 1;
        var node = groupNode(g, kept, withTarget, c.find);
        if (narrowed || hit === 1) { node.open = true; }
        box.appendChild(node);
      });
      counted(rows, all, hit, groups.length, narrowed);
    }

    function render(groups, total) {
      loaded = { groups: groups, total: total };
      filterCounts(groups);
      redraw();
      shown(groups.length, total);
      var b = before;
      before = null;
      var box = document.getElementById("rlv-groups");
      if (b && box && b.run === current.run && b.step === current.step) { restoreView(box, b); }
    }

    function labelOptions() {  // option texts cannot hold the page's two-language spans
      [["rlv-sort-groups", GROUP_SORTS], ["rlv-sort-rollouts", ROLLOUT_SORTS]].forEach(function (p) {
        var s = document.getElementById(p[0]);
        if (!s) { return; }
        Array.prototype.forEach.call(s.options, function (o, i) { o.textContent = p[1][i][1 + lang()]; });
      });
    }

    function labelled(text, control) {
      var l = el("label", "rlv-tool");
      l.appendChild(text);
      l.appendChild(document.createTextNode(" "));
      l.appendChild(control);
      return l;
    }

    function sortSelect(id, sorts) {
      var s = el("select");
      s.id = id;
      sorts.forEach(function (o) { var opt = el("option", null, o[1]); opt.value = o[0]; s.appendChild(opt); });
      s.addEventListener("change", redraw);
      return s;
    }

    // the filters, search and sorting, built once into #rlv-tools
    function tools() {
      var box = document.getElementById("rlv-tools");
      if (!box || box.childNodes.length) { return; }
      var row = el("div", "rlv-tool-row");
      row.appendChild(both("Show only:", "只看："));
      ROLLOUT_FILTERS.forEach(function (f) {
        var l = el("label", "rlv-tool rlv-filter");
        var cb = el("input");
        cb.type = "checkbox";
        cb.id = "rlv-filter-" + f.id;
        cb.addEventListener("change", redraw);
        l.appendChild(cb);
        l.appendChild(both(f.en, f.zh));
        l.appendChild(el("span", "rlv-dim", ""));
        l.lastChild.id = "rlv-filter-n-" + f.id;
        row.appendChild(l);
      });
      box.appendChild(row);
      var row2 = el("div", "rlv-tool-row");
      var q = el("input");
      q.type = "search";
      q.id = "rlv-search";
      built = q;
      q.addEventListener("input", redraw);
      row2.appendChild(labelled(both("Search prompt, response, answer, expected:", "搜索提示词、回答、答案、参考答案："), q));
      row2.appendChild(labelled(both("Sort groups by", "组的排序"), sortSelect("rlv-sort-groups", GROUP_SORTS)));
      row2.appendChild(labelled(both("rollouts in a group by", "组内 rollout 的排序"),
        sortSelect("rlv-sort-rollouts", ROLLOUT_SORTS)));
      box.appendChild(row2);
      labelOptions();
      new MutationObserver(labelOptions).observe(document.documentElement, { attributes: true,
        attributeFilter: ["data-lang"] });
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

    // the rollout a finding links to: its group opened, its row marked and scrolled to
    function mark(group, sample) {
      var box = document.getElementById("rlv-groups");
      if (!box) { return; }
      box.querySelectorAll("tr.rlv-linked").forEach(function (tr) { tr.classList.remove("rlv-linked"); });
      var g = Array.prototype.find.call(box.querySelectorAll("details.rlv-group"), function (d) {
        return d.getAttribute("data-group") === group;
      });
      if (!g) { return; }
      g.open = true;
      var row = Array.prototype.find.call(g.querySelectorAll("tr[data-sample]"), function (tr) {
        return tr.getAttribute("data-sample") === sample;
      });
      if (row) { row.classList.add("rlv-linked"); }
      (row || g).scrollIntoView({ block: "center" });
    }

    function start() {
      var select = document.getElementById("rlv-step");
      if (!select || !info || !info.runs.length) { return; }
      tools();
      if (before) { restoreTools(before); }
      select.addEventListener("change", function () { before = null; show(select.value); });
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
      document.querySelectorAll("a.rlv-goto-rollouts[data-step], a.rlv-goto-rollout[data-step]").forEach(function (a) {
        a.addEventListener("click", function (ev) {
          ev.preventDefault();
          var shown = show(a.getAttribute("data-step"), a.getAttribute("data-run"));
          document.getElementById("rlv-browser").scrollIntoView();
          if (a.hasAttribute("data-group")) {  // a finding's own rollout (a spike's extreme one): open and mark it
            Promise.resolve(shown).then(function () { mark(a.getAttribute("data-group"), a.getAttribute("data-sample")); });
          }
        });
      });
    }

    return { start: start, show: show, state: function () {
      return { run: current.run, step: current.step, browser: snapshot() };
    } };
  })();
