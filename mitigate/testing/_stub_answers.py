"""What the stub server answers with: tokens and synthetic logprobs, word counts, stop sequences, tool calls.

Token logprobs are synthetic but deterministic: the reply is split into tokens (each digit
its own token, runs of letters, single punctuation marks, runs of whitespace); the chosen
token gets probability 0.7 and the alternatives share the rest (neighbouring digits for a
digit token, so a score's top-k alternatives are other scores). Words (whitespace-separated)
are the stub's tokens for usage, caching and rate limits.
"""

from __future__ import annotations

import math
import re
from typing import Any

_TOKEN_RE = re.compile(r"\d|[^\W\d_]+|\s+|[^\w\s]|_")
_CHOSEN_P = 0.7
_ALT_PS = (0.15, 0.08, 0.04, 0.02, 0.005, 0.003, 0.001, 0.0005, 0.0003, 0.0001)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the stub's tokens (digits one by one, words, punctuation, whitespace runs)."""
    return _TOKEN_RE.findall(text)


def _alternatives(token: str) -> list[str]:
    """Deterministic alternative tokens for ``token``: neighbouring digits for a digit, variants otherwise."""
    if token.isdigit() and len(token) == 1:
        d = int(token)
        order = [d + 1, d - 1, d + 2, d - 2, d + 3, d - 3, d + 4, d - 4, d + 5, d - 5]
        return [str(x) for x in order if 0 <= x <= 9]
    return [f"{token}~{i}" for i in range(1, len(_ALT_PS) + 1)]


def synthetic_logprobs(text: str, top_k: int) -> list[dict[str, Any]]:
    """The OpenAI ``logprobs.content`` list the stub returns for ``text`` with ``top_k`` alternatives."""
    content: list[dict[str, Any]] = []
    for token in tokenize(text):
        chosen = math.log(_CHOSEN_P)
        top = [{"token": token, "logprob": chosen, "bytes": list(token.encode())}]
        for alt, p in zip(_alternatives(token), _ALT_PS, strict=False):
            if len(top) >= top_k:
                break
            top.append({"token": alt, "logprob": math.log(p), "bytes": list(alt.encode())})
        content.append(
            {"token": token, "logprob": chosen, "bytes": list(token.encode()), "top_logprobs": top[:top_k]}
        )
    return content


def count_words(value: Any) -> int:
    """A rough token count of any JSON value's text (whitespace-separated words)."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(count_words(v) for v in value)
    if isinstance(value, dict):
        return sum(count_words(v) for k, v in value.items() if k in ("content", "text", "system"))
    return 0


def words(value: Any) -> list[str]:
    """The stub's tokens of a JSON value's text, in order (what :func:`count_words` counts)."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [w for v in value for w in words(v)]
    if isinstance(value, dict):
        return [w for k, v in value.items() if k in ("content", "text", "system") for w in words(v)]
    return []


def apply_stop(text: str, stop: Any) -> tuple[str, bool]:
    """Cut ``text`` at the first stop sequence; return the text and whether a stop matched."""
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    cut = len(text)
    for s in stops:
        if s:
            i = text.find(s)
            if 0 <= i < cut:
                cut = i
    return text[:cut], cut < len(text)


def forced_function(body: dict[str, Any]) -> str | None:
    """The function name a chat request forces with ``tool_choice`` (or its only tool when ``"required"``);
    else None."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        return name if isinstance(name, str) else None
    tools = body.get("tools")
    if choice == "required" and isinstance(tools, list) and len(tools) == 1 and isinstance(tools[0], dict):
        name = (tools[0].get("function") or {}).get("name")
        return name if isinstance(name, str) else None
    return None
