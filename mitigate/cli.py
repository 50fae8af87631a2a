"""The ``mitigate`` command line.

Every error a user can cause is one line on stderr, ``error: <what was expected; what came>``,
and a non-zero exit: 2 when the input was refused before any work (bad option, file, data,
backend spec), 1 when a run could not finish (stopped by the circuit breaker, every item
failed, an unexpected failure). ``--debug`` (or ``MITIGATE_DEBUG=1``) shows the traceback
instead. Options are checked before data is loaded, data and prompts before the first LM call.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import click
import typer
from typer.core import TyperGroup

from mitigate.errors import ConfigError, MitigateError, RunStoppedError
from mitigate.registry import ConstraintLike, Interval, Options, check_param, lookup
from mitigate.search import ENGINES, Objective, search
from mitigate.selectors import registered_selectors
from mitigate.strategies import PerturbedGuidelineDemos, parse_pipeline

EXIT_REFUSED = 2
"""Exit code when the input was refused (bad option, file, data or spec) before any work."""
EXIT_FAILED = 1
"""Exit code when a run could not finish (circuit breaker, every item failed, unexpected failure)."""

_DEBUG_ENV = "MITIGATE_DEBUG"
NETWORK_BACKENDS = ("openai", "anthropic", "dspy")
BATCH_BACKENDS = ("openai", "anthropic")
"""Backends whose provider has a batch API (``--batch``)."""


def _one_line(text: str) -> str:
    """``text`` on one line (a message listing files over several lines stays readable)."""
    return " ".join(str(text).replace("\n", " ; ").split()).replace(" ; ;", " ;")


def _usage_error_classes() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(usage errors, "no arguments: show help") classes: click's, and those of the click copy recent typer ships."""
    found: list[type[Exception]] = [click.ClickException]
    help_only: list[type[Exception]] = [click.exceptions.NoArgsIsHelpError]
    vendored = next((c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"), None)
    if vendored is not None and vendored is not click.ClickException:
        found.append(vendored)
        extra = getattr(sys.modules.get(vendored.__module__), "NoArgsIsHelpError", None)
        if isinstance(extra, type):
            help_only.append(extra)
    return tuple(found), tuple(help_only)


_USAGE_ERRORS, _NO_ARGS = _usage_error_classes()
_ABORTS = tuple({click.exceptions.Abort, typer.Abort})


def _say_error(message: str) -> None:
    typer.secho(f"error: {_one_line(message)}", fg=typer.colors.RED, err=True)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as one line, ``warning: <message>`` (no source line, no file:line of our code)."""
    typer.secho(f"warning: {_one_line(str(message))}", fg=typer.colors.YELLOW, err=True)


class OneLineErrors(TyperGroup):
    """The command group: turns every exception into one ``error:`` line and an exit code.

    ``--debug`` anywhere on the command line (or ``MITIGATE_DEBUG=1``) re-raises instead, so
    the traceback is shown.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        """Run the command; print one line per error and exit with :data:`EXIT_REFUSED` or :data:`EXIT_FAILED`."""
        argv = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in argv or os.environ.get(_DEBUG_ENV, "") not in ("", "0")
        argv = [a for a in argv if a != "--debug"]
        code = 0
        with warnings.catch_warnings():
            if not debug:
                warnings.showwarning = _show_warning
            try:
                rv = super().main(args=argv, prog_name=prog_name, complete_var=complete_var,
                                  standalone_mode=False, **extra)
                code = rv if isinstance(rv, int) else 0
            except _NO_ARGS as exc:
                ctx = getattr(exc, "ctx", None)
                typer.echo(ctx.get_help() if ctx is not None else "")
                code = EXIT_REFUSED
            except _USAGE_ERRORS as exc:  # usage errors: unknown option, value not an int ...
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                _say_error(exc.format_message() + hint)  # type: ignore[attr-defined]
                code = int(getattr(exc, "exit_code", EXIT_REFUSED))
            except _ABORTS:
                _say_error("aborted")
                code = EXIT_FAILED
            except KeyboardInterrupt:
                _say_error("interrupted; a run with --run-dir (or --out) resumes where it stopped")
                code = 130
            except Exception as exc:
                if debug:
                    raise
                code = _report(exc)
        if standalone_mode:
            sys.exit(code)
        return code


def _report(exc: BaseException) -> int:
    """Print one line for ``exc``; its exit code."""
    from pydantic import ValidationError

    if isinstance(exc, RunStoppedError):
        _say_error(str(exc))
        return EXIT_FAILED
    if isinstance(exc, MitigateError):
        _say_error(str(exc))
        return EXIT_REFUSED
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(x) for x in first.get("loc", ())) or exc.title
        _say_error(f"invalid value for {where}: {first.get('msg', exc)}; got {first.get('input')!r}")
        return EXIT_REFUSED
    if isinstance(exc, UnicodeError):
        _say_error(f"expected UTF-8 text; got {exc}")
        return EXIT_REFUSED
    if isinstance(exc, BrokenPipeError):  # the reader of our output went away (| head): nothing to say
        try:  # and nothing to flush at exit (the Python docs' recipe for SIGPIPE)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_FAILED
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        _say_error(f"{exc.strerror or type(exc).__name__}{where}")
        return EXIT_FAILED
    _say_error(f"unexpected {type(exc).__name__}: {exc} (a bug in mitigate; rerun with --debug for the traceback "
               "and report it)")
    return EXIT_FAILED


app = typer.Typer(
    cls=OneLineErrors,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Make LLM-as-a-judge evaluators less biased and more consistent, and measure it.",
)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of an error instead of one line "
                                        "(also: MITIGATE_DEBUG=1); accepted anywhere on the command line")] = False,
) -> None:
    """Make LLM-as-a-judge evaluators less biased and more consistent, and measure it."""


# --------------------------------------------------------------------------- option checks


def _check(command: str, option: str, value: Any, *constraints: ConstraintLike) -> Any:
    """``value`` when a constraint accepts it; ConfigError "The '--x' parameter of mitigate cmd must be ..." otherwise."""
    return check_param(f"mitigate {command}", option, value, constraints)


