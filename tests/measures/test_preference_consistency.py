"""Score-vs-pair conflicts and preference cycles (TrustJudge), and Bradley-Terry rankings with intervals and
cycles."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from mitigate.data import Item
from mitigate.errors import DataError
from mitigate.measures import (
    EntryData,
    both_orders_relation,
    comparisons_from_verdicts,
    fit_bradley_terry,
    majority_cycles,
    score_pair_conflict,
    transitivity_violations,
)
from mitigate.measures._pairwise_distribution import triple_violation
from mitigate.registry import lookup
from mitigate.scale import Scale


def test_a_pair_conflicts_when_its_relation_is_not_the_one_its_scores_imply() -> None:
    m = score_pair_conflict([4, 3, 5, None], [2, 3, 1, 2], [">", ">", "<", ">"])
    assert m.value == pytest.approx(2 / 3) and m.n == 3 and m.n_failed == 1
    assert m.extra["by_kind"] == {"scores = / pairwise >": 1, "scores > / pairwise <": 1}
    assert score_pair_conflict([4.2], [4.0], ["="], tolerance=0.25).value == 0.0


def test_both_orders_count_as_a_preference_only_when_they_agree() -> None:
    assert both_orders_relation("A", "A") == ">" and both_orders_relation("B", "B") == "<"
    assert both_orders_relation("A", "B") == "=" and both_orders_relation("A", None) is None


def test_a_triple_is_contradictory_exactly_when_no_ranking_with_ties_fits() -> None:
    assert triple_violation(">", ">", ">") is None and triple_violation("=", "=", "=") is None
    assert triple_violation(">", "<", "=") is None  # x > y, z > y, x = z: a ranking with a tie
    assert triple_violation(">", ">", "<") == "circular"  # x > y > z > x
    assert triple_violation("=", "=", ">") == "equivalence"  # x = y = z but x > z
    assert triple_violation(">", "=", "<") == "circular"  # x > y = z > x
    fits = sum(triple_violation(*r) is None for r in itertools.product(">=<", repeat=3))
    assert fits == 13  # the 13 rankings with ties of three items


def test_the_cycle_rate_counts_sets_of_responses_whose_every_pair_was_judged() -> None:
    rels = {
        ("q1", "a", "b"): ">",
        ("q1", "b", "c"): ">",
        ("q1", "c", "a"): ">",  # a cycle
        ("q2", "a", "b"): ">",
        ("q2", "b", "c"): ">",
        ("q2", "a", "c"): ">",
        ("q3", "a", "b"): ">",
        ("q3", "b", "c"): ">",
    }  # a-c never judged: left out
    m = transitivity_violations(rels)
    assert (
        m.value == 0.5 and m.n == 2 and m.n_failed == 1 and m.extra["contradicting_triples"]["circular"] == 1
    )
    four = {("q", x, y): ">" for x, y in itertools.combinations("abcd", 2)} | {("q", "a", "d"): "<"}
    assert transitivity_violations(four, k=4).value == 1.0
    with pytest.raises(DataError, match="judged"):
        transitivity_violations({("q", "a", "b"): ">", ("q", "b", "a"): ">"})


def _round_robin(strength: dict[str, float], docs: int, seed: int = 0) -> list[Item]:
    rng = random.Random(seed)
    items = []
    for d in range(docs):
        for x, y in itertools.combinations(sorted(strength), 2):
            p = 1 / (1 + math.exp(-(strength[x] - strength[y])))
            items.append(
                Item(
                    id=f"{d}/{x}-{y}",
                    output=x,
                    output_b=y,
                    system=x,
                    system_b=y,
                    doc_id=f"d{d}",
                    preference={"overall": "A" if rng.random() < p else "B"},
                )
            )
    return items


def test_bradley_terry_recovers_the_strengths_and_their_order_with_fisher_intervals() -> None:
    strength = {"s1": 1.0, "s2": 0.5, "s3": 0.0, "s4": -1.5}
    items = _round_robin(strength, 400)
    comps, _ = comparisons_from_verdicts(
        [i.system for i in items], [i.system_b for i in items], [i.preference["overall"] for i in items]
    )
    fit = fit_bradley_terry(comps)
    truth = {k: v - np.mean(list(strength.values())) for k, v in strength.items()}
    for s, v in truth.items():
        assert fit.low[s] < v < fit.high[s], s
    assert fit.ranking.order == ("s1", "s2", "s3", "s4") and ("s1", "s4") in fit.ranking.separable
    assert sum(fit.abilities.values()) == pytest.approx(0.0, abs=1e-9)
    boot = fit_bradley_terry(comps, method="bootstrap", n_boot=200, clusters=[i.doc_id for i in items])
    assert boot.se["s1"] == pytest.approx(fit.se["s1"], rel=0.5)


def test_ties_count_half_and_a_system_that_never_lost_is_refused_unless_a_prior_is_given() -> None:
    tie = fit_bradley_terry([("a", "b", 0.5), ("a", "b", 0.5), ("b", "c", 1.0), ("c", "b", 1.0)])
    assert tie.abilities["a"] == pytest.approx(tie.abilities["b"]) and tie.n_ties == 2
    with pytest.raises(DataError, match="won \\(or lost\\) every comparison"):
        fit_bradley_terry([("a", "b", 1.0), ("b", "c", 1.0), ("c", "b", 1.0)])
    assert fit_bradley_terry([("a", "b", 1.0), ("b", "c", 1.0), ("c", "b", 1.0)], prior=1.0).prior == 1.0
    with pytest.raises(DataError, match="never compared"):
        fit_bradley_terry([("a", "b", 1.0), ("b", "a", 1.0), ("c", "d", 1.0), ("d", "c", 0.0)])


def test_the_majority_tournament_reports_its_cycles() -> None:
    cyc = majority_cycles(
        [("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 1.0), ("a", "d", 1.0), ("b", "d", 1.0), ("c", "d", 1.0)]
    )
    assert cyc["groups"] == [{"systems": ["a", "b", "c"], "cycle": ["a", "b", "c", "a"]}]
    assert cyc["cyclic_triples"] == 1 and cyc["complete_triples"] == 4


def _pairwise_entry(items: list[Item], verdicts: list[str], **resampling: int) -> EntryData:
    """A pairwise entry over ``items`` whose judge gave ``verdicts``."""
    return EntryData(
        scores=np.full(len(items), np.nan),
        items=items,
        criterion="overall",
        scale=Scale(),
        verdicts=verdicts,
        task="pairwise",
        **resampling,
    )


def test_the_registered_measures_read_round_robin_items() -> None:
    items = _round_robin({"s1": 2.0, "s2": 0.0, "s3": -2.0}, 60)
    gold = [i.preference["overall"] for i in items]
    entry = _pairwise_entry(items, gold, n_boot=0)
    bt = lookup("measure", "bradley-terry")().compute(entry)
    assert bt.value == pytest.approx(1.0) and bt.extra["judge"]["ranking"]["order"][0] == "s1"
    flipped = _pairwise_entry(items, [{"A": "B", "B": "A"}[v] for v in gold], n_boot=0)
    assert lookup("measure", "bradley-terry")().compute(flipped).value == pytest.approx(-1.0)
    cycles = lookup("measure", "preference-cycle-rate")().compute(entry)
    assert cycles.name == "preference-cycle-rate" and 0 <= cycles.value <= 1 and cycles.n == 60
    bare = [i.model_copy(update={"doc_id": None}) for i in items]
    no_doc = EntryData(
        scores=entry.scores, items=bare, criterion="overall", scale=Scale(), verdicts=gold, task="pairwise"
    )
    assert "doc_id" in str(lookup("measure", "preference-cycle-rate")().compute(no_doc).reason)


def test_bradley_terry_resamples_by_prompt_when_comparisons_share_one():
    rng = random.Random(4)
    systems = ["a", "b", "c", "d"]
    comps, prompts = [], []
    for p in range(60):  # each prompt compares one pair six times, all six with the same outcome
        x, y = rng.sample(systems, 2)
        won = 1.0 if rng.random() < 0.5 + 0.1 * (systems.index(y) - systems.index(x)) else 0.0
        comps += [(x, y, won)] * 6
        prompts += [f"p{p}"] * 6
    by_prompt = fit_bradley_terry(comps, clusters=prompts, n_boot=300)
    fisher = fit_bradley_terry(comps)
    assert by_prompt.method == "bootstrap" and fisher.method == "fisher"
    ratio = np.mean([by_prompt.se[s] / fisher.se[s] for s in systems])
    assert ratio > 1.8  # six copies per prompt: about sqrt(6) wider, which Fisher's intervals ignore
    alone = fit_bradley_terry(comps, clusters=list(range(len(comps))))
    assert alone.method == "fisher"  # every comparison its own prompt: nothing shared


def test_the_bradley_terry_measures_rank_intervals_resample_as_many_times_as_the_entry_asks() -> None:
    items = _round_robin({"s1": 1.0, "s2": 0.0, "s3": -1.0}, 30)
    gold = [i.preference["overall"] for i in items]
    comps, rows = comparisons_from_verdicts([i.system for i in items], [i.system_b for i in items], gold)
    clusters = [str(items[r].doc_id) for r in rows]
    for n_boot, seed in ((40, 3), (90, 5)):
        entry = _pairwise_entry(items, gold, n_boot=n_boot, seed=seed)
        judged = lookup("measure", "bradley-terry")().compute(entry).extra["judge"]
        alone = fit_bradley_terry(comps, clusters=clusters, n_boot=n_boot, seed=seed).model_dump(mode="json")
        assert judged["low"] == alone["low"] and judged["high"] == alone["high"]
