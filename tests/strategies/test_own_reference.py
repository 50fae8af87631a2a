"""solve-first and reference-revision: the judge's own reference, written first, shown under the template's
headings.

The reference section is added to each prompt judge's prompt when it judges (the leaf keeps the
template as written), so the composition battery's per-leaf checks do not see it; the last test
here runs the same checks (DESIGN.md, coherent composition) on the exact prompt the judge call
sends, for every template of the corpus, with each other mitigation before and after.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from typing import Any

import pytest

from mitigate.data import Item
from mitigate.errors import ConfigError, DataError, MitigateError
from mitigate.judge import CompositeJudge, Judge, PromptJudge
from mitigate.lm import FakeLM, LMRequest
from mitigate.prompt import JudgePrompt
from mitigate.registry import run_coroutine
from mitigate.strategies import (
    OwnReferenceJudge,
    Pipeline,
    PositionSwap,
    ReferenceRevision,
    Sampling,
    SolveFirst,
)
from mitigate.strategies._own_reference import reference_slots
from tests.test_composition_battery import MITIGATIONS, TEMPLATES, _check_leaf, _item, _resolve, _template

ANSWER = "THE JUDGE'S OWN REFERENCE"


def _prompt(name: str) -> JudgePrompt:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _template(name)


def _judge_text(name: str, mitigation: Any, item: Item | None = None) -> tuple[str, str, Item]:
    """(the first request's text, the judge request's text) for template ``name``, and the item."""
    prompt = _prompt(name)
    item = item or _bare_item(prompt)
    lm = FakeLM(lambda r: ANSWER if "Write only" in r.messages[-1].content else "[[A]]\nScore: 3")
    judge = mitigation.wrap(PromptJudge(prompt, lm))
    first, second = judge.requests(item)
    return first.request.messages[-1].content, "\n".join(m.content for m in second.request.messages), item


def _bare_item(prompt: JudgePrompt) -> Item:
    """The battery's item without values for the template's own reference slots (the judge fills those)."""
    item = _item(prompt)
    refs = set(reference_slots(prompt))
    return item.model_copy(update={"inputs": {k: v for k, v in item.inputs.items() if k not in refs}})


@pytest.mark.parametrize(
    ("name", "heading"),
    [
        # a summarisation template shows no task: the judge writes its own summary
        ("geval-summeval", "\n\nSummary:\n\nTHE FIRST OUTPUT\n\nYour own summary:\n\n<the answer"),
        ("llmbar", "# Output (b):\nTHE SECOND OUTPUT\n\n# Your own answer to the task:\n<the answer"),
        (
            "mtbench-pair",
            "[The End of Assistant B's Answer]\n\n[The Start of Your Own Answer To The Task]\n<the answer to "
            "the first request>\n[The End of Your Own Answer To The Task]",
        ),
        (
            "layout-xml",
            "</summary>\n\n<your_own_summary>\n\n<the answer to the first request>\n\n</your_own_summary>",
        ),
        ("layout-xml-inline", "<your_own_summary><the answer to the first request></your_own_summary>"),
        ("layout-numbered-inline-tight", "2. Summary: THE FIRST OUTPUT\n3. Your own summary: <the answer"),
        # "3." is the template's own next heading
        ("layout-numbered", "\n\nYour own summary:\n\n<the answer"),
        ("flowjudge-with-inputs", "</output>\n\n<your_own_answer_to_the_task>\n<the answer"),
    ],
)
def test_the_reference_stands_after_the_item_under_a_heading_in_the_templates_own_layout(
    name: str, heading: str
) -> None:
    _, text, _ = _judge_text(name, SolveFirst())
    assert heading in text
    assert text.count("<the answer to the first request>") == 1
    assert len(re.findall(r"is the (?:answer|summary) you wrote (?:to the task )?yourself", text)) == 1


def test_solve_first_shows_the_task_under_its_headings_and_never_the_judged_texts() -> None:
    first, _, _ = _judge_text("mtbench-pair", SolveFirst(task="Answer the user's question."))
    assert (
        "User Question:\n<question of the item>" in first and "The task: Answer the user's question." in first
    )
    assert "THE FIRST OUTPUT" not in first and "THE SECOND OUTPUT" not in first


def test_reference_revision_shows_the_judged_texts_under_their_headings() -> None:
    first, text, _ = _judge_text("llmbar", ReferenceRevision())
    assert "Output (a):\nTHE FIRST OUTPUT" in first and "Output (b):\nTHE SECOND OUTPUT" in first
    assert "# Reference answer (your revision):" in text and "revising the two texts" in text
    first, _, _ = _judge_text("geval-summeval", ReferenceRevision())
    assert "Summary:\nTHE FIRST OUTPUT" in first and "on coherence" in first


def test_a_templates_own_reference_slot_is_filled_never_doubled() -> None:
    _, text, _ = _judge_text("prometheus-absolute", SolveFirst())
    assert "###Reference Answer (Score 5):\n<the answer to the first request>" in text
    assert (
        "Your own answer to the task" not in text
        and "The reference answer in this prompt is the answer" in text
    )
    prompt = _prompt("prometheus-absolute")
    with pytest.raises(ConfigError, match="own reference slot"):
        SolveFirst(on_reference_slot="refuse").wrap(PromptJudge(prompt, FakeLM(["x"])))
    own = _item(prompt)  # brings a value for {{reference_answer}}
    judge = SolveFirst().wrap(PromptJudge(prompt, FakeLM([ANSWER])))
    with pytest.raises(DataError, match="brings its own reference"):
        run_coroutine(judge.judge(own), what="test", instead="await")


def test_the_judge_answers_first_then_judges_with_its_answer_as_the_reference() -> None:
    prompt = _prompt("llmbar")
    lm = FakeLM([ANSWER, "Output (b)"])
    judge = (SolveFirst() | PositionSwap()).wrap(PromptJudge(prompt, FakeLM(["unused"])))
    judge = SolveFirst().wrap(PromptJudge(prompt, lm))
    j = run_coroutine(judge.judge(_bare_item(prompt)), what="test", instead="await")
    assert j.verdict == "second" and j.calls == 2 and j.meta["own_reference"]["text"] == ANSWER
    sent = lm.requests[1].messages[-1].content
    assert (
        f"# Your own answer to the task:\n{ANSWER}" in sent
        and "Write only your answer." in lm.requests[0].messages[-1].content
    )


def test_an_empty_first_answer_is_a_recorded_failure_and_no_judge_call_is_made() -> None:
    prompt = _prompt("llmbar")
    lm = FakeLM(["   "])
    j = run_coroutine(
        ReferenceRevision().wrap(PromptJudge(prompt, lm)).judge(_bare_item(prompt)), what="t", instead="a"
    )
    assert j.verdict is None and "returned no text" in str(j.error) and len(lm.requests) == 1


def test_solve_first_on_a_template_with_no_task_asks_for_the_judged_kind_of_text_not_an_answer() -> None:
    first, text, _ = _judge_text("geval-summeval", SolveFirst())
    assert first.startswith("Write your own summary of the source text below") and "the task" not in first
    assert first.endswith("Write only your summary.") and "Your own summary:" in text
    pair = JudgePrompt.from_template(
        "Which summary is better?\n\nArticle:\n{{article}}\n\nSummary A:\n{{output}}\n\n"
        "Summary B:\n{{output_b}}\n\nAnswer with A or B.",
        answer="pairwise",
    )
    item = Item(id="i", output="A", output_b="B", inputs={"article": "ART"})
    first = SolveFirst().wrap(PromptJudge(pair, FakeLM([]))).requests(item)[0].request.messages[-1].content
    assert (
        first.startswith("Write your own summary of the article below") and "two others are compared" in first
    )
    # a question is a task: the judge answers it
    qa = JudgePrompt.from_template(
        "Rate the answer.\n\nQuestion:\n{{question}}\n\nAnswer:\n{{answer}}\n\nScore:"
    )
    item = Item(id="i", output="A", inputs={"question": "Q?"})
    first = SolveFirst().wrap(PromptJudge(qa, FakeLM([]))).requests(item)[0].request.messages[-1].content
    assert first.startswith("Write your own answer to the task below") and "Question:\nQ?" in first
    # neither a task nor a plain name for the judged text: refused, or told what to write
    odd = (
        "Rate it.\n\nArticle:\n{{article}}\n\n[The Start of Assistant's Answer]\n{{answer}}\n[End]\n\nScore:"
    )
    with pytest.raises(ConfigError, match=r"no task or question \(only Article\).*solve-first\(task="):
        SolveFirst().wrap(PromptJudge(JudgePrompt.from_template(odd), FakeLM([])))
    told = SolveFirst(task="Summarise the article.").wrap(
        PromptJudge(JudgePrompt.from_template(odd), FakeLM([]))
    )
    assert (
        "The task: Summarise the article."
        in told.requests(Item(id="i", output="A", inputs={"article": "x"}))[0].request.messages[-1].content
    )


def test_one_reference_per_item_and_a_template_without_a_task_input_cannot_be_solved() -> None:
    prompt = _prompt("llmbar")
    with pytest.raises(ConfigError, match="one reference per judged item"):
        (SolveFirst() | ReferenceRevision()).wrap(PromptJudge(prompt, FakeLM(["x"])))
    bare = JudgePrompt.from_template("Rate the summary from 1 to 5.\n\nSummary:\n{{summary}}\n\nScore:")
    with pytest.raises(ConfigError, match="no task input"):
        SolveFirst().wrap(PromptJudge(bare, FakeLM(["x"])))
    assert isinstance(ReferenceRevision().wrap(PromptJudge(bare, FakeLM(["x"]))), OwnReferenceJudge)


def test_a_later_prompt_mitigation_reaches_the_judge_call_and_the_first_call_stays_plain() -> None:
    prompt = _prompt("geval-summeval")
    judge = (SolveFirst() | Sampling(temperature=0.5, cot=True)).wrap(PromptJudge(prompt, FakeLM(["x"])))
    first, second = judge.requests(_bare_item(prompt))
    assert (
        "step by step" in second.request.messages[-1].content
        and "step by step" not in first.request.messages[-1].content
    )
    assert first.request.temperature == 0.0 and second.request.temperature == 0.5


def _own_reference_judges(judge: Judge) -> list[OwnReferenceJudge]:
    if isinstance(judge, OwnReferenceJudge):
        return [judge]
    found: list[OwnReferenceJudge] = []
    for child in judge.children.values() if isinstance(judge, CompositeJudge) else ():
        found += _own_reference_judges(child)
    for attr in ("inner", "leaf"):
        inner = getattr(judge, attr, None)
        if isinstance(inner, Judge) and inner is not judge:
            found += _own_reference_judges(inner)
    return found


def _answer(request: LMRequest) -> str:
    return "The reply is fine.\nScore: 3"


OWN_REFUSALS = (
    "demonstrations cannot show",
    "one reference per judged item",
    "cannot be combined with",
    "no task input",
    "no task or question",
    "a later mitigation turned",
)
"""Why a combination with an own reference may be refused: nothing else (the other step must refuse on its
own)."""


def _alone(name: str, step: str) -> str:
    prompt = _prompt(name)
    resolved = _resolve(MITIGATIONS[step], prompt)
    if resolved is None:
        return "n/a"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for leaf in resolved.wrap(
                PromptJudge(prompt, FakeLM(_answer, logprobs=True, constraint_modes=("format",)))
            ).leaves():
                leaf.prompt.render(_item(prompt))
    except MitigateError:
        return "refused"
    return "ok"


def _run(name: str, steps: tuple[Any, ...]) -> str:
    prompt = _prompt(name)
    resolved = [_resolve(MITIGATIONS[s], prompt) if isinstance(s, str) else s for s in steps]
    if any(r is None for r in resolved):
        return "n/a"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            judge = Pipeline(resolved).wrap(
                PromptJudge(prompt, FakeLM(_answer, logprobs=True, constraint_modes=("format",)))
            )
    except MitigateError as exc:
        assert "\n" not in str(exc).strip(), str(exc)
        return _refused(name, steps, exc)
    found = _own_reference_judges(judge)
    assert found, f"{name} | {steps}: no own-reference judge in the pipeline"
    for oj in found:
        item = oj._with_answer(_bare_item(prompt), ANSWER)
        try:
            oj.prompt.render(item)
        except MitigateError as exc:
            assert "\n" not in str(exc).strip(), str(exc)
            return _refused(name, steps, exc)
        try:
            _check_leaf(prompt, oj.prompt, item, oj.leaf.config, own_template="multi-attribute" in steps)
        except AssertionError as exc:
            raise AssertionError(f"{name} | {steps}: {exc}") from None
        sent = "\n".join(m.content for m in oj.prompt.render(item))
        assert sent.count(ANSWER) == 1 and len(re.findall(r"use it as a reference", sent)) == 1, name
    return "ok"


def _refused(name: str, steps: tuple[Any, ...], exc: MitigateError) -> str:
    """A refusal is the own reference's (one of :data:`OWN_REFUSALS`) or the other step's on its own."""
    if any(reason in str(exc) for reason in OWN_REFUSALS):
        return "refused (own reference)"
    others = [s for s in steps if isinstance(s, str)]
    assert others and all(_alone(name, s) == "refused" for s in others), (
        f"{name} | {steps}: refused with {exc}"
    )
    return "refused (the other step alone)"


OWN = [SolveFirst(), ReferenceRevision()]
OTHERS = sorted(m for m in MITIGATIONS if m not in ("solve-first", "reference-revision"))


@pytest.mark.slow
@pytest.mark.parametrize("own", OWN, ids=lambda m: m.registry_name)
def test_every_template_and_every_mitigation_before_or_after_keeps_the_prompt_coherent_or_is_refused(
    own: Any,
) -> None:
    outcome: Counter[str] = Counter()
    for name in TEMPLATES:
        outcome[_run(name, (own,))] += 1
        for other in OTHERS:
            outcome[_run(name, (own, other))] += 1
            outcome[_run(name, (other, own))] += 1
    print(f"\n{own.registry_name}: {dict(outcome)}")
    assert outcome["ok"] > 2 * outcome["refused (own reference)"], outcome