def _check_run_options(command: str, opts: dict[str, Any]) -> None:
    """The numeric and choice options shared by judge, compare and search, checked before any work."""
    checks: dict[str, tuple[ConstraintLike, ...]] = {
        "limit": (Interval(int, 0, None),),
        "samples": (Interval(int, 1, None),),
        "max_tokens": (Interval(int, 1, None),),
        "concurrency": (Interval(int, 1, None),),
        "temperature": (Interval(float, 0.0, 2.0),),
        "reducer": (Options("mean", "median", "majority"),),
        "scoring": (Options("auto", "parse", "expected"),),
        "constrain": (Options("auto", "format", "answer", "json", "off"),),
        "timeout": (Interval(float, 0.0, None, closed="neither"), None),
        "patience": (Interval(float, 0.0, None, closed="neither"),),
        "stop_after": (Interval(int, 0, None),),
        "transport": (Options("auto", "aiohttp", "httpx", "direct"), None),
        "guided": (Options("openai", "vllm", "vllm-legacy", "sglang", "llamacpp"), None),
        "batch_retries": (Interval(int, 0, None),),
        "n_boot": (Interval(int, 0, None),),
        "budget": (Interval(int, 1, None),),
        "consistency_weight": (Interval(float, 0.0, None),),
        "bias_weight": (Interval(float, 0.0, None),),
    }
    for name, constraints in checks.items():
        if name in opts:
            _check(command, "--" + name.replace("_", "-"), opts[name], *constraints)
    import math

    for name in ("temperature", "timeout", "patience", "consistency_weight", "bias_weight"):
        value = opts.get(name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"expected a finite number for --{name.replace('_', '-')}; got {value}")
    kind = str(opts.get("backend", "")).partition(":")[0].strip().lower()
    for name in ("base_url", "timeout"):
        if opts.get(name) not in (None, "") and kind in ("local", "replay", "fake"):
            raise ConfigError(f"--{name.replace('_', '-')} applies to the {', '.join(NETWORK_BACKENDS)} backends; "
                              f"got --backend {opts.get('backend')!r}")
    _check_large_run_options(opts, kind)


def _check_large_run_options(opts: dict[str, Any], kind: str) -> None:
    """--transport, --batch and --batch-retries against the backend and the run folder they need."""
    for name in ("transport", "guided"):
        if opts.get(name) is not None and kind != "openai":
            raise ConfigError(f"--{name} applies to openai:<model> backends (the OpenAI API and OpenAI-compatible "
                              f"servers such as vLLM); got --backend {opts.get('backend')!r}")
    if opts.get("guided") not in (None, "openai") and not opts.get("base_url"):
        raise ConfigError(f"--guided {opts['guided']} names the guided decoding of an OpenAI-compatible server; "
                          "expected --base-url with it; got none")
    if not opts.get("batch"):
        if opts.get("batch_retries"):
            raise ConfigError(f"--batch-retries applies with --batch; got --batch-retries {opts['batch_retries']} "
                              "without --batch")
        return
    calls_lm = "released" not in opts or bool(opts.get("pipeline"))  # compare of released judges alone: no calls
    if calls_lm and kind not in BATCH_BACKENDS:
        raise ConfigError(f"batch mode needs an 'openai:<model>' or 'anthropic:<model>' backend (--batch goes "
                          f"through the provider's batch API); got --backend {opts.get('backend')!r}")
    if "run_dir" in opts and opts["run_dir"] is None:
        raise ConfigError("--batch needs --run-dir (the batch record lives there, so a killed run resumes); "
                          "got none")


def _read_text_file(path: Path, option: str) -> str:
    """The UTF-8 text of the file given to ``option``; one-line ConfigError when it cannot be read."""
    if not path.exists():
        raise ConfigError(f"expected {option} to name a file; {path} does not exist", path=str(path))
    if not path.is_file():
        raise ConfigError(f"expected {option} to name a file; {path} is a directory", path=str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"expected {option} to name a readable file; {path}: {exc.strerror}", path=str(path)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"expected {option} to be UTF-8 text; {path}:{line} holds the byte {data[exc.start]:#04x}, "
                          "which is not UTF-8 (re-save the file as UTF-8)", path=str(path), line=line) from None


def _writable_dir(path: Path, option: str) -> Path:
    """Create the folder given to ``option`` when needed and check a file can be written in it."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"expected {option} to be a folder; {path} is a file", path=str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"expected {option} to be a folder mitigate can write in; {path}: "
                          f"{exc.strerror or type(exc).__name__}", path=str(path)) from None
    return path


def _writable_file(path: Path, option: str) -> Path:
    """Check the file given to ``option`` can be written (its folder is created when needed)."""
    if path.is_dir():
        raise ConfigError(f"expected {option} to name a file; {path} is a directory", path=str(path))
    _writable_dir(path.parent, f"the folder of {option}")
    return path


@contextmanager
def _run_dir(path: Path | None, option: str = "--run-dir") -> Iterator[Path | None]:
    """Check the run folder and hold its lock for the whole command (None: no folder)."""
    if path is None:
        yield None
        return
    from mitigate.runner import RunLock

    _writable_dir(path, option)
    for name in ("journal.jsonl", "results.json"):
        if (path / name).is_dir():
            raise ConfigError(f"expected {path / name} to be a file mitigate writes; it is a directory",
                              path=str(path / name))
    with RunLock.for_journal(path / "journal.jsonl"):
        yield path


def _run(coro_fn: Callable[..., Any], **opts: Any) -> Any:
    """``asyncio.run`` of a command's coroutine."""
    return asyncio.run(coro_fn(**opts))


