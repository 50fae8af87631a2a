"""`mitigate diff`: two judges on the same items, B - A with paired intervals, the gate and its outputs.

Benchmarks and recorded judgments are written here in the documented formats (docs/data_format.md,
docs/recorded_format.md); the live path runs against the stub OpenAI-compatible server.
"""

from __future__ import annotations

import json
import math
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.data import Item
from mitigate.diff import diff_judgments, gate, junit_xml, parse_fail_on
from mitigate.diff._diff import clusters_of
from mitigate.errors import ConfigError
from mitigate.judge import Judgment
from mitigate.measures._stats import paired_permutation_test, permutation_test_mean_diff
from mitigate.testing import StubOpenAIServer

N_DOCS, SYSTEMS = 12, ("s1", "s2", "s3", "s4")


def _items() -> list[dict[str, Any]]:
    rng = random.Random(7)
    rows = []
    for d in range(N_DOCS):
        for s in SYSTEMS:
            quality = rng.randint(1, 5)
            rows.append(
                {
                    "id": f"{s}/d{d}",
                    "system": s,
                    "doc_id": f"d{d}",
                    "inputs": {"source": f"Article {d}."},
                    "output": f"Summary of article {d} by {s}. quality={quality} "
                    + "word " * rng.randint(3, 30),
                    "human": {"coherence": float(quality)},
                }
            )
    return rows


def _write_bench(tmp_path: Path) -> Path:
    path = tmp_path / "bench.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _items()) + "\n", encoding="utf-8")
    return path


def _recorded(
    tmp_path: Path, name: str, judge: str, score: Any, scale: tuple[int, int] | None = None
) -> Path:
    """A recorded-judgments file: one row per item, the score a function of the item (None: a failure)."""
    rows = [{"recorded": {"scales": {"coherence": list(scale)}}}] if scale else []
    for it in _items():
        value = score(it)
        row = {"item_id": it["id"], "judge": judge, "criterion": "coherence"}
        row |= (
            {"error": "no score", "raw": "I cannot say."}
            if value is None
            else {"score": value, "raw": f"Score: {value}"}
        )
        rows.append(row)
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _good(it: dict[str, Any]) -> float:
    return it["human"]["coherence"]


def _noisy(it: dict[str, Any]) -> float:
    return float(random.Random(it["id"]).randint(1, 5))


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["diff", *args, "--no-progress", "--n-boot", "300", "--n-perm", "500"])


def _bench_arg(tmp_path: Path) -> list[str]:
    return ["-b", f"jsonl:{_write_bench(tmp_path)}", "-c", "coherence"]


# --------------------------------------------------------------------------- the gate on recorded files


def test_a_worse_recorded_judge_fails_the_gate_with_exit_1_and_one_reason_line(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "noisy", _noisy)
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("regression:")]
    assert len(lines) == 1 and "noisy is worse than good on spearman (coherence)" in lines[0]
    assert "A = good    B = noisy" in result.stdout


def test_the_same_judge_twice_passes_with_exit_0(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "good-again", _good)
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert result.exit_code == 0, result.output
    assert "pass: good-again is not significantly worse than good" in result.stdout


def test_order_matters_a_better_b_passes_the_gate(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "noisy", _noisy)
    b = _recorded(tmp_path, "b.jsonl", "good", _good)
    assert _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b)).exit_code == 0


def test_json_prints_every_measure_with_a_b_delta_interval_and_p(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "noisy", _noisy)
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b), "--json")
    data = json.loads(result.stdout)
    names = [m["name"] for m in data["measures"]]
    assert names == [
        "spearman",
        "spearman-common",
        "spearman-document",
        "length-bias",
        "failure-rate",
        "mean-score",
    ]
    for m in data["measures"]:
        assert {"a", "b", "delta", "low", "high", "p"} <= set(m)
    sp = data["measures"][0]
    assert sp["a"] == pytest.approx(1.0) and sp["delta"] == pytest.approx(sp["b"] - sp["a"])
    assert sp["low"] < sp["delta"] < sp["high"] < 0 and sp["gated"] and sp["worse"]
    assert data["resampled"] == {"unit": "documents", "n": N_DOCS}
    assert data["gate"]["failed"] is True and data["gate"]["correction"] == "holm"


