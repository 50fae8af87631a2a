"""A misbehaving HTTP server on 127.0.0.1 for tests and benchmarks: hangs, trickles, closes, floods,
redirects, echoes the client's key or answers garbage (:class:`FaultServer`). Every loop is bounded, so a
test that forgets to stop it still ends."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

KEY = "sk-test-secret-4f9a1c"
"""An API key tests send; a server that echoes it must not get it stored, printed or raised."""


def chat_answer(
    text: str | None, *, model: str = "m", finish: Any = "stop", usage: Any = None
) -> dict[str, Any]:
    """An OpenAI chat.completion object answering ``text``."""
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4} if usage is None else usage,
    }


def message_answer(
    text: str, *, model: str = "m", stop: Any = "end_turn", usage: Any = None
) -> dict[str, Any]:
    """An Anthropic Messages API message answering ``text``."""
    return {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "stop_reason": stop,
        "content": [{"type": "text", "text": text}],
        "usage": usage if usage is not None else {"input_tokens": 3, "output_tokens": 1},
    }


_ECHOED = f"Score: 4 (your key is {KEY})"
BODIES: dict[str, bytes] = {
    "truncated": b'{"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "mess',
    "html": b"<html><body><h1>502 Bad Gateway</h1></body></html>",
    "empty": b"",
    "content_null": json.dumps(chat_answer(None)).encode(),
    "no_choices": json.dumps({**chat_answer(""), "choices": []}).encode(),
    "deep": b"[" * 20_000 + b"]" * 20_000,
    "anthropic_no_content": json.dumps(
        {k: v for k, v in message_answer("").items() if k != "content"}
    ).encode(),
    "echo_key": json.dumps(chat_answer(_ECHOED)).encode(),
    "anthropic_echo_key": json.dumps(message_answer(_ECHOED)).encode(),
}
"""HTTP 200 bodies by mode name."""

ECHO_MODES = ("echo", "echo_text", "echo_error", "echo_status", "echo_escaped")
"""Modes that send the client's key back: in every field of a valid answer (``echo``), as a 200 body that is
not JSON (``echo_text``), in an HTTP 400 (``echo_error``), in a status line that is not HTTP
(``echo_status``), and JSON-escaped (``\\u`` escapes) in every field of a valid answer (``echo_escaped``)."""


def http_reply(
    body: bytes,
    *,
    status: str = "200 OK",
    headers: tuple[tuple[str, str], ...] = (),
    content_type: str = "application/json",
) -> bytes:
    """A whole HTTP/1.1 response with ``body`` and a Content-Length."""
    head = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in headers]
    return "\r\n".join(head).encode("utf-8", "surrogateescape") + b"\r\n\r\n" + body


def _escaped(text: str) -> str:
    """``text`` as a JSON string literal (no quotes) with every character a ``\\u`` escape."""
    return "".join(f"\\u{ord(ch):04x}" for ch in text)


class FaultServer:
    """Answers every request the way ``mode`` says.

    * a key of :data:`BODIES`: HTTP 200 with that body;
    * ``hang``: never answers (for ``hold`` seconds, 30); ``trickle``: a 200 head, then one byte every
      ``interval`` seconds (0.1) for ``hold`` seconds;
    * ``close``: closes the socket; ``reset``: half of an answer's body, then a TCP reset;
      ``short``: a body shorter than its Content-Length, then the connection closed;
    * ``huge``: a 200 whose body never ends (within a 200 MB budget);
    * ``redirect``: HTTP 307 to ``location`` (set it; a path on another server);
    * ``raw``: the bytes of ``reply`` as they are (set it; may be changed between requests), then close;
    * ``respond``: the bytes ``respond(path, body, key)`` gives for each request (set it), then close;
    * the :data:`ECHO_MODES`: the client's own key in every place (see there);
    * ``ok``: a valid answer, ``Score: 4`` (OpenAI's shape, or Anthropic's on ``/messages``).

    With ``faults=N`` only the first N requests get ``mode``, the later ones ``ok``. ``requests`` counts the
    requests read; ``keys`` holds the keys the clients sent, ``cookies`` the Cookie headers.
    """

    def __init__(
        self,
        mode: str,
        *,
        interval: float = 0.1,
        reply: bytes = b"",
        location: str = "",
        respond: Callable[[str, str, str], bytes] | None = None,
        host: str = "127.0.0.1",
        faults: int | None = None,
        hold: float = 30.0,
    ) -> None:
        self.mode = mode
        self.faults = faults
        self.hold = hold
        self.interval = interval
        self.reply = reply
        self.location = location
        self.respond = respond
        self.requests = 0
        self.keys: list[str] = []
        self.cookies: list[str] = []
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.bind((host, 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """``http://<host>:<port>``."""
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}"

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

    def _read_request(self, conn: socket.socket) -> tuple[str, str, str] | None:
        """The request's path, key ("" for none; a Cookie header goes to ``cookies``) and body; None if it
        left."""
        deadline = time.monotonic() + 5
        data = self._receive(conn, b"", lambda got: b"\r\n\r\n" in got, deadline)
        if data is None:
            return None
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(fields.get("content-length") or 0)
        whole = self._receive(conn, body, lambda got: len(got) >= length, deadline)
        if whole is None or not head:
            return None
        key = fields.get("x-api-key") or fields.get("authorization", "").removeprefix("Bearer ").strip()
        if "cookie" in fields:
            self.cookies.append(fields["cookie"])
        parts = lines[0].split(" ")
        return (parts[1] if len(parts) > 1 else "/"), key, whole.decode("utf-8", "replace")

    def _receive(
        self, conn: socket.socket, data: bytes, done: Callable[[bytes], bool], deadline: float
    ) -> bytes | None:
        """``data`` and what follows until ``done`` (or the deadline, or a stop); None if the client left."""
        while not done(data) and time.monotonic() < deadline and not self._stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return None
            data += chunk
        return data

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        try:
            while not self._stop.is_set():
                got = self._read_request(conn)
                if got is None:
                    return
                with self._lock:
                    self.requests += 1
                    self.keys.append(got[1])
                    faulty = self.faults is None or self.requests <= self.faults
                if not self._answer(conn, *got, mode=self.mode if faulty else "ok"):
                    return
        except OSError:
            return
        finally:
            conn.close()

    def _answer(self, conn: socket.socket, path: str, key: str, body: str, *, mode: str) -> bool:
        """Send the answer of ``mode``; False when the connection is finished with."""
        if mode == "ok":
            conn.sendall(http_reply(json.dumps(self._valid(path, "Score: 4")).encode()))
            return True
        if mode == "close":
            return False
        if mode == "hang":
            self._stop.wait(self.hold)
            return False
        if mode == "trickle":
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
            )
            for _ in range(int(self.hold / self.interval)):
                if self._stop.wait(self.interval):
                    break
                conn.sendall(b" ")
            return False
        if mode == "huge":
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                b"200000000\r\n\r\n"
                b'{"pad": "'
            )
            chunk = b"x" * 65536
            for _ in range(200_000_000 // len(chunk)):
                if self._stop.is_set():
                    break
                conn.sendall(chunk)
            return False
        if mode in ("reset", "short"):
            body = json.dumps(self._valid(path, "Score: 4")).encode()
            conn.sendall(http_reply(body)[: -len(body) // 2])
            if mode == "reset":  # SO_LINGER 0: close() sends RST instead of FIN
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if mode == "redirect":
            conn.sendall(
                http_reply(b"", status="307 Temporary Redirect", headers=(("Location", self.location),))
            )
            return True
        if mode == "raw":
            conn.sendall(self.reply)
            return False
        if mode == "respond":
            assert self.respond is not None, "FaultServer('respond') needs respond="
            conn.sendall(self.respond(path, body, key))
            return False
        if mode in ECHO_MODES:
            conn.sendall(self._echo(mode, path, key or KEY))
            return mode in ("echo", "echo_escaped", "echo_error")
        conn.sendall(
            http_reply(BODIES[mode], content_type="text/html" if mode == "html" else "application/json")
        )
        return True

    @staticmethod
    def _valid(path: str, text: str, **fields: Any) -> dict[str, Any]:
        """A valid answer of the API ``path`` belongs to (Anthropic for ``/messages``, else OpenAI)."""
        if path.rstrip("/").endswith("/messages"):
            return message_answer(text, **{("stop" if k == "finish" else k): v for k, v in fields.items()})
        return chat_answer(text, **fields)

    @classmethod
    def _echo(cls, mode: str, path: str, key: str) -> bytes:
        """The answer of an echo ``mode``, carrying ``key`` everywhere the mode puts it."""
        echo = (
            ("X-Echo", key),
            ("X-Request-Id", key),
            ("Retry-After", key),
            ("x-ratelimit-remaining-requests", key),
        )
        if mode == "echo_status":
            return f"HTTP/1.1 {key} {key}\r\nX-Echo: {key}\r\n\r\nyour key is {key}".encode()
        if mode == "echo_text":
            return http_reply(
                f"your key is {key}".encode(), status=f"200 OK {key}", headers=echo, content_type="text/plain"
            )
        if mode == "echo_error":
            body = json.dumps({"error": {"message": f"bad key {key}", "type": key, "code": key}}).encode()
            return http_reply(body, status=f"400 Bad {key}", headers=echo)
        # its stop_reason is an enum: a key there is malformed
        anthropic = path.rstrip("/").endswith("/messages")
        answer = cls._valid(
            path, f"Score: 4 (your key is {key})", model=key, finish="end_turn" if anthropic else key
        )
        answer["id"] = key
        if mode == "echo_escaped":
            body = json.dumps(answer).replace(key, _escaped(key)).encode()
        else:
            body = json.dumps(answer).encode()
        return http_reply(body, status=f"200 OK {key}", headers=echo)
