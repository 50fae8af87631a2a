"""The default bounds on one request of a network backend (:class:`mitigate.lm._http.Limits` holds them).

Plain numbers in a module that imports nothing, so the command line can show them as the
defaults of ``--deadline`` and ``--max-*`` without loading the HTTP layer (so the command line starts fast).
"""

DEFAULT_DEADLINE = 100.0
"""Seconds one request may spend on the server over all its attempts (connect to last byte of each; the waits
between retries not counted). With the read timeout left at its default (the deadline itself) a server that
never answers fails the request after this long, once, and the circuit breaker stops the run then: under two
minutes."""
DEFAULT_MAX_RESPONSE_BYTES = 10_000_000
"""The largest answer body read (10 MB); reading stops past it."""
DEFAULT_MAX_PROMPT_CHARS = 400_000
"""The longest prompt sent, in characters (about 100,000 tokens); checked before sending."""
DEFAULT_MAX_SAMPLES = 128
"""The most samples (``n``) asked for in one request."""
