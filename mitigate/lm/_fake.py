"""A scripted LM for tests, shipped with the package.

``FakeLM(["Score: 4", "Score: 2"])`` answers each sample with the next entry (an :class:`LMResponse` of ``n``
choices answers a whole request), ``FakeLM(lambda request: "Score: 3")`` computes each; requests are recorded
in ``.requests``. A script that runs out raises :class:`~mitigate.errors.ScriptExhaustedError`.
``logprobs=True`` (one token per character at logprob 0), ``constraint_modes`` and ``loglikelihood=`` accept
what a backend without them refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mitigate.errors import CapabilityError, ConfigError, ScriptExhaustedError
from mitigate.lm._base import LM, Choice, LMRequest, LMResponse, TokenLogprob, Usage

Script = Sequence[str | LMResponse] | Callable[[LMRequest], str | LMResponse]


def _cut(text: str, stop: tuple[str, ...]) -> str:
    return text[: min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=len(text))]


def _preview(request: LMRequest, limit: int = 80) -> str:
    text = request.messages[-1].content.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


class FakeLM(LM):
    """A scripted backend: a sequence of ``str`` / :class:`LMResponse` entries, or a callable, per sample."""

    provider = "fake"
    supports_n = True
    supports_stop = True

    def __init__(
        self,
        responses: Script,
        *,
        logprobs: bool = False,
        model: str = "",
        constraint_modes: Sequence[str] = (),
        loglikelihood: Callable[[str, str], float] | None = None,
    ) -> None:
        if callable(responses):
            self._fn: Callable[[LMRequest], str | LMResponse] | None = responses
            self._script: tuple[str | LMResponse, ...] = ()
        elif isinstance(responses, str | bytes):
            raise ConfigError(
                "expected a sequence of responses or a callable; got a single string "
                f"{responses[:40]!r} (wrap it in a list: FakeLM([...]))"
            )
        else:
            self._fn = None
            self._script = tuple(responses)
            for i, entry in enumerate(self._script):
                if not isinstance(entry, str | LMResponse):
                    raise ConfigError(
                        f"expected each scripted response to be a str or LMResponse; entry {i} is "
                        f"{type(entry).__name__}"
                    )
        self.supports_logprobs = logprobs
        self._constraint_modes = frozenset(constraint_modes)
        self.model = model
        self.requests: list[LMRequest] = []
        self._next = 0
        self._loglikelihood = loglikelihood
        self.likelihood_requests: list[tuple[str, str]] = []

    def scores_text(self) -> bool:
        return self._loglikelihood is not None or type(self).loglikelihood is not FakeLM.loglikelihood

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """The scripted log-likelihood; CapabilityError when none was given."""
        if self._loglikelihood is None:
            return await super().loglikelihood(context, continuation)
        self.likelihood_requests.append((context, continuation))
        return float(self._loglikelihood(context, continuation))

    def constraint_modes(self) -> frozenset[str]:
        return self._constraint_modes

    @property
    def remaining(self) -> int | None:
        """Scripted entries not yet used (None for a callable script)."""
        return None if self._fn is not None else len(self._script) - self._next

    @property
    def calls(self) -> int:
        return len(self.requests)

    def __repr__(self) -> str:
        kind = "callable" if self._fn is not None else f"{len(self._script)} scripted, {self.remaining} left"
        return f"FakeLM({kind}, calls={self.calls})"

    def _take(self, request: LMRequest) -> str | LMResponse:
        if self._fn is not None:
            return self._fn(request)
        if self._next >= len(self._script):
            raise ScriptExhaustedError(
                f"FakeLM was scripted with {len(self._script)} responses and all were used; request "
                f"#{len(self.requests)} (n={request.n}) needed another. Last message: {_preview(request)!r}",
                scripted=len(self._script),
                request=request,
            )
        entry = self._script[self._next]
        self._next += 1
        return entry

    def _choice(self, request: LMRequest, entry: str | LMResponse) -> tuple[tuple[Choice, ...], Usage]:
        if isinstance(entry, LMResponse):
            if request.wants_logprobs() and any(choice.logprobs is None for choice in entry.choices):
                raise CapabilityError(
                    "FakeLM was asked for token logprobs but the scripted LMResponse has a choice without "
                    "logprobs; expected scripted choices with logprobs",
                    backend=self.spec,
                )
            return entry.choices, entry.usage
        if not isinstance(entry, str):
            raise ConfigError(
                f"expected the FakeLM script to give a str or LMResponse; got {type(entry).__name__}"
            )
        text = _cut(entry, request.stop)
        logprobs = None
        if request.wants_logprobs():
            logprobs = tuple(
                TokenLogprob(token=ch, logprob=0.0, top=((ch, 0.0),) if request.top_logprobs else ())
                for ch in text
            )
        usage = Usage(
            prompt_tokens=sum(len(m.content.split()) for m in request.messages),
            completion_tokens=len(text.split()),
        )
        return (Choice(text=text, logprobs=logprobs, finish_reason="stop"),), usage

    async def complete(self, request: LMRequest) -> LMResponse:
        """Answer ``request`` from the script (``n`` entries for ``n`` samples)."""
        self.check(request)
        self.requests.append(request)
        first = self._take(request)
        if isinstance(first, LMResponse) and len(first.choices) == request.n:
            self._choice(request, first)  # validates logprobs
            return first.model_copy(update={"model": first.model or self.model or "fake"})
        entries = [first] + [self._take(request) for _ in range(request.n - 1)]
        choices: list[Choice] = []
        usage = Usage()
        cost: float | None = 0.0
        for entry in entries:
            if isinstance(entry, LMResponse):
                cost = None if cost is None or entry.cost_usd is None else cost + entry.cost_usd
            got, u = self._choice(request, entry)
            if len(got) != 1:
                raise ConfigError(
                    f"a FakeLM entry answers one sample or the whole request; expected an LMResponse with 1 "
                    f"or n={request.n} choices, got {len(got)}"
                )
            choices.extend(got)
            usage = usage + u
        return LMResponse(choices=tuple(choices), usage=usage, model=self.model or "fake", cost_usd=cost)
