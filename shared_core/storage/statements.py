"""Statements composed once and sent as one flat string, for those a recall runs every time.

psycopg turns a :class:`psycopg.sql.Composed` into bytes at every ``execute`` (walking its
parts; each :class:`~psycopg.sql.Literal` through an adapter of its own), and parses the bytes
for their placeholders, caching the parse only for statements of at most 4,096 bytes. The arm
statements of an unfiltered recall are the same every time, yet they were composed (``format``
parses each template), rendered and, for the keyword and graph statements (4,145-5,693 bytes
at 100k), parsed anew at every recall: ~0.6 ms of a recall's client CPU (the 50 bench queries
at 100k, 2026-12-03; docs/benchmarks/cpu18_recall_cpu.md). :func:`flat` renders a composed
statement once, into a :class:`~psycopg.sql.SQL` of its text, with the indentation and line
breaks outside quotes collapsed (the graph statement and most keyword statements then fit the
parse cache); the callers keep it (``functools.cache`` on what the statement depends on).

>>> from psycopg import sql
>>> print(flat(sql.SQL("SELECT {col}\\n    FROM t\\n    WHERE x = '  two  spaces'").format(
...     col=sql.Identifier("a b"))).as_string())
SELECT "a b"
FROM t
WHERE x = '  two  spaces'
"""

from __future__ import annotations

import re

from psycopg import sql

__all__ = ["compact", "flat"]

# A statement's tokens: quoted strings and identifiers (kept whole, doubled quotes included),
# comments (to the end of their line), runs of whitespace, and everything else.
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|\s+|[^'\"\s-]+|-")


def compact(text: str) -> str:
    """``text`` (SQL) with each run of whitespace outside quotes made one newline (if it held
    one, so a comment still ends there) or one space. Text with a dollar-quoted string or a
    backslash (an ``E''`` string's escapes), which the tokens above do not read, is returned
    as it is.

    >>> compact("SELECT 'a  b',\\n       \\"x  y\\"  -- two\\n    FROM t")
    'SELECT \\'a  b\\',\\n"x  y" -- two\\nFROM t'
    >>> compact("SELECT $$ a  b $$")
    'SELECT $$ a  b $$'
    """
    if "$" in text or "\\" in text:
        return text
    tokens = [m.group(0) for m in _TOKENS.finditer(text)]
    if "".join(tokens) != text:  # an unclosed quote: not a statement this reads safely
        return text
    return "".join(("\n" if "\n" in t else " ") if t.isspace() else t for t in tokens)


def flat(statement: sql.Composable) -> sql.SQL:
    """``statement`` rendered once (:func:`compact`), as one :class:`~psycopg.sql.SQL`: the
    same statement, its placeholders included, sent without being composed again. Only for
    statements whose literals render alike on every connection (numbers, identifiers, plain
    ASCII strings): it is rendered without one."""
    # The text is psycopg's rendering of a statement composed in the code, not a value.
    return sql.SQL(compact(statement.as_string()))
