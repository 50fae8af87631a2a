"""Fitted values keep what they learned, not their training data, and choose the demos their rules say.

The training pool is generated here at the size of SummEval's (600 summaries, each with a
source article, reference summaries and per-annotator scores: about 6 KB an item), never
copied from it. The selections are checked against each selector's documented rule,
written out again below independently of the library.
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from mitigate.data import Benchmark, Item
from mitigate.judge import FitContext, PromptJudge
from mitigate.lm import FakeLM
from mitigate.scale import Scale
from mitigate.selectors import HighestRS, Random, Stratified
from mitigate.strategies import parse_pipeline
from mitigate.testing import example_judge
from tests.strategies.test_highest_rs import hand_rs

CRITERIA = ("coherence", "consistency", "fluency", "relevance")
WORDS = (
    "the council said on monday that its plan for the harbour would cost more than first thought while "
    "residents asked why the bridge stayed closed after the storm and a spokesman for the port added that "
    "ferries will run again next week once engineers finish checking every pier along the northern quay"
).split()


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))) + "."


def summeval_sized_pool(n_docs: int = 100, systems: int = 6, seed: int = 0) -> Benchmark:
    """``n_docs * systems`` generated items shaped like SummEval's.

    Ids, a source article, a summary, 11 reference summaries and 8 raters' scores per item.
    """
    rng = random.Random(seed)
    items = []
    for d in range(n_docs):
        doc = hashlib.sha1(f"doc-{seed}-{d}".encode()).hexdigest()
        source = _text(rng, 250, 420)
        references = [_text(rng, 25, 65) for _ in range(11)]
        for s in range(systems):
            experts = {c: tuple(float(rng.randint(1, 5)) for _ in range(3)) for c in CRITERIA}
            turkers = {c: tuple(float(rng.randint(1, 5)) for _ in range(5)) for c in CRITERIA}
            items.append(
                Item(
                    id=f"M{s}/dm-test-{doc}",
                    output=_text(rng, 50, 70),
                    inputs={"source": source},
                    system=f"M{s}",
                    doc_id=f"dm-test-{doc}",
                    reference=references[0],
                    human={c: round(sum(v) / 3, 4) for c, v in experts.items()},
                    annotators=experts,
                    meta={"expert": experts, "turker": turkers, "references": references},
                )
            )
    return Benchmark(name="summeval-sized", items=tuple(items), criteria=CRITERIA, scale=Scale(min=1, max=5))


def _judge() -> PromptJudge:
    return example_judge(("coherence",), lm=FakeLM([]))  # never called: nothing here judges while fitting


def _bytes(value: object) -> int:
    return len(json.dumps(value))


TWO_DEMOS = [
    "random-demos(k=2)",
    "demos(selector=stratified, k=2)",
    "perturbed-demos(m=2, n=2)",
    "highest-rs-demos(k=2)",
]


@pytest.mark.parametrize("text", TWO_DEMOS)
def test_a_fitted_two_demo_pipeline_on_a_summeval_sized_pool_has_a_spec_under_50_kb(text: str) -> None:
    train = summeval_sized_pool()
    assert (
        len(train) == 600 and _bytes(train.model_dump(mode="json")) > 3_000_000
    )  # the size of SummEval's 600
    ids = [it.id for it in train.items]
    ctx = FitContext(
        progress=False,
        criterion="coherence",
        ls={i: -float(len(i) + n) for n, i in enumerate(ids)},
        judge_scores={i: float(1 + n % 5) for n, i in enumerate(ids)},
    )  # Highest-RS calls no LM
    fitted = parse_pipeline(text).fit(train, _judge(), ctx)
    spec = json.loads(json.dumps(fitted.spec()))
    assert _bytes(spec) < 50_000, f"{text}: {_bytes(spec)} bytes"
    assert (
        parse_pipeline(text).steps[0].__class__.model_validate(spec["steps"][0]["params"]) == fitted.steps[0]
    )
    (step,) = fitted.steps
    assert len(step.demos_) == 2 and step.selector_.n_pool_ == 600 and step.selector_.pool_ is None
    shown = {d.item.id for d in step.demos_}
    named = {s for s in json.dumps(spec).split('"') if s in set(ids)}
    assert named == shown  # no other training item is named anywhere in the spec
    assert all(not d.item.meta and not d.item.annotators for d in step.demos_)  # never shown, not kept


def test_a_per_item_selector_keeps_its_pool_as_demos_need_it_and_no_more() -> None:
    train = summeval_sized_pool(n_docs=20)
    fitted = parse_pipeline("demos(selector=knn, k=2)").fit(train, _judge(), progress=False)
    pool = fitted.steps[0].selector_.pool_
    assert len(pool) == len(train) and all(not it.meta and not it.annotators for it in pool)
    kept = _bytes(fitted.spec())
    assert kept < _bytes(train.model_dump(mode="json")) * 0.6  # the texts demos show, not the metadata


# --------------------------------------------------------------------------- the documented selection rules


def _labelled(train: Benchmark, criterion: str) -> list[Item]:
    return [it for it in train.items if criterion in it.human]


def _random_rule(pool: list[Item], k: int, seed: int) -> list[str]:
    """Random's documented rule: ``random.Random(seed).sample(candidates, k)``, the labelled pool in order."""
    return [it.id for it in random.Random(seed).sample(pool, k)]


