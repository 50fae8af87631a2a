"""Published judge templates read as they are: criterion, scale, options, pairwise labels and answer format.

Real templates are read at test time from the PyPI packages that ship them (installed by the
``dev`` extra): AlpacaEval (``alpaca-eval``: its evaluator prompt files), Prometheus
(``prometheus-eval``: the prompt constants of ``prometheus_eval/prompts.py``), Braintrust
AutoEvals (``autoevals``: ``templates/*.yaml``, which mirror OpenAI evals' model-graded specs)
and Flow Judge (``flow-judge``: the prompt constants of ``flow_judge/utils/prompt_formatter.py``).
Files are read through :mod:`importlib.metadata`, and Python constants through :mod:`ast`;
no package is imported. Each test skips when its package is absent.

Families no installable package ships here (G-Eval, MT-Bench single and pairwise, Arena-Hard,
LLMBar, DeepEval's G-Eval Jinja template, Ragas rubrics, "A Closer Look" prompt variants)
are covered by templates written for this test in the same *format* (placeholders, scale
statement, options, answer line); each says which published template it mirrors. Their
wording is ours.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mitigate import Item, PromptJudge
from mitigate.errors import ConfigError
from mitigate.lm import FakeLM
from mitigate.prompt import Demo, JudgePrompt, TemplateHints, describe_template
from mitigate.strategies import (
    ConsistencyHint,
    FixedDemosPreset,
    Granularity,
    Sampling,
    SelfConsistency,
    rts_form,
)
from mitigate.strategies._edits import COT_LEAD, DEFAULT_COT, RTS_LEAD, SCALE_LEAD

# --------------------------------------------------------------------------- reading package data


def _dist_text(dist: str, rel: str) -> str:
    """A file shipped by an installed distribution, without importing the package (skip when absent)."""
    try:
        path = md.distribution(dist).locate_file(rel)
    except md.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed (pip install -e '.[dev]')")
    try:
        return path.read_text(encoding="utf-8")  # type: ignore[union-attr]
    except FileNotFoundError:
        pytest.skip(f"{dist} does not ship {rel}")


def _py_constants(dist: str, rel: str) -> dict[str, str]:
    """String constants assigned at module level in a shipped .py file (``X = "..."`` or ``X =
    "...".strip()``)."""
    tree = ast.parse(_dist_text(dist, rel))
    out: dict[str, str] = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            continue
        value = node.value
        strip = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "strip"
        )
        if strip:
            value = value.func.value  # type: ignore[union-attr]
        try:
            text = ast.literal_eval(value)
        except ValueError:
            continue
        if isinstance(text, str):
            out[node.targets[0].id] = text.strip() if strip else text
    return out


def _yaml_prompt(rel: str) -> str:
    yaml = pytest.importorskip("yaml")
    return str(yaml.safe_load(_dist_text("autoevals", rel))["prompt"])


ALPACA = "alpaca_eval/evaluators_configs/"


def _alpaca(rel: str) -> str:
    return _dist_text("alpaca-eval", ALPACA + rel)


def _prometheus(name: str) -> str:
    return _py_constants("prometheus-eval", "prometheus_eval/prompts.py")[name]


def _flow(name: str) -> str:
    return _py_constants("flow-judge", "flow_judge/utils/prompt_formatter.py")[name]


GEVAL_REPO = Path(os.environ.get("MITIGATE_GEVAL_REPO", "/work/.mirror/nlpyang+geval/repo"))
"""A copy of G-Eval's repository (github.com/nlpyang/geval): a checkout, or a bare snapshot read through
git."""

GEVAL_PROMPTS = {
    "geval-repo-coherence": "prompts/summeval/coh_detailed.txt",
    "geval-repo-consistency": "prompts/summeval/con_detailed.txt",
    "geval-repo-fluency": "prompts/summeval/flu_detailed.txt",
    "geval-repo-relevance": "prompts/summeval/rel_detailed.txt",
}
"""G-Eval's own SummEval prompts, by the name the tests give them (no package ships them; never copied
here)."""


def geval_repo_prompt(rel: str) -> str | None:
    """One of G-Eval's prompt files as published (line breaks kept), or None when no copy of the repository is
    here."""
    if (GEVAL_REPO / rel).is_file():
        return (GEVAL_REPO / rel).read_bytes().decode("utf-8")
    if not GEVAL_REPO.is_dir():
        return None
    try:
        shown = subprocess.run(
            ["git", f"--git-dir={GEVAL_REPO}", "show", f"HEAD:{rel}"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return shown.stdout.decode("utf-8") if shown.returncode == 0 else None


# Our own rubric in Flow Judge's rubric format ("- Score N: ..."); Flow Judge's presets are Python objects.
FLOW_RUBRIC = (
    "- Score 1: The output ignores the inputs.\n- Score 2: The output uses some of the inputs.\n"
    "- Score 3: The output uses all of the inputs correctly."
)

# --------------------------------------------------------------------------- the real templates

# name -> (loader, from_template hints that the package itself would pass, expected)
REAL: dict[str, tuple[Any, dict[str, Any], dict[str, Any]]] = {
    "alpacaeval-chatgpt": (
        lambda: _alpaca("chatgpt/basic_prompt.txt"),
        {},
        dict(
            kind="pairwise",
            labels=("a", "b"),
            line="Output ({value})",
            reasoning="none",
            markup="chatml",
            roles=("system", "user"),
            second="output_2",
        ),
    ),
    "alpacaeval-text-davinci-003": (
        lambda: _alpaca("text_davinci_003/basic_prompt.txt"),
        {},
        dict(kind="pairwise", labels=("a", "b"), line="Output ({value})", reasoning="none", roles=("user",)),
    ),
    "alpacaeval-claude": (
        lambda: _alpaca("claude/basic_prompt.txt"),
        {},
        dict(kind="pairwise", labels=("a", "b"), line="Output ({value})", markup="turns", roles=("user",)),
    ),
    "alpacaeval-guanaco": (
        lambda: _alpaca("guanaco_33b/basic_prompt.txt"),
        {},
        dict(
            kind="pairwise",
            labels=("a", "b"),
            line="Output ({value})",
            markup="turns",
            roles=("system", "user"),
        ),
    ),
    "alpacafarm-text-b1": (
        lambda: _alpaca("alpaca_farm/text_b1_without_inputs.txt"),
        {},
        dict(kind="pairwise", labels=("a", "b"), line="({value})", reasoning="none"),
    ),
    "alpacafarm-chatml-b1-chat": (
        lambda: _alpaca("alpaca_farm/chatml_b1_chat_without_inputs.txt"),
        {},
        dict(kind="pairwise", labels=("a", "b"), line="Output ({value})", markup="chatml"),
    ),
    "alpacaeval-gpt4-turbo-clf": (
        lambda: _alpaca("gpt4_turbo_clf/basic_clf_prompt.txt"),
        {},
        dict(kind="pairwise", labels=("A", "B"), line="{value}", reasoning="none"),
    ),
    "alpacaeval-gpt4-turbo-cot-clf": (
        lambda: _alpaca("gpt4_turbo_cot_clf/basic_clf_cot_prompt.txt"),
        {},
        dict(kind="pairwise", labels=("A", "B"), line="{value}", reasoning="before"),
    ),
    "alpacaeval-clf-m-M": (
        lambda: _alpaca("alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt"),
        {},
        dict(kind="pairwise", labels=("m", "M"), case_sensitive=True, line="{value}", reasoning="none"),
    ),
    "alpacaeval-clf-cot-m-M": (
        lambda: _alpaca("alpaca_eval_clf_cot_gpt4_turbo/alpaca_eval_clf_cot.txt"),
        {},
        dict(kind="pairwise", labels=("m", "M"), case_sensitive=True, reasoning="before"),
    ),
    "alpacaeval-lmsys-two-scores": (
        lambda: _alpaca("lmsys_gpt4/lmsys_prompt.txt"),
        {},
        dict(kind="pairwise", labels=("1", "2"), two_scores=True, reasoning="after", scale=(1, 10)),
    ),
    "alpacaeval-self-taught-mt-bench-pair": (
        lambda: _alpaca("Self-taught-llama3.1-70B-dpo/self_taught.txt"),
        {},
        dict(
            kind="pairwise",
            labels=("A", "B"),
            line="[[{value}]]",
            reasoning="before",
            markup="llama3",
            roles=("system", "user"),
        ),
    ),
    "prometheus-absolute": (
        lambda: _prometheus("ABSOLUTE_PROMPT"),
        {"constants": {"rubric": "HELPFULNESS_RUBRIC"}},
        dict(
            kind="score",
            scale=(1, 5),
            options=["1", "2", "3", "4", "5"],
            line="[RESULT] {value}",
            reasoning="before",
            output="response",
            inputs={"instruction", "reference_answer"},
        ),
    ),
    "prometheus-absolute-no-reference": (
        lambda: _prometheus("ABSOLUTE_PROMPT_WO_REF"),
        {"constants": {"rubric": "REASONING_RUBRIC"}},
        dict(
            kind="score",
            scale=(1, 5),
            options=["1", "2", "3", "4", "5"],
            line="[RESULT] {value}",
            reasoning="before",
        ),
    ),
    "prometheus-relative": (
        lambda: _prometheus("RELATIVE_PROMPT"),
        {"constants": {"rubric": "HONESTY_RUBRIC:first-line"}},
        dict(
            kind="pairwise",
            labels=("A", "B"),
            line="[RESULT] {value}",
            reasoning="before",
            second="response_B",
        ),
    ),
    "prometheus-relative-no-reference": (
        lambda: _prometheus("RELATIVE_PROMPT_WO_REF"),
        {"constants": {"rubric": "HARMLESSNESS_RUBRIC:first-line"}},
        dict(kind="pairwise", labels=("A", "B"), line="[RESULT] {value}", reasoning="before"),
    ),
    "autoevals-factuality": (
        lambda: _yaml_prompt("autoevals/templates/factuality.yaml"),
        {},
        dict(kind="mcq", options=["A", "B", "C", "D", "E"], unscored=True, inputs={"input", "expected"}),
    ),
    "autoevals-possible": (
        lambda: _yaml_prompt("autoevals/templates/possible.yaml"),
        {},
        dict(kind="mcq", options=["A", "B"], unscored=True),
    ),
    "flowjudge-with-inputs": (
        lambda: _flow("USER_PROMPT_TEMPLATE"),
        {"constants": {"RUBRIC": FLOW_RUBRIC, "EVALUATION_CRITERIA": "Uses the inputs."}},
        dict(
            kind="score",
            scale=(1, 3),
            options=["1", "2", "3"],
            line="<score>{value}</score>",
            reasoning="before",
            output="OUTPUT",
            inputs={"INPUTS"},
        ),
    ),
    "flowjudge-no-inputs": (
        lambda: _flow("USER_PROMPT_NO_INPUTS_TEMPLATE"),
        {"constants": {"RUBRIC": FLOW_RUBRIC, "EVALUATION_CRITERIA": "Uses the inputs."}},
        dict(
            kind="score",
            scale=(1, 3),
            options=["1", "2", "3"],
            line="<score>{value}</score>",
            reasoning="before",
        ),
    ),
}


def _hints(hints: dict[str, Any]) -> TemplateHints:
    """The corpus entry's hints as one value, with constants named after Prometheus rubric constants resolved
    into their text (as prometheus-eval does)."""
    out = dict(hints)
    consts = {}
    for key, value in hints.get("constants", {}).items():
        if isinstance(value, str) and value.split(":")[0].endswith("_RUBRIC"):
            name, _, part = value.partition(":")
            text = _prometheus(name)
            consts[key] = text.split("\n")[0] if part == "first-line" else text
        else:
            consts[key] = value
    if consts:
        out["constants"] = consts
    return TemplateHints.of(**out)


def _check(prompt: JudgePrompt, exp: dict[str, Any]) -> None:
    fmt = prompt.format
    assert prompt.answer == exp["kind"] and fmt.kind == exp["kind"]
    assert fmt.inferred or exp["kind"] == "mcq"
    if "labels" in exp:
        assert fmt.labels == exp["labels"]
    if "line" in exp:
        assert fmt.line == exp["line"]
    assert fmt.stub == exp.get("stub", "")  # the template's last line, when the judge completes it
    if "reasoning" in exp:
        assert fmt.reasoning == exp["reasoning"]
    if "case_sensitive" in exp:
        assert fmt.case_sensitive is exp["case_sensitive"]
    if "two_scores" in exp:
        assert fmt.two_scores is exp["two_scores"]
    if "relations" in exp:
        assert fmt.relations is exp["relations"]
    if "json_key" in exp:
        assert fmt.json_key == exp["json_key"]
    if "tie" in exp:
        assert fmt.tie == exp["tie"]
    if "scale" in exp:
        assert (prompt.scale.min, prompt.scale.max) == exp["scale"]
    if "criterion" in exp:
        assert prompt.criteria[0].name == exp["criterion"]
    if "options" in exp:
        assert prompt.guideline is not None
        assert [o.label for o in prompt.guideline.options] == exp["options"]
        if exp.get("unscored"):
            assert all(o.score is None for o in prompt.guideline.options) and prompt.scale.letters is None
    elif exp["kind"] == "pairwise":
        assert prompt.guideline is None
    if "second" in exp:
        assert prompt.slot_fields.get(exp["second"]) == "output_b"
    if "output" in exp:
        assert prompt.output_slot == exp["output"]
    if "inputs" in exp:
        assert set(prompt._input_slots()) == exp["inputs"]
    if "roles" in exp:
        assert tuple(m.role for m in prompt.messages) == exp["roles"]
    if "markup" in exp:
        assert prompt.source is not None and prompt.source.markup == exp["markup"]


def _item(prompt: JudgePrompt) -> Item:
    inputs = {
        prompt._field_for(s): f"<{s} text>"
        for s in prompt._input_slots()
        if prompt._field_for(s) != "output_b"
    }
    return Item(id="x", output="FIRST OUTPUT", output_b="SECOND OUTPUT", inputs=inputs)


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_published_template_is_read_with_no_hints(name: str) -> None:
    load, hints, exp = REAL[name]
    text = load()
    prompt = JudgePrompt.from_template(text, _hints(hints))
    _check(prompt, exp)
    if not hints:  # nothing filled in: the template is written back exactly as published
        assert prompt.template_source() == text
    messages = prompt.render(_item(prompt))
    body = "\n".join(m.content for m in messages)
    assert "FIRST OUTPUT" in body
    assert ("SECOND OUTPUT" in body) == (exp["kind"] == "pairwise")
    # nothing unrendered
    assert not re.search(r"\{\{\s*\w+\s*\}\}|<\|im_start\|>|<\|start_header_id\|>", body)
    assert describe_template(text, _hints(hints))  # inspect works on it
    # the spec round-trips
    assert JudgePrompt.model_validate(json.loads(json.dumps(prompt.model_dump(mode="json")))) == prompt


def test_the_corpus_holds_at_least_twenty_real_templates() -> None:
    assert len(REAL) >= 20


# --------------------------------------------------------------------------- families written in the same
# format

MIRRORS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # mirrors G-Eval's SummEval coherence prompt (criterion line, steps, "Evaluation Form (scores ONLY)" stub)
    "geval-summeval": (
        """You will read one news article and one summary of it.

