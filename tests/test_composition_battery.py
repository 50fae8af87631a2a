"""The coherent-composition battery: every template of the corpus x every mitigation, and pairs and triples of
them.

Each pipeline wraps a judge whose backend is a :class:`~mitigate.lm._fake.FakeLM` (it records
every request and enforces nothing), judges one item, and every prompt judge behind the
pipeline (every call of a fan-out) is checked against the rules of DESIGN.md's "coherent
composition" contract, on the exact text it sends:

1. every score a demo shows is on the prompt's current scale and step;
2. demos are one span inserted before the judged item's first heading (the request is
   otherwise unchanged byte for byte, so the item keeps every heading); each demo shows the
   item's whole section, first heading to last text, with its own texts, and answers in the
   template's own format (a header says so when the format asks for reasoning the demos do not
   show);
3. no added sentence refers to something the prompt lacks (the option-order hint only with
   options; no score wording added to a pairwise prompt);
4. an added reasoning request never stands before words that forbid reasoning;
5. a rescale rewrites every statement of the scale;
6. a change of answer kind (MCQ) replaces the answer stub;
7. the answer constraint allows the reasoning the prompt asks for, and is bounded;
8. outside inserted spans the template's lines are unchanged;
9. nothing is inserted inside the judged item's section;
10. a prompt that ends with the start of its answer line (an answer stub: "- Fluency (1-3):",
    "Score:") has that line as its format's stub, still ends with it, and its constraint generates
    only the continuation (the value), never the stub again.

A pipeline that cannot be made coherent must be refused with a one-line
:class:`~mitigate.errors.MitigateError` (counted, never a crash). Templates: the published ones
of ``tests/prompt/test_template_corpus.py`` (read from the installed packages) and their mirrors, plus
the formats below (our own wording): MT-Bench single with "first write a short critique",
a G-Eval prompt with "- A score of 1 (no) means" options, an LLMBar-style pairwise prompt with
numbered rules, a JSON-answer prompt, a ``<score>`` tag prompt and a Y/N choice after reasoning;
the item layouts (G-Eval's ``Heading:`` / blank / slot under an ``Example:`` lead-in and its
dialogue form, Markdown headings, XML tags on their own lines and inline, numbered headings),
each with and without blank lines, a first slot inside a sentence (demos refused) and a rubric
between two slots; answer stubs in G-Eval's layout ("- Readability (1-3):" with no line break
after it, "- Warmth: " with a space, "Score (1-5):" with a line break); and G-Eval's own SummEval prompts when
a copy of its repository is here
(``MITIGATE_GEVAL_REPO``, default the ``fetch`` snapshot under /work/.mirror; never copied).
Every demo preset (random, stratified, KNN per item, highest-RS, perturbed, a searched set,
pairwise) is also fitted and checked on every layout.
"""

from __future__ import annotations

import functools
import itertools
import re
import warnings
from collections import Counter
from typing import Any

import pytest

from mitigate import Item, PromptJudge
from mitigate.data import Benchmark
from mitigate.errors import MitigateError, TemplateError
from mitigate.judge import Judge
from mitigate.lm import LM, FakeLM, LMRequest, LMResponse
from mitigate.parse import VALUE
from mitigate.prompt import SLOT_RE, Demo, JudgePrompt, closing_stub, field_text, reasoning_ban
from mitigate.prompt._judge_prompt import DEMOS_END, fill
from mitigate.prompt._parts import DEFAULT_DEMO_TEMPLATE
from mitigate.prompt.answer._infer import stated_reasoning
from mitigate.prompt.read._clues import find_scales
from mitigate.registry import registered
from mitigate.scale import Scale
from mitigate.selectors import KNN, Random, Stratified
from mitigate.strategies import (
    Demos,
    Granularity,
    HighestRSDemosPreset,
    Mitigation,
    PerItemDemosJudge,
    PerturbedDemosPreset,
    Pipeline,
    RandomDemosPreset,
    Sampling,
)
from mitigate.strategies._edits import (
    COT_LEAD,
    DEFAULT_COT,
    DEFAULT_HINT,
    RTS_LEAD,
    STUB_REASONING,
    is_multi_criterion_template,
)
from tests.prompt.test_template_corpus import CORPUS, GEVAL_PROMPTS, GEVAL_REPO, _corpus, geval_repo_prompt

OWN: dict[str, str] = {
    # MT-Bench single-answer format, with the critique-then-rate instruction and bracketed headings
    "own-mtbench-critique": """You are a careful judge of an assistant's reply. First write a short critique of the reply. \
Then rate it on a scale of 1 to 10, where 1 is useless and 10 is flawless, as "Rating: [[N]]", e.g. "Rating: [[4]]".

[User request]
{{question}}

[Begin assistant reply]
{{reply}}
[End assistant reply]""",  # noqa: E501 - the template's own lines, kept as written
    # G-Eval format with the "- A score of 1 (no) means" family of options and a "scores ONLY" stub
    "own-geval-score-of-no": """You will rate one reply to a user's question.

Evaluation Criteria:

Helpfulness (1-5) - does the reply help the user?
- A score of 1 (no) means the reply does not help at all.
- A score of 2 means the reply helps a little.
- A score of 3 means the reply helps with part of the question.
- A score of 4 means the reply helps with most of it.
- A score of 5 (yes) means the reply fully answers the question.

Question:
{{question}}

Reply:
{{response}}

Evaluation Form (scores ONLY):

- Helpfulness:""",
    # LLMBar-style pairwise prompt: numbered rules, "Output (a)" / "Output (b)"
    "own-llmbar-rules": """You pick the output that follows the instruction better.

Here are the rules of the evaluation:
(1) Prefer the output that carries out the instruction precisely.
(2) An output should contain neither more nor less than the instruction asks for.
(3) The order in which the outputs appear must not sway you.

# Instruction:
{{instruction}}

# Output (a):
{{output_1}}

# Output (b):
{{output_2}}

# Which is better, Output (a) or Output (b)? Answer "Output (a)" or "Output (b)":""",
    # a JSON answer with a reason field
    "own-json": """Grade the answer to the question for correctness on a scale of 1 to 5.

Question: {{question}}
Answer: {{answer}}

Return a JSON object with a "reason" field (one sentence) and a "score" field (an integer from 1 to 5).""",
    # a <score> tag answer after feedback
    "own-score-tag": """Judge how faithful the summary is to the document, on a scale of 1 to 3.
Write your feedback inside <feedback> tags, then put the score inside <score> tags, after the feedback.

<document>
{{document}}
</document>
<summary>
{{summary}}
</summary>""",
    # a Y/N choice after step-by-step reasoning
    "own-yes-no": """You check whether a submission meets the criterion.

[Task]: {{input}}
[Submission]: {{output}}
[Criterion]: Does it answer the task?

Reason it through step by step first, so that your conclusion is right. Then print only the single character \
"Y" or "N" (no quotes, no punctuation) on a line of its own.""",
}


