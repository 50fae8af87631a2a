"""List-price cost accounting: regular, cached-read, cache-write and batch tokens priced separately."""

from __future__ import annotations

import json

import pytest

from mitigate.errors import ConfigError
from mitigate.lm import Usage
from mitigate.lm import _pricing as pricing
from mitigate.lm._pricing import Price, breakdown, cost, load_prices, lookup, register_price


@pytest.fixture(autouse=True)
def _clean_user_prices(monkeypatch):
    monkeypatch.setattr(pricing, "_user_prices", {})
    monkeypatch.setattr(pricing, "_env_loaded", False)
    monkeypatch.delenv(pricing.PRICES_ENV, raising=False)


def test_each_kind_of_token_has_its_own_price():
    # claude-3-5-haiku: input 0.80, cache write 1.00, cache read 0.08, output 4.00 per 1M tokens
    usage = Usage(
        prompt_tokens=3_000_000,
        completion_tokens=1_000_000,
        cached_prompt_tokens=1_000_000,
        cache_write_tokens=1_000_000,
    )
    parts = breakdown(lookup("claude-3-5-haiku-20241022"), usage)
    assert (parts.input, parts.cache_write, parts.cached_input, parts.output) == pytest.approx(
        (0.80, 1.00, 0.08, 4.00)
    )
    assert cost("claude-3-5-haiku-latest", usage) == pytest.approx(5.88)


def test_batch_requests_cost_half_of_every_kind():
    usage = Usage(prompt_tokens=2_000_000, completion_tokens=1_000_000, cached_prompt_tokens=1_000_000)
    plain = cost("gpt-4o-mini", usage)
    batch = cost("gpt-4o-mini", usage, batch=True)
    assert plain == pytest.approx(0.15 + 0.075 + 0.60)
    assert batch == pytest.approx(plain / 2)


def test_cache_writes_never_exceed_the_uncached_prompt():
    usage = Usage(prompt_tokens=100, cached_prompt_tokens=80, cache_write_tokens=50)
    parts = breakdown(Price(input=1.0, output=1.0, cached_input=0.1, cache_write=2.0), usage)
    assert parts.input == 0.0
    assert parts.cached_input == pytest.approx(80 * 0.1 / 1e6)
    assert parts.cache_write == pytest.approx(20 * 2.0 / 1e6)


def test_registered_price_extends_and_overrides_the_table():
    assert lookup("my-finetune") is None
    register_price("my-finetune", {"input": 1.0, "output": 2.0})
    assert cost("my-finetune", Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)) == pytest.approx(
        3.0
    )
    register_price("gpt-4o", Price(input=9.0, output=9.0))
    assert lookup("gpt-4o-2024-08-06").input == 9.0
    assert lookup("gpt-4o", table=pricing.PRICES).input == 2.50


def test_price_file_from_the_environment_is_loaded_on_first_lookup(tmp_path, monkeypatch):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"house-model": {"input": 0.5, "output": 1.5, "batch_discount": 0.4}}))
    monkeypatch.setenv(pricing.PRICES_ENV, str(path))
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert cost("house-model", usage, batch=True) == pytest.approx(0.8)


def test_bad_price_files_and_entries_are_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="expected a JSON object mapping model names"):
        load_prices(bad)
    with pytest.raises(ConfigError, match="readable JSON price file"):
        load_prices(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="expected a price for 'm'"):
        register_price("m", {"input": -1, "output": 1})


def test_unknown_models_have_unknown_cost_and_local_ones_cost_nothing():
    assert cost("no-such-model", Usage(prompt_tokens=10)) is None
    assert cost("anything", Usage(prompt_tokens=10), provider="local") == 0.0