def _parse_scale(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    parts = text.replace(":", ",").replace("-", ",").split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise ConfigError(f"expected --scale as MIN,MAX such as 1,5; got {text!r}") from None
    return lo, hi


def _first_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _benchmark_and_criterion(name: str, criterion: str | None) -> tuple[Any, str]:
    """Load a benchmark and check the criterion (default: its first)."""
    from mitigate.data.registry import load

    bench = load(name)
    crit = criterion or (bench.criteria[0] if bench.criteria else None)
    if crit is None:
        raise ConfigError(f"benchmark {bench.name!r} declares no criteria; pass --criterion")
    if bench.criteria and crit not in bench.criteria:
        raise ConfigError(f"expected a criterion of {bench.name} {list(bench.criteria)}; got {crit!r}")
    return bench, crit


def _template_text(prompt: Path | None, benchmark: str, criterion: str) -> str:
    """The judge template: the user's file, or the built-in prompt for the benchmark's criterion."""
    from mitigate.builtin_prompts import default_prompt_for, prompt_text

    if prompt is None:
        return prompt_text(default_prompt_for(benchmark, criterion))
    return _read_text_file(prompt, "--prompt")


def _backend(spec: str, base_url: str | None, *, cache: bool, timeout: float | None = None,
             patience: float = 60.0, transport: str | None = None, guided: str | None = None) -> Any:
    """The LM for ``spec`` with retries (a Retry-After longer than ``patience`` seconds stops them), and the
    on-disk cache when ``cache``; ``timeout`` is the per-request timeout of network backends, ``transport``
    the HTTP client and ``guided`` the guided-decoding fields of an openai: backend."""
    from mitigate.lm.registry import get, wrap
    from mitigate.lm.retry import RetryPolicy

    kwargs: dict[str, Any] = {"base_url": base_url} if base_url else {}
    if timeout is not None:
        kwargs["timeout"] = timeout
    if transport is not None:
        kwargs["transport"] = transport
    if guided is not None:
        kwargs["guided"] = guided
    policy = RetryPolicy(base_delay=min(0.5, patience), max_delay=patience)
    return wrap(get(spec, **kwargs), cache=cache, retry=policy)


_TIMEOUT_HELP = "seconds before one request to the server times out (openai, anthropic, dspy; default 120)"
_SCORING_HELP = ("parse (read the score), expected (logprob-weighted) or auto (expected for the embedded default "
                 "model, else parse)")
_CONSTRAIN_HELP = "answer constraint: auto, format, answer, json or off (see JudgeConfig.constrain)"
_PATIENCE_HELP = "longest wait between retries, in seconds; a server asking for a longer Retry-After stops the run"
_STOP_AFTER_HELP = ("stop the run after this many failures in a row that would repeat for every item (refused "
                    "key or model, unreachable server ...); 0 never stops")


TRANSPORT_HELP = ("HTTP client of an openai: backend: auto (the SDK), direct (plain aiohttp, the least CPU per "
                  "call: for an OpenAI-compatible server such as vLLM at high concurrency), aiohttp or httpx")
GUIDED_HELP = ("how an openai: backend sends an answer constraint (--constrain): openai (response_format JSON "
               "schema), or the guided decoding of the OpenAI-compatible server at --base-url: vllm "
               "(structured_outputs), vllm-legacy (guided_regex), sglang (regex) or llamacpp (grammar)")
BATCH_HELP = ("send the LM calls through the provider's batch API (openai: or anthropic:, half the price, results "
              "within 24 h); resumable: rerun the same command to pick up the same batches")


def _batch_session(enabled: bool, folder: Path | None, retries: int, progress: bool) -> Any:
    """A batch session recording in ``folder``/batches when ``--batch`` is on (None otherwise).

    The options were checked by :func:`_check_run_options` (``--batch`` has a folder and a backend
    with a batch API, ``--batch-retries`` >= 0).
    """
    if not enabled or folder is None:
        return None
    from mitigate.batch_run import BatchOptions, BatchSession

    return BatchSession(BatchOptions(retry_failed=retries, progress=progress), folder / "batches")


@app.command()
def judge(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="summeval, summeval-bartscore, summeval-h2h, uss-sgd, "
                                           "uss-multiwoz, webnlg, tmu-gfm, or jsonl:<path>")] = "summeval",
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="judge only the first N items (0 = all)")] = 5,
    backend: Annotated[str, typer.Option("--backend", help="openai:<model>, anthropic:<model>, dspy:<model>, "
                                         "local, local:<path.gguf>, replay:<path>, fake")] = "local",
    base_url: Annotated[str | None, typer.Option(help="server URL for the openai, anthropic or dspy backend")] = None,
    timeout: Annotated[float | None, typer.Option(help=_TIMEOUT_HELP)] = None,
    patience: Annotated[float, typer.Option(help=_PATIENCE_HELP)] = 60.0,
    stop_after: Annotated[int, typer.Option(help=_STOP_AFTER_HELP)] = 3,
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}}")] = None,
    system: Annotated[Path | None, typer.Option(help="optional system message template file")] = None,
    scale: Annotated[str | None, typer.Option(help="answer scale MIN,MAX (default: from the prompt)")] = None,
    temperature: Annotated[float, typer.Option(help="sampling temperature")] = 0.0,
    samples: Annotated[int, typer.Option(help="samples per item (reduced by --reducer)")] = 1,
    reducer: Annotated[str, typer.Option(help="mean, median or majority")] = "mean",
    scoring: Annotated[str, typer.Option(help=_SCORING_HELP)] = "auto",
    constrain: Annotated[str, typer.Option(help=_CONSTRAIN_HELP)] = "auto",
    max_tokens: Annotated[int, typer.Option(help="max tokens per answer")] = 128,
    concurrency: Annotated[int, typer.Option(help="judgments in flight at once")] = 4,
    run_dir: Annotated[Path | None, typer.Option(help="folder for the journal and results (resumable)")] = None,
    restart: Annotated[bool, typer.Option(help="discard an existing journal in --run-dir")] = False,
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk (identical re-runs make no calls)")] = True,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    pipeline: Annotated[str | None, typer.Option(
        "--pipeline", help="mitigations wrapping the judge: pipeline text such as \"name(k=v) | name2\", or "
        "@file.json (a spec file such as 'mitigate search --out' writes)")] = None,
    transport: Annotated[str | None, typer.Option(help=TRANSPORT_HELP)] = None,
    guided: Annotated[str | None, typer.Option(help=GUIDED_HELP)] = None,
    batch: Annotated[bool, typer.Option(help=BATCH_HELP + " (needs --run-dir)")] = False,
    batch_retries: Annotated[int, typer.Option(help="follow-up batches for requests that failed or expired")] = 0,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="also write one row per item (scores, verdicts, failures with raw text, flags, "
        "usage) to this file: JSON lines, or CSV when it ends in .csv")] = None,
) -> None:
    """Judge the first items of a benchmark and print each judgment beside the human score."""
    opts = dict(locals())
    _check_run_options("judge", opts)
    if out is not None:
        _writable_file(out, "--out")
    with _run_dir(run_dir):
        _run(_judge, **opts)


