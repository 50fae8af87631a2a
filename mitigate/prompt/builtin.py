"""Judge prompts shipped with mitigate (written for this project), by name.

``get_prompt("summeval-coherence")`` returns a parsed :class:`~mitigate.prompt.JudgePrompt`;
``list_prompts()`` names them all. The texts live in ``mitigate/prompt/texts/*.txt``.
"""

from __future__ import annotations

from importlib.resources import files

from mitigate.errors import ConfigError
from mitigate.prompt.judge_prompt import JudgePrompt


def list_prompts() -> list[str]:
    """Names of the built-in prompts (file stems with '_' shown as '-')."""
    folder = files("mitigate.prompt") / "texts"
    return sorted(p.name[:-4].replace("_", "-") for p in folder.iterdir() if p.name.endswith(".txt"))


def prompt_text(name: str) -> str:
    """The raw template text of a built-in prompt."""
    names = list_prompts()
    if name not in names:
        raise ConfigError(f"unknown built-in prompt {name!r}; expected one of {names}")
    return (files("mitigate.prompt") / "texts" / f"{name.replace('-', '_')}.txt").read_text(encoding="utf-8")


def get_prompt(name: str) -> JudgePrompt:
    """A built-in prompt, parsed."""
    return JudgePrompt.from_template(prompt_text(name))


def default_prompt_for(benchmark: str, criterion: str) -> str:
    """The built-in prompt name for a benchmark's criterion, e.g. ("summeval", "coherence")."""
    family = benchmark.split("-")[0].split(":")[0]
    name = f"{family}-{criterion.replace('_', '-')}"
    if name not in list_prompts():
        raise ConfigError(
            f"no built-in prompt for benchmark {benchmark!r} and criterion {criterion!r} (looked for {name!r}); "
            f"pass --prompt FILE, or use one of {list_prompts()}"
        )
    return name
