"""The judge's LM: ``--backend``, how its server is reached and bounded, and ``--batch``.

Which option applies to which backend is read from the backend registry
(:class:`mitigate.lm._registry.Backend`: ``network``, ``options``, ``batch``), so a plugin's backend is
checked as the built-in ones are: ``--base-url`` and ``--timeout`` apply to network backends, ``--transport``
and ``--guided`` to those that take them, ``--batch`` to those whose provider has a batch API.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, get_args

from mitigate.cli.options._declare import CommandOptions, option
from mitigate.constraints import Interval
from mitigate.errors import ConfigError
from mitigate.lm import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_PROMPT_CHARS,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SAMPLES,
)

DEFAULT_BACKEND = "local"
"""The backend of every command that calls a judge LM unless told otherwise: the embedded default model."""

Transport = Literal["auto", "direct", "sdk", "aiohttp", "httpx"]
"""``--transport``: the HTTP clients of an openai: backend (:data:`mitigate.lm._openai.Transport`)."""
ServerGuided = Literal["vllm", "vllm-legacy", "sglang", "llamacpp"]
"""The guided decoding of an OpenAI-compatible server: they need ``--base-url``."""
Guided = Literal["openai", ServerGuided]
"""``--guided``: how an openai: backend sends an answer constraint (``mitigate.lm._openai.GuidedServer``)."""

BACKEND = option(
    "backend",
    "--backend",
    help="openai:<model>, anthropic:<model>, dspy:<model>, local, local:<path.gguf>, replay:<path>",
)
BASE_URL = option(
    "base_url",
    help="server URL for the openai, anthropic or dspy backend; given again (or @FILE: "
    "one URL a line, with an optional weight after it), requests are spread over those "
    "replicas of one server by least outstanding requests, a replica that keeps failing or is "
    "hung taken out and probed again, its requests sent to another; an empty value drops those "
    "given before it",
)
TIMEOUT = option(
    "timeout",
    help="seconds an attempt may go without anything from the server (connecting, before "
    "the answer starts, between two pieces of it); past it the attempt is retried within "
    "--deadline (openai, anthropic, dspy; default: the deadline)",
    accepts=(Interval(float, 0.0, None, closed="neither"), None),
)
DEADLINE = option(
    "deadline",
    help="seconds one request may spend on the server over all its attempts, connect to "
    "last byte (openai, anthropic, dspy); past it the request fails, not retried: the server "
    "is hung or trickling its answer; counts for --stop-after",
    accepts=(Interval(float, 0.0, None, closed="neither"),),
)
MAX_RESPONSE_BYTES = option(
    "max_response_bytes",
    help="largest answer body read, in bytes (openai, anthropic); reading stops past it",
    accepts=(Interval(int, 1, None),),
)
MAX_PROMPT_CHARS = option(
    "max_prompt_chars",
    help="longest prompt sent, in characters (about 4 per token; openai, "
    "anthropic, dspy); a longer one is refused before any request",
    accepts=(Interval(int, 1, None),),
)
MAX_SAMPLES = option(
    "max_samples",
    help="most --samples asked for in one request; more is refused before any request",
    accepts=(Interval(int, 1, None),),
)
PATIENCE = option(
    "patience",
    help="longest wait between retries, in seconds; a server asking for a longer Retry-After stops the run",
    accepts=(Interval(float, 0.0, None, closed="neither"),),
)
TRANSPORT = option(
    "transport",
    help="HTTP client of an openai: backend: auto (direct when aiohttp is installed), direct (plain "
    "aiohttp, the least CPU per call), sdk (the openai SDK), or the SDK over aiohttp or httpx",
)
GUIDED = option(
    "guided",
    help="how an openai: backend sends an answer constraint (--constrain): openai (response_format JSON "
    "schema), or the guided decoding of the OpenAI-compatible server at --base-url: vllm "
    "(structured_outputs), vllm-legacy (guided_regex), sglang (regex) or llamacpp (grammar)",
)
BATCH_HELP = (
    "send the LM calls through the provider's batch API (openai: or anthropic:, half the price, "
    "results within 24 h); resumable: rerun the same command to pick up the same batches"
)
BATCH = option("batch", help=BATCH_HELP)
BATCH_RETRIES = option(
    "batch_retries",
    help="follow-up batches for requests that failed or expired",
    accepts=(Interval(int, 0, None),),
)

Backend = Annotated[str, BACKEND]
BaseUrl = Annotated[list[str] | None, BASE_URL]
"""The judge's server, or its replicas: ``--base-url`` given once or more (:func:`base_urls_given`)."""


