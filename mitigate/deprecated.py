"""Old path of :mod:`mitigate.deprecation` (``renamed``, ``warn_renamed``): one module for deprecations."""

from mitigate.deprecation import moved

__getattr__ = moved(__name__, "mitigate.deprecation")
