"""Database failures as typed errors: what reaches a caller is a
:class:`~shared_core.errors.HindsightError`, never a raw psycopg or pool exception.

- the server cannot be reached, went away or is shutting down (connection failures, SQLSTATE
  class 08, ``57P01``..``57P03``, a pool that cannot hand out a connection in time) →
  :class:`~shared_core.errors.DatabaseUnavailableError`, retryable;
- anything else the server refused → :class:`~shared_core.errors.DatabaseError`, with its
  SQLSTATE.
"""

from __future__ import annotations

import re

import psycopg
from psycopg_pool import PoolClosed, PoolTimeout

from shared_core.errors import DatabaseError, DatabaseUnavailableError, HindsightError

__all__ = ["copy_row", "is_unavailable", "map_database_error"]

# The server's error context for a failed COPY row: "COPY memory_units, line 3, column ...".
_COPY_LINE = re.compile(r"COPY (\w+), line (\d+)")
_UNAVAILABLE_STATES = ("57P01", "57P02", "57P03")  # admin/crash shutdown, cannot connect now


def copy_row(exc: BaseException) -> tuple[str, int] | None:
    """The table and 0-based row of a ``COPY`` that the server refused, when ``exc`` says.

    >>> class Diag:
    ...     context = "COPY retain_stage, line 3, column metadata: ..."
    >>> class Failure(psycopg.errors.DataException):
    ...     diag = Diag()
    >>> copy_row(Failure())
    ('retain_stage', 2)
    """
    if not isinstance(exc, psycopg.Error):
        return None
    match = _COPY_LINE.search(exc.diag.context or "")
    return (match.group(1), int(match.group(2)) - 1) if match else None


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the server is out of reach (rather than refusing a statement).

    >>> is_unavailable(PoolTimeout("couldn't get a connection after 5.00 sec"))
    True
    >>> is_unavailable(psycopg.errors.UniqueViolation())
    False
    """
    if isinstance(exc, DatabaseUnavailableError | PoolTimeout | ConnectionError):
        return True
    if isinstance(exc, psycopg.Error):
        state = exc.sqlstate
        if state is None:
            # Raised by libpq itself: connection refused, lost, timed out.
            return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
        return state.startswith("08") or state in _UNAVAILABLE_STATES
    return False


def map_database_error(exc: BaseException) -> BaseException:
    """The typed error to raise for ``exc`` (``exc`` itself when it is not a database error).

    >>> map_database_error(PoolTimeout("couldn't get a connection after 5.00 sec"))
    DatabaseUnavailableError("the database is unavailable: couldn't get a connection after 5.00 sec")
    """
    if isinstance(exc, HindsightError):
        return exc
    if isinstance(exc, PoolClosed):
        return HindsightError("this engine is closed")
    if is_unavailable(exc):
        state = exc.sqlstate if isinstance(exc, psycopg.Error) else None
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return DatabaseUnavailableError(f"the database is unavailable: {detail}", sqlstate=state)
    if isinstance(exc, psycopg.Error):
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return DatabaseError(
            f"the database refused the call ({exc.sqlstate}): {detail}", sqlstate=exc.sqlstate
        )
    return exc
