"""Shared test doubles: deterministic embedders, a fake cross-encoder, and a mock runner that
drives a sans-I/O plan with recorded rows (the way httpcore tests run against a mock backend).

Fakes stand in for pure units only; anything that touches storage runs on real Postgres.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import psycopg

from shared_core.storage.plan import (
    Collect,
    Compute,
    Concurrently,
    Copy,
    Launch,
    Launched,
    Operation,
    Plan,
    Query,
)

T = TypeVar("T")
DIM = 384


def hashed_words(texts: Sequence[str], dim: int = DIM) -> npt.NDArray[np.float32]:
    """Bag-of-words unit vectors, each word hashed to one axis: a model-free encoder for the
    benchmark corpus builders (stable within a process; ``hash`` is salted per process)."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, hash(word) % dim] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def unit_vector(cos: float, axis: int, base: int = 0, dim: int = DIM) -> list[float]:
    """A unit vector at cosine ``cos`` to ``e_base`` (``axis`` != ``base``)."""
    v = np.zeros(dim, dtype=np.float64)
    v[base] = cos
    v[axis] = math.sqrt(max(0.0, 1.0 - cos * cos))
    return v.tolist()


class FixedQueryEmbedder:
    """Deterministic query embedder: ``e0`` for every query, or the vector mapped to its text."""

    # It queries banks written by the default model, with that model's calibrated cosine cuts:
    # it names that model (a bank refuses a model it was not written with).
    model_name = "all-MiniLM-L6-v2"
    dimension = DIM

    def __init__(self, vectors: Mapping[str, list[float]] | None = None) -> None:
        self.vectors = dict(vectors or {})

    def _one(self, text: str) -> npt.NDArray[np.float32]:
        if text in self.vectors:
            return np.asarray(self.vectors[text], dtype=np.float32)
        v = np.zeros(DIM, dtype=np.float32)
        v[0] = 1.0
        return v

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._one(text)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, DIM), np.float32)
        return np.stack([self._one(t) for t in texts])


class TinyEmbedder:
    """A deterministic embedder of another dimension (8), for dimension mismatches."""

    model_name = "tiny-8d"
    dimension = 8

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embed_documents([text])[0]


class FakeScorer:
    """A PairScorer returning fixed logits; records the batch size it was called with."""

    name = "fake-ce"

    def __init__(self, scores: Sequence[float]) -> None:
        self.scores = list(scores)
        self.calls: list[tuple[list[tuple[str, str]], int]] = []

    def predict(
        self,
        sentences: Sequence[tuple[str, str]],
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> list[float]:
        self.calls.append((list(sentences), batch_size))
        return self.scores[: len(sentences)]


def statement_text(query: Query) -> str:
    """A statement's SQL as text (composed statements rendered without a connection)."""
    statement = query.statement
    return statement if isinstance(statement, str) else statement.as_string(None)


Answer = Callable[[Query], Any]


def run_recorded(plan: Plan[T], answer: Answer) -> tuple[T, list[Operation]]:
    """Drive ``plan`` without a database: ``answer(query)`` gives each statement's rows (an
    exception instance is thrown into the plan, as the runners do with ``QueryCanceled``).
    ``Compute`` runs inline; ``Copy`` returns its row count. Returns the plan's value and every
    operation it yielded, in order."""
    seen: list[Operation] = []
    launched: dict[int, list[Any]] = {}
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            op = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as stop:
            return stop.value, seen
        seen.append(op)
        error = None
        if isinstance(op, Compute):
            value = op.fn(*op.args)
        elif isinstance(op, Copy):
            value = len(op.rows)
        elif isinstance(op, Concurrently):
            value = _all(op.queries, answer)
        elif isinstance(op, Launch):  # answered at once, handed over at its Collect
            value = Launched(len(seen))  # the operation's index: unique
            launched[value.key] = _all(op.queries, answer)
        elif isinstance(op, Collect):
            value = launched.pop(op.launched.key)
        else:
            result = answer(op)
            if isinstance(result, psycopg.errors.QueryCanceled):
                error = result
            else:
                value = _shape(op, result)


def _all(queries: tuple[Query, ...], answer: Answer) -> list[Any]:
    results = [answer(q) for q in queries]
    return [
        r if isinstance(r, BaseException) else _shape(q, r) for q, r in zip(queries, results, strict=True)
    ]


def _shape(query: Query, rows: Any) -> Any:
    if query.fetch == "none":
        return rows if isinstance(rows, int) else 0
    if query.row_type is not None and isinstance(rows, list):
        rows = [query.row_type(**r) if isinstance(r, Mapping) else r for r in rows]
    if query.fetch == "one":
        return rows[0] if rows else None
    return rows
