"""promptfoo: a mitigated judge as a Python assertion, and promptfoo result files as recorded judgments.

promptfoo runs a Python assertion (``type: python``, ``value: file://grader.py``) by calling the file's
``get_assert(output, context)`` and reading back a GradingResult: ``pass``, ``score`` (the judge's score
mapped to 0-1 over its scale), ``reason`` (its raw answer). The file is either your own (``get_assert =
make_assert(judge, threshold=0.6)`` with a judge built in Python) or this module, with the judge described in
the assertion's ``config`` (:data:`CONFIG_KEYS`: ``prompt``, a built-in prompt name or a template file,
``backend``, ``base_url``, ``pipeline`` as CLI text ...). A judge answer with no score raises
:class:`~mitigate.errors.ParseError`: promptfoo shows the assertion as errored, never as a number.

:func:`read_promptfoo_results` reads the JSON ``promptfoo eval -o results.json`` writes into recorded
judgments for ``mitigate compare --recorded``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mitigate.adapters._common import make_item, outcome, shown_scale
from mitigate.data import RecordedRow, RecordedRun, runs_from_rows, save_recorded
from mitigate.errors import ConfigError, DataError, ParseError
from mitigate.judge import Judge
from mitigate.paths import loads_json, read_file
from mitigate.registry import run_coroutine
from mitigate.scale import Scale

GRADER_ERROR = re.compile(
    r"(Error running (Python|Ruby|JavaScript)|(Python|Ruby|JavaScript) code execution failed|Could not "
    r"extract JSON|Webhook error|Moderation API error|.{0,40}rubric evaluation failed|invalid JSON:|Error: )"
)
"""Reasons with which promptfoo reports a grader that failed rather than graded (it records score 0 for them).

promptfoo keeps no structured flag for this, so the reason's first line is matched: a script that raised, an
LLM grader whose answer held no verdict, a webhook or moderation call that failed.
"""

GradingResult = dict[str, Any]
"""promptfoo's GradingResult as Python returns it: ``{"pass": bool, "score": float, "reason": str}``."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


async def agrade(
    judge: Judge,
    output: Any,
    context: Mapping[str, Any],
    *,
    threshold: float = 0.5,
    criterion: str | None = None,
    scale: Scale | None = None,
    input_var: str | None = None,
    expected_var: str | None = None,
    input_field: str = "source",
) -> GradingResult:
    """Grade one promptfoo output with ``judge``: the GradingResult promptfoo expects.

    The judged text is ``output``; the item's input is ``context["vars"][input_var]`` when given, else the
    prompt promptfoo sent (``context["prompt"]``); ``expected_var`` names the var holding the reference.
    Raises ParseError when the judge's answer holds no score.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(
            f"expected a threshold between 0 and 1 (the score mapped over the judge's scale); got {threshold}"
        )
    variables = context.get("vars") or {}
    if input_var is not None and input_var not in variables:
        raise ConfigError(
            f"expected the test var {input_var!r} (input_var); the test has {sorted(variables)}"
        )
    given = variables[input_var] if input_var is not None else context.get("prompt")
    expected = variables.get(expected_var) if expected_var is not None else None
    item = make_item(
        _text(output),
        None if given is None else _text(given),
        expected=None if expected is None else _text(expected),
        input_field=input_field,
    )
    got = outcome(await judge.judge(item), shown_scale(judge, scale), criterion)
    if not got.ok:
        raise ParseError(
            f"mitigated judge: {got.error}; raw answer: {got.raw!r}", raw=got.raw, criterion=got.criterion
        )
    assert got.normalized is not None and got.score is not None
    return {"pass": got.normalized >= threshold, "score": got.normalized, "reason": got.raw}


def make_assert(
    judge: Judge,
    *,
    threshold: float = 0.5,
    criterion: str | None = None,
    scale: Scale | None = None,
    input_var: str | None = None,
    expected_var: str | None = None,
    input_field: str = "source",
) -> Callable[[Any, Mapping[str, Any]], GradingResult]:
    """A promptfoo Python assertion's ``get_assert(output, context)``, grading with ``judge`` (``agrade``)."""
    grade = functools.partial(
        agrade,
        judge,
        threshold=threshold,
        criterion=criterion,
        scale=scale,
        input_var=input_var,
        expected_var=expected_var,
        input_field=input_field,
    )

    def get_assert(output: Any, context: Mapping[str, Any]) -> GradingResult:
        return run_coroutine(
            grade(output, context), what="get_assert()", instead="agrade(judge, output, context)"
        )

    return get_assert


