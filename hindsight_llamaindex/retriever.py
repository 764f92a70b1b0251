"""``HindsightRetriever`` for LlamaIndex: TEMPR recall as a ``llama_index.core`` retriever.

>>> from llama_index.core.query_engine import RetrieverQueryEngine  # doctest: +SKIP
>>> from hindsight_llamaindex import HindsightRetriever  # doctest: +SKIP
>>> retriever = HindsightRetriever(engine, bank="demo", similarity_top_k=5)  # doctest: +SKIP
>>> retriever.insert([Document(text="Alice joined Google in March 2021.")])  # doctest: +SKIP
>>> nodes = retriever.retrieve("Where does Alice work?")  # doctest: +SKIP
>>> engine_ = RetrieverQueryEngine.from_args(retriever, llm=llm)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import (
    BaseNode,
    IndexNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import MetadataFilters
from llama_index_instrumentation import get_dispatcher
from typing_extensions import Unpack

from hindsight_llamaindex.metadata_filters import to_filter_tree
from shared_core.engine import AsyncMemoryEngine, MemoryEngine
from shared_core.errors import ConfigurationError, InvalidItemError
from shared_core.integrations import (
    EngineHandle,
    document_key,
    memory_item,
    relevance,
    resolve_engine,
)
from shared_core.recall.options import RecallKwargs, RecallOptions
from shared_core.types import MemoryItem, RecalledMemory, RecallResult

__all__ = ["HindsightRecallEvent", "HindsightRetriever", "memory_to_node"]

dispatcher = get_dispatcher(__name__)

# Where a node's source document id (``ref_doc_id``) is kept in a memory's metadata; taken out
# again when the node is rebuilt, so the node's metadata is the user's, as given.
REF_DOC_KEY = "_ref_doc_id"


class HindsightRecallEvent(BaseEvent):
    """Emitted after each recall: the bank, the query and what came back."""

    bank: str
    query: str
    memory_ids: list[str]
    scores: list[float]

    @classmethod
    def class_name(cls) -> str:
        return "HindsightRecallEvent"


def memory_to_node(memory: RecalledMemory, bank: str | None = None) -> NodeWithScore:
    """A recalled memory as ``NodeWithScore(TextNode(...), score)``: the node has the id and the
    metadata it was inserted with (so its ``hash`` is stable, and ``QueryFusionRetriever``
    de-duplicates it against other retrievers' copies), its source document as the ``SOURCE``
    relationship, and ``score`` is the calibrated relevance in [0, 1]
    (:func:`shared_core.integrations.relevance`; ``SimilarityPostprocessor(similarity_cutoff=)``
    filters on it). Recall's
    details (fact type, dates, the score breakdown) are on the :class:`HindsightRecallEvent`
    and in ``engine.recall``."""
    meta: dict[str, Any] = dict(memory.metadata)
    ref_doc_id = meta.pop(REF_DOC_KEY, None)
    relationships: dict[NodeRelationship, RelatedNodeInfo | list[RelatedNodeInfo]] = {}
    if not isinstance(ref_doc_id, str) and memory.pieces > 1:
        # A piece of a node retain split (id ``<id>#<n>``) points at the node it came from,
        # as LlamaIndex's own splitters point a chunk at its source document.
        ref_doc_id = memory.document_id
    if isinstance(ref_doc_id, str):
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=ref_doc_id)
    node = TextNode(id_=document_key(memory), text=memory.text, metadata=meta, relationships=relationships)
    return NodeWithScore(node=node, score=relevance(memory))


def node_to_item(node: BaseNode) -> MemoryItem:
    """A LlamaIndex document or node as a :class:`~shared_core.MemoryItem`: text without
    metadata, the first of ``occurred_at``/``timestamp``/``created_at``/``date`` dates it, and
    its ``id_`` becomes the ``document_id`` (inserting the same id again replaces it)."""
    meta = dict(node.metadata)
    ref_doc_id = node.ref_doc_id
    if ref_doc_id is not None and ref_doc_id != node.id_:
        meta[REF_DOC_KEY] = ref_doc_id
    return memory_item(node.get_content(metadata_mode=MetadataMode.NONE), meta, document_id=node.id_)


def nodes_to_items(nodes: object) -> tuple[list[MemoryItem], list[str]]:
    """Validate what ``insert`` was given; the items and the node ids, in order."""
    if not isinstance(nodes, list | tuple):
        raise InvalidItemError(
            0,
            f"insert expects a list of nodes or documents, got "
            f"{type(nodes).__name__}; wrap a single node in a list",
        )
    items = []
    for index, node in enumerate(nodes):
        if not isinstance(node, BaseNode):
            raise InvalidItemError(
                index,
                f"expected a LlamaIndex node or Document, got "
                f"{type(node).__name__} (wrap text as "
                "TextNode(text=...) or Document(text=...))",
            )
        items.append(node_to_item(node))
    return items, [n.id_ for n in nodes]


def _explicit_embed_model() -> Any:
    """``Settings.embed_model`` if the user set it; reading the property otherwise resolves
    LlamaIndex's default (OpenAI), which is not ours to pick."""
    from llama_index.core import Settings

    return getattr(Settings, "_embed_model", None)


class HindsightRetriever(BaseRetriever):
    """TEMPR recall over a memory bank, as a LlamaIndex retriever.

    Args:
        engine: a :class:`~shared_core.MemoryEngine` (left open); or ``dsn=``; or neither (the
            embedded server, closed by :meth:`close`).
        bank: the memory bank.
        similarity_top_k: how many nodes to return at most.
        filters: ``MetadataFilters`` on the nodes' metadata (every ``FilterOperator``,
            AND/OR/NOT, nested), applied inside recall: ``similarity_top_k`` matching nodes come
            back whenever the bank holds that many.
        memory_tags: memory tags to filter on; with ``tags_match`` ``"any"``/``"all"`` untagged
            memories pass too, ``"any_strict"``/``"all_strict"`` keep tagged ones only,
            ``"exact"`` wants the same set.
        progress: progress bar on long inserts (``None``: on a terminal only).
        embed_model: your own embedding model (any LlamaIndex ``BaseEmbedding``); by default
            ``Settings.embed_model`` when it was set explicitly, else the engine's model.
        options: any other :class:`~shared_core.recall.options.RecallOptions` field (``bank``,
            ``max_tokens``, ``budget``, ``types``, ``tags_match``, ``include_chunks``,
            ``reranker``, ...), validated here. Unknown names are a ``TypeError``.

    Implements ``_aretrieve`` natively (async Postgres), emits :class:`HindsightRecallEvent`
    through LlamaIndex instrumentation, and plugs into ``RetrieverQueryEngine``.

    >>> from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters  # doctest: +SKIP
    >>> r = HindsightRetriever(engine, bank="demo", similarity_top_k=3,  # doctest: +SKIP
    ...                        filters=MetadataFilters(filters=[MetadataFilter(key="tags",
    ...                                                                        value="work")]))
    >>> [n.node.id_ for n in r.retrieve("Where does Alice work?")]  # doctest: +SKIP
    ['0196...', ...]
    """

    def __init__(
        self,
        engine: MemoryEngine | AsyncMemoryEngine | None = None,
        *,
        dsn: str | None = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        filters: MetadataFilters | None = None,
        memory_tags: Sequence[str] | None = None,
        progress: bool | None = None,
        embed_model: Any = None,
        callback_manager: CallbackManager | None = None,
        object_map: dict[str, Any] | None = None,
        objects: list[IndexNode] | None = None,
        verbose: bool = False,
        **options: Unpack[RecallKwargs],
    ) -> None:
        if (
            isinstance(similarity_top_k, bool)
            or not isinstance(similarity_top_k, int)
            or similarity_top_k < 1
        ):
            raise ConfigurationError(f"similarity_top_k must be an integer >= 1, got {similarity_top_k!r}")
        for name, instead in (("k", "similarity_top_k"), ("filter", "filters"), ("tags", "memory_tags")):
            if name in options:
                raise ConfigurationError(f"{name}= is not an option here: use {instead}=")
        self.filter_tree = to_filter_tree(filters)
        fields: dict[str, Any] = {
            **options,
            "tags": memory_tags,
            "filter": self.filter_tree,
            "k": similarity_top_k,
        }
        self.options = RecallOptions(**fields)
        self._handle: EngineHandle = resolve_engine(
            engine, dsn, embed_model if embed_model is not None else _explicit_embed_model()
        )
        self.similarity_top_k = similarity_top_k
        self.filters = filters
        self.progress = progress
        super().__init__(
            callback_manager=callback_manager, object_map=object_map, objects=objects, verbose=verbose
        )

    @property
    def bank(self) -> str:
        return self.options.bank

    @property
    def engine(self) -> MemoryEngine:
        return self._handle.engine

    def close(self) -> None:
        """Close the engine if this retriever opened it."""
        self._handle.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(bank={self.bank!r}, "
            f"similarity_top_k={self.similarity_top_k}, budget={self.options.budget!r}, "
            f"filters={self.filters!r}, engine={self.engine!r})"
        )

    # ------------------------------------------------------------------ retrieval
    def _nodes(self, query: str, result: RecallResult) -> list[NodeWithScore]:
        nodes = []
        for memory in result.memories[: self.similarity_top_k]:
            node = memory_to_node(memory)
            chunk = result.chunk_of(memory) if self.options.include_chunks else None
            if chunk is not None:
                node.node.metadata["chunk"] = chunk
                node.node.metadata["chunk_truncated"] = (
                    memory.chunk_id if memory.chunk_id is not None else memory.id
                ) in result.truncated_chunks
            nodes.append(node)
        dispatcher.event(
            HindsightRecallEvent(
                bank=self.bank,
                query=query,
                memory_ids=[m.id for m in result.memories],
                scores=[float(n.score or 0.0) for n in nodes],
            )
        )
        return nodes

    def _options(self) -> dict[str, Any]:
        return {f.name: getattr(self.options, f.name) for f in dataclasses.fields(RecallOptions)}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        return self._nodes(query, self.engine.recall(query, **self._options()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        return self._nodes(query, await self.engine.arecall(query, **self._options()))

    # ------------------------------------------------------------------ writing
    def insert(self, nodes: Sequence[BaseNode], *, progress: bool | None = None) -> list[str]:
        """Retain LlamaIndex nodes or documents; return their ids (``node.id_``).

        Inserting an id again replaces it; a node's ``ref_doc_id`` comes back as its
        ``SOURCE`` relationship. A bad item raises
        :class:`~shared_core.errors.InvalidItemError` naming it, before any write.
        """
        items, ids = nodes_to_items(nodes)
        self.engine.retain(items, bank=self.bank, progress=self._progress(progress))
        return ids

    async def ainsert(self, nodes: Sequence[BaseNode], *, progress: bool | None = None) -> list[str]:
        """Async twin of :meth:`insert`."""
        items, ids = nodes_to_items(nodes)
        await self.engine.aretain(items, bank=self.bank, progress=self._progress(progress))
        return ids

    def _progress(self, progress: bool | None) -> bool | None:
        return progress if progress is not None else self.progress

    def delete(self, ids: Sequence[str]) -> None:
        """Delete the nodes with these ids (and their memories, links and chunks)."""
        self.engine.delete_documents(ids, bank=self.bank)

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async twin of :meth:`delete`."""
        await self.engine.adelete_documents(ids, bank=self.bank)
