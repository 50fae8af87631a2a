"""The stub server's batch endpoints, prompt-cache emulation and rate limits, driven by the real SDKs."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import pytest

from mitigate.testing import StubOpenAIServer

if TYPE_CHECKING:  # the SDKs (2 s to import) are imported by the tests that drive them
    import anthropic
    import openai

LONG = "word " * 1100


def _line(cid: str, text: str) -> str:
    return json.dumps(
        {
            "custom_id": cid,
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": text}]},
        }
    )


async def _wait_openai(client: openai.AsyncOpenAI, batch_id: str) -> object:
    for _ in range(200):
        batch = await client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        await asyncio.sleep(0.01)
    raise AssertionError("batch did not finish")


async def _wait_anthropic(client: anthropic.AsyncAnthropic, batch_id: str) -> object:
    for _ in range(200):
        batch = await client.messages.batches.retrieve(batch_id)
        if batch.processing_status == "ended":
            return batch
        await asyncio.sleep(0.01)
    raise AssertionError("batch did not end")


async def test_openai_batch_runs_through_files_and_batches_with_results_by_custom_id():
    import openai

    failing = {"k1"}
    with StubOpenAIServer(latency=0.0, batch_fail=lambda p, cid, b: 500 if cid in failing else None) as s:
        client = openai.AsyncOpenAI(base_url=s.base_url, api_key="x", max_retries=0)
        upload = await client.files.create(
            file=("in.jsonl", "\n".join(_line(f"k{i}", f"hi {i}") for i in range(3)).encode()),
            purpose="batch",
        )
        created = await client.batches.create(
            input_file_id=upload.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"run": "r1"},
        )
        assert created.status == "validating" and created.metadata == {"run": "r1"}
        batch = await _wait_openai(client, created.id)
        assert batch.status == "completed"
        assert (batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed) == (
            3,
            2,
            1,
        )
        out = [json.loads(x) for x in (await client.files.content(batch.output_file_id)).text.splitlines()]
        err = [json.loads(x) for x in (await client.files.content(batch.error_file_id)).text.splitlines()]
        assert sorted(x["custom_id"] for x in out) == ["k0", "k2"]
        assert out[0]["response"]["status_code"] == 200 and out[0]["response"]["body"]["choices"]
        assert err[0]["custom_id"] == "k1" and err[0]["response"]["status_code"] == 500
        listed = await client.batches.list(limit=10)
        assert [b.id for b in listed.data] == [created.id]
        assert s.batch.created == [{"provider": "openai", "id": created.id, "custom_ids": ["k0", "k1", "k2"]}]
        await client.close()


async def test_openai_batch_over_the_request_limit_fails_validation():
    import openai

    with StubOpenAIServer(latency=0.0, batch_max_requests={"openai": 2}) as s:
        client = openai.AsyncOpenAI(base_url=s.base_url, api_key="x", max_retries=0)
        upload = await client.files.create(
            file=("in.jsonl", "\n".join(_line(f"k{i}", "x") for i in range(3)).encode()), purpose="batch"
        )
        created = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        batch = await _wait_openai(client, created.id)
        assert batch.status == "failed"
        assert batch.errors.data[0].code == "too_many_requests"
        await client.close()


async def test_openai_batch_expires_and_lists_unrun_requests_as_batch_expired():
    import openai

    with StubOpenAIServer(latency=0.0, batch_latency=0.05, batch_expire_after=0.08) as s:
        client = openai.AsyncOpenAI(base_url=s.base_url, api_key="x", max_retries=0)
        upload = await client.files.create(
            file=("in.jsonl", "\n".join(_line(f"k{i}", "x") for i in range(5)).encode()), purpose="batch"
        )
        created = await client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        batch = await _wait_openai(client, created.id)
        assert batch.status == "expired"
        err = [json.loads(x) for x in (await client.files.content(batch.error_file_id)).text.splitlines()]
        assert err and {e["error"]["code"] for e in err} == {"batch_expired"}
        assert batch.request_counts.completed + len(err) == 5
        await client.close()


async def test_anthropic_message_batch_reports_counts_and_results_of_every_kind():
    import anthropic

    with StubOpenAIServer(
        latency=0.0, batch_latency=0.01, batch_fail=lambda p, cid, b: 400 if cid == "c1" else None
    ) as s:
        client = anthropic.AsyncAnthropic(base_url=s.url, api_key="x", max_retries=0)
        created = await client.messages.batches.create(
            requests=[
                {
                    "custom_id": f"c{i}",
                    "params": {
                        "model": "claude-x",
                        "max_tokens": 5,
                        "messages": [{"role": "user", "content": f"item {i}"}],
                    },
                }
                for i in range(3)
            ]
        )
        assert created.processing_status == "in_progress" and created.request_counts.processing == 3
        batch = await _wait_anthropic(client, created.id)
        assert (batch.request_counts.succeeded, batch.request_counts.errored) == (2, 1)
        results = {r.custom_id: r.result async for r in await client.messages.batches.results(created.id)}
        assert results["c0"].type == "succeeded" and results["c0"].message.content[0].text == "Score: 4"
        assert results["c1"].type == "errored" and results["c1"].error.error.type == "invalid_request_error"
        assert [b.id for b in (await client.messages.batches.list(limit=5)).data] == [created.id]
        await client.close()


async def test_anthropic_batch_refuses_bad_custom_ids_and_oversize_batches():
    import anthropic

    with StubOpenAIServer(latency=0.0, batch_max_requests={"anthropic": 1}) as s:
        client = anthropic.AsyncAnthropic(base_url=s.url, api_key="x", max_retries=0)
        params = {"model": "claude-x", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
        with pytest.raises(anthropic.BadRequestError):
            await client.messages.batches.create(
                requests=[{"custom_id": "a", "params": params}, {"custom_id": "b", "params": params}]
            )
        with pytest.raises(anthropic.BadRequestError):
            await client.messages.batches.create(requests=[{"custom_id": "bad id!", "params": params}])
        assert s.batch.created == []
        await client.close()


async def test_openai_prompt_cache_reuses_prefixes_of_1024_tokens_in_steps_of_128():
    import openai

    with StubOpenAIServer(latency=0.0) as s:
        client = openai.AsyncOpenAI(base_url=s.base_url, api_key="x", max_retries=0)

        async def cached(text: str) -> int:
            r = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
            return r.usage.prompt_tokens_details.cached_tokens

        assert await cached(LONG + "first") == 0
        assert await cached(LONG + "second") == 1024  # 1,101 tokens: the 1,024-token prefix is reused
        assert await cached("short prompt") == 0
        assert await cached("other " + LONG) == 0  # a different first token: no shared prefix
        await client.close()


async def test_anthropic_prompt_cache_reads_and_writes_at_breakpoints_only():
    import anthropic

    with StubOpenAIServer(latency=0.0) as s:
        client = anthropic.AsyncAnthropic(base_url=s.url, api_key="x", max_retries=0)

        async def usage(marked: bool, tail: str) -> tuple[int, int, int]:
            block = {
                "type": "text",
                "text": LONG,
                **({"cache_control": {"type": "ephemeral"}} if marked else {}),
            }
            r = await client.messages.create(
                model="claude-x", max_tokens=5, system=[block], messages=[{"role": "user", "content": tail}]
            )
            u = r.usage
            return u.cache_creation_input_tokens, u.cache_read_input_tokens, u.input_tokens

        assert await usage(False, "one") == (0, 0, 1101)
        assert await usage(True, "one") == (1100, 0, 1)
        assert await usage(True, "two words") == (0, 1100, 2)
        await client.close()


async def test_rate_limit_headers_and_429_follow_the_provider_formats():
    import anthropic
    import openai

    with StubOpenAIServer(latency=0.0, rate_limit_requests=2, rate_limit_window=30) as s:
        client = openai.AsyncOpenAI(base_url=s.base_url, api_key="x", max_retries=0)
        raw = await client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        assert raw.headers["x-ratelimit-limit-requests"] == "2"
        assert raw.headers["x-ratelimit-remaining-requests"] == "1"
        assert raw.headers["x-ratelimit-reset-requests"].endswith("s")
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.RateLimitError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert float(caught.value.response.headers["retry-after"]) > 0
        aclient = anthropic.AsyncAnthropic(base_url=s.url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.RateLimitError) as caught2:
            await aclient.messages.create(
                model="c", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
        assert caught2.value.response.headers["anthropic-ratelimit-requests-remaining"] == "0"
        assert caught2.value.response.headers["anthropic-ratelimit-requests-reset"].endswith("Z")
        assert s.rate_limited == 2
        await client.close()
        await aclient.close()
