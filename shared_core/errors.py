"""Typed errors raised by hindsight-retrievers.

Every error the library raises on purpose derives from :class:`HindsightError`, so callers can
catch one type. The tree::

    HindsightError
    ├── ConfigurationError          bad engine or call configuration (unknown budget, bad DSN, ...)
    │   └── ExtensionUnavailableError   pgvector (or another extension) cannot be created on the server
    ├── SchemaError                 the database schema is not what this version expects
    │   ├── DimensionMismatchError      a bank's embedding dimension differs from the embedder's
    │   └── EmbeddingModelMismatchError a bank was written by another embedding model
    ├── InvalidItemError            an item passed to ``retain`` is malformed (carries its index)
    │   ├── FactExtractionError         an LLM's reply cannot be read as facts
    │   └── EmbeddingDimensionError     an item's own embedding is not the model's dimension
    │                                   (also a DimensionMismatchError)
    ├── InvalidQueryError           a recall query or its options are malformed
    │   ├── InvalidTimeWindowError      a time window whose end is before its start, or naive bounds
    │   └── InvalidOptionError          one recall option is malformed (carries its name)
    ├── ModelUnavailableError       a required model could not be loaded offline
    └── DatabaseError               the database failed a call (carries the SQLSTATE, if any)
        └── DatabaseUnavailableError    the server cannot be reached or went away: retry later
            └── PoolExhaustedError          every pooled connection stayed in use past the pool's timeout
"""

from __future__ import annotations

_REPLY_EXCERPT_CHARS = 200

__all__ = [
    "ConfigurationError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbeddingDimensionError",
    "EmbeddingModelMismatchError",
    "ExtensionUnavailableError",
    "FactExtractionError",
    "HindsightError",
    "InvalidItemError",
    "InvalidOptionError",
    "InvalidQueryError",
    "InvalidTimeWindowError",
    "ModelUnavailableError",
    "PoolExhaustedError",
    "SchemaError",
]


class HindsightError(Exception):
    """Root of every error raised on purpose by this library."""


class ConfigurationError(HindsightError, ValueError):
    """The engine or a call was configured with a value it cannot use."""


class ExtensionUnavailableError(ConfigurationError):
    """A Postgres extension the engine needs (pgvector) cannot be created on the server."""


class SchemaError(HindsightError):
    """The database schema does not match what this version of the library expects."""


class DimensionMismatchError(SchemaError, ValueError):
    """A bank was created for one embedding dimension and is used with another."""

    def __init__(
        self,
        *,
        bank: str | None,
        bank_model: str,
        bank_dimension: int,
        embedder_model: str,
        embedder_dimension: int,
    ) -> None:
        self.bank = bank
        self.bank_dimension = bank_dimension
        self.embedder_dimension = embedder_dimension
        where = f"bank {bank!r}" if bank is not None else "this database's memory schema"
        fix = (
            "use the bank's model or retain into a new bank"
            if bank is not None
            else "use a model of that dimension, or another database for this model"
        )
        super().__init__(
            f"{where} stores {bank_dimension}-dimensional embeddings from {bank_model!r}, "
            f"but the embedder {embedder_model!r} produces {embedder_dimension} dimensions; "
            f"{fix}"
        )


class EmbeddingModelMismatchError(SchemaError, ValueError):
    """A bank's memories were embedded by another model (of the same dimension): comparing
    its vectors with this embedder's would rank by noise."""

    def __init__(self, *, bank: str, bank_model: str, embedder_model: str, dimension: int) -> None:
        self.bank = bank
        self.bank_model = bank_model
        self.embedder_model = embedder_model
        super().__init__(
            f"bank {bank!r} stores {dimension}-dimensional embeddings from {bank_model!r}, but "
            f"the embedder is {embedder_model!r}; use the bank's model or another bank"
        )


def check_bank_embedder(
    bank: str, bank_model: str, bank_dimension: int, embedder_model: str, embedder_dimension: int
) -> None:
    """Raise the typed error naming both when a bank's model or dimension is not the
    embedder's (never a silent mix)."""
    if int(bank_dimension) != int(embedder_dimension):
        raise DimensionMismatchError(
            bank=bank,
            bank_model=bank_model,
            bank_dimension=int(bank_dimension),
            embedder_model=embedder_model,
            embedder_dimension=int(embedder_dimension),
        )
    if bank_model != embedder_model:
        raise EmbeddingModelMismatchError(
            bank=bank, bank_model=bank_model, embedder_model=embedder_model, dimension=int(bank_dimension)
        )


