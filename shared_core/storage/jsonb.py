"""The ``jsonb`` loader of the engine's connections: psycopg's, with less Python per value.

psycopg's text ``jsonb`` loader calls ``json.loads(bytes)``, which detects the encoding, decodes,
then runs the decoder's Python ``decode``/``raw_decode`` around the C scanner. Recall decodes a
``metadata`` object for every memory it returns (~160 at 100k, on its path after the arms):
3.1 us each that way, 0.8 us through the scanner directly (2026-12-02, the bench bank's
metadata objects; docs/benchmarks/pipe_details.md). Postgres prints a ``jsonb`` value as one
JSON value in UTF-8 without surrounding whitespace, so the scanner alone reads all of it; any
other text (a client encoding other than UTF-8, trailing characters) goes to ``json.loads`` as
before, which returns the same value or raises the same error.
"""

from __future__ import annotations

import json
from json.scanner import make_scanner
from typing import Any, cast

from psycopg.abc import Buffer
from psycopg.types.json import JsonbLoader

__all__ = ["FastJsonbLoader", "load_jsonb"]

# The scanner json.loads's default decoder (JSONDecoder() with no options) runs: the same
# parse_float, parse_int, object hooks and strictness, so the same values.
_scan = make_scanner(cast(Any, json.JSONDecoder()))  # typeshed types its argument oddly


def load_jsonb(data: bytes) -> Any:
    """The value of one ``jsonb`` text, as ``json.loads(data)`` returns it.

    >>> load_jsonb(b'{"a": [1, 2.5, "x\\\\u00e9"], "b": null}')
    {'a': [1, 2.5, 'xé'], 'b': None}
    """
    try:
        text = data.decode("utf-8", "surrogatepass")  # what json.loads does to UTF-8 bytes
        value, end = _scan(text, 0)
    except (UnicodeDecodeError, StopIteration):
        return json.loads(data)
    if end != len(text):
        return json.loads(data)
    return value


class FastJsonbLoader(JsonbLoader):
    """psycopg's text ``jsonb`` loader through :func:`load_jsonb`."""

    def load(self, data: Buffer) -> Any:
        return load_jsonb(data if isinstance(data, bytes) else bytes(data))
