"""Test support that ships with mitigate: the contract battery every registered component passes, public so
you can run it on your own mitigations, selectors and engines (:func:`parametrize_with_checks`,
:func:`checks_for`, :func:`check_component`, :func:`registered_examples`), and a stub OpenAI/Anthropic server
for offline runs (:class:`StubOpenAIServer`; ``python -m mitigate.testing`` runs one in the foreground).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.testing._checks import (
        Check,
        check_component,
        checks_for,
        parametrize_with_checks,
        registered_examples,
    )
    from mitigate.testing._examples import example_judge, example_train
    from mitigate.testing._stub_answers import synthetic_logprobs, tokenize
    from mitigate.testing._stub_server import StubOpenAIServer

__getattr__, __dir__, __all__ = lazy_exports(__name__)
