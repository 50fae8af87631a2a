"""Panels of judges ("juries"; Verga et al. 2024, "Replacing judges with juries").

:class:`PanelJudge` asks every member and reduces their answers: ``mean`` or ``median`` of the scores (a
verdict counts first = 1, tie = 0.5, second = 0), or the strict ``majority`` of *all* members (none: no score
and the flag ``no_majority``). A failed member is never dropped: it stays in the member count,
``mean``/``median`` need ``quorum`` answers (default: all), and it is named in ``meta["panel"]["failed"]`` and
flagged ``panel_member_failed``. Nothing depends on the members' order. ``samples`` hold the members' scores
in member order. :class:`Panel` (``"panel"``) builds one from the judge it wraps, the same prompts sent to
other backends.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar, Literal

from mitigate.constraints import Interval, Options, Satisfies
from mitigate.data import Item
from mitigate.errors import ConfigError
from mitigate.judge import CompositeJudge, Judge, Judgment, PromptJudge, merge_judgments
from mitigate.lm import LM, get, wrap
from mitigate.parse import Verdict
from mitigate.registry import register
from mitigate.strategies._base import Mitigation

PanelReducer = Literal["mean", "median", "majority"]
FAILED_FLAG = "panel_member_failed"
"""Flag on a panel judgment in which at least one member gave no answer."""
NO_MAJORITY = "no_majority"
"""Flag on a majority-reduced judgment where no value had more than half of the members."""

_VERDICT_VALUE: dict[str, float] = {"first": 1.0, "tie": 0.5, "second": 0.0}


def reduce_panel(
    values: Sequence[float | None], reducer: PanelReducer, quorum: int | None = None
) -> float | None:
    """The panel's value from one value per member (None for a failed member), or None when it has none.

    ``majority`` needs a value given by more than half of all members; ``mean``/``median`` at least ``quorum``
    answers (None: every member).
    """
    n = len(values)
    if n == 0:
        raise ConfigError("expected at least one panel member; got none")
    answered = [v for v in values if v is not None]
    if reducer == "majority":
        if not answered:
            return None
        value, count = Counter(answered).most_common(1)[0]
        return float(value) if count * 2 > n else None
    need = n if quorum is None else quorum
    if len(answered) < need or not answered:
        return None
    return float(statistics.fmean(answered)) if reducer == "mean" else float(statistics.median(answered))


def _as_verdict(value: float | None) -> Verdict | None:
    if value is None:
        return None
    return "first" if value > 0.5 else "second" if value < 0.5 else "tie"


class PanelJudge(CompositeJudge):
    """Asks every member judge (the children, by name) concurrently and reduces their answers; a member
    whose call raises counts as failed (``meta["panel"]["errors"]``)."""

    kind = "panel"
    requests_are_children = True

    def __init__(
        self, children: dict[str, Judge], *, reducer: PanelReducer = "median", quorum: int | None = None
    ) -> None:
        super().__init__(children)
        if reducer not in ("mean", "median", "majority"):
            raise ConfigError(f"expected a panel reducer 'mean', 'median' or 'majority'; got {reducer!r}")
        if quorum is not None and not 1 <= quorum <= len(children):
            raise ConfigError(f"expected a quorum between 1 and the {len(children)} members; got {quorum}")
        self.reducer: PanelReducer = reducer
        self.quorum = quorum

    def params(self) -> dict[str, Any]:
        """Reducer and quorum."""
        return {"reducer": self.reducer, "quorum": self.quorum}

    async def judge(self, item: Item) -> Judgment:
        """Every member's judgment of ``item``, reduced."""
        names = list(self.children)
        results = await asyncio.gather(*(self.children[n].judge(item) for n in names), return_exceptions=True)
        parts: list[Judgment] = []
        errors: dict[str, str] = {}
        for name, r in zip(names, results, strict=True):
            if isinstance(r, BaseException):
                if not isinstance(r, Exception):
                    raise r
                errors[name] = f"{type(r).__name__}: {r}"
                parts.append(Judgment(item_id=item.id, error=errors[name]))
            else:
                parts.append(r)
                if r.error:
                    errors[name] = r.error
        pairwise = any(p.verdict is not None for p in parts)
        criteria = list(dict.fromkeys(c for p in parts for c in p.scores))
        failed: set[str] = set(errors)
        scores: dict[str, float | None] = {}
        samples: dict[str, tuple[float | None, ...]] = {}
        members: dict[str, Any] = {}
        for c in criteria:
            values = [p.scores.get(c) if p.error is None else None for p in parts]
            failed |= {n for n, v in zip(names, values, strict=True) if v is None}
            scores[c] = reduce_panel(values, self.reducer, self.quorum)
            samples[c] = tuple(values)
            members[c] = dict(zip(names, values, strict=True))
        verdict: Verdict | None = None
        if pairwise:
            votes = [_VERDICT_VALUE[p.verdict] if p.verdict and p.error is None else None for p in parts]
            failed |= {n for n, v in zip(names, votes, strict=True) if v is None}
            verdict = _as_verdict(reduce_panel(votes, self.reducer, self.quorum))
            members["verdict"] = {n: p.verdict for n, p in zip(names, parts, strict=True)}
        flags = [f for p in parts for f in p.flags]
        if failed:
            flags.append(FAILED_FLAG)
        if (
            self.reducer == "majority"
            and (any(v is None for v in scores.values()) or (pairwise and verdict is None))
            and len(failed) < len(names)
        ):
            flags.append(NO_MAJORITY)
        meta = {
            "panel": {
                "reducer": self.reducer,
                "quorum": self.quorum,
                "members": members,
                "failed": [n for n in names if n in failed],
                "errors": errors,
                "n_members": len(names),
            }
        }
        flat = tuple(dict.fromkeys(flags))
        merged = merge_judgments(
            item.id, parts, scores=scores, samples=samples, verdict=verdict, flags=flat, meta=meta
        )
        # failed members are reported in meta, not as a failed call
        return merged.model_copy(update={"error": None}) if len(errors) < len(names) else merged


