"""A score read from token log-probabilities: the distribution over the scale's points and its expected
value."""

from __future__ import annotations

import math
from collections.abc import Sequence

from mitigate.errors import ParseError, ScaleError
from mitigate.lm import TokenLogprob
from mitigate.parse._common import format_number as _fmt
from mitigate.parse._common import snippet as _snippet
from mitigate.scale import Scale


def score_tokens(scale: Scale) -> list[str]:
    """The surface strings of the scale's plain answers, e.g. ["1", "2", ..., "10"].

    These are what a logprob reducer looks for (after stripping a token's leading space);
    points with more than one character ("10", "3.5") may span several tokens.
    """
    return [_fmt(p) for p in scale.points()]


def _clean_token(token: str) -> str:
    return token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n").strip()


def _distribution(pos: TokenLogprob) -> dict[str, float]:
    """Probability per cleaned token string at one position (generated token included)."""
    probs: dict[str, float] = {}
    seen: set[str] = set()
    entries = list(pos.top)
    if pos.token not in {t for t, _ in entries}:
        entries.append((pos.token, pos.logprob))
    for tok, lp in entries:
        if tok in seen:
            continue
        seen.add(tok)
        key = _clean_token(tok)
        probs[key] = probs.get(key, 0.0) + math.exp(lp)
    return probs


def _point_mass(positions: Sequence[TokenLogprob], i: int, points: dict[str, int]) -> dict[int, float]:
    """Probability mass per integer scale point at position ``i`` (multi-token numbers split)."""
    dist = _distribution(positions[i])
    generated = _clean_token(positions[i].token)
    prefixes = {s[:k] for s in points for k in range(1, len(s))}
    mass: dict[int, float] = {}
    for tok, p in dist.items():
        if tok not in points and tok not in prefixes:
            continue
        if tok not in prefixes:
            mass[points[tok]] = mass.get(points[tok], 0.0) + p
            continue
        # ``tok`` starts a longer point ("1" of "10"). Its continuation is only observed
        # when the model generated this very token and a next position exists.
        if tok != generated or i + 1 >= len(positions):
            if tok in points:
                mass[points[tok]] = mass.get(points[tok], 0.0) + p
            continue
        nxt = _distribution(positions[i + 1])
        ends = sum(q for t, q in nxt.items() if not t[:1].isdigit())
        longer = {points[tok + t]: q for t, q in nxt.items() if t and tok + t in points}
        z = (ends if tok in points else 0.0) + sum(longer.values())
        if z <= 0:
            continue  # every observed continuation leaves the scale ("1" then "5" on 1-10)
        if tok in points:
            mass[points[tok]] = mass.get(points[tok], 0.0) + p * ends / z
        for value, q in longer.items():
            mass[value] = mass.get(value, 0.0) + p * q / z
    return mass


def expected_score(positions: Sequence[TokenLogprob], scale: Scale, *, min_mass: float = 0.5) -> float:
    """G-Eval-style probability-weighted score: sum(p(v) * v) over the scale's integer points.

    The probabilities are :func:`score_distribution`'s (its docstring says which position is
    read and how multi-token numbers are split). Raises :class:`ParseError` when no position
    carries mass on the scale.
    """
    dist = score_distribution(positions, scale, min_mass=min_mass)
    return sum(v * p for v, p in dist.items())


def score_distribution(
    positions: Sequence[TokenLogprob], scale: Scale, *, min_mass: float = 0.5
) -> dict[int, float]:
    """Probability per integer scale point at the score position, renormalised to sum to 1.

    The score position is the first generated position whose token is a scale number (or the
    start of one, "1" of "10"); failing that, the first position whose top alternatives put
    at least ``min_mass`` probability on scale points. Probabilities there are renormalised
    over the integer points. Tokens are compared after stripping leading spaces and the
    byte-level markers "Ġ"/"▁".

    Multi-token numbers ("10" written as "1" + "0"): when the generated token is "1", its
    mass is split between 1 and 10 by the next position's top alternatives: P(10) ∝ P("0"
    | "1"), P(1) ∝ P(next token is not a digit | "1"); digit continuations that leave the
    scale ("15") are excluded and the split renormalised. This is exact up to top-k
    truncation. When another token was generated (say "7") and "1" is only an alternative,
    its continuation was never observed, so its mass goes to 1 (an approximation that can
    only under-weight 10 by at most P("1")). A single "10" token counts as 10 directly.
    Points outside the top alternatives get probability 0. Raises :class:`ParseError` when
    no position carries mass on the scale.
    """
    expected = f"token logprobs with probability on the scale points {scale.describe()}"
    pts = scale.integer_points()
    if not pts:
        raise ScaleError(f"expected a scale with at least one integer point; got {scale.describe()}")
    points = {str(v): v for v in pts}
    prefixes = {s[:k] for s in points for k in range(1, len(s))}
    raw = "".join(p.token for p in positions)
    chosen: dict[int, float] | None = None
    for i, pos in enumerate(positions):
        if _clean_token(pos.token) in points or _clean_token(pos.token) in prefixes:
            mass = _point_mass(positions, i, points)
            if sum(mass.values()) > 0:
                chosen = mass
                break
    if chosen is None:
        for i, pos in enumerate(positions):
            dist = _distribution(pos)
            total = sum(dist.values())
            mass = _point_mass(positions, i, points)
            if total > 0 and sum(mass.values()) / total >= min_mass:
                chosen = mass
                break
    if chosen is None:
        raise ParseError(
            f"expected {expected}; got no position with mass on them in {_snippet(raw)!r} "
            f"({len(positions)} positions)",
            raw=raw,
            expected=expected,
        )
    total = sum(chosen.values())
    return {v: p / total for v, p in sorted(chosen.items())}
