"""A deterministic stand-in for a hosted embedding model (OpenAI's are 1536-d): nothing loads or
downloads. Each text gets a fixed pseudo-random direction; ``normalised=False`` also gives it a
fixed length between 0.5 and 2, so L2 and inner-product distances differ from cosine."""

from __future__ import annotations

import hashlib

import numpy as np
from langchain_core.embeddings import Embeddings


class HashEmbeddings(Embeddings):
    def __init__(self, size: int = 1536, *, normalised: bool = True) -> None:
        self.size = size
        self.normalised = normalised

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        rng = np.random.default_rng(seed)
        v = rng.normal(size=self.size)
        v /= np.linalg.norm(v)
        if not self.normalised:
            v *= rng.uniform(0.5, 2.0)
        return [float(x) for x in v.astype(np.float32)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)
