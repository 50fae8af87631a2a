"""What ``mitigate estimate`` produces, as values: per-group estimates with a ranking (``EstimateResult``),
label plans (``--plan``) and selections (``--select``), with their JSON and text."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mitigate.errors import ConfigError
from mitigate.estimators._contrasts import Contrast
from mitigate.estimators._mean import MeanEstimate
from mitigate.estimators._ranking import Ranking
from mitigate.estimators._selection import MethodPlan
from mitigate.scale import Scale

METHOD_TITLES = {
    "ppi": "PPI++ with power tuning",
    "calibrated": "cross-fitted judge-to-human calibration",
    "human": "the labels alone",
    "judge": "the judge alone, NOT bias-corrected",
}
"""How each method is named in the table's heading."""

TARGET_TITLES = {
    "items": "the mean over each group's items",
    "population": "the mean of the population the items come from",
}


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def aligned(rows: list[list[str]]) -> list[str]:
    """Rows of cells as text lines: the first column left-aligned, the others right-aligned, two spaces
    apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]


def _brief(e: MeanEstimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    out: dict[str, Any] = {"estimate": _round(e.estimate), "low": _round(e.low), "high": _round(e.high)}
    if not e.bias_corrected:
        out["bias_corrected"] = False
    return out


class GroupResult(BaseModel):
    """One group: the chosen method's estimate, the labels-alone and judge-alone ones beside it (None where
    they cannot be computed: ``unavailable`` says why), the mean of every label before labels were hidden for
    an experiment (``truth``) and the labels that carry a selection weight."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    group: str
    estimate: MeanEstimate
    human: MeanEstimate | None = None
    judge: MeanEstimate | None = None
    unavailable: dict[str, str] = Field(default_factory=dict)
    truth: float | None = None
    n_weighted: int = 0

    @property
    def n(self) -> int:
        """The group's items."""
        return self.estimate.n

    @property
    def n_labelled(self) -> int:
        """The group's labelled items."""
        return self.estimate.n_labelled


