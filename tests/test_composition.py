"""Every registered mitigation composes with the others: three maximal pipelines, checked call by call.

One pipeline cannot hold all thirteen strategies, for reasons that are the strategies' own
semantics rather than gaps in the plumbing. They are split into three pipelines that together
hold every registered name (``test_the_three_pipelines_cover_every_registered_mitigation``):

- **P1, a guideline judge with fan-outs** (two criteria, a three-option guideline):
  ``consistency-hint | single-attribute | agreement-gate | perturbed-demos | self-consistency |
  perturbed-guidelines``. Single-attribute comes first so the agreement gate, which needs one
  criterion per form, reaches each single-criterion leaf. The perturbed demos come after the gate
  so the MCQ leaves show their demos under lettered guidelines answered with letters. The probe is
  last so its reorderings keep each letter on its own option, and the demos stay identical across
  its children.
- **P2, direct scoring with learned demos** (one call per criterion, no guideline):
  ``multi-attribute | single-attribute | highest-rs-demos | random-demos | granularity |
  expected-score | sampling``. Expected score reads the first scale number the judge writes. It
  cannot share a judge with chain of thought (self-consistency) or the RTS form (agreement gate),
  and that is refused with a ConfigError. Multi-attribute rebuilds the prompt without its
  guideline, so it cannot precede the MCQ form, the perturbed demos or the probe. Here it picks the
  built-in template and the criteria order, and single-attribute then splits that template into one
  call per criterion; the multi-attribute judge then records no positions, since no output is
  shared. The two demo mitigations each show one criterion's human scores and replace a prompt's
  demos. After the split, each one reaches only the leaf that scores its criterion. Granularity
  placed after them moves their gold scores onto 1-10 with the prompt.
- **P3, pairwise**: ``position-swap | sampling(cot)``. Position swap needs a pairwise prompt
  (answer="pairwise"), and the guideline and per-criterion strategies do not apply to one. On a
  pointwise leaf it raises a ConfigError before any LM call; it never judges a single output twice.

``test_incompatible_orders_fail_loudly_before_any_call`` pins the orders that have no sound
meaning. Each is refused with a typed error when it is wrapped (or, for position swap, when it
judges), and none silently does something else.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import mitigate.strategies as S
from mitigate import Benchmark, Demo, Item, JudgePrompt, PromptJudge
from mitigate.cli import app
from mitigate.errors import ConfigError, MitigateError
from mitigate.judge import Judge
from mitigate.lm import LM, FakeLM, LMRequest, LMResponse
from mitigate.prompt import Criterion
from mitigate.prompt._judge_prompt import DEMOS_END
from mitigate.registry import Preset
from mitigate.scale import Scale
from mitigate.strategies._edits import DEFAULT_COT, DEFAULT_HINT, STUB_REASONING
from mitigate.strategies._forms import mcq_instruction, rts_instruction
from mitigate.testing import StubOpenAIServer

MCQ_CUE = '"Answer: " followed by'
"""A phrase only the MCQ form's answer instruction contains."""

# --------------------------------------------------------------------------- P1: guideline judge with
# fan-outs

P1_TEMPLATE = """Rate the summary of the article for coherence and for fluency.

Scoring guideline:
Score 1 means poor.
Score 2 means fair.
Score 3 means good.

Article:
{{document}}

Summary:
{{summary}}

Give a score for each criterion, one per line."""

P1_DEMOS = (
    Demo(
        item=Item(id="d1", output="Demo one.", inputs={"document": "Doc one."}),
        score={"coherence": 1.0, "fluency": 2.0},
    ),
    Demo(
        item=Item(id="d2", output="Demo two.", inputs={"document": "Doc two."}),
        score={"coherence": 3.0, "fluency": 3.0},
    ),
)
SCORE_LINES = {1: "Score 1 means poor.", 2: "Score 2 means fair.", 3: "Score 3 means good."}
LETTER_LINES = {1: "A: poor. Score: 1", 2: "B: fair. Score: 2", 3: "C: good. Score: 3"}
DEMO_ORDERS = ((2, 1, 3), (1, 3, 2))  # seed 1: the two reorderings the demos are shown under
PROBE_NAMES = {"order(0,2,1)": (1, 3, 2), "order(2,1,0)": (3, 2, 1)}  # seed 2: the probe's reorderings
RTS_ASK = rts_instruction(Scale(min=1, max=3))
MCQ_ASK = mcq_instruction(["A", "B", "C"])


