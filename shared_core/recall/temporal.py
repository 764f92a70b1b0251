"""Pure parts of the temporal arm: proximity to the window and entry-point coverage."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass

from shared_core.recall.boosts import effective_date
from shared_core.types import DateGrain, TimeWindow

__all__ = ["DatedHit", "select_entry_points", "temporal_proximity"]

NO_DATE_PROXIMITY = 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class DatedHit:
    id: str
    similarity: float
    occurred_start: _dt.datetime | None
    occurred_end: _dt.datetime | None
    mentioned_at: _dt.datetime | None
    date_grain: DateGrain | None

    @property
    def date(self) -> _dt.datetime | None:
        return effective_date(self.occurred_start, self.occurred_end, self.mentioned_at,
                              self.date_grain)


def temporal_proximity(date: _dt.datetime | None, window: TimeWindow) -> float:
    """``1 - min(|date - centre| / (span / 2), 1)``: 1 at the window's centre, 0 at its edges
    and beyond; 0.5 (neutral) for an undated memory.

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2024, 3, 1), end=dt.datetime(2024, 3, 31))
    >>> temporal_proximity(dt.datetime(2024, 3, 16, tzinfo=dt.UTC), w)
    1.0
    """
    if date is None:
        return NO_DATE_PROXIMITY
    half = window.span.total_seconds() / 2
    distance = abs((date - window.centre).total_seconds())
    if half <= 0:
        return 1.0 if distance == 0 else 0.0
    return 1.0 - min(distance / half, 1.0)


def select_entry_points(hits: Sequence[DatedHit], window: TimeWindow, *, buckets: int,
                        keep: int) -> list[DatedHit]:
    """Pick ``keep`` entry points spread over ``buckets`` equal slices of the window.

    Round-robin by tier: the most similar hit of every populated bucket first (earliest
    bucket first), then the second of each, and so on. A query about "2023" thus sees the
    whole year rather than the ten most similar memories of one week.
    """
    if keep <= 0 or not hits:
        return []
    span = window.span.total_seconds()
    slots: list[list[DatedHit]] = [[] for _ in range(max(1, buckets))]
    for hit in sorted(hits, key=lambda h: (-h.similarity, h.id)):
        date = hit.date
        if date is None or span <= 0:
            index = 0
        else:
            offset = (min(max(date, window.start), window.end) - window.start).total_seconds()
            index = min(int(offset / span * len(slots)), len(slots) - 1)
        slots[index].append(hit)
    chosen: list[DatedHit] = []
    tier = 0
    while len(chosen) < keep and any(len(s) > tier for s in slots):
        for slot in slots:
            if tier < len(slot) and len(chosen) < keep:
                chosen.append(slot[tier])
        tier += 1
    return chosen
