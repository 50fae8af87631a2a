"""The judge protocol (:class:`Judge`), its leaf :class:`PromptJudge` (one prompt, one LM, one config) and
:class:`CompositeJudge`, the base of judges that fan out."""

from __future__ import annotations

import copy
import hashlib
import json
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mitigate.data import Item
from mitigate.errors import CapabilityError, ConfigError, MitigateError, ParseError
from mitigate.judge._judgment import JudgeConfig, Judgment, ParseFailure, PlannedRequest, reduce_samples
from mitigate.lm import LM, AnswerConstraint, Choice, LMRequest
from mitigate.parse import Verdict, expected_score, parse_criteria
from mitigate.prompt import JudgePrompt
from mitigate.scale import Scale

_SENT: ContextVar[list[LMRequest] | None] = ContextVar("mitigate_sent_requests", default=None)


@contextmanager
def recording_requests() -> Iterator[list[LMRequest]]:
    """Collect, in order, the requests every :class:`PromptJudge` sends inside this block (the tasks it
    starts included), so the reports can show the exact prompt an item was judged with."""
    box: list[LMRequest] = []
    token = _SENT.set(box)
    try:
        yield box
    finally:
        _SENT.reset(token)


class Judge(ABC):
    """The judge protocol: ``judge(item)`` and ``map_prompts(fn)``."""

    @abstractmethod
    async def judge(self, item: Item) -> Judgment:
        """Judge one item."""

    @abstractmethod
    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """A new judge with every inner :class:`PromptJudge` replaced by ``fn(leaf)`` (how a mitigation
        reaches every prompt judge behind a fan-out); this judge is unchanged."""

    def map_prompts(self, fn: Callable[[JudgePrompt], JudgePrompt]) -> Judge:
        """A new judge whose every prompt is ``fn(prompt)``; this judge is unchanged."""
        return self.map_leaves(lambda leaf: leaf.with_prompt(fn(leaf.prompt)))

    def leaves(self) -> list[PromptJudge]:
        """Every inner prompt judge, in order (collected through :meth:`map_leaves`)."""
        found: list[PromptJudge] = []

        def collect(leaf: PromptJudge) -> Judge:
            found.append(leaf)
            return leaf

        self.map_leaves(collect)
        return found

    def requests(self, item: Item) -> list[PlannedRequest]:
        """Every LM request this judge would send for ``item``, in order, without calling the LM (a call
        depending on earlier answers carries a ``condition``); CapabilityError for a judge that cannot."""
        raise CapabilityError(
            f"{type(self).__name__} cannot list the requests it would send; expected a judge that implements "
            "requests(item) (every judge mitigate builds does)"
        )

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """A JSON-able description (prompts, backend spec, config) identifying this judge."""

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        """Per criterion, the range every score this judge reports lies in ({} for verdicts only); None when
        it may report any value. A resumed journal line outside it is judged again."""
        return None

    def fingerprint(self) -> str:
        """A digest of :meth:`describe`, used to refuse resuming a journal with another judge."""
        blob = json.dumps(self.describe(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources held by the judge's backends."""


class CompositeJudge(Judge):
    """A judge made of named child judges (a fan-out); subclasses implement :meth:`judge` and keep their
    parameters as plain attributes (:meth:`with_children` copies them). :meth:`map_leaves` reaches every
    child."""

    kind: str = "composite"
    requests_are_children: bool = False
    """True when the fan-out sends every child's requests for the item unchanged and unconditionally."""

    def __init__(self, children: dict[str, Judge]) -> None:
        if not children:
            raise ConfigError(f"{type(self).__name__} needs at least one child judge; got none")
        self.children = dict(children)

    def with_children(self, children: dict[str, Judge]) -> CompositeJudge:
        """A shallow copy with other children (parameters kept)."""
        clone = copy.copy(self)
        clone.children = dict(children)
        return clone

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """A copy whose every child has ``fn`` applied to its leaves."""
        return self.with_children({k: c.map_leaves(fn) for k, c in self.children.items()})

    def params(self) -> dict[str, Any]:
        """The composite's own parameters for :meth:`describe` (override to add)."""
        return {}

    def child_requests(
        self, name: str, item: Item, *, condition: str | None = None, swapped: bool = False
    ) -> list[PlannedRequest]:
        """The requests of child ``name`` for ``item``, placed under ``name`` in the path."""
        return [
            r.under(name, condition=condition, swapped=swapped) for r in self.children[name].requests(item)
        ]

    def requests(self, item: Item) -> list[PlannedRequest]:
        """Every child's requests for ``item``, in order (overridden by a fan-out that changes the item or
        calls conditionally)."""
        if not self.requests_are_children:
            raise CapabilityError(
                f"{type(self).__name__} does not say which requests it sends; expected it to implement "
                "requests(item) or to set requests_are_children = True when it sends each child's requests "
                "for the item unchanged"
            )
        return [r for name in self.children for r in self.child_requests(name, item)]

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        """The children's ranges joined per criterion (None when a child's is unknown); a composite that
        adjusts scores overrides this with None."""
        joined: dict[str, tuple[float, float]] = {}
        for child in self.children.values():
            bounds = child.score_bounds()
            if bounds is None:
                return None
            for name, (lo, hi) in bounds.items():
                old = joined.get(name, (lo, hi))
                joined[name] = (min(lo, old[0]), max(hi, old[1]))
        return joined

    def describe(self) -> dict[str, Any]:
        """Kind, parameters and every child's description."""
        return {
            "kind": self.kind,
            "params": self.params(),
            "children": {k: c.describe() for k, c in self.children.items()},
        }

    async def aclose(self) -> None:
        """Close every child."""
        for c in self.children.values():
            await c.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self.children)})"


