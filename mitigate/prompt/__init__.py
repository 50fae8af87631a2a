"""The judge prompt: its value and rendering, how a template is read into it (``read``), its answer format
(``answer``), its perturbations and the built-in prompts."""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.prompt._builtin import default_prompt_for, get_prompt, list_prompts, prompt_text
    from mitigate.prompt._judge_prompt import JudgePrompt, describe_template, read_prompt
    from mitigate.prompt._parts import (
        GUIDELINE_MARK,
        SLOT_RE,
        Criterion,
        Demo,
        Guideline,
        PromptMessage,
        ScoreOption,
        answer_label,
        field_text,
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
    from mitigate.prompt.answer._format import AnswerFormat
    from mitigate.prompt.answer._infer import closing_stub, infer_answer_format, reasoning_ban
    from mitigate.prompt.read._clues import scale_mentions
    from mitigate.prompt.read._fields import TemplateHints
    from mitigate.prompt.read._layout import inline_label, item_layout, markup_only

__getattr__, __dir__, __all__ = lazy_exports(__name__)
