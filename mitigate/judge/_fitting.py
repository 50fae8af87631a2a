"""The one fit protocol: what fitting may use (:class:`FitContext`), the fittable base, its one judge check.

A component that learns from labelled data (a demo mitigation, a calibration, a selector ...)
is :class:`Fittable`. Like a scikit-learn estimator it returns a fitted *copy*, keeping what it
learned in fields ending in ``_``; unlike one, its fit is async, because fitting may run the
judge over the training items::

    fitted = await m.afit(train, judge, FitContext(progress=False))   # the protocol
    fitted = m.fit(train, judge, progress=False)                      # its synchronous form
    judge2 = m.compile(judge, train)                                  # fit, then wrap (mitigations)

- ``train`` is the labelled training data; ``judge`` the judge the fitted component will
  serve (for a mitigation, the judge it will wrap); ``ctx`` a :class:`FitContext`, the one
  typed value holding everything else fitting may use (progress bar, concurrency, the human
  label, a likelihood LM, precomputed scores). Keyword options (``fit(train, judge,
  criterion="coherence")``) are shorthand for its fields, merged over ``ctx``.
- :meth:`Fittable.afit`, :meth:`Fittable.fit` (and ``compile`` on mitigations) are written
  once, here. A component implements :meth:`Fittable.learn` ``(train, judge, ctx) -> Self``,
  one signature for every fittable.
- Whether fitting needs the judge is read from the component's tags by one check,
  :func:`require_judge`, before ``learn`` runs: ``needs_judge`` (it always does), or
  ``calls_judge_while_fitting`` unless the context gives the judge's scores.
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
    """Everything fitting may use beyond the training data and the judge: one frozen, typed value.

    Fields:
        progress: show a progress bar while the judge runs over the training items.
        concurrency: how many judge calls run at once while fitting.
        criterion: the human label to learn from (None: the benchmark's only one, or the one
            the judge's prompts score; see :func:`mitigate.selectors.resolve_criterion`).
        lm: the causal LM computing likelihoods (LS) for a component that needs them
            (Highest-RS), instead of the one its ``likelihood`` spec names.
        ls: LS per training item id, already computed (with ``judge_scores``, Highest-RS
            calls no LM).
        judge_scores: the judge's score per training item id, already made (None: it failed).
            A component that calls the judge while fitting then needs no judge when it reads
            them (tags: ``calls_judge_while_fitting`` without ``needs_judge``).

    Every fittable receives the same context; each reads the fields it uses. A mitigation
    passes it on to what it fits inside (a pipeline to its steps, demos to their selector).
    """

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
        """Both LS and the judge's scores of the training items are given: fitting need not call the judge."""
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
    """``ctx`` (default: a new :class:`FitContext`) with the keyword ``options`` merged over it.

    ConfigError, naming ``owner``'s fit and the known fields, for an option that is no field,
    or for a ``ctx`` that is not a FitContext.
    """
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
    """The one check that fitting ``component`` has the judge it needs; one line, the same for every fittable.

    A judge that is given must be a :class:`~mitigate.judge.Judge`. None is refused when the
    component's tags say ``needs_judge``, or ``calls_judge_while_fitting`` and the context
    does not give the judge's scores (:attr:`FitContext.scores_given`).
    """
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
    """Run a fit coroutine of ``component`` to completion, inside a running event loop too when it can.

    A component whose tags say it calls no judge while fitting does no I/O while fitting, so its
    coroutine is run here directly (this works inside a running event loop too); one that does
    runs in its own event loop (:func:`mitigate.registry.run_coroutine`), and inside a running one
    that is a ConfigError naming ``instead``.
    """
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
    """The fit protocol, written once (:meth:`afit`, async; :meth:`fit`, sync); a component implements learn.

    Both return a fitted copy (fitted state in fields ending in ``_``), never changing the
    original; a component with nothing to learn returns itself. See the module docstring.
    """

    async def afit(
        self, train: Any, judge: Any = None, ctx: FitContext | None = None, **options: Any
    ) -> Self:
        """A fitted copy learned from ``train`` against ``judge`` with ``ctx`` (keyword ``options`` over it).

        The judge check (:func:`require_judge`) runs here, once, before :meth:`learn`.
        """
        context = fit_context(ctx, options, owner=type(self).__name__)
        require_judge(self, judge, context)
        return await self.learn(train, judge, context)

    def fit(self, train: Any, judge: Any = None, ctx: FitContext | None = None, **options: Any) -> Self:
        """:meth:`afit` run to completion (see :func:`run_fit`: inside a running event loop, only for a
        component whose tags say it calls no judge while fitting; otherwise ``await afit`` there)."""
        return run_fit(
            self,
            self.afit(train, judge, ctx, **options),
            what=f"{type(self).__name__}.fit()",
            instead="x.afit(train, judge)",
        )

    async def learn(self, train: Any, judge: Any, ctx: FitContext) -> Self:
        """What a fittable implements: the fitted copy (this component itself when there is nothing to learn).

        Called by :meth:`afit` after the judge check, with the merged context. ``judge`` is a
        :class:`~mitigate.judge.Judge`, or None when the tags allow fitting without one.
        """
        return self
