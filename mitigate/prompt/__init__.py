"""The judge prompt: its value, how a template is read into it, its answer format, its perturbations, the
built-in ones.

Layout: :mod:`.parts` (criterion, scoring option, guideline, demonstration, message),
:mod:`.judge_prompt` (the frozen prompt value and how it renders), :mod:`.read` (a template's
text read into the prompt's fields, with evidence), :mod:`.answer_format` (the answer a
prompt asks for and how a reply is read; the sole owner of the answer kind),
:mod:`.template_syntax` (slot syntax: ``{{x}}``, ``{x}``, Jinja, chat markup),
:mod:`.template_reader` (scale, criterion and pair found in a template's words),
:mod:`.perturb` (guideline perturbations) and :mod:`.builtin` (the prompts shipped in
``texts/``).
"""

from mitigate.prompt.answer_format import AnswerFormat
from mitigate.prompt.builtin import get_prompt, list_prompts, prompt_text
from mitigate.prompt.judge_prompt import JudgePrompt, describe_template, read_prompt
from mitigate.prompt.parts import Criterion, Demo, Guideline, PromptMessage, ScoreOption

__all__ = ["AnswerFormat", "Criterion", "Demo", "Guideline", "JudgePrompt", "PromptMessage", "ScoreOption",
           "describe_template", "get_prompt", "list_prompts", "prompt_text", "read_prompt"]
