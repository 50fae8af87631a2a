"""The judge prompt: its value, how a template is read into it, its answer format, its perturbations, the built-in ones.

Layout: :mod:`.judge_prompt` (the frozen prompt value: criterion, guideline, demos, messages),
:mod:`.answer_format` (the answer a prompt asks for and how a reply is read; the sole owner of
the answer kind), :mod:`.template_syntax` (slot syntax: ``{{x}}``, ``{x}``, Jinja),
:mod:`.template_reader` (the structure recovered from a template's text), :mod:`.perturb`
(guideline perturbations) and :mod:`.builtin` (the prompts shipped in ``texts/``).
"""
