"""The report's page model and HTML, from real logs and real rollout dumps: layers in reading order,
a known finding's onset marker on its metric's chart, validation per source, glossary from the catalog,
rollout groups of the onset step, escaping, and the `rlvitals report` command."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

import rlvitals
from rlvitals.catalog.catalog import load_catalog
from rlvitals.cli import main
from rlvitals.diagnosis import READING_ORDER, diagnose
from rlvitals.errors import RlvitalsError
from rlvitals.report import build_page, render_html, write_report
from rlvitals.report.html import safe_json
from rlvitals.synthetic.scenarios import run_from_series

QWEN = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"
GEMMA = "verl__verl-data__gemma-2-2b-it-ppo-bsz512_4-prompt1024-resp-512-0.640.log"
MEGATRON = "verl__verldata__qwen2-7b_math_megatron.log"
#: how the Unsloth ORPO table's algorithm is described (the catalog's label)
ORPO = "ORPO-style (reference-free rewards: rewards = β·logps; ORPO, or CPO/SimPO)"
XSS = '<script>window.__x=1</script><img src=x onerror="window.__y=1">'


def write_dump(folder: Path, steps: int = 30, groups: int = 4, n: int = 4) -> None:
    """A veRL rollout dump folder (one JSON object per line, one file per step); at step 16 group 0
    holds a rollout with the highest reward of the run and a response that is markup."""
    folder.mkdir(parents=True, exist_ok=True)
    for step in range(1, steps + 1):
        lines = []
        for g in range(groups):
            for s in range(n):
                ok = (g + s + step) % 3 == 0
                spike = step == 16 and g == 2 and s == 0
                row = {"input": f"Question {g}: what is {g}+{g}?",
                       "output": XSS if spike else f"<think>add</think><answer>{2 * g if ok else -1}</answer>",
                       "gts": str(2 * g), "score": 5.0 if spike else float(ok), "step": step, "acc": ok,
                       "pred": str(2 * g if ok else -1)}
                lines.append(json.dumps(row))
        (folder / f"{step}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def section(page: dict, layer: str) -> dict:
    return next(s for s in page["sections"] if s["id"] == layer)


@pytest.fixture(scope="module")
def qwen() -> tuple[rlvitals.Run, object]:
    from conftest import REAL

    run = rlvitals.load(REAL / QWEN)[0]
    return run, diagnose(run)


def test_sections_follow_the_reading_order_with_each_layers_verdict(qwen) -> None:
    run, d = qwen
    page = build_page([run], [d])
    # seed 000 §12: effect first, then stability, then efficiency, then the data
    assert [s["id"] for s in page["sections"]] == list(READING_ORDER) == ["L5", "L1", "efficiency", "L2", "L3",
                                                                          "L4", "L6"]
    assert [f.layer for f in d.findings] == sorted((f.layer for f in d.findings), key=READING_ORDER.index)
    for s in page["sections"]:
        assert s["verdicts"] == [{"run": "r0", "status": d.layers[s["id"]]}]
        assert [f["check"] for f in s["findings"]] == [f.check for f in d.findings if f.layer == s["id"]]
    assert page["runs"][0]["verdict"] == d.verdict == "ok"  # a healthy run: its spike and entropy fall are notes


def test_charts_hold_only_the_runs_metrics_of_their_layer(qwen) -> None:
    run, d = qwen
    page = build_page([run], [d])
    catalog = load_catalog()
    for s in page["sections"]:
        for cid in s["charts"]:
            c = page["charts"][cid]
            assert set(c["keys"]) <= set(run.metrics)
            if c["kind"] == "line":
                assert {catalog.get(k).layer for k in c["keys"]} == {s["id"]}
    l1 = {k for cid in section(page, "L1")["charts"] for k in page["charts"][cid]["keys"]}
    assert {"actor/grad_norm", "actor/ppo_kl", "critic/vf_loss"} <= l1
    # min/mean/max of one quantity share a chart
    assert any(page["charts"][c]["keys"] == ["response_length/max", "response_length/mean", "response_length/min"]
               for c in section(page, "L2")["charts"])
    x, y = run.series("actor/grad_norm", train_only=False)
    grad = next(page["charts"][c] for c in section(page, "L1")["charts"]
                if page["charts"][c]["keys"] == ["actor/grad_norm"])
    assert grad["traces"][0]["x"] == x.tolist() and np.allclose(grad["traces"][0]["y"], y, rtol=1e-5)


def test_grad_norm_spike_marker_sits_on_the_grad_norm_chart(qwen) -> None:
    run, d = qwen
    page = build_page([run], [d])
    finding = next(f for s in page["sections"] for f in s["findings"] if f["check"] == "grad_norm_spike")
    assert finding["status"] == "note" and finding["onset"] == 16 and finding["metrics"] == ["actor/grad_norm"]
    (cid,) = finding["charts"]
    chart = page["charts"][cid]
    assert chart["keys"] == ["actor/grad_norm"]
    assert {"finding": finding["id"], "run": "r0", "status": "note", "onset": 16, "span": [16, 16],
            "points": finding["points"], "check": "grad_norm_spike", "title": finding["title"]} in chart["markers"]
    assert finding["points"] in ([], [16])  # one spike: its step, if the check reports it as a point event
    collapse = next(f for s in page["sections"] for f in s["findings"] if f["check"] == "entropy_collapse")
    marker = next(m for c in collapse["charts"] for m in page["charts"][c]["markers"] if m["finding"] == collapse["id"])
    assert marker["onset"] == 17 and marker["span"] == [17, 33]  # 0.629 -> 0.266 over steps 17-33
    # passed checks draw nothing
    assert all(m["status"] in ("warn", "fail", "note") for c in page["charts"].values() for m in c["markers"])


def test_a_note_is_shown_with_its_advice_and_marked_in_its_colour_but_leaves_the_layer_ok() -> None:
    from conftest import REAL

    grpo = REAL / "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
    run = rlvitals.load(grpo)[0]
    d = diagnose(run)
    page = build_page([run], [d])
    eff = section(page, "efficiency")
    (note,) = [f for f in eff["findings"] if f["status"] == "note"]
    assert note["check"] == "mfu_low" and eff["verdicts"] == [{"run": "r0", "status": "ok"}]
    (cid,) = note["charts"]
    assert page["charts"][cid]["keys"] == ["perf/mfu/actor"]
    assert [m["status"] for m in page["charts"][cid]["markers"]] == ["note"]
    html = render_html(page, cdn=True)
    article = re.search(rf'<article class="rlv-finding s-note" id="{note["id"]}".*?</article>', html, re.S)
    assert article is not None and '<span class="rlv-status s-note"><span class="l-en">NOTE</span>' in article[0]
    assert "提示" in article[0] and "Raise the micro-batch size" in article[0]
    heading = re.search(r'<section id="layer-efficiency".*?</h2>', html, re.S)
    assert heading is not None and "s-ok" in heading[0] and "s-note" not in heading[0]


def test_point_events_are_marked_at_their_steps(qwen) -> None:
    from dataclasses import replace

    from rlvitals.diagnosis import assemble

    run, d = qwen
    # constructed: the real Qwen log's grad-norm spike at step 16, given as three point events (until the
    # spike checks report their points, no real diagnosis carries them)
    spikes = [replace(f, points=(90, 16, 40)) if f.check == "grad_norm_spike" else f for f in d.findings]
    page = build_page([run], [assemble(run, spikes)])
    finding = next(f for s in page["sections"] for f in s["findings"] if f["check"] == "grad_norm_spike")
    assert finding["points"] == [16, 40, 90]
    (cid,) = finding["charts"]
    (marker,) = [m for m in page["charts"][cid]["markers"] if m["finding"] == finding["id"]]
    assert marker["points"] == [16, 40, 90]
    html = render_html(page, cdn=True)
    assert re.search(rf'id="{finding["id"]}".*?<span class="rlv-when"><span class="l-en">at steps 16, 40, 90</span>'
                     r'<span class="l-zh" lang="zh">第 16、40、90 步</span>', html, re.S)


def test_validation_per_data_source_and_glossary(qwen) -> None:
    run, d = qwen
    page = build_page([run], [d])
    l5 = section(page, "L5")
    assert [v["source"] for v in l5["validation"]] == ["openai/gsm8k"]
    chart = page["charts"][l5["validation"][0]["chart"]]
    assert chart["keys"] == ["val-core/openai/gsm8k/reward/mean@1"] and chart["traces"][0]["name"] == "reward/mean@1"
    assert len(chart["traces"][0]["x"]) == run.validation["openai/gsm8k"].height
    entries = {e["entry"]: e for e in page["glossary"]}
    grad = load_catalog().get("actor/grad_norm")
    assert entries["actor/grad_norm"]["en"]["meaning"] == grad.en.meaning
    assert entries["actor/grad_norm"]["zh"]["name"] == grad.zh.name
    assert page["anchors"]["actor/grad_norm"] == entries["actor/grad_norm"]["anchor"] == "g-actor-grad-norm"
    # a template entry explains its concrete key
    assert "val-core/openai/gsm8k/reward/mean@1" in page["anchors"]
    shown = {k for c in page["charts"].values() for k in c["keys"]}
    assert shown <= set(page["anchors"])


def test_a_spike_in_100k_steps_survives_into_the_chart() -> None:
    steps = 100_000
    grad = np.full(steps, 1.0) + np.sin(np.arange(steps) / 30.0) * 0.1
    grad[77_777] = 40.0
    loss = np.full(steps, 0.5)
    loss[5_000] = np.inf  # (NaN would mean 'not logged' to run_from_series)
    run = run_from_series({"actor/grad_norm": grad, "actor/pg_loss": loss})
    page = build_page([run], [diagnose(run)], buckets=300)
    charts = {c["keys"][0]: c for c in page["charts"].values()}
    t = charts["actor/grad_norm"]["traces"][0]
    assert len(t["x"]) <= 1200 and t["n"] == steps
    assert max(t["y"]) == 40.0 and t["x"][t["y"].index(40.0)] == 77_778  # steps count from 1
    pg = charts["actor/pg_loss"]["traces"][0]
    assert pg["nonfinite"] == {"nan": 0, "posinf": 1, "neginf": 0, "first": 5001.0}
    assert pg["bad"] == [[5001, "+inf"]] and None in pg["y"]


@pytest.fixture(scope="module")
def with_rollouts(qwen, tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object, dict]:
    run, _ = qwen
    folder = tmp_path_factory.mktemp("dump")
    write_dump(folder)
    analysis = rlvitals.analyze_rollouts(folder)
    joined = run.with_series(analysis.series())
    d = diagnose(joined)
    return analysis, d, build_page([joined], [d], analysis)


def test_rollouts_of_the_onset_step_extreme_group_first(with_rollouts) -> None:
    analysis, _, page = with_rollouts
    spike = next(f for s in page["sections"] for f in s["findings"] if f["check"] == "grad_norm_spike")
    assert spike["rollout_step"] == 16
    (mine,) = page["rollouts"]["runs"]
    assert mine["run"] == "r0" and 16 in mine["steps"] and mine["available"] == list(range(1, 31))
    assert mine["totals"][16] == 4  # every group of the step is shown: "4 of 4"
    at16 = [g for g in page["rollouts"]["groups"] if g["step"] == 16]
    assert len(at16) == 4 and all(g["run"] == "r0" for g in at16) and at16[0]["group"] == next(
        g for g in analysis.rollouts.table.filter(analysis.rollouts.table["response"] == XSS)["group"])
    assert at16[0]["rollouts"][0]["response"] == XSS and at16[0]["rollouts"][0]["score"] == 5.0


def test_rollout_curves_are_drawn_in_their_layers_with_their_findings(with_rollouts) -> None:
    _, d, page = with_rollouts
    catalog = load_catalog()
    by_layer = {s["id"]: {k for cid in s["charts"] for k in page["charts"][cid]["keys"]} for s in page["sections"]}
    assert {"group/reward_std/mean", "group/zero_std/share", "pass@1", "pass@4"} <= by_layer["L3"]
    assert {"diversity/distinct_1", "group/zero_std/identical"} <= by_layer["L4"]
    assert {"reasoning/self_consistency_gap@2", "reasoning/self_consistency_gap@4"} <= by_layer["L6"]
    for layer, keys in by_layer.items():
        assert {catalog.get(k).layer for k in keys} <= {layer}
    # the rollout section links to them
    linked = {k for cid in page["rollouts"]["charts"] for k in page["charts"][cid]["keys"]}
    assert {"pass@1", "reasoning/self_consistency_gap@4", "diversity/distinct_1"} <= linked
    passk = next(c for c in page["charts"].values() if "pass@1" in c["keys"])
    assert [t["key"] for t in passk["traces"]] == ["pass@1", "pass@2", "pass@4"] and passk["keys"] == [
        "pass@1", "pass@2", "pass@4"]
    # findings on rollout metrics are marked on the run's chart of them (the traces are the run's)
    gaps = [f for s in page["sections"] for f in s["findings"] if f["check"] == "self_consistency"
            and f["status"] == "warn"]
    assert len(gaps) == 1  # maj@k at k = 2 is pass@1 with split ties: only k = 4 is read
    for f in gaps:
        (cid,) = f["charts"]
        assert any(m["finding"] == f["id"] and m["run"] == "r0" for m in page["charts"][cid]["markers"])
    html = render_html(page, cdn=True)
    l6 = html.split('id="layer-L6"', 1)[1].split("</section>", 1)[0]
    # a warn finding's curve is drawn with the answer, under the story; its layer links to it there
    cid = gaps[0]["charts"][0]
    assert cid in page["answer"]["charts"] and f'id="fig-{cid}"' in html.split('id="answer-charts"', 1)[1]
    assert "rlv-no-charts" not in l6 and f'href="#fig-{cid}"' in l6 and f'id="fig-{cid}"' not in l6


def test_not_computed_is_not_a_nan(with_rollouts) -> None:
    """pass@8 of groups of 4 is undefined (not logged), not a NaN the trainer logged: no curve, no flag."""
    _, _, page = with_rollouts
    keys = {k for c in page["charts"].values() for k in c["keys"]}
    assert "pass@4" in keys and not {"pass@8", "pass@16", "maj@8"} & keys
    assert all(not t["bad"] and t["nonfinite"]["first"] is None for c in page["charts"].values()
               for t in c["traces"])
    assert 'class="rlv-bad"' not in render_html(page, cdn=True)


def test_a_phase_logged_every_few_steps_is_not_a_nan(real: Path) -> None:
    run = rlvitals.load(real / MEGATRON)[0]
    page = build_page([run], [diagnose(run)])
    (stack,) = [c for c in page["charts"].values() if c["kind"] == "stack"]
    testing = next(t for t in stack["traces"] if t["key"] == "timing_s/testing")
    assert testing["nonfinite"] == {"nan": 0, "posinf": 0, "neginf": 0, "first": None}
    assert testing["y"].count(None) == len(testing["y"]) - 21  # logged at 21 of the 105 steps
    html = render_html(page, cdn=True)
    assert 'class="rlv-bad"' not in html


def test_a_logged_nan_is_said_in_words_with_an_integer_step() -> None:
    loss = np.full(50, 0.5)
    loss[[20, 30]] = np.inf
    run = run_from_series({"actor/pg_loss": loss, "actor/grad_norm": np.ones(50)})
    html = render_html(build_page([run], [diagnose(run)]), cdn=True)
    caption = html.split('data-nonfinite="actor/pg_loss">', 1)[1].split("</span></span>", 1)[0]
    assert "2 inf logged, from step 21" in caption and "21.0" not in caption and "NaN" not in caption
    assert "记录了 2 个 inf，自第 21 步起" in caption


def test_the_main_validation_finding_is_marked_on_the_validation_chart(real: Path) -> None:
    run = rlvitals.load(real / MEGATRON)[0]
    d = diagnose(run)
    page = build_page([run], [d])
    val = section(page, "L5")["validation"][0]["chart"]
    assert page["charts"][val]["keys"] == ["val-core/openai/gsm8k/reward/mean@1"]
    for check in ("val_progress", "val_reward_divergence"):
        f = next(f for f in section(page, "L5")["findings"] if f["check"] == check)
        assert f["metrics"][0] == "openai/gsm8k/reward/mean@1" and f["onset"] == 40
        assert val in f["charts"]
        assert [m["onset"] for m in page["charts"][val]["markers"] if m["finding"] == f["id"]] == [40]
    # the finding's name of the curve links to the curve's glossary entry
    assert page["anchors"]["openai/gsm8k/reward/mean@1"] == page["anchors"]["val-core/openai/gsm8k/reward/mean@1"]


def test_a_findings_chart_links_say_which_of_its_metrics_each_chart_draws(real: Path) -> None:
    run = rlvitals.load(real / MEGATRON)[0]
    page = build_page([run], [diagnose(run)])
    f = next(f for f in section(page, "L5")["findings"] if f["check"] == "val_reward_divergence")
    by_chart = {tuple(page["charts"][c]["keys"]): f["chart_keys"][c] for c in f["charts"]}
    assert by_chart == {("val-core/openai/gsm8k/reward/mean@1",): ["openai/gsm8k/reward/mean@1"],  # its alias
                        ("critic/score/max", "critic/score/mean", "critic/score/min"): ["critic/score/mean"],
                        ("response_length/max", "response_length/mean", "response_length/min"):
                            ["response_length/mean"]}
    html = render_html(page, cdn=True)
    assert '<span class="l-en">↗ critic/score/mean on the chart</span>' in html
    assert '<span class="l-zh" lang="zh">↗ 图上的 critic/score/mean</span>' in html


def test_the_runs_table_names_the_algorithm_short_with_its_description(real: Path) -> None:
    run = rlvitals.load(real / "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv")[0]
    page = build_page([run], [diagnose(run)])
    (row,) = page["runs"]
    # its rewards are 0.1 x logps on every row: ORPO (98cc4c2), not the DPO family at large
    assert (row["algorithm_short"], row["algorithm"]) == ("ORPO", ORPO)
    assert f'<td class="rlv-algo"><span title="{ORPO}">ORPO</span></td>' in render_html(page, cdn=True)


def test_several_runs_get_a_comparison_and_one_line_per_run(qwen) -> None:
    from conftest import REAL

    run, d = qwen
    other = rlvitals.load(REAL / GEMMA)[0]
    page = build_page([run, other], [d, diagnose(other)])
    comp = page["comparison"]
    assert [r["run"] for r in comp["runs"]] == ["r0", "r1"] and comp["runs"][0]["layers"] == dict(d.layers)
    assert comp["per_token"] is False  # neither log has timing_per_token_ms/*
    grad = next(c for c in page["charts"].values() if c["keys"] == ["actor/grad_norm"])
    assert [t["run"] for t in grad["traces"]] == ["r0", "r1"]
    assert build_page([run], [d])["comparison"] is None


def test_html_escapes_log_and_rollout_text(qwen, tmp_path: Path) -> None:
    run, _ = qwen
    write_dump(tmp_path / "dump")
    analysis = rlvitals.analyze_rollouts(tmp_path / "dump")
    joined = run.with_series(analysis.series())
    html = render_html(build_page([joined], [diagnose(joined)], analysis), cdn=True)
    assert XSS not in html and "window.__x=1" in html  # present, but only in escaped JSON
    blob = re.search(r'<script type="application/json" id="rlv-data">(.*?)</script>', html, re.S)
    assert blob is not None and "<" not in blob.group(1)
    data = json.loads(blob.group(1))
    assert XSS in [r["response"] for g in data["rollouts"]["groups"] for r in g["rollouts"]]
    # the theme (head), plotly (CDN), the data, the page script: nothing from the data
    assert html.count("<script") == 4
    assert '<script src="https://cdn.plot.ly/plotly-' in html
    for layer in READING_ORDER:
        assert f'id="layer-{layer}"' in html


def test_safe_json_escapes_what_could_end_a_script_block() -> None:
    text = safe_json({"a": "</script><!-- & \u2028\u2029"})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"a": "</script><!-- & \u2028\u2029"}


def test_inline_report_embeds_plotly() -> None:
    run = run_from_series({"actor/grad_norm": np.linspace(1, 2, 50)})
    html = render_html(build_page([run], [diagnose(run)]))
    assert "<script src=" not in html and len(html) > 1_000_000  # plotly.js's basic bundle itself is ~1.2 MB
    inline = max(re.findall(r"<script>(.*?)</script>", html, re.S), key=len)
    assert len(inline) > 1_000_000  # nothing inside plotly.js closed its script block early


def test_bad_inputs_are_named(qwen, tmp_path: Path) -> None:
    run, d = qwen
    with pytest.raises(RlvitalsError, match="no run given"):
        build_page([], [])
    with pytest.raises(RlvitalsError, match="1 runs but 2 diagnoses; give one diagnosis per run"):
        build_page([run], [d, d])
    other = run_from_series({"actor/grad_norm": np.ones(5)}, path="other")
    with pytest.raises(RlvitalsError, match="the diagnosis of 'other' is paired with the run"):
        build_page([run], [diagnose(other)])
    with pytest.raises(RlvitalsError, match="buckets=0; expected at least 1"):
        build_page([run], [d], buckets=0)
    with pytest.raises(RlvitalsError, match="the folder .*nope' does not exist; create it"):
        write_report(tmp_path / "nope" / "r.html", build_page([run], [d]), cdn=True)


def test_cli_report_writes_the_file(real: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "report.html"
    write_dump(tmp_path / "dump")
    code = main(["report", str(real / QWEN), "--rollouts", str(tmp_path / "dump"), "--cdn", "--lang", "zh",
                 "-o", str(target)], out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().startswith(f"已写出 {target}：1 次训练，")  # what it wrote, in the language asked for
    html = target.read_text(encoding="utf-8")
    assert '<html lang="zh" data-lang="zh">' in html and 'id="rollouts"' in html


def test_cli_report_errors(real: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["report", str(real / QWEN)], out=out, err=err) == 2  # -o is required
    err = io.StringIO()
    code = main(["report", str(real / QWEN), "-o", str(tmp_path / "missing" / "r.html")], out=out, err=err)
    assert code == 2 and "does not exist; create it or choose another -o path" in err.getvalue()
    err = io.StringIO()
    assert main(["report", str(tmp_path / "absent.log"), "-o", str(tmp_path / "r.html")], out=out, err=err) == 2
    assert str(tmp_path / "absent.log") in err.getvalue() and not (tmp_path / "r.html").exists()


PPO = "verl__verl_training_log__ppo_run_deepseek7b_llm.log"
GRPO = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"


def test_ppo_and_grpo_compare_by_their_per_token_timings(real: Path) -> None:
    runs = [rlvitals.load(real / name)[0] for name in (PPO, GRPO)]
    page = build_page(runs, [diagnose(r) for r in runs])
    comp = page["comparison"]
    assert comp["per_token"] is True and [r["algorithm"] for r in comp["runs"]] == ["PPO with a critic (GAE)", "GRPO"]
    charts = {page["charts"][c]["keys"][0]: page["charts"][c] for c in comp["charts"]}
    gen = charts["timing_per_token_ms/gen"]
    assert [t["run"] for t in gen["traces"]] == ["r0", "r1"] and [t["name"] for t in gen["traces"]] == [
        f"{PPO}: timing_per_token_ms/gen", f"{GRPO}: timing_per_token_ms/gen"]
    assert [t["run"] for t in charts["timing_per_token_ms/update_critic"]["traces"]] == ["r0"]  # GRPO has no critic
    assert gen["traces"][0]["x"][:3] == [1, 2, 3] == gen["traces"][1]["x"][:3]  # aligned by step
    html = render_html(page, cdn=True)
    assert "No run logged per-token timings" not in html
    # every layer's verdict badge names its run
    l1 = html.split('id="layer-L1"', 1)[1].split("</h2>", 1)[0]
    for rid, name in (("r0", PPO), ("r1", GRPO)):
        assert re.search(rf'<span class="rlv-verdict" data-run="{rid}">{re.escape(name)} <span class="rlv-status', l1)


def _data(html: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="rlv-data">(.*?)</script>', html, re.S).group(1))


def test_cli_report_pairs_rollouts_with_runs_in_order(real: Path, tmp_path: Path) -> None:
    write_dump(tmp_path / "dump")
    target = tmp_path / "r.html"
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", str(real / GEMMA), str(real / QWEN), "--rollouts", "-", "--rollouts",
                 str(tmp_path / "dump"), "--cdn", "-o", str(target)], out=out, err=err)
    assert code == 0, err.getvalue()
    data = _data(target.read_text(encoding="utf-8"))
    assert [r["run"] for r in data["rollouts"]["runs"]] == ["r1"]  # the qwen run's, not the gemma run's
    assert {g["run"] for g in data["rollouts"]["groups"]} == {"r1"}
    passk = next(c for c in data["charts"].values() if "pass@1" in c["keys"])
    assert {t["run"] for t in passk["traces"]} == {"r1"}


def test_cli_report_refuses_one_rollout_folder_for_several_runs(real: Path, tmp_path: Path) -> None:
    write_dump(tmp_path / "dump")
    out, err = io.StringIO(), io.StringIO()
    code = main(["report", str(real / GEMMA), str(real / QWEN), "--rollouts", str(tmp_path / "dump"),
                 "-o", str(tmp_path / "r.html")], out=out, err=err)
    assert code == 2 and not (tmp_path / "r.html").exists()
    assert err.getvalue() == ("rlvitals: 2 runs given but 1 --rollouts; the rollouts of one run are not another's: "
                              "give --rollouts once per RUN, in the order of the runs ('-' for a run without "
                              "rollouts)\n")
    with pytest.raises(RlvitalsError, match=r"one rollout analysis for 2 runs would show one run's rollouts as "
                                            r"every run's; give a list, one per run"):
        build_page([rlvitals.load(real / GEMMA)[0], rlvitals.load(real / QWEN)[0]],
                   [diagnose(rlvitals.load(real / GEMMA)[0]), diagnose(rlvitals.load(real / QWEN)[0])],
                   rlvitals.analyze_rollouts(tmp_path / "dump"))


def test_cli_report_refuses_rollouts_for_a_folder_of_several_runs(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    for name in ("exp_a", "exp_b"):  # a TensorBoard folder of two runs is one RUN path
        w = tbx.SummaryWriter(str(tmp_path / "runs" / name))
        for step in range(1, 31):
            w.add_scalar("actor/grad_norm", 1.0 + step / 100, step)
        w.close()
    write_dump(tmp_path / "dump")
    err = io.StringIO()
    code = main(["report", str(tmp_path / "runs"), "--rollouts", str(tmp_path / "dump"), "-o",
                 str(tmp_path / "r.html")], out=io.StringIO(), err=err)
    assert code == 2 and err.getvalue() == (
        f"rlvitals: {tmp_path / 'runs'} holds 2 runs, so its --rollouts cannot be paired with one of them; pass "
        "its run folders as separate RUNs, each with its own --rollouts\n")


def test_runs_of_the_same_file_name_get_their_folder_in_labels(real: Path, tmp_path: Path) -> None:
    for name, src in (("exp1", QWEN), ("exp2", GEMMA)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_bytes((real / src).read_bytes())
    runs = [rlvitals.load(tmp_path / n / "train.log")[0] for n in ("exp1", "exp2")]
    page = build_page(runs, [diagnose(r) for r in runs])
    assert [r["label"] for r in page["runs"]] == ["exp1/train.log", "exp2/train.log"]
    grad = next(c for c in page["charts"].values() if c["keys"] == ["actor/grad_norm"])
    assert [t["name"] for t in grad["traces"]] == ["exp1/train.log: actor/grad_norm", "exp2/train.log: actor/grad_norm"]


def test_the_build_tells_its_charts_rollouts_and_writing(qwen, tmp_path: Path) -> None:
    """A real run with a veRL rollout dump: the page is the same with or without a progress callback."""
    run, _ = qwen
    write_dump(tmp_path / "dump")
    analysis = rlvitals.analyze_rollouts(tmp_path / "dump")
    joined = run.with_series(analysis.series())
    d = diagnose(joined)
    seen: list[tuple[str, int, int | None]] = []
    page = build_page([joined], [d], analysis, progress=lambda *call: seen.append(call))
    sections = len(READING_ORDER) + 1  # the first screen, then a section per layer
    kept = len(page["rollouts"]["runs"][0]["steps"])
    assert kept > 1
    assert seen == [("charts", i, sections) for i in range(sections + 1)] + \
        [("rollouts", i, kept) for i in range(kept + 1)]
    assert json.dumps(page, sort_keys=True, default=str) == \
        json.dumps(build_page([joined], [d], analysis), sort_keys=True, default=str)
    seen.clear()
    size = write_report(tmp_path / "r.html", page, cdn=True, progress=lambda *call: seen.append(call))
    assert seen == [("writing", 0, 1), ("writing", 1, 1)] and size == (tmp_path / "r.html").stat().st_size


def test_the_forecast_section_holds_a_chart_or_the_reason(real: Path) -> None:
    held, declined = (rlvitals.load(real / name)[0] for name in (QWEN, MEGATRON))
    page = build_page([held, declined], [diagnose(held), diagnose(declined)])
    (l5,) = [s for s in page["sections"] if s["id"] == "L5"]
    assert [s["forecast"] for s in page["sections"] if s["id"] != "L5"] == [[]] * (len(page["sections"]) - 1)
    first, second = l5["forecast"]
    chart = page["charts"][first["chart"]]
    assert chart["kind"] == "forecast" and chart["ceiling"]["value"] == pytest.approx(first["ceiling"], rel=1e-5)
    assert [t["role"] for t in chart["traces"]] == ["observed", "fitted", "future", "hi", "lo"]
    assert first["said"]["en"].startswith("openai/gsm8k/reward/mean@1 (validation) heads for a ceiling of 0.597")
    assert second["chart"] is None and second["ceiling"] is None
    assert second["said"]["en"].startswith("No forecast: openai/gsm8k/reward/mean@1 did not rise")
    assert second["said"]["zh"].startswith("无法预测：熵下降时")