def test_junit_has_one_testcase_per_gated_measure_and_a_failure_for_the_regression(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "noisy", _noisy)
    out = tmp_path / "junit.xml"
    result = _run(
        *_bench_arg(tmp_path),
        "--recorded",
        str(a),
        "--recorded",
        str(b),
        "--junit",
        str(out),
        "--fail-on",
        "spearman:0.05,failure-rate,length-bias",
    )
    assert result.exit_code == 1
    suite = ET.parse(out).getroot()
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["spearman", "failure-rate", "length-bias"]
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    assert cases[0].find("failure") is not None and cases[1].find("failure") is None


def test_failures_are_counted_never_dropped_silently(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(
        tmp_path, "b.jsonl", "abstains", lambda it: None if it["system"] in ("s1", "s2") else _good(it)
    )  # half the items unscored
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b), "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    by = {m["name"]: m for m in data["measures"]}
    assert by["failure-rate"]["a"] == 0 and by["failure-rate"]["b"] == pytest.approx(0.5)
    assert by["failure-rate"]["worse"] is True
    assert by["spearman"]["n"] == 48  # each judge's own value on every item, failures counted against it
    assert (
        by["spearman-common"]["n"] == 24 and by["spearman-common"]["dropped"] == 24
    )  # the items both scored
    assert sum(c["change"] == "failed in B" for c in data["changes"]) == 24


def test_one_file_holding_two_judges_gives_a_then_b_in_file_order(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "noisy", _noisy)
    both = tmp_path / "both.jsonl"
    both.write_text(a.read_text() + b.read_text(), encoding="utf-8")
    result = _run(*_bench_arg(tmp_path), "--recorded", str(both), "--json")
    data = json.loads(result.stdout)
    assert (data["a"], data["b"]) == ("good", "noisy") and result.exit_code == 1


# --------------------------------------------------------------------------- refused input: exit 2


def test_a_judge_missing_items_is_refused_with_exit_2_naming_them(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = tmp_path / "b.jsonl"
    b.write_text("\n".join(a.read_text().splitlines()[:-3]).replace('"good"', '"short"') + "\n")
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert result.exit_code == 2
    assert (
        "expected judge 'short' to have an answer on 'coherence' for every item compared; 3 of 48"
    ) in result.stderr


def test_judges_on_different_scales_are_refused_unless_mapped(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "five", _good, scale=(1, 5))
    b = _recorded(tmp_path, "b.jsonl", "ten", lambda it: 2 * _good(it), scale=(1, 10))
    refused = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert (
        refused.exit_code == 2
        and ("expected the same scale, or a mapping (--scale-map linear") in refused.stderr
    )
    mapped = _run(
        *_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b), "--scale-map", "linear", "--json"
    )
    assert mapped.exit_code == 0, mapped.output
    data = json.loads(mapped.stdout)
    assert data["measures"][0]["delta"] == pytest.approx(0.0)
    assert any("mapped linearly from 1 to 10" in n for n in data["notes"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--fail-on", "accuracy"], "'accuracy' applies to pairwise judges"),
        (["--fail-on", "spearman:2"], "level strictly between 0 and 1"),
        (["--fail-on", "mean-score"], "neither better nor worse"),
        (["--correction", "sidak"], "--correction"),
    ],
)
def test_a_bad_gate_option_is_refused_before_anything_is_judged(tmp_path, args, message):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(a), *args)
    assert result.exit_code == 2 and message in result.stderr


