"""USD prices of a few well-known hosted models, and the cost of one call.

Prices are USD per 1M tokens, taken from the providers' public price pages as of
**2025-06** (they change; pass your own table to :func:`cost` when it matters). Input
tokens served from the provider's prompt cache are charged at ``cached_input`` when the
provider discounts them.

:func:`cost` returns ``None`` for a model it does not know: an unknown cost is reported
as unknown, never as 0. Local models (provider ``"local"``) cost ``0.0`` explicitly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from mitigate.lm.base import Usage


class Price(BaseModel):
    """USD per 1M tokens for one model. ``cached_input`` defaults to the input price."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    input: float
    output: float
    cached_input: float | None = None


# USD per 1M tokens, as published 2025-06.
PRICES: Mapping[str, Price] = {
    # OpenAI
    "gpt-4o": Price(input=2.50, output=10.00, cached_input=1.25),
    "gpt-4o-mini": Price(input=0.15, output=0.60, cached_input=0.075),
    "gpt-4.1": Price(input=2.00, output=8.00, cached_input=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cached_input=0.10),
    "gpt-4.1-nano": Price(input=0.10, output=0.40, cached_input=0.025),
    "gpt-4-turbo": Price(input=10.00, output=30.00),
    "gpt-3.5-turbo": Price(input=0.50, output=1.50),
    # Anthropic (cached_input = cache-read price)
    "claude-3-5-sonnet": Price(input=3.00, output=15.00, cached_input=0.30),
    "claude-3-7-sonnet": Price(input=3.00, output=15.00, cached_input=0.30),
    "claude-sonnet-4": Price(input=3.00, output=15.00, cached_input=0.30),
    "claude-3-5-haiku": Price(input=0.80, output=4.00, cached_input=0.08),
    "claude-3-haiku": Price(input=0.25, output=1.25, cached_input=0.03),
    "claude-3-opus": Price(input=15.00, output=75.00, cached_input=1.50),
    "claude-opus-4": Price(input=15.00, output=75.00, cached_input=1.50),
}

# A dated or aliased model name: "gpt-4o-2024-08-06", "claude-3-5-sonnet-20241022", "...-latest".
_VERSION_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
_PROVIDER_PREFIXES = ("openai/", "anthropic/")
LOCAL_PROVIDERS = frozenset({"local", "llamacpp", "fake"})


def lookup(model: str, table: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``, accepting dated names and ``openai/``/``anthropic/`` prefixes; None if unknown."""
    prices = PRICES if table is None else table
    name = model.strip()
    for prefix in _PROVIDER_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    if name in prices:
        return prices[name]
    base = _VERSION_SUFFIX.sub("", name)
    return prices.get(base)


def cost(
    model: str,
    usage: Usage,
    *,
    provider: str | None = None,
    table: Mapping[str, Price] | None = None,
) -> float | None:
    """USD cost of one call with ``usage`` on ``model``.

    Returns ``0.0`` for local providers (``provider`` in ``{"local", "llamacpp", "fake"}``),
    ``None`` when the model's price is unknown.
    """
    if provider is not None and provider in LOCAL_PROVIDERS:
        return 0.0
    price = lookup(model, table)
    if price is None:
        return None
    cached = min(usage.cached_prompt_tokens, usage.prompt_tokens)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    total = (
        (usage.prompt_tokens - cached) * price.input
        + cached * cached_rate
        + usage.completion_tokens * price.output
    )
    return total / 1_000_000