pytestmark = pytest.mark.slow  # renders every template with every mitigation and pair (~40 s)


def _tight(text: str) -> str:
    """``text`` without its blank lines: the same layout written compactly."""
    return "\n".join(line for line in text.split("\n") if line.strip())


# The layouts an item section is written in (our own wording), each with and without blank lines: G-Eval's
# (a lead-in "Example:", then "Heading:" / blank / slot), its dialogue form, Markdown headings (with a "# ..."
# lead-in), XML tags on their own lines and around the slot, and numbered headings.
LAYOUTS: dict[str, str] = {
    "layout-geval": """You will be shown one news article and a short summary of it.

Your task is to score the summary on a single quality.

Evaluation Criteria:

Clarity (1-3) - whether each sentence of the summary is easy to understand on a first reading.

- 1: Unclear. Several sentences have to be read twice.
- 2: Mostly clear. One sentence is hard to follow.
- 3: Clear. Every sentence is understood at once.

Evaluation Steps:

1. Skim the article to learn what it is about.
2. Read the summary slowly and mark any sentence that is hard to follow.
3. Give a clarity score from 1 to 3, with 3 the clearest.


Example:


Source Text:

{{Document}}

Summary:

{{Summary}}


Evaluation Form (scores ONLY):

- Clarity:""",
    "layout-geval-dialogue": """You will read the history of a chat between two people and one candidate next turn.

Evaluation Criteria:

Interest (1-3) Does the turn give the other speaker something worth answering?

Evaluation Steps:

1. Read the history to learn what the two people talk about.
2. Decide whether the turn opens something new to talk about.

Conversation History:

{{document}}

Response:

{{response}}


Evaluation Form (scores ONLY):

- Interest:""",  # noqa: E501 - the template's own lines, kept as written
    "layout-markdown": """# Task

Rate how faithful the summary is to the article, on a scale of 1 to 5 where 5 means every claim is supported.

# The texts

## Article

{{article}}

## Summary

{{summary}}

## Your answer

Give it as "Score: N".""",
    "layout-xml": """Rate how faithful the summary is to the article on a scale of 1 to 5.

<article>

{{article}}

</article>

<summary>

{{summary}}

</summary>

Give your answer as "Score: N".""",
    "layout-xml-inline": """Rate how faithful the summary is to the article on a scale of 1 to 5.

<article>{{article}}</article>

<summary>{{summary}}</summary>

Give your answer as "Score: N".""",
    "layout-numbered": """Score how faithful the summary is to its source text, on a scale of 1 to 5.

1. Source text:

{{document}}

2. Summary:

{{summary}}

3. Score (1-5):""",
    "layout-numbered-inline": """Score how faithful the summary is to its source text, on a scale of 1 to 5.

1. Source text: {{document}}

2. Summary: {{summary}}

Give your answer as "Score: N".""",
    # G-Eval's fluency form: the stub names the criterion with its range, and ends the template with no line
    # break
    "layout-geval-range-stub": """You will read a short news article and a one-paragraph summary of it.

Your task is to rate how readable the summary is.

Evaluation Criteria:

Readability (1-3): whether each sentence of the summary reads without stumbling over its grammar or wording.

- 1: Poor. Most sentences need a second reading.
- 2: Fair. A few sentences are awkward.
- 3: Good. Every sentence reads smoothly.


Example:


Summary:

{{Summary}}


Evaluation Form (scores ONLY):

- Readability (1-3):""",
    # the stub names the criterion alone and keeps the space after its colon
    "layout-geval-stub-space": """You will read the history of a chat and one candidate reply.

Evaluation Criteria:

Warmth (1-5) - how friendly and considerate the reply sounds to the person it answers.

Chat History:

{{history}}

Reply:

{{reply}}

Evaluation Form (scores ONLY):

- Warmth: """,
    # a score stub with its range, on a line of its own followed by a line break
    "layout-score-range-stub": """Rate how well the passage supports the answer, from 1 (none) to 5 (fully).

Passage:
{{passage}}

Answer:
{{answer}}

Score (1-5):
""",
    "layout-markdown-pair": """Decide which answer serves the question better. Reply with "[[A]]" or "[[B]]" only.

## Question

{{question}}

## Answer A

{{answer_a}}

## Answer B

{{answer_b}}""",  # noqa: E501 - the template's own lines, kept as written
}
LAYOUTS.update({f"{name}-tight": _tight(text) for name, text in list(LAYOUTS.items())})
OWN.update(LAYOUTS)
OWN[
    "slot-in-a-sentence"
] = """Is the summary "{{summary}}" a faithful account of the article below? Rate it from 1 to 5.

Article:
{{article}}

Score:"""  # no heading to put demos before: demos are refused, every other mitigation applies
OWN["rubric-between-slots"] = """Rate the answer from 1 to 3.

Question:
{{question}}

Rubric:
Score 1 means wrong.
Score 2 means partly right.
Score 3 means right.

Answer:
{{answer}}

Score:"""  # the guideline inside the item: demos show their texts under slot names, added text goes after the item  # noqa: E501 - the template's own lines, kept as written

GEVAL_REPO_TEXTS = {
    name: text for name, rel in GEVAL_PROMPTS.items() if (text := geval_repo_prompt(rel)) is not None
}
"""G-Eval's own SummEval prompts, read from a copy of its repository when one is here (see
test_template_corpus)."""

