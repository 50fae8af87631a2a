"""Words a judge's answer gives as someone else's: the clauses after a third party's verb of saying
(:func:`reported_spans`; "I said" reports nothing) and what it marks as a quotation (:func:`marked_spans`).
Neither needs the texts it was shown."""

from __future__ import annotations

import re
import string

Span = tuple[int, int]

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_TICKS = re.compile(r"`[^`\n]+`")
_QUOTES = re.compile(r"\"[^\"\n]+\"|“[^”\n]+”|‘[^’\n]+’|(?<![\w])'[^'\n]+'(?![\w])")
_BLOCKQUOTE = re.compile(r"(?m)^[ \t]*>.*$")


def marked_spans(text: str) -> list[Span]:
    """Spans ``text`` marks as quotations: a code block, backticks, quotation marks, a blockquote line."""
    spans: list[Span] = []
    for pattern, needs in ((_FENCE, "`"), (_TICKS, "`"), (_QUOTES, "\"“‘'"), (_BLOCKQUOTE, ">")):
        if any(ch in text for ch in needs):  # each pattern needs one of these characters
            spans.extend((m.start(), m.end()) for m in pattern.finditer(text))
    return spans


# A verb of saying whose clause reports someone else's words ("the text claims", "Summary A wrote"). Forms
# that are also participles ("the groups mentioned", "as stated") count only before "that", ":" or a quote.
_QUOTE_NEXT = r"(?=[ \t]*(?:that\b|[:\"“'‘`]))"
_SAYS = "says states claims writes wrote argues asserts insists declares quotes".split()
_SAYS_BEFORE_QUOTE = "reads goes ends finishes closes begins starts opens mentions contains includes".split()
_SAID_BEFORE_QUOTE = (
    "said stated claimed argued asserted insisted declared quoted mentioned written contained included"
).split()
_ENDS_WITH = (
    "ends ended concludes concluded closes closed finishes finished opens opened begins began starts started"
).split()
_REPORT_PATTERN = (
    rf"\b(?:{'|'.join(_SAYS)}|(?:{'|'.join(_SAYS_BEFORE_QUOTE)}){_QUOTE_NEXT}"
    rf"|(?:{'|'.join(_SAID_BEFORE_QUOTE)}){_QUOTE_NEXT}|(?:{'|'.join(_ENDS_WITH)})\s+(?:with|by))\b"
)
_REPORT = re.compile(_REPORT_PATTERN, re.IGNORECASE)
# The same verbs searched faster: in the text with every character that re.IGNORECASE equates with an ASCII
# letter written as that letter (A-Z, and U+0130, U+0131, U+017F, U+212A), case-sensitively, after a check
# that one of the verbs occurs at all. Same length, so the same spans.
_FOLD = str.maketrans(string.ascii_uppercase + "\u0130\u0131\u017f\u212a", string.ascii_lowercase + "iisk")
_REPORT_FOLDED = re.compile(_REPORT_PATTERN)
_ANY_VERB = re.compile(
    "|".join(sorted({*_SAYS, *_SAYS_BEFORE_QUOTE, *_SAID_BEFORE_QUOTE, *_ENDS_WITH}, key=len, reverse=True))
)


def _verbs(text: str) -> list[re.Match[str]]:
    """The matches of :data:`_REPORT` in ``text`` (spans as in ``text``)."""
    folded = text.lower() if text.isascii() else text.translate(_FOLD)  # the same on ASCII text, faster
    if _ANY_VERB.search(folded) is None:
        return []
    return list(_REPORT_FOLDED.finditer(folded))


# The judge speaking of itself ("as I said", "we stated"): its own words, not reported.
_OWN_SUBJECT = re.compile(r"\b(?:I|we|me|my|our|I've|I'd|I'll|I'm|we've|we'd)\b", re.IGNORECASE)
# Where the subject of a verb begins: the last clause boundary before it.
_SUBJECT_START = re.compile(
    r"(?:[.!?;:,\n]|\bthat\b|\band\b|\bbut\b|\bwhile\b|\bbecause\b|\bso\b)", re.IGNORECASE
)
# Where a reported clause ends.
_CLAUSE_END = re.compile(r"[.!?](?=[\s\"'”’)]|$)|[;,]|\n|\s(?:but|however|whereas|while|so)\b", re.IGNORECASE)
_LETTER = re.compile(r"[A-Za-z]")
_LEAD = re.compile(r"[ \t]*(?:that\b)?[ \t]*:?[ \t]*")
_PARAGRAPH = re.compile(r"\n*[^\n]*(?:\n(?![ \t]*(?:\n|$))[^\n]*)*")
_OPEN = {'"': '"', "“": "”", "'": "'", "‘": "’", "`": "`"}


def reported_spans(text: str) -> list[Span]:
    """The clauses ``text`` reports from a third party: after "<someone> says/claims/wrote/argues ..." (and
    an optional "that" or colon) to the closing quotation mark, the next paragraph when the verb ends its
    line, or the end of the clause. A verb whose subject is the judge ("as I said") reports nothing."""
    spans: list[Span] = []
    for verb in _verbs(text):
        starts = [m.end() for m in _SUBJECT_START.finditer(text, max(0, verb.start() - 200), verb.start())]
        subject = text[starts[-1] if starts else max(0, verb.start() - 200) : verb.start()]
        if _OWN_SUBJECT.search(subject) or not _LETTER.search(subject):
            continue  # the judge's own words, or no subject at all ("Reads well.")
        lead = _LEAD.match(text, verb.end())
        begin = lead.end() if lead else verb.end()
        if begin < len(text) and text[begin] in ",.;)!?":
            continue  # nothing reported ("the groups mentioned, Output (a) is better")
        if begin < len(text) and text[begin] in _OPEN:
            close = text.find(_OPEN[text[begin]], begin + 1)
            line_end = text.find("\n", begin)
            if close > 0 and (line_end < 0 or close < line_end):
                spans.append((begin, close + 1))
                continue
        if begin >= len(text) or text[begin] == "\n":
            # a lead-in line ("The summary ends with:"): the reported text is the next paragraph
            body = _PARAGRAPH.match(text, begin)
            if body is not None:
                spans.append((begin, body.end()))
            continue
        end = _CLAUSE_END.search(text, begin)
        spans.append((begin, end.start() if end else len(text)))
    return spans
