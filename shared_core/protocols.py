"""The seams of the pipeline, as structural ``Protocol``s.

Any object with the right methods plugs in: no base class to inherit. The defaults live in
:mod:`shared_core.embedding`, :mod:`shared_core.tokens`, :mod:`shared_core.extraction` and
:mod:`shared_core.recall.rerank`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from shared_core.types import DateMention, EntityMention, TimeWindow

__all__ = ["DateParser", "Embedder", "EntityExtractor", "PairScorer", "TokenCounter"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return an array of shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Return an array of shape ``(dimension,)``."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts and truncates tokens (cl100k_base by default)."""

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


@runtime_checkable
class EntityExtractor(Protocol):
    """Finds named entities in a batch of texts."""

    def extract(self, texts: Sequence[str]) -> list[list[EntityMention]]: ...


@runtime_checkable
class DateParser(Protocol):
    """Finds date expressions in text, resolved against a reference time (past preferred)."""

    def parse_dates(self, text: str, reference_time: _dt.datetime) -> list[DateMention]: ...

    def parse_query_dates(self, text: str, reference_time: _dt.datetime) -> TimeWindow | None: ...


@runtime_checkable
class PairScorer(Protocol):
    """Scores (query, document) pairs; sentence-transformers' ``CrossEncoder`` fits."""

    def predict(
        self,
        sentences: Sequence[tuple[str, str]],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> Sequence[float] | npt.NDArray[np.float32]: ...
