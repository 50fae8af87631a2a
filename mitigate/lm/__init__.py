"""LM backends behind one interface: ``get(spec)`` builds one from a spec string, ``wrap(lm)`` adds the
on-disk cache and retries, ``declare(spec)`` gives its declared facts only (no SDK, key or model file)."""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.lm._anthropic import AnthropicLM
    from mitigate.lm._base import (
        LM,
        AnswerConstraint,
        Choice,
        ConstraintMode,
        LMRequest,
        LMResponse,
        Message,
        Role,
        TokenLogprob,
        Usage,
        WrapperLM,
        innermost,
    )
    from mitigate.lm._batch import (
        BatchAPI,
        BatchingLM,
        BatchItemError,
        BatchRecord,
        BatchState,
        BatchStore,
        custom_ids,
    )
    from mitigate.lm._batch_apis import AnthropicBatchAPI, OpenAIBatchAPI
    from mitigate.lm._cache import (
        BudgetedLM,
        BudgetExhaustedError,
        CachedLM,
        CacheMiss,
        CallBudget,
        LMCache,
        cache_only,
    )
    from mitigate.lm._dspy import DSPyLM
    from mitigate.lm._fake import FakeLM
    from mitigate.lm._http import (
        DEFAULT_DEADLINE,
        DEFAULT_MAX_PROMPT_CHARS,
        DEFAULT_MAX_RESPONSE_BYTES,
        DEFAULT_MAX_SAMPLES,
        Limits,
    )
    from mitigate.lm._openai import OpenAILM
    from mitigate.lm._pool import read_endpoints
    from mitigate.lm._pricing import Price, cost, register_price, why_unpriced
    from mitigate.lm._registry import declare, get, wrap
    from mitigate.lm._retry import RetryPolicy

__getattr__, __dir__, __all__ = lazy_exports(__name__)