def p1() -> S.Pipeline:
    return S.Pipeline(
        [
            S.ConsistencyHint(),
            S.SingleAttribute(),
            S.AgreementGate(),
            S.PerturbedDemosPreset(demos=P1_DEMOS, n=2, seed=1).build(),
            S.SelfConsistency(n=3, temperature=0.7),
            S.PerturbedGuidelines(n=2, seed=2),
        ]
    )


def p1_base(lm: LM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(P1_TEMPLATE, criteria=["coherence", "fluency"]), lm)


def p1_items() -> list[Item]:
    """Two systems x five items; the item's quality q is written into its output."""
    qs = {"steady": [1, 2, 3, 1, 2], "erratic": [1, 2, 3, 3, 2]}
    return [
        Item(
            id=f"{s}-{i}",
            output=f"Summary {i} of {s}, q={q}.",
            inputs={"document": f"Article {i}."},
            system=s,
            doc_id=f"doc{i}",
        )
        for s, q_list in qs.items()
        for i, q in enumerate(q_list)
    ]


def item_guideline(text: str) -> list[str]:
    """The guideline lines shown for the judged item (the head of the prompt, before the hint)."""
    head = text.split("Scoring guideline:\n", 1)[1].split("\n\n", 1)[0]
    return head.split("\n")


def p1_answer(request: LMRequest) -> str:
    """RTS says q; MCQ picks q's letter on 'steady' and (4 - q)'s letter on 'erratic' (RTS and MCQ
    disagree)."""
    text = request.messages[-1].content
    q = int(re.search(r"q=(\d)\.", text).group(1))  # type: ignore[union-attr]
    if MCQ_CUE not in text:
        return f"It reads well enough.\nScore: {q}"
    target = q if "of steady" in text else 4 - q
    letter = next(line[0] for line in item_guideline(text) if line.endswith(f"Score: {target}"))
    return f"Answer: {letter}"


def demo_block(criterion: str, mcq: bool) -> str:
    """The demonstrations P1 shows a leaf: each demo under both demo reorderings, then its gold score."""
    lines = LETTER_LINES if mcq else SCORE_LINES
    parts = []
    for demo in P1_DEMOS:
        gold = int(demo.score[criterion])  # type: ignore[index]
        answer = f"Answer: {'ABC'[gold - 1]}" if mcq else f"Score: {gold}"  # each form's own answer line
        for order in DEMO_ORDERS:  # under the template's own headings
            parts.append(
                f"Article:\n{demo.item.inputs['document']}\n\nSummary:\n{demo.item.output}\n\n"
                "Scoring guideline:\n" + "\n".join(lines[k] for k in order) + f"\n{answer}"
            )
    # the chain of thought asks for reasoning first; the demos show only their answers and say so
    return (
        "Examples (each shows only its final answer; in your own answer, write the reasoning the "
        "instructions ask for first):\n\n" + "\n\n".join(parts) + "\n\n" + DEMOS_END
    )


def p1_expected_text(item: Item, criterion: str, mcq: bool, order: tuple[int, ...]) -> str:
    """The whole user message P1 sends for one (criterion, form, item guideline order)."""
    lines = LETTER_LINES if mcq else SCORE_LINES
    return (
        "Rate the summary of the article for coherence and for fluency.\n\n"
        "Scoring guideline:\n"
        + "\n".join(lines[k] for k in order)
        + "\n\n"
        + DEFAULT_HINT
        + "\n\n"
        + demo_block(criterion, mcq)
        + "\n\n"
        f"Article:\n{item.inputs['document']}\n\nSummary:\n{item.output}\n\n"
        # the chain of thought rewords the MCQ form's "a single line", which would forbid it
         + (MCQ_ASK.replace("a single line", STUB_REASONING) if mcq else RTS_ASK) + "\n\n"
        f"For this request, rate only {criterion}; ignore the other criteria mentioned above.\n\n"
        + DEFAULT_COT
        + " Compare the text with each option of the guideline. "
        + (
            'End your answer with a final line "Answer: X", with X one of the option letters A/B/C.'
            if mcq
            else 'End your answer with a final line "Score: N", with N a score from 1 to 3.'
        )
    )