TEMPLATES = sorted(CORPUS) + sorted(OWN) + sorted(GEVAL_REPO_TEXTS)
PAIR_TEMPLATES = [
    "prometheus-absolute",
    "alpacaeval-self-taught-mt-bench-pair",
    "autoevals-factuality",
    "geval-summeval",
    "own-mtbench-critique",
    "own-geval-score-of-no",
    "own-llmbar-rules",
    "own-json",
    "own-score-tag",
    "own-yes-no",
    "mtbench-pair",
    "layout-geval-range-stub",
]


@functools.cache  # a frozen value, read once per template (the battery reads each thousands of times)
def _template(name: str) -> JudgePrompt:
    if name in OWN or name in GEVAL_REPO_TEXTS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return JudgePrompt.from_template(OWN.get(name) or GEVAL_REPO_TEXTS[name])
    return _corpus(name)


def _item(prompt: JudgePrompt) -> Item:
    inputs = {
        prompt._field_for(s): f"<{s} of the item>"
        for s in prompt._input_slots()
        if prompt._field_for(s) != "output_b"
    }
    human = {c.name: prompt.scale.max for c in prompt.criteria}
    return Item(
        id="item",
        output="THE FIRST OUTPUT",
        output_b="THE SECOND OUTPUT" if prompt.answer == "pairwise" else None,
        inputs=inputs,
        human=human,
        meta={"system": "s1"},
    )


def _demos_for(prompt: JudgePrompt) -> Demos | None:
    """Two demos that fit ``prompt``: one on its scale, one labelled on 1-10 (mapped onto the prompt's)."""
    base = _item(prompt)
    items = [
        base.model_copy(
            update={
                "id": f"demo-{k}",
                "output": f"DEMO OUTPUT {k}",
                "inputs": {f: f"demo {k} {f}" for f in base.inputs},
                "output_b": f"DEMO SECOND {k}" if base.output_b else None,
            }
        )
        for k in (1, 2)
    ]
    if prompt.answer == "pairwise":
        if prompt.format.two_scores:
            return None
        return Demos(demos=(Demo(item=items[0], verdict="first"), Demo(item=items[1], verdict="second")), k=2)
    if prompt.answer == "mcq" and not prompt.scale.letters:
        return None
    return Demos(
        demos=(
            Demo(item=items[0], score=prompt.scale.min),
            Demo(item=items[1], score=8.0, scale=Scale(min=1, max=10), reason="A reason of its own."),
        ),
        k=2,
    )


def _first_fitted(cls: Any) -> list[Mitigation]:
    out = []
    for m in cls.examples():
        if isinstance(m, Mitigation) and (not m.tags.needs_fitting or getattr(m, "is_fitted", False)):
            out.append(m)
    return out[:1]


def _mitigations() -> dict[str, Any]:
    """name -> a fitted mitigation, or a function of the template giving one (the template's own demos)."""
    found: dict[str, Any] = {}
    for name, cls in sorted(registered("mitigation").items()):
        if name.startswith("test-"):  # doubles other test modules register: not shipped
            continue
        for m in _first_fitted(cls):
            found[name] = m
    found["granularity-1-100"] = Granularity(scale="1-100")
    found["sampling-cot"] = Sampling(temperature=0.5, n=1, cot=True)
    found["template-demos"] = _demos_for
    found["perturbed-template-demos"] = lambda p: (
        None
        if p.guideline is None or p.answer != "score"
        else Demos(demos=(_demos_for(p).demos[0],), k=1, display="perturbed", n=2)
    )  # type: ignore[union-attr]
    return found


MITIGATIONS = _mitigations()


def _resolve(step: Any, prompt: JudgePrompt) -> Mitigation | None:
    return step(prompt) if callable(step) and not isinstance(step, Mitigation) else step


def _answer(_request: Any) -> str:
    return "The reply is fine.\nScore: 3"


# --------------------------------------------------------------------------- the checks


def _added_reasoning(text: str) -> bool:
    return any(lead in text for lead in (COT_LEAD, DEFAULT_COT, RTS_LEAD))


