"""Panels of judges: each member modelled by its confusion matrix (Dawid-Skene), and what a panel's votes are
worth (docs/juries.md).

:func:`fit_dawid_skene` models every member by a confusion matrix ``theta[m][k][l] = P(member m answers
l | class k)`` and the classes by a prior (Dawid and Skene 1979): supervised (``gold`` given) by
counting, or by EM started from the members' majority vote. :func:`effective_votes` is Kish's
``n / (1 + (n - 1) * rho)``, ``rho`` the mean pairwise correlation of the members' errors (Kohli 2026).
Votes are labels: a verdict by text (``"A"``, ``"B"``, ``"tie"``), or a score's nearest whole number.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from mitigate.errors import DataError
from mitigate.judge import Judgment
from mitigate.measures._base import EntryData, Measure, confusion_counts, finish, reported_measure, undefined

SINGLE_MEMBER = "judge"
"""The member name of a judgment that is not a panel's (one judge is a panel of one)."""

VOTE_TEXT: dict[str, str] = {"first": "A", "second": "B", "tie": "tie"}
"""A panel member's verdict by position (the item's own order: first is A) as the text it prefers."""

Kind = Literal["verdict", "score"]


def score_class(value: float) -> str:
    """A score as a Dawid-Skene label: the nearest whole number, halves up (3.5 -> "4")."""
    return str(int(math.floor(float(value) + 0.5)))


def panel_votes(
    judgments: Sequence[Judgment], kind: Kind, criterion: str | None = None
) -> tuple[list[str], list[list[str | None]]]:
    """(member names, per judgment one label per member or None): each member's answer in a panel's judgments.

    ``kind="verdict"``: verdicts as texts; ``"score"``: scores on ``criterion`` (the judgments' only
    criterion when None) as :func:`score_class` labels. A judgment without ``meta["panel"]`` counts as
    one member named :data:`SINGLE_MEMBER`.
    """
    names: list[str] = []
    rows: list[dict[str, str | None]] = []
    for j in judgments:
        panel = j.meta.get("panel")
        members = panel.get("members") if isinstance(panel, dict) else None
        crit = "verdict" if kind == "verdict" else criterion if criterion is not None else _only_criterion(j)
        given = members.get(crit) if isinstance(members, dict) and crit is not None else None
        label = _verdict_text if kind == "verdict" else _score_label
        if isinstance(given, dict):
            row = {str(n): label(v) for n, v in given.items()}
        else:
            own = j.verdict if kind == "verdict" else j.scores.get(crit) if crit is not None else None
            row = {SINGLE_MEMBER: label(own)}
        names += [n for n in row if n not in names]
        rows.append(row)
    return names, [[row.get(n) for n in names] for row in rows]


def _only_criterion(j: Judgment) -> str | None:
    return next(iter(j.scores)) if len(j.scores) == 1 else None


def _verdict_text(v: Any) -> str | None:
    if v is None:
        return None
    text = VOTE_TEXT.get(str(v))
    if text is None:
        raise DataError(f"expected a panel member's verdict among {list(VOTE_TEXT)} or None; got {v!r}")
    return text