async def test_p1_sends_the_exact_prompt_for_every_criterion_form_and_probe_order() -> None:
    lm = FakeLM(p1_answer)
    item = p1_items()[1]  # steady, q=2
    judgment = await p1().wrap(p1_base(lm)).judge(item)
    sent = [r.messages[-1].content for r in lm.requests]
    expected = {
        p1_expected_text(item, c, mcq, order)
        for c in ("coherence", "fluency")
        for mcq in (False, True)
        for order in ((1, 2, 3), *PROBE_NAMES.values())
    }
    assert len(sent) == 12 and set(sent) == expected  # 3 probe children x 2 forms x 2 criteria, each once
    assert all(r.n == 3 and r.temperature == 0.7 for r in lm.requests)  # self-consistency reached every leaf
    assert judgment.scores == {"coherence": 2.0, "fluency": 2.0}
    assert judgment.samples == {"coherence": (2.0, 2.0, 2.0), "fluency": (2.0, 2.0, 2.0)}
    assert judgment.calls == 12 and len(judgment.raw) == 36 and judgment.failures == ()
    assert judgment.meta["rts"] == judgment.meta["mcq"] == {"coherence": 2.0, "fluency": 2.0}
    assert judgment.meta["perturbations"] == {"original": (2.0, 2.0), **{k: (2.0, 2.0) for k in PROBE_NAMES}}


async def test_p1_agreement_gate_flags_the_system_whose_rts_and_mcq_disagree() -> None:
    lm = FakeLM(p1_answer)
    pipe = p1()
    judge = pipe.wrap(p1_base(lm))
    items = p1_items()
    judgments = await asyncio.gather(*(judge.judge(it) for it in items))
    assert len(lm.requests) == 12 * len(items)
    erratic = judgments[7]  # q=3: RTS 3, MCQ picks the letter of 1
    assert erratic.meta["rts"]["coherence"] == 3.0 and erratic.meta["mcq"]["coherence"] == 1.0
    gate = pipe.steps[2]
    assert isinstance(gate, S.AgreementGate)
    report = gate.gate(judgments, items, criterion="coherence")
    assert report.decision("steady").decision == "accept" and report.decision("steady").r == pytest.approx(
        1.0
    )
    assert report.decision("erratic").decision == "needs_human" and report.decision(
        "erratic"
    ).r == pytest.approx(-1.0)
    assert [("needs_human" in j.flags) for j in report.judgments] == [False] * 5 + [True] * 5
    # the gate read the probe's original scores; the probe's record survives the gate's flags
    assert all("perturbations" in j.meta for j in report.judgments)


# --------------------------------------------------------------------------- P2: direct scoring, learned
# demos

P2_TEMPLATE = (
    "Rate the summary of the article.\n\nArticle:\n{{document}}\n\nSummary:\n{{summary}}\n\nReply "
    'with "Score: N".'
)
P2_CRITERIA = (
    Criterion(name="coherence", definition="how well the summary is organised"),
    Criterion(name="fluency", definition="how well it reads"),
)
TRAIN_HUMAN = [(1, 2), (2, 5), (3, 3), (4, 1), (5, 4), (3, 2)]  # (coherence, fluency) per training item
TRAIN_JUDGE = [2, 2, 4, 5, 3, 3]
TRAIN_LS = [-10.0, -20.0, -5.0, -15.0, -30.0, -12.0]


class StubLikelihoodLM(LM):
    """LS by table lookup on the continuation (the judged output)."""

    provider = "stub-ll"

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    async def complete(self, request: LMRequest) -> LMResponse:
        raise AssertionError("a likelihood backend is never asked to complete")

    async def loglikelihood(self, context: str, continuation: str) -> float:
        return self.table[continuation]


