"""The mitigation contract: frozen, serialisable transformers of judges, and pipelines of them.

A :class:`Mitigation`'s parameters are its fields; ``wrap(judge)`` returns a new judge, and one that learns
implements ``learn`` (``afit``/``fit`` return a fitted copy, fitted state in fields ending in ``_``). A
:class:`PromptMitigation` only rewrites prompts; :class:`Pipeline` (``m1 | m2``) folds left to right;
:func:`from_spec` and :func:`parse_pipeline` rebuild them.
"""

from __future__ import annotations

import asyncio
import json
import operator
import warnings
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from functools import reduce
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializeAsAny

from mitigate.data import Benchmark, Item
from mitigate.errors import ConfigError, NotRecommendedWarning
from mitigate.judge import (
    CompositeJudge,
    FitContext,
    Fittable,
    Judge,
    Judgment,
    PlannedRequest,
    PromptJudge,
    run_fit,
)
from mitigate.paths import loads_json, read_file
from mitigate.prompt import JudgePrompt
from mitigate.registry import Component, Tags, build
from mitigate.registry import registered as registered_components

NEEDS_HUMAN = "needs_human"
"""The flag on a judgment that should go to a human (escalated, a failed gate, verdicts that disagree)."""


def registered() -> dict[str, type[Mitigation]]:
    """Registered mitigation names -> classes (``mitigate.registry.registered("mitigation")``)."""
    return registered_components("mitigation")


class Mitigation(Component, Fittable):
    """A frozen, serialisable transformer of judges (kind ``"mitigation"`` in the registry)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def wrap(self, judge: Judge) -> Judge:
        """A new judge with this mitigation applied; ``judge`` is not changed."""
        raise NotImplementedError(f"{type(self).__name__} must implement wrap()")

    def __or__(self, other: Mitigation) -> Pipeline:
        return Pipeline(steps=(self, other))

    @property
    def is_fitted(self) -> bool:
        """True when :meth:`wrap` can be used (always, for a mitigation with nothing to learn)."""
        return True

    @property
    def label(self) -> str:
        """A short name for reports: the registered name (a class whose name says too little refines it)."""
        return self.registry_name or type(self).__name__

    async def acompile(
        self, judge: Judge, train: Benchmark | None = None, ctx: FitContext | None = None, **options: Any
    ) -> Judge:
        """``judge`` with this mitigation fitted on ``train`` (when given) and applied."""
        fitted = self if train is None else await self.afit(train, judge, ctx, **options)
        return fitted.wrap(judge)

    def compile(
        self, judge: Judge, train: Benchmark | None = None, ctx: FitContext | None = None, **options: Any
    ) -> Judge:
        """The one-call path, :meth:`acompile` run to completion: ``m.fit(train, judge).wrap(judge)``."""
        return run_fit(
            self,
            self.acompile(judge, train, ctx, **options),
            what=f"{type(self).__name__}.compile()",
            instead="x.acompile(judge, train)",
        )


class PromptMitigation(Mitigation):
    """A mitigation that only rewrites prompts."""

    def apply(self, prompt: JudgePrompt) -> JudgePrompt:
        """Return a transformed copy of ``prompt``."""
        raise NotImplementedError(f"{type(self).__name__} must implement apply()")

    def wrap(self, judge: Judge) -> Judge:
        """``judge.map_prompts(self.apply)``."""
        return judge.map_prompts(self.apply)


class Pipeline(Mitigation):
    """An ordered composition of mitigations; nested pipelines flatten."""

    steps: tuple[SerializeAsAny[Mitigation], ...] = ()

    def __init__(self, steps: Iterable[Mitigation] = (), **kw: Any) -> None:
        flat: list[Mitigation] = []
        for s in steps:
            if isinstance(s, Pipeline):
                flat.extend(s.steps)
            elif isinstance(s, Mitigation):
                flat.append(s)
            else:
                raise ConfigError(f"expected Mitigation steps in a Pipeline; got {type(s).__name__}")
        BaseModel.__init__(self, steps=tuple(flat), **kw)  # the field is Pipeline's, not Mitigation's

    def __or__(self, other: Mitigation) -> Pipeline:
        return Pipeline(steps=(*self.steps, other))

    def wrap(self, judge: Judge) -> Judge:
        """Fold left to right: the first step wraps the base judge."""
        for step in self.steps:
            judge = step.wrap(judge)
        return judge

    @property
    def is_fitted(self) -> bool:
        return all(step.is_fitted for step in self.steps)

    @property
    def tags(self) -> Tags:
        """Every step's tags together; ``needs_judge`` too when a step learns."""
        out = reduce(operator.or_, (step.tags for step in self.steps), Tags())
        return out | Tags(needs_judge=out.needs_fitting)

    async def learn(self, train: Benchmark, judge: Judge, ctx: FitContext) -> Pipeline:
        """A fitted pipeline: each step fitted on ``train`` against ``judge`` wrapped by the fitted steps
        before it. As scikit-learn's ``Pipeline.fit``; steps with nothing to learn are kept as they are."""
        if not self.tags.needs_fitting:
            return self
        base = judge
        fitted: list[Mitigation] = []
        for step in self.steps:
            step = await step.afit(train, base, ctx)
            fitted.append(step)
            base = step.wrap(base)
        return Pipeline(fitted)

    def spec(self) -> dict[str, Any]:
        """``{"name": "pipeline", "steps": [step specs]}``."""
        return {"name": "pipeline", "steps": [s.spec() for s in self.steps]}

    def __len__(self) -> int:
        return len(self.steps)


