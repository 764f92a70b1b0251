"""The retain flow: facts (optional LLM) → validate → units → embed → extract → write.

Mirrors :mod:`shared_core.recall.pipeline`: the stages live in their own modules (prepare,
extract, links, plan); this module sequences them as one sans-I/O plan, which the engine runs
with its sync or async runner. CPU work (the fact extractor, embedding, NER) is yielded as
:class:`~shared_core.storage.plan.Compute`, so it runs off the event loop and before a
connection is taken.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import psycopg

from shared_core.config import DEFAULT_TEMPORAL_LINK_FLOOR, EngineConfig
from shared_core.errors import EmbeddingDimensionError, InvalidItemError
from shared_core.models import Models
from shared_core.protocols import DateParser, Embedder, EntityExtractor
from shared_core.retain.extract import RawExtraction, extract
from shared_core.retain.neighbours import context_vectors, index_contexts, unit_predecessors
from shared_core.retain.plan import RetainRequest, merge_vectors, retain_plan
from shared_core.retain.prepare import coerce_items, materialise_items, prepare_units
from shared_core.retain.progress import RetainProgress
from shared_core.retain.small import is_small, small_retain_error, small_retain_plan
from shared_core.storage.errors import copy_row, map_database_error
from shared_core.storage.plan import Compute, Plan
from shared_core.types import MemoryItem, check_bank

if TYPE_CHECKING:
    from shared_core.extraction.facts import FactExtractor

__all__ = ["RetainContext", "retain_error", "retain_flow"]

# SQLSTATE classes of a row's own fault: data exception, integrity constraint violation.
_ITEM_STATE_CLASSES = ("22", "23")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetainContext:
    """What the retain flow needs from the engine: models, configuration and a clock."""

    models: Models
    config: EngineConfig
    now: Callable[[], _dt.datetime]


def retain_flow(
    ctx: RetainContext,
    items: Iterable[Any],
    *,
    bank: str,
    document_id: str | None = None,
    progress: bool | None = None,
    fact_extractor: FactExtractor | None = None,
) -> Plan[list[str]]:
    """Retain ``items`` into ``bank`` in one transaction; return the new ids in input order."""
    check_bank(bank)
    materialised = materialise_items(items)
    if fact_extractor is not None:
        for index, raw in enumerate(materialised):
            if not isinstance(raw, str):
                raise InvalidItemError(
                    index,
                    "with a fact_extractor, items must be strings (the extractor turns them into facts)",
                )
        if materialised:
            materialised = yield Compute(fact_extractor.extract_facts, (materialised,))
    if not materialised:
        return []
    bar = RetainProgress(progress)
    try:
        request, vectors = yield Compute(prepare_retain, (ctx, materialised, bank, document_id, bar))
        small = is_small(request)
        try:
            if small:  # a chat turn: few round trips, no staging table (retain/small.py)
                ids: list[str] = yield from small_retain_plan(request, vectors)
            else:
                ids = yield from retain_plan(request, vectors)
        except psycopg.Error as exc:
            raise (small_retain_error if small else retain_error)(exc, request) from exc
        bar.stage("done", done=3)
    finally:
        bar.close()
    return ids


def retain_error(exc: psycopg.Error, request: RetainRequest) -> Exception:
    """A database error during a retain, as a typed error: a staged row the server refused
    (bad data, a broken constraint) names the item it came from; the rest is mapped by
    :func:`~shared_core.storage.errors.map_database_error`."""
    row = copy_row(exc)
    state = exc.sqlstate or ""
    if (
        row is not None
        and row[0] == "retain_stage"
        and state[:2] in _ITEM_STATE_CLASSES
        and 0 <= row[1] < len(request.units)
    ):
        detail = str(exc).strip().splitlines()[0]
        return InvalidItemError(
            request.units[row[1]].item_index, f"the database refused it ({state}): {detail}"
        )
    mapped = map_database_error(exc)
    return mapped if isinstance(mapped, Exception) else exc


def extraction_models(ctx: RetainContext) -> tuple[EntityExtractor | None, DateParser | None]:
    """The entity extractor and date parser a retain runs (None: that extraction is off), in
    this process or in :class:`~shared_core.extraction.processes.ExtractionProcesses`."""
    cfg, models = ctx.config, ctx.models
    return (
        models.entity_extractor if cfg.extract_entities else None,
        models.date_parser if cfg.extract_dates else None,
    )


def check_supplied_dimensions(items: Sequence[MemoryItem], embedder: Embedder, bank: str) -> None:
    """Every caller-supplied embedding has the engine model's dimension, or the typed error
    naming the first item that has not (before anything is embedded or written): the bank
    records the engine's model, so a vector of another size would make a bank that no recall
    or retain of this model can use."""
    dimension: int | None = None
    for index, item in enumerate(items):
        if item.embedding is None:
            continue
        if dimension is None:
            dimension = int(embedder.dimension)
        if len(item.embedding) != dimension:
            raise EmbeddingDimensionError(
                index, bank=bank, model=embedder.model_name, dimension=dimension, given=len(item.embedding)
            )


def prepare_retain(
    ctx: RetainContext,
    items: Sequence[Any] | str | bytes,
    bank: str,
    document_id: str | None,
    bar: RetainProgress | None = None,
    raw: RawExtraction | None = None,
) -> tuple[RetainRequest, npt.NDArray[np.float32]]:
    """Validate, split, embed and extract (CPU only): the retain plan's request and vectors.

    ``raw``: where the per-text extraction runs (:func:`~shared_core.retain.extract.extract`);
    in this process by default."""
    cfg, models = ctx.config, ctx.models
    now = ctx.now()
    validated = coerce_items(items, document_id=document_id)
    check_supplied_dimensions(validated, models.embedder, bank)
    units, chunks = prepare_units(
        validated,
        now=now,
        unit_max_tokens=cfg.unit_max_tokens,
        window_tokens=cfg.sentence_window_tokens,
        counter=models.token_counter,
    )
    previous = unit_predecessors(units) if cfg.retain_context != "none" else [None] * len(units)
    contexts = index_contexts(
        [u.text for u in units],
        previous,
        mode=cfg.retain_context,
        max_tokens=cfg.context_tokens,
        counter=models.token_counter,
    )
    units = [
        u if c is None else dataclasses.replace(u, index_context=c)
        for u, c in zip(units, contexts, strict=True)
    ]
    bar = bar if bar is not None else RetainProgress(False)
    bar.start(len(units))
    own_vectors = merge_vectors(validated, units, lambda texts: embed(ctx, texts, bar))
    vectors = context_vectors(own_vectors, previous, cfg.context_vector_weight)
    bar.stage("extracting", done=1)
    extractor, parser = extraction_models(ctx)
    extraction = extract(
        units,
        validated,
        date_parser=parser,
        entity_extractor=extractor,
        entity_threshold=cfg.entity_similarity_threshold,
        raw=raw,
    )
    bar.stage("writing", done=2)
    replace = sorted({i.document_id for i in validated if i.document_id is not None})
    request = RetainRequest(
        bank=bank,
        items=validated,
        units=extraction.units,
        chunks=chunks,
        replace_documents=replace,
        embedding_model=models.embedder.model_name,
        ts_config=cfg.ts_config,
        now=now,
        signals=extraction.signals,
        cjk=extraction.cjk,
        entities=extraction.entities,
        entity_threshold=cfg.entity_similarity_threshold,
        semantic_link_min=cfg.semantic_link_min_similarity,
        semantic_link_k=cfg.semantic_link_top_k,
        temporal_link_k=cfg.temporal_link_top_k,
        temporal_link_floor=DEFAULT_TEMPORAL_LINK_FLOOR,
        cue_links=cfg.causal_cue_links,
        own_vectors=own_vectors,
    )
    return request, vectors


def embed(ctx: RetainContext, texts: list[str], bar: RetainProgress) -> npt.NDArray[np.float32]:
    """Embed ``texts`` in batches of similar length, advancing the retain's progress bar.

    A transformer pads every text of a batch to its longest, so batches cut in input order from
    a mix of long and short units pay the long ones' length for all of them; sorted by length
    (longest first), each batch pads little. The vectors come back in input order.

    >>> from shared_core.retain.progress import RetainProgress
    >>> from types import SimpleNamespace
    >>> class Lengths:
    ...     batches: list[list[str]] = []
    ...     def embed_documents(self, texts):
    ...         self.batches.append(list(texts))
    ...         return np.array([[float(len(t))] for t in texts], dtype=np.float32)
    >>> embedder = Lengths()
    >>> ctx = SimpleNamespace(models=SimpleNamespace(embedder=embedder),
    ...                       config=SimpleNamespace(embed_batch_size=2))
    >>> embed(ctx, ["a", "ccc", "bb", "dddd"], RetainProgress(False)).ravel().tolist()
    [1.0, 3.0, 2.0, 4.0]
    >>> embedder.batches
    [['dddd', 'ccc'], ['bb', 'a']]
    """
    embedder, size = ctx.models.embedder, ctx.config.embed_batch_size
    if not texts:
        return embedder.embed_documents(texts)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    parts = []
    for start in range(0, len(order), size):
        parts.append(embedder.embed_documents([texts[i] for i in order[start : start + size]]))
        bar.advance(len(parts[-1]))
    by_length = np.concatenate(parts, axis=0)
    out = np.empty_like(by_length)
    out[order] = by_length
    return out
