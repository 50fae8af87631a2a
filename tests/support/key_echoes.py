"""A battery of servers echoing the client's key, generated: every place a server can put it (an answer, an
error body, a status line, a header ...) crossed with every way it can write it (plainly, JSON-escaped with
``\\/`` or ``\\u``, %-encoded, as HTML references, in base64 at each alignment) and with pads that make it
straddle every snippet cut (80, 120, 160, 300 and 4096 characters) wherever the snippet starts; and
:func:`leaks`, which finds any fragment of 8 or more characters of the key in what came out, decoding those
encodings first."""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tests.support.fault_server import chat_answer, http_reply, message_answer

KEY = "sk-proj-7Hq/Zx+2pL9w/Tm4Kd8=Rb3Nc6/Yf1Vw"
"""A key with the characters JSON, URLs and base64 write otherwise (``/``, ``+``, ``=``)."""
FRAGMENT = 8
"""The shortest piece of the key that counts as a leak."""
CUTS = (80, 120, 160, 300, 4096)
"""Where snippets of server text are cut (characters)."""
MAX_PREFIX = 140
"""The most characters a snippet shows before the server's own text starts (its field names, a quote)."""


def _b64(prefix: str, url: bool = False) -> Callable[[str], str]:
    encode = base64.urlsafe_b64encode if url else base64.b64encode
    return lambda key: encode((prefix + key).encode()).decode()


ENCODINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda k: k,
    "json-slash": lambda k: k.replace("/", "\\/"),
    "u-every": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "u-some": lambda k: "".join(c if c.isalnum() else f"\\u{ord(c):04X}" for c in k),
    "u-as-text": lambda k: "".join(f"\\\\u{ord(c):04x}" for c in k),
    "percent-every": lambda k: "".join(f"%{ord(c):02X}" for c in k),
    "percent-some": lambda k: urllib.parse.quote(k, safe=""),
    "html": lambda k: "".join(f"&#{ord(c)};" for c in k),
    "base64-0": _b64(""),
    "base64-1": _b64("u"),
    "base64-2": _b64("us"),
    "base64url-1": _b64("u", url=True),
}
"""How a server may write the key, as the characters that stand in its answer's bytes (inside a JSON string,
escapes are read by the JSON parser: ``u-every`` arrives as the key, ``u-as-text`` as its escaped text)."""


def _json(value: object, text: str) -> bytes:
    """``value`` as JSON with ``text`` put raw where the string ``@@`` stands."""
    return json.dumps(value).replace("@@", text).encode()


def _openai(text: str, status: str = "200 OK") -> bytes:
    return http_reply(_json(chat_answer("Score: 4 @@"), text), status=status)


def _null_content(text: str) -> bytes:
    answer = chat_answer(None)
    answer["choices"][0]["message"]["refusal"] = "@@"
    return http_reply(_json(answer, text))


def _anthropic(text: str) -> bytes:
    return http_reply(_json(message_answer("Score: 4 @@"), text))


def _bad_usage(openai: bool) -> Callable[[str], bytes]:
    usage = {"prompt_tokens": "@@", "completion_tokens": 1} if openai else {"input_tokens": "@@"}
    answer = chat_answer("Score: 4", usage=usage) if openai else message_answer("Score: 4", usage=usage)
    return lambda text: http_reply(_json(answer, text))


PLACES: dict[str, Callable[[str], bytes]] = {
    "answer": _openai,
    "error-json-400": lambda t: http_reply(
        _json({"error": {"message": "@@", "code": "@@"}}, t), status="400 Bad"
    ),
    "error-text-401": lambda t: http_reply(t.encode(), status="401 No", content_type="text/plain"),
    "error-json-500": lambda t: http_reply(_json({"error": {"message": "@@"}}, t), status="500 Oops"),
    "text-200": lambda t: http_reply(t.encode(), content_type="text/plain"),
    "html-200": lambda t: http_reply(f"<html>{t}</html>".encode(), content_type="text/html"),
    "json-not-an-answer": lambda t: http_reply(_json({"error": "@@"}, t)),
    "content-null": _null_content,
    "usage-a-string": _bad_usage(openai=True),
    "status-line": lambda t: f"HTTP/1.1 {t}\r\nContent-Length: 0\r\n\r\n".encode(),
    "redirect": lambda t: http_reply(b"", status="307 Go", headers=(("Location", f"http://{t}/v1"),)),
    "headers": lambda t: http_reply(
        json.dumps(chat_answer("Score: 4")).encode(),
        headers=(("X-Request-Id", t), ("Retry-After", t), ("x-ratelimit-remaining-requests", t)),
    ),
}
"""Where an OpenAI-compatible server puts the key: a function of the text (pad, written key) to the reply."""
ANTHROPIC_PLACES: dict[str, Callable[[str], bytes]] = {
    **{k: v for k, v in PLACES.items() if k not in ("answer", "content-null", "usage-a-string")},
    "answer": _anthropic,
    "usage-a-string": _bad_usage(openai=False),
}
"""The same for the Messages API."""


@dataclass(frozen=True)
class Echo:
    """One case: where the key is put, how it is written, and how much pad comes before it."""

    place: str
    encoding: str
    pad: int

    def text(self) -> str:
        """The pad and the written key (the pad is dots: nothing of the key)."""
        return "." * self.pad + ENCODINGS[self.encoding](KEY) + " end"

    def reply(self, anthropic: bool = False) -> bytes:
        return (ANTHROPIC_PLACES if anthropic else PLACES)[self.place](self.text())


def pads(written: int, thin: int = 1) -> list[int]:
    """Pads that put a written key of ``written`` characters across every cut wherever a snippet starts (up
    to :data:`MAX_PREFIX` characters before the pad): steps of a third of its length; every ``thin``-th."""
    step = max(1, written // 3)
    found = {p for cut in CUTS for p in range(max(0, cut - MAX_PREFIX - written), cut + 1, step)}
    return sorted(found)[::thin]


def echoes(places: dict[str, Callable[[str], bytes]] = PLACES, thin: int = 1) -> Iterator[Echo]:
    """Every place crossed with every encoding and its straddling pads (``thin``: every thin-th pad)."""
    for place in places:
        for encoding, encode in ENCODINGS.items():
            for pad in pads(len(encode(KEY)), thin):
                yield Echo(place, encoding, pad)


_ESCAPES = re.compile(r"\\+u([0-9a-fA-F]{4})|\\+x([0-9a-fA-F]{2})|\\+(/)")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}")


def _decodings(text: str) -> Iterator[str]:
    """``text`` and what it reads as after JSON, ``%`` and HTML escapes are undone (a few rounds), and the
    base64 runs in it decoded at each alignment."""
    seen = text
    yield seen
    for _ in range(3):
        seen = _ESCAPES.sub(lambda m: chr(int(m[1] or m[2], 16)) if (m[1] or m[2]) else "/", seen)
        seen = html.unescape(urllib.parse.unquote(seen))
        yield seen
    for run in _BASE64_RUN.findall(text):
        run = run.replace("-", "+").replace("_", "/")
        for start in range(4):
            chunk = run[start:]
            chunk = chunk[: len(chunk) // 4 * 4]
            try:
                yield base64.b64decode(chunk).decode("latin-1")
            except (binascii.Error, ValueError):
                continue


def leaks(data: str | bytes, key: str = KEY) -> list[str]:
    """Every fragment of ``key`` of :data:`FRAGMENT` or more characters in ``data``, however written."""
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    windows = {key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)}
    found: set[str] = set()
    for seen in _decodings(text):
        found.update(w for w in windows if w in seen)
    return sorted(found)
