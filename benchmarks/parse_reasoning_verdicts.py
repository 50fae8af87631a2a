"""Parse precision and recall on reasoning-then-verdict pairwise answers of our own writing.

Reads every hand-labelled answer of ``tests/verdict_answers.py`` with the answer format the
template reader recovers from its template, and prints, per template and overall: answers,
expected verdicts, parsed, correct, precision (correct / parsed, a failure expected but a verdict
read counts as wrong) and recall (correct / expected verdicts).

    python benchmarks/parse_reasoning_verdicts.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from verdict_answers import cases, prompts

from mitigate.errors import ParseError


def measure() -> dict[str, Counter[str]]:
    """Counts per template ("n", "verdicts", "parsed", "correct", "wrong") and "all"."""
    read = prompts()
    out: dict[str, Counter[str]] = {}
    for case in cases():
        prompt = read[case.fmt]
        try:
            got = prompt.format.read(case.text, prompt.scale)
        except ParseError:
            got = "failure"
        for key in (case.fmt, "all"):
            c = out.setdefault(key, Counter())
            c["n"] += 1
            c["verdicts"] += case.expected != "failure"
            if got != "failure":
                c["parsed"] += 1
                c["correct"] += got == case.expected
                c["wrong"] += got != case.expected
    return out


def main() -> None:
    print("template\tanswers\texpected verdicts\tparsed\tcorrect\tprecision\trecall")
    for name, c in measure().items():
        precision = c["correct"] / c["parsed"] if c["parsed"] else float("nan")
        recall = c["correct"] / c["verdicts"] if c["verdicts"] else float("nan")
        print(
            f"{name}\t{c['n']}\t{c['verdicts']}\t{c['parsed']}\t{c['correct']}\t{precision:.3f}\t{recall:.3f}"
        )


if __name__ == "__main__":
    main()