def train() -> Benchmark:
    return Benchmark(
        name="train",
        criteria=("coherence", "fluency"),
        scale=Scale(min=1, max=5),
        items=tuple(
            Item(
                id=f"t{i}",
                output=f"Train summary {i}.",
                inputs={"document": f"Train article {i}."},
                system="S",
                human={"coherence": float(c), "fluency": float(f)},
            )
            for i, (c, f) in enumerate(TRAIN_HUMAN)
        ),
    )


def p2_base(lm: LM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(P2_TEMPLATE, criterion="coherence", scale=(1, 5)), lm)


def fitted_demo_mitigations() -> tuple[S.Demos, S.Demos]:
    """highest-rs fitted by FakeLM + a stub likelihood LM; random-demos fitted on the same training split."""

    def fit_answer(request: LMRequest) -> str:
        i = int(re.search(r"Train summary (\d)\.", request.messages[-1].content).group(1))  # type: ignore[union-attr]
        return f"Score: {TRAIN_JUDGE[i]}"

    ll = StubLikelihoodLM({f"Train summary {i}.": v for i, v in enumerate(TRAIN_LS)})
    hrs = (
        S.HighestRSDemosPreset(k=2, criterion="coherence")
        .build()
        .fit(train(), p2_base(FakeLM(fit_answer)), lm=ll, progress=False)
    )
    rnd = S.RandomDemosPreset(k=2, seed=1, criterion="fluency").build().fit(train())
    return hrs, rnd


def p2() -> S.Pipeline:
    hrs, rnd = fitted_demo_mitigations()
    return S.Pipeline(
        [
            S.MultiAttribute(criteria=P2_CRITERIA, order=("fluency", "coherence")),
            S.SingleAttribute(),
            hrs,
            rnd,
            S.Granularity(scale="1-10"),
            S.ExpectedScore(),
            S.Sampling(temperature=1.0, n=2),
        ]
    )


def p2_expected_text(criterion: str, definition: str, demos: list[tuple[int, int]]) -> str:
    shown = "\n\n".join(
        f"Document:\nTrain article {i}.\n\nSummary:\nTrain summary {i}.\n\nScore: {score}"
        for i, score in demos
    )
    return (
        "Evaluate the summary below on one criterion:\n\n"
        f"- {criterion.capitalize()}: {definition}\n\n"
        "Score it on a scale from 1 to 10, where 1 is the worst and 10 the best.\n\n"
        f"Examples:\n\n{shown}\n\n{DEMOS_END}\n\n"
        "Document:\nThe article.\n\nSummary:\nThe summary.\n\n"
        'End your answer with a final line "Score: N", with N a score from 1 to 10.'
    )


@pytest.fixture
def p2_pipeline() -> S.Pipeline:
    """P2, fitted outside the event loop (``fit`` runs its own loop)."""
    return p2()


async def test_p2_gives_each_criterion_call_its_own_demos_on_the_new_scale_and_scores_by_expected_value(
    p2_pipeline: S.Pipeline,
) -> None:
    pipe = p2_pipeline
    hrs, rnd = pipe.steps[2], pipe.steps[3]
    assert isinstance(hrs, S.Demos) and isinstance(rnd, S.Demos)
    assert [d.item.id for d in hrs.demos_ or ()] == ["t4", "t2"]  # the top-RS training items (human 5 and 3)
    assert [d.item.id for d in rnd.demos_ or ()] == ["t1", "t4"]  # seed 1 (human fluency 5 and 4)
    turn = itertools.count()

    def answer(request: LMRequest) -> str:
        k = next(turn)
        if "- Coherence:" in request.messages[-1].content:
            return ("Score: 10", "Score: 8")[k % 2]
        return ("Score: 3", "Score: 5")[k % 2]

    lm = FakeLM(answer, logprobs=True)
    judgment = await pipe.wrap(p2_base(lm)).judge(
        Item(id="x", output="The summary.", inputs={"document": "The article."})
    )
    sent = {r.messages[-1].content for r in lm.requests}
    # human scores 1-5 moved onto 1-10 with the prompt: 5 -> 10, 4 -> 8, 3 -> 6
    assert sent == {
        p2_expected_text("fluency", "how well it reads", [(1, 10), (4, 8)]),
        p2_expected_text("coherence", "how well the summary is organised", [(4, 10), (2, 6)]),
    }
    assert [r.messages[-1].content.split("\n\n")[1] for r in lm.requests] == [
        # multi-attribute's order
        "- Fluency: how well it reads",
        "- Coherence: how well the summary is organised",
    ]
    assert all((r.n, r.temperature, r.logprobs, r.top_logprobs) == (2, 1.0, True, 10) for r in lm.requests)
    # means of the expected values (3, 5) and (10, 8)
    assert judgment.scores == {"fluency": 4.0, "coherence": 9.0}
    assert judgment.samples == {"fluency": (3.0, 5.0), "coherence": (10.0, 8.0)}
    assert judgment.meta == {"criteria": ["fluency", "coherence"]}  # split: no shared output, so no positions


