"""The example judges, data and fake LMs the contract checks (:mod:`mitigate.testing._checks`) run components
against, and tests reuse."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mitigate.data import Benchmark, Item, Split
from mitigate.judge import FitContext, Judge, PromptJudge
from mitigate.lm import FakeLM, LMRequest
from mitigate.prompt import Criterion, JudgePrompt
from mitigate.registry import registered
from mitigate.scale import Scale
from mitigate.strategies import Mitigation

GUIDED = """Rate the summary.

Coherence (1-5) - how well the summary hangs together.

Score 1 means it is incoherent.
Score 2 means it is mostly incoherent.
Score 3 means it is partly coherent.
Score 4 means it is mostly coherent.
Score 5 means it is fully coherent.

Article: {{source}}
Summary: {{summary}}

Reply with "Score: N"."""
"""The judge template the checks wrap (a parsed guideline, an input slot and the judged text)."""


PAIRWISE = """Which summary of the article is more coherent?

Article: {{source}}
Summary A: {{output_a}}
Summary B: {{output_b}}

Answer "[[A]]" if summary A is more coherent, "[[B]]" if summary B is."""
"""The pairwise judge template the checks fit ``pairwise_only`` components against."""


def example_judge(criteria: Sequence[str] = ("coherence",), lm: FakeLM | None = None) -> PromptJudge:
    """A judge on :data:`GUIDED` scoring ``criteria`` (one or several in one answer), with a FakeLM."""
    prompt = JudgePrompt.from_template(GUIDED).with_criteria([Criterion(name=c) for c in criteria])
    return PromptJudge(prompt, lm if lm is not None else FakeLM([]))


def example_pairwise_judge(lm: FakeLM) -> Any:
    """A pairwise judge on :data:`PAIRWISE` and ``lm``, each pair judged in both orders."""
    swap = registered("mitigation")["position-swap"]()
    return swap.wrap(PromptJudge(JudgePrompt.from_template(PAIRWISE), lm))


def example_pairwise_train(n: int = 12) -> Benchmark:
    """A small pairwise benchmark with gold preferences on ``coherence``."""
    items = tuple(
        Item(
            id=f"pair-{i}",
            output=f"Summary {i} A" + " and more" * (i % 3),
            output_b=f"Summary {i} B",
            inputs={"source": f"Article {i}."},
            doc_id=f"d{i // 3}",
            preference={"coherence": "A" if i % 2 else "B"},
        )
        for i in range(n)
    )
    return Benchmark(name="checks-pairwise", items=items, criteria=("coherence",))


def example_train(n: int = 12) -> Benchmark:
    """A small labelled benchmark: criterion ``coherence`` (human scores 1-5), also labelled under the generic
    ``score`` that components' ``examples()`` use."""
    items = tuple(
        Item(
            id=f"check-{i}",
            output=f"Summary number {i} about topic {i % 4}." + " More." * (i % 3),
            inputs={"source": f"Article {i}."},
            system=f"S{i % 3}",
            doc_id=f"d{i // 3}",
            human={"coherence": float(1 + i % 5), "score": float(1 + i % 5)},
        )
        for i in range(n)
    )
    return Benchmark(name="checks", items=items, criteria=("coherence",), scale=Scale(min=1, max=5))


def fitting_lm() -> FakeLM:
    """The fake LM the checks fit against: a varied, deterministic "Score: N" (1-5) per request, token
    logprobs, and a log-likelihood of minus the continuation's length (so RS, calibration and thresholds have
    something to learn from)."""

    def answer(request: LMRequest) -> str:
        text = "".join(m.content for m in request.messages)
        if "[[A]]" in text:
            return "[[A]]" if sum(map(ord, text)) % 2 else "[[B]]"
        return f"Score: {1 + sum(map(ord, text)) % 5}"

    return FakeLM(
        answer, logprobs=True, loglikelihood=lambda context, continuation: -float(len(continuation))
    )


def fit_context(lm: FakeLM, **fields: Any) -> FitContext:
    """The fit context the checks pass: no progress bar, and the fake LM as likelihood backend."""
    return FitContext(progress=False, lm=lm, **fields)


def fitting_setup(mitigation: Mitigation, n: int = 12) -> tuple[Benchmark, Judge, FakeLM]:
    """``n`` training items and a judge on a fresh :func:`fitting_lm` (pairwise ones when pairwise only)."""
    lm = fitting_lm()
    if mitigation.tags.pairwise_only:
        return example_pairwise_train(n), example_pairwise_judge(lm), lm
    return example_train(n), example_judge(lm=lm), lm


def scripted_split() -> Split:
    """The tiny train/dev/test split the engine check searches on."""

    def items(prefix: str, text: str, n: int) -> tuple[Item, ...]:
        return tuple(
            Item(
                id=f"{prefix}{i}",
                output=f"{text} text {i}.",
                inputs={"source": "A."},
                human={"coherence": 1.0 + i % 5},
            )
            for i in range(n)
        )

    return Split(train=items("t", "Train", 6), dev=items("v", "Dev", 5), test=items("e", "Test", 5))


def scripted_answer(request: LMRequest) -> str:
    """The engine check's judge: a score from the length of the judged request."""
    text = request.messages[-1].content
    return f"Score: {1 + len(text) % 5}"


PROBE_ITEM = Item(
    id="probe-check",
    output="The mayor opened the bridge. Traffic eased at once. Shops reopened.",
    output_b="A bridge opened.",
    inputs={"source": "An article about a bridge."},
)


OPTIONS_TEMPLATE = (
    "Rate the coherence of the summary.\n\nScore 1: no order at all.\nScore 2: some order.\n"
    "Score 3: a clear order throughout.\n\nArticle: {{source}}\nSummary: {{output}}\n\nScore:"
)
"""A template whose prompt lists options, for the probes of the prompt."""


def prompt_probe_judges() -> list[PromptJudge]:
    """Judges a prompt probe may apply to: one whose prompt lists options, one scoring two criteria."""
    lm = FakeLM(lambda request: "Score: 2")
    with_options = PromptJudge(JudgePrompt.from_template(OPTIONS_TEMPLATE, criterion="coherence"), lm)
    multi = registered("mitigation")["multi-attribute"](
        criteria=(Criterion(name="coherence"), Criterion(name="fluency"))
    ).wrap(with_options)
    return [with_options, multi]