def _score_label(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return score_class(float(v))


# the model


class DawidSkeneModel(BaseModel):
    """A fitted Dawid-Skene model: the class prior and each member's confusion matrix.

    ``confusion[m][k][l]`` is P(``members[m]`` answers ``responses[l]`` | class ``classes[k]``).
    ``supervised``: counted from gold labels; else fitted by EM (``iterations``, ``converged``).
    ``log_likelihood``: of the votes (and, supervised, the gold classes) under the model.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Kind
    classes: tuple[str, ...]
    responses: tuple[str, ...]
    members: tuple[str, ...]
    priors: tuple[float, ...]
    confusion: tuple[tuple[tuple[float, ...], ...], ...]
    supervised: bool
    iterations: int = 0
    converged: bool = True
    log_likelihood: float | None = None
    checks: tuple[str, ...] = ()
    """What a reader must know of an unsupervised fit: that it is unverified without gold, and where it
    contradicts what the votes show (:func:`unsupervised_checks`)."""

    def member_matrix(self, member: str) -> dict[str, dict[str, float]]:
        """``member``'s confusion matrix as {class: {response: probability}}."""
        rows = self.confusion[self.members.index(member)]
        return {k: dict(zip(self.responses, rows[i], strict=True)) for i, k in enumerate(self.classes)}

    def balanced_accuracy(self, member: str) -> float:
        """The mean over classes of the probability ``member`` answers that class (TPR and TNR averaged, for
        two classes)."""
        matrix = self.member_matrix(member)
        return float(np.mean([matrix[k].get(k, 0.0) for k in self.classes]))


def _classes_for(
    kind: Kind,
    votes: Sequence[Sequence[str | None]],
    gold: Sequence[str | None] | None,
    classes: Sequence[str] | None,
) -> tuple[list[str], list[str]]:
    seen = {v for row in votes for v in row if v is not None}
    golds = {g for g in (gold or ()) if g is not None}
    if kind == "verdict":
        unknown = sorted((seen | golds) - {"A", "B", "tie"})
        if unknown:
            raise DataError(f"expected verdict labels among ['A', 'B', 'tie']; got {unknown}")
        cls = list(classes) if classes is not None else ["A", "B", *(["tie"] if "tie" in golds else [])]
        return cls, ["A", "B", "tie"]
    values = sorted({int(x) for x in seen | golds | set(classes or ())})
    if not values:
        raise DataError("expected at least one score to fit a Dawid-Skene model on; got none")
    points = [str(v) for v in range(values[0], values[-1] + 1)]
    return (list(classes) if classes is not None else points), points


def _encode(votes: Sequence[Sequence[str | None]], responses: Sequence[str]) -> np.ndarray:
    """One-hot votes: (items, members, responses); a missing vote is all zeros."""
    index = {r: i for i, r in enumerate(responses)}
    n, m = len(votes), len(votes[0]) if votes else 0
    out = np.zeros((n, m, len(responses)))
    for i, row in enumerate(votes):
        if len(row) != m:
            raise DataError(f"expected one vote per member ({m}) for every item; item {i} has {len(row)}")
        for j, v in enumerate(row):
            if v is None:
                continue
            if v not in index:
                raise DataError(f"expected votes among {list(responses)}; item {i} member {j} voted {v!r}")
            out[i, j, index[v]] = 1.0
    return out


def _log_norm(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-normalised probabilities of ``logits`` and each row's log normaliser."""
    top = logits.max(axis=1, keepdims=True)
    z = np.log(np.exp(logits - top).sum(axis=1, keepdims=True)) + top
    return np.exp(logits - z), z[:, 0]


def fit_dawid_skene(
    votes: Sequence[Sequence[str | None]],
    members: Sequence[str],
    *,
    kind: Kind = "verdict",
    gold: Sequence[str | None] | None = None,
    classes: Sequence[str] | None = None,
    smoothing: float = 0.5,
    max_iter: int = 200,
    tol: float = 1e-6,
) -> DawidSkeneModel:
    """A Dawid-Skene model of the members from their ``votes`` (one row per item, one label or None per
    member); supervised with ``gold`` (one class label or None per item), else by EM (see the module
    docstring). DataError when no item has a vote (or, supervised, a gold label).
    """
    if smoothing < 0:
        raise DataError(f"expected smoothing >= 0; got {smoothing}")
    if not votes:
        raise DataError("expected votes on at least one item; got none")
    if gold is not None and len(gold) != len(votes):
        raise DataError(f"expected one gold label per item ({len(votes)}); got {len(gold)}")
    cls, responses = _classes_for(kind, votes, gold, classes)
    onehot = _encode(votes, responses)
    voted = onehot.sum(axis=2) > 0
    if not voted.any():
        raise DataError("expected at least one vote to fit a Dawid-Skene model on; every vote is missing")
    supervised = gold is not None
    it, converged = 0, True
    if gold is not None:
        index = {k: i for i, k in enumerate(cls)}
        unknown = sorted({g for g in gold if g is not None and g not in index})
        if unknown:
            raise DataError(f"expected gold labels among the classes {cls}; got {unknown}")
        rows = [i for i, g in enumerate(gold) if g is not None]
        if not rows:
            raise DataError("expected gold labels on some items for a supervised Dawid-Skene fit; got none")
        t = np.zeros((len(rows), len(cls)))
        t[np.arange(len(rows)), [index[gold[i]] for i in rows]] = 1.0  # type: ignore[index]
        priors, theta = _m_step(t, onehot[rows], smoothing)
        ll = float(np.sum(t * _log_joint(np.log(priors), np.log(theta), onehot[rows])))
    else:  # start from the members' (soft) majority, then EM
        match = np.array([responses.index(k) if k in responses else -1 for k in cls])
        t = (
            np.stack([onehot[:, :, r].sum(axis=1) if r >= 0 else np.zeros(len(votes)) for r in match], axis=1)
            + 1e-3
        )
        t = t / t.sum(axis=1, keepdims=True)
        last, converged = -math.inf, False
        for it in range(1, max_iter + 1):  # noqa: B007 - the last iteration count is reported
            priors, theta = _m_step(t, onehot, smoothing)
            t, norm = _log_norm(_log_joint(np.log(priors), np.log(theta), onehot))
            ll = float(norm.sum())
            if abs(ll - last) <= tol * max(1.0, abs(ll)):
                converged = True
                break
            last = ll
        priors, theta = _m_step(t, onehot, smoothing)
    checks = () if supervised else unsupervised_checks(cls, responses, members, onehot, t, priors, theta)
    return DawidSkeneModel(
        kind=kind,
        classes=tuple(cls),
        responses=tuple(responses),
        members=tuple(str(m) for m in members),
        priors=tuple(float(p) for p in priors),
        confusion=tuple(tuple(tuple(float(x) for x in row) for row in mat) for mat in theta),
        supervised=supervised,
        iterations=it,
        converged=converged,
        log_likelihood=ll if math.isfinite(ll) else None,
        checks=checks,
    )


AGREEMENT_GAP = 0.2
"""How far a member's fitted accuracy may sit from its agreement with the other members' majority before an
unsupervised fit is flagged."""
UNANIMOUS_CONTRADICTED = 0.1
"""The share of unanimous items an unsupervised fit may overrule before it is flagged."""


def unsupervised_checks(
    classes: Sequence[str],
    responses: Sequence[str],
    members: Sequence[str],
    onehot: np.ndarray,
    posterior: np.ndarray,
    priors: np.ndarray,
    theta: np.ndarray,
) -> tuple[str, ...]:
    """The warnings of an EM fit without gold: always that it is unverified; a member whose fitted accuracy
    (the prior-weighted chance it answers the class) is more than :data:`AGREEMENT_GAP` from its agreement
    with the other members' majority; and a fit that overrules more than :data:`UNANIMOUS_CONTRADICTED` of the
    items where every member voted alike (EM that settled on swapped classes does both)."""
    out = [
        "fitted without gold labels: the members' accuracies and the reduced answers are unverified (EM can "
        "settle on a solution with the classes swapped); check the fit on a few labelled items"
    ]
    match = [responses.index(k) if k in responses else -1 for k in classes]
    voted = onehot.sum(axis=2) > 0
    said = onehot.argmax(axis=2)
    for m, name in enumerate(members):
        if len(members) < 3:
            break
        others = np.delete(onehot, m, axis=1).sum(axis=1)  # (items, responses)
        ordered = np.sort(others, axis=1)
        clear = (ordered[:, -1] > ordered[:, -2]) & voted[:, m]
        if clear.sum() < 10:
            continue
        agree = float(np.mean(said[clear, m] == others[clear].argmax(axis=1)))
        fitted = float(sum(priors[k] * theta[m, k, r] for k, r in enumerate(match) if r >= 0))
        if abs(fitted - agree) > AGREEMENT_GAP:
            out.append(
                f"member {name!r}: the fit puts its accuracy at {fitted:.2f}, but it agrees with the other "
                f"members' majority on {agree:.2f} of {int(clear.sum())} items; the fit contradicts the votes"
            )
    counts = onehot.sum(axis=1)
    unanimous = (voted.sum(axis=1) >= 2) & (counts.max(axis=1) == voted.sum(axis=1))
    in_class = np.array([responses[r] in classes for r in counts.argmax(axis=1)], dtype=bool)
    rows = np.flatnonzero(unanimous & in_class)
    if len(rows) >= 10:
        fit = [classes[k] for k in posterior[rows].argmax(axis=1)]
        vote = [responses[r] for r in counts[rows].argmax(axis=1)]
        overruled = float(np.mean([f != v for f, v in zip(fit, vote, strict=True)]))
        if overruled > UNANIMOUS_CONTRADICTED:
            out.append(
                f"the fit overrules the members on {overruled:.0%} of the {len(rows)} items where they all "
                "voted alike: worse than their majority there"
            )
    return tuple(out)


def gold_check(
    model: DawidSkeneModel, votes: Sequence[Sequence[str | None]], gold: Sequence[str | None]
) -> str:
    """How an unsupervised fit does on the items that have gold (it was not fitted on them), beside the
    members' majority: one line for :attr:`DawidSkeneModel.checks`."""
    fit_right = majority_right = n = 0
    for row, g in zip(votes, gold, strict=True):
        post = dawid_skene_posterior(model, row) if g is not None else None
        if post is None:
            continue
        n += 1
        fit_right += max(post, key=post.__getitem__) == g
        cast = [v for v in row if v is not None]
        top = max(set(cast), key=cast.count)
        majority_right += top == g and cast.count(top) > len(cast) / 2
    if not n:
        return "no item with a gold label to check the fit on"
    verdict = ": the fit is WORSE than the majority" if fit_right < majority_right else ""
    return (
        f"on the {n} items with a gold label (not used in the fit), the fit's answer is right on "
        f"{fit_right / n:.2f} and the members' strict majority on {majority_right / n:.2f}{verdict}"
    )


def _m_step(t: np.ndarray, onehot: np.ndarray, smoothing: float) -> tuple[np.ndarray, np.ndarray]:
    """Class prior and confusion matrices (members, classes, responses) from soft class labels ``t``."""
    counts = np.einsum("ik,iml->mkl", t, onehot) + smoothing
    totals = counts.sum(axis=2, keepdims=True)
    theta = np.divide(counts, totals, out=np.full_like(counts, 1.0 / counts.shape[2]), where=totals > 0)
    prior_counts = t.sum(axis=0) + smoothing
    priors = (
        prior_counts / prior_counts.sum() if prior_counts.sum() > 0 else np.full(t.shape[1], 1 / t.shape[1])
    )
    return np.clip(priors, 1e-12, None), np.clip(theta, 1e-12, None)


def _log_joint(log_prior: np.ndarray, log_theta: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """log P(class k, votes of item i): (items, classes)."""
    return log_prior[None, :] + np.einsum("iml,mkl->ik", onehot, log_theta)


def dawid_skene_posterior(
    model: DawidSkeneModel, votes: dict[str, str | None] | Sequence[str | None]
) -> dict[str, float] | None:
    """P(class | votes) for one item (None when it has no vote); ``votes`` by member name, or in member order.

    A member the model does not know, or an answer outside its responses, is a DataError.
    """
    if isinstance(votes, dict):
        unknown = sorted(set(votes) - set(model.members))
        if unknown:
            raise DataError(f"expected votes of the members {list(model.members)}; got votes of {unknown}")
        row = [votes.get(m) for m in model.members]
    else:
        row = list(votes)
        if len(row) != len(model.members):
            raise DataError(f"expected {len(model.members)} votes (one per member); got {len(row)}")
    if all(v is None for v in row):
        return None
    logits = np.log(np.array(model.priors))
    for m, v in enumerate(row):
        if v is None:
            continue
        if v not in model.responses:
            raise DataError(
                f"expected a vote among {list(model.responses)}; member {model.members[m]!r} voted {v!r}"
            )
        l_idx = model.responses.index(v)
        logits = logits + np.log([model.confusion[m][k][l_idx] for k in range(len(model.classes))])
    p, _ = _log_norm(logits[None, :])
    return {k: float(x) for k, x in zip(model.classes, p[0], strict=True)}


# effective votes


def _error_correlations(err: np.ndarray) -> dict[tuple[int, int], float]:
    """The Pearson correlation of each pair of columns of ``err`` (items x members, NaN missing) over the
    items both answered, for the pairs with 3 such items and errors that vary."""
    out: dict[tuple[int, int], float] = {}
    for a, b in itertools.combinations(range(err.shape[1]), 2):
        both = np.isfinite(err[:, a]) & np.isfinite(err[:, b])
        x, y = err[both, a], err[both, b]
        if both.sum() >= 3 and np.std(x) != 0 and np.std(y) != 0:
            out[(a, b)] = float(np.corrcoef(x, y)[0, 1])
    return out


def _kish(n: int, cors: dict[tuple[int, int], float]) -> tuple[float, float]:
    """The mean pairwise error correlation rho and Kish's ``n / (1 + (n - 1) * rho)`` (NaN when undefined)."""
    rho = float(np.mean(list(cors.values()))) if cors else math.nan
    denom = 1 + (n - 1) * rho
    # rounding must not make 0 a tiny positive
    return rho, (n / denom if math.isfinite(rho) and denom > 1e-9 else math.nan)


def effective_votes(
    errors: np.ndarray | Sequence[Sequence[float | None]],
    *,
    ci: bool = False,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    members: Sequence[str] | None = None,
) -> Measure:
    """Kish's effective number of votes of a panel: ``n / (1 + (n - 1) * rho)`` (see the module docstring).

    ``errors``: items x members (NaN or None where a member gave no answer or the item has no
    gold). Each pair's correlation is over the items both answered (pairs with fewer than 3 or a
    constant error are left out); ``extra`` holds ``rho`` and each pair's correlation. ``ci``: a
    percentile bootstrap over items.
    """
    err = (
        errors.astype(float)
        if isinstance(errors, np.ndarray)
        else np.array([[math.nan if v is None else float(v) for v in row] for row in errors], dtype=float)
    )
    name = "panel-effective-votes"
    if err.ndim != 2 or err.shape[1] < 2:
        why = "a panel needs at least two members to have an effective number of votes"
        return undefined(name, int(err.shape[0]) if err.ndim else 0, 0, why)
    n_members = err.shape[1]
    cors = _error_correlations(err)
    rho, value = _kish(n_members, cors)
    used = int(np.isfinite(err).any(axis=1).sum())
    failed = int(err.shape[0] - used)
    names = list(members) if members is not None else [str(i) for i in range(n_members)]
    extra: dict[str, Any] = {
        "rho": rho,
        "n_members": n_members,
        "definition": "Kish: n / (1 + (n - 1) * rho)",
        "pair_correlations": {
            f"{names[a]} ~ {names[b]}": cors.get((a, b))
            for a, b in itertools.combinations(range(n_members), 2)
        },
    }
    if not math.isfinite(rho):
        why = "no pair of members has a defined error correlation (each needs 3 items both answered, with "
        return undefined(name, used, failed, why + "errors that vary)", **extra)
    if not math.isfinite(value):
        why = f"the mean error correlation {rho:.3f} is <= -1/(n-1): Kish's n_eff is undefined"
        return undefined(name, used, failed, why, **extra)
    interval = None
    if ci and used >= 3:
        rng = np.random.default_rng(seed)
        draws = [
            _kish(n_members, _error_correlations(err[rng.integers(0, len(err), len(err))]))[1]
            for _ in range(n_boot)
        ]
        finite = np.array([v for v in draws if math.isfinite(v)])
        if len(finite) >= n_boot / 2:
            interval = (float(np.quantile(finite, alpha / 2)), float(np.quantile(finite, 1 - alpha / 2)))
    return finish(name, value, used, failed, interval=interval, extra=extra)


def verdict_errors(votes: Sequence[Sequence[str | None]], gold: Sequence[Hashable | None]) -> np.ndarray:
    """Items x members: 1.0 where a member's verdict differs from the gold preference, 0.0 where equal, NaN
    missing."""
    rows = [
        [math.nan if v is None or g is None else float(v != g) for v in row]
        for row, g in zip(votes, gold, strict=True)
    ]
    return np.array(rows, dtype=float).reshape(len(votes), -1)


# member confusion


def member_confusion(
    votes: Sequence[Sequence[str | None]],
    members: Sequence[str],
    gold: Sequence[str | None] | None = None,
    *,
    kind: Kind = "verdict",
) -> Measure:
    """Each member's confusion matrix estimated by unsupervised Dawid-Skene over these items, and observed
    against gold.

    ``value`` is the lowest estimated balanced accuracy among the members; ``extra`` holds every
    member's ``estimated`` matrix and balanced accuracy, the ``observed`` counts against ``gold``
    (when given), and the ``model``.
    """
    answered = [row for row in votes if any(v is not None for v in row)]
    if not answered:
        return undefined("member-confusion", 0, len(votes), "no member answered any item")
    model = fit_dawid_skene(answered, members, kind=kind)
    estimated: dict[str, dict[str, Any]] = {
        m: {"matrix": model.member_matrix(m), "balanced_accuracy": model.balanced_accuracy(m)}
        for m in model.members
    }
    extra: dict[str, Any] = {"estimated": estimated, "model": model.model_dump(mode="json")}
    if gold is not None:
        observed: dict[str, Any] = {}
        for j, m in enumerate(members):
            counts = confusion_counts([row[j] for row in votes], gold)
            rates = [c.get(k, 0) / sum(c.values()) for k, c in counts.items() if sum(c.values())]
            observed[m] = {"counts": counts, "balanced_accuracy": float(np.mean(rates)) if rates else None}
        extra["observed"] = observed
    value = min(e["balanced_accuracy"] for e in estimated.values())
    return finish("member-confusion", value, len(answered), len(votes) - len(answered), extra=extra)


# reported measures


def _not_a_panel(entry: EntryData, name: str) -> Measure | None:
    """The NaN result of a measure of panels on an entry that is no panel (None for a panel)."""
    if any(isinstance(j.meta.get("panel"), dict) for j in entry.judgments):
        return None
    return undefined(name, 0, len(entry.judgments), "the entry is not a panel of judges")


@reported_measure(
    "panel-effective-votes",
    "panel n_eff",
    "higher",
    "consistency",
    paper="Kohli 2026; Kish 1965",
    task="pairwise",
)
def _panel_effective_votes(entry: EntryData) -> Measure:
    """Kish's effective number of votes of a panel from its members' verdict errors (Kohli 2026;
    :func:`effective_votes`).

    n / (1 + (n-1) * mean pairwise correlation of the members' errors against gold); n for independent
    members, 1 for members who err together.
    """
    if (none := _not_a_panel(entry, "panel-effective-votes")) is not None:
        return none
    members, votes = panel_votes(entry.judgments, "verdict")
    return effective_votes(verdict_errors(votes, entry.gold), members=members, **entry.ci)


@reported_measure(
    "panel-effective-votes-score",
    "panel n_eff (scores)",
    "higher",
    "consistency",
    paper="Kohli 2026; Kish 1965",
)
def _panel_effective_votes_score(entry: EntryData) -> Measure:
    """Kish's effective number of votes of a score panel from its members' errors against the human
    scores.

    as for verdicts, with each member's error its score minus the human score.
    """
    if (none := _not_a_panel(entry, "panel-effective-votes")) is not None:
        return none
    names: list[str] = []
    rows: list[dict[str, float | None]] = []
    for j in entry.judgments:
        members = (j.meta.get("panel") or {}).get("members") or {}
        given = members.get(entry.criterion) if isinstance(members, dict) else None
        rows.append(
            {str(n): None if v is None else float(v) for n, v in given.items()}
            if isinstance(given, dict)
            else {}
        )
        names += [n for n in rows[-1] if n not in names]
    errors = [
        [math.nan if row.get(n) is None else row[n] - h for n in names]
        for row, h in zip(rows, entry.human, strict=True)
    ]
    err = np.array(errors, dtype=float).reshape(len(rows), -1)
    return effective_votes(err, members=names, **entry.ci)


@reported_measure(
    "member-confusion",
    "weakest member (DS bal. acc.)",
    "higher",
    "accuracy",
    paper="Dawid and Skene 1979",
    task="pairwise",
)
def _member_confusion(entry: EntryData) -> Measure:
    """Each panel member's confusion matrix, estimated without gold (Dawid and Skene 1979) and observed
    against it.

    the lowest balanced accuracy among the panel's members as unsupervised Dawid-Skene estimates it from
    their votes alone (valid when the members are better than chance on the whole); the details hold every
    member's matrix beside the observed one.
    """
    if (none := _not_a_panel(entry, "member-confusion")) is not None:
        return none
    members, votes = panel_votes(entry.judgments, "verdict")
    return member_confusion(votes, members, [g if g in ("A", "B", "tie") else None for g in entry.gold])
