"""Conversation context at retain, without an LLM (pure).

A turn like "Yes, a cat named Pixel" means nothing alone: the question it answers is in the
turn before it. The memories of one document, in the order they were given, form a sequence;
each memory is *indexed* with a bounded snippet of the memory before it (its *index context*),
while its own text stays what recall returns and what the token budget counts:

- keyword arm: the snippet goes into the memory's ``search_vector`` at the lowest weight ('D'),
  and BM25 counts its occurrences at :data:`CONTEXT_TERM_WEIGHT`;
- semantic arm: the memory's vector leans towards its predecessor's,
  ``normalise(own + w * previous)``, which works with any embedder and with vectors the caller
  supplied, and costs no extra embedding.

A memory without a document (and not a window of a split long item) or the first of its
document gets no context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, get_args

import numpy as np
import numpy.typing as npt

from shared_core.protocols import TokenCounter
from shared_core.retain.prepare import PreparedUnit
from shared_core.text import split_sentences

__all__ = [
    "CONTEXT_MODES",
    "ContextMode",
    "context_snippet",
    "context_vectors",
    "index_contexts",
    "predecessors",
    "unit_predecessors",
]

ContextMode = Literal["previous", "none"]
"""``"previous"``: index each memory with its predecessor in the same document;
``"none"``: index the memory's own text only."""
CONTEXT_MODES: Final[tuple[str, ...]] = get_args(ContextMode)


def predecessors(keys: Sequence[str | None]) -> list[int | None]:
    """For each position, the index of the previous position with the same non-None key.

    >>> predecessors(["a", "b", None, "a", "a", None])
    [None, None, None, 0, 3, None]
    """
    last: dict[str, int] = {}
    out: list[int | None] = []
    for i, key in enumerate(keys):
        if key is None:
            out.append(None)
            continue
        out.append(last.get(key))
        last[key] = i
    return out


def unit_predecessors(units: Sequence[PreparedUnit]) -> list[int | None]:
    """Each unit's predecessor: the previous unit of its document, or, for the windows of a
    long item retained without a document, the previous window of that item."""
    return predecessors([_sequence_key(u) for u in units])


def _sequence_key(unit: PreparedUnit) -> str | None:
    if unit.document_id is not None:
        return f"d:{unit.document_id}"
    return None if unit.chunk_id is None else f"c:{unit.chunk_id}"


def context_snippet(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The end of ``text`` in at most ``max_tokens`` tokens, in whole sentences when they fit.

    The end of the previous turn is what a reply answers ("... Do you have pets?"), so the
    snippet keeps trailing sentences; a last sentence longer than the limit is cut to its head.
    """
    kept: list[str] = []
    used = 0
    for sentence in reversed(split_sentences(text)):
        n = counter.count(sentence)
        if used + n > max_tokens:
            if not kept:
                kept.append(counter.truncate(sentence, max_tokens))
            break
        kept.append(sentence)
        used += n
    return " ".join(reversed(kept))


def index_contexts(
    texts: Sequence[str],
    previous: Sequence[int | None],
    *,
    mode: ContextMode,
    max_tokens: int,
    counter: TokenCounter,
) -> list[str | None]:
    """Each text's index context: a snippet of its predecessor's text, or None.

    >>> class Words:
    ...     def count(self, text): return len(text.split())
    ...     def truncate(self, text, n): return " ".join(text.split()[:n])
    >>> index_contexts(["Do you have pets? I do.", "Yes, a cat."], [None, 0],
    ...                mode="previous", max_tokens=8, counter=Words())
    [None, 'Do you have pets? I do.']
    >>> index_contexts(["a", "b"], [None, 0], mode="none", max_tokens=8, counter=Words())
    [None, None]
    """
    if mode == "none" or max_tokens <= 0:
        return [None] * len(texts)
    out: list[str | None] = []
    for p in previous:
        snippet = context_snippet(texts[p], max_tokens, counter) if p is not None else ""
        out.append(snippet or None)
    return out


def context_vectors(
    vectors: npt.NDArray[np.float32], previous: Sequence[int | None], weight: float
) -> npt.NDArray[np.float32]:
    """Unit vectors leaning towards their predecessor's: ``normalise(v + weight * v_prev)``.

    Mixes the memories' own vectors (never an already mixed one), so context does not chain
    further back than one memory.

    >>> v = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    >>> context_vectors(v, [None, 0], 1.0).astype(np.float64).round(3).tolist()
    [[1.0, 0.0], [0.707, 0.707]]
    """
    out = vectors.copy()
    if weight <= 0:
        return out
    for i, p in enumerate(previous):
        if p is None:
            continue
        mixed = vectors[i] + weight * vectors[p]
        norm = float(np.linalg.norm(mixed))
        if norm > 0:
            out[i] = mixed / norm
    return out