CONFIG_KEYS = tuple(
    "prompt backend base_url pipeline threshold criterion input_var expected_var scale".split()
)
"""The keys :func:`get_assert` reads from the assertion's ``config``."""


def judge_from_config(config: Mapping[str, Any]) -> Judge:
    """A judge from an assertion config: ``prompt``, ``backend`` (required), ``base_url``, ``pipeline``."""
    from mitigate.judge import PromptJudge
    from mitigate.lm import get as get_lm
    from mitigate.prompt import JudgePrompt, get_prompt, list_prompts
    from mitigate.strategies import parse_pipeline

    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(f"expected assertion config keys among {list(CONFIG_KEYS)}; got unknown {unknown}")
    for key in ("prompt", "backend"):
        if not isinstance(config.get(key), str) or not config[key]:
            raise ConfigError(
                f"expected the assertion config to name a {key!r} (text); got {config.get(key)!r}"
            )
    name = config["prompt"]
    if name in list_prompts():
        prompt = get_prompt(name)
    else:
        path = Path(name)
        if not path.is_file():
            raise ConfigError(
                f"expected 'prompt' to be a built-in prompt ({list_prompts()}) or a template "
                f"file; got {name!r}"
            )
        prompt = JudgePrompt.from_template(path.read_text(encoding="utf-8"))
    kwargs = {"base_url": config["base_url"]} if config.get("base_url") else {}
    lm = get_lm(config["backend"], **kwargs)
    return parse_pipeline(str(config.get("pipeline") or "baseline")).wrap(PromptJudge(prompt, lm))


async def _grade_from_config(output: Any, context: Mapping[str, Any]) -> GradingResult:
    config = dict(context.get("config") or {})
    judge = judge_from_config(config)
    bounds = config.get("scale")
    try:
        return await agrade(
            judge,
            output,
            context,
            threshold=float(config.get("threshold", 0.5)),
            criterion=config.get("criterion"),
            scale=Scale(min=bounds[0], max=bounds[1]) if bounds else None,
            input_var=config.get("input_var"),
            expected_var=config.get("expected_var"),
        )
    finally:
        for leaf in judge.leaves():  # close the backend's connections before promptfoo's process exits
            await leaf.lm.aclose()
        await judge.aclose()


def get_assert(output: Any, context: Mapping[str, Any]) -> GradingResult:
    """promptfoo's entry point when this module is the assertion file: a judge from ``context["config"]``."""
    return run_coroutine(
        _grade_from_config(output, context),
        what="get_assert()",
        instead="agrade(judge_from_config(config), output, context)",
    )


# --------------------------------------------------------------------------- reading promptfoo result files


def _results(doc: Any, file: Path) -> list[Any]:
    """The per-output results of a promptfoo output file (``results.results``; older files: ``results``)."""
    block = doc.get("results") if isinstance(doc, dict) else None
    rows = block.get("results") if isinstance(block, dict) else block
    if not isinstance(rows, list):
        raise DataError(
            "expected a promptfoo results file (JSON with results.results, as 'promptfoo eval "
            f"-o results.json' writes) at {file}; got {type(doc).__name__} without that list",
            path=str(file),
        )
    return rows


def _provider(result: Mapping[str, Any]) -> str:
    provider = result.get("provider") or {}
    return str(provider.get("label") or provider.get("id") or "")


def _judge_name(assertion: Mapping[str, Any]) -> str:
    kind = str(assertion.get("type") or "assertion")
    grader = assertion.get("provider")
    if isinstance(grader, Mapping):
        grader = grader.get("id")
    return f"{kind}:{grader}" if isinstance(grader, str) and grader else kind


