"""Replay recorded LM answers from a JSONL file (spec ``replay:<path>``), and record them.

Each line is **recorded** (what :class:`ReplayRecorder` writes), an exact replay of one request::

    {"key": "<LMRequest.key()>", "request": {...}, "response": {...LMResponse...}}

or **hand-written**, keyed by the prompt alone (a user message's text or a list of messages)::

    {"item_id": "M11-3", "prompt": "<text>", "response": "Score: 4"}
    {"prompt": [{"role": "user", "content": "..."}], "response": ["Score: 4", "Score: 5"]}

A request is looked up by key, then by prompt; a malformed line raises
:class:`~mitigate.errors.ReplayFormatError` naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mitigate.errors import CapabilityError, ConfigError, LMCallError, ReplayFormatError
from mitigate.lm._base import LM, Choice, LMRequest, LMResponse, Message, Usage, WrapperLM
from mitigate.paths import loads_json, open_regular, path_kind, read_lines


def prompt_key(messages: tuple[Message, ...] | list[Message]) -> str:
    """The digest of a message list alone (the key of hand-written replay lines)."""
    blob = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ReplayLM(LM):
    """Answers requests from a replay file, read and checked whole when it is built."""

    provider = "replay"
    supports_logprobs = True
    supports_n = True
    supports_stop = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.model = str(path)
        if not self.path.is_file():
            raise ReplayFormatError(
                f"expected a replay file (JSONL) at {self.path}; no such file", path=str(self.path)
            )
        self._by_key: dict[str, tuple[LMResponse, int]] = {}
        self._by_prompt: dict[str, tuple[tuple[str, ...], int, str | None]] = {}
        self._load()

    def _bad(self, line: int, what: str) -> ReplayFormatError:
        return ReplayFormatError(f"{self.path}:{line}: {what}", path=str(self.path), line=line)

    def _parse_prompt(self, value: Any, line: int) -> tuple[Message, ...]:
        if isinstance(value, str):
            return (Message(role="user", content=value),)
        if isinstance(value, list) and value:
            try:
                return tuple(Message.model_validate(m) for m in value)
            except ValidationError as exc:
                raise self._bad(
                    line,
                    'expected "prompt" to be a string or a list of {"role", "content"} messages; '
                    f"got an invalid message ({exc.errors()[0]['msg']})",
                ) from exc
        raise self._bad(
            line,
            f'expected "prompt" to be a string or a non-empty list of messages; got {type(value).__name__}',
        )

    def _parse_samples(self, value: Any, line: int) -> tuple[str, ...]:
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise self._bad(
            line,
            'expected "response" of a prompt line to be a string or a non-empty list of strings; got '
            f"{value!r:.60}",
        )

    def __repr__(self) -> str:
        return f"ReplayLM({str(self.path)!r}, answers={len(self)})"

    def __len__(self) -> int:
        return len(self._by_key) + len(self._by_prompt)

    def _load(self) -> None:
        with open_regular(self.path, "rb", "the replay file") as fh:  # a FIFO or a device is refused unread
            lines = read_lines(fh, f"the replay file {self.path}", path=self.path)
            for number, raw_bytes in enumerate(lines, 1):
                try:
                    raw = raw_bytes.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise self._bad(
                        number, f"expected UTF-8 text; got a byte that is not UTF-8 at column {exc.start + 1}"
                    ) from None
                if not raw.strip():
                    continue
                try:
                    obj = loads_json(raw)
                except json.JSONDecodeError as exc:
                    raise self._bad(number, f"expected a JSON object; got invalid JSON ({exc.msg})") from exc
                if not isinstance(obj, dict):
                    raise self._bad(number, f"expected a JSON object; got {type(obj).__name__}")
                if "response" not in obj:
                    raise self._bad(number, 'expected a "response" field; the line has none')
                if "key" in obj and "prompt" not in obj:
                    self._add_recorded(obj, number)
                elif "prompt" in obj and "key" not in obj:
                    self._add_prompt(obj, number)
                else:
                    raise self._bad(
                        number,
                        'expected exactly one of "key" (recorded line) or "prompt" (hand-written line); '
                        f"got fields {sorted(obj)}",
                    )

    def _add_recorded(self, obj: dict[str, Any], number: int) -> None:
        key = obj["key"]
        if not isinstance(key, str) or not key:
            raise self._bad(number, f'expected "key" to be a non-empty string; got {key!r:.60}')
        try:
            response = LMResponse.model_validate(obj["response"])
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise self._bad(
                number, f'expected "response" to be an LMResponse object; {where or "value"}: {err["msg"]}'
            ) from exc
        if not response.choices:
            raise self._bad(number, 'expected "response" to hold at least one choice; got none')
        previous = self._by_key.get(key)
        if previous is not None and previous[0] != response:
            raise self._bad(
                number, f"key {key} was already recorded with a different answer on line {previous[1]}"
            )
        self._by_key[key] = (response, number)

    def _add_prompt(self, obj: dict[str, Any], number: int) -> None:
        messages = self._parse_prompt(obj["prompt"], number)
        samples = self._parse_samples(obj["response"], number)
        item_id = obj.get("item_id")
        key = prompt_key(messages)
        previous = self._by_prompt.get(key)
        if previous is not None and previous[0] != samples:
            raise self._bad(
                number,
                f"this prompt (item_id={item_id!r}) was already given a different answer on line "
                f"{previous[1]}",
            )
        self._by_prompt[key] = (samples, number, None if item_id is None else str(item_id))

    async def complete(self, request: LMRequest) -> LMResponse:
        """The recorded answer for ``request``; LMCallError when there is none."""
        self.check(request)
        key = request.key()
        found = self._by_key.get(key)
        if found is not None:
            response = found[0]
            if request.wants_logprobs() and any(c.logprobs is None for c in response.choices):
                raise CapabilityError(
                    f"{self.path}:{found[1]}: the request asks for token logprobs but the recorded answer "
                    "has none; record it again with logprobs requested",
                    backend=self.spec,
                )
            return response
        pkey = prompt_key(request.messages)
        by_prompt = self._by_prompt.get(pkey)
        if by_prompt is None:
            last = request.messages[-1].content.replace("\n", " ")
            raise LMCallError(
                f"no recorded answer in {self.path} for request key {key} (prompt key {pkey}); expected a "
                f'line with "key": "{key}" or a "prompt" equal to the request messages. Last message: '
                f"{last[:80]!r}",
                key=key,
                prompt_key=pkey,
                path=str(self.path),
            )
        samples, number, item_id = by_prompt
        if request.wants_logprobs():
            raise CapabilityError(
                f"{self.path}:{number}: hand-written replay lines hold text only; the request asks for token "
                "logprobs",
                backend=self.spec,
            )
        if request.n > len(samples):
            raise LMCallError(
                f"{self.path}:{number} (item_id={item_id!r}) holds {len(samples)} recorded answers; the "
                f"request asked for n={request.n}",
                key=key,
                path=str(self.path),
            )
        return LMResponse(
            choices=tuple(Choice(text=s, finish_reason="stop") for s in samples[: request.n]),
            usage=Usage(),
            model=self.model,
            cost_usd=0.0,
        )


class ReplayRecorder(WrapperLM):
    """Wraps a backend and appends each new answer to a replay file, returning it unchanged."""

    def __init__(self, inner: LM, path: str | Path) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self.recorded = 0
        kind = path_kind(self.path)
        if kind not in (None, "a regular file"):  # refused before the first answer, not at its write
            raise ConfigError(
                f"expected the replay file {self.path} to be a regular file; it is {kind}",
                path=str(self.path),
            )
        if kind is not None:
            self._seen = set(ReplayLM(self.path)._by_key)

    def __repr__(self) -> str:
        return f"ReplayRecorder({self.inner!r}, {str(self.path)!r})"

    async def complete(self, request: LMRequest) -> LMResponse:
        response = await self.inner.complete(request)
        self._write(request, response)
        return response

    def _write(self, request: LMRequest, response: LMResponse) -> None:
        key = request.key()
        line = {
            "key": key,
            "request": request.model_dump(mode="json"),
            "response": response.model_copy(update={"cached": False}).model_dump(mode="json"),
        }
        text = json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            if key in self._seen:
                return
            with open_regular(self.path, "a", "the replay file") as fh:
                fh.write(text)
            self._seen.add(key)
            self.recorded += 1
