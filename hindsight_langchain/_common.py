"""Re-exports of :mod:`shared_core.integrations` (the adapters' neutral helpers), for the
LangChain adapter's modules."""

from shared_core.integrations import (
    DATE_KEYS,
    DateKind,
    EngineHandle,
    first_date,
    from_aware,
    iso_or_none,
    memory_item,
    memory_metadata,
    resolve_engine,
    to_aware,
)

__all__ = [
    "DATE_KEYS",
    "DateKind",
    "EngineHandle",
    "first_date",
    "from_aware",
    "iso_or_none",
    "memory_item",
    "memory_metadata",
    "resolve_engine",
    "to_aware",
]
