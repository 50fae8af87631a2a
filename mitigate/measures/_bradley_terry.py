"""Rank systems from pairwise verdicts with the Bradley-Terry model: abilities, intervals, rank intervals,
cycles.

Bradley and Terry (1952): ``P(x beats y) = sigmoid(theta_x - theta_y)``, a tie half a win each.
:func:`fit_bradley_terry` finds the maximum-likelihood abilities (Newton, centred to mean 0) with Fisher
or bootstrap intervals; they are finite only when the graph with an edge x -> y wherever x won or tied
against y is strongly connected (Zermelo), else the fit is refused unless ``prior`` > 0 (a Gaussian
prior of that precision). :func:`majority_cycles` finds the systems that beat each other round in a
circle: the strongly connected groups of the majority tournament.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mitigate.constraints import Interval, check_param
from mitigate.errors import DataError
from mitigate.estimators import Ranking, kendall_tau, rank_intervals
from mitigate.measures._base import EntryData, Measure, finish, reported_measure, undefined

Comparison = tuple[str, str, float]
"""(x, y, outcome): outcome 1.0 when x won, 0.0 when y won, 0.5 for a tie."""


class BradleyTerryFit(BaseModel):
    """Bradley-Terry abilities of systems (centred, log-odds units) with intervals, their ranking and the
    cycles.

    ``low``/``high``: each ability's interval at ``confidence`` (not simultaneous; the
    ranking's rank intervals are). ``se``: Fisher standard errors (``method="fisher"``) or the
    bootstrap standard deviation. ``prior``: the precision of the Gaussian prior (0: plain
    maximum likelihood). ``cycles``: :func:`majority_cycles`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    systems: tuple[str, ...]
    abilities: dict[str, float]
    se: dict[str, float]
    low: dict[str, float]
    high: dict[str, float]
    confidence: float
    method: Literal["fisher", "bootstrap"]
    prior: float
    n_comparisons: int
    n_ties: int
    ranking: Ranking
    cycles: dict[str, Any] = Field(default_factory=dict)


def _pair_table(comparisons: Sequence[Comparison]) -> tuple[list[str], dict[tuple[int, int], list[float]]]:
    """Systems (sorted) and, per unordered pair (i < j), [comparisons, score of i]."""
    systems = sorted({str(x) for x, _, _ in comparisons} | {str(y) for _, y, _ in comparisons})
    index = {s: i for i, s in enumerate(systems)}
    table: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for x, y, out in comparisons:
        if out not in (0.0, 0.5, 1.0):
            raise DataError(f"expected a comparison outcome 1.0, 0.5 or 0.0; got {out!r} for ({x!r}, {y!r})")
        i, j = index[str(x)], index[str(y)]
        if i == j:
            raise DataError(f"expected comparisons of two different systems; got {x!r} against itself")
        key, score = ((i, j), out) if i < j else ((j, i), 1.0 - out)
        table[key][0] += 1
        table[key][1] += score
    return systems, dict(table)


