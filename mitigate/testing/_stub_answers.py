"""What the stub server answers: the chat.completion and message bodies, their usage and the emulated prompt
caches, tokens and synthetic logprobs, stop sequences, forced function calls.

Token logprobs are synthetic but deterministic: the reply is split into tokens (each digit its own token, runs
of letters, single punctuation marks, runs of whitespace); the chosen token gets probability 0.7 and the
alternatives share the rest (neighbouring digits for a digit token, so a score's top-k alternatives are other
scores). Words (whitespace-separated) are the stub's tokens for usage, caching and rate limits.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable
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

    def entry(token: str, p: float) -> dict[str, Any]:
        return {"token": token, "logprob": math.log(p), "bytes": list(token.encode())}

    content: list[dict[str, Any]] = []
    for token in tokenize(text):
        top = [(token, _CHOSEN_P), *zip(_alternatives(token), _ALT_PS, strict=False)][:top_k]
        content.append({**entry(token, _CHOSEN_P), "top_logprobs": [entry(t, p) for t, p in top]})
    return content


def words(value: Any) -> list[str]:
    """The stub's tokens of a JSON value's text (its ``content``, ``text`` and ``system``), in order."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [w for v in value for w in words(v)]
    if isinstance(value, dict):
        return [w for k, v in value.items() if k in ("content", "text", "system") for w in words(v)]
    return []


def count_words(value: Any) -> int:
    """A rough token count of any JSON value's text: its :func:`words`."""
    return len(words(value))


def apply_stop(text: str, stop: Any) -> tuple[str, bool]:
    """Cut ``text`` at the first stop sequence; return the text and whether a stop matched."""
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    cut = min([i for s in stops if s and (i := text.find(s)) >= 0] + [len(text)])
    return text[:cut], cut < len(text)


def forced_function(body: dict[str, Any]) -> str | None:
    """The function name a chat request forces with ``tool_choice`` (or its only tool when ``"required"``)."""
    choice, tools = body.get("tool_choice"), body.get("tools")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
    elif choice == "required" and isinstance(tools, list) and len(tools) == 1 and isinstance(tools[0], dict):
        name = (tools[0].get("function") or {}).get("name")
    else:
        return None
    return name if isinstance(name, str) else None


def _cache_blocks(body: dict[str, Any]) -> list[tuple[list[str], bool]]:
    """An Anthropic request's content blocks in cache order (system, then messages): (tokens, breakpoint)."""
    blocks: list[tuple[list[str], bool]] = []
    contents = [body.get("system", "")]
    contents += [m.get("content", "") for m in body.get("messages") or [] if isinstance(m, dict)]
    for content in contents:
        if isinstance(content, str):
            blocks.append((content.split(), False))
        elif isinstance(content, list):
            blocks += [
                (words(b.get("text", "")), isinstance(b.get("cache_control"), dict))
                for b in content
                if isinstance(b, dict)
            ]
    return blocks


def _cut(text: str, max_tokens: Any) -> tuple[str, int, bool]:
    """``text`` cut to ``max_tokens`` tokens (None: no cap): the text, its token count, whether it was cut."""
    tokens = tokenize(text)
    if max_tokens is None or len(tokens) <= int(max_tokens):
        return text, len(tokens), False
    kept = tokens[: int(max_tokens)]
    return "".join(kept), len(kept), True