def base_urls_given(values: list[str] | str | None) -> list[str]:
    """The ``--base-url`` values that count: those after the last empty one (which drops the ones before it);
    one string (options built in Python) is one value."""
    out: list[str] = []
    for value in [values] if isinstance(values, str) else values or ():
        out = [] if value == "" else [*out, value]
    return out


Timeout = Annotated[float | None, TIMEOUT]


# --------------------------------------------------------------------------- the registry's facts


def backend_kind(spec: str) -> str:
    """The kind of a backend spec: "openai" for "openai:gpt-4o-mini", "local" for "local:model.gguf"."""
    return spec.partition(":")[0].strip().lower()


def registered_backend(spec: str) -> Any:
    """The registry's :class:`~mitigate.lm._registry.Backend` of the spec's kind; None for a kind not
    registered (refused with the accepted forms when the backend is built)."""
    from mitigate.registry import registered  # here: a command's options are declared without the registry

    return registered("backend").get(backend_kind(spec))


def _backends(has: str) -> list[tuple[str, Any]]:
    from mitigate.registry import registered

    return [(name, b) for name, b in registered("backend").items() if getattr(b, has)]


def check_backend(o: "ServerOptions", backend: str) -> None:
    """The options that apply to some backends only, against ``backend`` (what the registry says it takes)."""
    found = registered_backend(backend)
    for flag, value in (("--base-url", base_urls_given(o.base_url)), ("--timeout", o.timeout)):
        if value not in (None, "", []) and found is not None and not found.network:
            raise ConfigError(
                f"{flag} applies to the {', '.join(name for name, _ in _backends('network'))} "
                f"backends; got --backend {backend!r}"
            )
    for flag, choice in (("--transport", o.transport), ("--guided", o.guided)):
        if choice is not None and (found is None or flag[2:] not in found.options):
            taking = [b for _, b in _backends("options") if flag[2:] in b.options]
            abouts = [b.about for b in taking if b.about]
            about = f" ({'; '.join(abouts)})" if abouts else ""
            raise ConfigError(
                f"{flag} applies to {', '.join(f for b in taking for f in b.forms)} "
                f"backends{about}; got --backend {backend!r}"
            )
    if o.guided in get_args(ServerGuided) and not base_urls_given(o.base_url):
        raise ConfigError(
            f"--guided {o.guided} names the guided decoding of an OpenAI-compatible server; "
            "expected --base-url with it; got none"
        )


def check_batch(
    backend: str,
    batch: bool,
    retries: int,
    *,
    calls_lm: bool = True,
    folder: Path | None,
    folder_option: str | None = None,
) -> None:
    """--batch and --batch-retries against the backend and the run folder they need.

    ``folder_option`` names the option that gives the batch record its folder when the command may run without
    one (judge's ``--run-dir``); None when the folder is always there.
    """
    if not batch:
        if retries:
            raise ConfigError(
                f"--batch-retries applies with --batch; got --batch-retries {retries} without --batch"
            )
        return
    found = registered_backend(backend)
    if calls_lm and (found is None or not found.batch):
        forms = " or ".join(repr(f) for _, b in _backends("batch") for f in b.forms)
        article = "an" if forms[1:2] in tuple("aeiou") else "a"
        raise ConfigError(
            f"batch mode needs {article} {forms} backend (--batch goes through the provider's "
            f"batch API); got --backend {backend!r}"
        )
    if folder_option is not None and folder is None:
        raise ConfigError(
            f"--batch needs {folder_option} (the batch record lives there, so a killed run resumes); got none"
        )


