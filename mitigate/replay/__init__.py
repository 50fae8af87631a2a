"""Judges that replay answers instead of calling a model: recorded judgments (:class:`RecordedJudge`), the
released outputs of real LLM judges (:class:`ReleasedJudge`), and released pairwise answers read by
mitigate's own parsers (:func:`load_released_pairwise`).
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.replay._recorded import RecordedJudge, ReleasedJudge
    from mitigate.replay._released_pairwise import LAYOUTS, load_released_pairwise

__getattr__, __dir__, __all__ = lazy_exports(__name__)
