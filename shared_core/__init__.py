"""hindsight-retrievers core: the TEMPR retain/recall pipeline on Postgres + pgvector.

>>> from shared_core import MemoryEngine  # doctest: +SKIP
>>> with MemoryEngine() as engine:  # doctest: +SKIP
...     engine.retain(["Alice works at Google."], bank="demo")
"""

from shared_core.config import EngineConfig
from shared_core.engine import AsyncMemoryEngine, BankInfo, BankStats, MemoryEngine
from shared_core.errors import (
    ConfigurationError,
    DatabaseError,
    DatabaseUnavailableError,
    DimensionMismatchError,
    EmbeddingDimensionError,
    EmbeddingModelMismatchError,
    ExtensionUnavailableError,
    HindsightError,
    InvalidItemError,
    InvalidOptionError,
    InvalidQueryError,
    InvalidTimeWindowError,
    ModelUnavailableError,
    PoolExhaustedError,
    SchemaError,
)
from shared_core.recall.options import RecallOptions
from shared_core.recall.settings import RecallSettings
from shared_core.types import (
    MemoryItem,
    MemoryRecord,
    RecalledMemory,
    RecallResult,
    RecallTrace,
    ScoreBreakdown,
    TimeWindow,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncMemoryEngine",
    "BankInfo",
    "BankStats",
    "ConfigurationError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbeddingDimensionError",
    "EmbeddingModelMismatchError",
    "EngineConfig",
    "ExtensionUnavailableError",
    "HindsightError",
    "InvalidItemError",
    "InvalidOptionError",
    "InvalidQueryError",
    "InvalidTimeWindowError",
    "MemoryEngine",
    "MemoryItem",
    "MemoryRecord",
    "ModelUnavailableError",
    "PoolExhaustedError",
    "RecallOptions",
    "RecallResult",
    "RecallSettings",
    "RecallTrace",
    "RecalledMemory",
    "SchemaError",
    "ScoreBreakdown",
    "TimeWindow",
]