class InvalidItemError(HindsightError, ValueError):
    """An item passed to ``retain`` is malformed; nothing was written.

    ``index`` is the position of the offending item in the input sequence.
    """

    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(f"item {index}: {reason}")


class FactExtractionError(InvalidItemError):
    """A fact extractor's model replied with something that cannot be read as facts.

    ``index`` is the position (in the texts passed to ``extract_facts``) of the first text of
    the batch whose reply failed; ``output`` is the start of the reply, when there was one.
    """

    def __init__(self, index: int, reason: str, output: str | None = None) -> None:
        self.output = output
        if output is not None:
            excerpt = output if len(output) <= _REPLY_EXCERPT_CHARS else output[:_REPLY_EXCERPT_CHARS] + "..."
            reason = f"{reason} (reply: {excerpt!r})"
        super().__init__(index, f"fact extraction: {reason}")


class EmbeddingDimensionError(InvalidItemError, DimensionMismatchError):
    """An item's own ``embedding`` has another dimension than the engine's model: refused
    before anything is written (a bank records one model and its dimension). Both an
    :class:`InvalidItemError` (``index`` names the item) and a :class:`DimensionMismatchError`.

    >>> error = EmbeddingDimensionError(0, bank="b", model="m", dimension=384, given=383)
    >>> str(error).split(";")[0]
    'item 0: embedding has 383 dimensions'
    >>> isinstance(error, DimensionMismatchError), error.embedder_dimension
    (True, 384)
    """

    def __init__(self, index: int, *, bank: str, model: str, dimension: int, given: int) -> None:
        self.bank = bank
        self.bank_dimension = given
        self.embedder_dimension = dimension
        self.index = index
        self.reason = (
            f"embedding has {given} dimensions; the engine's model {model!r} makes {dimension} "
            f"for bank {bank!r} (a bank holds one model's vectors)"
        )
        # Not InvalidItemError.__init__: its super() is DimensionMismatchError's (the MRO).
        Exception.__init__(self, f"item {index}: {self.reason}")


class InvalidQueryError(HindsightError, ValueError):
    """A recall query or one of its options is malformed."""


class InvalidTimeWindowError(InvalidQueryError):
    """A time window is malformed (end before start)."""


class InvalidOptionError(InvalidQueryError):
    """One recall option is malformed; ``option`` names it.

    >>> str(InvalidOptionError("budget", "must be one of low, mid, high, got None"))
    'budget: must be one of low, mid, high, got None'
    """

    def __init__(self, option: str, problem: str) -> None:
        self.option = option
        super().__init__(f"{option}: {problem}")


class ModelUnavailableError(HindsightError, RuntimeError):
    """A required model could not be loaded from local files."""


class DatabaseError(HindsightError, RuntimeError):
    """The database failed a call for a reason that is not the caller's input.

    ``sqlstate`` is Postgres' error code when the server sent one. Nothing of the failed call
    was written (every call is one transaction).
    """

    retryable: bool = False

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        self.sqlstate = sqlstate
        super().__init__(message)


class DatabaseUnavailableError(DatabaseError):
    """The server could not be reached within the connect timeout, or went away mid-call
    (restart, failover, network). Nothing of the failed call was written; it is safe to retry.
    """

    retryable = True


class PoolExhaustedError(DatabaseUnavailableError):
    """No pooled connection became free within the pool's timeout: every connection of the
    engine's pool (``pool_max_size``; the sync pool, or this event loop's async pool) was in
    use by other calls for ``timeout_s`` seconds (``EngineConfig.connect_timeout``). Nothing of
    the failed call was written; retry later, or give the engine more connections or a longer
    wait.
    """

    def __init__(self, *, pool_max_size: int, timeout_s: float) -> None:
        self.pool_max_size = pool_max_size
        self.timeout_s = timeout_s
        super().__init__(
            f"no pooled connection was free within {timeout_s:g} s: all {pool_max_size} "
            f"connections of the engine's pool were in use by other calls; raise "
            f"EngineConfig.pool_max_size (now {pool_max_size}; the server's max_connections "
            f"allowing) or EngineConfig.connect_timeout (now {timeout_s:g} s), or make fewer "
            f"calls at once"
        )
