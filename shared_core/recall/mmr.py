"""Maximal marginal relevance: pick ``k`` of the candidates, trading relevance to the query
against similarity to what is already picked (``search_type="mmr"``, as LangChain's vector
stores do it).

>>> import numpy as np
>>> q = np.array([1.0, 0.0])
>>> cands = np.array([[1.0, 0.0], [0.99, 0.14], [0.6, 0.8]])
>>> mmr_select(q, cands, k=2, lambda_mult=0.3)
[0, 2]
>>> mmr_select(q, cands, k=2, lambda_mult=1.0)
[0, 1]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_FETCH_K", "DEFAULT_LAMBDA_MULT", "mmr_select"]

# LangChain's VectorStore.max_marginal_relevance_search defaults.
DEFAULT_FETCH_K = 20
DEFAULT_LAMBDA_MULT = 0.5


def _unit(rows: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def mmr_select(
    query: npt.NDArray[np.floating],
    candidates: npt.NDArray[np.floating],
    *,
    k: int,
    lambda_mult: float = DEFAULT_LAMBDA_MULT,
) -> list[int]:
    """Indexes of up to ``k`` candidates, in pick order. Each step takes the candidate that
    maximises ``lambda_mult * sim(query, c) - (1 - lambda_mult) * max sim(c, picked)``
    (cosine similarities); ``lambda_mult=1`` is plain similarity order, ``0`` maximal
    diversity."""
    if k <= 0 or len(candidates) == 0:
        return []
    cands = _unit(candidates)
    relevance = cands @ _unit(query.reshape(1, -1))[0]
    picked: list[int] = [int(np.argmax(relevance))]
    closest = cands @ cands[picked[0]]
    while len(picked) < min(k, len(cands)):
        score = lambda_mult * relevance - (1.0 - lambda_mult) * closest
        score[picked] = -np.inf
        best = int(np.argmax(score))
        picked.append(best)
        closest = np.maximum(closest, cands @ cands[best])
    return picked
