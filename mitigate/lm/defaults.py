"""The default bounds on one request of a network backend (:class:`mitigate.lm.http.Limits` holds them).

Plain numbers in a module that imports nothing, so the command line can show them as the
defaults of ``--deadline`` and ``--max-*`` without loading the HTTP layer (issue 29: a fast start).
"""

DEFAULT_DEADLINE = 300.0
"""Seconds one request may take in all (connect, send, the whole answer), whatever the read timeout."""
DEFAULT_MAX_RESPONSE_BYTES = 10_000_000
"""The largest answer body read (10 MB); reading stops past it."""
DEFAULT_MAX_PROMPT_CHARS = 400_000
"""The longest prompt sent, in characters (about 100,000 tokens); checked before sending."""
DEFAULT_MAX_SAMPLES = 128
"""The most samples (``n``) asked for in one request."""

__all__ = ["DEFAULT_DEADLINE", "DEFAULT_MAX_PROMPT_CHARS", "DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_MAX_SAMPLES"]
