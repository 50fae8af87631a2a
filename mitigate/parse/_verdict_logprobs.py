"""The probability of each pairwise verdict, read from the token logprobs at the position where the judge
names it.

A pairwise answer names one of the format's labels ("A" / "B", "Output (a)" / "Output (b)",
"[[1]]" / "[[2]]", and a tie label when the format has one). The labels may share a beginning
("Output (") and differ after it ("a)" / "b)"): the verdict is decided at the first token of
that difference. :func:`verdict_probabilities` finds that position in the generated tokens —
the format's answer line up to the value and the labels' shared beginning written just before
it (or the start of a line, for a bare label), and a generated token that begins one label's
distinguishing part — and sums the probability of the top alternatives there per label,
renormalised over the labels. With reasoning before the answer (or none) the last such
position is read; with the answer first, the first.

An alternative token matches a label's distinguishing part when it equals it, is a prefix of
it, or starts with it followed by a character that is not a letter or digit ("A]]"); so "As"
is never read as "A", nor "10" as "1". Tokens are compared after turning the byte-level
markers "Ġ" / "▁" into spaces and stripping leading spaces, and case-insensitively unless the
format's labels differ only by case. Formats answering with relations ("A>>B"), two scores or
JSON are not read here: their caller refuses them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import NamedTuple

from mitigate.errors import ParseError
from mitigate.lm import TokenLogprob


class VerdictProbabilities(NamedTuple):
    """The verdict distribution ({"first", "second"[, "tie"]} -> probability, summing to 1), the position it
    was read at, the label generated there, and the probability mass the labels had among the listed
    alternatives."""

    probabilities: dict[str, float]
    position: int
    generated: str
    mass: float


def _token_text(token: str) -> str:
    return token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n")


def _fold(text: str, sensitive: bool) -> str:
    return text if sensitive else text.lower()


def _matches(token: str, part: str) -> bool:
    """Whether a (cleaned) token begins the label part ``part`` (see the module docstring)."""
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
    """The verdict distribution at the position where the judge names its verdict (see the module docstring).

    ``labels`` name the first and second output as the answer writes them, ``tie`` the tie
    (None: no tie answer); ``lead`` is the answer line's text before the label ("[[",
    "Verdict: "; empty for a bare label); ``answer_first``: the answer comes before any
    reasoning (the first label position is read, else the last). ParseError when no generated
    position names a label after the lead, or when the alternatives there put no probability
    on any label.
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