def test_two_judges_that_differ_in_two_things_are_refused(tmp_path):
    result = _run(
        *_bench_arg(tmp_path),
        "--pipeline",
        "baseline",
        "--pipeline",
        "consistency-hint",
        "--backend",
        "fake",
        "--backend",
        "local",
    )
    assert result.exit_code == 2 and "differ in one thing" in result.stderr
    mixed = _run(*_bench_arg(tmp_path), "--recorded", "a.jsonl", "--released", "chatgpt-rts")
    assert mixed.exit_code == 2 and "from one source" in mixed.stderr


def test_a_gated_measure_that_cannot_be_computed_for_either_judge_is_refused_not_passed(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "constant", lambda it: 2.0)
    b = _recorded(tmp_path, "b.jsonl", "constant-too", lambda it: 3.0)
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert result.exit_code == 2 and "cannot gate on spearman (coherence)" in result.stderr


def test_a_constant_b_is_gated_as_the_regression_it_is_with_exit_1_and_junit(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "constant", lambda it: 3.0)
    xml = tmp_path / "gate.xml"
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b), "--junit", str(xml))
    assert result.exit_code == 1, result.output
    assert (
        "constant is worse than good on spearman (coherence): constant's scores are constant" in result.stderr
    )
    suite = ET.parse(xml).getroot()
    assert suite.get("failures") == "1" and suite.find("testcase/failure") is not None


# --------------------------------------------------------------------------- live judges on the stub server

PROMPT = 'Rate the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{output}}\n\nAnswer "Score: N".'


