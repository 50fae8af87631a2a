"""``mitigate report``: re-render report.md, the plots and (``--html``) report.html of a comparison from its results.json."""

from __future__ import annotations

import typer

from mitigate.cli.app import command
from mitigate.cli.files import read_text_file, writable_dir
from mitigate.cli.options import ReportOptions
from mitigate.errors import ConfigError


@command("report", ReportOptions)
def report_cmd(options: ReportOptions) -> None:
    """Re-render report.md and the plots of a comparison from its results.json (with --html, report.html too)."""
    # lazy: the harness is the one package `import mitigate.cli` does not load (issue 29: a fast --help)
    from mitigate.harness.report import render_report

    folder = options.folder
    if not folder.is_dir():
        raise ConfigError(f"expected a folder written by 'mitigate compare'; {folder} "
                          f"{'is a file' if folder.exists() else 'does not exist'}", path=str(folder))
    results = folder / "results.json"
    if results.is_file():
        read_text_file(results, "the results.json of the folder")
    writable_dir(folder, "the report folder")
    paths = render_report(folder, html=options.html)
    typer.echo("wrote " + ", ".join(str(p) for p in paths), err=True)