async def _judge(**opts: Any) -> None:
    from mitigate.judge import JudgeConfig, PromptJudge, answer_mode
    from mitigate.prompt import JudgePrompt
    from mitigate.runner import preflight, run, write_atomic

    system = _read_text_file(opts["system"], "--system") if opts["system"] is not None else None
    if opts["pipeline"] is not None:
        parse_pipeline(opts["pipeline"])  # bad pipeline text or file fails before data or calls
    bench, crit = _benchmark_and_criterion(opts["benchmark"], opts["criterion"])
    text = _template_text(opts["prompt"], opts["benchmark"], crit)
    jp = JudgePrompt.from_template(text, system=system, scale=_parse_scale(opts["scale"]), criterion=crit)
    lm = _backend(opts["backend"], opts["base_url"], cache=opts["cache"], timeout=opts["timeout"],
                  patience=opts["patience"], transport=opts["transport"], guided=opts["guided"])
    session = _batch_session(opts["batch"], opts["run_dir"], opts["batch_retries"], opts["progress"])
    try:
        config = JudgeConfig(
            temperature=opts["temperature"], n=opts["samples"], reducer=opts["reducer"], max_tokens=opts["max_tokens"],
            **answer_mode(lm, opts["scoring"], opts["constrain"]),
        )
        pj = PromptJudge(jp, lm, config)
        judge_obj = _with_pipeline(pj, opts.get("pipeline"))
        items = bench.items[: opts["limit"]] if opts["limit"] else bench.items
        preflight(judge_obj, items)  # every item fits the prompt: checked before anything is printed or called
        typer.echo(f"{bench.summary()}\njudging {len(items)} items on {crit!r} with {lm.spec}", err=True)
        journal = opts["run_dir"] / "journal.jsonl" if opts["run_dir"] else None
        result = await run(judge_obj, items, concurrency=opts["concurrency"], journal=journal, check=False,
                           restart=opts["restart"], progress=opts["progress"], stop_after=opts["stop_after"],
                           batch=session)
    finally:
        if session is not None:
            await session.aclose()
            typer.echo(session.stats.line(), err=True)
        await lm.aclose()
    by_id = {it.id: it for it in items}
    for j in result.judgments:
        human = by_id[j.item_id].human.get(crit)
        score = j.scores.get(crit)
        shown = "FAILED" if score is None else f"{score:g}"
        human_s = "-" if human is None else f"{human:.2f}"
        detail = j.error or (j.failures[0].reason if j.failures and score is None else _first_line(j.raw[0] if j.raw else ""))
        typer.echo(f"{j.item_id}\tjudge={shown}\thuman={human_s}\t{_first_line(detail)}")
    typer.echo(result.summary.line(), err=True)
    if opts.get("out") is not None:
        from mitigate.harness.judgments_file import write_judgments

        written = write_judgments(result, opts["out"], items=items, criterion=crit)
        typer.echo(f"wrote {written} ({len(result.judgments)} rows)", err=True)
    if opts["run_dir"]:
        out = write_atomic(opts["run_dir"] / "results.json", json.dumps({
            "benchmark": bench.name, "criterion": crit, "backend": lm.spec,
            "summary": result.summary.model_dump(mode="json"),
            "judgments": [j.model_dump(mode="json") for j in result.judgments],
        }, indent=1))
        typer.echo(f"wrote {out}", err=True)
    _fail_when_all_failed(result)


def _fail_when_all_failed(result: Any) -> None:
    """Exit :data:`EXIT_FAILED` with one line when every item of a run ended in an LM error."""
    s = result.summary
    if s.items and s.errors == s.items:
        first = next((j.error for j in result.judgments if j.error), "")
        _say_error(f"all {s.items} items failed; the first: {first}")
        raise typer.Exit(code=EXIT_FAILED)


@app.command("prompts")
def prompts_cmd(
    name: Annotated[str | None, typer.Argument(help="print this built-in prompt's text, or 'inspect'")] = None,
    file: Annotated[Path | None, typer.Argument(help="with 'inspect': the template file to read")] = None,
    system: Annotated[Path | None, typer.Option(help="with 'inspect': a system message template file")] = None,
    const: Annotated[list[str] | None, typer.Option(
        "--const", help="with 'inspect': NAME=VALUE (or NAME=@file) filled into the template once, e.g. a rubric "
        "or a Jinja variable; repeat for several")] = None,
) -> None:
    """List the built-in judge prompts, print one, or 'inspect FILE': show what mitigate reads from a template."""
    from mitigate.builtin_prompts import list_prompts, prompt_text

    if name is None:
        typer.echo("\n".join(list_prompts()))
    elif name == "inspect":
        typer.echo(_inspect(file, system, const or []))
    else:
        typer.echo(prompt_text(name))


def _inspect(file: Path | None, system: Path | None, consts: list[str]) -> str:
    """What ``JudgePrompt.from_template`` recovers from ``file`` (see ``mitigate.prompt.describe_template``)."""
    from mitigate.errors import ConfigError
    from mitigate.prompt import describe_template

    if file is None or not file.is_file():
        raise ConfigError(f"expected 'mitigate prompts inspect FILE' with an existing template file; got {file}")
    constants: dict[str, str] = {}
    for item in consts:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected --const NAME=VALUE or NAME=@file; got {item!r}")
        if value.startswith("@"):
            value = Path(value[1:]).read_text(encoding="utf-8")
        constants[key.strip()] = value
    text = file.read_text(encoding="utf-8")
    sys_text = system.read_text(encoding="utf-8") if system is not None else None
    return describe_template(text, system=sys_text, constants=constants or None)


