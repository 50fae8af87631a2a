"""A key a server echoes, however it writes it and wherever a snippet cut falls, reaches no answer, error,
file or stream in any piece of 8 characters or more: the battery of tests/support/key_echoes.py (every place x
every written form x pads straddling every cut) through each HTTP client, then through a CLI run's stdout,
stderr, journal, cache and rows."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.lm import AnthropicLM, Limits, LMRequest, LMResponse, Message, OpenAILM
from mitigate.lm._scrub import Scrubber
from tests.lm.test_hostile_servers import shown
from tests.support.fault_server import FaultServer
from tests.support.key_echoes import ANTHROPIC_PLACES, ENCODINGS, KEY, PLACES, Echo, echoes, leaks

_CASE = re.compile(r"case=(\d+)")


def _server(cases: list[Echo]) -> FaultServer:
    """A server answering each request with the echo its prompt names (``case=N``)."""

    def respond(path: str, body: str, key: str) -> bytes:
        found = _CASE.search(body)
        assert found is not None and key == KEY, (body[:200], key)
        return cases[int(found[1])].reply(anthropic=path.rstrip("/").endswith("/messages"))

    return FaultServer("respond", respond=respond)


def _lm(client: str, url: str) -> OpenAILM | AnthropicLM:
    limits = Limits(deadline=20.0, max_response_bytes=100_000)
    if client == "anthropic":
        return AnthropicLM("m", base_url=url, api_key=KEY, limits=limits)
    return OpenAILM("m", base_url=url + "/v1", api_key=KEY, limits=limits, transport=client)


async def _through(client: str, cases: list[Echo]) -> dict[Echo, str]:
    """What each case left in the answer or error of one call (only those that leaked)."""
    leaked: dict[Echo, str] = {}
    gate = asyncio.Semaphore(16)
    with _server(cases) as server:
        lm = _lm(client, server.url)

        async def one(i: int, case: Echo) -> None:
            request = LMRequest(messages=(Message(role="user", content=f"Rate it. case={i}"),))
            async with gate:
                try:
                    result: LMResponse | BaseException = await lm.complete(request)
                except Exception as exc:  # whatever came is looked at
                    result = exc
            text = shown(result)
            if leaks(text):
                leaked[case] = f"{leaks(text)}: {text[:600]}"

        try:
            await asyncio.gather(*(one(i, c) for i, c in enumerate(cases)))
        finally:
            await lm.aclose()
    return leaked


def _check(client: str, thin: int) -> None:
    places = ANTHROPIC_PLACES if client == "anthropic" else PLACES
    cases = list(echoes(places, thin=thin))
    leaked = asyncio.run(_through(client, cases))
    assert not leaked, f"{len(leaked)} of {len(cases)} leaked, e.g. " + "\n".join(
        f"{c}: {said}" for c, said in list(leaked.items())[:5]
    )


def test_no_piece_of_an_echoed_key_survives_any_place_form_or_cut_through_the_direct_transport():
    _check("direct", thin=9)


@pytest.mark.slow
@pytest.mark.parametrize("client", ["direct", "sdk", "httpx", "anthropic"])
def test_no_piece_of_an_echoed_key_survives_any_place_form_or_cut_through_every_client(client):
    _check(client, thin=1)


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_every_written_form_of_a_key_is_masked_whole_and_a_cut_never_keeps_a_piece(encoding):
    scrubber = Scrubber([KEY])
    written = ENCODINGS[encoding](KEY)
    for pad in range(0, 200, 7):
        text = "." * pad + written + " and more text after it"
        assert not leaks(scrubber.text(text)), (pad, scrubber.text(text))
        for limit in range(1, len(text) + 5, 5):
            assert not leaks(scrubber.clip(text, limit)), (pad, limit)
            assert not leaks(scrubber.clip(text[:limit], limit, cut=True)), (pad, limit)
            assert len(scrubber.clip(text, limit)) <= limit


def test_text_without_a_key_is_kept_as_it_is():
    scrubber = Scrubber([KEY])
    for text in ("Score: 4", "80% of it \\n is fine &amp; good", "a/b+c=d " * 40, "sk-proj-"):
        assert scrubber.text(text) == text and scrubber.clip(text, 1000) == text


_CLI_PLACES = [
    p for p in PLACES if p != "error-json-500"
]  # a 5xx is retried with backoff: the LM tests have it


@pytest.mark.parametrize(
    ("backend", "thin"),
    [
        ("openai-direct", 12),
        pytest.param("openai-direct", 2, marks=pytest.mark.slow),
        pytest.param("openai-sdk", 4, marks=pytest.mark.slow),
        pytest.param("anthropic", 4, marks=pytest.mark.slow),
    ],
)
def test_no_piece_of_an_echoed_key_reaches_any_file_or_stream_of_a_cli_run(
    backend, thin, tmp_path, monkeypatch
):
    kind, _, transport = backend.partition("-")
    places = {
        p: f for p, f in (ANTHROPIC_PLACES if kind == "anthropic" else PLACES).items() if p in _CLI_PLACES
    }
    cases = list(echoes(places, thin=thin))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("MITIGATE_CACHE_DIR", str(tmp_path / "cache"))
    bench = tmp_path / "b.jsonl"
    bench.write_text(
        "".join(
            json.dumps({"id": f"x{i}", "output": f"case={i}", "human": {"q": 3}}) + "\n"
            for i in range(len(cases))
        ),
        encoding="utf-8",
    )
    prompt = tmp_path / "p.txt"
    prompt.write_text("Rate 1 to 5.\n{{output}}\nScore:", encoding="utf-8")
    with _server(cases) as server:
        result = CliRunner().invoke(
            app,
            [
                "judge",
                "-b",
                f"jsonl:{bench}",
                "-c",
                "q",
                "--prompt",
                str(prompt),
                "--backend",
                f"{kind}:m",
                "--base-url",
                server.url + ("/v1" if kind == "openai" else ""),
                "-n",
                "0",
                "--stop-after",
                "0",
                "--concurrency",
                "16",
                "--no-progress",
                "--run-dir",
                str(tmp_path / "run"),
                "--out",
                str(tmp_path / "rows.jsonl"),
                *(["--transport", transport] if transport else []),
            ],
        )
        served = server.requests
    assert served >= len(cases), result.output
    assert "bug in mitigate" not in result.output
    assert not leaks(result.stdout) and not leaks(result.stderr), (
        leaks(result.output),
        result.output[-2000:],
    )
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name not in ("b.jsonl", "p.txt")]
    assert any(p.name == "journal.jsonl" for p in written) and any(p.parent.name == "cache" for p in written)
    for path in written:
        assert not leaks(path.read_bytes()), (path, leaks(path.read_bytes()))