Your job is to rate the summary on one metric.

Evaluation Criteria:

Coherence (1-5) - how well the sentences of the summary fit together into one organised account.

Evaluation Steps:

1. Read the article and find its main points.
2. Read the summary and check that its sentences follow a clear order.
3. Give a coherence score on a scale of 1 to 5.

Source Text:

{{Document}}

Summary:

{{Summary}}


Evaluation Form (scores ONLY):

- Coherence:""",
        {},
        dict(
            kind="score",
            criterion="coherence",
            scale=(1, 5),
            line="- Coherence: {value}",
            stub="- Coherence:",
            reasoning="none",
            output="Summary",
        ),
    ),
    # mirrors G-Eval's Topical-Chat engagingness prompt: "Name (1-3)" with no dash, definition on the same
    # line
    "geval-topicalchat-engagingness": (
        """You will see a conversation and one possible next reply.

Evaluation Criteria:

Engagingness (1-3) Is the reply dull or does it invite the conversation to go on?
- A score of 1 means the reply is dull.
- A score of 2 means the reply is fine but unremarkable.
- A score of 3 means the reply is interesting.

Conversation History:
{{document}}

Response:
{{response}}

Evaluation Form (scores ONLY):
- Engagingness:""",
        {},
        dict(
            kind="score",
            criterion="engagingness",
            scale=(1, 3),
            options=["1", "2", "3"],
            line="- Engagingness: {value}",
            stub="- Engagingness:",
        ),
    ),
    # mirrors G-Eval's Topical-Chat groundedness prompt: a (0-1) scale
    "geval-topicalchat-groundedness": (
        """Rate whether the reply uses the given fact.

