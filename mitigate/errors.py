"""One exception tree: every error mitigate raises on purpose derives from :class:`MitigateError`, carries
the context a user needs to act, and says what was expected and what came instead."""

from __future__ import annotations

from typing import Any


class MitigateError(Exception):
    """Root of every error mitigate raises on purpose; keyword context (``item_id``, ``raw``, ``path`` ...) is
    kept on ``self.context`` and as attributes."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context: dict[str, Any] = {k: v for k, v in context.items() if v is not None}
        for key, value in self.context.items():
            setattr(self, key, value)


class ConfigError(MitigateError):
    """A parameter, spec or file given by the user is not what the component expects (not a ``ValueError``,
    which pydantic would wrap into its own ``ValidationError``)."""


class BackendSpecError(ConfigError):
    """A backend spec string (``openai:gpt-4o-mini``, ``local`` ...) could not be resolved."""


class MissingAPIKeyError(ConfigError):
    """The provider's API key is not set; the message names the environment variable."""


class ModelPathError(ConfigError):
    """A local model path does not exist, is unreadable, or is not a valid GGUF file."""


class TemplateError(ConfigError):
    """A judge prompt template lacks what it needs (e.g. a slot for the judged text)."""


class TemplateSandboxError(TemplateError):
    """A template's Jinja did what the sandbox forbids or broke one of its limits (the message names the
    construct and the rule)."""


class ScaleError(ConfigError):
    """A score scale is malformed (min >= max, empty letter map ...)."""


class DataError(ConfigError):
    """A data file is missing, unreadable or has a malformed row (file and line in context)."""


class ReplayFormatError(DataError):
    """A replay file has a malformed line (file and line in context)."""


class CapabilityError(MitigateError, NotImplementedError):
    """The backend cannot do what was asked (e.g. token logprobs) and will not fake it."""


class ParseError(MitigateError):
    """A judge response held no score the parser could accept; ``raw`` holds the text."""


class LMCallError(MitigateError, RuntimeError):
    """An LM call failed for good (retries exhausted or a non-retryable error)."""


class TransientLMError(LMCallError):
    """An LM call failed in a way worth retrying (HTTP 429/5xx, timeouts); ``status`` the HTTP status and
    ``retry_after`` the server's requested wait in seconds, when known."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None, **context: Any
    ) -> None:
        super().__init__(message, **context)
        self.status = status
        self.retry_after = retry_after


class RunStoppedError(MitigateError, RuntimeError):
    """A run stopped early because its failures would repeat for every item (a refused key, an unreachable
    server ...); ``cause`` says which, and rerunning after the fix resumes from the journal."""


class RunBusyError(ConfigError):
    """Another process holds the lock of a run folder (or journal); ``path`` names the lock file."""


class ScriptExhaustedError(MitigateError, RuntimeError):
    """A :class:`~mitigate.lm._fake.FakeLM` was asked for more responses than it was scripted with."""


class CacheDamageWarning(UserWarning):
    """The LM cache file (or one of its entries) is damaged; the damaged part is treated as a miss."""


class JournalDamageWarning(UserWarning):
    """A run journal holds a judgment this judge cannot have given; its item is judged again."""


class CacheUnavailableWarning(UserWarning):
    """The LM cache could not be written or read for a reason other than damage (a full disk, a lock held
    too long ...); those answers are not cached and the file is left as it is."""


class PromptConflictWarning(UserWarning):
    """A mitigation added an instruction that the user's own prompt text contradicts."""


class UnverifiedFitWarning(UserWarning):
    """A model fitted without gold labels (an unsupervised Dawid-Skene panel): unverified, or contradicting
    what the data show."""


class NotRecommendedWarning(UserWarning):
    """A pipeline file was loaded whose search found no demo set better than the baseline on held-out test."""


class TemplateReadWarning(UserWarning):
    """Reading a template took a documented default the user may want to override."""
