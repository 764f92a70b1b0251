"""Our engine on one LoCoMo conversation, for the small measurement scripts
(``cue_links.py``, ``tune_conv0.py``); ``locomo.py`` runs the full protocol."""

from __future__ import annotations

from typing import Any

from _locomo import DEFAULT_DATA_PATH, Conversation, dia_ids, load_locomo, locomo_missing, recall_at_k
from _peers import SEARCH_K

from shared_core import MemoryItem

__all__ = ["conversation_zero", "r10_by_category", "retain_conversation"]


def conversation_zero() -> Conversation | None:
    """LoCoMo conversation 0, or None (with a message) when the dataset is not here."""
    if locomo_missing(DEFAULT_DATA_PATH):
        return None
    return load_locomo(DEFAULT_DATA_PATH)[0]


def retain_conversation(engine: Any, conv: Conversation, bank: str) -> list[str]:
    """One memory per turn, said at the session's time, its dia_id in metadata."""
    ids: list[str] = engine.retain(
        [
            MemoryItem(text=t.text, mentioned_at=t.mentioned_at, metadata={"dia_id": t.dia_id})
            for t in conv.turns
        ],
        bank=bank,
        progress=False,
    )
    return ids


def r10_by_category(engine: Any, bank: str, conv: Conversation) -> dict[int, list[float]]:
    """R@10 of every non-adversarial question, grouped by category."""
    out: dict[int, list[float]] = {}
    for q in conv.questions:
        if q.category == 5:
            continue
        result = engine.recall(q.question, bank=bank, query_timestamp=conv.query_time, max_tokens=16384)
        out.setdefault(q.category, []).append(recall_at_k(dia_ids(result.memories, SEARCH_K), q.evidence)[10])
    return out
