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
  errors (which have a message) still get through.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = ["PoolShutdownFilter", "install_pool_filter", "quiet_model_loading"]

_POOL_LOGGER = "psycopg.pool"
_OUR_POOLS = ("hindsight",)


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


_filter = PoolShutdownFilter()


def install_pool_filter() -> None:
    """Attach :class:`PoolShutdownFilter` to psycopg_pool's logger (idempotent)."""
    logger = logging.getLogger(_POOL_LOGGER)
    if _filter not in logger.filters:
        logger.addFilter(_filter)