def _check_leaf(
    base: JudgePrompt, prompt: JudgePrompt, item: Item, leaf_cfg: Any, *, own_template: bool = False
) -> None:
    """Every rule of the contract on one prompt judge's prompt (what it sends for ``item``)."""
    sent = "\n".join(m.content for m in prompt.render(item))
    fmt, scale = prompt.format, prompt.scale
    # 1. demo scores on the current scale and step, shown in the prompt's own answer line
    for demo in prompt.demos:
        if demo.score is None:
            continue
        values = demo.score.values() if isinstance(demo.score, dict) else [demo.score]
        assert all(scale.on_grid(v) for v in values), (demo.score, scale.describe())
        if not isinstance(demo.score, dict) and not fmt.two_scores and fmt.json_key is None:
            assert fmt.render(demo.score, scale) in sent
    # 2. demos stand before the item's first heading and show every heading of the item, in the template's
    # spacing
    if prompt.demos:
        check_demo_layout(prompt, item)
    # 3. no added sentence about options the prompt lacks; no score wording added to a pairwise prompt
    if DEFAULT_HINT in sent:
        assert prompt.guideline is not None and prompt.answer != "pairwise"
    base_text = "\n".join(m.template for m in base.messages)
    added = [
        ln
        for ln in sent.splitlines()
        if ln.strip()
        and ln not in base_text
        and ln
        not in "\n".join(
            f"{d.item.output}\n{d.item.output_b}\n" + "\n".join(d.item.inputs.values()) for d in prompt.demos
        )
        and ln not in item.output + str(item.output_b) + "\n".join(item.inputs.values())
    ]
    if prompt.answer == "pairwise":
        assert not [
            ln
            for ln in added
            if re.search(r"\bscores?\b", ln, re.I)
            and ln not in "\n".join(m.content for m in base.render(item))
        ], added
    # 4. an added reasoning request never stands before words that forbid reasoning
    if _added_reasoning("\n".join(added)):
        own = "\n".join(ln for ln in sent.splitlines() if ln not in added)
        assert reasoning_ban([own]) is None or stated_reasoning([own]) == "before", reasoning_ban([own])
    # 5. a rescale rewrites every statement of the scale
    if (scale.min, scale.max) != (base.scale.min, base.scale.max) and prompt.answer == "score":
        stated = {(s.lo, s.hi) for s in find_scales("\n".join(m.template for m in prompt.messages))}
        assert (base.scale.min, base.scale.max) not in stated, stated
    # 6. a change of answer kind replaces the answer stub
    if prompt.answer == "mcq" and base.answer != "mcq":
        stub = prompt.answer_stub().strip()
        assert not stub or stub.splitlines()[-1].strip() == "Answer:", stub
    # 7. the constraint allows the reasoning asked for, and is bounded
    if fmt.kind != "mcq" or scale.letters:
        con = fmt.constraint(scale, max_tokens=leaf_cfg.max_tokens)
        assert not re.search(r"[\])]\s*[*+]", con.gbnf), con.gbnf  # every repetition is counted
        if fmt.reasoning == "before" and fmt.json_key is None and not fmt.two_scores:
            value = (
                "first"
                if fmt.kind == "pairwise"
                else (next(iter(scale.letters)) if fmt.kind == "mcq" else scale.max)
            )
            sep = " " if fmt.line.startswith("[RESULT]") else "\n"
            assert re.fullmatch(con.regex, f"The reply is clear and complete.{sep}{fmt.render(value, scale)}")
    # 10. a prompt that ends with an answer stub leaves the judge to complete it: the format's stub is that
    # last line,
    # a demo shows it completed, and the constraint generates only its continuation, never the stub again
    last = prompt.render(item)[-1].content
    closing = closing_stub([last], prompt.criteria[0].name if prompt.criteria else None)
    if (
        fmt.kind != "pairwise"
        and fmt.json_key is None
        and not fmt.two_scores
        and closing is not None
        and len(prompt.criteria) == 1
    ):
        assert fmt.stub == closing, (fmt.stub, closing)
    if fmt.stub:
        assert last.rstrip().splitlines()[-1].strip() == fmt.stub, (last[-80:], fmt.stub)
        if fmt.kind != "mcq" or scale.letters:
            con = fmt.constraint(scale, max_tokens=leaf_cfg.max_tokens)
            value = next(iter(scale.letters)) if fmt.kind == "mcq" else scale.max
            if fmt.reasoning != "before":
                assert re.fullmatch(con.regex, fmt.continuation.replace(VALUE, fmt.value_text(value, scale)))
                assert not re.fullmatch(con.regex, fmt.render(value, scale)), con.regex
    # 8. outside inserted spans the template's lines are unchanged (multi-attribute writes its own template:
    # skipped)
    if own_template or (is_multi_criterion_template(prompt) and not is_multi_criterion_template(base)):
        return
    kept = "\n".join(m.content for m in prompt.render(item))
    for line in "\n".join(m.content for m in base.render(item)).splitlines():
        if (
            not line.strip()
            or re.search(r"\d", line)
            or (base.guideline and any(o.description in line for o in base.guideline.options))
        ):
            # scale numbers (granularity) and guideline options (perturbations, MCQ letters) may change
            continue
        if line.strip() in base.answer_stub() or line.strip() in _instruction_paragraph(base):
            # the answer stub and closing instruction are rewritten by answer-kind and reasoning changes
            continue
        assert line in kept, line
    # 9. nothing is inserted inside the judged item: its section, first heading to last text, is sent whole
    section = base.item_section()
    unfilled = base.messages[section[0]].template[section[1] : section[2]] if section is not None else ""
    if unfilled and not re.search(r"\d", unfilled):  # headings with numbers may be rescaled ("(Score 5)")
        assert fill(base, unfilled, item) in kept, (
            f"text was inserted inside the judged item {unfilled[:80]!r}"
        )


def _inserted(before: str, after: str) -> tuple[int, str]:
    """Where and what: ``after`` must be ``before`` with one span inserted; the earliest place it can
    stand."""
    n = min(len(before), len(after))
    head = 0
    while head < n and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < n and before[len(before) - 1 - tail] == after[len(after) - 1 - tail]:
        tail += 1
    assert len(after) > len(before) and head + tail >= len(before), (
        "outside the inserted demos the request differs from the one without them"
    )
    at = max(len(before) - tail, 0)
    return at, after[at : at + len(after) - len(before)]


def _first_heading(text: str, value: str) -> int:
    """Where the heading of the text ``value`` starts in ``text``: its line when words precede it there, else
    the nearest non-blank line above (the slot's own line when there is none)."""
    at = text.index(value)
    line = text.rfind("\n", 0, at) + 1
    if re.search(r"[^\W_]", text[line:at]):
        return line
    above = [m for m in re.finditer(r"[^\r\n]*\S[^\r\n]*", text[:line])]
    return above[-1].start() if above else line


def check_demo_layout(prompt: JudgePrompt, item: Item) -> None:
    """The demos of ``prompt`` are coherent with the item they precede (DESIGN.md, coherent composition).

    Rendered with and without its demos, the request differs by one inserted span only (the
    template is unchanged byte for byte around it, the judged item keeps every heading); the
    span stands before the judged item's first heading; and each demo shows the item's whole
    section, from that heading to its last text, with the demo's texts in place of the item's,
    followed by its gold answer in the prompt's answer format.
    """
    bare = prompt.model_copy(update={"demos": ()})
    before = [m.content for m in bare.render(item)]
    after = [m.content for m in prompt.render(item)]
    changed = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a]
    assert len(changed) == 1, f"the demos changed {len(changed)} messages"
    idx = changed[0]
    at, block = _inserted(before[idx], after[idx])
    template = prompt.messages[idx].template
    slots = [m.group(1).strip() for m in SLOT_RE.finditer(template)]
    if not slots:
        return
    values = {s: field_text(item, prompt._field_for(s)) for s in slots}
    text = before[idx]
    start = _first_heading(text, values[slots[0]] or "")
    assert at <= start, f"the demos stand after the judged item's first heading: {text[start : start + 60]!r}"
    if prompt.item_section() is None or prompt.demo_template != DEFAULT_DEMO_TEMPLATE:
        return  # demos shown under slot names (slots over several messages, a guideline between two slots)
    last = values[slots[-1]] or ""
    section = text[start : text.index(last) + len(last)]
    pos = 0
    for demo in prompt.demos:
        shown = section
        for s in dict.fromkeys(slots):
            shown = shown.replace(values[s] or "", field_text(demo.item, prompt._field_for(s)) or "")
        found = block.find(shown, pos)
        assert found >= 0, f"demo {demo.item.id!r} does not show the item's section {shown[:200]!r}"
        pos = found + len(shown)
        fmt = prompt.format
        gold = demo.verdict if prompt.answer == "pairwise" else demo.score
        if not isinstance(gold, dict) and fmt.json_key is None and not fmt.two_scores:
            answer = fmt.render(gold, prompt.scale) if prompt.answer != "mcq" else None
            if answer is not None:
                assert answer in block[pos:], (demo.item.id, answer)


