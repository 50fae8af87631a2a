"""mitigate's reading of LLMBar's 30,450 released chain-of-thought answers, against the decision the release
recorded.

Runs on a copy of princeton-nlp/LLMBar found by :func:`mitigate.data._released_pairwise.release_copy`
(``$MITIGATE_LLMBAR_DIR``, the data folder, or ``/work/ext/LLMBar``) and skips cleanly without one.
The answers are the CoT and Swap+CoT strategies' (every judge, every set, both orders and stages),
read as a live judge reads them (the answer format recovered from the strategy's prompt, the item's
texts as the judged texts).

The release decided each answer with its own rule (``LLMEvaluator/evaluators/config``): the first of
two regular expressions, in a fixed order, that matches anywhere in the answer. Where mitigate's
reading contradicts that decision, the contradiction must be one the release's own rule explains:

- **a mention taken for a verdict**: the release's expressions match any line that *starts* with
  "Output (a)" or "Output (b)" (PaLM 2), so a line naming an output decides for it;
- **both verdicts in the answer, the release took the one listed first**: its expressions
  ("Output (a) is better." then "Output (b) is better.") both match, and mitigate read the side of
  the last one that is the judge's own statement: the last of all, or the last before a third
  party's argument ("Assistant (a) argues that Output (a) is better ...") that follows it.

Any other contradiction fails the test; failures (answers mitigate records as unread) stay under
a bound (152 of 30,450 when last counted: empty answers, answers cut off before their verdict, "neither
is better" where the template offers no tie, two verdicts with no final one; 137 before issue 45, whose
rule added 15 answers that state both "Output (a) is better." and "Output (b) is better.", neither quoted
and neither the only one that is the template's whole "Therefore, ..." line: nothing tells which is the
judge's own).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from mitigate.data import ReleasedAnswer, read_llmbar
from mitigate.data._released_pairwise import release_copy
from mitigate.replay._released_pairwise import ParsedAnswer, parse_release

COPY = release_copy("llmbar")
COT = ("comparison/CoT.txt", "swap_and_synthesize/Swap_CoT.txt")

pytestmark = pytest.mark.skipif(
    COPY is None or not (COPY / "LLMEvaluator").is_dir(),
    reason="no copy of princeton-nlp/LLMBar with its LLMEvaluator (set MITIGATE_LLMBAR_DIR)",
)


@pytest.fixture(scope="module")
def readings() -> list[tuple[ReleasedAnswer, ParsedAnswer]]:
    release = read_llmbar(COPY, sets="all")  # type: ignore[arg-type]
    keep = tuple(a for a in release.answers if a.template in COT and a.part == "verdict")
    parse = parse_release(release.model_copy(update={"answers": keep}))
    return list(zip(keep, parse.parsed, strict=True))


@functools.cache
def release_rule(judge: str, template: str) -> tuple[tuple[str, str], ...]:
    """The release's (decision, expression) pairs for the call of ``judge`` that used ``template``, in its
    order."""
    model, strategy = judge.split("/")
    calls = json.loads(
        (Path(COPY) / "LLMEvaluator" / "evaluators" / "config" / model / f"{strategy}.json")  # type: ignore[arg-type]
        .read_text(encoding="utf-8")
    )
    call = next((c for c in calls if c.get("prompt") == template), calls[-1])
    return tuple(call["parsing"].items())


def side_shown(verdict: str, order: str) -> str:
    """The output label ("1" for Output (a), "2" for Output (b)) a verdict by text names in the order
    shown."""
    first = verdict == "A"
    return "1" if first == (order == "original") else "2"


REPORTED = re.compile(
    r"\b(?:argues|argued|claims|claimed|says|said|states|believes|thinks)\s+that\b[^.\n]*$", re.I
)


def _reported(text: str, match: re.Match[str]) -> bool:
    """Whether ``match`` sits in a sentence reporting a third party's words ("Assistant (a) argues that
    ...")."""
    start = max(text.rfind(".", 0, match.start()), text.rfind("\n", 0, match.start())) + 1
    return REPORTED.search(text[start : match.start()]) is not None


def explained(answer: ReleasedAnswer, mine: str) -> str | None:
    """Which of the release's own rule's outcomes explains the contradiction (None: nothing does)."""
    rule = release_rule(answer.judge, answer.template)
    text = answer.raw.strip()
    if all(r"(?:^|\n)" in expr for _, expr in rule):
        return "a mention taken for a verdict"
    found = [(m.start(), label, _reported(text, m)) for label, expr in rule for m in re.finditer(expr, text)]
    if len({label for _, label, _ in found}) == 2:
        own = [(pos, label) for pos, label, reported in found if not reported]
        if own and max(own)[1] == side_shown(mine, answer.order):
            later = max(found)[2]
            return (
                "both verdicts, a third party's argument last"
                if later
                else ("both verdicts, mitigate read the last")
            )
    return None


def test_every_contradiction_with_the_release_is_one_its_own_rule_explains(readings) -> None:
    unexplained = []
    kinds: dict[str, int] = {}
    for answer, got in readings:
        if got.verdict is None or answer.release_verdict is None or got.verdict == answer.release_verdict:
            continue
        kind = explained(answer, got.verdict)
        if kind is None:
            unexplained.append(
                f"{answer.judge} {answer.item_id} {answer.order}: release "
                f"{answer.release_verdict}, mitigate {got.verdict}: ...{answer.raw[-200:]!r}"
            )
        else:
            kinds[kind] = kinds.get(kind, 0) + 1
    print(f"\ncontradictions by the release's rule: {kinds}")
    assert not unexplained, "\n".join(unexplained[:20])
    assert sum(kinds.values()) <= 330  # 320 when written; a jump means readings moved


def test_llmbar_cot_answers_are_read_with_few_failures(readings) -> None:
    assert len(readings) >= 30_000
    failed = [(a, g) for a, g in readings if g.verdict is None]
    read_by_release = sum(a.release_verdict is not None for a, g in failed)
    print(f"\nfailures: {len(failed)} of {len(readings)} ({read_by_release} the release read)")
    assert len(failed) <= 160
    assert all(g.error for _, g in failed)  # every failure is recorded with the reader's reason
