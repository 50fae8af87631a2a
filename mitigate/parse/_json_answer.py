"""Reading an answer written as a JSON object: the value under a key, in free text or as the whole reply."""

from __future__ import annotations

import json
import re
from typing import Any

from mitigate.errors import ParseError

_OPEN = re.compile(r"\{")


def json_value(text: str, key: str) -> Any:
    """The value under ``key`` in the last JSON object of ``text`` that has it (code fences allowed); None if
    none."""
    found = None
    for m in _OPEN.finditer(text):
        depth = 0
        for j in range(m.start(), len(text)):
            ch = text[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = json.loads(text[m.start() : j + 1])
                    except json.JSONDecodeError:
                        break
                    if isinstance(obj, dict) and key in obj:
                        found = obj[key]
                    break
    return found


def json_object(text: str, expected: str) -> dict[str, Any]:
    """``text`` (the whole reply) as a JSON object; a :class:`ParseError` naming ``expected`` when it is not
    one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"expected {expected}; got invalid JSON ({exc.msg})", raw=text, expected=expected
        ) from None
    if not isinstance(obj, dict):
        raise ParseError(f"expected {expected}; got {type(obj).__name__}", raw=text, expected=expected)
    return obj