def _instruction_paragraph(prompt: JudgePrompt) -> str:
    from mitigate.strategies._forms import answer_instruction

    found = answer_instruction(prompt)
    if found is None:
        return ""
    idx, a, b = found
    return prompt.messages[idx].template[a:b]


REFUSALS: Counter[str] = Counter()


def _run(name: str, steps: tuple[str, ...]) -> str:
    """Build, wrap and check one pipeline on one template; "ok", "refused" or "n/a" (a step that has no form
    for it)."""
    prompt = _template(name)
    item = _item(prompt)
    resolved = [_resolve(MITIGATIONS[s], prompt) for s in steps]
    if any(r is None for r in resolved):
        return "n/a"
    lm = FakeLM(_answer, logprobs=True, constraint_modes=("format",))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            judge: Judge = (
                Pipeline(list(resolved)).wrap(PromptJudge(prompt, lm))
                if len(resolved) > 1
                else resolved[0].wrap(PromptJudge(prompt, lm))
            )  # type: ignore[union-attr]
            leaves = judge.leaves()
    except MitigateError as exc:
        assert "\n" not in str(exc).strip(), str(exc)
        REFUSALS[f"{steps[-1] if len(steps) == 1 else '+'.join(steps)}: {str(exc)[:70]}"] += 1
        return "refused"
    for leaf in leaves:
        try:
            leaf.prompt.render(item)
        except MitigateError as exc:
            assert "\n" not in str(exc).strip(), str(exc)
            return "refused"
        try:
            _check_leaf(prompt, leaf.prompt, item, leaf.config, own_template="multi-attribute" in steps)
        except AssertionError as exc:
            raise AssertionError(f"{name} | {' | '.join(steps)}: {exc}") from None
    return "ok"


# --------------------------------------------------------------------------- the battery

SINGLE = [(t, m) for t in TEMPLATES for m in sorted(MITIGATIONS)]
PAIRS = [(t, a, b) for t in PAIR_TEMPLATES for a, b in itertools.permutations(sorted(MITIGATIONS), 2)]
TRIPLES = [
    ("consistency-hint", "sampling-cot", "template-demos"),
    ("template-demos", "granularity-1-100", "agreement-gate"),
    ("granularity-1-100", "template-demos", "self-consistency"),
    ("single-attribute", "perturbed-template-demos", "sampling-cot"),
    ("position-swap", "consistency-hint", "template-demos"),
]


def test_every_template_with_every_mitigation_is_coherent_or_refused_in_one_line() -> None:
    outcome = Counter(_run(t, (m,)) for t, m in SINGLE)
    assert outcome["ok"] > len(SINGLE) // 2, outcome
    print(
        f"\nsingle: {len(TEMPLATES)} templates x {len(MITIGATIONS)} mitigations = {len(SINGLE)}: "
        f"{dict(outcome)}"
    )


def test_every_ordered_pair_of_mitigations_is_coherent_or_refused_in_one_line() -> None:
    outcome = Counter(_run(t, (a, b)) for t, a, b in PAIRS)
    assert outcome["ok"] > len(PAIRS) // 3, outcome
    print(
        f"\npairs: {len(PAIR_TEMPLATES)} templates x {len(MITIGATIONS) * (len(MITIGATIONS) - 1)} ordered "
        f"pairs = {len(PAIRS)}: {dict(outcome)}"
    )


@pytest.mark.parametrize("steps", TRIPLES)
def test_triples_are_coherent_or_refused_in_one_line(steps: tuple[str, ...]) -> None:
    outcome = Counter(_run(t, steps) for t in PAIR_TEMPLATES)
    assert outcome["ok"] >= 1, outcome


# --------------------------------------------------------------------------- incoherent combinations once
# sent, pinned


def test_granularity_rescales_demos_in_either_order_and_rewrites_every_statement() -> None:
    prompt = _template("own-mtbench-critique")
    demos = _demos_for(prompt)
    assert demos is not None
    for pipe in (Granularity(scale="1-100") | demos, demos | Granularity(scale="1-100")):
        (leaf,) = pipe.wrap(PromptJudge(prompt, FakeLM([]))).leaves()
        # 8 on 1-10 -> 78 on 1-100 (linear, half up), from the gold label in both orders: never rounded twice
        assert [d.score for d in leaf.prompt.demos] == [1.0, 78.0]
        assert leaf.prompt.demos[1].label == 8.0 and leaf.prompt.demos[1].scale == Scale(min=1, max=10)
        text = leaf.prompt.template_text()[0]
        assert "where 1 is useless and 100 is flawless" in text and "10 is flawless" not in text


def test_demos_labelled_on_another_scale_are_mapped_or_refused_naming_both() -> None:
    prompt = _template("own-geval-score-of-no")  # 1-5
    shown = prompt.with_demos(
        [Demo(item=Item(id="d", output="o", inputs={"question": "q"}), score=8.0, scale=Scale(min=1, max=10))]
    )
    assert shown.demos[0].score == 4.0 and "Helpfulness: 4" in shown.render_demos()
    with pytest.raises(MitigateError, match=r"shows the score 8, outside the prompt's scale 1 to 5"):
        prompt.with_demos([Demo(item=Item(id="d", output="o", inputs={"question": "q"}), score=8.0)])


