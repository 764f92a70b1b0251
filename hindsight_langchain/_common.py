"""Helpers shared by the LangChain adapters: engine resolution and metadata dates.

Nothing here imports LangChain, so :mod:`hindsight_llamaindex` reuses it too.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Mapping
from typing import Any, Literal

from shared_core import ConfigurationError, MemoryEngine
from shared_core.engine import AsyncMemoryEngine

__all__ = [
    "DATE_KEYS",
    "DateKind",
    "EngineHandle",
    "from_aware",
    "iso_or_none",
    "resolve_engine",
    "to_aware",
]

# Bound at import: langchain_core.utils.mock_now replaces the module attribute
# ``datetime.datetime`` with a subclass, so isinstance checks against the name looked up at
# call time would reject real datetimes inside the context.
_REAL_DT = datetime.datetime
_REAL_DATE = datetime.date
_UTC = datetime.UTC

DateKind = Literal["naive", "aware", "epoch"]

# Metadata keys mapped to a memory's date (``occurred_start``), in order of preference.
DATE_KEYS: tuple[str, ...] = ("occurred_at", "timestamp", "created_at", "date")


class EngineHandle:
    """An engine plus whether the adapter created it (and so must close it)."""

    __slots__ = ("engine", "lock", "owned")

    def __init__(self, engine: MemoryEngine, owned: bool) -> None:
        self.engine = engine
        self.owned = owned
        self.lock = threading.RLock()

    def close(self) -> None:
        if self.owned:
            self.engine.close()


def resolve_engine(engine: MemoryEngine | AsyncMemoryEngine | None, dsn: str | None
                   ) -> EngineHandle:
    """``engine=`` wins; else ``dsn=`` opens an engine on that server; else the embedded one."""
    if engine is not None and dsn is not None:
        raise ConfigurationError("pass either engine= or dsn=, not both")
    if isinstance(engine, AsyncMemoryEngine):
        return EngineHandle(engine.sync, owned=False)
    if engine is not None:
        if not isinstance(engine, MemoryEngine):
            raise ConfigurationError(
                f"engine must be a MemoryEngine or AsyncMemoryEngine, got {type(engine).__name__}")
        return EngineHandle(engine, owned=False)
    return EngineHandle(MemoryEngine(dsn), owned=True)


def _parse_iso(value: str) -> datetime.datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return _REAL_DT.fromisoformat(text)


def to_aware(value: Any) -> tuple[datetime.datetime, DateKind]:
    """A metadata timestamp as an aware datetime, plus the kind it came as.

    Accepts datetimes (naive ones are *local* time, as ``datetime.datetime.now()`` and
    LangChain's time-weighted retriever use), dates (local midnight), ISO-8601 strings and epoch
    seconds (int or float). Raises ``TypeError`` / ``ValueError`` for anything else.

    >>> to_aware(0.0)[1]
    'epoch'
    """
    if isinstance(value, bool):
        raise TypeError("a bool is not a timestamp")
    if isinstance(value, int | float):
        return _REAL_DT.fromtimestamp(float(value), tz=_UTC), "epoch"
    if isinstance(value, str):
        value = _parse_iso(value)
    elif not isinstance(value, _REAL_DT) and isinstance(value, _REAL_DATE):
        value = _REAL_DT(value.year, value.month, value.day)
    if isinstance(value, _REAL_DT):
        if value.tzinfo is None or value.utcoffset() is None:
            # astimezone() on a naive value interprets it as local time.
            return value.astimezone(), "naive"
        return value, "aware"
    raise TypeError(f"{type(value).__name__} is not a timestamp (datetime, ISO string or epoch)")


def from_aware(value: datetime.datetime, kind: str) -> Any:
    """Inverse of :func:`to_aware`: give the caller back the kind of value they stored."""
    if kind == "epoch":
        return value.timestamp()
    if kind == "naive":
        local = value.astimezone()
        return _REAL_DT(local.year, local.month, local.day, local.hour, local.minute,
                        local.second, local.microsecond, fold=local.fold)
    return value


def iso_or_none(value: datetime.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def first_date(metadata: Mapping[str, Any], keys: tuple[str, ...] = DATE_KEYS
               ) -> datetime.datetime | None:
    """The first parseable timestamp among ``keys`` in ``metadata`` (aware), or None."""
    for key in keys:
        if key in metadata and metadata[key] is not None:
            try:
                return to_aware(metadata[key])[0]
            except (TypeError, ValueError):
                continue
    return None