def _reply(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    quality = int(re.search(r"quality=(\d)", text).group(1))  # type: ignore[union-attr]
    return f"Score: {6 - quality if 'Be harsh' in text else quality}"


def _diff_two_prompts(tmp_path: Path, server: StubOpenAIServer, ask: str, *extra: str) -> Any:
    """``mitigate diff`` of two live prompts on the stub server: A is :data:`PROMPT`, B the same with ``ask``
    in place of "Rate the summary"."""
    (tmp_path / "a.txt").write_text(PROMPT)
    (tmp_path / "b.txt").write_text(PROMPT.replace("Rate the summary", ask))
    return _run(
        *_bench_arg(tmp_path),
        "--prompt",
        str(tmp_path / "a.txt"),
        "--prompt",
        str(tmp_path / "b.txt"),
        "--backend",
        "openai:stub",
        "--base-url",
        server.base_url,
        *extra,
    )


def test_two_live_templates_on_the_stub_server_are_diffed_and_the_worse_one_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    with StubOpenAIServer(latency=0.0, reply=_reply) as server:
        result = _diff_two_prompts(
            tmp_path, server, "Be harsh. Rate the summary", "--out", str(tmp_path / "out"), "--json"
        )
        assert server.request_count == 2 * N_DOCS * len(SYSTEMS)
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["a"].endswith("a.txt") and data["measures"][0]["b"] == pytest.approx(-1.0)
    assert (tmp_path / "out" / "diff.json").exists()
    assert (tmp_path / "out" / "journals" / "coherence-a.jsonl").exists()


# --------------------------------------------------------------------------- the statistics


def test_grouped_permutation_swaps_whole_documents():
    x = np.ones(10)
    y = np.zeros(10)
    groups = ["d1"] * 5 + ["d2"] * 5
    by_item = permutation_test_mean_diff(x, y, paired=True, n_perm=2000, seed=1)
    by_doc = permutation_test_mean_diff(x, y, paired=True, n_perm=2000, seed=1, groups=groups)
    assert by_item.p_value < 0.01
    assert by_doc.p_value == pytest.approx(0.5, abs=0.05)  # 2 documents: 4 sign patterns, 2 as extreme
    h = np.arange(10.0)
    corr = paired_permutation_test(h, -h, h, "spearman", n_perm=2000, seed=1, groups=groups)
    assert corr.p_value == pytest.approx(0.5, abs=0.05)


def test_clusters_are_documents_only_when_items_share_them():
    shared = [Item(id=f"{s}/d", output="x", doc_id="d", system=s) for s in "ab"]
    alone = [Item(id=f"i{k}", output="x", doc_id=f"d{k}") for k in range(2)]
    assert clusters_of(shared) == (["d", "d"], "documents")
    assert clusters_of(alone) == (["i0", "i1"], "items")


def _pairs(n: int = 24) -> list[Item]:
    return [
        Item(
            id=f"p{k}",
            doc_id=f"d{k // 2}",
            output="short one",
            output_b="a much longer second text here",
            preference={"q": "A" if k % 3 else "B"},
        )
        for k in range(n)
    ]


def _verdicts(items: list[Item], pick: Any, both_orders: bool = False) -> list[Judgment]:
    out = []
    for k, it in enumerate(items):
        v = pick(k, it)
        meta = {}
        if both_orders:
            meta["orders"] = {"original": v, "swapped": "second" if v == "first" else "first"} if v else {}
        out.append(Judgment(item_id=it.id, verdict=v, meta=meta))
    return out


def test_pairwise_accuracy_counts_a_failed_verdict_as_wrong_and_flips_are_listed():
    items = _pairs()
    right = _verdicts(
        items, lambda k, it: "first" if it.preference["q"] == "A" else "second", both_orders=True
    )
    abstain = _verdicts(
        items,
        lambda k, it: None if k % 4 == 0 else ("first" if it.preference["q"] == "A" else "second"),
        both_orders=True,
    )
    report = diff_judgments(items, right, abstain, criterion="q", n_boot=200, n_perm=500)
    acc = report.measure("accuracy")
    assert (acc.a, acc.b, acc.n) == (1.0, pytest.approx(18 / 24), 24)
    assert report.measure("failure-rate").b == pytest.approx(6 / 24)
    assert report.measure("position-consistency").a == 1.0
    # a failed order is inconsistent
    assert report.measure("position-consistency").b == pytest.approx(18 / 24)
    assert sum(c.change == "failed in B" for c in report.changes) == 6
    result = gate(report, parse_fail_on("agreement", "pairwise"))
    assert result.failed and "accuracy" in result.reason  # 6 misses in 6 documents: p about 2/64
    clustered = diff_judgments(
        items,
        right,
        _verdicts(
            items, lambda k, it: None if k < 6 else ("first" if it.preference["q"] == "A" else "second")
        ),
        criterion="q",
        n_boot=0,
        n_perm=500,
    )
    assert clustered.measure("accuracy").p > 0.2  # the same 6 misses in 3 documents: 2 of 8 sign patterns
    assert "<failure" in junit_xml(report.model_copy(update={"gate": result}))


def test_position_consistency_is_not_computed_for_a_judge_that_saw_one_order():
    items = _pairs()
    one = _verdicts(items, lambda k, it: "first")
    report = diff_judgments(items, one, one, criterion="q", n_boot=0, n_perm=100)
    m = report.measure("position-consistency")
    assert m.delta is None and "both orders" in (m.reason or "")
    with pytest.raises(ConfigError, match="cannot gate on position-consistency"):
        gate(report, parse_fail_on("position-consistency", "pairwise"))


def test_holm_adjusts_the_gated_p_values_and_none_keeps_them():
    items = [Item(id=f"i{k}", output="w " * (k + 1), human={"c": float(k % 5)}) for k in range(40)]
    a = [Judgment(item_id=it.id, scores={"c": it.human["c"]}) for it in items]
    b = [Judgment(item_id=it.id, scores={"c": float((k * 7) % 5)}) for k, it in enumerate(items)]
    report = diff_judgments(items, a, b, criterion="c", n_boot=0, n_perm=500)
    held = gate(report, parse_fail_on("spearman,failure-rate,length-bias", "score"), "holm")
    raw = gate(report, parse_fail_on("spearman,failure-rate,length-bias", "score"), "none")
    for h, r in zip(held.checks, raw.checks, strict=True):
        assert h.p_adjusted >= r.p_adjusted == r.p
    assert min(c.p_adjusted for c in held.checks) == pytest.approx(3 * min(c.p for c in raw.checks))
    assert not math.isnan(report.measure("length-bias").a or math.nan)


def test_probes_become_slices_of_the_diff_with_each_judges_robustness_rate(tmp_path, monkeypatch):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))

    def reply(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        quality = int(re.search(r"quality=(\d)", text).group(1))  # type: ignore[union-attr]
        pushed = re.search(r"a score of (\d) \(on the scale", text)
        if pushed and "Please rate" in text:  # B yields to social pressure, A does not
            return f"Score: {pushed.group(1)}"
        return f"Score: {quality}"

    with StubOpenAIServer(latency=0.0, reply=reply) as server:
        result = _diff_two_prompts(
            tmp_path,
            server,
            "Please rate the summary",
            "-n",
            "16",
            "--probes",
            "social-pressure,format",
            "--json",
        )
    assert result.exit_code == 0, result.output
    rows = {s["key"]: s for s in json.loads(result.stdout)["slices"] if s["kind"] == "probe"}
    assert rows["social-pressure"]["a"] == 1.0 and rows["social-pressure"]["b"] < 0.5
    assert rows["format"]["a"] == rows["format"]["b"] == 1.0 and "rerun (noise floor)" in rows


@pytest.mark.parametrize(
    ("probes", "expected"), [("social-pressur", "social-pressur"), ("paraphrase", "--rewriter")]
)
def test_a_probe_diff_cannot_run_is_refused_before_any_call(tmp_path, monkeypatch, probes, expected):
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    with StubOpenAIServer(latency=0.0, reply="Score: 3") as server:
        result = _diff_two_prompts(tmp_path, server, "Please rate the summary", "-n", "4", "--probes", probes)
        served = server.request_count
    assert result.exit_code == 2 and expected in result.stderr, result.output
    assert served == 0


def test_length_slices_are_listed_shortest_first():
    from mitigate.diff._slices import _slice_order

    labels = ["57-69 words", "5-46 words", "70-107 words", "47-56 words", "5-46 words"]
    assert _slice_order("length", labels) == ["5-46 words", "47-56 words", "57-69 words", "70-107 words"]
    assert _slice_order("system", ["M2", "M1", "M2"]) == ["M2", "M1"]


# ------------------------------------------------------------------ --margin: pass, fail, inconclusive


def _fuzzy(seed: str) -> Any:
    """A judge off by one point on about a third of the items (which ones set by ``seed``)."""

    def score(it: dict[str, Any]) -> float:
        move = random.Random(seed + it["id"]).choice([-1, 0, 0, 1])
        return float(min(5, max(1, it["human"]["coherence"] + move)))

    return score


def test_margin_passes_when_the_interval_excludes_a_drop_of_the_margin(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "same", _good)
    xml = tmp_path / "gate.xml"
    args = ("--recorded", str(a), "--recorded", str(b), "--margin", "spearman:0.1", "--junit", str(xml))
    result = _run(*_bench_arg(tmp_path), *args, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["gate"]["outcome"] == "pass"
    spearman = next(m for m in data["measures"] if m["name"] == "spearman")
    assert spearman["outcome"] == "pass" and spearman["margin"] == 0.1 and spearman["p_margin"] < 0.05
    assert ET.parse(xml).getroot().get("skipped") == "0"


def test_margin_is_inconclusive_with_exit_3_when_the_data_allow_a_larger_drop(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "fuzzy", _fuzzy("a"))
    b = _recorded(tmp_path, "b.jsonl", "fuzzy-too", _fuzzy("b"))
    xml = tmp_path / "gate.xml"
    args = ("--recorded", str(a), "--recorded", str(b), "--margin", "spearman:0.02", "--junit", str(xml))
    result = _run(*_bench_arg(tmp_path), *args)
    assert result.exit_code == 3, result.output
    line = next(ln for ln in result.stderr.splitlines() if ln.startswith("inconclusive:"))
    assert "inconclusive on spearman (coherence)" in line and "the margin) is not ruled out" in line
    needed = int(re.search(r"about (\d+) items \(now 48\)", line).group(1))
    assert needed > 48
    assert "INCONCLUSIVE" in result.stdout
    suite = ET.parse(xml).getroot()
    skipped = suite.find("testcase/skipped")
    assert suite.get("skipped") == "1" and skipped is not None and skipped.get("type") == "inconclusive"
    text = _run(
        *_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b), "--margin", "spearman:0.02"
    )
    json_out = _run(
        *_bench_arg(tmp_path),
        "--recorded",
        str(a),
        "--recorded",
        str(b),
        "--margin",
        "spearman:0.02",
        "--json",
    )
    assert text.exit_code == json_out.exit_code == 3
    assert json.loads(json_out.stdout)["gate"]["outcome"] == "inconclusive"


def test_margin_still_fails_a_judge_shown_worse(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "noisy", _noisy)
    result = _run(
        *_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b), "--margin", "spearman:0.5"
    )
    assert result.exit_code == 1 and "regression:" in result.stderr


