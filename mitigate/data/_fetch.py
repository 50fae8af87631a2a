"""Download the built-in benchmarks' public releases, pinned by SHA-256 (``sources.json`` beside this module),
into the data folder.

A file is fetched from ``{base}/{repo}/{commit}/{path}`` (``base``: ``base_url=``, else
``$MITIGATE_DATA_URL``, else GitHub's) into a temporary file, checked for size and SHA-256, then moved into
place: nothing unverified is ever left under its real name. Errors are :class:`DownloadError`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import pickle
import urllib.parse
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import IO, Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mitigate.data._summeval import CRITERIA
from mitigate.errors import DataError, MitigateError
from mitigate.paths import data_dir, user_data_dir, write_output

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
"""Where the files are fetched from by default: GitHub's raw-content host."""

BASE_URL_ENV = "MITIGATE_DATA_URL"
"""Environment variable overriding :data:`DEFAULT_BASE_URL` (a mirror, or a local server in tests)."""

FileState = Literal["present", "missing", "corrupt"]


class DownloadError(MitigateError, RuntimeError):
    """A file not fetched (``kind`` "offline"), refused ("http") or failing its check ("integrity")."""


class SourceFile(BaseModel):
    """One file of a release: its path in the repository (and under the dataset folder), size, SHA-256."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = value.split("/")
        if not value or value.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise DataError(f"expected a relative file path without '..' or empty parts; got {value!r}")
        return value


class DerivedFile(SourceFile):
    """A file made here from a downloaded one (``source``) by the converter ``kind``; pinned the same way."""

    source: str = Field(alias="from")
    kind: str


class Source(BaseModel):
    """One dataset folder: the repository and commit it comes from, its files, the benchmarks it serves."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    benchmarks: tuple[str, ...]
    files: tuple[SourceFile, ...]
    derived: tuple[DerivedFile, ...] = ()

    def url(self, file: SourceFile, base_url: str | None = None) -> str:
        """The URL ``file`` is fetched from: ``{base}/{repo}/{commit}/{path}``."""
        base = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        return f"{base}/{self.repo}/{self.commit}/{urllib.parse.quote(file.path, safe='/')}"

    def dest(self, root: Path, file: SourceFile) -> Path:
        """Where ``file`` goes under the data folder ``root``."""
        return root / self.name / file.path

    def all_files(self) -> tuple[SourceFile, ...]:
        """The downloaded files, then the derived ones."""
        return (*self.files, *self.derived)


class FileStatus(BaseModel):
    """Whether one file of a source is in the data folder with the right SHA-256."""

    model_config = ConfigDict(frozen=True)

    source: str
    path: str
    dest: Path
    url: str | None
    state: FileState


class SourceStatus(BaseModel):
    """The state of every file of one source in a data folder."""

    model_config = ConfigDict(frozen=True)

    source: Source
    root: Path
    files: tuple[FileStatus, ...]

    def count(self, state: FileState) -> int:
        """How many files are in ``state``."""
        return sum(1 for f in self.files if f.state == state)

    @property
    def state(self) -> FileState:
        """``corrupt`` when any file is, else ``present`` when every file is, else ``missing``."""
        if self.count("corrupt"):
            return "corrupt"
        return "present" if self.count("present") == len(self.files) else "missing"

    def line(self) -> str:
        """One line: benchmarks, folder, state and counts."""
        total = len(self.files)
        detail = {
            "present": f"all {total} files verified",
            "missing": f"{total - self.count('present')} of {total} files missing",
            "corrupt": f"{self.count('corrupt')} of {total} files fail their SHA-256 check",
        }[self.state]
        return (
            f"{', '.join(self.source.benchmarks):<48} {self.source.name + '/':<24} {self.state:<8} {detail}"
        )


@functools.cache
def sources() -> dict[str, Source]:
    """The built-in sources by dataset folder name, read from ``sources.json``."""
    raw = json.loads(resources.files("mitigate.data").joinpath("sources.json").read_text(encoding="utf-8"))
    return {
        name: Source.model_validate(
            {
                **spec,
                "name": name,
                "files": [{"path": p, "bytes": n, "sha256": h} for p, n, h in spec["files"]],
            }
        )
        for name, spec in raw.items()
    }


def source_for(name: str) -> Source:
    """The source serving benchmark ``name`` (or the source named ``name``); DataError listing the names."""
    table = sources()
    if name in table:
        return table[name]
    for source in table.values():
        if name in source.benchmarks:
            return source
    names = [b for s in table.values() for b in s.benchmarks]
    raise DataError(
        f"expected a built-in benchmark name, one of {names} (or a folder: {list(table)}); got {name!r}"
    )


def target_dir(root: str | Path | None = None) -> Path:
    """The folder to download into: ``root``, else the data folder mitigate reads, else the user's."""
    if root is not None:
        return Path(root)
    return data_dir() or user_data_dir()


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _state(path: Path, file: SourceFile) -> FileState:
    if not path.is_file():
        return "missing"
    if path.stat().st_size != file.bytes or sha256_of(path) != file.sha256:
        return "corrupt"
    return "present"


def status(source: Source, root: str | Path | None = None, *, base_url: str | None = None) -> SourceStatus:
    """The state of each of ``source``'s files under the data folder (present, missing or corrupt)."""
    folder = target_dir(root)
    files = tuple(
        FileStatus(
            source=source.name,
            path=f.path,
            dest=source.dest(folder, f),
            url=None if isinstance(f, DerivedFile) else source.url(f, base_url),
            state=_state(source.dest(folder, f), f),
        )
        for f in source.all_files()
    )
    return SourceStatus(source=source, root=folder, files=files)


