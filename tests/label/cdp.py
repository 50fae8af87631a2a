"""Debian's headless Chromium driven over the DevTools protocol (a websocket, with aiohttp): enough to open a
page, press keys as a person would, read the page and time it. No downloaded browser."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions")


def chromium_available() -> bool:
    """Whether Debian's Chromium is installed."""
    return Path(CHROMIUM).is_file()


class Page:
    """One tab: send a protocol command, evaluate a script, press a key."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run ``method`` and return its result (RuntimeError with the protocol's error)."""
        number = next(self.ids)
        await self.ws.send_json({"id": number, "method": method, "params": params})
        while True:
            message = json.loads((await self.ws.receive()).data)
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    async def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited)."""
        found = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 10.0) -> Any:
        """Poll ``expression`` until it is truthy; its value (TimeoutError after ``timeout`` seconds)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.005)
        raise TimeoutError(f"the page never made {expression!r} true")

    async def goto(self, url: str) -> None:
        """Open ``url`` and wait for its load event."""
        await self.send("Page.enable")
        await self.send("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete'")

    async def press(self, key: str) -> None:
        """Press and release one key (a character, or ArrowLeft, ArrowRight, Backspace, Tab)."""
        text = key if len(key) == 1 else ""
        code = {"ArrowLeft": 37, "ArrowRight": 39, "Backspace": 8, "Tab": 9}.get(key, ord(key.upper()[0]))
        down = {"type": "keyDown", "key": key, "windowsVirtualKeyCode": code}
        if text:
            down["text"] = text
        await self.send("Input.dispatchKeyEvent", **down)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=key, windowsVirtualKeyCode=code)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Page]:
    """A headless Chromium with one blank tab, closed on exit."""
    profile = tempfile.mkdtemp(prefix="mitigate-chromium-")
    proc = subprocess.Popen(
        [CHROMIUM, *FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        active = Path(profile) / "DevToolsActivePort"
        end = time.monotonic() + 30
        while not (active.is_file() and len(active.read_text().splitlines()) >= 2):
            if time.monotonic() > end or proc.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            await asyncio.sleep(0.05)
        port = active.read_text().splitlines()[0]
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                targets = await r.json()
            page = next(t for t in targets if t["type"] == "page")
            async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                yield Page(ws)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(url: str, path: Path, *, size: str = "1200,900") -> Path:
    """A PNG of ``url`` taken by ``chromium --headless --screenshot`` (its scripts given 5 s of virtual
    time to fetch and draw)."""
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--screenshot={path}",
            f"--window-size={size}",
            "--virtual-time-budget=5000",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return path
