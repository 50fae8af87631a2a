"""Answers read from token log-probabilities: a score's distribution over the scale's points and its expected
value (G-Eval), and the probability of each pairwise verdict."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import NamedTuple

from mitigate.errors import ParseError, ScaleError
from mitigate.lm import TokenLogprob
from mitigate.parse._common import snippet as _snippet
from mitigate.scale import Scale


def _token_text(token: str) -> str:
    """A token's text with the byte-level markers "Ġ" / "▁" / "Ċ" as the space and newline they stand for."""
    return token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n")


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
        key = _token_text(tok).strip()
        probs[key] = probs.get(key, 0.0) + math.exp(lp)
    return probs


def _point_mass(positions: Sequence[TokenLogprob], i: int, points: dict[str, int]) -> dict[int, float]:
    """Probability mass per integer scale point at position ``i`` (multi-token numbers split)."""
    dist = _distribution(positions[i])
    generated = _token_text(positions[i].token).strip()
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
    """G-Eval-style probability-weighted score: sum(p(v) * v) over :func:`score_distribution`."""
    dist = score_distribution(positions, scale, min_mass=min_mass)
    return sum(v * p for v, p in dist.items())


def score_distribution(
    positions: Sequence[TokenLogprob], scale: Scale, *, min_mass: float = 0.5
) -> dict[int, float]:
    """Probability per integer scale point at the score position (the first token that is, or starts, a scale
    number; else the first position with ``min_mass`` on the scale), renormalised to sum to 1.

    A generated "1" splits its mass between 1 and 10 by the next position's alternatives; a "1" only among the
    alternatives counts as 1. ParseError when no position carries mass on the scale.
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
        if (token := _token_text(pos.token).strip()) in points or token in prefixes:
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


class VerdictProbabilities(NamedTuple):
    """The verdict distribution ({"first", "second"[, "tie"]} -> probability, summing to 1), the position it
    was read at, the label generated there, and the probability mass the labels had among the listed
    alternatives."""

    probabilities: dict[str, float]
    position: int
    generated: str
    mass: float


def _fold(text: str, sensitive: bool) -> str:
    return text if sensitive else text.lower()


def _matches(token: str, part: str) -> bool:
    """Whether a (cleaned) token begins the label part ``part``: equals it, is a prefix of it, or starts
    with it followed by a character that is not a letter or digit ("A]]"; never "As" for "A")."""
    if not token or not part:
        return False
    if token == part or part.startswith(token):
        return True
    return token.startswith(part) and not token[len(part)].isalnum()


def verdict_probabilities(
    positions: Sequence[TokenLogprob],
    labels: tuple[str, str],
    tie: str | None = None,
    *,
    lead: str = "",
    case_sensitive: bool = False,
    answer_first: bool = False,
) -> VerdictProbabilities:
    """The verdict distribution at the position where the judge names its verdict.

    ``labels`` and ``tie`` (None: no tie answer) are written as the answer writes them; ``lead`` is the answer
    line's text before the label (empty: a bare label at the start of a line). The position read is one whose
    token begins a label's distinguishing part (after a shared beginning such as "Output (") right after
    ``lead``: the first with ``answer_first``, else the last. ParseError when there is none, or its
    alternatives put nothing on any label.
    """
    sensitive = case_sensitive
    values = {labels[0]: "first", labels[1]: "second", **({tie: "tie"} if tie else {})}
    folded = [_fold(v, sensitive) for v in values]
    shared = os.path.commonprefix(folded)
    parts = {lab[len(shared) :]: verdict for lab, verdict in zip(folded, values.values(), strict=True)}
    needed = _fold(lead + shared, sensitive).rstrip()
    text = ""
    found: list[int] = []
    for i, pos in enumerate(positions):
        before = _fold(text, sensitive).rstrip(" \t")
        at_context = before.endswith(needed) if needed else (before == "" or before.endswith("\n"))
        if at_context and _label_of(pos.token, parts, sensitive) is not None:
            found.append(i)
        text += _token_text(pos.token)
    raw = text
    if not found:
        raise ParseError(
            f"expected a generated token naming one of {list(values)} after {lead + shared!r}; "
            f"got none in {raw[:120]!r}",
            raw=raw,
            expected=f"a verdict label among {list(values)}",
        )
    i = found[0] if answer_first else found[-1]
    pos = positions[i]
    mass = dict.fromkeys(values.values(), 0.0)
    seen: set[str] = set()
    listed = 0.0
    for tok, lp in ((pos.token, pos.logprob), *pos.top):
        if tok in seen:
            continue
        seen.add(tok)
        p = math.exp(lp)
        listed += p
        verdict = _label_of(tok, parts, sensitive)
        if verdict is not None:
            mass[verdict] += p
    total = sum(mass.values())
    if total <= 0:
        raise ParseError(
            f"expected probability on the labels {list(values)} at the verdict position; got none", raw=raw
        )
    generated = _label_of(pos.token, parts, sensitive) or ""
    return VerdictProbabilities(
        {k: v / total for k, v in mass.items()}, i, generated, total / listed if listed else 0.0
    )


def _label_of(token: str, parts: dict[str, str], sensitive: bool) -> str | None:
    """The verdict whose distinguishing label part ``token`` begins (the longest such part), else None."""
    clean = _fold(_token_text(token), sensitive).lstrip(" \t")
    best: tuple[int, str] | None = None
    for part, verdict in parts.items():
        if _matches(clean, part) and (best is None or len(part) > best[0]):
            best = (len(part), verdict)
    if best is None:
        return None
    ambiguous = [v for p, v in parts.items() if _matches(clean, p) and v != best[1] and len(p) == best[0]]
    return None if ambiguous else best[1]
