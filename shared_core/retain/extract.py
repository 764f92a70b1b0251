"""Retain-time extraction without an LLM: dates, entities and keyword signals.

Runs as CPU work (a ``Compute`` step) before the write transaction. Each part is optional:
an item's explicit dates or entities always win over extraction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from shared_core.extraction.entities import (
    canonicalize_entity_name,
    entity_match_key,
    resolve_in_batch,
)
from shared_core.protocols import DateParser, EntityExtractor
from shared_core.retain.prepare import PreparedUnit
from shared_core.text import cjk_bigrams, date_renderings
from shared_core.types import MemoryItem, TimeWindow

__all__ = ["Extraction", "extract"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    """Units with their extracted dates, entity names per unit (canonical, resolved inside the
    batch), and the text signals appended to each unit's keyword document."""

    units: list[PreparedUnit]
    entities: list[list[str]]
    signals: list[str]
    cjk: list[str]


def _with_dates(
    units: Sequence[PreparedUnit], items: Sequence[MemoryItem], parser: DateParser | None
) -> list[PreparedUnit]:
    if parser is None:
        return list(units)
    out = []
    for unit in units:
        if items[unit.item_index].occurred_start is not None:
            out.append(unit)
            continue
        window_of = getattr(parser, "event_window", None)
        window: TimeWindow | None
        if window_of is not None:
            window = window_of(unit.text, unit.mentioned_at)
        else:
            mentions = parser.parse_dates(unit.text, unit.mentioned_at)
            window = mentions[0].window if mentions else None
        if window is None:
            out.append(unit)
        else:
            out.append(
                dataclasses.replace(
                    unit, occurred_start=window.start, occurred_end=window.end, date_grain=window.grain
                )
            )
    return out


def _entities(
    units: Sequence[PreparedUnit],
    items: Sequence[MemoryItem],
    extractor: EntityExtractor | None,
    threshold: float,
) -> list[list[str]]:
    names: list[list[str]] = [[] for _ in units]
    todo = []
    for i, unit in enumerate(units):
        explicit = items[unit.item_index].entities
        if explicit is not None:
            names[i] = [canonicalize_entity_name(e) for e in explicit]
        elif extractor is not None:
            todo.append(i)
    if todo and extractor is not None:
        found = extractor.extract([units[i].text for i in todo])
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
) -> Extraction:
    """Dates, then entities, then the keyword signals built from both."""
    dated = _with_dates(units, items, date_parser)
    entities = _entities(dated, items, entity_extractor, entity_threshold)
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