class EstimateResult(BaseModel):
    """Every group's estimate of the mean label on ``criterion``, the ranking of the groups, and what was
    assumed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    benchmark: str
    criterion: str
    judge: str
    method: str
    confidence: float
    target: str
    by: str
    pairwise: bool = False
    label_scale: Scale
    judge_scale: Scale | None = None
    groups: tuple[GroupResult, ...]
    ranking: Ranking | None = None
    contrasts: tuple[Contrast, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def assumption(self) -> str:
        """What every corrected interval assumes, in one sentence."""
        if self.method == "judge":
            return (
                "not bias-corrected: the intervals are of the judge's own means and say nothing about the "
                "humans' means"
            )
        weighted = any(g.n_weighted for g in self.groups)
        return (
            "assumes each group's labelled items are a random draw from its items (every item equally "
            "likely, independently of its label and the judge's value)"
            + (
                "; labels from a selection round were drawn with the probabilities their file states"
                if weighted
                else ""
            )
            + "; a hand-picked or convenience sample voids the intervals"
        )

    def group(self, name: str) -> GroupResult:
        """The group named ``name``; ConfigError listing the groups otherwise."""
        for g in self.groups:
            if g.group == name:
                return g
        raise ConfigError(f"expected a group, one of {[g.group for g in self.groups]}; got {name!r}")

    def to_json(self) -> dict[str, Any]:
        """The object ``mitigate estimate --json`` prints (see docs/estimate.md for every key)."""
        groups = []
        for g in self.groups:
            e = g.estimate
            row: dict[str, Any] = {
                "group": g.group,
                "n": e.n,
                "n_labelled": e.n_labelled,
                "estimate": _round(e.estimate),
                "low": _round(e.low),
                "high": _round(e.high),
                "se": _round(e.se),
                "n_judged": e.n_judged,
            }
            if e.lam is not None:
                row["lambda"] = _round(e.lam)
            if g.n_weighted:
                row["n_weighted"] = g.n_weighted
            if self.ranking is not None:
                r = self.ranking.rank_of(g.group)
                row.update(rank=r.rank, rank_low=r.low, rank_high=r.high)
            row["human"] = _brief(g.human)
            row["judge"] = _brief(g.judge)
            if g.truth is not None:
                row["all_labels_mean"] = _round(g.truth)
            row["notes"] = [*e.notes, *(f"{k}: {v}" for k, v in g.unavailable.items())]
            groups.append(row)
        out: dict[str, Any] = {
            "criterion": self.criterion,
            "method": self.method,
            "confidence": self.confidence,
            "groups": groups,
            "benchmark": self.benchmark,
            "judge": self.judge,
            "target": self.target,
            "by": self.by,
            "bias_corrected": self.method != "judge",
        }
        if self.ranking is not None:
            out["ranking"] = {
                "order": list(self.ranking.order),
                "simultaneous_confidence": self.ranking.confidence,
                "separable": [list(p) for p in self.ranking.separable],
                "kendall_tau": {k: _round(v) for k, v in self.ranking.kendall.items()},
            }
        if self.contrasts:
            out["contrasts"] = self.contrast_rows()
        out["assumption"] = self.assumption
        out["notes"] = list(self.notes)
        return out

    def contrast_rows(self) -> list[dict[str, Any]]:
        """One row per contrast ``a - b``: the difference, its interval (joint over the family), se and df."""
        return [
            {
                "a": c.a,
                "b": c.b,
                "difference": _round(c.estimate),
                "low": _round(c.low),
                "high": _round(c.high),
                "se": _round(c.se),
                "df": _round(c.df, 2),
                "separated": c.separated,
                "joint_confidence": c.confidence,
                "family": c.family,
            }
            for c in self.contrasts
        ]

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per group: the estimate and interval, the labels-alone and judge-alone ones, the
        rank."""
        out = []
        for g in self.groups:
            e = g.estimate
            row: dict[str, Any] = {
                "group": g.group,
                "n": e.n,
                "n_labelled": e.n_labelled,
                "n_judged": e.n_judged,
                "method": e.method,
                "estimate": e.estimate,
                "low": e.low,
                "high": e.high,
                "se": e.se,
                "lambda": e.lam,
            }
            for name, other in (("human", g.human), ("judge", g.judge)):
                row |= {
                    f"{name}_{k}": getattr(other, k) if other else None for k in ("estimate", "low", "high")
                }
            if self.ranking is not None:
                r = self.ranking.rank_of(g.group)
                row.update(rank=r.rank, rank_low=r.low, rank_high=r.high)
            row["all_labels_mean"] = g.truth
            out.append(row)
        return out

    def to_pandas(self, table: Literal["groups", "contrasts"] = "groups") -> Any:
        """:meth:`rows` (or, with ``table="contrasts"``, :meth:`contrast_rows`) as a pandas DataFrame; needs
        the ``pandas`` extra."""
        from mitigate.judge import frame  # the one place pandas is imported, with its one-line error

        if table not in ("groups", "contrasts"):
            raise ConfigError(f"expected table 'groups' or 'contrasts'; got {table!r}")
        rows = self.rows() if table == "groups" else self.contrast_rows()
        return frame(rows, list(rows[0]) if rows else [])

    def table(self) -> str:
        """The text ``mitigate estimate`` prints: a heading, one line per group (ranked), the ranking's
        notes."""
        pct = f"{self.confidence:.0%}"
        lines = [
            f"{self.benchmark} · {self.criterion} · judge {self.judge} · {self.method} "
            f"({METHOD_TITLES[self.method]})",
            f"{pct} intervals of {TARGET_TITLES[self.target]}; groups by {self.by}",
        ]
        order = self.ranking.order if self.ranking is not None else tuple(g.group for g in self.groups)
        by_name = {g.group: g for g in self.groups}
        header = ["group", "items", "labelled", "estimate", f"{pct} interval"]
        if self.ranking is not None:
            header.append("rank [simult.]")
        if self.method != "human":
            header.append("labels alone")
        if self.method != "judge":
            header.append("judge alone (not corrected)")
        if any(g.truth is not None for g in self.groups):
            header.append("all labels")
        body = []
        for name in order:
            g = by_name[name]
            e = g.estimate
            cells = [name, str(e.n), str(e.n_labelled), f"{e.estimate:.3f}", f"[{e.low:.3f}, {e.high:.3f}]"]
            if self.ranking is not None:
                r = self.ranking.rank_of(name)
                cells.append(f"{r.rank} [{r.low}-{r.high}]")
            for key, other in (("human", g.human), ("judge", g.judge)):
                if key == self.method:
                    continue
                cells.append(
                    "-" if other is None else f"{other.estimate:.3f} [{other.low:.3f}, {other.high:.3f}]"
                )
            if any(x.truth is not None for x in self.groups):
                cells.append("-" if g.truth is None else f"{g.truth:.3f}")
            body.append(cells)
        lines += aligned([header, *body])
        if self.ranking is not None:
            rk = self.ranking
            pairs = ", ".join(f"{a} > {b}" for a, b in rk.separable) or "none"
            k = len(rk.order)
            how = (
                f"from all {k * (k - 1) // 2} pairwise contrasts, Bonferroni"
                if rk.by == "contrasts"
                else f"Bonferroni over {k} groups"
            )
            whose = " of the judge's own means, not the humans'" if self.method == "judge" else ""
            lines.append(
                f"ranks{whose}: intervals hold jointly at {rk.confidence:.0%} ({how}); "
                f"separable pairs: {pairs}"
            )
            taus = ", ".join(
                f"{k.replace('_', ' ')} {'-' if v is None else f'{v:.2f}'}" for k, v in rk.kendall.items()
            )
            if taus:
                lines.append(f"Kendall tau between this ranking and: {taus}")
        if self.contrasts:
            c0 = self.contrasts[0]
            lines.append(
                f"contrasts (a - b; {pct} intervals holding jointly, Bonferroni over {c0.family}; shared "
                "judge error cancels within each group's correction):"
            )
            lines += aligned(
                [
                    ["a - b", "difference", f"{pct} joint interval", "separated"],
                    *(
                        [
                            f"{c.a} - {c.b}",
                            f"{c.estimate:+.3f}",
                            f"[{c.low:+.3f}, {c.high:+.3f}]",
                            "yes" if c.separated else "no",
                        ]
                        for c in self.contrasts
                    ),
                ]
            )
        lines.append(f"assumption: {self.assumption}")
        lines += [
            f"note: {n}"
            for n in _grouped_notes([*self.notes, *(n for g in self.groups for n in g.estimate.notes)])
        ]
        return "\n".join(lines)