def status_all(root: str | Path | None = None) -> list[SourceStatus]:
    """:func:`status` of every built-in source."""
    return [status(s, root) for s in sources().values()]


def fetch(
    name: str | Source,
    root: str | Path | None = None,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    on_file: Callable[[str], None] | None = None,
) -> SourceStatus:
    """Download every missing or corrupt file of a benchmark's source into the data folder; its status
    after (DownloadError at the first file that fails; ``on_file`` sees each path)."""
    source = name if isinstance(name, Source) else source_for(name)
    folder = target_dir(root)
    todo = [f for f in source.files if _state(source.dest(folder, f), f) != "present"]
    made = {p for f in todo for p in source.dest(folder, f).parents if not p.exists()}
    made_deepest_first = sorted(made, key=lambda p: len(p.parts), reverse=True)
    try:
        with httpx.Client(
            follow_redirects=True,
            max_redirects=10,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 20.0)),
        ) as client:
            for index, file in enumerate(todo):
                if on_file is not None:
                    on_file(file.path)
                _download(
                    client,
                    source.url(file, base_url),
                    source.dest(folder, file),
                    file,
                    remaining=len(todo) - index - 1,
                    source=source,
                )
    except BaseException:  # the folders made for files that never came go too: an empty one is no data
        for path in made_deepest_first:
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty
        raise
    for derived in source.derived:
        dest = source.dest(folder, derived)
        if _state(dest, derived) != "present":
            if on_file is not None:
                on_file(derived.path)
            origin = next(f for f in source.files if f.path == derived.source)
            _derive(derived, source.dest(folder, origin), dest)
    return status(source, folder, base_url=base_url)


def _download(
    client: httpx.Client, url: str, dest: Path, file: SourceFile, *, remaining: int, source: Source
) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    by_hand = f"download {url} by hand and save it as {dest} (sha256 {file.sha256})" + (
        f"; {remaining} more file(s) of {source.name} to fetch: 'mitigate data list "
        f"{source.benchmarks[0]} --urls' lists each URL and place"
        if remaining
        else ""
    )

    def refuse(kind: str, why: str) -> DownloadError:
        return DownloadError(f"{why}; nothing was written to {dest}", kind=kind, url=url, dest=str(dest))

    def stream(handle: IO[bytes]) -> None:
        digest = hashlib.sha256()
        received = 0
        try:
            with client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise refuse(
                        "http",
                        f"expected HTTP 200 from {url}; got {response.status_code} {response.reason_phrase}",
                    )
                for chunk in response.iter_bytes():
                    received += len(chunk)
                    if received > file.bytes:
                        raise refuse("integrity", f"expected {file.bytes} bytes from {url}; got more")
                    digest.update(chunk)
                    handle.write(chunk)
        except (httpx.ConnectError, httpx.TimeoutException) as exc:
            host = urllib.parse.urlsplit(url).netloc
            reason = str(exc).strip() or type(exc).__name__
            raise DownloadError(
                f"cannot reach {host} ({reason}); {by_hand}", kind="offline", url=url, dest=str(dest)
            ) from exc
        except httpx.HTTPError as exc:  # the body stopped short of its Content-Length, a bad chunk ...
            raise refuse(
                "integrity", f"the download of {url} was cut after {received} of {file.bytes} bytes ({exc})"
            ) from exc
        if received != file.bytes:
            raise refuse("integrity", f"expected {file.bytes} bytes from {url}; got {received}")
        if digest.hexdigest() != file.sha256:
            raise refuse(
                "integrity",
                f"expected sha256 {file.sha256} for {url}; got {digest.hexdigest()} "
                "(the file at that address is not the pinned release)",
            )

    # written beside dest and renamed into place only once every check passed; a refusal leaves nothing
    write_output(dest, stream, f"the download of {url} to", binary=True)


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles built-in containers and scalars only: any class or function reference is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise DataError(
            f"expected a pickle of plain dicts, lists, strings and numbers; got a reference to "
            f"{module}.{name}"
        )


def _summeval_bartscore_rows(pickled: bytes) -> Iterable[dict[str, Any]]:
    data = _PlainUnpickler(io.BytesIO(pickled)).load()
    if not isinstance(data, dict):
        raise DataError(f"expected BARTScore's SummEval pickle to hold a dict; got {type(data).__name__}")
    for doc_id, doc in data.items():
        for system, summary in doc["sys_summs"].items():
            yield {
                "doc_id": doc_id,
                "model_id": system,
                "src": doc["src"],
                "ref_summs": doc["ref_summs"],
                "sys_summ": summary["sys_summ"],
                **{c: summary["scores"][c] for c in CRITERIA},
            }


CONVERTERS: dict[str, Callable[[bytes], Iterable[dict[str, Any]]]] = {
    "summeval-bartscore-jsonl": _summeval_bartscore_rows
}
"""Derived-file kind -> function turning the source file's bytes into the JSON-lines rows to write."""


def _derive(derived: DerivedFile, origin: Path, dest: Path) -> None:
    convert = CONVERTERS.get(derived.kind)
    if convert is None:
        raise DataError(f"expected a derived-file kind, one of {sorted(CONVERTERS)}; got {derived.kind!r}")
    text = "".join(json.dumps(row) + "\n" for row in convert(origin.read_bytes())).encode("utf-8")
    got = hashlib.sha256(text).hexdigest()
    if got != derived.sha256:
        raise DownloadError(
            f"expected sha256 {derived.sha256} for {dest} made from {origin}; got {got}; "
            f"nothing was written to {dest}",
            kind="integrity",
            dest=str(dest),
        )
    write_output(dest, text, f"the derived file made from {origin} to")
