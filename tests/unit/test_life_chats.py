"""The generated everyday chats (life-chats-train / life-chats-test): deterministic, the two
splits share no people, and every gold message exists and names what its question asks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import dated_paragraphs as D  # noqa: E402
import life_chats as L  # noqa: E402


def _dump(name: str) -> list[tuple[object, ...]]:
    convs = D.build_dataset(name)
    return [(t.dia_id, t.speaker, t.text, t.mentioned_at) for c in convs for t in c.turns] + [
        (q.question, q.category, q.evidence) for c in convs for q in c.questions
    ]


@pytest.mark.parametrize("name", ["life-chats-train", "life-chats-test"])
def test_same_chats_every_time(name: str) -> None:
    assert _dump(name) == _dump(name)


def test_splits_have_different_people_and_text() -> None:
    train, test = L.life_banks("train"), L.life_banks("test")
    people = [{t.speaker for b in split for t in b.conversation.turns} for split in (train, test)]
    assert people[0] and people[1] and people[0].isdisjoint(people[1])
    with pytest.raises(ValueError, match="unknown split"):
        L.life_banks("dev")


@pytest.mark.parametrize("split", ["train", "test"])
def test_every_gold_message_exists_and_names_what_is_asked(split: str) -> None:
    for bank in L.life_banks(split):
        conv = bank.conversation
        turns = {t.dia_id: t for t in conv.turns}
        assert len(turns) == len(conv.turns)  # ids are unique
        sessions = sorted({t.session for t in conv.turns})
        assert 4 <= len(sessions) <= 8
        assert {t.speaker for t in conv.turns} == {t.text.split(":")[0] for t in conv.turns}
        assert len(conv.questions) == len(bank.needles)
        assert {q.category for q in conv.questions} == set(L.LIFE_CATEGORIES)
        for q, needles in zip(conv.questions, bank.needles, strict=True):
            assert len(q.evidence) == len(needles) >= 1
            for key, needle in zip(q.evidence, needles, strict=True):
                assert key in turns, (q.question, key)
                assert needle.lower() in turns[key].text.lower(), (q.question, turns[key].text, needle)
            # the person asked about says (or is asked) each gold message: their own facts
            person = next(t.speaker for t in conv.turns if f"{t.speaker}" in q.question.replace("'s", " "))
            assert any(turns[k].speaker == person for k in q.evidence), q.question


def test_latest_state_gold_is_after_what_it_replaces() -> None:
    """'Where does X live now?' is answered by the move, said after the flat X had before
    and after the plan to look at flats: the hard negatives of a latest-state question."""
    checked = 0
    for bank in L.life_banks("train") + L.life_banks("test"):
        turns = {t.dia_id: t for t in bank.conversation.turns}
        for q in bank.conversation.questions:
            if q.category != 16 or not q.evidence[0].endswith(":move"):
                continue
            person = q.evidence[0].rsplit(":", 1)[0]
            move = turns[q.evidence[0]]
            assert turns[f"{person}:home"].mentioned_at < turns[f"{person}:move-plan"].mentioned_at
            assert turns[f"{person}:move-plan"].mentioned_at < move.mentioned_at
            checked += 1
    assert checked >= 5


def test_registered_with_their_categories() -> None:
    for name in ("life-chats-train", "life-chats-test"):
        for c in D.build_dataset(name):
            assert all(D.CATEGORIES[q.category].startswith("life ") for q in c.questions)
    # "when" is the only timed kind: the harness's "timed" group is the when questions
    assert set(L.LIFE_CATEGORIES) - D.UNTIMED_CATEGORIES == {15}


def test_bare_variant_is_the_same_chat_without_names() -> None:
    named, bare = D.build_dataset("life-chats-test"), D.build_dataset("life-chats-test-bare")
    for a, b in zip(named, bare, strict=True):
        assert [q.evidence for q in a.questions] == [q.evidence for q in b.questions]
        for x, y in zip(a.turns, b.turns, strict=True):
            assert (x.dia_id, x.speaker, x.mentioned_at) == (y.dia_id, y.speaker, y.mentioned_at)
            assert x.text == f"{y.speaker}: {y.text}"
