"""Reading a judge template as published: its notation, its sandboxed rendering, its structure, its fields.

:mod:`.syntax` reads the notation (``{{x}}``, ``{x}``, Jinja, chat markup) into canonical
messages and writes the template back exactly; :mod:`.sandbox` is the one Jinja environment a
template renders in; :mod:`.clues` finds the scale, criterion, judged slots and pairwise labels
in the template's words; :mod:`.layout` where the judged item stands (and where demonstrations
go); :mod:`.fields` reads everything into the fields of a
:class:`~mitigate.prompt.judge_prompt.JudgePrompt`, with the evidence for each; :mod:`.evidence`
reads a whole prompt with that evidence (``read_prompt``, ``describe_template``: what ``mitigate
prompts inspect`` prints); :mod:`.hints` holds :class:`TemplateHints`, the caller's overrides of
what is read.
"""

from mitigate.prompt.read.fields import read_fields
from mitigate.prompt.read.hints import TemplateHints
from mitigate.prompt.read.syntax import TemplateSource

__all__ = ["TemplateHints", "TemplateSource", "read_fields"]