_NAMED = re.compile(r"^group (?P<group>'[^']*'|\"[^\"]*\"): (?P<text>.*)$", re.S)


def _grouped_notes(notes: list[str]) -> list[str]:
    """Notes once each; a note several groups share ("group 'X': text") names them all: "(X, Y) text"."""
    out: dict[str, list[str]] = {}
    for note in notes:
        m = _NAMED.match(note)
        text, who = (m.group("text"), m.group("group")[1:-1]) if m else (note, None)
        names = out.setdefault(text, [])
        if who is not None and who not in names:
            names.append(who)
    return [f"{'group' if len(g) == 1 else 'groups'} {', '.join(g)}: {t}" if g else t for t, g in out.items()]


class PlanGroup(BaseModel):
    """One group's label budget under each method (``plans``: method -> :class:`MethodPlan`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    group: str
    n: int
    labelled: int
    plans: dict[str, MethodPlan]


class LabelPlan(BaseModel):
    """How many labels each group needs for an interval of ±``half_width`` at ``confidence``, per method."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    half_width: float
    confidence: float
    target: str
    groups: tuple[PlanGroup, ...]

    @property
    def methods(self) -> list[str]:
        """The methods planned, in order."""
        return list(self.groups[0].plans) if self.groups else []

    def more(self, method: str) -> int | None:
        """Labels to add over every group with ``method``; None when some group cannot reach the
        half-width."""
        counts = [g.plans[method].more for g in self.groups]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    def to_json(self) -> dict[str, Any]:
        """The ``plan`` object of ``--json``."""
        return {
            "half_width": self.half_width,
            "confidence": self.confidence,
            "target": self.target,
            "groups": [
                {
                    "group": g.group,
                    "n": g.n,
                    "n_labelled": g.labelled,
                    **{
                        m: {
                            "needed": p.needed,
                            "more": p.more,
                            "half_width_now": _round(p.half_width_now),
                            **({"note": p.note} if p.note else {}),
                        }
                        for m, p in g.plans.items()
                    },
                }
                for g in self.groups
            ],
            "more": {m: self.more(m) for m in self.methods},
        }

    def table(self) -> str:
        """One line per group: labels now, and per method the total needed (+ more to add)."""
        methods = self.methods
        header = ["group", "items", "labelled", *(f"{m}: needed (+more)" for m in methods)]
        body = []
        for g in self.groups:
            cells = [g.group, str(g.n), str(g.labelled)]
            for m in methods:
                p = g.plans[m]
                cells.append(f"{p.needed} (+{p.more})" if p.needed is not None else (p.note or "-"))
            body.append(cells)
        totals = [str(sum(g.n for g in self.groups)), str(sum(g.labelled for g in self.groups))]
        body.append(["all", *totals, *("-" if self.more(m) is None else f"+{self.more(m)}" for m in methods)])
        heading = (
            f"labels for ±{self.half_width:g} at {self.confidence:.0%} (predicted from the labels so far):"
        )
        return "\n".join([heading, *aligned([header, *body])])


class SelectionRow(BaseModel):
    """One item chosen for labelling: its group, inclusion probability and the weight (1 / probability) its
    label gets."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    group: str
    probability: float
    weight: float


class Selection(BaseModel):
    """The items ``--select`` names, per group in the order drawn, with how many each group got."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    method: str
    floor: float
    seed: int
    rows: tuple[SelectionRow, ...]
    per_group: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """The ``selection`` object of ``--json``."""
        return {
            "method": self.method,
            "floor": self.floor,
            "seed": self.seed,
            "per_group": self.per_group,
            "items": [r.model_dump() for r in self.rows],
        }
