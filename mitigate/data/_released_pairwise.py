"""Released outputs of pairwise judges, as they were written: the raw answers, before any parsing.

Papers on LLM judges release what their judges answered (LLMBar: :mod:`mitigate.data._llmbar`;
JudgeBench: :mod:`mitigate.data._judgebench`). A loader reads a release into a
:class:`PairwiseRelease`: the pairwise benchmark with its gold labels, every raw answer as a
:class:`ReleasedAnswer`, and the prompt templates the answers were given under. Nothing here
parses an answer: :mod:`mitigate.replay._released_pairwise` reads them with mitigate's own
parsers, in the answer format recovered from each answer's template (or a declared one), and
turns them into recorded judgments. The verdict the release itself read from each answer
stays beside it (``release_verdict``) so the two readings can be compared.

Orders. ``order="original"`` showed the item's ``output`` (A) first, ``"swapped"`` showed its
``output_b`` (B) first. ``release_verdict`` is always by text (``"A"``, ``"B"``, ``"tie"``),
already mapped back from the presentation.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.data._schema import Benchmark
from mitigate.errors import DataError

RELEASE_CRITERION = "overall"
"""The one criterion of the released pairwise benchmarks: which output is better overall."""

Part = Literal["verdict", "score_a", "score_b"]


class TemplateSource(BaseModel):
    """The prompt a released answer was given under: its text (as released) and how to read its answers.

    ``text`` is the template file's text (``None`` when the release has no prompt for it, e.g. a
    reward model); ``system`` an optional system message; ``answer`` the answer kind
    ("pairwise" or "score"); ``labels`` how the prompt names the two outputs when declared.
    ``path`` is where the text came from, relative to the release.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    text: str | None = None
    system: str | None = None
    answer: Literal["pairwise", "score"] = "pairwise"
    labels: tuple[str, str] | None = None
    path: str | None = None


class ReleasedAnswer(BaseModel):
    """One raw answer of a released pairwise judge.

    - ``item_id``: the id of the item of the release's benchmark it judged;
    - ``judge``: the released judge it belongs to, e.g. ``"GPT-4/CoT"`` (model / prompting strategy);
    - ``order``: the presentation (``"original"``: A first; ``"swapped"``: B first);
    - ``part``: ``"verdict"`` for an answer that compares the two outputs; ``"score_a"`` /
      ``"score_b"`` for an answer that rated one output alone (a rating strategy);
    - ``stage``: 1 for a single-call strategy; a two-stage strategy (LLMBar's Swap: a second
      call when the first stage's two orders disagree) numbers its calls, and ``final`` marks
      the answer the strategy's verdict rests on;
    - ``raw``: the judge's text, exactly as released (``""`` when the release has none);
    - ``scores``: numbers the release gives instead of text (a reward model's two rewards, A's first);
    - ``template``: the key of the :class:`TemplateSource` it was answered under;
    - ``release_verdict``: what the release itself read from it, by text (None: it read nothing).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    item_id: str
    judge: str
    order: Literal["original", "swapped"] = "original"
    part: Part = "verdict"
    stage: int = 1
    final: bool = True
    raw: str = ""
    scores: tuple[float, float] | None = None
    template: str
    release_verdict: Literal["A", "B", "tie"] | None = None
    line: int = 0


class PairwiseRelease(BaseModel):
    """A release read from disk: benchmark, raw answers and templates (see the module docstring).

    ``source`` names the release and where it was read (``"llmbar:/path"``); ``judges`` lists
    the released judges in the order met, with ``judge_info`` holding each one's model and
    strategy; ``release_stats`` the figures the release itself reports per judge, when it does
    (LLMBar's ``statistics.json``), keyed ``"<set>|<judge>"``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str
    benchmark: Benchmark
    answers: tuple[ReleasedAnswer, ...]
    templates: dict[str, TemplateSource]
    judges: tuple[str, ...]
    judge_info: dict[str, dict[str, str]] = Field(default_factory=dict)
    release_stats: dict[str, dict[str, str | float]] = Field(default_factory=dict)

    def select(self, pattern: str | None) -> PairwiseRelease:
        """The release restricted to judges whose name matches the glob ``pattern`` (None: all).

        DataError listing the judges when nothing matches.
        """
        if pattern is None or pattern in ("", "*"):
            return self
        keep = tuple(j for j in self.judges if fnmatch.fnmatchcase(j, pattern))
        if not keep:
            raise DataError(
                f"expected a judge pattern matching some of {list(self.judges)[:12]}"
                f"{' ...' if len(self.judges) > 12 else ''} in {self.source}; got {pattern!r}"
            )
        wanted = set(keep)
        return self.model_copy(
            update={
                "answers": tuple(a for a in self.answers if a.judge in wanted),
                "judges": keep,
                "judge_info": {j: v for j, v in self.judge_info.items() if j in wanted},
            }
        )


def split_release_spec(spec: str, layouts: Sequence[str]) -> tuple[str, Path, str | None]:
    """``"<layout>:<path>[#<judge glob>]"`` -> (layout, path, judge pattern or None).

    DataError naming the accepted layouts when ``spec`` has another form.
    """
    layout, sep, rest = spec.partition(":")
    if not sep or layout not in layouts or not rest:
        raise DataError(
            f"expected '<layout>:<path>[#<judge pattern>]' with a layout in {list(layouts)} "
            f"(e.g. 'llmbar:/data/LLMBar#GPT-4/*'); got {spec!r}"
        )
    path, _, pattern = rest.partition("#")
    if not path:
        raise DataError(f"expected a path after '{layout}:'; got {spec!r}")
    return layout, Path(path), pattern or None


_COPY_NAMES = {"llmbar": "LLMBar", "judgebench": "JudgeBench", "faireval": "FairEval"}


def release_copy(layout: str) -> Path | None:
    """Where a copy of the release ``layout`` ("llmbar", "judgebench", "faireval") is on this machine; None if
    none.

    ``$MITIGATE_<LAYOUT>_DIR`` (``MITIGATE_LLMBAR_DIR`` ...) when set, else ``<data folder>/<Name>``, else
    ``/work/ext/<Name>`` (``LLMBar``, ``JudgeBench``, ``FairEval``), the first that is a folder. Benchmarks
    and tests that read a release use it, and skip cleanly on None.
    """
    from mitigate.paths import data_dir

    name = _COPY_NAMES[layout]
    env = os.environ.get(f"MITIGATE_{layout.upper()}_DIR")
    if env:
        return Path(env) if Path(env).is_dir() else None
    root = data_dir()
    for candidate in ([root / name] if root is not None else []) + [Path("/work/ext") / name]:
        if candidate.is_dir():
            return candidate
    return None