def judge_scale(judge: Judge) -> Scale | None:
    """The scale a judge answers on: its ``scale`` attribute, else the one its inner prompts share (None
    without inner prompts; a ConfigError when they answer on different scales)."""
    scale = getattr(judge, "scale", None)
    if isinstance(scale, Scale):
        return scale
    try:
        leaves = judge.leaves()
    except ConfigError:
        return None
    scales = {leaf.prompt.scale.model_dump_json(): leaf.prompt.scale for leaf in leaves}
    if len(scales) > 1:
        raise ConfigError(
            f"expected one answer scale across the judge's prompts; got {len(scales)}: "
            f"{', '.join(s.describe() for s in scales.values())}"
        )
    return next(iter(scales.values()), None)


class PromptJudge(Judge):
    """Scores items with one :class:`JudgePrompt` through one :class:`LM`."""

    def __init__(self, prompt: JudgePrompt, lm: LM, config: JudgeConfig | None = None) -> None:
        if not isinstance(prompt, JudgePrompt):
            raise ConfigError(f"expected a JudgePrompt; got {type(prompt).__name__}")
        if not isinstance(lm, LM):
            raise ConfigError(
                f"expected an LM backend (mitigate.lm.get('local') ...); got {type(lm).__name__}"
            )
        self.prompt = prompt
        self.lm = lm
        self.config = config or JudgeConfig()

    def __repr__(self) -> str:
        return f"PromptJudge(criteria={[c.name for c in self.prompt.criteria]}, lm={self.lm.spec!r})"

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """``fn(self)``: a prompt judge is its own only leaf."""
        return fn(self)

    def with_prompt(self, prompt: JudgePrompt) -> PromptJudge:
        """A new judge with another prompt (same LM and config)."""
        return PromptJudge(prompt, self.lm, self.config)

    def with_config(self, **changes: Any) -> PromptJudge:
        """A new judge with some config fields changed (validated)."""
        merged = self.config.model_dump() | changes
        return PromptJudge(self.prompt, self.lm, JudgeConfig.model_validate(merged))

    def score_bounds(self) -> dict[str, tuple[float, float]] | None:
        """The prompt's scale for each criterion ({} for a pairwise prompt); "weak/strong N" widen it."""
        if self.prompt.answer == "pairwise":
            return {}
        scale = self.prompt.scale
        slack = 0.5 if scale.modifiers else 0.0
        names = [c.name for c in self.prompt.criteria] or ["score"]
        return {n: (scale.min - slack, scale.max + slack) for n in names}

    def describe(self) -> dict[str, Any]:
        """Prompt, backend spec and config."""
        return {
            "kind": "prompt",
            "prompt": self.prompt.model_dump(mode="json"),
            "lm": self.lm.identity(),
            "config": self.config.model_dump(mode="json"),
        }

    def constraint(self) -> AnswerConstraint | None:
        """The answer constraint this judge's requests carry (see ``JudgeConfig.constrain``), or None."""
        mode = self.config.constrain
        multi = len(self.prompt.criteria) > 1
        if mode == "off" or (mode == "auto" and (multi or "format" not in self.lm.constraint_modes())):
            return None
        if multi:
            raise ConfigError(
                f"constrain={mode!r} needs a prompt with one answer value; this one scores "
                f"{[c.name for c in self.prompt.criteria]} in one answer (place SingleAttribute before it)"
            )
        fmt = self.prompt.format
        if fmt.kind == "mcq" and not self.prompt.scale.letters:
            return None
        if mode == "answer":
            fmt = fmt.model_copy(update={"reasoning": "none"})
        return fmt.constraint(
            self.prompt.scale, "json" if mode == "json" else "format", max_tokens=self.config.max_tokens
        )

    def request(self, item: Item) -> LMRequest:
        """The LM request this judge sends for ``item``."""
        cfg = self.config
        expected = cfg.scoring == "expected"
        return LMRequest(
            constraint=self.constraint(),
            messages=self.prompt.render(item),
            temperature=cfg.temperature,
            n=cfg.n,
            max_tokens=cfg.max_tokens,
            stop=cfg.stop,
            seed=cfg.seed,
            logprobs=expected,
            top_logprobs=cfg.top_logprobs if expected else 0,
        )

    def _check_answerable(self) -> None:
        if self.prompt.answer == "mcq" and not self.prompt.scale.letters:
            raise ConfigError(
                "this prompt's options state no scores, so a chosen letter cannot become a score; expected "
                "JudgePrompt.from_template(..., letters={'A': ..., 'B': ...})"
            )

    def reads(self) -> str:
        """How this judge's answers become a score or verdict, in words (for :class:`PlannedRequest`)."""
        if self.config.scoring == "expected" and self.prompt.answer != "pairwise":
            return f"expected score from the top-{self.config.top_logprobs} logprobs at the score position"
        kind = {"pairwise": "verdict", "mcq": "chosen letter"}.get(self.prompt.answer, "score")
        reduce = f"; reduce {self.config.n} sample(s) by {self.config.reducer}" if self.config.n > 1 else ""
        return f"parse the {kind} from the text ({self.prompt.format.kind} format){reduce}"

    def plan(self, request: LMRequest, item: Item, reads: str) -> PlannedRequest:
        """``request`` as a :class:`PlannedRequest`, with the backend's refusal when it cannot take it."""
        refused: str | None = None
        try:
            self.lm.check(request)
        except MitigateError as exc:
            refused = str(exc)
        try:
            fields = self.lm.constraint_fields(request)
        except MitigateError as exc:
            fields, refused = {}, refused or str(exc)
        return PlannedRequest(
            item_id=item.id,
            backend=self.lm.spec,
            request=request,
            reads=reads,
            refused=refused,
            backend_fields=fields,
        )

    def requests(self, item: Item) -> list[PlannedRequest]:
        """The one request :meth:`judge` sends for ``item`` (``n`` samples in one request)."""
        self._check_answerable()
        return [self.plan(self.request(item), item, self.reads())]

    async def judge(self, item: Item) -> Judgment:
        """Render, call the LM, parse every sample, reduce; failures are recorded, not scored."""
        self._check_answerable()
        request = self.request(item)
        sent = _SENT.get()
        if sent is not None:
            sent.append(request)
        response = await self.lm.complete(request)
        as_json = request.constraint is not None and request.constraint.mode == "json"
        names = [c.name for c in self.prompt.criteria] or ["score"]
        per_crit: dict[str, list[float | None]] = {n: [] for n in names}
        failures: list[ParseFailure] = []
        verdicts: list[Verdict] = []
        fmt = self.prompt.format
        shown = tuple(m.content for m in request.messages)
        judged = item.texts()
        for idx, choice in enumerate(response.choices):
            if self.prompt.answer == "pairwise":
                try:
                    got = (
                        fmt.read_json(choice.text, self.prompt.scale)
                        if as_json
                        else fmt.read(choice.text, self.prompt.scale, quoted=shown, judged=judged)
                    )
                    verdicts.append(got)  # type: ignore[arg-type]
                except ParseError as exc:
                    failures.append(
                        ParseFailure(criterion=names[0], raw=choice.text, reason=exc.message, sample=idx)
                    )
                continue
            parsed = self._parse_choice(choice, names, as_json=as_json, quoted=shown, judged=judged)
            for name, value in parsed.items():
                per_crit[name].append(None if isinstance(value, ParseError) else value)
                if isinstance(value, ParseError):
                    failures.append(
                        ParseFailure(criterion=name, raw=choice.text, reason=value.message, sample=idx)
                    )
        good = {n: [v for v in vals if v is not None] for n, vals in per_crit.items()}
        scores = {n: reduce_samples(g, self.config.reducer) if g else None for n, g in good.items()}
        top = Counter(verdicts).most_common(2)
        tied = len(top) == 2 and top[0][1] == top[1][1]
        verdict: Verdict | None = ("tie" if tied else top[0][0]) if top else None
        return Judgment(
            item_id=item.id,
            scores={} if self.prompt.answer == "pairwise" else scores,
            samples={} if self.prompt.answer == "pairwise" else {k: tuple(v) for k, v in per_crit.items()},
            verdict=verdict,
            raw=tuple(c.text for c in response.choices),
            failures=tuple(failures),
            usage=response.usage,
            cost_usd=0.0 if response.cached else response.cost_usd,
            calls=0 if response.cached else 1,
            cached_calls=1 if response.cached else 0,
            meta={"constraint": request.constraint.mode} if request.constraint is not None else {},
        )

    def _parse_choice(
        self,
        choice: Choice,
        names: list[str],
        *,
        as_json: bool = False,
        quoted: Sequence[str] = (),
        judged: Sequence[str] = (),
    ) -> dict[str, float | ParseError]:
        scale = self.prompt.scale
        try:
            if self.config.scoring == "expected":
                if choice.logprobs is None:
                    raise ParseError(
                        "expected token logprobs in the response; the backend returned none", raw=choice.text
                    )
                if len(names) > 1:
                    raise ParseError(
                        "expected-score scoring needs one criterion per call (use SingleAttribute)",
                        raw=choice.text,
                    )
                return {names[0]: expected_score(choice.logprobs, scale)}
            if len(names) > 1:
                return parse_criteria(choice.text, names, scale, quoted=quoted, judged=judged)
            fmt = self.prompt.format
            if as_json:
                return {names[0]: float(fmt.read_json(choice.text, scale))}
            cues = tuple(n for n in names if n.lower() != "score")
            echoes = self.prompt.echo_lines()
            value = fmt.read(choice.text, scale, echoes=echoes, cues=cues, quoted=quoted, judged=judged)
            return {names[0]: float(value)}
        except ParseError as exc:
            return {n: exc for n in names}
