"""Mitigations: composable transformers of judges (see :mod:`mitigate.strategies.base`)."""

from mitigate.strategies.base import (
    Mitigation,
    Pipeline,
    PromptMitigation,
    from_spec,
    parse_pipeline,
    register,
)

__all__ = ["Mitigation", "Pipeline", "PromptMitigation", "from_spec", "parse_pipeline", "register"]
