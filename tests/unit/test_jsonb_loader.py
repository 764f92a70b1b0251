"""The engine's jsonb loader: the values ``json.loads`` gives (psycopg's own loader), faster."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from psycopg.types.json import JsonbLoader

from shared_core.storage.jsonb import FastJsonbLoader, load_jsonb

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down and dict keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


@given(_JSON, st.booleans())
def test_same_values_as_json_loads(value: Any, ascii_only: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert _same(load_jsonb(data), json.loads(data))


@pytest.mark.parametrize(
    "text",
    [
        b'{"team": "support", "year": 2024, "priority": 3}',
        b"{}",
        b"[]",
        b'"caf\xc3\xa9"',
        b"1e400",  # numeric beyond a double: inf, as json.loads gives
        b"-0.0",
        b"12345678901234567890123",
        b'{"a": NaN}',  # not jsonb's output, but json.loads reads it
    ],
)
def test_documents(text: bytes) -> None:
    assert _same(load_jsonb(text), json.loads(text))


@pytest.mark.parametrize("text", [b'{"a": 1} ', b' {"a": 1}', b"\xef\xbb\xbf{}"])
def test_other_text_goes_to_json_loads(text: bytes) -> None:
    """Whitespace around the value or a byte-order mark: read (or refused) as json.loads does."""
    try:
        expected: Any = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)):
            load_jsonb(text)
    else:
        assert _same(load_jsonb(text), expected)


@pytest.mark.parametrize("text", [b"", b"{", b'{"a": }', b"[1, 2", b'{"a": 1} x', b"\xff{}"])
def test_malformed_raises_as_json_loads(text: bytes) -> None:
    with pytest.raises(ValueError) as ours:
        load_jsonb(text)
    with pytest.raises(ValueError) as theirs:
        json.loads(text)
    assert type(ours.value) is type(theirs.value)


def test_loader_is_psycopgs_with_the_fast_load() -> None:
    loader = FastJsonbLoader(0)
    assert isinstance(loader, JsonbLoader)
    data = b'{"k": [1, "v"]}'
    assert _same(loader.load(data), JsonbLoader(0).load(data))
    assert _same(loader.load(memoryview(data)), JsonbLoader(0).load(memoryview(data)))
