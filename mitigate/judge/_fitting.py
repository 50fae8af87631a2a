"""The one fit protocol: what fitting may use (:class:`FitContext`), the fittable base, its one judge check.

A :class:`Fittable` returns a fitted *copy* (learned state in fields ending in ``_``), asynchronously
(``await m.afit(train, judge, ctx)``; ``m.fit(...)`` runs it), and implements only :meth:`Fittable.learn`;
keyword options are shorthand for :class:`FitContext` fields. Whether fitting needs the judge is read from
the component's tags by one check, :func:`require_judge`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mitigate.constraints import Interval, check_param
from mitigate.errors import ConfigError
from mitigate.judge._judge import Judge
from mitigate.lm import LM
from mitigate.registry import Tags, run_coroutine


class FitContext(BaseModel):
    """Everything fitting may use beyond the training data and the judge, passed on to what a component fits
    inside: a progress bar, how many judge calls run at once, the human label ``criterion`` (None: the only
    one, or the judge's), the ``lm`` computing likelihoods, and ``ls`` and ``judge_scores`` per training item
    id already computed (a component reading them needs no judge)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    progress: bool = True
    concurrency: int = 8
    criterion: str | None = None
    lm: LM | None = None
    ls: dict[str, float] | None = None
    judge_scores: dict[str, float | None] | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _validate(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(k) for k in data if k not in cls.model_fields)
            if unknown:
                raise ConfigError(
                    f"FitContext has no field {', '.join(map(repr, unknown))}; expected some "
                    f"of {sorted(cls.model_fields)}"
                )
            for name, forms in _CONSTRAINTS.items():
                if name in data:
                    check_param("FitContext", name, data[name], forms)
        try:
            return handler(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = ".".join(str(p) for p in first.get("loc", ())) or "?"
            raise ConfigError(
                f"The {name!r} field of FitContext is not valid: {first.get('msg')}. "
                f"Got {first.get('input')!r} instead."
            ) from None

    def merged(self, **options: Any) -> FitContext:
        """A copy with ``options`` (field names) set, validated like a new context."""
        current = {k: getattr(self, k) for k in type(self).model_fields}
        return FitContext.model_validate({**current, **options})

    @property
    def scores_given(self) -> bool:
        """Both LS and the judge's scores are given: fitting need not call the judge."""
        return self.ls is not None and self.judge_scores is not None


_CONSTRAINTS: dict[str, list[Any]] = {
    "progress": [bool],
    "concurrency": [Interval(int, 1)],
    "criterion": [str, None],
    "lm": [LM, None],
    "ls": [dict, None],
    "judge_scores": [dict, None],
}


def fit_context(ctx: FitContext | None, options: Mapping[str, Any], *, owner: str) -> FitContext:
    """``ctx`` (default: a new :class:`FitContext`) with the keyword ``options`` merged over it (ConfigError
    naming ``owner``'s fit for an unknown option or a ``ctx`` that is no FitContext)."""
    if ctx is not None and not isinstance(ctx, FitContext):
        raise ConfigError(
            f"{owner}.fit expected a FitContext as its third argument; got {type(ctx).__name__}"
        )
    base = ctx if ctx is not None else FitContext()
    unknown = sorted(k for k in options if k not in FitContext.model_fields)
    if unknown:
        raise ConfigError(
            f"{owner}.fit has no option {', '.join(map(repr, unknown))}; expected some of "
            f"{sorted(FitContext.model_fields)} (the fields of FitContext)"
        )
    return base.merged(**options) if options else base


def require_judge(component: Any, judge: Any, ctx: FitContext) -> None:
    """The one check that fitting ``component`` has the judge it needs: a given judge must be a Judge; None
    is refused when its tags say ``needs_judge``, or ``calls_judge_while_fitting`` without the judge's
    scores in the context."""
    if isinstance(judge, Judge):
        return
    tags = getattr(component, "tags", None)
    tags = tags if isinstance(tags, Tags) else Tags()
    needed = tags.needs_judge or (tags.calls_judge_while_fitting and not ctx.scores_given)
    if judge is None and not needed:
        return
    reads_scores = tags.calls_judge_while_fitting and not tags.needs_judge
    hint = " (or its scores: ls= and judge_scores=)" if reads_scores else ""
    raise ConfigError(
        f"{type(component).__name__}.fit needs the judge it fits against; expected a "
        f"Judge{hint}, got {type(judge).__name__}"
    )


_T = TypeVar("_T")


def run_fit(component: Any, coro: Coroutine[Any, Any, _T], *, what: str, instead: str) -> _T:
    """Run a fit coroutine of ``component`` to completion: directly when its tags say it calls no judge while
    fitting (so it does no I/O; this works inside a running loop), else in its own event loop
    (:func:`~mitigate.registry.run_coroutine`)."""
    tags = getattr(component, "tags", None)
    if isinstance(tags, Tags) and not tags.calls_judge_while_fitting:
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        coro.close()
        raise ConfigError(
            f"{type(component).__name__}.afit waited on I/O, but its tags say it calls no "
            "judge while fitting; expected calls_judge_while_fitting=True in its declared_tags"
        )
    return run_coroutine(coro, what=what, instead=instead)


class Fittable:
    """The fit protocol, written once (:meth:`afit`, :meth:`fit`): a component implements :meth:`learn`."""

    async def afit(
        self, train: Any, judge: Any = None, ctx: FitContext | None = None, **options: Any
    ) -> Self:
        """A fitted copy learned from ``train`` against ``judge`` with ``ctx`` (keyword ``options`` over it),
        after the one judge check (:func:`require_judge`)."""
        context = fit_context(ctx, options, owner=type(self).__name__)
        require_judge(self, judge, context)
        return await self.learn(train, judge, context)

    def fit(self, train: Any, judge: Any = None, ctx: FitContext | None = None, **options: Any) -> Self:
        """:meth:`afit` run to completion (see :func:`run_fit`)."""
        return run_fit(
            self,
            self.afit(train, judge, ctx, **options),
            what=f"{type(self).__name__}.fit()",
            instead="x.afit(train, judge)",
        )

    async def learn(self, train: Any, judge: Any, ctx: FitContext) -> Self:
        """What a fittable implements: the fitted copy (itself when there is nothing to learn); ``judge`` is
        None when the tags allow fitting without one."""
        return self
