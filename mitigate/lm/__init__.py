"""LM backends behind one interface (see :mod:`mitigate.lm.base`).

``get(spec)`` builds a backend from a spec string (``openai:<model>``, ``anthropic:<model>``,
``dspy:<litellm id>``, ``local``, ``local:<path.gguf>``, ``replay:<path>``, ``fake``);
``wrap(lm, cache=..., retry=...)`` adds the on-disk cache and retries; ``declare(spec)`` gives the
backend's declared facts only (requests rendered and checked, none sent; no SDK, key or model file).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mitigate.lm.base import LM, Choice, LMRequest, LMResponse, Message, TokenLogprob, Usage
    from mitigate.lm.fake import FakeLM
    from mitigate.lm.registry import declare, get, wrap

_LAZY = {**dict.fromkeys(("LM", "Choice", "LMRequest", "LMResponse", "Message", "TokenLogprob", "Usage"),
                         "mitigate.lm.base"),
         "FakeLM": "mitigate.lm.fake", "get": "mitigate.lm.registry", "wrap": "mitigate.lm.registry",
         "declare": "mitigate.lm.registry"}


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (PEP 562): importing one backend module loads no other."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mitigate.lm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["LM", "Choice", "FakeLM", "LMRequest", "LMResponse", "Message", "TokenLogprob", "Usage", "declare",
           "get",
           "wrap"]
