"""Retain-time extraction without an LLM: dates, entities and keyword signals.

Runs as CPU work (a ``Compute`` step) before the write transaction. Each part is optional:
an item's explicit dates or entities always win over extraction.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shared_core.extraction.entities import (
    canonicalize_entity_name,
    entity_match_key,
    resolve_in_batch,
)
from shared_core.extraction.processes import RawResult, raw_extract
from shared_core.protocols import DateParser, EntityExtractor
from shared_core.retain.prepare import PreparedUnit
from shared_core.text import cjk_bigrams, date_renderings
from shared_core.types import EntityMention, MemoryItem, TimeWindow

__all__ = ["Extraction", "RawExtraction", "extract"]

#: The per-text part of extraction: (texts to run NER on, (text, mentioned_at) to date) to
#: (mentions per text, event window per dated text).
RawExtraction = Callable[[list[str], list[tuple[str, _dt.datetime]]], RawResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    """Units with their extracted dates, entity names per unit (canonical, resolved inside the
    batch), and the text signals appended to each unit's keyword document."""

    units: list[PreparedUnit]
    entities: list[list[str]]
    signals: list[str]
    cjk: list[str]


def _with_dates(
    units: Sequence[PreparedUnit], todo: Sequence[int], windows: Sequence[TimeWindow | None]
) -> list[PreparedUnit]:
    out = list(units)
    for i, window in zip(todo, windows, strict=True):
        if window is not None:
            out[i] = dataclasses.replace(
                units[i], occurred_start=window.start, occurred_end=window.end, date_grain=window.grain
            )
    return out


def _entities(
    units: Sequence[PreparedUnit],
    items: Sequence[MemoryItem],
    todo: Sequence[int],
    found: Sequence[Sequence[EntityMention]],
    threshold: float,
) -> list[list[str]]:
    names: list[list[str]] = [[] for _ in units]
    for i, unit in enumerate(units):
        explicit = items[unit.item_index].entities
        if explicit is not None:
            names[i] = [canonicalize_entity_name(e) for e in explicit]
    for i, mentions in zip(todo, found, strict=True):
        names[i] = [m.name for m in mentions]
    mapping = resolve_in_batch([n for per_unit in names for n in per_unit], threshold=threshold)
    out = []
    for per_unit in names:
        resolved = [mapping.get(n, n) for n in per_unit]
        out.append([n for n in dict.fromkeys(resolved) if entity_match_key(n)])
    return out


def extract(
    units: Sequence[PreparedUnit],
    items: Sequence[MemoryItem],
    *,
    date_parser: DateParser | None,
    entity_extractor: EntityExtractor | None,
    entity_threshold: float,
    raw: RawExtraction | None = None,
) -> Extraction:
    """Dates, then entities, then the keyword signals built from both.

    ``raw`` computes the per-text part (the mentions of the units to run NER on, the event
    windows of the units to date); by default in this process with the given models, else e.g.
    :meth:`ExtractionProcesses.run <shared_core.extraction.processes.ExtractionProcesses.run>`
    built from the same models. An item's explicit dates or entities skip that part."""
    date_todo = (
        [i for i, u in enumerate(units) if items[u.item_index].occurred_start is None]
        if date_parser is not None
        else []
    )
    ner_todo = (
        [i for i, u in enumerate(units) if items[u.item_index].entities is None]
        if entity_extractor is not None
        else []
    )
    if raw is None:
        raw = functools.partial(raw_extract, entity_extractor, date_parser)
    found, windows = raw(
        [units[i].text for i in ner_todo], [(units[i].text, units[i].mentioned_at) for i in date_todo]
    )
    dated = _with_dates(units, date_todo, windows)
    entities = _entities(dated, items, ner_todo, found, entity_threshold)
    signals = []
    for unit, names in zip(dated, entities, strict=True):
        window = (
            TimeWindow(start=unit.occurred_start, end=unit.occurred_end or unit.occurred_start)
            if unit.occurred_start is not None
            else None
        )
        renderings = date_renderings(window, unit.date_grain)
        said = date_renderings(TimeWindow(start=unit.mentioned_at, end=unit.mentioned_at), "day")
        signals.append(" ".join([*names, *renderings, *said]))
    cjk = [" ".join(cjk_bigrams(u.text)) for u in dated]
    return Extraction(units=dated, entities=entities, signals=signals, cjk=cjk)