@app.command("compare")
def compare_cmd(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="summeval, summeval-bartscore, summeval-h2h, uss-sgd, "
                                           "uss-multiwoz, webnlg, tmu-gfm, or jsonl:<path>")] = "summeval",
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None,
    pipeline: Annotated[list[str] | None, typer.Option(
        "--pipeline", "-p", help="a mitigation pipeline to compare, e.g. baseline, \"name(k=v) | name2\" or "
        "@file.json; repeat for several (the first entry is the reference)")] = None,
    recorded: Annotated[list[Path] | None, typer.Option(
        "--recorded", help="a recorded-judgments file (JSON lines or .csv, see docs/recorded_format.md): every "
        "judge in it that answered the criterion becomes an entry, replayed with no LM call; repeat for "
        "several; listed after the pipelines")] = None,
    released: Annotated[list[str] | None, typer.Option(
        "--released", help="a released judge to replay, e.g. chatgpt-rts, gpt4-rts (summeval), chatgpt-h2h "
        "(summeval-h2h); repeat for several; listed last")] = None,
    backend: Annotated[str, typer.Option("--backend", help="LM for the pipelines: openai:<model>, "
                                         "anthropic:<model>, dspy:<model>, local, local:<path.gguf>")] = "local",
    base_url: Annotated[str | None, typer.Option(help="server URL for the openai, anthropic or dspy backend")] = None,
    timeout: Annotated[float | None, typer.Option(help=_TIMEOUT_HELP)] = None,
    patience: Annotated[float, typer.Option(help=_PATIENCE_HELP)] = 60.0,
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}} "
                                                "(default: the built-in prompt for the criterion)")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="judge only the first N items, document by "
                                       "document (0 = all)")] = 0,
    train: Annotated[str | None, typer.Option(
        "--train", help="fit on train, compare on test: a fraction such as 0.5 (the benchmark split by document "
        "with --seed) or a training benchmark sharing no document with -b; every pipeline that learns from data "
        "(random, stratified, highest-RS, perturbed demos) is fitted on it first")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for journals, results.json, report.md "
                                      "and plots (a rerun resumes)")] = Path("reports/compare"),
    likelihood: Annotated[bool, typer.Option(help="compute LS with the embedded model and report "
                                             "BiasScore")] = False,
    concurrency: Annotated[int, typer.Option(help="judgments in flight at once")] = 4,
    temperature: Annotated[float, typer.Option(help="sampling temperature of the base judge")] = 0.0,
    samples: Annotated[int, typer.Option(help="samples per item of the base judge")] = 1,
    max_tokens: Annotated[int, typer.Option(help="max tokens per answer")] = 128,
    scoring: Annotated[str, typer.Option(help=_SCORING_HELP)] = "auto",
    constrain: Annotated[str, typer.Option(help=_CONSTRAIN_HELP)] = "auto",
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples per interval (0: none)")] = 1000,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap and permutation tests")] = 0,
    restart: Annotated[bool, typer.Option(help="discard existing journals in --out")] = False,
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True,
    progress: Annotated[bool, typer.Option(help="show progress bars")] = True,
    transport: Annotated[str | None, typer.Option(help=TRANSPORT_HELP)] = None,
    guided: Annotated[str | None, typer.Option(help=GUIDED_HELP)] = None,
    batch: Annotated[bool, typer.Option(help=BATCH_HELP + "; the pipelines' requests share batches")] = False,
    batch_retries: Annotated[int, typer.Option(help="follow-up batches for requests that failed or expired")] = 0,
    probes: Annotated[str | None, typer.Option(
        "--probes", help="also run the bias battery over every pipeline entry: 'all' or probe names such as "
        "authority,bandwagon (see 'mitigate probe'); adds a 'Bias probes' table per entry")] = None,
    rewriter: Annotated[str | None, typer.Option(help="LM spec writing the LM-assisted probes' rewrites")] = None,
) -> None:
    """Compare mitigation pipelines, recorded and released judges on a benchmark: accuracy and bias side by side."""
    opts = dict(locals())
    _check_run_options("compare", opts)
    _train_option(train)
    _writable_dir(out, "--out")
    _run(_compare, **opts, command=" ".join(["mitigate", *sys.argv[1:]]))


async def _compare(**opts: Any) -> None:
    from mitigate.harness.compare import Entry, check_compare, compare, select_items
    from mitigate.harness.report import write_report
    from mitigate.runner import preflight

    pipelines = list(opts["pipeline"] or [])
    recorded = list(opts.get("recorded") or [])
    released = list(opts["released"] or [])
    if not pipelines and not released and not recorded:
        raise ConfigError("expected at least one --pipeline (e.g. --pipeline baseline), --recorded file or "
                          "--released judge; got none")
    parsed = [(text, parse_pipeline(text)) for text in pipelines]  # bad pipeline text fails before data or calls
    chosen_probes = _compare_probes(opts.get("probes"), opts.get("rewriter"), bool(pipelines))
    bench, crit = _benchmark_and_criterion(opts["benchmark"], opts["criterion"])
    entries: list[Entry] = []
    lm = None
    if pipelines:
        from mitigate.judge import JudgeConfig, PromptJudge, answer_mode
        from mitigate.prompt import JudgePrompt

        if bench.pairwise and opts["prompt"] is None:
            raise ConfigError(f"benchmark {bench.name!r} is pairwise; expected --prompt with a pairwise template that "
                              "shows {{output}} and {{output_b}} and asks which is better; got none")
        answer: dict[str, Any] = {"answer": "pairwise"} if bench.pairwise else {}
        jp = JudgePrompt.from_template(_template_text(opts["prompt"], opts["benchmark"], crit), criterion=crit,
                                       **answer)
        lm = _backend(opts["backend"], opts["base_url"], cache=opts["cache"], timeout=opts["timeout"],
                      patience=opts["patience"], transport=opts["transport"], guided=opts["guided"])
        config = JudgeConfig(temperature=opts["temperature"], n=opts["samples"], max_tokens=opts["max_tokens"],
                             **answer_mode(lm, opts["scoring"], opts["constrain"]))
        base = PromptJudge(jp, lm, config)
        entries += [Entry.from_pipeline(text.strip() or "baseline", base, pipe) for text, pipe in parsed]
    for path in recorded:
        entries += Entry.all_recorded(path, crit)
    entries += [Entry.from_released(name, crit) for name in released]
    train = _train_option(opts.get("train"))
    check_compare(bench, crit, entries, limit=opts["limit"] or None, seed=opts["seed"], train=train)
    chosen = select_items(bench.items, opts["limit"] or None)
    for entry in entries:  # every item fits every pipeline's prompts: checked before anything is called
        if entry.kind == "pipeline":  # an entry still to be fitted is checked through the judge it wraps
            preflight(entry.judge if entry.judge is not None else entry.base, chosen)
    typer.echo(f"{bench.summary()}\ncomparing {len(entries)} entries on {crit!r}: "
               f"{', '.join(e.name for e in entries)}", err=True)
    session = _batch_session(opts["batch"] and bool(pipelines), opts["out"], opts["batch_retries"],
                             opts["progress"])
    probe_kw = _probe_kwargs(chosen_probes, opts.get("rewriter"), opts["cache"])
    try:
        result = await compare(
            bench, crit, entries, out_dir=opts["out"], concurrency=opts["concurrency"],
            limit=opts["limit"] or None, likelihood=opts["likelihood"], progress=opts["progress"],
            n_boot=opts["n_boot"], seed=opts["seed"], restart=opts["restart"], command=opts["command"],
            batch=session,
            train=train,
            **probe_kw,
        )
    finally:
        if session is not None:
            await session.aclose()
            typer.echo(session.stats.line(), err=True)
        if lm is not None:
            await lm.aclose()
        if probe_kw.get("rewriter") is not None:
            await probe_kw["rewriter"].aclose()
    for e in result.entries:
        typer.echo(f"{e.name}: {e.summary.line()}", err=True)
    paths = write_report(result, opts["out"])
    typer.echo((opts["out"] / "report.md").read_text(encoding="utf-8").split("\n## Every measure")[0])
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)
    failed = [e for e in result.entries if e.summary.items and e.summary.errors == e.summary.items]
    if failed:
        first = next((j.error for j in failed[0].judgments if j.error), "")
        _say_error(f"every item of {', '.join(repr(e.name) for e in failed)} failed; the first: {first}")
        raise typer.Exit(code=EXIT_FAILED)


