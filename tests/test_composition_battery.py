"""The coherent-composition battery: every template of the corpus x every mitigation, and pairs and triples of them.

Each pipeline wraps a judge whose backend is a :class:`~mitigate.lm.fake.FakeLM` (it records
every request and enforces nothing), judges one item, and every prompt judge behind the
pipeline (every call of a fan-out) is checked against the rules of DESIGN.md's "coherent
composition" contract, on the exact text it sends:

1. every score a demo shows is on the prompt's current scale and step;
2. demos show every input the item shows, under the template's own headings, and answer in
   its own format (a header says so when the format asks for reasoning the demos do not show);
3. no added sentence refers to something the prompt lacks (the option-order hint only with
   options; no score wording added to a pairwise prompt);
4. an added reasoning request never stands before words that forbid reasoning;
5. a rescale rewrites every statement of the scale;
6. a change of answer kind (MCQ) replaces the answer stub;
7. the answer constraint allows the reasoning the prompt asks for, and is bounded;
8. outside inserted spans the template's lines are unchanged.

A pipeline that cannot be made coherent must be refused with a one-line
:class:`~mitigate.errors.MitigateError` (counted, never a crash). Templates: the published ones
of ``tests/test_template_corpus.py`` (read from the installed packages) and their mirrors, plus
the formats below (our own wording): MT-Bench single with "first write a short critique",
a G-Eval prompt with "- A score of 1 (no) means" options, an LLMBar-style pairwise prompt with
numbered rules, a JSON-answer prompt, a ``<score>`` tag prompt and a Y/N choice after reasoning.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections import Counter
from typing import Any

import pytest
from test_template_corpus import CORPUS, _corpus

from mitigate import Item, PromptJudge
from mitigate.errors import MitigateError
from mitigate.judge import Judge
from mitigate.lm.fake import FakeLM
from mitigate.prompt.answer_format import reasoning_ban, stated_reasoning
from mitigate.prompt.judge_prompt import JudgePrompt
from mitigate.prompt.parts import SLOT_RE, Demo
from mitigate.prompt.template_reader import find_scales
from mitigate.registry import registered
from mitigate.scale import Scale
from mitigate.strategies import Demos, Pipeline
from mitigate.strategies.base import Mitigation
from mitigate.strategies.edits import (
    COT_LEAD,
    DEFAULT_COT,
    DEFAULT_HINT,
    RTS_LEAD,
    STUB_REASONING,
    is_multi_criterion_template,
)
from mitigate.strategies.sampling import Granularity, Sampling

OWN: dict[str, str] = {
    # MT-Bench single-answer format, with the critique-then-rate instruction and bracketed headings
    "own-mtbench-critique": """You are a careful judge of an assistant's reply. First write a short critique of the reply. \
Then rate it on a scale of 1 to 10, where 1 is useless and 10 is flawless, as "Rating: [[N]]", e.g. "Rating: [[4]]".

[User request]
{{question}}

