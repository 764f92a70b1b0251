"""What Postgres can store: checks shared by retain's item validation and the bank check.

Pure functions with no imports from the rest of the package, so any module can use them.
"""

from __future__ import annotations

__all__ = ["text_problem"]


def text_problem(value: str, *, max_bytes: int | None = None) -> str | None:
    r"""Why Postgres could not store (or index) ``value`` as text, or None when it can.

    Postgres text holds no NUL character and only valid UTF-8 (a lone surrogate, which Python
    strings allow, has no UTF-8 form); ``max_bytes`` bounds the UTF-8 size (index entries).

    >>> text_problem("caf\u00e9") is None
    True
    >>> text_problem("a\x00b")
    'contains a NUL character, which Postgres text cannot store'
    >>> text_problem("\ud800")
    'contains a lone surrogate (U+D800), which is not valid UTF-8'
    >>> text_problem("abc", max_bytes=2)
    'is 3 bytes of UTF-8, more than the 2 allowed'
    """
    if "\x00" in value:
        return "contains a NUL character, which Postgres text cannot store"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate (U+{ord(value[exc.start]):04X}), which is not valid UTF-8"
    if max_bytes is not None and size > max_bytes:
        return f"is {size:,} bytes of UTF-8, more than the {max_bytes:,} allowed"
    return None