# --------------------------------------------------------------------------- P3: pairwise

P3_TEMPLATE = (
    "Which summary of the article is better?\n\nArticle:\n{{document}}\n\n"
    "Summary 1:\n{{output}}\n\nSummary 2:\n{{output_b}}\n\nAnswer 'Summary 1' or 'Summary 2'."
)
PAIR = Item(
    id="pair", output="Short and right.", output_b="Long and wrong.", inputs={"document": "An article."}
)


def p3() -> S.Pipeline:
    return S.Pipeline(
        [S.PositionSwap(on_flip="abstain"), S.Sampling(temperature=0.7, n=3, cot=True, reducer="majority")]
    )


def p3_base(lm: LM) -> PromptJudge:
    return PromptJudge(JudgePrompt.from_template(P3_TEMPLATE, answer="pairwise"), lm)


async def test_p3_judges_both_orders_with_chain_of_thought_and_keeps_a_consistent_verdict() -> None:
    def prefers_right(request: LMRequest) -> str:
        first = request.messages[-1].content.split("Summary 1:\n", 1)[1].split("\n\n", 1)[0]
        return (
            "Reasoning... Summary 1 is better." if "right" in first else ("Reasoning... Summary 2 is better.")
        )

    lm = FakeLM(prefers_right)
    judgment = await p3().wrap(p3_base(lm)).judge(PAIR)
    original, swapped = (r.messages[-1].content for r in lm.requests)
    cot = (
        "Before answering, explain your reasoning step by step. End your answer with a final line "
        "\"Summary X\", with X being '1' or '2'."
    )  # the template's own answer line
    assert original == (
        "Which summary of the article is better?\n\nArticle:\nAn article.\n\n"
        "Summary 1:\nShort and right.\n\nSummary 2:\nLong and wrong.\n\n"
        f"Answer 'Summary 1' or 'Summary 2'.\n\n{cot}"
    )
    exchanged = original.replace("Short and right.", "@").replace("Long and wrong.", "Short and right.")
    assert swapped == exchanged.replace("@", "Long and wrong.")
    assert all((r.n, r.temperature) == (3, 0.7) for r in lm.requests)  # sampling reached both orders
    assert judgment.verdict == "first" and judgment.flags == ()
    assert judgment.meta == {
        "orders": {"original": "first", "swapped": "second"},
        "position_consistent": True,
    }


# --------------------------------------------------------------------------- all three pipelines


@pytest.fixture
def pipelines() -> dict[str, tuple[S.Pipeline, Judge]]:
    """The three pipelines with a base judge each (built outside the event loop)."""
    return {
        "P1": (p1(), p1_base(FakeLM(p1_answer))),
        "P2": (p2(), p2_base(FakeLM(lambda r: "Score: 5", logprobs=True))),
        "P3": (p3(), p3_base(FakeLM(lambda r: "Summary 1 is better."))),
    }


