"""compare(): runs named judges, resumes from journals, and measures accuracy and bias with
NaN-with-reason."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import mitigate.measures as M
from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark, load, select_items
from mitigate.errors import ConfigError
from mitigate.harness import Entry, compare
from mitigate.lm import FakeLM, LMRequest
from mitigate.paths import data_dir
from mitigate.prompt import PromptMessage
from mitigate.registry import register
from mitigate.replay import ReleasedJudge
from mitigate.report import load_results, write_report
from mitigate.strategies import Pipeline, PromptMitigation

TEMPLATE = "Rate the text from 1 to 5.\nText: {{output}}\nScore:"
MARK = "[[exact]]"


@register("mitigation", "test-compare-exact")
class ExactHint(PromptMitigation):
    """Test-only: appends a marker the fake LM answers with the true score."""

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        return prompt.map_templates(lambda m: PromptMessage(role=m.role, template=m.template + "\n" + MARK))


def _bench(docs: int = 5, systems: int = 4) -> Benchmark:
    items = []
    for d in range(docs):
        for s in range(systems):
            q = 1 + (d * 3 + s * 2) % 5
            words = " ".join(["word"] * (3 + (d + s) % 7))
            items.append(
                Item(
                    id=f"S{s}/d{d}",
                    system=f"S{s}",
                    doc_id=f"d{d}",
                    output=f"q={q} d{d} {words}",
                    human={"quality": float(q) + 0.1 * s},
                )
            )
    return Benchmark(name="toy", items=tuple(items), criteria=("quality",))


def _answer(request: LMRequest) -> str:
    text = request.messages[-1].content
    q = int(re.search(r"q=(\d)", text).group(1))
    if MARK in text:
        return f"Score: {q}"
    if "d4" in text and q == 2:
        return "no idea"
    return f"Score: {(q * 2) % 5 + 1}"


def _base(lm: FakeLM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(TEMPLATE, criterion="quality"), lm)


def _entries(lm: FakeLM) -> list[Entry]:
    base = _base(lm)
    return [Entry.from_pipeline("baseline", base, Pipeline()), Entry.from_pipeline(None, base, ExactHint())]


async def test_compare_reports_every_measure_with_ci_and_the_difference_against_the_first(
    tmp_path: Path,
) -> None:
    lm = FakeLM(_answer)
    result = await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=_entries(lm),
        out_dir=tmp_path,
        progress=False,
        n_boot=200,
        n_perm=500,
    )
    assert [e.name for e in result.entries] == ["baseline", "test-compare-exact"]
    base, exact = result.entries
    assert set(exact.measures) == set(M.measure_table("score"))
    rho = exact.measures["spearman-item"]
    assert rho.value > 0.9 and rho.n == 20 and rho.ci_low is not None and rho.ci_high is not None
    # the baseline's parse failure is counted, never scored
    assert base.summary.parse_failures == 1 and base.measures["spearman-item"].n_failed == 1
    assert exact.measures["correct-preferences"].extra["n_pairs"] == 6
    assert exact.comparison is not None and exact.comparison.against == "baseline"
    assert exact.comparison.observed > 0 and 0 < exact.comparison.p_value <= 1
    assert base.comparison is None
    assert set(exact.per_system) == {"S0", "S1", "S2", "S3"}
    assert sum(exact.histogram.values()) == 20
    assert (tmp_path / "journals" / "baseline.jsonl").is_file()
    assert (tmp_path / "journals" / "test-compare-exact.jsonl").is_file()


async def test_compare_resumes_from_journals_without_new_lm_calls(tmp_path: Path) -> None:
    first = await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=_entries(FakeLM(_answer)),
        out_dir=tmp_path,
        progress=False,
        n_boot=0,
    )
    silent = FakeLM([])  # any call would raise ScriptExhaustedError
    again = await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=_entries(silent),
        out_dir=tmp_path,
        progress=False,
        n_boot=0,
    )
    assert silent.calls == 0
    assert all(e.summary.resumed == 20 and e.summary.judged_now == 0 for e in again.entries)
    key = "spearman-item"
    assert again.entries[1].measures[key].value == first.entries[1].measures[key].value


async def test_too_small_run_gives_nan_with_reason_not_zero(tmp_path: Path) -> None:
    result = await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=_entries(FakeLM(_answer)),
        out_dir=tmp_path,
        limit=2,
        progress=False,
        n_boot=50,
    )
    m = result.entries[1].measures["spearman-item"]
    assert math.isnan(m.value) and "at least 3" in (m.reason or "")
    assert math.isnan(result.entries[1].measures["bias-score"].value)
    assert "likelihood" in (result.entries[1].measures["bias-score"].reason or "")
    assert "sample" in (result.entries[1].measures["alpha-across-samples"].reason or "")
    write_report(result, tmp_path)
    data = json.loads((tmp_path / "results.json").read_text())
    stored = data["entries"][1]["measures"]["spearman-item"]
    assert stored["value"] is None and "at least 3" in stored["reason"]
    assert math.isnan(load_results(tmp_path).entries[1].measures["spearman-item"].value)


async def test_samples_likelihood_and_perturbations_feed_their_measures(tmp_path: Path) -> None:
    from mitigate.judge import Judge, Judgment, LikelihoodScorer
    from mitigate.lm import LM, LMResponse

    class LengthLM(LM):
        provider = "test-length"

        async def complete(self, request: LMRequest) -> LMResponse:
            raise AssertionError("not used")

        async def loglikelihood(self, context: str, continuation: str) -> float:
            self.calls = getattr(self, "calls", 0) + 1
            return -2.0 * len(continuation.split())

    class PerturbedJudge(Judge):
        """Scores with two samples and reports two perturbations, the second flipping some items."""

        async def judge(self, item: Item) -> Judgment:
            q = float(item.output[2])
            flip = q + 1 if item.doc_id == "d0" else q
            return Judgment(
                item_id=item.id,
                scores={"quality": q},
                samples={"quality": (q, flip)},
                meta={"perturbations": {"original": q, "reversed": flip}},
            )

        def map_leaves(self, fn):  # pragma: no cover - not used
            return self

        def describe(self) -> dict:
            return {"kind": "test-perturbed"}

    lm = LengthLM()
    scorer = LikelihoodScorer(lm)
    entries = [Entry(name="perturbed", judge=PerturbedJudge())]
    result = await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=entries,
        out_dir=tmp_path,
        likelihood=scorer,
        progress=False,
        n_boot=50,
    )
    measures = result.entries[0].measures
    assert measures["perturbation-consistency"].value == pytest.approx(16 / 20)
    assert math.isfinite(measures["alpha-across-samples"].value)
    assert math.isfinite(measures["bias-score"].value)
    assert lm.calls == 20 and all(it.ls is not None for it in result.items)
    # LS is cached per item: a second compare computes none again
    lm2 = LengthLM()
    await compare(
        benchmark=_bench(),
        criterion="quality",
        entries=entries,
        out_dir=tmp_path,
        likelihood=LikelihoodScorer(lm2),
        progress=False,
        n_boot=0,
    )
    assert getattr(lm2, "calls", 0) == 0


async def test_bad_inputs_raise_config_errors(tmp_path: Path) -> None:
    lm = FakeLM(_answer)
    base = _base(lm)
    with pytest.raises(ConfigError, match="unique entry names"):
        await compare(
            benchmark=_bench(),
            criterion="quality",
            entries=[Entry.from_pipeline("a", base, Pipeline())] * 2,
            out_dir=tmp_path,
        )
    with pytest.raises(ConfigError, match="criterion"):
        await compare(benchmark=_bench(), criterion="nope", entries=_entries(lm), out_dir=tmp_path)
    with pytest.raises(ConfigError, match="limit"):
        await compare(
            benchmark=_bench(), criterion="quality", entries=_entries(lm), out_dir=tmp_path, limit=0
        )
    with pytest.raises(ConfigError, match="at least one entry"):
        await compare(benchmark=_bench(), criterion="quality", entries=[], out_dir=tmp_path)
    assert lm.calls == 0


def test_select_items_keeps_whole_documents_first() -> None:
    bench = _bench()
    by_system = sorted(bench.items, key=lambda i: (i.system, i.doc_id))
    picked = select_items(by_system, 6)
    assert [i.doc_id for i in picked] == ["d0"] * 4 + ["d1"] * 2


def _summeval_or_skip() -> None:
    root = data_dir()
    if root is None or not (root / "summeval_llm_summeval" / "eval_model_generations").is_dir():
        pytest.skip("shared SummEval data (summeval_llm_summeval) is not available")


@pytest.mark.slow
async def test_released_judges_are_measured_without_calls_on_a_summeval_slice(tmp_path: Path) -> None:
    _summeval_or_skip()
    entries = [Entry.from_released("chatgpt-rts", "coherence"), Entry.from_released("gpt4-rts", "coherence")]
    result = await compare(
        benchmark="summeval",
        criterion="coherence",
        entries=entries,
        out_dir=tmp_path,
        limit=36,
        progress=False,
        n_boot=50,
        n_perm=200,
    )
    write_report(result, tmp_path)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["benchmark"] == "summeval" and len(data["items"]) == 36
    rts = data["entries"][0]
    assert len(rts["judgments"]) == 36 and rts["summary"]["calls"] == 0
    assert rts["judgments"][0]["meta"]["released"]["judge"] == "chatgpt-rts"
    # the harness number equals a direct computation from the released scores
    items = select_items(load("summeval").items, 36)
    run = ReleasedJudge("chatgpt-rts", "coherence").run
    direct = M.item_correlation(
        [run.get(i.id, "coherence").score for i in items], M.human_scores(items, "coherence"), "spearman"
    ).value
    assert rts["measures"]["spearman-item"]["value"] == pytest.approx(direct)
    assert rts["measures"]["correct-preferences"]["extra"]["n_pairs"] == 66
    assert data["entries"][1]["comparison"]["against"] == "chatgpt-rts"


async def test_released_judge_records_parse_failures_and_refuses_prompt_transforms(tmp_path: Path) -> None:
    _summeval_or_skip()
    judge = ReleasedJudge("gpt4-rts", "consistency")
    failed = [
        j.item_id for j in judge.run.iter_judgments() if j.criterion == "consistency" and j.score is None
    ]
    assert failed, "gpt4-rts consistency has released answers the parser rejects"
    judgment = await judge.judge(Item(id=failed[0], output="x"))
    assert judgment.scores == {"consistency": None} and judgment.failures and judgment.calls == 0
    assert judgment.failures[0].raw == judgment.raw[0]
    with pytest.raises(ConfigError, match="answers for the 1,200 items"):
        await compare(
            benchmark=Benchmark(
                name="other",
                items=(Item(id="x/1", output="o", human={"consistency": 3.0}),),
                criteria=("consistency",),
            ),
            criterion="consistency",
            entries=[Entry(name="g", judge=judge)],
            out_dir=tmp_path,
        )
    with pytest.raises(ConfigError, match="no prompt to transform"):
        judge.map_prompts(lambda p: p)
    with pytest.raises(ConfigError, match="criterion"):
        ReleasedJudge("gpt4-rts", "tastiness")
