"""Quiet output: what this library prints, and what it keeps third parties from printing.

The library reports through named :mod:`logging` loggers (``shared_core.*``,
``hindsight_langchain.*``, ``hindsight_llamaindex.*``) and never prints. Two third-party
noises are contained here:

- transformers draws a "Loading weights" progress bar and logs load reports while a model
  loads: :func:`quiet_model_loading` turns both off around our own loads only, and restores
  the user's settings;
- psycopg_pool logs ``error connecting in 'hindsight-async': `` (an empty message) when
  ``asyncio.run`` ends and cancels a connection attempt of the engine's pool: the
  :class:`PoolShutdownFilter` drops exactly those records of our own pools; real connection
  errors (which have a message) are turned into DEBUG records (below);
- psycopg logs ``error ignored terminating <Pipeline [BAD]>: the connection is closed`` when a
  pipeline cannot end after an error in its block (``AsyncMemoryEngine.close()`` closing the
  connections under running recalls, a server killed mid-call), and psycopg_pool logs
  ``discarding closed connection``: the error in the block reaches the caller, typed, so for
  our own connections (a class with ``hindsight_owned``) the :class:`OwnConnectionFilter`
  drops both records. Other connections' records still get through.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = [
    "OwnConnectionFilter",
    "PoolShutdownFilter",
    "install_pool_filter",
    "quiet_model_loading",
    "without_tqdm_monitor",
]

_POOL_LOGGER = "psycopg.pool"
_DRIVER_LOGGER = "psycopg"
_OUR_POOLS = ("hindsight",)


def without_tqdm_monitor() -> None:
    """Keep tqdm from starting its ``tqdm_monitor`` threads, which live as long as the process.

    tqdm's first bar of each class starts a monitor thread (loading the embedding model draws
    bars, and so does a retain with ``progress``); a library must not leave threads behind.
    ``monitor_interval = 0`` is tqdm's switch for it (the monitor only corrects the refresh
    rate of bars whose iterations suddenly slow down). Called before each of those bars, since
    either can come first (an engine with its own embeddings never loads the model).
    """
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - a dependency
        return
    tqdm.monitor_interval = 0


@contextlib.contextmanager
def quiet_model_loading() -> Iterator[None]:
    """Silence transformers' progress bars and load reports while loading one of our models."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # sentence-transformers without transformers: nothing to silence
        yield
        return
    bars = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


class PoolShutdownFilter(logging.Filter):
    """Drop psycopg_pool's "error connecting" records of our pools whose error is empty (a
    connection attempt cancelled by an ending event loop).

    >>> record = logging.LogRecord("psycopg.pool", logging.WARNING, "", 0,
    ...                            "error connecting in %r: %s", ("hindsight-async", ""), None)
    >>> PoolShutdownFilter().filter(record)
    False
    >>> record.args = ("hindsight-async", "connection refused")
    >>> PoolShutdownFilter().filter(record)
    True
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("error connecting in"):
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) != 2:
            return True
        name, error = args
        return not (str(name).startswith(_OUR_POOLS) and not str(error).strip())


def _owned(obj: object) -> bool:
    """Whether ``obj`` is one of our pooled connections, or a pipeline / copy on one."""
    conn = getattr(obj, "_conn", obj)  # psycopg's Pipeline and Copy keep their connection there
    return bool(getattr(type(conn), "hindsight_owned", False))


class OwnConnectionFilter(logging.Filter):
    """Drop psycopg's "error ignored terminating %r" and psycopg_pool's "discarding closed /
    broken connection" records about our own connections, and turn psycopg_pool's "error
    connecting in 'hindsight...'" and "reconnection attempt ... failed" warnings about our own
    pools into DEBUG records: the error behind them reaches the caller as a typed error (a
    ``DatabaseUnavailableError`` carrying the last connection attempt's reason), so on stderr
    they are noise, repeated at every reconnection attempt of an outage. Logging psycopg at
    DEBUG still shows them.

    >>> class Ours:
    ...     hindsight_owned = True
    >>> record = logging.LogRecord("psycopg", logging.WARNING, "", 0,
    ...                            "error ignored terminating %r: %s", (Ours(), "closed"), None)
    >>> OwnConnectionFilter().filter(record)
    False
    >>> record.args = (object(), "closed")
    >>> OwnConnectionFilter().filter(record)
    True
    >>> record = logging.LogRecord("psycopg.pool", logging.WARNING, "", 0,
    ...                            "error connecting in %r: %s", ("hindsight", "refused"), None)
    >>> OwnConnectionFilter().filter(record), record.levelname
    (True, 'DEBUG')
    """

    _CONNECTION_MESSAGES = (
        "error ignored terminating",
        "discarding closed connection",
        "discarding broken connection",
    )
    _POOL_MESSAGES = ("error connecting in", "reconnection attempt in pool")

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        args = record.args if isinstance(record.args, tuple) else ()
        if not args:
            return True
        if message.startswith(self._CONNECTION_MESSAGES):
            return not _owned(args[0])
        if message.startswith(self._POOL_MESSAGES) and str(args[0]).startswith(_OUR_POOLS):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


_filter = PoolShutdownFilter()
_own_filter = OwnConnectionFilter()


def install_pool_filter() -> None:
    """Attach :class:`PoolShutdownFilter` and :class:`OwnConnectionFilter` to psycopg's and
    psycopg_pool's loggers (idempotent)."""
    pool_logger = logging.getLogger(_POOL_LOGGER)
    for logger, filters in (
        (pool_logger, (_filter, _own_filter)),
        (logging.getLogger(_DRIVER_LOGGER), (_own_filter,)),
    ):
        for one in filters:
            if one not in logger.filters:
                logger.addFilter(one)
