"""Judges: the protocol every judge follows (``judge(item)``, ``map_prompts(fn)``), the prompt-driven judge,
what a judge returns, the fit protocol and likelihood scores."""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.judge._fitting import FitContext, Fittable, fit_context, require_judge, run_fit
    from mitigate.judge._judge import CompositeJudge, Judge, PromptJudge, judge_scale, recording_requests
    from mitigate.judge._judgment import (
        FRAME_COLUMNS,
        JudgeConfig,
        Judgment,
        ParseFailure,
        PlannedRequest,
        Reducer,
        answer_mode,
        combine_costs,
        frame,
        merge_judgments,
        reduce_samples,
    )
    from mitigate.judge._likelihood import DEFAULT_LIKELIHOOD_TEMPLATE, LikelihoodScorer

__getattr__, __dir__, __all__ = lazy_exports(__name__)
