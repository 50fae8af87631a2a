"""``mitigate data fetch | list``: pinned downloads against a local HTTP server on 127.0.0.1.

Every test serves its own files; nothing reaches the internet. The server can answer normally,
redirect, cut a transfer short (Content-Length longer than the body, then close), answer 404, or
stall (for the timeout path).
"""

from __future__ import annotations

import hashlib
import http.server
import pickle
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mitigate.cli import app
from mitigate.data import _fetch as F
from mitigate.errors import DataError
from mitigate.paths import data_dir
from mitigate.registry import names

REPO, COMMIT = "owner/toy", "a" * 40
GOOD = b"id,score\n1,4\n2,5\n" * 50


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _source(*files: tuple[str, bytes]) -> F.Source:
    return F.Source(
        name="toy_data",
        repo=REPO,
        commit=COMMIT,
        benchmarks=("toy",),
        files=tuple(F.SourceFile(path=p, bytes=len(b), sha256=_sha(b)) for p, b in files),
    )


class _Server:
    """routes: URL path -> (mode, body); mode is ok, cut, redirect (body = target path), 404 or stall."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[str, bytes]] = {}
        self.hits: list[str] = []
        routes, hits = self.routes, self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                mode, body = routes.get(self.path, ("404", b""))
                if mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", body.decode())
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif mode == "404":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif mode == "stall":
                    time.sleep(1.5)
                    self.close_connection = True
                else:
                    self.send_response(200)
                    length = len(body) + (1000 if mode == "cut" else 0)
                    self.send_header("Content-Length", str(length))
                    self.end_headers()
                    self.wfile.write(body)
                    self.wfile.flush()
                    self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def serve(self, path: str, body: bytes, mode: str = "ok") -> None:
        self.routes[f"/{REPO}/{COMMIT}/{path}"] = (mode, body)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_fetch_downloads_verifies_and_skips_files_already_present(server: _Server, tmp_path: Path) -> None:
    server.serve("data/a.csv", GOOD)
    source = _source(("data/a.csv", GOOD))
    status = F.fetch(source, tmp_path, base_url=server.base_url)
    assert (tmp_path / "toy_data/data/a.csv").read_bytes() == GOOD
    assert status.state == "present" and status.count("present") == 1
    assert _leftovers(tmp_path / "toy_data") == ["a.csv"]  # no .part file left beside it
    F.fetch(source, tmp_path, base_url=server.base_url)
    assert len(server.hits) == 1  # the verified file was not fetched again


def test_a_wrong_checksum_is_refused_and_nothing_is_left_in_place(server: _Server, tmp_path: Path) -> None:
    tampered = GOOD.replace(b"5", b"3")
    server.serve("a.csv", tampered)
    with pytest.raises(F.DownloadError, match="expected sha256") as caught:
        F.fetch(_source(("a.csv", GOOD)), tmp_path, base_url=server.base_url)
    assert caught.value.kind == "integrity"
    assert _leftovers(tmp_path) == []


def test_a_cut_download_is_refused_and_nothing_is_left_in_place(server: _Server, tmp_path: Path) -> None:
    server.serve("a.csv", GOOD[:100], mode="cut")  # announces 1,100 bytes, sends 100, closes
    source = F.Source(
        name="toy_data",
        repo=REPO,
        commit=COMMIT,
        benchmarks=("toy",),
        files=(F.SourceFile(path="a.csv", bytes=1100, sha256=_sha(b"x" * 1100)),),
    )
    with pytest.raises(F.DownloadError, match="cut after 100 of 1100 bytes") as caught:
        F.fetch(source, tmp_path, base_url=server.base_url)
    assert caught.value.kind == "integrity"
    assert _leftovers(tmp_path) == []


def test_a_body_longer_than_the_pinned_size_is_refused(server: _Server, tmp_path: Path) -> None:
    server.serve("a.csv", GOOD + b"extra")
    with pytest.raises(F.DownloadError, match="got more"):
        F.fetch(_source(("a.csv", GOOD)), tmp_path, base_url=server.base_url)
    assert _leftovers(tmp_path) == []


def test_a_redirect_is_followed(server: _Server, tmp_path: Path) -> None:
    server.serve("a.csv", b"/mirror/a.csv", mode="redirect")
    server.routes["/mirror/a.csv"] = ("ok", GOOD)
    F.fetch(_source(("a.csv", GOOD)), tmp_path, base_url=server.base_url)
    assert (tmp_path / "toy_data/a.csv").read_bytes() == GOOD
    assert server.hits == [f"/{REPO}/{COMMIT}/a.csv", "/mirror/a.csv"]


def test_an_http_error_status_is_refused(server: _Server, tmp_path: Path) -> None:
    with pytest.raises(F.DownloadError, match="expected HTTP 200 .* got 404") as caught:
        F.fetch(_source(("a.csv", GOOD)), tmp_path, base_url=server.base_url)
    assert caught.value.kind == "http"
    assert _leftovers(tmp_path) == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_offline_says_in_one_line_which_url_to_fetch_by_hand_and_where_to_put_it(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{_closed_port()}"
    source = _source(("a.csv", GOOD), ("b.csv", GOOD))
    with pytest.raises(F.DownloadError) as caught:
        F.fetch(source, tmp_path, base_url=base)
    message = str(caught.value)
    assert caught.value.kind == "offline" and "\n" not in message
    assert (
        f"download {base}/{REPO}/{COMMIT}/a.csv by hand and save it as {tmp_path / 'toy_data/a.csv'}"
    ) in message
    assert "1 more file(s)" in message and "mitigate data list toy --urls" in message
    assert _leftovers(tmp_path) == []


def test_a_server_that_does_not_answer_in_time_counts_as_offline(server: _Server, tmp_path: Path) -> None:
    server.serve("a.csv", b"", mode="stall")
    with pytest.raises(F.DownloadError, match="cannot reach") as caught:
        F.fetch(_source(("a.csv", GOOD)), tmp_path, base_url=server.base_url, timeout=0.3)
    assert caught.value.kind == "offline"
    assert _leftovers(tmp_path) == []


def test_the_base_url_comes_from_the_environment(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.serve("a.csv", GOOD)
    monkeypatch.setenv(F.BASE_URL_ENV, server.base_url)
    F.fetch(_source(("a.csv", GOOD)), tmp_path)
    assert (tmp_path / "toy_data/a.csv").is_file()


def test_status_tells_present_missing_and_corrupt_files_apart(tmp_path: Path) -> None:
    source = _source(("a.csv", GOOD), ("b.csv", GOOD + b"b"), ("c.csv", GOOD + b"c"))
    (tmp_path / "toy_data").mkdir()
    (tmp_path / "toy_data/a.csv").write_bytes(GOOD)
    (tmp_path / "toy_data/b.csv").write_bytes(GOOD + b"B")  # same size, other bytes
    status = F.status(source, tmp_path)
    assert [f.state for f in status.files] == ["present", "corrupt", "missing"]
    assert status.state == "corrupt" and "1 of 3 files fail their SHA-256 check" in status.line()


def test_a_source_path_that_climbs_out_of_the_data_folder_is_refused() -> None:
    with pytest.raises(DataError, match="without '..'"):
        F.SourceFile(path="../etc/passwd", bytes=1, sha256="0" * 64)


def test_every_built_in_benchmark_has_a_pinned_source_and_every_source_serves_a_benchmark() -> None:
    served = {b for s in F.sources().values() for b in s.benchmarks}
    assert served == set(names("benchmark"))
    for source in F.sources().values():
        assert source.files and all(len(f.sha256) == 64 for f in source.all_files())
        assert F.source_for(source.benchmarks[0]) is source
    url = F.sources()["tmu_gfm"].url(F.sources()["tmu_gfm"].files[0], None)
    assert url.startswith("https://raw.githubusercontent.com/tmu-nlp/TMU-GFM-Dataset/")


def test_an_unknown_benchmark_name_is_refused_with_the_names() -> None:
    with pytest.raises(DataError, match="expected a built-in benchmark name.*got 'nope'"):
        F.source_for("nope")


def test_a_pickle_holding_a_class_reference_is_refused() -> None:
    # a reference to builtins.print, as a hostile pickle would hold
    payload = pickle.dumps({"d": {"src": print}})
    with pytest.raises(DataError, match="expected a pickle of plain dicts.*builtins.print"):
        list(F.CONVERTERS["summeval-bartscore-jsonl"](payload))


# ----------------------------------------------------------------------------- CLI


def test_cli_fetch_then_list_reports_present(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(("a.csv", GOOD))
    server.serve("a.csv", GOOD)
    monkeypatch.setattr(F, "sources", lambda: {"toy_data": source})
    fetched = CliRunner().invoke(
        app, ["data", "fetch", "toy", "--dir", str(tmp_path), "--base-url", server.base_url]
    )
    assert fetched.exit_code == 0, fetched.output
    listed = CliRunner().invoke(app, ["data", "list", "--dir", str(tmp_path)])
    assert listed.exit_code == 0 and "present" in listed.stdout and "all 1 files verified" in listed.stdout


def test_cli_fetch_offline_exits_1_with_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(F, "sources", lambda: {"toy_data": _source(("a.csv", GOOD))})
    base = f"http://127.0.0.1:{_closed_port()}"
    result = CliRunner().invoke(app, ["data", "fetch", "toy", "--dir", str(tmp_path), "--base-url", base])
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{base}/{REPO}/{COMMIT}/a.csv by hand" in errors[0]


def test_cli_list_urls_prints_url_and_destination_of_missing_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(F, "sources", lambda: {"toy_data": _source(("a.csv", GOOD))})
    result = CliRunner().invoke(
        app, ["data", "list", "toy", "--urls", "--dir", str(tmp_path), "--base-url", "http://mirror.example"]
    )
    assert result.exit_code == 0
    url = f"http://mirror.example/{REPO}/{COMMIT}/a.csv"
    assert f"missing\t{url}\t{tmp_path / 'toy_data/a.csv'}" in result.stdout


def test_cli_fetch_unknown_name_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["data", "fetch", "nope", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "expected a built-in benchmark name" in result.stderr


# ----------------------------------------------------------------------------- real data


def _shared() -> Path:
    root = data_dir()
    if root is None or not (root / "summeval_bartscore/SUM/SummEval/data.pkl").is_file():
        pytest.skip("no shared data folder (set MITIGATE_DATA_DIR)")
    return root


@pytest.mark.data
def test_the_shared_data_folder_matches_every_pinned_checksum() -> None:
    root = _shared()
    for status in F.status_all(root):
        assert status.state == "present", status.line()


@pytest.mark.data
def test_fetching_bartscore_from_a_mirror_rebuilds_the_flattened_file_byte_for_byte(
    server: _Server, tmp_path: Path
) -> None:
    root = _shared()
    source = F.sources()["summeval_bartscore"]
    pkl = source.files[0]
    server.routes[f"/{source.repo}/{source.commit}/{pkl.path}"] = (
        "ok",
        (root / source.name / pkl.path).read_bytes(),
    )
    status = F.fetch(source, tmp_path, base_url=server.base_url)
    assert status.state == "present"  # the derived JSON lines matched their pinned SHA-256
    assert _leftovers(tmp_path) == ["data.pkl", "summeval_1600_expert_avg.jsonl"]
