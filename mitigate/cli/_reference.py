"""docs/cli.md, written from the commands themselves: every command's every option, grouped as ``--help-all``
shows them, as tables independent of the terminal, naming only the components mitigate itself registers.

``python -m mitigate.cli._reference docs/cli.md`` rewrites the file; ``--check`` exits 1 when it is not
current (tests/cli/test_cli_reference.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mitigate.cli._app import RegisteredNamesHelp, app
from mitigate.cli.options._declare import fill_registered_names
from mitigate.paths import write_output

if TYPE_CHECKING:  # typer vendors its own click; its commands are that click's
    from typer._click import Command as VendoredCommand

HEAD = """# Command-line reference

Every option of every `mitigate` command, grouped as `mitigate <command> --help-all` shows them;
`--help` shows the groups before "More options". Written by `python -m mitigate.cli._reference
docs/cli.md` from the commands themselves (a test fails when this file is not current): do not edit
it by hand.
"""


def _cell(text: str) -> str:
    """One table cell: on one line, its pipes escaped and ``<path>`` kept as text (not an HTML tag)."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _names(param: Any) -> str:
    names = [*param.opts, *getattr(param, "secondary_opts", [])]
    if param.param_type_name == "argument":
        return f"`{param.name.upper()}`"
    return " / ".join(f"`{n}`" for n in names)


def _default(param: Any) -> str:
    if param.param_type_name == "argument" or getattr(param, "is_eager", False):
        return "required" if param.required else ""
    value = param.default
    if value is None or value == [] or value == ():
        return ""
    if isinstance(value, bool):
        opts = getattr(param, "secondary_opts", [])
        if opts:
            return f"`{param.opts[0] if value else opts[0]}`"
        return "" if value is False else "on"
    return f"`{value}`"


def _command(name: str, command: VendoredCommand, parent: typer.Context) -> list[str]:
    ctx = typer.Context(command, info_name=name, parent=parent)
    out = [
        f"## mitigate {name}",
        "",
        _cell(command.help or ""),
        "",
        f"Usage: `mitigate {name} {' '.join(command.collect_usage_pieces(ctx))}`",
        "",
    ]
    panels = (
        command.grouped(ctx, every=True)
        if isinstance(command, RegisteredNamesHelp)
        else [("Options", [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)])]
    )
    for title, params in panels:
        out += [f"### {title}", "", "| option | default | what it does |", "|---|---|---|"]
        for p in params:
            text = fill_registered_names(getattr(p, "help", None) or "", shipped=True)
            out.append(f"| {_names(p)} | {_default(p)} | {_cell(text)} |")
        out.append("")
    return out


def markdown() -> str:
    """docs/cli.md as the commands give it now."""
    group = typer.main.get_command(app)
    root = typer.Context(group, info_name="mitigate")
    lines = [HEAD]
    names = group.list_commands(root)  # type: ignore[attr-defined]
    lines += ["Commands: " + ", ".join(f"[{n}](#mitigate-{n})" for n in names), ""]
    for name in names:
        command = group.get_command(root, name)  # type: ignore[attr-defined]
        if command is not None and not command.hidden:
            lines += _command(name, command, root)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m mitigate.cli._reference [--check] FILE``: write FILE, or check that it is current."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    if len(paths) != 1:
        print("usage: python -m mitigate.cli._reference [--check] docs/cli.md", file=sys.stderr)
        return 2
    path, text = Path(paths[0]), markdown()
    if check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(
                f"{path} is not current; regenerate it: python -m mitigate.cli._reference {path}",
                file=sys.stderr,
            )
            return 1
        return 0
    write_output(path, text, "the CLI reference")
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