def _components(k: int, edges: Sequence[tuple[int, int]], connection: str = "strong") -> np.ndarray:
    """The component label of each of ``k`` nodes of the directed graph ``edges`` (``connection``: "strong" or
    "weak"); strong labels come sinks first."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rows, cols = zip(*edges, strict=True) if edges else ((), ())
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(k, k))
    return connected_components(graph, directed=True, connection=connection)[1]


def _check_estimable(systems: list[str], table: dict[tuple[int, int], list[float]], prior: float) -> None:
    if prior > 0:
        return
    k = len(systems)
    parts = _components(k, list(table), "weak")
    if parts.max() > 0:
        groups = sorted(
            (sorted(systems[i] for i in np.flatnonzero(parts == c)) for c in dict.fromkeys(parts)), key=len
        )
        raise DataError(
            f"the comparisons split the systems into {parts.max() + 1} groups never compared with "
            f"each other (e.g. {groups[0]}): Bradley-Terry cannot place them on one scale; "
            "expected comparisons connecting every system"
        )
    edges = [(i, j) for (i, j), (n, s) in table.items() if s > 0] + [
        (j, i) for (i, j), (n, s) in table.items() if s < n
    ]
    parts = _components(k, edges)
    if parts.max() > 0:
        # a group no system outside beats: the one holding the highest-numbered first member
        beaten = {parts[j] for i, j in edges if parts[i] != parts[j]}
        top = max(set(parts) - beaten, key=lambda c: int(np.flatnonzero(parts == c)[0]))
        raise DataError(
            f"some systems won (or lost) every comparison with the rest (e.g. "
            f"{[systems[i] for i in np.flatnonzero(parts == top)]}), so "
            "their Bradley-Terry abilities are infinite; expected more comparisons, or prior "
            "> 0 (a Gaussian prior on the abilities)"
        )


def _newton(
    k: int, table: dict[tuple[int, int], list[float]], prior: float, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """Centred abilities and the information matrix at them."""
    theta = np.zeros(k)
    pairs = np.array(list(table), dtype=int).reshape(-1, 2)
    n = np.array([v[0] for v in table.values()])
    s = np.array([v[1] for v in table.values()])
    info = np.eye(k)
    for _ in range(max_iter):
        d = theta[pairs[:, 0]] - theta[pairs[:, 1]]
        p = 1.0 / (1.0 + np.exp(-d))
        resid = s - n * p
        grad = np.zeros(k)
        np.add.at(grad, pairs[:, 0], resid)
        np.add.at(grad, pairs[:, 1], -resid)
        grad -= prior * theta
        w = n * p * (1 - p)
        info = np.zeros((k, k))
        np.add.at(info, (pairs[:, 0], pairs[:, 0]), w)
        np.add.at(info, (pairs[:, 1], pairs[:, 1]), w)
        np.add.at(info, (pairs[:, 0], pairs[:, 1]), -w)
        np.add.at(info, (pairs[:, 1], pairs[:, 0]), -w)
        info += prior * np.eye(k)
        step = np.linalg.pinv(info) @ grad
        theta = theta + step
        theta -= theta.mean()
        if np.max(np.abs(step)) < 1e-10:
            break
    return theta, info


def fit_bradley_terry(
    comparisons: Sequence[Comparison],
    *,
    confidence: float = 0.95,
    method: Literal["auto", "fisher", "bootstrap"] = "auto",
    n_boot: int = 1000,
    seed: int = 0,
    clusters: Sequence[Hashable] | None = None,
    prior: float = 0.0,
    others: Mapping[str, Mapping[str, float]] | None = None,
) -> BradleyTerryFit:
    """Bradley-Terry abilities of the systems in ``comparisons`` (see the module docstring).

    ``clusters``: one label per comparison (e.g. its prompt or document), resampled together by the
    bootstrap. ``method``: ``auto`` (default) resamples by cluster when comparisons share one (their
    outcomes are then not independent, and Fisher's intervals, which assume they are, come out too narrow),
    else Fisher's. ``others``: named scorings of the systems to compare the ranking with (Kendall's tau).
    DataError when the comparisons cannot place the systems on one finite scale (and ``prior`` is 0).
    """
    if not comparisons:
        raise DataError("expected pairwise comparisons to fit Bradley-Terry abilities on; got none")
    check_param("fit_bradley_terry", "confidence", confidence, [Interval(float, 0, 1, closed="neither")])
    check_param("fit_bradley_terry", "prior", prior, [Interval(float, 0)])
    if method == "auto":
        shared = clusters is not None and len(set(clusters)) < len(list(clusters))
        method = "bootstrap" if shared else "fisher"
    systems, table = _pair_table(comparisons)
    if len(systems) < 2:
        raise DataError(f"expected comparisons between at least two systems; got {systems}")
    _check_estimable(systems, table, prior)
    theta, info = _newton(len(systems), table, prior)
    from scipy import stats  # lazy: scipy is slow to import

    if method == "fisher":
        se = np.sqrt(np.clip(np.diag(np.linalg.pinv(info)), 0, None))

        def bounds_at(level: float) -> dict[str, tuple[float, float]]:
            z = float(stats.norm.ppf(0.5 + level / 2))
            return {
                s: (float(theta[i] - z * se[i]), float(theta[i] + z * se[i])) for i, s in enumerate(systems)
            }
    else:
        boots = _bootstrap(comparisons, systems, clusters, prior, n_boot, seed)
        se = boots.std(axis=0, ddof=1)

        def bounds_at(level: float) -> dict[str, tuple[float, float]]:
            lo, hi = np.quantile(boots, [(1 - level) / 2, 1 - (1 - level) / 2], axis=0)
            return {s: (float(lo[i]), float(hi[i])) for i, s in enumerate(systems)}

    points = {s: float(theta[i]) for i, s in enumerate(systems)}
    ranking = rank_intervals(points, bounds_at, confidence, others)
    plain = bounds_at(confidence)
    return BradleyTerryFit(
        systems=tuple(systems),
        abilities=points,
        se={s: float(se[i]) for i, s in enumerate(systems)},
        low={s: plain[s][0] for s in systems},
        high={s: plain[s][1] for s in systems},
        confidence=confidence,
        method=method,
        prior=prior,
        n_comparisons=len(comparisons),
        n_ties=sum(1 for _, _, o in comparisons if o == 0.5),
        ranking=ranking,
        cycles=majority_cycles(comparisons),
    )


def _bootstrap(
    comparisons: Sequence[Comparison],
    systems: list[str],
    clusters: Sequence[Hashable] | None,
    prior: float,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """Abilities fitted on ``n_boot`` resamples of whole clusters (each comparison its own without
    ``clusters``); a resample that cannot be fitted (a system lost every drawn comparison) is left out."""
    rng = np.random.default_rng(seed)
    labels = list(clusters) if clusters is not None else list(range(len(comparisons)))
    if len(labels) != len(comparisons):
        raise DataError(f"expected one cluster label per comparison ({len(comparisons)}); got {len(labels)}")
    k = len(systems)
    index = {name: i for i, name in enumerate(systems)}
    first = np.array([min(index[str(x)], index[str(y)]) for x, y, _ in comparisons])
    second = np.array([max(index[str(x)], index[str(y)]) for x, y, _ in comparisons])
    score = np.array([o if index[str(x)] < index[str(y)] else 1.0 - o for x, y, o in comparisons])
    pair = first * k + second
    keys = {c: i for i, c in enumerate(dict.fromkeys(labels))}
    cluster = np.array([keys[c] for c in labels])
    out = []
    for _ in range(n_boot):
        drawn = np.bincount(rng.integers(0, len(keys), len(keys)), minlength=len(keys))[cluster]
        n = np.bincount(pair, weights=drawn, minlength=k * k)
        won = np.bincount(pair, weights=drawn * score, minlength=k * k)
        table = {(int(p) // k, int(p) % k): [float(n[p]), float(won[p])] for p in np.flatnonzero(n)}
        present = {i for ij in table for i in ij}
        if len(present) < k:
            continue
        try:
            _check_estimable(systems, table, prior)
        except DataError:
            continue
        out.append(_newton(k, table, prior)[0])
    if len(out) < n_boot / 2:
        raise DataError(
            f"only {len(out)} of {n_boot} bootstrap resamples could be fitted; expected more "
            "comparisons per system, or method='fisher'"
        )
    return np.array(out)


def majority_cycles(comparisons: Sequence[Comparison]) -> dict[str, Any]:
    """The cycles of the majority tournament (see the module docstring).

    ``groups``: each strongly connected group of more than one system, with ``cycle``, one
    cycle through it (its first system repeated at the end); ``complete_triples``: triples of
    systems whose three pairs all have a majority winner, ``cyclic_triples`` those among them
    that beat each other round in a circle.
    """
    systems, table = _pair_table(comparisons)
    k = len(systems)
    beats: dict[int, set[int]] = defaultdict(set)
    for (i, j), (n, s) in table.items():
        if s > n / 2:
            beats[i].add(j)
        elif s < n / 2:
            beats[j].add(i)
    edges = [(i, j) for i in beats for j in beats[i]]
    parts = _components(k, edges)
    groups = []
    for c in np.unique(parts):
        comp = np.flatnonzero(parts == c).tolist()
        if len(comp) > 1:
            groups.append(
                {"systems": [systems[i] for i in comp], "cycle": [systems[i] for i in _a_cycle(comp, beats)]}
            )
    won = np.zeros((k, k), dtype=np.int64)
    for i, j in edges:
        won[i, j] = 1
    decided = won + won.T
    cyclic = int(np.trace(won @ won @ won)) // 3  # each directed triangle is 3 closed walks
    complete = int(np.trace(decided @ decided @ decided)) // 6
    return {"groups": groups, "cyclic_triples": cyclic, "complete_triples": complete}


def _a_cycle(comp: list[int], beats: Mapping[int, set[int]]) -> list[int]:
    """One cycle through the strongly connected group ``comp`` (a path back to its start)."""
    inside = set(comp)
    start = min(comp)
    parent: dict[int, int] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        v = frontier.pop(0)
        for w in sorted(beats.get(v, ())):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
            if w not in seen:
                seen.add(w)
                parent[w] = v
                frontier.append(w)
    return [start, start]


def comparisons_from_verdicts(
    systems_a: Sequence[str | None], systems_b: Sequence[str | None], verdicts: Sequence[str | None]
) -> tuple[list[Comparison], list[int]]:
    """Comparisons (system of A, system of B, outcome) from verdicts by text, and the rows they came from.

    Rows missing a system or a verdict are left out; a row comparing a system with itself too.
    """
    out: list[Comparison] = []
    rows: list[int] = []
    for i, (a, b, v) in enumerate(zip(systems_a, systems_b, verdicts, strict=True)):
        if a is None or b is None or v is None or a == b:
            continue
        outcome = {"A": 1.0, "B": 0.0, "tie": 0.5}.get(str(v))
        if outcome is None:
            raise DataError(f"expected a verdict 'A', 'B', 'tie' or None; got {v!r}")
        out.append((str(a), str(b), outcome))
        rows.append(i)
    return out, rows


@reported_measure(
    "bradley-terry", "BT ranking tau", "higher", "accuracy", paper="Bradley and Terry 1952", task="pairwise"
)
def _bradley_terry_ranking(entry: EntryData) -> Measure:
    """Kendall's tau between the systems' Bradley-Terry abilities from the judge's verdicts and from the
    gold preferences.

    Kendall tau-b between the systems ranked by Bradley-Terry on the judge's verdicts and on the gold
    preferences; the details hold both rankings with rank intervals and the judge's majority cycles. Needs
    items naming both systems (system, system_b). Comparisons that share a prompt (doc_id) are resampled
    together for the intervals.
    """
    a = [i.system for i in entry.items]
    b = [i.system_b for i in entry.items]
    judged, rows = comparisons_from_verdicts(a, b, entry.verdicts)
    gold, gold_rows = comparisons_from_verdicts(a, b, list(entry.gold))
    prompts = [str(i.doc_id) if i.doc_id is not None else i.id for i in entry.items]
    name, n, failed = "bradley-terry", len(judged), len(entry.items) - len(judged)
    if len({s for c in judged for s in c[:2]}) < 3:
        return undefined(
            name, n, failed, "fewer than three systems are compared (items need system and system_b)"
        )
    # the rank intervals resample as the entry's other intervals do (with 0, "no intervals": 1,000)
    n_boot, seed = (entry.n_boot if entry.n_boot > 0 else 1000), entry.seed
    try:
        gold_fit = (
            fit_bradley_terry(gold, clusters=[prompts[r] for r in gold_rows], n_boot=n_boot, seed=seed)
            if gold
            else None
        )
        fit = fit_bradley_terry(
            judged,
            clusters=[prompts[r] for r in rows],
            others={"gold": gold_fit.abilities} if gold_fit else None,
            n_boot=n_boot,
            seed=seed,
        )
    except DataError as exc:
        return undefined(name, n, failed, exc.message)
    extra = {
        "judge": fit.model_dump(mode="json"),
        "gold": gold_fit.model_dump(mode="json") if gold_fit else None,
    }
    tau = kendall_tau(fit.abilities, gold_fit.abilities) if gold_fit else None
    if tau is None:
        return undefined(
            name, n, failed, "no gold preferences to rank the systems by, or a constant ranking", **extra
        )
    return finish(name, tau, n, failed, extra=extra)
