"""Nearest-neighbour demonstrations: the pool items most similar to the judged one, by TF-IDF or a local
sentence-transformers model (never downloaded); the index is cached in-process, so the selector stays a
plain value."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mitigate.constraints import Interval, Options, Satisfies
from mitigate.data import Item
from mitigate.errors import ConfigError, ModelPathError
from mitigate.prompt import field_text
from mitigate.registry import Tags, register
from mitigate.selectors._base import Selector


def item_text(item: Item, fields: tuple[str, ...]) -> str:
    """The text an item is embedded by: its ``fields`` joined by newlines (missing ones skipped)."""
    parts = [value for f in fields if (value := field_text(item, f)) is not None]
    return "\n".join(parts)


@register("selector", "knn")
class KNN(Selector):
    """The ``k`` pool items nearest to the query by cosine similarity of their embeddings.

    Parameters:
        fields: which texts of an item are embedded (default: the judged ``output``).
        embedding: ``"tfidf"`` or ``"sentence-transformers:<local model folder>"``.
        ngram_max: largest word n-gram of the TF-IDF vocabulary.
        nearest_last: False shows the nearest demo first; True puts it last, right before the judged item.
    """

    declared_tags: ClassVar[Tags] = Tags(needs_fitting=True, query_dependent=True)

    fields: tuple[str, ...] = ("output",)
    embedding: str = "tfidf"
    ngram_max: int = 2
    nearest_last: bool = False
    parameter_constraints: ClassVar = {
        "fields": [
            Satisfies(
                lambda v: isinstance(v, list | tuple) and len(v) > 0 and all(isinstance(f, str) for f in v),
                "a non-empty list of item field names",
            )
        ],
        "embedding": [
            Options("tfidf"),
            Satisfies(
                lambda v: isinstance(v, str) and v.startswith("sentence-transformers:"),
                "'sentence-transformers:<local model folder>'",
            ),
        ],
        "ngram_max": [Interval(int, 1)],
        "nearest_last": [bool],
    }

    def _index(self) -> tuple[Any, Any]:
        """The embedding function and the ``NearestNeighbors`` of the pool (cached by texts and settings)."""
        assert self.pool_ is not None
        texts = tuple(item_text(it, self.fields) for it in self.pool_)
        return _build_index(self.embedding, self.ngram_max, self.fields, texts)

    def neighbours(self, query: Item) -> list[tuple[Item, float]]:
        """Every pool item with its cosine distance to ``query``, nearest first (ties in pool order)."""
        if not self.is_fitted:
            raise ConfigError(
                "KNN is not fitted; expected `sel = sel.fit(pool, criterion=...)` before neighbours()"
            )
        assert self.pool_ is not None
        embed, nn = self._index()
        dist, idx = nn.kneighbors(embed([item_text(query, self.fields)]), n_neighbors=len(self.pool_))
        pairs = sorted(
            zip(dist[0].tolist(), idx[0].tolist(), strict=True), key=lambda p: (round(p[0], 12), p[1])
        )
        return [(self.pool_[i], float(d)) for d, i in pairs]

    def _pick(self, k: int, candidates: list[Item], query: Item | None) -> list[Item]:
        assert query is not None
        allowed = {it.id for it in candidates}
        picks = [it for it, _ in self.neighbours(query) if it.id in allowed][:k]
        return picks[::-1] if self.nearest_last else picks


@functools.lru_cache(maxsize=8)
def _build_index(
    embedding: str, ngram_max: int, fields: tuple[str, ...], texts: tuple[str, ...]
) -> tuple[Any, Any]:
    from sklearn.neighbors import NearestNeighbors

    if embedding == "tfidf":
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(ngram_range=(1, ngram_max), sublinear_tf=True)
        try:
            matrix = vec.fit_transform(texts)
        except ValueError as exc:  # every text empty or only stop words
            raise ConfigError(
                f"KNN could not build a TF-IDF vocabulary from the pool's {list(fields)}: {exc}"
            ) from exc
        embed = vec.transform
    else:
        model = _sentence_model(embedding.split(":", 1)[1])

        def embed(batch: list[str]) -> Any:
            return np.asarray(model.encode(batch, normalize_embeddings=True))

        matrix = embed(list(texts))
    return embed, NearestNeighbors(metric="cosine", algorithm="brute").fit(matrix)


def _sentence_model(folder: str) -> Any:
    """Load a local sentence-transformers model folder with the hub switched off."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise ModelPathError(
            f"KNN embedding 'sentence-transformers:{folder}' expected a local model folder; {path} is not a "
            "folder (use embedding='tfidf', which needs no model)"
        )
    try:
        from sentence_transformers import SentenceTransformer
    except ModuleNotFoundError as exc:
        raise ConfigError(
            "KNN embedding 'sentence-transformers:...' needs the sentence-transformers package, which is not "
            "installed; expected it to be importable (or use embedding='tfidf')"
        ) from exc
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        return SentenceTransformer(str(path), device="cpu")
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old