def test_the_three_pipelines_cover_every_registered_mitigation(
    pipelines: dict[str, tuple[S.Pipeline, Judge]],
) -> None:
    steps = [step for pipe, _ in pipelines.values() for step in pipe.steps]
    used = {step.registry_name for step in steps} - {"demos"}
    # the three papers' demo presets build Demos: Ohi et al.'s highest-RS and random, Ghazarian et al.'s
    # perturbed
    demos = [s for s in steps if isinstance(s, S.Demos)]
    assert {type(s.selector).__name__ for s in demos if s.selector is not None} >= {"HighestRS", "Random"}
    assert any(s.display == "perturbed" for s in demos)
    # every registered mitigation but the demo presets (Preset classes, checked above or covered by
    # test_demos.py and test_selectors.py) and
    # the issue-14 components beyond the five papers, composed in test_selective.py,
    # test_calibration.py and test_panel_evidence_length.py (style-control, issue 26: test_style_control.py),
    # and the juries, distributions and references (test_panel_reducers.py, test_pairwise_distribution.py,
    # test_own_reference.py)
    beyond = (
        "selective",
        "panel",
        "length-control",
        "contextual-calibration",
        "batch-calibration",
        "multiple-evidence",
        "style-control",
        "dawid-skene",
        "minority-veto",
        "pairwise-distribution",
        "solve-first",
        "reference-revision",
    )
    registered = {
        name
        for name, cls in S.registered().items()
        if not name.startswith("test-") and not issubclass(cls, Preset) and name not in ("demos", *beyond)
    }
    assert used == registered
    assert len(registered) == 10


@pytest.mark.parametrize("name", ["P1", "P2", "P3"])
def test_pipeline_spec_round_trips_through_json_and_rebuilds_the_same_judge(
    name: str, pipelines: dict[str, tuple[S.Pipeline, Judge]]
) -> None:
    pipe, base = pipelines[name]
    spec = pipe.spec()
    again = S.from_spec(json.loads(json.dumps(spec)))
    assert isinstance(again, S.Pipeline) and again == pipe and again.spec() == spec
    assert again.wrap(base).describe() == pipe.wrap(base).describe()
    assert json.loads(json.dumps(pipe.wrap(base).describe())) == pipe.wrap(base).describe()


@pytest.mark.parametrize("name", ["P1", "P2", "P3"])
async def test_wrapping_and_judging_mutate_neither_the_judge_nor_the_mitigations(
    name: str, pipelines: dict[str, tuple[S.Pipeline, Judge]]
) -> None:
    pipe, base = pipelines[name]
    prompt, config, described = base.prompt, base.config, base.describe()
    dumps = [step.model_dump() for step in pipe.steps]
    wrapped = pipe.wrap(base)
    item = PAIR if name == "P3" else p1_items()[0]
    if name == "P2":
        item = Item(id="x", output="The summary.", inputs={"document": "The article."})
    await wrapped.judge(item)
    assert wrapped is not base
    assert base.prompt is prompt and base.config is config and base.describe() == described
    assert base.prompt.demos == () and base.prompt.criteria == prompt.criteria
    assert [step.model_dump() for step in pipe.steps] == dumps


def _judge_p1_with(*extra: S.Mitigation) -> Judge:
    return S.Pipeline([*p1().steps, *extra]).wrap(p1_base(FakeLM([])))


