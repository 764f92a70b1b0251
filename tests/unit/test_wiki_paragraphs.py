"""The generated encyclopedia articles (wiki-dev / wiki-test): deterministic, and every gold
paragraph holds its question's answer."""

from __future__ import annotations

import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import dated_paragraphs as D  # noqa: E402
import wiki_paragraphs as W  # noqa: E402

SEED = D.SEED + 11  # wiki-test's


def test_same_text_every_time() -> None:
    a, b = D.build_dataset("wiki-test"), D.build_dataset("wiki-test")
    assert [t.text for c in a for t in c.turns] == [t.text for c in b for t in c.turns]
    assert [(q.question, q.evidence) for c in a for q in c.questions] == [
        (q.question, q.evidence) for c in b for q in c.questions
    ]
    dev = D.build_dataset("wiki-dev")
    assert {t.text for c in dev for t in c.turns}.isdisjoint(t.text for c in a for t in c.turns)


def test_banks_are_large_and_paragraphs_encyclopedia_length() -> None:
    for conv in D.build_dataset("wiki-test"):
        assert len(conv.turns) >= 250
        assert len({t.dia_id for t in conv.turns}) == len(conv.turns)
        for t in conv.turns:
            assert W.MIN_WORDS <= len(t.text.split()) <= W.MAX_WORDS, t.dia_id
        kinds = {q.category for q in conv.questions}
        assert kinds == set(W.WIKI_CATEGORIES)


def test_gold_paragraph_holds_the_answer() -> None:
    for bank in W.wiki_articles(SEED, 2):
        text = dict(bank.paragraphs)
        for q in bank.questions:
            gold = text[q.evidence]
            assert q.answer.lower() in gold.lower(), q  # "the X Orchestra" may open a sentence
            told = bank.stints[q.evidence]
            assert any(s.org == q.answer for s in told), q
            if not q.years:
                continue
            # one stint of the gold paragraph covers every year the question names (strictly
            # inside it, so the stint's neighbours, joined or left that year, do not), and the
            # paragraph writes some year to anchor it
            (stint,) = [s for s in told if all(s.start < y < s.end for y in q.years)]
            assert stint.org == q.answer
            assert re.search(r"\b(19|20)\d\d\b", gold)
            # no other paragraph of the same article tells a stint at that time
            article = q.evidence.rsplit(":", 1)[0]
            for pid, stints in bank.stints.items():
                if pid != q.evidence and pid.startswith(article + ":"):
                    assert not any(s.start <= y < s.end for s in stints for y in q.years), (q, pid)


def test_stated_years_are_written_and_implied_years_are_not() -> None:
    for bank in W.wiki_articles(SEED, 1):
        text = dict(bank.paragraphs)
        for q in bank.questions:
            if q.category == 9:
                assert str(q.years[0]) in text[q.evidence]
            elif q.category == 10:
                assert str(q.years[0]) not in text[q.evidence]


def test_questions_name_the_person_and_organisations_are_shared() -> None:
    bank = W.wiki_articles(SEED, 1)[0]
    text = dict(bank.paragraphs)
    for q in bank.questions:
        lead = text[q.evidence.rsplit(":", 1)[0] + ":lead"]
        name = lead.split(" (born")[0]
        assert name in q.question
    holders: dict[str, set[str]] = {}
    for pid, stints in bank.stints.items():
        for s in stints:
            holders.setdefault(s.org, set()).add(pid.rsplit(":", 1)[0])
    # every organisation someone worked for is shared by several people of the bank
    assert sum(len(people) >= 3 for people in holders.values()) >= 0.8 * len(holders)


def test_no_locomo_text_and_not_dated_paragraphs_templates() -> None:
    words = " ".join(t.text for c in D.build_dataset("wiki-test") for t in c.turns)
    assert 'said, "' not in words
    assert "As of 2024" not in words and "turned down an offer from" not in words
