"""USD list prices of well-known hosted models and the cost of one call.

Prices are USD per 1M tokens as published in **2025-06** (list prices, not bills); cache reads and writes are
priced apart, and a batch API request costs ``batch_discount`` times that. :func:`register_price`,
:func:`load_prices` and ``$MITIGATE_PRICES`` add prices; an unknown model's cost is None, never 0.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mitigate.errors import ConfigError
from mitigate.lm._base import LM, Usage, innermost
from mitigate.paths import loads_json, read_file

PRICES_ENV = "MITIGATE_PRICES"
"""Environment variable naming a JSON price file loaded (once) on the first lookup."""


class Price(BaseModel):
    """USD per 1M tokens for one model (cache reads and writes at the input price unless given)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input: float = Field(ge=0.0)
    output: float = Field(ge=0.0)
    cached_input: float | None = Field(default=None, ge=0.0)
    cache_write: float | None = Field(default=None, ge=0.0)
    batch_discount: float = Field(default=0.5, gt=0.0, le=1.0)


class CostBreakdown(BaseModel):
    """The cost of some usage split by kind of token (USD); ``total`` is their sum."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input: float = 0.0
    cached_input: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0
    batch: bool = False

    @property
    def total(self) -> float:
        return self.input + self.cached_input + self.cache_write + self.output


# list prices, 2025-06; Anthropic's cache writes at its 5-minute cache's price
PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(input=2.50, output=10.00, cached_input=1.25),
    "gpt-4o-mini": Price(input=0.15, output=0.60, cached_input=0.075),
    "gpt-4.1": Price(input=2.00, output=8.00, cached_input=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cached_input=0.10),
    "gpt-4.1-nano": Price(input=0.10, output=0.40, cached_input=0.025),
    "gpt-4-turbo": Price(input=10.00, output=30.00),
    "gpt-3.5-turbo": Price(input=0.50, output=1.50),
    "claude-3-5-sonnet": Price(input=3.00, output=15.00, cached_input=0.30, cache_write=3.75),
    "claude-3-7-sonnet": Price(input=3.00, output=15.00, cached_input=0.30, cache_write=3.75),
    "claude-sonnet-4": Price(input=3.00, output=15.00, cached_input=0.30, cache_write=3.75),
    "claude-3-5-haiku": Price(input=0.80, output=4.00, cached_input=0.08, cache_write=1.00),
    "claude-3-haiku": Price(input=0.25, output=1.25, cached_input=0.03, cache_write=0.30),
    "claude-3-opus": Price(input=15.00, output=75.00, cached_input=1.50, cache_write=18.75),
    "claude-opus-4": Price(input=15.00, output=75.00, cached_input=1.50, cache_write=18.75),
}

# A dated or aliased model name: "gpt-4o-2024-08-06", "claude-3-5-sonnet-20241022", "...-latest".
_VERSION_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
LOCAL_PROVIDERS = frozenset({"local", "llamacpp", "fake"})

_user_prices: dict[str, Price] = {}
_env_loaded = False
_lock = threading.Lock()


def register_price(model: str, price: Price | Mapping[str, float]) -> Price:
    """Add or replace the price of ``model`` (winning over the built-in table); returns it."""
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"expected a non-empty model name to price; got {model!r}")
    try:
        value = price if isinstance(price, Price) else Price.model_validate(dict(price))
    except ValidationError as exc:
        raise ConfigError(
            f"expected a price for {model!r} with input/output USD per 1M tokens; got "
            f"{price!r} ({exc.errors()[0]['loc']}: {exc.errors()[0]['msg']})"
        ) from None
    with _lock:
        _user_prices[model.strip()] = value
    return value


def load_prices(path: str | Path) -> dict[str, Price]:
    """Register every price in a JSON file ``{"model": {"input": ..., "output": ..., ...}}``; returns them."""
    p = Path(path)
    try:
        data = loads_json(read_file(p, "a readable JSON price file").decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"expected a UTF-8 JSON price file at {p}; got {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"expected a JSON price file at {p}; it is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"expected a JSON object mapping model names to prices in {p}; got {type(data).__name__}"
        )
    out: dict[str, Price] = {}
    for model, price in data.items():
        if not isinstance(price, dict):
            raise ConfigError(f"{p}: expected an object of prices for {model!r}; got {type(price).__name__}")
        out[model] = register_price(model, price)
    return out


def _load_env() -> None:
    global _env_loaded
    if not _env_loaded:
        _env_loaded = True
        if path := os.environ.get(PRICES_ENV):
            load_prices(path)


def lookup(model: str, table: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model`` (dated or ``openai/``-prefixed names too); None if unknown."""
    name = model.strip().removeprefix("openai/").removeprefix("anthropic/")
    base = _VERSION_SUFFIX.sub("", name)
    if table is not None:
        return table.get(name) or table.get(base)
    _load_env()
    with _lock:
        user = _user_prices.get(name) or _user_prices.get(base)
    return user or PRICES.get(name) or PRICES.get(base)


def breakdown(price: Price, usage: Usage, *, batch: bool = False) -> CostBreakdown:
    """The cost of ``usage`` at ``price``, split into regular input, cache reads, cache writes and output."""
    prompt = max(0, usage.prompt_tokens)
    reads = min(max(0, usage.cached_prompt_tokens), prompt)
    writes = min(max(0, usage.cache_write_tokens), prompt - reads)
    plain = prompt - reads - writes
    factor = (price.batch_discount if batch else 1.0) / 1_000_000
    read_rate = price.input if price.cached_input is None else price.cached_input
    write_rate = price.input if price.cache_write is None else price.cache_write
    return CostBreakdown(
        input=plain * price.input * factor,
        cached_input=reads * read_rate * factor,
        cache_write=writes * write_rate * factor,
        output=max(0, usage.completion_tokens) * price.output * factor,
        batch=batch,
    )


def cost(
    model: str,
    usage: Usage,
    *,
    provider: str | None = None,
    table: Mapping[str, Price] | None = None,
    batch: bool = False,
) -> float | None:
    """USD list-price cost of one call's ``usage`` (0.0 for a local ``provider``, None when unpriced)."""
    if provider is not None and provider in LOCAL_PROVIDERS:
        return 0.0
    price = lookup(model, table)
    return None if price is None else breakdown(price, usage, batch=batch).total


def why_unpriced(lm: LM) -> str:
    """In words, why the calls of ``lm`` (under its cache and retry wrappers) have no known cost."""
    inner = innermost(lm)
    spec = str(getattr(inner, "spec", type(inner).__name__))
    model = str(getattr(inner, "model", "") or "")
    server = getattr(inner, "base_url", None) or getattr(inner, "api_base", None)
    if server:
        return f"{spec} runs on a server at a base URL, which has no list price"
    if getattr(inner, "provider", "") in ("openai", "anthropic", "dspy") and lookup(model) is None:
        return (
            f"no list price for {model!r} in mitigate's price list (add one: mitigate.lm.register_price or a "
            f"JSON file named by ${PRICES_ENV})"
        )
    return f"{spec} reports no price for its calls"
