"""Bring your own embeddings: any LangChain ``Embeddings``, LlamaIndex ``BaseEmbedding`` or plain
``text -> vector`` function as a core :class:`~shared_core.protocols.Embedder`.

The adapters are duck-typed, so this module imports neither framework:

- LangChain: an object with ``embed_documents(texts)`` and ``embed_query(text)``;
- LlamaIndex: an object with ``get_text_embedding_batch(texts)`` and ``get_query_embedding(q)``;
- a callable ``f(text) -> list[float]`` (what ``FAISS(embeddings.embed_query, ...)`` holds),
  used for documents and queries alike, as FAISS does.

The core stores and compares L2-normalised vectors (cosine), so the adapters normalise what the
model returns; :meth:`ForeignEmbedder.raw_documents` / :meth:`ForeignEmbedder.raw_query` give the
model's own vectors (the time-weighted retriever needs them to reproduce a store's L2 or inner
product distances).

>>> from langchain_core.embeddings import DeterministicFakeEmbedding
>>> emb = as_embedder(DeterministicFakeEmbedding(size=1536))
>>> emb.dimension, emb.model_name
(1536, 'DeterministicFakeEmbedding(size=1536)')
>>> round(float((emb.embed_query("hello") ** 2).sum()), 6)
1.0
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from shared_core.errors import ConfigurationError
from shared_core.protocols import Embedder

__all__ = ["ForeignEmbedder", "as_embedder", "describe_model", "wraps_same_model"]

# Attributes under which embedding classes name their model, in order of preference.
_MODEL_ATTRS = ("model_name", "model", "model_id", "deployment", "repo_id")
# Attributes under which they give their output size without a call.
_SIZE_ATTRS = ("size", "dimensions", "embed_dim", "dimension", "embedding_dim")


def describe_model(obj: Any) -> str:
    """A stable name for an embedding object: its class and, when it says, its model
    (``OpenAIEmbeddings(model='text-embedding-3-small')``); for a bound method, its owner's.

    The name is what a bank records, so a bank written with one model refuses another.
    """
    owner = getattr(obj, "__self__", None)
    if owner is not None and callable(obj):
        return describe_model(owner)
    cls = type(obj).__name__
    if callable(obj) and not hasattr(obj, "embed_query") and not hasattr(obj, "get_query_embedding"):
        return getattr(obj, "__qualname__", cls)
    for attr in _MODEL_ATTRS:
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value and value != "unknown":
            return f"{cls}(model={value!r})"
    for attr in _SIZE_ATTRS:
        value = getattr(obj, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{cls}({attr}={value})"
    return cls


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    out: npt.NDArray[np.float32] = np.divide(
        vectors, norms, out=np.zeros_like(vectors), where=norms > 0
    ).astype(np.float32)
    return out


class ForeignEmbedder:
    """An :class:`~shared_core.protocols.Embedder` over a framework's embedding object.

    ``kind`` is ``"langchain"``, ``"llamaindex"`` or ``"function"``. ``dimension`` is read from
    the object when it says (``size``, ``dimensions``, ``embed_dim``), else from one probe
    query, once. Thread-safe as far as the wrapped object is.
    """

    def __init__(
        self, obj: Any, *, kind: str, model_name: str | None = None, dimension: int | None = None
    ) -> None:
        self.wrapped = obj
        self.kind = kind
        self._model_name = model_name or describe_model(obj)
        self._dimension = dimension
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    target = getattr(self.wrapped, "__self__", self.wrapped)
                    for attr in _SIZE_ATTRS:
                        value = getattr(target, attr, None)
                        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                            self._dimension = value
                            break
                    else:
                        self._dimension = int(self.raw_query("dimension probe").shape[0])
        return self._dimension

    # ------------------------------------------------------------ the model's own vectors
    def _check(self, out: Any, n: int) -> npt.NDArray[np.float32]:
        """The model's reply ``out`` for ``n`` texts as an ``(n, d)`` float32 array of finite
        numbers, or the typed error naming the model (never numpy's ValueError, never a NaN
        vector written where no search can find it)."""
        try:
            vectors = np.asarray(out, dtype=np.float32)
        except (TypeError, ValueError) as exc:  # ragged rows, strings, None
            raise ConfigurationError(
                f"{self._model_name} returned embeddings that are not {n} vectors of one dimension "
                f"(shape or type: {exc})"
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != n or vectors.shape[1] == 0:
            raise ConfigurationError(
                f"{self._model_name} returned embeddings of shape {vectors.shape} for {n} texts"
            )
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise ConfigurationError(
                f"{self._model_name} returned {vectors.shape[1]}-dimensional embeddings, "
                f"earlier {self._dimension}"
            )
        if not np.isfinite(vectors).all():
            bad = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
            raise ConfigurationError(
                f"{self._model_name} returned an embedding that is not all finite numbers "
                f"(NaN or inf) for text {bad} of {n}"
            )
        return vectors

    def raw_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The model's document vectors, as it returns them (not normalised)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self.kind == "langchain":
            out: Any = self.wrapped.embed_documents(texts)
        elif self.kind == "llamaindex":
            out = self.wrapped.get_text_embedding_batch(texts)
        else:
            out = [self.wrapped(t) for t in texts]
        return self._check(out, len(texts))

    def raw_query(self, text: str) -> npt.NDArray[np.float32]:
        """The model's query vector, as it returns it (not normalised)."""
        if self.kind == "langchain":
            out: Any = self.wrapped.embed_query(text)
        elif self.kind == "llamaindex":
            out = self.wrapped.get_query_embedding(text)
        else:
            out = self.wrapped(text)
        vector: npt.NDArray[np.float32] = self._check([out], 1)[0]
        return vector

    async def araw_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Async twin of :meth:`raw_documents` (the framework's own async call when it has one)."""
        texts = list(texts)
        if not texts or self.kind == "function":
            return self.raw_documents(texts)
        if self.kind == "langchain":
            out: Any = await self.wrapped.aembed_documents(texts)
        else:
            out = await self.wrapped.aget_text_embedding_batch(texts)
        return self._check(out, len(texts))

    async def araw_query(self, text: str) -> npt.NDArray[np.float32]:
        """Async twin of :meth:`raw_query`."""
        if self.kind == "function":
            return self.raw_query(text)
        if self.kind == "langchain":
            out: Any = await self.wrapped.aembed_query(text)
        else:
            out = await self.wrapped.aget_query_embedding(text)
        vector: npt.NDArray[np.float32] = self._check([out], 1)[0]
        return vector

    # ------------------------------------------------------------ the Embedder protocol
    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return _unit(self.raw_documents(texts))

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return _unit(self.raw_query(text))

    def __repr__(self) -> str:
        return f"ForeignEmbedder({self._model_name}, kind={self.kind!r})"


def as_embedder(obj: Any, *, model_name: str | None = None, dimension: int | None = None) -> Embedder:
    """``obj`` as an :class:`~shared_core.protocols.Embedder`.

    A core ``Embedder`` is returned as is; a LangChain ``Embeddings``, a LlamaIndex
    ``BaseEmbedding`` or a ``text -> vector`` callable is wrapped in a :class:`ForeignEmbedder`.
    ``model_name`` overrides the recorded name (banks remember it); ``dimension`` saves the
    probe call. Anything else raises :class:`~shared_core.errors.ConfigurationError`.
    """
    if isinstance(obj, ForeignEmbedder) or _is_core_embedder(obj):
        return obj  # type: ignore[no-any-return]
    if callable(getattr(obj, "get_query_embedding", None)) and callable(
        getattr(obj, "get_text_embedding_batch", None)
    ):
        return ForeignEmbedder(obj, kind="llamaindex", model_name=model_name, dimension=dimension)
    if callable(getattr(obj, "embed_documents", None)) and callable(getattr(obj, "embed_query", None)):
        return ForeignEmbedder(obj, kind="langchain", model_name=model_name, dimension=dimension)
    if callable(obj):
        return ForeignEmbedder(obj, kind="function", model_name=model_name, dimension=dimension)
    raise ConfigurationError(
        f"{type(obj).__name__} is not an embedding model: pass a LangChain Embeddings, a "
        "LlamaIndex BaseEmbedding, a text -> vector function, or a shared_core Embedder"
    )


def _is_core_embedder(obj: Any) -> bool:
    # A LangChain Embeddings also has embed_documents/embed_query (returning lists), and every
    # one inherits ``aembed_query`` from the base class; a LlamaIndex one has
    # ``get_query_embedding``. A core Embedder has neither, and names its model and dimension.
    if hasattr(obj, "aembed_query") or hasattr(obj, "get_query_embedding"):
        return False
    return (
        callable(getattr(obj, "embed_documents", None))
        and callable(getattr(obj, "embed_query", None))
        and _declares(obj, "model_name")
        and _declares(obj, "dimension")
    )


def _declares(obj: Any, name: str) -> bool:
    # Without reading it: ``dimension`` may be a property that loads a model.
    return hasattr(type(obj), name) or name in getattr(obj, "__dict__", {})


def wraps_same_model(embedder: Embedder | None, obj: Any) -> bool:
    """Whether ``embedder`` is ``obj`` or a :class:`ForeignEmbedder` around it (or around the
    same bound method)."""
    if embedder is None:
        return False
    if embedder is obj:
        return True
    wrapped = getattr(embedder, "wrapped", None)
    return wrapped is not None and (wrapped is obj or wrapped == obj)


def raw_vectors(
    embedder: Embedder,
) -> tuple[Callable[[Sequence[str]], npt.NDArray[np.float32]], Callable[[str], npt.NDArray[np.float32]]]:
    """The functions giving ``embedder``'s own (un-normalised) vectors."""
    if isinstance(embedder, ForeignEmbedder):
        return embedder.raw_documents, embedder.raw_query
    return embedder.embed_documents, embedder.embed_query