def test_the_agreement_gates_mcq_form_replaces_the_numeric_stub_and_its_letter_parses() -> None:
    prompt = _template("own-geval-score-of-no")
    from mitigate.strategies import mcq_form, rts_form

    form = mcq_form(prompt)
    assert form.messages[-1].template.endswith("Evaluation Form (scores ONLY):\n\nAnswer:")
    assert form.format.read("Answer: C", form.scale) == 3.0
    rts = rts_form(prompt)  # the reasoning variant rewrites the stub's "scores ONLY"
    assert rts.messages[-1].template.endswith(f"Evaluation Form ({STUB_REASONING}):\n\n- Helpfulness:")


def test_a_critique_then_rate_template_reads_reasoning_first_and_its_constraint_lets_critiques_by() -> None:
    prompt = _template("own-mtbench-critique")
    assert prompt.format.reasoning == "before" and prompt.format.line == "Rating: [[{value}]]"
    con = prompt.format.constraint(prompt.scale, max_tokens=256)
    assert re.fullmatch(con.regex, "The reply is vague about the dates.\nRating: [[6]]")
    assert not re.fullmatch(con.regex, "Rating: [[6]] Rating: [[6]] Rating: [[6]]")


def test_pairwise_and_no_option_prompts_get_a_hint_about_what_they_have() -> None:
    from mitigate.strategies import ConsistencyHint
    from mitigate.strategies._edits import NO_OPTIONS_HINT, PAIRWISE_HINT

    pair = ConsistencyHint().apply(_template("own-llmbar-rules"))
    assert PAIRWISE_HINT in pair.template_text()[0] and "score" not in PAIRWISE_HINT
    plain = ConsistencyHint().apply(_template("own-mtbench-critique"))
    assert NO_OPTIONS_HINT in plain.template_text()[0] and "option" not in NO_OPTIONS_HINT


def test_perturbed_demos_keep_the_question() -> None:
    prompt = _template("own-geval-score-of-no")
    step = MITIGATIONS["perturbed-template-demos"](prompt)
    text = step.apply(prompt).render(_item(prompt))[0].content
    assert text.count("Question:\ndemo 1 question") == 2  # once under each of the two perturbed guidelines


def test_the_own_formats_are_read_as_written() -> None:
    assert [o.label for o in _template("own-geval-score-of-no").guideline.options] == [
        "1",
        "2",
        "3",
        "4",
        "5",
    ]
    rules = _template("own-llmbar-rules")
    assert rules.guideline is None and rules.answer == "pairwise"
    yes_no = _template("own-yes-no")
    assert yes_no.answer == "mcq" and yes_no.scale.letters == {"Y": 1.0, "N": 0.0}
    assert yes_no.format.reasoning == "before" and yes_no.format.read("It does.\nY", yes_no.scale) == 1.0
    assert _template("own-json").format.json_key == "score"
    assert _template("own-score-tag").format.line == "<score>{value}</score>"


def test_compare_warns_when_the_benchmarks_label_scale_differs_from_the_prompts() -> None:
    from mitigate.data import Benchmark
    from mitigate.errors import PromptConflictWarning
    from mitigate.harness import check_compare

    prompt = _template("own-geval-score-of-no")  # asks for 1-5
    items = tuple(
        Item(id=f"i{k}", output=f"out {k}", inputs={"question": "q"}, human={"helpfulness": float(k)})
        for k in range(1, 5)
    )
    bench = Benchmark(name="ten-point", items=items, criteria=("helpfulness",), scale=Scale(min=1, max=10))
    with pytest.warns(
        PromptConflictWarning,
        match=r"labels 'helpfulness' on 1 to 10, but entries \['plain'\] ask "
        r"for 1 to 5",
    ):
        check_compare(
            benchmark=bench, criterion="helpfulness", entries={"plain": PromptJudge(prompt, FakeLM([]))}
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PromptConflictWarning)
        check_compare(
            benchmark=bench.model_copy(update={"scale": Scale(min=1, max=5)}),
            criterion="helpfulness",
            entries={"plain": PromptJudge(prompt, FakeLM([]))},
        )


def test_a_critique_request_before_an_answer_stub_is_read_as_reasoning_first() -> None:
    text = (
        "Rate the reply from 1 to 10. First write a short critique of it, then rate it.\n\n"
        "Reply:\n{{response}}\n\nRating:"
    )
    prompt = JudgePrompt.from_template(text)
    assert prompt.format.line == "Rating: {value}" and prompt.format.reasoning == "before"
    con = prompt.format.constraint(prompt.scale, max_tokens=256)
    assert re.fullmatch(con.regex, "Too vague about the dates of the trip.\nRating: 4")


# --------------------------------------------------------------------------- every demo preset on every item
# layout


class _Likelihood(LM):
    """A likelihood backend for HighestRS's fit: the log-likelihood of a text is minus its length."""

    provider = "layout-ll"

    async def complete(self, request: LMRequest) -> LMResponse:
        raise AssertionError("a likelihood backend is not asked to complete")

    async def loglikelihood(self, context: str, continuation: str) -> float:
        return -float(len(continuation))


def _criterion(prompt: JudgePrompt) -> str:
    return prompt.criteria[0].name if prompt.criteria else "score"


def _train(prompt: JudgePrompt, n: int = 10) -> Benchmark:
    """Labelled training items holding every text the template shows (scores across its scale, or
    preferences)."""
    crit, pair = _criterion(prompt), prompt.answer == "pairwise"
    fields = [prompt._field_for(s) for s in prompt._input_slots() if prompt._field_for(s) != "output_b"]
    steps = int(prompt.scale.max - prompt.scale.min) + 1
    items = tuple(
        Item(
            id=f"t{k}",
            doc_id=f"doc{k}",
            system=f"s{k % 2}",
            output=f"TRAIN OUTPUT {k}" + " more" * k,
            output_b=f"TRAIN SECOND {k}" if pair else None,
            inputs={f: f"train {k} {f}" for f in fields},
            human={} if pair else {crit: prompt.scale.min + k % steps},
            preference={crit: "AB"[k % 2]} if pair else {},
        )
        for k in range(n)
    )
    return Benchmark(
        name="layout-train",
        items=items,
        criteria=(crit,),
        scale=Scale(min=prompt.scale.min, max=prompt.scale.max),
    )


