"""A misbehaving HTTP server on 127.0.0.1 for the bounds tests: hangs, trickles, closes, floods or answers garbage.

Each connection gets one answer chosen by ``mode``; every loop is bounded (a stop event, socket
timeouts, a byte budget), so a test that forgets to stop it still ends.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

KEY = "sk-test-secret-4f9a1c"
"""The API key the tests send; a server that echoes it must not get it stored."""

_OK = {"id": "c1", "object": "chat.completion", "model": "m",
       "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}

BODIES: dict[str, bytes] = {
    "truncated": b'{"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "mess',
    "html": b"<html><body><h1>502 Bad Gateway</h1></body></html>",
    "empty": b"",
    "content_null": json.dumps({**_OK, "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                                                      "finish_reason": "stop"}]}).encode(),
    "no_choices": json.dumps({**_OK, "choices": []}).encode(),
    "deep": b"[" * 20_000 + b"]" * 20_000,
    "anthropic_no_content": json.dumps({"id": "m1", "type": "message", "role": "assistant", "model": "m",
                                        "stop_reason": "end_turn",
                                        "usage": {"input_tokens": 3, "output_tokens": 1}}).encode(),
    "echo_key": json.dumps({**_OK, "choices": [{"index": 0, "message": {
        "role": "assistant", "content": f"Score: 4 (your key is {KEY})"}, "finish_reason": "stop"}]}).encode(),
    "anthropic_echo_key": json.dumps({"id": "m1", "type": "message", "role": "assistant", "model": "m",
                                      "stop_reason": "end_turn", "content": [
                                          {"type": "text", "text": f"Score: 4 (your key is {KEY})"}],
                                      "usage": {"input_tokens": 3, "output_tokens": 1}}).encode(),
}


class FaultServer:
    """Answers every request the way ``mode`` says: a key of :data:`BODIES` (HTTP 200 with that body),
    ``hang`` (never answers), ``trickle`` (one byte every 0.1 s), ``close`` (closes the socket) or
    ``huge`` (a 200 whose body never ends, within a 200 MB budget)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.requests = 0
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> FaultServer:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(timeout=2)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _read_request(self, conn: socket.socket) -> bool:
        data = b""
        deadline = time.monotonic() + 5
        while b"\r\n\r\n" not in data and time.monotonic() < deadline and not self._stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return False
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length and time.monotonic() < deadline and not self._stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return False
            body += chunk
        return bool(head)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        try:
            while not self._stop.is_set():
                if not self._read_request(conn):
                    return
                with self._lock:
                    self.requests += 1
                if not self._answer(conn):
                    return
        except OSError:
            return
        finally:
            conn.close()

    def _answer(self, conn: socket.socket) -> bool:
        """Send the answer; False when the connection is finished with."""
        if self.mode == "close":
            return False
        if self.mode == "hang":
            self._stop.wait(30)
            return False
        if self.mode == "trickle":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            for _ in range(300):
                if self._stop.wait(0.1):
                    break
                conn.sendall(b" ")
            return False
        if self.mode == "huge":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200000000\r\n\r\n"
                         b'{"pad": "')
            chunk = b"x" * 65536
            for _ in range(200_000_000 // len(chunk)):
                if self._stop.is_set():
                    break
                conn.sendall(chunk)
            return False
        body = BODIES[self.mode]
        ctype = b"text/html" if self.mode == "html" else b"application/json"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        return True