Evaluation Criteria:

Groundedness (0-1) Does the reply draw on the fact below?

Fact:
{{fact}}

Response:
{{response}}

Evaluation Form (scores ONLY):
- Groundedness:""",
        {},
        dict(
            kind="score",
            criterion="groundedness",
            scale=(0, 1),
            line="- Groundedness: {value}",
            stub="- Groundedness:",
        ),
    ),
    # mirrors MT-Bench's single-answer grading prompt ("[[rating]]", "Rating: [[5]]", 1 to 10)
    "mtbench-single": (
        """[Instruction]
Act as a fair judge of how well the assistant below answers the user. Start with a brief explanation of \
your assessment. After the explanation, rate the answer on a scale of 1 to 10, strictly in the format \
"[[rating]]", e.g. "Rating: [[6]]".

[Question]
{question}

[The Start of Assistant's Answer]
{answer}
[The End of Assistant's Answer]""",
        {},
        dict(kind="score", scale=(1, 10), line="Rating: [[{value}]]", reasoning="before", output="answer"),
    ),
    # mirrors MT-Bench's pairwise prompt ("[[A]]", "[[B]]", "[[C]]" for a tie)
    "mtbench-pair": (
        """Act as a fair judge and compare the two assistants' answers to the question below. \
First explain your comparison briefly. Then give your final verdict strictly as "[[A]]" if assistant A \
is better, "[[B]]" if assistant B is better, and "[[C]]" for a tie.

[User Question]
{question}

[The Start of Assistant A's Answer]
{answer_a}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{answer_b}
[The End of Assistant B's Answer]""",
        {},
        dict(
            kind="pairwise",
            labels=("A", "B"),
            tie="C",
            line="[[{value}]]",
            reasoning="before",
            second="answer_b",
        ),
    ),
    # mirrors Arena-Hard's judge prompt: five relations in double brackets
    "arenahard": (
        """<|User Prompt|>
{question_1}

<|The Start of Assistant A's Answer|>
{answer_1}
<|The End of Assistant A's Answer|>

<|The Start of Assistant B's Answer|>
{answer_2}
<|The End of Assistant B's Answer|>

Compare the answers, first writing your own answer to the prompt. Then output your verdict with a label:
1. Assistant A is much better: [[A>>B]]
2. Assistant A is slightly better: [[A>B]]
3. About the same: [[A=B]]
4. Assistant B is slightly better: [[B>A]]
5. Assistant B is much better: [[B>>A]]
For example: "My final verdict is tie: [[A=B]]".""",
        {},
        dict(
            kind="pairwise",
            labels=("A", "B"),
            relations=True,
            line="[[{value}]]",
            second="answer_2",
            reasoning="before",
        ),
    ),
    # mirrors LLMBar's comparison prompt ("Output (a)" / "Output (b)", no explanation)
    "llmbar": (
        """You judge which of two outputs follows the instruction better.
Do NOT provide any explanation for your choice.
Reply with "Output (a)" or "Output (b)" only.

# Instruction:
{input}

# Output (a):
{output_1}

# Output (b):
{output_2}

# Which is better, Output (a) or Output (b)?""",
        {},
        dict(kind="pairwise", labels=("a", "b"), line="Output ({value})", reasoning="none"),
    ),
    # mirrors DeepEval's G-Eval results template: Jinja conditions and indexing, a JSON answer with a reason
    "deepeval-geval-jinja": (
        """You grade one test case. Using the {% if rubric %}steps and rubric{% else %}steps{% endif %} \
below, return a JSON object with:
- "reason": why, in a few words;
- "score": an integer between {{ score_range[0] }} and {{ score_range[1] }}.

Steps:
{{ evaluation_steps }}
{% if rubric %}
Rubric:
{{ rubric }}
{% endif %}
Test case:
{{ test_case_content }}

Example JSON:
{"reason": "...", "score": {{ score_range[0] }}}

JSON:""",
        {"constants": {"score_range": (0, 10), "rubric": None, "evaluation_steps": "1. Check the facts."}},
        dict(kind="score", scale=(0, 10), json_key="score", reasoning="before", output="test_case_content"),
    ),
    # mirrors Ragas' rubric-based score prompt ("score1_description: ...")
    "ragas-rubric": (
        """Judge the response against the reference using the rubric, giving a score from 1 to 3.

Rubric:
score1_description: The response is wrong.
score2_description: The response is partly right.
score3_description: The response is right and complete.

Reference: {reference}
Response: {response}

Give your feedback first, then end with "Score: N".""",
        {},
        dict(kind="score", scale=(1, 3), options=["1", "2", "3"], line="Score: {value}", reasoning="before"),
    ),
    # mirrors the "analyze-rate" variant of "A Closer Look into Automatic Evaluation Using LLMs"
    "closer-look-analyze-rate": (
        """Evaluate the summary of the article.

Evaluation Criteria:
Fluency (1-3): the quality of the summary's sentences.

Article: {{article}}
Summary: {{summary}}

Analyze the summary's fluency step by step, then give the rating on the last line as "Rating: <score>".""",
        {},
        dict(kind="score", criterion="fluency", scale=(1, 3), line="Rating: {value}", reasoning="before"),
    ),
    # a 0-9 rating prompt whose numbered rules are not score options (the reproduction)
    "numbered-rules-0-9": (
        """Rate the answer's accuracy on a scale of 0 to 9.
(1) Read the question.
(2) Check every claim in the answer.
(3) Ignore the style.

Question: {{question}}
Answer: {{answer}}
Rating:""",
        {},
        dict(kind="score", scale=(0, 9), line="Rating: {value}", stub="Rating:"),
    ),
}