def _compare_probes(text: str | None, rewriter: str | None, has_pipelines: bool) -> list[Any]:
    """The probes ``compare --probes`` names (checked before data or calls); [] without the option."""
    if text is None:
        if rewriter is not None:
            raise ConfigError(f"--rewriter applies with --probes; got --rewriter {rewriter!r} without --probes")
        return []
    from mitigate.probes import check_rewriter, resolve_probes

    if not has_pipelines:
        raise ConfigError("--probes runs the bias battery over pipeline entries; expected at least one --pipeline; "
                          "got none (recorded and released judges cannot judge probed texts)")
    chosen = resolve_probes(text, rewriter=rewriter is not None)
    if rewriter is None:
        check_rewriter(chosen, None)
    return chosen


def _probe_kwargs(probes: list[Any], rewriter: str | None, cache: bool) -> dict[str, Any]:
    """``compare``'s probe arguments: the probes and, when given, the rewriter backend."""
    if not probes:
        return {}
    return {"probes": probes, "rewriter": None if rewriter is None else _backend(rewriter, None, cache=cache)}


def _train_option(text: str | None) -> float | str | None:
    """``--train``: a fraction strictly between 0 and 1, or a benchmark name / ``jsonl:<path>``."""
    if text is None:
        return None
    try:
        fraction = float(text)
    except ValueError:
        return text
    return _check("compare", "--train", fraction, Interval(float, 0.0, 1.0, closed="neither"))


@app.command("report")
def report_cmd(folder: Annotated[Path, typer.Argument(help="a folder written by 'mitigate compare'")]) -> None:
    """Re-render report.md and the plots of a comparison from its results.json."""
    from mitigate.harness.report import render_report

    if not folder.is_dir():
        raise ConfigError(f"expected a folder written by 'mitigate compare'; {folder} "
                          f"{'is a file' if folder.exists() else 'does not exist'}", path=str(folder))
    results = folder / "results.json"
    if results.is_file():
        _read_text_file(results, "the results.json of the folder")
    _writable_dir(folder, "the report folder")
    paths = render_report(folder)
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)


def _with_pipeline(judge: Any, text: str | None) -> Any:
    """``judge`` wrapped by the pipeline ``text`` names (``"name(k=v) | name2"`` or ``@file.json``; None: unchanged)."""
    if text is None:
        return judge
    pipe = parse_pipeline(text)
    typer.echo(f"pipeline {text}: {json.dumps(pipe.spec())[:200]}", err=True)
    return pipe.wrap(judge)


