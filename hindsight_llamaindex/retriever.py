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
from collections.abc import Mapping, Sequence
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
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from llama_index_instrumentation import get_dispatcher
from typing_extensions import Unpack

from shared_core.engine import AsyncMemoryEngine, MemoryEngine
from shared_core.integrations import EngineHandle, memory_item, memory_metadata, resolve_engine
from shared_core.recall.options import RecallKwargs, RecallOptions
from shared_core.types import MemoryItem, RecalledMemory, RecallResult

__all__ = ["HindsightRecallEvent", "HindsightRetriever", "memory_to_node"]

dispatcher = get_dispatcher(__name__)

# Keys this adapter adds to node metadata; kept out of LLM prompts and embeddings.
INTERNAL_KEYS: tuple[str, ...] = ("memory_id", "score", "fact_type", "occurred_start",
                                  "occurred_end", "mentioned_at", "tags", "document_id",
                                  "chunk_id", "entities", "scores", "bank")


class HindsightRecallEvent(BaseEvent):
    """Emitted after each recall: the bank, the query and what came back."""

    bank: str
    query: str
    memory_ids: list[str]
    scores: list[float]

    @classmethod
    def class_name(cls) -> str:
        return "HindsightRecallEvent"


def memory_to_node(memory: RecalledMemory, bank: str) -> NodeWithScore:
    """A recalled memory as ``NodeWithScore(TextNode(id_=memory id, ...), score)``."""
    meta: dict[str, Any] = {**memory_metadata(memory), "memory_id": memory.id, "bank": bank}
    relationships: dict[NodeRelationship, RelatedNodeInfo | list[RelatedNodeInfo]] = {}
    if memory.document_id is not None:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=memory.document_id)
    keys = [k for k in meta if k in INTERNAL_KEYS]
    node = TextNode(id_=memory.id, text=memory.text, metadata=meta,
                    excluded_llm_metadata_keys=keys, excluded_embed_metadata_keys=keys,
                    relationships=relationships)
    return NodeWithScore(node=node, score=float(memory.score))


def node_to_item(node: BaseNode) -> MemoryItem:
    """A LlamaIndex document or node as a :class:`~shared_core.MemoryItem` (text without
    metadata; the first of ``occurred_at``/``timestamp``/``created_at``/``date`` dates it; the
    source document id, or the document's own id, becomes ``document_id``)."""
    from llama_index.core.schema import Document

    document_id = node.id_ if isinstance(node, Document) else node.ref_doc_id
    return memory_item(node.get_content(metadata_mode=MetadataMode.NONE), node.metadata,
                       document_id=document_id)


# ------------------------------------------------------------------ metadata filters
def _compare(op: FilterOperator, have: Any, want: Any) -> bool:
    try:
        if op == FilterOperator.EQ:  # a list (tags) equals a scalar when it contains it
            return bool(have == want) or (isinstance(have, list) and not isinstance(want, list)
                                          and want in have)
        if op == FilterOperator.NE:
            return not _compare(FilterOperator.EQ, have, want)
        if op == FilterOperator.GT:
            return bool(have > want)
        if op == FilterOperator.LT:
            return bool(have < want)
        if op == FilterOperator.GTE:
            return bool(have >= want)
        if op == FilterOperator.LTE:
            return bool(have <= want)
        if op == FilterOperator.IN:
            return have in want or (isinstance(have, list) and any(h in want for h in have))
        if op == FilterOperator.NIN:
            return have not in want and not (isinstance(have, list)
                                             and any(h in want for h in have))
        if op == FilterOperator.ANY:
            return isinstance(have, list) and any(w in have for w in want)
        if op == FilterOperator.ALL:
            return isinstance(have, list) and all(w in have for w in want)
        if op == FilterOperator.CONTAINS:
            return isinstance(have, list | str) and want in have
        if op == FilterOperator.TEXT_MATCH:
            return isinstance(have, str) and str(want) in have
        if op == FilterOperator.TEXT_MATCH_INSENSITIVE:
            return isinstance(have, str) and str(want).lower() in have.lower()
        if op == FilterOperator.IS_EMPTY:
            return have is None or have == [] or have == ""
    except TypeError:
        return False
    raise NotImplementedError(f"filter operator {op!r} is not supported")


def matches(filters: MetadataFilters, metadata: Mapping[str, Any]) -> bool:
    """Evaluate LlamaIndex ``MetadataFilters`` against a node's metadata."""
    results = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            results.append(matches(f, metadata))
        else:
            results.append(_compare(f.operator, metadata.get(f.key), f.value))
    if filters.condition == FilterCondition.OR:
        return any(results)
    if filters.condition == FilterCondition.NOT:
        return not any(results)
    return all(results)