class StubAnswers:
    """How :class:`~mitigate.testing._stub_server.StubOpenAIServer` answers a chat or messages request: its
    settings, read at each request (a test may change ``reply`` between calls), and its prompt caches."""

    reply: str | Callable[[dict[str, Any]], str]
    logprobs: bool
    cached_tokens: int
    cache_write_tokens: int
    model: str
    honour_n: bool
    prompt_cache: bool
    openai_cache_min_tokens: int
    openai_cache_step: int
    anthropic_cache_min_tokens: int
    cache_ttl: float
    _cache: dict[str, float]

    def _text(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def _cache_lookup(self, key: str, now: float) -> bool:
        """Whether ``key`` is a live cache entry (refreshing it); call from the server thread."""
        seen = self._cache.get(key)
        if seen is None or now - seen > self.cache_ttl:
            return False
        self._cache[key] = now
        return True

    def _openai_cached(self, body: dict[str, Any], prompt_tokens: int) -> int:
        """Prompt tokens served from the emulated OpenAI prefix cache (remembering this prompt's prefixes)."""
        if self.cached_tokens:
            return min(self.cached_tokens, prompt_tokens)
        if not self.prompt_cache or prompt_tokens < self.openai_cache_min_tokens:
            return 0
        prompt_words = words(body.get("messages", []))
        digest = hashlib.sha256(str(body.get("model")).encode())
        now = time.monotonic()
        cached, done = 0, 0
        for bound in range(self.openai_cache_min_tokens, len(prompt_words) + 1, self.openai_cache_step):
            digest.update(("\x1f".join(prompt_words[done:bound]) + "\x1f").encode())
            done = bound
            key = "o:" + digest.copy().hexdigest()
            if self._cache_lookup(key, now):
                cached = bound
            else:
                self._cache[key] = now
        return cached

    def _anthropic_cached(self, body: dict[str, Any], prompt_tokens: int) -> tuple[int, int]:
        """(cache reads, cache writes) of an Anthropic request under the emulated prompt cache."""
        if self.cached_tokens or self.cache_write_tokens:
            read = min(self.cached_tokens, prompt_tokens)
            return read, min(self.cache_write_tokens, prompt_tokens - read)
        if not self.prompt_cache:
            return 0, 0
        digest = hashlib.sha256(str(body.get("model")).encode())
        now = time.monotonic()
        total = 0
        marks: list[tuple[int, str]] = []
        for tokens, breakpoint in _cache_blocks(body):
            digest.update(("\x1f".join(tokens) + "\x1e").encode())
            total += len(tokens)
            if breakpoint and total >= self.anthropic_cache_min_tokens:
                marks.append((total, "a:" + digest.copy().hexdigest()))
        if not marks:
            return 0, 0
        read = next((n for n, key in reversed(marks) if self._cache_lookup(key, now)), 0)
        for _, key in marks:
            self._cache.setdefault(key, now)
        return read, marks[-1][0] - read

    def _chat(self, body: dict[str, Any], number: int) -> dict[str, Any]:
        """The chat.completion answering ``body`` (``number``: the request's, in its id)."""
        n = int(body.get("n") or 1) if self.honour_n else 1
        want_lp = bool(body.get("logprobs")) and self.logprobs
        top_k = int(body.get("top_logprobs") or 0)
        forced = forced_function(body)
        choices = []
        completion_tokens = 0
        for index in range(n):
            text, _ = apply_stop(self._text(body), body.get("stop"))
            text, used, cut = _cut(text, body.get("max_tokens") or body.get("max_completion_tokens"))
            completion_tokens += used
            message: dict[str, Any] = {"role": "assistant", "content": text}
            finish = "length" if cut else "stop"
            if forced is not None:  # a request that forces a tool call gets one, its arguments the reply text
                function = {"name": forced, "arguments": text}
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": f"call_{index}", "type": "function", "function": function}],
                }
                finish = "tool_calls"
            logprobs = {"content": synthetic_logprobs(text, top_k)} if want_lp else None
            choices.append(
                {"index": index, "message": message, "finish_reason": finish, "logprobs": logprobs}
            )
        prompt_tokens = count_words(body.get("messages", []))
        return {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": self._openai_cached(body, prompt_tokens)},
            },
        }

    def _messages(self, body: dict[str, Any], number: int) -> dict[str, Any]:
        """The Anthropic message answering ``body`` (``number``: the request's, in its id)."""
        text, stopped = apply_stop(self._text(body), body.get("stop_sequences"))
        text, used, cut = _cut(text, body.get("max_tokens"))
        prompt_tokens = count_words(body.get("messages", [])) + count_words(body.get("system", ""))
        cached, written = self._anthropic_cached(body, prompt_tokens)
        return {
            "id": f"msg_stub_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or self.model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "max_tokens" if cut else "stop_sequence" if stopped else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt_tokens - cached - written,
                "output_tokens": used,
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": written,
            },
        }
