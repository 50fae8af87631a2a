"""The blind labelling page and its labels file: the loop from ``mitigate estimate --select`` to corrected
numbers.

A :class:`LabelSession` is a labels file open for labelling (the items in the order chosen, their design
weights, each label written atomically as it is given); :class:`LabelServer` serves it on the loopback
interface as a page labelled from the keyboard; :func:`summary` is the agreement of the judge with the labels
and the corrected per-system estimates; :func:`export_labels` and :func:`import_labels` trade the labels with
Label Studio and Argilla.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.label._agreement import design, kappa, summary
    from mitigate.label._formats import EXPORT_FORMATS, export_labels, import_labels, label_studio_config
    from mitigate.label._server import LabelServer
    from mitigate.label._session import (
        PAIR_CHOICES,
        LabelConflict,
        LabelSession,
        draw_per_system,
        one_server,
        read_selection,
    )

__getattr__, __dir__, __all__ = lazy_exports(__name__)
