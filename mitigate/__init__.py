"""mitigate: make LLM-as-a-judge evaluators less biased and more consistent, and measure it.

Main entry points::

    from mitigate import JudgePrompt, PromptJudge, lm
    prompt = JudgePrompt.from_template(open("my_judge.txt").read(), scale=(1, 5))
    judge = PromptJudge(prompt, lm.get("local"))
    result = mitigate.estimate(benchmark, "coherence", judgments)   # bias-corrected per-system means
"""

from typing import TYPE_CHECKING

from mitigate.exports import lazy_exports

if TYPE_CHECKING:  # the names below are imported on first use (PEP 562): `import mitigate.cli` stays light
    from mitigate.data.schema import Benchmark, Item
    from mitigate.errors import MitigateError
    from mitigate.harness.estimate import estimate
    from mitigate.judge import Judge, JudgeConfig, Judgment, PlannedRequest, PromptJudge
    from mitigate.prompt.answer import AnswerFormat
    from mitigate.prompt.judge_prompt import JudgePrompt
    from mitigate.prompt.parts import Criterion, Demo, Guideline, ScoreOption
    from mitigate.scale import Scale

__getattr__, __dir__ = lazy_exports(__name__, {
    "Benchmark": "mitigate.data.schema", "Item": "mitigate.data.schema", "MitigateError": "mitigate.errors",
    "Judge": "mitigate.judge", "JudgeConfig": "mitigate.judge", "Judgment": "mitigate.judge",
    "PromptJudge": "mitigate.judge", "PlannedRequest": "mitigate.judge",
    "AnswerFormat": "mitigate.prompt.answer.format",
    "JudgePrompt": "mitigate.prompt.judge_prompt", "Criterion": "mitigate.prompt.parts",
    "Demo": "mitigate.prompt.parts",
    "Guideline": "mitigate.prompt.parts", "ScoreOption": "mitigate.prompt.parts", "Scale": "mitigate.scale",
    "estimate": "mitigate.harness.estimate",
})

__version__ = "0.1.0"

__all__ = [
    "AnswerFormat",
    "Benchmark",
    "Criterion",
    "Demo",
    "Guideline",
    "Item",
    "Judge",
    "JudgeConfig",
    "JudgePrompt",
    "Judgment",
    "PlannedRequest",
    "MitigateError",
    "PromptJudge",
    "Scale",
    "ScoreOption",
    "__version__",
    "estimate",
]
