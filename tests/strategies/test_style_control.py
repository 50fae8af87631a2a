"""Style control: markdown headers, bold, lists and length as covariates of the controlled win rate and of the
score regression (Arena-Hard style control beside Dubois et al.'s length control), and the StyleControl
mitigation."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import mitigate.measures as M
from mitigate import Item, JudgePrompt, PromptJudge
from mitigate.data import Benchmark
from mitigate.errors import ConfigError, DataError
from mitigate.lm import FakeLM, LMRequest
from mitigate.measures._style import squashed, style_matrix
from mitigate.strategies import StyleControl, from_spec


def test_style_features_count_headers_bold_spans_list_items_and_words() -> None:
    text = "## Title\n\nSome **bold** and __also bold__ words.\n- one\n* two\n3. three\nnot - a list"
    f = M.style_features(text)
    assert f == {"length": 18.0, "headers": 1.0, "bold": 2.0, "lists": 3.0}  # words split on white space
    assert M.style_features("# not a header without space? #tag") == {
        "length": 7.0,
        "headers": 1.0,
        "bold": 0.0,
        "lists": 0.0,
    }
    assert M.style_features("plain") == {"length": 1.0, "headers": 0.0, "bold": 0.0, "lists": 0.0}


def test_the_style_controlled_win_rate_removes_a_pure_bold_preference_and_reports_its_coefficient() -> None:
    rng = np.random.default_rng(0)
    n = 3000
    bold_a, bold_b = rng.integers(1, 5, n), rng.integers(0, 4, n)  # A uses more bold on average
    length_a, length_b = rng.integers(40, 80, n), rng.integers(40, 80, n)
    pref = np.where(bold_a > bold_b, 1.0, np.where(bold_a < bold_b, 0.0, 0.5))  # the judge reads only bold
    fa = [
        {"length": float(x), "headers": 0.0, "bold": float(b), "lists": 0.0}
        for x, b in zip(length_a, bold_a, strict=True)
    ]
    fb = [
        {"length": float(x), "headers": 0.0, "bold": float(b), "lists": 0.0}
        for x, b in zip(length_b, bold_b, strict=True)
    ]
    m = M.style_controlled_win_rate(pref, fa, fb)
    assert m.extra["raw_win_rate"] > 0.65
    assert m.value == pytest.approx(0.5, abs=0.03)
    assert m.extra["coefficients"]["bold"] > 2 and abs(m.extra["coefficients"]["length"]) < 0.2
    assert m.extra["constant"] == ["headers", "lists"]
    length_only = M.length_controlled_win_rate(pref, length_a, length_b)
    assert length_only.value > 0.65  # length control alone cannot see the bold preference


def test_the_style_controlled_win_rate_refuses_bad_input_in_one_line() -> None:
    with pytest.raises(ConfigError, match="expected style features among"):
        M.style_controlled_win_rate([1.0], [{}], [{}], features=("emoji",))
    with pytest.raises(DataError, match="a row lacks 'bold'"):
        M.style_controlled_win_rate([1.0], [{"length": 1, "headers": 0, "lists": 0}], [{}])
    few = M.style_controlled_win_rate([1.0, None], np.zeros((2, 4)), np.zeros((2, 4)))
    assert math.isnan(few.value) and "expected at least 3" in (few.reason or "")


def test_the_score_style_regression_recovers_the_slopes_and_their_r2() -> None:
    texts = [
        ("**x** " * b) + ("- item\n" * li) + "word " * (10 + 3 * i)
        for i, (b, li) in enumerate([(0, 0), (1, 2), (2, 0), (3, 1), (0, 3), (2, 2), (1, 0), (3, 3)])
    ]
    f = style_matrix(texts)
    z = squashed(f, f.mean(axis=0), f.std(axis=0))
    scores = 3 + 0.8 * z[:, 2] - 0.5 * z[:, 3]  # bold raises the score, lists lower it, length does nothing
    m = M.score_style_regression(scores, texts)
    assert m.value == pytest.approx(1.0)
    coef = m.extra["coefficients"]
    assert coef["bold"] == pytest.approx(0.8) and coef["lists"] == pytest.approx(-0.5)
    assert coef["length"] == pytest.approx(0.0, abs=1e-9) and m.extra["constant"] == ["headers"]
    excess = M.score_style_regression(scores + 1.0, texts, human=np.ones(len(texts)))
    assert excess.extra["target"] == "score - human" and excess.extra["coefficients"][
        "bold"
    ] == pytest.approx(0.8)


def _bold_loving(request: LMRequest) -> str:
    text = request.messages[-1].content.split("Text: ", 1)[1]
    q = int(re.search(r"q=(\d)", text).group(1))
    return f"Score: {min(5, q + text.count('**') // 2)}"


def test_style_control_fitted_on_train_removes_the_judges_bold_slope() -> None:
    judge = PromptJudge(
        JudgePrompt.from_template("Rate it.\nText: {{output}}\nScore:", criterion="quality"),
        FakeLM(_bold_loving),
    )
    items = tuple(
        Item(id=f"t{i}", output="q=2 " + "**b** " * (i % 3) + "word " * (5 + i % 4), human={"quality": 2.0})
        for i in range(12)
    )
    fitted = StyleControl(features=("bold", "length")).fit(
        Benchmark(name="train", items=items), judge, progress=False
    )
    assert fitted.coefficients_["quality"]["bold"] > 0.5
    assert from_spec(fitted.spec()) == fitted
    wrapped = fitted.wrap(judge)
    import asyncio

    raw = [asyncio.run(judge.judge(it)).scores["quality"] for it in items]
    adjusted = [asyncio.run(wrapped.judge(it)).scores["quality"] for it in items]
    assert np.std(adjusted) < 0.25 * np.std(raw)
    with pytest.raises(ConfigError, match="StyleControl is not fitted; expected"):
        StyleControl().wrap(judge)


@pytest.mark.parametrize("name", ["style-control", "length-control"])
def test_score_controls_fitted_on_a_pairwise_benchmark_are_refused_before_any_call(name) -> None:
    from mitigate.strategies import parse_pipeline

    items = tuple(
        Item(
            id=f"p{i}",
            output="**short** a" * (1 + i % 3),
            output_b="plain b " * (1 + i % 4),
            preference={"overall": "A" if i % 2 else "B"},
        )
        for i in range(12)
    )
    lm = FakeLM(lambda r: "[[A]]")
    pair = JudgePrompt.from_template(
        "Which answer is better?\nA: {{output}}\nB: {{output_b}}\nAnswer [[A]] or [[B]].", answer="pairwise"
    )
    with pytest.raises(ConfigError, match=r"adjusts pointwise scores; .*got a pairwise benchmark"):
        parse_pipeline(name).fit(Benchmark(name="pw", items=items), PromptJudge(pair, lm), progress=False)
    single = tuple(Item(id=f"s{i}", output="**bold** text " * (1 + i % 3)) for i in range(12))
    with pytest.raises(ConfigError, match=r"got a judge that answers with a verdict"):
        parse_pipeline(name).fit(
            Benchmark(name="single", items=single), PromptJudge(pair, lm), progress=False
        )
    assert lm.calls == 0