# --------------------------------------------------------------------------- the groups


@dataclass(frozen=True)
class ServerOptions(CommandOptions):
    """How the judge LM's server is reached and bounded (network backends), and how long a run waits on it."""

    base_url: BaseUrl = None
    timeout: Timeout = None
    deadline: Annotated[float, DEADLINE] = DEFAULT_DEADLINE
    max_response_bytes: Annotated[int, MAX_RESPONSE_BYTES] = DEFAULT_MAX_RESPONSE_BYTES
    max_prompt_chars: Annotated[int, MAX_PROMPT_CHARS] = DEFAULT_MAX_PROMPT_CHARS
    max_samples: Annotated[int, MAX_SAMPLES] = DEFAULT_MAX_SAMPLES
    patience: Annotated[float, PATIENCE] = 60.0
    transport: Annotated[Transport | None, TRANSPORT] = None
    guided: Annotated[Guided | None, GUIDED] = None

    def check_group(self) -> None:
        """More ``--samples`` per item (where the command has it) than one request may ask for are refused."""
        samples = getattr(self, "samples", 1)
        if samples > self.max_samples:
            raise ConfigError(
                f"expected --samples at most --max-samples ({self.max_samples}); got --samples {samples}"
            )


@dataclass(frozen=True)
class BackendOptions(ServerOptions):
    """The judge's one backend (``--backend``) and its server options, checked against what it takes."""

    backend: Backend = DEFAULT_BACKEND

    def check_group(self) -> None:
        """The server options the backend does not take are refused (``--base-url`` for the local model ...),
        and replicas (several ``--base-url``) with ``--batch``, which goes to one server."""
        check_backend(self, self.backend)
        urls = base_urls_given(self.base_url)
        if getattr(self, "batch", False) and urls and (len(urls) > 1 or urls[0].startswith("@")):
            raise ConfigError(
                "--batch sends the LM calls to one server's batch API; expected one --base-url "
                f"with it; got {' '.join(urls)}"
            )


@dataclass(frozen=True)
class BatchOptions(CommandOptions):
    """``--batch``: the LM calls through the provider's batch API (checked by the command, which knows the
    folder)."""

    batch: Annotated[bool, BATCH] = False
    batch_retries: Annotated[int, BATCH_RETRIES] = 0


class LMRunOptions(Protocol):
    """What every command that calls a judge LM has: the fields ``build_judge`` and ``build_backend`` read
    (read-only: a command's options may narrow a type, ``constrain`` a Literal where this says ``str``)."""

    @property
    def benchmark(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def base_url(self) -> list[str] | None: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def deadline(self) -> float: ...
    @property
    def max_response_bytes(self) -> int: ...
    @property
    def max_prompt_chars(self) -> int: ...
    @property
    def max_samples(self) -> int: ...
    @property
    def patience(self) -> float: ...
    @property
    def prompt(self) -> Path | None: ...
    @property
    def temperature(self) -> float: ...
    @property
    def scoring(self) -> str: ...
    @property
    def constrain(self) -> str: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def transport(self) -> str | None: ...
    @property
    def guided(self) -> str | None: ...
    @property
    def samples_per_item(self) -> int: ...  # 1 where the command has no --samples
    @property
    def reducer_name(self) -> str: ...  # "mean" where the command has no --reducer
    @property
    def system_file(self) -> Path | None: ...  # None where the command has no --system
    @property
    def scale_range(self) -> tuple[float, float] | None: ...  # None: the prompt's own
    @property
    def lm_cache(self) -> bool: ...  # whether the judge LM caches its calls on disk