def from_spec(spec: dict[str, Any] | Sequence[dict[str, Any]]) -> Mitigation:
    """Rebuild a mitigation or pipeline from :meth:`Mitigation.spec` output (or a list of specs)."""
    if isinstance(spec, Sequence) and not isinstance(spec, (str, bytes)):
        return Pipeline(steps=[from_spec(s) for s in spec])
    if isinstance(spec, dict) and spec.get("name") == "pipeline":
        extra = sorted(set(spec) - {"name", "steps"})
        if extra:
            raise ConfigError(
                f"expected a pipeline spec with keys 'name' and 'steps'; got extra keys {extra}"
            )
        steps = spec.get("steps", [])
        if not isinstance(steps, Sequence) or isinstance(steps, (str, bytes)):
            raise ConfigError(f"expected the 'steps' of a pipeline spec to be a list of specs; got {steps!r}")
        return Pipeline(steps=[from_spec(s) for s in steps])
    return build("mitigation", spec)


def load_pipeline(path: str | Path) -> Mitigation:
    """The mitigation saved in ``path``: a file ``mitigate search --out`` writes, or a bare spec. A search
    file whose dev winner did not beat the baseline on test loads with a
    :class:`~mitigate.errors.NotRecommendedWarning`."""
    p = Path(path)
    try:
        data = loads_json(read_file(p, "a pipeline spec file").decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"expected UTF-8 in pipeline spec file {p}; got {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"expected JSON in pipeline spec file {p}; got invalid JSON ({exc})") from None
    if isinstance(data, dict) and "pipeline" in data and "name" not in data:
        search = data.get("search")
        if isinstance(search, dict) and search.get("beats_baseline") is False:
            warnings.warn(
                f"{p}: {data.get('verdict') or 'no demo set beat the baseline on test'}; it holds "
                "the search's dev winner, not a recommendation",
                NotRecommendedWarning,
                stacklevel=2,
            )
        data = data["pipeline"]
    return from_spec(data)


def parse_pipeline(text: str) -> Pipeline:
    """A pipeline from CLI text ``"name(k=v, k2=v2) | name2"`` (JSON values) or ``"@file.json"``."""
    if not isinstance(text, str):
        raise ConfigError(f"expected pipeline text such as 'name(k=v) | name2' or '@file.json'; got {text!r}")
    stripped = text.strip()
    if stripped.startswith("@"):
        return Pipeline([load_pipeline(stripped[1:].strip())])
    steps: list[Mitigation] = []
    for part in (p.strip() for p in stripped.split("|")):
        if not part or part == "baseline":
            continue
        name, _, rest = part.partition("(")
        name = name.strip()
        if not rest and name.endswith(".json"):
            raise ConfigError(
                f"expected pipeline text or @file.json; got {name!r} (write @{name} to load a spec file)"
            )
        params: dict[str, Any] = {}
        if rest:
            if not rest.endswith(")"):
                raise ConfigError(f"expected 'name(k=v, ...)' in pipeline step; got {part!r}")
            for kv in filter(None, (x.strip() for x in _split_args(rest[:-1]))):
                key, eq, value = kv.partition("=")
                if not eq:
                    raise ConfigError(f"expected k=v in pipeline step {name!r}; got {kv!r}")
                try:
                    params[key.strip()] = loads_json(value)
                except json.JSONDecodeError:
                    params[key.strip()] = value.strip()
        steps.append(from_spec({"name": name, "params": params}))
    return Pipeline(steps=steps)


def _split_args(text: str) -> list[str]:
    """Split on commas not inside brackets or quotes."""
    out, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


async def gather_children(calls: Sequence[Callable[[], Any]], *, concurrent: bool = True) -> list[Judgment]:
    """Run a fan-out's child calls (concurrently or in order); re-raise the first error once all finished."""
    results: list[Any] = []
    if concurrent:
        results = await asyncio.gather(*(c() for c in calls), return_exceptions=True)
    else:
        for c in calls:
            try:
                results.append(await c())
            except Exception as exc:  # re-raised below, after the others ran
                results.append(exc)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


class LeafJudge(Judge):
    """A judge around one prompt judge, ``leaf``, made by the mitigation ``name``: a later mitigation's
    :meth:`map_leaves` builds it again (:meth:`around`) around the prompt judge that mitigation makes."""

    leaf: PromptJudge
    name: str

    def around(self, leaf: PromptJudge) -> Judge:
        """This judge around another ``leaf``."""
        raise NotImplementedError(f"{type(self).__name__} must implement around()")

    @abstractmethod
    def requests(self, item: Item) -> list[PlannedRequest]:
        """Every LM request :meth:`judge` sends for ``item`` (each such judge says which)."""

    def refusal(self, new: Judge) -> str:
        """Why this judge cannot be built around ``new``, which is no prompt judge."""
        return (
            f"{self.name} reads one prompt judge's answers; a later mitigation turned it into a "
            f"{type(new).__name__} (place {self.name} after it)"
        )

    def map_leaves(self, fn: Callable[[PromptJudge], Judge]) -> Judge:
        """:meth:`around` the leaf ``fn`` makes (refused unless that is a prompt judge)."""
        new = fn(self.leaf)
        if not isinstance(new, PromptJudge):
            raise ConfigError(self.refusal(new))
        return self.around(new)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, {self.leaf!r})"

    async def aclose(self) -> None:
        await self.leaf.aclose()


class AdjustingJudge(CompositeJudge):
    """One child judge, ``"inner"``, whose every judgment :meth:`adjust` changes; the keywords it is built
    with are its parameters (attributes, and :meth:`params`)."""

    requests_are_children = True

    def __init__(self, inner: Judge, **params: Any) -> None:
        super().__init__({"inner": inner})
        self.__dict__.update(params)
        self._params = params

    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def adjust(self, judgment: Judgment, item: Item) -> Judgment:
        """The inner judge's ``judgment`` of ``item`` as this judge reports it."""
        raise NotImplementedError(f"{type(self).__name__} must implement adjust()")

    async def judge(self, item: Item) -> Judgment:
        return self.adjust(await self.children["inner"].judge(item), item)
