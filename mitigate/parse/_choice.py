"""Reading an option letter from a multiple-choice answer ("Answer: B", "(C)", "I choose E") as its score."""

from __future__ import annotations

import re

from mitigate.errors import ParseError, ScaleError
from mitigate.parse._common import fail as _fail
from mitigate.parse._common import with_raw
from mitigate.scale import Scale

_MCQ_CUE = (
    r"(?:final\s+)?(?:answer|option|choice|verdict|grade|rating|selection)s?\s*(?:is|would\s+be|:|=|-)?"
    r"|(?:i\s+(?:would\s+)?)?(?:choose|chose|select|selected|pick|picked|go\s+with)"
)


def parse_mcq(text: str, scale: Scale, *, raw: str | None = None) -> float:
    """Map a multiple-choice answer ("Answer: B", "B.", "(C)", "Option D", "I choose E") to its score.

    ``scale.letters`` gives the map (SummEval MCQ: A→1 … E→5). Letters are read after an
    answer cue or at the very start of the response; the last cued letter wins. Without a
    cue, parenthesised letters "(C)" are used when they all agree. Raises :class:`ParseError`
    when no letter from the map is found, when the answer names two letters ("B or C"), or
    when parenthesised letters disagree; :class:`ScaleError` when the scale has no letters.
    ``raw`` (default ``text``) is the full response kept on the error.
    """
    if raw is not None and raw != text:
        try:
            return parse_mcq(text, scale)
        except ParseError as exc:
            raise with_raw(exc, raw) from None
    if not scale.letters:
        raise ScaleError(f"parse_mcq needs a Scale with a letter map; got letters={scale.letters!r}")
    letters = {k.upper(): v for k, v in scale.letters.items()}
    expected = f"one option letter of {'/'.join(letters)} (e.g. 'Answer: {next(iter(letters))}')"
    work = re.sub(r"[*`]+", "", text)
    cls = "".join(letters)
    other = rf"(?:\s*(?:or|and|/|,)\s*\(?([{cls}])\)?\b)?"
    picks: list[tuple[int, str, str | None]] = []
    lead = re.match(rf"\s*[(\[]?\s*([{cls}])(?:\s*[)\]]|[.:]|\s*$|\s*\n)(?!g\.)", work)
    if lead is not None:
        alt = re.match(rf"\s*(?:or|and|/|,)\s*[(\[]?\s*([{cls}])\b", work[lead.end() :])
        picks.append((lead.start(1), lead.group(1), alt.group(1) if alt else None))
    for m in re.finditer(rf"\b(?:{_MCQ_CUE})\s*[(\[]?\s*([{cls}{cls.lower()}])\b\)?{other}", work, re.I):
        letter = m.group(1)
        if letter.islower() and not re.search(r"[:=]\s*[(\[]?\s*[a-z]\b", m.group(0)):
            continue  # "I choose a summary" is not an answer; "answer: b" is
        second = m.group(2).upper() if m.group(2) else None
        picks.append((m.start(1), letter.upper(), second))
    if picks:
        _, letter, second = max(picks, key=lambda p: p[0])
        if second is not None and second != letter:
            raise _fail(f"two letters ({letter} and {second})", text, expected)
        return float(letters[letter])
    paren = {m.group(1) for m in re.finditer(rf"[(\[]\s*([{cls}])\s*[)\]]", work)}
    if len(paren) == 1:
        return float(letters[paren.pop()])
    if len(paren) > 1:
        raise _fail(f"several letters ({', '.join(sorted(paren))})", text, expected)
    stray = re.search(r"(?i:answer|option|choice)\s*(?i:is|:|=)?\s*\(?([A-Z])\b(?!['\w])", work)
    if stray is not None:
        raise _fail(f"letter {stray.group(1).upper()!r}, which is not in the map", text, expected)
    raise _fail("no option letter", text, expected)