def test_without_a_margin_the_output_says_when_the_interval_cannot_rule_out_a_drop(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "fuzzy", _fuzzy("a"))
    b = _recorded(tmp_path, "b.jsonl", "fuzzy-too", _fuzzy("b"))
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert result.exit_code == 0, result.output
    assert re.search(
        r"the interval does not rule out a drop of 0\.\d{3} \(gate non-inferiority", result.stdout
    )


@pytest.mark.parametrize(
    "margin, message",
    [
        ("spearman", "MEASURE:SIZE with a size > 0"),
        ("length-bias:0.1", "among the gated ones"),
        ("spearman:-1", "size > 0"),
    ],
)
def test_a_bad_margin_is_refused(tmp_path, margin, message):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(a), "--margin", margin)
    assert result.exit_code == 2 and message in result.stderr


# --------------------------------------------------------------------------- the edges


def test_an_undeclared_file_scoring_off_the_benchmarks_scale_is_refused_naming_the_scale(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(
        tmp_path, "b.jsonl", "tens", lambda it: 2 * _good(it)
    )  # 2..10 on a 1-5 benchmark, no header
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert result.exit_code == 2
    assert "expected judge 'tens' to score on 1 to 5" in result.stderr and "off it" in result.stderr


def test_a_judge_skipping_the_items_a_ranks_worst_pays_for_it_in_its_own_column(tmp_path):
    rows = _items()
    worst = {r["id"] for r in rows if r["human"]["coherence"] == 1}  # the hard items, where A is right
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "skips", lambda it: None if it["id"] in worst else _good(it))
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b), "--json")
    by = {m["name"]: m for m in json.loads(result.stdout)["measures"]}
    assert by["spearman"]["a"] == pytest.approx(1.0)  # A's own value on all its items
    assert by["spearman"]["b"] < 0.9 and by["spearman"]["delta"] < 0  # B's abstentions count against it
    assert by["spearman-common"]["delta"] == pytest.approx(0.0)  # the common items hide the skipping
    assert result.exit_code == 1


def test_answers_for_items_not_in_the_benchmark_are_named(tmp_path):
    a = _recorded(tmp_path, "a.jsonl", "good", _good)
    b = _recorded(tmp_path, "b.jsonl", "extra", _good)
    b.write_text(
        b.read_text()
        + json.dumps({"item_id": "ghost/1", "judge": "extra", "criterion": "coherence", "score": 3})
        + "\n"
    )
    result = _run(*_bench_arg(tmp_path), "--recorded", str(a), "--recorded", str(b))
    assert result.exit_code == 0, result.output
    assert "judge 'extra' answers 1 items on 'coherence' that benchmark" in result.stdout
    assert "['ghost/1']" in result.stderr
