"""Cross-encoder reranking, with an explicit, reported passthrough fallback.

A :class:`Reranker` scores ``(query, document)`` pairs with a cross-encoder and returns the raw
scores and scores normalised to [0, 1]:

* a cross-encoder this module loads (by model name or path) is asked for raw logits, and the
  normalised score is always their sigmoid, so the scale never depends on the candidate list;
* any other :class:`~shared_core.protocols.PairScorer` has an unknown scale: if all its scores are
  already in [0, 1] (calibrated rerankers) they are kept, otherwise they are sigmoided
  (:func:`normalise_scores`);
* the learned reranker (``"learned"``, and what recall uses when a cross-encoder cannot be
  loaded offline) needs no model: recall scores its candidates from the signals it already
  has (:mod:`shared_core.recall.learned`), so :meth:`Reranker.rerank` does not apply to it;
* in passthrough mode (``"none"``) the scores are seeded from the RRF rank,
  ``1 − 0.9·rank/(n−1)`` (:func:`passthrough_scores`), so that the boosts refine the fused
  order instead of sorting by recency alone.

Models load lazily, at first use, once per process and spec, and only from local files: nothing
is ever downloaded. A model that cannot be loaded gives the learned reranker, one short warning
line per spec and process on the ``shared_core.recall.rerank`` logger (no URL, no traceback),
and ``reranker.name == "learned"`` with the reason in the trace.

>>> r = Reranker.from_spec("none")
>>> r.name, r.rerank("who joined Google?", ["Alice joined Google.", "Bob likes tea."])
('passthrough', (None, [1.0, 0.1]))
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, cast

import numpy as np

from shared_core.config import DEFAULT_CROSS_ENCODER, DEFAULT_RERANK_BATCH_SIZE
from shared_core.protocols import PairScorer
from shared_core.text import MONTH_NAMES
from shared_core.types import as_utc

__all__ = [
    "LEARNED_NAME",
    "LEARNED_SPECS",
    "PASSTHROUGH_NAME",
    "PASSTHROUGH_SPECS",
    "Reranker",
    "RerankerFallbackWarning",
    "RerankerKind",
    "clear_reranker_cache",
    "format_document",
    "normalise_scores",
    "passthrough_scores",
]

_log = logging.getLogger(__name__)

PASSTHROUGH_NAME: Final = "passthrough"
PASSTHROUGH_SPECS: Final = frozenset({"none", "passthrough", "rrf"})
"""Spec strings that select passthrough mode explicitly (no model, no warning)."""
LEARNED_NAME: Final = "learned"
"""The name the recall trace reports when the learned reranker ran."""
LEARNED_SPECS: Final = frozenset({LEARNED_NAME})
"""Spec strings that select the learned reranker explicitly (no model, no warning)."""

RerankerKind = Literal["cross-encoder", "learned", "passthrough"]
"""What scores the candidates; recall picks its arm weights and boosts by it."""
_DEFAULT_SPEC: Final = "default"

# Passthrough scores span [PASSTHROUGH_MIN, 1.0] from the first to the last RRF rank.
_PASSTHROUGH_MIN: Final = 0.1


class RerankerFallbackWarning(UserWarning):
    """Kept for imports: the fallback is now reported on the ``shared_core.recall.rerank``
    logger (one line per spec and process), not as a warning."""


def format_document(text: str, context: str | None, occurred_start: _dt.datetime | None) -> str:
    """The document string the cross-encoder sees: readable date, then context, then text.

    >>> import datetime as dt
    >>> format_document("Alice joined Google.", "work", dt.datetime(2022, 6, 5))
    '[Date: June 05, 2022 (2022-06-05)] work: Alice joined Google.'
    >>> format_document("Alice joined Google.", None, None)
    'Alice joined Google.'
    """
    parts: list[str] = []
    if occurred_start is not None:
        when = as_utc(occurred_start)
        parts.append(
            f"[Date: {MONTH_NAMES[when.month - 1]} {when.day:02d}, {when.year} ({when.date().isoformat()})] "
        )
    if context:
        parts.append(f"{context}: ")
    parts.append(text)
    return "".join(parts)


def _sigmoid(x: float) -> float:
    if math.isnan(x):
        return 0.0
    # two branches so exp() never overflows for large |x|
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def normalise_scores(raw: Sequence[float]) -> list[float]:
    """Map scores of unknown scale to [0, 1]: keep them if all are in [0, 1], else sigmoid all.

    One decision for the whole list keeps the scores comparable with each other. NaN becomes 0.

    >>> normalise_scores([0.2, 0.9])
    [0.2, 0.9]
    >>> [round(s, 4) for s in normalise_scores([-2.0, 0.0, 3.0, float("nan")])]
    [0.1192, 0.5, 0.9526, 0.0]
    """
    values = [float(x) for x in raw]
    if all(0.0 <= x <= 1.0 for x in values if not math.isnan(x)):
        return [0.0 if math.isnan(x) else x for x in values]
    return [_sigmoid(x) for x in values]


def passthrough_scores(n: int) -> list[float]:
    """Rank-seeded scores for ``n`` candidates in RRF order: ``1 − 0.9·rank/(n−1)``.

    >>> passthrough_scores(3), passthrough_scores(1)
    ([1.0, 0.55, 0.1], [1.0])
    """
    if n <= 1:
        return [1.0] * max(n, 0)
    span = 1.0 - _PASSTHROUGH_MIN
    # written from both ends so the first score is exactly 1.0 and the last exactly 0.1
    return [1.0 if rank == 0 else _PASSTHROUGH_MIN + span * (n - 1 - rank) / (n - 1) for rank in range(n)]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Backend:
    """What a spec resolved to: a pair scorer, the learned reranker, or passthrough."""

    name: str
    scorer: PairScorer | None = None
    learned: bool = False
    logits: bool = False  # scores are logits of a model we loaded: always sigmoid
    fallback_reason: str | None = None

    @property
    def kind(self) -> RerankerKind:
        if self.scorer is not None:
            return "cross-encoder"
        return "learned" if self.learned else "passthrough"


_PASSTHROUGH: Final = _Backend(name=PASSTHROUGH_NAME)
_LEARNED: Final = _Backend(name=LEARNED_NAME, learned=True)

# Loaded models (or load failures) per spec, for the whole process. One lock: loads are rare
# and slow, and serialising them avoids loading one model twice from two threads.
_CACHE: dict[str, _Backend] = {}
_CACHE_LOCK = threading.Lock()


def clear_reranker_cache() -> None:
    """Forget loaded models and past load failures (so a failure warns again). For tests."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _load_cross_encoder(spec: str) -> PairScorer:
    """Load a sentence-transformers ``CrossEncoder`` from local files only."""
    import torch
    from sentence_transformers import CrossEncoder

    # local_files_only: never download, whatever HF_HUB_OFFLINE says. Identity activation:
    # we want raw logits, and apply the sigmoid ourselves.
    model = CrossEncoder(spec, local_files_only=True, activation_fn=torch.nn.Identity())
    num_labels = getattr(model, "num_labels", 1)
    if num_labels != 1:
        raise ValueError(f"a reranker has one output label; this model has {num_labels}")
    # CrossEncoder.predict takes more (and differently named) positional parameters than the
    # protocol; we only ever call it with keywords.
    return cast(PairScorer, model)


