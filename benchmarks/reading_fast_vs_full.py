"""Every released answer read with the fast quotation search and with the full one (``fast=False``): how many
differ.

The tests (``tests/parse/test_reading_fast_path.py``) read a sample of each release both ways; this reads
all of them once: LLMBar's 88,912 answers through ``parse_release`` and Shen et al.'s 43,200
released SummEval answers with the test module's templates (imported from it: one definition).
Prints the CPU of each pass and the count of answers whose reading differs (value, verdict or
failure message). Needs the copies the tests use; no model.

    python benchmarks/reading_fast_vs_full.py
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mitigate.data import read_llmbar
from mitigate.data._released_pairwise import release_copy
from mitigate.errors import ParseError
from mitigate.parse import _criteria as criteria
from mitigate.parse import _format_reader as format_reader
from mitigate.parse import _quoted as Q
from mitigate.prompt import JudgePrompt
from mitigate.replay._released_pairwise import parse_release
from tests.parse.test_reading_fast_path import summeval_cases


def _switch(full: bool) -> None:
    """Every reader on the full search (``fast=False``) or back on the fast one."""
    chosen = functools.partial(Q.unquote, fast=False) if full else Q.unquote
    format_reader.unquote = chosen  # type: ignore[assignment]
    criteria.unquote = chosen  # type: ignore[assignment]


def _both(name: str, read: Any) -> None:
    got = {}
    for full in (False, True):
        _switch(full)
        t0 = time.process_time()
        got[full] = read()
        print(f"{name}: {'full' if full else 'fast'} search {time.process_time() - t0:.1f} s CPU", flush=True)
    _switch(False)
    differ = sum(a != b for a, b in zip(got[False], got[True], strict=True))
    read_ok = sum(not (isinstance(x, tuple) and x[0] == "failure") for x in got[False])
    print(f"{name}: {len(got[False])} answers, {read_ok} read, {differ} read differently", flush=True)


def _read(prompt: JudgePrompt, raw: str, shown: tuple[str, ...], judged: tuple[str, ...]) -> object:
    try:
        return prompt.format.read(raw, prompt.scale, echoes=prompt.echo_lines(), quoted=shown, judged=judged)
    except ParseError as exc:
        return ("failure", str(exc))


def main() -> None:
    path = release_copy("llmbar")
    if path is not None:
        release = read_llmbar(path, sets="all")
        _both(
            "llmbar",
            lambda: [
                ("failure", p.error) if p.error else (p.verdict, p.score)
                for p in parse_release(release).parsed
            ],
        )
    cases = summeval_cases()
    _both("summeval", lambda: [_read(*case) for case in cases])


if __name__ == "__main__":
    main()
