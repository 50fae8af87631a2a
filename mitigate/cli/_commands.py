"""The commands of ``mitigate``: each name, the module that defines it (imported only when the command is
asked for), and the line ``mitigate --help`` shows, the first paragraph of its help
(tests/cli/test_cli_imports.py)."""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    """Where a command is defined, and its summary (the first paragraph of its help)."""

    module: str
    summary: str


def _kind(plural: str, kind: str, papers: bool) -> Command:
    with_papers = " with their papers" if papers else ""
    return Command(
        "mitigate.cli._catalog",
        f"List the registered {plural}{with_papers}, or show one in detail (= mitigate list {kind} [NAME]).",
    )


COMMANDS: dict[str, Command] = {
    "compare": Command(
        "mitigate.cli._compare",
        "Compare pipelines, recorded and released judges on a benchmark: accuracy and bias side by side.",
    ),
    "diff": Command(
        "mitigate.cli._diff",
        "Judge B against judge A on the same items: B − A with paired intervals and p; exit 1 if B is worse.",
    ),
    "estimate": Command(
        "mitigate.cli._estimate",
        "Estimate each system's mean human label from a judge on every item and human labels on a few.",
    ),
    "label": Command(
        "mitigate.cli._label",
        "Serve a blind labelling page on 127.0.0.1 and write each label to the labels file as it is given.",
    ),
    "judge": Command(
        "mitigate.cli._judge",
        "Judge the first items of a benchmark and print each judgment beside the human score.",
    ),
    "probe": Command(
        "mitigate.cli._probe",
        "Run the bias battery: items judged as they are, again (noise floor), under each probe; a table.",
    ),
    "prompts": Command(
        "mitigate.cli._prompts",
        "List the built-in judge prompts, print one, 'inspect FILE' (what mitigate reads from a "
        "template), or\n'render FILE|NAME' (the exact requests a pipeline sends for one item; no LM call).",
    ),
    "report": Command(
        "mitigate.cli._report",
        "Re-render report.md and the plots of a comparison from its results.json (--html: report.html too).",
    ),
    "search": Command(
        "mitigate.cli._search",
        "Search the demo set maximising agreement (+ consistency - bias) on dev; report it on held-out test.",
    ),
    "list": Command(
        "mitigate.cli._catalog",
        "List registered components (mitigations, selectors, measures, engines, backends ...), or show one.",
    ),
    "mitigations": _kind("mitigations", "mitigation", papers=True),
    "selectors": _kind("selectors", "selector", papers=True),
    "measures": _kind("measures", "measure", papers=True),
    "engines": _kind("engines", "engine", papers=True),
    "backends": _kind("backends", "backend", papers=False),
    "benchmarks": _kind("benchmarks", "benchmark", papers=False),
    "check-plugin": Command(
        "mitigate.cli._plugins",
        "Import a plugin module and run mitigate's contract checks on what it "
        "registers; exit 1 on a failure.",
    ),
    "data": Command(
        "mitigate.cli._data",
        "Download the built-in benchmarks (pinned by SHA-256), see which are present, "
        "and convert harness judge logs into recorded judgments.",
    ),
}
"""Every command, in the order ``mitigate --help`` lists them: the work first, then discovery."""
