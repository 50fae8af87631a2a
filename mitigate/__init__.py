"""mitigate: make LLM-as-a-judge evaluators less biased and more consistent, and measure it.

Main entry points::

    from mitigate import JudgePrompt, PromptJudge, lm
    prompt = JudgePrompt.from_template(open("my_judge.txt").read(), scale=(1, 5))
    judge = PromptJudge(prompt, lm.get("local"))
"""

from mitigate.data.schema import Benchmark, Item
from mitigate.errors import MitigateError
from mitigate.judge import Judge, JudgeConfig, Judgment, PlannedRequest, PromptJudge
from mitigate.prompt.answer_format import AnswerFormat
from mitigate.prompt.judge_prompt import JudgePrompt
from mitigate.prompt.parts import Criterion, Demo, Guideline, ScoreOption
from mitigate.scale import Scale

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
]