def read_promptfoo_results(
    path: str | Path,
    *,
    id_var: str | None = None,
    criterion: str | None = None,
    assertion_type: str | None = None,
) -> dict[str, RecordedRun]:
    """The graded assertions of a promptfoo results file as recorded runs, judge name -> run (the mapping:
    docs/adapters.md): one answer per output and assertion, its item id the test var ``id_var`` (else the
    test's description, else ``test<N>``, with ``/<provider>`` and ``/prompt<N>`` when several answered), its
    judge the assertion type (and grading provider), its criterion ``criterion=``, else the assertion's
    ``metric``. An output that errored or an assertion whose grader failed (:data:`GRADER_ERROR`) is a
    recorded failure, never a score. DataError naming the file for anything else.
    """
    file = Path(path)
    data = read_file(file, "a promptfoo results JSON file", error=DataError)  # never a FIFO, never unbounded
    try:
        doc = loads_json(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(
            f"expected a promptfoo results JSON file at {file}; could not read it: {exc}", path=str(file)
        ) from exc
    results = _results(doc, file)
    providers = {_provider(r) for r in results if isinstance(r, dict)}
    prompts = {r.get("promptIdx") for r in results if isinstance(r, dict)}
    rows: list[RecordedRow] = []
    for index, result in enumerate(results):
        if not isinstance(result, dict):
            raise DataError(
                f"{file}: expected result {index} to be an object; got {type(result).__name__}",
                path=str(file),
            )
        test = result.get("testCase") or {}
        variables = result.get("vars") or test.get("vars") or {}
        provider_name = _provider(result)
        if id_var is not None:
            if id_var not in variables:
                raise DataError(
                    f"{file}: result {index} has no var {id_var!r} (id_var); it has {sorted(variables)}",
                    path=str(file),
                )
            item_id = str(variables[id_var])
        else:
            item_id = str(test.get("description") or f"test{result.get('testIdx', index)}")
        if len(providers) > 1:
            item_id += f"/{provider_name}"
        if len(prompts) > 1:
            item_id += f"/prompt{result.get('promptIdx')}"
        grading = result.get("gradingResult") or {}
        components = grading.get("componentResults") or []
        meta = {"provider": provider_name, "output": (result.get("response") or {}).get("output")}
        failed_output = result.get("failureReason") == 2  # the provider errored: there was nothing to grade
        error_head = str(result.get("error") or "").split("\n")[0]
        for component in components:
            assertion = component.get("assertion") or {}
            if assertion_type is not None and assertion.get("type") != assertion_type:
                continue
            crit = criterion or str(assertion.get("metric") or "overall")
            score = component.get("score")
            error = None
            reason_head = str(component.get("reason") or "").split("\n")[0]
            if failed_output:
                error, score = f"the output errored: {error_head or 'failureReason 2'}", None
            elif GRADER_ERROR.match(reason_head):  # the grader itself failed (promptfoo shows score 0)
                error, score = f"the grader failed: {reason_head}", None
            elif not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
                error, score = f"expected a numeric score; got {score!r}", None
            rows.append(
                RecordedRow(
                    item_id=item_id,
                    judge=_judge_name(assertion),
                    criterion=crit,
                    score=None if score is None else float(score),
                    error=error,
                    raw=str(component.get("reason") or ""),
                    meta=meta,
                )
            )
    if not rows:
        raise DataError(
            f"expected graded assertions (gradingResult.componentResults) in {file}; got none"
            + (f" of type {assertion_type!r}" if assertion_type else ""),
            path=str(file),
        )
    scales = {r.criterion: Scale(min=0, max=1) for r in rows}
    return runs_from_rows(rows, str(file), scales)


def promptfoo_results_to_recorded(path: str | Path, out: str | Path, **kwargs: Any) -> Path:
    """Write the graded assertions of a promptfoo results file as recorded judgments (see
    :func:`read_promptfoo_results`)."""
    return save_recorded(list(read_promptfoo_results(path, **kwargs).values()), out)
