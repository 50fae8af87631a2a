"""``mitigate prompts``: list the built-in judge prompts, print one, or show what mitigate reads from a template."""

from __future__ import annotations

from pathlib import Path

import typer

from mitigate.cli.app import command
from mitigate.cli.options import PromptsOptions
from mitigate.errors import ConfigError


@command("prompts", PromptsOptions)
def prompts_cmd(options: PromptsOptions) -> None:
    """List the built-in judge prompts, print one, or 'inspect FILE': show what mitigate reads from a template."""
    # lazy: `import mitigate.cli` (so `mitigate --help`) loads only the command group and the options (issue 29)
    from mitigate.prompt.builtin import list_prompts, prompt_text

    if options.name is None:
        typer.echo("\n".join(list_prompts()))
    elif options.name == "inspect":
        typer.echo(inspect_template(options.file, options.system, options.const or []))
    else:
        typer.echo(prompt_text(options.name))


def inspect_template(file: Path | None, system: Path | None, consts: list[str]) -> str:
    """What ``JudgePrompt.from_template`` recovers from ``file`` (see ``mitigate.prompt.describe_template``)."""
    from mitigate.prompt import describe_template

    if file is None or not file.is_file():
        raise ConfigError(f"expected 'mitigate prompts inspect FILE' with an existing template file; got {file}")
    constants: dict[str, str] = {}
    for item in consts:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected --const NAME=VALUE or NAME=@file; got {item!r}")
        if value.startswith("@"):
            value = Path(value[1:]).read_text(encoding="utf-8")
        constants[key.strip()] = value
    text = file.read_text(encoding="utf-8")
    sys_text = system.read_text(encoding="utf-8") if system is not None else None
    return describe_template(text, system=sys_text, constants=constants or None)
