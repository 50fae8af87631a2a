"""The judge prompt: its value, how a template is read into it, its answer format, its perturbations, the
built-in ones.

Layout: :mod:`.parts` (criterion, scoring option, guideline, demonstration, message),
:mod:`.judge_prompt` (the frozen prompt value and how it renders), :mod:`.read` (reading a
template: its notation and sandboxed rendering, the clues in its words, where the item stands,
its fields with evidence, and :class:`~mitigate.prompt.read.hints.TemplateHints`, the caller's
overrides), :mod:`.answer` (the answer a prompt asks for: the format value, its constraints,
its inference from a template; the sole owner of the answer kind), :mod:`.perturb` (guideline
perturbations) and :mod:`.builtin` (the prompts shipped in ``texts/``).
"""

from mitigate.prompt.answer import AnswerFormat
from mitigate.prompt.builtin import get_prompt, list_prompts, prompt_text
from mitigate.prompt.judge_prompt import JudgePrompt
from mitigate.prompt.parts import Criterion, Demo, Guideline, PromptMessage, ScoreOption
from mitigate.prompt.read.evidence import describe_template, read_prompt
from mitigate.prompt.read.hints import TemplateHints

__all__ = ["AnswerFormat", "Criterion", "Demo", "Guideline", "JudgePrompt", "PromptMessage", "ScoreOption",
           "TemplateHints", "describe_template", "get_prompt", "list_prompts", "prompt_text", "read_prompt"]
