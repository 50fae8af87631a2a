"""MkDocs hook: the site's results pages, cut from benchmarks/RESULTS.md at build time.

RESULTS.md stays the one file every measured number is written to, with the command that reproduces it;
this hook splits its ``## `` sections by topic into ``results/<topic>.md`` pages, text unchanged (only
links are re-pointed: a link into docs/ goes to that page, a link to any other file of the repository
becomes its plain text). A section whose heading no topic claims goes to "More results", so a new section
appears on the site without touching this file; to give it a better home, add a prefix to ``TOPICS``.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

# (page, title, what the page holds, heading prefixes it claims); the first match wins
TOPICS: list[tuple[str, str, str, tuple[str, ...]]] = [
    (
        "reproduction",
        "Paper reproductions",
        "the published figures recomputed from released judge outputs",
        ("Shen et al.",),
    ),
    (
        "mitigations",
        "Mitigations on real judges",
        "each mitigation run on a local judge or replayed outputs",
        ("Mitigation evidence", "Beyond the five papers", "Fitted values", "The cheapest cascade"),
    ),
    (
        "strong-judges",
        "Strong judges, replayed",
        "LLMBar and JudgeBench released answers read and mitigated",
        ("Strong judges",),
    ),
    (
        "reading",
        "Reading templates and answers",
        "published templates, parse rates and parse precision",
        ("Bring your own judge", "Answer reading", "Reading speed"),
    ),
    (
        "juries",
        "Juries, distributions and references",
        "panels reduced by Dawid-Skene and minority veto, both orders' probabilities, Bradley-Terry, "
        "own references",
        ("Juries",),
    ),
    (
        "probes-diff-estimates",
        "Probes, diff and estimates",
        "bias probes, judge diffs and corrected per-system estimates",
        ("Bias probes", "diff:", "Bias-corrected"),
    ),
    (
        "speed",
        "Speed and cost",
        "throughput, runner overhead, batching, prompt caching, prefix reuse and Ray Data",
        (
            "The same 1,000 judgments",
            "Runner overhead",
            "Batch APIs",
            "Prompt-prefix reuse",
            "A million judgments",
            "Labelling page",
            "Judging on Ray Data",
        ),
    ),
    (
        "reliability",
        "Reliability and hostile input",
        "kills, fault storms, bad input, hostile servers and files",
        ("Reliability", "Hostile input", "Batch mode survives"),
    ),
]
MORE = ("more", "More results", "sections not yet sorted into a topic")

_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


def split_results(text: str) -> tuple[str, list[tuple[str, str]]]:
    """RESULTS.md as (its preamble, [(section heading, section text), ...]); fenced code is never split."""
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), [line]))
        elif sections:
            sections[-1][1].append(line)
        elif not line.startswith("# "):
            preamble.append(line)
    return "".join(preamble).strip(), [(h, "".join(body)) for h, body in sections]


def topic_of(heading: str) -> tuple[str, str, str]:
    """The (page, title, description) a section heading belongs to."""
    for page, title, about, prefixes in TOPICS:
        if heading.startswith(prefixes):
            return page, title, about
    return MORE


def repoint_links(text: str, docs_dir: Path, results_file: Path) -> str:
    """Links in RESULTS.md are relative to benchmarks/: into docs/ they go to the page, elsewhere plain
    text."""
    docs = docs_dir.resolve()

    def one(match: re.Match[str]) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (results_file.parent / path).resolve()
        if resolved.is_relative_to(docs) and resolved.suffix == ".md":
            rel = posixpath.relpath(resolved.relative_to(docs).as_posix(), "results")
            return f"[{label}]({rel}{'#' + anchor if anchor else ''})"
        return label

    return _LINK.sub(one, text)


def pages(results_file: Path, docs_dir: Path) -> dict[str, str]:
    """Every generated page, by its path under docs/: the overview and one page per topic present."""
    preamble, sections = split_results(results_file.read_text(encoding="utf-8"))
    by_topic: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for heading, body in sections:
        by_topic.setdefault(topic_of(heading), []).append((heading, body))
    order = [(p, t, a) for p, t, a, _ in TOPICS] + [MORE]
    out: dict[str, str] = {}
    index = [
        "# Results\n",
        repoint_links(preamble, docs_dir, results_file),
        "",
        "Generated from `benchmarks/RESULTS.md` (the file every run writes its numbers to), by topic:",
        "",
    ]
    for key in order:
        if key not in by_topic:
            continue
        page, title, about = key
        index.append(f"- [{title}]({page}.md): {about}")
        for heading, _ in by_topic[key]:
            index.append(f"    - {heading}")
        body = "".join(repoint_links(b, docs_dir, results_file) for _, b in by_topic[key])
        out[f"results/{page}.md"] = (
            f"# {title}\n\nFrom `benchmarks/RESULTS.md`; every number comes from a "
            f"run of the command beside it.\n\n{body}"
        )
    out["results/index.md"] = "\n".join(index) + "\n"
    # every topic page exists, so the nav may name them all; a topic with no section says so
    for page, title, about in order:
        out.setdefault(
            f"results/{page}.md",
            f"# {title}\n\nNo section of `benchmarks/RESULTS.md` is here yet ({about}).\n",
        )
    return out


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    """Add the results pages to the site, written from benchmarks/RESULTS.md."""
    from mkdocs.structure.files import File

    docs_dir = Path(config["docs_dir"])
    results_file = docs_dir.parent / "benchmarks" / "RESULTS.md"
    for path, content in pages(results_file, docs_dir).items():
        files.append(File.generated(config, path, content=content))
    return files
