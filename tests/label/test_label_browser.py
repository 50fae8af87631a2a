"""``mitigate label`` in Debian's headless Chromium: a dozen items labelled from the keyboard, the server
killed in the middle and restarted, then the labels file, its order and weights, and ``mitigate estimate
--labels`` reading it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from tests.label.cdp import chromium, chromium_available
from tests.label.toy import SYSTEMS, write_toy

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not chromium_available(), reason="needs Debian's chromium (/usr/bin/chromium)"),
]


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    """``mitigate label ARGS`` in its own process; it and the address it printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mitigate", "label", *args], stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.strip().startswith("http://127.0.0.1:"):
            return proc, line.strip()
    raise AssertionError(f"mitigate label printed no address (exit {proc.wait()})")


async def label_from_keyboard(url: str, keys: list[str]) -> list[int]:
    """Open the page, then per key: press it and wait for the next item; the positions labelled."""
    async with chromium() as page:
        await page.goto(url)
        await page.wait_for("document.body.dataset.position !== undefined")
        done = []
        for key in keys:
            left = int(await page.evaluate("document.body.dataset.left"))
            position = int(await page.evaluate("document.body.dataset.position"))
            await page.press(key)
            await page.wait_for(f"Number(document.body.dataset.left) === {left - 1}")
            done.append(position)
            if left > 1:
                await page.wait_for(f"document.body.dataset.position !== '{position}'")
        assert await page.evaluate("document.getElementById('msg').textContent") == ""
        return done


async def undo_and_back(url: str) -> None:
    """Press 3 (a label), u (undo it): the item is unlabelled again; ← shows the item before."""
    async with chromium() as page:
        await page.goto(url)
        await page.wait_for("document.body.dataset.position !== undefined")
        left = int(await page.evaluate("document.body.dataset.left"))
        position = await page.evaluate("document.body.dataset.position")
        await page.press("3")
        await page.wait_for(f"Number(document.body.dataset.left) === {left - 1}")
        await page.press("u")
        await page.wait_for(f"Number(document.body.dataset.left) === {left}")
        await page.wait_for(f"document.body.dataset.position === '{position}'")
        await page.press("ArrowLeft")
        await page.wait_for(f"document.body.dataset.position === '{int(position) - 1}'")


def test_a_dozen_items_labelled_by_keyboard_survive_a_killed_server_and_estimate_reads_them(tmp_path):
    bench, recorded = write_toy(tmp_path)
    labels = tmp_path / "labels.jsonl"
    args = ["-b", f"jsonl:{bench}", "-c", "quality", "--per-system", "4", "--seed", "5", "-o", str(labels)]
    args += ["--recorded", str(recorded), "--labeller", "tester"]
    keys = ["1", "2", "3", "4", "5", "4", "3", "2", "1", "5", "5", "4"]

    proc, url = start_server(*args)
    try:
        first = asyncio.run(label_from_keyboard(url, keys[:6]))
    finally:
        proc.send_signal(signal.SIGKILL)  # no clean shutdown: what is on disk is all there is
        proc.wait()
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert first == list(range(6))
    assert [r["labels"]["quality"] for r in rows] == [float(k) for k in keys[:6]] + [None] * 6

    proc, url = start_server(*args)  # the same command resumes at the first unlabelled item
    try:
        asyncio.run(undo_and_back(url))
        second = asyncio.run(label_from_keyboard(url, keys[6:]))
    finally:
        proc.terminate()
        proc.wait()
    assert second == list(range(6, 12))

    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    assert [r["labels"]["quality"] for r in rows] == [float(k) for k in keys]
    assert [r["order"] for r in rows] == list(range(12))
    assert {r["labeller"] for r in rows} == {"tester"}
    per_system = {s: sum(r["group"] == s for r in rows) for s in SYSTEMS}
    assert per_system == dict.fromkeys(SYSTEMS, 4)
    assert all(r["weight"] == 20 / 4 and r["probability"] == 4 / 20 for r in rows)
    assert [r["group"] for r in rows] != sorted(r["group"] for r in rows)  # shown in a random order

    ran = CliRunner().invoke(
        app,
        ["estimate", "-b", f"jsonl:{bench}", "--recorded", str(recorded), "--labels", str(labels), "--json"],
    )
    assert ran.exit_code == 0, ran.output
    groups = json.loads(ran.stdout.splitlines()[0])["groups"]
    assert {g["group"]: g["n_labelled"] for g in groups} == dict.fromkeys(SYSTEMS, 4)
    assert all(g["n_weighted"] == 4 for g in groups)


async def label_pairs(url: str, keys: list[tuple[str, str]]) -> None:
    """Per item: the first key labels the first criterion, the second the next one, then the page moves on."""
    async with chromium() as page:
        await page.goto(url)
        await page.wait_for("document.body.dataset.position !== undefined")
        for first, second in keys:
            position = await page.evaluate("document.body.dataset.position")
            await page.press(first)
            await page.wait_for("document.querySelectorAll('.crit')[1].classList.contains('active')")
            await page.press(second)
            await page.wait_for(f"document.body.dataset.position !== '{position}'")


def test_pairs_on_two_criteria_are_labelled_by_letter_and_stored_on_the_benchmarks_order(tmp_path):
    bench, _ = write_toy(tmp_path, pairwise=True)
    labels = tmp_path / "labels.jsonl"
    args = ["-b", f"jsonl:{bench}", "-c", "quality", "-c", "fluency", "--per-system", "2", "-o", str(labels)]
    keys = [("a", "t"), ("b", "a"), ("t", "b"), ("a", "a")]
    proc, url = start_server(*args)
    try:
        asyncio.run(label_pairs(url, keys))
    finally:
        proc.terminate()
        proc.wait()
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    swap = {"A": "B", "B": "A", "tie": "tie"}
    shown = {"a": "A", "b": "B", "t": "tie"}
    for row, (first, second) in zip(rows, keys, strict=False):
        expected = {"quality": shown[first], "fluency": shown[second]}
        if row["swap"]:
            expected = {c: swap[v] for c, v in expected.items()}
        assert row["labels"] == expected
    assert {r["swap"] for r in rows[: len(keys)]} == {True, False}  # both shown orders were labelled
