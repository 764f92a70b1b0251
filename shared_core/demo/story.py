"""A small bundled story for the demo and the docs: 30 facts about four people over two years.

Written for this project (no dataset licence applies). Dates are when each fact was said;
``caused_by`` points at the index of the fact that explains it.
"""

from __future__ import annotations

import datetime as dt

from shared_core.types import MemoryItem

__all__ = ["STORY", "STORY_NOW", "story_items"]

# "Now" for the story: recall relative dates ("last spring") against this.
STORY_NOW = dt.datetime(2024, 6, 15, 12, 0, tzinfo=dt.UTC)


def _d(y: int, m: int, d: int) -> dt.datetime:
    return dt.datetime(y, m, d, 10, 0, tzinfo=dt.UTC)


# (text, said on, tags, caused_by indexes)
STORY: list[tuple[str, dt.datetime, tuple[str, ...], tuple[int, ...]]] = [
    ("Alice works at Google as a software engineer in Zurich.", _d(2022, 7, 4), ("alice", "work"), ()),
    ("Bob is a nurse at the Saint Mary hospital in Lyon.", _d(2022, 7, 20), ("bob", "work"), ()),
    ("Carol and Alice met at a climbing gym in Zurich.", _d(2022, 8, 12), ("alice", "carol"), ()),
    ("Dan adopted a rescue dog called Pixel.", _d(2022, 9, 3), ("dan",), ()),
    (
        "Alice's team at Google was reorganised and her project was cancelled.",
        _d(2022, 11, 8),
        ("alice", "work"),
        (),
    ),
    ("Bob started night shifts at the hospital.", _d(2022, 12, 1), ("bob", "work"), ()),
    ("Carol ran her first half marathon in Basel.", _d(2023, 1, 22), ("carol", "sport"), ()),
    (
        "Alice felt burned out after months of overtime on the cancelled project.",
        _d(2023, 2, 10),
        ("alice",),
        (4,),
    ),
    (
        "Alice left Google because of the burnout and the cancelled project.",
        _d(2023, 3, 1),
        ("alice", "work"),
        (7,),
    ),
    ("Dan moved from Berlin to Lisbon for a remote job.", _d(2023, 3, 18), ("dan", "move"), ()),
    (
        "Alice spent April 2023 hiking the Camino de Santiago in Spain.",
        _d(2023, 5, 2),
        ("alice", "travel"),
        (8,),
    ),
    ("Bob adopted two cats, Miso and Tofu.", _d(2023, 5, 30), ("bob",), ()),
    ("Carol got a promotion to lead architect at her firm.", _d(2023, 6, 14), ("carol", "work"), ()),
    (
        "Alice joined a small climate startup called Verdant as CTO.",
        _d(2023, 7, 10),
        ("alice", "work"),
        (10,),
    ),
    ("Dan learned to surf at Carcavelos beach near Lisbon.", _d(2023, 8, 5), ("dan", "sport"), (9,)),
    ("Bob's night shifts ended and he moved to the paediatric ward.", _d(2023, 9, 1), ("bob", "work"), ()),
    ("Carol and Alice climbed the Matterhorn together.", _d(2023, 9, 16), ("alice", "carol", "sport"), ()),
    ("Verdant raised a seed round of two million euros.", _d(2023, 10, 20), ("alice", "work"), ()),
    ("Dan's dog Pixel was sick and needed surgery.", _d(2023, 11, 11), ("dan",), ()),
    (
        "Bob visited Alice in Zurich for the Christmas market.",
        _d(2023, 12, 20),
        ("alice", "bob", "travel"),
        (),
    ),
    ("Carol started learning Japanese for a trip to Kyoto.", _d(2024, 1, 8), ("carol",), ()),
    ("Alice hired three engineers at Verdant.", _d(2024, 2, 2), ("alice", "work"), (17,)),
    ("Dan's dog Pixel recovered fully after the surgery.", _d(2024, 2, 25), ("dan",), (18,)),
    (
        "In March 2024 Alice gave a talk about carbon accounting at a conference in Berlin.",
        _d(2024, 3, 20),
        ("alice", "work"),
        (),
    ),
    ("Bob ran the Lyon marathon in April.", _d(2024, 4, 21), ("bob", "sport"), ()),
    ("Alice adopted a vegetarian diet in the spring.", _d(2024, 5, 5), ("alice",), ()),
    ("Carol travelled to Kyoto and visited the temples in May.", _d(2024, 5, 28), ("carol", "travel"), (20,)),
    ("Dan started a surf school for beginners in Lisbon.", _d(2024, 6, 1), ("dan", "work"), (14,)),
    ("Bob is thinking about studying medicine next year.", _d(2024, 6, 8), ("bob",), ()),
    (
        "Alice said Verdant's first customer is a Swiss railway company.",
        _d(2024, 6, 12),
        ("alice", "work"),
        (),
    ),
]


def story_items() -> list[MemoryItem]:
    """The story as retain-ready items, causal references included."""
    return [
        MemoryItem(
            text=text,
            mentioned_at=said,
            tags=tags,
            caused_by=tuple(causes),
            metadata={"source": "demo-story"},
        )
        for text, said, tags, causes in STORY
    ]
