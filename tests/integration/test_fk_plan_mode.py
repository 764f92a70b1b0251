"""Writes checked row by row by foreign keys run with reusable check plans, and only they: the
plan cache mode the pool sets for recall (force_custom_plan) is back right after them, in the
same transaction (retain/links.py ``fk_checked``)."""

from __future__ import annotations

from typing import Any

from shared_core import MemoryEngine
from shared_core.retain.links import fk_checked
from shared_core.storage.plan import Plan, Query

MODE = "SELECT current_setting('plan_cache_mode') AS mode"


def _modes() -> Plan[tuple[str, str, str]]:
    before: dict[str, Any] = yield Query(MODE, fetch="one")
    during: dict[str, Any] = yield from fk_checked(Query(MODE, fetch="one"))
    after: dict[str, Any] = yield Query(MODE, fetch="one")
    return before["mode"], during["mode"], after["mode"]


def test_foreign_key_checked_writes_reuse_check_plans_and_nothing_else_does(engine: MemoryEngine) -> None:
    before, during, after = engine.run(_modes())
    assert before == "force_custom_plan"  # what the pool sets for recall (storage/pools.py)
    assert during == "auto"
    assert after == before


def test_a_retain_leaves_the_connection_mode_as_it_was(engine: MemoryEngine, bank: str) -> None:
    many = [f"Note {i} about Priya's trip to Lisbon." for i in range(12)]  # the batch plan
    engine.retain(many, bank=bank, progress=False)
    engine.retain(["Priya said hello."], bank=bank, progress=False)  # the small plan
    assert engine.run(_modes())[0] == "force_custom_plan"