@app.command("search")
def search_cmd(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="summeval, summeval-bartscore, summeval-h2h, uss-sgd, "
                                           "uss-multiwoz, webnlg, tmu-gfm, or jsonl:<path>")] = "summeval",
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to optimise "
                                                  "(default: the benchmark's first)")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="use only the first N labelled items, document "
                                       "by document, so each document keeps every system's output (0 = all)")] = 0,
    engine: Annotated[str, typer.Option(help=f"search engine: {', '.join(ENGINES)}")] = "random",
    budget: Annotated[int, typer.Option(help="distinct LM requests the search may make (cache hits count "
                                        "too, so a rerun retraces the same search)")] = 200,
    k: Annotated[list[int] | None, typer.Option("--k", help="demos per set; repeat for several sizes")] = None,
    selector: Annotated[list[str] | None, typer.Option(
        "--selector", help=f"candidate generator: {', '.join(registered_selectors())} (fixed needs ids: use "
        "the Python API); repeat for several (default: random and stratified)")] = None,
    perturbed: Annotated[bool, typer.Option(help="also search demos shown under reordered guidelines "
                                            "(Ghazarian et al. 2024)")] = False,
    agreement: Annotated[str, typer.Option(help="spearman, kendall, pearson or accuracy (exact match)")] = "spearman",
    consistency_weight: Annotated[float, typer.Option(help="lambda: weight of consistency under "
                                                      "guideline perturbation")] = 0.0,
    consistency: Annotated[str, typer.Option(help="kappa (chance-corrected; a judge giving one answer to "
                                             "everything cannot win) or raw (the paper's share)")] = "kappa",
    bias_weight: Annotated[float, typer.Option(help="mu: weight of |BiasScore| (needs --likelihood)")] = 0.0,
    likelihood: Annotated[str, typer.Option(help="backend computing LS for BiasScore")] = "local",
    splits: Annotated[str, typer.Option(help="train,dev,test fractions")] = "0.5,0.25,0.25",
    backend: Annotated[str, typer.Option("--backend", help="openai:<model>, anthropic:<model>, dspy:<model>, "
                                         "local, local:<path.gguf>")] = "local",
    base_url: Annotated[str | None, typer.Option(help="server URL for the openai, anthropic or dspy backend")] = None,
    timeout: Annotated[float | None, typer.Option(help=_TIMEOUT_HELP)] = None,
    patience: Annotated[float, typer.Option(help=_PATIENCE_HELP)] = 60.0,
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}}")] = None,
    temperature: Annotated[float, typer.Option(help="sampling temperature")] = 0.0,
    scoring: Annotated[str, typer.Option(help=_SCORING_HELP)] = "auto",
    constrain: Annotated[str, typer.Option(help=_CONSTRAIN_HELP)] = "auto",
    max_tokens: Annotated[int, typer.Option(help="max tokens per answer")] = 128,
    concurrency: Annotated[int, typer.Option(help="judgments in flight at once")] = 4,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples per interval (0: none)")] = 1000,
    seed: Annotated[int, typer.Option(help="seed of the split, the draws and the bootstrap")] = 0,
    out: Annotated[Path, typer.Option("--out", "-o", help="where to write the winning pipeline spec "
                                      "(load it with 'mitigate judge --pipeline @<file>')")] = Path("search_pipeline.json"),
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True,
    progress: Annotated[bool, typer.Option(help="show progress bars")] = True,
    plot: Annotated[bool, typer.Option(help="also write a PNG of the search beside --out")] = True,
    pipeline: Annotated[str, typer.Option(
        "--pipeline", help="mitigations wrapping the judge before demos are searched: pipeline text or @file.json; "
        "the saved spec holds them followed by the winner")] = "baseline",
    transport: Annotated[str | None, typer.Option(help=TRANSPORT_HELP)] = None,
    guided: Annotated[str | None, typer.Option(help=GUIDED_HELP)] = None,
) -> None:
    """Search the demo set that maximises agreement (+ consistency - bias) on dev; report it on held-out test."""
    opts = dict(locals())
    _check_run_options("search", opts)

    _check("search", "--engine", engine, Options(*ENGINES))
    for size in k or []:
        _check("search", "--k", size, Interval(int, 1, None))
    _writable_file(out, "--out")
    _search(**opts)


def _search(**opts: Any) -> None:
    from mitigate.harness.report import plot_search
    from mitigate.judge import JudgeConfig, PromptJudge, answer_mode
    from mitigate.prompt import JudgePrompt

    before = parse_pipeline(opts["pipeline"])  # bad pipeline text fails before data or calls
    bench, crit = _benchmark_and_criterion(opts["benchmark"], opts["criterion"])
    labelled = [it for it in bench.items if crit in it.human]
    if opts["limit"]:
        from mitigate.harness.compare import select_items

        labelled = select_items(labelled, opts["limit"])  # whole documents first, as compare does
    data = bench.model_copy(update={"items": tuple(labelled)})
    jp = JudgePrompt.from_template(_template_text(opts["prompt"], opts["benchmark"], crit), criterion=crit)
    lm = _backend(opts["backend"], opts["base_url"], cache=False, timeout=opts["timeout"],  # the search adds
                  patience=opts["patience"], transport=opts["transport"],  # its own cache
                  guided=opts["guided"])
    config = JudgeConfig(temperature=opts["temperature"], max_tokens=opts["max_tokens"],
                         **answer_mode(lm, opts["scoring"], opts["constrain"]))
    judge = before.wrap(PromptJudge(jp, lm, config))
    try:
        fractions = tuple(float(x) for x in opts["splits"].split(","))
    except ValueError:
        raise ConfigError(f"expected --splits as three fractions such as 0.5,0.25,0.25; got {opts['splits']!r}") from None
    if len(fractions) != 3:
        raise ConfigError(f"expected --splits as three fractions such as 0.5,0.25,0.25; got {opts['splits']!r}")
    classes = [lookup("selector", n) for n in opts["selector"] or ["random", "stratified"]]
    selectors = [cls(seed=opts["seed"]) if "seed" in cls.model_fields else cls() for cls in classes]
    objective = Objective(agreement=opts["agreement"], consistency_weight=opts["consistency_weight"],
                          consistency=opts["consistency"], bias_weight=opts["bias_weight"])
    templates: list[Any] = [None]
    if opts["perturbed"]:
        templates.append(PerturbedGuidelineDemos(kind="order", seed=opts["seed"]))
    common: dict[str, Any] = {
        "criterion": crit, "objective": objective, "k": opts["k"] or [2], "budget": opts["budget"],
        "splits": fractions, "cache": opts["cache"], "concurrency": opts["concurrency"],
        "progress": opts["progress"], "n_boot": opts["n_boot"], "seed": opts["seed"],
    }
    if objective.needs_likelihood:
        common["likelihood"] = opts["likelihood"]
    if lookup("engine", opts["engine"]).uses_selectors or opts["selector"] or opts["perturbed"]:
        common.update(selectors=selectors, perturbations=templates)  # an engine that takes none refuses them
    typer.echo(f"{bench.summary()}\nsearching demos for {crit!r} on {len(labelled)} labelled items with "
               f"{lm.spec}, engine {opts['engine']}, budget {opts['budget']} LM calls", err=True)
    result = search(judge, data, engine=opts["engine"], **common)
    typer.echo(result.summary())
    path = result.save_pipeline(opts["out"], before=before)
    typer.echo(f"wrote {path} (use it with: mitigate judge --pipeline @{path})", err=True)
    if opts["plot"]:
        typer.echo(f"wrote {plot_search(result, path.with_suffix('.png'))} (trials on dev; winner vs baseline on "
                   "test)", err=True)


# --------------------------------------------------------------------------- mitigate probe