_SPECS = Satisfies(
    lambda v: (
        isinstance(v, (tuple, list))
        and len(v) > 0
        and all(isinstance(s, str) and s.strip() for s in v)
        and len(set(v)) == len(v)
    ),
    "a non-empty tuple of distinct backend spec strings",
)


def _on_lm(lm: LM, leaf: PromptJudge) -> PromptJudge:  # a panel member: ``leaf`` asking ``lm``
    return PromptJudge(leaf.prompt, lm, leaf.config)


@register("mitigation", "panel")
class Panel(Mitigation):
    """A panel of the wrapped judge's prompts sent to several backends (Verga et al. 2024).

    Parameters:
        backends: backend specs; each member (named by its spec) is the wrapped judge with every prompt
            judge's LM replaced by that backend, built when the panel wraps a judge.
        include_base: also keep the wrapped judge itself as a member (named "base").
        reducer: "mean", "median" or "majority" (strict majority of all members).
        quorum: the fewest answering members ``mean``/``median`` need (None: all of them).
    """

    paper = "Verga et al. 2024"

    backends: tuple[str, ...]
    include_base: bool = True
    reducer: PanelReducer = "median"
    quorum: int | None = None
    parameter_constraints: ClassVar = {
        "backends": [_SPECS],
        "include_base": [bool],
        "reducer": [Options("mean", "median", "majority")],
        "quorum": [Interval(int, 1), None],
    }

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """A median panel of the base judge and a local backend, and a strict-majority one."""
        return [
            cls(backends=("local",)),
            cls(backends=("local", "local:other.gguf"), include_base=False, reducer="majority", quorum=1),
        ]

    def wrap(self, judge: Judge) -> Judge:
        """A :class:`PanelJudge` of the judge (when ``include_base``) and its copies on each backend."""
        members: dict[str, Judge] = {"base": judge} if self.include_base else {}
        for spec in self.backends:
            lm = wrap(get(spec))
            members[spec] = judge.map_leaves(partial(_on_lm, lm))
        if self.quorum is not None and self.quorum > len(members):
            raise ConfigError(f"The panel's quorum {self.quorum} exceeds its {len(members)} members")
        return PanelJudge(members, reducer=self.reducer, quorum=self.quorum)
