"""Where to put provider prompt-cache breakpoints: the invariant prefix of a judge's requests.

Anthropic caches a prefix only up to a ``cache_control`` breakpoint and only when it is long enough
(:func:`anthropic_min_cache_tokens`). :class:`PrefixPlanner` compares each request (segments ``(role, text)``)
with the backend's recent ones, takes their longest common prefix and moves its end back to a boundary every
item shares (a message's end, a blank line); learned prefixes are marked at once in later requests
(``(segment, offset)`` breakpoints, at most ``max_breakpoints``).
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from collections.abc import Sequence

Segment = tuple[str, str]
Breakpoint = tuple[int, int]

_ANTHROPIC_MIN_TOKENS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"opus-4-[56]|haiku-4-5"), 4096),
    (re.compile(r"sonnet-4-6|3-5-haiku|3-haiku|haiku-3"), 2048),
)
DEFAULT_MIN_TOKENS = 1024
"""Anthropic's minimum cacheable prefix for most models (Sonnet 3.5-4.5, Opus 3-4.1)."""


def anthropic_min_cache_tokens(model: str) -> int:
    """The fewest prompt tokens Anthropic caches for ``model`` (1,024 for a name it does not know)."""
    return next(
        (tokens for pattern, tokens in _ANTHROPIC_MIN_TOKENS if pattern.search(model)), DEFAULT_MIN_TOKENS
    )


def common_prefix_length(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (string slices compare in C)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class PrefixPlanner:
    """Learns the invariant prefixes of the requests sent through one backend."""

    def __init__(
        self,
        min_tokens: int = DEFAULT_MIN_TOKENS,
        *,
        chars_per_token: float = 4.0,
        history: int = 8,
        max_breakpoints: int = 3,
        max_prefixes: int = 256,
    ) -> None:
        self.min_tokens = min_tokens
        self.chars_per_token = chars_per_token
        self.max_breakpoints = max(1, max_breakpoints)
        self.max_prefixes = max(1, max_prefixes)
        self._recent: deque[str] = deque(maxlen=max(1, history))
        self._known: OrderedDict[str, None] = OrderedDict()

    @staticmethod
    def _layout(segments: Sequence[Segment]) -> tuple[str, list[tuple[int, int]]]:
        parts: list[str] = []
        spans: list[tuple[int, int]] = []
        pos = 0
        for role, text in segments:
            head = f"\x02{role}\x01"
            parts += (head, text)
            pos += len(head)
            spans.append((pos, pos + len(text)))
            pos += len(text)
        return "".join(parts), spans

    def _snap(self, flat: str, spans: list[tuple[int, int]], end: int) -> int:
        """Move a common-prefix end back to a shared boundary: a segment's end or just after a blank line."""
        best = 0
        for start, stop in spans:
            if end >= stop:
                best = stop
                continue
            if end > start:
                cut = flat.rfind("\n\n", start, end)
                if cut >= 0:
                    best = cut + 2
            break
        return best

    def _learn(self, flat: str, spans: list[tuple[int, int]]) -> None:
        best = max((common_prefix_length(flat, p) for p in self._recent if p is not flat), default=0)
        if best:
            end = self._snap(flat, spans, best)
            if end and end / self.chars_per_token >= self.min_tokens:  # the layout's few markers: negligible
                prefix = flat[:end]
                self._known[prefix] = None
                self._known.move_to_end(prefix)
                while len(self._known) > self.max_prefixes:
                    self._known.popitem(last=False)
        self._recent.append(flat)

    def observe(self, segments: Sequence[Segment]) -> None:
        """Learn from a request without planning it (a batch's first pass over its requests)."""
        self._learn(*self._layout(segments))

    def plan(self, segments: Sequence[Segment], *, learn: bool = True) -> list[Breakpoint]:
        """Breakpoints ``(segment, offset)`` for this request, shortest prefix first (possibly none)."""
        flat, spans = self._layout(segments)
        if learn:
            self._learn(flat, spans)
        ends = sorted({len(p) for p in self._known if flat.startswith(p)})
        if not ends:
            return []
        if len(ends) > self.max_breakpoints:  # keep the shortest (shared by most) and the longest ones
            ends = [ends[0], *ends[len(ends) - self.max_breakpoints + 1 :]]
        for end in ends:
            self._known.move_to_end(flat[:end])
        out: list[Breakpoint] = []
        for end in ends:
            for index, (start, stop) in enumerate(spans):
                if start < end <= stop:
                    out.append((index, end - start))
                    break
        return out


def split_at(text: str, offsets: Sequence[int]) -> list[tuple[str, bool]]:
    """``text`` cut at ``offsets``: pieces and whether each ends at a cut (empty pieces dropped)."""
    pieces: list[tuple[str, bool]] = []
    last = 0
    for offset in sorted(set(offsets)):
        if 0 < offset <= len(text) and offset > last:
            pieces.append((text[last:offset], True))
            last = offset
    if last < len(text):
        pieces.append((text[last:], False))
    return pieces
