"""LM backends behind one interface (see :mod:`mitigate.lm.base`).

``get(spec)`` builds a backend from a spec string (``openai:<model>``, ``anthropic:<model>``,
``dspy:<litellm id>``, ``local``, ``local:<path.gguf>``, ``replay:<path>``, ``fake``);
``wrap(lm, cache=..., retry=...)`` adds the on-disk cache and retries.
"""

from mitigate.lm.base import LM, Choice, LMRequest, LMResponse, Message, TokenLogprob, Usage
from mitigate.lm.fake import FakeLM
from mitigate.lm.registry import get, wrap

__all__ = ["LM", "Choice", "FakeLM", "LMRequest", "LMResponse", "Message", "TokenLogprob", "Usage", "get", "wrap"]