@app.command("probe")
def probe_cmd(
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="summeval, summeval-h2h (pairwise, needs "
                                           "--prompt), uss-sgd, webnlg, tmu-gfm, or jsonl:<path>")] = "summeval",
    criterion: Annotated[str | None, typer.Option("--criterion", "-c", help="criterion to score "
                                                  "(default: the benchmark's first)")] = None,
    probes: Annotated[str, typer.Option("--probes", help="'all' (every rule-based probe, plus the LM-assisted "
                                        "ones with --rewriter) or names such as authority,bandwagon")] = "all",
    limit: Annotated[int, typer.Option("--limit", "-n", help="probe the first N items (0 = all)")] = 20,
    backend: Annotated[str, typer.Option("--backend", help="the judge's LM: openai:<model>, anthropic:<model>, "
                                         "dspy:<model>, local, local:<path.gguf>, replay:<path>")] = "local",
    rewriter: Annotated[str | None, typer.Option(help="LM spec that writes the LM-assisted probes' rewrites "
                                                 "(sentiment, assertiveness, fallacy, factual-error)")] = None,
    side: Annotated[str, typer.Option(help="pairwise items: probe the first text (a) or the second (b)")] = "a",
    base_url: Annotated[str | None, typer.Option(help="server URL for the openai, anthropic or dspy backend")] = None,
    timeout: Annotated[float | None, typer.Option(help=_TIMEOUT_HELP)] = None,
    patience: Annotated[float, typer.Option(help=_PATIENCE_HELP)] = 60.0,
    prompt: Annotated[Path | None, typer.Option(help="judge prompt template file with {{slots}} "
                                                "(default: the built-in prompt for the criterion)")] = None,
    pipeline: Annotated[str | None, typer.Option(
        "--pipeline", help="mitigations wrapping the judge (pipeline text or @file.json); they must not need "
        "fitting")] = None,
    temperature: Annotated[float, typer.Option(help="sampling temperature (the rerun for the noise floor uses the "
                                               "same)")] = 0.0,
    samples: Annotated[int, typer.Option(help="samples per item (reduced by --reducer)")] = 1,
    reducer: Annotated[str, typer.Option(help="mean, median or majority")] = "mean",
    scoring: Annotated[str, typer.Option(help=_SCORING_HELP)] = "auto",
    constrain: Annotated[str, typer.Option(help=_CONSTRAIN_HELP)] = "auto",
    max_tokens: Annotated[int, typer.Option(help="max tokens per answer")] = 128,
    tolerance: Annotated[float, typer.Option(help="score changes up to this size count as unchanged (0: CALM's "
                                             "robustness rate)")] = 0.0,
    alpha: Annotated[float, typer.Option(help="level of the probe-vs-rerun test")] = 0.05,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples per interval (0: none)")] = 1000,
    seed: Annotated[int, typer.Option(help="seed of the probes' wording and of the bootstrap")] = 0,
    concurrency: Annotated[int, typer.Option(help="judgments in flight at once")] = 4,
    cache: Annotated[bool, typer.Option(help="cache LM calls on disk")] = True,
    progress: Annotated[bool, typer.Option(help="show progress bars")] = True,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="write the whole report (every rewrite "
                                             "included) to this JSON file")] = None,
) -> None:
    """Run the bias battery: judge items as they are, again (the noise floor) and under each probe; print the table."""
    opts = dict(locals())
    _check_run_options("probe", opts)
    _check("probe", "--side", side, Options("a", "b"))
    _check("probe", "--tolerance", tolerance, Interval(float, 0.0, None))
    _check("probe", "--alpha", alpha, Interval(float, 0.0, 1.0, closed="neither"))
    if out is not None:
        _writable_file(out, "--out")
    _run(_probe, **opts)


async def _probe(**opts: Any) -> None:
    from mitigate.harness.probe import render_probe_table, run_probes
    from mitigate.judge import JudgeConfig, PromptJudge, answer_mode
    from mitigate.probes import check_rewriter, resolve_probes
    from mitigate.prompt import JudgePrompt
    from mitigate.runner import preflight, write_atomic

    chosen = [p.with_params(seed=opts["seed"], side=opts["side"])
              for p in resolve_probes(opts["probes"], rewriter=opts["rewriter"] is not None)]
    if opts["rewriter"] is None:
        check_rewriter(chosen, None)  # refused before data or calls
    if opts["pipeline"] is not None:
        parse_pipeline(opts["pipeline"])
    bench, crit = _benchmark_and_criterion(opts["benchmark"], opts["criterion"])
    if bench.pairwise and opts["prompt"] is None:
        raise ConfigError(f"benchmark {bench.name!r} is pairwise; expected --prompt with a pairwise template that "
                          "shows {{output}} and {{output_b}} and asks which is better; got none")
    answer: dict[str, Any] = {"answer": "pairwise"} if bench.pairwise else {}
    jp = JudgePrompt.from_template(_template_text(opts["prompt"], opts["benchmark"], crit), criterion=crit, **answer)
    lm = _backend(opts["backend"], opts["base_url"], cache=opts["cache"], timeout=opts["timeout"],
                  patience=opts["patience"])
    rewriter_lm = None if opts["rewriter"] is None else _backend(opts["rewriter"], None, cache=opts["cache"])
    try:
        config = JudgeConfig(temperature=opts["temperature"], n=opts["samples"], reducer=opts["reducer"],
                             max_tokens=opts["max_tokens"], **answer_mode(lm, opts["scoring"], opts["constrain"]))
        judge_obj = _with_pipeline(PromptJudge(jp, lm, config), opts["pipeline"])
        items = list(bench.items[: opts["limit"]] if opts["limit"] else bench.items)
        preflight(judge_obj, items)
        typer.echo(f"{bench.summary()}\nprobing {len(items)} items on {crit!r} with {lm.spec}: "
                   f"{', '.join(p.name for p in chosen)} ({(2 + len(chosen)) * len(items)} judgments)", err=True)
        report = await run_probes(judge_obj, items, chosen, criterion=crit, rewriter=rewriter_lm,
                                  concurrency=opts["concurrency"], progress=opts["progress"], alpha=opts["alpha"],
                                  tolerance=opts["tolerance"], n_boot=opts["n_boot"], seed=opts["seed"],
                                  label=opts["pipeline"] or "baseline")
    finally:
        await lm.aclose()
        if rewriter_lm is not None:
            await rewriter_lm.aclose()
    typer.echo(render_probe_table(report))
    if opts["out"] is not None:
        written = write_atomic(opts["out"], report.model_dump_json(indent=1))
        typer.echo(f"wrote {written} ({len(report.records)} rewrites)", err=True)


def main() -> None:  # pragma: no cover - console entry
    """Entry point for ``python -m mitigate``."""
    typer.main.get_command(app).main(prog_name="mitigate")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