def _p1_coherence() -> Judge:
    """P1's base judge asked for coherence alone."""
    base = p1_base(FakeLM([]))
    return base.with_prompt(base.prompt.with_criteria([Criterion(name="coherence")]))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: (S.AgreementGate() | S.ExpectedScore()).wrap(_p1_coherence()),
            "mitigation 'expected-score' reads the first scale number",
            id="expected-score-after-rts",
        ),
        pytest.param(
            lambda: (S.ExpectedScore() | S.AgreementGate()).wrap(_p1_coherence()),
            "AgreementGate's RTS form asks for a reason",
            id="agreement-gate-after-expected-score",
        ),
        pytest.param(
            lambda: (S.ExpectedScore() | S.Sampling(temperature=0.7, n=3, cot=True)).wrap(
                p2_base(FakeLM([]))
            ),
            "Sampling\\(cot=True\\) asks for reasoning",
            id="cot-after-expected-score",
        ),
        pytest.param(
            lambda: (S.ExpectedScore() | S.SelfConsistency()).wrap(p2_base(FakeLM([]))),
            "SelfConsistency\\(cot=True\\)",
            id="self-consistency-after-expected-score",
        ),
        pytest.param(
            lambda: (S.SelfConsistency() | S.ExpectedScore()).wrap(p2_base(FakeLM([]))),
            "mitigation 'expected-score' reads the first scale number",
            id="expected-score-after-self-consistency",
        ),
        pytest.param(
            lambda: (S.AgreementGate() | S.SingleAttribute()).wrap(p1_base(FakeLM([]))),
            "apply SingleAttribute before",
            id="agreement-gate-before-the-split",
        ),
        pytest.param(
            lambda: (S.PerturbedGuidelines(n=2) | S.MultiAttribute()).wrap(p1_base(FakeLM([]))),
            "made the .* prompts identical to the original",
            id="multi-attribute-after-the-probe",
        ),
        pytest.param(
            lambda: _judge_p1_with(S.MultiAttribute()),
            "multi-attribute after single-attribute would undo the split",
            id="multi-attribute-after-the-split",
        ),
        pytest.param(
            lambda: (S.AgreementGate() | S.MultiAttribute()).wrap(_p1_coherence()),
            "expected a prompt answering with a score",
            id="multi-attribute-after-the-mcq-form",
        ),
        pytest.param(
            lambda: _judge_p1_with(S.Granularity()),
            "expected a prompt with answer='score'",
            id="granularity-after-the-mcq-form",
        ),
        pytest.param(
            lambda: fitted_demo_mitigations()[0].wrap(p1_base(FakeLM([]))),
            "expected a prompt scoring one criterion",
            id="learned-demos-on-a-multi-criterion-prompt",
        ),
        pytest.param(
            lambda: fitted_demo_mitigations()[1].wrap(p2_base(FakeLM([]))),
            "holds demos for criterion 'fluency'",
            id="learned-demos-for-a-criterion-no-prompt-scores",
        ),
    ],
)
def test_incompatible_orders_fail_loudly_before_any_call(build: Any, message: str) -> None:
    with pytest.raises(MitigateError, match=message):
        build()


async def test_position_swap_on_a_pointwise_judge_refuses_to_judge_without_calling_the_lm() -> None:
    lm = FakeLM(p1_answer)
    judge = (p1() | S.PositionSwap()).wrap(p1_base(lm))
    with pytest.raises(ConfigError, match="PositionSwap needs pairwise prompt judges"):
        await judge.judge(p1_items()[0])
    assert lm.requests == []


# --------------------------------------------------------------------------- the CLI's pipeline syntax


