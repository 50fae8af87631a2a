"""The mitigation contract: frozen, serialisable transformers of judges, and pipelines of them.

- :class:`Mitigation` — ``wrap(judge) -> Judge``; parameters are the object's fields.
- :class:`PromptMitigation` — implements only ``apply(prompt) -> prompt``; its ``wrap`` is
  ``judge.map_prompts(self.apply)``, so placed after a fan-out it reaches every inner prompt.
- :class:`Pipeline` — ``Pipeline([m1, m2])`` or ``m1 | m2``; nested pipelines flatten;
  ``wrap`` folds left to right (``m1`` wraps the base judge first).
- Mitigations that learn from data expose ``fit(train, judge) -> Self`` returning a fitted
  copy with fitted state in fields ending in ``_``.

Every concrete mitigation registers itself under a name with :func:`register`, so a spec
``{"name": ..., "params": {...}}`` rebuilds it (:func:`from_spec`) and the CLI can accept
pipelines by name with parameters (:func:`parse_pipeline`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, SerializeAsAny

from mitigate.errors import ConfigError
from mitigate.judge import Judge
from mitigate.prompt import JudgePrompt

M = TypeVar("M", bound="Mitigation")

_REGISTRY: dict[str, type[Mitigation]] = {}


def register(name: str) -> Any:
    """Class decorator: make a mitigation buildable from its spec under ``name``."""

    def deco(cls: type[M]) -> type[M]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ConfigError(f"mitigation name {name!r} is already registered by {_REGISTRY[name].__name__}")
        cls.registry_name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def registered() -> dict[str, type[Mitigation]]:
    """Registered mitigation names -> classes."""
    return dict(_REGISTRY)


class Mitigation(BaseModel):
    """A frozen, serialisable transformer of judges."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    registry_name: ClassVar[str] = ""

    def wrap(self, judge: Judge) -> Judge:
        """A new judge with this mitigation applied; ``judge`` is not changed."""
        raise NotImplementedError(f"{type(self).__name__} must implement wrap()")

    def __or__(self, other: Mitigation) -> Pipeline:
        return Pipeline(steps=(self, other))

    @classmethod
    def examples(cls) -> list[Mitigation]:
        """Instances the shared contract tests exercise (override when defaults are not enough)."""
        return [cls()]

    def spec(self) -> dict[str, Any]:
        """``{"name": ..., "params": {...}}``: what :func:`from_spec` rebuilds this from."""
        if not self.registry_name:
            raise ConfigError(f"{type(self).__name__} is not registered; decorate it with @register('<name>')")
        return {"name": self.registry_name, "params": self.model_dump(mode="json")}


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
        super().__init__(steps=tuple(flat), **kw)

    def __or__(self, other: Mitigation) -> Pipeline:
        return Pipeline(steps=(*self.steps, other))

    def wrap(self, judge: Judge) -> Judge:
        """Fold left to right: the first step wraps the base judge."""
        for step in self.steps:
            judge = step.wrap(judge)
        return judge

    def spec(self) -> dict[str, Any]:
        """``{"name": "pipeline", "steps": [step specs]}``."""
        return {"name": "pipeline", "steps": [s.spec() for s in self.steps]}

    def __len__(self) -> int:
        return len(self.steps)


def from_spec(spec: dict[str, Any] | Sequence[dict[str, Any]]) -> Mitigation:
    """Rebuild a mitigation or pipeline from :meth:`Mitigation.spec` output (or a list of specs)."""
    if isinstance(spec, Sequence) and not isinstance(spec, (str, bytes)):
        return Pipeline(steps=[from_spec(s) for s in spec])
    if not isinstance(spec, dict) or "name" not in spec:
        raise ConfigError(f"expected a mitigation spec {{'name': ..., 'params': {{...}}}}; got {spec!r}")
    name = spec["name"]
    if name == "pipeline":
        return Pipeline(steps=[from_spec(s) for s in spec.get("steps", [])])
    cls = _REGISTRY.get(name)
    if cls is None:  # mitigations built on selectors (fixed-demos, per-item-demos) register on import
        import mitigate.selectors  # noqa: F401

        cls = _REGISTRY.get(name)
    if cls is None:
        raise ConfigError(f"unknown mitigation {name!r}; expected one of {sorted(_REGISTRY)}")
    return cls.model_validate(spec.get("params", {}))


def parse_pipeline(text: str) -> Pipeline:
    """A pipeline from CLI text: ``"name(k=v, k2=v2) | name2"``; values are JSON (bare words are strings).

    ``"baseline"`` or an empty string is the empty pipeline.
    """
    steps: list[Mitigation] = []
    for part in (p.strip() for p in text.split("|")):
        if not part or part == "baseline":
            continue
        name, _, rest = part.partition("(")
        name = name.strip()
        params: dict[str, Any] = {}
        if rest:
            if not rest.endswith(")"):
                raise ConfigError(f"expected 'name(k=v, ...)' in pipeline step; got {part!r}")
            for kv in filter(None, (x.strip() for x in _split_args(rest[:-1]))):
                key, eq, value = kv.partition("=")
                if not eq:
                    raise ConfigError(f"expected k=v in pipeline step {name!r}; got {kv!r}")
                try:
                    params[key.strip()] = json.loads(value)
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
