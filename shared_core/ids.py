"""Time-ordered identifiers (UUIDv7, RFC 9562) generated in Python.

UUIDv7 keeps B-tree inserts append-mostly and makes ``ORDER BY id`` follow creation order, which
the random v4 ids of the leading implementation do not (their "newest first" was pseudo-random).
"""

from __future__ import annotations

import os
import threading
import time
import uuid

__all__ = ["uuid7"]

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def uuid7() -> uuid.UUID:
    """Return a new UUIDv7; ids made in one process are strictly increasing.

    >>> a, b = uuid7(), uuid7()
    >>> a < b and a.version == 7
    True
    """
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same (or earlier: clock step) millisecond: bump a 12-bit counter so order holds.
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
            ms = _last_ms
        else:
            _last_ms = ms
            _counter = 0
        counter = _counter
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= counter << 64
    value |= 0b10 << 62
    value |= rand
    return uuid.UUID(int=value)