@pytest.mark.parametrize("name", sorted(MIRRORS))
def test_a_template_family_without_a_package_is_read_in_its_format(name: str) -> None:
    text, hints, exp = MIRRORS[name]
    prompt = JudgePrompt.from_template(text, **hints)
    _check(prompt, exp)
    if not hints:
        assert prompt.template_source() == text
    body = "\n".join(m.content for m in prompt.render(_item(prompt)))
    assert "FIRST OUTPUT" in body and "{%" not in body and "score_range" not in body


# --------------------------------------------------------------------------- mitigations on every template

REASON = "Both texts were read with care."


def _corpus(name: str) -> JudgePrompt:
    """A corpus template read as in the tests above (real text from its package, or our mirror).

    AutoEvals' templates are read with the letter scores their YAML ships beside the prompt
    (``choice_scores``), as autoevals itself scores them.
    """
    if name in REAL:
        load, hints, _ = REAL[name]
        given = _hints(hints)
        if name.startswith("autoevals-"):
            yaml = pytest.importorskip("yaml")
            rel = f"autoevals/templates/{name.removeprefix('autoevals-')}.yaml"
            given = TemplateHints.of(
                given, letters=yaml.safe_load(_dist_text("autoevals", rel))["choice_scores"]
            )
        return JudgePrompt.from_template(load(), given)
    text, hints, _ = MIRRORS[name]
    return JudgePrompt.from_template(text, **hints)


