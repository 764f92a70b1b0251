"""The one lock every writer to a bank takes first: its ``bank_stats`` row (migration 0004).

Retains into one bank then run one after another, and no writer can hold an entity or unit
lock while waiting for it, so two writers cannot deadlock. Writers to different banks do not
wait for each other.
"""

from __future__ import annotations

__all__ = ["CLAIM_BANK_STATS", "LOCK_BANK_STATS"]

CLAIM_BANK_STATS = """
INSERT INTO bank_stats (bank_id) VALUES (%(bank)s)
ON CONFLICT (bank_id) DO UPDATE SET memories = bank_stats.memories"""
"""Create the bank's row if needed and lock it (retain: the bank row exists by then)."""

LOCK_BANK_STATS = """
SELECT 1 FROM bank_stats WHERE bank_id = %(bank)s FOR UPDATE"""
"""Lock the bank's row if it exists (delete: a bank without one has nothing to delete, and a
row cannot be created for a bank that does not exist)."""
