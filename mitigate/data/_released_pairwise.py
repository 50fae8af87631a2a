"""Released outputs of pairwise judges, as they were written (LLMBar, JudgeBench): a
:class:`PairwiseRelease` holds the benchmark with its gold labels, every raw answer and the prompt
templates; :mod:`mitigate.replay._released_pairwise` reads the answers. ``order="swapped"`` showed the
item's ``output_b`` first; ``release_verdict`` is by text."""

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
    """The prompt a released answer was given under: its ``text`` (None when the release has none, e.g. a
    reward model), ``system`` message, ``answer`` kind, declared ``labels`` of the two outputs, and ``path``
    relative to the release."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    text: str | None = None
    system: str | None = None
    answer: Literal["pairwise", "score"] = "pairwise"
    labels: tuple[str, str] | None = None
    path: str | None = None


class ReleasedAnswer(BaseModel):
    """One raw answer of a released pairwise judge (``"GPT-4/CoT"``): ``part`` "verdict" or a rating of one
    output ("score_a" / "score_b"); ``stage`` and ``final`` for a two-stage strategy; ``raw`` as released;
    ``scores`` given instead of text (a reward model's, A's first); ``release_verdict`` what the release
    read, by text."""

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
    """A release read from disk: benchmark, raw answers and templates; ``judge_info`` holds each judge's
    model and strategy, ``release_stats`` the figures the release reports per ``"<set>|<judge>"``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str
    benchmark: Benchmark
    answers: tuple[ReleasedAnswer, ...]
    templates: dict[str, TemplateSource]
    judges: tuple[str, ...]
    judge_info: dict[str, dict[str, str]] = Field(default_factory=dict)
    release_stats: dict[str, dict[str, str | float]] = Field(default_factory=dict)

    def select(self, pattern: str | None) -> PairwiseRelease:
        """The release restricted to the judges matching the glob ``pattern`` (None: all)."""
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
    """``"<layout>:<path>[#<judge glob>]"`` -> (layout, path, judge pattern or None)."""
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
    """Where a copy of the release ``layout`` ("llmbar", "judgebench", "faireval") is on this machine:
    ``$MITIGATE_<LAYOUT>_DIR`` when set, else the first folder of ``<data folder>/<Name>`` and
    ``/work/ext/<Name>``; None if none."""
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