def _demo(prompt: JudgePrompt) -> Demo:
    """One worked example for ``prompt``: a verdict for pairwise, else a gold score (the top of its scale)."""
    item = Item(
        id="demo",
        output="DEMO FIRST",
        output_b="DEMO SECOND",
        inputs={k: f"demo {k}" for k in _item(prompt).inputs},
    )
    if prompt.answer == "pairwise":
        return Demo(item=item, verdict="second")
    return Demo(item=item.model_copy(update={"output_b": None}), score=prompt.scale.max)


# name -> (the mitigation for a prompt, the text it adds, whether that text asks for the answer)
MITIGATIONS: dict[str, tuple[Any, str, bool]] = {
    "cot": (lambda p: Sampling(temperature=0.5, n=1, cot=True), COT_LEAD, True),
    "self-consistency-cot": (lambda p: SelfConsistency(n=1, temperature=0.5, cot=True), DEFAULT_COT, True),
    "hint": (lambda p: ConsistencyHint(), "Important: ", False),
    "granularity": (lambda p: Granularity(scale="1-100" if p.scale.max == 10 else "1-10"), SCALE_LEAD, True),
    "rts-form": (lambda p: _PromptFn(rts_form), RTS_LEAD, True),
    "demos": (lambda p: FixedDemosPreset(demos=(_demo(p),)).build(), "Examples", False),
}


