"""Judge prompts shipped with mitigate (written for this project, in ``texts/*.txt``), by name."""

from __future__ import annotations

from importlib.resources import files

from mitigate.errors import ConfigError
from mitigate.prompt._judge_prompt import JudgePrompt
from mitigate.registry import add, names, registered

_FOLDER = files("mitigate.prompt") / "texts"
for _file in sorted(_FOLDER.iterdir(), key=lambda f: f.name):
    if _file.name.endswith(".txt"):
        add("prompt", _file.name[:-4].replace("_", "-"), _file)


def list_prompts() -> list[str]:
    """Names of the built-in prompts (the registry's ``prompt`` kind: file stems, '_' shown as '-')."""
    return names("prompt")


def prompt_text(name: str) -> str:
    """The raw template text of a built-in prompt."""
    found = registered("prompt").get(name)
    if found is None:
        raise ConfigError(f"unknown built-in prompt {name!r}; expected one of {list_prompts()}")
    return found.read_text(encoding="utf-8")


def get_prompt(name: str) -> JudgePrompt:
    """A built-in prompt, parsed."""
    return JudgePrompt.from_template(prompt_text(name))


def default_prompt_for(benchmark: str, criterion: str) -> str:
    """The built-in prompt name for a benchmark's criterion, e.g. ("summeval", "coherence")."""
    family = benchmark.split("-")[0].split(":")[0]
    name = f"{family}-{criterion.replace('_', '-')}"
    if name not in list_prompts():
        raise ConfigError(
            f"no built-in prompt for benchmark {benchmark!r} and criterion {criterion!r} (looked for "
            f"{name!r}); pass --prompt FILE, or use one of {list_prompts()}"
        )
    return name
