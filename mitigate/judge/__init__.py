"""Judges: the protocol every judge follows, the prompt-driven judge, what a judge returns, and fitting.

A :class:`Judge` turns an :class:`~mitigate.Item` into a :class:`Judgment` (``async judge(item)``) and
hands a prompt transform down to every prompt it uses (``map_prompts(fn)``), so a prompt-level
mitigation placed after a fan-out reaches every inner prompt. :class:`PromptJudge` is the leaf: one
prompt, one LM, one :class:`JudgeConfig`. :class:`Fittable` is the one fit protocol of components that
learn from data (:class:`FitContext`); :class:`LikelihoodScorer` gives the likelihood score LS of a
judged text under a causal LM (Ohi et al. 2024).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.judge._config import EMBEDDED_DEFAULT_SPEC, JudgeConfig, PlannedRequest, answer_mode
    from mitigate.judge._fitting import FitContext, Fittable, fit_context, require_judge, run_fit
    from mitigate.judge._judge import CompositeJudge, Judge, PromptJudge, judge_scale, recording_requests
    from mitigate.judge._judgment import (
        FRAME_COLUMNS,
        Judgment,
        ParseFailure,
        Reducer,
        combine_costs,
        frame,
        merge_judgments,
        reduce_samples,
    )
    from mitigate.judge._likelihood import DEFAULT_LIKELIHOOD_TEMPLATE, LikelihoodScorer

__getattr__, __dir__, __all__ = lazy_exports(__name__)