class _PromptFn:
    """A prompt function (the RTS form) used like a mitigation: ``wrap`` maps every prompt of the judge."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def wrap(self, judge: PromptJudge) -> Any:
        return judge.map_prompts(self.fn)


def _applies(mitigation: str, prompt: JudgePrompt) -> bool:
    if mitigation in ("granularity", "rts-form"):
        return prompt.answer == "score" and len(prompt.criteria) <= 1
    if mitigation == "demos":
        # a verdict demo cannot show two scores
        return prompt.answer != "mcq" and not prompt.format.two_scores
    return True


def _answer(prompt: JudgePrompt) -> tuple[str, Any]:
    """The answer ``prompt`` asks for, written in its format, and what the judge must read from it."""
    fmt, scale = prompt.format, prompt.scale
    if fmt.two_scores:
        line, want = f"{_n(scale.min)} {_n(scale.max)}", "second"
    elif prompt.answer == "pairwise":
        line, want = fmt.render("second", scale, reason=REASON), "second"
    elif prompt.answer == "mcq":
        letter = prompt.guideline.options[1].label if prompt.guideline else "B"  # type: ignore[union-attr]
        line, want = fmt.render(letter, scale, reason=REASON), (scale.letters or {}).get(letter)
    else:
        line, want = fmt.render(scale.max, scale, reason=REASON), scale.max
    if fmt.json_key is not None:
        return line, want
    if fmt.reasoning == "before":
        return f"{REASON}\n{line}", want
    if fmt.reasoning == "after":
        return f"{line}\n{REASON}", want
    return line, want


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


CORPUS = sorted(REAL) + sorted(MIRRORS)


@pytest.mark.parametrize("mitigation", sorted(MITIGATIONS))
@pytest.mark.parametrize("name", CORPUS)
async def test_a_mitigation_wraps_a_published_template_in_its_own_answer_format(
    name: str, mitigation: str
) -> None:
    """Added text goes before the template's answer stub, asks for the template's own answer line, and the
    answer written in that line is read back by the judge's own parser."""
    prompt = _corpus(name)
    if not _applies(mitigation, prompt):
        pytest.skip(f"{mitigation} does not apply to a {prompt.answer} prompt")
    make, marker, asks = MITIGATIONS[mitigation]
    calls: list[Any] = []

    def answer(request: Any) -> str:
        calls.append(request)
        return _answer(leaf.prompt)[0]

    try:
        judge = make(prompt).wrap(PromptJudge(prompt, FakeLM(answer)))
    except ConfigError as exc:  # a reasoning request against "score only" wording outside the stub is refused
        assert mitigation in ("cot", "self-consistency-cot", "rts-form") and "\n" not in str(exc)
        assert "asks for reasoning before the answer" in str(exc)
        return
    (leaf,) = judge.leaves()
    item = _item(prompt)
    judgment = await judge.judge(item)
    want = _answer(leaf.prompt)[1]

    # the answer the mitigated prompt asks for parses with its parser
    assert judgment.error is None, judgment.error
    if prompt.answer == "pairwise":
        assert judgment.verdict == want
    else:
        assert judgment.score() == want

    # the answer format is the template's own (the RTS form keeps its line and asks for reasoning first)
    fmt, new = prompt.format, leaf.prompt.format
    assert (new.kind, new.line, new.labels, new.json_key, new.two_scores) == (
        fmt.kind,
        fmt.line,
        fmt.labels,
        fmt.json_key,
        fmt.two_scores,
    )

    # additions come before the template's answer stub, which still ends the message
    sent = calls[0].messages
    idx = max(i for i, m in enumerate(prompt.messages) if m.role == "user")
    stub = prompt.answer_stub(idx)
    # a reasoning request rewrites those words
    if leaf.prompt.format.reasoning == "before" and "scores ONLY" in stub:
        stub = stub.replace("scores ONLY", "reasoning first, then the answer")
    content = sent[idx].content
    assert content.endswith(stub)
    body = content[: len(content) - len(stub)]
    everything = "\n".join(m.content for m in sent)
    assert marker in everything
    if marker in content:
        assert marker in body

    # what it asks for (or shows) is the template's answer line, never a "Score: N" of its own
    added = everything.replace("\n".join(m.content for m in prompt.render(item)), "")
    if not fmt.is_default_score_line:
        for foreign in ('"Score: N"', "'Score: <score>'", '"Score: "'):
            assert foreign not in everything or foreign in "\n".join(m.template for m in prompt.messages)
    if asks and fmt.json_key is None and not fmt.two_scores and fmt.line.strip() != "{value}":
        # a template ending with the line's start (a stub) is asked to complete that line, unless reasoning
        # comes first
        named = f'"{new.stub}"' if new.stub and new.reasoning != "before" else new.shape()
        assert (named if not fmt.is_default_score_line else '"Score: ') in body
    if mitigation == "demos":
        gold = _demo(prompt)
        # a JSON format's explanation field says the demo shows no reasoning rather than leaving it empty
        reason = "(not shown in this example)" if fmt.reason_key else None
        shown = fmt.render(
            gold.verdict if gold.verdict is not None else gold.score,
            prompt.scale,  # type: ignore[arg-type]
            reason=reason,
        )
        assert shown in everything
    assert added or mitigation == "granularity"