[Begin assistant reply]
{{reply}}
[End assistant reply]""",
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

TEMPLATES = sorted(CORPUS) + sorted(OWN)
PAIR_TEMPLATES = ["prometheus-absolute", "alpacaeval-self-taught-mt-bench-pair", "autoevals-factuality",
                  "geval-summeval", "own-mtbench-critique", "own-geval-score-of-no", "own-llmbar-rules", "own-json",
                  "own-score-tag", "own-yes-no", "mtbench-pair"]


def _template(name: str) -> JudgePrompt:
    if name in OWN:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return JudgePrompt.from_template(OWN[name])
    return _corpus(name)


def _item(prompt: JudgePrompt) -> Item:
    inputs = {prompt._field_for(s): f"<{s} of the item>" for s in prompt._input_slots()
              if prompt._field_for(s) != "output_b"}
    human = {c.name: prompt.scale.max for c in prompt.criteria}
    return Item(id="item", output="THE FIRST OUTPUT", output_b="THE SECOND OUTPUT" if prompt.answer == "pairwise"
                else None, inputs=inputs, human=human, meta={"system": "s1"})


def _demos_for(prompt: JudgePrompt) -> Demos | None:
    """Two demos that fit ``prompt``: one on its scale, one labelled on 1-10 (mapped onto the prompt's)."""
    base = _item(prompt)
    items = [base.model_copy(update={"id": f"demo-{k}", "output": f"DEMO OUTPUT {k}",
                                     "inputs": {f: f"demo {k} {f}" for f in base.inputs},
                                     "output_b": f"DEMO SECOND {k}" if base.output_b else None}) for k in (1, 2)]
    if prompt.answer == "pairwise":
        if prompt.format.two_scores:
            return None
        return Demos(demos=(Demo(item=items[0], verdict="first"), Demo(item=items[1], verdict="second")), k=2)
    if prompt.answer == "mcq" and not prompt.scale.letters:
        return None
    return Demos(demos=(Demo(item=items[0], score=prompt.scale.min),
                        Demo(item=items[1], score=8.0, scale=Scale(min=1, max=10), reason="A reason of its own.")),
                 k=2)


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
        for m in _first_fitted(cls):
            found[name] = m
    found["granularity-1-100"] = Granularity(scale="1-100")
    found["sampling-cot"] = Sampling(temperature=0.5, n=1, cot=True)
    found["template-demos"] = _demos_for
    found["perturbed-template-demos"] = lambda p: (None if p.guideline is None or p.answer != "score" else Demos(
        demos=(_demos_for(p).demos[0],), k=1, display="perturbed", n=2))  # type: ignore[union-attr]
    return found


MITIGATIONS = _mitigations()


def _resolve(step: Any, prompt: JudgePrompt) -> Mitigation | None:
    return step(prompt) if callable(step) and not isinstance(step, Mitigation) else step


def _answer(_request: Any) -> str:
    return "The reply is fine.\nScore: 3"


# --------------------------------------------------------------------------- the checks


def _added_reasoning(text: str) -> bool:
    return any(lead in text for lead in (COT_LEAD, DEFAULT_COT, RTS_LEAD))


def _check_leaf(base: JudgePrompt, prompt: JudgePrompt, item: Item, leaf_cfg: Any, *, own_template: bool = False) -> None:
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
    # 2. demos show every input under the template's own headings
    section = prompt.item_section()
    if prompt.demos and section is not None and prompt.demo_template == base.demo_template:
        idx, a, b = section
        headings = [ln.strip() for ln in SLOT_RE.sub("\n", prompt.messages[idx].template[a:b]).splitlines()
                    if ln.strip()]
        for h in headings:
            assert sent.count(h) >= len(prompt.demos) + 1, h
        for demo in prompt.demos:
            assert demo.item.output in sent
        if fmt.reasoning != "none" and any(not d.reason for d in prompt.demos):
            assert "each shows only its final answer" in sent
    # 3. no added sentence about options the prompt lacks; no score wording added to a pairwise prompt
    if DEFAULT_HINT in sent:
        assert prompt.guideline is not None and prompt.answer != "pairwise"
    base_text = "\n".join(m.template for m in base.messages)
    added = [ln for ln in sent.splitlines() if ln.strip() and ln not in base_text and ln not in
             "\n".join(f"{d.item.output}\n{d.item.output_b}\n" + "\n".join(d.item.inputs.values()) for d in prompt.demos)
             and ln not in item.output + str(item.output_b) + "\n".join(item.inputs.values())]
    if prompt.answer == "pairwise":
        assert not [ln for ln in added if re.search(r"\bscores?\b", ln, re.I) and ln not in
                    "\n".join(m.content for m in base.render(item))], added
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
            value = "first" if fmt.kind == "pairwise" else (next(iter(scale.letters)) if fmt.kind == "mcq"
                                                             else scale.max)
            sep = " " if fmt.line.startswith("[RESULT]") else "\n"
            assert re.fullmatch(con.regex, f"The reply is clear and complete.{sep}{fmt.render(value, scale)}")
    # 8. outside inserted spans the template's lines are unchanged (multi-attribute writes its own template: skipped)
    if own_template or (is_multi_criterion_template(prompt) and not is_multi_criterion_template(base)):
        return
    kept = "\n".join(m.content for m in prompt.render(item))
    for line in "\n".join(m.content for m in base.render(item)).splitlines():
        if not line.strip() or re.search(r"\d", line) or (base.guideline and any(
                o.description in line for o in base.guideline.options)):
            continue  # scale numbers (granularity) and guideline options (perturbations, MCQ letters) may change
        if line.strip() in base.answer_stub() or line.strip() in _instruction_paragraph(base):
            continue  # the answer stub and closing instruction are rewritten by answer-kind and reasoning changes
        assert line in kept, line


def _instruction_paragraph(prompt: JudgePrompt) -> str:
    from mitigate.strategies.forms import answer_instruction
    found = answer_instruction(prompt)
    if found is None:
        return ""
    idx, a, b = found
    return prompt.messages[idx].template[a:b]


REFUSALS: Counter[str] = Counter()


def _run(name: str, steps: tuple[str, ...]) -> str:
    """Build, wrap and check one pipeline on one template; "ok", "refused" or "n/a" (a step that has no form for it)."""
    prompt = _template(name)
    item = _item(prompt)
    resolved = [_resolve(MITIGATIONS[s], prompt) for s in steps]
    if any(r is None for r in resolved):
        return "n/a"
    lm = FakeLM(_answer, logprobs=True, constraint_modes=("format",))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            judge: Judge = Pipeline(list(resolved)).wrap(PromptJudge(prompt, lm)) if len(resolved) > 1 else \
                resolved[0].wrap(PromptJudge(prompt, lm))  # type: ignore[union-attr]
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
TRIPLES = [("consistency-hint", "sampling-cot", "template-demos"), ("template-demos", "granularity-1-100",
                                                                    "agreement-gate"),
           ("granularity-1-100", "template-demos", "self-consistency"),
           ("single-attribute", "perturbed-template-demos", "sampling-cot"),
           ("position-swap", "consistency-hint", "template-demos")]


def test_every_template_with_every_mitigation_is_coherent_or_refused_in_one_line() -> None:
    outcome = Counter(_run(t, (m,)) for t, m in SINGLE)
    assert outcome["ok"] > len(SINGLE) // 2, outcome
    print(f"\nsingle: {len(TEMPLATES)} templates x {len(MITIGATIONS)} mitigations = {len(SINGLE)}: {dict(outcome)}")


def test_every_ordered_pair_of_mitigations_is_coherent_or_refused_in_one_line() -> None:
    outcome = Counter(_run(t, (a, b)) for t, a, b in PAIRS)
    assert outcome["ok"] > len(PAIRS) // 3, outcome
    print(f"\npairs: {len(PAIR_TEMPLATES)} templates x {len(MITIGATIONS) * (len(MITIGATIONS) - 1)} ordered pairs = "
          f"{len(PAIRS)}: {dict(outcome)}")


@pytest.mark.parametrize("steps", TRIPLES)
def test_triples_are_coherent_or_refused_in_one_line(steps: tuple[str, ...]) -> None:
    outcome = Counter(_run(t, steps) for t in PAIR_TEMPLATES)
    assert outcome["ok"] >= 1, outcome


# --------------------------------------------------------------------------- the examples of issue 23, pinned


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
    shown = prompt.with_demos([Demo(item=Item(id="d", output="o", inputs={"question": "q"}), score=8.0,
                                    scale=Scale(min=1, max=10))])
    assert shown.demos[0].score == 4.0 and "Helpfulness: 4" in shown.render_demos()
    with pytest.raises(MitigateError, match=r"shows the score 8, outside the prompt's scale 1 to 5"):
        prompt.with_demos([Demo(item=Item(id="d", output="o", inputs={"question": "q"}), score=8.0)])


def test_the_agreement_gates_mcq_form_replaces_the_numeric_stub_and_its_letter_parses() -> None:
    prompt = _template("own-geval-score-of-no")
    from mitigate.strategies.forms import mcq_form, rts_form
    form = mcq_form(prompt)
    assert form.messages[-1].template.endswith("Evaluation Form (scores ONLY):\n\nAnswer:")
    assert form.format.read("Answer: C", form.scale) == 3.0
    rts = rts_form(prompt)  # the reasoning variant rewrites the stub's "scores ONLY"
    assert rts.messages[-1].template.endswith(f"Evaluation Form ({STUB_REASONING}):\n\n- Helpfulness:")


def test_a_critique_then_rate_template_is_read_as_reasoning_first_and_its_constraint_lets_the_critique_through() -> None:
    prompt = _template("own-mtbench-critique")
    assert prompt.format.reasoning == "before" and prompt.format.line == "Rating: [[{value}]]"
    con = prompt.format.constraint(prompt.scale, max_tokens=256)
    assert re.fullmatch(con.regex, "The reply is vague about the dates.\nRating: [[6]]")
    assert not re.fullmatch(con.regex, "Rating: [[6]] Rating: [[6]] Rating: [[6]]")


def test_pairwise_and_no_option_prompts_get_a_hint_about_what_they_have() -> None:
    from mitigate.strategies.baselines import ConsistencyHint
    from mitigate.strategies.edits import NO_OPTIONS_HINT, PAIRWISE_HINT
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
    assert [o.label for o in _template("own-geval-score-of-no").guideline.options] == ["1", "2", "3", "4", "5"]
    rules = _template("own-llmbar-rules")
    assert rules.guideline is None and rules.answer == "pairwise"
    yes_no = _template("own-yes-no")
    assert yes_no.answer == "mcq" and yes_no.scale.letters == {"Y": 1.0, "N": 0.0}
    assert yes_no.format.reasoning == "before" and yes_no.format.read("It does.\nY", yes_no.scale) == 1.0
    assert _template("own-json").format.json_key == "score"
    assert _template("own-score-tag").format.line == "<score>{value}</score>"


def test_compare_warns_when_the_benchmarks_label_scale_differs_from_the_prompts() -> None:
    from mitigate.data.schema import Benchmark
    from mitigate.errors import PromptConflictWarning
    from mitigate.harness.compare import check_compare
    prompt = _template("own-geval-score-of-no")  # asks for 1-5
    items = tuple(Item(id=f"i{k}", output=f"out {k}", inputs={"question": "q"}, human={"helpfulness": float(k)})
                  for k in range(1, 5))
    bench = Benchmark(name="ten-point", items=items, criteria=("helpfulness",), scale=Scale(min=1, max=10))
    with pytest.warns(PromptConflictWarning, match=r"labels 'helpfulness' on 1 to 10, but entries \['plain'\] ask "
                                                   r"for 1 to 5"):
        check_compare(bench, "helpfulness", {"plain": PromptJudge(prompt, FakeLM([]))})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PromptConflictWarning)
        check_compare(bench.model_copy(update={"scale": Scale(min=1, max=5)}), "helpfulness",
                      {"plain": PromptJudge(prompt, FakeLM([]))})


def test_a_critique_request_before_an_answer_stub_is_read_as_reasoning_first() -> None:
    text = ("Rate the reply from 1 to 10. First write a short critique of it, then rate it.\n\n"
            "Reply:\n{{response}}\n\nRating:")
    prompt = JudgePrompt.from_template(text)
    assert prompt.format.line == "Rating: {value}" and prompt.format.reasoning == "before"
    con = prompt.format.constraint(prompt.scale, max_tokens=256)
    assert re.fullmatch(con.regex, "Too vague about the dates of the trip.\nRating: 4")