def _pushdown(filters: MetadataFilters | None) -> dict[str, Any]:
    """Recall options implied by top-level AND filters on ``tags`` and ``fact_type``."""
    if filters is None or filters.condition not in (None, FilterCondition.AND):
        return {}
    out: dict[str, Any] = {}
    for f in filters.filters:
        if not isinstance(f, MetadataFilter):
            continue
        values = f.value if isinstance(f.value, list) else [f.value]
        if f.key == "tags" and f.operator in (FilterOperator.EQ, FilterOperator.CONTAINS,
                                              FilterOperator.ANY, FilterOperator.IN):
            out["tags"], out["tags_match"] = [str(v) for v in values], "any"
        elif f.key == "tags" and f.operator == FilterOperator.ALL:
            out["tags"], out["tags_match"] = [str(v) for v in values], "all"
        elif f.key == "fact_type" and f.operator in (FilterOperator.EQ, FilterOperator.IN):
            out["types"] = [str(v) for v in values]
    return out


class HindsightRetriever(BaseRetriever):
    """TEMPR recall over a memory bank, as a LlamaIndex retriever.

    Args:
        engine: a :class:`~shared_core.MemoryEngine` (left open); or ``dsn=``; or neither (the
            embedded server, closed by :meth:`close`).
        bank: the memory bank.
        similarity_top_k: how many nodes to return at most.
        filters: ``MetadataFilters``; ``tags`` and ``fact_type`` filters are pushed into recall,
            every filter is also checked on each memory's metadata.
        options: any :class:`~shared_core.recall.options.RecallOptions` field (``bank``,
            ``max_tokens``, ``budget``, ``types``, ``tags``, ``tags_match``, ``include_chunks``,
            ``reranker``, ...), validated here.

    Implements ``_aretrieve`` natively (async Postgres), emits :class:`HindsightRecallEvent`
    through LlamaIndex instrumentation, and plugs into ``RetrieverQueryEngine``.

    >>> from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters  # doctest: +SKIP
    >>> r = HindsightRetriever(engine, bank="demo", similarity_top_k=3,  # doctest: +SKIP
    ...                        filters=MetadataFilters(filters=[MetadataFilter(key="tags",
    ...                                                                        value="work")]))
    >>> [n.node.id_ for n in r.retrieve("Where does Alice work?")]  # doctest: +SKIP
    ['0196...', ...]
    """

    def __init__(self, engine: MemoryEngine | AsyncMemoryEngine | None = None, *,
                 dsn: str | None = None, similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
                 filters: MetadataFilters | None = None,
                 callback_manager: CallbackManager | None = None,
                 object_map: dict[str, Any] | None = None, objects: list[IndexNode] | None = None,
                 verbose: bool = False, **options: Unpack[RecallKwargs]) -> None:
        if similarity_top_k < 1:
            raise ValueError("similarity_top_k must be >= 1")
        self.options = RecallOptions(**options)
        self._handle: EngineHandle = resolve_engine(engine, dsn)
        self.similarity_top_k = similarity_top_k
        self.filters = filters
        super().__init__(callback_manager=callback_manager, object_map=object_map,
                         objects=objects, verbose=verbose)

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
        return (f"{type(self).__name__}(bank={self.bank!r}, "
                f"similarity_top_k={self.similarity_top_k}, budget={self.options.budget!r}, "
                f"filters={self.filters!r}, engine={self.engine!r})")

    # ------------------------------------------------------------------ retrieval
    def _options(self) -> dict[str, Any]:
        """This retriever's options, with the filters' pushdown on top."""
        options = {f.name: getattr(self.options, f.name) for f in dataclasses.fields(RecallOptions)}
        options.update(_pushdown(self.filters))
        return options

    def _nodes(self, query: str, result: RecallResult) -> list[NodeWithScore]:
        nodes = []
        for memory in result.memories:
            node = memory_to_node(memory, self.bank)
            if self.filters is not None and not matches(self.filters, node.node.metadata):
                continue
            if self.options.include_chunks and memory.chunk_id is not None \
                    and memory.chunk_id in result.chunks:
                node.node.metadata["chunk"] = result.chunks[memory.chunk_id]
            nodes.append(node)
            if len(nodes) >= self.similarity_top_k:
                break
        dispatcher.event(HindsightRecallEvent(
            bank=self.bank, query=query, memory_ids=[n.node.node_id for n in nodes],
            scores=[float(n.score or 0.0) for n in nodes]))
        return nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        return self._nodes(query, self.engine.recall(query, **self._options()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        return self._nodes(query, await self.engine.arecall(query, **self._options()))

    # ------------------------------------------------------------------ writing
    def insert(self, documents_or_nodes: Sequence[BaseNode]) -> list[str]:
        """Retain LlamaIndex documents or nodes; return the new memory ids.

        A document's id (or a node's source document id) becomes the memory's
        ``document_id``: inserting that document again replaces its memories.
        """
        return self.engine.retain([node_to_item(n) for n in documents_or_nodes],
                                  bank=self.bank, progress=False)

    async def ainsert(self, documents_or_nodes: Sequence[BaseNode]) -> list[str]:
        """Async twin of :meth:`insert`."""
        return await self.engine.aretain([node_to_item(n) for n in documents_or_nodes],
                                         bank=self.bank, progress=False)
