"""The hypothesis alphabet of texts with years and offset phrases, shared by the implied-years
tests (``test_text_years.py``) and the learned reranker's tests of them (``test_learned.py``)."""

from __future__ import annotations

OFFSET_PIECES: list[str] = [
    *"abcdefghijklmnopqrstuvwxyz ,.;()\"'-0123456789“”",
    "19",
    "20",
    "2003",
    "2005",
    "1999",
    " years ",
    " later ",
    " the ",
    " following ",
    " season",
    " a ",
    " for ",
]
"""Characters and pieces that assemble years ("2003", "19" + "99"), offset phrases
("a" + " years " + " later "), quotes and asides, and durations (" for ")."""
