"""Panel reducers beyond majority: Dawid-Skene (supervised and EM), minority veto, and the effective number of
votes."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, DataError
from mitigate.judge import Judgment, PromptJudge
from mitigate.lm import FakeLM
from mitigate.measures import (
    EntryData,
    dawid_skene_posterior,
    effective_votes,
    fit_dawid_skene,
    member_confusion,
    panel_votes,
)
from mitigate.measures._panel import verdict_errors
from mitigate.prompt import JudgePrompt
from mitigate.registry import lookup
from mitigate.scale import Scale
from mitigate.strategies import DawidSkene, MinorityVeto, PanelJudge
from mitigate.testing._examples import GUIDED, PAIRWISE


def _simulate(acc: dict[str, float], n: int, seed: int = 0) -> tuple[list[str], list[list[str | None]]]:
    rng = random.Random(seed)
    gold = [rng.choice("AB") for _ in range(n)]
    votes = [[g if rng.random() < a else ("B" if g == "A" else "A") for a in acc.values()] for g in gold]
    return gold, votes


def _accuracy(model, votes, gold) -> float:  # type: ignore[no-untyped-def]
    right = 0
    for row, g in zip(votes, gold, strict=True):
        p = dawid_skene_posterior(model, row)
        right += max(p, key=p.get) == g
    return right / len(gold)


ACC = {"strong": 0.9, "fair": 0.7, "bad1": 0.3, "bad2": 0.35, "coin": 0.5}


def test_supervised_dawid_skene_counts_each_members_confusion_from_gold() -> None:
    gold, votes = _simulate(ACC, 3000)
    model = fit_dawid_skene(votes, list(ACC), gold=gold, smoothing=0.0)
    assert model.supervised and model.classes == ("A", "B")
    for name, acc in ACC.items():
        assert model.balanced_accuracy(name) == pytest.approx(acc, abs=0.03), name
    matrix = model.member_matrix("bad1")
    # a below-chance member mostly answers the other class
    assert matrix["A"]["B"] == pytest.approx(0.7, abs=0.04)
    assert matrix["A"]["tie"] == pytest.approx(0.0, abs=1e-9)


def test_dawid_skene_beats_a_majority_that_drowns_the_strong_member() -> None:
    gold, votes = _simulate(ACC, 2000)
    majority = np.mean([max("AB", key=row.count) == g for row, g in zip(votes, gold, strict=True)])
    supervised = _accuracy(fit_dawid_skene(votes, list(ACC), gold=gold), votes, gold)
    em = fit_dawid_skene(votes, list(ACC))
    assert not em.supervised and em.converged
    assert majority < 0.65 and supervised > 0.88 and _accuracy(em, votes, gold) > 0.88


def test_a_missing_vote_carries_no_information() -> None:
    gold, votes = _simulate(ACC, 500)
    model = fit_dawid_skene(votes, list(ACC), gold=gold)
    alone = dawid_skene_posterior(model, {"strong": "A"})
    assert alone == dawid_skene_posterior(model, ["A", None, None, None, None])
    assert alone["A"] > 0.8
    assert dawid_skene_posterior(model, [None] * 5) is None
    with pytest.raises(DataError, match="members"):
        dawid_skene_posterior(model, {"nobody": "A"})


def test_scores_are_read_as_whole_numbers_and_give_a_posterior_mean() -> None:
    rng = random.Random(1)
    truth = [rng.randint(1, 5) for _ in range(600)]
    votes = [[str(t), str(min(5, t + 1)), str(rng.randint(1, 5))] for t in truth]
    model = fit_dawid_skene(votes, ["exact", "lenient", "noise"], kind="score", gold=[str(t) for t in truth])
    assert model.classes == ("1", "2", "3", "4", "5")
    post = dawid_skene_posterior(model, ["3", "4", "1"])
    assert max(post, key=post.get) == "3"


def test_effective_votes_follow_kish_from_the_error_correlation() -> None:
    gold, votes = _simulate({"a": 0.7, "b": 0.7, "c": 0.7, "d": 0.7}, 4000)
    independent = effective_votes(verdict_errors(votes, gold))
    assert independent.value == pytest.approx(4.0, abs=0.3)
    copies = [[row[0]] * 4 for row in votes]
    same = effective_votes(verdict_errors(copies, gold))
    assert same.value == pytest.approx(1.0) and same.extra["rho"] == pytest.approx(1.0)
    half = [[row[0], row[0], row[2], row[3]] for row in votes]  # one pair errs together, the others do not
    rho = effective_votes(verdict_errors(half, gold)).extra["rho"]
    assert effective_votes(verdict_errors(half, gold)).value == pytest.approx(4 / (1 + 3 * rho))
    opposite = [[row[0], ("B" if row[0] == "A" else "A")] for row in votes]
    assert math.isnan(effective_votes(verdict_errors(opposite, gold)).value)


# --------------------------------------------------------------------------- as mitigations on a panel


def _pairwise_items(n: int = 16) -> Benchmark:
    items = tuple(
        Item(
            id=f"p{i}",
            output=f"first {i}",
            output_b=f"second {i}",
            inputs={"source": f"doc {i}"},
            preference={"coherence": "A" if i % 2 else "B"},
        )
        for i in range(n)
    )
    return Benchmark(name="pairs", items=items, criteria=("coherence",))


def _by_gold(right: bool, except_every: int = 0) -> FakeLM:
    """A member that answers by the item's number: right (odd items prefer A) or the opposite, except on every
    ``except_every``-th item (where it gives the other answer)."""

    def answer(request) -> str:  # type: ignore[no-untyped-def]
        text = request.messages[-1].content
        i = int(text.split("Summary A: first ")[1].split()[0])
        a_better = i % 2 == 1
        flip = bool(except_every) and i % except_every == 0
        return "[[A]]" if (a_better == right) != flip else "[[B]]"

    return FakeLM(answer)


def _panel() -> PanelJudge:
    prompt = JudgePrompt.from_template(PAIRWISE)
    return PanelJudge(
        {
            "good": PromptJudge(prompt, _by_gold(True)),
            "bad1": PromptJudge(prompt, _by_gold(False, 5)),
            "bad2": PromptJudge(prompt, _by_gold(False, 5)),
        },
        reducer="majority",
    )


def test_dawid_skene_fitted_on_a_panel_reads_the_below_chance_members_backwards() -> None:
    train = _pairwise_items()
    panel = _panel()
    fitted = DawidSkene().fit(train, panel, progress=False)
    assert (
        fitted.is_fitted
        and fitted.model_.supervised
        and set(fitted.model_.members) == {"good", "bad1", "bad2"}
    )
    judge = fitted.wrap(panel)
    item = train.items[3]  # gold A; the two bad members outvote the good one
    from mitigate.registry import run_coroutine

    plain = run_coroutine(panel.judge(item), what="test", instead="await")
    reduced = run_coroutine(judge.judge(item), what="test", instead="await")
    assert plain.verdict == "second" and reduced.verdict == "first"
    assert reduced.meta["dawid_skene"]["posterior"]["A"] > 0.9


def test_dawid_skene_refuses_use_before_fitting_and_a_panel_of_other_members() -> None:
    with pytest.raises(ConfigError, match="DawidSkene is not fitted; expected"):
        DawidSkene().wrap(_panel())
    fitted = DawidSkene().fit(_pairwise_items(), _panel(), progress=False)
    other = PanelJudge({"x": PromptJudge(JudgePrompt.from_template(PAIRWISE), _by_gold(True))})
    from mitigate.registry import run_coroutine

    with pytest.raises(ConfigError, match="fitted on the members"):
        run_coroutine(fitted.wrap(other).judge(_pairwise_items().items[0]), what="test", instead="await")


def test_unsupervised_dawid_skene_needs_no_labels_and_supervised_true_refuses_a_split_without_them() -> None:
    bare = _pairwise_items().model_copy(
        update={"items": tuple(i.model_copy(update={"preference": {}}) for i in _pairwise_items().items)}
    )
    from mitigate.errors import UnverifiedFitWarning

    with pytest.warns(UnverifiedFitWarning, match="fitted without gold labels"):
        fitted = DawidSkene().fit(bare, _panel(), progress=False)
    assert not fitted.model_.supervised
    with pytest.raises(ConfigError, match="needs gold labels"):
        DawidSkene(supervised=True).fit(bare, _panel(), progress=False)


def _judgment(
    verdict: str | None,
    members: dict[str, str | None],
    scores: dict[str, float] | None = None,
    member_scores: dict[str, float | None] | None = None,
) -> Judgment:
    panel_members: dict = {}
    if member_scores is not None:
        panel_members["score"] = member_scores
    else:
        panel_members["verdict"] = members
    return Judgment(
        item_id="i", verdict=verdict, scores=scores or {}, meta={"panel": {"members": panel_members}}
    )


def test_a_named_member_vetoes_a_pass_it_fails() -> None:
    from mitigate.strategies._panel import veto

    j = _judgment("first", {"base": "second", "o1": "first", "o2": "first"})
    out = veto(j, ("base",), 1, None)
    assert (
        out.verdict == "tie" and "vetoed" in out.flags and out.meta["minority_veto"]["vetoed_by"] == ["base"]
    )
    assert veto(j, ("o1",), 1, None).verdict == "first"  # o1 agreed: no veto
    assert veto(j, (), 2, None).verdict == "first"  # one dissenter is not two
    s = _judgment(None, {}, scores={"score": 4.0}, member_scores={"base": 2.0, "o1": 5.0, "o2": 4.0})
    vetoed = veto(s, ("base",), 1, 3.0)
    assert vetoed.scores["score"] == 2.0 and "vetoed" in vetoed.flags
    assert veto(s, ("o1",), 1, 3.0).scores["score"] == 4.0
    with pytest.raises(ConfigError, match="not members of the panel"):
        veto(j, ("nobody",), 1, None)
    with pytest.raises(ConfigError, match="threshold"):
        veto(s, ("base",), 1, None)


def test_minority_veto_refuses_a_judge_without_a_panel() -> None:
    with pytest.raises(ConfigError, match="expected a panel before it"):
        MinorityVeto().wrap(PromptJudge(JudgePrompt.from_template(GUIDED), FakeLM(["Score: 3"])))
    assert MinorityVeto(vetoers=("good",)).wrap(_panel()) is not None


def test_panel_measures_read_each_members_verdicts() -> None:
    items = _pairwise_items()
    panel = _panel()
    from mitigate.run import run_sync

    judgments = run_sync(panel, list(items.items), progress=False).judgments
    names, votes = panel_votes(judgments, "verdict")
    assert names == ["good", "bad1", "bad2"] and votes[1] == ["A", "B", "B"] and votes[5] == ["A", "A", "A"]
    entry = EntryData(
        scores=np.full(len(items.items), np.nan),
        items=items.items,
        criterion="coherence",
        scale=Scale(),
        judgments=judgments,
        verdicts=["A"] * len(items.items),
        task="pairwise",
        n_boot=0,
    )
    n_eff = lookup("measure", "panel-effective-votes")().compute(entry)
    assert n_eff.extra["n_members"] == 3 and n_eff.extra["pair_correlations"]["bad1 ~ bad2"] == pytest.approx(
        1.0
    )
    conf = lookup("measure", "member-confusion")().compute(entry)
    assert conf.extra["observed"]["good"]["balanced_accuracy"] == 1.0
    assert conf.extra["observed"]["bad1"]["balanced_accuracy"] < 0.3
    single = EntryData(
        scores=np.full(2, np.nan),
        items=items.items[:2],
        criterion="coherence",
        scale=Scale(),
        judgments=[Judgment(item_id="p0", verdict="first"), Judgment(item_id="p1", verdict="first")],
        verdicts=["A", "A"],
        task="pairwise",
    )
    assert "not a panel" in str(lookup("measure", "panel-effective-votes")().compute(single).reason)
    assert member_confusion([[None, None]], ["a", "b"]).reason == "no member answered any item"


async def test_a_panel_in_compare_reports_its_effective_votes_and_each_members_confusion_matrix(
    tmp_path,
) -> None:  # type: ignore[no-untyped-def]
    from mitigate.harness import Entry, compare
    from mitigate.report import render_markdown

    bench = _pairwise_items(20)
    entries = [
        Entry.from_pipeline("panel", _panel(), "baseline"),
        Entry.from_pipeline(
            "one judge", PromptJudge(JudgePrompt.from_template(PAIRWISE), _by_gold(True)), "baseline"
        ),
    ]
    result = await compare(
        benchmark=bench,
        criterion="coherence",
        entries=entries,
        out_dir=tmp_path,
        progress=False,
        n_boot=50,
        n_perm=100,
    )
    panel, one = result.entries
    assert panel.measures["panel-effective-votes"].extra["n_members"] == 3
    assert panel.measures["member-confusion"].extra["observed"]["good"]["balanced_accuracy"] == 1.0
    assert not one.measures["member-confusion"].ok
    text = render_markdown(result)
    section = text.split("## Panel members", 1)[1].split("\n## ", 1)[0]
    assert "| panel | good |" in section and "| panel | bad1 |" in section and "one judge" not in section
    assert "true A: A " in section


# ------------------------------------------------------------------ juries without gold say so


def _correlated_panel(n: int = 300, seed: int = 0) -> tuple[list[str], list[list[str | None]]]:
    """Three members sharing one wrong signal 60% of the time, two honest ones at 0.8: EM trusts the trio."""
    rng = np.random.default_rng(seed)
    gold, votes = [], []
    for _ in range(n):
        g = str(rng.choice(["A", "B"]))
        other = "B" if g == "A" else "A"
        common = other if rng.random() < 0.6 else g
        flip = {"A": "B", "B": "A"}
        row = [common if rng.random() < 0.9 else flip[common] for _ in range(3)]
        row += [g if rng.random() < 0.8 else other for _ in range(2)]
        gold.append(g)
        votes.append(row)
    return gold, votes


def test_an_unsupervised_fit_says_it_is_unverified_and_its_gold_check_shows_it_worse_than_the_majority():
    from mitigate.measures import gold_check

    gold, votes = _correlated_panel()
    model = fit_dawid_skene(votes, ["c1", "c2", "c3", "h1", "h2"])
    assert model.converged and model.checks and "fitted without gold labels" in model.checks[0]
    assert _accuracy(model, votes, gold) < 0.45  # below chance, though converged
    line = gold_check(model, votes, gold)
    assert "the fit is WORSE than the majority" in line and f"on the {len(gold)} items" in line


def test_an_unsupervised_fit_that_overrules_the_votes_is_flagged_member_by_member():
    from mitigate.measures._panel import _encode, unsupervised_checks

    rng = np.random.default_rng(1)
    truth = rng.choice(["A", "B"], 60)
    votes = [[t if rng.random() < 0.85 else ("B" if t == "A" else "A") for _ in range(4)] for t in truth]
    onehot = _encode(votes, ["A", "B"])
    swapped = np.array(
        [[0.0, 1.0] if t == "A" else [1.0, 0.0] for t in truth]
    )  # a fit with the classes swapped
    theta = np.tile(np.array([[[0.15, 0.85], [0.85, 0.15]]]), (4, 1, 1))  # each member read as backwards
    checks = unsupervised_checks(
        ("A", "B"), ("A", "B"), ["m1", "m2", "m3", "m4"], onehot, swapped, np.array([0.5, 0.5]), theta
    )
    assert sum("the fit puts its accuracy at 0.15" in c for c in checks) == 4
    assert any(
        "the fit overrules the members on" in c and "worse than their majority there" in c for c in checks
    )


def test_an_unsupervised_panel_fit_warns_and_reports_its_accuracy_on_the_gold_the_split_has():
    from mitigate.errors import UnverifiedFitWarning

    with pytest.warns(UnverifiedFitWarning) as caught:
        fitted = DawidSkene(supervised=False).fit(_pairwise_items(), _panel(), progress=False)
    said = [str(w.message) for w in caught]
    assert not fitted.model_.supervised
    assert any(m.startswith("Dawid-Skene: fitted without gold labels") for m in said)
    assert any("items with a gold label (not used in the fit)" in m for m in said)