def _resolve(spec: str) -> _Backend:
    """The cached backend for a model spec, loading it on first use (thread-safe)."""
    backend = _CACHE.get(spec)
    if backend is not None:
        return backend
    with _CACHE_LOCK:
        backend = _CACHE.get(spec)
        if backend is None:
            try:
                backend = _Backend(name=spec, scorer=_load_cross_encoder(spec), logits=True)
            except Exception as exc:  # any load failure degrades to the learned reranker, once
                # The exception's own text names hub URLs and cache paths: the type says
                # enough in one line.
                reason = (
                    f"reranker model {spec!r} is not available offline "
                    f"({type(exc).__name__}); using the learned reranker"
                )
                _log.warning(reason)
                backend = _Backend(name=LEARNED_NAME, learned=True, fallback_reason=reason)
            _CACHE[spec] = backend
    return backend


class Reranker:
    """Scores candidates against a query; build one with :meth:`from_spec`.

    >>> r = Reranker.from_spec("none")
    >>> r.is_passthrough, r.rerank("q", ["a", "b", "c"])[1]
    (True, [1.0, 0.55, 0.1])
    """

    __slots__ = ("_lock", "_resolved", "_spec")

    def __init__(self, *, spec: str | None = None, backend: _Backend | None = None) -> None:
        """Prefer :meth:`from_spec`. Give a model ``spec`` (loaded lazily) or a resolved backend."""
        if (spec is None) == (backend is None):
            raise ValueError("give exactly one of spec and backend")
        self._spec = spec
        self._resolved = backend
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: str | PairScorer | Reranker | None = None) -> Reranker:
        """Build a reranker from a spec.

        * ``None`` or ``"default"``: the default cross-encoder (``DEFAULT_CROSS_ENCODER``), or
          the learned reranker when it cannot be loaded;
        * ``"learned"``: the learned reranker, on purpose;
        * ``"none"`` (or ``"passthrough"``, ``"rrf"``): passthrough, on purpose;
        * any other string: a sentence-transformers ``CrossEncoder`` model name or path;
        * an object with ``predict`` (a :class:`PairScorer`): used as it is;
        * a :class:`Reranker`: returned unchanged.

        Nothing is loaded until the reranker is first used.
        """
        if isinstance(spec, Reranker):
            return spec
        if spec is None:
            return cls(spec=DEFAULT_CROSS_ENCODER)
        if isinstance(spec, str):
            text = spec.strip()
            if text.lower() in PASSTHROUGH_SPECS:
                return cls(backend=_PASSTHROUGH)
            if text.lower() in LEARNED_SPECS:
                return cls(backend=_LEARNED)
            if not text or text.lower() == _DEFAULT_SPEC:
                return cls(spec=DEFAULT_CROSS_ENCODER)
            return cls(spec=os.path.expanduser(text))
        if isinstance(spec, PairScorer):
            name = getattr(spec, "name", None)
            return cls(
                backend=_Backend(
                    name=name if isinstance(name, str) and name else type(spec).__name__,
                    scorer=spec,
                )
            )
        raise TypeError(
            f"a reranker spec is None, a string, a Reranker or an object with "
            f"predict(); got {type(spec).__name__}"
        )

    def _backend(self) -> _Backend:
        resolved = self._resolved
        if resolved is None:
            with self._lock:
                if self._resolved is None:
                    self._resolved = _resolve(cast(str, self._spec))
                resolved = self._resolved
        return resolved

    @property
    def name(self) -> str:
        """The model name or path, or ``"passthrough"`` (loads the model if not yet loaded)."""
        return self._backend().name

    @property
    def kind(self) -> RerankerKind:
        """``"cross-encoder"`` (any pair scorer), ``"learned"`` or ``"passthrough"``."""
        return self._backend().kind

    @property
    def is_passthrough(self) -> bool:
        """True when scores come from the RRF rank rather than a model."""
        return self.kind == "passthrough"

    @property
    def is_learned(self) -> bool:
        """True when recall scores candidates with :mod:`shared_core.recall.learned`."""
        return self.kind == "learned"

    @property
    def fallback_reason(self) -> str | None:
        """Why the requested model is not used, for the recall trace; None if it is."""
        return self._backend().fallback_reason

    def rerank(
        self, query: str, documents: Sequence[str], batch_size: int = DEFAULT_RERANK_BATCH_SIZE
    ) -> tuple[list[float] | None, list[float]]:
        """Score ``documents`` (in RRF order) against ``query``.

        Returns ``(raw, normalised)`` aligned with ``documents``. In passthrough mode ``raw`` is
        None and ``normalised`` follows the input (RRF rank) order. The learned reranker scores
        recall candidates, not strings: it raises ``TypeError`` here.
        """
        backend = self._backend()
        if backend.learned:
            raise TypeError(
                "the learned reranker scores recall candidates from their signals "
                "(shared_core.recall.learned.LearnedScorer), not document strings"
            )
        if backend.scorer is None:
            return None, passthrough_scores(len(documents))
        if not documents:
            return [], []
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        pairs = [(query, doc) for doc in documents]
        output = backend.scorer.predict(pairs, batch_size=batch_size, show_progress_bar=False)
        scores = np.asarray(output, dtype=np.float64).reshape(-1)
        if scores.size != len(documents):
            raise ValueError(
                f"reranker {backend.name!r} returned {scores.size} scores for {len(documents)} documents"
            )
        raw = [float(x) for x in scores]
        normalised = [_sigmoid(x) for x in raw] if backend.logits else normalise_scores(raw)
        return raw, normalised

    def __repr__(self) -> str:
        if self._resolved is None:
            return f"Reranker({self._spec!r}, not loaded)"
        return f"Reranker({self._resolved.name!r})"