def _stratified_two_rule(pool: list[Item], criterion: str, seed: int) -> list[str]:
    """Stratified's documented rule for k=2 (fewer demos than labels): one item of the lowest label and one
    of the highest, each drawn from its label's items sorted by id, then shuffled (one seeded generator)."""
    rng = random.Random(seed)
    labels = sorted({round(it.human[criterion], 6) for it in pool})
    picks = []
    for label in (labels[0], labels[-1]):
        group = sorted((it for it in pool if round(it.human[criterion], 6) == label), key=lambda it: it.id)
        picks.extend(rng.sample(group, 1))
    rng.shuffle(picks)
    return [it.id for it in picks]


def _range_rule(pool: list[Item], criterion: str, m: int, seed: int) -> list[str]:
    """``by="range"``'s documented rule: prefer gold scores on the judge's 1-5 points, sort by (score, id),
    cut into ``m`` near-equal contiguous strata, draw one from each, shuffle."""
    on_scale = [it for it in pool if float(it.human[criterion]).is_integer()]
    eligible = on_scale if len(on_scale) >= m else pool
    ordered = sorted(eligible, key=lambda it: (it.human[criterion], it.id))
    rng = random.Random(seed)
    size, extra = divmod(len(ordered), m)
    picks, start = [], 0
    for i in range(m):
        end = start + size + (1 if i < extra else 0)
        picks.append(rng.choice(ordered[start:end]))
        start = end
    rng.shuffle(picks)
    return [it.id for it in picks]


def _rs_rule(
    pool: list[Item], criterion: str, ls: dict[str, float], judge: dict[str, float], k: int
) -> list[str]:
    """Ohi et al.'s RS = |LS* + US*| by hand (``test_highest_rs.hand_rs``), top ``k``, ties in pool order."""
    rs = hand_rs(
        [it.human[criterion] for it in pool], [judge[it.id] for it in pool], [ls[it.id] for it in pool]
    )
    order = sorted(range(len(pool)), key=lambda i: -rs[i])
    return [pool[i].id for i in order[:k]]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_fitted_demos_are_the_ones_each_selection_rule_chooses(seed: int) -> None:
    train = summeval_sized_pool(n_docs=30, seed=seed)
    pool = _labelled(train, "coherence")
    judge = _judge()

    def fitted_ids(text: str, **options: object) -> list[str]:
        (step,) = parse_pipeline(text).fit(train, judge, FitContext(progress=False, **options)).steps
        return [d.item.id for d in step.demos_]

    assert fitted_ids(f"random-demos(k=3, seed={seed}, criterion=coherence)") == _random_rule(pool, 3, seed)
    stratified = (
        f'demos(selector={{"name": "stratified", "params": {{"seed": {seed}}}}}, k=2, criterion=coherence)'
    )
    assert fitted_ids(stratified) == _stratified_two_rule(pool, "coherence", seed)
    assert fitted_ids(f"perturbed-demos(m=2, n=2, seed={seed})", criterion="coherence") == _range_rule(
        pool, "coherence", 2, seed
    )
    ls = {it.id: -float(len(it.output)) for it in pool}
    scores = {it.id: float(1 + (len(it.output) + n) % 5) for n, it in enumerate(pool)}
    assert fitted_ids("highest-rs-demos(k=4, criterion=coherence)", ls=ls, judge_scores=scores) == _rs_rule(
        pool, "coherence", ls, scores, 4
    )
    # a selector fitted alone keeps its pool and answers any k; fitted for a demo set, it keeps those demos
    alone = Random(seed=seed).fit(train, criterion="coherence")
    assert [d.item.id for d in alone.select(5)] == _random_rule(pool, 5, seed)
    assert [d.item.id for d in alone.with_choice(3).select(3)] == _random_rule(pool, 3, seed)
    assert [
        d.item.id for d in Stratified(seed=seed).fit(train, criterion="coherence").select(2)
    ] == _stratified_two_rule(pool, "coherence", seed)
    top = HighestRS().fit(train, criterion="coherence", ls=ls, judge_scores=scores).with_choice(4)
    assert [d.item.id for d in top.select(4)] == _rs_rule(pool, "coherence", ls, scores, 4)
    assert set(top.rs_) == set(top.ls_) == set(_rs_rule(pool, "coherence", ls, scores, 4))