def test_parse_pipeline_reads_the_cli_syntax_with_parameters() -> None:
    demos = json.dumps([d.model_dump(mode="json", exclude_defaults=True) for d in P1_DEMOS])
    text = (
        "consistency-hint | single-attribute(concurrent=false) | agreement-gate(tolerance=0.3, "
        f"method=pearson, min_items=4) | perturbed-demos(demos={demos}, n=2, seed=1) | "
        f"self-consistency(n=3, temperature=0.7) | perturbed-guidelines(n=2, seed=2)"
    )
    assert S.parse_pipeline(text) == S.Pipeline(
        [
            S.ConsistencyHint(),
            S.SingleAttribute(concurrent=False),
            S.AgreementGate(tolerance=0.3, method="pearson", min_items=4),
            S.PerturbedDemosPreset(demos=P1_DEMOS, n=2, seed=1).build(),
            S.SelfConsistency(n=3, temperature=0.7),
            S.PerturbedGuidelines(n=2, seed=2),
        ]
    )
    text2 = (
        'multi-attribute(order=["fluency", "coherence"], criteria=[{"name": "coherence"}, {"name": '
        '"fluency"}]) '
        "| granularity(scale=1-10) | expected-score(top_logprobs=5) | sampling(temperature=1.0, n=2, "
        "reducer=median) | random-demos(k=3, seed=4) | highest-rs-demos(k=8, pool_size=40) "
        "| position-swap(on_flip=abstain)"
    )
    assert S.parse_pipeline(text2).steps == (
        S.MultiAttribute(
            order=("fluency", "coherence"), criteria=(Criterion(name="coherence"), Criterion(name="fluency"))
        ),
        S.Granularity(scale="1-10"),
        S.ExpectedScore(top_logprobs=5),
        S.Sampling(temperature=1.0, n=2, reducer="median"),
        S.RandomDemosPreset(k=3, seed=4).build(),
        S.HighestRSDemosPreset(k=8, pool_size=40).build(),
        S.PositionSwap(on_flip="abstain"),
    )
    assert S.parse_pipeline("baseline") == S.Pipeline() == S.parse_pipeline("")
    # a pipeline's spec and its CLI text name the same steps
    assert [s["name"] for s in S.parse_pipeline(text).spec()["steps"]] == [
        s.registry_name for s in p1().steps
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("single-attribute | nope", r"unknown mitigation 'nope'; expected one of \['agreement-gate'"),
        (
            "sampling(n=0)",
            r"The 'n' parameter of mitigation 'sampling' must be an int >= 1\. Got 0 instead\.",
        ),
        ("sampling(n=2", r"expected 'name\(k=v, \.\.\.\)' in pipeline step"),
        ("granularity(1-10)", r"expected k=v in pipeline step 'granularity'"),
        ("perturbed-demos(m=0)", r"The 'm' parameter of mitigation 'perturbed-demos' must be an int >= 1"),
    ],
)
def test_parse_pipeline_errors_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        S.parse_pipeline(text)


CLI_PROMPT = """Rate the fluency of the summary.

Score 1 means hard to read.
Score 2 means readable.
Score 3 means fluent.

Article: {{source}}
Summary: {{summary}}

Reply with "Score: N"."""


def test_mitigate_compare_cli_runs_two_pipelines_by_name(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"x{i}",
            "system": f"S{i % 2}",
            "doc_id": f"d{i // 2}",
            "inputs": {"source": f"Article {i}."},
            "output": f"Summary {i}.",
            "human": {"fluency": float(1 + i % 3)},
        }
        for i in range(4)
    ]
    bench = tmp_path / "bench.jsonl"
    bench.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "prompt.txt").write_text(CLI_PROMPT)
    probed = "consistency-hint | perturbed-guidelines(n=2, seed=2)"
    with StubOpenAIServer(latency=0.0, reply="Readable. Score: 2") as server:
        result = CliRunner().invoke(
            app,
            [
                "compare",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "fluency",
                "--prompt",
                str(tmp_path / "prompt.txt"),
                "-p",
                "baseline",
                "-p",
                probed,
                "--backend",
                "openai:stub",
                "--base-url",
                server.base_url,
                "--out",
                str(tmp_path / "out"),
                "--n-boot",
                "0",
                "--no-progress",
                "--no-cache",
            ],
        )
        bodies = server.bodies
    assert result.exit_code == 0, result.output
    assert len(bodies) == 4 + 4 * 3  # baseline once per item; the probe: original + 2 reorderings per item
    texts = [b["messages"][-1]["content"] for b in bodies]
    assert sum(DEFAULT_HINT in t for t in texts) == 12
    orders = {tuple(re.findall(r"Score (\d) means", t)) for t in texts if DEFAULT_HINT in t}
    assert orders == {("1", "2", "3"), ("1", "3", "2"), ("3", "2", "1")}
    saved: dict[str, Any] = json.loads((tmp_path / "out" / "results.json").read_text())
    entries = {e["name"]: e for e in saved["entries"]}
    assert list(entries) == ["baseline", probed]
    assert entries[probed]["spec"] == S.parse_pipeline(probed).spec()
    assert entries[probed]["measures"]["perturbation-consistency"]["value"] == 1.0
    assert entries[probed]["measures"]["perturbation-consistency"]["n"] == 4
    assert entries["baseline"]["measures"]["perturbation-consistency"]["value"] is None  # NaN with a reason
    assert all(j["scores"] == {"fluency": 2.0} for e in entries.values() for j in e["judgments"])
