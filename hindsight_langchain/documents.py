"""LangChain ``Document`` ⇄ memory conversions, shared by the retriever and the importer."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from langchain_core.documents import Document

from shared_core.errors import InvalidItemError
from shared_core.integrations import document_key, memory_item, memory_metadata
from shared_core.types import MemoryItem, RecalledMemory

__all__ = ["document_to_item", "documents_to_items", "memory_to_document"]


def memory_to_document(
    memory: RecalledMemory,
    chunks: Mapping[str, str] | None = None,
    truncated_chunks: frozenset[str] = frozenset(),
) -> Document:
    """A recalled memory as a LangChain ``Document``: ``id`` is the id the document was added
    with (the memory id for memories retained without one).

    Metadata: the memory's own metadata, then ``score`` (the calibrated relevance in [0, 1],
    :func:`shared_core.integrations.relevance`), ``below_threshold``, ``memory_id``,
    ``fact_type``, ``occurred_start`` / ``occurred_end`` / ``mentioned_at`` (ISO strings),
    ``tags``, ``document_id``, ``chunk_id``,
    ``entities``, ``scores`` (the full breakdown), ``context`` and, with ``include_chunks``,
    ``chunk`` (the source passage: the whole item a long document was split from, or the
    memory's own text) and ``chunk_truncated`` (it was cut to ``max_chunk_tokens``).
    """
    meta = memory_metadata(memory)
    meta["context"] = memory.context
    key = memory.chunk_id if memory.chunk_id is not None else memory.id
    if chunks and key in chunks:
        meta["chunk"] = chunks[key]
        meta["chunk_truncated"] = key in truncated_chunks
    return Document(id=document_key(memory), page_content=memory.text, metadata=meta)


def document_to_item(doc: Document) -> MemoryItem:
    """A LangChain ``Document`` as a :class:`~shared_core.MemoryItem`.

    The first timestamp among ``occurred_at``, ``timestamp``, ``created_at``, ``date``
    (datetime, ISO string or epoch seconds; naive = UTC) becomes ``occurred_start``;
    ``tags`` (a list of strings), ``fact_type``, ``context`` and ``mentioned_at`` are used when
    present; ``Document.id`` becomes the ``document_id``, so re-adding a document replaces it.
    """
    return memory_item(doc.page_content, doc.metadata, document_id=doc.id, read_context=True)


def documents_to_items(documents: object, ids: object = None) -> tuple[list[MemoryItem], list[str]]:
    """Validate what ``add_documents`` was given and turn it into items, each with its id (the
    ``ids`` given, else ``Document.id``, else a new UUID, as vector stores do)."""
    if not isinstance(documents, list | tuple):
        raise InvalidItemError(
            0,
            f"add_documents expects a list of Documents, got "
            f"{type(documents).__name__}; wrap a single Document in a list",
        )
    if ids is not None and (
        isinstance(ids, str) or not isinstance(ids, list | tuple) or len(ids) != len(documents)
    ):
        raise InvalidItemError(0, "ids must be a list with one id per document")
    items, keys = [], []
    for index, doc in enumerate(documents):
        if not isinstance(doc, Document):
            raise InvalidItemError(
                index,
                f"expected a langchain_core Document, got "
                f"{type(doc).__name__} (wrap text as "
                "Document(page_content=...))",
            )
        key = ids[index] if ids is not None else doc.id
        if key is None:
            key = str(uuid.uuid4())
        if not isinstance(key, str) or not key:
            raise InvalidItemError(index, f"a document id must be a non-empty string, got {key!r}")
        items.append(memory_item(doc.page_content, doc.metadata, document_id=key, read_context=True))
        keys.append(key)
    return items, keys
