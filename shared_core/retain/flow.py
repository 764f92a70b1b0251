"""The retain flow: facts (optional LLM) → validate → units → embed → extract → write.

Mirrors :mod:`shared_core.recall.pipeline`: the stages live in their own modules (prepare,
extract, links, plan); this module sequences them as one sans-I/O plan, which the engine runs
with its sync or async runner. CPU work (the fact extractor, embedding, NER) is yielded as
:class:`~shared_core.storage.plan.Compute`, so it runs off the event loop and before a
connection is taken.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shared_core.config import DEFAULT_TEMPORAL_LINK_FLOOR, EngineConfig
from shared_core.errors import InvalidItemError
from shared_core.models import Models
from shared_core.retain.extract import extract
from shared_core.retain.plan import RetainRequest, merge_vectors, retain_plan
from shared_core.retain.prepare import coerce_items, prepare_units
from shared_core.storage.plan import Compute, Plan
from shared_core.types import check_bank

if TYPE_CHECKING:
    from shared_core.extraction.facts import FactExtractor

__all__ = ["RetainContext", "retain_flow"]


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
    progress: bool = False,
    fact_extractor: FactExtractor | None = None,
) -> Plan[list[str]]:
    """Retain ``items`` into ``bank`` in one transaction; return the new ids in input order."""
    check_bank(bank)
    materialised = list(items) if not isinstance(items, str | bytes) else items
    if fact_extractor is not None and not isinstance(materialised, str | bytes):
        for index, raw in enumerate(materialised):
            if not isinstance(raw, str):
                raise InvalidItemError(
                    index,
                    "with a fact_extractor, items must be strings (the extractor turns them into facts)",
                )
        materialised = yield Compute(fact_extractor.extract_facts, (materialised,))
    request, vectors = yield Compute(prepare_retain, (ctx, materialised, bank, document_id, progress))
    ids: list[str] = yield from retain_plan(request, vectors)
    return ids


def prepare_retain(
    ctx: RetainContext, items: Sequence[Any] | str | bytes, bank: str, document_id: str | None, progress: bool
) -> tuple[RetainRequest, npt.NDArray[np.float32]]:
    """Validate, split, embed and extract (CPU only): the retain plan's request and vectors."""
    cfg, models = ctx.config, ctx.models
    now = ctx.now()
    validated = coerce_items(items, document_id=document_id)
    units, chunks = prepare_units(
        validated,
        now=now,
        unit_max_tokens=cfg.unit_max_tokens,
        window_tokens=cfg.sentence_window_tokens,
        counter=models.token_counter,
    )
    vectors = merge_vectors(validated, units, lambda texts: embed(ctx, texts, progress))
    extraction = extract(
        units,
        validated,
        date_parser=models.date_parser if cfg.extract_dates else None,
        entity_extractor=models.entity_extractor if cfg.extract_entities else None,
        entity_threshold=cfg.entity_similarity_threshold,
    )
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
    )
    return request, vectors


def embed(ctx: RetainContext, texts: list[str], progress: bool) -> npt.NDArray[np.float32]:
    """Embed ``texts`` in batches, with a progress bar for long inputs when ``progress``."""
    embedder, size = ctx.models.embedder, ctx.config.embed_batch_size
    if not progress or len(texts) <= ctx.config.progress_threshold:
        return embedder.embed_documents(texts)
    from tqdm.auto import tqdm

    parts = []
    with tqdm(total=len(texts), desc="embedding", unit="memory") as bar:
        for start in range(0, len(texts), size):
            parts.append(embedder.embed_documents(texts[start : start + size]))
            bar.update(len(parts[-1]))
    return np.concatenate(parts, axis=0)
