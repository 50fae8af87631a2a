"""mitigate: make LLM-as-a-judge evaluators less biased and more consistent, and measure it.

Main entry points::

    import mitigate
    from mitigate import JudgePrompt, PromptJudge, lm
    prompt = JudgePrompt.from_template(open("my_judge.txt").read(), scale=(1, 5))
    judge = PromptJudge(prompt, lm.get("local"))
    result = mitigate.compare("summeval", "coherence", entries, limit=12)   # judges side by side
    estimate = mitigate.estimate(benchmark, "coherence", judgments)      # bias-corrected per-system means

The names here are the packages' most used ones, imported on first use.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.data._schema import Benchmark, Item
    from mitigate.errors import MitigateError
    from mitigate.estimators._estimate import estimate
    from mitigate.harness._compare import compare
    from mitigate.judge._judge import Judge, PromptJudge
    from mitigate.judge._judgment import JudgeConfig, Judgment, PlannedRequest
    from mitigate.prompt._judge_prompt import JudgePrompt
    from mitigate.prompt._parts import Criterion, Demo, Guideline, ScoreOption
    from mitigate.prompt.answer._format import AnswerFormat
    from mitigate.scale import Scale

__getattr__, __dir__, __all__ = lazy_exports(__name__)
__version__ = "0.1.0"
