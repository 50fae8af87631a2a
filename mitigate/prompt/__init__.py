"""The judge prompt: its value, how a template is read into it, its answer format, its perturbations, the
built-in ones.

Layout: :mod:`.parts` (criterion, scoring option, guideline, demonstration, message),
:mod:`.judge_prompt` (the frozen prompt value and how it renders), :mod:`.read` (reading a
template: its notation and sandboxed rendering, the clues in its words, where the item stands,
its fields with evidence, and :class:`~mitigate.prompt.read._hints.TemplateHints`, the caller's
overrides), :mod:`.answer` (the answer a prompt asks for: the format value, its constraints,
its inference from a template; the sole owner of the answer kind), :mod:`.perturb` (guideline
perturbations) and :mod:`.builtin` (the prompts shipped in ``texts/``).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.prompt._builtin import default_prompt_for, get_prompt, list_prompts, prompt_text
    from mitigate.prompt._judge_prompt import JudgePrompt
    from mitigate.prompt._parts import (
        GUIDELINE_MARK,
        SLOT_RE,
        Criterion,
        Demo,
        Guideline,
        PromptMessage,
        ScoreOption,
        format_number,
        slot_names,
    )
    from mitigate.prompt._perturb import (
        OrderPerturbation,
        Perturbation,
        PerturbationKind,
        apply_to_prompt,
        guideline_of,
        order_perturbations,
        original_order,
        perturbation_set,
    )
    from mitigate.prompt._render import answer_label, field_text
    from mitigate.prompt.answer._format import AnswerFormat
    from mitigate.prompt.answer._infer import closing_stub, infer_answer_format, reasoning_ban
    from mitigate.prompt.read._clues import scale_mentions
    from mitigate.prompt.read._evidence import describe_template, read_prompt
    from mitigate.prompt.read._hints import TemplateHints
    from mitigate.prompt.read._layout import item_layout

__getattr__, __dir__, __all__ = lazy_exports(__name__)