def _judge_lm(prompt: JudgePrompt) -> FakeLM:
    """Answers in the prompt's own format, a score that depends on the judged training item."""

    def answer(request: LMRequest) -> str:
        k = int(re.findall(r"TRAIN OUTPUT (\d+)", request.messages[-1].content)[-1])
        steps = int(prompt.scale.max - prompt.scale.min + 1)
        return prompt.format.render(prompt.scale.min + (2 * k + k // steps) % steps, prompt.scale)

    return FakeLM(answer)


DEMO_PRESETS = ("random-demos", "stratified", "knn-per-item", "highest-rs", "perturbed-demos", "searched-set")
"""Every way demos reach a prompt: the registered presets, a per-item selector and a searched (given) set."""


def _preset(name: str, prompt: JudgePrompt, train: Benchmark) -> Demos | None:
    """Demo preset ``name`` fitted on ``train`` for ``prompt`` (None when it has no form for the prompt)."""
    pair = prompt.answer == "pairwise"
    base = PromptJudge(prompt, _judge_lm(prompt))
    if name == "random-demos":
        return RandomDemosPreset(k=2, seed=1).build().fit(train, base)
    if name == "stratified":
        return Demos(selector=Stratified(seed=1), k=2).fit(train, base)
    if name == "knn-per-item":
        return Demos(selector=KNN(), k=2).fit(train, base)
    if name == "highest-rs":
        return (
            None
            if pair
            else HighestRSDemosPreset(k=2).build().fit(train, base, lm=_Likelihood(), progress=False)
        )
    if name == "perturbed-demos":
        return (
            None
            if pair or prompt.guideline is None
            else PerturbedDemosPreset(n=2, seed=1).build().fit(train, base)
        )
    assert name == "searched-set"  # what `mitigate search` writes: the chosen demos, given
    chosen = Random(seed=3).fit(train, criterion=_criterion(prompt)).select(2)
    return Demos(demos=tuple(chosen), k=2)


def _layout_cases() -> list[Any]:
    cases = []
    for name in sorted(LAYOUTS) + sorted(GEVAL_PROMPTS):
        if name in GEVAL_PROMPTS and name not in GEVAL_REPO_TEXTS:
            cases.append(
                pytest.param(
                    name,
                    "random-demos",
                    marks=pytest.mark.skip(
                        reason=f"no copy of G-Eval's repository at {GEVAL_REPO} (fetch github:nlpyang/geval)"
                    ),
                )
            )
            continue
        prompt = _template(name)
        for preset in DEMO_PRESETS:
            if preset not in ("highest-rs", "perturbed-demos") or (
                prompt.answer != "pairwise" and (preset == "highest-rs" or prompt.guideline is not None)
            ):
                cases.append(pytest.param(name, preset, id=f"{name}-{preset}"))
    return cases


@pytest.mark.parametrize(("name", "preset"), _layout_cases())
def test_every_demo_preset_shows_each_demo_under_the_items_headings_before_its_first_heading(
    name: str, preset: str
) -> None:
    prompt = _template(name)
    mitigation = _preset(preset, prompt, _train(prompt))
    assert mitigation is not None
    item = _item(prompt)
    judge = mitigation.wrap(PromptJudge(prompt, FakeLM(_answer)))
    inner = judge.for_item(item)[0] if isinstance(judge, PerItemDemosJudge) else judge
    sent = [[m.content for m in r.request.messages] for r in judge.requests(item)]
    leaves = inner.leaves()
    assert leaves and all(leaf.prompt.demos for leaf in leaves)
    for leaf in leaves:
        check_demo_layout(leaf.prompt, item)
        assert [m.content for m in leaf.prompt.render(item)] in sent  # what was checked is what is sent


SLOT_IN_SENTENCE = OWN["slot-in-a-sentence"]


@pytest.mark.parametrize("preset", ["random-demos", "knn-per-item", "searched-set", "highest-rs"])
def test_demos_are_refused_in_one_line_naming_the_slot_in_a_sentence_and_the_mitigation(preset: str) -> None:
    prompt = JudgePrompt.from_template(SLOT_IN_SENTENCE)
    mitigation = _preset(preset, prompt, _train(prompt))
    assert mitigation is not None
    lm = FakeLM([])
    with pytest.raises(TemplateError) as refused:
        mitigation.wrap(PromptJudge(prompt, lm))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(mitigation.label)
    assert (
        'first slot {{summary}} stands inside the sentence \'Is the summary "{{summary}}" a faithful'
    ) in message
    assert lm.requests == []


def test_a_template_without_demos_is_judged_whatever_its_layout() -> None:
    prompt = JudgePrompt.from_template(SLOT_IN_SENTENCE)
    (message,) = prompt.render(_item(prompt))
    assert message.content.startswith('Is the summary "THE FIRST OUTPUT" a faithful')


# name -> (line of the section's first heading, line where the demos go), counted upward from the first slot's
# line:
# how far the first heading reaches in published templates, read from the later slots' headings
PUBLISHED_HEADINGS = {
    "flowjudge-with-inputs": (3, 3),  # "# INPUT" / "Below ...:" / "<inputs>", like its "# OUTPUT" block
    "flowjudge-no-inputs": (3, 3),  # one slot: the adjacent heading lines
    "autoevals-factuality": (2, 2),  # "[BEGIN DATA]" / "****" open the section "[END DATA]" closes
    "alpacaeval-clf-m-M": (3, 3),  # "## Instruction" / blank / "{", like its "## Model Outputs" block
    "alpacaeval-chatgpt": (1, 1),  # "## Instruction:"
    "prometheus-absolute": (1, 1),  # "###The instruction to evaluate:"
    "arenahard": (1, 1),  # "<|User Prompt|>" on the first line
    "mtbench-pair": (1, 1),  # "[User Question]"
    "geval-summeval": (2, 2),
    # "Source Text:" / blank; the demos go before the lead-in "Example:" / blanks
    "geval-repo-coherence": (2, 5),
    "geval-repo-fluency": (2, 4),
    "layout-geval": (2, 5),
    "layout-geval-tight": (1, 2),  # "Example:" stacked on "Source Text:" is a lead-in
    "layout-markdown": (2, 4),  # "## Article" / blank, under the lead-in "# The texts"
    "layout-markdown-tight": (1, 2),
    "layout-xml": (2, 2),
    "layout-xml-inline": (0, 0),
    "layout-numbered-tight": (1, 1),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_HEADINGS))
def test_the_first_heading_and_the_lead_in_are_found_where_the_template_puts_them(name: str) -> None:
    if name in GEVAL_PROMPTS and name not in GEVAL_REPO_TEXTS:
        pytest.skip(f"no copy of G-Eval's repository at {GEVAL_REPO} (fetch github:nlpyang/geval)")
    prompt = _template(name)
    heading, lead_in = PUBLISHED_HEADINGS[name]
    section = prompt.item_section()
    place = prompt.demo_place()
    assert section is not None and isinstance(place, tuple)
    idx, start, _ = section
    template = prompt.messages[idx].template
    first = SLOT_RE.search(template)
    assert first is not None
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", template[: first.start()])]
    assert start == line_starts[-1 - heading]
    assert place[:2] == (idx, line_starts[-1 - lead_in])


def test_geval_coherence_demos_repeat_source_text_and_summary_in_its_spacing_and_line_breaks() -> None:
    text = GEVAL_REPO_TEXTS.get("geval-repo-coherence")
    if text is None:
        pytest.skip(f"no copy of G-Eval's repository at {GEVAL_REPO} (fetch github:nlpyang/geval)")
    prompt = JudgePrompt.from_template(text)
    demo = Demo(item=Item(id="d", output="DEMO SUMMARY", inputs={"Document": "DEMO ARTICLE"}), score=2.0)
    item = Item(id="i", output="ITEM SUMMARY", inputs={"Document": "ITEM ARTICLE"})
    bare = prompt.render(item)[0].content
    shown = prompt.with_demos([demo]).render(item)[0].content
    lead_in = bare.index("Example:")
    heading = bare.index("Source Text:")
    block = (
        "Examples:\r\n\r\nSource Text:\r\n\r\nDEMO ARTICLE\r\n\r\nSummary:\r\n\r\nDEMO SUMMARY\r\n\r\n- "
        f"Coherence: 2\r\n\r\n{DEMOS_END}\r\n\r\n"
    )
    assert lead_in < heading and shown == bare[:lead_in] + block + bare[lead_in:]
    assert bare[heading:].startswith("Source Text:\r\n\r\nITEM ARTICLE\r\n\r\nSummary:\r\n\r\nITEM SUMMARY")


def test_a_guideline_between_two_slots_stays_out_of_the_demos_and_added_text_goes_after_the_item() -> None:
    from mitigate.strategies import ConsistencyHint

    prompt = JudgePrompt.from_template(OWN["rubric-between-slots"])
    assert prompt.guideline is not None
    item = _item(prompt)
    hinted = ConsistencyHint().apply(prompt).render(item)[0].content
    assert hinted.index(DEFAULT_HINT) > hinted.index("THE FIRST OUTPUT")
    assert "Score 3 means right.\n\nAnswer:\nTHE FIRST OUTPUT" in hinted
    demo = Demo(item=Item(id="d", output="DEMO ANSWER", inputs={"question": "DEMO QUESTION"}), score=2.0)
    bare, shown = prompt.render(item)[0].content, prompt.with_demos([demo]).render(item)[0].content
    heading = bare.index("Question:")
    block = f"Examples:\n\nQuestion:\nDEMO QUESTION\n\nAnswer:\nDEMO ANSWER\n\nScore: 2\n\n{DEMOS_END}\n\n"
    assert shown == bare[:heading] + block + bare[heading:]


def test_demos_right_after_a_guideline_that_follows_the_item_are_refused_naming_both() -> None:
    text = (
        "Question:\n{{question}}\n\nAnswer:\n{{answer}}\n\nRubric:\nScore 1 means wrong.\n"
        "Score 2 means partly right.\nScore 3 means right.\n\nScore:"
    )
    prompt = JudgePrompt.from_template(text).with_layout("as_written")
    demo = Demo(item=Item(id="d", output="o", inputs={"question": "q"}), score=2.0)
    with pytest.raises(
        TemplateError,
        match=r"layout 'as_written' puts the demos right after the guideline, which "
        r"stands after the judged item's first heading 'Question:'",
    ):
        prompt.with_demos([demo])
    shown = prompt.with_layout("invariant_first").with_demos([demo]).render(_item(prompt))[0].content
    assert shown.startswith(
        f"Examples:\n\nQuestion:\nq\n\nAnswer:\no\n\nScore: 2\n\n{DEMOS_END}\n\nQuestion:\n"
    )


def test_demos_in_a_crlf_template_keep_its_line_breaks() -> None:
    prompt = JudgePrompt.from_template(LAYOUTS["layout-geval"].replace("\n", "\r\n"))
    demo = Demo(item=Item(id="d", output="DEMO SUMMARY", inputs={"Document": "DEMO ARTICLE"}), score=3.0)
    item = _item(prompt)
    bare, shown = prompt.render(item)[0].content, prompt.with_demos([demo]).render(item)[0].content
    lead_in = bare.index("Example:")
    block = (
        "Examples:\r\n\r\nSource Text:\r\n\r\nDEMO ARTICLE\r\n\r\nSummary:\r\n\r\nDEMO SUMMARY\r\n\r\n- "
        f"Clarity: 3\r\n\r\n{DEMOS_END}\r\n\r\n"
    )
    assert shown == bare[:lead_in] + block + bare[lead_in:]
    check_demo_layout(prompt.with_demos([demo]), item)


def test_the_item_section_leaves_out_the_markup_that_closes_or_opens_the_blocks_around_it() -> None:
    text = (
        "Rate the summary from 1 to 5.\n<example>\nSummary: short and clear\nScore: "
        "4\n</example>\n<article>\n{{article}}\n</article>\n<summary>\n{{summary}}\n</summary>\n"
        '<instructions>\nAnswer "Score: N".\n'
        "</instructions>"
    )
    prompt = JudgePrompt.from_template(text)
    section = prompt.item_section()
    assert section is not None
    idx, start, end = section
    assert text[start:end] == "<article>\n{{article}}\n</article>\n<summary>\n{{summary}}\n</summary>"
    assert prompt.demo_place() == (idx, start, False)
