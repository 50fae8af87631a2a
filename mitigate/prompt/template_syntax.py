"""Deprecated: this module is :mod:`mitigate.prompt.read.syntax` now (template reading has its own package).

Every name is still found here, with a :class:`DeprecationWarning` naming the new module.
"""

from __future__ import annotations

from mitigate.deprecation import moved

__getattr__ = moved(__name__, "mitigate.prompt.read.syntax")
