"""LangChain ``Document`` ⇄ memory conversions, shared by the retriever and the importer."""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.documents import Document

from shared_core.integrations import memory_item, memory_metadata
from shared_core.types import MemoryItem, RecalledMemory

__all__ = ["document_to_item", "memory_to_document"]


def memory_to_document(memory: RecalledMemory, chunks: Mapping[str, str] | None = None) -> Document:
    """A recalled memory as a LangChain ``Document`` (``id`` = memory id).

    Metadata: the memory's own metadata, then ``score``, ``fact_type``, ``occurred_start`` /
    ``occurred_end`` / ``mentioned_at`` (ISO strings), ``tags``, ``document_id``, ``chunk_id``,
    ``entities``, ``scores`` (the full breakdown), ``context`` and, with ``include_chunks``,
    ``chunk`` (the source passage).
    """
    meta = memory_metadata(memory)
    meta["context"] = memory.context
    if chunks and memory.chunk_id is not None and memory.chunk_id in chunks:
        meta["chunk"] = chunks[memory.chunk_id]
    return Document(id=memory.id, page_content=memory.text, metadata=meta)


def document_to_item(doc: Document) -> MemoryItem:
    """A LangChain ``Document`` as a :class:`~shared_core.MemoryItem`.

    The first timestamp among ``occurred_at``, ``timestamp``, ``created_at``, ``date``
    (datetime, ISO string or epoch seconds; naive = local time) becomes ``occurred_start``;
    ``tags`` (a list of strings), ``fact_type``, ``context`` and ``mentioned_at`` are used when
    present; ``Document.id`` becomes the ``document_id``, so re-adding a document replaces it.
    """
    return memory_item(doc.page_content, doc.metadata, document_id=doc.id, read_context=True)
