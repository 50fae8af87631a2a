"""The labelling server: the two pages and a small JSON API over a :class:`LabelSession`, on the loopback
interface only.

Every request must carry the session's token (``?t=`` on a page, the ``X-Mitigate-Token`` header on the API)
and a ``Host`` of this loopback address (a page elsewhere cannot reach it through DNS rebinding); every
response forbids caching, framing and referrers. In blind mode what the server sends holds the texts to
label and nothing else of the item: no id, system, document or judge value (item positions stand in for
ids), and the agreement view, which shows the judge, opens only when every item is labelled.
"""

from __future__ import annotations

import hmac
import json
import secrets
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mitigate.errors import MitigateError
from mitigate.label._page import CSP, agreement_page, label_page
from mitigate.label._session import LabelConflict, LabelSession

LOOPBACK = "127.0.0.1"


class LabelServer:
    """The server of one session: ``url`` (with the token) once :meth:`start` bound it; ``judge`` gives the
    judge's values for the agreement view and, not blind, beside each item."""

    def __init__(
        self,
        session: LabelSession,
        *,
        blind: bool = True,
        judge: Any = None,
        labeller: str = "",
        port: int = 0,
        plan: float | None = None,
        log: Callable[[str], None] | None = None,
    ):
        self.session = session
        self.blind = blind
        self.judge = judge
        self.labeller = labeller
        self.plan = plan
        self.token = secrets.token_urlsafe(24)
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.httpd = ThreadingHTTPServer((LOOPBACK, port), self._handler())
        self.httpd.daemon_threads = True
        self._judge_values: dict[str, dict[str, float | None]] | None = None

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        """The labelling page's address, token included."""
        return f"http://{LOOPBACK}:{self.port}/?t={self.token}"

    def serve_forever(self) -> None:
        """Serve until interrupted (Ctrl-C) or :meth:`stop`."""
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.httpd.server_close()

    def start(self) -> threading.Thread:
        """Serve in a background thread (tests, notebooks)."""
        thread = threading.Thread(target=self.serve_forever, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()

    # ------------------------------------------------------------------ what each request gets

    def judge_of(self, item_id: str) -> dict[str, float | None]:
        """The judge's value per criterion for one item (not blind only)."""
        if self.judge is None:
            return {}
        if self._judge_values is None:
            from mitigate.estimators import judge_values

            items = [self.session.items[r["id"]] for r in self.session.rows]
            found: dict[str, dict[str, float | None]] = {r["id"]: {} for r in self.session.rows}
            for c in self.session.criteria:
                for it, v in zip(items, judge_values(self.judge, items, c)[0], strict=True):
                    found[it.id][c] = v
            self._judge_values = found
        return self._judge_values.get(item_id, {})

    def item(self, query: dict[str, list[str]]) -> dict[str, Any]:
        """The item at ``?position=`` (default: the first unlabelled one)."""
        s = self.session
        raw = query.get("position", [None])[0]
        if raw is None:
            position = min(s.first_open(), len(s.rows) - 1)
        else:
            try:
                position = int(raw)
            except ValueError:
                raise MitigateError(f"expected ?position= a whole number; got {raw[:20]!r}") from None
        judge = (
            None
            if self.blind
            else self.judge_of(s.rows[position]["id"])
            if 0 <= position < len(s.rows)
            else None
        )
        return s.view(position, blind=self.blind, judge=judge)

    def label(self, body: Any) -> dict[str, Any]:
        """Record one label (body: position, labels, expect, labeller); the item's labels as shown, the
        progress and where to go next."""
        if not isinstance(body, dict) or not isinstance(body.get("labels"), dict):
            raise MitigateError("expected a JSON object with 'position' and 'labels'")
        position = body.get("position")
        if not isinstance(position, int) or isinstance(position, bool):
            raise MitigateError(f"expected 'position' as a whole number; got {str(position)[:20]!r}")
        labeller = body.get("labeller") or self.labeller or None
        if labeller is not None and (not isinstance(labeller, str) or len(labeller) > 100):
            raise MitigateError("expected 'labeller' as a name of at most 100 characters")
        s = self.session
        row = s.label(position, body["labels"], expect=body.get("expect"), labeller=labeller)
        fallback = s.first_open() if s.first_open() < len(s.rows) else min(position + 1, len(s.rows) - 1)
        return {
            "labels": s.shown(row),
            "progress": s.progress(blind=self.blind),
            "next": next((i for i in range(position + 1, len(s.rows)) if not s.done(s.rows[i])), fallback),
        }

    def summary(self) -> dict[str, Any]:
        """The agreement view's data; refused in blind mode until every item is labelled."""
        from mitigate.label._agreement import summary

        if self.judge is None:
            raise MitigateError("the agreement view needs the judge: start with --recorded or --released")
        left = self.session.progress(blind=True)["left"]
        if self.blind and left:
            raise MitigateError(
                f"the agreement view shows the judge and the systems; it opens when every item is labelled "
                f"({left} left), or start with --unblind"
            )
        # reads the rows; a label replaces a row's values
        return summary(self.session, self.judge, plan=self.plan)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "mitigate-label"
            sys_version = ""

            def log_message(self, format: str, *args: Any) -> None:
                pass  # one line per refusal instead (refuse)

            def _send(self, status: int, body: bytes, kind: str, nonce: str = "") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("X-Content-Type-Options", "nosniff")
                self.send_header("Referrer-Policy", "no-referrer")
                self.send_header("X-Frame-Options", "DENY")
                self.send_header("Content-Security-Policy", CSP.format(nonce=nonce or "none"))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, data: Any) -> None:
                self._send(status, json.dumps(data).encode(), "application/json; charset=utf-8")

            def refuse(self, status: int, message: str) -> None:
                server.log(f"refused {self.command} {urlsplit(self.path).path}: {message}")
                self._json(status, {"error": message})

            def _allowed(self, query: dict[str, list[str]]) -> bool:
                host = self.headers.get("Host", "")
                if host not in (f"{LOOPBACK}:{server.port}", f"localhost:{server.port}"):
                    self.refuse(403, f"expected the Host {LOOPBACK}:{server.port}; got {host[:60]!r}")
                    return False
                given = self.headers.get("X-Mitigate-Token") or query.get("t", [""])[0]
                if not hmac.compare_digest(given.encode(), server.token.encode()):
                    self.refuse(403, "expected this session's token (the address mitigate label printed)")
                    return False
                return True

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                if not self._allowed(query):
                    return
                nonce = secrets.token_urlsafe(16)
                pages = {
                    "/": lambda: label_page(nonce, server.labeller),
                    "/agreement": lambda: agreement_page(nonce),
                }
                if url.path in pages:
                    self._send(200, pages[url.path]().encode(), "text/html; charset=utf-8", nonce)
                    return
                api = {"/api/item": lambda: server.item(query), "/api/summary": server.summary}
                self._answer(api.get(url.path))

            def do_POST(self) -> None:
                url = urlsplit(self.path)
                if not self._allowed(parse_qs(url.query)):
                    return
                if url.path != "/api/label":
                    self.refuse(404, f"no such address {url.path[:60]!r}")
                    return
                try:
                    length = int(self.headers.get("Content-Length", "0"))
                    body = json.loads(self.rfile.read(min(length, 1 << 20)) or b"null")
                except (ValueError, UnicodeDecodeError):
                    self.refuse(400, "expected a JSON body")
                    return
                self._answer(lambda: server.label(body))

            def _answer(self, make: Callable[[], Any] | None) -> None:
                if make is None:
                    self.refuse(404, f"no such address {urlsplit(self.path).path[:60]!r}")
                    return
                try:
                    data = make()
                except LabelConflict as exc:
                    self.refuse(409, str(exc))
                    return
                except MitigateError as exc:
                    self.refuse(400, str(exc))
                    return
                self._json(200, data)

        return Handler
