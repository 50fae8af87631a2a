"""Reading one score per criterion from a multi-criterion answer ("Coherence: 4\nFluency: 3")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mitigate.errors import ParseError
from mitigate.parse._common import fail as _fail
from mitigate.parse._common import format_number as _fmt
from mitigate.parse._common import normalise_answer as _normalise
from mitigate.parse._common import refuse
from mitigate.parse._quoted import unquote
from mitigate.parse._score import NUM_RE, read_score
from mitigate.scale import Scale


def _segment(work: str, start: int, any_name: str) -> str:
    """The value after a criterion label: to the end of the line or the next criterion name."""
    line_end = work.find("\n", start)
    segment = work[start : len(work) if line_end < 0 else line_end]
    nxt = re.search(rf"(?<!\w)(?:{any_name})(?!\w)", segment, re.I)
    if nxt is not None and nxt.start() > 0:
        segment = segment[: nxt.start()]
    return segment


def parse_criteria(
    text: str, names: Sequence[str], scale: Scale, *, quoted: Sequence[str] = (), judged: Sequence[str] = ()
) -> dict[str, float | ParseError]:
    """Read one score per criterion from a multi-criterion answer ("Coherence: 4\\nFluency: 3").

    Each name is matched case-insensitively where it labels a value ("- Fluency score: 3/5", "**Relevance** -
    2"); the last labelled occurrence counts, its value running to the end of the line or the next criterion
    name. A missing or malformed entry maps to its :class:`ParseError` (recorded, not raised). What is not the
    judge's own statement is not read (:func:`~mitigate.parse._quoted.unquote`, ``quoted`` and ``judged`` as
    there).
    """
    if not names:
        return {}
    wide = Scale(min=-1e6, max=1e6, step=0.001)
    own_words = {w.lower() for n in names for w in re.findall(r"[A-Za-z]+", n)} | {
        "score",
        "rating",
        "out",
        "of",
    }

    def states(span: str) -> bool:
        return any(not isinstance(v, ParseError) for v in _criteria(span, names, wide).values())

    def bare(span: str) -> bool:
        return all(
            w.lower() in own_words or w[0].isdigit()
            for w in re.findall(r"[A-Za-z]+|\d+(?:\.\d+)?", _normalise(span))
        )

    own, strict = unquote(text, statement=states, bare=bare, sources=quoted, judged=judged)
    out = _criteria(own, names, scale, raw=text)
    if strict != own:
        for name, value in _criteria(strict, names, scale, raw=text).items():
            mine = out[name]
            if not isinstance(value, ParseError) and not isinstance(mine, ParseError) and value != mine:
                out[name] = refuse(
                    f"one value for {name!r} on {scale.describe()}",
                    f"{_fmt(value)} and also {_fmt(mine)}, which the judged text holds as written: no way to "
                    "tell which is the judge's own",
                    text,
                    criterion=name,
                )
    return out


def _criteria(
    text: str, names: Sequence[str], scale: Scale, *, raw: str | None = None
) -> dict[str, float | ParseError]:
    """:func:`parse_criteria` on ``text`` as it is (errors carry ``raw``, default ``text``)."""
    raw = text if raw is None else raw
    work = re.sub(r"[*`#]+", "", text)
    any_name = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    out: dict[str, float | ParseError] = {}
    for name in names:
        expected = f"a line '{name}: <score from {scale.describe()}>'"
        label = re.compile(
            rf"(?<!\w){re.escape(name)}(?!\w)\s*(?:score|rating)?\s*(?:\([^)\n]*\))?\s*(?:[:=]|-(?!\d)|\s(?=\s*\d))\s*",
            re.I,
        )
        hits = list(label.finditer(work))
        if not hits:
            out[name] = _fail(f"no '{name}:' entry", raw, expected, criterion=name)
            continue
        segments = [_segment(work, hit.end(), any_name) for hit in hits]
        # The last labelled entry that holds a number; prose such as "Coherence - the
        # summary ..." in an explanation after the scores is not an entry.
        numeric = [seg for seg in segments if NUM_RE.search(_normalise(seg))]
        segment = numeric[-1] if numeric else segments[-1]
        try:
            out[name] = read_score(segment.strip(), scale, raw=raw, cued=True, criterion=name)
        except ParseError as exc:
            out[name] = exc
    return out
